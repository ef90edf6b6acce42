"""Who wrote, and when, as the kube-apiserver's audit log tells it: "never two writers at once".

Why this exists: the failover scenario must not take the replicas' word for who leads. The API server attributes
every request to the authenticated user (one token user per replica) and stamps its times;
:class:`okt.testing.AuditLog` reads them, and these judgements compare the users' write windows.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Sequence

from okt.testing import audit
from tests.reliability import checks


@dataclasses.dataclass(frozen=True)
class WriteWindow:
    """From the first to the last successful write of one user."""

    user: str
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
            times[request.user].append(request.received)
            times[request.user].append(request.completed)
    return {user: WriteWindow(user, min(moments), max(moments), len(moments) // 2) for user, moments in times.items()}


def single_writer(requests: Sequence[audit.Request], users: Sequence[str]) -> checks.Check:
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


def no_writes(requests: Iterable[audit.Request], user: str, since: float, until: float, role: str) -> checks.Check:
    """``user`` wrote nothing (successfully) between ``since`` and ``until``."""
    problems = [
        f"{role} {user}: {r.verb} {r.resource}/{r.name} at {r.received:.3f}"
        for r in requests
        if r.user == user and r.is_write and r.succeeded and since <= r.received <= until
    ]
    return checks.Check(f"the {role} does not write", tuple(problems))
