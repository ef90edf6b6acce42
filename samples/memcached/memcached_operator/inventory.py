"""The inventory: one ConfigMap per namespace listing every Memcached the operator manages there.

Why this exists: it is the sample's reason to have a finalizer. The inventory is not owned by any one Memcached (it
lists all of them), so Kubernetes' garbage collector cannot clean an entry when its Memcached goes: the operator must,
before the object disappears — which is exactly what a finalizer guarantees. Other tools (a dashboard, a backup job)
read ``memcached-inventory`` to find the caches of a namespace without needing to read the custom resources.

Shape: ``ConfigMap memcached-inventory``, one ``data`` key per Memcached name, its value a compact JSON object
``{"image": ..., "size": ..., "uid": ...}``.

Guarantees:

* :func:`record` writes only when the entry is missing or different (a steady state sends no request);
* every write touches **one** ``data`` key, so concurrent reconciles of different Memcacheds of the same namespace
  never overwrite each other's entries;
* a record is **fenced**: it is a JSON patch that first tests the inventory's resourceVersion, and every
  :func:`forget` changes the inventory (it removes the entry and stamps :data:`FORGOTTEN` with the Memcached's uid,
  creating an empty inventory if there is none, unless its namespace is being deleted). A record read before a
  forget — a request of an operator killed in mid-flight that the API server applies late — therefore fails instead
  of bringing back the entry of a Memcached that is gone;
* a record is only written for a Memcached that, **read from the API** just before, is still the one the reconcile
  is about, not being deleted, with the finalizer on. Otherwise it could outlive its Memcached: the API server can
  delete an object at once although adding its finalizer was answered 200 (Kubernetes issue 77988; okt then runs the
  cleanup when the watch tells the deletion), and a reconcile working from a cache that trails the deletion (a new
  operator's first list is answered by the API server's watch cache) would record it after its forget. Nothing else
  forgets it between that read and the write: okt reconciles one Memcached in one worker at a time, and one operator
  leads. The read costs one request per record that writes, none at a steady state;
* within one operator, the writes to one namespace's inventory take turns (:func:`turn`), so its own workers never
  fail each other's fence: the cached inventory already holds the previous write's answer. A record that loses to
  another writer re-reads the inventory from the API and tries again at once. Only a lost fence is such a race
  (:func:`lost_the_fence`): any other refusal — the ConfigMap past the API server's 1 MiB — is reported as it is;
* the ConfigMap is created on first use (a concurrent creation is detected and turned into a patch) and is kept
  when it becomes empty, since another Memcached may be recorded a moment later.

Caveats: the entries of Memcacheds deleted while the operator ran without its finalizer stay behind; that is why the
reconciler only keeps an inventory when its finalizer is on. One ConfigMap holds a whole namespace: every reconcile
reads all of it from the cache and every record's answer is all of it, so its cost grows with the namespace's
Memcacheds (a fifth of the CPU of restarting over 1000 in one namespace), and a ConfigMap holds at most 1 MiB
(about 10,000 entries). The sample shows what a finalizer is for, not how to keep an index of thousands of objects.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import okt

from . import api

NAME = "memcached-inventory"
"""The inventory ConfigMap's name, in each namespace that has Memcacheds."""

ATTEMPTS = 4
"""Fenced record patches tried in a row (each after a fresh read) before the reconcile is retried later."""

FORGOTTEN = f"{api.GROUP}/last-forgotten"
"""The annotation every :func:`forget` stamps with the uid of the Memcached it forgot."""

MANAGED_BY = {"app.kubernetes.io/managed-by": "memcached-operator", "app.kubernetes.io/name": "memcached-inventory"}


_turns: dict[str | None, threading.Lock] = {}
_turns_guard = threading.Lock()


def turn(namespace: str | None) -> threading.Lock:
    """The lock this process's writes to ``namespace``'s inventory take turns on."""
    with _turns_guard:
        return _turns.setdefault(namespace, threading.Lock())


def entry_for(cr: okt.CustomResource) -> str:
    """The inventory value of one Memcached (canonical JSON, so equal entries are equal strings)."""
    spec = api.spec_of(cr.spec)
    return json.dumps({"image": spec.image, "size": spec.size, "uid": cr.uid}, sort_keys=True, separators=(",", ":"))


def entries(configmap: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The parsed entries of an inventory ConfigMap (an unreadable value is kept as ``{"raw": value}``)."""
    data: Mapping[str, str] = (configmap or {}).get("data") or {}
    parsed: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        try:
            loaded = json.loads(value)
        except ValueError:
            loaded = None
        parsed[name] = loaded if isinstance(loaded, dict) else {"raw": value}
    return parsed


def configmap_kind(client: okt.Client) -> okt.Kind:
    """The REST addressing of ConfigMaps (a built-in kind: no discovery request)."""
    return client.resolve("v1", "ConfigMap")


def describe(namespace: str | None) -> str:
    """The inventory as a results entry names it."""
    return f"ConfigMap/{namespace}/{NAME}"


def record(ctx: okt.Context) -> okt.Operation:
    """Make sure the inventory of the custom resource's namespace lists it with its current image and size.

    Returns:
        ``CREATED`` (the ConfigMap was created with the entry), ``UPDATED`` (the entry was added or changed) or
        ``UNCHANGED`` (the entry was there; or the Memcached, read from the API, is gone, replaced or being deleted:
        nothing is recorded, and its deletion's own reconcile does the rest).

    Raises:
        okt.Invalid: the inventory kept changing under :data:`ATTEMPTS` fenced patches in a row (422: the
            resourceVersion test failed, :func:`lost_the_fence`); or the API server refused what the write makes of
            the inventory (at once: too large, a key it refuses).
        okt.ApiError: the API refused a read or a write.
    """
    namespace, name = ctx.cr.namespace, ctx.cr.name
    value = entry_for(ctx.cr)
    kind = configmap_kind(ctx.client)
    live = ctx.reader.get(kind, NAME, namespace)
    if live is not None and (live.get("data") or {}).get(name) == value:
        return okt.Operation.UNCHANGED
    if not still_recordable(ctx):
        return okt.Operation.UNCHANGED
    with turn(namespace):
        return _record(ctx, kind, ctx.reader.get(kind, NAME, namespace), name, value)


def still_recordable(ctx: okt.Context) -> bool:
    """Whether the custom resource, read from the API now, is the one ``ctx`` holds (same uid), not being deleted,
    and carries the reconciler's finalizer — so that its deletion will run :func:`forget` after this record."""
    fresh = ctx.client.get_or_none(ctx.kind, ctx.cr.name, ctx.cr.namespace)
    meta = (fresh or {}).get("metadata") or {}
    return (
        fresh is not None
        and meta.get("uid") == ctx.cr.uid
        and not meta.get("deletionTimestamp")
        and ctx.settings.finalizer in (meta.get("finalizers") or ())
    )


def _record(ctx: okt.Context, kind: okt.Kind, live: dict[str, Any] | None, name: str, value: str) -> okt.Operation:
    namespace = ctx.cr.namespace
    for attempt in range(1, ATTEMPTS + 1):
        if live is not None and (live.get("data") or {}).get(name) == value:
            return okt.Operation.UNCHANGED
        try:
            if live is None:
                ctx.observe(ctx.client.create(created_with(namespace, {name: value}), kind))
                return okt.Operation.CREATED
            ctx.observe(ctx.client.patch(kind, NAME, fenced_set(live, name, value), namespace, patch_type="json"))
            return okt.Operation.UPDATED
        except okt.Invalid as exc:  # lost the fence: the inventory changed since it was read (else: refused)
            if not lost_the_fence(exc) or attempt == ATTEMPTS:
                raise
        except okt.Conflict as exc:  # created by someone else since it was read
            if not exc.already_exists or attempt == ATTEMPTS:
                raise
        live = ctx.client.get_or_none(kind, NAME, namespace)
    raise AssertionError("unreachable: the last attempt returns or raises")


def lost_the_fence(exc: okt.Invalid) -> bool:
    """Whether a fenced patch was refused because its resourceVersion test failed (another writer came first).

    The API server answers a JSON patch it cannot apply — a ``test`` that fails — with a 422 that names no field
    (``the server rejected our request due to an error in our request``, no causes); the other operation of a fenced
    patch adds to ``data``, which the test just found. A patched inventory it refuses names the field in its causes:
    ``[]: Too long: must have at most 1048576 bytes`` for the ConfigMap past 1 MiB, ``data[<key>]`` for a key it
    refuses. Those are no race: the same write is refused again, however soon it is retried.
    """
    return not any(cause.field for cause in exc.causes)


class InventoryTooLarge(okt.OktError):
    """The namespace's inventory cannot take the entry: its ConfigMap would pass the API server's 1 MiB.

    Not the Memcached's fault, nor fixed by an edit of it: room is made when other Memcacheds of the namespace go. So
    it is no permanent error (which would wait for an edit): the reconcile is retried with backoff, as for any API
    error, and ``Ready=False`` says this.
    """

    reason = "InventoryTooLarge"


def refusal(exc: okt.Invalid, namespace: str | None) -> okt.OktError:
    """What a refused record is reported as: :class:`InventoryTooLarge` for the ConfigMap's size, else ``exc``."""
    then = "retried with backoff; deleting Memcacheds of the namespace makes room"
    too_large = okt.ObjectTooLarge.from_invalid(f"the inventory {describe(namespace)}", exc, then)
    if too_large is None:
        return exc
    error = InventoryTooLarge(str(too_large))
    error.__cause__ = exc
    return error


def created_with(
    namespace: str | None, data: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A new inventory ConfigMap."""
    metadata: dict[str, Any] = {"name": NAME, "namespace": namespace, "labels": dict(MANAGED_BY)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    if data:
        body["data"] = dict(data)
    return body


def fenced_set(live: Mapping[str, Any], name: str, value: str) -> list[dict[str, Any]]:
    """A JSON patch that sets one entry only if the inventory is still at the resourceVersion it was read at."""
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]}
    ]
    if live.get("data"):
        ops.append({"op": "add", "path": f"/data/{_pointer(name)}", "value": value})
    else:
        ops.append({"op": "add", "path": "/data", "value": {name: value}})
    return ops


def forget(ctx: okt.Context) -> okt.Operation:
    """Remove the custom resource's entry from its namespace's inventory, fencing off records read before.

    Reads the inventory from the API (not a cache: this runs once per deletion, and a stale read must never let an
    entry survive its Memcached), then always writes — a merge patch that removes the entry and stamps
    :data:`FORGOTTEN` with the uid, or the creation of an empty stamped inventory when there is none — so that the
    inventory's resourceVersion moves past every record that had read it earlier. The one exception: a namespace
    being deleted that has no inventory left, where the API server refuses the creation and no record can land
    (see :func:`namespace_terminating`).

    Returns:
        ``UPDATED`` (the entry was there and is removed) or ``UNCHANGED`` (there was no entry: only the stamp).

    Raises:
        okt.ApiError: the API refused the read or the write.
    """
    namespace, name = ctx.cr.namespace, ctx.cr.name
    kind = configmap_kind(ctx.client)
    stamp = {FORGOTTEN: ctx.cr.uid}
    with turn(namespace):
        return _forget(ctx, kind, name, stamp)


def _forget(ctx: okt.Context, kind: okt.Kind, name: str, stamp: dict[str, str]) -> okt.Operation:
    namespace = ctx.cr.namespace
    for _ in range(ATTEMPTS):
        live = ctx.client.get_or_none(kind, NAME, namespace)
        try:
            if live is None:
                ctx.observe(ctx.client.create(created_with(namespace, annotations=stamp), kind))
                return okt.Operation.UNCHANGED
            removal = {"metadata": {"annotations": stamp}, "data": {name: None}}
            ctx.observe(ctx.client.patch(kind, NAME, removal, namespace))
        except okt.NotFound:  # deleted between the read and the patch: read again
            continue
        except okt.Conflict as exc:  # created between the read and the create: read again
            if not exc.already_exists:
                raise
            continue
        except okt.Forbidden as exc:
            if live is not None or not namespace_terminating(exc):
                raise
            return okt.Operation.UNCHANGED
        return okt.Operation.UPDATED if name in (live.get("data") or {}) else okt.Operation.UNCHANGED
    raise okt.TemporaryError(f"the inventory {describe(namespace)} kept appearing and disappearing; will retry")


def namespace_terminating(exc: okt.Forbidden) -> bool:
    """Whether the API server refused a creation because the namespace is being deleted.

    Nothing is left to fence then: the namespace's deletion already removed the inventory, and no record can create
    it again (the API server refuses every creation in that namespace), so the stamp is not needed — and insisting
    on it would hold the Memcached, and with it the namespace, in deletion for ever. The API server says so only in
    its message (okt keeps no status causes).
    """
    return "because it is being terminated" in exc.api_message


def _pointer(key: str) -> str:
    """``key`` as one JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")
