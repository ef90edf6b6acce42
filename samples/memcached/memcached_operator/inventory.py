"""The inventory: one ConfigMap per namespace listing every Memcached the operator manages there.

Why this exists: it is the sample's reason to have a finalizer. The inventory is not owned by any one Memcached (it
lists all of them), so Kubernetes' garbage collector cannot clean an entry when its Memcached goes: the operator must,
before the object disappears — which is exactly what a finalizer guarantees. Other tools (a dashboard, a backup job)
read ``memcached-inventory`` to find the caches of a namespace without needing to read the custom resources.

Shape: ``ConfigMap memcached-inventory``, one ``data`` key per Memcached name, its value a compact JSON object
``{"image": ..., "size": ..., "uid": ...}``.

Guarantees:

* :func:`record` writes only when the entry is missing or different (a steady state sends no request), and
  :func:`forget` only when the entry is present;
* every write is a JSON merge patch of **one** ``data`` key, so concurrent reconciles of different Memcacheds of
  the same namespace never overwrite each other's entries and never conflict on resourceVersion;
* the ConfigMap is created on first use (a concurrent creation is detected and turned into a patch) and is kept
  when it becomes empty, since another Memcached may be recorded a moment later.

Caveat: the entries of Memcacheds deleted while the operator ran without its finalizer stay behind; that is why the
reconciler only keeps an inventory when its finalizer is on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import okt

from . import api

NAME = "memcached-inventory"
"""The inventory ConfigMap's name, in each namespace that has Memcacheds."""

MANAGED_BY = {"app.kubernetes.io/managed-by": "memcached-operator", "app.kubernetes.io/name": "memcached-inventory"}


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
        ``UNCHANGED`` (no request was sent).

    Raises:
        okt.ApiError: the API refused a read or a write.
    """
    namespace, name = ctx.cr.namespace, ctx.cr.name
    value = entry_for(ctx.cr)
    kind = configmap_kind(ctx.client)
    live = ctx.reader.get(kind, NAME, namespace)
    if live is not None and ((live.get("data") or {}).get(name)) == value:
        return okt.Operation.UNCHANGED
    if live is None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(MANAGED_BY)},
            "data": {name: value},
        }
        try:
            ctx.observe(ctx.client.create(body, kind))
            return okt.Operation.CREATED
        except okt.Conflict as exc:
            if not exc.already_exists:
                raise
            # Another reconcile created it since our read: fall through to a patch of our key.
    ctx.observe(ctx.client.patch(kind, NAME, {"data": {name: value}}, namespace))
    return okt.Operation.UPDATED


def forget(ctx: okt.Context) -> okt.Operation:
    """Remove the custom resource's entry from its namespace's inventory.

    Reads the inventory from the API (not a cache): this runs once per deletion, and a stale read must never let an
    entry survive its Memcached.

    Returns:
        ``UPDATED`` (the entry was removed) or ``UNCHANGED`` (there was no entry, or no inventory).

    Raises:
        okt.ApiError: the API refused the read or the write.
    """
    namespace, name = ctx.cr.namespace, ctx.cr.name
    kind = configmap_kind(ctx.client)
    live = ctx.client.get_or_none(kind, NAME, namespace)
    if live is None or name not in (live.get("data") or {}):
        return okt.Operation.UNCHANGED
    try:
        ctx.observe(ctx.client.patch(kind, NAME, {"data": {name: None}}, namespace))
    except okt.NotFound:
        return okt.Operation.UNCHANGED
    return okt.Operation.UPDATED
