"""What daemons hand over, held per object and daemon: a repeat changes nothing, okt's and another daemon's types are
refused, nothing is held once the daemon stopped, and a reconcile sets it (or removes it, the daemon gone)."""

from __future__ import annotations

import datetime
from typing import Any

import pydantic
import pytest

from okt.reconciler import findings
from okt.status import conditions as cond

NOW = datetime.datetime(2026, 11, 29, 18, 0, tzinfo=datetime.UTC)


def held(*daemons: str, uid: str = "u1", model: type[pydantic.BaseModel] | None = None) -> findings.Findings:
    store = findings.Findings(model)
    for daemon in daemons:
        store.open(uid, daemon)
    return store


def applied_to(
    store: findings.Findings, status: dict[str, Any], uid: str = "u1"
) -> tuple[findings.Applied, cond.Conditions, dict[str, Any]]:
    conditions = cond.Conditions.from_status(status, now=lambda: NOW)
    fields: dict[str, Any] = {}
    return store.apply(uid, conditions, fields, status), conditions, fields


def test_stating_the_same_condition_or_fields_again_changes_nothing() -> None:
    store = held("probe")
    assert store.set_condition("u1", "probe", "OperandHealthy", True, "Answers", "up")
    assert not store.set_condition("u1", "probe", "OperandHealthy", True, "Answers", "up")
    assert store.set_condition("u1", "probe", "OperandHealthy", True, "Answers", "up again")
    assert store.set_fields("u1", "probe", {"probe": {"healthy": True}})
    assert not store.set_fields("u1", "probe", {"probe": {"healthy": True}})


@pytest.mark.parametrize("type_", [*cond.STANDARD_TYPES, *cond.KSTATUS_TYPES])
def test_a_daemon_cannot_state_one_of_okt_s_conditions(type_: str) -> None:
    store = held("probe")
    with pytest.raises(ValueError, match="okt's own"):
        store.set_condition("u1", "probe", type_, False, "Broken")
    assert applied_to(store, {})[1].to_list() == []


def test_a_condition_type_belongs_to_the_daemon_that_stated_it_first() -> None:
    store = held("probe", "backup")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    with pytest.raises(ValueError, match="daemon 'probe'"):
        store.set_condition("u1", "backup", "OperandHealthy", False, "Down")
    assert applied_to(store, {})[1]["OperandHealthy"].status is cond.ConditionStatus.TRUE


def test_a_daemon_may_state_a_condition_or_field_a_daemon_done_for_the_object_stated_and_its_own_stays() -> None:
    store = held("probe", "backup")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.set_fields("u1", "probe", {"probe": {"healthy": True}})
    assert store.retire("u1", "probe")  # done: what it stated goes with the next reconcile
    assert store.set_condition("u1", "backup", "OperandHealthy", False, "Down")
    assert store.set_fields("u1", "backup", {"probe": {"healthy": False}})
    applied, conditions, fields = applied_to(store, {})
    assert conditions["OperandHealthy"].status is cond.ConditionStatus.FALSE
    assert fields == {"probe": {"healthy": False}}
    assert applied.record == {"backup": {"conditions": ["OperandHealthy"], "fields": ["probe"]}}


def test_a_status_field_belongs_to_the_daemon_that_stated_it_first() -> None:
    store = held("probe", "backup")
    store.set_fields("u1", "probe", {"probe": {"healthy": True}})
    with pytest.raises(ValueError, match=r"status\.probe is stated by daemon 'probe'"):
        store.set_fields("u1", "backup", {"lastBackup": "now", "probe": {"healthy": False}})
    assert applied_to(store, {})[2] == {"probe": {"healthy": True}}  # nothing of the refused fields is held
    store.set_fields("u1", "probe", {"probe": None})  # removed: no longer the daemon's
    assert store.set_fields("u1", "backup", {"probe": {"healthy": False}})


@pytest.mark.parametrize(
    ("type_", "reason"), [("Operand Healthy", "Answers"), ("OperandHealthy", "not a reason"), ("OperandHealthy", "")]
)
def test_a_condition_the_api_would_refuse_is_refused_when_stated(type_: str, reason: str) -> None:
    store = held("probe")
    with pytest.raises(ValueError):
        store.set_condition("u1", "probe", type_, True, reason)
    assert applied_to(store, {})[1].to_list() == []


class BackupStatus(pydantic.BaseModel):
    last_backup: datetime.datetime | None = pydantic.Field(default=None, alias="lastBackup")
    backups: int = 0


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"conditions": []}, "status.conditions is okt's own"),
        ({"observedGeneration": 3}, "status.observedGeneration is okt's own"),
        ({"backups": "many"}, "status.backups"),
        ({"when": datetime.datetime(2026, 1, 1)}, "status.when"),
    ],
)
def test_fields_okt_writes_or_the_status_model_refuses_are_refused_and_nothing_is_held(
    fields: dict[str, Any], said: str
) -> None:
    store = held("backup", model=BackupStatus)
    with pytest.raises(ValueError, match=said):
        store.set_fields("u1", "backup", fields)
    assert not store.set_fields("u1", "backup", {})
    assert applied_to(store, {})[2] == {}


class OperandStatus(pydantic.BaseModel):
    """A status model with a field the reconcile's hooks set, required, beside the daemon's."""

    replicas: int = pydantic.Field(ge=0)
    last_backup: datetime.datetime | None = pydantic.Field(default=None, alias="lastBackup")


def test_a_daemon_s_field_is_validated_alone_not_refused_for_a_required_field_it_does_not_state() -> None:
    store = held("backup", model=OperandStatus)
    assert store.set_fields("u1", "backup", {"lastBackup": NOW})
    assert applied_to(store, {})[2] == {"lastBackup": "2026-11-29T18:00:00Z"}
    with pytest.raises(ValueError, match=r"status\.replicas: Input should be greater than or equal to 0"):
        store.set_fields("u1", "backup", {"replicas": -1})


def test_fields_are_held_under_the_status_model_s_api_names() -> None:
    store = held("backup", model=BackupStatus)
    store.set_fields("u1", "backup", {"last_backup": NOW, "backups": 2})
    assert applied_to(store, {})[2] == {"lastBackup": "2026-11-29T18:00:00Z", "backups": 2}


def test_what_a_daemon_hands_over_once_stopped_or_never_started_is_dropped() -> None:
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.close("u1", "probe")
    assert not store.set_condition("u1", "probe", "OperandHealthy", False, "Down")
    assert not store.set_fields("u1", "probe", {"probe": 1})
    assert not store.set_condition("u2", "probe", "OperandHealthy", False, "Down")
    assert not store.holds("u1") and not store.holds("u2")


def test_a_reconcile_sets_what_the_daemons_stated_and_says_whether_the_object_holds_it_already() -> None:
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", False, "Unreachable", "no answer")
    store.set_fields("u1", "probe", {"probe": {"healthy": False}, "gone": None})

    applied, conditions, fields = applied_to(store, {"conditions": [], "gone": 1})
    assert applied.changed
    assert conditions["OperandHealthy"] == cond.Condition.build(
        "OperandHealthy", False, "Unreachable", "no answer", last_transition_time=NOW
    )
    assert fields == {"probe": {"healthy": False}, "gone": None}

    stored = {"conditions": conditions.to_list(), "probe": {"healthy": False}}
    assert not applied_to(store, stored)[0].changed


def test_a_daemon_done_for_its_object_has_what_it_stated_removed_then_forgotten_once_written() -> None:
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.set_fields("u1", "probe", {"probe": {"healthy": True}})
    stored = {**applied_to(store, {})[2], "conditions": applied_to(store, {})[1].to_list(), "other": 1}

    assert store.retire("u1", "probe")
    assert not store.set_condition("u1", "probe", "OperandHealthy", False, "Down")  # it returned
    applied, conditions, fields = applied_to(store, stored)
    assert applied.changed
    assert "OperandHealthy" not in conditions
    assert fields == {"probe": None}
    assert store.holds("u1")  # until that reconcile's write went through
    store.settle("u1", applied)
    assert not store.holds("u1")


def test_a_daemon_started_again_keeps_its_findings_from_a_reconcile_that_removed_its_predecessor_s() -> None:
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.retire("u1", "probe")
    applied = applied_to(store, {})[0]
    store.open("u1", "probe")
    store.set_condition("u1", "probe", "OperandHealthy", False, "Down")
    store.settle("u1", applied)
    assert applied_to(store, {})[1]["OperandHealthy"].status is cond.ConditionStatus.FALSE


def test_a_daemon_done_without_stating_anything_has_what_an_earlier_process_s_daemon_stated_removed() -> None:
    store = held("probe")
    assert store.retire("u1", "probe")  # a reconcile is asked: the object may hold what it stated before a restart
    applied, conditions, fields = recorded(store, ("probe",))
    assert (applied.changed, applied.record) == (True, {})
    assert "OperandHealthy" not in conditions
    assert fields == {"probe": None}
    store.settle("u1", applied)
    assert not store.holds("u1")


def test_the_findings_of_an_object_go_with_it_and_those_of_others_stay() -> None:
    store = held("probe", "backup")
    store.open("u2", "probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.set_condition("u2", "probe", "OperandHealthy", True, "Answers")
    store.close("u1")
    assert not store.holds("u1") and store.holds("u2")
    store.clear()
    assert not store.holds("u2")


RECORD = {"probe": {"conditions": ["OperandHealthy"], "fields": ["probe"]}}
STORED = {"conditions": [{"type": "OperandHealthy", "status": "True", "reason": "Answers"}], "probe": {"up": True}}


def recorded(
    store: findings.Findings, declared: tuple[str, ...], *, carry: bool = False, live: bool = True
) -> tuple[findings.Applied, cond.Conditions, dict[str, Any]]:
    conditions = cond.Conditions.from_status(STORED, now=lambda: NOW)
    fields: dict[str, Any] = {}
    applied = store.apply("u1", conditions, fields, STORED, record=RECORD, concerned=declared, carry=carry, live=live)
    return applied, conditions, fields


def test_what_a_declared_daemon_stated_before_a_restart_is_kept_carried_whole_where_the_fields_are_written_whole() -> (
    None
):
    applied, conditions, fields = recorded(findings.Findings(), ("probe",), carry=True)
    assert (applied.changed, applied.record) == (False, RECORD)
    assert conditions["OperandHealthy"].status is cond.ConditionStatus.TRUE
    assert fields == {"probe": {"up": True}}
    assert recorded(findings.Findings(), ("probe",))[2] == {}  # a status subresource keeps what okt does not send


def test_a_daemon_stating_a_name_its_record_does_not_list_has_what_it_stated_before_and_not_since_removed() -> None:
    """Its code states them under new names now (a new version of the operator renamed them)."""
    store = held("probe")
    store.set_condition("u1", "probe", "Reachable", True, "Answers")
    store.set_fields("u1", "probe", {"lastSeen": "now"})
    applied, conditions, fields = recorded(store, ("probe",))
    assert applied.changed
    assert applied.record == {"probe": {"conditions": ["Reachable"], "fields": ["lastSeen"]}}
    assert "OperandHealthy" not in conditions
    assert conditions["Reachable"].status is cond.ConditionStatus.TRUE
    assert fields == {"probe": None, "lastSeen": "now"}


@pytest.mark.parametrize("carry", [False, True])
def test_a_daemon_stating_again_some_of_the_names_its_record_lists_keeps_the_others_and_changes_nothing(
    carry: bool,
) -> None:
    """It may state them later in its round (a field after its first backup): removed, they would be written back."""
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    applied, conditions, fields = recorded(store, ("probe",), carry=carry)
    assert (applied.changed, applied.record) == (False, RECORD)
    assert conditions["OperandHealthy"].status is cond.ConditionStatus.TRUE
    assert fields == ({"probe": {"up": True}} if carry else {})


def test_the_record_follows_what_the_daemon_states_now() -> None:
    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    store.set_fields("u1", "probe", {"probe": None})
    applied, _, fields = recorded(store, ("probe",))
    assert applied.record == {"probe": {"conditions": ["OperandHealthy"]}}
    assert fields == {"probe": None}


def test_what_a_daemon_no_longer_declared_stated_is_removed_and_leaves_the_record() -> None:
    applied, conditions, fields = recorded(findings.Findings(), ("backup",), carry=True)
    assert (applied.changed, applied.record) == (True, {})
    assert "OperandHealthy" not in conditions
    assert fields == {"probe": None}


def test_a_field_a_daemon_gone_from_the_code_stated_is_kept_when_a_declared_daemon_states_it_now() -> None:
    store = held("watcher")
    store.set_fields("u1", "watcher", {"probe": {"up": False}})
    store.set_condition("u1", "watcher", "OperandHealthy", False, "Down")
    applied, conditions, fields = recorded(store, ("watcher",))
    assert applied.record == {"watcher": {"conditions": ["OperandHealthy"], "fields": ["probe"]}}
    assert conditions["OperandHealthy"].status is cond.ConditionStatus.FALSE
    assert fields == {"probe": {"up": False}}


def test_nothing_is_removed_while_the_object_is_being_deleted() -> None:
    applied, conditions, _ = recorded(findings.Findings(), (), live=False)
    assert (applied.changed, applied.record) == (False, RECORD)
    assert "OperandHealthy" in conditions


def test_what_a_daemon_not_concerning_the_object_stated_before_goes_and_what_it_states_while_it_runs_stays() -> None:
    """The object no longer passes its filter as the reconcile reads it, its supervisor not told yet: what the record
    lists and the daemon has not stated since it started goes; what it states is its own until it is stopped."""
    applied, conditions, fields = recorded(findings.Findings(), ())
    assert applied.changed and applied.record == {}
    assert "OperandHealthy" not in conditions and fields == {"probe": None}

    store = held("probe")
    store.set_condition("u1", "probe", "OperandHealthy", True, "Answers")
    applied, conditions, fields = recorded(store, ())
    assert applied.record == {"probe": {"conditions": ["OperandHealthy"]}}
    assert conditions["OperandHealthy"].status is cond.ConditionStatus.TRUE
    assert fields == {"probe": None}
