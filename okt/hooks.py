"""Operator-wide start-up and clean-up hooks: ``@okt.on_startup`` and ``@okt.on_cleanup``.

Why this exists: some work belongs to the operator, not to one object — warm a client, check a dependency, register
with a service on the way in; flush or deregister on the way out (Kopf's ``@kopf.on.startup``/``@kopf.on.cleanup``).
Decorate module-level functions of the operator's file; ``okt run`` finds them there (as it finds the reconcilers),
and :class:`okt.Manager` takes them as ``on_startup``/``on_cleanup``.

Guarantees: start-up hooks run in definition order before the first watch, each with the API client; one that raises
``okt.TemporaryError`` is called again after the error's ``delay`` (or a backoff: :mod:`okt.runtime.startup`), the
operator not ready meanwhile; one that raises anything else stops the start with an ``okt.ConfigurationError`` naming
it, and nothing is watched. Clean-up hooks run after the
last reconcile finished (or the grace period ended), on a graceful shutdown; one that raises is logged and the others
still run. Both run on every replica, leader or not: they are about the process, not the objects.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from okt.kube import client as kube_client

    StartupHook = Callable[[kube_client.Client], Any]
else:  # okt.kube.client imports the okt package, which imports this module: no import cycle at run time
    StartupHook = Callable[[Any], Any]
CleanupHook = Callable[[], Any]
F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__okt_operator_hook__"


def on_startup(fn: F) -> F:
    """Run ``fn(client)`` once before the operator watches anything; again, after a delay, while it raises
    ``okt.TemporaryError`` (the error's ``delay``, or a backoff from 0.25 s to 5 minutes without one).

    Raises:
        TypeError: ``fn`` is ``async def`` (see :func:`on_cleanup`).
    """
    check_synchronous(fn)
    setattr(fn, _MARK, "startup")
    return fn


def on_cleanup(fn: F) -> F:
    """Run ``fn()`` once after the operator's last reconcile, on a graceful shutdown.

    Raises:
        TypeError: ``fn`` is ``async def``: okt calls its hooks and never awaits them, so its body would never run
            (Kopf's ``@kopf.on.startup`` takes coroutines; these do not).
    """
    check_synchronous(fn)
    setattr(fn, _MARK, "cleanup")
    return fn


def check_synchronous(fn: Callable[..., Any]) -> None:
    """Refuse an ``async def`` hook (TypeError): okt would call it and never await it."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"{name_of(fn)} is 'async def', but okt's operator hooks are synchronous: okt calls them and never awaits "
            "them. Write 'def' (run async code with asyncio.run() inside it)."
        )


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


def name_of(hook: Callable[..., Any]) -> str:
    return str(getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or repr(hook))
