"""The events of watched kinds waiting for a controller's mapping thread: at most one per watched object.

Why this exists: an informer hands each event of a kind a reconciler ``watches`` to the controller's mapping thread
and goes on with the watch (see :mod:`okt.runtime.controller`); the mapping function is the user's code, and a lookup
decodes every primary it finds, so it may be slow. Held one by one, the events a slow mapping leaves behind grow
without limit: a ConfigMap shared by thousands of primaries changing every second, a relist of 50,000 watched objects,
each event decoded twice (the object, and the one it replaced). The mapping needs no more of a burst than what the
primaries' reconciles need, and those read the current state from the cache: the state the object left (the
primaries it concerned before) and the state it is in now (those it concerns now). So the events of one object that
wait together are one event.

Guarantees:

* **bounded** — at most one event waits per watch and watched object (apiVersion, kind, namespace, name), however many
  the informer tells meanwhile: what waits is bounded by the objects of the watched kinds, which the cache holds anyway
  (an event being mapped no longer waits: the next one of its object waits behind it);
* **nothing a reconcile must see is lost** — an event joining a waiting one of its object makes one event that maps
  the *first* state the waiting one had to map (the object before a modification; the object an addition, a
  deletion or a list told) and the *last* state told, as its ``old`` and ``obj`` (see :func:`coalesced`): a label
  moved A→B→C reconciles the primaries of A and of C; a change then a deletion is a deletion that maps the state
  before the change too; a deletion then a recreation maps the deleted object and the new one. Only a modification
  after modifications stays a modification (one that changed nothing but the resourceVersion, all told, maps
  nothing); an addition, a deletion or a resync among the events has the last state mapped whatever it holds;
* **order** — a merged event keeps the place of the first event of it, so it is mapped no later than that event would
  have been, and a marker (:meth:`MappingQueue.mark`) is set once every event put before it is mapped (and maybe some
  put after it, merged into one put before: mapped earlier than their turn, never later);
* **priority** — a merged event is part of the sweep (``sweep``) only when every event in it was: a live change
  merged into a list's event is mapped as live.

Caveats: a state the object held only between two events that waited together is not mapped (A→B→C does not map B).
A primary that depends on the watched object through the mapping of that state alone, and read it in that time (a
reconcile that ran meanwhile, for another reason, and found the object labelled B), is reconciled at the next event
of the object that concerns it, not at once. A mapping that names its primaries from the object's name alone (an
index of the primaries naming the object, the usual case) names the same ones for every state: nothing is missed.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

from okt.reconciler import watches as watches_mod
from okt.runtime import informer as informer_mod

ObjectKey = tuple[int, str, str, str, str]
"""What one waiting event is kept under: the watch (its identity: two watches of one kind map apart), the object's
apiVersion, kind, namespace (``""`` for a cluster-scoped object) and name."""


@dataclasses.dataclass(frozen=True)
class Event:
    """One event of a watched kind to map: ``obj`` and, when given, ``old`` are both mapped (see
    :func:`okt.reconciler.watches.keys_for_event`); ``sweep``: it came from a list or a resync."""

    watched: watches_mod.Watch
    event_type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    sweep: bool

    @property
    def key(self) -> ObjectKey:
        meta = self.obj.get("metadata") or {}
        return (
            id(self.watched),
            str(self.obj.get("apiVersion") or ""),
            str(self.obj.get("kind") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )


def coalesced(first: Event, then: Event) -> Event:
    """One event mapping what ``first`` and ``then``, told in that order of one object, would map (see the module's
    guarantees): the first state ``first`` maps as ``old``, the last state (``then``'s object) as ``obj``.

    The type: a deletion last is a deletion (the object is gone); two modifications are a modification (mapped only
    when the object changed in more than its resourceVersion from the first state to the last); otherwise an addition
    when either was one (an object new to the mapping, or recreated), else a resync — either maps the last state
    whatever it holds, as the events in it asked."""
    earliest = first.old if first.old is not None else first.obj
    types = (first.event_type, then.event_type)
    if then.event_type == informer_mod.DELETED:
        event_type = informer_mod.DELETED
    elif types == (informer_mod.MODIFIED, informer_mod.MODIFIED):
        event_type = informer_mod.MODIFIED
    elif informer_mod.ADDED in types or first.event_type == informer_mod.DELETED:
        event_type = informer_mod.ADDED
    else:
        event_type = informer_mod.RESYNC
    return Event(first.watched, event_type, then.obj, earliest, first.sweep and then.sweep)


class _Slot:
    """A place in the queue holding the one event waiting for its object (replaced when another joins it)."""

    __slots__ = ("event",)

    def __init__(self, event: Event) -> None:
        self.event = event


class MappingQueue:
    """The events of watched kinds waiting to be mapped, in the order they were told, one per object (see the module
    docstring), and markers set once the events before them are mapped. Thread-safe: informers put, one mapping
    thread takes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: collections.deque[_Slot | threading.Event | None] = collections.deque()
        self._waiting: dict[ObjectKey, _Slot] = {}

    def put(self, event: Event) -> None:
        """Queue ``event``, merged into the event of its object waiting already, if one is."""
        key = event.key
        with self._cond:
            slot = self._waiting.get(key)
            if slot is not None:
                slot.event = coalesced(slot.event, event)
                return
            slot = self._waiting[key] = _Slot(event)
            self._items.append(slot)
            self._cond.notify()

    def mark(self, marker: threading.Event) -> None:
        """Queue ``marker``: the mapping thread sets it once every event put before it is mapped."""
        self._append(marker)

    def close(self) -> None:
        """Queue the end: the mapping thread stops once the events put before it are mapped."""
        self._append(None)

    def _append(self, item: threading.Event | None) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify()

    def get(self) -> Event | threading.Event | None:
        """The next event, marker or end (None), waiting for one; an event taken waits no more (the next one of its
        object is queued behind it)."""
        with self._cond:
            while not self._items:
                self._cond.wait()
            item = self._items.popleft()
            if not isinstance(item, _Slot):
                return item
            del self._waiting[item.event.key]
            return item.event

    def __len__(self) -> int:
        """How many events wait (one per object at most), markers aside."""
        with self._cond:
            return len(self._waiting)
