"""Which changes of a primary object or of a child are worth a reconcile: the rules the controller's event mapping
applies before it queues a key.

Why this exists: every write to an object (a status update, okt's own bookkeeping, a controller rewriting a child's
status) is announced by the watch; reconciling on each would loop on okt's own writes and wake an owner for every
heartbeat of its children. These pure functions of an event and the object before it say which changes tell
something new.

Guarantees:

* a primary's ADDED and RESYNC always matter; a MODIFIED only through its generation (or, for a kind without one, its
  content outside metadata and status), deletionTimestamp, finalizers, labels or annotations — neither okt's own
  bookkeeping annotations nor another okt operator's reports count;
* a child's ADDED, DELETED and RESYNC always matter; a MODIFIED when it changed anything outside its status (the
  resourceVersion, managedFields and the resource class's ``foreign_annotations`` aside) or its class's
  ``status_view``; a ``status_view`` that raises counts as a change, logged without the object's content;
* a MODIFIED event without the previous object always matters (there is nothing to compare with), and so does a
  child's of a kind no resource class declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from okt import names as names_mod
from okt.kube import objects
from okt.resources import resource
from okt.runtime import informer as informer_mod

#: The metadata whose change is worth a reconcile (besides the generation, which tracks the spec).
_WATCHED_METADATA = ("deletionTimestamp", "finalizers", "labels", "annotations")

# The controller's logger: a status_view that fails is told among the controller's lines.
_log = structlog.get_logger("okt.controller")


def primary_change_matters(
    event_type: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    ignored_annotations: frozenset[str] = frozenset(),
) -> bool:
    """Whether a primary object's event deserves a reconcile (DELETED is decided by the caller).

    ADDED and RESYNC always do; MODIFIED only when the generation (the spec), the deletionTimestamp, the finalizers,
    the labels or the annotations changed — so status writes and resourceVersion-only updates are dropped. A kind
    the API server keeps no generation for (a ConfigMap's ``data``, a Secret's, a Service's ``spec``) counts a change
    of anything outside its metadata and status instead: its generation never moves. Changes to
    ``ignored_annotations`` (okt's own bookkeeping annotations) do not count, or an object in error would requeue
    itself at once past its backoff; nor do changes to the reports of another operator built on okt, under its own
    prefix (see :func:`okt.names.is_report`). A MODIFIED event without the previous object is kept (nothing to compare
    with).
    """
    if event_type != informer_mod.MODIFIED or old is None:
        return True
    meta = obj.get("metadata") or {}
    old_meta = old.get("metadata") or {}
    if meta.get("generation") != old_meta.get("generation"):
        return True
    if meta.get("generation") is None and _content(obj) != _content(old):
        return True
    for field in _WATCHED_METADATA:
        now, before = meta.get(field) or None, old_meta.get(field) or None
        if field == "annotations":
            now = _meaningful(now, ignored_annotations)
            before = _meaningful(before, ignored_annotations)
        if now != before:
            return True
    return False


def ignored_annotations(names: names_mod.Names) -> frozenset[str]:
    """okt's own annotations on a primary, whose changes need no reconcile: all of them, under the prefix and the
    legacy prefixes, but for the phase. A change of the phase annotation is a person's edit (okt's own writes of it
    are echoes, which wake nothing): the repair an UnknownPhase asks for, or a manual move, acted upon at once rather
    than at the next event."""
    phases = {names.phase_annotation, *(legacy.phase_annotation for legacy in names.legacy())}
    return (names.primary_annotations() | names.legacy_primary_annotations()) - phases


def _meaningful(annotations: Mapping[str, str] | None, ignored: frozenset[str]) -> dict[str, str] | None:
    """The annotations a change of which deserves a reconcile: neither ``ignored`` nor a report of okt's."""
    kept = {k: v for k, v in (annotations or {}).items() if k not in ignored and not names_mod.is_report(k)}
    return kept or None


def _content(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What an object holds outside its metadata and status (what a generation counts, for kinds that keep one)."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


def child_change_matters(
    event_type: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    resource_classes: Sequence[type[resource.Resource]],
    log: structlog.typing.FilteringBoundLogger | None = None,
) -> bool:
    """Whether a child's event deserves a reconcile of its owner.

    ADDED, DELETED and RESYNC always do, and so does a MODIFIED event without the previous object or for a kind no
    resource class declares. Otherwise a modification matters to a class when it changed anything outside the status
    (the resourceVersion, managedFields and the class's ``foreign_annotations`` aside: they are never drift) or the
    class's ``status_view``; it deserves a reconcile when it matters to any class declared for the kind.

    A ``status_view`` that raises cannot tell the change is harmless: the change matters (a reconcile is idempotent;
    dropping it would leave the owner blind to its child), and the failure is logged on ``log`` once, with the
    child's kind and name, the class and the exception's type (never the object's content).
    """
    if event_type != informer_mod.MODIFIED or old is None or not resource_classes:
        return True
    for cls in resource_classes:
        foreign = cls.foreign_annotations
        if _outside_status(obj, foreign) != _outside_status(old, foreign):
            return True
        try:
            changed = cls.status_view(obj) != cls.status_view(old)
        except Exception as exc:
            meta = obj.get("metadata") or {}
            (log or _log).error(
                "a status_view failed: the owner is reconciled",
                kind=f"{obj.get('kind')}.{obj.get('apiVersion')}",
                namespace=meta.get("namespace"),
                name=meta.get("name"),
                resource=cls.__name__,
                error=type(exc).__name__,
            )
            return True
        if changed:
            return True
    return False


def _outside_status(obj: Mapping[str, Any], foreign: frozenset[str]) -> dict[str, Any]:
    body = {key: value for key, value in obj.items() if key != "status"}
    meta = objects.lasting_metadata(obj)
    if foreign and meta.get("annotations"):
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k not in foreign}
    body["metadata"] = meta
    return body
