"""Every place an operator's author gives seconds takes an int past a float's range as the longest delay, as
``okt.requeue_after(10 ** 400)`` does, and names a negative one readably: one check (:mod:`okt.delays`), not one per
place."""

from __future__ import annotations

import datetime
import enum
import fractions
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt import delays, hooks
from okt.reconciler import daemons, timers

HUGE = 10**400
"""An int no float holds: ``2 ** ctx.attempt`` after some thousand attempts. ``float(HUGE)`` raises OverflowError."""


class Phase(enum.StrEnum):
    Pending = "Pending"
    Running = "Running"


def _timer(**options: Any) -> timers.Options:
    def tick(self: object, ctx: okt.Context) -> None: ...

    marked = okt.every(**options)(tick)
    found = getattr(marked, timers.MARK)
    assert isinstance(found, timers.Options)
    return found


def _daemon(**options: Any) -> daemons.Options:
    def watch(self: object, ctx: okt.DaemonContext) -> None: ...

    marked = okt.daemon(**options)(watch)
    found = getattr(marked, daemons.MARK)
    assert isinstance(found, daemons.Options)
    return found


def _lifecycle(requeue_after: object) -> okt.Lifecycle[Phase]:
    return okt.Lifecycle(Phase, initial=Phase.Pending, transitions=(), requeue_after=requeue_after)  # type: ignore[arg-type]


# Where the seconds are given -> what okt keeps of them, and the longest it keeps.
GIVEN: dict[str, tuple[Callable[[object], float | None], float]] = {
    "TemporaryError(delay=)": (lambda s: okt.TemporaryError("later", delay=s).delay, delays.MAX_DELAY),  # type: ignore[arg-type]
    "Lifecycle(requeue_after=)": (lambda s: _lifecycle(s).requeue_after, delays.MAX_DELAY),
    "every(seconds=)": (lambda s: _timer(seconds=s).interval, delays.LONGEST_WAIT),
    "every(seconds=, minutes=0.0)": (lambda s: _timer(seconds=s, minutes=0.0).interval, delays.LONGEST_WAIT),
    "every(timeout=)": (lambda s: _timer(seconds=10, timeout=s).timeout, delays.LONGEST_WAIT),
    "every(initial_delay=)": (lambda s: _timer(seconds=10, initial_delay=s).initial_delay, delays.LONGEST_WAIT),
    "every(idle=)": (lambda s: _timer(seconds=10, idle=s).idle, delays.LONGEST_WAIT),
    "daemon(backoff=)": (lambda s: _daemon(backoff=s, max_backoff=s).backoff, delays.MAX_DELAY),
    "daemon(max_backoff=)": (lambda s: _daemon(max_backoff=s).max_backoff, delays.MAX_DELAY),
    "daemon(stop_timeout=)": (lambda s: _daemon(stop_timeout=s).stop_timeout, delays.LONGEST_WAIT),
    "daemon(cancel_after=)": (lambda s: _daemon(cancel_after=s).cancel_after, delays.LONGEST_WAIT),
    "on_startup(backoff=)": (lambda s: hooks.RetryLimits(backoff=s).backoff, delays.MAX_DELAY),  # type: ignore[arg-type]
    "on_startup(timeout=)": (lambda s: hooks.RetryLimits(timeout=s).timeout, delays.LONGEST_WAIT),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("where", GIVEN)
@pytest.mark.parametrize(
    "seconds", [HUGE, 2**5000, fractions.Fraction(HUGE), 1e20], ids=["10**400", "2**5000", "fraction", "1e20"]
)
def test_seconds_past_a_float_s_range_are_the_longest_delay_wherever_given(where: str, seconds: object) -> None:
    """``float(10 ** 400)`` raised a bare ``OverflowError`` out of each check; ``1e20`` was taken, and then ended the
    thread that waited on it (a daemon's restart, a timer's call, ``OverflowError: timestamp out of range``)."""
    kept, longest = GIVEN[where]
    assert kept(seconds) == longest
    assert isinstance(kept(seconds), float)


@pytest.mark.parametrize("where", GIVEN)
def test_seconds_within_the_longest_delay_are_kept_as_given(where: str) -> None:
    kept, _ = GIVEN[where]
    assert kept(30) == 30.0


@pytest.mark.parametrize("where", GIVEN)
@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (-HUGE, "a negative int of about 401 digits"),
        (-(10**5000), "a negative int of about 5001 digits"),  # past what Python prints of an int
        (datetime.timedelta(seconds=30), "datetime.timedelta(seconds=30) (pass its .total_seconds())"),
    ],
    ids=["-10**400", "-10**5000", "timedelta"],
)
def test_seconds_that_are_none_are_refused_in_one_line_naming_them(where: str, seconds: object, said: str) -> None:
    kept, _ = GIVEN[where]
    with pytest.raises((ValueError, TypeError)) as refused:
        kept(seconds)
    assert f" {said}" in str(refused.value) or f"={said}" in str(refused.value)  # a daemon's names each option
    assert "\n" not in str(refused.value)


def test_a_reconciler_s_child_change_delay_past_a_float_s_range_is_taken() -> None:
    """Its check raised ``OverflowError`` where the class was defined (the controller caps it at 6 hours)."""

    class Patient(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Patient"
        child_change_delay = HUGE

    assert delays.capped(Patient.child_change_delay) == delays.MAX_DELAY


def test_a_negative_child_change_delay_past_what_python_prints_is_named_by_its_digits() -> None:
    with pytest.raises(TypeError, match=r"^Impatient\.child_change_delay = a negative int of about 5001 digits: "):

        class Impatient(okt.Reconciler):
            api_version = "example.com/v1"
            kind = "Impatient"
            child_change_delay = -(10**5000)


@pytest.mark.parametrize(
    ("value", "zero", "taken"),
    [
        (HUGE, False, True),
        (0, False, False),
        (0, True, True),
        (-HUGE, True, False),
        (math.inf, True, False),
        (math.nan, True, False),
        (True, True, False),
        ("30", True, False),
        (datetime.timedelta(seconds=1), True, False),
    ],
)
def test_is_seconds_takes_every_finite_real_number_within_its_bound(value: object, zero: bool, taken: bool) -> None:
    assert delays.is_seconds(value, zero=zero) is taken


def test_a_thread_can_wait_the_longest_wait() -> None:
    """A wait any longer raises ``OverflowError`` in the thread that waits: what a daemon given ``backoff=1e20``
    ended on at its first restart."""
    event, failed = threading.Event(), []

    def wait() -> None:
        try:
            event.wait(delays.LONGEST_WAIT)
        except OverflowError as exc:
            failed.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    event.set()
    waiter.join(5)
    assert not waiter.is_alive()
    assert failed == []
