"""Kinds: what okt needs to know to build a REST path for an object, without a discovery round-trip when possible.

Why this exists: every informer, create and patch needs (group, version, plural, namespaced). Discovery costs a
request per group-version; the kinds every operator owns are known up front, so they come from a table, and anything
else is resolved once through discovery by :class:`okt.kube.client.Client` and cached for the process.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from okt import errors

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
API_VERSION_PATTERN = rf"({_DNS_LABEL}(\.{_DNS_LABEL})*/)?v[0-9]+((alpha|beta)[0-9]+)?"
"""An apiVersion: ``v1``, or ``group/version`` with a DNS subdomain as the group (match it whole)."""
API_VERSION = re.compile(API_VERSION_PATTERN)
NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
"""A namespace's name: an RFC 1123 label, at most 63 characters (match it whole)."""


def check_namespace(namespace: str) -> None:
    """Refuse a namespace that is no namespace's name, before it goes into a request's path.

    A namespace is one segment of the path, and often comes from the custom resource: one holding a ``?`` ends the
    path there (``victim/secrets/db?`` reads, or deletes, the Secret ``db`` wherever a ConfigMap was meant), and a
    ``/`` with a dot segment (``elsewhere/../victim``) addresses another namespace than the one checked.

    Raises:
        okt.errors.InvalidSpec: naming the value.
    """
    if not NAMESPACE_NAME.fullmatch(namespace):
        raise errors.InvalidSpec(
            f"namespace {namespace!r} is not a valid namespace name "
            "(at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)"
        )


_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_PREFIX = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")


def label_selector(labels: Mapping[str, str] | None) -> str | None:
    """The equality selector that matches ``labels`` (``k1=v1,k2=v2``, sorted), ``None`` when there are none.

    Why checked: a value often comes from the custom resource, and one holding a ``,`` or a ``!`` (``x,tier!=y``)
    would be read as more requirements: the API server would answer one list, and a store that matches the same
    labels in memory another (or the request a 400), for the same call. A value that is no string (``None`` read from
    a field the object lacks, a number) is refused too: the request would say its text (``app=None``), and the store,
    which compares values as they are, would match it to no label (``None``: to the objects without the label).

    Raises:
        okt.errors.InvalidSpec: a key that is no label key, a value that is no label value.
    """
    if not labels:
        return None
    for key, value in labels.items():
        if not isinstance(key, str):
            raise errors.InvalidSpec(f"label selector: {key!r} is not a label key (a {type(key).__name__})")
        prefix, _, name = key.rpartition("/") if "/" in key else ("", "", key)
        if not (
            _LABEL_NAME.fullmatch(name) and ("/" not in key or (len(prefix) <= 253 and _LABEL_PREFIX.fullmatch(prefix)))
        ):
            raise errors.InvalidSpec(f"label selector: {key!r} is not a label key")
        if not isinstance(value, str):
            raise errors.InvalidSpec(
                f"label selector: the value of {key} is a {type(value).__name__}, not a label value (a string)"
            )
        if value and not _LABEL_NAME.fullmatch(value):
            raise errors.InvalidSpec(
                f"label selector: the value {value[:80]!r} of {key} is not a label value (at most 63 letters, "
                "digits, '-', '_' or '.', a letter or digit at each end)"
            )
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def check_name(kind: Kind, name: str) -> None:
    """Refuse a name that is no path segment's before it goes into a request's path, as client-go does: an empty
    one, ``.`` or ``..``, one holding a ``/`` or a ``%``.

    The path of the name ``""`` is the kind's collection, not an object: a get of it answers the list (every Secret
    of the namespace, with its data, taken for one object), a delete deletes every object of the collection. A ``/``
    is no part of any object's name, and escaping it does not help (the API server decodes it): ``db/`` addresses the
    object ``db``, ``web/status`` and ``web/scale`` the status and the scale of ``web`` (a delete of ``db/`` deleted
    ``db`` and answered ``True``, a patch of ``web/scale`` scaled ``web``). A name often comes from the custom
    resource, where such a value is easily written.

    Raises:
        okt.errors.InvalidSpec: naming the kind.
    """
    if not name:
        raise errors.InvalidSpec(
            f"{kind.kind} name {name!r}: an object's name may not be empty (it would address every {kind.plural} "
            "object, not one)"
        )
    if name in (".", "..") or "/" in name or "%" in name:
        raise errors.InvalidSpec(
            f"{kind.kind} name {name[:80]!r}: an object's name may not be '.' or '..', nor hold '/' or '%' (it "
            "would address another object, or a part of one)"
        )


@dataclasses.dataclass(frozen=True)
class Kind:
    """A resource type as the REST API addresses it."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def collection_path(self, namespace: str | None = None) -> str:
        """The kind's collection URL path, in ``namespace`` for a namespaced kind (:func:`check_namespace`)."""
        prefix = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        if self.namespaced and namespace:
            check_namespace(namespace)
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"

    def path(self, name: str, namespace: str | None = None, subresource: str | None = None) -> str:
        """The object's URL path. The name is escaped: a ``?`` or ``#`` in it (some kinds allow them) would otherwise
        end the path there and address another object. A ``/`` is no part of any kind's name, and escaping it would
        not help (the server decodes it and reads a subresource): such a name is refused (:func:`check_name`).

        Raises:
            okt.errors.InvalidSpec: ``name`` is no path segment's (empty, ``.``, ``..``, a ``/`` or ``%`` in it:
                :func:`check_name`).
        """
        check_name(self, name)
        tail = f"/{subresource}" if subresource else ""
        return f"{self.collection_path(namespace)}/{urllib.parse.quote(name, safe='')}{tail}"

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


_BUILTIN: tuple[Kind, ...] = (
    Kind("v1", "ConfigMap", "configmaps"),
    Kind("v1", "Secret", "secrets"),
    Kind("v1", "Service", "services"),
    Kind("v1", "ServiceAccount", "serviceaccounts"),
    Kind("v1", "Pod", "pods"),
    Kind("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    Kind("v1", "Event", "events"),
    Kind("v1", "Endpoints", "endpoints"),
    Kind("v1", "ResourceQuota", "resourcequotas"),
    Kind("v1", "LimitRange", "limitranges"),
    Kind("v1", "Namespace", "namespaces", namespaced=False),
    Kind("v1", "Node", "nodes", namespaced=False),
    Kind("v1", "PersistentVolume", "persistentvolumes", namespaced=False),
    Kind("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False),
    Kind("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False),
    Kind("networking.k8s.io/v1", "IngressClass", "ingressclasses", namespaced=False),
    Kind("apps/v1", "Deployment", "deployments"),
    Kind("apps/v1", "StatefulSet", "statefulsets"),
    Kind("apps/v1", "DaemonSet", "daemonsets"),
    Kind("apps/v1", "ReplicaSet", "replicasets"),
    Kind("batch/v1", "Job", "jobs"),
    Kind("batch/v1", "CronJob", "cronjobs"),
    Kind("batch/v1beta1", "CronJob", "cronjobs"),
    Kind("networking.k8s.io/v1", "Ingress", "ingresses"),
    Kind("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
    Kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    Kind("policy/v1beta1", "PodDisruptionBudget", "poddisruptionbudgets"),
    Kind("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    Kind("autoscaling/v2beta2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    Kind("autoscaling/v2beta1", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    Kind("rbac.authorization.k8s.io/v1", "Role", "roles"),
    Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    Kind("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False),
    Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    Kind("coordination.k8s.io/v1", "Lease", "leases"),
    Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False),
)

BUILTIN: Mapping[tuple[str, str], Kind] = {(k.api_version, k.kind): k for k in _BUILTIN}

CONFIG_MAP = BUILTIN[("v1", "ConfigMap")]
EVENT = BUILTIN[("v1", "Event")]
NAMESPACE = BUILTIN[("v1", "Namespace")]
LEASE = BUILTIN[("coordination.k8s.io/v1", "Lease")]
CRD = BUILTIN[("apiextensions.k8s.io/v1", "CustomResourceDefinition")]


def is_established(crd: Mapping[str, Any] | None) -> bool:
    """Whether the CRD object ``crd`` says it is Established (its names accepted: the API server serves its kind, or
    will once it has loaded it)."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or ()
    return any(isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def addressing_mismatch(declared: Kind, served: Kind) -> str | None:
    """What of ``declared``'s addressing differs from the way the server serves the same kind, as one line naming
    both (``the server serves Gadget in g/v1 as "gadgets", not "gadget"``), or None when its URLs are the server's.
    A custom kind's plural and scope are declared by hand: a wrong one addresses URLs that do not exist."""
    if (declared.plural, declared.namespaced) == (served.plural, served.namespaced):
        return None
    served_as, declared_as = [], []
    if declared.plural != served.plural:
        served_as.append(f'as "{served.plural}"')
        declared_as.append(f'"{declared.plural}"')
    if declared.namespaced != served.namespaced:
        served_as.append(_scope(served))
        declared_as.append(_scope(declared))
    return (
        f"the server serves {served.kind} in {served.api_version} {', '.join(served_as)}, not {', '.join(declared_as)}"
    )


def _scope(kind: Kind) -> str:
    return "namespaced" if kind.namespaced else "cluster-scoped"


def builtin(api_version: str, kind: str) -> Kind | None:
    return BUILTIN.get((api_version, kind))


def is_builtin_group(api_version: str) -> bool:
    """Whether ``api_version`` belongs to Kubernetes itself: the core group, a group without a dot (``apps``,
    ``batch``) or one under ``k8s.io`` (``networking.k8s.io``, and the Gateway API's CRDs, whose status their own
    controllers write). Custom resources live in a group of their author's domain."""
    group = api_version.rpartition("/")[0]
    return "." not in group or group == "k8s.io" or group.endswith(".k8s.io")


def plural_of(kind: str) -> str:
    """The one plural rule of okt, the API machinery's own (``Ingress`` -> ``ingresses``, ``Policy`` ->
    ``policies``, ``Gateway`` -> ``gateways``): what ``okt gen crd`` declares when a reconciler sets no ``plural``,
    and what the runtime assumes where no server is at hand (with one, it asks discovery)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


ObjectKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) — the identity of an object; namespace is "" for cluster-scoped ones."""


def key_of(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), meta.get("namespace") or "", meta.get("name", ""))
