"""Daemons: per-object background work, ``@okt.daemon`` on a reconciler method (Kopf's ``@kopf.daemon``).

Why this exists: some work is neither a reaction to a change nor due on a clock — following a log stream, polling an
external system the object stands for, keeping a connection open. A daemon is a method ``name(self, ctx)`` of the
reconciler that runs in its own thread for as long as its object exists, and returns when ``ctx.stop`` is set.

This module is the declaration (the decorator, the declared daemons of a class, what a daemon receives); the
runtime's :mod:`okt.runtime.daemons` starts and stops them. The declaration sits on the reconciler, as timers do,
because a daemon belongs to the object's lifecycle: it starts where reconciles run (never on a standby replica) and
stops with the object, whatever the reason it goes away.

A daemon is written as a loop that waits on its stop event::

    @okt.daemon
    def monitor(self, ctx: okt.DaemonContext) -> None:
        while not ctx.stop.wait(10):  # True as soon as okt asks the daemon to stop
            ...

What a daemon finds for the object's status it hands over (``ctx.set_condition(...)``, ``ctx.set_status_fields(...)``)
rather than writing it: the reconcile it asks for writes it, in its one status write (see
:mod:`okt.reconciler.findings`).

A daemon may be ``async def``, as Kopf's usually are: it runs on its thread's own event loop (:mod:`okt.coroutines`),
and once asked to stop it is given ``cancel_after`` seconds to return before okt cancels it (an
``asyncio.CancelledError`` raised where it awaits, its ``finally`` blocks run), as Kopf cancels its own::

    @okt.daemon
    async def monitor(self, ctx: okt.DaemonContext) -> None:
        while True:  # cancelled once its object goes away
            ...
            await asyncio.sleep(10)

Guarantees: see :mod:`okt.runtime.daemons`; a deleted object is finalized only once its daemons returned. Caveat:
Python cannot kill a thread — a ``def`` daemon that never looks at ``ctx.stop`` (an ``async def`` one that swallows
its cancellation, or blocks its loop) keeps running and holds its object's finalization (okt logs it, and never
starts a second one for that object).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import structlog

from okt import delays, errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import findings as findings_mod
from okt.reconciler import handler_filters, indexes
from okt.status import conditions as cond

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__okt_daemon__"
"""The attribute ``@okt.daemon`` sets on the method it declares a daemon: its :class:`Options`."""


@dataclasses.dataclass(frozen=True)
class Options:
    """How one daemon is run.

    Attributes:
        backoff: seconds before a daemon that raised is started again; doubled after each consecutive failure. A
            daemon that raised ``okt.TemporaryError(msg, delay=s)`` is started again after ``s`` seconds instead.
        max_backoff: the cap of that doubling; a run that lasted this long or longer before it raised is not
            consecutive to the failures before it (the next pause is ``backoff`` again).
        stop_timeout: seconds a stopping daemon is waited for before okt logs that it ignores its stop event.
        cancel_after: seconds an ``async def`` daemon asked to stop is given to return on its own before okt cancels
            it (``asyncio.CancelledError`` raised where it awaits, as Kopf cancels its async daemons); 0 cancels it at
            once. A ``def`` daemon cannot be cancelled: this does not concern it.
        filter: which objects the daemon runs for (None: every object the reconciler watches); an object that stops
            passing it has its daemon stopped, as when the object goes away, and started again once it passes again.

    ``backoff`` and ``max_backoff`` are capped at 6 hours (:data:`okt.delays.MAX_DELAY`) as every requeue and retry
    is, ``stop_timeout`` and ``cancel_after`` at :data:`okt.delays.LONGEST_WAIT`; an int past a float's range too.

    Raises:
        ValueError: a value is not a finite number of seconds (a bool is not one), ``backoff`` is not > 0,
            ``max_backoff`` is below it, or ``stop_timeout`` or ``cancel_after`` is negative.
    """

    backoff: float = 1.0
    max_backoff: float = 60.0
    stop_timeout: float = 10.0
    filter: handler_filters.Filter | None = None
    cancel_after: float = 1.0

    def __post_init__(self) -> None:
        # Numbers, each of them (a string failed inside math.isfinite, naming no option; True was one second), and
        # finite: a cap that is NaN caps nothing (it compares false), and a stop timeout that is not finite is a wait
        # too long for the platform's clock (the watchdog's thread ended on it). An int past a float's range is
        # finite: a long delay, capped below, not an OverflowError out of this check.
        values = {
            "backoff": self.backoff,
            "max_backoff": self.max_backoff,
            "stop_timeout": self.stop_timeout,
            "cancel_after": self.cancel_after,
        }
        if (
            not all(delays.is_seconds(value, zero=True) for value in values.values())
            or not self.backoff > 0
            or self.max_backoff < self.backoff
        ):
            got = ", ".join(f"{option}={delays.said(value)}" for option, value in values.items())
            raise ValueError(
                f"a daemon needs finite numbers of seconds, 0 < backoff <= max_backoff, stop_timeout >= 0 and "
                f"cancel_after >= 0, got {got}"
            )
        # A restart's pause is a delay as a requeue is (capped at 6 hours); a wait longer than a thread can wait
        # (1e20 seconds) ended the daemon's thread, or the watchdog's, on OverflowError.
        for option in ("backoff", "max_backoff"):
            object.__setattr__(self, option, delays.capped(getattr(self, option)))
        for option in ("stop_timeout", "cancel_after"):
            object.__setattr__(self, option, delays.capped(getattr(self, option), delays.LONGEST_WAIT))

    def delay(self, failures: int) -> float:
        """The pause before the next start after ``failures`` consecutive failures (>= 1)."""
        steps = max(failures - 1, 0)
        # Compare exponents, not powers: 2 ** steps is too large for a float after 1024 failures (17 hours at the
        # default cap), and the error it raised ended the daemon's thread for good.
        if steps >= math.log2(self.max_backoff / self.backoff):
            return float(self.max_backoff)
        return float(self.backoff * 2**steps)


@overload
def daemon(fn: F, /) -> F: ...


@overload
def daemon(
    *,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    stop_timeout: float = 10.0,
    cancel_after: float = 1.0,
    labels: Mapping[str, str | None] | None = None,
    annotations: Mapping[str, str | None] | None = None,
    when: handler_filters.When | None = None,
) -> Callable[[F], F]: ...


def daemon(
    fn: F | None = None,
    /,
    *,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    stop_timeout: float = 10.0,
    cancel_after: float = 1.0,
    labels: Mapping[str, str | None] | None = None,
    annotations: Mapping[str, str | None] | None = None,
    when: handler_filters.When | None = None,
) -> F | Callable[[F], F]:
    """Mark a reconciler method ``name(self, ctx)`` as a daemon: one thread per object, stopped with its object.

    Used bare (``@okt.daemon``) or with options (``@okt.daemon(backoff=5)``, see :class:`Options`).

    ``labels``, ``annotations`` and ``when`` (Kopf's filters of a daemon) run it only for the objects that pass them:
    ``@okt.daemon(labels={"tier": "cache"}, when=lambda obj: ...)`` (key -> value, or key -> None: any value; see
    :mod:`okt.reconciler.handler_filters`). They are looked at at each event of the object: one that stops passing has
    its daemon asked to stop (its ``ctx.stop`` set, what it stated removed from the status by the next reconcile, as
    when it returns on its own: the object is still reconciled), and one that passes again gets a new daemon once the
    old one returned. A ``when`` that raises counts as false, its
    error logged once per object while it keeps raising.

    Raises:
        TypeError: given something else than a method (an option given positionally); ``labels`` or ``annotations``
            is not a mapping of keys to a ``str`` or None (a label's value one the API server takes), or ``when`` is
            not a callable.
        ValueError: an option is refused (see :class:`Options`).
    """
    if fn is not None and not callable(fn):
        raise TypeError(
            f"@okt.daemon decorates a method; its options are keywords: @okt.daemon(backoff=..., max_backoff=..., "
            f"stop_timeout=..., cancel_after=..., labels=..., annotations=..., when=...), got {fn!r}"
        )
    filter_ = handler_filters.declare("@okt.daemon", labels, annotations, when)
    options = Options(
        backoff=backoff, max_backoff=max_backoff, stop_timeout=stop_timeout, filter=filter_, cancel_after=cancel_after
    )

    def mark(method: F) -> F:
        setattr(method, MARK, options)
        return method

    return mark(fn) if fn is not None else mark


def declared(cls: type) -> dict[str, Options]:
    """The daemons of a reconciler class: method name -> options (a subclass may override a daemon by name)."""
    found: dict[str, Options] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            options = getattr(member, MARK, None)
            if isinstance(options, Options):
                found[name] = options
            elif name in found:
                del found[name]  # redefined without the decorator: no longer a daemon
    return found


def concerning(cls: type, obj: Mapping[str, Any]) -> set[str]:
    """The daemons of a reconciler class that run for ``obj``: those it passes the filter of, as the supervisor looks
    at it. A ``when`` that raises counts as false here too, unlogged: the supervisor logs it, at the object's event."""
    names: set[str] = set()
    for name, options in declared(cls).items():
        try:
            passes = options.filter is None or options.filter.passes(obj)
        except Exception:  # the operator's when(): said by the supervisor, at the object's event
            passes = False
        if passes:
            names.add(name)
    return names


@dataclasses.dataclass(frozen=True)
class DaemonContext:
    """What a daemon receives: its object, its stop event, and the means to talk to the cluster.

    Attributes:
        stop: set when the daemon must return — its object is deleted (or being deleted), filtered out (by the
            reconciler's filters or the daemon's own), or the operator shuts down or loses its lease.
            ``ctx.stop.wait(seconds)`` is the daemon's sleep.
        kind: the primary kind.
        namespace: the object's namespace (None for a cluster-scoped kind).
        name: the object's name.
        uid: the object's uid (a recreated object of the same name gets a new daemon).
        daemon: the daemon's name (its method's).
        client: the API client; writes from a daemon are fenced like a reconcile's (none leaves a replica that lost
            its lease).
        log: a logger bound with controller, daemon, namespace and name.
        params: the reconciler's ``params``, as a mapping of this run's own: a key the daemon sets or removes is
            seen by this run only (not by other daemons, later runs or reconciles). The values are not copies.
        attempt: 1 for the first start for this object, then one more at every restart after a failure.
    """

    stop: threading.Event
    kind: kinds.Kind
    namespace: str | None
    name: str
    uid: str
    daemon: str
    client: kube_client.Client
    log: structlog.typing.FilteringBoundLogger
    params: Mapping[str, Any]
    attempt: int
    read: Callable[[], dict[str, Any] | None] = dataclasses.field(repr=False)
    enqueue: Callable[[], None] = dataclasses.field(repr=False)
    findings: findings_mod.Findings = dataclasses.field(repr=False)
    read_index: Callable[[str], indexes.Index] | None = dataclasses.field(default=None, repr=False)

    @property
    def obj(self) -> dict[str, Any] | None:
        """The object as the cache has it now (a private copy), None once it is gone."""
        return self.read()

    def reconcile(self) -> None:
        """Ask for a reconcile of this object (e.g. when the daemon saw the outside world change)."""
        self.enqueue()

    def indexed(self, name: str) -> indexes.Index:
        """The index ``name`` of a watched kind, read whole as a reconcile's ``ctx.indexed(name)`` reads it.

        Raises:
            okt.ConfigurationError: no watch of the reconciler declares an index of that name.
            okt.ApiError: the API server no longer lets okt list and watch the kind, or no longer serves it (a
                ``Forbidden``, a ``NotFound``): the index is as old as its last answer.
        """
        if self.read_index is None:
            raise errors.ConfigurationError(f"no index {name!r} of a watched kind can be read here")
        return self.read_index(name)

    def set_condition(self, type: str, status: bool | cond.ConditionStatus, reason: str, message: str = "") -> bool:
        """State a condition of this daemon's own in the object's status, e.g. ``ctx.set_condition("OperandHealthy",
        False, "Unreachable", "no answer on port 11211")``; returns whether that changed what the daemon stated.

        Nothing is written here: the condition is held in memory and a reconcile is asked when it changed; that
        reconcile's one status write carries it, with Ready (its hooks see it in ``ctx.conditions``). Stating the same
        again asks for nothing. ``lastTransitionTime`` moves only when ``status`` does; the condition carries no
        ``observedGeneration``. It stays on the object while the daemon runs, and is removed once the daemon returns
        on its own (see :mod:`okt.reconciler.findings`).

        Raises:
            ValueError: ``type`` is one of okt's (``Ready``, ``Degraded``, ...) or another daemon's of this object, or
                ``type``/``reason`` is not what the API accepts (a CamelCase reason: ``okt.to_reason`` makes one),
                or the reconciler writes no status (``status`` is "off", a built-in kind's default): nothing would
                carry it.
        """
        changed = self.findings.set_condition(self.uid, self.daemon, type, status, reason, message)
        if changed:
            self.enqueue()
        return changed

    def set_status_fields(self, fields: Mapping[str, Any]) -> bool:
        """State fields of the object's status (API names, merged over what this daemon stated before; None removes
        a field, and a key holding None inside a field's value is left out, wherever the status is kept), e.g.
        ``ctx.set_status_fields({"lastBackup": "2026-11-29T18:00:00Z"})``; returns whether that changed what the
        daemon stated.

        Held in memory as :meth:`set_condition` is: the next reconcile's status write carries them, and its hooks
        read them in ``ctx.status_fields``; removed once the daemon returns on its own.

        Raises:
            ValueError: a field is okt's own (``conditions``, ``observedGeneration``) or another daemon's of this
                object, is not JSON, or the reconciler's ``status_model`` refuses it, or the reconciler writes no
                status (``status`` is "off", a built-in kind's default).
        """
        changed = self.findings.set_fields(self.uid, self.daemon, fields)
        if changed:
            self.enqueue()
        return changed
