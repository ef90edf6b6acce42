"""Request counts per user from the kube-apiserver's audit log: one instrument for every contender.

Why this exists: each contender could count its own requests (okt's client does), but Kopf and the raw floor count
differently or not at all, and a framework's own bookkeeping requests are exactly what a comparison must not miss.
The API server sees every request, attributes it to an authenticated user, and writes it to the audit log
(``ControlPlane(audit_log=True)``, JSON lines at level Metadata). Each contender runs under its own token user, so
filtering the log by user name attributes every request exactly.

Guarantees:

* a request is counted once, whatever the number of stages logged for it (``RequestReceived``, ``ResponseStarted``
  for watches, ``ResponseComplete``): events are merged by ``auditID``;
* its time is ``requestReceivedTimestamp`` (wall clock, same machine as the harness), its status code the last one
  logged (0 while a watch is still open);
* the log is read incrementally (a partial last line waits for the next read); only the users declared up front are
  kept, so memory stays proportional to the contenders' requests, not to the controller-manager's.

Caveat: the API server writes the log in batches (``--audit-log-batch-max-wait=1s``): a request is visible here up
to :data:`FLUSH_LAG` seconds after it was received; :meth:`AuditLog.settle` waits that long before counting.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
READ_VERBS = frozenset({"get", "list", "watch"})
FLUSH_LAG = 2.0
SETTLE_TIMEOUT = 180.0
_STAGE_TIME = re.compile(rb'"stageTimestamp":"([^"]+)"')


@dataclasses.dataclass(frozen=True)
class Request:
    """One API request as the audit log saw it."""

    user: str
    verb: str
    resource: str
    namespace: str
    at: float
    code: int = 0

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


@dataclasses.dataclass(frozen=True)
class Counts:
    """Requests of one user in one time window."""

    by_verb: dict[str, int]
    writes_by_resource: dict[str, int]
    failed: int

    @property
    def writes(self) -> int:
        return sum(n for verb, n in self.by_verb.items() if verb in WRITE_VERBS)

    @property
    def reads(self) -> int:
        return sum(n for verb, n in self.by_verb.items() if verb not in WRITE_VERBS)

    @classmethod
    def of(cls, requests: Iterable[Request]) -> Counts:
        verbs: Counter[str] = Counter()
        writes: Counter[str] = Counter()
        failed = 0
        for request in requests:
            verbs[request.verb] += 1
            if request.is_write:
                writes[f"{request.verb} {request.resource}"] += 1
            if request.code >= 400:
                failed += 1
        return cls(dict(sorted(verbs.items())), dict(sorted(writes.items())), failed)

    def to_json(self) -> dict[str, Any]:
        return {
            "writes": self.writes,
            "reads": self.reads,
            "by_verb": self.by_verb,
            "writes_by_resource": self.writes_by_resource,
            "failed": self.failed,
        }


def parse_time(value: str) -> float:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class AuditLog:
    """The requests of a fixed set of users, read incrementally from an audit log file."""

    def __init__(self, path: pathlib.Path, users: Iterable[str]) -> None:
        self.path = path
        self.users = frozenset(users)
        self._markers = tuple(f'"username":"{user}"'.encode() for user in self.users)
        self._offset = 0
        self._partial = b""
        self._by_id: dict[str, Request] = {}
        self._by_user: dict[str, list[str]] = {user: [] for user in self.users}
        self._lock = threading.Lock()
        self.written_up_to = 0.0
        """The stage time of the last event read from the file (any user): the log holds everything before it."""

    def refresh(self) -> None:
        """Read what the API server appended since the last call."""
        with self._lock:
            try:
                with self.path.open("rb") as handle:
                    if os.fstat(handle.fileno()).st_size < self._offset:
                        raise RuntimeError(f"{self.path} shrank under the reader (rotated?): counts would be wrong")
                    handle.seek(self._offset)
                    chunk = handle.read()
            except FileNotFoundError:
                return
            self._offset += len(chunk)
            data = self._partial + chunk
            lines = data.split(b"\n")
            self._partial = lines.pop()
            for line in lines:
                if line and any(marker in line for marker in self._markers):
                    self._ingest(json.loads(line))
            stamp = _STAGE_TIME.search(lines[-1]) if lines else None
            if stamp is not None:
                self.written_up_to = max(self.written_up_to, parse_time(stamp.group(1).decode()))

    def _ingest(self, event: dict[str, Any]) -> None:
        user = str((event.get("user") or {}).get("username", ""))
        if user not in self.users:
            return
        audit_id = str(event.get("auditID", ""))
        code = int((event.get("responseStatus") or {}).get("code") or 0)
        known = self._by_id.get(audit_id)
        if known is not None:
            if code:
                self._by_id[audit_id] = dataclasses.replace(known, code=code)
            return
        ref = event.get("objectRef") or {}
        resource = str(ref.get("resource") or event.get("requestURI", "?").split("?")[0])
        if ref.get("subresource"):
            resource = f"{resource}/{ref['subresource']}"
        self._by_id[audit_id] = Request(
            user=user,
            verb=str(event.get("verb", "")),
            resource=resource,
            namespace=str(ref.get("namespace") or ""),
            at=parse_time(str(event["requestReceivedTimestamp"])),
            code=code,
        )
        self._by_user[user].append(audit_id)

    def requests(self, user: str, start: float = 0.0, end: float = float("inf")) -> list[Request]:
        """The requests of ``user`` received in ``[start, end]`` (call :meth:`refresh` or :meth:`settle` first)."""
        with self._lock:
            found = (self._by_id[audit_id] for audit_id in self._by_user.get(user, ()))
            return [r for r in found if start <= r.at <= end]

    def counts(self, user: str, start: float = 0.0, end: float = float("inf")) -> Counts:
        return Counts.of(self.requests(user, start, end))

    def last_request_at(self, user: str, start: float = 0.0) -> float | None:
        times = [r.at for r in self.requests(user, start)]
        return max(times) if times else None

    def settle(self, until: float | None = None, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait until everything received before ``until`` (default: now) has been written, then read it.

        The API server writes its audit log in batches and falls behind under a burst (thousands of deletions): the
        wait lasts until the file holds an event staged after ``until`` (the control plane's own traffic never
        stops), at least :data:`FLUSH_LAG` and at most ``timeout`` seconds.
        """
        target = time.time() if until is None else until
        time.sleep(max(target + FLUSH_LAG - time.time(), 0.0))
        deadline = time.monotonic() + timeout
        self.refresh()
        while self.written_up_to < target and time.monotonic() < deadline:
            time.sleep(0.25)
            self.refresh()
