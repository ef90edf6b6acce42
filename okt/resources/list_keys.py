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


def mark(body: dict[str, Any]) -> None:
    """Replace, in place, each list of ``body`` (an object of its ``apiVersion`` and ``kind``) that server-side apply
    merges by key with a :class:`~okt.resources.checksum.KeyedList` of the same items."""
    schema = schema_of(str(body.get("apiVersion") or ""), str(body.get("kind") or ""))
    if schema is not None:
        _mark(body, schema)


def _mark(value: Any, schema: Schema) -> None:
    if not isinstance(value, dict):
        return
    for name, inner in schema.items():
        found = value.get(name)
        if isinstance(inner, Keyed):
            if isinstance(found, list):
                for item in found:
                    _mark(item, inner.items)
                value[name] = checksum.KeyedList(found, inner.fields, inner.defaults)
        else:
            _mark(found, inner)
