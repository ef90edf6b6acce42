"""Several kinds in one process: two custom resources and a built-in kind, each with its own controller (queue,
workers, metrics labels), served by one Manager at once."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import condition, crds, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class WidgetSettings(shared.WidgetReconciler):
    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]


class Gizmos(okt.Reconciler):
    api_version = "several.okt.io/v1"
    kind = "Gizmo"
    plural = "gizmos"


class Credentials(okt.Reconciler):
    """Secrets labelled role=settings: a built-in primary, reporting in annotations."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"

    def when(self, obj: Any) -> bool:
        return (obj["metadata"].get("labels") or {}).get("role") == "settings"


SECRET = kinds.BUILTIN[("v1", "Secret")]


def annotations_ready(kube: kube_client.Client, namespace: str, name: str) -> bool:
    obj = kube.get_or_none(SECRET, name, namespace)
    return bool(obj) and '"type":"Ready"' in ((obj or {})["metadata"].get("annotations") or {}).get(
        "okt.io/conditions", ""
    )


def test_one_manager_serves_three_controllers_with_their_own_metrics_labels(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, apply_crd: Any
) -> None:
    gizmo_kind = apply_crd(crds.schemaless_crd("several.okt.io", "Gizmo", "gizmos"))
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    gizmo = {"apiVersion": gizmo_kind.api_version, "kind": "Gizmo", "metadata": {"name": "g", "namespace": namespace}}
    kube.create({**gizmo, "spec": {}}, gizmo_kind)
    for name, role in (("s", "settings"), ("other", "tls")):
        meta = {"name": name, "namespace": namespace, "labels": {"role": role}}
        kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"k": "v"}}, SECRET)
    manager = manager_mod.Manager(
        kube, [WidgetSettings, Gizmos, Credentials], namespaces=[namespace], metrics_bind="127.0.0.1:0", grace_period=5
    )
    manager.start()
    try:
        wait_for(lambda: kube.get_or_none(kinds.CONFIG_MAP, "w-config", namespace), timeout=30, message="w's child")
        wait_for(lambda: condition(kube.get(gizmo_kind, "g", namespace), "Ready"), timeout=30, message="g Ready")
        wait_for(lambda: annotations_ready(kube, namespace, "s"), timeout=30, message="s reports in annotations")
        assert manager.probes is not None
        url = manager.probes.url + "/metrics"

        def scrape() -> str:
            with urllib.request.urlopen(url, timeout=5) as response:
                return str(response.read().decode())

        # A reconcile is counted once it has returned, a moment after the writes the lines above saw.
        done = [f'okt_reconcile_total{{controller="{c}",result="done"}}' for c in ("widget", "gizmo", "secret")]
        wait_for(lambda: all(d in scrape() for d in done), timeout=10, message="the three reconciles counted")
        metrics = scrape()
    finally:
        manager.stop()
        manager.join(15)

    assert sorted(c.name for c in manager.controllers) == ["gizmo", "secret", "widget"]
    assert len({id(c.queue) for c in manager.controllers}) == 3
    for controller in ("widget", "gizmo", "secret"):
        assert f'okt_reconcile_total{{controller="{controller}",result="done"}}' in metrics
    assert annotations_ready(kube, namespace, "other") is False  # filtered out by when(): never reconciled


class GizmoWidget(okt.MutableResource):
    """A Widget made by a Gizmo: the child of one controller is the primary of another."""

    api_version = f"{shared.GROUP}/v1"
    kind = "Widget"
    template = f"""
apiVersion: {shared.GROUP}/v1
kind: Widget
metadata:
  name: {{{{ name }}}}-widget
  namespace: {{{{ namespace }}}}
spec:
  size: 1
  greeting: {{{{ cr.spec.greeting }}}}
"""


class GizmoParents(Gizmos):
    owns = (GizmoWidget,)


def greeting(kube: kube_client.Client, namespace: str) -> str | None:
    config = kube.get_or_none(kinds.CONFIG_MAP, "g-widget-config", namespace)
    return None if config is None else str(config["data"]["greeting"])


def test_a_child_one_controller_writes_is_reconciled_by_the_controller_whose_primary_it_is(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, apply_crd: Any
) -> None:
    gizmo_kind = apply_crd(crds.schemaless_crd("several.okt.io", "Gizmo", "gizmos"))
    manager = manager_mod.Manager(
        kube, [GizmoParents, WidgetSettings], namespaces=[namespace], metrics_bind="0", grace_period=5
    )
    manager.start()
    try:
        gizmo = {
            "apiVersion": gizmo_kind.api_version,
            "kind": "Gizmo",
            "metadata": {"name": "g", "namespace": namespace},
        }
        kube.create({**gizmo, "spec": {"greeting": "hi"}}, gizmo_kind)
        wait_for(lambda: greeting(kube, namespace) == "hi", timeout=30, message="the Widget's ConfigMap")
        kube.patch(gizmo_kind, "g", {"spec": {"greeting": "bye"}}, namespace)
        wait_for(lambda: greeting(kube, namespace) == "bye", timeout=30, message="the Widget's ConfigMap updated")
    finally:
        manager.stop()
        manager.join(15)
