"""Failures are visible where users look: the log line of a failed reconcile carries the error's message, an
exception that is not okt's own gets its traceback once, and InvalidSpec names its field; a reconcile that found
everything in place says so only at debug level."""

from __future__ import annotations

import pytest
import structlog.testing

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import condition
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Buggy(shared.WidgetConfig):
    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["data"]["tier"] = {"gold": "1"}["platinum"]  # a KeyError, as a new user plants one


class BuggyReconciler(shared.WidgetReconciler):
    owns = (Buggy,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Buggy(ctx.cr)]


class PickyReconciler(shared.WidgetReconciler):
    def check(self, ctx: okt.Context) -> None:
        raise okt.InvalidSpec("must be a prime number", field="spec.size")


def test_a_bug_in_a_hook_logs_its_message_every_time_and_its_traceback_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "buggy", size=1)

    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            shared.reconcile_widget(BuggyReconciler(), kube, widget_kind, namespace, "buggy")

    reconciled = [e for e in logs if e["event"] == "reconciled"]
    assert [e["error"] for e in reconciled] == ["ReconcileError: 'platinum'"] * 2
    assert all(e["log_level"] == "warning" for e in reconciled)
    tracebacks = [e for e in logs if "exc_info" in e]
    assert len(tracebacks) == 1
    assert isinstance(tracebacks[0]["exc_info"], KeyError)


def test_an_invalid_spec_names_its_field_in_the_condition_the_event_and_the_log(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "picky", size=4)
    recorder = events.EventRecorder(kube, "widget")

    with structlog.testing.capture_logs() as logs:
        shared.reconcile_widget(PickyReconciler(), kube, widget_kind, namespace, "picky", recorder)

    expected = "spec.size: must be a prime number"
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "picky"), "Ready")
    assert ready is not None and ready["message"] == expected
    (event,) = kube.list(kube.resolve("v1", "Event"), namespace)[0]
    assert event["message"] == expected
    assert [e["error"] for e in logs if e["event"] == "reconciled"] == [f"InvalidSpec: {expected}"]


def test_a_reconcile_that_writes_logs_at_info_and_one_that_finds_everything_in_place_only_at_debug(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "calm", size=1)

    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "calm")

    first, second = [e for e in logs if e["event"] == "reconciled"]
    assert first["log_level"] == "info" and "created=3" in first["results"]
    assert second["log_level"] == "debug" and "created=0 updated=0 unchanged=3" in second["results"]
    assert second["outcome"] == "done"
