"""Filters on the primaries: ``annotation_selector`` and ``when(obj)``. Objects filtered out are neither reconciled
nor kept in the cache; one that starts passing is reconciled at once, one that stops passing is forgotten."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client
MANAGED = "example.com/managed"


class Selective(shared.WidgetReconciler):
    owns = (shared.WidgetConfig,)
    annotation_selector = {MANAGED: None}

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    def when(self, obj: Mapping[str, Any]) -> bool:
        return not str(obj["metadata"]["name"]).startswith("skip-")


def annotated(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, value: str | None) -> None:
    kube.patch(kind, name, {"metadata": {"annotations": {MANAGED: value}}}, namespace)


def config(kube: kube_client.Client, namespace: str, name: str) -> dict[str, Any] | None:
    return kube.get_or_none(kinds.CONFIG_MAP, f"{name}-config", namespace)


def test_only_objects_that_pass_the_filters_are_cached_and_reconciled(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    for name in ("a", "b", "skip-c"):
        shared.make_widget(kube, widget_kind, namespace, name, size=1)
    annotated(kube, widget_kind, namespace, "a", "yes")
    annotated(kube, widget_kind, namespace, "skip-c", "yes")
    manager = manager_mod.Manager(kube, [Selective], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: config(kube, namespace, "a") is not None, timeout=30, message="a's child")
        assert manager.cache is not None
        cached = {name for name in ("a", "b", "skip-c") if manager.cache.get(widget_kind, name, namespace)}
        assert cached == {"a"}

        annotated(kube, widget_kind, namespace, "b", "yes")  # starts passing: reconciled at once
        wait_for(lambda: config(kube, namespace, "b") is not None, timeout=30, message="b's child")

        annotated(kube, widget_kind, namespace, "a", None)  # stops passing: forgotten
        wait_for(lambda: manager.cache.get(widget_kind, "a", namespace) is None, timeout=30, message="a forgotten")
        assert config(kube, namespace, "a") is not None  # nothing pruned: its child goes with it
        processed = manager.controllers[0].processed
        kube.patch(widget_kind, "a", {"metadata": {"labels": {"touched": "yes"}}}, namespace)
        kube.patch(widget_kind, "b", {"metadata": {"labels": {"touched": "yes"}}}, namespace)
        wait_for(lambda: manager.controllers[0].processed > processed, timeout=30, message="b's reconcile")
        assert manager.cache.get(widget_kind, "a", namespace) is None
    finally:
        manager.stop()
        manager.join(15)

    assert config(kube, namespace, "skip-c") is None


class SelectiveWithCleanup(Selective):
    finalizer = "example.com/cleanup"
    cleanups: ClassVar[list[str]] = []

    def cleanup(self, ctx: okt.Context) -> None:
        self.cleanups.append(ctx.cr.name)


def test_an_object_that_stops_passing_the_filters_keeps_okts_finalizer_and_gets_no_cleanup(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    SelectiveWithCleanup.cleanups.clear()
    shared.make_widget(kube, widget_kind, namespace, "a", size=1)
    annotated(kube, widget_kind, namespace, "a", "yes")
    finalizer = SelectiveWithCleanup.finalizer
    manager = manager_mod.Manager(
        kube, [SelectiveWithCleanup], namespaces=[namespace], metrics_bind="0", grace_period=5
    )
    manager.start()
    try:
        wait_for(lambda: config(kube, namespace, "a") is not None, timeout=30, message="a's child")
        assert finalizer in okt.CustomResource(kube.get(widget_kind, "a", namespace)).finalizers
        controller = manager.controllers[0]
        processed = controller.processed

        # Stops passing: the store forgets it with a DELETED event that still carries okt's finalizer.
        annotated(kube, widget_kind, namespace, "a", None)
        wait_for(lambda: manager.cache.get(widget_kind, "a", namespace) is None, timeout=30, message="a forgotten")
        wait_for(lambda: controller.processed > processed, timeout=30, message="the key looked at again")
        wait_for(lambda: controller.in_flight == 0 and len(controller.queue) == 0, timeout=30)
    finally:
        manager.stop()
        manager.join(15)

    assert SelectiveWithCleanup.cleanups == []
    assert finalizer in okt.CustomResource(kube.get(widget_kind, "a", namespace)).finalizers


SIDECAR = "example.com/sidecar-config"


class SidecarConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-sidecar
  namespace: {{ namespace }}
data:
  deployment: {{ name }}
"""


class SidecarReconciler(okt.Reconciler):
    """The running guide's recipe: chosen in resources(ctx), not by a filter, so that the children go with the
    annotation."""

    kind = "deployments.apps"
    owns = (SidecarConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        annotations = ctx.cr.raw["metadata"].get("annotations") or {}
        if annotations.get(SIDECAR) != "true":
            return []
        return [SidecarConfig(ctx.cr)]


def deployment(namespace: str, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
    }


def test_a_built_in_primary_chosen_in_resources_has_its_children_pruned_when_its_annotation_goes(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str
) -> None:
    deployments = kinds.BUILTIN[("apps/v1", "Deployment")]
    other_client.create(deployment(namespace, "web", {SIDECAR: "true"}), deployments)
    other_client.create(deployment(namespace, "plain", {}), deployments)
    sidecar = lambda name: kube.get_or_none(kinds.CONFIG_MAP, f"{name}-sidecar", namespace)  # noqa: E731
    before = kube.stats.snapshot()  # the session's client: what the other tests sent is not this operator's
    manager = manager_mod.Manager(kube, [SidecarReconciler], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: sidecar("web") is not None, timeout=30, message="web's ConfigMap")
        controller = manager.controllers[0]
        processed = controller.processed
        other_client.patch(deployments, "web", {"metadata": {"annotations": {SIDECAR: None}}}, namespace)
        wait_for(lambda: sidecar("web") is None, timeout=30, message="web's ConfigMap pruned")
        wait_for(lambda: controller.processed > processed, timeout=30)
        wait_for(lambda: controller.in_flight == 0 and len(controller.queue) == 0, timeout=30)
    finally:
        manager.stop()
        manager.join(15)

    assert sidecar("plain") is None
    for name in ("web", "plain"):  # the Deployments stay, their metadata and status okt's to read only
        live = kube.get(deployments, name, namespace)
        assert not [key for key in live["metadata"].get("annotations") or {} if key.startswith("okt.io/")]
        assert not live["metadata"].get("finalizers")
    writes = {key for key in kube.stats.delta(before) if key[0] not in ("get", "list", "watch")}
    assert not [key for key in writes if "deployments" in key[1]], writes
