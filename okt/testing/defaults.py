"""The values the API server gives the fields of Kubernetes' own kinds a write leaves out, and the form it stores
their quantities in.

Why this exists: the API server defaults every object it decodes before it compares it with the stored one, so a
write that spells out a default (a Deployment's ``strategy.type: RollingUpdate``, a Service's ``sessionAffinity:
None``, a container's ``imagePullPolicy``) or writes a quantity in another spelling (``1024Mi`` for ``1Gi``) changes
nothing: same ``resourceVersion``, no watch event, no new generation. A fake that stored what it was given would see a
change in each, and a reconciler that writes one on every pass — for ever, on a cluster, where each write it believes
it makes is none, or the other way round — would pass its unit tests. :class:`okt.testing.FakeClient` fills in these
defaults (Kubernetes 1.20's, ``k8s.io/kubernetes/pkg/apis/*/v1/defaults.go``) and writes quantities as the server
stores them on every write of an object, from one table, :data:`DEFAULTS`.

Guarantees: :func:`fill` changes nothing it is given (it answers a copy); it sets a field only where the write left
it out or wrote a ``null`` or, for a field Go holds in no pointer, its zero value (``""`` for a string: the server
decodes each as left out, and a field of the table holding one is dropped where it has no default there), and only
in the mapping that would hold it (a default never creates the object above it unless the table says so, as a
Deployment's ``strategy``); the quantities of a kind that is not Kubernetes' own are left as written.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from okt.kube import kinds
from okt.resources import checksum, quantities

NONE: Any = object()
"""What a :class:`Default`'s function answers where the field has no default."""
EACH = "*"
"""A step of a :class:`Default`'s path meaning every item of a list."""


@dataclasses.dataclass(frozen=True)
class Default:
    """The value a field takes when a write leaves it out.

    ``path`` names the field from the object's root (:data:`EACH` for every item of a list); ``value`` is the default,
    or a function of the mapping that holds the field answering it (:data:`NONE`: no default there — a Deployment's
    ``rollingUpdate`` exists only for its ``RollingUpdate`` strategy). A mapping or a list default is copied each time.
    ``unset`` holds the values besides ``null`` the server cannot tell from a field left out: the zero value of a Go
    field that is no pointer (:data:`TEXT`'s ``""`` for a string; a pointer's ``""``, as a claim's ``volumeMode``, is
    a value, kept).
    """

    path: tuple[str, ...]
    value: Any
    unset: tuple[Any, ...] = ()


TEXT = ("",)
"""The ``unset`` of a field that is a plain Go string: ``strategy: {type: ""}`` decodes as a strategy naming no type,
and is given ``RollingUpdate`` (Kubernetes' defaulting compares with ``""``)."""


def _pull_policy(container: Mapping[str, Any]) -> str:
    """A container's ``imagePullPolicy``: ``Always`` for an image tagged ``latest`` or not tagged (which means
    ``latest``), else ``IfNotPresent``; an image named by its digest is never pulled again."""
    image = str(container.get("image") or "")
    if "@" in image:
        return "IfNotPresent"
    tag = image.rpartition("/")[2].partition(":")[2]  # a registry's port (host:5000/app) is before the last /
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _when(field: str, wanted: str, value: Any) -> Callable[[Mapping[str, Any]], Any]:
    """A default that exists only while the holder's ``field`` is ``wanted``."""
    return lambda holder: copy.deepcopy(value) if holder.get(field) == wanted else NONE


def _node_traffic(spec: Mapping[str, Any]) -> Any:
    """A Service reached through its nodes' ports routes them to every node's endpoints unless it says Local."""
    return "Cluster" if spec.get("type") in ("NodePort", "LoadBalancer") else NONE


def _container(prefix: tuple[str, ...]) -> tuple[Default, ...]:
    return (
        Default((*prefix, "terminationMessagePath"), "/dev/termination-log", TEXT),
        Default((*prefix, "terminationMessagePolicy"), "File", TEXT),
        Default((*prefix, "imagePullPolicy"), _pull_policy, TEXT),
        Default((*prefix, "resources"), {}),
        Default((*prefix, "ports", EACH, "protocol"), "TCP", TEXT),
    )


def _pod_template(prefix: tuple[str, ...]) -> tuple[Default, ...]:
    """The defaults of a pod template at ``prefix``: its metadata is always answered, with a null
    ``creationTimestamp`` (the server's encoding of an object's metadata that was never stored on its own)."""
    return (
        Default((*prefix, "metadata"), {}),
        Default((*prefix, "metadata", "creationTimestamp"), None),
        *_pod_spec((*prefix, "spec")),
    )


def _pod_spec(prefix: tuple[str, ...]) -> tuple[Default, ...]:
    return (
        Default((*prefix, "restartPolicy"), "Always", TEXT),
        Default((*prefix, "terminationGracePeriodSeconds"), 30),
        Default((*prefix, "dnsPolicy"), "ClusterFirst", TEXT),
        Default((*prefix, "securityContext"), {}),
        Default((*prefix, "schedulerName"), "default-scheduler", TEXT),
        *_container((*prefix, "containers", EACH)),
        *_container((*prefix, "initContainers", EACH)),
    )


_TEMPLATE = ("spec", "template")
_CLAIM_TEMPLATE = ("spec", "volumeClaimTemplates", EACH)

DEFAULTS: dict[tuple[str, str], tuple[Default, ...]] = {
    ("apps/v1", "Deployment"): (
        Default(("spec", "replicas"), 1),
        Default(("spec", "strategy"), {}),
        Default(("spec", "strategy", "type"), "RollingUpdate", TEXT),
        Default(("spec", "strategy", "rollingUpdate"), _when("type", "RollingUpdate", {})),
        Default(("spec", "strategy", "rollingUpdate", "maxUnavailable"), "25%"),
        Default(("spec", "strategy", "rollingUpdate", "maxSurge"), "25%"),
        Default(("spec", "revisionHistoryLimit"), 10),
        Default(("spec", "progressDeadlineSeconds"), 600),
        *_pod_template(_TEMPLATE),
    ),
    ("apps/v1", "StatefulSet"): (
        Default(("spec", "replicas"), 1),
        Default(("spec", "podManagementPolicy"), "OrderedReady", TEXT),
        Default(("spec", "updateStrategy"), {}),
        # Only a strategy naming no type is given a rollingUpdate: one naming RollingUpdate is stored without.
        Default(("spec", "updateStrategy", "rollingUpdate"), lambda strategy: NONE if strategy.get("type") else {}),
        Default(("spec", "updateStrategy", "type"), "RollingUpdate", TEXT),
        Default(("spec", "updateStrategy", "rollingUpdate", "partition"), 0),
        Default(("spec", "revisionHistoryLimit"), 10),
        *_pod_template(_TEMPLATE),
        # A claim template is stored as a whole PersistentVolumeClaim, as the server's type holds it.
        Default((*_CLAIM_TEMPLATE, "apiVersion"), "v1"),
        Default((*_CLAIM_TEMPLATE, "kind"), "PersistentVolumeClaim"),
        Default((*_CLAIM_TEMPLATE, "metadata"), {}),
        Default((*_CLAIM_TEMPLATE, "metadata", "creationTimestamp"), None),
        Default((*_CLAIM_TEMPLATE, "spec"), {}),
        Default((*_CLAIM_TEMPLATE, "spec", "resources"), {}),
        Default((*_CLAIM_TEMPLATE, "spec", "volumeMode"), "Filesystem"),
        Default((*_CLAIM_TEMPLATE, "status"), {}),
        Default((*_CLAIM_TEMPLATE, "status", "phase"), "Pending", TEXT),
    ),
    ("apps/v1", "ReplicaSet"): (Default(("spec", "replicas"), 1), *_pod_template(_TEMPLATE)),
    ("v1", "PodTemplate"): _pod_template(("template",)),
    ("v1", "Service"): (
        Default(("spec", "type"), "ClusterIP", TEXT),
        Default(("spec", "sessionAffinity"), "None", TEXT),
        Default(("spec", "ports", EACH, "protocol"), "TCP", TEXT),
        # An IntOrString is no pointer: its zero is 0 or "", whichever it holds.
        Default(("spec", "ports", EACH, "targetPort"), lambda port: port.get("port"), (0, "")),
        Default(("spec", "externalTrafficPolicy"), _node_traffic, TEXT),
    ),
    ("batch/v1", "Job"): (
        # A Job naming neither its completions nor its parallelism runs one Pod to completion.
        Default(("spec", "completions"), lambda spec: 1 if "parallelism" not in spec else NONE),
        Default(("spec", "parallelism"), 1),
        Default(("spec", "backoffLimit"), 6),
        *_pod_template(_TEMPLATE),
    ),
    ("v1", "PersistentVolumeClaim"): (Default(("spec", "volumeMode"), "Filesystem"),),
}
"""Each kind's defaults, in the order they are filled in (a field's holder before the field)."""


def fill(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as the API server stores it once decoded: a copy with :data:`DEFAULTS` filled in where it leaves them
    out and, for Kubernetes' own kinds, each quantity (a container's ``resources``, a claim's requested storage, a
    ResourceQuota's ``hard``...) in its canonical form (``1024Mi`` as ``1Gi``, ``1000m`` as ``1``, ``0.5`` as
    ``500m``; see :func:`okt.resources.checksum.canonical_quantity`; one that is no quantity is left as written)."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    api_version, kind = str(result.get("apiVersion") or ""), str(result.get("kind") or "")
    for default in DEFAULTS.get((api_version, kind), ()):
        _fill(result, default.path, default)
    if kinds.is_builtin_group(api_version):
        quantities.convert_quantities(result, _canonical)
    return result


def _unset(value: Any, unset: tuple[Any, ...]) -> bool:
    """Whether ``value`` is one of ``unset``, as JSON compares (``0`` is not ``False``, nor ``0.0`` the integer 0)."""
    return any(type(value) is type(zero) and value == zero for zero in unset)


def _canonical(value: Any) -> Any:
    canonical = checksum.canonical_quantity(value)
    return value if canonical is None else canonical


def _fill(holder: Any, path: tuple[str, ...], default: Default) -> None:
    step, rest = path[0], path[1:]
    if step == EACH:
        for item in holder if isinstance(holder, list) else ():
            _fill(item, rest, default)
        return
    if not isinstance(holder, dict):
        return
    if rest:
        _fill(holder.get(step), rest, default)
    elif holder.get(step) is None or _unset(holder[step], default.unset):
        holder.pop(step, None)  # the server decodes a null (or a Go zero value) as left out: defaulted, or not there
        value = default.value
        found = value(holder) if callable(value) else copy.deepcopy(value)
        if found is not NONE:
            holder[step] = found
