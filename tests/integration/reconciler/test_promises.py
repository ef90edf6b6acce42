"""okt's promises checked on the real server the way users meet them: a child registered twice, two reconcilers
in one Manager."""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, condition, crds, wait_for
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
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "twice"), "Ready")
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
    reconcilers = [shared.WidgetReconciler, DoodadReconciler]
    with RunningOperator.start(kube, reconcilers, namespaces=[namespace], grace_period=5) as operator:
        for kind in (widget_kind, doodad_kind):
            wait_for(
                lambda kind=kind: (condition(kube.get(kind, "both", namespace), "Ready") or {}).get("status") == "True",
                timeout=60,
            )

    widget_uid = kube.get(widget_kind, "both", namespace)["metadata"]["uid"]
    doodad_uid = kube.get(doodad_kind, "both", namespace)["metadata"]["uid"]
    doodad_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-doodad")
    widget_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-config")
    assert doodad_config is not None and doodad_config["data"] == {"color": "teal"}
    assert widget_config is not None
    assert [r["uid"] for r in doodad_config["metadata"]["ownerReferences"]] == [doodad_uid]
    assert [r["uid"] for r in widget_config["metadata"]["ownerReferences"]] == [widget_uid]
    assert {c.name for c in operator.manager.controllers} == {"widget", "doodad"}


class FreeWidget(shared.WidgetReconciler):
    """The FreeStyle engine, with a cleanup that fails while ``broken`` holds."""

    engine = okt.FreeStyle()
    finalizer = "test.okt.io/cleanup"
    broken = True

    def cleanup(self, ctx: okt.Context) -> None:
        if type(self).broken:
            raise okt.TemporaryError("the backup service refused the final backup")


def test_freestyle_converges_and_a_failing_cleanup_keeps_the_object_with_ready_false_until_it_succeeds(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "free", size=1)
    FreeWidget.broken = True

    run = shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    assert run.outcome == okt.Outcome.done()
    assert shared.get_child(kube, "apps/v1", "Deployment", namespace, "free") is not None
    assert (condition(shared.get_widget(kube, widget_kind, namespace, "free"), "Ready") or {})["status"] == "True"
    kube.delete(widget_kind, "free", namespace)

    failing = shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    assert failing.outcome.kind is okt.OutcomeKind.RETRY
    stuck = shared.get_widget(kube, widget_kind, namespace, "free")
    assert "test.okt.io/cleanup" in stuck["metadata"]["finalizers"]
    ready = condition(stuck, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "TemporaryError")
    assert "refused the final backup" in ready["message"]

    FreeWidget.broken = False
    shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    wait_for(lambda: kube.get_or_none(widget_kind, "free", namespace) is None, timeout=30)


def test_a_label_selector_keeps_the_manager_off_the_objects_it_does_not_match(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    for name, team in (("mine", "blue"), ("theirs", "red")):
        body = {"apiVersion": widget_kind.api_version, "kind": "Widget", "spec": {"size": 1}}
        kube.create({**body, "metadata": {"name": name, "namespace": namespace, "labels": {"team": team}}}, widget_kind)
    with RunningOperator.start(kube, shared.WidgetReconciler, namespaces=[namespace], label_selector="team=blue"):
        wait_for(lambda: condition(kube.get(widget_kind, "mine", namespace), "Ready"), timeout=60)

    theirs = kube.get(widget_kind, "theirs", namespace)
    assert "status" not in theirs or not theirs["status"]
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "theirs-config") is None
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "mine-config") is not None
