"""Kubernetes Events (core/v1) on meaningful transitions and on errors, deduplicated like client-go's recorder.

Why this exists: ``kubectl describe`` is where people look first. okt emits an Event when a reconcile changes the
Ready condition or fails; a repeat of the same (object, type, reason, message) bumps the existing Event's count
instead of creating a new one. Steady reconciles emit nothing (the caller only emits on change). What okt reports once
(a permanent error, a give-up) is recorded ``once``: repeated of the object unchanged since (its resourceVersion), it is
not even counted — a report the API server refuses is retried with backoff, and would be one write per retry.

Guarantees: failures to record an event are logged and swallowed — an Event is never a reason to fail a reconcile.
What was said is remembered for a bounded number of (object, type, reason, message), a message by what its Event
shows (its first 1024 characters), and forgotten at once for an object deleted (:meth:`EventRecorder.forget`), so
that what was said of objects long gone never pushes out what was said of live ones.

Spam filter, as client-go's recorder has one: each object may have :data:`BURST` Events recorded (or counted) at
once, then one more every :data:`REFILL_SECONDS` — a timer failing every second, or any other repeat without a
backoff, writes 25 Events and then one every five minutes, not one a second for as long as it fails. What is held
back is logged at debug level; the log and the conditions still say every failure.
"""

from __future__ import annotations

import collections
import datetime
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, objects

NORMAL = "Normal"
WARNING = "Warning"
_CACHE_SIZE = 4096
_MESSAGE_SHOWN = 1024
"""The characters of a message an Event carries: what it shows, and what tells one repeat from another."""
BURST = 25
"""Events one object may have recorded at once (client-go's spam filter: 25)."""
REFILL_SECONDS = 300.0
"""Seconds for one more (client-go's: one every 5 minutes)."""

log = structlog.get_logger("okt.events")

_Said = tuple[str, str, int, str]
"""An Event recorded: its name, its namespace, its count, and the resourceVersion of the object it last said."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events for one controller; thread-safe; keeps a bounded dedupe cache."""

    def __init__(self, client: kube_client.Client, component: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._component = component
        self._clock = clock
        self._lock = threading.Lock()
        # Per object uid: the Events it may still have recorded now, and when that was counted (the spam filter).
        self._allowance: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()
        self._seen: collections.OrderedDict[tuple[str, str, str, str], _Said] = collections.OrderedDict()
        # The keys of ``_seen`` by object uid, so that a deleted object's go at once (see forget).
        self._by_uid: dict[str, set[tuple[str, str, str, str]]] = {}

    def record(self, cr: objects.CustomResource, type_: str, reason: str, message: str, *, once: bool = False) -> None:
        """Record an Event about ``cr``, or count a repeat of one recorded already.

        Args:
            once: what okt reports once (a permanent error, a give-up): a repeat said of the object as it was when it
                was recorded (the same resourceVersion) is not counted — no request at all. A report the API server
                refuses (every write of an object stored before its CRD got stricter) is retried, and each retry
                says the same of the same unchanged object. Once the object changed, a repeat is counted again.
        """
        # Told apart by what the Event shows: two messages alike in their first 1024 characters are one Event, a
        # count; and what is remembered of each is that much, not the whole message (up to 32 KiB of a condition's).
        message = message[:_MESSAGE_SHOWN]
        key = (cr.uid, type_, reason, message)
        namespace = cr.namespace or "default"
        with self._lock:
            said = self._seen.get(key)
            if once and said is not None and said[3] == cr.resource_version:
                self._seen.move_to_end(key)  # still said: kept as recently as a repeat counted would be
                return
            if not self._spend_locked(cr.uid):
                log.debug("event held back: too many for this object", reason=reason, name=cr.name)
                return
            seen = self._seen.pop(key, None)
        try:
            stored = self._bump(seen, cr.resource_version) if seen is not None else None
            if stored is None:
                name = f"{cr.name}.{secrets.token_hex(8)}"
                now = _now()
                self._client.create(self._event(cr, name, namespace, type_, reason, message, now), kinds.EVENT)
                stored = (name, namespace, 1, cr.resource_version)
        except errors.ApiError as exc:
            log.warning("event not recorded", reason=reason, error=str(exc))
            if seen is not None:
                with self._lock:
                    if key not in self._seen:
                        self._drop_locked(key)
            return
        with self._lock:
            self._seen[key] = stored
            self._by_uid.setdefault(cr.uid, set()).add(key)
            while len(self._seen) > _CACHE_SIZE:
                self._drop_locked(self._seen.popitem(last=False)[0])

    def forget(self, uid: str) -> None:
        """Drop what was said of the object ``uid`` (it was deleted: kept, it would push out what was said of live
        objects, and their next repeat would be a new Event instead of a count)."""
        with self._lock:
            for key in self._by_uid.pop(uid, ()):
                self._seen.pop(key, None)
            self._allowance.pop(uid, None)

    def _spend_locked(self, uid: str) -> bool:
        """Whether the object ``uid`` may have one more Event now (and take it): a token bucket of :data:`BURST`,
        refilled by one every :data:`REFILL_SECONDS`. Remembered for a bounded number of objects: one forgotten
        starts full again."""
        now = self._clock()
        tokens, since = self._allowance.pop(uid, (float(BURST), now))
        tokens = min(float(BURST), tokens + (now - since) / REFILL_SECONDS)
        allowed = tokens >= 1.0
        self._allowance[uid] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._allowance) > _CACHE_SIZE:
            self._allowance.popitem(last=False)
        return allowed

    def _drop_locked(self, key: tuple[str, str, str, str]) -> None:
        keys = self._by_uid.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_uid[key[0]]

    def _bump(self, seen: _Said, resource_version: str) -> _Said | None:
        """Count one more repeat on the Event ``seen``, said of the object at ``resource_version``; None when it is
        gone — the API server removes an Event an hour after its last update (``--event-ttl``), and the repeat then
        needs a new one."""
        name, namespace, count, _ = seen
        try:
            self._client.patch(kinds.EVENT, name, {"count": count + 1, "lastTimestamp": _now()}, namespace)
        except errors.NotFound:
            return None
        return name, namespace, count + 1, resource_version

    def _event(
        self, cr: objects.CustomResource, name: str, namespace: str, type_: str, reason: str, message: str, now: str
    ) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": cr.api_version,
                "kind": cr.kind,
                "name": cr.name,
                "namespace": cr.namespace,
                "uid": cr.uid,
                "resourceVersion": cr.resource_version,
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
