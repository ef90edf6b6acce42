"""What the conditions say after a success or an error: pure functions over a working copy, no cluster."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pydantic
import pytest

import okt
from okt.kube import kinds
from okt.reconciler import report
from okt.status import conditions, events
from tests.unit.reconciler.webapps import WEBAPP, webapp

T0 = datetime.datetime(2026, 11, 25, 8, 0, 0, tzinfo=datetime.UTC)


def fresh() -> conditions.Conditions:
    return conditions.Conditions(now=lambda: T0)


def test_a_success_sets_the_five_conditions_from_the_hooks_signals() -> None:
    c = fresh()
    report.success_conditions(
        c,
        3,
        ready=report.Signal(True, "Reconciled", "fine"),
        available=report.Signal(False, "ReplicasUnavailable", "waiting for replicas"),
        progressing=report.Signal(True, "RollingOut", "a rollout is under way"),
        degraded=report.Signal(False, "AsExpected", "no error"),
    )

    assert {t: (c[t].status.value, c[t].reason) for t in c} == {
        okt.READY: ("True", "Reconciled"),
        okt.RECONCILIATION_SUCCESS: ("True", "Reconciled"),
        okt.PROGRESSING: ("True", "RollingOut"),
        okt.DEGRADED: ("False", "AsExpected"),
        okt.AVAILABLE: ("False", "ReplicasUnavailable"),
    }
    assert {c[t].observed_generation for t in c} == {3}


def test_no_workload_to_wait_for_reads_as_available() -> None:
    c = fresh()
    signal = report.Signal(False, "Settled", "nothing to roll out")
    report.success_conditions(c, 1, ready=signal, available=None, progressing=signal, degraded=signal)

    assert c.is_true(okt.AVAILABLE)


def test_a_hook_may_answer_with_a_bool_or_a_triple() -> None:
    defaults = (("Up", "it is up"), ("Down", "it is down"))

    assert report.Signal.of(True, *defaults) == report.Signal(True, "Up", "it is up")
    assert report.Signal.of(False, *defaults) == report.Signal(False, "Down", "it is down")
    assert report.Signal.of((False, "Phase", "provisioning"), *defaults) == report.Signal(
        False, "Phase", "provisioning"
    )


def test_an_error_is_news_once_then_the_same_error_is_not() -> None:
    c = fresh()

    assert report.error_conditions(c, 2, "InvalidSpec", "spec.size: too big") is True
    assert report.error_conditions(c, 2, "InvalidSpec", "spec.size: too big") is False
    assert c.is_false(okt.READY)
    assert c.is_true(okt.DEGRADED)
    assert c.is_unknown(okt.AVAILABLE) and c.is_unknown(okt.PROGRESSING)


def kstatus_of(c: conditions.Conditions) -> dict[str, tuple[str, str]]:
    return {t: (c[t].status.value, c[t].reason) for t in conditions.KSTATUS_TYPES if t in c}


def succeed(c: conditions.Conditions, ready: report.Signal) -> None:
    quiet = report.Signal(False, "Settled", "nothing to roll out")
    report.success_conditions(c, 4, ready=ready, available=None, progressing=quiet, degraded=quiet)


def test_kstatus_conditions_follow_the_reconcile_reconciling_then_stalled_then_none() -> None:
    c = fresh()

    succeed(c, report.Signal(False, "Creating", "2 children wait for their creation"))
    assert kstatus_of(c) == {conditions.RECONCILING: ("True", "Creating")}
    assert c[conditions.RECONCILING].observed_generation == 4

    report.error_conditions(c, 4, "ApiError", "the API server is away", degraded=False)
    assert kstatus_of(c) == {conditions.RECONCILING: ("True", "ApiError")}

    report.error_conditions(c, 5, "InvalidSpec", "spec.size: too big", stalled=True)
    assert kstatus_of(c) == {conditions.STALLED: ("True", "InvalidSpec")}
    assert c[conditions.STALLED].observed_generation == 5

    succeed(c, report.Signal(True, "Reconciled", "fine"))
    assert kstatus_of(c) == {}


def test_the_same_stalled_error_again_changes_nothing_to_write() -> None:
    c = conditions.Conditions.from_status({}, now=lambda: T0)
    report.error_conditions(c, 2, "InvalidSpec", "spec.size: too big", stalled=True)
    again = conditions.Conditions.from_status({"conditions": c.to_list()}, now=lambda: T0)

    report.error_conditions(again, 2, "InvalidSpec", "spec.size: too big", stalled=True)

    assert not again.changed


class _Replicas(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    available_replicas: int = pydantic.Field(0, alias="availableReplicas")
    phase: str | None = None


@pytest.mark.parametrize("key", ["available_replicas", "availableReplicas"])
def test_a_status_field_set_by_either_name_is_written_once_under_its_api_name(key: str) -> None:
    view = report.status_fields_view({key: 3, "phase": "Running", "other": "kept"}, _Replicas)
    assert view == {"availableReplicas": 3, "phase": "Running", "other": "kept"}


class _AliasOnly(pydantic.BaseModel):
    """A status model that takes its fields by their aliases only (pydantic's default: no populate_by_name)."""

    available_replicas: int = pydantic.Field(0, alias="availableReplicas")
    last_backup: datetime.datetime | None = pydantic.Field(None, alias="lastBackup")


@pytest.mark.parametrize("key", ["available_replicas", "availableReplicas"])
def test_a_status_field_set_by_its_python_name_is_written_even_when_the_model_takes_aliases_only(key: str) -> None:
    view = report.status_fields_view({key: 3, "last_backup": T0}, _AliasOnly)
    assert view == {"availableReplicas": 3, "lastBackup": T0.strftime("%Y-%m-%dT%H:%M:%SZ")}


def test_a_status_field_set_by_its_python_name_is_validated_when_the_model_takes_aliases_only() -> None:
    with pytest.raises(ValueError, match="lastBackup"):
        report.status_fields_view({"last_backup": "not a time"}, _AliasOnly)


def test_without_a_status_model_the_status_fields_are_written_as_given() -> None:
    assert report.status_fields_view({"available_replicas": 3}, None) == {"available_replicas": 3}


def test_a_status_field_set_to_none_is_removed_under_its_api_name() -> None:
    view = report.status_fields_view({"available_replicas": 2, "phase": None}, _Replicas)
    assert view == {"availableReplicas": 2, "phase": None}


@pytest.mark.parametrize("model", [None, _Replicas])
def test_a_none_inside_a_status_field_s_value_is_left_out_and_a_field_set_to_none_is_kept_as_a_removal(
    model: type[pydantic.BaseModel] | None,
) -> None:
    fields = {"probe": {"healthy": True, "detail": None, "ports": [{"port": 1, "name": None}, None]}, "gone": None}
    assert report.status_fields_view(fields, model) == {
        "probe": {"healthy": True, "ports": [{"port": 1}, None]},
        "gone": None,
    }


class _Labels(dict[str, Any]):
    """A mapping of another type than dict: the encoder, not the plain-JSON walk, judges it."""


@pytest.mark.parametrize(
    ("value", "written"),
    [
        pytest.param([{"group": "", "name": "a", "x": None}], [{"group": "", "name": "a"}], id="list-of-objects"),
        pytest.param(("a", 1, 2.5, True, None), ["a", 1, 2.5, True, None], id="tuple-as-list"),
        pytest.param({"a": {"b": {"c": None, "d": [None, {}]}}}, {"a": {"b": {"d": [None, {}]}}}, id="nested"),
        pytest.param(_Labels(a="1", b=None), {"a": "1"}, id="dict-subclass"),
        pytest.param({1: "one", "two": None}, {1: "one"}, id="a-key-json-writes-as-text"),
        pytest.param(json.loads("[" * 80 + "]" * 80), json.loads("[" * 80 + "]" * 80), id="deep"),
    ],
)
def test_a_status_field_of_json_data_is_written_without_its_none_keys(value: Any, written: Any) -> None:
    assert report.status_fields_view({"field": value}, None) == {"field": written}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param([1.0, float("nan")], "Out of range float values are not JSON compliant", id="nan"),
        pytest.param({"at": {"when": datetime.datetime(2026, 1, 1)}}, "not JSON serializable", id="datetime"),
        pytest.param({"tags": {"a"}}, "not JSON serializable", id="set"),
        pytest.param({(1, 2): "pair"}, "keys must be str, int, float, bool or None", id="tuple-key"),
    ],
)
def test_a_status_field_that_is_no_json_fails_naming_it(value: Any, said: str) -> None:
    with pytest.raises(ValueError, match=rf"status\.field: .*{re.escape(said)}"):
        report.status_fields_view({"field": value}, None)


def test_a_status_field_holding_itself_fails_as_the_encoder_says() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match=r"status\.field: Circular reference detected"):
        report.status_fields_view({"field": looped}, None)


def test_a_status_field_not_set_is_not_written_as_the_model_s_default() -> None:
    """Its default would overwrite what another writer set (a timer, in a reconcile that does not run it)."""
    assert report.status_fields_view({"phase": "Running"}, _Replicas) == {"phase": "Running"}


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    replicas: int = 0


def test_a_status_model_that_forbids_extra_fields_still_lets_undeclared_fields_through() -> None:
    # relatedObjects is okt's own (the SuccessManager sets it): a strict model must not fail every reconcile on it.
    view = report.status_fields_view({"replicas": 2, "relatedObjects": []}, _Strict)
    assert view == {"replicas": 2, "relatedObjects": []}


class Unreported(okt.Reconciler):
    """A reconciler that writes no status, whose hook (in ``state``) or timer sets a status field."""

    api_version = "apps.example.com/v1alpha1"
    kind = "WebApp"
    status = "off"

    def __init__(self, state: okt.State | None) -> None:
        self.state = state

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        answer = super().enter_in_state(state, ctx)  # the built-in work (the SuccessManager's status write is due)
        if state is self.state:
            ctx.status_fields["lastBackup"] = "2026-11-30T12:00:00Z"
        return answer

    @okt.every(hours=1)
    def backup(self, ctx: okt.Context) -> None:
        if self.state is None:
            ctx.status_fields["lastBackup"] = "2026-11-30T12:00:00Z"


@pytest.mark.parametrize(
    "state", [okt.State.Mutator, okt.State.SuccessManager, None], ids=["mutator", "success manager", "timer"]
)
def test_status_fields_set_where_the_reconciler_writes_no_status_fail_the_reconcile_for_good_instead_of_going_nowhere(
    state: okt.State | None,
) -> None:
    """``status = "off"`` (a built-in kind's default): nothing writes ``ctx.status_fields``, so a hook or timer that
    sets one is told, as a daemon handing one over is, by the reconcile failing with an error naming the field (it
    was dropped without a word); the field is written nowhere. The same code sets it again on every retry: a
    permanent error, reported once (one Warning Event), then left until the object changes (it was retried with
    backoff for ever, as a failure that passes)."""
    fake = webapp()

    run = okt.reconcile(Unreported(state), fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert isinstance(run.results.first_error, okt.PermanentError)
    said = (
        'the status of controller webapp\'s reconciler is "off" (the default of a built-in kind): no reconcile writes '
        'ctx.status_fields (lastBackup); write them through ctx.client, or set status = "annotations" (a mistake of '
        "the code that no retry fixes: none is made until the object changes)"
    )
    assert str(run.results.first_error) == said
    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert run.outcome.reason == f"PermanentError: {said}"
    warnings, _ = fake.list(kinds.EVENT, "shop")
    assert [(event["type"], event["reason"], event["message"]) for event in warnings] == [
        ("Warning", "PermanentError", said)
    ]
    after = fake.stored(WEBAPP, "web", "shop")
    assert after is not None
    assert "status" not in after
    assert "lastBackup" not in json.dumps(after)  # only the failure's count, in okt's annotation


def test_a_reconciler_that_writes_no_status_and_sets_no_status_field_succeeds() -> None:
    fake = webapp()

    run = okt.reconcile(Unreported(okt.State.End), fake, None, "shop", "web")

    assert not run.results.has_error
    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER  # the timer's next call


class Backups(okt.Reconciler):
    """A WebApp reconciler whose SuccessManager sets ``ctx.status_fields`` only as told (as a timer does at its
    interval, or a hook at some reconciles)."""

    api_version = "apps.example.com/v1alpha1"
    kind = "WebApp"

    def __init__(self, fields: dict[str, object]) -> None:
        self.fields = fields

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        answer = super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            ctx.status_fields.update(self.fields)
        return answer


class AnnotatedBackups(Backups):
    status = "annotations"


def _stored_fields(fake: okt.testing.FakeClient, status: str) -> dict[str, object]:
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    if status == "status":
        return {key: value for key, value in (stored.get("status") or {}).items() if key == "lastBackup"}
    return dict(json.loads(stored["metadata"].get("annotations", {}).get("okt.io/status", "{}")))


@pytest.mark.parametrize("status", ["status", "annotations"])
def test_a_status_field_set_by_an_earlier_reconcile_stays_until_one_removes_it_wherever_the_status_is_kept(
    status: str,
) -> None:
    """A field a timer or a hook set once (``lastBackup``) is kept by the reconciles that do not set it, and removed
    by one that sets it to None — in okt's annotations (``status = "annotations"``, written whole) as on the status
    subresource: the annotation lost it at the next reconcile, and the timer wrote it back at its next call."""
    fake = webapp()
    reconciler = Backups if status == "status" else AnnotatedBackups

    okt.reconcile(reconciler({"lastBackup": "2026-11-30T12:00:00Z"}), fake, None, "shop", "web")
    assert _stored_fields(fake, status) == {"lastBackup": "2026-11-30T12:00:00Z"}

    run = okt.reconcile(reconciler({}), fake, None, "shop", "web")
    assert not run.results.has_error
    assert _stored_fields(fake, status) == {"lastBackup": "2026-11-30T12:00:00Z"}

    okt.reconcile(reconciler({"lastBackup": None}), fake, None, "shop", "web")
    assert _stored_fields(fake, status) == {}


class RenamedBackups(Backups):
    legacy_prefixes = ("old.example.com",)


class RenamedAnnotatedBackups(AnnotatedBackups):
    legacy_prefixes = ("old.example.com",)


@pytest.mark.parametrize(
    ("reconciler", "status", "kept"),
    [
        pytest.param(Backups, "status", "okt.io/status", id="to the status subresource"),
        pytest.param(RenamedBackups, "status", "old.example.com/status", id="to the status under a new prefix"),
        pytest.param(RenamedAnnotatedBackups, "annotations", "old.example.com/status", id="under a new prefix"),
    ],
)
def test_status_fields_an_earlier_version_kept_in_annotations_are_carried_where_the_status_is_kept_now(
    reconciler: type[Backups], status: str, kept: str
) -> None:
    """The fields an operator version kept in okt's annotation (``status = "annotations"``, or under a prefix since
    changed) go on where this one keeps the status, as the conditions do, by the write that removes that annotation:
    they left with it, missing until the next call that set them (a timer's, at its interval)."""
    fake = webapp()
    fake.patch(WEBAPP, "web", {"metadata": {"annotations": {kept: '{"lastBackup":"2026-11-30T12:00:00Z"}'}}}, "shop")

    run = okt.reconcile(reconciler({}), fake, None, "shop", "web")

    assert not run.results.has_error
    assert _stored_fields(fake, status) == {"lastBackup": "2026-11-30T12:00:00Z"}
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    assert kept not in (stored["metadata"].get("annotations") or {})  # the copy that said it is gone
