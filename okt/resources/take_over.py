"""The take-over of the fields other managers hold of okt's: okt's merge path, and earlier versions of the operator.

Why this exists: server-side apply removes only the fields the *apply* entry of a manager owns, and keeps a field as
long as any manager owns it. okt's merge path (and its creates) wrote children as manager ``okt`` with operation
``Update``, and an earlier version of an operator may have applied them under another field manager; without a
take-over, a field the template dropped after the switch would stay for good. So the first apply that needs to write
such a child moves those entries into okt's apply entry (:func:`take_over`): before the apply, which writes the
checksum, when the apply would leave one of their fields (:func:`take_over_first`), else after it, from its answer
(:func:`take_over_after`). :class:`FieldOwners` says which entries move, and what okt's cache keeps of a child's
``managedFields`` to know it without a request.

Guarantees: a take-over touches okt's entries alone and first tests that each still is what okt read; another
manager's entry is neither tested nor written; it is tried again from a new read when another writer changed okt's
entries in between, up to :data:`TAKE_OVER_ATTEMPTS` times. A take-over that fails for good after an apply wrote the
checksum removes the checksum, so the next reconcile writes the child again and takes over then.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, patches
from okt.resources import list_items, resource, writing

TAKE_OVER_ATTEMPTS = patches.TAKE_OVER_ATTEMPTS
"""How often a take-over is tried when another writer changes the object between okt's apply and its take-over."""


def take_over_first(
    client: kube_client.Client,
    kind: kinds.Kind,
    res: resource.Resource,
    uid: str,
    body: Mapping[str, Any],
    options: writing.WriteOptions,
) -> None:
    """Take over what other entries of the object of ``uid`` hold of okt's, read from the API server (the patch tests
    the entries as it holds them), before the apply of ``body``, when they hold a field ``body`` does not set: the
    apply would leave it. Entries that hold only fields of ``body`` are left to the apply, whose checksum is then
    safe: a template that drops one of their fields has another checksum, and its update takes them over first. A
    take-over whose test fails (another writer changed okt's entries in between) is worked out again from a new read,
    up to :data:`TAKE_OVER_ATTEMPTS` times.

    Raises:
        okt.errors.Conflict: the object is not the one of ``uid`` any more.
        okt.errors.Invalid: the take-over lost to other writers at each attempt; nothing of okt's was written.
    """
    for attempt in range(TAKE_OVER_ATTEMPTS):
        read = client.get(kind, res.name, res.namespace)
        if (read.get("metadata") or {}).get("uid") != uid:
            raise writing.replaced(res, uid)
        if not left_behind(read, body, options):
            return
        try:
            take_over(client, kind, read, options.field_manager, options.legacy_field_managers)
        except errors.Invalid:
            if attempt == TAKE_OVER_ATTEMPTS - 1:
                raise
            continue
        return


def take_over_after(
    client: kube_client.Client,
    kind: kinds.Kind,
    res: resource.Resource,
    applied: dict[str, Any],
    body: Mapping[str, Any],
    options: writing.WriteOptions,
    send: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """Take over what an apply's answer (``applied``) shows left to other entries; apply ``body`` again (``send``)
    when they held a field it does not set, which the apply left in place.

    Entries holding only fields of ``body`` (their values okt applied again) are taken over now, once (the cache
    keeps what the take-over's answer shows: none left); their failure harms nothing. Entries holding other fields
    are there only when okt could not see them before the apply (the apply created the child over an object that
    appeared since okt read it, or an older process wrote as okt since okt last read it): the apply wrote the
    checksum already, and a take-over that fails for good is followed by the checksum's removal
    (:func:`_forget_hash`), so that the retry writes the child again and takes over first. That removal is a write
    too, and cannot leave when leadership is lost in between.
    """
    behind = left_behind(applied, body, options)
    for attempt in range(TAKE_OVER_ATTEMPTS):
        try:
            taken = take_over(client, kind, applied, options.field_manager, options.legacy_field_managers)
        except errors.Invalid as exc:
            # Its test failed: another writer changed okt's entries in between (another process writing as okt's
            # manager). Read the object again and take over from there; the apply itself already happened.
            if attempt == TAKE_OVER_ATTEMPTS - 1:
                if behind:
                    _forget_hash(client, kind, applied, options.hash_annotation)
                raise
            meta = applied.get("metadata") or {}
            current = client.get(kind, meta["name"], meta.get("namespace"))
            if (current.get("metadata") or {}).get("uid") != meta.get("uid"):
                # Not the object applied: none of okt's to take.
                raise writing.replaced(res, meta.get("uid"), exc) from exc
            applied = current
            behind = behind or left_behind(applied, body, options)
            continue
        except (errors.ApiError, errors.WriteRefused):
            if behind:
                _forget_hash(client, kind, applied, options.hash_annotation)
            raise
        # The fields the other entries held are the apply's now: applying again removes those the template dropped.
        # Else the take-over's answer is the object as it is now, its managedFields without those entries.
        return send() if behind else taken or applied
    return applied


def left_to_take_over(obj: Mapping[str, Any], options: writing.WriteOptions) -> bool:
    """Whether ``obj`` (as the API server answered a write) has entries :func:`take_over` moves."""
    entries = (obj.get("metadata") or {}).get("managedFields") or ()
    return any(_taken_over(e, options.field_manager, options.legacy_field_managers) for e in entries)


def left_behind(obj: Mapping[str, Any], body: Mapping[str, Any], options: writing.WriteOptions) -> bool:
    """Whether an entry of ``obj`` that :func:`take_over` moves holds a field ``body`` (an apply configuration) does not
    set; one okt cannot match (a list item whose key it cannot read) counts as such."""
    entries = (obj.get("metadata") or {}).get("managedFields") or ()
    return any(
        _outside(e.get("fieldsV1") or {}, body)
        for e in entries
        if _taken_over(e, options.field_manager, options.legacy_field_managers)
    )


def _outside(fields: Mapping[str, Any], value: Any) -> bool:
    """Whether the fieldsV1 tree ``fields`` holds a path ``value`` does not have (``f:`` a field, ``k:`` a list item
    by its keys, ``v:`` a set's value, ``i:`` an index; ``.`` the element itself)."""
    for key, inner in fields.items():
        if key == ".":
            continue
        prefix, _, rest = key.partition(":")
        child: Any
        if prefix == "f" and isinstance(value, Mapping) and rest in value:
            child = value[rest]
        elif prefix in ("k", "v") and isinstance(value, list):
            try:
                wanted = json.loads(rest)
            except ValueError:
                return True
            if prefix == "v":
                child = wanted if wanted in value else _MISSING
            elif isinstance(wanted, dict):
                child = next(
                    (i for i in value if isinstance(i, Mapping) and all(i.get(k) == v for k, v in wanted.items())),
                    _MISSING,
                )
            else:
                return True
        elif prefix == "i" and isinstance(value, list) and rest.isdigit() and int(rest) < len(value):
            child = value[int(rest)]
        else:
            return True
        if child is _MISSING or (isinstance(inner, Mapping) and _outside(inner, child)):
            return True
    return False


_MISSING = object()


@dataclasses.dataclass(frozen=True)
class FieldOwners:
    """Whose ``managedFields`` entries a take-over moves (:func:`take_over`): the ``Update`` entries of ``managers``
    (the field managers children are applied as) and every entry of ``legacy`` (the reconcilers'
    ``legacy_field_managers``), subresources' aside.

    Why this exists: an update takes over before it applies when such an entry holds a field the apply would leave
    (see :func:`okt.resources.apply._apply`), and must know the child's entries for that. okt's cache drops
    ``managedFields`` (often the largest part of an object), and reading each child before its update would cost a
    request per child updated after every restart, for a take-over needed once in a child's life. So the cache keeps
    of a child's entries those :meth:`kept` returns, an empty list for almost every child: a stored child with
    ``managedFields`` says what there is to take over, with no request.
    """

    managers: frozenset[str] = frozenset()
    legacy: frozenset[str] = frozenset()

    @classmethod
    def of(cls, options: writing.WriteOptions) -> FieldOwners | None:
        """The entries the updates of ``options`` take over; None for the merge strategy, which takes over none."""
        if options.strategy is not writing.Strategy.APPLY:
            return None
        return cls(frozenset({options.field_manager}), options.legacy_field_managers)

    def __or__(self, other: FieldOwners) -> FieldOwners:
        return FieldOwners(self.managers | other.managers, self.legacy | other.legacy)

    def covers(self, other: FieldOwners) -> bool:
        """Whether what :meth:`kept` keeps holds every entry ``other`` would keep."""
        return other.managers <= self.managers and other.legacy <= self.legacy

    def moves(self, entry: Mapping[str, Any]) -> bool:
        """Whether a take-over for one of these owners moves ``entry``."""
        if not isinstance(entry, Mapping) or entry.get("subresource"):
            return False
        manager = entry.get("manager")
        return manager in self.legacy or (manager in self.managers and entry.get("operation") == "Update")

    def kept(self, entries: Any) -> list[dict[str, Any]]:
        """The entries of ``entries`` (an object's ``managedFields``) a take-over moves, each as its manager, operation
        and fields (the rest, their time and format, is not read): what okt's cache keeps of a child's
        ``managedFields``, ``[]`` for a child with none."""
        return [
            {"manager": e.get("manager"), "operation": e.get("operation"), "fieldsV1": e.get("fieldsV1") or {}}
            for e in (entries if isinstance(entries, list) else ())
            if self.moves(e)
        ]


def _forget_hash(client: kube_client.Client, kind: kinds.Kind, obj: Mapping[str, Any], annotation: str) -> None:
    """Remove the checksum the apply just stored from a child whose take-over failed for good, so that the retry
    writes it again, and takes over then: with the checksum in place and every field of the template present, the
    retry would judge the child unchanged and never take over, and a field the template dropped would stay for good.

    The patch tests that the annotation still holds that checksum (not the resourceVersion, which a workload's
    controller goes on bumping). Refused, it is left: someone else wrote the checksum since.
    """
    meta = obj.get("metadata") or {}
    digest = (meta.get("annotations") or {}).get(annotation)
    if digest is None:
        return
    pointer = f"/metadata/annotations/{list_items.escaped(annotation)}"
    patch = [{"op": "test", "path": pointer, "value": digest}, {"op": "remove", "path": pointer}]
    try:
        client.patch(kind, meta["name"], patch, meta.get("namespace"), patch_type="json")
    except (errors.ApiError, errors.WriteRefused):
        return  # the take-over's error is the one reported


def take_over(
    client: kube_client.Client,
    kind: kinds.Kind,
    obj: Mapping[str, Any],
    manager: str,
    legacy: Collection[str] = (),
) -> dict[str, Any] | None:
    """Move the fields ``manager`` owns through plain writes (operation ``Update``), and those the ``legacy`` managers
    own (any operation), into ``manager``'s apply entry.

    okt's merge path (and its creates) wrote children as manager ``okt`` with operation ``Update``, and an earlier
    version of an operator may have applied them under another ``field_manager``; server-side apply removes only
    fields the *apply* entry owns, and keeps a field as long as any manager owns it, so without this a field the
    template dropped after the switch would stay. One JSON patch of ``metadata.managedFields``, once per object: a
    server that is handed managedFields keeps them as given. Entries of a subresource (the status) are left: an apply
    of the object cannot own their fields. Returns the API server's answer, or None when there was nothing to
    move.

    The patch touches okt's entries alone (the apply entry replaced by the union, the others removed) and first tests
    that each of them still is what okt read (:func:`patches.guard`), not the object's resourceVersion: a workload's
    controller writes the status of a Deployment many times a second while it rolls out, and a patch tested against
    the resourceVersion lost to those writes at every attempt. Another manager's entry is neither tested nor written,
    so one it changed in between stays as it made it. The test finds okt's entries by their place in the list, which
    the API server keeps sorted by operation, then time: another manager's write that moves its entry from before
    okt's to after them (a status write a second later) fails the test too, and the caller tries again from a new
    read.
    """
    meta = obj.get("metadata") or {}
    entries = list(meta.get("managedFields") or [])
    moved = [i for i, e in enumerate(entries) if _taken_over(e, manager, legacy)]
    if not moved:
        return None
    at = next((i for i, e in enumerate(entries) if e.get("manager") == manager and e.get("operation") == "Apply"), None)
    applied = entries[at] if at is not None else None
    fields: dict[str, Any] = copy.deepcopy((applied or {}).get("fieldsV1") or {})
    for i in moved:
        patches.union(fields, entries[i].get("fieldsV1") or {})
    merged = {
        **(applied or {"manager": manager, "operation": "Apply", "apiVersion": obj.get("apiVersion")}),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    # The union takes the apply entry's place, or the first moved entry's; the other moved ones go, last first (the
    # indices of those before them stay as tested).
    into, gone = (at, moved) if at is not None else (moved[0], moved[1:])
    tested = sorted({into, *moved})
    patch = [
        *patches.guard([(f"/metadata/managedFields/{i}", entries[i]) for i in tested], meta),
        {"op": "replace", "path": f"/metadata/managedFields/{into}", "value": merged},
        *({"op": "remove", "path": f"/metadata/managedFields/{i}"} for i in sorted(gone, reverse=True)),
    ]
    return client.patch(kind, meta["name"], patch, meta.get("namespace"), patch_type="json")


def _taken_over(entry: Mapping[str, Any], manager: str, legacy: Collection[str]) -> bool:
    """Whether :func:`take_over` moves ``entry`` into ``manager``'s apply entry."""
    return FieldOwners(frozenset({manager}), frozenset(legacy)).moves(entry)
