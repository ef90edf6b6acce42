"""The ClusterOperator mirror: the operator's status, summed up on one cluster-scoped object admins read at a glance.

Why this exists: on OpenShift, ``oc get clusteroperators`` is where an admin looks first; each operator keeps a
``ClusterOperator`` (``config.openshift.io/v1``, cluster-scoped) whose status says Available / Progressing / Degraded,
which versions run and which objects to inspect next. A reconciler that declares ``cluster_operator = "name"`` gets
that object kept for it, from the status okt already writes on its custom resources.

What is mirrored, after every SuccessManager and ErrorManager (the custom resources' statuses are written first), and
after a reconcile that finds its custom resource gone (so a deleted one no longer counts, nor keeps it Degraded):

* ``Available`` — False when any custom resource of the kind is not Available, with the first one's reason and
  message (prefixed with its namespace/name); else Unknown when any one's is Unknown (same reason rule: OpenShift
  alerts on Available=False, and a resource whose availability is not known says neither); else True;
* ``Progressing`` — True when any is Progressing; ``Degraded`` — True when any is Degraded; else Unknown when any
  one's is Unknown, else False (same reason rule: the union of OpenShift's operators). Progressing is True too, reason
  ``VersionsDiffer``, while they report different ``status.versions`` though none is Progressing itself (one
  settled at the new version, another not reconciled by it yet): OpenShift's Progressing is True while the operator
  moves from one version to another, and the mirror's ``versions`` still says the old ones. The message names each
  set of versions, how many report it and the first of them;
* ``versions`` — the custom resources' ``status.versions`` when they all report the same, else left as it was (a
  rollout is under way: OpenShift reports a version only once it is reached; or one reports an entry that is not a
  name and a version);
* ``relatedObjects`` — each custom resource, then each one's own ``status.relatedObjects``, without duplicates, in
  the shape OpenShift's schema stores: an entry that is not a reference is left out, a field it does not know
  dropped (a hand edit of one resource's status can neither have the mirror refused nor rewritten unchanged); past
  :data:`MAX_RELATED_OBJECTS` entries, the namespaces of the namespaced ones stand for them (the cluster-scoped ones
  stay), cut at that bound: the object stays one the API server stores. Entries another writer added (the CVO's,
  from a release manifest; an admin's) stay after them: the mirror records its own in ``status.extension.okt``
  (written with the status, read with the ClusterOperator: no request more), and replaces only those.

One name is one operator's: the mirror records who writes it (:func:`owner`: the mirrored kind and the scope it is
reconciled in — the namespaces watched, the label selector, compared by what they select (:func:`same_owner`) — the same
for every replica and every restart of one deployment, not the process's identity) in ``status.extension.okt.owner``,
and an operator of another scope (a second deployment watching other namespaces, another ``-l`` shard, another operator
given the same name) finds it there and writes nothing: one error line says whose it is and how to move it, its
reconciles go on. A ClusterOperator without that record (created by the CVO from a release manifest, by an admin, or
written by an okt that recorded no owner) is adopted by the first write. To move a name to another scope, delete the
ClusterOperator (the next write of the operator now configured creates it as its own), or remove its
``status.extension.okt``.

Guarantees:

* no ClusterOperator CRD (a cluster that is not OpenShift): nothing is sent but one discovery request every
  :data:`ABSENT_RECHECK` seconds, and one log line at info level — no error, no retry;
* nothing is written when the mirror already says it: conditions keep their ``lastTransitionTime`` until their status
  changes, and conditions of other types (``Upgradeable``, set by someone else) are kept;
* a failure to mirror is logged and never fails the reconcile of the custom resource (the mirror is a summary, the
  custom resources stay the truth);
* nothing is written to a ClusterOperator another operator owns (a write is guarded by the ``resourceVersion`` of the
  object whose owner was read: two operators adopting one at once, the second's write fails and, read again, is
  refused); the refusal is logged once per name and owner at error level, not at every reconcile.

Caveats: versions each object chooses (``target_versions`` read from its spec) that differ for good keep the mirror
Progressing, as they keep its ``versions`` from being reported: a ClusterOperator has one version per name. Report
such an operand's version in the object's own status field rather than in ``status.versions``. A resource that
reports no versions (its first rollout stuck) is compared with none. The object is created when missing
(``spec: {}``); it is never deleted by okt. An entry another writer
lists that the mirror lists too is the mirror's: it leaves with the mirror's. A mirror written before okt recorded
its entries has none recorded: at its first write, the entries of the mirrored kind naming a custom resource it sums
up or one that no longer exists (deleted before the upgrade) are taken as its own, and leave unless it lists them
(:func:`adoptable`); every other entry is kept as another writer's, the children's entries of resources deleted
before the upgrade among them (an entry of another resource cannot be told from another writer's). One name sums up
one kind: the manager refuses two reconcilers of different kinds declaring the same name. The RBAC it needs (``get``,
``create`` on ``clusteroperators``, ``patch`` on ``clusteroperators/status``) is generated when the reconciler
declares ``cluster_operator``.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, selectors
from okt.status import conditions as cond

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod

API_VERSION = "config.openshift.io/v1"
KIND = kinds.Kind(API_VERSION, "ClusterOperator", "clusteroperators", namespaced=False)
MIRRORED = (cond.AVAILABLE, cond.PROGRESSING, cond.DEGRADED)
ABSENT_RECHECK = 300.0
"""Seconds before a client that found no ClusterOperator CRD asks discovery again."""
MAX_RELATED_OBJECTS = 500
"""The most entries of the mirror's ``relatedObjects``: past it, namespaced objects are named by their namespaces."""
VERSIONS_DIFFER = "VersionsDiffer"
"""The reason of the mirror's Progressing=True while the custom resources report different versions."""
VERSIONS_NAMED = 5
"""The most sets of versions the message of :data:`VERSIONS_DIFFER` names (one per object, thousands, say nothing)."""
EXTENSION_KEY = "okt"
"""The key of ``status.extension`` under which the mirror records its owner and which ``relatedObjects`` entries are
its own."""

_absent_until: weakref.WeakKeyDictionary[kube_client.Client, float] = weakref.WeakKeyDictionary()
_absent_lock = threading.Lock()
# The owner each refusal was logged for, per ClusterOperator name and this process's owner: logged once, not at every
# reconcile; again once the name was written (taken back) or found another's of yet another scope.
_refused: dict[tuple[str, str], str] = {}
_refused_lock = threading.Lock()


def served(client: kube_client.Client, log: Any = None) -> bool:
    """Whether the API server serves ClusterOperators (asked again every :data:`ABSENT_RECHECK` s while it does not;
    ``log`` hears of each time it was found missing)."""
    with _absent_lock:
        if _absent_until.get(client, 0.0) > time.monotonic():
            return False
    try:
        client.resolve(API_VERSION, KIND.kind)
    except errors.NotFound:
        with _absent_lock:
            _absent_until[client] = time.monotonic() + ABSENT_RECHECK
        if log is not None:
            log.info("the server has no ClusterOperator kind: the operator's status is not mirrored")
        return False
    return True


def owner(kind: kinds.Kind, reader: object) -> dict[str, Any]:
    """Who writes the mirror of ``kind`` through ``reader``, as recorded on the ClusterOperator: the kind's group and
    resource, the namespaces watched (sorted; none recorded: every namespace) and the label selector (as given: two
    spellings of one selector are one scope, see :func:`same_owner`). The same for every replica of one deployment
    and across its restarts; different for two deployments of one operator that reconcile apart (``okt run -n``,
    ``-l``) and for two operators of different kinds."""
    record: dict[str, Any] = {"group": kind.group, "resource": kind.plural}
    # The informer cache's scope (okt run -n / -l); a plain call's reader asks the API server for every namespace.
    namespaces = getattr(reader, "namespaces", None)
    selector = getattr(reader, "label_selector", None)
    if isinstance(namespaces, (tuple, list)) and namespaces:
        record["namespaces"] = sorted({str(namespace) for namespace in namespaces})
    if isinstance(selector, str) and selector:
        record["labelSelector"] = selector
    return record


def recorded_owner(current: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The owner recorded on a ClusterOperator's ``current`` status (see :func:`owner`), or None when it records none
    in that shape (never written by okt, written by an okt that recorded no owner, or the record edited away): such a
    ClusterOperator is adopted by the first write."""
    extension = (current or {}).get("extension")
    record = extension.get(EXTENSION_KEY) if isinstance(extension, Mapping) else None
    found = record.get("owner") if isinstance(record, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    group, resource = found.get("group"), found.get("resource")
    namespaces, selector = found.get("namespaces"), found.get("labelSelector")
    if not (isinstance(group, str) and isinstance(resource, str) and resource):
        return None
    if namespaces is not None and not (isinstance(namespaces, list) and all(isinstance(n, str) for n in namespaces)):
        return None
    if selector is not None and not isinstance(selector, str):
        return None
    normal: dict[str, Any] = {"group": group, "resource": resource}
    if namespaces:
        normal["namespaces"] = sorted(set(namespaces))
    if selector:
        normal["labelSelector"] = selector
    return normal


def same_owner(one: Mapping[str, Any] | None, other: Mapping[str, Any] | None) -> bool:
    """Whether two owner records (see :func:`owner`; None: no owner) name one scope: compared in a canonical form,
    the namespaces as a set and the label selector by its terms (:func:`okt.kube.selectors.canonical`), so a restart
    given its selector in another order or spelling (``-l b=2,a=1`` after ``-l a=1,b=2``) is the same owner."""
    if one is None or other is None:
        return one is None and other is None
    return _scope(one) == _scope(other)


def _scope(record: Mapping[str, Any]) -> tuple[Any, ...]:
    selector = record.get("labelSelector") or ""
    # A selector no okt runs with (edited by hand) is compared as written: never this operator's.
    with contextlib.suppress(ValueError):
        selector = selectors.canonical(selector)
    namespaces = tuple(sorted(set(record.get("namespaces") or ())))
    return record.get("group"), record.get("resource"), namespaces, selector


def describe(record: Mapping[str, Any]) -> str:
    """An owner as an admin reads it: ``gizmos.example.com in namespaces a, b, label selector shard=1``."""
    resource = ".".join(part for part in (record["resource"], record["group"]) if part)
    namespaces = record.get("namespaces")
    where = f"in namespaces {', '.join(namespaces)}" if namespaces else "in every namespace"
    selector = record.get("labelSelector")
    return f"{resource} {where}" + (f", label selector {selector}" if selector else "")


def _offending(primaries: Sequence[Mapping[str, Any]], type_: str, bad: str) -> tuple[str, str] | None:
    """The reason and message of the first primary whose ``type_`` condition has status ``bad``."""
    for primary in primaries:
        found = cond.Conditions.from_status(primary.get("status"))
        if type_ in found and found[type_].status.value == bad:
            meta = primary.get("metadata") or {}
            where = "/".join(part for part in (meta.get("namespace"), meta.get("name")) if part)
            return found[type_].reason, f"{primary.get('kind')} {where}: {found[type_].message}"
    return None


def _union(
    primaries: Sequence[Mapping[str, Any]], type_: str, expected: str, as_expected: tuple[str, str]
) -> tuple[cond.ConditionStatus, str, str]:
    """The status, reason and message of ``type_`` summing up ``primaries``, as OpenShift's operators union their
    conditions: the status other than ``expected`` a primary says (False for Available, True for Progressing and
    Degraded), with the first such one's reason and message; else Unknown when one says Unknown (it could be either:
    an Available=False would alert for a resource whose availability is not known); else ``expected``."""
    bad = "False" if expected == "True" else "True"
    for status in (bad, "Unknown"):
        offending = _offending(primaries, type_, status)
        if offending is not None:
            return (cond.ConditionStatus(status), *offending)
    return (cond.ConditionStatus(expected), *as_expected)


def desired_status(
    primaries: Sequence[Mapping[str, Any]],
    kind: kinds.Kind,
    current: Mapping[str, Any] | None,
    adopted: Sequence[Mapping[str, str]] = (),
    *,
    owner: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """The ClusterOperator status summing up ``primaries`` (sorted by namespace/name), and whether it differs from
    ``current``. ``adopted``: entries of ``current``'s ``relatedObjects`` taken as the mirror's own where it recorded
    none (see :func:`adoptable`); they leave unless the mirror lists them now. ``owner``: who writes it (see
    :func:`owner`), recorded with the mirror's entries; whether it may, the caller decides (:func:`recorded_owner`)."""
    ordered = sorted(primaries, key=lambda p: ((p.get("metadata") or {}).get("namespace") or "", p["metadata"]["name"]))
    working = cond.Conditions.from_status(current)
    count = f"{len(ordered)} {kind.kind}"
    reported = [_versions((p.get("status") or {}).get("versions")) for p in ordered]
    for type_, expected, said in (
        (cond.AVAILABLE, "True", "all available"),
        (cond.PROGRESSING, "False", "settled"),
        (cond.DEGRADED, "False", "none degraded"),
    ):
        summed = _union(ordered, type_, expected, ("AsExpected", f"{count}: {said}"))
        differ = _versions_differ(ordered, reported, kind) if type_ == cond.PROGRESSING else None
        if differ is not None and summed[0] is not cond.ConditionStatus.TRUE:
            # OpenShift's Progressing: True while the operator moves from one version to another. Resources that each
            # settled at another version are that move half done, though none of them is rolling out itself.
            summed = (cond.ConditionStatus.TRUE, VERSIONS_DIFFER, differ)
        working.set(type_, *summed)
    status: dict[str, Any] = {"conditions": working.to_list()}
    if reported and reported[0] and all(v == reported[0] for v in reported):
        status["versions"] = reported[0]
    elif (current or {}).get("versions"):
        status["versions"] = (current or {})["versions"]
    own = _related(ordered, kind)
    status["relatedObjects"] = [*own, *_others_related(current, own, adopted)]
    # The mirror's own entries, recorded where the ClusterOperator keeps its operator's data (read with it, written
    # with it): the next write tells them from those another writer added, which it keeps.
    record: dict[str, Any] = {"relatedObjects": own}
    if owner is not None:
        record["owner"] = dict(owner)
    status["extension"] = {EXTENSION_KEY: record}
    before = {k: (current or {}).get(k) for k in ("versions", "relatedObjects")}
    after = {k: status.get(k) for k in ("versions", "relatedObjects")}
    changed = working.changed or before != after or _recorded(current) != own
    return status, changed or (owner is not None and not same_owner(recorded_owner(current), record["owner"]))


def _versions_differ(
    primaries: Sequence[Mapping[str, Any]], reported: Sequence[list[dict[str, str]] | None], kind: kinds.Kind
) -> str | None:
    """What Progressing says while ``primaries`` (in order) report different ``status.versions`` (``reported``,
    each read by :func:`_versions`), or None when they report the same or one each at most: each set of versions with
    how many report it and the first of them, at most :data:`VERSIONS_NAMED` sets. A resource that reports none (not
    rolled out yet, or stuck at its first rollout, which its own conditions say) is no version to compare."""
    groups: dict[str, list[str]] = {}
    for primary, versions in zip(primaries, reported, strict=True):
        if versions:
            meta = primary.get("metadata") or {}
            where = "/".join(part for part in (meta.get("namespace"), meta.get("name")) if part)
            groups.setdefault(", ".join(f"{v['name']} {v['version']}" for v in versions), []).append(where)
    if len(groups) < 2:
        return None
    said = [
        f"{versions} ({where[0]}{f' and {len(where) - 1} more' if len(where) > 1 else ''})"
        for versions, where in list(groups.items())[:VERSIONS_NAMED]
    ]
    if len(groups) > VERSIONS_NAMED:
        said.append(f"{len(groups) - VERSIONS_NAMED} other sets of versions")
    return f"{kind.kind} resources report different versions: {'; '.join(said)}"


def _recorded(current: Mapping[str, Any] | None) -> list[dict[str, str]] | None:
    """The entries of ``relatedObjects`` the mirror recorded as its own when it last wrote (None: no record)."""
    extension = (current or {}).get("extension")
    record = extension.get(EXTENSION_KEY) if isinstance(extension, Mapping) else None
    entries = record.get("relatedObjects") if isinstance(record, Mapping) else None
    if not isinstance(entries, list):
        return None
    return [reference for entry in entries if (reference := _reference(entry)) is not None]


def _others_related(
    current: Mapping[str, Any] | None, own: Sequence[Mapping[str, str]], adopted: Sequence[Mapping[str, str]] = ()
) -> list[dict[str, str]]:
    """The entries of ``current``'s ``relatedObjects`` another writer added (the CVO's from a release manifest, an
    admin's): neither recorded as the mirror's own when it last wrote, nor among its own now. Without a record (a
    ClusterOperator the mirror never wrote, or an earlier okt wrote), every entry is another writer's but those
    ``adopted``."""
    recorded = _recorded(current)
    mine = {_key(entry) for entry in (*own, *(adopted if recorded is None else recorded))}
    others = []
    for entry in (current or {}).get("relatedObjects") or ():
        reference = _reference(entry)
        if reference is not None and _key(reference) not in mine:
            mine.add(_key(reference))  # once
            others.append(reference)
    return others


def adoptable(current: Mapping[str, Any] | None, kind: kinds.Kind) -> list[dict[str, str]]:
    """The entries of ``current``'s ``relatedObjects`` the mirror may take as its own though it recorded none (an
    earlier okt wrote the ClusterOperator, or someone else only): those naming an object of the mirrored ``kind``
    (its group and resource, a namespace as the kind has one), the one resource whose entries the mirror writes for
    every object it sums up; none when it has a record. What another writer lists of another resource (a namespace,
    the operator's Deployment, a child's kind) is never among them: nothing tells it from the mirror's.

    Which of them are the mirror's, :func:`_write` decides: those naming an object it sums up, or one that no longer
    exists (a resource deleted before the upgrade); an entry naming a live object it does not sum up (out of its
    namespaces or selector) stays another writer's."""
    if _recorded(current) is not None:
        return []
    found = []
    for entry in (current or {}).get("relatedObjects") or ():
        reference = _reference(entry)
        if (
            reference is not None
            and (reference["group"], reference["resource"]) == (kind.group, kind.plural)
            and ("namespace" in reference) == kind.namespaced
        ):
            found.append(reference)
    return found


def _key(reference: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(reference.items()))


def _related(primaries: Iterable[Mapping[str, Any]], kind: kinds.Kind) -> list[dict[str, str]]:
    related: list[dict[str, str]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for primary in primaries:
        meta = primary.get("metadata") or {}
        own = {"group": kind.group, "resource": kind.plural, "name": str(meta.get("name"))}
        if meta.get("namespace"):
            own["namespace"] = str(meta["namespace"])
        for entry in (own, *((primary.get("status") or {}).get("relatedObjects") or ())):
            # An entry of one resource's status that is not a reference (a hand edit) is left out: written, it would
            # have the whole mirror refused (a field the schema requires, missing or not a string) or pruned and
            # written again at every reconcile (a field the schema does not know).
            reference = _reference(entry)
            if reference is not None and (key := _key(reference)) not in seen:
                seen.add(key)
                related.append(reference)
    if len(related) <= MAX_RELATED_OBJECTS:
        return related
    # Every resource's children, at thousands of resources, make an object the API server refuses (each write of the
    # mirror refused, for good) and a list no one reads: a namespace names everything in it, as must-gather reads it.
    bounded: list[dict[str, str]] = []
    seen.clear()
    for entry in related:
        named = {"group": "", "resource": "namespaces", "name": entry["namespace"]} if "namespace" in entry else entry
        if (key := _key(named)) not in seen:
            seen.add(key)
            bounded.append(named)
    return bounded[:MAX_RELATED_OBJECTS]


def _reference(entry: object) -> dict[str, str] | None:
    """``entry`` as OpenShift's schema stores a related object (group, resource, name, and namespace when it has
    one; strings, resource and name not empty), or None when it is not one."""
    if not isinstance(entry, Mapping):
        return None
    group, resource, name = (entry.get(field) for field in ("group", "resource", "name"))
    namespace = entry.get("namespace")
    if not (isinstance(group, str) and isinstance(resource, str) and isinstance(name, str) and resource and name):
        return None
    if namespace is not None and not isinstance(namespace, str):
        return None
    reference = {"group": group, "resource": resource, "name": name}
    if namespace:
        reference["namespace"] = namespace
    return reference


def _versions(reported: object) -> list[dict[str, str]] | None:
    """A resource's ``status.versions`` as OpenShift's schema stores them (name and version, strings), or None when
    it reports none or an entry is not one (a hand edit: written, it would have the whole mirror refused)."""
    if not isinstance(reported, list) or not reported:
        return None
    versions = []
    for entry in reported:
        name, version = (entry.get("name"), entry.get("version")) if isinstance(entry, Mapping) else (None, None)
        if not (isinstance(name, str) and name and isinstance(version, str)):
            return None
        versions.append({"name": name, "version": version})
    return versions


def mirror(name: str, ctx: context_mod.Context, attempts: int = 2) -> bool:
    """Mirror the status of every custom resource of ``ctx``'s kind onto ClusterOperator ``name``; returns whether
    it wrote. Never raises an API error: a failure is logged (the next reconcile tries again); a write that lost a
    race (409) is recomputed from a fresh read of the ClusterOperator and of the custom resources, once."""
    client = ctx.client
    try:
        if not served(client, ctx.log):
            return False
        for attempt in range(1, attempts + 1):
            try:
                return _write(client, name, ctx)
            except errors.Conflict:
                if attempt == attempts:
                    raise
    except errors.OktError as exc:
        ctx.log.warning("ClusterOperator not mirrored", cluster_operator=name, error=str(exc))
    return False


def _primaries(ctx: context_mod.Context) -> list[Mapping[str, Any]]:
    """The custom resources of ``ctx``'s kind as the reader has them now, ``ctx``'s own as this reconcile left it."""
    primaries = {kinds.key_of(p): p for p in ctx.reader.list(ctx.kind, None)}
    if ctx.exists:
        primaries[ctx.cr.key] = dict(ctx.cr.raw)  # the status just written, maybe not in the cache yet
    else:
        primaries.pop(ctx.cr.key, None)  # gone, whatever a cache a moment behind still holds
    return list(primaries.values())


def _write(client: kube_client.Client, name: str, ctx: context_mod.Context) -> bool:
    live = client.get_or_none(KIND, name)
    if live is None:
        body = {"apiVersion": API_VERSION, "kind": KIND.kind, "metadata": {"name": name}, "spec": {}}
        live = client.create(body, KIND)
    ours = owner(ctx.kind, ctx.reader)
    theirs = recorded_owner(live.get("status"))
    if theirs is not None and not same_owner(theirs, ours):
        _refuse(name, ours, theirs, ctx)
        return False
    # The custom resources are read after the ClusterOperator, on every attempt: a mirror written meanwhile by
    # another resource's reconcile (which wrote its own status first) fails this write's resourceVersion guard, and
    # the retry sums up that status too, instead of writing back what the reader held before it.
    primaries = _primaries(ctx)
    status, changed = desired_status(
        primaries, ctx.kind, live.get("status"), _adopted(client, ctx.kind, live.get("status"), primaries), owner=ours
    )
    with _refused_lock:
        _refused.pop((name, describe(ours)), None)  # its own again: a later refusal is news
    if not changed:
        return False
    # Guarded by the resourceVersion the owner was read at: an operator of another scope that adopted the object
    # meanwhile fails this write (409), and the retry reads its record and refuses.
    patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "status": status}
    # A merge patch keeps the keys it does not name: a field of a record edited by hand, left there, would make the
    # next read another owner's.
    status["extension"][EXTENSION_KEY]["owner"] = {"namespaces": None, "labelSelector": None, **ours}
    client.patch(KIND, name, patch, subresource="status")
    return True


def _refuse(name: str, ours: Mapping[str, Any], theirs: Mapping[str, Any], ctx: context_mod.Context) -> None:
    """Say once per owner found that ClusterOperator ``name`` is another operator's, and how to move it."""
    mine, found = describe(ours), describe(theirs)
    with _refused_lock:
        if _refused.get((name, mine)) == found:
            return
        _refused[(name, mine)] = found
    ctx.log.error(
        f"ClusterOperator {name} is not mirrored: another operator owns it ({found}), this one reconciles {mine}; "
        "give each its own cluster_operator name, or delete the ClusterOperator for this one to take it",
        cluster_operator=name,
        owner=found,
        scope=mine,
    )


def _adopted(
    client: kube_client.Client,
    kind: kinds.Kind,
    current: Mapping[str, Any] | None,
    primaries: Sequence[Mapping[str, Any]],
) -> list[dict[str, str]]:
    """The entries of :func:`adoptable` that are the mirror's: naming one of ``primaries`` (it lists them, or their
    namespace past the bound), or an object of ``kind`` that no longer exists (one ``get`` each, once: the write that
    follows records the mirror's own). An object that could not be read keeps its entry (another writer's, maybe)."""
    summed = {
        ((p.get("metadata") or {}).get("namespace") or None, (p.get("metadata") or {}).get("name")) for p in primaries
    }
    adopted = []
    for entry in adoptable(current, kind):
        namespace = entry.get("namespace")
        if (namespace, entry["name"]) not in summed:
            try:
                if client.get_or_none(kind, entry["name"], namespace) is not None:
                    continue
            except errors.OktError:
                continue
        adopted.append(entry)
    return adopted
