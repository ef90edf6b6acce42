"""What the operator's own log says: unhandled exceptions, and how often one object was reconciled.

Why this exists: a crash (an exception okt did not handle) and a retry loop without backoff leave their traces only
in the operator's JSON log (``--log-format json``). These judgements read its records
(:meth:`okt.testing.OperatorProcess.records`) the way
:mod:`tests.reliability.checks` reads a snapshot, so that each one is pinned on synthetic lines by a fast test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from okt.testing import audit
from tests.reliability import checks

CRASH_EVENTS = frozenset({"reconcile raised", "informer error, relisting", "event handler failed"})
"""Log events okt writes when an exception escaped the code that should have handled it."""


def log_time(record: Mapping[str, Any]) -> float | None:
    """The wall-clock time of a log record (its ISO ``timestamp``), or None."""
    return audit.parse_time(record.get("timestamp"))


def crashes(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Log records that show an exception okt did not handle: a Traceback, an ``exception`` field, a crash event."""
    found = []
    for record in records:
        raw = record.get("raw")
        if isinstance(raw, str):
            if "Traceback" in raw:
                found.append(raw[:200])
            continue
        event = str(record.get("event", ""))
        if "exception" in record or event in CRASH_EVENTS or "Traceback" in json.dumps(record, default=str):
            found.append(f"{event} ({record.get('name') or record.get('kind') or ''}): {record.get('error', '')}"[:300])
    return found


def no_crash(records: Iterable[Mapping[str, Any]], exits: Mapping[str, int | None] | None = None) -> checks.Check:
    """No unhandled exception in the log, and no operator process that exited on its own with an error.

    ``exits`` maps a process label to its exit status (None: still running; a negative status: killed by the
    harness's signal, which is expected).
    """
    problems = crashes(records)
    for label, code in sorted((exits or {}).items()):
        if code is not None and code > 0:
            problems.append(f"{label} exited with status {code}")
    return checks.Check("no crash", tuple(problems))


def reconciles(records: Iterable[Mapping[str, Any]], name: str, since: float, until: float) -> int:
    """How many reconciles of the object ``name`` ended between ``since`` and ``until`` (wall clock)."""
    count = 0
    for record in records:
        if record.get("event") != "reconciled" or record.get("name") != name:
            continue
        moment = log_time(record)
        if moment is not None and since <= moment <= until:
            count += 1
    return count


def first_event(records: Iterable[Mapping[str, Any]], event: str) -> float | None:
    """The wall-clock time of the first record whose event is ``event``."""
    for record in records:
        if record.get("event") == event:
            return log_time(record)
    return None


def backoff_bounded(counts: Mapping[str, int], limit: int, window: float) -> checks.Check:
    """Each object in error was reconciled fewer than ``limit`` times in ``window`` seconds (a backoff, no loop)."""
    problems = [
        f"{name}: {count} reconciles in {window:.0f}s (limit {limit})"
        for name, count in sorted(counts.items())
        if count >= limit
    ]
    if not counts:
        problems.append("no reconcile of an object in error was observed")
    return checks.Check(f"retries back off (< {limit} reconciles in {window:.0f}s)", tuple(problems))
