"""The lists of built-in kinds that server-side apply merges by key, and the keys it merges them by.

Why this exists: the API server merges the items of such a list (``x-kubernetes-list-type: map`` with its
``x-kubernetes-list-map-keys``, or a ``patchMergeKey`` with the ``merge`` patch strategy) by their key, and keeps the
items of other managers beside okt's: a port a metrics exporter added to okt's Service, an env var a webhook injected
into okt's container. Compared item by item at the same index, such a list never matches okt's template again, and
the drift check would write the child after every restart, for nothing — the apply keeps the other items. So the
drift check marks these lists (:func:`mark`, :class:`okt.resources.checksum.KeyedList`) and compares them by key:
okt's items must be there, as okt wrote them and in its order; other items are someone else's.

Guarantees: only the lists of :data:`KINDS` are marked, at their paths; every other list — one of a custom
resource (its CRD decides, and declares lists atomic unless it says otherwise), an atomic list of a built-in kind
(``args``, ``tolerations``, an Ingress's ``rules``) — is compared whole, item by item, as before. The keys are those of
the API's OpenAPI schema (``x-kubernetes-list-map-keys``, or the ``patchMergeKey`` server-side apply merges by where
the schema names no list type); a key field the server defaults (a port's ``protocol``) stands for its default when a
template leaves it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeAlias

from okt.resources import checksum


@dataclasses.dataclass(frozen=True)
class Keyed:
    """A list merged by the key ``fields``; ``defaults``: what the server fills in for a key field left out; ``items``:
    the keyed lists inside each item, by path from the item."""

    fields: tuple[str, ...]
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    items: Schema = dataclasses.field(default_factory=dict)


Schema: TypeAlias = Mapping[str, "Keyed | Schema"]
"""Where the keyed lists of an object are: a field name to the list there (:class:`Keyed`), or to the schema of the
mapping there."""

_TCP = {"protocol": "TCP"}

_CONTAINER: Schema = {
    "ports": Keyed(("containerPort", "protocol"), _TCP),
    "env": Keyed(("name",)),
    "volumeMounts": Keyed(("mountPath",)),
    "volumeDevices": Keyed(("devicePath",)),
    "resources": {"claims": Keyed(("name",))},
}

_POD_SPEC: Schema = {  # no ephemeralContainers: refused in a template and in a new Pod, added by a subresource
    "containers": Keyed(("name",), items=_CONTAINER),
    "initContainers": Keyed(("name",), items=_CONTAINER),
    "volumes": Keyed(("name",)),
    "imagePullSecrets": Keyed(("name",)),
    "hostAliases": Keyed(("ip",)),
    "topologySpreadConstraints": Keyed(("topologyKey", "whenUnsatisfiable")),
    "resourceClaims": Keyed(("name",)),
    "schedulingGates": Keyed(("name",)),
}

_POD_TEMPLATE: Schema = {"spec": _POD_SPEC}
_WORKLOAD: Schema = {"spec": {"template": _POD_TEMPLATE}}

KINDS: Mapping[tuple[str, str], Schema] = {
    ("", "Service"): {"spec": {"ports": Keyed(("port", "protocol"), _TCP)}},
    ("", "ServiceAccount"): {"secrets": Keyed(("name",))},
    ("", "Pod"): {"spec": _POD_SPEC},
    ("", "PodTemplate"): {"template": _POD_TEMPLATE},
    ("", "ReplicationController"): _WORKLOAD,
    ("apps", "Deployment"): _WORKLOAD,
    ("apps", "StatefulSet"): _WORKLOAD,
    ("apps", "DaemonSet"): _WORKLOAD,
    ("apps", "ReplicaSet"): _WORKLOAD,
    ("batch", "Job"): _WORKLOAD,
    ("batch", "CronJob"): {"spec": {"jobTemplate": _WORKLOAD}},
}
"""The keyed lists of each built-in kind okt's children are made of, by API group (any version) and kind."""


def schema_of(api_version: str, kind: str) -> Schema | None:
    """The keyed lists of ``kind`` in ``api_version``'s group, or None for a kind with none known."""
    return KINDS.get((api_version.rpartition("/")[0], kind))


def mark(body: dict[str, Any], *, keyed: bool = True) -> None:
    """Replace, in place, each list of ``body`` (an object of its ``apiVersion`` and ``kind``) that server-side apply
    merges by key with a :class:`~okt.resources.checksum.KeyedList` of the same items; unless not ``keyed`` (a child
    written by merge patches, whose lists are compared whole): then each item of such a list that leaves out a key
    field the server defaults gets that default spelled out, and is compared with it at its index."""
    schema = schema_of(str(body.get("apiVersion") or ""), str(body.get("kind") or ""))
    if schema is not None:
        _mark(body, schema, keyed)


def _mark(value: Any, schema: Schema, keyed: bool) -> None:
    if not isinstance(value, dict):
        return
    for name, inner in schema.items():
        found = value.get(name)
        if isinstance(inner, Keyed):
            if isinstance(found, list):
                for item in found:
                    _mark(item, inner.items, keyed)
                    if not keyed and isinstance(item, dict):
                        item.update({k: v for k, v in inner.defaults.items() if item.get(k) is None})
                if keyed:
                    value[name] = checksum.KeyedList(found, inner.fields, inner.defaults)
        else:
            _mark(found, inner, keyed)


def defaults_kept(body: Mapping[str, Any], shape: Any, live: Any) -> bool:
    """Whether ``live`` holds, at the index of each item of ``body``'s keyed lists that leaves out a key field the
    server defaults, that default (or nothing) there — as far as ``shape`` covers ``body`` (see
    :func:`okt.resources.checksum.narrowed`).

    The item at the same index matching every field the item sets is not enough: ``{"port": 80}`` is ``(80, TCP)``,
    which a live ``{"port": 80, "protocol": "UDP"}`` is not. This is what the drift check's first, positional look
    adds to tell so, without copying the object; it walks only the lists of :data:`KINDS` with such a key field."""
    schema = _DEFAULTED.get((str(body.get("apiVersion") or "").rpartition("/")[0], str(body.get("kind") or "")))
    return schema is None or _kept(body, shape, live, schema)


def _kept(value: Any, shape: Any, live: Any, schema: Schema) -> bool:
    if not isinstance(value, Mapping) or not isinstance(live, Mapping):
        return True  # nothing of the schema's there, or told apart by the positional look already
    narrowing = isinstance(shape, Mapping)
    for name, inner in schema.items():
        if narrowing and name not in shape:
            continue
        within = shape[name] if narrowing else shape
        found, there = value.get(name), live.get(name)
        if not isinstance(inner, Keyed):
            if not _kept(found, within, there, inner):
                return False
            continue
        if not isinstance(found, list) or not isinstance(there, list):
            continue
        for item, other in zip(found, there, strict=False):
            if not isinstance(item, Mapping) or not isinstance(other, Mapping):
                continue
            for field, default in inner.defaults.items():
                if item.get(field) is None and other.get(field, default) != default:
                    return False
            if not _kept(item, None, other, inner.items):
                return False
    return True


def _defaulted(schema: Schema) -> Schema:
    """``schema`` cut down to the keyed lists with a defaulted key field, and the ways to them."""
    kept: dict[str, Keyed | Schema] = {}
    for name, inner in schema.items():
        if isinstance(inner, Keyed):
            items = _defaulted(inner.items)
            if inner.defaults or items:
                kept[name] = Keyed(inner.fields, inner.defaults, items)
        elif found := _defaulted(inner):
            kept[name] = found
    return kept


_DEFAULTED: Mapping[tuple[str, str], Schema] = {
    kind: cut for kind, schema in KINDS.items() if (cut := _defaulted(schema))
}
"""The part of :data:`KINDS` :func:`defaults_kept` walks."""
