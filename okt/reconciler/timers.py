"""Timers: per-object periodic work, ``@okt.every(seconds=...)`` on a reconciler method (Kopf's ``@kopf.timer``).

Why this exists: some work is due on a clock, not on a change — a backup every hour, a certificate check every day.
A timer is a method ``name(self, ctx)`` of the reconciler; okt runs it for each object, within a successful reconcile
(in SuccessManager, before its status write: what a timer sets in ``ctx.status_fields`` goes out in it), once its
interval has passed since its last call for that object returned, and requeues the object for the next one. The
interval runs from the end of one call to the start of the next (as Kopf's): a call slower than its interval is
followed by a whole interval of rest, never by the next call at once (the timer would hold a worker and the API
server without a pause). So timers live in
okt's model: they run only where reconciles run (never on a standby replica), never for an object being deleted or
in error, never twice at once for one object (the work queue hands a key to one worker).

Guarantees: the first run is at the object's first successful reconcile; a timer that raises is logged with its error
and when it runs next, a Warning Event, counted (``okt_timer_errors_total``), and backs off (it does not fail the
reconcile: Ready says what the reconcile did): it runs again after its interval — or after the delay of an
``okt.TemporaryError(delay=...)`` — then, while it keeps failing, after twice that, four times that..., up to
:data:`FAILURE_BACKOFF_CAP` (or that first delay, when longer), and after its interval again once a call succeeds
(:func:`retry_delay`). ``okt.GiveUp`` gives the reconcile up as from any hook: quietly, nothing written, not even the
Ready=True of the success it ran in (:func:`okt.reconciler.report.withdraw`). What a timer
returns is acted on as for any hook, never dropped: ``None`` (or ``Outcome.done()``) carries on;
``okt.requeue_after(s)`` runs it again after ``s`` instead of its interval; ``okt.give_up(reason)`` gives the reconcile
up (no requeue, so no next run, until the object changes); ``Outcome.retry(error)`` is the timer failing with ``error``,
and any other value a failure that names it.
A timer runs on the worker thread of its reconcile, so a call that hangs (a blocking request with no timeout) holds
that worker, and a few of them hold every worker: nothing is reconciled any more. ``@okt.every(..., timeout=s)``
runs each call in a thread of its own and waits ``s`` seconds for it: a call still running then counts as failed
(logged, Warning Event ``TimerFailed``, and backing off as any failure), the reconcile goes on, and the timer does not
run again for that object while that call runs; once it returns, it runs again an interval later, or when the backoff
its timeout started says if that is later (the timeout stays a failure, counted: a late return, even a success, neither
brings the next call earlier nor resets the count). Python cannot kill a thread: the call goes on in its thread until
it returns; :meth:`Clock.overdue` counts those calls (the ``okt_timer_calls_overdue`` gauge), and each reconcile that
skips the timer for it logs so.
Such a call works on a context of its own: a results stack, status fields, conditions, bookkeeping and registry that
are copies of its reconcile's, taken back only when it returned in time. Past its timeout, nothing it does reaches
that reconcile or a later one of the object: its ``ctx.flush_status()`` is refused (it would write what its reconcile
saw over what a later one wrote), and when it returns a warning says what it returned or raised and what it recorded
(errors, a requeue asked, a give-up), none of which is acted on: the timer runs again on its schedule.

Options (Kopf's): ``initial_delay=s`` puts the first call off until ``s`` after the object's first successful
reconcile in this process (so again after a restart or a failover: what spreads the calls a restart makes due at once).
``idle=s`` calls the timer only once the object has gone unchanged for ``s``: a change is what reconciles it (its
generation — its spec —, labels or annotations, okt's own annotations and its status aside; :func:`fingerprint`), seen
when a successful reconcile reaches the timers (within the queue's latency of the change; a change made while the
object's reconciles fail is seen once one succeeds); the object's first sighting in this process counts as one. The
next call is then due once both its schedule and the idle wait allow it. ``sharp=True`` keeps the calls on a grid of
the interval from the first call: each is due at the first slot of it after the previous one returned, however long
that took, a missed slot skipped. A failed call's backoff and a ``requeue_after`` asked for win over the grid (the call
after them is off it; the next one back on it) and over the interval; an idle wait holds a backoff's call back further
when it ends later.

Filters (Kopf's ``labels=``, ``annotations=``, ``when=`` of a timer): ``@okt.every(..., labels={"tier": "cache"})``
calls the timer only for the objects that pass them (see :mod:`okt.reconciler.handler_filters`), looked at in each
reconcile that reaches the timers; an object that does not pass is requeued for the timer an interval later only when
its labels and annotations match and the filter's ``when`` says no (it may read what reconciles nothing), never for
labels or annotations that do not match, whose change reconciles it. The reconciler's own filters choose the objects
reconciled at all.

Caveat: the clock is the process's — after a restart or a failover every timer is due at once (but for its
``initial_delay``); the ticks missed meanwhile (the operator down, a standby, the object in error) make one call, not
one each.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import hashlib
import json
import math
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from okt import coroutines, delays, errors
from okt import names as names_mod
from okt.engines import results as results_mod
from okt.kube import objects
from okt.reconciler import context as context_mod
from okt.reconciler import handler_filters
from okt.resources import registry as registry_mod
from okt.status import events

if TYPE_CHECKING:
    from okt.reconciler import reconciler as reconciler_mod

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__okt_every__"
"""The attribute ``@okt.every`` sets on the method it declares a timer: its :class:`Options`."""

_LEAST_DELAY = 0.25
"""The first wait after a failed call whose error asked for none (``delay=0``): the reconcile backoff's first."""
FAILURE_BACKOFF_CAP = 300.0
"""The longest wait, in seconds, between the calls of a timer that keeps failing (a reconcile's backoff's cap), unless
its interval or the delay its error asked for is longer."""


def retry_delay(interval: float, failures: int, asked: float | None = None) -> float:
    """Seconds from a failed call of a timer to its next call, after ``failures`` consecutive failed calls (>= 1).

    The delay starts at the timer's interval — or at ``asked``, the delay the error asked for
    (``okt.TemporaryError(delay=...)``, ``okt.Outcome.retry(error, delay=...)``) — and doubles with each further failed
    call, up to :data:`FAILURE_BACKOFF_CAP` or that start, whichever is longer: a timer failing every second does not
    call what fails every second for as long as it fails, and a timer of an hour whose error asks for no delay is never
    called more often than hourly (one whose error asks for a shorter one backs off from it, up to the cap). No
    jitter: each object's timer keeps a schedule of its own already.
    """
    if failures < 1:
        raise ValueError(f"failures must be >= 1, got {failures!r}")
    start = interval if asked is None else max(asked, _LEAST_DELAY)
    cap = max(start, FAILURE_BACKOFF_CAP)
    # Compare exponents, not powers: 2 ** failures overflows a float long before failures gets unusual.
    return cap if failures - 1 >= math.log2(cap / start) else start * 2.0 ** (failures - 1)


@dataclasses.dataclass(frozen=True)
class Options:
    """How one timer is run.

    Attributes:
        interval: seconds from the end of one call to the start of the next for one object (with ``sharp``: between
            the slots of its grid).
        timeout: seconds a call is waited for, or None: the call runs on the reconcile's worker thread for as long as
            it takes (see the module docstring).
        initial_delay: seconds from the first successful reconcile of an object in this process to its first call.
        idle: seconds the object must have gone unchanged before each call (0: no such wait).
        sharp: the calls keep to a grid of the interval from the first call, whatever each takes.
        filter: which objects the timer is called for (None: every object the reconciler reconciles).
    """

    interval: float
    timeout: float | None = None
    initial_delay: float = 0.0
    idle: float = 0.0
    sharp: bool = False
    filter: handler_filters.Filter | None = None


def every(
    bare: object = None,
    /,
    *,
    seconds: float = 0.0,
    minutes: float = 0.0,
    hours: float = 0.0,
    timeout: float | None = None,
    initial_delay: float | None = None,
    idle: float | None = None,
    sharp: bool = False,
    labels: Mapping[str, str | None] | None = None,
    annotations: Mapping[str, str | None] | None = None,
    when: handler_filters.When | None = None,
) -> Callable[[F], F]:
    """Mark a reconciler method ``name(self, ctx)`` as a timer that runs for each object every so often.

    Args:
        seconds: seconds of the interval, a number >= 0 (the interval is the sum of the three; longer than
            :data:`okt.delays.LONGEST_WAIT`, about 292 years, it is that long — an int past a float's range too —, as
            are a timeout, an initial delay and an idle wait).
        minutes: minutes of the interval, a number >= 0.
        hours: hours of the interval, a number >= 0.
        timeout: seconds a call may take; a call still running then counts as failed (and backs off), the reconcile
            goes on, and the timer does not run for that object again until that call returns (it cannot be stopped:
            Python cannot kill a thread), nor before the backoff its timeout started. None (the default): no limit,
            and a call that hangs holds its worker for good.
        initial_delay: seconds from the object's first successful reconcile in this process (so again after a restart
            or a failover) to the timer's first call for it, instead of at once. None or 0: no delay.
        idle: seconds the object must have gone unchanged before each call: a change (of its generation — its spec —,
            its labels or its annotations, okt's own aside) puts the next call off until the object has been left
            alone that long. None or 0: no such wait.
        sharp: keep the calls on a grid of the interval from the first call (due at the first call + n intervals),
            however long each takes, a slot missed (a call longer than the interval, a reconcile late) skipped rather
            than made up; by default the interval runs from the end of one call to the start of the next.
        labels: labels an object must carry for the timer to be called for it: key -> value, or key -> None (any
            value); see :mod:`okt.reconciler.handler_filters`.
        annotations: annotations it must carry, likewise.
        when: ``when(obj)``, called at each reconcile the timer is looked at in once the labels and annotations
            matched: the timer is called for the object only when it returns something true. One that raises counts
            as false, its error logged once per object while it keeps raising. While its object does not pass, the
            timer is not called, and is looked at again at the object's next reconcile: with a ``when``, an interval
            later at the latest (it may read what changes without reconciling the object: its status); with labels
            and annotations alone, no requeue is asked for (a change of them reconciles the object). Its schedule
            goes on meanwhile: once the object passes again, the timer is called as soon as it is due, at once if it
            came due meanwhile.

    Raises:
        TypeError: ``@okt.every`` used bare, without its interval.
        ValueError: a part of the interval is not a number >= 0 (a bool, a string...), the interval (the sum of the
            three) is not a finite number of seconds > 0, the timeout is not None or a finite number of seconds
            > 0, ``initial_delay`` or ``idle`` is not None or a finite number of seconds >= 0, or ``sharp`` is not
            True or False.
        TypeError: ``labels`` or ``annotations`` is not a mapping of keys to a ``str`` or None (a label's value one
            the API server takes), or ``when`` is not a callable.
    """
    if bare is not None:
        raise TypeError(f"@okt.every needs its interval: @okt.every(seconds=..., minutes=..., hours=...), got {bare!r}")
    for part, value in (("seconds", seconds), ("minutes", minutes), ("hours", hours)):
        # Checked one by one: a string failed deep in the sum below, True counted as 1, and a negative part was taken
        # off the others (seconds=-30, minutes=1 ran every 30 s).
        if not delays.is_number(value) or value < 0:
            raise ValueError(f"a timer's {part} is a number >= 0, got {delays.said(value)}")
    # Each finite part a float no longer than the longest wait before the sum: an int past a float's range
    # (seconds=10 ** 400) added to a float (minutes=0.5) raised OverflowError. NaN and infinity are refused below.
    interval = sum(
        delays.capped(part, delays.LONGEST_WAIT) if delays.is_seconds(part, zero=True) else part
        for part in (seconds, 60 * minutes, 3600 * hours)
    )
    # Not finite, the interval would make the next run's requeue delay not finite either: refused by every reconcile.
    if not delays.is_seconds(interval):
        raise ValueError(f"a timer needs a positive interval, got {interval!r} seconds")
    if timeout is not None and not delays.is_seconds(timeout):
        raise ValueError(f"a timer's timeout is None or a positive number of seconds, got {delays.said(timeout)}")
    waits = {}
    for option, wait in (("initial_delay", initial_delay), ("idle", idle)):
        # Not finite, the wait would be a requeue delay no reconcile accepts; negative, a wait that is none.
        if wait is not None and not delays.is_seconds(wait, zero=True):
            raise ValueError(f"a timer's {option} is None or a number of seconds >= 0, got {delays.said(wait)}")
        waits[option] = 0.0 if wait is None else delays.capped(wait, delays.LONGEST_WAIT)
    if not isinstance(sharp, bool):  # sharp="no" is true
        raise ValueError(f"a timer's sharp is True or False, got {sharp!r}")
    filter_ = handler_filters.declare("@okt.every", labels, annotations, when)
    options = Options(
        delays.capped(interval, delays.LONGEST_WAIT),
        None if timeout is None else delays.capped(timeout, delays.LONGEST_WAIT),
        sharp=sharp,
        filter=filter_,
        **waits,
    )

    def mark(fn: F) -> F:
        setattr(fn, MARK, options)
        return fn

    return mark


def declared(cls: type) -> Mapping[str, Options]:
    """The timers of a reconciler class: method name -> options (read once per class: every reconcile asks)."""
    known = _declared.get(cls)
    if known is not None:
        return known
    found: dict[str, Options] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            options = getattr(member, MARK, None)
            if isinstance(options, Options):
                found[name] = options
    known = _declared[cls] = types.MappingProxyType(found)
    return known


_declared: weakref.WeakKeyDictionary[type, Mapping[str, Options]] = weakref.WeakKeyDictionary()


class Clock:
    """When each timer is due next for each object (by uid), in this process, and when each object last changed.

    A deleted object's entries are forgotten when the controller sees it deleted; the sweep drops what that misses (a
    reconcile that ran a timer just as its object went): an entry due for longer than the longest interval and than
    :attr:`STALE_AFTER` is dropped (a live object's timer is called once due, the object requeued for then; a busy
    queue may bring that reconcile late, which must not start its schedule over). An object whose reconciles fail for
    longer than that starts over once one succeeds: as if first seen, its ``initial_delay`` included.

    It also keeps the calls still running past their timeout (:meth:`overdue`): until such a call returns, its timer
    does not run again for its object, whatever the interval (the entry outlives the object's: the thread does).
    Failed calls are counted per timer and object for its backoff (:meth:`failed`, reset by :meth:`succeeded`), and
    told to whoever counts them (:meth:`count_failures`).
    """

    SWEEP_EVERY = 256
    STALE_AFTER = 3600.0
    """Seconds an entry must have been due before a sweep takes its object for gone, whatever the intervals: a live
    object's reconcile a busy queue brought later than an interval keeps its failing timer's backoff, its grid, and
    its ``initial_delay`` waited once (an entry a deletion left behind costs a few hundred bytes for that long)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._next: dict[tuple[str, str], float] = {}
        self._grid: dict[tuple[str, str], float] = {}
        self._changes: dict[str, tuple[str, float]] = {}
        self._longest = 0.0
        self._runs = 0
        self._overdue: dict[tuple[str, str], float] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self._on_failure: Callable[[str], None] | None = None
        self.filter_errors = handler_filters.Raised()
        """The objects whose timers' ``when`` raised, each said once while it keeps raising."""

    def now(self) -> float:
        return self._now()

    def count_failures(self, on_failure: Callable[[str], None]) -> None:
        """Call ``on_failure(timer)`` for each failed call from now on (the controller counts them: a timer failing at
        every call for months is otherwise said only in its log lines and deduplicated Warning Events)."""
        self._on_failure = on_failure

    def failed(self, uid: str, name: str) -> int:
        """Record that a call of the timer ``name`` for the object ``uid`` failed (it raised, returned an error or a
        value okt cannot use, or ran past its timeout); returns how many of its calls in a row have failed."""
        with self._lock:
            failures = self._failures[(uid, name)] = self._failures.get((uid, name), 0) + 1
        if self._on_failure is not None:
            self._on_failure(name)
        return failures

    def succeeded(self, uid: str, name: str) -> None:
        """Record that a call of that timer for that object did not fail: its backoff starts over."""
        with self._lock:
            self._failures.pop((uid, name), None)

    def overdue(self) -> int:
        """How many timer calls run past their timeout now: each holds a thread okt cannot stop."""
        with self._lock:
            return len(self._overdue)

    def running_since(self, uid: str, name: str) -> float | None:
        """Seconds since the call of that timer for that object that ran past its timeout started; None when none
        runs."""
        with self._lock:
            started = self._overdue.get((uid, name))
        return None if started is None else self._now() - started

    def went_overdue(self, uid: str, name: str, started: float) -> None:
        """Record that the call of that timer for that object, started at ``started`` (this clock's time), is still
        running past its timeout."""
        with self._lock:
            self._overdue[(uid, name)] = started

    def returned(self, uid: str, name: str, interval: float, sharp: bool = False) -> float | None:
        """Record that the call past its timeout of that timer for that object returned: its next call is due an
        interval from now (with ``sharp``, at the next slot of its grid) or when the backoff its timeout started says,
        whichever is later, unless the object is gone: its entry is not brought back. Returns the seconds until that
        call (None for an object gone).

        The timeout was a failure, counted and logged with when the timer runs next: a return before then does not
        bring that call earlier (it would call what hung again sooner than its backoff, and than the log said), and is
        no success either, whatever the call returned: it keeps the failure count, and the next call's own result
        resets it or adds to it. A return after then is followed by an interval of rest, as any call is."""
        with self._lock:
            key = (uid, name)
            self._overdue.pop(key, None)
            if key not in self._next:
                return None
            self._next[key] = max(self._next[key], self._after(key, interval, sharp))
            return self._next[key] - self._now()

    def start(self, uid: str, name: str, initial_delay: float = 0.0) -> None:
        """The timer meets the object in a successful reconcile: the first time (in this process), its first call is
        due ``initial_delay`` from now; afterwards, this changes nothing."""
        with self._lock:
            if (uid, name) not in self._next:
                self._next[(uid, name)] = self._now() + initial_delay

    def seen(self, uid: str, fingerprint: str) -> float:
        """Record what the object ``uid`` looks like now (:func:`fingerprint`); returns when (this clock's time) it
        last changed: now when it differs from the last one recorded, or when the object is first seen."""
        with self._lock:
            known = self._changes.get(uid)
            if known is None or known[0] != fingerprint:
                known = self._changes[uid] = (fingerprint, self._now())
            return known[1]

    def not_before(self, uid: str, name: str, when: float) -> None:
        """Put the timer's next call for the object off until ``when`` (this clock's time), if it is due earlier."""
        with self._lock:
            key = (uid, name)
            if key in self._next:
                self._next[key] = max(self._next[key], when)

    def due(self, uid: str, name: str) -> float:
        """Seconds until the timer is due for that object (<= 0: due now; 0 for one never started)."""
        with self._lock:
            due = self._next.get((uid, name))
        return 0.0 if due is None else due - self._now()

    def ran(self, uid: str, name: str, interval: float = 0.0, *, grid_from: float | None = None) -> None:
        """Record that a call of that timer for that object returned just now: it is due again an interval from now or,
        for a sharp timer (``grid_from``, the start of this call), at the first slot after now of the grid of its
        interval from its first call's start (a slot missed is skipped, not made up)."""
        with self._lock:
            key = (uid, name)
            if grid_from is not None:
                self._grid.setdefault(key, grid_from)
            self._next[key] = self._after(key, interval, grid_from is not None)
            self._longest = max(self._longest, interval)
            self._runs += 1
            if self._runs % self.SWEEP_EVERY == 0:
                self._sweep()

    def _after(self, key: tuple[str, str], interval: float, sharp: bool) -> float:
        """When the timer is due after a call that returned now (the lock held)."""
        now = self._now()
        origin = self._grid.get(key) if sharp else None
        if origin is None or interval <= 0:
            return now + interval
        return origin + (math.floor((now - origin) / interval) + 1) * interval

    def _sweep(self) -> None:
        """Drop the entries of the objects that are gone (the lock held)."""
        horizon = self._now() - max(self._longest, self.STALE_AFTER)
        for key in [key for key, due in self._next.items() if due < horizon]:
            del self._next[key]
            self._grid.pop(key, None)
            self._failures.pop(key, None)
        timed = {uid for uid, _ in self._next}
        for uid in [uid for uid in self._changes if uid not in timed]:
            del self._changes[uid]

    def again_in(self, uid: str, name: str, seconds: float) -> None:
        """Make the timer due ``seconds`` from now rather than on its schedule (it asked for it, or failed)."""
        with self._lock:
            self._next[(uid, name)] = self._now() + seconds

    def __len__(self) -> int:
        with self._lock:
            return len(self._next)

    def forget(self, uid: str, names: Iterable[str]) -> None:
        """Drop the entries of the object ``uid`` for the timers ``names`` (its reconciler's: one lookup each, never a
        scan of every object's entries, which a mass deletion would repeat for each object)."""
        names = tuple(names)
        with self._lock:
            for name in names:
                self._next.pop((uid, name), None)
                self._grid.pop((uid, name), None)
                self._failures.pop((uid, name), None)
            self._changes.pop(uid, None)
        self.filter_errors.forget(uid, names)


def fingerprint(cr: objects.CustomResource, names: names_mod.Names) -> str:
    """What of the object a change of which restarts an ``idle`` wait, hashed: the changes that reconcile it (its
    generation — its spec —, or for a kind without one what it holds outside its metadata and status; its labels;
    its annotations), okt's own annotations aside (its bookkeeping, its reports, under any of its prefixes): okt's
    writes are not the object changing. Its status is not in it: a status write reconciles nothing."""
    meta = cr.metadata
    own = names.primary_annotations() | names.legacy_primary_annotations()
    annotations = {
        key: value
        for key, value in (meta.get("annotations") or {}).items()
        if key not in own and not names_mod.is_report(key)
    }
    generation = meta.get("generation")
    held: object = generation
    if generation is None:
        held = {key: value for key, value in cr.raw.items() if key not in ("metadata", "status")}
    body = {"held": held, "labels": meta.get("labels") or {}, "annotations": annotations}
    # Hashed: a Secret's data is not kept in the clock for as long as the object lives.
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def run_due(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context, clock: Clock) -> None:
    """Run the timers due for this object, then ask for a requeue when the next one is.

    Nothing runs when the reconcile already failed or gave up (called from the SuccessManager's built-in work, after
    its conditions and before its status write, which the state's hook may still fail). What the object looks like is
    recorded even then, for the timers that wait for it to be left alone (``idle``).
    """
    timers = declared(type(reconciler))
    if not timers or not ctx.exists or ctx.finalizing:
        return
    uid = ctx.cr.uid
    changed = None
    if any(options.idle for options in timers.values()):
        changed = clock.seen(uid, fingerprint(ctx.cr, ctx.settings.names))
    if ctx.results.has_error or ctx.results.gave_up is not None:
        return
    next_due: float | None = None
    for name, options in timers.items():
        interval = options.interval
        running = clock.running_since(uid, name)
        if running is not None:
            # Its call past the timeout still holds a thread: one more would hold one more. Looked at again after an
            # interval (the schedule's own "due" may be past already: no requeue at once, again and again).
            ctx.log.warning("timer skipped: its earlier call is still running", timer=name, seconds=round(running, 3))
            remaining = interval
        elif options.filter is not None and not clock.filter_errors.passes(
            options.filter, ctx.cr.raw, uid, name, ctx.log, "timer"
        ):
            # Not called while its object does not pass; looked at again at its next reconcile, its schedule kept: due
            # as soon as it passes. Labels and annotations that do not match ask for none: only a change of them,
            # which reconciles the object, can make it pass (a requeue would reconcile every object out of the filter
            # each interval for nothing). A when() may read what reconciles nothing (the status): an interval later
            # at the latest.
            if options.filter.when is None or not options.filter.labels_match(ctx.cr.raw):
                continue
            remaining = max(clock.due(uid, name), interval)
        else:
            clock.start(uid, name, options.initial_delay)
            if changed is not None and options.idle:
                # Due and left alone long enough, both; a backoff after a failure included (the later wins).
                clock.not_before(uid, name, changed + options.idle)
            if clock.due(uid, name) <= 0:
                started = clock.now()
                try:
                    try:
                        answer = _call(reconciler, ctx, clock, name, options)
                    finally:
                        # From its end: a call slower than its interval would be due again as it returned. A sharp
                        # timer's next slot of its grid is after its end too: a slot missed is skipped.
                        clock.ran(uid, name, interval, grid_from=started if options.sharp else None)
                except errors.GiveUp as exc:
                    ctx.results.record_exception(exc)  # a give-up, as raised from any other hook
                except Exception as exc:
                    # Tried again when it asked, as any hook's retry, backing off while it keeps failing.
                    asked = exc.delay if isinstance(exc, errors.TemporaryError) else None
                    _failed(ctx, clock, name, interval, exc, asked)
                else:
                    _follow(ctx, clock, name, interval, answer)
            remaining = clock.due(uid, name)
        next_due = remaining if next_due is None else min(next_due, remaining)
    if next_due is not None:
        ctx.requeue_after(max(next_due, 0.001))


class _CallContext(context_mod.Context):
    """The context a timer call with a timeout works on: its reconcile's, with what that reconcile goes on to use or
    write copied (the results stack, the status fields, the conditions, the bookkeeping, the registry, the children's
    decisions, the params), so that a call still running once its reconcile went on changes none of it — nor anything
    of a later reconcile of the object, which its status write would put what this one saw over.

    Once the call is past its timeout (:attr:`late`), its status write is refused (a ``status update error`` on its own
    stack, which the line logged when it returns reports). A status write under way at the timeout is waited for: the
    reconcile goes on only once it is done.
    """

    def __init__(self, ctx: context_mod.Context) -> None:  # a copy: the reconcile's context is built once, by it
        vars(self).update(vars(ctx))
        self.results = results_mod.Results()
        self.status_fields = copy.deepcopy(ctx.status_fields)
        self.conditions = copy.deepcopy(ctx.conditions)
        self.bookkeeping = copy.deepcopy(ctx.bookkeeping)
        self.registry = registry_mod.Registry()
        for res in ctx.registry:
            self.registry.register(res)
        self.decisions = dict(ctx.decisions)
        self.status_due = []
        self._params = dict(ctx.params)
        self.fence = threading.Lock()
        self.late = False

    def flush_status(self) -> bool:
        with self.fence:
            if not self.late:
                return super().flush_status()
            self.results.add(
                results_mod.Operation.STATUS_UPDATE_ERROR,
                self.cr.name,
                errors.OktError(
                    "status not written: the timer's call is past its timeout, and its reconcile went on without it"
                ),
            )
            return False

    def back_into(self, ctx: context_mod.Context) -> None:
        """Hand what the call did over to the reconcile it returned to in time, as if it had worked on its context."""
        due, self.status_due = self.status_due, ctx.status_due  # the reconcile's own (its status write) stays
        mine = {name: value for name, value in vars(self).items() if name not in ("results", "fence", "late")}
        vars(ctx).update(mine)
        ctx.status_due.extend(due)
        ctx.results.take(self.results)


class _Call:
    """One call of a timer with a timeout, run in a thread of its own while the worker waits for it."""

    def __init__(self, method: Callable[[Any], object], ctx: _CallContext) -> None:
        self._method = method
        self._ctx = ctx
        self._finished = threading.Event()
        self._abandoned: Callable[[float, str], None] | None = None
        self.answer: object = None
        self.error: BaseException | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.answer = coroutines.call(self._method, self._ctx)
        except BaseException as exc:  # handed to the worker, which raises it (or, past the timeout, logs it)
            self.error = exc
        with self._ctx.fence:
            self._finished.set()
            late = self._abandoned
        if late is not None:
            late(time.monotonic() - started, self._outcome())

    def _outcome(self) -> str:
        """What the call returned or raised, for the line logged when it returns past its timeout."""
        if self.error is not None:
            return f"raised {errors.said(self.error)}"
        if self.answer is None:
            return "returned"
        if isinstance(self.answer, results_mod.Outcome):
            return f"returned {self.answer}"  # requeue_after(30.0), give_up(reason), retry(RuntimeError)
        return f"returned {self.answer!r}"

    def wait(self, timeout: float, overdue: Callable[[], None], late: Callable[[float, str], None]) -> bool:
        """Whether the call returned within ``timeout``. If not, ``overdue()`` is called at once and
        ``late(seconds, outcome)`` once it returns (never the other way round); from then on the call's context
        refuses its status writes."""
        if self._finished.wait(timeout):
            return True
        with self._ctx.fence:
            if self._finished.is_set():
                return True  # it returned just now: its answer is on time after all
            self._ctx.late = True
            overdue()
            self._abandoned = late
        return False


def _call(
    reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context, clock: Clock, name: str, options: Options
) -> object:
    """Call the timer ``name``: on this worker thread, or, with a timeout, in a thread of its own waited for that
    long. Returns its answer; raises what it raised, or ``TimeoutError`` when it did not return in time."""
    method = getattr(reconciler, name)
    if options.timeout is None:
        return coroutines.call(method, ctx)
    # The call may go on past the reconcile: it works on a copy of what the reconcile uses or writes after it, taken
    # back only when it returned in time (see _CallContext).
    own = _CallContext(ctx)
    call = _Call(method, own)
    uid, started = ctx.cr.uid, clock.now()
    # The worker's context variables (the leadership write fence) go with the call into its thread.
    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(call.run,), name=f"okt-timer-{name}-{ctx.cr.name}", daemon=True
    )
    thread.start()
    log = ctx.log

    def late(seconds: float, outcome: str) -> None:
        # Its reconcile ended without it: what it answered or recorded is not acted on (the timer runs again on its
        # schedule, the backoff its timeout started included), but said, errors and asked requeue included.
        again_in = clock.returned(uid, name, options.interval, options.sharp)
        recorded = own.results
        said: dict[str, object] = {}
        if again_in is not None:
            said["again_in"] = round(again_in, 3)
        if recorded.entries:
            said["results"] = recorded.summary()
        if recorded.first_error is not None:
            said["error"] = errors.said(recorded.first_error)
        if recorded.min_delay is not None:
            said["requeue_after"] = recorded.min_delay
        if recorded.gave_up is not None:
            said["gave_up"] = recorded.gave_up
        log.warning(
            "timer call returned after its timeout", timer=name, seconds=round(seconds, 3), outcome=outcome, **said
        )

    if not call.wait(options.timeout, lambda: clock.went_overdue(uid, name, started), late):
        raise TimeoutError(
            f"it did not return within its timeout of {options.timeout:g} s; its call goes on in its thread (Python "
            "cannot stop it), and the timer does not run again for this object until it returns"
        )
    own.back_into(ctx)
    if call.error is not None:
        raise call.error
    return call.answer


def _follow(ctx: context_mod.Context, clock: Clock, name: str, interval: float, answer: object) -> None:
    """Act on what the timer returned, as on any hook's answer (a hook's ``okt.requeue_after`` asks for it to run again
    then), never dropping it: a timer's error or bug is reported as its failure, not as the reconcile's."""
    uid = ctx.cr.uid
    if answer is None:
        clock.succeeded(uid, name)
        return
    if not isinstance(answer, results_mod.Outcome):
        _failed(
            ctx,
            clock,
            name,
            interval,
            TypeError(
                f"timer {name} returned {answer!r}: a timer returns None (carry on), okt.requeue_after(seconds) or "
                "okt.give_up(reason)"
            ),
        )
    elif answer.kind is results_mod.OutcomeKind.GIVE_UP:
        ctx.results.follow(answer, f"timer {name}")
    elif answer.error is not None:
        _failed(ctx, clock, name, interval, answer.error, answer.delay)
    else:
        clock.succeeded(uid, name)
        if answer.kind is results_mod.OutcomeKind.REQUEUE_AFTER and answer.delay is not None:
            clock.again_in(uid, name, answer.delay)


def _failed(
    ctx: context_mod.Context,
    clock: Clock,
    name: str,
    interval: float,
    exc: BaseException,
    asked: float | None = None,
) -> None:
    """Report a failed call, and make the timer due again after its backoff (see :func:`retry_delay`)."""
    uid = ctx.cr.uid
    delay = retry_delay(interval, clock.failed(uid, name), asked)
    clock.again_in(uid, name, delay)
    # Said as a hook's error is: a pydantic ValidationError by its fields, never by the values it was given (a
    # Secret's, which a timer may well validate), here and in an Event anyone reading the namespace's events sees.
    said = errors.said(exc)
    ctx.log.warning("timer failed", timer=name, error=said, again_in=round(delay, 3))
    ctx.event(events.WARNING, "TimerFailed", f"timer {name} failed: {said}")
