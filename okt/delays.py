"""Seconds given by an operator's author — a requeue or retry delay, a backoff, a timer's interval, a timeout —
checked, named and capped in one place.

Why this exists: such a number arrives in many places (``okt.requeue_after(s)``, ``okt.TemporaryError(delay=s)``,
a Lifecycle's ``requeue_after=``, ``@okt.every(...)``, ``@okt.daemon(backoff=...)``, ``@okt.on_startup(...)``, a
Reconciler's ``child_change_delay``) and each must take the same numbers and refuse the same others, with a message
the author can read where the call is. Python makes that harder than it looks:

* a bool is an int (``delay=True`` would be one second);
* an int past a float's range (``2 ** ctx.attempt`` after a thousand attempts, ``10 ** 400``) is finite, but
  :func:`math.isfinite` and ``float()`` raise ``OverflowError`` converting it: a bare error out of the check, reported
  as the hook's error, or a thread ended on it;
* a float too large for the platform's clock (``1e20``) ends a thread that waits on it (``OverflowError: timestamp out
  of range``);
* an int of more than 4300 digits cannot even be printed in the refusal.

Guarantees: :func:`is_seconds` takes every real number that is finite (an int of any size is), with its bound (> 0 or
>= 0), and nothing else (a bool, a string, a ``timedelta``, NaN, infinity); :func:`capped` turns what it took into a
float no longer than the bound given — :data:`MAX_DELAY` for a delay before something is tried again (as the Stepper
caps every requeue), :data:`LONGEST_WAIT` for a schedule or a time limit — so a huge int is a long delay, never an
error; :func:`said` names a refused value in one readable line.
"""

from __future__ import annotations

import datetime
import math
import numbers
import threading
from typing import TypeGuard

#: The longest requeue, retry, restart or backoff delay, in seconds (6 hours).
MAX_DELAY = 6 * 3600

LONGEST_WAIT = threading.TIMEOUT_MAX
"""The longest schedule or time limit, in seconds (a timer's interval, its ``initial_delay``, ``idle`` or
``timeout``; a daemon's ``stop_timeout``): the longest a thread can wait on this platform (about 292 years on Linux).
Longer is for ever to a process, and a thread given longer ends on ``OverflowError``."""


def is_number(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number (a bool is not one, whatever Python says: ``True`` would be one second)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_seconds(value: object, *, zero: bool = False) -> TypeGuard[float]:
    """Whether ``value`` is a finite number of seconds > 0 (>= 0 with ``zero``): a real number, not a bool, neither NaN
    nor infinite. An int past a float's range is finite (:func:`capped` makes it the longest delay)."""
    return is_number(value) and _finite(value) and (value >= 0 if zero else value > 0)


def _finite(seconds: float) -> bool:
    # math.isfinite converts to a float: an int past a float's range raises OverflowError there, and so does a
    # Fraction or a Decimal past it. All of them are finite.
    if isinstance(seconds, numbers.Integral):
        return True
    try:
        return math.isfinite(seconds)
    except OverflowError:
        return True


def capped(seconds: float, longest: float = MAX_DELAY) -> float:
    """``seconds`` (checked by :func:`is_seconds`) as a float no longer than ``longest``: an int no float holds is
    ``longest``, as ``10 ** 20`` is."""
    return float(min(seconds, longest))


def said(value: object) -> str:
    """``value`` as a refusal names it: its repr, but for an int too long to read (Python refuses to print one of
    more than 4300 digits) and a timedelta, which is said with what to pass instead."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        sign = "a negative" if value < 0 else "an"
        return f"{sign} int of about {math.floor(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, datetime.timedelta):
        return f"{value!r} (pass its .total_seconds())"
    return repr(value)
