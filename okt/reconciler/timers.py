"""Timers: per-object periodic work, ``@okt.every(seconds=...)`` on a reconciler method (Kopf's ``@kopf.timer``).

Why this exists: some work is due on a clock, not on a change — a backup every hour, a certificate check every day.
A timer is a method ``name(self, ctx)`` of the reconciler; okt runs it for each object, within a successful reconcile
(in SuccessManager, before its status write: what a timer sets in ``ctx.status_fields`` goes out in it), once its
interval has passed since it last ran for that object, and requeues the object for the next one. So timers live in
okt's model: they run only where reconciles run (never on a standby replica), never for an object being deleted or
in error, never twice at once for one object (the work queue hands a key to one worker).

Guarantees: the first run is at the object's first successful reconcile; a timer that raises is logged with its error
and a Warning Event, and runs again after its interval — or after the delay of an ``okt.TemporaryError(delay=...)``
— (it does not fail the reconcile: Ready says what the reconcile did), but ``okt.GiveUp`` gives the reconcile up as
from any hook; the object is requeued for the earliest timer due. What a timer returns is acted on as for any hook,
never dropped: ``None`` (or ``Outcome.done()``) carries on; ``okt.requeue_after(s)`` runs it again after ``s`` instead
of its interval; ``okt.give_up(reason)`` gives the reconcile up (no requeue, so no next run, until the object
changes); ``Outcome.retry(error)`` is the timer failing with ``error``, and any other value a failure that names it.
Caveat: the clock is the process's — after a restart or a failover every timer is due at once.
"""

from __future__ import annotations

import math
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from okt import errors
from okt.engines import results as results_mod
from okt.status import events

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod
    from okt.reconciler import reconciler as reconciler_mod

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__okt_every__"


def every(*, seconds: float = 0.0, minutes: float = 0.0, hours: float = 0.0) -> Callable[[F], F]:
    """Mark a reconciler method ``name(self, ctx)`` as a timer that runs for each object every so often.

    Raises:
        ValueError: the interval (the sum of the three) is not a finite number of seconds > 0.
    """
    interval = seconds + 60 * minutes + 3600 * hours
    # Not finite, the interval would make the next run's requeue delay not finite either: refused by every reconcile.
    if not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"a timer needs a positive interval, got {interval!r} seconds")

    def mark(fn: F) -> F:
        setattr(fn, _MARK, float(interval))
        return fn

    return mark


def declared(cls: type) -> Mapping[str, float]:
    """The timers of a reconciler class: method name -> interval in seconds (read once per class: every reconcile
    asks)."""
    known = _declared.get(cls)
    if known is not None:
        return known
    found: dict[str, float] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            interval = getattr(member, _MARK, None)
            if interval is not None:
                found[name] = float(interval)
    known = _declared[cls] = types.MappingProxyType(found)
    return known


_declared: weakref.WeakKeyDictionary[type, Mapping[str, float]] = weakref.WeakKeyDictionary()


class Clock:
    """When each timer last ran for each object (by uid), in this process.

    A deleted object's entries are forgotten when the controller sees it deleted; the sweep drops what that misses (a
    reconcile that ran a timer just as its object went): an entry not refreshed for twice the longest interval is
    dropped (a live object's timer refreshes it every interval).
    """

    SWEEP_EVERY = 256

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._longest = 0.0
        self._runs = 0

    def due(self, uid: str, name: str, interval: float) -> float:
        """Seconds until the timer is due for that object (<= 0: due now)."""
        with self._lock:
            last = self._last.get((uid, name))
        return 0.0 if last is None else last + interval - self._now()

    def ran(self, uid: str, name: str, interval: float = 0.0) -> None:
        with self._lock:
            now = self._now()
            self._last[(uid, name)] = now
            self._longest = max(self._longest, interval)
            self._runs += 1
            if self._runs % self.SWEEP_EVERY == 0:
                horizon = now - 2 * self._longest
                for key in [key for key, last in self._last.items() if last < horizon]:
                    del self._last[key]

    def again_in(self, uid: str, name: str, interval: float, seconds: float) -> None:
        """Make the timer due ``seconds`` from now rather than ``interval`` after its last run (it asked for it)."""
        with self._lock:
            self._last[(uid, name)] = self._now() + seconds - interval

    def __len__(self) -> int:
        with self._lock:
            return len(self._last)

    def forget(self, uid: str, names: Iterable[str]) -> None:
        """Drop the entries of the object ``uid`` for the timers ``names`` (its reconciler's: one lookup each, never a
        scan of every object's entries, which a mass deletion would repeat for each object)."""
        with self._lock:
            for name in names:
                self._last.pop((uid, name), None)


def run_due(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context, clock: Clock) -> None:
    """Run the timers due for this object, then ask for a requeue when the next one is.

    Nothing runs when the reconcile already failed or gave up (called from the SuccessManager's built-in work, after
    its conditions and before its status write, which the state's hook may still fail).
    """
    timers = declared(type(reconciler))
    if not timers or not ctx.exists or ctx.finalizing or ctx.results.has_error or ctx.results.gave_up is not None:
        return
    uid = ctx.cr.uid
    next_due: float | None = None
    for name, interval in timers.items():
        if clock.due(uid, name, interval) <= 0:
            clock.ran(uid, name, interval)
            try:
                answer = getattr(reconciler, name)(ctx)
            except errors.GiveUp as exc:
                ctx.results.record_exception(exc)  # a give-up, as raised from any other hook
            except Exception as exc:
                _failed(ctx, name, exc)
                if isinstance(exc, errors.TemporaryError) and exc.delay is not None:
                    clock.again_in(uid, name, interval, exc.delay)  # try again when it asked, as any hook's retry
            else:
                _follow(ctx, clock, name, interval, answer)
        remaining = clock.due(uid, name, interval)
        next_due = remaining if next_due is None else min(next_due, remaining)
    if next_due is not None:
        ctx.requeue_after(max(next_due, 0.001))


def _follow(ctx: context_mod.Context, clock: Clock, name: str, interval: float, answer: object) -> None:
    """Act on what the timer returned, as on any hook's answer (a hook's ``okt.requeue_after`` asks for it to run again
    then), never dropping it: a timer's error or bug is reported as its failure, not as the reconcile's."""
    if answer is None:
        return
    if not isinstance(answer, results_mod.Outcome):
        _failed(
            ctx,
            name,
            TypeError(
                f"timer {name} returned {answer!r}: a timer returns None (carry on), okt.requeue_after(seconds) or "
                "okt.give_up(reason)"
            ),
        )
    elif answer.kind is results_mod.OutcomeKind.REQUEUE_AFTER and answer.delay is not None:
        clock.again_in(ctx.cr.uid, name, interval, answer.delay)
    elif answer.kind is results_mod.OutcomeKind.GIVE_UP:
        ctx.results.follow(answer, f"timer {name}")
    elif answer.error is not None:
        _failed(ctx, name, answer.error)


def _failed(ctx: context_mod.Context, name: str, exc: BaseException) -> None:
    ctx.log.warning("timer failed", timer=name, error=f"{type(exc).__name__}: {exc}")
    ctx.event(events.WARNING, "TimerFailed", f"timer {name} failed: {type(exc).__name__}: {exc}")
