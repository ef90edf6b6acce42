"""Operator status in OpenShift's style: ``status.relatedObjects`` from the children, ``status.versions`` reported
once reached (Progressing=True, reason Upgrading, on the way), and Degraded only for a persistent error."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Versioned(shared.WidgetReconciler):
    owns = (shared.WidgetConfig, shared.WidgetService)
    versions: ClassVar[dict[str, str]] = {"widget-operator": "1.0.0", "widget": "2"}
    rolling: ClassVar[bool] = False

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr), shared.WidgetService(ctx.cr)]

    def progressing(self, ctx: okt.Context) -> bool:
        return self.rolling


class Flaky(shared.WidgetReconciler):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Mutator:
            raise okt.TemporaryError("the quota service did not answer", delay=1)
        super().enter_in_state(state, ctx)


def status_of(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> dict[str, Any]:
    return dict(shared.get_widget(kube, kind, namespace, name).get("status") or {})


def test_related_objects_and_versions_are_reported(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "v", size=1)

    shared.reconcile_widget(Versioned(), kube, widget_kind, namespace, "v")

    status = status_of(kube, widget_kind, namespace, "v")
    assert status["relatedObjects"] == [
        {"group": "", "resource": "configmaps", "namespace": namespace, "name": "v-config"},
        {"group": "", "resource": "services", "namespace": namespace, "name": "v"},
    ]
    assert status["versions"] == [{"name": "widget", "version": "2"}, {"name": "widget-operator", "version": "1.0.0"}]
    statuses = {c["type"]: c["status"] for c in status["conditions"]}
    assert (statuses["Available"], statuses["Progressing"], statuses["Degraded"]) == ("True", "False", "False")


def test_a_new_version_is_reported_once_rolled_out_and_progressing_says_upgrading_meanwhile(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "u", size=1)
    shared.reconcile_widget(Versioned(), kube, widget_kind, namespace, "u")

    class Upgrading(Versioned):
        versions: ClassVar[dict[str, str]] = {"widget-operator": "1.1.0", "widget": "3"}
        rolling: ClassVar[bool] = True

    shared.reconcile_widget(Upgrading(), kube, widget_kind, namespace, "u")
    during = status_of(kube, widget_kind, namespace, "u")

    class Upgraded(Upgrading):
        rolling: ClassVar[bool] = False

    shared.reconcile_widget(Upgraded(), kube, widget_kind, namespace, "u")
    after = status_of(kube, widget_kind, namespace, "u")

    progressing = next(c for c in during["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "Upgrading")
    assert progressing["message"] == "rolling out widget 3, widget-operator 1.1.0"
    assert during["versions"] == [{"name": "widget", "version": "2"}, {"name": "widget-operator", "version": "1.0.0"}]
    assert after["versions"] == [{"name": "widget", "version": "3"}, {"name": "widget-operator", "version": "1.1.0"}]


class GreetingVersioned(Versioned):
    """The operand version is each object's choice: its spec's greeting."""

    def target_versions(self, ctx: okt.Context) -> dict[str, str]:
        return {"widget-operator": "1.0.0", "widget": ctx.spec.greeting}


def test_versions_chosen_by_the_spec_are_reported_per_object(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "hi", size=1, greeting="hi")
    shared.make_widget(kube, widget_kind, namespace, "hey", size=1, greeting="hey")

    for name in ("hi", "hey"):
        shared.reconcile_widget(GreetingVersioned(), kube, widget_kind, namespace, name)

    reported = {name: status_of(kube, widget_kind, namespace, name)["versions"] for name in ("hi", "hey")}
    assert reported == {
        name: [{"name": "widget", "version": name}, {"name": "widget-operator", "version": "1.0.0"}]
        for name in ("hi", "hey")
    }


def test_degraded_waits_for_a_persistent_error_but_not_for_a_permanent_one(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "f", size=1)
    degraded = []
    for _ in range(3):
        shared.reconcile_widget(Flaky(), kube, widget_kind, namespace, "f")
        now = condition(shared.get_widget(kube, widget_kind, namespace, "f"), "Degraded")
        assert now is not None
        degraded.append((now["status"], now["reason"]))

    shared.make_widget(kube, widget_kind, namespace, "bad", size=99)  # InvalidSpec: size <= 10
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "bad")
    invalid = condition(shared.get_widget(kube, widget_kind, namespace, "bad"), "Degraded")

    assert degraded == [("False", "Retrying"), ("False", "Retrying"), ("True", "TemporaryError")]
    assert invalid is not None and (invalid["status"], invalid["reason"]) == ("True", "InvalidSpec")
