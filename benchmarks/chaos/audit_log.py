"""Who wrote what, and when, as the kube-apiserver's audit log tells it: "never two writers at once".

Why this exists: the failover scenario must not take the replicas' word for who leads. The API server attributes
every request to the authenticated user (one token user per replica) and stamps its times; these judgements merge the
stages of each request and compare the users' write windows.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks.chaos import checks, operator_log

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclasses.dataclass(frozen=True)
class AuditRequest:
    """One API request as the kube-apiserver's audit log saw it (the stages of one ``auditID`` merged)."""

    user: str
    verb: str
    resource: str
    namespace: str
    name: str
    code: int
    received: float
    completed: float

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300


def read_audit(path: pathlib.Path, users: Iterable[str], offset: int = 0) -> tuple[list[AuditRequest], int]:
    """The requests of ``users`` in the audit log from byte ``offset`` on, and the offset after the last whole line.

    A partial last line (the server writes in batches) is left for the next read; a partial first line (an offset
    taken mid-batch) is skipped.
    """
    wanted = set(users)
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    merged: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for line in data[:end].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        user = str((event.get("user") or {}).get("username") or "")
        if user not in wanted:
            continue
        audit_id = str(event.get("auditID") or "")
        if audit_id not in merged:
            order.append(audit_id)
            merged[audit_id] = {}
        merged[audit_id].update({k: v for k, v in event.items() if v is not None})
    requests = []
    for audit_id in order:
        event = merged[audit_id]
        ref = event.get("objectRef") or {}
        received = operator_log.parse_time(event.get("requestReceivedTimestamp")) or 0.0
        requests.append(
            AuditRequest(
                user=str((event.get("user") or {}).get("username") or ""),
                verb=str(event.get("verb") or ""),
                resource=str(ref.get("resource") or ""),
                namespace=str(ref.get("namespace") or ""),
                name=str(ref.get("name") or ""),
                code=int((event.get("responseStatus") or {}).get("code") or 0),
                received=received,
                completed=operator_log.parse_time(event.get("stageTimestamp")) or received,
            )
        )
    return requests, offset + end


@dataclasses.dataclass(frozen=True)
class WriteWindow:
    """From the first to the last successful write of one user."""

    user: str
    first: float
    last: float
    writes: int

    def overlaps(self, other: WriteWindow) -> bool:
        return self.first <= other.last and other.first <= self.last


def write_windows(requests: Iterable[AuditRequest]) -> dict[str, WriteWindow]:
    """The write window of every user that wrote successfully (refused writes wrote nothing and do not count)."""
    times: dict[str, list[float]] = collections.defaultdict(list)
    for request in requests:
        if request.is_write and request.succeeded:
            times[request.user].append(request.received)
            times[request.user].append(request.completed)
    return {user: WriteWindow(user, min(moments), max(moments), len(moments) // 2) for user, moments in times.items()}


def single_writer(requests: Sequence[AuditRequest], users: Sequence[str]) -> checks.Check:
    """Never two writers at once: the write windows of ``users`` do not overlap."""
    windows = write_windows(requests)
    problems = []
    for i, first in enumerate(users):
        for second in users[i + 1 :]:
            a, b = windows.get(first), windows.get(second)
            if a is not None and b is not None and a.overlaps(b):
                problems.append(
                    f"{first} wrote {a.first:.3f}..{a.last:.3f} and {second} wrote {b.first:.3f}..{b.last:.3f}"
                )
    return checks.Check("never two writers at once", tuple(problems))


def no_writes(requests: Iterable[AuditRequest], user: str, since: float, until: float, role: str) -> checks.Check:
    """``user`` wrote nothing (successfully) between ``since`` and ``until``."""
    problems = [
        f"{role} {user}: {r.verb} {r.resource}/{r.name} at {r.received:.3f}"
        for r in requests
        if r.user == user and r.is_write and r.succeeded and since <= r.received <= until
    ]
    return checks.Check(f"the {role} does not write", tuple(problems))
