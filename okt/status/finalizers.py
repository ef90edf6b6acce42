"""Finalizers that never get stuck and never clobber another controller's.

Why this exists: OKT removed its finalizer even when cleanup failed; naive clients replace the whole finalizers list and
drop other controllers' entries. okt adds and removes its own entry with a JSON patch that first *tests* the
resourceVersion (and, on removal, that the entry is still at the index it read), so a concurrent change makes the
patch fail instead of overwriting it. The API server answers a failed ``test`` operation with 422 Invalid, not 409:
callers treat that :class:`okt.errors.Invalid` like a conflict (re-read, retry soon) — but not the 422 of an object
that fails validation (its Status names the invalid fields in its causes), which no retry soon can pass.

Guarantees: ``add`` is a no-op when present, ``remove`` when absent (and removes every entry of the name when a
client listed it twice); other finalizers are never touched; removal is only called by the engine after a cleanup
that recorded no error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from okt.kube import client as kube_client
from okt.kube import kinds, objects

Observer = Callable[[Mapping[str, Any]], None]


def add(
    client: kube_client.Client, kind: kinds.Kind, cr: objects.CustomResource, name: str, observe: Observer
) -> dict[str, Any] | None:
    if name in cr.finalizers:
        return None
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion", "value": cr.resource_version}]
    if cr.metadata.get("finalizers"):
        ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": name})
    else:
        ops.append({"op": "add", "path": "/metadata/finalizers", "value": [name]})
    updated = client.patch(kind, cr.name, ops, cr.namespace, patch_type="json")
    observe(updated)
    return updated


def remove(
    client: kube_client.Client, kind: kinds.Kind, cr: objects.CustomResource, name: str, observe: Observer
) -> dict[str, Any] | None:
    if name not in cr.finalizers:
        return None
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion", "value": cr.resource_version}]
    # Every entry of the name goes (the API server keeps a name listed twice, and one left would hold the object
    # until a second cleanup), the last first so that each index is still the one read.
    for index in reversed([i for i, finalizer in enumerate(cr.finalizers) if finalizer == name]):
        ops.append({"op": "test", "path": f"/metadata/finalizers/{index}", "value": name})
        ops.append({"op": "remove", "path": f"/metadata/finalizers/{index}"})
    updated = client.patch(kind, cr.name, ops, cr.namespace, patch_type="json")
    observe(updated)
    return updated
