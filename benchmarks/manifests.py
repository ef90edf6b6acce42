"""The objects every non-okt contender writes for one Memcached: the same children as the okt memcached sample.

Why this exists: a comparison is only fair if every contender writes the same objects. The Kopf operator and the raw
floor build their children here, from the custom resource's name, namespace and spec, as plain dicts — the shapes of
``samples/memcached/manifests/`` (Deployment ``<name>``, Service ``<name>``, ConfigMap ``<name>-config`` whose
memcached settings follow the size tier). Pure functions (a fresh dict every call), no framework imported.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

GROUP = "cache.example.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Memcached"
PLURAL = "memcacheds"
DEFAULT_IMAGE = "memcached:1.6"
PORT = 11211

# (largest size of the tier, tier name, memory limit MB, max connections, threads)
TIERS: tuple[tuple[int, str, int, int, int], ...] = (
    (3, "small", 64, 1024, 2),
    (10, "medium", 256, 4096, 4),
    (100, "large", 1024, 16384, 8),
)


def tier(size: int) -> tuple[str, int, int, int]:
    """The memcached settings tier of a cluster of ``size`` replicas: (name, memory MB, connections, threads)."""
    for largest, name, memory, connections, threads in TIERS:
        if size <= largest:
            return name, memory, connections, threads
    _, name, memory, connections, threads = TIERS[-1]
    return name, memory, connections, threads


def labels(cr_name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "memcached",
        "app.kubernetes.io/instance": cr_name,
        "app.kubernetes.io/managed-by": "memcached-operator",
    }


def selector(cr_name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": cr_name}


def custom_resource(name: str, namespace: str, size: int, image: str = DEFAULT_IMAGE) -> dict[str, Any]:
    """A Memcached custom resource as the harness creates it."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": size, "image": image},
    }


def config_map(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    tier_name, memory, connections, threads = tier(int(spec["size"]))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config", "namespace": namespace, "labels": labels(name)},
        "data": {
            "MEMCACHED_TIER": tier_name,
            "MEMCACHED_MEMORY_LIMIT_MB": str(memory),
            "MEMCACHED_MAX_CONNECTIONS": str(connections),
            "MEMCACHED_THREADS": str(threads),
        },
    }


def service(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(name)},
        "spec": {
            "selector": selector(name),
            "ports": [{"name": "memcached", "port": PORT, "targetPort": "memcached", "protocol": "TCP"}],
        },
    }


def deployment(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    _, memory, _, _ = tier(int(spec["size"]))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(name)},
        "spec": {
            "replicas": int(spec["size"]),
            "selector": {"matchLabels": selector(name)},
            "template": {
                "metadata": {"labels": selector(name)},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "runAsUser": PORT},
                    "containers": [
                        {
                            "name": "memcached",
                            "image": str(spec.get("image") or DEFAULT_IMAGE),
                            "args": [
                                "-m",
                                "$(MEMCACHED_MEMORY_LIMIT_MB)",
                                "-c",
                                "$(MEMCACHED_MAX_CONNECTIONS)",
                                "-t",
                                "$(MEMCACHED_THREADS)",
                            ],
                            "envFrom": [{"configMapRef": {"name": f"{name}-config"}}],
                            "ports": [{"name": "memcached", "containerPort": PORT, "protocol": "TCP"}],
                            "readinessProbe": {"tcpSocket": {"port": "memcached"}},
                            "resources": {
                                "requests": {"cpu": "100m", "memory": f"{memory + 32}Mi"},
                                "limits": {"memory": f"{memory + 32}Mi"},
                            },
                        }
                    ],
                },
            },
        },
    }


def children(name: str, namespace: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The three children of one Memcached, in the order they are created (ConfigMap first: the pods read it)."""
    return [config_map(name, namespace, spec), service(name, namespace, spec), deployment(name, namespace, spec)]


def owner_reference(cr: Mapping[str, Any]) -> dict[str, Any]:
    """The controller ownerReference pointing at ``cr`` (what garbage collection and okt's owner mapping follow)."""
    meta = cr["metadata"]
    return {
        "apiVersion": cr.get("apiVersion", API_VERSION),
        "kind": cr.get("kind", KIND),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def ready_condition(
    generation: int, previous: Mapping[str, Any] | None = None, message: str = "every child is in place"
) -> dict[str, Any]:
    """A ``Ready=True`` condition for ``generation``; keeps the previous lastTransitionTime if it was already True."""
    unchanged = previous is not None and previous.get("status") == "True"
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Reconciled",
        "message": message,
        "lastTransitionTime": str(previous["lastTransitionTime"])
        if unchanged and previous is not None and previous.get("lastTransitionTime")
        else now_rfc3339(),
        "observedGeneration": generation,
    }


def find_condition(status: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    for condition in (status or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def is_ready(cr: Mapping[str, Any]) -> bool:
    """Whether ``cr`` has ``Ready=True`` in its status."""
    condition = find_condition(cr.get("status"), "Ready")
    return condition is not None and condition.get("status") == "True"


def is_subset(desired: Any, live: Any) -> bool:
    """Whether every field of ``desired`` is present with the same value in ``live`` (lists compared item by item)."""
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(k in live and is_subset(v, live[k]) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(desired) == len(live) and all(map(is_subset, desired, live))
    return bool(desired == live)
