"""The lists of a kind that server-side apply merges by key (a built-in kind's, or a CRD's map lists), and their keys.

Why this exists: the API server merges the items of such a list (``x-kubernetes-list-type: map`` with its
``x-kubernetes-list-map-keys``, or a ``patchMergeKey`` with the ``merge`` patch strategy) by their key, and keeps the
items of other managers beside okt's: a port a metrics exporter added to okt's Service, an env var a webhook injected
into okt's container. Compared item by item at the same index, such a list never matches okt's template again, and
the drift check would write the child after every restart, for nothing — the apply keeps the other items. So the
drift check marks these lists (:func:`mark`, :class:`okt.resources.checksum.KeyedList`) and compares them by key:
okt's items must be there, as okt wrote them and in its order; other items are someone else's.

Guarantees: only the lists of :data:`KINDS` are marked, at their paths, and those of a custom resource whose class
carries its CRD's schema (:func:`from_openapi`: the lists it declares ``x-kubernetes-list-type: map``); every other
list — one of a custom resource without (its CRD decides, and declares lists atomic unless it says otherwise), an
atomic list of a built-in kind (``args``, ``tolerations``, an Ingress's ``rules``) — is compared whole, item by item,
as before. The keys are those of the API's OpenAPI schema (``x-kubernetes-list-map-keys``, or the ``patchMergeKey``
server-side apply merges by where the schema names no list type); a key field the server defaults (a port's
``protocol``) stands for its default when a template leaves it out.
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


@dataclasses.dataclass(frozen=True)
class Lists:
    """The keyed lists of one kind, as the drift check walks them: all of them (``schema``), and the part of them
    holding a key field the server defaults (``defaulted``: :func:`defaults_kept` walks only that)."""

    schema: Schema
    defaulted: Schema

    @classmethod
    def of(cls, schema: Schema) -> Lists:
        return cls(schema, _defaulted(schema))


def lists_of(api_version: str, kind: str) -> Lists | None:
    """:func:`schema_of` as :class:`Lists`, or None for a kind of :data:`KINDS`' groups with none."""
    return _TABLE.get((api_version.rpartition("/")[0], kind))


def mark(body: dict[str, Any], *, keyed: bool = True, lists: Lists | None = None) -> None:
    """Replace, in place, each list of ``body`` that server-side apply merges by key with a
    :class:`~okt.resources.checksum.KeyedList` of the same items; unless not ``keyed`` (a child written by merge
    patches, whose lists are compared whole): then each item of such a list that leaves out a key field the server
    defaults gets that default spelled out, and is compared with it at its index. The lists are ``lists``, or when
    None those of :data:`KINDS` for ``body``'s ``apiVersion`` and ``kind``."""
    lists = lists or lists_of(str(body.get("apiVersion") or ""), str(body.get("kind") or ""))
    if lists is not None:
        _mark(body, lists.schema, keyed)


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


def spell_defaults(body: dict[str, Any], lists: Lists) -> None:
    """Fill in, in place, each key field the server defaults that an item of ``body``'s keyed lists leaves out.

    Servers before 1.21 refuse an apply whose list item omits a key field; the server fills in that very value, so the
    stored object is what it would be without."""
    _mark(body, lists.defaulted, keyed=False)


def defaults_kept(body: Mapping[str, Any], shape: Any, live: Any, lists: Lists | None = None) -> bool:
    """Whether ``live`` holds, at the index of each item of ``body``'s keyed lists that leaves out a key field the
    server defaults, that default (or nothing) there — as far as ``shape`` covers ``body`` (see
    :func:`okt.resources.checksum.narrowed`). The lists are ``lists``, or when None those of :data:`KINDS`.

    The item at the same index matching every field the item sets is not enough: ``{"port": 80}`` is ``(80, TCP)``,
    which a live ``{"port": 80, "protocol": "UDP"}`` is not. This is what the drift check's first, positional look
    adds to tell so, without copying the object; it walks only the lists with such a key field."""
    lists = lists or lists_of(str(body.get("apiVersion") or ""), str(body.get("kind") or ""))
    return lists is None or not lists.defaulted or _kept(body, shape, live, lists.defaulted)


def _kept(value: Any, shape: Any, live: Any, schema: Schema) -> bool:
    # Runs over every child of every reconcile: the exact dicts of decoded objects are told apart, without a call,
    # before the ABC checks, which go through ABCMeta.__instancecheck__.
    if not (type(value) is dict or isinstance(value, Mapping)) or not (type(live) is dict or isinstance(live, Mapping)):
        return True  # nothing of the schema's there, or told apart by the positional look already
    narrowing = type(shape) is dict or isinstance(shape, Mapping)
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
            if not (type(item) is dict or isinstance(item, Mapping)):
                continue
            if not (type(other) is dict or isinstance(other, Mapping)):
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


_TABLE: Mapping[tuple[str, str], Lists] = {kind: Lists.of(schema) for kind, schema in KINDS.items()}


def from_openapi(schema: Mapping[str, Any]) -> Schema:
    """The keyed lists of an object of the structural schema ``schema`` (a CRD version's ``openAPIV3Schema``): each
    list it declares ``x-kubernetes-list-type: map``, keyed by its ``x-kubernetes-list-map-keys``, with the
    ``default`` its items' schema gives a key field. Outside ``metadata`` (whose lists are the API's own), through
    ``properties`` only: the items of a list of another type are its own whole (atomic) or scalars (set), and the
    values of a map (``additionalProperties``) have no names to find them by.

    Raises:
        ValueError: a part of ``schema`` is not a mapping, or a map list names no keys, or keys that are not
            strings; the message names where.
    """
    if not isinstance(schema, Mapping):
        raise ValueError(f"is not a mapping but a {type(schema).__name__}")
    return _from_openapi(schema, "", top=True)


def _from_openapi(schema: Mapping[str, Any], where: str, *, top: bool = False) -> Schema:
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise ValueError(f"{where or '.'}: properties is not a mapping")
    found: dict[str, Keyed | Schema] = {}
    for name, prop in properties.items():
        path = f"{where}.{name}"
        if top and name == "metadata":
            continue
        if not isinstance(prop, Mapping):
            raise ValueError(f"{path}: is not a mapping but a {type(prop).__name__}")
        if prop.get("type") != "array":
            inner = _from_openapi(prop, path)
            if inner:
                found[name] = inner
            continue
        if prop.get("x-kubernetes-list-type") != "map":
            continue
        keys = prop.get("x-kubernetes-list-map-keys")
        if not isinstance(keys, list) or not keys or not all(isinstance(key, str) for key in keys):
            raise ValueError(f"{path}: x-kubernetes-list-type map needs x-kubernetes-list-map-keys, a list of names")
        items = prop.get("items") or {}
        if not isinstance(items, Mapping):
            raise ValueError(f"{path}.items: is not a mapping but a {type(items).__name__}")
        fields = items.get("properties") or {}
        defaults = {
            key: fields[key]["default"]
            for key in keys
            if isinstance(fields, Mapping) and isinstance(fields.get(key), Mapping) and "default" in fields[key]
        }
        found[name] = Keyed(tuple(keys), defaults, _from_openapi(items, f"{path}[]"))
    return found


def to_openapi(schema: Schema) -> dict[str, Any]:
    """The part of a structural schema that holds ``schema``'s keyed lists: the ways to them, each with its keys and
    the ``default`` of its key fields, nothing else. ``from_openapi(to_openapi(s)) == s``: what a generated wrapper
    carries of its CRD (``okt gen resource --crd``)."""
    properties: dict[str, Any] = {}
    for name, inner in schema.items():
        if isinstance(inner, Keyed):
            fields = {key: {"default": value} for key, value in inner.defaults.items()}
            items = {"type": "object", "properties": {**fields, **to_openapi(inner.items).get("properties", {})}}
            properties[name] = {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": list(inner.fields),
                "items": items if items["properties"] else {"type": "object"},
            }
        else:
            properties[name] = to_openapi(inner)
    return {"type": "object", "properties": properties} if properties else {"type": "object"}
