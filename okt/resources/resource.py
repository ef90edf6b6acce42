"""Resources: one child object of a custom resource, described by its desired state.

Why this exists: OKT's central idea is that an operator declares its children as *resources* — templates plus
mutations — and the engine makes the cluster match them, idempotently. A ``Resource`` is created (and pruned or
deleted) but never updated; a ``MutableResource`` is also updated when the desired state changes or drifts.

How the desired state is built (in this order):

1. from ``body`` (a dict or a pydantic model) when given, else by rendering the class's Jinja2 YAML ``template`` with
   ``cr``, ``name``, ``namespace`` and the reconciler's parameters as variables;
2. ``mutate_with_cr(cr)`` edits ``self.desired`` from the custom resource (every reconcile);
3. ``mutate_with_initial_data()`` edits it further, only when the object is written (created, updated or
   repaired); on an update, the live value of each field it sets is kept where the live object has one.

``hashable_ref()`` chooses what the checksum covers (default: everything but metadata, plus labels and our
annotations). The name and namespace are fixed at construction, where one that cannot address a single object
raises :class:`okt.errors.InvalidSpec` (:func:`check_identity_values`); a mutation that changes them raises
:class:`okt.errors.MutationError`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

import pydantic

from okt import errors
from okt.kube import kinds, objects
from okt.resources import list_keys, templating


def check_synchronous(cls: type) -> None:
    """Refuse a resource class that defines an ``async def`` method: a resource's methods shape its desired object,
    okt calls them as plain functions and never awaits them (a reconciler's hooks may be ``async def``: the
    reconcile awaits them, see :mod:`okt.coroutines`).

    Without this, ``async def mutate_with_cr`` would return a coroutine nobody awaits: its body silently never runs.

    Raises:
        TypeError: naming the method, when the class is defined.
    """
    for name, member in vars(cls).items():
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise TypeError(
                f"{cls.__qualname__}.{name} is 'async def', but a resource's methods are synchronous: they shape its "
                "desired object, and okt never awaits them. Write 'def' (read what they need in an 'async def' hook "
                "of the reconciler, and give it to the resource)."
            )


def check_identity_values(kind: str, name: Any, namespace: Any) -> None:
    """Refuse a name or namespace that cannot address one object, before it goes into a URL.

    The name and namespace are segments of the URL okt reads and writes the child at, and often come from the custom
    resource: a name ``web/status`` would read the ``web`` child's status subresource — that very child, which the
    reconcile would take for its own and prune as undeclared. So a name is refused where the API server refuses it
    for every kind (``.``, ``..``, a ``/`` or a ``%``; what else a kind allows is the server's to check, in a readable
    422), and a namespace unless it is an RFC 1123 label, as every namespace's name is. Either must be a string: a
    plain ``name: {{ cr.spec.id }}`` places an integer ``id`` as the number it is, which no server takes for a name.

    Raises:
        okt.errors.InvalidSpec: naming the child and the value.
    """
    for field, value in (("metadata.name", name), ("metadata.namespace", namespace)):
        if value is not None and not isinstance(value, str):
            raise errors.InvalidSpec(
                f"{kind} {field} {value!r} is a {type(value).__name__}, not a string: quote it in the template "
                f'({field.rpartition(".")[2]}: "{{{{ ... }}}}")'
            )
    if name in (".", "..") or "/" in name or "%" in name:
        raise errors.InvalidSpec(
            f"{kind} {name!r}: not a valid object name (it may not be '.' or '..' nor contain '/' or '%')"
        )
    if namespace and not kinds.NAMESPACE_NAME.fullmatch(namespace):
        raise errors.InvalidSpec(
            f"{kind} {name!r}: namespace {namespace!r} is not a valid namespace name "
            "(at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)"
        )


class Resource:
    """A child object okt creates (and deletes) but never updates.

    Subclasses declare ``api_version``, ``kind`` and usually a ``template``.
    """

    api_version: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    template: ClassVar[str | None] = None
    mutable: ClassVar[bool] = False
    namespaced: ClassVar[bool | None] = None
    """Whether the kind is namespaced; None asks okt's table of built-in kinds (unknown kinds count as namespaced)."""
    replace_fields: ClassVar[frozenset[str]] = frozenset({"data", "binaryData", "stringData"})
    """Top-level fields that an update replaces exactly (keys okt no longer sets are removed); other fields merge."""
    foreign_annotations: ClassVar[frozenset[str]] = frozenset()
    """Annotations that other controllers keep on objects of this kind (the Deployment controller's revision, say): a
    change to them alone does not wake the reconciler. okt never sets them, so they can never be drift."""
    openapi_schema: ClassVar[Mapping[str, Any] | None] = None
    """For a kind of no built-in group (a custom resource): its structural schema, the ``openAPIV3Schema`` of its
    version in its CRD — or the part of it that leads to its lists. The lists it declares ``x-kubernetes-list-type:
    map`` are merged by their ``x-kubernetes-list-map-keys`` by server-side apply, which keeps another manager's
    items in them: the drift check compares them by key too (another manager's item is no drift), and a key field
    the schema defaults stands for its default where the template leaves it out. Without one, each list of the kind is
    compared whole, item by item (a CRD's lists are atomic unless it says otherwise). A built-in kind's lists are
    okt's table's (:data:`okt.resources.list_keys.KINDS`), whatever this says."""
    keyed_lists: ClassVar[list_keys.Lists | None] = None
    """What okt made of :attr:`openapi_schema` when the class was defined; None without one."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_synchronous(cls)
        if "openapi_schema" in vars(cls):
            schema = vars(cls)["openapi_schema"]
            try:
                cls.keyed_lists = None if schema is None else list_keys.Lists.of(list_keys.from_openapi(schema))
            except ValueError as exc:
                raise ValueError(f"{cls.__qualname__}.openapi_schema {exc}") from None
        template = vars(cls).get("template")
        wrong = templating.syntax_error(template) if isinstance(template, str) else None
        if wrong is not None:
            raise ValueError(f"{cls.__qualname__}.template {wrong}")

    def __init__(
        self,
        cr: objects.CustomResource | None = None,
        *,
        name: str | None = None,
        namespace: str | None = None,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | pydantic.BaseModel | None = None,
    ) -> None:
        self.cr = cr
        self.params: Mapping[str, Any] = params or {}
        if body is not None:
            raw = (
                body.model_dump(mode="json", by_alias=True, exclude_none=True)
                if isinstance(body, pydantic.BaseModel)
                else copy.deepcopy(dict(body))
            )
        elif self.template is not None:
            default_ns = namespace or (cr.namespace if cr is not None else None) or ""
            variables = {**self.params, "cr": cr, "name": name or (cr.name if cr else ""), "namespace": default_ns}
            raw = templating.render_template(self.template, variables)
        else:
            raw = {}
        raw.setdefault("apiVersion", self.api_version)
        raw.setdefault("kind", self.kind)
        meta = raw.setdefault("metadata", {}) or {}
        raw["metadata"] = meta
        if name:
            meta["name"] = name
        if not self._is_namespaced(raw):
            meta.pop("namespace", None)
        elif namespace or "namespace" not in meta:
            ns = namespace or (cr.namespace if cr is not None else None)
            if ns:
                meta["namespace"] = ns
        if not meta.get("name"):
            raise errors.MutationError(f"{raw.get('kind') or type(self).__name__}: no metadata.name")
        check_identity_values(str(raw.get("kind") or type(self).__name__), meta["name"], meta.get("namespace") or None)
        self.desired: dict[str, Any] = raw
        self._identity = (str(meta["name"]), str(meta.get("namespace") or ""))
        self._type = (raw.get("apiVersion"), raw.get("kind"))
        self.live: dict[str, Any] | None = None

    def _is_namespaced(self, raw: Mapping[str, Any]) -> bool:
        if self.namespaced is not None:
            return self.namespaced
        known = kinds.builtin(str(raw.get("apiVersion", "")), str(raw.get("kind", "")))
        return known.namespaced if known is not None else True

    # -- identity ------------------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._identity[0]

    @property
    def namespace(self) -> str | None:
        return self._identity[1] or None

    @property
    def key(self) -> kinds.ObjectKey:
        return (str(self.desired.get("apiVersion")), str(self.desired.get("kind")), self._identity[1], self.name)

    def describe(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.desired.get('kind')}/{where}{self.name}"

    def check_identity(self) -> None:
        """Raise MutationError when a mutation changed the name or namespace."""
        meta = self.desired.get("metadata") or {}
        now = (str(meta.get("name", "")), str(meta.get("namespace") or ""))
        if now != self._identity:
            raise errors.MutationError(
                f"{self.describe()}: mutations may not change name/namespace (now {now[1]}/{now[0]})"
            )
        if (self.desired.get("apiVersion"), self.desired.get("kind")) != self._type:
            raise errors.MutationError(
                f"{self.describe()}: mutations may not change apiVersion/kind "
                f"(now {self.desired.get('apiVersion')}/{self.desired.get('kind')})"
            )

    # -- the author's hooks ---------------------------------------------------------------------------------------

    def mutate_with_cr(self, cr: objects.CustomResource) -> None:
        """Edit ``self.desired`` from the custom resource; runs every reconcile. Default: nothing to change."""
        return None

    def mutate_with_initial_data(self) -> None:
        """Edit ``self.desired`` with data applied only on creation or repair (e.g. generated values).

        Runs right before each write, always as for a creation (``self.live`` is None while it runs). On an update,
        every field it sets keeps its live value when the live object has one, so a password generated here is
        generated once; a field the live object lacks takes the new value. Neither hashed nor compared: these values
        never cause a write by themselves.
        """
        return None

    def hashable_ref(self) -> Any:
        """What the checksum covers. Default: the desired object without metadata, plus its labels and annotations.

        Annotations count only when the template sets some (so children without any keep the hash they always had):
        one dropped from the template must change the hash, or no write would remove it. So do the owner references the
        template or a mutation sets beside okt's controller reference (a second, non-controller owner): one added to
        or dropped from an existing child's template must change the hash, or it would never be written.
        """
        meta = self.desired.get("metadata") or {}
        body = {k: v for k, v in self.desired.items() if k not in ("metadata", "status")}
        body["labels"] = meta.get("labels") or {}
        if meta.get("annotations"):
            body["annotations"] = meta["annotations"]
        owners = [ref for ref in meta.get("ownerReferences") or () if not ref.get("controller")]
        if owners:
            body["ownerReferences"] = owners
        return body

    @classmethod
    def status_view(cls, live: Mapping[str, Any]) -> Any:
        """The part of a live object's status that the reconciler reads (through this resource or its conditions).

        A watch event that changes a child's status but leaves this view equal does not wake the reconciler: a
        Deployment's status is rewritten several times by its controller while nothing the conditions show changes.
        Default: the whole status. Override it to narrow (the workload helpers keep their readiness counts) or to
        widen — a reconciler that reads a field outside the view is not woken when only that field changes.
        """
        return live.get("status")

    # -- helper hooks (overridden by the Secret/Service/... helpers) ----------------------------------------------

    def normalize(self) -> None:
        """Bring ``self.desired`` to the form the server stores (before hashing and comparing)."""
        return None

    def preserve_from_live(self, live: Mapping[str, Any]) -> None:
        """Copy into ``self.desired`` the server-assigned values an update must keep (before an update)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class MutableResource(Resource):
    """A child object okt creates and updates (when the desired state changed or the live object drifted)."""

    mutable: ClassVar[bool] = True
