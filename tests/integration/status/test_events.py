"""Kubernetes Events as ``kubectl describe`` shows them: one on a meaningful transition, one per distinct error
(repeats bump its count), none while nothing happens."""

from __future__ import annotations

import collections
from typing import Any

import pydantic
import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "demo"


@pytest.fixture
def recorder(kube: kube_client.Client) -> events.EventRecorder:
    """One recorder for the test, as one controller process has one."""
    return events.EventRecorder(kube, "widget-controller")


def events_of(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> list[dict[str, Any]]:
    """The Events about the Widget, oldest first (what ``kubectl describe widget demo`` lists)."""
    uid = shared.get_widget(kube, kind, namespace, NAME)["metadata"]["uid"]
    items, _ = kube.list(kinds.EVENT, namespace)
    about = [item for item in items if item["involvedObject"].get("uid") == uid]
    return sorted(about, key=lambda item: item["firstTimestamp"])


def summary(event: dict[str, Any]) -> tuple[str, str, int]:
    return event["type"], event["reason"], event["count"]


def event_requests(
    kube: kube_client.Client, before: collections.Counter[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    return {key: n for key, n in shared.write_requests(kube, before).items() if key[1] == "events"}


def test_the_first_success_records_no_event_so_the_first_pass_writes_only_children_and_status(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    before = kube.stats.snapshot()

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)

    assert events_of(kube, widget_kind, namespace) == []
    assert shared.write_requests(kube, before) == {
        ("apply", "configmaps"): 1,
        ("apply", "services"): 1,
        ("apply", "deployments"): 1,
        ("apply", "widgets/status"): 1,
    }


def test_an_error_records_a_warning_event_with_the_error_reason(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)

    recorded = events_of(kube, widget_kind, namespace)
    assert [summary(event) for event in recorded] == [("Warning", "InvalidSpec", 1)]
    assert recorded[0]["message"].startswith("spec.size: ")


@pytest.mark.parametrize("steady_reconciles", [1, 3])
def test_steady_reconciles_record_no_event(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    recorder: events.EventRecorder,
    steady_reconciles: int,
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)
    before = kube.stats.snapshot()

    for _ in range(steady_reconciles):
        shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)

    assert event_requests(kube, before) == {}
    assert events_of(kube, widget_kind, namespace) == []


class Unreachable(shared.WidgetReconciler):
    """Fails with a transient error (a backend that does not answer) while ``spec.size`` is 9."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.spec.size == 9:
            raise okt.TemporaryError("the backend does not answer")


@pytest.mark.parametrize("repeats", [2, 4])
def test_a_repeated_error_bumps_the_count_of_one_event(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder, repeats: int
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=9)
    before = kube.stats.snapshot()

    for _ in range(repeats):
        shared.reconcile_widget(Unreachable(), kube, widget_kind, namespace, NAME, recorder)

    assert event_requests(kube, before) == {("create", "events"): 1, ("patch", "events"): repeats - 1}
    assert [summary(event) for event in events_of(kube, widget_kind, namespace)] == [
        ("Warning", "TemporaryError", repeats)
    ]


@pytest.mark.parametrize("repeats", [2, 4])
def test_a_permanent_error_records_one_event_however_often_it_is_reconciled(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder, repeats: int
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)
    before = kube.stats.snapshot()

    for _ in range(repeats):
        shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)

    assert event_requests(kube, before) == {("create", "events"): 1}
    assert [summary(event) for event in events_of(kube, widget_kind, namespace)] == [("Warning", "InvalidSpec", 1)]


class UnsupportedPlan(shared.WidgetReconciler):
    """Finds the Widget unusable only after the SuccessManager's work, which set Ready True in the working copy."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            raise okt.PermanentError("the plan is not supported")


def test_a_permanent_error_raised_after_the_success_records_one_event_and_writes_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(UnsupportedPlan(), kube, widget_kind, namespace, NAME, recorder)
    before = kube.stats.snapshot()

    for _ in range(2):
        shared.reconcile_widget(UnsupportedPlan(), kube, widget_kind, namespace, NAME, recorder)

    assert shared.write_requests(kube, before) == {}
    assert [summary(event) for event in events_of(kube, widget_kind, namespace)] == [("Warning", "PermanentError", 1)]
    assert shared.get_widget(kube, widget_kind, namespace, NAME)["status"]["okt"] == {"errorCount": 1}


def test_recovering_from_an_error_records_a_normal_event_after_the_warning(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME, recorder)

    assert run.outcome == okt.Outcome.done()
    recorded = events_of(kube, widget_kind, namespace)
    assert sorted(summary(event) for event in recorded) == [("Normal", "Reconciled", 1), ("Warning", "InvalidSpec", 1)]
    normal = next(event for event in recorded if event["type"] == "Normal")
    assert normal["message"].startswith("generation 2 reconciled: ")
    assert normal["involvedObject"]["kind"] == "Widget"
    assert normal["source"] == {"component": "widget-controller"}


def test_a_repeated_error_whose_event_expired_records_a_new_event(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=9)
    shared.reconcile_widget(Unreachable(), kube, widget_kind, namespace, NAME, recorder)
    # The API server removes an Event an hour after its last update (--event-ttl); the recorder still knows its name.
    for event in events_of(kube, widget_kind, namespace):
        kube.delete(kinds.EVENT, event["metadata"]["name"], namespace)

    shared.reconcile_widget(Unreachable(), kube, widget_kind, namespace, NAME, recorder)

    assert [summary(event) for event in events_of(kube, widget_kind, namespace)] == [("Warning", "TemporaryError", 1)]


STRICT_GROUP = "strict.okt.io"  # a group of its own: a CRD made stricter here leaves the Widget's REST mapping alone


class SizeSpec(pydantic.BaseModel):
    size: int = pydantic.Field(le=10)


class GaugeReconciler(okt.Reconciler):
    api_version = f"{STRICT_GROUP}/v1"
    kind = "Gauge"
    plural = "gauges"
    spec_model = SizeSpec


def test_a_permanent_error_whose_report_the_api_server_refuses_records_one_event_however_often_it_is_retried(
    kube: kube_client.Client, namespace: str, apply_crd: Any, recorder: events.EventRecorder
) -> None:
    """A spec stored before its CRD got stricter: every write of the object is refused, the report of its InvalidSpec
    too, so it is retried; the retry, and any reconcile of the unchanged object after it, says the same of the same
    object, and writes no Event (nor the status: the refused report is not sent again, and the reconcile gives up)."""
    gauge_kind: kinds.Kind = apply_crd(shared.sized_crd(STRICT_GROUP, "Gauge", "gauges", None))
    shared.make_widget(kube, gauge_kind, namespace, "g", size=100)
    try:
        apply_crd(shared.sized_crd(STRICT_GROUP, "Gauge", "gauges", 10))

        def refused() -> bool:
            try:
                kube.patch(gauge_kind, "g", {"metadata": {"labels": {"probe": "x"}}}, namespace)
            except okt.ApiError as exc:
                return isinstance(exc, errors.Invalid)
            return False

        waiting.wait_for(refused, message="the stricter schema to be enforced")
        first = okt.reconcile(GaugeReconciler(), kube, None, namespace, "g", kind=gauge_kind, recorder=recorder)
        assert first.outcome.kind is okt.OutcomeKind.RETRY, first.outcome  # the report never landed
        before = kube.stats.snapshot()

        for _ in range(3):
            run = okt.reconcile(GaugeReconciler(), kube, None, namespace, "g", kind=gauge_kind, recorder=recorder)
            assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.outcome

        assert event_requests(kube, before) == {}
        uid = kube.get(gauge_kind, "g", namespace)["metadata"]["uid"]
        items, _ = kube.list(kinds.EVENT, namespace)
        said = [summary(item) for item in items if item["involvedObject"].get("uid") == uid]
        assert said == [("Warning", "InvalidSpec", 1)]
    finally:
        apply_crd(shared.sized_crd(STRICT_GROUP, "Gauge", "gauges", None))
        kube.delete(gauge_kind, "g", namespace)


def _config_of(ctx: okt.Context) -> okt.Resource:
    return next(res for res in ctx.registry if isinstance(res, shared.WidgetConfig))


ABOUT_THE_CHILD: dict[str, Any] = {
    "its resource": _config_of,
    "its object as read": lambda ctx: ctx.reader.get(kinds.CONFIG_MAP, f"{ctx.cr.name}-config", ctx.cr.namespace),
    "its view": lambda ctx: okt.CustomResource(_config_of(ctx).live or {}),
}


class Configuring(shared.WidgetReconciler):
    """Says of the ConfigMap it made that it was configured, once the Updater wrote it."""

    def __init__(self, about: Any, *, once: bool = False) -> None:
        super().__init__()
        self.about = about
        self.once = once

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            ctx.event("Normal", "Configured", f"size {ctx.spec.size}", about=self.about(ctx), once=self.once)


def events_about(kube: kube_client.Client, namespace: str, uid: str) -> list[dict[str, Any]]:
    items, _ = kube.list(kinds.EVENT, namespace)
    return [item for item in items if item["involvedObject"].get("uid") == uid]


@pytest.mark.parametrize("about", list(ABOUT_THE_CHILD))
def test_a_hook_records_an_event_about_a_child_it_made_and_its_repeat_counts_on_it(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder, about: str
) -> None:
    """Kopf's ``kopf.event(child, ...)``: ``kubectl describe configmap demo-config`` shows it, the Widget's does not."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    for _ in range(2):
        run = shared.reconcile_widget(Configuring(ABOUT_THE_CHILD[about]), kube, widget_kind, namespace, NAME, recorder)
        assert run.outcome == okt.Outcome.done()

    child = kube.get(kinds.CONFIG_MAP, f"{NAME}-config", namespace)
    recorded = events_about(kube, namespace, child["metadata"]["uid"])
    assert [summary(event) for event in recorded] == [("Normal", "Configured", 2)]
    involved = dict(recorded[0]["involvedObject"])
    assert involved.pop("resourceVersion")
    assert involved == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": f"{NAME}-config",
        "namespace": namespace,
        "uid": child["metadata"]["uid"],
    }
    assert recorded[0]["metadata"]["namespace"] == namespace
    assert recorded[0]["source"] == {"component": "widget-controller"}
    assert events_of(kube, widget_kind, namespace) == []


def test_an_event_said_once_about_an_unchanged_child_is_not_counted_again(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, recorder: events.EventRecorder
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(Configuring(_config_of, once=True), kube, widget_kind, namespace, NAME, recorder)
    before = kube.stats.snapshot()

    for _ in range(2):
        shared.reconcile_widget(Configuring(_config_of, once=True), kube, widget_kind, namespace, NAME, recorder)

    assert event_requests(kube, before) == {}
    child = kube.get(kinds.CONFIG_MAP, f"{NAME}-config", namespace)
    assert [summary(event) for event in events_about(kube, namespace, child["metadata"]["uid"])] == [
        ("Normal", "Configured", 1)
    ]
