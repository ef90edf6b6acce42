"""The objects every non-okt contender writes for one Memcached: the same children as the okt memcached sample.

Built from the sample's own templates (``samples/memcached/manifests/``) with a plain substitution of
``{{ cr.name }}``, not Jinja: the floor must not carry a template engine. Pure functions, a fresh dict every call.
"""

from __future__ import annotations

import datetime
import functools
import json
import pathlib
from collections.abc import Mapping
from typing import Any

import yaml

GROUP = "cache.example.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Memcached"
PLURAL = "memcacheds"
DEFAULT_IMAGE = "memcached:1.6"
TEMPLATES = pathlib.Path(__file__).resolve().parent.parent / "samples" / "memcached" / "manifests"

# (largest size of the tier, tier name, memory limit MB, max connections, threads)
TIERS: tuple[tuple[int, str, int, int, int], ...] = (
    (3, "small", 64, 1024, 2),
    (10, "medium", 256, 4096, 4),
    (100, "large", 1024, 16384, 8),
)


def tier(size: int) -> tuple[str, int, int, int]:
    """The memcached settings tier of a cluster of ``size`` replicas: (name, memory MB, connections, threads)."""
    return next((found for found in TIERS if size <= found[0]), TIERS[-1])[1:]


@functools.cache
def _template_json(file: str) -> str:
    """A template as JSON text, parsed once: a contender's CPU time must not go to parsing YAML per object."""
    return json.dumps(yaml.safe_load((TEMPLATES / file).read_text()))


def _template(file: str, name: str, namespace: str) -> dict[str, Any]:
    """One of the sample's child templates for the custom resource ``name``, named and placed as the sample does."""
    child: dict[str, Any] = json.loads(_template_json(file).replace("{{ cr.name }}", name))
    child["metadata"].update(name=name, namespace=namespace)
    return child


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
    config = _template("configmap.yaml", name, namespace)
    config["metadata"]["name"] = f"{name}-config"
    config["data"] = {
        "MEMCACHED_TIER": tier_name,
        "MEMCACHED_MEMORY_LIMIT_MB": str(memory),
        "MEMCACHED_MAX_CONNECTIONS": str(connections),
        "MEMCACHED_THREADS": str(threads),
    }
    return config


def service(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return _template("service.yaml", name, namespace)


def deployment(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    _, memory, _, _ = tier(int(spec["size"]))
    deployment = _template("deployment.yaml", name, namespace)
    deployment["spec"]["replicas"] = int(spec["size"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    container["image"] = str(spec.get("image") or DEFAULT_IMAGE)
    container["resources"]["requests"]["memory"] = container["resources"]["limits"]["memory"] = f"{memory + 32}Mi"
    return deployment


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
    kept = previous.get("lastTransitionTime") if previous is not None and previous.get("status") == "True" else None
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Reconciled",
        "message": message,
        "lastTransitionTime": str(kept) if kept else now_rfc3339(),
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
