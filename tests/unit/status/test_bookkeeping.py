"""Behaviour of okt.status.bookkeeping: okt's per-object error count and phase, in the status or in annotations."""

from __future__ import annotations

from typing import Any

import pytest

from okt.names import Names
from okt.status import bookkeeping, conditions, writer

STATUS = bookkeeping.Persistence.STATUS
ANNOTATIONS = bookkeeping.Persistence.ANNOTATIONS
PREFIX = "okt.io"


def obj(status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"metadata": {"name": "demo", "annotations": annotations or {}}}
    if status is not None:
        raw["status"] = status
    return raw


@pytest.mark.parametrize(
    ("raw", "persistence", "error_count", "phase"),
    [
        pytest.param(obj(), STATUS, 0, None, id="status-nothing-yet"),
        pytest.param(obj({"okt": {"errorCount": 3, "phase": "Installing"}}), STATUS, 3, "Installing", id="status"),
        pytest.param(obj({"okt": {}}), STATUS, 0, None, id="status-empty"),
        pytest.param(obj({"okt": {"errorCount": "lots"}}), STATUS, 0, None, id="status-not-a-number"),
        pytest.param(obj({"okt": {"errorCount": -1}}), STATUS, 0, None, id="status-negative"),
        pytest.param(obj({"okt": "hand-edited"}), STATUS, 0, None, id="status-not-an-object"),
        pytest.param(
            obj(annotations={"okt.io/error-count": "2", "okt.io/phase": "Ready"}), ANNOTATIONS, 2, "Ready", id="ann"
        ),
        pytest.param(obj(annotations={"okt.io/error-count": "lots"}), ANNOTATIONS, 0, None, id="ann-not-a-number"),
        pytest.param(obj(annotations={"okt.io/error-count": "-1"}), ANNOTATIONS, 0, None, id="ann-negative"),
        pytest.param(obj(annotations={"okt.io/error-count": "²"}), ANNOTATIONS, 0, None, id="ann-superscript"),
        pytest.param(obj({"okt": {"errorCount": 5}}), ANNOTATIONS, 0, None, id="annotations-ignore-the-status"),
        pytest.param(obj(annotations={"okt.io/error-count": "5"}), STATUS, 0, None, id="status-ignores-annotations"),
    ],
)
def test_bookkeeping_is_read_from_the_chosen_place_only(
    raw: dict[str, Any], persistence: bookkeeping.Persistence, error_count: int, phase: str | None
) -> None:
    book = bookkeeping.Bookkeeping(raw, persistence, PREFIX)

    assert (book.error_count, book.phase) == (error_count, phase)
    assert not book.changed


@pytest.mark.parametrize("persistence", ["status", "annotations"])
def test_persistence_accepts_its_string_values(persistence: str) -> None:
    book = bookkeeping.Bookkeeping(obj(), persistence, PREFIX)

    assert book.persistence is bookkeeping.Persistence(persistence)


@pytest.mark.parametrize(("value", "stored"), [(4, 4), (0, 0), (-3, 0)])
def test_the_error_count_is_never_negative(value: int, stored: int) -> None:
    book = bookkeeping.Bookkeeping(obj(), STATUS, PREFIX)

    book.error_count = value

    assert book.error_count == stored


@pytest.mark.parametrize("prefix", ["okt.io", "cache.example.com"])
def test_annotation_names_use_the_prefix(prefix: str) -> None:
    book = bookkeeping.Bookkeeping(obj(), ANNOTATIONS, prefix)

    assert (book.error_annotation, book.phase_annotation) == (f"{prefix}/error-count", f"{prefix}/phase")


def test_changed_compares_with_what_was_loaded_not_with_the_last_assignment() -> None:
    book = bookkeeping.Bookkeeping(obj({"okt": {"errorCount": 1}}), STATUS, PREFIX)

    book.error_count = 2
    assert book.changed
    book.error_count = 1
    assert not book.changed


# --- status persistence ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loaded", "error_count", "phase", "fields"),
    [
        pytest.param({}, 0, None, {}, id="never-failed-writes-nothing"),
        pytest.param({}, 1, None, {"okt": {"errorCount": 1}}, id="first-error"),
        pytest.param({"okt": {"errorCount": 1}}, 2, None, {"okt": {"errorCount": 2}}, id="counting-up"),
        pytest.param({"okt": {"errorCount": 2}}, 0, None, {"okt": {"errorCount": 0}}, id="cleared-by-success"),
        pytest.param({}, 0, "Installing", {"okt": {"errorCount": 0, "phase": "Installing"}}, id="phase-only"),
    ],
)
def test_status_persistence_contributes_a_status_okt_field(
    loaded: dict[str, Any], error_count: int, phase: str | None, fields: dict[str, Any]
) -> None:
    book = bookkeeping.Bookkeeping(obj(loaded), STATUS, PREFIX)

    book.error_count = error_count
    book.phase = phase

    assert book.status_fields() == fields
    assert book.annotation_patch() is None


def test_a_cleared_count_read_back_from_the_status_is_left_as_it_is() -> None:
    book = bookkeeping.Bookkeeping(obj({"okt": {"errorCount": 0}}), STATUS, PREFIX)

    book.error_count = 0

    assert book.status_fields() == {}


# --- annotation persistence -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "error_count", "patch"),
    [
        pytest.param({}, 0, None, id="nothing-changed"),
        pytest.param({}, 1, {"okt.io/error-count": "1"}, id="first-error"),
        pytest.param({"okt.io/error-count": "1", "okt.io/phase": "Up"}, 2, {"okt.io/error-count": "2"}, id="up"),
        pytest.param({"okt.io/error-count": "2"}, 0, {"okt.io/error-count": None}, id="clear"),
        pytest.param({"okt.io/error-count": "2"}, 2, None, id="same-count"),
    ],
)
def test_annotation_persistence_patches_only_changes_and_null_removes(
    annotations: dict[str, str], error_count: int, patch: dict[str, Any] | None
) -> None:
    book = bookkeeping.Bookkeeping(obj(annotations=annotations), ANNOTATIONS, PREFIX)

    book.error_count = error_count

    expected = None if patch is None else {"metadata": {"annotations": patch}}
    assert book.annotation_patch() == expected
    assert book.status_fields() == {}


@pytest.mark.parametrize(("phase", "written"), [("Ready", "Ready"), (None, None)])
def test_annotation_persistence_writes_only_the_phase_when_only_the_phase_changed(
    phase: str | None, written: str | None
) -> None:
    book = bookkeeping.Bookkeeping(
        obj(annotations={"okt.io/phase": "Installing", "okt.io/error-count": "3"}), ANNOTATIONS, PREFIX
    )

    book.phase = phase

    assert book.annotation_patch() == {"metadata": {"annotations": {"okt.io/phase": written}}}


@pytest.mark.parametrize(("resource_version", "guarded"), [("42", True), (None, False), ("", False)])
def test_an_annotation_patch_is_guarded_by_the_resource_version_when_given(
    resource_version: str | None, guarded: bool
) -> None:
    book = bookkeeping.Bookkeeping(obj(), ANNOTATIONS, PREFIX)
    book.error_count = 1

    patch = book.annotation_patch(resource_version)

    assert patch is not None
    assert patch["metadata"].get("resourceVersion") == (resource_version if guarded else None)


@pytest.mark.parametrize("prefix", ["okt.io", "cache.example.com"])
def test_okt_owns_exactly_its_annotations_on_a_primary(prefix: str) -> None:
    book = bookkeeping.Bookkeeping(obj(), ANNOTATIONS, prefix)

    assert {book.error_annotation, book.phase_annotation} == {f"{prefix}/error-count", f"{prefix}/phase"}
    assert Names(prefix).primary_annotations() == {
        f"{prefix}/{name}"
        for name in ("error-count", "phase", "conditions", "observed-generation", "status", "daemons", "reported-error")
    }


@pytest.mark.parametrize("error_count", [0, 2], ids=["never-failed", "failing"])
def test_a_cleared_phase_leaves_the_status(error_count: int) -> None:
    live = {"okt": {"errorCount": error_count, "phase": "Installing"}, "observedGeneration": 1}
    book = bookkeeping.Bookkeeping(obj(live), STATUS, PREFIX)

    book.phase = None
    wanted = writer.desired_status(live, conditions.Conditions(), 1, book.status_fields())

    assert "phase" not in wanted["okt"]
    assert writer.status_patch(live, wanted)["okt"] == {"phase": None}


LEGACY = ("old.example.com", "older.example.com")


@pytest.mark.parametrize(
    ("annotations", "error_count", "phase"),
    [
        pytest.param({"old.example.com/phase": "Running", "old.example.com/error-count": "2"}, 2, "Running", id="old"),
        pytest.param({"older.example.com/phase": "Running"}, 0, "Running", id="older"),
        pytest.param(
            {"old.example.com/phase": "Running", "older.example.com/phase": "Pending"}, 0, "Running", id="first-listed"
        ),
        pytest.param({"okt.io/phase": "Ready", "old.example.com/phase": "Running"}, 0, "Ready", id="current-wins"),
    ],
)
def test_records_under_a_legacy_prefix_are_read_where_the_current_prefix_keeps_none(
    annotations: dict[str, str], error_count: int, phase: str
) -> None:
    book = bookkeeping.Bookkeeping(obj(annotations=annotations), ANNOTATIONS, PREFIX, LEGACY)

    assert (book.error_count, book.stored_error_count, book.phase) == (error_count, error_count, phase)


def test_the_next_write_moves_records_from_a_legacy_prefix_and_removes_every_one_of_okts_there() -> None:
    annotations = {
        "old.example.com/phase": "Running",
        "old.example.com/error-count": "2",
        "old.example.com/conditions": "[]",
        "old.example.com/observed-generation": "3",
        "other.example.com/phase": "Elsewhere",
    }
    book = bookkeeping.Bookkeeping(obj(annotations=annotations), ANNOTATIONS, PREFIX, LEGACY)

    assert book.changed_annotations() == {
        "okt.io/phase": "Running",
        "okt.io/error-count": "2",
        "old.example.com/phase": None,
        "old.example.com/error-count": None,
        "old.example.com/conditions": None,
        "old.example.com/observed-generation": None,
    }
    book.written()
    assert book.changed_annotations() == {}


def test_with_status_persistence_a_phase_under_a_legacy_prefix_goes_to_the_status_and_leaves_the_annotations() -> None:
    annotations = {"old.example.com/phase": "Running", "old.example.com/error-count": "2"}
    book = bookkeeping.Bookkeeping(obj(annotations=annotations), STATUS, PREFIX, LEGACY)

    assert book.phase == "Running"
    assert book.status_fields() == {"okt": {"errorCount": 0, "phase": "Running"}}
    assert book.changed_annotations() == {"old.example.com/phase": None, "old.example.com/error-count": None}


def test_without_legacy_prefixes_records_under_another_prefix_are_neither_read_nor_removed() -> None:
    book = bookkeeping.Bookkeeping(obj(annotations={"old.example.com/phase": "Running"}), ANNOTATIONS, PREFIX)

    assert book.phase is None
    assert book.changed_annotations() == {}


REPORTED_IN_ANNOTATIONS = {
    "okt.io/conditions": "[]",
    "okt.io/observed-generation": "3",
    "okt.io/status": "{}",
    "other.example.com/conditions": "[]",
}


@pytest.mark.parametrize("persistence", [STATUS, ANNOTATIONS])
def test_writing_the_status_subresource_the_next_write_removes_the_status_an_earlier_version_kept_in_annotations(
    persistence: bookkeeping.Persistence,
) -> None:
    book = bookkeeping.Bookkeeping(obj(annotations=REPORTED_IN_ANNOTATIONS), persistence, PREFIX)

    assert book.changed_annotations() == {
        "okt.io/conditions": None,
        "okt.io/observed-generation": None,
        "okt.io/status": None,
    }
    book.written()
    assert book.changed_annotations() == {}


def test_where_okt_keeps_the_status_in_annotations_they_are_not_removed() -> None:
    book = bookkeeping.Bookkeeping(obj(annotations=REPORTED_IN_ANNOTATIONS), ANNOTATIONS, PREFIX, status_written=False)

    assert book.changed_annotations() == {}


RECORD = {"probe": {"conditions": ["OperandHealthy"], "fields": ["probe"]}}


@pytest.mark.parametrize("persistence", [STATUS, ANNOTATIONS])
def test_the_record_of_what_daemons_stated_is_kept_where_the_bookkeeping_is_and_read_back(
    persistence: bookkeeping.Persistence,
) -> None:
    book = bookkeeping.Bookkeeping(obj(), persistence, PREFIX)
    book.daemons = RECORD
    assert book.changed
    if persistence is STATUS:
        assert book.status_fields() == {"okt": {"errorCount": 0, "daemons": RECORD}}
        raw = obj({"okt": {"errorCount": 0, "daemons": RECORD}})
    else:
        annotations = book.changed_annotations()
        assert annotations == {"okt.io/daemons": '{"probe":{"conditions":["OperandHealthy"],"fields":["probe"]}}'}
        raw = obj(annotations={k: v for k, v in annotations.items() if v is not None})
    again = bookkeeping.Bookkeeping(raw, persistence, PREFIX)
    assert again.daemons == RECORD
    again.daemons = RECORD
    assert not again.changed
    again.daemons = {}
    assert again.changed
    assert (
        again.status_fields() == {"okt": {"errorCount": 0}}
        if persistence is STATUS
        else again.changed_annotations() == {"okt.io/daemons": None}
    )


LEGACY_RECORD = '{"probe":{"conditions":["OperandHealthy"],"fields":["probe"]}}'
DIGEST = "0123456789abcdef" * 4


@pytest.mark.parametrize("persistence", [STATUS, ANNOTATIONS])
def test_the_record_of_what_daemons_stated_under_a_legacy_prefix_is_carried_where_the_next_write_removes_it(
    persistence: bookkeeping.Persistence,
) -> None:
    # Read as nothing, the record went with the old annotation: the conditions a daemon removed in the same upgrade
    # stated stayed on the object for ever, nothing left to say they were its.
    raw = obj(annotations={"old.example.com/daemons": LEGACY_RECORD, "old.example.com/reported-error": DIGEST})
    book = bookkeeping.Bookkeeping(raw, persistence, PREFIX, LEGACY)

    assert book.daemons == RECORD
    annotations = book.changed_annotations()
    assert annotations["old.example.com/daemons"] is None
    if persistence is STATUS:
        assert book.status_fields() == {"okt": {"errorCount": 0, "daemons": RECORD}}
    else:
        assert book.reported_error == book.stored_reported_error == DIGEST
        assert annotations["okt.io/daemons"] == LEGACY_RECORD
        assert annotations["okt.io/reported-error"] == DIGEST


@pytest.mark.parametrize(
    "stored", ["not json", '["probe"]', '{"probe": "OperandHealthy"}', '{"probe": {"conditions": 3}}']
)
def test_a_hand_edited_record_reads_as_nothing_recorded(stored: str) -> None:
    book = bookkeeping.Bookkeeping(obj(annotations={"okt.io/daemons": stored}), ANNOTATIONS, PREFIX)
    assert book.daemons == {}


@pytest.mark.parametrize(
    ("raw", "persistence", "phase", "moves", "stored"),
    [
        pytest.param(
            obj(annotations={"okt.io/phase": "Running"}), ANNOTATIONS, "Upgrading", True, "Running", id="move"
        ),
        pytest.param(obj(annotations={"okt.io/phase": "Running"}), ANNOTATIONS, "Running", False, "Running", id="same"),
        pytest.param(obj(), ANNOTATIONS, "Pending", True, None, id="new-object"),
        pytest.param(obj({"okt": {"phase": "Running"}}), ANNOTATIONS, "Running", True, None, id="carried-from-status"),
        pytest.param(obj({"okt": {"phase": "Running"}}), STATUS, "Upgrading", False, "Running", id="status"),
        pytest.param(
            obj(annotations={"old.io/phase": "Running"}), ANNOTATIONS, "Running", True, "Running", id="legacy-prefix"
        ),
    ],
)
def test_a_write_that_moves_the_phase_annotation_is_told_with_the_phase_it_moves_from(
    raw: dict[str, Any], persistence: bookkeeping.Persistence, phase: str, moves: bool, stored: str | None
) -> None:
    book = bookkeeping.Bookkeeping(raw, persistence, PREFIX, legacy_prefixes=("old.io",))

    book.phase = phase

    assert (book.moves_phase_annotation, book.stored_phase) == (moves, stored)


def test_annotations_written_alone_leave_the_status_its_removal_of_the_copy_kept_there() -> None:
    book = bookkeeping.Bookkeeping(obj({"okt": {"phase": "Running"}}), ANNOTATIONS, PREFIX)
    assert book.changed_annotations() == {"okt.io/phase": "Running"}

    book.annotations_written()

    assert (book.moves_phase_annotation, book.changed_annotations()) == (False, {})
    assert book.status_fields() == {"okt": None}


@pytest.mark.parametrize(
    ("status", "annotations", "stored"),
    [
        pytest.param({"okt": {"errorCount": 4}}, {}, 4, id="kept-in-the-status"),
        pytest.param({"okt": {"errorCount": 4}}, {"okt.io/error-count": "2"}, 4, id="the-status-counted-on"),
        pytest.param({"okt": {"errorCount": 1}}, {"okt.io/error-count": "6"}, 6, id="the-annotation-counted-on"),
        pytest.param({}, {"okt.io/error-count": "2"}, 2, id="annotation-only"),
    ],
)
def test_the_count_a_refused_phase_moves_report_kept_in_the_status_is_counted_on(
    status: dict[str, Any], annotations: dict[str, str], stored: int
) -> None:
    book = bookkeeping.Bookkeeping(obj(status, {"okt.io/phase": "Upgrading", **annotations}), ANNOTATIONS, PREFIX)

    assert book.stored_error_count == stored


def test_a_count_left_in_a_status_okt_no_longer_writes_is_not_counted_on() -> None:
    """Conditions kept in annotations (``status = "annotations"``): no write of okt's removes the status's copy an
    operator version with status persistence left, and no refused move's report keeps a count there."""
    left = obj({"okt": {"errorCount": 5}}, {"okt.io/error-count": "1"})

    book = bookkeeping.Bookkeeping(left, ANNOTATIONS, PREFIX, status_written=False)

    assert book.stored_error_count == 1


def test_a_refused_phase_move_keeps_the_error_count_in_the_status_and_nothing_of_the_phase() -> None:
    kept = {"okt": {"phase": "Running", "errorCount": 1}}  # a copy of the phase an operator version kept in the status
    book = bookkeeping.Bookkeeping(obj(kept, {"okt.io/error-count": "2"}), ANNOTATIONS, PREFIX)
    book.phase = "Upgrading"
    book.error_count = book.stored_error_count + 1

    assert book.status_fields_while_refused() == {"okt": {"phase": "Running", "errorCount": 3}}
    # A write that lands (the retry's, once the object may be patched) moves both, and removes the status's copy.
    assert book.changed_annotations() == {"okt.io/error-count": "3", "okt.io/phase": "Upgrading"}
    assert book.status_fields() == {"okt": None}

    book.written()

    assert book.stored_error_count == 3


def test_a_refused_phase_move_with_nothing_to_count_removes_the_count_from_the_status() -> None:
    book = bookkeeping.Bookkeeping(obj({"okt": {"errorCount": 2}}, {"okt.io/phase": "Running"}), ANNOTATIONS, PREFIX)
    book.phase = "Upgrading"
    book.error_count = 0

    assert book.status_fields_while_refused() == {"okt": None}


DIGEST = "0123456789abcdef" * 4


def test_the_digest_of_the_error_reported_is_read_back_and_written_only_when_it_changes() -> None:
    book = bookkeeping.Bookkeeping(obj(annotations={"okt.io/reported-error": DIGEST}), ANNOTATIONS, PREFIX)

    book.reported_error = DIGEST
    unchanged = book.changed_annotations()
    book.reported_error = "f" * 64
    changed = book.changed_annotations()
    book.reported_error = None
    cleared = book.changed_annotations()

    assert book.stored_reported_error == DIGEST
    assert unchanged == {}
    assert changed == {"okt.io/reported-error": "f" * 64}
    assert cleared == {"okt.io/reported-error": None}


@pytest.mark.parametrize("stored", ["", "yes", DIGEST.upper(), DIGEST + "0", "²" * 64])
def test_a_hand_edited_digest_of_the_error_reported_reads_as_nothing_reported(stored: str) -> None:
    book = bookkeeping.Bookkeeping(obj(annotations={"okt.io/reported-error": stored}), ANNOTATIONS, PREFIX)

    assert book.stored_reported_error is None


def test_status_persistence_removes_the_digest_of_the_error_reported_and_keeps_it_out_of_the_status() -> None:
    book = bookkeeping.Bookkeeping(obj(annotations={"okt.io/reported-error": DIGEST}), STATUS, PREFIX)
    book.error_count = 1

    assert book.stored_reported_error is None
    assert book.changed_annotations() == {"okt.io/reported-error": None}
    assert book.status_fields() == {"okt": {"errorCount": 1}}
