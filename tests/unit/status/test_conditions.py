"""Behaviour of okt.status.conditions: the Kubernetes condition rules, without a cluster."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import hypothesis
import pydantic
import pytest
from hypothesis import strategies as st

from okt.status import conditions
from okt.status.conditions import Condition, Conditions, ConditionStatus

T0 = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=datetime.UTC)
T0_WIRE = "2026-11-21T10:00:00Z"


class Clock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime.datetime = T0) -> None:
        self.current = start

    def __call__(self) -> datetime.datetime:
        return self.current

    def advance(self, seconds: int) -> datetime.datetime:
        self.current += datetime.timedelta(seconds=seconds)
        return self.current


def wire(type_: str, status: object = "True", reason: str = "Reconciled", **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": T0_WIRE, "reason": reason, "message": "", **extra}


# --- Condition: construction, validation, wire form -------------------------------------------------------------


def test_condition_serialises_to_the_exact_wire_shape() -> None:
    condition = Condition.build("Ready", True, "Reconciled", "all good", observed_generation=3, last_transition_time=T0)

    assert condition.to_dict() == {
        "type": "Ready",
        "status": "True",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-11-21T10:00:00Z",
        "reason": "Reconciled",
        "message": "all good",
    }


def test_condition_wire_form_omits_unknown_observed_generation() -> None:
    condition = Condition.build("Ready", False, "ApiError", last_transition_time=T0)

    assert "observedGeneration" not in condition.to_dict()


@pytest.mark.parametrize(
    "reason",
    ["", "1StartsWithDigit", "has space", "EndsWithColon:", "EndsWithComma,", "dash-inside", "x" * 1025, "Acc\u00e9nt"],
)
def test_condition_rejects_a_reason_outside_the_api_pattern(reason: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        Condition.build("Ready", True, reason, last_transition_time=T0)


@pytest.mark.parametrize("reason", ["A", "InvalidSpec", "api_error", "Failed:Retrying_", "a,b", "R" * 1024])
def test_condition_accepts_a_reason_inside_the_api_pattern(reason: str) -> None:
    assert Condition.build("Ready", True, reason, last_transition_time=T0).reason == reason


@pytest.mark.parametrize("type_", ["", "-Ready", "Ready-", "has space", "UPPER.example.com/Ready", "x" * 317])
def test_condition_rejects_a_type_outside_the_api_pattern(type_: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        Condition.build(type_, True, "Reconciled", last_transition_time=T0)


@pytest.mark.parametrize("type_", ["Ready", "cache.example.com/Ready", "pod.kube_thing.v1", "a"])
def test_condition_accepts_a_type_inside_the_api_pattern(type_: str) -> None:
    assert Condition.build(type_, True, "Reconciled", last_transition_time=T0).type == type_


def test_condition_rejects_an_over_long_message_given_directly() -> None:
    with pytest.raises(pydantic.ValidationError, match="UTF-8 bytes"):
        Condition(
            type="Ready",
            status=ConditionStatus.TRUE,
            reason="Reconciled",
            message="x" * (conditions.MESSAGE_MAX_BYTES + 1),
            last_transition_time=T0,
        )


@pytest.mark.parametrize(
    ("message", "expected_prefix"),
    [
        ("x" * 40000, "x" * (conditions.MESSAGE_MAX_BYTES - 3)),
        # 3-byte characters: the cut must not leave half a character behind.
        ("\u20ac" * 20000, "\u20ac" * ((conditions.MESSAGE_MAX_BYTES - 3) // 3)),
    ],
)
def test_build_truncates_an_over_long_message_with_an_ellipsis(message: str, expected_prefix: str) -> None:
    condition = Condition.build("Ready", False, "ApiError", message, last_transition_time=T0)

    assert condition.message == expected_prefix + "\u2026"
    assert len(condition.message.encode("utf-8")) <= conditions.MESSAGE_MAX_BYTES


@pytest.mark.parametrize("message", ["", "short", "x" * conditions.MESSAGE_MAX_BYTES])
def test_a_message_within_the_limit_is_never_truncated(message: str) -> None:
    assert Condition.truncate_message(message) == message


def test_condition_rejects_a_naive_transition_time() -> None:
    with pytest.raises(pydantic.ValidationError, match="timezone-aware"):
        Condition.build("Ready", True, "Reconciled", last_transition_time=datetime.datetime(2026, 11, 21, 10))


def test_condition_normalises_an_aware_time_to_utc_whole_seconds() -> None:
    paris = datetime.timezone(datetime.timedelta(hours=1))
    local = datetime.datetime(2026, 11, 21, 11, 0, 0, 987654, tzinfo=paris)

    condition = Condition.build("Ready", True, "Reconciled", last_transition_time=local)

    assert condition.last_transition_time == T0
    assert condition.last_transition_time.tzinfo is datetime.UTC
    assert condition.to_dict()["lastTransitionTime"] == T0_WIRE


def test_condition_is_frozen() -> None:
    condition = Condition.build("Ready", True, "Reconciled", last_transition_time=T0)

    with pytest.raises(pydantic.ValidationError):
        condition.reason = "Other"  # type: ignore[misc]


def test_condition_validates_wire_names_strictly() -> None:
    condition = Condition.model_validate(
        {
            "type": "Ready",
            "status": "False",
            "reason": "ApiError",
            "lastTransitionTime": T0_WIRE,
            "observedGeneration": 2,
        }
    )

    assert (condition.status, condition.observed_generation, condition.last_transition_time) == (
        ConditionStatus.FALSE,
        2,
        T0,
    )


def test_with_status_moves_the_transition_time_only_on_a_real_change() -> None:
    condition = Condition.build("Ready", True, "Reconciled", last_transition_time=T0)
    later = T0 + datetime.timedelta(minutes=5)

    assert condition.with_status(True, at=later) is condition
    flipped = condition.with_status(ConditionStatus.FALSE, at=later)
    assert (flipped.status, flipped.last_transition_time) == (ConditionStatus.FALSE, later)


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        (lambda c: c.with_reason("ApiError"), "reason", "ApiError"),
        (lambda c: c.with_message("boom"), "message", "boom"),
        (lambda c: c.with_observed_generation(7), "observed_generation", 7),
    ],
)
def test_with_methods_keep_the_transition_time(change: Any, field: str, expected: object) -> None:
    condition = Condition.build("Ready", True, "Reconciled", last_transition_time=T0)

    changed = change(condition)

    assert getattr(changed, field) == expected
    assert changed.last_transition_time == T0
    assert condition.reason == "Reconciled"  # the original value is untouched


def test_with_reason_validates_the_new_reason() -> None:
    condition = Condition.build("Ready", True, "Reconciled", last_transition_time=T0)

    with pytest.raises(pydantic.ValidationError):
        condition.with_reason("not a reason")


# --- Condition.from_dict: reading what other writers wrote ------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (wire("Ready"), {"status": ConditionStatus.TRUE, "reason": "Reconciled", "message": ""}),
        (wire("Ready", status="true"), {"status": ConditionStatus.TRUE}),
        (wire("Ready", status="FALSE"), {"status": ConditionStatus.FALSE}),
        (wire("Ready", status=True), {"status": ConditionStatus.TRUE}),
        (wire("Ready", status="maybe"), {"status": ConditionStatus.UNKNOWN}),
        (wire("Ready", status=" True "), {"status": ConditionStatus.TRUE}),
        (wire("Ready", reason="A" * 2000), {"reason": "A" * conditions.REASON_MAX_LENGTH}),
        ({"type": "Ready", "status": "True"}, {"reason": "Unspecified", "message": "", "last_transition_time": T0}),
        (wire("Ready", reason="api error: 500"), {"reason": "ApiError500"}),
        (wire("Ready", reason=""), {"reason": "Unspecified"}),
        (wire("Ready", message=None), {"message": ""}),
        (wire("Ready", message=42), {"message": "42"}),
        (wire("Ready", lastTransitionTime="2026-11-21T11:00:00.123+01:00"), {"last_transition_time": T0}),
        (wire("Ready", lastTransitionTime="2026-11-21T10:00:00"), {"last_transition_time": T0}),
        (wire("Ready", lastTransitionTime="yesterday"), {"last_transition_time": T0}),
        (wire("Ready", lastTransitionTime=" " * 80 + "2026-11-21T10:00:00Z"), {"last_transition_time": T0}),
        (wire("Ready", observedGeneration=4), {"observed_generation": 4}),
        (wire("Ready", observedGeneration="4"), {"observed_generation": 4}),
        (wire("Ready", observedGeneration=-1), {"observed_generation": None}),
        (wire("Ready", observedGeneration=True), {"observed_generation": None}),
        (wire("Ready", lastUpdateTime=T0_WIRE, lastProbeTime=None), {"reason": "Reconciled"}),
    ],
)
def test_from_dict_tolerates_what_other_writers_put_there(data: dict[str, Any], expected: dict[str, object]) -> None:
    condition = Condition.from_dict(data, now=Clock(T0))

    assert {field: getattr(condition, field) for field in expected} == expected


def test_from_dict_truncates_an_over_long_foreign_message() -> None:
    condition = Condition.from_dict(wire("Ready", message="y" * 50000))

    assert condition.message.endswith("\u2026")
    assert len(condition.message.encode("utf-8")) <= conditions.MESSAGE_MAX_BYTES


def test_a_message_at_the_limit_in_characters_but_over_it_in_bytes_is_truncated() -> None:
    message = "\u00e9" + "x" * (conditions.MESSAGE_MAX_BYTES - 1)  # one two-byte character

    assert Condition.from_dict(wire("Ready", message=message)).message.endswith("\u2026")


def test_reading_oversized_foreign_values_remembers_none_of_them() -> None:
    # Valid types, reasons and times are remembered between reconciles; a writer's oversized ones must not be.
    conditions._reason_matches.cache_clear()
    conditions._parsed_time.cache_clear()
    long_time = " " * 100 + "2026-11-21T10:00:00Z"

    condition = Condition.from_dict(wire("Ready", reason="B" * 5000, lastTransitionTime=long_time), now=Clock(T0))

    assert condition.reason == "B" * conditions.REASON_MAX_LENGTH and condition.last_transition_time == T0
    assert conditions._reason_matches.cache_info().currsize == 0
    assert conditions._parsed_time.cache_info().currsize == 0


@pytest.mark.parametrize("data", [{}, {"type": ""}, {"type": 3}, {"type": "not a type"}, {"status": "True"}])
def test_from_dict_rejects_a_condition_without_a_usable_type(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="condition type"):
        Condition.from_dict(data)


def test_from_dict_round_trips_the_wire_form() -> None:
    condition = Condition.build("x.example.com/Synced", False, "ApiError", "boom", observed_generation=9)

    assert Condition.from_dict(condition.to_dict()) == condition


# --- to_reason --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("api error: 500", "ApiError500"),
        ("InvalidSpec", "InvalidSpec"),
        ("connection_reset by peer", "ConnectionResetByPeer"),
        ("HTTPError", "HTTPError"),
        ("404 not found", "Reason404NotFound"),
        ("d\u00e9j\u00e0 vu", "DJVu"),
        ("", "Unspecified"),
        ("!!! ???", "Unspecified"),
    ],
)
def test_to_reason_turns_text_into_a_camel_case_reason(text: str, reason: str) -> None:
    assert conditions.to_reason(text) == reason


def test_to_reason_uses_the_given_fallback_for_text_without_words() -> None:
    assert conditions.to_reason("...", fallback="Failed") == "Failed"


@hypothesis.given(st.text())
def test_to_reason_always_returns_a_valid_reason(text: str) -> None:
    reason = conditions.to_reason(text)

    assert re.fullmatch(conditions.REASON_PATTERN, reason)
    assert 1 <= len(reason) <= conditions.REASON_MAX_LENGTH


# --- Conditions: the working copy -------------------------------------------------------------------------------


def test_set_on_an_empty_list_adds_the_condition_and_reports_a_change() -> None:
    conds = Conditions.from_status(None, now=Clock())

    assert conds.set(conditions.READY, True, "Reconciled", "done", observed_generation=1) is True
    assert conds.changed is True
    assert conds.to_list() == [
        {
            "type": "Ready",
            "status": "True",
            "observedGeneration": 1,
            "lastTransitionTime": T0_WIRE,
            "reason": "Reconciled",
            "message": "done",
        }
    ]


@pytest.mark.parametrize(
    "args",
    [
        (ConditionStatus.TRUE, "Reconciled", "done", 1),
        (ConditionStatus.FALSE, "ApiError", "boom", None),
        (ConditionStatus.UNKNOWN, "Reconciling", "", 0),
    ],
)
def test_setting_what_is_already_there_changes_nothing(args: tuple[ConditionStatus, str, str, int | None]) -> None:
    clock = Clock()
    conds = Conditions(now=clock)
    conds.set("Ready", *args)
    before = conds.to_list()
    clock.advance(60)

    assert conds.set("Ready", *args) is False
    assert conds.to_list() == before


def test_a_loaded_list_that_is_set_identically_is_not_changed() -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready", observedGeneration=2)]}, now=Clock())

    assert conds.set("Ready", True, "Reconciled", "", observed_generation=2) is False
    assert conds.changed is False


@pytest.mark.parametrize(
    "entry",
    [
        wire("Ready", status="true", observedGeneration=2),  # another writer's spelling of True
        wire("Ready", observedGeneration="2"),  # a generation written as text
        wire("Ready", observedGeneration=2, lastTransitionTime="yesterday"),  # a time that cannot be read
    ],
)
def test_an_entry_that_already_says_the_same_in_other_words_is_kept_as_loaded(entry: dict[str, Any]) -> None:
    conds = Conditions.from_status({"conditions": [entry]}, now=Clock())

    assert conds.set("Ready", True, "Reconciled", "", observed_generation=2) is False
    assert conds.changed is False
    assert conds.to_list() == [entry]


@pytest.mark.parametrize("status", ["True", "False", "Unknown", "true", " FALSE ", True, False, "maybe", None, 1])
@pytest.mark.parametrize("touched", [False, True])
def test_is_true_false_unknown_read_a_loaded_entry_as_its_parsed_condition_says(status: object, touched: bool) -> None:
    entries = [wire("Ready", status=status), wire("Ready", status="True"), {"type": "bad type", "status": "True"}]
    conds = Conditions.from_status({"conditions": entries}, now=Clock())
    if touched:
        conds.get("Ready")  # parsed first: the answer must not change with the order of the questions
    parsed = Condition.from_dict(wire("Ready", status=status)).status  # the first entry of a type is the one read

    assert conds.is_true("Ready") is (parsed is ConditionStatus.TRUE)
    assert conds.is_false("Ready") is (parsed is ConditionStatus.FALSE)
    assert conds.is_unknown("Ready") is (parsed is ConditionStatus.UNKNOWN)
    assert conds.get("Ready") is not None and conds.get("Ready").status is parsed
    assert (conds.is_true("bad type"), conds.is_false("bad type"), conds.is_unknown("bad type")) == (False, False, True)
    assert (conds.is_true("Absent"), conds.is_false("Absent"), conds.is_unknown("Absent")) == (False, False, True)


@pytest.mark.parametrize("reason", ["has space", "9Lives"])
def test_setting_a_loaded_invalid_reason_again_is_refused_like_any_invalid_reason(reason: str) -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready", reason=reason)]}, now=Clock())

    with pytest.raises(pydantic.ValidationError):
        conds.set("Ready", True, reason)

    assert conds.to_list() == [wire("Ready", reason=reason)]


@pytest.mark.parametrize(
    ("status", "reason", "message", "generation", "transition_moves"),
    [
        (ConditionStatus.FALSE, "Reconciled", "", 1, True),
        (ConditionStatus.UNKNOWN, "Reconciled", "", 1, True),
        (ConditionStatus.TRUE, "StillFine", "", 1, False),
        (ConditionStatus.TRUE, "Reconciled", "a new message", 1, False),
        (ConditionStatus.TRUE, "Reconciled", "", 2, False),
        (ConditionStatus.TRUE, "Other", "other", 5, False),
    ],
)
def test_transition_time_moves_only_when_the_status_changes(
    status: ConditionStatus, reason: str, message: str, generation: int, transition_moves: bool
) -> None:
    clock = Clock()
    conds = Conditions(now=clock)
    conds.set("Ready", True, "Reconciled", "", 1)
    later = clock.advance(300)

    assert conds.set("Ready", status, reason, message, generation) is True
    assert conds["Ready"].last_transition_time == (later if transition_moves else T0)


def test_the_same_error_twice_keeps_the_transition_time() -> None:
    clock = Clock()
    conds = Conditions.from_status({"conditions": [wire("Ready")]}, now=clock)
    first_error_at = clock.advance(10)
    conds.set("Ready", False, "ApiError", "500 from the server", 3)
    after_first = Conditions.from_status({"conditions": conds.to_list()}, now=clock)
    clock.advance(600)

    assert after_first.set("Ready", False, "ApiError", "500 from the server", 3) is False
    assert after_first["Ready"].last_transition_time == first_error_at
    assert after_first.changed is False


def test_a_recurring_error_with_a_new_message_keeps_the_transition_time() -> None:
    clock = Clock()
    conds = Conditions(now=clock)
    first_error_at = clock.advance(10)
    conds.set("Ready", False, "ApiError", "attempt 1")
    clock.advance(600)

    assert conds.set("Ready", False, "ApiError", "attempt 2") is True
    assert conds["Ready"].last_transition_time == first_error_at


FOREIGN = [
    {
        "type": "Synced",
        "status": "True",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00.000001Z",
        "reason": "ReconcileSuccess",
        "x-vendor": {"nested": [1, 2, {"deep": None}]},
    },
    {"status": "Unknown", "note": "no type at all"},
    {"type": "Weird", "status": "maybe", "reason": "not camel", "message": "\u00e9t\u00e9"},
]


def test_foreign_conditions_are_preserved_byte_for_byte() -> None:
    original = json.dumps(FOREIGN)
    conds = Conditions.from_status({"conditions": json.loads(original)}, now=Clock())

    conds.set("Ready", True, "Reconciled")
    conds.set("Degraded", False, "Reconciled")
    out = conds.to_list()

    assert [json.dumps(item) for item in out[:3]] == [json.dumps(item) for item in json.loads(original)]
    assert [item["type"] for item in out[3:]] == ["Ready", "Degraded"]


def test_loading_does_not_modify_the_input_and_output_is_a_copy() -> None:
    status = {"conditions": [wire("Ready", extra={"k": ["v"]})]}
    snapshot = json.dumps(status)
    conds = Conditions.from_status(status, now=Clock())

    conds.set("Ready", False, "ApiError")
    conds.to_list()[0]["status"] = "Mangled"

    assert json.dumps(status) == snapshot
    assert conds["Ready"].status is ConditionStatus.FALSE


def test_existing_conditions_keep_their_position_and_new_ones_follow_in_the_order_set() -> None:
    loaded = [wire("Available"), wire("Ready"), wire("vendor.io/Synced")]
    conds = Conditions.from_status({"conditions": loaded}, now=Clock())

    conds.set("Progressing", False, "Reconciled")
    conds.set("Ready", False, "ApiError")
    conds.set("Degraded", True, "ApiError")

    assert [item["type"] for item in conds.to_list()] == [
        "Available",
        "Ready",
        "vendor.io/Synced",
        "Progressing",
        "Degraded",
    ]
    assert list(conds) == [item["type"] for item in conds.to_list()]


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"conditions": None},
        {"conditions": "garbage"},
        {"conditions": []},
        {"phase": "Running", "observedGeneration": 4},
    ],
)
def test_a_status_without_a_conditions_list_reads_as_empty(status: dict[str, Any] | None) -> None:
    conds = Conditions.from_status(status)

    assert (len(conds), conds.to_list(), conds.changed) == (0, [], False)


def test_an_untouched_list_round_trips_unchanged() -> None:
    loaded = [wire("Ready", observedGeneration=3), *FOREIGN]
    conds = Conditions.from_status({"conditions": loaded}, now=Clock())

    assert conds.to_list() == loaded
    assert conds.changed is False


def test_our_conditions_round_trip_through_to_list_and_from_status() -> None:
    clock = Clock()
    conds = Conditions(now=clock)
    conds.set("Ready", True, "Reconciled", "ok", 2)
    clock.advance(5)
    conds.set("Degraded", False, "Reconciled", "", 2)

    reloaded = Conditions.from_status({"conditions": conds.to_list()}, now=clock)

    assert dict(reloaded) == dict(conds)
    assert reloaded.to_list() == conds.to_list()


def test_entries_that_are_not_mappings_are_dropped() -> None:
    conds = Conditions.from_status({"conditions": ["Ready", 3, wire("Ready")]}, now=Clock())

    assert conds.to_list() == [wire("Ready")]
    assert list(conds) == ["Ready"]


def test_a_duplicated_type_is_addressed_by_its_first_entry_and_collapsed_when_set() -> None:
    loaded = [wire("Ready", reason="First"), wire("Other"), wire("Ready", reason="Second")]
    conds = Conditions.from_status({"conditions": loaded}, now=Clock())

    assert conds["Ready"].reason == "First"
    assert len(conds) == 2
    assert conds.to_list() == loaded

    conds.set("Ready", True, "Third")

    assert [(item["type"], item["reason"]) for item in conds.to_list()] == [("Ready", "Third"), ("Other", "Reconciled")]


def test_remove_drops_a_condition_and_reports_whether_it_was_there() -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready"), wire("Degraded")]}, now=Clock())

    assert conds.remove("Missing") is False
    assert conds.changed is False
    assert conds.remove("Ready") is True
    assert conds.changed is True
    assert "Ready" not in conds
    assert conds.to_list() == [wire("Degraded")]


def test_set_unknown_if_missing_adds_only_absent_conditions() -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready", status="False")]}, now=Clock())

    added = conds.set_unknown_if_missing(conditions.STANDARD_TYPES, "Reconciling", "first visit", 1)

    assert added is True
    assert conds["Ready"].status is ConditionStatus.FALSE
    assert [conds[t].status for t in conditions.STANDARD_TYPES[1:]] == [ConditionStatus.UNKNOWN] * 4
    assert conds.set_unknown_if_missing(conditions.STANDARD_TYPES, "Reconciling") is False


@pytest.mark.parametrize("reason", ["", "has space", "9Lives"])
def test_set_rejects_an_invalid_reason_and_changes_nothing(reason: str) -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready")]}, now=Clock())

    with pytest.raises(pydantic.ValidationError):
        conds.set("Ready", False, reason)

    assert conds.changed is False
    assert conds.to_list() == [wire("Ready")]


def test_set_truncates_an_over_long_message() -> None:
    conds = Conditions(now=Clock())

    conds.set("Ready", False, "ApiError", "e" * 100000)

    assert conds["Ready"].message.endswith("\u2026")


@pytest.mark.parametrize(
    ("type_", "is_true", "is_false", "is_unknown"),
    [
        ("Ready", True, False, False),
        ("Degraded", False, True, False),
        ("Progressing", False, False, True),
        ("Absent", False, False, True),
    ],
)
def test_status_predicates(type_: str, is_true: bool, is_false: bool, is_unknown: bool) -> None:
    loaded = [wire("Ready"), wire("Degraded", status="False"), wire("Progressing", status="Unknown")]
    conds = Conditions.from_status({"conditions": loaded})

    assert (conds.is_true(type_), conds.is_false(type_), conds.is_unknown(type_)) == (is_true, is_false, is_unknown)


def test_conditions_behave_as_a_mapping_by_type() -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready"), {"no": "type"}]})

    assert conds.get("Ready") == Condition.from_dict(wire("Ready"))
    assert conds.get("Absent") is None
    assert "Ready" in conds
    not_a_type: object = 42
    assert not_a_type not in conds
    assert len(conds) == 1
    with pytest.raises(KeyError):
        conds["Absent"]


def test_summary_lists_conditions_in_order() -> None:
    conds = Conditions.from_status({"conditions": [wire("Ready"), wire("Degraded", status="False", reason="Ok")]})

    assert conds.summary() == "Ready=True (Reconciled), Degraded=False (Ok)"
    assert Conditions().summary() == "no conditions"


# --- apply ----------------------------------------------------------------------------------------------------


def test_applying_the_same_updates_twice_changes_nothing_the_second_time() -> None:
    clock = Clock()
    conds = Conditions(now=clock)
    updates = [
        conditions.ConditionUpdate(conditions.READY, ConditionStatus.FALSE, "ApiError", "boom"),
        conditions.ConditionUpdate(conditions.DEGRADED, ConditionStatus.TRUE, "ApiError", "boom"),
    ]

    assert conds.apply(updates, observed_generation=2) is True
    clock.advance(60)
    reloaded = Conditions.from_status({"conditions": conds.to_list()}, now=clock)
    assert reloaded.apply(updates, observed_generation=2) is False
    assert reloaded.is_false(conditions.READY)
    assert reloaded[conditions.READY].observed_generation == 2


def test_conditions_read_from_a_status_share_nothing_with_it_and_write_back_copies() -> None:
    extra = {"nested": ["kept"]}
    status = {"conditions": [wire("Ready", **{"x-vendor": extra}), {"no type": True}, {"type": "Bad type!"}]}
    loaded = Conditions.from_status(status)

    written = loaded.to_list()
    written[0]["x-vendor"]["nested"].append("changed")
    written[1]["no type"] = False

    assert status["conditions"][0]["x-vendor"] == {"nested": ["kept"]}
    assert status["conditions"][1] == {"no type": True}
    assert Conditions.from_status(status).to_list() == loaded.to_list()


def test_a_status_set_back_to_the_stored_one_keeps_the_stored_transition_time() -> None:
    clock = Clock()
    conds = Conditions.from_status({"conditions": [wire("Ready", status="False", reason="ApiError")]}, now=clock)
    clock.advance(60)
    conds.set("Ready", True, "Reconciled")  # a success whose write the API server refused
    clock.advance(1)

    assert conds.set("Ready", False, "ApiError", "the status was refused") is True
    assert conds["Ready"].last_transition_time == T0  # still False since T0, as far as the object ever said


def test_a_condition_removed_then_set_back_keeps_its_stored_transition_time_and_position() -> None:
    clock = Clock()
    stored = [wire("Ready", status="False", reason="ApiError"), wire("Reconciling", reason="ApiError"), wire("Other")]
    conds = Conditions.from_status({"conditions": stored}, now=clock)
    clock.advance(60)
    conds.remove("Reconciling")  # a success whose write the API server refused
    clock.advance(1)

    assert conds.set("Reconciling", True, "ApiError") is True
    assert conds.to_list() == stored


def test_transitions_after_a_write_are_counted_from_what_it_wrote() -> None:
    clock = Clock()
    stored = [wire("Ready", status="False", reason="ApiError"), wire("Reconciling", reason="ApiError")]
    conds = Conditions.from_status({"conditions": stored}, now=clock)
    ready_at = clock.advance(60)
    conds.set("Ready", True, "Reconciled")
    conds.remove("Reconciling")
    conds.written()  # a flush stored Ready=True, without Reconciling
    failed_at = clock.advance(1)

    conds.set("Ready", False, "ApiError")
    conds.set("Reconciling", True, "ApiError")
    assert conds["Ready"].last_transition_time == failed_at
    assert conds["Reconciling"].last_transition_time == failed_at
    assert conds.set("Ready", True, "Reconciled") is True
    assert conds["Ready"].last_transition_time == ready_at


# --- Mark: the copy as it was, for a give-up taking a success back -------------------------------------------------


def test_a_mark_reads_each_condition_as_the_copy_held_it_whatever_was_set_removed_or_written_since() -> None:
    clock = Clock()
    conds = Conditions(
        [wire("Ready", "False", "Failed"), wire("Degraded"), wire("Ready", "True"), wire("Custom")], now=clock
    )
    conds.set("Available", True, "Up", observed_generation=2)  # set by this copy before the mark
    mark = conds.mark()
    clock.advance(60)
    conds.set("Ready", True, "Reconciled", observed_generation=3)
    conds.remove("Degraded")
    conds.set("Progressing", False, "Settled")
    conds.set("Available", False, "Down", observed_generation=3)
    conds.written()

    ready = mark.get("Ready")
    assert ready is not None and (ready.status, ready.reason) == (ConditionStatus.FALSE, "Failed")  # the first entry
    degraded = mark.get("Degraded")
    assert degraded is not None and degraded.status is ConditionStatus.TRUE
    available = mark.get("Available")
    assert available is not None and (available.reason, available.observed_generation) == ("Up", 2)
    assert mark.get("Progressing") is None
    assert conds.get("Degraded") is None and conds["Ready"].status is ConditionStatus.TRUE  # the copy moved on


def test_a_mark_parses_no_entry_until_one_is_asked_for() -> None:
    entry = wire("Ready", "True")
    conds = Conditions([entry])
    mark = conds.mark()
    # What the mark holds of an entry never read is the entry as loaded, not a parsed condition: a mark at every
    # success costs no parse in the steady state.
    assert [(key, parsed) for key, _, parsed in mark.entries] == [("Ready", None)]
    assert mark.get("Ready") == conds["Ready"]
