"""The work queue between event handlers and reconcile workers, with controller-runtime's semantics.

Why this exists: watch events arrive in bursts (a relist, a Deployment rolling, our own writes echoing back) and many
of them concern the same object. Reconciling once per *event* would waste API calls and, worse, let two workers write
the same object at the same time. The queue holds *keys*, not events: whatever happened, the next reconcile reads the
current state, so one pending entry per key is enough.

Guarantees:

* **set-dedupe** — a key waiting in the queue is held once, however many times it is added;
* **no concurrent processing** — a key handed out by :meth:`WorkQueue.get` is never handed out again before
  :meth:`WorkQueue.done`; a re-add while it is being processed is remembered and queued once, after ``done``;
* **FIFO** among ready keys of one priority, so no key starves;
* **fresh events first** — keys added with ``low=True`` (the sweep over every object after a list or a relist, and
  periodic resyncs) wait behind keys added otherwise (live events, requeues), so a change made now is not stuck
  behind thousands of objects that are probably converged; **aging** keeps the sweep moving under a steady stream of
  live keys: once the oldest low key has waited :attr:`WorkQueue.aging` seconds, low and live keys are handed out in
  turn. A low key added again as live moves to the live lane (never the other way). :attr:`WorkQueue.low_limit`
  caps how many low keys are handed out at once (live keys are never held back by it); :class:`SweepPacer` sets it;
* **delayed adds** (:meth:`WorkQueue.add_after`) are kept in one heap and promoted by the getters' condition wait —
  there is no thread per delayed item, and no thread at all; a key already waiting keeps its *earliest* due time,
  and the heap holds at most twice as many entries as keys are scheduled (plus :data:`SCHEDULE_SLACK`): the due times
  replaced are dropped, not kept until their own time;
* **per-key exponential backoff** (:meth:`WorkQueue.add_rate_limited`) counts consecutive failures per key;
  :meth:`WorkQueue.forget` resets the count after a success; :meth:`WorkQueue.discard` drops the count and the
  delayed add of a key whose object is gone;
* **an outage is not the key's failure** — a key whose last failure was *unanswered* (the API server gave no answer
  at all) is retried at once, its count reset, when :meth:`WorkQueue.retry_unanswered` is called (the informers saw
  the API server answer again): during an outage every failing key climbs its backoff, and without this a key would
  wait out minutes of it after the API server is back, with nothing wrong with the key;
* after :meth:`WorkQueue.shutdown`, :meth:`WorkQueue.get` returns ``None`` at once (workers stop taking keys) and adds
  are ignored; keys already handed out can still be marked done.

Every method is thread-safe.

What happens to keys is told to an optional :class:`Observer` (the metrics' ``workqueue_*`` series): one call per
event, made with the queue's lock held, so the observer sees them in the queue's own order.

Caveats: ``forget`` does not cancel a delayed add that is already scheduled (as in controller-runtime): the key is then
reconciled once more, which a level-based reconcile tolerates by design.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from okt.runtime import backoff as backoff_mod

K = TypeVar("K", bound=Hashable)

DEFAULT_AGING = 5.0
"""Seconds the oldest low-priority key waits before low and live keys take turns."""

SCHEDULE_SLACK = 64
"""How many replaced due times the schedule may hold beyond twice its live ones before it is rebuilt without them."""


class Observer(Protocol):
    """What a queue tells about its keys (called with the queue's lock held: keep it short, never call back)."""

    def added(self, key: Hashable) -> None:
        """``key`` became pending (a duplicate add of a pending key is not told)."""

    def taken(self, key: Hashable) -> None:
        """``key`` was handed out to a worker."""

    def done(self, key: Hashable) -> None:
        """The worker holding ``key`` finished with it."""

    def retried(self, key: Hashable) -> None:
        """``key`` was re-added after a failure (:meth:`WorkQueue.add_rate_limited`)."""


class _Unobserved:
    def added(self, key: Hashable) -> None:
        pass

    def taken(self, key: Hashable) -> None:
        pass

    def done(self, key: Hashable) -> None:
        pass

    def retried(self, key: Hashable) -> None:
        pass


class WorkQueue(Generic[K]):
    """A deduplicating, delay-capable, rate-limited queue of keys (see the module docstring for the rules).

    Args:
        backoff: the per-key backoff used by :meth:`add_rate_limited`.
        clock: a monotonic clock in seconds (tests may pass a controllable one; the waits still use real time).
        observer: told what happens to the keys (see :class:`Observer`); nobody when ``None``.
        aging: after how many seconds of waiting the oldest low-priority key is handed out in turn with live ones.
    """

    def __init__(
        self,
        backoff: backoff_mod.Backoff | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        observer: Observer | None = None,
        aging: float = DEFAULT_AGING,
    ) -> None:
        self._backoff = backoff if backoff is not None else backoff_mod.Backoff()
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[K] = collections.deque()
        # The low lane: (time added, entry number, key); ``_low`` maps each key waiting there to the number of its
        # live entry. A key that moved to the live lane leaves a stale entry, skipped when it reaches the head — and
        # stays stale when the key is swept again later (a new entry, at the tail): the number tells them apart.
        self._low_queue: collections.deque[tuple[float, int, K]] = collections.deque()
        self._low: dict[K, int] = {}
        self._last_was_low = False
        self._low_limit: int | None = None
        self._low_taken: set[K] = set()
        self._completed = 0
        self.aging = aging
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._unanswered: set[K] = set()
        # Delayed adds: a heap of (due, sequence, key); ``_due`` holds each key's live due time, heap entries whose
        # due time no longer matches are stale and skipped (lazy deletion keeps updates O(log n)).
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._sequence = itertools.count()
        self._shutting_down = False
        self._observer: Observer = observer if observer is not None else _Unobserved()

    # -- adding --------------------------------------------------------------------------------------------------

    def add(self, key: K, *, low: bool = False) -> None:
        """Queue ``key`` now, unless it is already waiting (it is then left where it is, or moved to the live lane
        when it waited in the low one and this add is live)."""
        with self._cond:
            self._add_locked(key, low)

    def add_after(self, key: K, delay: float, *, low: bool = False) -> None:
        """Queue ``key`` after ``delay`` seconds (now when ``delay`` <= 0; ``low`` applies to that case only: a
        delayed add is a requeue, due in the live lane).

        A key already scheduled keeps the earlier of its two due times.
        """
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(key, low)
                return
            due = self._clock() + delay
            current = self._due.get(key)
            if current is not None and current <= due:
                return
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._sequence), key))
            self._compact_locked()
            # A getter may be sleeping until a later due time: wake one so it recomputes its wait.
            self._cond.notify()

    def add_rate_limited(self, key: K, at_least: float = 0.0, *, unanswered: bool = False) -> float:
        """Count one more consecutive failure of ``key`` and queue it after the backoff delay, or ``at_least``
        seconds when that is longer (a delay the error asked for); returns the delay.

        ``unanswered``: the failure was the API server not answering at all; :meth:`retry_unanswered` retries the key
        at once when it answers again.
        """
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            if unanswered:
                self._unanswered.add(key)
            else:
                self._unanswered.discard(key)
            self._observer.retried(key)
        delay = max(self._backoff.delay(failures), at_least)
        self.add_after(key, delay)
        return delay

    def retry_unanswered(self) -> int:
        """Queue now every key whose last failure was unanswered, with its failure count reset; returns how many.

        Called when the API server answers again after an outage: what those keys failed on is gone. A key that
        failed since on something else (a refusal, a conflict) keeps its backoff.
        """
        with self._cond:
            keys = list(self._unanswered)
            self._unanswered.clear()
            for key in keys:
                self._failures.pop(key, None)
                self._due.pop(key, None)  # its heap entry becomes stale: the retry below replaces it
                self._add_locked(key, False)
            self._compact_locked()
        return len(keys)

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count (after a successful reconcile)."""
        with self._cond:
            self._failures.pop(key, None)
            self._unanswered.discard(key)

    def discard(self, key: K) -> None:
        """Drop what the queue keeps of ``key`` for later: its failure count and its delayed add (the key's object is
        gone: kept, they stayed until the delay ran out, up to hours, and a reconcile of nothing followed). A key
        ready or being processed is left as it is."""
        with self._cond:
            self._failures.pop(key, None)
            self._unanswered.discard(key)
            if self._due.pop(key, None) is not None:
                self._compact_locked()  # its heap entry is stale now

    def failures(self, key: K) -> int:
        """How many consecutive failures of ``key`` are counted."""
        with self._cond:
            return self._failures.get(key, 0)

    # -- processing ----------------------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K | None:
        """Hand out the next ready key, blocking up to ``timeout`` seconds (forever when ``None``).

        Returns ``None`` on timeout or once the queue is shut down. The caller owns the key until :meth:`done`.
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._shutting_down:
                    return None
                self._promote_due_locked()
                key = self._take_locked()
                if key is not None:
                    return key
                now = self._clock()
                waits = []
                if deadline is not None:
                    if now >= deadline:
                        return None
                    waits.append(deadline - now)
                if self._heap:
                    waits.append(max(self._heap[0][0] - now, 0.0))
                # No longer than the platform can wait at once (292 years: a key due later raised OverflowError,
                # which ended the worker); the loop waits again after it.
                self._cond.wait(min(*waits, threading.TIMEOUT_MAX) if waits else None)

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was re-added meanwhile, it is queued again now."""
        with self._cond:
            if self._done_locked(key):
                self._cond.notify()

    def done_and_take(self, key: K) -> K | None:
        """Mark ``key`` processed (as :meth:`done` does) and hand the next ready key to the caller without waiting;
        ``None`` when none is ready or the queue is shut down (then :meth:`get` waits for one).

        For a worker that goes on taking keys: the place it frees is taken by itself, instead of by a getter woken
        for it. With a low limit of one, that wake-up was a thread switch for every key of a sweep.
        """
        with self._cond:
            freed = self._done_locked(key)
            if self._shutting_down:
                return None
            self._promote_due_locked()
            taken = self._take_locked()
            if taken is None and freed:
                self._cond.notify()  # defensive: a ready key the caller did not take is another getter's
            return taken

    def shutdown(self) -> None:
        """Stop handing out keys: blocked and later :meth:`get` calls return ``None``; adds are ignored."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    # -- introspection -------------------------------------------------------------------------------------------

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def processing(self, key: K) -> bool:
        """Whether ``key`` is handed out and not yet done."""
        with self._cond:
            return key in self._processing

    def processing_keys(self) -> list[K]:
        """The keys handed out and not yet done, sorted (what the workers are on now)."""
        with self._cond:
            return sorted(self._processing)  # type: ignore[type-var]

    @property
    def processing_count(self) -> int:
        """How many keys are handed out and not yet done."""
        with self._cond:
            return len(self._processing)

    @property
    def delayed_count(self) -> int:
        """How many keys are scheduled for later."""
        with self._cond:
            self._promote_due_locked()
            return len(self._due)

    def __len__(self) -> int:
        """How many keys are ready to be handed out (the queue depth); due delayed keys count as ready."""
        with self._cond:
            self._promote_due_locked()
            return len(self._queue) + len(self._low)

    @property
    def low_limit(self) -> int | None:
        """How many low keys may be handed out and not yet done at once (``None``: as many as there are getters)."""
        with self._cond:
            return self._low_limit

    @low_limit.setter
    def low_limit(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"the low limit must be at least 1 (or None), got {limit}")
        with self._cond:
            self._low_limit = limit
            self._cond.notify_all()

    def taken_low(self, key: K) -> bool:
        """Whether ``key`` is being processed after it was handed out from the low lane."""
        with self._cond:
            return key in self._low_taken

    @property
    def low_processing_count(self) -> int:
        """How many keys handed out from the low lane are not yet done."""
        with self._cond:
            return len(self._low_taken)

    def depths(self) -> tuple[int, int]:
        """How many ready keys wait in the live lane and in the low one, read at once (two reads apart would see keys
        move in between: a sweep added after the total was read made the live lane's share of it negative)."""
        with self._cond:
            self._promote_due_locked()
            return len(self._queue), len(self._low)

    @property
    def low_count(self) -> int:
        """How many ready keys wait in the low-priority lane (the rest of the sweep)."""
        with self._cond:
            return len(self._low)

    @property
    def completed(self) -> int:
        """How many keys handed out were marked done since the queue was made, of either lane."""
        with self._cond:
            return self._completed

    # -- internals (the lock is held) ----------------------------------------------------------------------------

    def _take_locked(self) -> K | None:
        """Hand out the next ready key, if any; wakes another getter when a key of the other lane can still be
        handed out."""
        key = self._next_locked()
        if key is None:
            return None
        self._processing.add(key)
        self._dirty.discard(key)
        self._observer.taken(key)
        if key in self._low_taken:
            if self._queue:
                # This caller took the sweep's turn: the live key it might have taken is someone else's (a getter
                # woken for it, or none: a done that readied both a live key and a low place wakes only one).
                self._cond.notify()
        elif self._low and self._low_open_locked():
            self._cond.notify()  # this caller took a live key: the low place it might have taken is someone else's
        return key

    def _done_locked(self, key: K) -> bool:
        """Mark ``key`` processed; True when that makes a key ready for a getter (it was re-added meanwhile, or it
        frees a place in the low limit while low keys wait)."""
        if key in self._processing:
            self._processing.discard(key)
            self._completed += 1
        self._observer.done(key)
        ready = False
        if key in self._low_taken:
            self._low_taken.discard(key)
            ready = bool(self._low)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            ready = True
        return ready

    def _low_open_locked(self) -> bool:
        return self._low_limit is None or len(self._low_taken) < self._low_limit

    def _add_locked(self, key: K, low: bool = False) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            if not low and key in self._low:
                del self._low[key]  # its entry in the low lane is now stale
                self._queue.append(key)
                self._cond.notify()
            return
        self._dirty.add(key)
        self._observer.added(key)
        if key in self._processing:
            return  # queued by done(), as live
        if low:
            entry = next(self._sequence)
            self._low[key] = entry
            self._low_queue.append((self._clock(), entry, key))
        else:
            self._queue.append(key)
        self._cond.notify()

    def _next_locked(self) -> K | None:
        """The next key to hand out: live first; once the oldest low key is older than ``aging``, in turn."""
        while self._low_queue and self._low.get(self._low_queue[0][2]) != self._low_queue[0][1]:
            self._low_queue.popleft()  # stale: moved to the live lane (and maybe swept again since, further back)
        if (
            self._low_queue
            and self._low_open_locked()
            and (not self._queue or (not self._last_was_low and self._clock() - self._low_queue[0][0] >= self.aging))
        ):
            _, _, key = self._low_queue.popleft()
            del self._low[key]
            self._low_taken.add(key)
            self._last_was_low = True
            return key
        self._last_was_low = False
        return self._queue.popleft() if self._queue else None

    def _compact_locked(self) -> None:
        """Rebuild the heap without its stale entries once they outnumber the live ones (plus
        :data:`SCHEDULE_SLACK`): a due time replaced by an earlier one stayed until its own time came — a key requeued
        in 6 h and woken sooner by each child change left an entry per wake-up, for 6 h, for every object. A rebuild
        follows at least as many pushes as it keeps entries, so its cost per push stays constant."""
        if len(self._heap) > 2 * len(self._due) + SCHEDULE_SLACK:
            self._heap = [entry for entry in self._heap if self._due.get(entry[2]) == entry[0]]
            heapq.heapify(self._heap)

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            if self._due.get(key) != due:
                continue
            del self._due[key]
            self._add_locked(key)


class SweepPacer:
    """Chooses how many keys of a sweep are reconciled at once: one, or as many as there are workers — whichever
    finishes more of them per second, measured.

    Why: a sweep after a start or a relist mostly finds every object in place. Such reconciles make no request: they
    are Python work only, and one thread at a time runs Python: spread over eight workers they took a fifth to a
    quarter more CPU than on one (the interpreter lock handed from thread to thread every few milliseconds, each
    thread's objects pushed out of the processor's caches by the others'). Measured on the memcached sample restarted
    over 3000 converged objects: quiet after 4.8-5.8 s with one worker, 7.4-8.3 s with eight. A sweep that writes (an
    operator upgraded with new templates) or whose hooks wait on something else (an external service) is faster the
    more of it runs at once. The pacer does not guess which sweep it is: it measures both widths and keeps the faster.

    How: while a sweep runs, the pacer counts every reconcile that finishes — the sweep's and the live events' — in
    rounds (each at least :attr:`ROUND_KEYS` keys and :attr:`ROUND_SECONDS`, or :attr:`LONG_ROUND_SECONDS` whatever
    the keys). Every key counts because the width decides how the workers are shared: with live events waiting, a
    sweep on every worker finishes more *sweep* keys per second only by taking workers from the live ones, which is
    no gain when the process does the same work. A sweep starts with a round at width one, then one at full width;
    the faster width is kept for a stretch of rounds, which doubles (up to :attr:`MAX_STRETCH`) each time the
    measurement confirms the choice, and both widths are measured again after it. Width one wins ties (within
    :attr:`MARGIN`): it spends less CPU and leaves the other workers free for live events. When the sweep is over (no
    low key waiting or running), the next one starts from the beginning again.

    Thread-safe: :meth:`finished` is called by the workers, with the queue's lock *not* held.
    """

    ROUND_KEYS = 8
    ROUND_SECONDS = 0.2
    LONG_ROUND_SECONDS = 1.0
    MAX_STRETCH = 64
    MARGIN = 0.1

    def __init__(self, queue: WorkQueue[Any], workers: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._queue = queue
        self._workers = max(int(workers), 1)
        self._clock = clock
        self._lock = threading.Lock()
        self.narrow_rate: float | None = None
        """Keys per second (the sweep's and the live ones) of the last round measured at width one."""
        self.wide_rate: float | None = None
        """Keys per second (the sweep's and the live ones) of the last round measured at full width."""
        self._phase = "narrow"
        self._width = 1
        self._chosen: int | None = None
        self._stretch = 1
        self._left = 0
        self._round_start: float | None = None
        self._round_base = 0
        """How many keys the queue had completed when the round began."""
        self._restart_locked()

    @property
    def width(self) -> int:
        """How many keys of a sweep run at once now."""
        with self._lock:
            return self._width

    def finished(self) -> None:
        """A key of the sweep was reconciled and marked done: the round's keys (every key the queue saw done since
        the round began, the sweep's and the live ones) are counted, and the round ends when it is long enough."""
        with self._lock:
            if self._queue.low_count == 0 and self._queue.low_processing_count == 0:
                self._restart_locked()  # the sweep is over: the next one is measured from the start
                return
            now = self._clock()
            if self._round_start is None:
                self._begin_round_locked()  # the sweep's first key: its own start is not known, the round starts here
                return
            keys = self._queue.completed - self._round_base
            elapsed = now - self._round_start
            if elapsed < self.LONG_ROUND_SECONDS and (keys < self.ROUND_KEYS or elapsed < self.ROUND_SECONDS):
                return
            self._end_round_locked(keys / max(elapsed, 1e-9))

    def _end_round_locked(self, rate: float) -> None:
        if self._phase == "narrow":
            self.narrow_rate = rate
            self._set_locked("wide", self._workers)
        elif self._phase == "wide":
            self.wide_rate = rate
            narrow = self.narrow_rate or 0.0
            chosen = self._workers if rate > narrow * (1 + self.MARGIN) else 1
            self._stretch = min(self._stretch * 2, self.MAX_STRETCH) if chosen == self._chosen else 1
            self._chosen = chosen
            self._left = self._stretch
            self._set_locked("hold", chosen)
        else:
            self._left -= 1
            if self._left <= 0:
                self._set_locked("narrow", 1)
            else:
                self._begin_round_locked()

    def _set_locked(self, phase: str, width: int) -> None:
        self._phase = phase
        self._width = width
        self._begin_round_locked()
        self._queue.low_limit = None if width >= self._workers else width

    def _begin_round_locked(self) -> None:
        self._round_start, self._round_base = self._clock(), self._queue.completed

    def _restart_locked(self) -> None:
        self._chosen = None
        self._stretch = 1
        self._left = 0
        self._set_locked("narrow", 1)
        self._round_start = None
