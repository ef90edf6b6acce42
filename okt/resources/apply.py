"""Create-or-update with checksums: the decision per child, and the one request (or none) it takes.

Why this exists: "write only what changed" is OKT's promise, and the two usual ways of keeping it are both broken:
hashing alone misses drift outside the hashed fields and loops forever when the server defaults a hashed field;
deep-equality against the live object (controller-runtime's habit) sees every server default as drift. okt combines
a checksum of what the author asked for with a subset comparison against the live object.

The decision (DESIGN.md "Resources, registry, checksum idempotency"):

* missing → **create**, with the controller ownerReference, the owner label and the hash annotation;
* present, stored hash == desired hash **and** every desired field present with the same value → **unchanged**,
  no request at all;
* being deleted (``deletionTimestamp`` set, a finalizer holds it) → **wait**: not in place, nothing sent; the
  reconcile is retried and creates the child again once it is gone;
* otherwise → **update**. ``Resource`` (immutable kinds) is never updated.

The checksum decides *whether* a request is sent; the write strategy decides *what* it does:

* ``Strategy.APPLY`` (the default): create and update are both a server-side apply of the whole desired object, as
  field manager ``okt`` (configurable) with ``force``. The server keeps, per field, who set it: a field okt applied
  before and the template no longer has is removed, a field another manager owns (an HPA's ``replicas`` the template
  does not set, another controller's annotation) is never touched, and an out-of-band edit of an okt field is taken
  back — items of an okt list put in another order too, by one JSON patch (:func:`_put_back_in_order`), as an apply
  keeps the live order, and items someone made of okt's by editing their key (a port renumbered), which an apply
  would keep beside okt's (:func:`_drop_rekeyed`). Objects written by okt's older merge path (manager ``okt``,
  operation ``Update``), or under one of the reconciler's ``legacy_field_managers``, are taken over by the first
  apply that needs to write them (:func:`take_over`), so a field removed from the template leaves then too; before
  the apply, which writes the checksum, when the apply would leave one of their fields (:func:`_apply`).
* ``Strategy.MERGE``: a create, then merge patches guarded by the live resourceVersion (a 409 is reported, never
  retried blindly over someone else's write). A merge patch cannot remove what the template no longer sets (but for
  the resource class's ``replace_fields``, e.g. a ConfigMap's ``data``); kept for servers or kinds where apply
  misbehaves.

Guarantees: server-defaulted fields never cause a write (they are not in the desired object); an out-of-band edit of a
field okt sets is repaired on the next reconcile; labels and annotations other writers set are left alone; foreign
ownerReferences are kept. A field the server stores otherwise than okt wrote it, even in the very answer to okt's
write — a zero value it leaves out (``stdin: false``, an env var's ``value: ""``, ``hostPort: 0``) — is no drift
while it holds what the server made of okt's value (:class:`ServerForms`): writing again could not change it. That
memory lives in the process; after a restart, such a child is written once more. A resource quantity of a built-in
kind written as a number (``cpu: 1``, ``memory: 1024``) is applied as its text, which server-side apply requires.

An update's apply carries the uid of the object okt read and decided for: one deleted and created again under its
name since (okt's cache may not have seen it yet) is not written from what okt read of the old one — its initial data
(a generated password) carried over, its list items judged against the old ones — but refused by the API server, and
reported as a conflict retried soon (the merge path's resourceVersion refuses it the same way).

Caveat (apply): a create is an apply too, so an object that appeared between okt's read and its create is written
over like an update — unless another controller owns it: the server refuses a second controller reference (422) and
okt reports it as owned by another; so it does an update of a child another controller adopted since okt read it.
One okt's own create made, its answer lost, is read first instead (:func:`create`): its initial data stays.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import enum
import json
import math
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pydantic

from okt import errors
from okt import names as names_mod
from okt.kube import client as kube_client
from okt.kube import kinds, objects, patches
from okt.resources import checksum, resource

DEFAULT_PREFIX = names_mod.DEFAULT_PREFIX
DEFAULT_FIELD_MANAGER = "okt"
TAKE_OVER_ATTEMPTS = patches.TAKE_OVER_ATTEMPTS
"""How often a take-over is tried when another writer changes the object between okt's apply and its take-over."""


class Strategy(enum.Enum):
    """How okt writes children (see the module docstring)."""

    APPLY = "apply"
    MERGE = "merge"


@dataclasses.dataclass(frozen=True)
class WriteOptions:
    """How a reconciler's children are written: the strategy and, for apply, the field manager."""

    strategy: Strategy = Strategy.APPLY
    field_manager: str = DEFAULT_FIELD_MANAGER
    hash_annotation: str = names_mod.Names().hash_annotation
    """The annotation that holds the child's checksum (from the reconciler's prefix)."""
    legacy_labels: frozenset[str] = frozenset()
    """okt's labels under the reconciler's ``legacy_prefixes``: an update removes those the child carries."""
    legacy_annotations: frozenset[str] = frozenset()
    """okt's annotations under the reconciler's ``legacy_prefixes`` (its checksum): removed the same way."""
    legacy_field_managers: frozenset[str] = frozenset()
    """Field managers an earlier version of the operator wrote children as (the reconciler's
    ``legacy_field_managers``): an apply takes over the fields they own (:func:`take_over`)."""


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    REFUSE = "refuse"
    """The live object is controlled by another owner: okt never adopts it (controller-runtime's rule)."""
    WAIT = "wait"
    """The live object is being deleted (a finalizer holds it): it is not in place, and no write can keep it; okt
    creates it again once it is gone."""


@dataclasses.dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    drift: tuple[str, ...] = ()

    @property
    def drift_only(self) -> bool:
        """An update while the stored hash is the desired one: the template is the one okt last wrote, and the live
        object drifted from it."""
        return self.action is Action.UPDATE and self.reason == "drift"


def prepare(res: resource.Resource, owner: objects.CustomResource | None, names: names_mod.Names) -> str:
    """Finish ``res.desired`` (normalised, owned, labelled, hashed) and return the desired hash.

    Idempotent: the hash is taken after the owner label is stamped and without a hash annotation of an earlier call,
    so preparing a prepared resource again gives the same hash and the same desired object.

    Raises:
        okt.errors.PermanentError: the child is outside its namespaced owner's namespace (:func:`check_ownable`).
    """
    res.normalize()
    res.check_identity()
    meta = res.desired.setdefault("metadata", {})
    if owner is not None:
        check_ownable(res, owner)
        meta.setdefault("labels", {})[names.owner_label] = owner.uid
        # Owner references the template or a mutation set stay beside okt's controller reference: they are part of
        # the desired object okt writes, like any other field the author sets.
        kept = [ref for ref in meta.get("ownerReferences") or () if ref.get("uid") != owner.uid]
        meta["ownerReferences"] = [*kept, owner.owner_reference()]
    annotations = meta.setdefault("annotations", {})
    annotations.pop(names.hash_annotation, None)
    digest = checksum.checksum(res.hashable_ref())
    annotations[names.hash_annotation] = digest
    return digest


def check_ownable(res: resource.Resource, owner: objects.CustomResource) -> None:
    """Refuse a child that its owner's controller reference cannot hold: Kubernetes resolves an owner reference in
    the child's own namespace, so a namespaced owner can own only children of its namespace.

    The API server stores any such reference; the garbage collector then deletes a namespaced child whose owner is
    in another namespace as soon as it sees it (okt would create it again on every reconcile, reporting Ready), and
    ignores the reference of a cluster-scoped child to a namespaced owner (the child outlives its owner, and an
    ``OwnerRefInvalidNamespace`` Event is all that says so). controller-runtime refuses both the same way.

    Raises:
        okt.errors.PermanentError: naming the child, where it is and where its owner is; retrying cannot help.
    """
    if owner.namespace is None or res.namespace == owner.namespace:
        return
    where = f"in namespace {res.namespace}" if res.namespace else "in no namespace"
    raise errors.PermanentError(
        f"{res.describe()} is {where}, but its owner {owner.kind} {owner.name} is in namespace {owner.namespace}: "
        "a namespaced owner can own only objects of its namespace (Kubernetes would delete or orphan this one)"
    )


def _comparable(desired: Mapping[str, Any], *, marked: bool = True) -> dict[str, Any]:
    """What the drift check compares of ``desired``; with ``marked``, a built-in kind's quantities marked as such
    (:class:`okt.resources.checksum.Quantity`: they match the canonical form the server stores, no other value
    does). Marking copies the object, and only widens what matches: unmarked, the view is the cheaper first look."""
    body = {k: v for k, v in desired.items() if k not in ("status", "metadata")}
    meta = desired.get("metadata") or {}
    body["metadata"] = {k: meta[k] for k in ("labels", "annotations") if k in meta}
    if marked and kinds.is_builtin_group(str(desired.get("apiVersion") or "")):
        body = json_copy(body)
        _convert_quantities(body, _marked_quantity)
    return body


def drift_view(res: resource.Resource) -> dict[str, Any]:
    """The part of the desired object the drift check compares with the live one: what ``hashable_ref()`` covers.

    A desired field is compared when ``hashable_ref()`` holds it at the same path (its top-level ``labels`` and
    ``annotations`` stand for ``metadata``'s, as the default builds them); a mapping is narrowed key by key, anything
    else is covered whole. So a field left out of the hash is not repaired either: another controller may manage
    it (OKT's contract). A ``hashable_ref()`` that is not a mapping (a version string) covers no field.
    """
    shape = _drift_shape(res)
    return {} if shape is None else checksum.narrowed(_comparable(res.desired), shape)


def in_place(res: resource.Resource, live: Mapping[str, Any]) -> bool:
    """Whether ``live`` holds every field of :func:`drift_view` — ``checksum.is_subset(drift_view(res), live)`` in one
    walk, without building the view (every child of every reconcile is checked; drift is the rare case). The view's
    quantities are marked only when the unmarked one differs from ``live``: a template's quantities written as the
    server stores them (``memory: 64Mi``) then cost no copy of the object."""
    shape = _drift_shape(res)
    if shape is None or checksum.is_subset_within(_comparable(res.desired, marked=False), shape, live):
        return True
    return kinds.is_builtin_group(str(res.desired.get("apiVersion") or "")) and checksum.is_subset_within(
        _comparable(res.desired), shape, live
    )


def _drift_shape(res: resource.Resource) -> dict[str, Any] | None:
    """``hashable_ref()`` shaped like the object (its ``labels`` and ``annotations`` under ``metadata``), or None."""
    ref = res.hashable_ref()
    if isinstance(ref, pydantic.BaseModel):
        ref = ref.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(ref, Mapping):
        return None
    shape = {k: v for k, v in ref.items() if k not in ("labels", "annotations", "metadata")}
    metadata = dict(ref.get("metadata") or {}) if isinstance(ref.get("metadata"), Mapping) else {}
    metadata.update({k: ref[k] for k in ("labels", "annotations") if k in ref})
    if metadata:
        shape["metadata"] = metadata
    return shape


def _owned_by(live: Mapping[str, Any], owner: objects.CustomResource | None) -> bool:
    """Whether ``live`` carries okt's controller reference to ``owner`` as okt writes it: ``blockOwnerDeletion``
    included, without which a foreground deletion of the owner no longer waits for the child."""
    if owner is None:
        return True
    ref = objects.controller_of(live)
    return ref is not None and ref.get("uid") == owner.uid and ref.get("blockOwnerDeletion") is True


def _labelled(live: Mapping[str, Any], label: str, value: str) -> bool:
    """Whether ``live`` carries ``label`` with ``value`` (a string equal to it): ``checksum.is_subset`` of that one
    label, asked of every child of every reconcile without the drift report's walk, which builds a path per level."""
    meta = live.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    found = labels.get(label) if isinstance(labels, Mapping) else None
    return isinstance(found, str) and found == value


def prunable(obj: Mapping[str, Any], owner_uid: str, names: names_mod.Names) -> bool:
    """The one prune rule: okt deletes only what it created for this owner — an object whose controller
    ownerReference is the owner *and* that carries okt's owner label with the owner's uid (under the prefix, or under
    one of ``legacy_prefixes``: an earlier version of the operator made it). An object someone else made and pointed
    at the owner (no label), or labelled by hand without the controller reference, is never pruned.
    """
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if not any(labels.get(label) == owner_uid for label in names.owner_labels):
        return False
    return objects.controller_uid(obj) == owner_uid


def foreign_controller(live: Mapping[str, Any], owner: objects.CustomResource | None) -> Mapping[str, Any] | None:
    """The controller ownerReference of ``live`` when it points at another object than ``owner``."""
    ref = objects.controller_of(live) if owner is not None else None
    return ref if ref is not None and owner is not None and ref.get("uid") != owner.uid else None


class ServerForms:
    """What the API server made of okt's last write of each child, where it differs from what okt wrote.

    Why this exists: the server leaves out the zero value of many built-in fields (``stdin: false``, ``value: ""``,
    ``hostPort: 0`` are not stored), so a desired field that sets one never reads as in place, and a drift check that
    trusts only the live object writes again on every reconcile — for nothing, as the answer to each write shows.
    Whether a missing field was left out by the server or removed by someone (a ``false`` that matters, such as
    ``allowPrivilegeEscalation``) cannot be told from the live object alone; the answer to okt's own write tells it.

    So after each write okt remembers, per object, the fields that differ in the server's answer (path and stored
    value) for that desired state; a later drift exactly made of those fields with those values is the server's form,
    not drift. Anything else — another value there, another field, another desired state — is compared as ever.
    Bounded (the oldest entries are forgotten first: such a child is written once more); safe across worker threads.
    """

    LIMIT = 8192

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._forms: collections.OrderedDict[str, tuple[str, frozenset[tuple[str, str | None]]]] = (
            collections.OrderedDict()
        )

    def remember(self, view: Mapping[str, Any] | None, res: resource.Resource, written: Mapping[str, Any]) -> None:
        """Record what differs between the drift view okt wrote from (``view``; None: :func:`drift_view` of ``res``,
        whose desired object its write left as the next reconcile builds it) and the server's answer."""
        uid = (written.get("metadata") or {}).get("uid")
        if not uid:
            return
        if view is None and in_place(res, written):
            found = []  # the usual case, on every write: the answer holds what okt wrote (one walk, no view built)
        else:
            view = drift_view(res) if view is None else view
            found = checksum.mismatches(view, written)
        with self._lock:
            if not found:
                self._forms.pop(uid, None)
                return
            self._forms[uid] = (checksum.checksum(view), frozenset(found))
            self._forms.move_to_end(uid)
            while len(self._forms) > self._limit:
                self._forms.popitem(last=False)

    def explain(self, live: Mapping[str, Any], view: Mapping[str, Any], found: list[tuple[str, str | None]]) -> bool:
        """Whether every mismatch ``found`` between ``view`` and ``live`` is what the server made of okt's write."""
        uid = (live.get("metadata") or {}).get("uid")
        with self._lock:
            known = self._forms.get(uid) if uid else None
        return known is not None and set(found) <= known[1] and known[0] == checksum.checksum(view)


SERVER_FORMS = ServerForms()


def decide(
    res: resource.Resource, live: Mapping[str, Any] | None, owner: objects.CustomResource | None, names: names_mod.Names
) -> Decision:
    """What to do for one prepared resource, given its live object (or None)."""
    if live is None:
        return Decision(Action.CREATE, "missing")
    deleted = (live.get("metadata") or {}).get("deletionTimestamp")
    if deleted:
        return Decision(Action.WAIT, f"being deleted since {deleted}")
    other = foreign_controller(live, owner)
    if other is not None:
        return Decision(Action.REFUSE, f"controlled by {other.get('kind')}/{other.get('name')}")
    if not res.mutable:
        return Decision(Action.UNCHANGED, "immutable resource exists")
    wanted = (res.desired.get("metadata") or {}).get("annotations", {}).get(names.hash_annotation)
    stored = ((live.get("metadata") or {}).get("annotations") or {}).get(names.hash_annotation)
    drift: tuple[str, ...] = ()
    if not in_place(res, live):
        view = drift_view(res)
        found = checksum.mismatches(view, live)
        if not SERVER_FORMS.explain(live, view, found):
            drift = tuple(path for path, _ in found)
    if not _owned_by(live, owner):
        drift = (*drift, ".metadata.ownerReferences")
    if owner is not None and not _labelled(live, names.owner_label, owner.uid):
        # okt's owner label is what prunes the child (prunable), like the controller reference: it is repaired
        # whatever hashable_ref() covers.
        label = {"metadata": {"labels": {names.owner_label: owner.uid}}}
        drift = (*drift, *(path for path in checksum.diff_paths(label, live) if path not in drift))
    if stored == wanted and not drift:
        return Decision(Action.UNCHANGED, "hash and fields match")
    return Decision(Action.UPDATE, "hash changed" if stored != wanted else "drift", drift)


def _replace_patch(live: Any, desired: Any) -> Any:
    """A merge-patch value turning ``live`` into exactly ``desired`` (keys okt no longer sets become null)."""
    if isinstance(live, Mapping) and isinstance(desired, Mapping):
        patch: dict[str, Any] = {k: None for k in live if k not in desired}
        for key, value in desired.items():
            patch[key] = _replace_patch(live.get(key), value) if key in live else value
        return patch
    return desired


def update_patch(
    res: resource.Resource,
    live: Mapping[str, Any],
    owner: objects.CustomResource | None,
    options: WriteOptions = WriteOptions(),
) -> dict[str, Any]:
    """The merge patch of an update, guarded by the live resourceVersion. okt's labels and annotations under legacy
    prefixes (``options``) that the child carries are removed: a merge patch keeps every key it does not name."""
    live_meta = live.get("metadata") or {}
    meta = res.desired.get("metadata") or {}
    patch_meta: dict[str, Any] = {"resourceVersion": live_meta.get("resourceVersion")}
    for field, legacy in (("labels", options.legacy_labels), ("annotations", options.legacy_annotations)):
        gone = dict.fromkeys(key for key in legacy if key in (live_meta.get(field) or {}))
        if meta.get(field) or gone:
            patch_meta[field] = {**gone, **(meta.get(field) or {})}
    if owner is not None and not _owned_by(live, owner):
        foreign = [r for r in live_meta.get("ownerReferences") or [] if r.get("uid") != owner.uid]
        patch_meta["ownerReferences"] = [*[{**r, "controller": False} for r in foreign], owner.owner_reference()]
    patch: dict[str, Any] = {"metadata": patch_meta}
    for field, value in res.desired.items():
        if field in ("apiVersion", "kind", "metadata", "status"):
            continue
        if field in res.replace_fields:
            patch[field] = _replace_patch(live.get(field), value)
        else:
            patch[field] = json_copy(value)
    return patch


Observer = Callable[[Mapping[str, Any]], None]


json_copy = objects.json_copy


def apply_body(res: resource.Resource) -> dict[str, Any]:
    """The apply configuration of a prepared resource: okt's whole intent for the object, nothing of the server's."""
    body = {k: json_copy(v) for k, v in res.desired.items() if k != "status"}
    meta = body.setdefault("metadata", {})
    for field in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"):
        meta.pop(field, None)
    if kinds.is_builtin_group(str(body.get("apiVersion") or "")):
        _default_port_protocols(body)
        _convert_quantities(body, _quantity_text)
    return body


def _default_port_protocols(value: Any) -> None:
    """Spell out ``protocol: TCP`` on every port of a Service or container that leaves it to the server.

    ``protocol`` is part of the key of those lists, and servers before 1.21 refuse an apply whose list item omits a
    key field (``associative list with keys has an element that omits key field "protocol"``). TCP is the server's
    own default, so the stored object and okt's hash stay what they were. Built-in kinds only: a custom resource's
    ``ports`` are its own (no such key, perhaps another meaning of ``protocol``), and get nothing okt was not asked for.
    """
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "ports" and isinstance(item, list):
                for port in item:
                    if isinstance(port, dict) and ("port" in port or "containerPort" in port):
                        port.setdefault("protocol", "TCP")
            else:
                _default_port_protocols(item)
    elif isinstance(value, list):
        for item in value:
            _default_port_protocols(item)


_QUANTITY_FIELDS = frozenset({"hard", "capacity", "overhead", "podFixed", "sizeLimit", "maximumVolumeSize"})
"""Keys of built-in kinds whose value is a quantity, or maps names to quantities: a ResourceQuota's ``hard``, a
PersistentVolume's ``capacity``, a Pod's ``overhead``, a RuntimeClass's ``overhead.podFixed``, an emptyDir's
``sizeLimit``, a CSIStorageCapacity's ``capacity`` and ``maximumVolumeSize``. A ``resources`` map's ``limits`` and
``requests`` (a container's, a Pod's, a PersistentVolumeClaim's) are quantities too, and so are a LimitRange's and an
autoscaler's metric targets."""
_LIMIT_RANGE_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _convert_quantities(body: dict[str, Any], convert: Callable[[Any], Any]) -> None:
    """Pass each value of a resource quantity field of a built-in kind through ``convert``: :func:`_quantity_text`
    writes each number as the text JSON gives it (``cpu: 0.5`` is sent as ``"0.5"``), :func:`_marked_quantity` marks
    each quantity for the drift check.

    A template's ``cpu: 1`` or ``memory: 1024`` is a number once YAML has read it, and server-side apply refuses a
    number where a quantity goes (``expected string``), though a create or a merge patch takes it. The text is the
    same quantity, so the server stores what it stored from the number, and okt's hash (of the desired object, which
    keeps the number) and its drift check (which matches a number with its canonical quantity) stay what they were.
    """
    _quantity_fields(body, convert)
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    if body.get("kind") == "LimitRange" and isinstance(spec.get("limits"), list):
        for item in spec["limits"]:
            if isinstance(item, dict):
                for key in _LIMIT_RANGE_FIELDS:
                    if key in item:
                        item[key] = _quantities(item[key], convert)
    if body.get("kind") == "HorizontalPodAutoscaler" and isinstance(spec.get("metrics"), list):
        # Each metric's source (``resource``, ``pods``, ``object``, ``external``, ``containerResource``): the
        # ``target``'s ``value``/``averageValue`` (v2, v2beta2), or its ``targetValue``/``targetAverageValue``
        # (v2beta1).
        metrics = [metric for metric in spec["metrics"] if isinstance(metric, dict)]
        for source in [source for metric in metrics for source in metric.values() if isinstance(source, dict)]:
            target = source.get("target")
            for holder, keys in ((target, ("value", "averageValue")), (source, ("targetValue", "targetAverageValue"))):
                if isinstance(holder, dict):
                    for key in keys:
                        if key in holder:
                            holder[key] = convert(holder[key])


def _quantity_fields(value: Any, convert: Callable[[Any], Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "resources" and isinstance(item, dict):
                for field in ("limits", "requests"):
                    if isinstance(item.get(field), dict):
                        item[field] = _quantities(item[field], convert)
            elif key in _QUANTITY_FIELDS:
                value[key] = _quantities(item, convert)
            _quantity_fields(value[key], convert)
    elif isinstance(value, list):
        for item in value:
            _quantity_fields(item, convert)


def _quantities(value: Any, convert: Callable[[Any], Any]) -> Any:
    """A quantity field's value (the value, or a mapping's values) passed through ``convert``."""
    if isinstance(value, dict):
        return {key: convert(item) for key, item in value.items()}
    return convert(value)


def _quantity_text(value: Any) -> Any:
    """A number as the text JSON writes it (what :func:`okt.resources.checksum.canonical_quantity` reads); anything
    else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return value
    return str(value) if isinstance(value, int) else repr(value)


def _marked_quantity(value: Any) -> Any:
    """A quantity as the drift check compares it: its :func:`_quantity_text`, marked as a quantity; anything else
    (a boolean, a mapping) as it is."""
    text = _quantity_text(value)
    return checksum.Quantity(text) if isinstance(text, str) else text


def _pristine_view(res: resource.Resource) -> dict[str, Any] | None:
    """The drift view as the next reconcile builds it — without the initial data — when the write's
    ``mutate_with_initial_data()`` may change it; None when the resource keeps the default one, which changes nothing
    (the view is then built only if the answer differs)."""
    if type(res).mutate_with_initial_data is resource.Resource.mutate_with_initial_data:
        return None
    return drift_view(res)


def create(
    client: kube_client.Client, res: resource.Resource, observe: Observer, options: WriteOptions = WriteOptions()
) -> dict[str, Any]:
    """Create ``res``, which okt's read found missing.

    With apply, a create is an apply, which writes over an object that exists: one okt's own earlier create made,
    whose answer never came (a timeout, a cut connection) and which okt's read has not seen yet (the cache before the
    watch brings it), would get its initial data generated again — a password changed under its users. So once a
    create of a child ended without an answer (:data:`UNANSWERED_CREATES`), the next one reads it first; found, it
    is refused as the merge path's create is, and the caller decides again from what it read (an update keeps the
    initial data).

    Raises:
        okt.errors.Conflict: (``already_exists``) the object exists: an earlier create landed unanswered.
    """
    if options.strategy is Strategy.APPLY:
        _check_unanswered(client, res)
    view = _pristine_view(res)
    res.mutate_with_initial_data()
    res.check_identity()
    kind = client.kind_of(res.desired)
    if options.strategy is Strategy.APPLY:
        key = kinds.key_of(res.desired)
        try:
            created = _apply(client, kind, res, options)
        except errors.ApiError as exc:
            if exc.status == 0 or exc.status >= 500:  # no answer, or the server's own failure: it may have landed
                UNANSWERED_CREATES.add(key)
            raise
        UNANSWERED_CREATES.discard(key)
    else:
        created = client.create(res.desired, kind)
    SERVER_FORMS.remember(view, res, created)
    res.live = created
    observe(created)
    return created


class Unanswered:
    """The children (by :func:`okt.kube.kinds.key_of`) whose last create by this process ended without an answer, so
    may have landed unseen. Bounded (the oldest are forgotten first); safe across worker threads."""

    LIMIT = 8192

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._keys: collections.OrderedDict[kinds.ObjectKey, None] = collections.OrderedDict()

    def add(self, key: kinds.ObjectKey) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self._limit:
                self._keys.popitem(last=False)

    def discard(self, key: kinds.ObjectKey) -> None:
        with self._lock:
            self._keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys


UNANSWERED_CREATES = Unanswered()


def _check_unanswered(client: kube_client.Client, res: resource.Resource) -> None:
    """Raise a ``Conflict`` (``AlreadyExists``) when an earlier create of ``res`` ended unanswered and the object
    exists: see :func:`create`."""
    key = kinds.key_of(res.desired)
    if key not in UNANSWERED_CREATES:
        return
    if client.get_or_none(client.kind_of(res.desired), res.name, res.namespace) is None:
        return  # it did not land: created below, from okt's read
    UNANSWERED_CREATES.discard(key)
    raise errors.Conflict(
        409,
        "AlreadyExists",
        f"{res.describe()} exists: okt's earlier create of it landed without an answer; decided again from it",
    )


def update(
    client: kube_client.Client,
    res: resource.Resource,
    live: Mapping[str, Any],
    owner: objects.CustomResource | None,
    observe: Observer,
    options: WriteOptions = WriteOptions(),
    *,
    drift_only: bool = False,
) -> dict[str, Any]:
    """Write ``res`` over ``live``. ``drift_only`` (:attr:`Decision.drift_only`): the template is the one okt last
    wrote, so an item of okt's lists missing from ``live`` was taken away by someone (:func:`_drop_rekeyed`)."""
    view = _pristine_view(res)
    _keep_initial_data(res, live)
    res.check_identity()
    kind = client.kind_of(res.desired)
    if options.strategy is Strategy.APPLY:
        # No preserve_from_live: what the template does not set (a Service's clusterIP) is not applied, so it is not
        # okt's, and the server keeps it.
        uid = (live.get("metadata") or {}).get("uid")
        try:
            updated = _apply(client, kind, res, options, uid, live)
        except errors.Invalid as exc:
            # Refused for a duplicate: perhaps an item someone made of okt's beside the one okt applies again (a named
            # port renumbered: two ports of one name). Whatever the template, okt's items win that clash. A refusal
            # for anything else (a value of okt's own template) is reported as it is, touching nothing of anyone's.
            if not any(cause.reason == DUPLICATE for cause in exc.causes):
                raise
            current = client.get(kind, res.name, res.namespace)
            if (current.get("metadata") or {}).get("uid") != uid:
                raise _replaced(res, uid, exc) from exc
            if _drop_rekeyed(client, kind, apply_body(res), current, current, options) is None:
                raise
            updated = _apply(client, kind, res, options, uid, current)
        else:
            shape = _drift_shape(res) if drift_only else None
            if shape is not None:
                desired = checksum.narrowed(apply_body(res), shape)
                updated = _drop_rekeyed(client, kind, desired, live, updated, options) or updated
        updated = _put_back_in_order(client, kind, drift_view(res) if view is None else view, updated, options)
    else:
        res.preserve_from_live(live)
        updated = client.patch(kind, res.name, update_patch(res, live, owner, options), res.namespace)
    SERVER_FORMS.remember(view, res, updated)
    res.live = updated
    observe(updated)
    return updated


UID_FIELD = "metadata.uid"
"""The field the API server names when an apply's uid is not the object's: it was deleted and created again."""


def _uid_refused(exc: errors.ApiError) -> bool:
    """Whether the API server refused a write for its ``metadata.uid`` (the object there has another)."""
    return any(cause.field == UID_FIELD for cause in exc.causes)


def _replaced(res: resource.Resource, uid: str | None, exc: errors.ApiError | None = None) -> errors.Conflict:
    """The error of an update refused because the child okt read (``uid``) was deleted and another object created
    under its name since: a conflict, retried soon; the next reconcile reads that object and decides anew."""
    return errors.Conflict(
        409,
        "Conflict",
        f"{res.describe()} was deleted and created again (another uid than {uid}) since okt read it: nothing was "
        "written; the next reconcile decides from the object there now",
        method=exc.method if exc is not None else "",
        url=exc.url if exc is not None else "",
    )


def _put_back_in_order(
    client: kube_client.Client,
    kind: kinds.Kind,
    view: Mapping[str, Any],
    applied: dict[str, Any],
    options: WriteOptions,
) -> dict[str, Any]:
    """Put the items of okt's lists that someone reordered back in the template's order; the applied object, or the
    answer to that one more write.

    An apply merges list items by their key and keeps the live order of those it finds, so it cannot undo a
    reordering (env vars, whose order matters: one may refer to those before it). One JSON patch replaces each such
    list with its own live items in the template's order: nothing is added, dropped or changed. It first tests that
    each list still holds those items as read (:func:`patches.guard`), not the object's resourceVersion, which a
    workload's controller bumps again and again while the reordered pod template rolls out; a patch whose test fails
    all the same (someone changed the list) is worked out again from the object read anew, up to
    ``TAKE_OVER_ATTEMPTS``. The next apply takes over what it wrote (:func:`take_over`).
    """

    def plan(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        reordered = _reordered_lists(view, obj, "")
        if not reordered:
            return []
        guard = patches.guard([(pointer, live) for pointer, live, _ in reordered], obj.get("metadata") or {})
        return [*guard, *({"op": "replace", "path": pointer, "value": items} for pointer, _, items in reordered)]

    return _patch_guarded(client, kind, applied, plan, options)[0]


def _drop_rekeyed(
    client: kube_client.Client,
    kind: kinds.Kind,
    desired: Mapping[str, Any],
    before: Mapping[str, Any],
    after: dict[str, Any],
    options: WriteOptions,
) -> dict[str, Any] | None:
    """Remove the items another writer made of okt's: the answer to that one more write, or None when there are none.

    An item of a keyed list (a port by ``containerPort``, an env var by ``name``) whose key someone edited (a port
    renumbered by ``kubectl edit``, an env var renamed) is another manager's item from then on: an apply adds okt's
    item back beside it, and cannot remove it. So in each list of ``desired`` that ``before`` (the object okt
    wrote over) lacks one of okt's items in, the items of ``before`` that okt's template does not hold are removed
    from ``after``, by one JSON patch. Items of other managers in lists where all of okt's items are in place are never
    touched. A list's keys are read from ``after``'s ``managedFields``: a list no manager keys there is left as it is.

    The patch tests, before it removes anything, that each index still holds the item of that key
    (:func:`patches.guard`), not the object's resourceVersion: a workload's controller rewrites the status many times
    in a row after a change of the pod template (the edit's, then okt's own write), and a patch tested against the
    resourceVersion lost to those writes at each attempt. A patch whose test fails all the same (the list changed in
    between) is worked out again from the object read anew, as :func:`take_over` does, up to ``TAKE_OVER_ATTEMPTS``.
    """

    def plan(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        found = _rekeyed(desired, before, obj, _list_keys(obj), (), "")
        if not found:
            return []
        guard = patches.guard([each for _, item_keys in found for each in item_keys], obj.get("metadata") or {})
        return [*guard, *({"op": "remove", "path": pointer} for pointer, _ in found)]

    patched, sent = _patch_guarded(client, kind, after, plan, options)
    return patched if sent else None


def _patch_guarded(
    client: kube_client.Client,
    kind: kinds.Kind,
    obj: dict[str, Any],
    plan: Callable[[Mapping[str, Any]], list[dict[str, Any]]],
    options: WriteOptions,
) -> tuple[dict[str, Any], bool]:
    """Send the JSON patch ``plan`` works out from ``obj`` (its tests first: :func:`patches.guard`), and the object with
    whether a patch was sent. A patch refused for its tests alone (someone wrote the lists in between) is worked out
    again from the object read anew, up to ``TAKE_OVER_ATTEMPTS``; one refused for what it writes is raised (reading
    again cannot help), as is the last attempt's refusal. An empty plan sends nothing."""
    for attempt in range(TAKE_OVER_ATTEMPTS):
        patch = plan(obj)
        if not patch:
            return obj, False
        meta = obj.get("metadata") or {}
        try:
            answer = client.patch(
                kind, meta["name"], patch, meta.get("namespace"), patch_type="json", field_manager=options.field_manager
            )
            return answer, True
        except errors.Invalid as exc:
            if exc.causes or attempt == TAKE_OVER_ATTEMPTS - 1:
                raise
            obj = client.get(kind, meta["name"], meta.get("namespace"))
    raise AssertionError("not reached: the last attempt returns or raises")


DUPLICATE = "FieldValueDuplicate"
"""The cause the API server gives a value that must be unique in its list and is not (a port's name)."""

_ITEM = 0
"""Stands for any item of a list in a :func:`_list_keys` path (field names are strings)."""


def _list_keys(obj: Mapping[str, Any]) -> dict[tuple[str | int, ...], tuple[str, ...]]:
    """The key fields of each keyed list of ``obj``, by path, as its ``managedFields`` name items
    (``k:{"containerPort":8080,"protocol":"TCP"}``)."""
    keys: dict[tuple[str | int, ...], tuple[str, ...]] = {}

    def walk(fields: Mapping[str, Any], path: tuple[str | int, ...]) -> None:
        for name, inner in fields.items():
            if not isinstance(inner, Mapping):
                continue
            if name.startswith("f:"):
                walk(inner, (*path, name[2:]))
            elif name.startswith("k:"):
                try:
                    key = json.loads(name[2:])
                except ValueError:
                    continue
                if isinstance(key, dict):
                    keys[path] = tuple(sorted(key))
                walk(inner, (*path, _ITEM))

    for entry in (obj.get("metadata") or {}).get("managedFields") or ():
        walk(entry.get("fieldsV1") or {}, ())
    return keys


def _rekeyed(
    desired: Any,
    before: Any,
    after: Any,
    keys: Mapping[tuple[str | int, ...], tuple[str, ...]],
    path: tuple[str | int, ...],
    pointer: str,
) -> list[tuple[str, list[tuple[str, Any]]]]:
    """The JSON pointers of :func:`_drop_rekeyed`'s items in ``after``, in an order one JSON patch can remove them:
    inside an item before the item's own list, and each list's from its last item to its first; each with the
    pointer and value of each of its key fields."""
    if isinstance(desired, Mapping) and isinstance(after, Mapping):
        found: list[tuple[str, list[tuple[str, Any]]]] = []
        for key, value in desired.items():
            if key in after:
                earlier = before.get(key) if isinstance(before, Mapping) else None
                found.extend(_rekeyed(value, earlier, after[key], keys, (*path, key), f"{pointer}/{_escaped(key)}"))
        return found
    names = keys.get(path)
    if names is None or not isinstance(desired, list) or not isinstance(after, list):
        return []

    def key_of(item: Any) -> str | None:
        return checksum.canonical_json([item.get(name) for name in names]) if isinstance(item, Mapping) else None

    ours = {key_of(item): item for item in desired}
    earlier = {key_of(item): item for item in before} if isinstance(before, list) else {}
    found = []
    for index, item in enumerate(after):
        key = key_of(item)
        if key in ours:
            found.extend(_rekeyed(ours[key], earlier.get(key), item, keys, (*path, _ITEM), f"{pointer}/{index}"))
    if ours.keys() - earlier.keys():
        foreign = [i for i, item in enumerate(after) if key_of(item) not in ours and key_of(item) in earlier]
        for index in reversed(foreign):
            at = f"{pointer}/{index}"
            found.append((at, [(f"{at}/{_escaped(name)}", after[index].get(name)) for name in names]))
    return found


def _escaped(key: object) -> str:
    """``key`` as a JSON pointer's reference token."""
    return str(key).replace("~", "~0").replace("/", "~1")


def _reordered_lists(desired: Any, live: Any, pointer: str) -> list[tuple[str, list[Any], list[Any]]]:
    """Each list of ``live`` (its JSON pointer, and the list) that holds the items of ``desired``'s list there in
    another order, with those items in ``desired``'s order."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        found: list[tuple[str, list[Any], list[Any]]] = []
        for key, value in desired.items():
            if key in live:
                found.extend(_reordered_lists(value, live[key], f"{pointer}/{_escaped(key)}"))
        return found
    if not isinstance(desired, list | tuple) or not isinstance(live, list) or len(desired) != len(live):
        return []
    pairs = list(zip(desired, live, strict=True))
    inner = [_reordered_lists(wanted, item, f"{pointer}/{i}") for i, (wanted, item) in enumerate(pairs)]
    if all(found or checksum.is_subset(wanted, item) for (wanted, item), found in zip(pairs, inner, strict=True)):
        return [each for found in inner for each in found]  # in order here; perhaps not inside an item
    left = list(range(len(live)))
    order = []
    for wanted in desired:
        index = next((i for i in left if checksum.is_subset(wanted, live[i])), None)
        if index is None:
            return []  # not the same items: an apply's business, not an order's
        left.remove(index)
        order.append(index)
    return [(pointer, live, [live[i] for i in order])]


def _keep_initial_data(res: resource.Resource, live: Mapping[str, Any]) -> None:
    """Run ``mutate_with_initial_data()`` for an update, keeping the live value of each field it sets.

    Initial data is generated once — a password, a random suffix — and an update must not generate it again: for
    every value the hook adds or changes (a mapping's keys one by one; anything else, a list too, as a whole), the
    live object's value at that path wins when it has one. A field the live object lacks (never written, or removed
    since) takes the hook's value: that is the repair. The desired object is normalised again after the hook (a
    Secret's ``stringData`` folded into ``data``) so its paths are those the server stores.

    The hook runs as for a creation (``res.live`` is None while it runs): one that sets its data only when there is
    no live object would otherwise set nothing, and the write — an apply, or a merge of a replaced field such as a
    Secret's ``data`` — would remove the value it set at creation.
    """
    if type(res).mutate_with_initial_data is resource.Resource.mutate_with_initial_data:
        return  # the default sets nothing: no copy of the desired object to compare with
    before = copy.deepcopy(res.desired)
    kept, res.live = res.live, None
    try:
        res.mutate_with_initial_data()
    finally:
        res.live = kept
    res.normalize()
    for path in _set_paths(before, res.desired):
        found, value = _lookup(live, path)
        if found:
            target = res.desired
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = copy.deepcopy(value)


def _set_paths(before: Any, after: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of ``after`` whose value is not the one ``before`` holds there (mappings compared key by key)."""
    paths: list[tuple[str, ...]] = []
    for key, value in after.items():
        old = before.get(key) if isinstance(before, Mapping) else None
        if isinstance(value, Mapping) and (old is None or isinstance(old, Mapping)):
            paths.extend(_set_paths(old or {}, value, (*prefix, key)))
        elif not isinstance(before, Mapping) or key not in before or old != value:
            paths.append((*prefix, key))
    return paths


def _lookup(obj: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def _apply(
    client: kube_client.Client,
    kind: kinds.Kind,
    res: resource.Resource,
    options: WriteOptions,
    uid: str | None = None,
    live: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Apply ``res``, having first taken over what okt's earlier writes left to other entries (:func:`take_over`).

    With ``uid`` (an update: the uid of the object okt read and decided for, ``live`` as okt read it), the body
    carries it, and the API server refuses the apply on an object of another uid — one deleted and created again under
    the name since okt read it, which okt's cache may not have seen yet — as it refuses any change of a uid: no
    request more than the write.

    The take-over goes before the apply, which writes the checksum: a take-over refused or unanswered (leadership lost
    in between, a timeout) leaves the old checksum, so the next reconcile, on whichever replica, writes the child
    again and takes over then; after the checksum, it would judge the child unchanged and never take over, and a
    field the template dropped would stay for good (:func:`_take_over_first`). Whether there is one to make first is
    decided from ``live``'s managedFields, which okt's cache keeps as the entries a take-over moves
    (:meth:`FieldOwners.kept`, ``[]`` for almost every child): no request but the apply. Only one that shows such an
    entry holding a field the apply would leave has the child read, and the take-over made from what the API server
    holds. What the apply's answer still shows — all of it for a ``live`` without managedFields (a reader that keeps
    none, as okt's FakeClient) — is taken over after it (:func:`_take_over_after`).

    Raises:
        okt.errors.Conflict: the object is not the one of ``uid`` any more (:func:`_replaced`).
    """
    manager = options.field_manager
    body = apply_body(res)
    if uid:
        body["metadata"]["uid"] = uid

    def send() -> dict[str, Any]:
        try:
            return client.apply(body, kind, field_manager=manager)
        except errors.Invalid as exc:
            if uid and _uid_refused(exc):
                raise _replaced(res, uid, exc) from exc
            raise

    # Decided from what okt read: a child without managedFields (okt's FakeClient keeps none) is taken over after
    # the apply, from its answer, as every child was before the cache kept them — never read first for it.
    if uid and live is not None and _left_behind(live, body, options):
        _take_over_first(client, kind, res, uid, body, options)
    applied = send()
    if _left_to_take_over(applied, options):
        applied = _take_over_after(client, kind, res, applied, body, options, send)
    return applied


def _take_over_first(
    client: kube_client.Client,
    kind: kinds.Kind,
    res: resource.Resource,
    uid: str,
    body: Mapping[str, Any],
    options: WriteOptions,
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
            raise _replaced(res, uid)
        if not _left_behind(read, body, options):
            return
        try:
            take_over(client, kind, read, options.field_manager, options.legacy_field_managers)
        except errors.Invalid:
            if attempt == TAKE_OVER_ATTEMPTS - 1:
                raise
            continue
        return


def _take_over_after(
    client: kube_client.Client,
    kind: kinds.Kind,
    res: resource.Resource,
    applied: dict[str, Any],
    body: Mapping[str, Any],
    options: WriteOptions,
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
    behind = _left_behind(applied, body, options)
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
                raise _replaced(res, meta.get("uid"), exc) from exc  # not the object applied: none of okt's to take
            applied = current
            behind = behind or _left_behind(applied, body, options)
            continue
        except (errors.ApiError, errors.WriteRefused):
            if behind:
                _forget_hash(client, kind, applied, options.hash_annotation)
            raise
        # The fields the other entries held are the apply's now: applying again removes those the template dropped.
        # Else the take-over's answer is the object as it is now, its managedFields without those entries.
        return send() if behind else taken or applied
    return applied


def _left_to_take_over(obj: Mapping[str, Any], options: WriteOptions) -> bool:
    """Whether ``obj`` (as the API server answered a write) has entries :func:`take_over` moves."""
    entries = (obj.get("metadata") or {}).get("managedFields") or ()
    return any(_taken_over(e, options.field_manager, options.legacy_field_managers) for e in entries)


def _left_behind(obj: Mapping[str, Any], body: Mapping[str, Any], options: WriteOptions) -> bool:
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
    (see :func:`_apply`), and must know the child's entries for that. okt's cache drops ``managedFields`` (often the
    largest part of an object), and reading each child before its update would cost a request per child updated after
    every restart, for a take-over needed once in a child's life. So the cache keeps of a child's entries those
    :meth:`kept` returns, an empty list for almost every child: a stored child with ``managedFields`` says what there
    is to take over, with no request.
    """

    managers: frozenset[str] = frozenset()
    legacy: frozenset[str] = frozenset()

    @classmethod
    def of(cls, options: WriteOptions) -> FieldOwners | None:
        """The entries the updates of ``options`` take over; None for the merge strategy, which takes over none."""
        if options.strategy is not Strategy.APPLY:
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
    pointer = f"/metadata/annotations/{_escaped(annotation)}"
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
    so one it changed in between stays as it made it.
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


def delete(client: kube_client.Client, obj: Mapping[str, Any], owner_uid: str, names: names_mod.Names) -> bool:
    """Delete ``obj``, which okt judged :func:`prunable` as it read it, unless the API server's object is not so any
    more. Returns whether it deleted.

    What okt read may lag behind the server (the informer's store until the watch brings the latest writes): in
    between, another controller may have adopted the object (its controller reference changed) or someone taken
    okt's owner label off. So the delete is guarded by the uid and the resourceVersion okt judged; when the object
    changed since (409), it is read again and judged again, and deleted (guarded by what was read) only if it is
    still prunable and not already being deleted.

    Raises:
        okt.errors.Conflict: it changed again between that read and the delete; the next reconcile judges it anew.
    """
    kind = client.kind_of(obj)
    meta = obj.get("metadata") or {}
    name, namespace = meta["name"], meta.get("namespace")
    try:
        return client.delete(kind, name, namespace, uid=meta.get("uid"), resource_version=meta.get("resourceVersion"))
    except errors.Conflict:
        current = client.get_or_none(kind, name, namespace)
    if current is None or not prunable(current, owner_uid, names):
        return False
    meta = current.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    return client.delete(kind, name, namespace, uid=meta.get("uid"), resource_version=meta.get("resourceVersion"))
