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
  back — items of an okt list put in another order too, by one JSON patch (:func:`list_items.put_back_in_order`), as
  an apply keeps the live order, and items someone made of okt's by editing their key (a port renumbered), which an
  apply would keep beside okt's (:func:`list_items.drop_rekeyed`). Objects written by okt's older merge path (manager
  ``okt``, operation ``Update``), or under one of the reconciler's ``legacy_field_managers``, are taken over by the
  first apply that needs to write them (:func:`take_over.take_over`), so a field removed from the template leaves then
  too; before the apply, which writes the checksum, when the apply would leave one of their fields (:func:`_apply`).
* ``Strategy.MERGE``: a create, then merge patches guarded by the live resourceVersion (a 409 is reported, never
  retried blindly over someone else's write). A merge patch cannot remove what the template no longer sets (but for
  the resource class's ``replace_fields``, e.g. a ConfigMap's ``data``); kept for servers or kinds where apply
  misbehaves.

Guarantees: server-defaulted fields never cause a write (they are not in the desired object); an out-of-band edit of a
field okt sets is repaired on the next reconcile; labels and annotations other writers set are left alone; foreign
ownerReferences are kept. A field the server stores otherwise than okt wrote it, even in the very answer to okt's
write — a zero value it leaves out (``stdin: false``, an env var's ``value: ""``, ``hostPort: 0``) — is no drift
while it holds what the server made of okt's value (:class:`drift_check.ServerForms`): writing again could not change
it. That memory lives in the process; after a restart, such a child is written once more. Another manager's item in
a list the server merges by key (a port added to okt's Service) is no drift at all (:mod:`list_keys`). A resource
quantity of a built-in kind written as a number (``cpu: 1``, ``memory: 1024``) is applied as its text, which
server-side apply requires.

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
import threading
from collections.abc import Callable, Mapping
from typing import Any

from okt import errors
from okt import names as names_mod
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.resources import checksum, drift_check, list_items, list_keys, quantities, resource, take_over, writing

DEFAULT_PREFIX = names_mod.DEFAULT_PREFIX


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
    # The exact dict of a decoded object told apart first: an ABC check goes through ABCMeta.__instancecheck__.
    labels = meta.get("labels") if type(meta) is dict or isinstance(meta, Mapping) else None
    found = labels.get(label) if type(labels) is dict or isinstance(labels, Mapping) else None
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


def decide(
    res: resource.Resource,
    live: Mapping[str, Any] | None,
    owner: objects.CustomResource | None,
    names: names_mod.Names,
    *,
    keyed: bool = True,
) -> Decision:
    """What to do for one prepared resource, given its live object (or None). ``keyed``: the child is written by
    server-side apply, which keeps another manager's items in the lists it merges by key, so those are no drift; a
    merge patch (False) replaces such a list whole, and another manager's item in it is drift, as okt's write removes
    it."""
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
    if not drift_check.in_place(res, live, keyed=keyed):
        view = drift_check.drift_view(res, keyed=keyed)
        found = checksum.mismatches(view, live)
        if not drift_check.SERVER_FORMS.explain(live, view, found):
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
    options: writing.WriteOptions = writing.WriteOptions(),
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
    lists = type(res).keyed_lists
    if kinds.is_builtin_group(str(body.get("apiVersion") or "")):
        _default_port_protocols(body)
        quantities.convert_quantities(body, quantities.quantity_text)
    elif lists is not None:
        list_keys.spell_defaults(body, lists)  # as a port's protocol, for the same servers (below)
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


def _pristine_view(res: resource.Resource, options: writing.WriteOptions) -> dict[str, Any] | None:
    """The drift view as the next reconcile builds it — without the initial data — when the write's
    ``mutate_with_initial_data()`` may change it; None when the resource keeps the default one, which changes nothing
    (the view is then built only if the answer differs)."""
    if type(res).mutate_with_initial_data is resource.Resource.mutate_with_initial_data:
        return None
    return drift_check.drift_view(res, keyed=_keyed(options))


def _keyed(options: writing.WriteOptions) -> bool:
    """Whether the next reconcile's drift check compares ``options``' writes by key (:func:`decide`'s ``keyed``): the
    server's forms are remembered against the view it builds, or they would never explain its drift."""
    return options.strategy is writing.Strategy.APPLY


def create(
    client: kube_client.Client,
    res: resource.Resource,
    observe: Observer,
    options: writing.WriteOptions = writing.WriteOptions(),
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
    if options.strategy is writing.Strategy.APPLY:
        _check_unanswered(client, res)
    view = _pristine_view(res, options)
    res.mutate_with_initial_data()
    res.check_identity()
    kind = client.kind_of(res.desired)
    if options.strategy is writing.Strategy.APPLY:
        key = kinds.key_of(res.desired)
        try:
            created = _apply(client, kind, res, options)
        except errors.ApiError as exc:
            if isinstance(exc, (errors.Unavailable, errors.ServerError)):  # no answer, or the server's own failure:
                UNANSWERED_CREATES.add(key)  # it may have landed (a refusal, even as a 500, did not)
            raise
        UNANSWERED_CREATES.discard(key)
    else:
        created = client.create(res.desired, kind)
    drift_check.SERVER_FORMS.remember(view, res, created, keyed=_keyed(options))
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
    options: writing.WriteOptions = writing.WriteOptions(),
    *,
    drift_only: bool = False,
) -> dict[str, Any]:
    """Write ``res`` over ``live``. ``drift_only`` (:attr:`Decision.drift_only`): the template is the one okt last
    wrote, so an item of okt's lists missing from ``live`` was taken away by someone, and an apply the API server
    refuses was refused for what someone made of okt's items (:func:`list_items.drop_rekeyed`)."""
    view = _pristine_view(res, options)
    _keep_initial_data(res, live)
    res.check_identity()
    kind = client.kind_of(res.desired)
    if options.strategy is writing.Strategy.APPLY:
        # No preserve_from_live: what the template does not set (a Service's clusterIP) is not applied, so it is not
        # okt's, and the server keeps it.
        uid = (live.get("metadata") or {}).get("uid")
        try:
            updated = _apply(client, kind, res, options, uid, live)
        except errors.Invalid as exc:
            # Refused for a duplicate: perhaps an item someone made of okt's beside the one okt applies again (a named
            # port renumbered: two ports of one name). Whatever the template, okt's items win that clash: the item
            # holding okt's value in the field refused twice goes, if nothing else tells it for okt's (drop_rekeyed). So
            # does any refusal of a drift-only write: the API server took this very template before, so what it refuses
            # now is what the edits made of it (the only port of a Service renumbered: two ports without a name). A
            # refusal for anything else (a value of okt's own template) is reported as it is, touching nothing of
            # anyone's.
            if not drift_only and not any(cause.reason == list_items.DUPLICATE for cause in exc.causes):
                raise
            current = client.get(kind, res.name, res.namespace)
            if (current.get("metadata") or {}).get("uid") != uid:
                raise writing.replaced(res, uid, exc) from exc
            unique = list_items.duplicated(exc)
            if list_items.drop_rekeyed(client, kind, apply_body(res), current, current, options, unique=unique) is None:
                raise
            updated = _apply(client, kind, res, options, uid, current)
        else:
            shape = drift_check.drift_shape(res) if drift_only else None
            if shape is not None:
                desired = checksum.narrowed(apply_body(res), shape)
                updated = list_items.drop_rekeyed(client, kind, desired, live, updated, options) or updated
        updated = list_items.put_back_in_order(
            client, kind, drift_check.drift_view(res) if view is None else view, updated, options
        )
    else:
        res.preserve_from_live(live)
        updated = client.patch(kind, res.name, update_patch(res, live, owner, options), res.namespace)
    drift_check.SERVER_FORMS.remember(view, res, updated, keyed=_keyed(options))
    res.live = updated
    observe(updated)
    return updated


UID_FIELD = "metadata.uid"
"""The field the API server names when an apply's uid is not the object's: it was deleted and created again."""


def _uid_refused(exc: errors.ApiError) -> bool:
    """Whether the API server refused a write for its ``metadata.uid`` (the object there has another)."""
    return any(cause.field == UID_FIELD for cause in exc.causes)


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
    options: writing.WriteOptions,
    uid: str | None = None,
    live: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Apply ``res``, having first taken over what okt's earlier writes left to other entries
    (:func:`take_over.take_over`).

    With ``uid`` (an update: the uid of the object okt read and decided for, ``live`` as okt read it), the body
    carries it, and the API server refuses the apply on an object of another uid — one deleted and created again under
    the name since okt read it, which okt's cache may not have seen yet — as it refuses any change of a uid: no
    request more than the write.

    The take-over goes before the apply, which writes the checksum: a take-over refused or unanswered (leadership lost
    in between, a timeout) leaves the old checksum, so the next reconcile, on whichever replica, writes the child
    again and takes over then; after the checksum, it would judge the child unchanged and never take over, and a
    field the template dropped would stay for good (:func:`take_over.take_over_first`). Whether there is one to make
    first is decided from ``live``'s managedFields, which okt's cache keeps as the entries a take-over moves
    (:meth:`take_over.FieldOwners.kept`, ``[]`` for almost every child): no request but the apply. Only one that shows
    such an entry holding a field the apply would leave has the child read, and the take-over made from what the API
    server holds. What the apply's answer still shows — all of it for a ``live`` without managedFields (a reader that
    keeps none, as okt's FakeClient) — is taken over after it (:func:`take_over.take_over_after`).

    Raises:
        okt.errors.Conflict: the object is not the one of ``uid`` any more (:func:`writing.replaced`).
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
                raise writing.replaced(res, uid, exc) from exc
            raise

    # Decided from what okt read: a child without managedFields (okt's FakeClient keeps none) is taken over after
    # the apply, from its answer, as every child was before the cache kept them — never read first for it.
    if uid and live is not None and take_over.left_behind(live, body, options):
        take_over.take_over_first(client, kind, res, uid, body, options)
    applied = send()
    if take_over.left_to_take_over(applied, options):
        applied = take_over.take_over_after(client, kind, res, applied, body, options, send)
    return applied


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
