"""The queue of watched kinds' events waiting for the mapping: one per object, mapping what every event in it would."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
import structlog

import okt
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import informer
from okt.runtime import mapping_queue as mq

THING = kinds.Kind("example.com/v1", "Thing", "things", True)

#: A ConfigMap names the Thing it concerns in its label ``for``: its states name different primaries.
BY_LABEL = okt.watch(
    kinds.CONFIG_MAP, map=lambda cm, ctx: [("ns", cm["metadata"]["labels"]["for"])] if cm["metadata"]["labels"] else []
)


def cm(name: str, rv: int, owner: str | None = None, **data: str) -> dict[str, Any]:
    labels = {"for": owner} if owner else {}
    meta = {"name": name, "namespace": "ns", "resourceVersion": str(rv), "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None = None, *, sweep: bool = False) -> mq.Event:
    return mq.Event(BY_LABEL, event_type, obj, old, sweep)


def drained(queue: mq.MappingQueue) -> list[mq.Event | threading.Event]:
    """Everything queued up to the end, in order."""
    queue.close()
    items: list[mq.Event | threading.Event] = []
    while (item := queue.get()) is not None:
        items.append(item)
    return items


def mapped(events: Iterable[mq.Event | threading.Event]) -> set[tuple[str | None, str]]:
    """The primaries the mapping of ``events`` reconciles, as the controller maps them."""
    ctx = watches.MapContext(THING, None, structlog.get_logger(), find=lambda name, value: [])  # type: ignore[arg-type]
    keys: set[tuple[str | None, str]] = set()
    for item in events:
        assert isinstance(item, mq.Event)
        keys.update(watches.keys_for_event(item.watched, item.event_type, item.obj, item.old, ctx))
    return keys


def queued(events: Sequence[mq.Event]) -> mq.MappingQueue:
    queue = mq.MappingQueue()
    for item in events:
        queue.put(item)
    return queue


def test_a_burst_of_one_objects_changes_waits_as_one_event_mapping_its_first_and_last_states() -> None:
    """A label moved A→B→...→Z while the mapping waited: one event waits, and it reconciles the primaries of the state
    the object left (A) and of the state it is in (Z)."""
    owners = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    burst = [
        event(informer.MODIFIED, cm("x", i + 2, to), cm("x", i + 1, fro))
        for i, (fro, to) in enumerate(itertools.pairwise(owners))
    ]
    queue = queued(burst)
    assert len(queue) == 1
    assert mapped(drained(queue)) == {("ns", "a"), ("ns", "z")}


def test_a_change_then_a_deletion_waits_as_a_deletion_mapping_the_state_before_the_change_too() -> None:
    queue = queued(
        [event(informer.MODIFIED, cm("x", 2, "b"), cm("x", 1, "a")), event(informer.DELETED, cm("x", 2, "b"))]
    )
    (merged,) = drained(queue)
    assert isinstance(merged, mq.Event)
    assert merged.event_type == informer.DELETED
    assert mapped([merged]) == {("ns", "a"), ("ns", "b")}


def test_a_deletion_then_a_recreation_maps_the_deleted_object_and_the_new_one() -> None:
    queue = queued([event(informer.DELETED, cm("x", 1, "a")), event(informer.ADDED, cm("x", 5, "b"))])
    (merged,) = drained(queue)
    assert isinstance(merged, mq.Event)
    assert merged.event_type == informer.ADDED
    assert mapped([merged]) == {("ns", "a"), ("ns", "b")}


def test_modifications_that_end_where_they_began_but_for_the_version_map_nothing() -> None:
    queue = queued(
        [
            event(informer.MODIFIED, cm("x", 2, "a", k="v"), cm("x", 1, "a")),
            event(informer.MODIFIED, cm("x", 3, "a"), cm("x", 2, "a", k="v")),
        ]
    )
    assert mapped(drained(queue)) == set()


@pytest.mark.parametrize("first", [informer.RESYNC, informer.ADDED])
def test_a_resync_or_an_addition_merged_with_a_modification_still_maps_the_last_state(first: str) -> None:
    """A resync asks for the object's primaries to be reconciled whatever changed: a modification of the version
    alone after it does not take that away."""
    queue = queued(
        [
            event(first, cm("x", 1, "a"), cm("x", 1, "a") if first == informer.RESYNC else None),
            event(informer.MODIFIED, cm("x", 2, "a"), cm("x", 1, "a")),
        ]
    )
    assert mapped(drained(queue)) == {("ns", "a")}


@pytest.mark.parametrize(("sweeps", "sweep"), [((True, False), False), ((False, True), False), ((True, True), True)])
def test_a_merged_event_is_part_of_the_sweep_only_when_every_event_in_it_was(
    sweeps: tuple[bool, bool], sweep: bool
) -> None:
    queue = queued(
        [
            event(informer.ADDED, cm("x", 1, "a"), sweep=sweeps[0]),
            event(informer.MODIFIED, cm("x", 2, "b"), cm("x", 1, "a"), sweep=sweeps[1]),
        ]
    )
    (merged,) = drained(queue)
    assert isinstance(merged, mq.Event)
    assert merged.sweep is sweep


def test_each_object_and_each_watch_waits_apart_in_the_order_of_its_first_event() -> None:
    other_watch = okt.watch(kinds.CONFIG_MAP, map=BY_LABEL.map)
    queue = queued(
        [
            event(informer.ADDED, cm("x", 1, "a")),
            event(informer.ADDED, cm("y", 2, "b")),
            mq.Event(other_watch, informer.ADDED, cm("x", 1, "a"), None, False),
            event(informer.MODIFIED, cm("x", 3, "c"), cm("x", 1, "a")),
        ]
    )
    assert len(queue) == 3
    items = drained(queue)
    assert [(i.watched is BY_LABEL, i.obj["metadata"]["name"]) for i in items if isinstance(i, mq.Event)] == [
        (True, "x"),
        (True, "y"),
        (False, "x"),
    ]
    assert mapped(items[:1]) == {("ns", "a"), ("ns", "c")}


def test_an_event_put_after_a_marker_is_mapped_no_later_than_its_object_waiting_before_it() -> None:
    queue = mq.MappingQueue()
    marker = threading.Event()
    queue.put(event(informer.ADDED, cm("x", 1, "a")))
    queue.mark(marker)
    queue.put(event(informer.MODIFIED, cm("x", 2, "b"), cm("x", 1, "a")))
    queue.put(event(informer.ADDED, cm("y", 3, "c")))
    first, second, third = drained(queue)
    assert isinstance(first, mq.Event) and first.obj["metadata"]["resourceVersion"] == "2"
    assert second is marker
    assert isinstance(third, mq.Event) and third.obj["metadata"]["name"] == "y"


def test_an_event_taken_for_mapping_waits_no_more_and_the_next_of_its_object_queues_behind_it() -> None:
    queue = mq.MappingQueue()
    queue.put(event(informer.ADDED, cm("x", 1, "a")))
    taken = queue.get()
    assert isinstance(taken, mq.Event) and len(queue) == 0
    queue.put(event(informer.MODIFIED, cm("x", 2, "b"), cm("x", 1, "a")))
    queue.put(event(informer.MODIFIED, cm("x", 3, "c"), cm("x", 2, "b")))
    assert len(queue) == 1
    assert mapped(drained(queue)) == {("ns", "a"), ("ns", "c")}
