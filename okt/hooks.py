"""Operator-wide hooks: ``@okt.on_startup``, ``@okt.on_cleanup`` and ``@okt.probe``.

Why this exists: some work belongs to the operator, not to one object — warm a client, check a dependency, register
with a service on the way in; flush or deregister on the way out (Kopf's ``@kopf.on.startup``/``@kopf.on.cleanup``).
Decorate module-level functions of the operator's file; ``okt run`` finds them there (as it finds the reconcilers),
and :class:`okt.Manager` takes them as ``on_startup``/``on_cleanup``.

Guarantees: start-up hooks run in definition order before the first watch, each with the API client; one that raises
``okt.TemporaryError`` is called again after the error's ``delay`` (or a backoff: :mod:`okt.runtime.startup`), the
operator not ready meanwhile, up to the limits its ``@okt.on_startup(retries=, timeout=)`` declares (Kopf's); one that
raises anything else, or reaches a limit, stops the start with an ``okt.ConfigurationError`` naming it, and nothing is
watched; one still running when a shutdown's grace period is over is left running, its writes through okt's client
refused (``okt run`` exiting non-zero at once). Clean-up hooks run after the last reconcile finished (or the grace
period ended), on a graceful shutdown, in definition order, each called once, within what is left of the shutdown's
grace period (:mod:`okt.runtime.cleanup`); one that raises is logged, the others still run, and ``okt run`` exits
non-zero. Both run on every replica, leader or not: they are about the
process, not the objects.

Caveats: ``@okt.on_cleanup`` takes no ``retries=``, ``timeout=`` nor ``backoff=``, where Kopf's ``@kopf.on.cleanup``
does: a clean-up hook is never retried (retries would hold the exit), and the shutdown's grace period bounds it as it
bounds the reconciles (Kopf's cleanup has no bound of its own but the pod's kill). A hook still running when the grace
period is over (a backend that does not answer) is left running — Python cannot interrupt it; it ends with the process
— with an error line naming it; the hooks after it are not started, its writes through okt's client are refused from
then on, and the shutdown goes on (the lease released, ``okt run`` exiting non-zero). A hook that may wait bounds its
own waits, shorter than the grace period.

A probe (Kopf's ``@kopf.on.probe``) is a function of no arguments whose JSON value the probe server adds to the
JSON answer of ``/healthz`` under its name (:mod:`okt.runtime.probes` runs it: off the workers, with a timeout, its
result kept a few seconds). Each may be ``async def`` (Kopf's usually are): okt runs its coroutine to its end on the
calling thread's own event loop (:mod:`okt.coroutines`). A declaration okt could not run — not callable, an async
generator, needing an argument, a name already declared in its module — is refused where it is written.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from okt import coroutines, delays, errors

if TYPE_CHECKING:
    from okt.kube import client as kube_client

    StartupHook = Callable[[kube_client.Client], Any]
else:  # okt.kube.client imports the okt package, which imports this module: no import cycle at run time
    StartupHook = Callable[[Any], Any]
CleanupHook = Callable[[], Any]
Probe = Callable[[], Any]
F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__okt_operator_hook__"
_PROBE = "__okt_probe__"
_LIMITS = "__okt_retry_limits__"


@dataclasses.dataclass(frozen=True)
class RetryLimits:
    """How long a start-up hook raising ``okt.TemporaryError`` is retried (Kopf's ``retries``, ``timeout``, ``backoff``
    of ``@kopf.on.startup``); None: no limit, or the default backoff.

    Attributes:
        retries: the calls of the hook at most, its first included, as Kopf counts them: ``retries=3`` is the first
            call and 2 retries (an int >= 1; 1: a temporary error stops the start as any other exception).
        timeout: the seconds, from the first call's start, past which no retry is called: a retry that would be called
            then is not waited for (a number > 0).
        backoff: the seconds between two calls when the ``okt.TemporaryError`` names no ``delay`` (a number > 0), in
            place of okt's backoff (0.25 s, doubled per failure, up to 5 minutes); capped at 6 hours
            (:data:`okt.delays.MAX_DELAY`) as every retry is, and ``timeout`` at :data:`okt.delays.LONGEST_WAIT`.

    Raises:
        TypeError: a value is no int (``retries``) or no number (``timeout``, ``backoff``), ``True`` and ``False``
            included.
        ValueError: a value is out of range, or not finite.
    """

    retries: int | None = None
    timeout: float | None = None
    backoff: float | None = None

    def __post_init__(self) -> None:
        if self.retries is not None:
            if isinstance(self.retries, bool) or not isinstance(self.retries, int):
                raise TypeError(f"retries= is the calls of the hook at most, an int >= 1, got {self.retries!r}")
            if self.retries < 1:
                raise ValueError(
                    f"retries= is the calls of the hook at most, its first included: >= 1, got {self.retries}"
                )
        for option, value, what, longest in (
            ("timeout", self.timeout, "the seconds past which no retry is called", delays.LONGEST_WAIT),
            ("backoff", self.backoff, "the seconds between two calls", delays.MAX_DELAY),
        ):
            if value is None:
                continue
            if not delays.is_number(value):
                raise TypeError(f"{option}= is {what}, a number > 0, got {delays.said(value)}")
            if not delays.is_seconds(value):
                raise ValueError(f"{option}= is {what}, a finite number > 0, got {delays.said(value)}")
            # An int past a float's range is a long wait, not an OverflowError; a pause longer than a thread can
            # wait ended the start on one.
            object.__setattr__(self, option, delays.capped(value, longest))


@overload
def on_startup(fn: F, /) -> F: ...


@overload
def on_startup(
    *, retries: int | None = None, timeout: float | None = None, backoff: float | None = None
) -> Callable[[F], F]: ...


def on_startup(
    fn: F | None = None, /, *, retries: int | None = None, timeout: float | None = None, backoff: float | None = None
) -> F | Callable[[F], F]:
    """Run ``fn(client)`` once before the operator watches anything; again, after a delay, while it raises
    ``okt.TemporaryError`` (the error's ``delay``, or ``backoff`` seconds, or okt's backoff from 0.25 s to 5 minutes),
    up to ``retries`` calls in all and ``timeout`` seconds from the first (:class:`RetryLimits`; no limit without them).
    Bare (``@okt.on_startup``) or with its limits::

        @okt.on_startup(retries=5, timeout=120, backoff=2.0)
        def backend_up(client): ...

    Args:
        retries: the calls of the hook at most, its first included, as Kopf counts them: ``retries=3`` is the first
            call and 2 retries (an int >= 1).
        timeout: the seconds, from the first call's start, past which no retry is called: a retry that would be called
            then is not waited for (> 0). It bounds the retries, not a call: a running hook is never interrupted.
        backoff: the seconds between two calls when the ``okt.TemporaryError`` names no ``delay`` (> 0).

    A hook that reaches a limit stops the start as one raising any other exception does: an ``okt.ConfigurationError``
    names it, its calls, the seconds since its first and its last error (``okt run`` prints it and exits 1).

    ``fn`` may be ``async def``: its coroutine runs to its end on the start's thread (:mod:`okt.coroutines`).

    Raises:
        TypeError: ``fn`` is an async generator (see :func:`on_cleanup`), or no function (a limit given by position); a
            limit is no number (see :class:`RetryLimits`).
        ValueError: a limit is out of range.
    """
    limits = RetryLimits(retries=retries, timeout=timeout, backoff=backoff)

    def declare(fn: F) -> F:
        check_callable(fn)
        setattr(fn, _MARK, "startup")
        setattr(fn, _LIMITS, limits)
        return fn

    if fn is None:
        return declare
    if not callable(fn):
        raise TypeError(
            f"@okt.on_startup takes its limits by name, @okt.on_startup(retries=5, timeout=120, backoff=2.0), got "
            f"{fn!r}"
        )
    return declare(fn)


def retry_limits_of(hook: StartupHook) -> RetryLimits:
    """The limits of ``hook``'s retries: those of its ``@okt.on_startup(...)``, none for a function not decorated
    (given to :class:`okt.Manager` as it is)."""
    limits = getattr(hook, _LIMITS, None)
    return limits if isinstance(limits, RetryLimits) else RetryLimits()


def on_cleanup(fn: F) -> F:
    """Run ``fn()`` once after the operator's last reconcile, on a graceful shutdown, within what is left of its grace
    period: one still running then is left running, and the hooks after it are not run (:mod:`okt.runtime.cleanup`);
    one that raises is logged, and the stop is not clean (``okt run`` exits 1, :attr:`okt.Manager.failed_cleanups`).

    ``fn`` may be ``async def``, as Kopf's ``@kopf.on.cleanup`` may: its coroutine runs to its end on the hook's own
    thread (:mod:`okt.coroutines`).

    Raises:
        TypeError: ``fn`` is an async generator (``async def`` with ``yield``): okt awaits a hook, it never iterates
            one, so its body would never run.
    """
    check_callable(fn)
    setattr(fn, _MARK, "cleanup")
    return fn


def check_callable(fn: Callable[..., Any]) -> None:
    """Refuse a hook okt could call and never run (TypeError): an async generator, which okt would never iterate.
    An ``async def`` hook is awaited (:func:`okt.coroutines.call`)."""
    coroutines.refuse_async_generator(fn, name_of(fn))


def probe(name: str) -> Callable[[F], F]:
    """Add ``fn()``'s value, under ``name``, to the JSON answer of ``/healthz`` (``Accept: application/json``)::

        @okt.probe("queue_depth")
        def queue_depth():
            return len(QUEUE)

    The value is JSON (a number, a string, a list, a mapping...), or what an ``async def`` probe's coroutine returns
    (run on the probe's thread: :mod:`okt.coroutines`). It never decides the probe's status: the kubelet's
    plain ``/healthz`` never calls it; one that raises, does not return within its timeout or is no JSON is named
    under ``failed``, by its exception's class only (see :mod:`okt.runtime.probes`). The value is answered to anyone
    who reaches the probe port, with no token: never a Secret's data, a credential or what a custom resource holds.

    Raises:
        TypeError: ``name`` is not a string (``@okt.probe`` without its name); the decorated value is not callable,
            is an async generator, or needs an argument.
        ValueError: ``name`` is empty, not printable or has spaces around it; another function of the same module
            declares a probe of that name.
    """
    check_probe_name(name)

    def declare(fn: F) -> F:
        check_probe(name, fn)
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        for value in vars(module).values() if module is not None else ():
            if getattr(value, _PROBE, None) == name and name_of(value) != name_of(fn):
                raise ValueError(
                    f"the probe {name!r} of {name_of(fn)} is declared already, by {name_of(value)}: give each probe "
                    "a name of its own"
                )
        setattr(fn, _PROBE, name)
        return fn

    return declare


def check_probe_name(name: object) -> None:
    """Refuse a probe name that is no non-empty, printable string without spaces around it."""
    if not isinstance(name, str):
        raise TypeError(
            f"a probe is declared with its name, @okt.probe('name'), got {type(name).__name__} "
            f"{name_of(name) if callable(name) else ''}".rstrip()
        )
    if not name or not name.isprintable() or name.strip() != name:
        raise ValueError(f"a probe's name is a non-empty printable string without spaces around it, got {name!r}")


def check_probe(name: str, fn: object) -> None:
    """Refuse what okt cannot call as the probe ``name``: not callable, an async generator, needing an argument."""
    if not callable(fn):
        raise TypeError(f"the probe {name!r} is a function of no arguments, got {type(fn).__name__}")
    check_callable(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without one: called as it is
        return
    needed = [
        parameter.name
        for parameter in signature.parameters.values()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if needed:
        raise TypeError(
            f"the probe {name!r} ({name_of(fn)}) needs arguments ({', '.join(needed)}), but okt calls a probe with none"
        )


def probes_of(module: types.ModuleType) -> dict[str, Probe]:
    """The probes a module defines or imports, by name, in definition order.

    Raises:
        okt.errors.ConfigurationError: two functions of the module declare a probe of the same name (one imported
            from another module: the decorator refuses two of the same module).
    """
    found: dict[str, Probe] = {}
    for value in vars(module).values():
        name = getattr(value, _PROBE, None) if callable(value) else None
        if name is None or found.get(name) is value:
            continue
        if name in found:
            raise errors.ConfigurationError(
                f"{module.__name__} has two probes named {name!r}: {name_of(found[name])} and {name_of(value)}"
            )
        found[name] = value
    return found


def collect(module: types.ModuleType) -> tuple[list[StartupHook], list[CleanupHook]]:
    """The start-up and clean-up hooks a module defines, in definition order."""
    startups: list[StartupHook] = []
    cleanups: list[CleanupHook] = []
    for value in vars(module).values():
        mark = getattr(value, _MARK, None) if callable(value) else None
        if mark == "startup":
            startups.append(value)
        elif mark == "cleanup":
            cleanups.append(value)
    return startups, cleanups


def decorator_of(value: object) -> str | None:
    """The operator-wide decorator ``value`` carries (``"@okt.on_startup"``, ``"@okt.on_cleanup"``, ``"@okt.probe"``),
    if any: okt looks for those among a module's functions only, so one on a method is one okt never calls."""
    mark = getattr(value, _MARK, None)
    if mark is not None:
        return f"@okt.on_{mark}"
    return "@okt.probe" if getattr(value, _PROBE, None) is not None else None


def name_of(hook: Callable[..., Any]) -> str:
    return str(getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or repr(hook))
