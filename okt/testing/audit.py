"""Who sent which request, and when, as the kube-apiserver's audit log tells it.

Why this exists: an operator's own counters (:attr:`okt.kube.client.Client.stats`) only see what goes through its
client. The API server sees every request, attributes it to the authenticated user and stamps its times; with
``ControlPlane(audit_log=True)`` it writes them as JSON lines. Give each process under test a token user of its own
(:meth:`okt.testing.ControlPlane.kubeconfig_for`) and this reader answers "how many writes did *it* send in that
window" or "did two replicas ever write at the same time" — for any operator, written with okt or not.

Example::

    plane = ControlPlane(audit_log=True, users=[operator_user])
    ...
    log = AuditLog(plane.audit_log_path, [operator_user.name])
    log.settle()  # everything received until now is read
    assert log.counts(operator_user.name, start=restarted_at).writes == 0

Guarantees:

* a request is counted once, however many stages were logged for it (``RequestReceived``, ``ResponseStarted`` for
  watches, ``ResponseComplete``): events are merged by ``auditID``;
* a write sent with ``dryRun=All`` (its URI says so) stores nothing: it is counted as a ``dry-run``, not a write, as
  an access review is counted as a ``review``;
* :attr:`Request.received` is ``requestReceivedTimestamp``, :attr:`Request.completed` the last stage's time, and
  :attr:`Request.code` the last status code logged (0 while a watch is still open);
* the file is read incrementally from an offset (:meth:`AuditLog.from_end` starts at its current end); a partial last
  line waits for the next read, a partial first line (an offset taken mid-batch) is skipped; only the users named up
  front are kept, so memory follows their requests, not the controller manager's.

Caveat: the API server writes the log in batches (about once a second) and falls behind under a burst: a request
shows up here a while after it was received. :meth:`AuditLog.settle` waits for that before counting.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
import os
import pathlib
import re
import threading
import time
import urllib.parse
from collections.abc import Iterable
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
REVIEWS = frozenset(
    {
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
        "localsubjectaccessreviews",
        "tokenreviews",
    }
)
"""Resources a ``create`` only asks a question of (the API server answers and stores nothing): counted as reviews,
not writes — an operator checking its permissions at start-up writes nothing."""
FLUSH_LAG = 2.0
"""Seconds the API server may take to write a request it received (its batches are a second apart)."""
SETTLE_TIMEOUT = 180.0
_STAGE_TIME = re.compile(rb'"stageTimestamp":\s*"([^"]+)"')


@dataclasses.dataclass(frozen=True)
class Request:
    """One API request as the audit log saw it (the stages of one ``auditID`` merged)."""

    user: str
    verb: str
    resource: str
    """The plural, with the subresource after a slash (``memcacheds/status``)."""
    namespace: str
    name: str
    code: int
    received: float
    completed: float
    dry_run: bool = False
    """Sent with ``dryRun=All``: the API server validated it and stored nothing."""

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS and not self.is_review and not self.dry_run

    @property
    def is_review(self) -> bool:
        """A question to the API server (an access review), which stores nothing."""
        return self.resource in REVIEWS

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300


@dataclasses.dataclass(frozen=True)
class Counts:
    """The requests of one user in one time window, by verb."""

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
        verbs: collections.Counter[str] = collections.Counter()
        writes: collections.Counter[str] = collections.Counter()
        failed = 0
        for request in requests:
            verbs["review" if request.is_review else "dry-run" if request.dry_run else request.verb] += 1
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


def parse_time(value: object) -> float | None:
    """An RFC 3339 timestamp (``...Z`` or an offset, any sub-second precision) as seconds since the epoch, or None."""
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:
        # The fraction is the run of digits after the dot; what follows it (``+02:00``) is the offset, kept as is.
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits) :]}"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


class AuditLog:
    """The requests of a fixed set of users, read incrementally from an audit log file.

    Args:
        path: the audit log (``ControlPlane.audit_log_path``).
        users: the user names whose requests are kept.
        offset: the byte to start reading at (0: the whole file).
    """

    def __init__(self, path: pathlib.Path, users: Iterable[str], *, offset: int = 0) -> None:
        self.path = path
        self.users = frozenset(users)
        self._markers = tuple(f'"{user}"'.encode() for user in self.users)
        self._offset = offset
        self._partial = b""
        self._by_id: dict[str, Request] = {}
        self._order: list[str] = []
        self._lock = threading.Lock()
        self.written_up_to = 0.0
        """The stage time of the last event read (anyone's): the log holds everything received before it."""

    @classmethod
    def from_end(cls, path: pathlib.Path, users: Iterable[str]) -> AuditLog:
        """A reader of what is appended from now on (earlier requests are not its concern)."""
        try:
            offset = path.stat().st_size
        except OSError:
            offset = 0
        return cls(path, users, offset=offset)

    def refresh(self) -> None:
        """Read what the API server appended since the last call.

        Raises:
            RuntimeError: the file shrank (rotated): counts would be wrong.
        """
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
            lines = (self._partial + chunk).split(b"\n")
            self._partial = lines.pop()
            for line in lines:
                if line and any(marker in line for marker in self._markers):
                    self._ingest(line)
            stamp = _STAGE_TIME.search(lines[-1]) if lines else None
            moment = parse_time(stamp.group(1).decode()) if stamp is not None else None
            if moment is not None:
                self.written_up_to = max(self.written_up_to, moment)

    def _ingest(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return  # the tail of a line cut by the starting offset
        user = str((event.get("user") or {}).get("username") or "")
        if user not in self.users:
            return
        audit_id = str(event.get("auditID") or "")
        code = int((event.get("responseStatus") or {}).get("code") or 0)
        stage_time = parse_time(event.get("stageTimestamp"))
        known = self._by_id.get(audit_id)
        if known is not None:
            self._by_id[audit_id] = dataclasses.replace(
                known, code=code or known.code, completed=stage_time or known.completed
            )
            return
        ref = event.get("objectRef") or {}
        resource = str(ref.get("resource") or str(event.get("requestURI", "?")).split("?")[0])
        if ref.get("subresource"):
            resource = f"{resource}/{ref['subresource']}"
        received = parse_time(event.get("requestReceivedTimestamp")) or stage_time or 0.0
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(str(event.get("requestURI") or "")).query)
        self._by_id[audit_id] = Request(
            user=user,
            verb=str(event.get("verb") or ""),
            resource=resource,
            namespace=str(ref.get("namespace") or ""),
            name=str(ref.get("name") or ""),
            code=code,
            received=received,
            completed=stage_time or received,
            dry_run="All" in query.get("dryRun", ()),
        )
        self._order.append(audit_id)

    def requests(self, user: str | None = None, start: float = 0.0, end: float = float("inf")) -> list[Request]:
        """The requests of ``user`` (every kept user's when None) received in ``[start, end]``, in the order the log
        has them (call :meth:`refresh` or :meth:`settle` first).

        Raises:
            ValueError: ``user`` is not one of :attr:`users`: its requests were never kept, and none would read as
                "it sent nothing".
        """
        if user is not None and user not in self.users:
            raise ValueError(f"{user!r} is not among the users this reader keeps ({', '.join(sorted(self.users))})")
        with self._lock:
            found = [self._by_id[audit_id] for audit_id in self._order]
        return [r for r in found if (user is None or r.user == user) and start <= r.received <= end]

    def counts(self, user: str, start: float = 0.0, end: float = float("inf")) -> Counts:
        return Counts.of(self.requests(user, start, end))

    def last_request_at(self, user: str, start: float = 0.0) -> float | None:
        times = [r.received for r in self.requests(user, start)]
        return max(times) if times else None

    def settle(self, until: float | None = None, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait until everything received before ``until`` (default: now) has been written, then read it.

        The wait lasts until the file holds an event staged after ``until`` (a control plane's own traffic never
        stops), at least :data:`FLUSH_LAG` and at most ``timeout`` seconds.

        Raises:
            RuntimeError: there is still no file at :attr:`path` (an API server without an audit log writes none):
                every count would be zero.
        """
        target = time.time() if until is None else until
        time.sleep(max(target + FLUSH_LAG - time.time(), 0.0))
        deadline = time.monotonic() + timeout
        self.refresh()
        while self.written_up_to < target and time.monotonic() < deadline:
            time.sleep(0.25)
            self.refresh()
        if not self.path.exists():
            raise RuntimeError(
                f"no audit log at {self.path} after {timeout:.1f}s: was the control plane started with audit_log=True?"
            )
