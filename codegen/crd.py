"""``okt gen crd``: a CustomResourceDefinition from the reconciler's pydantic models.

Why it exists: the spec and status an author declares as pydantic models are the schema of the custom resource; the
CRD should say the same thing, not a hand-copied variant that drifts. pydantic emits JSON Schema (draft 2020-12);
Kubernetes accepts only a *structural* subset of OpenAPI v3.0, so this module converts one into the other.

Guarantees (the conversion):

* every ``$ref`` is inlined (a recursive model is cut at the recursion with ``x-kubernetes-preserve-unknown-fields``,
  since structural schemas cannot recurse); ``$defs`` and ``title`` are dropped;
* ``Optional[X]`` (``anyOf`` with ``null``, or a ``Literal`` that lists ``None``) becomes ``X`` with
  ``nullable: true`` (and its ``None`` default is dropped; an enum lists ``null`` too, since the API server checks a
  null against it); ``int | str`` becomes ``x-kubernetes-int-or-string`` with its members' bounds, lengths,
  patterns and string format (each applies to one JSON type); ``int | float`` becomes a ``number`` with the bounds
  of the union (or the same bounds of each member: members bounded differently are an error naming the field); a
  constraint on ``int | str`` as a whole (which pydantic applies to every member, raising a TypeError for the
  values it cannot compare) and any other union are errors naming the field and what to write instead;
* a discriminated union of models (``Annotated[A | B, Field(discriminator="kind")]``) becomes one object declaring
  every member's fields (a field two members declare must be the same in both) with an ``anyOf`` of value
  validations that checks, by the tag, that member's tag values, required fields and (when it forbids extra fields)
  none of the other members' fields;
* kept: ``description``, ``required``, ``enum`` (``const`` becomes a one-value enum), ``default`` (a default its own
  field refuses is an error naming the field: the API server would refuse the CRD; one the field does not read back
  from its JSON form, such as a ``SecretStr``'s, is left to the model; a ``default_factory`` that is the field's
  model class gives ``{}``, which the API server fills with the nested defaults, another factory no default),
  ``minimum``/``maximum`` (JSON Schema's numeric ``exclusiveMinimum``/``exclusiveMaximum`` become OpenAPI's boolean
  form), ``multipleOf`` (of an integer: a float's is left to the model, which allows a rounding margin the API
  server does not), ``minLength``/``maxLength`` (of a string pydantic strips of white space before it measures it,
  ``strip_whitespace``, a ``pattern`` that measures it without that white space; a ``pattern`` of its own is an error
  naming the field; of ``bytes``, which pydantic counts in UTF-8 bytes, a ``minLength`` of a quarter), ``pattern`` (in
  the API server's dialect, see :mod:`okt.codegen.patterns`; one it cannot express is an error naming the field),
  ``minItems``/``maxItems``,
  ``minProperties``/``maxProperties`` and the ``format`` values Kubernetes knows that accept all pydantic does (not
  ``date-time``, ``date``, ``duration``, ``uuid``, ``ipv6`` or ``uri``);
* ``Any`` becomes ``x-kubernetes-preserve-unknown-fields: true`` with ``nullable: true`` (it takes a null as the model
  does), ``dict[str, Any]`` an object that preserves unknown fields; ``dict[str, X]`` keeps
  ``additionalProperties: X``, and ``dict[Literal[...], X]`` (or an ``Enum`` key) adds ``maxProperties`` (the number
  of keys) and a CEL ``x-kubernetes-validations`` rule listing the keys (checked by API servers that have them, 1.25
  and later; 1.20 drops it, and the model refuses another key); keys constrained otherwise (a pattern, a length, a
  format, a type other than ``str``) are an error naming the field, since no structural schema checks a key; a
  model with ``extra="allow"`` or ``extra="forbid"`` keeps its properties and preserves unknown fields (the API
  server would prune a misspelled field before the model could refuse it);
* a field a model reads by more than one name (``populate_by_name``, ``AliasChoices``) is declared under each, with
  no default and not required (the model's default and ``InvalidSpec`` stand in);
* ``set[X]`` becomes a plain list: ``uniqueItems`` is forbidden in CRDs, and ``x-kubernetes-list-type: set`` would
  refuse the duplicates the model folds into one; for the same reason its ``max_length`` is no ``maxItems`` (its
  ``min_length`` is a ``minItems``: a list of fewer values has fewer distinct ones);
* every node has a ``type`` unless it preserves unknown fields or is int-or-string, so the result is a structural
  schema that a Kubernetes 1.20 apiserver accepts.

Guarantees (the CRD): ``apiextensions.k8s.io/v1``, one stored version (the reconciler's ``api_version``) and the
other served versions of ``spec_models`` with their own spec schemas — with ``converters``, the conversion webhook okt
serves (``spec.conversion.strategy: Webhook``); without, they must have the stored version's spec schema —, the
``status`` subresource, printer columns ``Ready`` and ``Reason`` (from the ``Ready`` condition), the author's extra
columns, then ``Age``.
``status`` always accepts what okt writes: ``conditions`` (the ``metav1.Condition`` shape, a list-map keyed by
``type``, which the status model's own ``conditions`` stays too) and ``observedGeneration`` are added when the status
model lacks them, its required fields are not required (a failing reconcile reports before they are set), and unknown
status fields are preserved (okt may keep bookkeeping there; see the design notes on persistence). Each field of the
status model is declared under the name okt writes it by too (its ``serialization_alias``, or its Python name beside
a ``validation_alias``), as a field read by several names is.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
import pydantic.json_schema
from pydantic_core import core_schema

from okt import errors as okt_errors
from okt.codegen import errors, patterns
from okt.kube import discovery, kinds
from okt.status import writer

Scope = Literal["Namespaced", "Cluster"]

KUBERNETES_FORMATS = frozenset(
    {
        "bsonobjectid", "email", "hostname", "ipv4", "cidr", "mac", "isbn", "isbn10", "isbn13", "creditcard", "ssn",
        "hexcolor", "rgbcolor", "byte", "password", "int32", "int64", "float", "double",
    }
)  # fmt: skip
"""The ``format`` values a Kubernetes apiserver validates that are kept; pydantic's others (``binary``, ``path``, ...)
are dropped.

So are those the API server reads more strictly than pydantic's types, since it refused a custom resource with a value
the model accepts (``InvalidSpec`` refuses what the model refuses): ``date-time``, ``date`` and ``duration`` (RFC 3339
with a time zone, a bare date, Go's durations and ISO 8601's without years or months, where ``datetime``, ``date`` and
``timedelta`` take ``2032-04-23T10:20:30`` without a zone, a space for the ``T``, a date alone, a midnight date-time,
``P1Y``), ``uuid`` to ``uuid5`` (hex digits with or without dashes, where ``UUID`` takes braces and ``urn:uuid:`` too),
``ipv6`` (no zone, where ``IPv6Address`` takes ``fe80::1%eth0``) and ``uri`` (Go's URL parser refuses a stray ``%``,
blanks or tabs that ``AnyUrl`` cleans up)."""

PRESERVE = "x-kubernetes-preserve-unknown-fields"

CONDITIONS_SCHEMA: dict[str, Any] = {
    "description": "The latest observations of the resource's state (Ready, Available, Progressing, Degraded, ...).",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"description": "The condition type, in CamelCase.", "type": "string", "maxLength": 316},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"description": "Why the condition is so, in CamelCase.", "type": "string", "maxLength": 1024},
            "message": {"description": "A human-readable explanation.", "type": "string", "maxLength": 32768},
            "lastTransitionTime": {
                "description": "When the status last changed.",
                "type": "string",
                "format": "date-time",
            },
            "observedGeneration": {
                "description": "The metadata.generation the condition was set for.",
                "type": "integer",
                "format": "int64",
                "minimum": 0,
            },
        },
    },
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}
"""The schema of ``status.conditions``: the shape of Kubernetes' ``metav1.Condition``."""

OBSERVED_GENERATION_SCHEMA: dict[str, Any] = {
    "description": "The metadata.generation the status was computed for.",
    "type": "integer",
    "format": "int64",
    "minimum": 0,
}

_CONDITION_COLUMN = '.status.conditions[?(@.type=="Ready")]'
STANDARD_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Ready", "type": "string", "jsonPath": f"{_CONDITION_COLUMN}.status"},
    {"name": "Reason", "type": "string", "jsonPath": f"{_CONDITION_COLUMN}.reason"},
)
AGE_COLUMN: dict[str, Any] = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_COLUMN_TYPES = frozenset({"integer", "number", "string", "boolean", "date"})
_COLUMN_KEYS = frozenset({"name", "type", "jsonPath", "description", "format", "priority"})
_COLUMN_FORMATS = frozenset({"int32", "int64", "float", "double", "byte", "date", "date-time", "password"})
"""The ``format`` values the API server accepts on a printer column."""
_COLUMN_FIELD_TYPES = {
    "integer": frozenset({"integer", "number"}),
    "number": frozenset({"integer", "number"}),
    "boolean": frozenset({"boolean"}),
    "date": frozenset({"string"}),
}
"""The schema types whose values the API server shows in a column of each type (a ``string`` column shows any value);
another type shows as empty or ``<invalid>`` in every row."""

_COPIED_KEYWORDS = (
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)
_MEMBER_VALIDATIONS = frozenset(
    {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern"}
)
"""The keywords a member of ``int | str`` keeps on the int-or-string node (each applies to one JSON type only)."""
_PYDANTIC_NAMES = {
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "multipleOf": "multiple_of",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
}
_JSON_NAMES = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
    "multiple_of": "multipleOf",
}
"""JSON Schema's names of the numeric constraints pydantic writes in its own names beside a union's ``anyOf``."""
_UNION_CONSTRAINTS = frozenset({*_COPIED_KEYWORDS, *_PYDANTIC_NAMES, "ge", "gt", "le", "lt", "multiple_of"})
"""The constraints pydantic may write beside a union's ``anyOf`` (in its own names where JSON Schema's do not fit)."""
_KEY_ORDER = (
    "description",
    "type",
    "format",
    "nullable",
    "enum",
    "allOf",
    "default",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
)
"""The key order of a converted node (unlisted keys, the ``x-kubernetes-*`` extensions, come last)."""
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z")
"""A DNS label that starts with a letter (RFC 1035): a Service's name, a CRD's plural (match it with ``match``)."""
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
"""A DNS label of at most 63 characters: a namespace's name, an operator's (match it with ``fullmatch``)."""
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
"""A DNS subdomain as the API server reads names and groups (RFC 1123 labels joined by dots; length checked apart)."""
_FIELD_STEPS = re.compile(r"(\.[A-Za-z_$][\w$-]*)*")
"""The leading ``.field`` steps of a printer column's JSONPath (up to a ``[``, a quoted key or a wildcard)."""


def require_dns_label(option: str, value: str, example: str = "my-operator") -> None:
    """Refuse ``value`` as ``option`` (``--name``, ``--namespace``, ``namespace``...) unless it is a DNS label, the name
    the API server takes for a namespace and for each object named after the operator: every generator checks it so,
    in the same words.

    Raises:
        CodegenError: naming ``option`` and ``value``, saying what a DNS label is, with ``example`` for one.
    """
    if not DNS_LABEL.fullmatch(value):
        raise _refusal(
            option,
            value,
            "a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 "
            f"characters) such as {example}",
        )


def require_service_prefix(option: str, value: str, service: str) -> None:
    """Refuse ``value`` as ``option`` (an operator's ``--name``) unless ``service``, the name of its webhooks' Service
    made of it, is a Service's name: a DNS label that starts with a letter, which leaves ``value`` fewer than 63
    characters (54 before ``-webhooks``).

    Raises:
        CodegenError: naming ``option`` and ``value``, how long it may be and the Service, in the words of
            :func:`require_dns_label`.
    """
    if not DNS_1035_LABEL.match(service):
        longest = 63 - (len(service) - len(value))
        raise _refusal(
            option,
            value,
            f"a DNS label that starts with a letter, at most {longest} characters (its webhooks' Service is {service})",
        )


def _refusal(option: str, value: str, expected: str) -> errors.CodegenError:
    """``value`` refused as ``option``: what was expected instead."""
    return errors.CodegenError(f"invalid {option} {value!r}: expected {expected}")


def crd_from_models(
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    scope: Scope,
    spec_model: type[pydantic.BaseModel] | None,
    status_model: type[pydantic.BaseModel] | None,
    printer_columns: Sequence[Mapping[str, Any]] = (),
    other_versions: Mapping[str, type[pydantic.BaseModel] | None] | None = None,
    conversion_client_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CRD of ``kind`` in ``group``/``version`` (see the module docstring).

    Args:
        spec_model, status_model: the models of ``spec`` and ``status``; without a spec model the spec accepts any
            object, without a status model the status holds ``conditions`` and ``observedGeneration`` and preserves
            any other field.
        printer_columns: extra ``additionalPrinterColumns`` (``name``, ``type``, ``jsonPath``, optionally
            ``description``, ``format``, ``priority``), shown between ``Reason`` and ``Age``.
        other_versions: more served versions and their spec models (``version`` stays the one stored), listed
            after it with the same status schema and columns.
        conversion_client_config: the ``clientConfig`` of the conversion webhook (``spec.conversion.strategy:
            Webhook``); None: no conversion webhook (``strategy: None``, the API server only rewrites apiVersion).

    Raises:
        CodegenError: an invalid scope, name (group, kind, plural) or printer column, a model with no structural
            schema, or versions whose spec schemas differ without a conversion webhook.
    """
    if scope not in ("Namespaced", "Cluster"):
        raise errors.CodegenError(f"invalid scope {scope!r}: expected Namespaced or Cluster")
    _check_names(group, kind, plural)
    others = dict(other_versions or {})
    for name in (version, *others):
        if not DNS_1035_LABEL.match(name):
            raise errors.CodegenError(f"invalid version {name!r}: expected a lowercase DNS label such as v1alpha1")
    if version in others:
        raise errors.CodegenError(f"version {version} is the stored one: list only the other served versions")
    versions = [_version(version, True, kind, plural, spec_model, status_model, printer_columns)]
    versions += [_version(v, False, kind, plural, m, status_model, printer_columns) for v, m in others.items()]
    if conversion_client_config is None:
        _check_same_spec(kind, versions)
    definition: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": scope,
            "versions": versions,
        },
    }
    if conversion_client_config is not None:
        definition["spec"]["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"clientConfig": dict(conversion_client_config), "conversionReviewVersions": ["v1"]},
        }
    return definition


def _check_same_spec(kind: str, versions: Sequence[Mapping[str, Any]]) -> None:
    """Refuse served versions whose spec schemas differ when there is no conversion webhook: the API server then only
    rewrites ``apiVersion`` and prunes the object to the stored version's schema, so a field only another version
    declares would be dropped from every object written in that version, without a word."""
    stored, *others = [_undescribed(version["schema"]["openAPIV3Schema"]["properties"]["spec"]) for version in versions]
    for version, spec in zip(versions[1:], others, strict=True):
        if spec != stored:
            raise errors.CodegenError(
                f"{kind}: the spec schema of version {version['name']} differs from the stored version "
                f"{versions[0]['name']}'s, and without converters the API server would only rewrite apiVersion "
                f"(what only {version['name']} declares would be dropped): declare converters between the versions"
            )


def _undescribed(node: Any) -> Any:
    """``node`` without its descriptions (they change nothing the API server stores)."""
    if isinstance(node, Mapping):
        return {key: _undescribed(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [_undescribed(value) for value in node]
    return node


def _check_names(group: str, kind: str, plural: str) -> None:
    """The API server's rules for a CRD's names: a group with a dot, a plural, kind and list kind (lowercased) that
    are DNS-1035 labels, and the CRD's own name ``<plural>.<group>``, a DNS name of at most 253 characters."""
    if not DNS_SUBDOMAIN.match(group) or "." not in group or len(group) > 253:
        raise errors.CodegenError(f"invalid group {group!r}: expected a DNS name with a dot, such as cache.example.com")
    if not DNS_1035_LABEL.match(f"{kind}List".lower()):
        raise errors.CodegenError(f"invalid kind {kind!r}: expected a name such as Memcached")
    if not DNS_1035_LABEL.match(plural):
        raise errors.CodegenError(f"invalid plural {plural!r}: expected a lowercase DNS label such as memcacheds")
    if len(f"{plural}.{group}") > 253:
        raise errors.CodegenError(
            f"invalid group {group!r}: the CRD's name {plural}.{group} has {len(plural) + 1 + len(group)} characters, "
            "more than the 253 of a DNS name"
        )


def _version(
    version: str,
    stored: bool,
    kind: str,
    plural: str,
    spec_model: type[pydantic.BaseModel] | None,
    status_model: type[pydantic.BaseModel] | None,
    printer_columns: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One entry of ``spec.versions``."""
    spec = _model_schema(spec_model, "spec") if spec_model is not None else {"type": "object", PRESERVE: True}
    root: dict[str, Any] = {
        "description": f"{kind} is the Schema for the {plural} API.",
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "The versioned schema of this representation of an object.",
                "type": "string",
            },
            "kind": {"description": "The REST resource this object represents.", "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status_schema(status_model),
        },
    }
    if spec.get("required"):
        root["required"] = ["spec"]
    return {
        "name": version,
        "served": True,
        "storage": stored,
        "subresources": {"status": {}},
        # The columns are the same for every version: their paths are checked against the stored one's schema.
        "additionalPrinterColumns": _columns(printer_columns, root if stored else None),
        "schema": {"openAPIV3Schema": root},
    }


def status_schema(status_model: type[pydantic.BaseModel] | None) -> dict[str, Any]:
    """The schema of ``status``: the model's (when given) with okt's ``conditions`` and ``observedGeneration``.

    Each field is declared under the name okt writes it by too (:class:`_WrittenSchema`). The model's required fields
    are not required here: the status is written piecewise (okt's conditions of a reconcile that failed before the
    reconciler set anything, another writer's key), and the API server would refuse each such write for a field that
    is not there yet.
    """
    schema: dict[str, Any] = {"type": "object"}
    if status_model is not None:
        schema = _model_schema(status_model, "status", _WrittenSchema)
        schema.pop("required", None)
    properties = schema.setdefault("properties", {})
    properties["conditions"] = _keyed_by_type(properties.get("conditions"))
    properties.setdefault("observedGeneration", dict(OBSERVED_GENERATION_SCHEMA))
    schema.pop("additionalProperties", None)
    schema[PRESERVE] = True
    return schema


def _keyed_by_type(declared: dict[str, Any] | None) -> dict[str, Any]:
    """The schema of ``status.conditions``: okt's (:data:`CONDITIONS_SCHEMA`), or the status model's own, a list
    merged by ``type`` all the same (its items declaring and requiring ``type``, the key the server merges by): an
    atomic list belongs whole to its last writer, so an apply of okt's conditions would take another manager's with
    it, and that manager's own apply would conflict with okt's. A list type the model declares itself is kept."""
    if declared is None:
        return copy.deepcopy(CONDITIONS_SCHEMA)
    items = declared.get("items")
    if declared.get("type") != "array" or not isinstance(items, dict):
        return declared
    declared.setdefault("x-kubernetes-list-type", "map")
    if declared["x-kubernetes-list-type"] == "map":
        declared.setdefault("x-kubernetes-list-map-keys", ["type"])
        if declared["x-kubernetes-list-map-keys"] == ["type"]:
            items.setdefault("properties", {}).setdefault(
                "type", dict(CONDITIONS_SCHEMA["items"]["properties"]["type"])
            )
            if "type" not in items.setdefault("required", []):
                items["required"].append("type")
    return declared


def structural_schema(model: type[pydantic.BaseModel], path: str = "spec") -> dict[str, Any]:
    """The structural OpenAPI v3 schema of ``model`` (``path`` names its place in error messages)."""
    return _model_schema(model, path)


def one_per_name(classes: Sequence[type[Any]], documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CRDs ``documents`` of ``classes`` (one each, in order), each name once: reconcilers of one kind under their
    own controller names make one CRD, which the API server, kustomize and OLM each take once.

    Raises:
        CodegenError: two reconcilers of one kind make different CRDs (models, printer columns, conversion).
    """
    first: dict[str, tuple[type[Any], dict[str, Any]]] = {}
    for cls, document in zip(classes, documents, strict=True):
        name = document["metadata"]["name"]
        other, kept = first.setdefault(name, (cls, document))
        if kept != document:
            raise errors.CodegenError(
                f"{other.__name__} and {cls.__name__} make different CRDs {name} (their spec or status models, "
                "printer columns or conversion differ): give them the same, as the API server keeps one"
            )
    return [document for _cls, document in first.values()]


def crd_for_reconciler(cls: type[Any], conversion_client_config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The CRD of an ``okt.Reconciler`` subclass, read from its class attributes.

    Reads ``api_version`` (``group/version``), ``kind``, ``plural`` (None: :func:`okt.kube.kinds.plural_of`),
    ``namespaced``, ``spec_model``, ``status_model``, ``printer_columns``, and ``spec_models`` (more served versions). A
    reconciler with ``converters`` gets ``conversion_client_config`` as its conversion webhook's ``clientConfig``
    (default: the Service ``okt gen webhooks`` writes, without a ``caBundle``).

    Raises:
        CodegenError: a missing or ill-typed attribute, or one :func:`crd_from_models` refuses.
    """
    primary = primary_of(cls)
    spec_model = _model_attribute(cls, "spec_model")
    status_model = _model_attribute(cls, "status_model")
    columns = getattr(cls, "printer_columns", ()) or ()
    if not isinstance(columns, Sequence) or isinstance(columns, str):
        raise errors.CodegenError(f"{cls.__name__}.printer_columns must be a sequence of mappings")
    others = getattr(cls, "spec_models", None) or {}
    if not isinstance(others, Mapping) or not all(
        isinstance(m, type) and issubclass(m, pydantic.BaseModel) for m in others.values()
    ):
        raise errors.CodegenError(f"{cls.__name__}.spec_models must map versions to pydantic models")
    if getattr(cls, "converters", None) and conversion_client_config is None:
        from okt.codegen import webhooks  # builds on this module

        conversion_client_config = webhooks.conversion_client_config(cls, webhooks.default_client_config(cls))
    return crd_from_models(
        group=primary.group,
        version=primary.version,
        kind=primary.kind,
        plural=primary.plural,
        scope="Namespaced" if primary.namespaced else "Cluster",
        spec_model=spec_model,
        status_model=status_model,
        printer_columns=columns,
        other_versions=others,
        conversion_client_config=conversion_client_config if getattr(cls, "converters", None) else None,
    )


@dataclass(frozen=True)
class Primary:
    """The custom resource a reconciler reconciles, as its class attributes declare it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    finalizer: bool
    status: bool = True
    """Whether okt writes the ``/status`` subresource (the reconciler's ``status`` resolves to ``"status"``)."""


def primary_of(cls: type[Any], *, custom: bool = True) -> Primary:
    """Read the primary resource's identity from a reconciler class (see :func:`crd_for_reconciler`).

    With ``custom=False`` a built-in primary (a Deployment, a ConfigMap in the core group) is accepted too; one okt
    knows (``okt.kube.kinds.BUILTIN``) has the scope Kubernetes gives it, whatever ``namespaced`` says (a Namespace, a
    Node, a ClusterRole are cluster-scoped).

    Raises:
        CodegenError: ``api_version`` or ``kind`` is missing or malformed, or (``custom``) names a built-in kind.
    """
    name = cls.__name__
    api_version = getattr(cls, "api_version", None)
    kind = getattr(cls, "kind", None)
    if not isinstance(api_version, str) or not api_version:
        if isinstance(kind, str) and kind.strip():
            raise errors.CodegenError(
                f"{name}.kind {kind!r} without api_version is resolved by discovery when okt run starts; code "
                f"generation works offline and needs both spelled out, such as {_spelled_out(kind)}"
            )
        raise errors.CodegenError(f"{name}.api_version must be set, like 'cache.example.com/v1alpha1'")
    group, _, version = api_version.rpartition("/")
    builtin = kinds.is_builtin_group(api_version)
    if custom and builtin and isinstance(kind, str):
        raise errors.CodegenError(
            f"{name} reconciles {kind} in {api_version!r}, an API group of Kubernetes itself: a built-in kind has no "
            "CRD to generate, and a custom resource needs a group of its own (like cache.example.com)"
        )
    if not version or (not group and not builtin):
        raise errors.CodegenError(
            f"{name}.api_version {api_version!r} has no API group: custom resources need one (like cache.example.com)"
        )
    if not isinstance(kind, str) or not kind:
        raise errors.CodegenError(f"{name}.kind must be set, like 'Memcached'")
    known = kinds.builtin(api_version, kind)
    plural = getattr(cls, "plural", None) or (known.plural if known else kinds.plural_of(kind))
    if not isinstance(plural, str):
        raise errors.CodegenError(f"{name}.plural must be a string or None")
    return Primary(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        # a built-in kind's scope is Kubernetes' own: ``namespaced`` (True by default) cannot make a Namespace
        # namespaced, and a role granted on that belief would grant the reconciler nothing it needs
        namespaced=known.namespaced if known is not None else bool(getattr(cls, "namespaced", True)),
        finalizer=getattr(cls, "finalizer", None) is not None,
        status=_status_target(cls, api_version) is writer.Target.STATUS,
    )


def _spelled_out(name: str) -> str:
    """The declaration of the built-in kind okt knows by the kubectl name ``name`` (its table's first version of
    it: the one current clusters serve), or an example of a custom kind's."""
    served = [discovery.Served(kind, kind.kind.lower()) for kind in kinds.BUILTIN.values()]
    try:
        known = discovery.match(name, served)
    except okt_errors.ConfigurationError:
        return 'api_version = "cache.example.com/v1alpha1", kind = "Memcached"'
    return f'api_version = "{known.api_version}", kind = "{known.kind}"'


def _status_target(cls: type[Any], api_version: str) -> writer.Target:
    try:
        return writer.Target.resolve(getattr(cls, "status", None), api_version)
    except ValueError as exc:
        raise errors.CodegenError(f"{cls.__name__}.{exc}") from None


def _model_attribute(cls: type[Any], attribute: str) -> type[pydantic.BaseModel] | None:
    model = getattr(cls, attribute, None)
    if model is None:
        return None
    if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
        raise errors.CodegenError(f"{cls.__name__}.{attribute} must be a pydantic model class or None")
    return model


def _columns(extra: Sequence[Mapping[str, Any]], root: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    columns = [dict(column) for column in STANDARD_COLUMNS]
    names = {column["name"] for column in columns} | {AGE_COLUMN["name"]}
    for index, column in enumerate(extra):
        where = f"printer column #{index + 1}"
        if not isinstance(column, Mapping):
            raise errors.CodegenError(f"{where} must be a mapping with name, type and jsonPath")
        missing = [key for key in ("name", "type", "jsonPath") if not column.get(key)]
        if missing:
            raise errors.CodegenError(f"{where} lacks {', '.join(missing)}")
        unknown = sorted(set(column) - _COLUMN_KEYS)
        if unknown:
            raise errors.CodegenError(f"{where} ({column['name']}): unknown keys {', '.join(unknown)}")
        if column["type"] not in _COLUMN_TYPES:
            raise errors.CodegenError(
                f"{where} ({column['name']}): type {column['type']!r} is not one of {', '.join(sorted(_COLUMN_TYPES))}"
            )
        if "format" in column and column["format"] not in _COLUMN_FORMATS:
            raise errors.CodegenError(
                f"{where} ({column['name']}): format {column['format']!r} is not one of "
                f"{', '.join(sorted(_COLUMN_FORMATS))}"
            )
        priority = column.get("priority", 0)
        if type(priority) is not int or not -(2**31) <= priority < 2**31:
            raise errors.CodegenError(f"{where} ({column['name']}): priority {priority!r} is not a whole number")
        if not str(column["jsonPath"]).startswith("."):
            raise errors.CodegenError(f"{where} ({column['name']}): jsonPath must start with '.', like .spec.size")
        if root is not None:
            _check_column_path(f"{where} ({column['name']})", str(column["jsonPath"]), str(column["type"]), root)
        if column["name"] in names:
            raise errors.CodegenError(f"{where}: a column named {column['name']!r} already exists")
        names.add(column["name"])
        columns.append(dict(column))
    columns.append(dict(AGE_COLUMN))
    return columns


def _check_column_path(where: str, json_path: str, column_type: str, root: Mapping[str, Any]) -> None:
    """Refuse a column whose path names a field the schema does not have, or a field of a type the column cannot show:
    the API server takes any path and type, and the column would stay empty (a misspelled field, the Python name of an
    aliased one; an ``integer`` column of a string field) or read ``<invalid>`` (a ``date`` column of a number) for
    every object.

    Only the leading ``.field`` steps are followed, and only through declared properties: a node that preserves
    unknown fields, maps any key, or is not an object ends the check. The type is checked when those steps are the
    whole path and its field has a ``type`` (not an int-or-string).
    """
    node = root
    steps = _FIELD_STEPS.match(json_path)
    walked = steps.group(0) if steps else ""
    for name in walked.split(".")[1:]:
        properties = node.get("properties")
        if node.get(PRESERVE) or node.get("additionalProperties") or not properties:
            return
        if name not in properties:
            raise errors.CodegenError(
                f"{where}: jsonPath {json_path} names no field of the schema ({name!r} is not one of "
                f"{', '.join(sorted(properties))})"
            )
        node = properties[name]
    shown = _COLUMN_FIELD_TYPES.get(column_type)
    if walked == json_path and shown is not None and node.get("type") is not None and node["type"] not in shown:
        raise errors.CodegenError(
            f"{where}: type {column_type} cannot show {json_path}, a field of type {node['type']} (the column would "
            f"be empty or <invalid> for every object): make the column's type {_column_type_for(node['type'])}"
        )


def _column_type_for(field_type: str) -> str:
    """The column type that shows a field of ``field_type`` (``string`` shows any)."""
    return field_type if field_type in ("integer", "number", "boolean") else "string"


def _model_schema(
    model: type[pydantic.BaseModel], path: str, generator: type[_EveryNameSchema] | None = None
) -> dict[str, Any]:
    """The structural schema of ``model``: of what it reads (``generator`` None), or of what okt writes too
    (:class:`_WrittenSchema`)."""
    try:
        schema = model.model_json_schema(
            mode="validation", by_alias=True, schema_generator=generator or _EveryNameSchema
        )
    except pydantic.PydanticUserError as exc:
        raise errors.CodegenError(f"{path}: {model.__name__} has no JSON schema: {exc}") from exc
    except errors.CodegenError as exc:
        raise errors.CodegenError(f"{path}: {exc}") from None
    return _Converter(schema.get("$defs", {})).convert(schema, path, ())


STRIPPED = "x-okt-strip-whitespace"
"""Marks the JSON schema of a string pydantic strips of white space before it checks its length and pattern (which
pydantic's own schema does not say); the converted node never keeps it."""
_MAX_REPEAT = 1000
"""The largest count of a repetition the API server's RE2 reads."""

_KEY_TYPES = {"int": "integer", "float": "number", "decimal": "number", "bool": "boolean"}
"""The JSON types of a map's keys that are no strings, by pydantic's core schema type."""


class _EveryNameSchema(pydantic.json_schema.GenerateJsonSchema):
    """pydantic's JSON schema, with a property for every name a model reads a field by.

    pydantic declares a field under one name (its alias), but a model with ``populate_by_name`` (``validate_by_name``)
    reads it by its Python name too, and an ``AliasChoices`` by each choice. The API server prunes what the schema does
    not declare: a custom resource that spelled the field another way would lose its value without a word. Every name
    gets the field's schema without its default (the API server would add the default under a name the custom resource
    did not use, and the model reads the alias first: the value written under another name would be lost again; the
    model's default applies all the same), and the field is required under none of them (the schema cannot require
    one name of several; okt's ``InvalidSpec`` names the field when the custom resource sets it under none).
    """

    written = False
    """Whether a field is declared under the name okt writes it by too (:class:`_WrittenSchema`)."""

    def dict_schema(self, schema: core_schema.DictSchema) -> pydantic.json_schema.JsonSchemaValue:
        """pydantic's schema of a map, saying the JSON type of keys that are no strings (``dict[int, X]`` refuses the
        key ``"a"``; pydantic's own schema does not say so)."""
        json_schema = super().dict_schema(schema)
        keys = schema.get("keys_schema") or {}
        key_type = _KEY_TYPES.get(str(keys.get("type")))
        if key_type is not None:
            json_schema.setdefault("propertyNames", {})["type"] = key_type
        return json_schema

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        """The field's default, and ``{}`` for a model made by its own class (``Field(default_factory=Limits)``).

        pydantic's schema has no default for a ``default_factory``, which it would have to call. A model class made
        with no arguments is the model of its own defaults: the API server, given ``{}``, fills in each of them as
        the model does, so the stored object has the nested defaults (a printer column of one, ``kubectl get -o
        yaml``) that a ``= Limits()`` default gives. A default the field does not read back as the factory's model is
        left to the model (:func:`_reads_back`); any other factory is never called.
        """
        factory = schema.get("default_factory")
        if (
            isinstance(factory, type)
            and issubclass(factory, pydantic.BaseModel)
            and not schema.get("default_factory_takes_data")
        ):
            return {}
        return super().get_default_value(schema)

    def str_schema(self, schema: core_schema.StringSchema) -> pydantic.json_schema.JsonSchemaValue:
        """pydantic's schema of a string, marked :data:`STRIPPED` when pydantic strips it (``strip_whitespace``, or the
        model's ``str_strip_whitespace``) before it checks its length and pattern."""
        json_schema = super().str_schema(schema)
        if schema.get("strip_whitespace", self._config.config_dict.get("str_strip_whitespace", False)):
            json_schema[STRIPPED] = True
        return json_schema

    def model_schema(self, schema: core_schema.ModelSchema) -> pydantic.json_schema.JsonSchemaValue:
        json_schema = super().model_schema(schema)
        properties = json_schema.get("properties")
        model = schema["cls"]
        if not isinstance(properties, dict) or not issubclass(model, pydantic.BaseModel):
            return json_schema
        by_name = bool(model.model_config.get("validate_by_name") or model.model_config.get("populate_by_name"))
        for name, field in model.model_fields.items():
            names = _field_names(name, field, by_name)
            if self.written:
                names = list(dict.fromkeys([*names, field.serialization_alias or name]))
            declared = next((other for other in names if other in properties), None)
            if declared is not None and properties[declared].get("default") is not None:
                if field.default_factory is None:
                    _check_default(f"{model.__name__}.{name}", field)
                if not _reads_back(field, properties[declared]["default"]):
                    del properties[declared]["default"]
            if declared is None or len(names) < 2:
                continue
            undefaulted = {key: value for key, value in properties[declared].items() if key != "default"}
            for other in names:
                properties[other] = dict(undefaulted)
            required = [other for other in json_schema.get("required", ()) if other not in names]
            if required:
                json_schema["required"] = required
            else:
                json_schema.pop("required", None)
        return json_schema


class _WrittenSchema(_EveryNameSchema):
    """:class:`_EveryNameSchema` of a model okt writes (the status): each field also under the name it is dumped by.

    okt writes the status fields as the model dumps them (``model_dump(by_alias=True)``): under a field's
    ``serialization_alias``, the name of a field read by a ``validation_alias`` alone. Declared only under the names
    the model reads, such a field of a nested model was pruned by the API server at each write, without a word (and
    its default added under the name okt never wrote).
    """

    written = True


def _check_default(where: str, field: pydantic.fields.FieldInfo) -> None:
    """Refuse a default its own field refuses (pydantic does not validate defaults): the API server checks each
    ``default`` against the schema and refuses the whole CRD, in a message that names no model."""
    try:
        pydantic.TypeAdapter(field.rebuild_annotation()).validate_python(field.default)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]["msg"]
        raise errors.CodegenError(
            f"{where}: its default {field.default!r} is one the field refuses ({first}), and so would the API server"
        ) from None


def _reads_back(field: pydantic.fields.FieldInfo, default: Any) -> bool:
    """Whether the field reads its default's JSON form (the CRD's ``default``) as the default itself.

    Not so for a ``SecretStr`` (its JSON form is ``**********``: every custom resource would get that string, and the
    secret itself would be written in the CRD otherwise), a value whose JSON form reads back as another one, or one
    JSON cannot hold (``inf``). Such a default is left out: the API server leaves the field unset, and the model's
    default applies. A ``default_factory`` (a model class, see :meth:`_EveryNameSchema.get_default_value`) is called
    for the value to compare with.
    """
    try:
        json.dumps(default, allow_nan=False)
        made = field.get_default(call_default_factory=True) if field.default_factory is not None else field.default
        return bool(pydantic.TypeAdapter(field.rebuild_annotation()).validate_python(default) == made)
    except (ValueError, pydantic.ValidationError):
        return False


def _field_names(name: str, field: pydantic.fields.FieldInfo, by_name: bool) -> list[str]:
    """The top-level keys a model reads ``field`` by (an ``AliasPath`` into a nested value is not one)."""
    alias = field.validation_alias if field.validation_alias is not None else field.alias
    choices = alias.choices if isinstance(alias, pydantic.AliasChoices) else [] if alias is None else [alias]
    names: list[str] = []
    for choice in choices:
        key = choice if isinstance(choice, str) else choice.path[0] if len(choice.path) == 1 else None
        if isinstance(key, str):
            names.append(key)
    if by_name or alias is None:
        names.append(name)
    return list(dict.fromkeys(names))


class _Converter:
    """JSON Schema (pydantic) -> Kubernetes structural schema, one node at a time."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions

    def convert(self, node: Mapping[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        converted = self._convert(dict(node), path, stack)
        order = {key: index for index, key in enumerate(_KEY_ORDER)}
        return dict(sorted(converted.items(), key=lambda item: order.get(item[0], len(order))))

    def _convert(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        if "$ref" in node:
            return self._reference(node, path, stack)
        if "allOf" in node:
            parts = node.pop("allOf")
            if len(parts) != 1:
                raise errors.CodegenError(f"{path}: allOf with {len(parts)} schemas has no structural schema")
            return self.convert({**parts[0], **node}, path, stack)
        if "oneOf" in node and "discriminator" in node:
            return self._tagged(node, path, stack)
        for keyword in ("anyOf", "oneOf"):
            if keyword in node:
                return self._union(node, node.pop(keyword), path, stack)
        if isinstance(node.get("type"), list):
            types = [kind for kind in node["type"] if kind != "null"]
            nullable = len(types) < len(node["type"])
            options = [{"type": kind} for kind in types]
            return self._union({**node, "type": None}, options + ([{"type": "null"}] if nullable else []), path, stack)
        values = node.get("enum") or ()
        if None in values and any(value is not None for value in values):
            # Literal["a", None]: pydantic lists None among the values rather than writing Optional[Literal["a"]].
            siblings = {key: value for key, value in node.items() if key != "enum"}
            options = [{"enum": [value for value in values if value is not None]}, {"type": "null"}]
            return self._union(siblings, options, path, stack)
        return self._typed(node, path, stack)

    def _reference(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        name = str(node.pop("$ref")).rsplit("/", 1)[-1]
        if name not in self._definitions:
            raise errors.CodegenError(f"{path}: unresolvable reference to {name!r}")
        if name in stack:
            cut: dict[str, Any] = {"type": "object", PRESERVE: True}
            description = node.get("description", self._definitions[name].get("description"))
            return {"description": description, **cut} if description else cut
        return self.convert({**self._definitions[name], **node}, path, (*stack, name))

    def _union(
        self, node: dict[str, Any], options: Sequence[Mapping[str, Any]], path: str, stack: tuple[str, ...]
    ) -> dict[str, Any]:
        concrete = [option for option in options if option.get("type") != "null"]
        nullable = len(concrete) < len(options)
        siblings = {key: value for key, value in node.items() if key != "type" or value is not None}
        types = sorted(str(option.get("type")) for option in concrete)
        if len(concrete) == 1:
            converted = self.convert({**concrete[0], **siblings}, path, stack)
        elif types == ["integer", "number"]:
            converted = self._number(siblings, concrete, path, stack)
        elif types == ["integer", "string"]:
            _check_no_union_constraint(siblings, path)
            converted = self._annotations(siblings)
            converted["x-kubernetes-int-or-string"] = True
            if siblings.get("default") is not None:
                converted["default"] = siblings["default"]
            for option in concrete:
                converted.update(self._int_or_string_member(option, path, stack))
        else:
            raise _no_union(concrete, path)
        if nullable:
            converted["nullable"] = True
            if "default" in converted and converted["default"] is None:
                del converted["default"]
            if "enum" in converted:
                # The API server checks a null against a node's enum, nullable or not ("Unsupported value: null"), and
                # refuses a CRD whose enum lists null; it checks a null against no allOf.
                converted["allOf"] = [{"enum": converted.pop("enum")}]
        return converted

    def _tagged(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        """A discriminated union of models (``Annotated[A | B, Field(discriminator="kind")]``): one object.

        A structural schema gives each field one schema, and Kubernetes refuses ``oneOf`` members that declare types
        (pydantic's form). So the object declares every member's fields (a field two members declare must be the same
        in both but for its Literal values; its default is kept only when each member has it), requires what each
        member requires, and an ``anyOf`` of value validations picks the member by its tag: that member's values of
        the tag (under each name the member reads it by) and of its other Literal fields, its required fields, and,
        for a member that forbids extra fields, none of the other members' fields. The API server checks these
        (Kubernetes 1.20 and later); what the members' fields ignore is ignored by the model too.
        """
        options = node.pop("oneOf")
        tag = node.pop("discriminator").get("propertyName")
        names = [_member_name(option) for option in options]
        members = [self.convert(dict(option), path, stack) for option in options]
        for name, member in zip(names, members, strict=True):
            if "anyOf" in member:
                raise errors.CodegenError(
                    f"{path}: {name} is itself a discriminated union, and one object of the CRD holds every member's "
                    "fields: list its members in the outer union instead"
                )
            if member.get("type") != "object" or not (member.get("properties") or {}).get(tag, {}).get("enum"):
                raise errors.CodegenError(
                    f"{path}: {name}, a member of a union discriminated by {tag!r}, has no {tag} field of Literal "
                    f"values: declare one, like {tag}: Literal[{name.lower()!r}]"
                )
        properties: dict[str, Any] = {}
        by_member: list[dict[str, Any]] = [{} for _ in members]
        for field in dict.fromkeys(field for member in members for field in member["properties"]):
            declared = [
                (name, member["properties"][field])
                for name, member in zip(names, members, strict=True)
                if field in member["properties"]
            ]
            (first, merged), *others = declared
            for name, other in others:
                if _unenumerated(merged) != _unenumerated(other):
                    raise errors.CodegenError(
                        f"{path}: {field} is a different field in {first} and {name}, and one object of the CRD "
                        "holds every member's fields: give it one type and one set of constraints in each member "
                        "(its Literal values may differ), or another name"
                    )
            if len(declared) < len(members) or any(
                other.get("default") != merged.get("default") for _, other in others
            ):
                merged = {key: value for key, value in merged.items() if key != "default"}
            enums = [other.get("enum") for _, other in declared]
            if any(enum != enums[0] for enum in enums):
                # Each member's own values are checked in its branch; the object takes any of them.
                merged = {key: value for key, value in merged.items() if key != "enum"}
                if all(enums):
                    merged["enum"] = list(dict.fromkeys(value for enum in enums for value in enum or ()))
                for index, member in enumerate(members):
                    if member["properties"].get(field, {}).get("enum"):
                        by_member[index][field] = {"enum": member["properties"][field]["enum"]}
            properties[field] = merged
        branches = []
        for option, member, own in zip(options, members, by_member, strict=True):
            branch: dict[str, Any] = {"properties": own} if own else {}
            if member.get("required"):
                branch["required"] = list(member["required"])
            foreign = [field for field in properties if field not in member["properties"]]
            if self._resolved(option).get("additionalProperties") is False and foreign:
                branch["not"] = {"anyOf": [{"required": [field]} for field in foreign]}
            branches.append(branch)
        out = self._annotations(node)
        out.update({"type": "object", "properties": properties})
        everywhere = [field for field in properties if all(field in member.get("required", ()) for member in members)]
        if everywhere:
            out["required"] = everywhere
        if node.get("default") is not None:
            out["default"] = node["default"]
        out["anyOf"] = branches
        if any(member.get(PRESERVE) for member in members):
            out[PRESERVE] = True
        return out

    def _resolved(self, option: Mapping[str, Any]) -> Mapping[str, Any]:
        """``option`` itself, or the definition its ``$ref`` names."""
        reference = option.get("$ref")
        return self._definitions.get(str(reference).rsplit("/", 1)[-1], {}) if reference else option

    def _number(
        self, node: dict[str, Any], members: Sequence[Mapping[str, Any]], path: str, stack: tuple[str, ...]
    ) -> dict[str, Any]:
        """``int | float``: a ``number`` (the API server's takes an integer too), bounded as the union is.

        A bound on the union as a whole (``Field(ge=1)``, in pydantic's names beside the ``anyOf``) or the same
        bounds on each member say one thing; members bounded differently do not (pydantic tries the next member
        when one refuses: ``Annotated[int, Field(ge=1)] | float`` takes 0 as the float 0.0), and are refused.
        """
        bounds = [{key: value for key, value in member.items() if key not in ("type", "format")} for member in members]
        if any(bound != bounds[0] for bound in bounds):
            raise errors.CodegenError(
                f"{path}: the members of int | float are bounded differently, and the API server checks one number: "
                "bound the union as a whole (int | float = Field(ge=...)), or use float"
            )
        own = {_JSON_NAMES.get(key, key): value for key, value in node.items()}
        return self.convert({**own, **bounds[0], "type": "number"}, path, stack)

    def _int_or_string_member(self, option: Mapping[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        """The value validations of one member of ``int | str``, to be set on the int-or-string node itself: the API
        server checks a bound only against numbers and a length, a pattern or a format only against strings, so each
        still reaches only the member it was written for."""
        member = self.convert(dict(option), path, stack)
        if "enum" in member:
            raise errors.CodegenError(
                f"{path}: an enum of the {member['type']} member of int | str has no structural schema (the API "
                "server would check the other member's values against it too): declare two fields, or leave the "
                "values to check()"
            )
        kept = {key: value for key, value in member.items() if key in _MEMBER_VALIDATIONS}
        if member["type"] == "string" and "format" in member:
            kept["format"] = member["format"]  # the API server checks a string format against strings only
        return kept

    def _typed(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        if "const" in node:
            node["enum"] = [node.pop("const")]
        kind = node.get("type") or _inferred_type(node, path)
        if kind is None:
            # Any value, null too: the API server prunes a null where the schema is not nullable, and the model
            # would read the field's default (or miss a required one) instead of the None it was given.
            return {**self._annotations(node), "nullable": True, PRESERVE: True}
        if kind == "null":
            raise errors.CodegenError(f"{path}: a field that can only be None has no structural schema")
        out = self._annotations(node)
        out["type"] = kind
        if node.get("format") in KUBERNETES_FORMATS:
            out["format"] = node["format"]
        if "enum" in node:
            out["enum"] = list(node["enum"])
        if "default" in node and node["default"] is not None:
            out["default"] = node["default"]
        for keyword in _COPIED_KEYWORDS:
            if keyword in node:
                out[keyword] = node[keyword]
        if "pattern" in out:
            try:
                out["pattern"] = patterns.to_go(out["pattern"])
            except patterns.PatternError as exc:
                raise errors.CodegenError(f"{path}: pattern {node['pattern']!r}: {exc}") from None
        if node.get(STRIPPED) and kind == "string":
            _stripped(node, out, path)
        if node.get("format") == "binary" and "minLength" in out:
            # pydantic counts the UTF-8 bytes of a bytes value, the API server its characters, of up to four bytes each
            # ("é" is two bytes for min_length=2, and was refused); its maxLength holds, a character being one byte
            # or more, and the model checks the rest.
            out["minLength"] = -(-out["minLength"] // 4)
        if kind == "number":
            # pydantic checks a float's multiple_of within a margin (1.15 is a multiple of 0.01 to it), the API server
            # divides exactly in binary floating point (114.99999999999999 times 0.01), and refused such a value.
            out.pop("multipleOf", None)
        if node.get("uniqueItems"):
            # A set's max_length bounds its distinct values: the API server counts a duplicate the model folds away.
            out.pop("maxItems", None)
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = node.get(exclusive)
            if isinstance(value, bool):
                out[exclusive] = value
            elif value is not None:
                out[bound] = value
                out[exclusive] = True
        if kind == "object":
            self._object(node, out, path, stack)
        elif kind == "array":
            self._array(node, out, path, stack)
        return out

    def _object(self, node: dict[str, Any], out: dict[str, Any], path: str, stack: tuple[str, ...]) -> None:
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        names = self._resolved(node.get("propertyNames") or {})
        _check_keys_listed_only(node, names, path)
        if properties:
            out["properties"] = {
                name: self.convert(schema, f"{path}.{name}", stack) for name, schema in properties.items()
            }
            if node.get("required"):
                out["required"] = list(node["required"])
            if extra is not None:
                # extra="allow" keeps what it does not declare; extra="forbid" (additionalProperties: false) refuses
                # it, and can only if it gets it: pruned, a misspelled field would vanish without a word.
                out[PRESERVE] = True
        elif isinstance(extra, Mapping) and extra:
            out["additionalProperties"] = self.convert(extra, f"{path}.*", stack)
        else:
            out[PRESERVE] = True
        keys = names.get("enum") or ([names["const"]] if "const" in names else None)  # Literal["a"] is a const
        if not properties and keys:
            self._keys(out, [str(key) for key in keys])

    @staticmethod
    def _keys(out: dict[str, Any], keys: Sequence[str]) -> None:
        """A map whose keys are ``Literal`` or ``Enum`` values: ``propertyNames`` has no structural form, and a key it
        refuses (a misspelled one) would be stored for the model to refuse. The map holds at most that many keys
        (every API server checks it), and a validation rule lists them (API servers with CEL rules, Kubernetes 1.25
        and later, check it; 1.20 drops it). A map of ``Any`` (preserving unknown fields) gets the bound only.
        """
        out["maxProperties"] = min(len(keys), out.get("maxProperties", len(keys)))
        if "additionalProperties" in out:
            listed = ", ".join(json.dumps(key, ensure_ascii=False) for key in keys)
            message = ", ".join(json.dumps(key) for key in keys)
            out["x-kubernetes-validations"] = [
                {"rule": f"self.all(k, k in [{listed}])", "message": f"the keys must be among {message}"}
            ]

    def _array(self, node: dict[str, Any], out: dict[str, Any], path: str, stack: tuple[str, ...]) -> None:
        if "prefixItems" in node:
            raise errors.CodegenError(f"{path}: fixed-length tuples have no structural schema; use list[X]")
        items = node.get("items")
        out["items"] = self.convert(items, f"{path}[]", stack) if isinstance(items, Mapping) else {PRESERVE: True}

    @staticmethod
    def _annotations(node: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords that describe a node whatever its type (here: its description)."""
        return {"description": node["description"]} if node.get("description") else {}


def _member_name(option: Mapping[str, Any]) -> str:
    """How a union's member is called in a message: its model's name, or its JSON type."""
    reference = option.get("$ref")
    members = option.get("oneOf") or option.get("anyOf")
    if reference:
        return str(reference).rsplit("/", 1)[-1]
    if members:
        return f"({' | '.join(_member_name(member) for member in members)})"
    return str(option.get("title") or option.get("type", "?"))


def _unenumerated(node: Mapping[str, Any]) -> Any:
    """``node`` without its descriptions, its own default and its own enum (the structure a merged field keeps)."""
    return {key: value for key, value in _undefaulted(node).items() if key != "enum"}


def _undefaulted(node: Mapping[str, Any]) -> Any:
    """``node`` without its descriptions and its own default (what it checks, not what it adds)."""
    return {key: value for key, value in _undescribed(node).items() if key != "default"}


def _no_union(members: Sequence[Mapping[str, Any]], path: str) -> errors.CodegenError:
    """The error for a union no structural schema can say, with what to write instead."""
    if all("$ref" in member or member.get("type") == "object" for member in members):
        names = [_member_name(member) for member in members]
        return errors.CodegenError(
            f"{path}: a union of {', '.join(names)} has no structural schema: make it a discriminated union, "
            f'Annotated[{" | ".join(names)}, Field(discriminator="kind")], each member with a Literal field of that '
            "name"
        )
    shown = ", ".join(sorted(_member_name(member) for member in members))
    return errors.CodegenError(
        f"{path}: a union of {shown} has no structural schema (the API server checks one type per field; only "
        "Optional[X], int | str, int | float and discriminated unions of models have one): use one type, or a field "
        "for each"
    )


def _stripped(node: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
    """The length of a string pydantic strips of white space (``strip_whitespace``) before it measures it, as a pattern:
    the API server measures the value as written, and stored ``" "`` for ``min_length=1`` (the model refused it) and
    refused ``"abc "`` for ``max_length=3`` (the model takes it as ``"abc"``).

    ``minLength`` stays (a value as written is no shorter than stripped); ``maxLength`` becomes the pattern, which
    measures from the first character that is no white space to the last (white space as Rust's ``trim`` reads it,
    Unicode's). A bound past the repetitions RE2 reads is left to the model. A pattern of the field's own is refused:
    pydantic matches it against the stripped value, the API server against the value as written.
    """
    if "pattern" in out:
        raise errors.CodegenError(
            f"{path}: pattern {node['pattern']!r} with strip_whitespace: pydantic matches it against the stripped "
            "value, the API server against the value as written (and would refuse what the model takes): write the "
            r"pattern for the value as written (like ^\s*[a-z]+\s*$) and strip it in your code, or check the pattern "
            "in check()"
        )
    minimum = int(out.get("minLength", 0))
    maximum = out.pop("maxLength", None)
    if maximum is not None and maximum - 2 > _MAX_REPEAT:
        maximum = None
    if minimum == 0 and maximum is None:
        return
    blank, solid = f"[{patterns.SPACE}]", f"[^{patterns.SPACE}]"
    low = min(max(minimum, 2) - 2, _MAX_REPEAT)
    if maximum is None:
        # Found anywhere: a character that is no white space, or two as far apart as the shortest value is long.
        out["pattern"] = solid if minimum <= 1 else f"{solid}(?s:.){{{low},}}{solid}"
        return
    branches = [solid] if minimum <= 1 and maximum != 0 else []  # one character
    if maximum - 2 >= low:  # two or more: the first and last, and what is between
        branches.append(f"{solid}(?s:.){{{low},{'' if maximum is None else maximum - 2}}}{solid}")
    body = f"(?:{'|'.join(branches)}){'?' if minimum == 0 else ''}" if branches else ""
    out["pattern"] = f"^{blank}*{body}{blank}*$"


def _check_keys_listed_only(node: Mapping[str, Any], names: Mapping[str, Any], path: str) -> None:
    """Refuse a map whose keys are constrained otherwise than by a list of values: a structural schema says nothing
    of a map's keys (``propertyNames`` and ``patternProperties`` have no place in it, and Kubernetes 1.20 checks no
    CEL rule), so the API server would store a key the model refuses, and the object would end ``InvalidSpec``
    instead of being refused at apply time."""
    key_patterns = [*(node.get("patternProperties") or {}), *([names["pattern"]] if names.get("pattern") else [])]
    shown = [f"pattern {pattern!r}" for pattern in key_patterns]
    shown += [f"{name}={names[keyword]}" for keyword, name in _PYDANTIC_NAMES.items() if keyword in names]
    if names.get("format"):
        shown.append(f"format {names['format']}")
    if names.get("type") not in (None, "string"):
        what = f"of type {names['type']}"
    elif shown:
        what = f"with {', '.join(shown)}"
    else:
        return
    raise errors.CodegenError(
        f"{path}: keys {what}: the API server checks the keys of a map against nothing but a list of values (Literal "
        "or Enum keys) and would store a key the model refuses: use dict[str, X] and check the keys in check(), or a "
        "list of models whose name field carries the constraint"
    )


def _check_no_union_constraint(node: Mapping[str, Any], path: str) -> None:
    """Refuse a constraint written on a union as a whole (``int | str = Field(ge=1)``): pydantic applies it to every
    member and raises a TypeError for a value it cannot compare (every string, there), and its JSON schema keeps it
    in a keyword of its own (``ge``) that the CRD would drop."""
    constraints = [_PYDANTIC_NAMES.get(key, key) for key in node if key in _UNION_CONSTRAINTS]
    if constraints:
        shown = ", ".join(f"{name}=..." for name in constraints)
        raise errors.CodegenError(
            f"{path}: Field({shown}) on a union applies to each of its members, and pydantic refuses with a TypeError "
            "a value it cannot compare: constrain the member it is meant for, like Annotated[int, Field(ge=...)] | str"
        )


def _inferred_type(node: Mapping[str, Any], path: str) -> str | None:
    if "properties" in node:
        return "object"
    if "items" in node:
        return "array"
    if "enum" not in node:
        return None
    values = node["enum"]
    for kind, python_types in (("boolean", (bool,)), ("integer", (int,)), ("number", (int, float)), ("string", (str,))):
        if all(isinstance(value, python_types) for value in values) and (
            kind == "boolean" or not any(isinstance(value, bool) for value in values)
        ):
            return kind
    raise errors.CodegenError(f"{path}: an enum mixing value types has no structural schema")
