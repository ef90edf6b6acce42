"""The memcached operator written with Kopf, the way a Kopf user writes it: the benchmark's Kopf contender.

Idiomatic, not a strawman: one handler for create, update and resume, children adopted and read before a write,
status patched only when it changes; settings (and why ``worker_limit`` stays unbounded) in ``benchmarks/README.md``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import kopf
import pykube

from benchmarks import contenders, manifests

_api: pykube.HTTPClient | None = None
_api_lock = threading.Lock()

_KINDS: dict[str, Any] = {
    "ConfigMap": pykube.ConfigMap,
    "Service": pykube.Service,
    "Deployment": pykube.Deployment,
}


def api() -> pykube.HTTPClient:
    """One pykube client for the whole operator (its session is shared by the handler threads)."""
    global _api
    with _api_lock:
        if _api is None:
            _api = pykube.HTTPClient(pykube.KubeConfig.from_env())
        return _api


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.execution.max_workers = int(os.environ.get(contenders.WORKERS_VARIABLE, "8"))


def ensure(doc: dict[str, Any], namespace: str) -> str:
    """Create the child if it is missing, patch it if it drifted from ``doc``; returns what was done."""
    kind = _KINDS[doc["kind"]]
    live = kind.objects(api(), namespace=namespace).get_or_none(name=doc["metadata"]["name"])
    if live is None:
        kind(api(), doc).create()
        return "created"
    desired = {key: value for key, value in doc.items() if key not in ("apiVersion", "kind", "metadata")}
    desired["metadata"] = {"labels": doc["metadata"].get("labels", {})}
    if manifests.is_subset(desired, live.obj):
        return "unchanged"
    live.patch(desired)
    return "patched"


@kopf.on.resume(manifests.GROUP, manifests.VERSION, manifests.PLURAL)
@kopf.on.create(manifests.GROUP, manifests.VERSION, manifests.PLURAL)
@kopf.on.update(manifests.GROUP, manifests.VERSION, manifests.PLURAL)
def reconcile(
    body: kopf.Body,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    name: str,
    namespace: str | None,
    patch: kopf.Patch,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    if namespace is None:
        raise kopf.PermanentError("Memcached is a namespaced kind")
    children = manifests.children(name, namespace, dict(spec))
    kopf.adopt(children, owner=body)
    done = [ensure(child, namespace) for child in children]
    generation = int(meta.get("generation", 1))
    previous = manifests.find_condition(dict(status), "Ready")
    condition = manifests.ready_condition(generation, previous)
    if status.get("observedGeneration") != generation or not _same_condition(previous, condition):
        patch.status["observedGeneration"] = generation
        patch.status["conditions"] = [condition]
    logger.debug(f"children: {', '.join(done)}")


def _same_condition(previous: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    if previous is None:
        return False
    return all(previous.get(key) == wanted[key] for key in ("status", "reason", "observedGeneration"))
