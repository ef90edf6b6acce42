"""The judgements of the reliability suite over what the API server holds: converged, exact children, a status.

Pure functions over a :class:`Snapshot` of one namespace, so that each is pinned on synthetic input by a fast test;
a :class:`Check`'s ``problems`` name the objects concerned, and odd input is a problem, never an exception.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from benchmarks import cluster
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition
from samples.memcached.memcached_operator import inventory as memcached_inventory

ExpectedChildren = Callable[[str], frozenset[tuple[str, str]]]
"""A custom resource's name -> the ``(kind, name)`` of every child it must have."""


def memcached_children(name: str) -> frozenset[tuple[str, str]]:
    """The children of the Memcached ``name``: ConfigMap ``<name>-config``, Service and Deployment ``<name>``."""
    return frozenset({("ConfigMap", f"{name}-config"), ("Service", name), ("Deployment", name)})


@dataclasses.dataclass(frozen=True)
class Check:
    """One judgement: its name and what is wrong (nothing when it passed)."""

    name: str
    problems: tuple[str, ...] = ()

    @classmethod
    def holds(cls, name: str, ok: bool, problem: str) -> Check:
        """A check of one condition: ``problem`` when it does not hold."""
        return cls(name, () if ok else (problem,))

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self, limit: int = 5) -> str:
        """``name: ok`` or ``name: N problems: first; second; ...``."""
        if self.ok:
            return f"{self.name}: ok"
        shown = "; ".join(self.problems[:limit])
        more = f"; and {len(self.problems) - limit} more" if len(self.problems) > limit else ""
        return f"{self.name}: {len(self.problems)} problem(s): {shown}{more}"

    def labelled(self, when: str) -> Check:
        """The same check, named for the moment it judges (a scenario may judge the same thing twice)."""
        return dataclasses.replace(self, name=f"{when}: {self.name}")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "problems": list(self.problems)}


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def controller_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ownerReferences of ``obj`` that claim to be its controller."""
    refs = _meta(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, Mapping) and r.get("controller")] if isinstance(refs, list) else []


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One namespace as the API server had it: the custom resources, every object of the child kinds (owned or not,
    each with its ``kind`` set), the inventory ConfigMap's ``data`` (None when there is none), and the kind the
    children's ownerReferences name."""

    crs: tuple[Mapping[str, Any], ...]
    children: tuple[Mapping[str, Any], ...]
    inventory: Mapping[str, str] | None = None
    owner_kind: str = "Memcached"

    @classmethod
    def take(cls, client: kube_client.Client, cr_kind: kinds.Kind, namespace: str) -> Snapshot:
        """List the custom resources and every child kind of ``namespace`` (one list call per kind)."""
        crs, _ = client.list(cr_kind, namespace)
        children: list[Mapping[str, Any]] = []
        inventory: Mapping[str, str] | None = None
        for kind in cluster.CHILD_KINDS:
            items, _ = client.list(kind, namespace)
            for item in items:
                item["kind"] = kind.kind
                if kind.kind == "ConfigMap" and _name(item) == memcached_inventory.NAME:
                    inventory = dict(item.get("data") or {})
                else:
                    children.append(item)
        return cls(tuple(crs), tuple(children), inventory, cr_kind.kind)

    @property
    def by_name(self) -> dict[str, Mapping[str, Any]]:
        return {_name(cr): cr for cr in self.crs}


def not_converged(snapshot: Snapshot, names: Iterable[str] | None = None) -> list[str]:
    """Why each custom resource (all, or the ``names``) is not converged: missing, being deleted, or not Ready=True
    with ``observedGeneration`` (the condition's and the status's) its generation; empty when all are."""
    by_name = snapshot.by_name
    problems = []
    for name in sorted(by_name) if names is None else names:
        cr = by_name.get(name)
        generation = _meta(cr).get("generation")
        ready = condition(cr, "Ready")
        status = cr.get("status") if cr is not None else None
        observed = status.get("observedGeneration") if isinstance(status, Mapping) else None
        if cr is None:
            problems.append(f"{name}: missing")
        elif _meta(cr).get("deletionTimestamp"):
            problems.append(f"{name}: being deleted")
        elif ready is None:
            problems.append(f"{name}: no Ready condition")
        elif ready.get("status") != "True":
            problems.append(f"{name}: Ready={ready.get('status')} ({ready.get('reason')}: {ready.get('message')})")
        elif ready.get("observedGeneration") != generation or observed != generation:
            problems.append(
                f"{name}: generation {generation}, Ready observed {ready.get('observedGeneration')}, "
                f"status observed {observed}"
            )
    return problems


def converged(snapshot: Snapshot, names: Iterable[str] | None = None) -> Check:
    """Every custom resource (or every one of ``names``) is Ready=True for its current generation."""
    return Check("all converged", tuple(not_converged(snapshot, names)))


def unsettled(snapshot: Snapshot) -> list[str]:
    """Custom resources whose ``Ready`` condition (True or False) is not yet about their current generation."""
    problems = []
    for cr in snapshot.crs:
        ready = condition(cr, "Ready")
        generation = _meta(cr).get("generation")
        if ready is None:
            problems.append(f"{_name(cr)}: no Ready condition")
        elif ready.get("status") not in ("True", "False") or ready.get("observedGeneration") != generation:
            problems.append(
                f"{_name(cr)}: Ready={ready.get('status')} for generation {ready.get('observedGeneration')}, "
                f"the object is at {generation}"
            )
    return problems


def ready_reasons(snapshot: Snapshot) -> dict[str, int]:
    """How many custom resources end with each ``Ready`` status and reason (``"False/InvalidSpec": 12``)."""
    counts: collections.Counter[str] = collections.Counter()
    for cr in snapshot.crs:
        ready = condition(cr, "Ready") or {}
        counts[f"{ready.get('status', '-')}/{ready.get('reason', '-')}"] += 1
    return dict(sorted(counts.items()))


def verdicts_match(snapshot: Snapshot, verdicts: Mapping[str, str | None]) -> Check:
    """Each custom resource's ``Ready`` agrees with the verdict on its spec: None (valid: anything but Ready=False
    for ``InvalidSpec``) or the reason it must be refused with (Ready=False, that reason)."""
    by_name = snapshot.by_name
    problems = []
    for name, verdict in sorted(verdicts.items()):
        cr = by_name.get(name)
        ready = condition(cr, "Ready")
        if cr is None or ready is None:
            problems.append(f"{name}: no Ready condition")
            continue
        status, reason = ready.get("status"), ready.get("reason")
        if verdict is None and status == "False" and reason == "InvalidSpec":
            problems.append(f"{name}: a valid spec refused: {ready.get('message')}")
        elif verdict is not None and (status != "False" or reason != verdict):
            spec = json.dumps(cr.get("spec"), default=str)[:120]
            problems.append(f"{name}: expected Ready=False/{verdict}, got Ready={status}/{reason} for spec {spec}")
    return Check("Ready agrees with the spec's validity", tuple(problems))


def with_status(snapshot: Snapshot) -> Check:
    """Every custom resource has a status with a ``Ready`` condition that gives a reason (none left unattended)."""
    problems = []
    for cr in snapshot.crs:
        ready = condition(cr, "Ready")
        if not cr.get("status"):
            problems.append(f"{_name(cr)}: no status")
        elif ready is None:
            problems.append(f"{_name(cr)}: status without a Ready condition")
        elif not ready.get("reason"):
            problems.append(f"{_name(cr)}: Ready={ready.get('status')} without a reason")
    return Check("every CR has a status", tuple(problems))


@dataclasses.dataclass(frozen=True)
class ChildAudit:
    """The children of a snapshot's custom resources, sorted into what is wrong with them (see :func:`child_audit`)."""

    missing: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    multi_controller: tuple[str, ...] = ()
    orphans: tuple[str, ...] = ()

    def check(self) -> Check:
        problems = self.missing + self.duplicates + self.unexpected + self.multi_controller + self.orphans
        return Check("children exact (no duplicate, no orphan)", problems)


def child_audit(
    snapshot: Snapshot, expected: ExpectedChildren = memcached_children, names: Iterable[str] | None = None
) -> ChildAudit:
    """The children of each custom resource, by the uid their controller ownerReference names, against the expected
    set: missing, duplicate, unexpected, with several controllers, or orphan (no custom resource has that uid);
    ``names`` restricts "missing" to those custom resources (others may not be reconciled yet)."""
    owners = {str(_meta(cr).get("uid")): _name(cr) for cr in snapshot.crs}
    required = set(snapshot.by_name) if names is None else set(names)
    found: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    multi, orphans = [], []
    for child in snapshot.children:
        label = f"{child.get('kind')}/{_name(child)}"
        refs = controller_refs(child)
        ours = [r for r in refs if r.get("kind") == snapshot.owner_kind]
        if not ours:
            continue
        if len(refs) > 1:
            multi.append(f"{label}: {len(refs)} controller ownerReferences")
        uid = str(ours[0].get("uid"))
        if uid in owners:
            found[owners[uid]].append((str(child.get("kind")), _name(child)))
        else:
            orphans.append(f"{label}: orphan (its owner {ours[0].get('name')} uid {uid} does not exist)")
    missing, duplicates, unexpected = [], [], []
    for name in sorted(owners.values()):
        have, want = found.get(name, []), expected(name)
        counted = collections.Counter(have)
        duplicates += [f"{name}: duplicate {k}/{n} (x{c})" for (k, n), c in sorted(counted.items()) if c > 1]
        unexpected += [f"{name}: unexpected {k}/{n}" for k, n in sorted(set(have) - want)]
        if name in required:
            missing += [f"{name}: missing {k}/{n}" for k, n in sorted(want - set(have))]
    return ChildAudit(tuple(missing), tuple(duplicates), tuple(unexpected), tuple(multi), tuple(orphans))


def children_exact(
    snapshot: Snapshot, expected: ExpectedChildren = memcached_children, names: Iterable[str] | None = None
) -> Check:
    """Exactly the expected children per custom resource, one controller reference each, no orphan."""
    return child_audit(snapshot, expected, names).check()


def replicas_match(snapshot: Snapshot, sizes: Mapping[str, int]) -> Check:
    """The spec each named custom resource was last given (``sizes``) reached its Deployment's replicas."""
    by_name = snapshot.by_name
    deployments = {_name(c): c for c in snapshot.children if c.get("kind") == "Deployment"}
    problems = []
    for name, size in sorted(sizes.items()):
        spec = (by_name.get(name) or {}).get("spec")
        written = spec.get("size") if isinstance(spec, Mapping) else spec
        replicas = ((deployments.get(name) or {}).get("spec") or {}).get("replicas")
        if not isinstance(spec, Mapping) or written != size:
            problems.append(f"{name}: spec.size is {written}, the last write set {size}")
        elif replicas != size:
            problems.append(f"{name}: Deployment replicas {replicas}, spec.size {size}")
    return Check("the last spec reached the children", tuple(problems))


def inventory_matches(snapshot: Snapshot, deleted: Iterable[str] = ()) -> Check:
    """The inventory lists every live custom resource with its uid, and none of the ``deleted`` ones."""
    entries = memcached_inventory.entries({"data": snapshot.inventory})
    problems = []
    for cr in snapshot.crs:
        name, uid = _name(cr), _meta(cr).get("uid")
        entry = entries.get(name, {})
        if "uid" not in entry:
            problems.append(f"{name}: no inventory entry")
        elif entry["uid"] != uid:
            problems.append(f"{name}: inventory entry for uid {entry['uid']}, the object is {uid}")
    gone = sorted(set(deleted) - set(snapshot.by_name))
    problems += [f"{name}: deleted, still in the inventory" for name in gone if name in entries]
    return Check("inventory matches", tuple(problems))


def state_checks(
    snapshot: Snapshot, names: Sequence[str], sizes: Mapping[str, int], deleted: Sequence[str] = ()
) -> list[Check]:
    """The end state every scenario with the stock operator must reach (``deleted``: gone, and gone from the
    inventory)."""
    return [
        converged(snapshot, names),
        children_exact(snapshot, names=names),
        with_status(snapshot),
        replicas_match(snapshot, sizes),
        inventory_matches(snapshot, deleted),
    ]


def loss_figures(snapshot: Snapshot, names: Sequence[str]) -> dict[str, int]:
    """Objects lost (not converged, or missing from the inventory), duplicate and orphan children."""
    audit = child_audit(snapshot, names=names)
    return {
        "objects_lost": len(not_converged(snapshot, names)) + len(inventory_matches(snapshot).problems),
        "duplicates": len(audit.duplicates) + len(audit.unexpected) + len(audit.multi_controller),
        "orphans": len(audit.orphans),
    }


# -- deletions ---------------------------------------------------------------------------------------------------


def cleanup_exactly_once(effective: Mapping[str, int], deleted: Iterable[str]) -> Check:
    """Each deleted custom resource's cleanup took effect exactly once (its inventory entry removed once)."""
    names = set(deleted)
    problems = [f"{n}: cleaned up {effective.get(n, 0)} times" for n in sorted(names) if effective.get(n) != 1]
    problems += [f"{name}: cleaned up without being deleted" for name in sorted(set(effective) - names)]
    return Check("cleanup exactly once per deletion", tuple(problems))


def finalizer_kept(snapshot: Snapshot, names: Iterable[str], finalizer: str) -> Check:
    """Each named custom resource still exists, is being deleted and still carries ``finalizer``."""
    by_name = snapshot.by_name
    problems = []
    for name in sorted(set(names)):
        meta = _meta(by_name.get(name))
        if name not in by_name:
            problems.append(f"{name}: gone although its cleanup failed")
        elif not meta.get("deletionTimestamp"):
            problems.append(f"{name}: not being deleted")
        elif finalizer not in (meta.get("finalizers") or ()):
            problems.append(f"{name}: finalizer {finalizer} removed although its cleanup failed")
    return Check("failing cleanup keeps the finalizer", tuple(problems))
