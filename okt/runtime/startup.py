"""The operator's start-up hooks (``@okt.on_startup``), run before the first watch, and retried when they ask to be.

Why this exists: a start-up hook often waits on something outside the operator — a backend that is not up yet, a
Secret another system provisions, a dependency's CRD. Kopf calls its start-up handlers again when they raise
``kopf.TemporaryError``; okt does the same for ``okt.TemporaryError``, so that an operator started beside its backend
waits for it instead of exiting and being restarted by its pod's back-off — and, as Kopf's ``retries=`` and
``timeout=``, stops waiting at the limits the hook declares (:class:`okt.hooks.RetryLimits`).

Guarantees: the hooks run one after the other, in their order, each with the API client. A hook that raises
``okt.TemporaryError`` is called again after the error's ``delay``, or, without one, after its ``backoff=`` seconds,
or the backoff of its consecutive failures (:class:`okt.runtime.backoff.Backoff`: 0.25 s, doubled per failure, up to 5
minutes), with one warning line each time naming the hook, its error and the delay; the hooks before it are not run
again. It is not called again once it was called ``retries=`` times in all, nor when the retry would be called at or
past ``timeout=`` seconds from its first call's start (Kopf's look-ahead: no wait for a call that would not be made):
the start stops then with an ``okt.ConfigurationError`` naming the hook, its calls, the seconds since its first call and
its last error, that error as its cause. Any other exception (an ``okt.PermanentError`` included) stops the start with
an ``okt.ConfigurationError`` naming the hook and saying the exception as okt logs one (a pydantic ``ValidationError``
by its fields, never the values it was given), the exception as its cause. A stop asked while a retry waits (SIGTERM)
ends the wait at once, and one asked while a hook runs is seen as soon as it returns: no hook is called any more, the
one retried included.

Caveats: without ``retries=`` or ``timeout=`` the retries have no limit — a hook that raises ``okt.TemporaryError``
for ever holds the start for ever, the operator not ready (``/readyz`` says which hook it waits for). ``timeout=``
bounds the retries, not a call: a hook that is running is not interrupted, by its timeout nor by a stop (Python cannot
interrupt it), and the manager's shutdown waits for it to return up to its grace period, and then leaves it running
(:class:`okt.Manager`: named in ``left_running``, its writes through okt's client refused, no clean-up hook run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import structlog

from okt import coroutines, errors, hooks, secret_values
from okt.kube import client as kube_client
from okt.runtime import backoff as backoff_mod

LEFT_RUNNING = "the shutdown's grace period is over: this start-up hook was left running"
"""Why the manager's fence of the start-up hooks refuses the writes of a hook left running."""

_log = structlog.get_logger("okt.manager")


def run(
    startups: Sequence[hooks.StartupHook],
    client: kube_client.Client,
    *,
    stopping: threading.Event,
    backoff: backoff_mod.Backoff,
    retrying: Callable[[str | None], None] = lambda _: None,
    calling: Callable[[str], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Run ``startups`` with ``client``, each until it returns; False when ``stopping`` was set before every hook had
    returned (while a retry waited, or while a hook ran: no later call is made).

    Args:
        stopping: set to stop: a retry's wait ends at once, and no hook is called any more.
        backoff: the delays of a hook's retries when its ``okt.TemporaryError`` names none, and its
            ``@okt.on_startup`` no ``backoff=``.
        retrying: told what the start waits for while a hook's retry waits (``/readyz``'s reason: the hook and the
            delay, never the error's text), and None once the hook returned.
        calling: told the name of each hook just before each of its calls (what a shutdown that leaves it running
            names).
        clock: the seconds a hook's ``timeout=`` is measured on.

    Raises:
        okt.errors.ConfigurationError: a hook raised anything but an ``okt.TemporaryError`` (its cause), or raised one
            (its cause) once it reached its ``retries=`` or ``timeout=``.
    """
    for hook in startups:
        name = hooks.name_of(hook)
        limits = hooks.retry_limits_of(hook)
        failures = 0
        first_call = clock()
        while True:
            if stopping.is_set():  # asked while the hook before ran, or while this one's last call ran
                return False
            calling(name)
            # Each call a block of its own (:mod:`okt.secret_values`): the values of the Secrets it reads are left out
            # of what is said of its error, in the log and in the ConfigurationError that stops the start.
            with secret_values.held():
                try:
                    coroutines.call(hook, client)
                except errors.TemporaryError as exc:
                    failures += 1
                    if exc.delay is not None:
                        delay = exc.delay
                    elif limits.backoff is not None:
                        delay = limits.backoff
                    else:
                        delay = backoff.delay(failures)
                    _refuse_past_limits(name, limits, failures, clock() - first_call, delay, exc)
                    _log.warning(
                        "start-up hook failed, retried",
                        hook=name,
                        error=errors.said(exc),
                        retry_in=round(delay, 3),
                        attempt=failures,
                    )
                    retrying(f"the start-up hook {name} failed ({type(exc).__name__}), retried in {delay:g} s")
                    if stopping.wait(delay):
                        return False
                    continue
                except Exception as exc:
                    # A pydantic ValidationError by its fields: its text repeats the values it was given (a Secret's);
                    # and the values of the Secrets the call read are left out of it (the block above).
                    raise errors.ConfigurationError(f"the start-up hook {name} failed: {errors.said(exc)}") from exc
            break
        retrying(None)
    return True


def _refuse_past_limits(
    name: str, limits: hooks.RetryLimits, failures: int, elapsed: float, delay: float, exc: errors.TemporaryError
) -> None:
    """Stop the start (``okt.errors.ConfigurationError``, ``exc`` its cause) when the hook ``name``, which failed
    ``failures`` times ``elapsed`` seconds after its first call's start, may not be called again in ``delay`` s."""
    if limits.retries is not None and failures >= limits.retries:
        reached = f"retries={limits.retries} allows no more calls"
    elif limits.timeout is not None and elapsed + delay >= limits.timeout:
        reached = f"a retry in {delay:g} s would pass its timeout={limits.timeout:g} s"
    else:
        return
    calls = "once" if failures == 1 else f"{failures} times"
    raise errors.ConfigurationError(
        f"the start-up hook {name} failed {calls} in {elapsed:.1f} s, and {reached}: {errors.said(exc)}"
    ) from exc
