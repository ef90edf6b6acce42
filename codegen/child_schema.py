"""``okt gen resource --crd``: what a wrapper of a custom kind carries of its CRD — the lists it merges by key.

Why it exists: server-side apply merges the lists a CRD declares ``x-kubernetes-list-type: map`` by their
``x-kubernetes-list-map-keys``, and keeps another manager's items in them beside okt's. okt's drift check compares
such a list by key only when the child's class says it is one (:attr:`okt.Resource.openapi_schema`); a built-in
kind's lists are okt's own table's, a custom kind's are its CRD's. The generator reads the CRD the author already
has and writes the part of its schema that holds those lists into the generated module, so the author never copies
a schema by hand and regeneration follows the CRD.

Guarantees: only the ways to the map lists are written, each with its keys and the ``default`` of its key fields
(:func:`okt.resources.list_keys.to_openapi`); the written value reads back as the CRD's own schema does
(``from_openapi`` of both is equal); the assignment is written as ruff format writes it. Every input error is one
:class:`~okt.codegen.errors.CodegenError` line naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from okt.codegen import dictionary, errors
from okt.kube import kinds
from okt.resources import list_keys


def read(path: Path, spec: dictionary.KindSpec) -> dict[str, Any]:
    """The part of the schema of ``spec``'s kind and version, in the CRD at ``path``, that holds its map lists.

    Raises:
        CodegenError: ``spec``'s kind is of a built-in group (its lists are okt's table's); the file is unreadable,
            not YAML, or holds no CustomResourceDefinition of that group and kind serving that version with a
            schema, or holds one with a value of another type where the schema is looked for (``versions`` not a
            list, a ``schema`` not a mapping); the schema is one okt cannot read (a map list without keys).
    """
    group, _, version = spec.api_version.rpartition("/")
    if kinds.is_builtin_group(spec.api_version):
        raise errors.CodegenError(
            f"--crd {path}: {spec.kind} ({spec.api_version}) is a built-in kind, whose keyed lists okt knows already; "
            "--crd is for a child of a custom kind"
        )
    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise errors.CodegenError(f"cannot read --crd {path}: {reason}") from exc
    except yaml.YAMLError as exc:
        raise errors.CodegenError(f"--crd {path} is not YAML: {exc}") from exc
    try:
        schema = _schema_of(documents, group, spec.kind, version)
    except ValueError as exc:
        raise errors.CodegenError(f"--crd {path}: the CustomResourceDefinition of {spec.kind}: {exc}") from exc
    if schema is None:
        raise errors.CodegenError(
            f"--crd {path} holds no CustomResourceDefinition of {spec.kind} in group {group} serving {version} with "
            "a schema (spec.versions[].schema.openAPIV3Schema)"
        )
    try:
        return list_keys.to_openapi(list_keys.from_openapi(schema))
    except ValueError as exc:
        raise errors.CodegenError(f"--crd {path}: the openAPIV3Schema of {spec.kind} {version}: {exc}") from exc


def _schema_of(documents: list[Any], group: str, kind: str, version: str) -> Any:
    """The ``openAPIV3Schema`` of ``version`` in the CRD of ``group`` and ``kind`` among ``documents``, or None.

    Raises:
        ValueError: that CRD holds a value of another type where the schema is looked for; the message names where.
    """
    for document in documents:
        if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
            continue
        crd_spec = document.get("spec")
        if not isinstance(crd_spec, dict) or crd_spec.get("group") != group:
            continue
        names = crd_spec.get("names")
        if not isinstance(names, dict) or names.get("kind") != kind:
            continue
        if "versions" not in crd_spec and crd_spec.get("version") == version:
            # apiextensions.k8s.io/v1beta1's CRD of one version: spec.version, its schema in spec.validation
            return _typed(crd_spec.get("validation") or {}, dict, "spec.validation").get("openAPIV3Schema")
        versions = _typed(crd_spec.get("versions") or [], list, "spec.versions")
        for index, item in enumerate(versions):
            served = _typed(item, dict, f"spec.versions[{index}]")
            if served.get("name") == version:
                found = _typed(served.get("schema") or {}, dict, f"spec.versions[{index}].schema")
                if found.get("openAPIV3Schema") is not None:
                    return found["openAPIV3Schema"]
                # apiextensions.k8s.io/v1beta1 may give one schema for every version instead
                return _typed(crd_spec.get("validation") or {}, dict, "spec.validation").get("openAPIV3Schema")
    return None


def _typed(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        expected = "a list" if kind is list else "a mapping"
        raise ValueError(f"{where} is not {expected} but a {type(value).__name__}")
    return value


def assignment(schema: Any, line_length: int) -> str:
    """``OPENAPI_SCHEMA`` and ``schema`` as ruff format writes them: each mapping one entry a line, with a trailing
    comma (which keeps it so); a list of scalars on its line when that fits in ``line_length`` columns. A line longer
    than that (a very long field name) gets a ``# noqa`` for E501."""
    target = "OPENAPI_SCHEMA: dict[str, Any] = "
    lines = (target + _literal(schema, "", line_length, len(target))).split("\n")
    return "\n".join(f"{line}  # noqa: E501, RUF100" if len(line) > line_length else line for line in lines)


def _literal(value: Any, indent: str, line_length: int, start: int) -> str:
    """``value`` as a Python literal, its first line beginning at column ``start`` and the next ones at ``indent``."""
    inner = indent + "    "
    if isinstance(value, dict):
        if not value:
            return "{}"
        entries = []
        for key, item in value.items():
            head = f"{inner}{_scalar(key)}: "
            entries.append(f"{head}{_literal(item, inner, line_length, len(head))},")
        return "{\n" + "\n".join(entries) + f"\n{indent}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if all(not isinstance(item, dict | list) for item in value):
            flat = "[" + ", ".join(_scalar(item) for item in value) + "]"
            if start + len(flat) + 1 <= line_length:  # the comma after it
                return flat
        items = "\n".join(f"{inner}{_literal(item, inner, line_length, len(inner))}," for item in value)
        return "[\n" + items + f"\n{indent}]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)
