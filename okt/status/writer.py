"""Writing status — only when something changed, always with observedGeneration — where the reconciler says it goes.

Why this exists: a status write that changes nothing still bumps resourceVersion and wakes every watcher; Kopf users
know the resulting loops. okt computes the status it wants, compares it with the live one, and writes the difference
(one merge patch, guarded by the resourceVersion it read so a concurrent writer's conditions are never overwritten).

Guarantees: no request when nothing changed; ``status.observedGeneration`` always accompanies a write; a 409 is raised
as :class:`okt.errors.Conflict` for the caller to requeue (the next reconcile reads the other writer's change).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import enum
import json
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from okt import errors
from okt import names as names_mod
from okt.kube import client as kube_client
from okt.kube import kinds, objects, patches
from okt.status import conditions as conditions_mod


class Target(enum.StrEnum):
    """Where a reconciler's conditions and observedGeneration go.

    ``status``: the ``/status`` subresource (custom resources). ``annotations``: JSON in okt's annotations on the
    object, for a primary whose status belongs to another controller or that has no status at all (a ConfigMap).
    ``off``: nowhere — the conditions live only in the reconcile's logs and Events. Built-in kinds default to ``off``:
    the Deployment controller owns a Deployment's status, and a second writer there fights it.
    """

    STATUS = "status"
    ANNOTATIONS = "annotations"
    OFF = "off"

    @classmethod
    def resolve(cls, declared: Target | str | bool | None, api_version: str) -> Target:
        """The target of a reconciler that declared ``declared`` (``True``/``False`` read as status/off, ``None`` as
        the default for its kind).

        Raises:
            ValueError: anything else, with the values that are accepted.
        """
        if declared is None:
            return cls.OFF if api_version and kinds.is_builtin_group(api_version) else cls.STATUS
        if isinstance(declared, bool):
            return cls.STATUS if declared else cls.OFF
        try:
            return cls(declared)
        except ValueError:
            accepted = ", ".join(repr(t.value) for t in cls)
            raise ValueError(f"status = {declared!r}: expected {accepted}, True, False or None") from None


def conditions_from_annotations(
    annotations: Mapping[str, str] | None, prefix: str, legacy_prefixes: Sequence[str] = ()
) -> list[Any]:
    """The conditions list kept in ``<prefix>/conditions`` — or, where it is missing, in the first of the
    ``legacy_prefixes`` that keeps one (an earlier version of the operator wrote it: its transition times and what a
    lifecycle restores a lost phase from go on); a missing or unreadable annotation reads as empty."""
    annotations = annotations or {}
    raw = annotations.get(names_mod.Names(prefix).conditions_annotation)
    if raw is None and legacy_prefixes:
        legacy = (names_mod.Names(p).conditions_annotation for p in legacy_prefixes)
        raw = next((annotations[name] for name in legacy if name in annotations), None)
    try:
        items = json.loads(raw) if raw else []
    except ValueError:
        return []
    return items if isinstance(items, list) else []


def status_fields_from_annotations(
    annotations: Mapping[str, str] | None, prefix: str, legacy_prefixes: Sequence[str] = ()
) -> dict[str, Any]:
    """The status fields kept in ``<prefix>/status`` (``status = "annotations"``) — or, where it is missing, in the
    first of the ``legacy_prefixes`` that keeps one, as :func:`conditions_from_annotations` reads them; a missing or
    unreadable annotation reads as empty."""
    annotations = annotations or {}
    raw = annotations.get(names_mod.Names(prefix).status_annotation)
    if raw is None and legacy_prefixes:
        legacy = (names_mod.Names(p).status_annotation for p in legacy_prefixes)
        raw = next((annotations[name] for name in legacy if name in annotations), None)
    try:
        fields = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


ANNOTATIONS_MAX_BYTES = 256 * 1024
"""What the API server allows all annotations of one object together: keys and values, in UTF-8 bytes."""


def annotations_patch(
    live: Mapping[str, str] | None,
    conditions: conditions_mod.Conditions,
    generation: int,
    extra: Mapping[str, Any],
    prefix: str,
    *,
    alongside: Mapping[str, str | None] | None = None,
) -> dict[str, str | None]:
    """The annotations to patch so the object carries the conditions, observedGeneration and ``extra`` (as compact
    JSON); empty when it already does. A field of ``extra`` that is None is left out (removed), and ``extra`` empty
    removes ``<prefix>/status``. ``alongside``: the other annotations the same patch writes (okt's bookkeeping),
    counted in the room the conditions have.

    The conditions are written with their characters as they are, not as ``\\u`` escapes: the API server bounds all
    annotations of an object to 256 KiB of UTF-8, and escaped, the messages of a failed reconcile in a non-Latin
    script (up to 32 KiB each, in up to six conditions) would take up to three times their size: the write would be
    refused on every reconcile, and the last Ready would stay. For the same reason, when the other annotations leave
    the conditions less room than they take (``kubectl apply`` keeps a copy of the whole object it applied in one),
    their longest messages are cut to fit, each ending with an ellipsis: Ready, its reason and the start of the
    message are what must land. The cut depends only on what is written, so it is the same on every reconcile.
    """
    live = live or {}
    names = names_mod.Names(prefix)
    # A field stated as None is one to remove, as on the status subresource: left out, never written as null (and an
    # annotation holding nothing else is removed, not written for it).
    extra = {key: value for key, value in extra.items() if value is not None}
    others: dict[str, str | None] = {
        names.observed_generation_annotation: str(generation),
        names.status_annotation: _compact(dict(extra)) if extra else None,
    }
    kept = {**{k: v for k, v in live.items() if k != names.conditions_annotation}, **others, **(alongside or {})}
    used = _bytes(names.conditions_annotation) + sum(_bytes(k) + _bytes(v) for k, v in kept.items() if v is not None)
    wanted = {names.conditions_annotation: _fitted(conditions.to_list(), ANNOTATIONS_MAX_BYTES - used), **others}
    return {key: value for key, value in wanted.items() if live.get(key) != value}


def _fitted(items: list[dict[str, Any]], room: int) -> str:
    """``items`` as compact JSON of at most ``room`` bytes: the longest messages cut to one same length (what
    shorter ones leave is shared by the others). As it is when it fits, or when even empty messages would not."""
    text = _compact(items, ensure_ascii=False)
    if _bytes(text) <= room:
        return text
    costs = [_message_bytes(item.get("message")) for item in items]
    budget = room - (_bytes(text) - sum(costs))
    if budget < 0:
        return text  # the API server refuses it, and the refusal is reported
    limit = 0
    for taken, cost in enumerate(sorted(costs)):
        share = budget // (len(costs) - taken)
        if cost > share:
            limit = share
            break
        budget -= cost
    cut = [
        {**item, "message": _cut(item["message"], limit)} if cost > limit else item
        for item, cost in zip(items, costs, strict=True)
    ]
    return _compact(cut, ensure_ascii=False)


def _cut(message: str, limit: int) -> str:
    """The longest start of ``message`` that, with an ellipsis, takes at most ``limit`` bytes in JSON."""
    mark = conditions_mod.TRUNCATION_MARK
    if _message_bytes(mark) > limit:
        return ""
    low, high = 0, len(message)
    while low < high:
        middle = (low + high + 1) // 2
        if _message_bytes(message[:middle] + mark) <= limit:
            low = middle
        else:
            high = middle - 1
    return message[:low] + mark


def _message_bytes(message: Any) -> int:
    """What a message takes inside the JSON written, escapes included (its quotes are not counted)."""
    return _bytes(json.dumps(message, ensure_ascii=False)) - 2 if isinstance(message, str) else 0


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _compact(value: Any, *, ensure_ascii: bool = True) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=ensure_ascii)


def desired_status(
    live_status: Mapping[str, Any],
    conditions: conditions_mod.Conditions,
    generation: int,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The status okt wants: the live one, overlaid with ``extra``, the conditions and observedGeneration."""
    status = dict(live_status)
    status.update(extra or {})
    status["conditions"] = conditions.to_list()
    status["observedGeneration"] = generation
    return status


def status_patch(live_status: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch turning ``live_status`` into ``wanted``, at every depth; empty when they are equal.

    Top-level keys only in ``live_status`` are left alone (other writers' fields). Inside a value okt sets, a key of
    a nested map that ``wanted`` no longer has is sent as ``null`` (a merge patch deletes it); otherwise a map that
    lost keys would differ after every write and be written again forever. A key ``wanted`` holds as ``None`` (a
    field to remove) that ``live_status`` does not have is no difference: it is removed already, and sending it
    would write again on every reconcile. Lists are replaced whole.
    """
    return _diff(live_status, wanted, top=True)


def _diff(live: Mapping[str, Any], wanted: Mapping[str, Any], top: bool = False) -> dict[str, Any]:
    patch: dict[str, Any] = {} if top else {key: None for key in live if key not in wanted}
    for key, value in wanted.items():
        before = live.get(key)
        if (key in live and before == value) or (value is None and key not in live):
            continue
        if isinstance(before, Mapping) and isinstance(value, Mapping):
            nested = _diff(before, value)
            if nested:  # maps that differ only by None against absent keys are the same status
                patch[key] = nested
        else:
            patch[key] = value
    return patch


@dataclasses.dataclass(frozen=True)
class StatusOwnership:
    """What one field manager owns of an object's status, read from its ``managedFields``."""

    fields: frozenset[str] = frozenset()
    """Top-level status fields (``observedGeneration``, ``okt``, ...)."""
    conditions: frozenset[str] = frozenset()
    """Condition types, when the list is merged by key."""
    conditions_by_key: bool | None = None
    """Whether the server merges ``status.conditions`` by ``type`` (``x-kubernetes-list-type: map``): True, False
    (an atomic list, whoever writes it writes it whole), or None when no managedFields entry tells."""


def status_ownership(raw: Mapping[str, Any], manager: str, legacy: Collection[str] = ()) -> StatusOwnership:
    """What ``manager`` owns of ``raw``'s status, through apply or plain writes (a merge-era ``Update`` counts), with
    what the ``legacy`` managers own (:func:`take_over_status` makes it ``manager``'s)."""
    fields: set[str] = set()
    types: set[str] = set()
    by_key: bool | None = None
    for entry in (raw.get("metadata") or {}).get("managedFields") or ():
        status = (entry.get("fieldsV1") or {}).get("f:status")
        if not isinstance(status, Mapping):
            continue
        listed = status.get("f:conditions")
        if isinstance(listed, Mapping):
            # A list merged by key records its items ("k:{...}") and itself ("."); an atomic list is one leaf ({}).
            merged_by_key = any(key == "." or key.startswith("k:") for key in listed)
            by_key = True if merged_by_key else (by_key or False)
        if entry.get("manager") != manager and entry.get("manager") not in legacy:
            continue
        fields.update(key[2:] for key in status if key.startswith("f:"))
        for key in listed or ():
            if key.startswith("k:"):
                try:
                    types.add(str(json.loads(key[2:]).get("type")))
                except (ValueError, AttributeError):
                    continue
    return StatusOwnership(frozenset(fields), frozenset(types), by_key)


def compact_managed_fields(entries: Any) -> list[dict[str, Any]]:
    """The part of ``managedFields`` :func:`status_ownership` reads — who owns which status field and condition —
    for an informer store that keeps nothing else of them (a few dozen bytes per writer of the status)."""
    compact: list[dict[str, Any]] = []
    for entry in entries if isinstance(entries, list) else ():
        status = (entry.get("fieldsV1") or {}).get("f:status") if isinstance(entry, Mapping) else None
        if not isinstance(status, Mapping):
            continue
        summary: dict[str, Any] = {key: {} for key in status if key.startswith("f:")}
        listed = status.get("f:conditions")
        if isinstance(listed, Mapping):
            summary["f:conditions"] = {key: {} for key in listed if key.startswith("k:") or key == "."}
        kept = {"manager": entry.get("manager"), "operation": entry.get("operation"), "fieldsV1": {"f:status": summary}}
        if entry.get("subresource"):
            kept["subresource"] = entry["subresource"]  # not an entry a take-over of the object moves
        compact.append(kept)
    return compact


def apply_body(
    cr: objects.CustomResource,
    wanted: Mapping[str, Any],
    conditions: conditions_mod.Conditions,
    given: Iterable[str],
    manager: str,
    legacy: Collection[str] = (),
) -> dict[str, Any] | None:
    """The status apply configuration of ``manager``: the conditions it states (set in this reconcile, or applied
    before and still there, by it or by one of the ``legacy`` managers, whose fields the apply takes over),
    ``observedGeneration``, the fields ``given`` and those it owns already, but for those
    ``wanted`` holds as ``None`` (to be removed: the server drops what the manager stops applying). None when
    another writer's conditions are in a list the server does not merge by key: only a guarded merge patch (which
    writes the list whole, other writers' entries included) keeps them then.
    """
    owned = status_ownership(cr.raw, manager, legacy)
    mine = conditions.asserted | owned.conditions
    items = conditions.to_list()
    if any(item.get("type") not in mine for item in items) and owned.conditions_by_key is not True:
        return None
    # A field stated as None is left out: okt no longer applying it is what removes it (a null would be stored).
    stated = (set(given) | owned.fields) - {"conditions"}
    status = {key: wanted[key] for key in stated if wanted.get(key) is not None}
    status["observedGeneration"] = wanted.get("observedGeneration")
    status["conditions"] = [item for item in items if item.get("type") in mine]
    metadata = {"name": cr.name, **({"namespace": cr.namespace} if cr.namespace else {})}
    return {"apiVersion": cr.api_version, "kind": cr.kind, "metadata": metadata, "status": status}


def take_over_status(
    client: kube_client.Client,
    kind: kinds.Kind,
    obj: Mapping[str, Any],
    manager: str,
    legacy: Collection[str] = (),
) -> dict[str, Any] | None:
    """Move the status fields ``manager`` owns through plain writes (its merge-era ``Update`` entry), and those the
    ``legacy`` managers own (an earlier ``field_manager`` of the operator, any operation), into ``manager``'s status
    apply entry, so a condition or field it stops applying leaves the object. One JSON patch of
    ``metadata.managedFields``, once per object; the rest of each such entry (finalizers, annotations) stays. Returns
    the object as the patch left it, or None when it wrote nothing.

    The patch touches okt's entries alone and first tests that each of them still is what okt read
    (:func:`patches.guard`), not the object's resourceVersion: another controller writing the same object's status
    often made a patch tested against the resourceVersion fail at every attempt. Another manager's entry is neither
    tested nor written. A patch whose test fails all the same (okt's entries changed or moved: the server keeps them
    in order of their last write) is worked out again from the object read anew, up to
    :data:`patches.TAKE_OVER_ATTEMPTS`; read anew as another object (deleted and created again under its name), there
    is nothing of okt's to take.

    Raises:
        okt.errors.Invalid: the patch refused for what it writes, or its tests failed at every attempt.
    """
    for attempt in range(patches.TAKE_OVER_ATTEMPTS):
        patch = _status_take_over(obj, manager, legacy)
        if not patch:
            return None
        meta = obj.get("metadata") or {}
        try:
            return client.patch(kind, meta["name"], patch, meta.get("namespace"), patch_type="json")
        except errors.Invalid as exc:
            if exc.causes or attempt == patches.TAKE_OVER_ATTEMPTS - 1:
                raise
            current = client.get(kind, meta["name"], meta.get("namespace"))
            if (current.get("metadata") or {}).get("uid") != meta.get("uid"):
                return None
            obj = current
    raise AssertionError("not reached: the last attempt returns or raises")


def _status_take_over(obj: Mapping[str, Any], manager: str, legacy: Collection[str]) -> list[dict[str, Any]]:
    """The JSON patch of :func:`take_over_status` for ``obj`` as read; empty when there is nothing to move."""
    meta = obj.get("metadata") or {}
    entries = list(meta.get("managedFields") or ())

    status = [i for i, e in enumerate(entries) if "f:status" in (e.get("fieldsV1") or {})]
    mine = [i for i in status if entries[i].get("manager") == manager]
    at = next((i for i in mine if entries[i].get("operation") == "Apply"), None)
    moved = [i for i in mine if entries[i].get("operation") == "Update"]
    moved = sorted({*moved, *(i for i in status if entries[i].get("manager") in legacy)})
    if at is None or not moved:
        return []
    fields: dict[str, Any] = copy.deepcopy(entries[at].get("fieldsV1") or {})
    kept: list[dict[str, Any]] = []
    gone: list[int] = []
    for i in moved:
        entry_fields = entries[i].get("fieldsV1") or {}
        patches.union(fields.setdefault("f:status", {}), entry_fields["f:status"])
        rest = {k: v for k, v in entry_fields.items() if k != "f:status"}
        if set(rest) - {"f:metadata"} or (rest.get("f:metadata") or {}).keys() - {"."}:
            pointer = f"/metadata/managedFields/{i}"
            kept.append({"op": "replace", "path": pointer, "value": {**entries[i], "fieldsV1": rest}})
        else:
            gone.append(i)
    # The uid too: a new object under the name, applied within the same second, may hold entries equal to these.
    return [
        *([{"op": "test", "path": "/metadata/uid", "value": meta["uid"]}] if meta.get("uid") else []),
        *patches.guard([(f"/metadata/managedFields/{i}", entries[i]) for i in sorted({at, *moved})], meta),
        {"op": "replace", "path": f"/metadata/managedFields/{at}", "value": {**entries[at], "fieldsV1": fields}},
        *kept,
        *({"op": "remove", "path": f"/metadata/managedFields/{i}"} for i in sorted(gone, reverse=True)),
    ]


class Residues:
    """What okt's last status write of each object left different from the status it wanted.

    Why this exists: an apply changes only what its manager owns. When another writer keeps a key inside a map okt
    applies (``status.endpoints.secondary`` beside okt's ``primary``), the difference counts that key as one to remove
    — okt's merge patch would — but the apply leaves it, rightly: it is not okt's. And a CRD written by hand may not
    declare a status field okt writes (``relatedObjects``, okt's bookkeeping): the server prunes it from every write.
    Without a memory of that, the same write would be sent on every reconcile. So what okt's write left is
    remembered, per object, with the status okt wanted then: while the object still holds, at each place that write
    set, what the server stored of it (:func:`_kept`), a status wanted that, place by place, says what is stored or
    what that write sent there (the same status above all) is nothing a write can change. A condition set then and
    stored pruned (its observedGeneration) or cut (its message) is so carried as stored by the next reconcile that
    does not set it again. Any other difference writes as ever: another status wanted, or okt's own value or
    condition edited by another writer since — which the same difference as after okt's write would hide, the
    conditions list being compared whole. Another writer's key beside okt's is not compared: it may change freely.
    Bounded, the oldest entries forgotten first (such an object is written once more), and a deleted object's entry
    dropped at once (:meth:`forget`); safe across worker threads.
    """

    LIMIT = 8192

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._left: collections.OrderedDict[str, _Left] = collections.OrderedDict()

    def remember(self, uid: str, wanted: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        """Record what still differs between the answer to okt's status write and ``wanted``."""
        if not uid:
            return
        stored = answer.get("status") or {}
        left = status_patch(stored, wanted)
        with self._lock:
            if not left:
                self._left.pop(uid, None)
                return
            self._left[uid] = _Left(objects.json_copy(dict(wanted)), objects.json_copy(dict(stored)))
            self._left.move_to_end(uid)
            while len(self._left) > self._limit:
                self._left.popitem(last=False)

    def forget(self, uid: str) -> None:
        """Drop what is remembered of the object ``uid`` (it was deleted: kept, its entry would push out a live
        object's until the bound forgot the oldest)."""
        with self._lock:
            self._left.pop(uid, None)

    def explain(self, uid: str, wanted: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
        """Whether the ``live`` status still holds what okt's last write to this object left at each place it set,
        and ``wanted`` says, at each place, what it holds or what that write sent there (the same status wanted
        again, above all)."""
        with self._lock:
            left = self._left.get(uid) if uid else None
        if left is None:
            return False
        return _kept(left.wanted, left.stored, live) and _absorbed(wanted, left.wanted, live, top=True)

    def sent_as_stored(self, uid: str, live: Mapping[str, Any], condition: Mapping[str, Any]) -> bool:
        """Whether okt's last status write of this object sent ``condition`` (a condition's wire form) and the object
        still holds what the server stored of that write: the condition of that type there is what the schema keeps
        of this one (its observedGeneration pruned, its message cut)."""
        with self._lock:
            left = self._left.get(uid) if uid else None
        if left is None or _compact(live) != _compact(left.stored):
            return False
        sent = left.wanted.get("conditions")
        return isinstance(sent, list) and any(item == condition for item in sent)


@dataclasses.dataclass(frozen=True)
class _Left:
    """What okt's last status write of one object left: a copy of the status it wanted, and of the status the
    server stored."""

    wanted: dict[str, Any]
    stored: dict[str, Any]


_ABSENT = object()


def _kept(sent: Any, stored: Any, live: Any) -> bool:
    """Whether ``live`` holds what ``stored`` (what the server made of okt's write of ``sent``) holds at each place
    that write set: the keys of a map okt sent one by one, a list of conditions by the types okt sent, anything
    else whole. What others hold beside okt's places (another key of a map okt applies, another writer's condition,
    another top-level field) is not compared."""
    if isinstance(sent, Mapping) and isinstance(stored, Mapping) and isinstance(live, Mapping):
        return all(_kept(value, stored.get(key, _ABSENT), live.get(key, _ABSENT)) for key, value in sent.items())
    sent_types, stored_types, live_types = _by_type(sent), _by_type(stored), _by_type(live)
    if sent_types is not None and stored_types is not None and live_types is not None:
        return all(stored_types.get(key, _ABSENT) == live_types.get(key, _ABSENT) for key in sent_types)
    return bool(stored == live)


def _by_type(items: Any) -> dict[str, Any] | None:
    """A list of conditions by type; None for anything else (a list compared whole)."""
    if not isinstance(items, list) or not all(isinstance(i, Mapping) and isinstance(i.get("type"), str) for i in items):
        return None
    return {item["type"]: item for item in items}


def _absorbed(wanted: Any, sent: Any, stored: Any, *, top: bool = False) -> bool:
    """Whether writing ``wanted`` over ``stored`` (which the write of ``sent`` left) changes nothing that write did
    not: at each place ``wanted`` holds what is stored, or what was sent there. A key ``wanted`` removes (None) is
    absorbed where it is absent; a nested key ``wanted`` lacks where that write lacked it too (another writer's, which
    an apply leaves); the top level's other keys are other writers' (never written)."""
    if wanted is None and stored is _ABSENT:
        return True
    if wanted in (stored, sent):
        return True
    if isinstance(wanted, Mapping) and isinstance(stored, Mapping):
        sent_map = sent if isinstance(sent, Mapping) else {}
        if not top and any(key not in wanted and key in sent_map for key in stored):
            return False
        return all(
            _absorbed(value, sent_map.get(key, _ABSENT), stored.get(key, _ABSENT)) for key, value in wanted.items()
        )
    if isinstance(wanted, list) and isinstance(stored, list) and len(wanted) == len(stored):
        sent_items = sent if isinstance(sent, list) and len(sent) == len(wanted) else [_ABSENT] * len(wanted)
        return all(_absorbed(*places) for places in zip(wanted, sent_items, stored, strict=True))
    return False


RESIDUES = Residues()


def write(
    client: kube_client.Client,
    kind: kinds.Kind,
    cr: objects.CustomResource,
    wanted: Mapping[str, Any],
    observe: Callable[[Mapping[str, Any]], None],
    *,
    conditions: conditions_mod.Conditions | None = None,
    given: Iterable[str] = (),
    apply_as: str | None = None,
    legacy_managers: Collection[str] = (),
    current: Callable[[], Mapping[str, Any] | None] | None = None,
    replaced_by: Callable[[Mapping[str, Any] | None], bool] | None = None,
) -> dict[str, Any] | None:
    """Write what differs from ``cr.status``; None when nothing differs (no request).

    With ``apply_as`` (and the ``conditions``), the write is a server-side apply of the status as that field manager
    (see :func:`apply_body`; what it and the ``legacy_managers`` wrote before is taken over by the first apply:
    :func:`take_over_status`), falling back to the guarded merge patch where apply would drop another writer's
    conditions, or where the schema does not declare a field okt states (the server refuses such an apply whole, and
    prunes the field from a merge patch). The apply is guarded by the resourceVersion of the object as ``current()``
    (the reader: ``okt run``'s cache) holds it just before (``cr``'s without it): the status subresource keeps the
    stored metadata, so a uid in the apply is not compared, and only that precondition keeps it off an object deleted
    and created again under the name since ``cr`` was read, which the reader may not have seen yet. Once
    ``replaced_by`` says the object read is gone or replaced — as the reader holds it, or as the API server has it
    after refusing the apply (:func:`_apply_guarded`) — nothing is sent (None). Without ``apply_as``, a merge patch of
    the difference guarded by the resourceVersion read. Either way, a difference that okt's last write of the same
    status left, on an object that still holds what it left (:class:`Residues`: another writer's key, a pruned field),
    sends nothing.
    """
    diff = status_patch(cr.status, wanted)
    if not diff:
        return None
    if RESIDUES.explain(cr.uid, wanted, cr.status):
        return None  # what differs is another writer's, or pruned: the same write left it last time (see Residues)
    body = None
    if apply_as and conditions is not None:
        body = apply_body(cr, wanted, conditions, given, apply_as, legacy_managers)
    if body is not None and apply_as is not None:
        version = cr.resource_version
        if current is not None:
            now = current()
            if replaced_by is not None and replaced_by(now):
                return None  # it would land on the new object, Ready and observedGeneration said of the old one
            if now is not None and (now.get("metadata") or {}).get("uid") == cr.uid:
                version = (now.get("metadata") or {}).get("resourceVersion") or version
        body["metadata"]["resourceVersion"] = version

        def apply(sent: dict[str, Any]) -> dict[str, Any]:
            return _apply_guarded(client, kind, cr, sent, apply_as, replaced_by)

        try:
            updated, body = _sent(apply, body)
        except _Replaced:
            return None  # the object read is gone: what it would write is not the new one's
        except errors.ApiError as exc:
            if not undeclared(exc):
                raise
            # A field the CRD's schema does not declare: an apply is refused whole for it, where a merge patch is
            # kept but for that field. The patch below writes the rest, and Residues remembers what was dropped.
        else:
            taken = take_over_status(client, kind, updated, apply_as, legacy_managers)
            if taken is not None:
                since = (taken.get("metadata") or {}).get("resourceVersion")
                try:
                    updated = apply({**body, "metadata": {**body["metadata"], "resourceVersion": since}})
                except _Replaced:
                    return None
            RESIDUES.remember(cr.uid, wanted, updated)
            observe(updated)
            return updated

    def patch(sent: dict[str, Any]) -> dict[str, Any]:
        return client.patch(kind, cr.name, sent, cr.namespace, subresource="status")

    updated, _ = _sent(patch, {"metadata": {"resourceVersion": cr.resource_version}, "status": diff})
    RESIDUES.remember(cr.uid, wanted, updated)
    observe(updated)
    return updated


class _Replaced(Exception):
    """The object a status apply was meant for is gone, or another object has its name now."""


def _apply_guarded(
    client: kube_client.Client,
    kind: kinds.Kind,
    cr: objects.CustomResource,
    body: Mapping[str, Any],
    manager: str,
    replaced_by: Callable[[Mapping[str, Any] | None], bool] | None,
) -> dict[str, Any]:
    """The answer to the status apply of ``body``, guarded by the resourceVersion it names (``cr``'s, when it names
    none): the one precondition the status subresource honours for an apply (it keeps the stored metadata, a uid
    included, whatever the apply says). One request while the object is as the reader last saw it.

    Refused for it (another writer wrote the object since, or it was deleted and created again under its name), the
    object is read anew: another uid, or none, and ``replaced_by`` says so (the reconcile gives up) and nothing is
    written; the same object, and the apply is sent again guarded by the version read, so that another controller
    writing the same status does not fail the write, up to :data:`patches.TAKE_OVER_ATTEMPTS` times.

    Raises:
        _Replaced: the object read is gone or replaced.
        okt.errors.Conflict: the object changed before each attempt.
    """
    metadata = {**(body.get("metadata") or {})}
    metadata.setdefault("resourceVersion", cr.resource_version)
    for attempt in range(patches.TAKE_OVER_ATTEMPTS):
        try:
            return client.apply({**body, "metadata": metadata}, kind, field_manager=manager, subresource="status")
        except errors.Conflict:
            if attempt == patches.TAKE_OVER_ATTEMPTS - 1:
                raise
            now = client.get_or_none(kind, cr.name, cr.namespace)
            if replaced_by is not None and replaced_by(now):
                raise _Replaced() from None
            if now is None or (now.get("metadata") or {}).get("uid") != cr.uid:
                raise
            metadata["resourceVersion"] = (now.get("metadata") or {}).get("resourceVersion")
    raise AssertionError("not reached: the last attempt returns or raises")


def _sent(
    send: Callable[[dict[str, Any]], dict[str, Any]], body: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer to ``send(body)``, and the body it took: when the API server refuses condition messages longer
    than the object's schema allows (a CRD written by hand, stricter than ``metav1.Condition``'s 32768 bytes), the
    body once more with every message cut to that length, ending with an ellipsis. The conditions land, Ready above
    all, instead of the same refusal on every reconcile (the error's report would carry the refusal's text, and be
    refused in turn); Residues then remembers the cut, which costs no further write."""
    try:
        return send(body), body
    except errors.Invalid as exc:
        limit = _message_limit(exc)
        status = body.get("status")
        items = status.get("conditions") if isinstance(status, Mapping) else None
        if limit is None or not isinstance(status, Mapping) or not isinstance(items, list):
            raise
        cut = {**body, "status": {**status, "conditions": [_within(item, limit) for item in items]}}
        return send(cut), cut


_MESSAGE_FIELD = re.compile(r"status\.conditions(\[\d+\])?\.message")
_LIMIT = re.compile(r"(?:at most|longer than|more than) (\d+)")


def _message_limit(exc: errors.Invalid) -> int | None:
    """The length a 422's cause says a condition message may not exceed; None when no cause says so. The cause's
    text quotes the refused value first: the limit is read from what follows it."""
    for cause in exc.causes:
        if _MESSAGE_FIELD.fullmatch(cause.field):
            found = _LIMIT.findall(cause.message)
            if found:
                return int(found[-1])
    return None


def _within(item: Any, limit: int) -> Any:
    """``item`` with its message cut to ``limit`` UTF-8 bytes (so characters too, whichever the schema counts)."""
    message = item.get("message") if isinstance(item, Mapping) else None
    if not isinstance(message, str):
        return item
    encoded = message.encode("utf-8", errors="replace")
    if len(encoded) <= limit:
        return item
    room = limit - len(conditions_mod.TRUNCATION_MARK.encode("utf-8"))
    if room < 0:
        return {**item, "message": ""}
    # "ignore" drops a multi-byte character split by the cut instead of leaving half of it behind.
    return {**item, "message": encoded[:room].decode("utf-8", errors="ignore") + conditions_mod.TRUNCATION_MARK}


UNDECLARED = "field not declared in schema"
"""What the API server answers an apply stating a field its schema does not declare (a 500 on Kubernetes 1.20)."""


def undeclared(exc: errors.ApiError) -> bool:
    """Whether ``exc`` refused an apply for a field the object's schema does not declare: a CRD written by hand whose
    status schema lacks a field okt writes (``relatedObjects``, okt's bookkeeping, an ``observedGeneration``)."""
    return UNDECLARED in exc.api_message
