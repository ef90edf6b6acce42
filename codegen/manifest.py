"""From a child's YAML manifest to the Jinja2 template a resource wrapper renders.

Why it exists: an author writes the child object once, as plain Kubernetes YAML (often copied from docs or from
``kubectl get -o yaml``), and okt renders it for each custom resource. Only the identity of the object changes between
custom resources, so the template is the manifest **verbatim** — comments, key order, quoting and all — except
``metadata.name`` and ``metadata.namespace``, which become the ``{{ name }}`` and ``{{ namespace }}`` placeholders
(``namespace`` is added to namespaced kinds that lack it). A manifest may already hold ``{{ ... }}`` expressions in
its values (rendered with ``cr``, ``name``, ``namespace`` and the reconciler's params, see :func:`is_expression`); any
other ``{{``, and every ``{%`` and ``{#``, is the manifest's text (Jinja2 statements are not supported: the manifest
must stay parseable YAML).

Guarantees:

* the manifest is one YAML document holding one mapping with ``apiVersion`` and ``kind``, and that kind and
  apiVersion are the ones the dictionary says — otherwise a one-line :class:`~okt.codegen.errors.CodegenError`;
* the template is checked after it is built: parsed again, it equals the manifest with the two placeholders set. When
  the line-based edit cannot guarantee that (flow-style metadata, a multi-line name, an anchored name whose aliases
  mean its value: ``name: &app web`` and ``app: *app``), the template falls back to the manifest re-dumped by PyYAML,
  which loses comments but never meaning;
* trailing blanks are stripped from every line and leading or trailing ``---`` markers are dropped, so the template
  renders to exactly one document — unless the blanks belong to a value (a block scalar's line ending with spaces,
  the closing blank lines of a ``|+`` one): then every line keeps them, and the value is the manifest's;
* the child holds the manifest's text as written but for okt's expressions: a ``{{``, ``{%`` or ``{#`` of its text (an
  alerting rule's ``{{ $labels.instance }}``, a Go template's ``{{ range .Alerts }}`` and ``{{ end }}``, a shell
  script's ``${#NAME}``) is written as the expression that renders it (``{{ "{{" }}``), never run or refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import yaml

from okt.codegen import dictionary, errors
from okt.resources import template_skeleton

NAME_EXPRESSION = "{{ name }}"
NAMESPACE_EXPRESSION = "{{ namespace }}"

_EXPRESSION = re.compile(r"\{\{.*?\}\}")
_METADATA_LINE = re.compile(r"^metadata:[ \t]*(#.*)?$")
_DOCUMENT_MARKER = re.compile(r"^(---|\.\.\.)[ \t]*(#.*)?$")
_BLOCK_SCALAR = re.compile(r"^[|>]")
_OPENER = re.compile(r"\{[{%#]")
_PARSER = jinja2.Environment(autoescape=False)  # noqa: S701 - it parses YAML, and renders nothing
_GO_TEMPLATE_WORDS = frozenset(
    {"if", "else", "end", "range", "break", "continue", "with", "define", "template", "block", "nil"}
    | {"and", "or", "not", "len", "index", "slice", "print", "printf", "println", "html", "js", "urlquery", "call"}
    | {"eq", "ne", "lt", "le", "gt", "ge"}
)
"""The keywords and functions of Go's text/template (Helm, Prometheus and Alertmanager templates are Go's)."""


@dataclass(frozen=True)
class Manifest:
    """A validated manifest: its text (blank-trimmed, without document markers) and the object it describes."""

    path: Path
    text: str
    document: dict[str, Any]
    first_line: int = 1
    """The file's line number of the text's first line (leading blank lines and ``---`` markers are trimmed)."""


def read(path: Path, spec: dictionary.KindSpec) -> Manifest:
    """Read and validate the manifest at ``path`` for the kind described by ``spec``.

    Raises:
        CodegenError: the file is unreadable or not UTF-8, is not YAML, holds zero or several documents, is not a
            mapping, or its ``kind``/``apiVersion`` are missing or differ from ``spec``'s.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise errors.CodegenError(f"cannot read manifest {path}: {reason}") from exc
    text, exact, first_line = _trim(raw)
    documents = _load_all(path, text, first_line)
    exact_documents = _meaning(path, exact, first_line) if exact != text else None
    if exact_documents is not None and exact_documents != documents:
        # A block scalar's line that ends with blanks (Markdown's line break), or a kept ("|+") value's closing blank
        # lines: trimmed, the value would silently lose them.
        text, documents = exact, exact_documents
    if not documents:
        raise errors.CodegenError(f"manifest {path} is empty: expected one Kubernetes object")
    if len(documents) > 1:
        raise errors.CodegenError(
            f"manifest {path} holds {len(documents)} YAML documents: expected exactly one object "
            "(generate one wrapper per manifest)"
        )
    document = documents[0]
    if not isinstance(document, dict):
        raise errors.CodegenError(f"manifest {path} is not a Kubernetes object (expected a mapping at the top level)")
    _check_identity(path, document, spec)
    return Manifest(path=path, text=text, document=document, first_line=first_line)


def to_template(manifest: Manifest, spec: dictionary.KindSpec) -> str:
    """The manifest's text with the name and namespace replaced by Jinja2 placeholders (see the module docstring)."""
    expected = _with_placeholders(manifest.document, spec, neutral(NAME_EXPRESSION), neutral(NAMESPACE_EXPRESSION))
    edited = _edit_lines(manifest.text, spec)
    # The edit drops an anchor the name or namespace held (name: &app web): its aliases (app: *app) are then no YAML,
    # and the re-dump writes the anchored value at each of them.
    if edited is not None and _meaning(manifest.path, edited, manifest.first_line) == [expected]:
        return literal_text_escaped(edited)
    if any(is_expression(match.group(0)) for match in _EXPRESSION.finditer(manifest.text)):
        raise errors.CodegenError(
            f"manifest {manifest.path}: cannot place the name and namespace placeholders without reformatting the "
            "manifest, which would change its Jinja2 expressions: write metadata as a block (metadata:, then "
            "name: and namespace: on their own lines, with no anchor: write an anchored name's value at each of "
            "its aliases, or {{ name }} where the child's own name is meant)"
        )
    return literal_text_escaped(_redump(manifest, spec))


def is_expression(candidate: str) -> bool:
    """Whether ``candidate``, a ``{{ ... }}`` of the manifest, is okt's expression rather than text of the manifest.

    It is when Jinja2 reads it as one expression reading no word of Go's templates (``{{ end }}``, ``{{ range .Items
    }}``, which Jinja2 reads as the name ``end`` and the attribute ``range.Items``): a Prometheus rule's
    ``{{ $labels.instance }}``, a Helm or Go template's ``{{ .Values.image }}`` or ``{{ end }}`` is text. An okt
    expression reads ``cr``, ``name``, ``namespace`` or a param, and no param is named like Go's keywords and functions.
    """
    try:
        parsed = _PARSER.parse(candidate)
    except jinja2.TemplateSyntaxError:
        return False
    nodes = parsed.body[0].nodes if len(parsed.body) == 1 and isinstance(parsed.body[0], jinja2.nodes.Output) else []
    if len(nodes) != 1 or isinstance(nodes[0], jinja2.nodes.TemplateData):
        return False
    return all(node.name not in _GO_TEMPLATE_WORDS for node in parsed.find_all(jinja2.nodes.Name))


def literal_text_escaped(text: str) -> str:
    """``text`` with each ``{{``, ``{%`` and ``{#`` outside okt's expressions written as the expression that renders it
    (``{{ "{{" }}``), so Jinja2 renders the manifest's text as it is written.

    A manifest holds such text often: an alerting rule's ``{{ $labels.instance }}``, a Helm or Go template, an
    Alertmanager template, a shell script's ``${#NAME}`` in a ConfigMap. Left as it was, Jinja2 refused it (the
    generator refused the manifest), ran it (``{% if %}``, ``{{ end }}``: undefined on every render), or dropped the
    text up to the next ``#}``.
    """
    parts = re.split(f"({_EXPRESSION.pattern})", text)  # text, candidate, text, ..., text
    return "".join(
        part
        if index % 2 and is_expression(part)
        else _OPENER.sub(lambda opener: f'{{{{ "{opener.group(0)}" }}}}', part)
        for index, part in enumerate(parts)
    )


def _check_identity(path: Path, document: dict[str, Any], spec: dictionary.KindSpec) -> None:
    kind = document.get("kind")
    if not kind:
        raise errors.CodegenError(f"manifest {path} has no kind (expected kind: {spec.kind})")
    if kind != spec.kind:
        raise errors.CodegenError(f"manifest {path} is a {kind}, not a {spec.kind}: its kind must match --type")
    api_version = document.get("apiVersion")
    if not api_version:
        raise errors.CodegenError(f"manifest {path} has no apiVersion (expected apiVersion: {spec.api_version})")
    if api_version != spec.api_version:
        raise errors.CodegenError(
            f"manifest {path} uses apiVersion {api_version} but the dictionary has {spec.api_version} for {spec.kind}: "
            "fix the manifest or override the kind with --dictionary FILE"
        )
    metadata = document.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise errors.CodegenError(f"manifest {path}: metadata must be a mapping")
    if not spec.namespaced and "namespace" in metadata:
        raise errors.CodegenError(
            f"manifest {path}: {spec.kind} is cluster-scoped, remove metadata.namespace from the manifest"
        )


def _trim(raw: str) -> tuple[str, str, int]:
    """The text okt keeps of ``raw`` (see the module's guarantees), the same text with each line's trailing blanks and
    the file's trailing blank lines as ``raw`` has them, and the line of ``raw`` both start at."""
    # Only the line breaks of source text: str.splitlines() and str.rstrip() also take a value's U+2028 for a line
    # break and a no-break space for a blank, which YAML keeps as characters of the value.
    source = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [line.rstrip(" \t") for line in source]
    start = 0
    while start < len(lines) and (not lines[start] or _DOCUMENT_MARKER.match(lines[start])):
        start += 1
    # A marker followed only by comments (a file's closing ``---`` and a note) starts a second, empty document:
    # the object renders fine, but a template of two documents does not. The markers go, the comments stay.
    tail = len(lines)
    while tail > start and (
        not lines[tail - 1] or lines[tail - 1].startswith("#") or _DOCUMENT_MARKER.match(lines[tail - 1])
    ):
        tail -= 1
    kept = [
        *range(start, tail),
        *(index for index in range(tail, len(lines)) if not _DOCUMENT_MARKER.match(lines[index])),
    ]
    end = len(kept)
    while end and not lines[kept[end - 1]]:
        end -= 1
    text = "".join(lines[index] + "\n" for index in kept[:end])
    exact = "\n".join(source[index] for index in kept)
    return text, (exact if exact.endswith("\n") or not exact else exact + "\n"), start + 1


def neutral(expression: str) -> str:
    """A plain YAML scalar standing for one Jinja2 expression, the same for the same expression in any text.

    With :func:`neutralized`, it lets a template holding ``{{ ... }}`` expressions be parsed as YAML (to check it).
    """
    return "okt-jinja-" + hashlib.sha256(expression.encode()).hexdigest()[:16]


def neutralized(text: str) -> str:
    """``text`` with every ``{{ ... }}`` expression replaced by its :func:`neutral` scalar."""
    return _EXPRESSION.sub(
        lambda match: neutral(match.group(0)) if is_expression(match.group(0)) else match.group(0), text
    )


def _meaning(path: Path, text: str, first_line: int) -> list[Any] | None:
    """The documents of ``text``, or None when it is no YAML."""
    try:
        return _load_all(path, text, first_line)
    except errors.CodegenError:
        return None


def _load_all(path: Path, text: str, first_line: int) -> list[Any]:
    try:
        # Read as the rendered template will be, as kubectl reads it: a date or a time of day is its text (PyYAML's
        # date objects made the fallback's re-dump write another text).
        loaded = yaml.load_all(neutralized(text), Loader=template_skeleton.KubectlLoader)
        return [document for document in loaded if document is not None]
    except yaml.YAMLError as exc:
        raise errors.CodegenError(f"manifest {path} is not valid YAML: {errors.yaml_problem(exc, first_line)}") from exc


def _with_placeholders(
    document: dict[str, Any], spec: dictionary.KindSpec, name: str, namespace: str
) -> dict[str, Any]:
    metadata = dict(document.get("metadata") or {})
    metadata["name"] = name
    if spec.namespaced:
        metadata["namespace"] = namespace
    return {**document, "metadata": metadata}


def _edit_lines(text: str, spec: dictionary.KindSpec) -> str | None:
    """Replace or insert the name/namespace lines of the top-level ``metadata:`` block; None when it is not simple."""
    lines = text.split("\n")[:-1]  # the text ends with its last line's break (see _trim)
    start = next((index for index, line in enumerate(lines) if _METADATA_LINE.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " #"):
        end += 1
    children = [line for line in lines[start + 1 : end] if line.strip() and not line.lstrip().startswith("#")]
    indent = (len(children[0]) - len(children[0].lstrip(" "))) if children else 2
    if indent == 0:
        return None
    prefix = " " * indent
    found: dict[str, int] = {}
    for index in range(start + 1, end):
        match = re.match(rf"^{prefix}(name|namespace):(.*)$", lines[index])
        if match is None:
            continue
        value = match.group(2).strip()
        if not value or _BLOCK_SCALAR.match(value):
            return None
        found[match.group(1)] = index
    wanted = {"name": f'"{NAME_EXPRESSION}"', "namespace": f'"{NAMESPACE_EXPRESSION}"'}
    for key, index in found.items():
        lines[index] = f"{prefix}{key}: {wanted[key]}"
    if "name" not in found:
        lines.insert(start + 1, f"{prefix}name: {wanted['name']}")
        found = {key: index + 1 for key, index in found.items()}
        found["name"] = start + 1
    if spec.namespaced and "namespace" not in found:
        lines.insert(found["name"] + 1, f"{prefix}namespace: {wanted['namespace']}")
    return "\n".join(lines) + "\n"


def _redump(manifest: Manifest, spec: dictionary.KindSpec) -> str:
    name, namespace = neutral(NAME_EXPRESSION), neutral(NAMESPACE_EXPRESSION)
    document = _with_placeholders(manifest.document, spec, name, namespace)
    text = yaml.dump(
        document, Dumper=template_skeleton.KubectlDumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    return text.replace(name, f'"{NAME_EXPRESSION}"').replace(namespace, f'"{NAMESPACE_EXPRESSION}"')
