"""What the logs say: the operator's own (crashes, reconciles of one object) and the API server's audit log (who wrote).

Crashes and retry loops show only in the operator's log, and who leads is the audit log's word, not the replicas';
like :mod:`~.checks`, each judgement is a pure function pinned on synthetic lines by a fast test.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from okt.testing import audit, process
from tests.reliability import checks

CRASH_EVENTS = frozenset({"reconcile raised", "informer error, relisting", "event handler failed"})
"""Log events okt writes when an exception escaped the code that should have handled it."""


def crashes(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Log records that show an exception okt did not handle: a Traceback, an ``exception`` field, a crash event."""
    found = []
    for record in records:
        raw = record.get("raw")
        event = str(record.get("event", ""))
        if isinstance(raw, str):
            if "Traceback" in raw:
                found.append(raw[:200])
        elif "exception" in record or event in CRASH_EVENTS or "Traceback" in json.dumps(record, default=str):
            found.append(f"{event} ({record.get('name') or record.get('kind') or ''}): {record.get('error', '')}"[:300])
    return found


def no_crash(
    records: Iterable[Mapping[str, Any]], exits: Mapping[str, int | None] | None = None, hung: Sequence[str] = ()
) -> checks.Check:
    """No unhandled exception in the log, no operator process that exited on its own with an error (``exits``:
    label -> exit status; None while running, negative when killed by the harness's signal, as expected), and none
    that ignored SIGTERM (``hung``)."""
    problems = crashes(records)
    problems += [
        f"{label} exited with status {code}" for label, code in sorted((exits or {}).items()) if (code or 0) > 0
    ]
    problems += [f"{label} ignored SIGTERM (killed after 30s)" for label in hung]
    return checks.Check("no crash", tuple(problems))


def crash_check(operators: Sequence[process.OperatorProcess]) -> checks.Check:
    """:func:`no_crash` over the logs, exit statuses and stops of ``operators``."""
    records = [record for operator in operators for record in operator.records()]
    exits = {o.name: o.exit_status for o in operators}
    return no_crash(records, exits, [o.name for o in operators if o.hung])


def count(records: Iterable[Mapping[str, Any]], event: str) -> int:
    """How many records are of ``event``."""
    return sum(1 for record in records if record.get("event") == event)


def reconciles(records: Iterable[Mapping[str, Any]], name: str, since: float, until: float) -> int:
    """How many reconciles of the object ``name`` ended between ``since`` and ``until`` (wall clock)."""
    ours = [r for r in records if r.get("event") == "reconciled" and r.get("name") == name]
    moments = [audit.parse_time(r.get("timestamp")) for r in ours]
    return sum(1 for moment in moments if moment is not None and since <= moment <= until)


def backoff_bounded(counts: Mapping[str, int], limit: int, window: float) -> checks.Check:
    """Each object in error was reconciled fewer than ``limit`` times in ``window`` seconds (a backoff, no loop)."""
    problems = [
        f"{n}: {c} reconciles in {window:.0f}s (limit {limit})" for n, c in sorted(counts.items()) if c >= limit
    ]
    if not counts:
        problems.append("no reconcile of an object in error was observed")
    return checks.Check(f"retries back off (< {limit} reconciles in {window:.0f}s)", tuple(problems))


# -- the audit log: who wrote, and when ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WriteWindow:
    """From the first to the last successful write of one user."""

    first: float
    last: float
    writes: int

    def overlaps(self, other: WriteWindow) -> bool:
        return self.first <= other.last and other.first <= self.last


def write_windows(requests: Iterable[audit.Request]) -> dict[str, WriteWindow]:
    """The write window of every user that wrote successfully (refused writes wrote nothing and do not count)."""
    times: dict[str, list[float]] = collections.defaultdict(list)
    for request in requests:
        if request.is_write and request.succeeded:
            times[request.user] += [request.received, request.completed]
    return {user: WriteWindow(min(moments), max(moments), len(moments) // 2) for user, moments in times.items()}


def single_writer(requests: Sequence[audit.Request], users: Sequence[str]) -> checks.Check:
    """Never two writers at once: the write windows of ``users`` do not overlap."""
    windows = write_windows(requests)
    problems = []
    for first, second in itertools.combinations(users, 2):
        a, b = windows.get(first), windows.get(second)
        if a is not None and b is not None and a.overlaps(b):
            problems.append(f"{first} wrote {a.first:.3f}..{a.last:.3f} and {second} wrote {b.first:.3f}..{b.last:.3f}")
    return checks.Check("never two writers at once", tuple(problems))


def no_writes(requests: Iterable[audit.Request], user: str, since: float, until: float, role: str) -> checks.Check:
    """``user`` wrote nothing (successfully) between ``since`` and ``until``."""
    problems = [
        f"{role} {user}: {r.verb} {r.resource}/{r.name} at {r.received:.3f}"
        for r in requests
        if r.user == user and r.is_write and r.succeeded and since <= r.received <= until
    ]
    return checks.Check(f"the {role} does not write", tuple(problems))
