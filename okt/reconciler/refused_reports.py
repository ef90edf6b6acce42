"""The reports the API server refused for what the object is, remembered so that they are not sent again.

Why this exists: what okt reports once (a permanent error such as ``InvalidSpec``, a give-up) is written to the
object's status. When the API server refuses that write for what the object holds (422 Invalid: a spec stored before
its CRD got a stricter schema has every write of the object refused, the status's too; or the object too large), the
report never lands and the reconcile is retried, and every reconcile of the unchanged object that follows (the retry,
a resync, a child's event) made the same report and sent the same write, to be refused the same way: one write per
retry, at most one per 5 minutes (the backoff's cap), for as long as the object stayed as it was. The Warning Event is
recorded once already (``EventRecorder.record(once=True)``); this memory does the same for the status write.

Guarantees: a report is not sent again while the object is the one it was refused for (its uid and resourceVersion)
and the report says the same (its reason and message, by their digest: no message is kept); an edit of the object, or
another report, is sent. One entry per object, replaced by its next refusal and dropped when a report lands or the
object is deleted (:meth:`RefusedReports.forget`); at most :data:`LIMIT` are kept, the oldest forgotten first (such an
object's report is sent once more). Safe across worker threads.

Caveat: the memory lives in the process. After a restart the first reconcile sends the report once more, and a CRD
made looser again (which changes nothing of the object) is noticed only once the object changes or the operator
restarts.
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading

from okt import errors

LIMIT = 4096
"""How many refused reports are kept (one per object, the oldest forgotten first): bounded whatever the churn."""


def digest(reason: str, message: str) -> str:
    """What a report is remembered by: the digest of its reason and message (a message any text, one an exception of
    the operator's code made of undecodable bytes included: escaped, never refused)."""
    said = json.dumps([reason, message], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(said.encode("ascii")).hexdigest()


class RefusedReports:
    """The last report refused of each object (see the module docstring)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._refused: collections.OrderedDict[str, tuple[str, str, errors.OktError]] = collections.OrderedDict()

    def remember(self, uid: str, resource_version: str, report: str, error: errors.OktError) -> None:
        """Remember that the report of digest ``report`` on the object ``uid`` at ``resource_version`` was refused
        with ``error``."""
        if not uid:
            return
        with self._lock:
            self._refused[uid] = (resource_version, report, error)
            self._refused.move_to_end(uid)
            while len(self._refused) > self._limit:
                self._refused.popitem(last=False)

    def recall(self, uid: str, resource_version: str, report: str) -> errors.OktError | None:
        """The error the same report on the same unchanged object was refused with; None when it was not."""
        with self._lock:
            found = self._refused.get(uid) if uid else None
        if found is None or found[:2] != (resource_version, report):
            return None
        return found[2]

    def forget(self, uid: str) -> None:
        """Drop what is remembered of the object ``uid`` (a report of it landed, or it was deleted)."""
        with self._lock:
            self._refused.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._refused)


REFUSED = RefusedReports()
