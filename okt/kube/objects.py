"""The primary object as an operator author sees it: a read-only view over the raw dict, with a typed spec.

Why this exists: hooks and resource templates want ``cr.name``, ``cr.spec.size`` and ``cr.deleting`` rather than
``obj["metadata"]["name"]``. The raw dict stays the source of truth (``cr.raw``); the typed spec is validated once per
reconcile by the reconciler (an invalid spec becomes ``InvalidSpec``, not an exception in a template).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from okt.kube import kinds

_ATOMS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A copy of a JSON tree (dicts, lists, scalars) that shares nothing mutable with it.

    Why not ``copy.deepcopy``: objects and their conditions are copied on every reconcile, and deepcopy's generality
    (a memo of every object, any type's copy protocol) makes it several times slower for the trees the API returns.
    Scalars are placed without a call: most values of an object are.
    """
    kind = type(value)
    if kind is dict or (kind not in _ATOMS and isinstance(value, dict)):
        return {key: item if type(item) in _ATOMS else json_copy(item) for key, item in value.items()}
    if kind is list or kind is tuple or (kind not in _ATOMS and isinstance(value, list | tuple)):
        return [item if type(item) in _ATOMS else json_copy(item) for item in value]
    return value


VOLATILE_METADATA = frozenset({"resourceVersion", "managedFields"})
"""Metadata that changes with every write and says nothing about an object's content."""


def lasting_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj``'s metadata without :data:`VOLATILE_METADATA` (a new dict; the values are shared): what two states of an
    object are compared by when only a change of their content matters."""
    return {key: value for key, value in (obj.get("metadata") or {}).items() if key not in VOLATILE_METADATA}


_EMPTY: Mapping[str, Any] = {}
"""The metadata of an object without any (never changed: read only)."""


class CustomResource:
    """A read-only view of one primary object (any kind, custom or built-in).

    The accessors a reconcile calls most (``name``, ``namespace``, ``uid``: tens of times each, by the children's
    ownership checks) read the metadata themselves rather than through :attr:`metadata`, a call fewer each.
    """

    __slots__ = ("_spec", "raw")

    def __init__(self, raw: Mapping[str, Any], spec: Any = None) -> None:
        self.raw: Mapping[str, Any] = raw
        self._spec = spec

    @property
    def metadata(self) -> Mapping[str, Any]:
        meta: Mapping[str, Any] = self.raw.get("metadata") or {}
        return meta

    @property
    def api_version(self) -> str:
        return str(self.raw.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.raw.get("metadata") or _EMPTY).get("name", ""))

    @property
    def namespace(self) -> str | None:
        namespace = (self.raw.get("metadata") or _EMPTY).get("namespace")
        return str(namespace) if namespace else None

    @property
    def uid(self) -> str:
        return str((self.raw.get("metadata") or _EMPTY).get("uid", ""))

    @property
    def generation(self) -> int:
        return int((self.raw.get("metadata") or _EMPTY).get("generation") or 0)

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.metadata.get("labels") or {}
        return labels

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations: Mapping[str, str] = (self.raw.get("metadata") or _EMPTY).get("annotations") or {}
        return annotations

    @property
    def finalizers(self) -> tuple[str, ...]:
        return tuple(self.metadata.get("finalizers") or ())

    @property
    def deleting(self) -> bool:
        """True once deletion was requested (``deletionTimestamp`` set): the finalizer path runs."""
        return bool((self.raw.get("metadata") or _EMPTY).get("deletionTimestamp"))

    @property
    def spec(self) -> Any:
        """The validated spec model when the reconciler declares one, else the raw ``spec`` mapping."""
        return self._spec if self._spec is not None else (self.raw.get("spec") or {})

    @property
    def raw_spec(self) -> Mapping[str, Any]:
        spec: Mapping[str, Any] = self.raw.get("spec") or {}
        return spec

    @property
    def status(self) -> Mapping[str, Any]:
        status: Mapping[str, Any] = self.raw.get("status") or {}
        return status

    @property
    def key(self) -> kinds.ObjectKey:
        return kinds.key_of(self.raw)

    def owner_reference(self) -> dict[str, Any]:
        """The controller ownerReference a child of this object carries."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def with_spec(self, spec: Any) -> CustomResource:
        return CustomResource(self.raw, spec)

    def with_raw(self, raw: Mapping[str, Any]) -> CustomResource:
        """The same view (same typed spec) over a newer version of the object, e.g. the answer of our own write."""
        return CustomResource(raw, self._spec)

    def __repr__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"<{self.kind} {where}{self.name} gen={self.generation} rv={self.resource_version}>"


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true`` of ``obj``, if any (the API allows at most one): the one reader
    of an object's controller, for the cache's owner index, the event mapping, the adoption check and pruning."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of ``obj``'s controller ownerReference, if any."""
    ref = controller_of(obj)
    return str(ref["uid"]) if ref is not None and ref.get("uid") else None
