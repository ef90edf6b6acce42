"""A status write that fails says so: a CRD without the status subresource is an error, logged and counted; a status
field the CRD refuses turns Ready False all the same."""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pydantic
import pytest
import structlog.testing

import okt
from okt import errors
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.status import events
from okt.testing import condition, crds, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


PLAIN_GROUP = "plain.okt.io"  # a group of its own: a new CRD in the Widget's group unsettles its REST mapping a while


def statusless_crd() -> dict[str, Any]:
    crd = crds.schemaless_crd(PLAIN_GROUP, "Plain", "plains")
    del crd["spec"]["versions"][0]["subresources"]
    return crd


class PlainReconciler(shared.WidgetReconciler):
    """No children: the status is the only write."""

    api_version = f"{PLAIN_GROUP}/v1"
    kind = "Plain"
    plural = "plains"
    owns = ()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


def test_a_crd_without_the_status_subresource_is_a_status_error_logged_and_counted(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    plain_kind: kinds.Kind = apply_crd(statusless_crd())
    shared.make_widget(kube, plain_kind, namespace, "p", size=1)
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(PlainReconciler, kube, cache, workers=1)
    controller.watch()
    assert cache.wait_for_sync(15)
    try:
        outcome = controller.process((namespace, "p"))
    finally:
        cache.stop()

    assert outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(outcome.error, okt.NotFound)
    assert "does the CRD declare the status subresource" in str(outcome.error)
    counted = controller.metrics.registry.get_sample_value(
        "okt_status_write_errors_total", {"controller": PlainReconciler.controller_name()}
    )
    assert counted is not None and counted >= 1


class TallySpec(pydantic.BaseModel):
    size: int = 1


class TallyStatus(pydantic.BaseModel):
    replicas: int = pydantic.Field(0, le=10)


class Tally(okt.Reconciler):
    """Its CRD (``okt gen crd``) allows at most 10 replicas in the status."""

    api_version = "tally.okt.io/v1"
    kind = "Tally"
    spec_model = TallySpec
    status_model = TallyStatus


class LooseTally(okt.Reconciler):
    """An operator of Tallies without a status model: nothing bounds what it reports but the CRD installed."""

    api_version = Tally.api_version
    kind = Tally.kind
    spec_model = TallySpec

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["replicas"] = ctx.spec.size


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_status_field_the_crd_refuses_turns_ready_false_with_the_api_servers_reason(
    kube: kube_client.Client, namespace: str, apply_crd: Any, strategy: str
) -> None:
    tally_kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(Tally))
    reconciler = type("Tally", (LooseTally,), {"apply_strategy": strategy})()
    body = {"apiVersion": tally_kind.api_version, "kind": "Tally", "metadata": {"name": "t", "namespace": namespace}}
    kube.create({**body, "spec": {"size": 1}}, tally_kind)
    okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind)
    ready = condition(kube.get(tally_kind, "t", namespace), "Ready")
    assert ready is not None and ready["status"] == "True"
    kube.patch(tally_kind, "t", {"spec": {"size": 987654}}, namespace)

    run = okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind)

    assert isinstance(run.outcome.error, okt.Invalid)
    live = kube.get(tally_kind, "t", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ApiError"), ready
    assert "status.replicas" in ready["message"]
    for said in (ready["message"], str(run.outcome.error)):
        assert "987654" not in said.replace(namespace, ""), said  # the custom resource's value is never quoted
    assert live["status"]["replicas"] == 1  # the refused value is not there


OLD_TRANSITION = "2020-01-01T00:00:00Z"


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_refused_success_keeps_the_transition_time_of_a_ready_that_stays_false(
    kube: kube_client.Client, namespace: str, apply_crd: Any, strategy: str
) -> None:
    tally_kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(Tally))
    reconciler = type("Tally", (LooseTally,), {"apply_strategy": strategy})()
    body = {"apiVersion": tally_kind.api_version, "kind": "Tally", "metadata": {"name": "t", "namespace": namespace}}
    kube.create({**body, "spec": {"size": 99}}, tally_kind)
    okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind)
    stored = kube.get(tally_kind, "t", namespace)["status"]["conditions"]
    assert ("Ready", "False") in [(item["type"], item["status"]) for item in stored]
    # False since long ago, as far as the object says: every reconcile since failed the same way.
    dated = [{**item, "lastTransitionTime": OLD_TRANSITION} for item in stored]
    kube.patch(tally_kind, "t", {"status": {"conditions": dated}}, namespace, subresource="status")

    run = okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind)

    assert isinstance(run.outcome.error, okt.Invalid)  # the success's write was refused, the error reported
    live = kube.get(tally_kind, "t", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and (ready["status"], ready["lastTransitionTime"]) == ("False", OLD_TRANSITION), ready
    reconciling = condition(live, "Reconciling")
    assert reconciling is not None and reconciling["lastTransitionTime"] == OLD_TRANSITION, reconciling
    assert [item["type"] for item in live["status"]["conditions"]] == [item["type"] for item in stored]


@pytest.mark.parametrize("retries", [1, 3])
def test_a_refused_success_of_a_failing_object_records_no_recovery_event(
    kube: kube_client.Client, namespace: str, apply_crd: Any, retries: int
) -> None:
    tally_kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(Tally))
    reconciler = LooseTally()
    recorder = events.EventRecorder(kube, "tally-controller")
    body = {"apiVersion": tally_kind.api_version, "kind": "Tally", "metadata": {"name": "t", "namespace": namespace}}
    uid = kube.create({**body, "spec": {"size": 99}}, tally_kind)["metadata"]["uid"]
    okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind, recorder=recorder)

    for _ in range(retries):
        run = okt.reconcile(reconciler, kube, None, namespace, "t", kind=tally_kind, recorder=recorder)

    assert isinstance(run.outcome.error, okt.Invalid)  # Ready stays False: nothing recovered
    items, _ = kube.list(kinds.EVENT, namespace)
    said = [(item["type"], item["reason"]) for item in items if item["involvedObject"].get("uid") == uid]
    assert ("Normal", "Reconciled") not in said, said


class Stamping(shared.WidgetReconciler):
    """Reports ``status.startedAt`` as the value of its ``stamp`` parameter, and ``status.replicas`` beside it."""

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["startedAt"] = ctx.params["stamp"]
        ctx.status_fields["replicas"] = ctx.spec.size


@pytest.mark.parametrize("strategy", ["apply", "merge"])
@pytest.mark.parametrize(
    ("stamp", "why"),
    [
        pytest.param(datetime.datetime(2026, 11, 29, 6, 0), "datetime is not JSON serializable", id="datetime"),
        pytest.param({"a", "b"}, "set is not JSON serializable", id="set"),
        pytest.param(math.nan, "not JSON compliant", id="nan"),
        pytest.param({"started": math.inf}, "not JSON compliant", id="nested-infinity"),
    ],
)
def test_a_status_field_that_is_not_a_json_value_turns_ready_false_naming_it(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str, stamp: Any, why: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=2)
    reconciler = type("Stamping", (Stamping,), {"apply_strategy": strategy, "params": {"stamp": stamp}})()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "w")

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    live = kube.get(widget_kind, "w", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and ready["status"] == "False", ready
    assert "status.startedAt" in ready["message"] and why in ready["message"], ready
    assert "startedAt" not in live["status"]  # never written as something else (NaN as the string "NaN")


REPORT_GROUP = "reports.okt.io"


class ReportSpec(pydantic.BaseModel):
    length: int = 8


class ReportStatus(pydantic.BaseModel):
    summary: str = ""


class Reporting(okt.Reconciler):
    """Reports a summary as long as its custom resource says: nothing bounds it but what the API server takes."""

    api_version = f"{REPORT_GROUP}/v1"
    kind = "Report"
    plural = "reports"
    spec_model = ReportSpec
    status_model = ReportStatus

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["summary"] = "s" * ctx.spec.length


@pytest.mark.parametrize("strategy", ["apply", "merge"])
@pytest.mark.parametrize(
    ("length", "limit"),
    [
        pytest.param(3_300_000, "3145728 bytes", id="past-the-request-limit"),
        pytest.param(1_600_000, "etcd", id="refused-by-etcd"),
    ],
)
def test_a_status_too_large_to_write_turns_ready_false_once_and_waits_for_a_change_of_the_object(
    kube: kube_client.Client, namespace: str, apply_crd: Any, strategy: str, length: int, limit: str
) -> None:
    report_kind: kinds.Kind = apply_crd(crds.schemaless_crd(REPORT_GROUP, "Report", "reports"))
    reconciler = type("Reporting", (Reporting,), {"apply_strategy": strategy})()
    body = {"apiVersion": report_kind.api_version, "kind": "Report", "metadata": {"name": "r", "namespace": namespace}}
    kube.create({**body, "spec": {"length": length}}, report_kind)

    run = okt.reconcile(reconciler, kube, None, namespace, "r", kind=report_kind)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.outcome
    live = kube.get(report_kind, "r", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ObjectTooLarge"), ready
    assert f"the status of Report {namespace}/r" in ready["message"] and limit in ready["message"], ready["message"]
    assert "summary" not in live["status"]
    before = kube.stats.snapshot()

    again = okt.reconcile(reconciler, kube, None, namespace, "r", kind=report_kind)

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome
    sent = {key: n for key, n in kube.stats.delta(before).items() if key[0] in kube_client.WRITE_VERBS}
    assert sent == {("apply" if strategy == "apply" else "patch", "reports/status"): 1}  # the status tried, refused

    kube.patch(report_kind, "r", {"spec": {"length": 8}}, namespace)
    fixed = okt.reconcile(reconciler, kube, None, namespace, "r", kind=report_kind)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
    live = kube.get(report_kind, "r", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and ready["status"] == "True", ready
    assert live["status"]["summary"] == "s" * 8


def test_status_annotations_too_large_to_write_turn_ready_false_once_and_wait_for_a_change_of_the_object(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    report_kind: kinds.Kind = apply_crd(crds.schemaless_crd(REPORT_GROUP, "Report", "reports"))
    reconciler = type("Reporting", (Reporting,), {"status": "annotations"})()
    body = {"apiVersion": report_kind.api_version, "kind": "Report", "metadata": {"name": "r", "namespace": namespace}}
    kube.create({**body, "spec": {"length": 300_000}}, report_kind)  # past the 256 KiB all annotations may hold

    run = okt.reconcile(reconciler, kube, None, namespace, "r", kind=report_kind)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.outcome
    live = kube.get(report_kind, "r", namespace)
    ready = next(c for c in json.loads(live["metadata"]["annotations"]["okt.io/conditions"]) if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ObjectTooLarge"), ready
    assert "262144 bytes" in ready["message"] and "summary the largest" in ready["message"], ready["message"]
    before = kube.stats.snapshot()

    again = okt.reconcile(reconciler, kube, None, namespace, "r", kind=report_kind)

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome
    sent = {key: n for key, n in kube.stats.delta(before).items() if key[0] in kube_client.WRITE_VERBS}
    assert sent == {("patch", "reports"): 1}  # the annotations tried, refused


class MeterSpec(pydantic.BaseModel):
    size: int = pydantic.Field(le=10)


class MeterReconciler(okt.Reconciler):
    api_version = f"{PLAIN_GROUP}/v1"
    kind = "Meter"
    plural = "meters"
    spec_model = MeterSpec


def test_an_invalid_spec_whose_report_a_stricter_crd_refuses_names_the_refusal_in_its_retried_line(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    """A spec stored before its CRD got stricter has the API server refuse every write of the object, the status
    write reporting the InvalidSpec too: the reconcile is retried (the report never landed), and its line says the
    refusal, not only the InvalidSpec that is otherwise reported once and left alone."""
    meter_kind: kinds.Kind = apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", None))
    shared.make_widget(kube, meter_kind, namespace, "m", size=100)
    try:
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", 10))

        def refused() -> bool:
            try:
                kube.patch(meter_kind, "m", {"metadata": {"labels": {"probe": "x"}}}, namespace)
            except okt.ApiError as exc:
                return isinstance(exc, errors.Invalid)
            return False

        waiting.wait_for(refused, message="the stricter schema to be enforced")

        with structlog.testing.capture_logs() as logged:
            run = okt.reconcile(MeterReconciler(), kube, None, namespace, "m", kind=meter_kind)

        assert run.outcome.kind is okt.OutcomeKind.RETRY
        [line] = [entry for entry in logged if entry["event"] == "reconciled"]
        assert line["error"].startswith("InvalidSpec: spec.size: Input should be less than or equal to 10")
        assert line["status_error"].startswith("ApiError: ")
        assert "spec.size in body should be less than or equal to 10" in line["status_error"]
    finally:
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", None))
        kube.delete(meter_kind, "m", namespace)


def _stricter_schema_enforced(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> None:
    """Wait until the API server refuses every write of the object (its stored spec breaks the stricter CRD)."""

    def refused() -> bool:
        try:
            kube.patch(kind, name, {"metadata": {"labels": {"probe": "x"}}}, namespace)
        except okt.ApiError as exc:
            return isinstance(exc, errors.Invalid)
        return False

    waiting.wait_for(refused, message="the stricter schema to be enforced")


def _status_writes(kube: kube_client.Client, before: Any) -> int:
    return sum(n for (_, resource), n in shared.write_requests(kube, before).items() if resource == "meters/status")


def test_an_invalid_spec_whose_report_a_stricter_crd_refuses_sends_its_report_once_while_the_object_is_unchanged(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    """The refused report is not sent again by the reconciles that follow (the retry, a resync, a child's event) while
    the object stays as it was: the same report would be refused the same way. The retry finds it refused already and
    gives up until the object changes; an edit of the object has the report sent again."""
    meter_kind: kinds.Kind = apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", None))
    shared.make_widget(kube, meter_kind, namespace, "q", size=100)
    try:
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", 10))
        _stricter_schema_enforced(kube, meter_kind, namespace, "q")
        before = kube.stats.snapshot()

        first = okt.reconcile(MeterReconciler(), kube, None, namespace, "q", kind=meter_kind)
        assert first.outcome.kind is okt.OutcomeKind.RETRY, first.outcome  # the report never landed
        again = [okt.reconcile(MeterReconciler(), kube, None, namespace, "q", kind=meter_kind) for _ in range(3)]

        assert _status_writes(kube, before) == 1
        assert [run.outcome.kind for run in again] == [okt.OutcomeKind.GIVE_UP] * 3
        assert condition(kube.get(meter_kind, "q", namespace), "Ready") is None  # never reported: it was refused

        # Edited (under the looser schema, the only one that takes a write of it), then refused again: a new object.
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", None))
        waiting.wait_for(
            lambda: _patched(kube, meter_kind, namespace, "q", {"spec": {"size": 200}}),
            message="the looser schema to take the edit",
        )
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", 10))
        _stricter_schema_enforced(kube, meter_kind, namespace, "q")
        before = kube.stats.snapshot()

        edited = okt.reconcile(MeterReconciler(), kube, None, namespace, "q", kind=meter_kind)

        assert edited.outcome.kind is okt.OutcomeKind.RETRY, edited.outcome
        assert _status_writes(kube, before) == 1
    finally:
        apply_crd(shared.sized_crd(PLAIN_GROUP, "Meter", "meters", None))
        kube.delete(meter_kind, "q", namespace)


def _patched(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, patch: dict[str, Any]) -> bool:
    try:
        kube.patch(kind, name, patch, namespace)
    except errors.Invalid:
        return False
    return True
