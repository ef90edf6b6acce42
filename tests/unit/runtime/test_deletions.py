"""The deletions whose ``on_deleted`` hook is due: once per object, in the order seen, retried a bounded number of
times."""

from __future__ import annotations

from typing import Any

from okt.runtime import backoff as backoff_mod
from okt.runtime import deletions

KEY = ("ns", "c")


def deleted(uid: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Cache", "metadata": {"name": "c", "namespace": "ns", "uid": uid}}


def test_a_deletion_told_twice_is_kept_once_and_taking_it_forgets_it() -> None:
    due: deletions.Deletions[tuple[str, str]] = deletions.Deletions()
    assert due.note(KEY, deleted("u1"))
    assert not due.note(KEY, deleted("u1"))  # a relist telling again what went while the watch was broken

    taken = due.take(KEY)

    assert [d.uid for d in taken] == ["u1"]
    assert KEY not in due
    assert due.take(KEY) == ()


def test_an_object_deleted_created_and_deleted_again_keeps_both_deletions_in_the_order_seen() -> None:
    due: deletions.Deletions[tuple[str, str]] = deletions.Deletions()
    due.note(KEY, deleted("u1"))
    due.note(KEY, deleted("u2"))
    due.note(("ns", "other"), deleted("u3"))

    assert [d.uid for d in due.take(KEY)] == ["u1", "u2"]
    assert len(due) == 1


def test_a_failed_deletion_put_back_comes_before_those_noted_since() -> None:
    due: deletions.Deletions[tuple[str, str]] = deletions.Deletions()
    due.note(KEY, deleted("u1"))
    (first,) = due.take(KEY)
    due.note(KEY, deleted("u2"))

    again = first.failed()
    assert again is not None
    due.put_back(KEY, again)

    assert [(d.uid, d.failures) for d in due.take(KEY)] == [("u1", 1), ("u2", 0)]


def test_a_deletion_whose_hook_keeps_failing_is_dropped_after_its_attempts() -> None:
    deletion: deletions.Deletion | None = deletions.Deletion(deleted("u1"))
    calls = 0
    while deletion is not None:
        calls += 1
        deletion = deletion.failed()

    assert calls == deletions.ATTEMPTS


def test_a_deletion_of_an_object_out_of_the_selection_is_not_kept() -> None:
    """The watch says DELETED of an object leaving the selection, with its new state; and okt's own filters see the
    deletion of one that left it before."""

    def selected(obj: Any) -> bool:
        return bool(((obj.get("metadata") or {}).get("labels") or {}).get("selected") == "yes")

    due: deletions.Deletions[tuple[str, str]] = deletions.Deletions(selected=selected)
    left = deleted("u1")
    left["metadata"]["labels"] = {"selected": "no"}
    kept = deleted("u2")
    kept["metadata"]["labels"] = {"selected": "yes"}

    assert not due.note(KEY, left)
    assert due.note(KEY, kept)
    assert [d.uid for d in due.take(KEY)] == ["u2"]


def test_reads_the_api_server_left_unanswered_spend_no_attempt_of_the_hook_and_back_off() -> None:
    """An outage is no failure of the hook, which it did not call: however long it lasts, the hook keeps its
    attempts, and the reads wait longer as it goes on."""
    due: deletions.Deletions[tuple[str, str]] = deletions.Deletions(backoff_mod.Backoff(jitter=0.0))
    deletion = deletions.Deletion(deleted("u1"))
    first = deletion.unanswered_once()
    for _ in range(deletions.ATTEMPTS * 3):
        deletion = deletion.unanswered_once()

    assert deletion.failed() is not None
    assert due.delay(first) < due.delay(deletion) == due.delay(deletion.unanswered_once())  # up to the cap
