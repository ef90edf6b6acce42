"""The objects whose ``on_deleted`` hook is still to be called, per key.

Why this exists: an operator that keeps per-object state outside Kubernetes (a metric series, a cache entry, a
connection) must drop it when the object goes, and a finalizer is a heavy way to learn it: it holds every deletion
until the operator answers. ``Reconciler.on_deleted(cr)`` is told of a deletion once the watch saw it, without
holding it. The controller notes each deletion here when its ``DELETED`` event arrives, and a worker calls the hook
the next time it takes the key, before any reconcile of that key.

Guarantees:

* **once per deleted object**: a deletion is kept by uid, and a second ``DELETED`` of the same uid (a relist telling
  what went while the watch was broken) notes nothing new;
* **in the order seen**: an object deleted and created again under the same name has its hook called before the new
  one is reconciled (the worker takes the key's deletions before it reconciles);
* **bounded retries**: a hook that raises is called again after the key's backoff, at most :data:`ATTEMPTS` times in
  all, then dropped; its deletion is never retried for ever;
* **an outage loses nothing**: a read of the API server that does not say whether the object is gone (no answer, a
  5xx, a 429: :data:`UNANSWERED`) calls no hook and spends none of its attempts; it is made again after a backoff of
  its own, as long as the outage lasts (spent, an outage of two minutes dropped every deletion seen before it);
* **only the operator's objects**: a ``DELETED`` whose object, as the event tells it, is out of the operator's
  selection (the label selector, ``annotation_selector``, ``when``) notes nothing: whatever becomes of an object once
  okt's own filters refuse it is no longer the operator's — as Kopf calls its deletion handlers only for the objects
  it watches (the informer tells no deletion of an object its filter kept out of the store). A label-selected watch
  says ``DELETED`` of an object that leaves the selection with its state from *before* it left (still selected):
  that one is noted, and the worker's read of the API finds it still there.

Caveats: deletions are kept in memory only. One seen by a replica that stands by, or by a process that stops before
the hook ran, is not told again; nor is an object deleted while no operator watched, nor one deleted after it left the
selection (relabelled, its annotation removed, refused by ``when``) — but for an object relabelled out of a label
selector and deleted before a worker read it: the API server's events cannot tell it from one deleted while
selected, and it is told. So is one relabelled out while the watch was broken and deleted before the relist that
follows (which reads what it lacks by name: one still there is told as a leave, with its state out of the selection).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

from okt import errors
from okt.runtime import backoff as backoff_mod

ATTEMPTS = 10
"""How many times a raising ``on_deleted`` is called for one object before its deletion is dropped (with the
controller's default backoff, about two minutes of retries)."""

UNANSWERED = (errors.Unavailable, errors.ServerError, errors.TooManyRequests)
"""The errors of a read that says nothing of the object: the API server down, failing (an etcd outage) or
overloaded. The hook is not called, so no attempt of it is spent (see :meth:`Deletion.unanswered_once`)."""

KeyT = TypeVar("KeyT", bound=Hashable)


@dataclasses.dataclass(frozen=True)
class Deletion:
    """One deleted object: its last state as the watch told it, how many calls of its hook failed so far, and how many
    reads of the API left unsaid whether it is gone (:data:`UNANSWERED`)."""

    obj: Mapping[str, Any]
    failures: int = 0
    unanswered: int = 0

    @property
    def uid(self) -> str:
        return str((self.obj.get("metadata") or {}).get("uid") or "")

    def failed(self) -> Deletion | None:
        """This deletion after one more failed call: None once it has used its :data:`ATTEMPTS`."""
        failures = self.failures + 1
        return None if failures >= ATTEMPTS else dataclasses.replace(self, failures=failures)

    def unanswered_once(self) -> Deletion:
        """This deletion after one more read of the API that did not say whether its object is gone: kept whatever
        the count (the hook was not called; its :data:`ATTEMPTS` are its own), to be asked again later."""
        return dataclasses.replace(self, unanswered=self.unanswered + 1)


class Deletions(Generic[KeyT]):
    """Deletions whose hook is due, by key, in the order seen (thread-safe).

    Args:
        backoff: how long a failed call waits before the next (the controller's per-key backoff).
        selected: whether an object, as its ``DELETED`` tells it, is in the operator's selection (all are when None).
    """

    def __init__(
        self,
        backoff: backoff_mod.Backoff | None = None,
        selected: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self._backoff = backoff if backoff is not None else backoff_mod.Backoff()
        self._selected = selected
        self._lock = threading.Lock()
        self._due: dict[KeyT, list[Deletion]] = {}

    def note(self, key: KeyT, obj: Mapping[str, Any]) -> bool:
        """Keep the deletion of ``obj`` under ``key``; False when that object (its uid) is kept already, or when
        ``obj`` is out of the selection (it left it: not deleted, or no longer the operator's when it was)."""
        if self._selected is not None and not self._selected(obj):
            return False
        deletion = Deletion(obj)
        with self._lock:
            due = self._due.setdefault(key, [])
            if any(kept.uid == deletion.uid for kept in due):
                return False
            due.append(deletion)
            return True

    def take(self, key: KeyT) -> tuple[Deletion, ...]:
        """The deletions due under ``key``, oldest first, forgotten here."""
        with self._lock:
            return tuple(self._due.pop(key, ()))

    def put_back(self, key: KeyT, deletion: Deletion) -> None:
        """Keep ``deletion`` again (its hook failed and is called again), before any noted since it was taken."""
        with self._lock:
            due = self._due.setdefault(key, [])
            if all(kept.uid != deletion.uid for kept in due):
                due.insert(0, deletion)

    def delay(self, deletion: Deletion) -> float:
        """Seconds before the hook of ``deletion``, which failed or could not be called, is called again (the
        unanswered reads back off too: an outage is not asked about at every key's first backoff step)."""
        return self._backoff.delay(max(deletion.failures + deletion.unanswered, 1))

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._due

    def __len__(self) -> int:
        with self._lock:
            return sum(len(due) for due in self._due.values())
