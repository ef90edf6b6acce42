"""Behaviour of okt.status.events: a repeat of what an Event shows is a count on it, and what is remembered to tell
a repeat is bounded in number and in size."""

from __future__ import annotations

import gc
import tracemalloc

from okt.kube import kinds, objects
from okt.status import events
from okt.testing import fake as fake_mod

SHOWN = 1024
"""The characters of a message an Event shows."""


def _widget(uid: str = "uid-1", resource_version: str = "7") -> objects.CustomResource:
    return objects.CustomResource(
        {
            "apiVersion": "test.okt.io/v1",
            "kind": "Widget",
            "metadata": {"name": "web", "namespace": "shop", "uid": uid, "resourceVersion": resource_version},
        }
    )


def test_messages_that_differ_only_past_what_an_event_shows_are_one_event_counted_twice() -> None:
    client = fake_mod.FakeClient()
    recorder = events.EventRecorder(client, "widget-controller")
    said = "x" * SHOWN

    recorder.record(_widget(), events.WARNING, "ApiError", f"{said} first try")
    recorder.record(_widget(), events.WARNING, "ApiError", f"{said} second try")

    [event] = client.objects(kinds.EVENT)
    assert (event["message"], event["count"]) == (said, 2)


def test_what_is_said_once_of_an_unchanged_object_is_not_counted_again() -> None:
    client = fake_mod.FakeClient()
    recorder = events.EventRecorder(client, "widget-controller")

    for _ in range(3):
        recorder.record(_widget(), events.WARNING, "InvalidSpec", "spec.size: too large", once=True)

    [event] = client.objects(kinds.EVENT)
    assert event["count"] == 1


def test_what_is_said_once_is_counted_again_once_the_object_changed() -> None:
    client = fake_mod.FakeClient()
    recorder = events.EventRecorder(client, "widget-controller")

    recorder.record(_widget(), events.WARNING, "InvalidSpec", "spec.size: too large", once=True)
    recorder.record(_widget(resource_version="8"), events.WARNING, "InvalidSpec", "spec.size: too large", once=True)
    recorder.record(_widget(resource_version="8"), events.WARNING, "InvalidSpec", "spec.size: too large", once=True)

    [event] = client.objects(kinds.EVENT)
    assert event["count"] == 2


def _held_after_recording(length: int) -> int:
    """Bytes still held after recording 100 messages of ``length`` characters, each of another object."""
    client = fake_mod.FakeClient()
    recorder = events.EventRecorder(client, "widget-controller")
    recorder.record(_widget("warm-up"), events.WARNING, "ApiError", "warm-up")  # first-use allocations left out
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for i in range(100):
            recorder.record(_widget(f"uid-{i}"), events.WARNING, "ApiError", f"{i:05d}".ljust(length, "x"))
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(client.objects(kinds.EVENT)) == 101
    return after - before


def test_what_is_remembered_of_long_messages_is_no_more_than_what_their_events_show() -> None:
    shown = _held_after_recording(SHOWN)
    longest = _held_after_recording(32768)  # a condition message's limit

    # Alike but for noise: 100 messages of 32 KiB held whole would be 3.1 MiB more.
    assert longest - shown < 512 * 1024, (shown, longest)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _written(client: fake_mod.FakeClient) -> int:
    """Events created plus repeats counted on them: the writes the recorder sent."""
    return sum(int(event["count"]) for event in client.objects(kinds.EVENT))


def test_an_object_said_to_fail_without_a_pause_has_its_events_held_back_past_a_burst_then_one_every_refill() -> None:
    client, clock = fake_mod.FakeClient(), _Clock()
    recorder = events.EventRecorder(client, "widget-controller", clock=clock)

    for tick in range(100):  # a timer failing every second for 100 s
        recorder.record(_widget(), events.WARNING, "TimerFailed", "timer probe failed: refused")
        recorder.record(_widget(), events.WARNING, "TimerFailed", f"timer other failed at {tick}")
        clock.now += 1.0
    assert _written(client) == events.BURST

    clock.now += events.REFILL_SECONDS
    recorder.record(_widget(), events.WARNING, "TimerFailed", "timer probe failed: refused")
    recorder.record(_widget(), events.WARNING, "TimerFailed", "timer probe failed: refused")
    assert _written(client) == events.BURST + 1

    recorder.record(_widget("uid-2"), events.WARNING, "TimerFailed", "timer probe failed: refused")
    assert _written(client) == events.BURST + 2, "another object has its own allowance"


def test_a_deleted_object_s_allowance_is_forgotten_with_what_was_said_of_it() -> None:
    client, clock = fake_mod.FakeClient(), _Clock()
    recorder = events.EventRecorder(client, "widget-controller", clock=clock)
    for attempt in range(events.BURST + 5):
        recorder.record(_widget(), events.WARNING, "ApiError", f"attempt {attempt}")
    assert _written(client) == events.BURST

    recorder.forget("uid-1")  # deleted, and made again under the same uid only in a test
    recorder.record(_widget(), events.WARNING, "ApiError", "after")
    assert _written(client) == events.BURST + 1
