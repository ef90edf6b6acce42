"""A hook says what it wants by returning it — ``okt.requeue_after(s)``, ``okt.give_up(why)`` — or through
``ctx.requeue_after()``/``ctx.give_up()``; the built-in work still runs, and the outcome drives the work queue."""

from __future__ import annotations

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Patient(shared.WidgetReconciler):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            return okt.requeue_after(30)
        return None


class Waiting(shared.WidgetReconciler):
    def check(self, ctx: okt.Context) -> okt.Outcome | None:
        return okt.give_up("waiting for the database")


class Calling(shared.WidgetReconciler):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.Updater:
            ctx.requeue_after(12)


def test_a_returned_requeue_after_comes_after_the_built_in_work(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "p", size=1)

    run = shared.reconcile_widget(Patient(), kube, widget_kind, namespace, "p")

    assert run.outcome == okt.Outcome.requeue_after(30)
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "p-config") is not None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "p"), "Ready")
    assert ready is not None and ready["status"] == "True"


def test_a_check_returning_give_up_stops_quietly_before_any_child(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "g", size=1)

    run = shared.reconcile_widget(Waiting(), kube, widget_kind, namespace, "g")

    assert run.outcome == okt.Outcome.give_up("waiting for the database")
    assert run.path_str == ">CRChecker>GiveupManager>End"
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "g-config") is None


def test_ctx_requeue_after_is_the_same_request(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "c", size=1)

    run = shared.reconcile_widget(Calling(), kube, widget_kind, namespace, "c")

    assert run.outcome == okt.Outcome.requeue_after(12)
