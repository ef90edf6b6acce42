"""The work queue's rules: set-dedupe, one worker per key, delayed adds, per-key backoff, shutdown, concurrency."""

from __future__ import annotations

import collections
import itertools
import random
import threading
import time

import pytest

from okt.runtime import backoff as backoff_mod
from okt.runtime import workqueue

NO_JITTER = backoff_mod.Backoff(base=1.0, factor=2.0, cap=100.0, jitter=0.0)


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def drain(queue: workqueue.WorkQueue[str]) -> list[str]:
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


@pytest.mark.parametrize(
    ("adds", "expected"),
    [
        (["a"], ["a"]),
        (["a", "a", "a"], ["a"]),
        (["a", "b", "a", "c", "b"], ["a", "b", "c"]),
        (["c", "b", "a"], ["c", "b", "a"]),
    ],
)
def test_added_keys_are_deduplicated_and_handed_out_in_first_add_order(adds: list[str], expected: list[str]) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    for key in adds:
        queue.add(key)
    assert len(queue) == len(expected)
    assert drain(queue) == expected


@pytest.mark.parametrize("timeout", [0, 0.05])
def test_get_on_an_empty_queue_returns_none_after_the_timeout(timeout: float) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    started = time.monotonic()
    assert queue.get(timeout=timeout) is None
    assert time.monotonic() - started >= timeout


def test_a_key_being_processed_is_not_handed_to_a_second_worker() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("a")
    assert queue.get(timeout=0.05) is None
    assert queue.processing_count == 1


@pytest.mark.parametrize("re_adds", [1, 2, 5])
def test_re_adds_while_processing_run_exactly_once_after_done(re_adds: int) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    key = queue.get(timeout=0)
    for _ in range(re_adds):
        queue.add("a")
    assert len(queue) == 0
    queue.done("a")
    assert key == "a"
    assert drain(queue) == ["a"]
    assert queue.processing_count == 0


def test_done_without_a_re_add_does_not_queue_the_key_again() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    queue.get(timeout=0)
    queue.done("a")
    assert len(queue) == 0
    assert queue.get(timeout=0) is None


def test_other_keys_are_handed_out_while_one_is_processed() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    queue.get(timeout=0)
    queue.add("a")
    queue.add("b")
    assert queue.get(timeout=0) == "b"


def test_a_delayed_add_becomes_ready_when_its_delay_has_passed() -> None:
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock)
    queue.add_after("a", 5)
    assert len(queue) == 0
    assert queue.delayed_count == 1
    clock.advance(4.9)
    assert queue.get(timeout=0) is None
    clock.advance(0.1)
    assert len(queue) == 1
    assert queue.get(timeout=0) == "a"
    assert queue.delayed_count == 0


@pytest.mark.parametrize(("first", "second", "ready_at"), [(10, 2, 2), (2, 10, 2), (3, 3, 3)])
def test_a_key_scheduled_twice_keeps_the_earliest_due_time(first: float, second: float, ready_at: float) -> None:
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock)
    queue.add_after("a", first)
    queue.add_after("a", second)
    clock.advance(ready_at - 0.01)
    assert len(queue) == 0
    clock.advance(0.01)
    assert drain(queue) == ["a"]
    clock.advance(100)
    assert drain(queue) == []


def test_due_times_replaced_by_earlier_ones_do_not_pile_up_in_the_schedule() -> None:
    """A key requeued in an hour and woken sooner by a child's change, again and again over months: each replaced due
    time is dropped from the schedule, not kept until its hour has come (one per wake-up, for every object)."""
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock)
    for _ in range(2000):
        queue.add_after("a", 3600)
        queue.add_after("a", 0.5)
        clock.advance(0.5)
        assert queue.get(timeout=0) == "a"
        queue.done("a")
    assert queue.delayed_count == 0
    assert len(queue._heap) <= 2 * queue.delayed_count + workqueue.SCHEDULE_SLACK
    clock.advance(3600)
    assert drain(queue) == []


@pytest.mark.parametrize("delay", [0, -1.5])
def test_a_delayed_add_without_a_positive_delay_is_ready_at_once(delay: float) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add_after("a", delay)
    assert queue.get(timeout=0) == "a"


def test_a_delayed_key_already_waiting_in_the_queue_is_not_duplicated() -> None:
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock)
    queue.add("a")
    queue.add_after("a", 1)
    clock.advance(1)
    assert drain(queue) == ["a"]


def test_a_blocked_getter_wakes_up_when_a_delayed_key_comes_due() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    got: list[str | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get()))
    getter.start()
    time.sleep(0.02)
    started = time.monotonic()
    queue.add_after("a", 0.1)
    getter.join(5)
    assert got == ["a"]
    assert time.monotonic() - started >= 0.1


def test_a_getter_waits_behind_a_key_scheduled_centuries_ahead_and_takes_the_next_key_added() -> None:
    """A wait longer than the platform allows (``threading.TIMEOUT_MAX``, 292 years) raised ``OverflowError`` out of
    ``get``: a reconciler's ``child_change_delay`` of that size ended the worker that waited."""
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add_after("far", 1e10)
    got: list[object] = []

    def take() -> None:
        try:
            got.append(queue.get())
        except Exception as exc:
            got.append(exc)

    getter = threading.Thread(target=take)
    getter.start()
    getter.join(0.2)  # the getter is waiting now (or failed already)
    queue.add("near")
    getter.join(5)
    assert got == ["near"]


@pytest.mark.parametrize(("failures", "delays"), [(1, [1.0]), (3, [1.0, 2.0, 4.0]), (5, [1.0, 2.0, 4.0, 8.0, 16.0])])
def test_rate_limited_adds_back_off_exponentially_per_key(failures: int, delays: list[float]) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(NO_JITTER, clock=FakeClock())
    assert [queue.add_rate_limited("a") for _ in range(failures)] == delays
    assert queue.failures("a") == failures
    assert queue.failures("b") == 0
    assert queue.add_rate_limited("b") == 1.0


def test_forget_resets_the_backoff_of_a_key() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(NO_JITTER, clock=FakeClock())
    for _ in range(4):
        queue.add_rate_limited("a")
    queue.forget("a")
    assert queue.failures("a") == 0
    assert queue.add_rate_limited("a") == 1.0


def test_keys_that_failed_unanswered_are_retried_at_once_with_their_backoff_reset() -> None:
    """After an outage, a key that failed because the API server did not answer does not wait out its backoff."""
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(NO_JITTER, clock=clock)
    for _ in range(6):
        queue.add_rate_limited("down", unanswered=True)  # 32 s of backoff by now
    queue.add_rate_limited("refused")  # failed on something else: keeps its backoff
    queue.add_rate_limited("answered-since", unanswered=True)
    queue.add_rate_limited("answered-since")  # its last failure was answered
    queue.add_rate_limited("done-since", unanswered=True)
    queue.forget("done-since")

    assert queue.retry_unanswered() == 1
    assert drain(queue) == ["down"]
    assert queue.failures("down") == 0
    assert queue.failures("refused") == 1
    assert queue.failures("answered-since") == 2
    assert queue.retry_unanswered() == 0  # told once: a second recovery finds nothing new
    assert queue.add_rate_limited("down") == 1.0  # counted from the start again
    clock.advance(1.0)
    assert sorted(drain(queue)) == ["answered-since", "done-since", "down", "refused"]  # their first retries
    clock.advance(31.0)
    assert drain(queue) == []  # the 32 s retry of before the recovery was replaced, not kept


def test_a_rate_limited_key_is_ready_after_its_growing_backoff_delay() -> None:
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(NO_JITTER, clock=clock)
    for expected_delay in (1.0, 2.0, 4.0):
        queue.add_rate_limited("a")
        clock.advance(expected_delay - 0.01)
        assert len(queue) == 0
        clock.advance(0.01)
        assert drain(queue) == ["a"]


def test_after_shutdown_get_returns_none_and_adds_are_ignored() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    queue.shutdown()
    assert queue.shutting_down
    assert queue.get() is None
    queue.add("b")
    queue.add_after("c", 0.01)
    assert queue.get(timeout=0.05) is None


def test_shutdown_wakes_every_blocked_getter() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    results: list[str | None] = []
    getters = [threading.Thread(target=lambda: results.append(queue.get())) for _ in range(4)]
    for getter in getters:
        getter.start()
    time.sleep(0.02)
    queue.shutdown()
    for getter in getters:
        getter.join(5)
    assert results == [None] * 4


def test_a_key_in_flight_at_shutdown_can_still_be_marked_done() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    queue.get(timeout=0)
    queue.add("a")
    queue.shutdown()
    queue.done("a")
    assert queue.processing_count == 0
    assert queue.get(timeout=0) is None


def test_eight_workers_never_process_one_key_at_once_and_never_lose_an_add() -> None:
    queue: workqueue.WorkQueue[int] = workqueue.WorkQueue(backoff_mod.Backoff(base=0.001, cap=0.01))
    sequence = itertools.count()
    lock = threading.Lock()
    running: collections.Counter[int] = collections.Counter()
    overlaps: list[int] = []
    last_add: dict[int, int] = {}
    last_start: dict[int, int] = {}
    processed = collections.Counter[int]()
    keys = range(12)

    def worker() -> None:
        while (key := queue.get()) is not None:
            with lock:
                running[key] += 1
                if running[key] > 1:
                    overlaps.append(key)
                last_start[key] = next(sequence)
                processed[key] += 1
            time.sleep(random.uniform(0, 0.002))
            with lock:
                running[key] -= 1
            if random.random() < 0.05:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            queue.done(key)

    def producer(seed: int) -> None:
        rand = random.Random(seed)
        for _ in range(400):
            key = rand.choice(keys)
            with lock:
                last_add[key] = next(sequence)
            if rand.random() < 0.1:
                queue.add_after(key, rand.uniform(0, 0.005))
            else:
                queue.add(key)
            if rand.random() < 0.2:
                time.sleep(0.0005)

    workers = [threading.Thread(target=worker) for _ in range(8)]
    producers = [threading.Thread(target=producer, args=(seed,)) for seed in range(4)]
    for thread in workers + producers:
        thread.start()
    for thread in producers:
        thread.join(30)
    deadline = time.monotonic() + 10
    while (len(queue) or queue.processing_count or queue.delayed_count) and time.monotonic() < deadline:
        time.sleep(0.01)
    queue.shutdown()
    for thread in workers:
        thread.join(10)

    assert overlaps == []
    assert set(processed) == set(last_add)
    # Every key was processed at least once after its last add: nothing added was lost.
    assert all(last_start[key] > last_add[key] for key in last_add)
    assert not any(thread.is_alive() for thread in workers)


class Told:
    """An observer writing down what the queue tells it, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def added(self, key: object) -> None:
        self.events.append(("added", key))

    def taken(self, key: object) -> None:
        self.events.append(("taken", key))

    def done(self, key: object) -> None:
        self.events.append(("done", key))

    def retried(self, key: object) -> None:
        self.events.append(("retried", key))


def test_the_observer_is_told_each_pending_key_once_and_each_hand_out_retry_and_end() -> None:
    clock, told = FakeClock(), Told()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(NO_JITTER, clock=clock, observer=told)
    queue.add("a")
    queue.add("a")  # already pending: not a new add
    assert queue.get(timeout=0) == "a"
    queue.add("a")  # pending again while processed
    queue.done("a")
    queue.add_rate_limited("b")
    clock.advance(1.0)
    assert drain(queue) == ["a", "b"]
    assert told.events == [
        ("added", "a"),
        ("taken", "a"),
        ("added", "a"),
        ("done", "a"),
        ("retried", "b"),
        ("added", "b"),
        ("taken", "a"),
        ("done", "a"),
        ("taken", "b"),
        ("done", "b"),
    ]


def test_live_keys_are_handed_out_before_the_sweep_added_earlier() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    for key in ("s1", "s2", "s3"):
        queue.add(key, low=True)
    queue.add("fresh")
    assert (len(queue), queue.low_count) == (4, 3)
    assert drain(queue) == ["fresh", "s1", "s2", "s3"]


def test_a_sweep_key_added_again_as_live_moves_to_the_live_lane_once() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    for key in ("s1", "s2", "s3"):
        queue.add(key, low=True)
    queue.add("s3")
    queue.add("s3", low=True)  # never back down
    assert (len(queue), queue.low_count) == (3, 2)
    assert drain(queue) == ["s3", "s1", "s2"]


def test_a_sweep_key_moved_to_the_live_lane_and_swept_again_waits_behind_the_keys_swept_before_it() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add("s1", low=True)
    queue.add("a", low=True)
    queue.add("a")  # an event: "a" leaves the sweep
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    queue.add("s2", low=True)
    queue.add("a", low=True)  # the next sweep: added after s2, handed out after it
    assert drain(queue) == ["s1", "s2", "a"]


def test_a_sweep_key_swept_again_after_it_moved_to_the_live_lane_waits_from_its_new_add() -> None:
    """The aging of a key swept again is counted from that add, not from the first one, long gone."""
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock, aging=5.0)
    queue.add("s1", low=True)
    queue.add("a", low=True)
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    assert queue.get(timeout=0) == "s1"
    queue.done("s1")
    clock.advance(100.0)
    queue.add("a", low=True)  # waited for nothing yet
    for key in ("l1", "l2", "l3"):
        queue.add(key)
    assert drain(queue) == ["l1", "l2", "l3", "a"]


def test_a_sweep_that_waited_past_the_aging_takes_turns_with_live_keys() -> None:
    clock = FakeClock()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock, aging=5.0)
    for key in ("s1", "s2", "s3"):
        queue.add(key, low=True)
    for key in ("l1", "l2", "l3", "l4"):
        queue.add(key)
    assert [queue.get(timeout=0), queue.get(timeout=0)] == ["l1", "l2"]
    clock.advance(5.0)
    assert drain(queue) == ["s1", "l3", "s2", "l4", "s3"]


def test_a_sweep_key_re_added_while_processing_runs_again_as_live() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add("a", low=True)
    assert queue.get(timeout=0) == "a"
    queue.add("a", low=True)
    queue.add("b", low=True)
    queue.done("a")
    assert drain(queue) == ["a", "b"]


def test_the_low_limit_holds_back_sweep_keys_but_never_live_ones() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.low_limit = 1
    for key in ("s1", "s2"):
        queue.add(key, low=True)
    assert queue.get(timeout=0) == "s1"
    assert (queue.taken_low("s1"), queue.low_processing_count) == (True, 1)
    assert queue.get(timeout=0) is None  # s2 waits for s1
    queue.add("live")
    assert queue.get(timeout=0) == "live"
    assert queue.taken_low("live") is False
    queue.done("live")
    queue.done("s1")
    assert (queue.taken_low("s1"), queue.low_processing_count) == (False, 0)
    assert queue.get(timeout=0) == "s2"


def test_a_getter_held_back_by_the_low_limit_wakes_when_a_sweep_key_is_done() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.low_limit = 1
    queue.add("s1", low=True)
    queue.add("s2", low=True)
    assert queue.get(timeout=0) == "s1"
    got: list[str | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get(timeout=5)))
    getter.start()
    time.sleep(0.05)
    assert got == []
    queue.done("s1")
    getter.join(5)
    assert got == ["s2"]


def test_raising_the_low_limit_wakes_the_held_back_getters() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.low_limit = 1
    for key in ("s1", "s2", "s3"):
        queue.add(key, low=True)
    assert queue.get(timeout=0) == "s1"
    got: list[str | None] = []
    getters = [threading.Thread(target=lambda: got.append(queue.get(timeout=5))) for _ in range(2)]
    for getter in getters:
        getter.start()
    time.sleep(0.05)
    queue.low_limit = None
    for getter in getters:
        getter.join(5)
    assert sorted(got) == ["s2", "s3"]  # type: ignore[type-var]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_low_limit_below_one_is_refused(limit: int) -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    with pytest.raises(ValueError, match="at least 1"):
        queue.low_limit = limit


class Sweep:
    """A sweep of ``keys`` low keys through a queue paced by a :class:`workqueue.SweepPacer`, handed to ``workers``
    workers, on a fake clock: each reconcile takes ``seconds_per_key[n]`` of the clock, where ``n`` is how many keys
    run at once (the sweep's width, or with ``live`` every worker: live events then wait all along, a storm of them,
    and every worker the sweep leaves free takes one). The pacer is told of sweep keys only, as the controller does."""

    def __init__(self, keys: int, workers: int = 8, live: bool = False) -> None:
        self.clock = FakeClock()
        self.queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=self.clock)
        self.workers = workers
        self.live = live
        self.pacer = workqueue.SweepPacer(self.queue, workers, clock=self.clock)
        for i in range(keys):
            self.queue.add(f"s{i}", low=True)
        self.widths: list[int] = []
        self.live_done = 0
        self.seconds_at: dict[int, float] = {}
        """The clock's time spent at each width."""

    def run(self, keys: int, seconds_per_key: dict[int, float]) -> None:
        """Reconcile ``keys`` sweep keys (and the live keys beside them), each taking ``seconds_per_key[n]``."""
        done = 0
        while done < keys and self.queue.low_count:
            width = self.pacer.width
            if self.live:
                for i in range(self.workers - width):
                    self.queue.add(f"l{self.live_done + i}")
            taken = [key for _ in range(self.workers) if (key := self.queue.get(timeout=0)) is not None]
            swept = [key for key in taken if key.startswith("s")]
            assert len(swept) == width or self.queue.low_count == 0
            for key in taken:
                seconds = seconds_per_key[len(taken) if self.live else width]
                self.clock.advance(seconds)
                self.seconds_at[width] = self.seconds_at.get(width, 0.0) + seconds
                self.queue.done(key)
                if key in swept:
                    self.widths.append(width)
                    self.pacer.finished()
                else:
                    self.live_done += 1
            done += len(swept)


def test_a_sweep_of_pure_cpu_work_stays_one_at_a_time() -> None:
    sweep = Sweep(keys=10_000)
    # Python work: eight at once finish each key a quarter later than one at a time.
    sweep.run(10_000, {1: 0.0014, 8: 0.00175})
    assert sweep.pacer.narrow_rate is not None and sweep.pacer.wide_rate is not None
    assert sweep.pacer.narrow_rate > sweep.pacer.wide_rate
    assert sweep.widths.count(1) > 0.9 * len(sweep.widths)
    assert sweep.widths[-1] == 1


def test_a_sweep_that_waits_on_io_opens_to_every_worker() -> None:
    sweep = Sweep(keys=10_000)
    # Writes: 30 ms each, eight at once finish eight times as many per second.
    sweep.run(10_000, {1: 0.030, 8: 0.030 / 8})
    assert sweep.pacer.wide_rate is not None and sweep.pacer.narrow_rate is not None
    assert sweep.pacer.wide_rate > 5 * sweep.pacer.narrow_rate
    assert sweep.widths[-1] == 8
    assert sweep.widths.count(8) > 0.9 * len(sweep.widths)


def test_the_pacer_measures_again_and_follows_a_sweep_that_changes() -> None:
    sweep = Sweep(keys=12_000)
    sweep.run(2000, {1: 0.030, 8: 0.030 / 8})
    assert sweep.widths.count(8) > 0.9 * len(sweep.widths)
    sweep.run(9000, {1: 0.0014, 8: 0.00175})
    last = sweep.widths[-3000:]
    assert last.count(1) > 0.9 * len(last)


def test_a_sweep_beside_waiting_live_events_is_measured_by_every_key_done() -> None:
    sweep = Sweep(keys=3000, live=True)
    # Python work with every worker busy at either width: the process finishes as many keys per second both ways;
    # a wider sweep would only take workers from the live events.
    sweep.run(3000, dict.fromkeys(range(1, 9), 0.00175))
    assert sweep.pacer.narrow_rate is not None and sweep.pacer.wide_rate is not None
    assert sweep.pacer.wide_rate < 1.1 * sweep.pacer.narrow_rate
    assert sweep.seconds_at[1] > 0.8 * sum(sweep.seconds_at.values())
    assert sweep.widths[-1] == 1
    assert sweep.live_done > 3 * len(sweep.widths)  # most places went on serving live events


def test_the_queue_counts_the_keys_done_in_either_lane() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add("s1", low=True)
    queue.add("live")
    for _ in range(2):
        key = queue.get(timeout=0)
        assert key is not None
        queue.done(key)
    queue.add("live")
    assert queue.done_and_take("missing") is not None  # a key not taken counts for nothing
    assert queue.completed == 2


def test_the_next_sweep_is_measured_from_the_start() -> None:
    sweep = Sweep(keys=600)
    sweep.run(600, {1: 0.030, 8: 0.030 / 8})
    assert sweep.queue.low_count == 0
    assert (sweep.pacer.width, sweep.queue.low_limit) == (1, 1)


def test_a_lone_width_means_no_limit_on_the_queue() -> None:
    sweep = Sweep(keys=2000)
    sweep.run(2000, {1: 0.030, 8: 0.030 / 8})
    assert sweep.pacer.width == 8 or sweep.queue.low_count == 0


def test_done_and_take_hands_the_caller_the_next_key_without_waking_a_held_back_getter() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.low_limit = 1
    for key in ("s1", "s2"):
        queue.add(key, low=True)
    assert queue.get(timeout=0) == "s1"
    got: list[str | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get(timeout=0.3)))
    getter.start()
    time.sleep(0.05)
    assert queue.done_and_take("s1") == "s2"
    getter.join(5)
    assert got == [None]  # held back until its timeout: the caller took the place


def test_done_and_take_returns_the_key_itself_when_it_was_re_added_meanwhile() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("a")
    assert queue.done_and_take("a") == "a"
    assert queue.processing("a")


def test_done_and_take_returns_none_when_nothing_is_ready_or_after_shutdown() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    queue.add("a")
    queue.add("b")
    assert queue.get(timeout=0) == "a"
    assert queue.done_and_take("a") == "b"
    assert queue.done_and_take("b") is None
    queue.add("c")
    assert queue.get(timeout=0) == "c"
    queue.add("d")
    queue.shutdown()
    assert queue.done_and_take("c") is None
    assert not queue.processing("c")


def test_a_live_key_taken_while_a_sweep_place_is_free_wakes_a_getter_for_the_sweep() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.low_limit = 1
    queue.add("s1", low=True)
    queue.add("s2", low=True)
    assert queue.get(timeout=0) == "s1"
    got: list[str | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get(timeout=5)))
    getter.start()
    time.sleep(0.05)
    queue.add("s1")  # an event while s1 is reconciled: it runs again, as live, once done
    # The worker finishing s1 takes it again as a live key: the sweep's free place goes to the waiting getter.
    assert queue.done_and_take("s1") == "s1"
    getter.join(1)
    assert got == ["s2"]  # at once, not at the getter's timeout


@pytest.mark.parametrize("take_next", [True, False])
def test_a_key_re_added_during_its_sweep_reconcile_goes_to_a_waiting_getter_when_the_finisher_takes_a_sweep_key(
    take_next: bool,
) -> None:
    """Done, the key is ready again and frees its sweep place: two keys ready at once, a getter for each."""
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(aging=0.0)  # low and live keys take turns from the start
    queue.low_limit = 1
    queue.add("s1", low=True)
    queue.add("s2", low=True)
    assert queue.get(timeout=0) == "s1"
    queue.add("live")
    assert queue.get(timeout=0) == "live"  # a live key was handed out last: the sweep's turn is next
    queue.done("live")
    got: list[str | None] = []
    lock = threading.Lock()

    def take() -> None:
        key = queue.get()
        with lock:
            got.append(key)

    getters = [threading.Thread(target=take) for _ in range(1 if take_next else 2)]
    for getter in getters:
        getter.start()
    time.sleep(0.05)  # held back: s2 waits for s1's place
    queue.add("s1")  # an event while s1 is reconciled: it runs again, as live, once done
    if take_next:
        assert queue.done_and_take("s1") == "s2"
    else:
        queue.done("s1")
    try:
        for getter in getters:
            getter.join(5)
        with lock:
            assert sorted(got) == (["s1"] if take_next else ["s1", "s2"])  # type: ignore[type-var]
    finally:
        queue.shutdown()
        for getter in getters:
            getter.join(5)
