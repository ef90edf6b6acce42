"""okt's promises checked on the real server the way users meet them: a child registered twice, two reconcilers
in one Manager."""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import crds, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
DOODAD_GROUP = "doodads.okt.io"


class Twice(shared.WidgetReconciler):
    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr), shared.WidgetConfig(ctx.cr)]


def test_a_child_registered_twice_is_an_error_in_the_conditions_and_nothing_is_written(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "twice", size=1)

    run = shared.reconcile_widget(Twice(), kube, widget_kind, namespace, "twice")

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    ready = shared.condition(shared.get_widget(kube, widget_kind, namespace, "twice"), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "RegistrationAborted")
    assert "twice-config" in ready["message"]
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "twice-config") is None


class DoodadConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-doodad
  namespace: {{ namespace }}
data:
  color: {{ cr.spec.color }}
"""


class DoodadReconciler(okt.Reconciler):
    api_version = f"{DOODAD_GROUP}/v1"
    kind = "Doodad"
    plural = "doodads"
    owns = (DoodadConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [DoodadConfig(ctx.cr)]


def test_two_reconcilers_in_one_manager_converge_their_own_objects_only(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, apply_crd: Any
) -> None:
    doodad_kind: kinds.Kind = apply_crd(crds.schemaless_crd(DOODAD_GROUP, "Doodad", "doodads"))
    shared.make_widget(kube, widget_kind, namespace, "both", size=1)
    doodad = {"apiVersion": doodad_kind.api_version, "kind": "Doodad", "spec": {"color": "teal"}}
    kube.create({**doodad, "metadata": {"name": "both", "namespace": namespace}}, doodad_kind)
    manager = manager_mod.Manager(
        kube, [shared.WidgetReconciler, DoodadReconciler], namespaces=[namespace], metrics_bind="0", grace_period=5
    )
    manager.start()
    try:
        for kind in (widget_kind, doodad_kind):
            wait_for(
                lambda kind=kind: (
                    (shared.condition(kube.get(kind, "both", namespace), "Ready") or {}).get("status") == "True"
                ),
                timeout=60,
            )
    finally:
        manager.stop()
        manager.join(15)

    widget_uid = kube.get(widget_kind, "both", namespace)["metadata"]["uid"]
    doodad_uid = kube.get(doodad_kind, "both", namespace)["metadata"]["uid"]
    doodad_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-doodad")
    widget_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-config")
    assert doodad_config is not None and doodad_config["data"] == {"color": "teal"}
    assert widget_config is not None
    assert [r["uid"] for r in doodad_config["metadata"]["ownerReferences"]] == [doodad_uid]
    assert [r["uid"] for r in widget_config["metadata"]["ownerReferences"]] == [widget_uid]
    assert {c.name for c in manager.controllers} == {"widget", "doodad"}
