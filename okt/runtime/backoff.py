"""Per-key exponential backoff for reconciles that keep failing.

Why this exists: a ``retry`` outcome without an explicit delay must not hammer the API server, yet the first retry
should be fast (a 409 conflict usually clears in milliseconds). The work queue counts consecutive failures per key,
asks :meth:`Backoff.delay` how long to wait, and resets the count when a reconcile of that key succeeds.

Guarantees: the delay grows geometrically from ``base`` by ``factor`` per failure, never exceeds ``cap`` (jitter
included), never overflows for huge failure counts, and is a pure function of its arguments when ``rand`` is given.
Jitter spreads keys that failed together (e.g. after an API outage) by up to ``±jitter`` of the delay.
"""

from __future__ import annotations

import dataclasses
import math
import random

from okt import delays

_JITTER = random.Random()
"""okt's own source of jitter: drawing from the module-level generator would move the state of every other
user of it (a seeded simulation, a property-based test) from a background thread."""


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Exponential backoff with a cap and a proportional jitter.

    Attributes:
        base: the delay after the first failure, in seconds (> 0; capped at :data:`okt.delays.MAX_DELAY`).
        factor: the growth per further failure (>= 1).
        cap: the longest delay, in seconds (>= base; capped at :data:`okt.delays.MAX_DELAY`, 6 hours, as every
            retry is).
        jitter: the relative spread, in [0, 1): 0.1 means ±10 %.

    Raises:
        ValueError: a parameter is out of range.
    """

    base: float = 0.25
    factor: float = 2.0
    cap: float = 300.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        # Checked as every delay of okt is (okt.delays): an int past a float's range is finite, and a long delay
        # capped at MAX_DELAY, where math.isfinite raised OverflowError out of the check. A factor is no number of
        # seconds, but the same finite real number.
        if not delays.is_seconds(self.base):
            raise ValueError(f"base must be a finite number of seconds > 0, got {delays.said(self.base)}")
        if not (delays.is_seconds(self.factor) and self.factor >= 1):
            raise ValueError(f"factor must be a finite number >= 1, got {delays.said(self.factor)}")
        if not (delays.is_seconds(self.cap) and self.cap >= self.base):
            raise ValueError(f"cap must be a finite number of seconds >= base, got {delays.said(self.cap)}")
        object.__setattr__(self, "base", delays.capped(self.base))
        object.__setattr__(self, "cap", delays.capped(self.cap))
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {self.jitter!r}")

    def delay(self, failures: int, rand: float | None = None) -> float:
        """The delay before the next attempt after ``failures`` consecutive failures.

        Args:
            failures: consecutive failures so far, >= 1.
            rand: a number in [0, 1] that places the jitter (0.5 means none); drawn at random when ``None``.

        Raises:
            ValueError: ``failures`` < 1 or ``rand`` outside [0, 1].
        """
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures!r}")
        if rand is None:
            rand = _JITTER.random()
        elif not 0 <= rand <= 1:
            raise ValueError(f"rand must be in [0, 1], got {rand!r}")
        steps = failures - 1
        # Compare exponents, not powers: factor ** steps overflows a float long before failures gets unusual.
        if self.factor > 1 and steps >= math.log(self.cap / self.base, self.factor):
            raw = self.cap
        else:
            raw = self.base * self.factor**steps
        return min(self.cap, raw * (1 + self.jitter * (2 * rand - 1)))
