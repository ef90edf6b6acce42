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
  turn. A low key added again as live moves to the live lane (never the other way);
* **delayed adds** (:meth:`WorkQueue.add_after`) are kept in one heap and promoted by the getters' condition wait —
  there is no thread per delayed item, and no thread at all; a key already waiting keeps its *earliest* due time;
* **per-key exponential backoff** (:meth:`WorkQueue.add_rate_limited`) counts consecutive failures per key;
  :meth:`WorkQueue.forget` resets the count after a success;
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
from typing import Generic, Protocol, TypeVar

from okt.runtime import backoff as backoff_mod

K = TypeVar("K", bound=Hashable)

DEFAULT_AGING = 5.0
"""Seconds the oldest low-priority key waits before low and live keys take turns."""


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
        # The low lane: (time added, key); a key that moved to the live lane leaves a stale entry (``_low`` no longer
        # holds it), skipped when it reaches the head.
        self._low_queue: collections.deque[tuple[float, K]] = collections.deque()
        self._low: set[K] = set()
        self._last_was_low = False
        self.aging = aging
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
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
            # A getter may be sleeping until a later due time: wake one so it recomputes its wait.
            self._cond.notify()

    def add_rate_limited(self, key: K, at_least: float = 0.0) -> float:
        """Count one more consecutive failure of ``key`` and queue it after the backoff delay, or ``at_least``
        seconds when that is longer (a delay the error asked for); returns the delay."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            self._observer.retried(key)
        delay = max(self._backoff.delay(failures), at_least)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count (after a successful reconcile)."""
        with self._cond:
            self._failures.pop(key, None)

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
                key = self._next_locked()
                if key is not None:
                    self._processing.add(key)
                    self._dirty.discard(key)
                    self._observer.taken(key)
                    return key
                now = self._clock()
                waits = []
                if deadline is not None:
                    if now >= deadline:
                        return None
                    waits.append(deadline - now)
                if self._heap:
                    waits.append(max(self._heap[0][0] - now, 0.0))
                self._cond.wait(min(waits) if waits else None)

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was re-added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            self._observer.done(key)
            if key in self._dirty and not self._shutting_down:
                self._queue.append(key)
                self._cond.notify()

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
    def low_count(self) -> int:
        """How many ready keys wait in the low-priority lane (the rest of the sweep)."""
        with self._cond:
            return len(self._low)

    # -- internals (the lock is held) ----------------------------------------------------------------------------

    def _add_locked(self, key: K, low: bool = False) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            if not low and key in self._low:
                self._low.discard(key)  # its entry in the low lane is now stale
                self._queue.append(key)
                self._cond.notify()
            return
        self._dirty.add(key)
        self._observer.added(key)
        if key in self._processing:
            return  # queued by done(), as live
        if low:
            self._low.add(key)
            self._low_queue.append((self._clock(), key))
        else:
            self._queue.append(key)
        self._cond.notify()

    def _next_locked(self) -> K | None:
        """The next key to hand out: live first; once the oldest low key is older than ``aging``, in turn."""
        while self._low_queue and self._low_queue[0][1] not in self._low:
            self._low_queue.popleft()  # stale: moved to the live lane
        if self._low_queue and (
            not self._queue or (not self._last_was_low and self._clock() - self._low_queue[0][0] >= self.aging)
        ):
            _, key = self._low_queue.popleft()
            self._low.discard(key)
            self._last_was_low = True
            return key
        self._last_was_low = False
        return self._queue.popleft() if self._queue else None

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            if self._due.get(key) != due:
                continue
            del self._due[key]
            self._add_locked(key)
