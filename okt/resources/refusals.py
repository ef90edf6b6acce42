"""What the API server refused for good, remembered by the desired object, so that it is not sent again.

Why this exists: a child the API server refuses for what the custom resource and the template make of it
(``InvalidChild``, ``ImmutableField``, ``ObjectTooLarge``) is refused again for as long as they make the same object.
The report of it is said once; without this memory the refused write was not: every reconcile that a child's event,
a resync or a restart starts decides afresh, and sent the same object again, to be refused again.

Guarantees: a child is not sent again while its desired object (its checksum, as prepared, before its initial data)
and the object it was written over (its uid; none for a create) are the ones refused; a change of the custom resource
or the template that changes the desired object, a deletion of the child (a create then) or another object under
its name sends it again. The memory is the client's (:func:`of`): another cluster, or a test's own fake, has its own.
Each child keeps its last refusal only; at most :data:`LIMIT` are kept, the oldest forgotten first.

Caveat: the memory lives in the process (in its client). After a restart the first reconcile sends each refused
child once more: it is then the one that can tell, as nothing durable says which object was refused — the Ready
condition names the child and its fields, not the object sent, and a restart is when a new operator version brings a
new template, whose child the API server may well accept. Its refusal is the one the object already reports: no
status write, no Event.
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.resources import checksum

LIMIT = 4096
"""How many refusals are kept (one per child, the oldest forgotten first): bounded memory whatever the churn."""


class Refusals:
    """The last refusal for good of each child (see the module docstring); safe to share between workers."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._refused: collections.OrderedDict[kinds.ObjectKey, tuple[str, str | None, errors.PermanentError]] = (
            collections.OrderedDict()
        )

    def remember(
        self, key: kinds.ObjectKey, digest: str, live: Mapping[str, Any] | None, error: errors.PermanentError
    ) -> None:
        """Remember that the desired object of ``digest``, written over ``live`` (None: a create), was refused."""
        with self._lock:
            self._refused[key] = (digest, _uid(live), error)
            self._refused.move_to_end(key)
            while len(self._refused) > self._limit:
                self._refused.popitem(last=False)

    def recall(self, key: kinds.ObjectKey, digest: str, live: Mapping[str, Any] | None) -> errors.PermanentError | None:
        """The error the same desired object written over the same object was refused with, None when it was not."""
        with self._lock:
            found = self._refused.get(key)
            if found is None or found[:2] != (digest, _uid(live)):
                return None
            return found[2]

    def __contains__(self, key: object) -> bool:
        """Whether a refusal of the child ``key`` is kept."""
        with self._lock:
            return key in self._refused

    def forget(self, key: kinds.ObjectKey) -> None:
        """Forget the refusal of a child written since."""
        with self._lock:
            self._refused.pop(key, None)


def digest(desired: Mapping[str, Any]) -> str:
    """The checksum a refusal is remembered by: the whole desired object's (its owner reference with it)."""
    return checksum.checksum(desired)


def _uid(live: Mapping[str, Any] | None) -> str | None:
    return None if live is None else (live.get("metadata") or {}).get("uid")


_BY_CLIENT: weakref.WeakKeyDictionary[object, Refusals] = weakref.WeakKeyDictionary()
_BY_CLIENT_LOCK = threading.Lock()


def of(client: object) -> Refusals:
    """The memory of the refusals of the API server ``client`` talks to: shared by every reconcile through it (the
    reconcilers of one ``okt run``), none with another client's (another cluster, a test's own fake)."""
    with _BY_CLIENT_LOCK:
        found = _BY_CLIENT.get(client)
        if found is None:
            found = _BY_CLIENT[client] = Refusals()
        return found
