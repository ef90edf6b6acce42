"""Polling helpers for tests against a real control plane: wait for a condition instead of sleeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited condition did not hold in time; the message says what was awaited, and the exception the predicate
    raised when its last call raised one (a falsy value it returned is not repeated)."""


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str | Callable[[], str] = "condition",
) -> T:
    """Call ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds pass (WaitTimeout).

    Exceptions raised by the predicate count as "not yet"; the one its last call raised is reported on timeout (none
    when that call returned: an object missing at first and there since is not reported as missing).
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as exc:
            last = exc
        else:
            if value:
                return value
            last = None
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            detail = f" (last error: {last!r})" if last is not None else ""
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for {what}{detail}")
        time.sleep(interval)
