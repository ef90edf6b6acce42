"""Rendering a resource's Jinja2 YAML template into the object it describes, fast.

Why this exists: every reconcile renders its children's templates, and parsing the rendered YAML was the largest CPU
cost left in okt's first pass over new objects (each object renders different names, so no cache helps). Most
templates only put ``{{ expressions }}`` inside scalar values; for those the YAML structure never changes, so it is
parsed once. :class:`_Plan` keeps the parsed tree with a :class:`_Slot` wherever an expression sits, and a render
evaluates the expressions (one Jinja call) and fills the slots — typing each value the way YAML would have.

Guarantees:

* the result is exactly what rendering the whole text and parsing it with PyYAML's safe loader gives: whenever a
  rendered value could mean something else in YAML (an indicator character, ``: ``, `` #``, a flow bracket, a quote
  or backslash inside a quoted scalar, a line break, a timestamp...), that render falls back to the text path;
* templates the plan cannot represent — Jinja blocks or comments (``{% %}``, ``{# #}``), whitespace control, YAML
  tags, merge keys, anchors and aliases, block scalars holding an expression — always take the text path;
* the text path keeps its cache of recently parsed texts (compact JSON, decoded into a private copy);
* errors are one-line :class:`okt.errors.MutationError` messages, the same on both paths.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

import jinja2
import yaml

from okt import errors

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)  # noqa: S701 - YAML, not HTML
_ENV.filters["to_yaml"] = lambda value: yaml.safe_dump(value, default_flow_style=True).strip()
_compile_lock = threading.Lock()

_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PLACEHOLDER = "oktslot{}x"
_PLACEHOLDER_RE = re.compile(r"oktslot(\d+)x")
_TEXT_ONLY_MARKS = ("{%", "{#", "{{-", "-}}", "!", "<<", "oktslot")
_SEPARATOR = "\x1e"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null"))
_INDICATORS = frozenset("?:,[]{}#&*!|>'\"%@`")
_FLOW = frozenset(",[]{}")
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
# Scalar constructors called directly: construct_object would remember every node (a leak) and is not thread-safe.
_SCALARS = {
    _STR: _CONSTRUCTOR.construct_yaml_str,
    _INT: _CONSTRUCTOR.construct_yaml_int,
    _FLOAT: _CONSTRUCTOR.construct_yaml_float,
    _BOOL: _CONSTRUCTOR.construct_yaml_bool,
    _NULL: _CONSTRUCTOR.construct_yaml_null,
}


@functools.lru_cache(maxsize=512)
def _compiled(template: str) -> jinja2.Template:
    with _compile_lock:
        return _ENV.from_string(template)


class _Fallback(Exception):
    """This template, or this render of it, must take the text path."""


@dataclasses.dataclass(frozen=True)
class _Slot:
    """A scalar (key or value) holding expressions: its literal parts and expression indices, and its YAML style."""

    parts: tuple[str | int, ...]
    style: str | None

    def fill(self, rendered: list[str]) -> Any:
        values = [rendered[part] for part in self.parts if isinstance(part, int)]
        text = "".join(rendered[part] if isinstance(part, int) else part for part in self.parts)
        if self.style == '"':
            if any('"' in v or "\\" in v or not v.isprintable() for v in values):
                raise _Fallback
            return text
        if self.style == "'":
            if any("'" in v or not v.isprintable() for v in values):
                raise _Fallback
            return text
        return _plain(text)


def _plain(text: str) -> Any:
    """What a plain YAML scalar ``text`` loads as, or :class:`_Fallback` when it might not be one scalar."""
    if not text:
        raise _Fallback  # nothing at all: a null value, a broken key or flow entry, depending on where it stands
    first = text[0]
    unsafe = (
        first in _INDICATORS
        or (first == "-" and (len(text) == 1 or text[1] == " "))
        or not text.isprintable()
        or text != text.strip()
        or ": " in text
        or " #" in text
        or text.endswith(":")
        or any(c in _FLOW for c in text)
    )
    if unsafe:
        raise _Fallback
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag == _STR:
        return text
    construct = _SCALARS.get(tag)
    if construct is None:
        raise _Fallback  # a timestamp, "=", ...: left to the text path
    return construct(yaml.ScalarNode(tag, text))


class _Plan:
    """A template parsed once: the tree with slots, and the one Jinja template rendering all its expressions."""

    def __init__(self, template: str) -> None:
        if any(mark in template for mark in _TEXT_ONLY_MARKS):
            raise _Fallback
        expressions: list[str] = []

        def placeholder(match: re.Match[str]) -> str:
            expressions.append(match.group(1))
            return _PLACEHOLDER.format(len(expressions) - 1)

        text = _EXPRESSION.sub(placeholder, template)
        if not expressions or "{{" in text or "}}" in text:
            raise _Fallback
        try:
            node = yaml.compose(text, Loader=_SafeLoader)
        except yaml.YAMLError as exc:
            raise _Fallback from exc
        if not isinstance(node, yaml.MappingNode):
            raise _Fallback
        self._seen: set[int] = set()
        self.tree = self._build(node)
        self.expressions = _compiled(_SEPARATOR.join("{{" + e + "}}" for e in expressions))
        self.count = len(expressions)

    def _build(self, node: yaml.Node) -> Any:
        if id(node) in self._seen:
            raise _Fallback  # an alias: the same node twice
        self._seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            built = {self._build(key): self._build(value) for key, value in node.value}
            if not all(isinstance(key, str | _Slot) for key in built):
                raise _Fallback  # a number as a key: the text path's JSON cache makes it a string
            return built
        if isinstance(node, yaml.SequenceNode):
            return [self._build(item) for item in node.value]
        if not isinstance(node, yaml.ScalarNode):
            raise _Fallback
        if not _PLACEHOLDER_RE.search(node.value):
            construct = _SCALARS.get(node.tag)
            if construct is None:
                raise _Fallback  # a timestamp, binary data...: left to the text path
            return construct(node)
        style = node.style or None  # the C composer marks plain scalars with ""
        if style not in (None, "'", '"'):
            raise _Fallback  # an expression inside a block scalar
        pieces = _PLACEHOLDER_RE.split(node.value)  # literal, index, literal, index, ..., literal
        parts = tuple(int(piece) if i % 2 else piece for i, piece in enumerate(pieces) if piece)
        return _Slot(parts, style)

    def render(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The object for ``variables``; :class:`_Fallback` when a value needs the text path."""
        rendered = self.expressions.render(**variables).split(_SEPARATOR)
        if len(rendered) != self.count:
            raise _Fallback
        result: dict[str, Any] = _fill(self.tree, rendered)
        return result


def _fill(value: Any, rendered: list[str]) -> Any:
    kind = type(value)
    if kind is dict:
        return {_key(key, rendered): _fill(item, rendered) for key, item in value.items()}
    if kind is list:
        return [_fill(item, rendered) for item in value]
    if kind is _Slot:
        return value.fill(rendered)
    return value


def _key(key: str | _Slot, rendered: list[str]) -> str:
    if type(key) is str:
        return key
    filled = key.fill(rendered)  # type: ignore[union-attr]
    if not isinstance(filled, str):
        raise _Fallback  # keys are strings in JSON (and through the text path's cache)
    return filled


@functools.lru_cache(maxsize=512)
def _plan(template: str) -> _Plan | None:
    try:
        return _Plan(template)
    except _Fallback:
        return None


class _ParsedCache:
    """Rendered YAML text -> the object as compact JSON, for the few most recent texts.

    Parsing YAML costs about half a millisecond per child; an object is typically reconciled again moments later
    with the same rendered text (its children's own events), and decoding JSON is some thirty times cheaper. Keys are
    digests and values compact JSON, so the cache stays small; the decoded object is always a private copy.
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._entries: collections.OrderedDict[bytes, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()

    def load(self, text: str) -> Any:
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        with self._lock:
            packed = self._entries.get(key)
            if packed is not None:
                self._entries.move_to_end(key)
        if packed is not None:
            return json.loads(packed)
        loaded = yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - the safe loader (C version when available)
        try:
            packed = json.dumps(loaded, separators=(",", ":")).encode()
        except (TypeError, ValueError):
            return loaded  # YAML-only values (dates...): not cached, the server would refuse them anyway
        with self._lock:
            self._entries[key] = packed
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return json.loads(packed)


_parsed = _ParsedCache()


def render_text(template: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Render the whole text with Jinja2 and parse it as YAML (every template can take this path)."""
    try:
        text = _compiled(template).render(**variables)
    except jinja2.TemplateError as exc:
        raise errors.MutationError(f"template error: {exc}") from exc
    try:
        loaded = _parsed.load(text)
    except yaml.YAMLError as exc:
        raise errors.MutationError(f"the rendered template is not valid YAML: {exc}") from exc
    if not isinstance(loaded, dict):
        raise errors.MutationError("the rendered template is not a YAML mapping")
    return loaded


def render_template(template: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Render a Jinja2 YAML template into one object; errors say what went wrong in one line."""
    plan = _plan(template)
    if plan is None:
        return render_text(template, variables)
    try:
        return plan.render(variables)
    except _Fallback:  # this render holds a value only the YAML parser can type
        return render_text(template, variables)
    except jinja2.TemplateError as exc:
        raise errors.MutationError(f"template error: {exc}") from exc
