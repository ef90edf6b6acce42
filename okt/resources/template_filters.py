"""The filters okt's templates read differently from Jinja2's: ``to_yaml`` and ``tojson`` place a value with its own
structure, ``indent`` places it unchanged, ``int`` and ``float`` refuse a value that is no number, ``string`` a
pydantic secret, ``attr`` names a missing attribute by its type, the filters giving items one at a time give a list
(:data:`LISTED`), and ``random`` (with the ``lipsum`` global) is refused: a template renders the same child for the same
custom resource.

Each is Jinja2's filter of that name where okt's placement of values as data changes what it should give (see
:mod:`okt.resources.templating`); the filters that bound what a value may build are in
:mod:`okt.resources.template_limits`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import jinja2
import jinja2.filters
import yaml

from okt.resources import template_limits, template_placement


def to_yaml(value: Any) -> template_placement.Structured:
    template_placement.refuse_secrets(value, "made YAML text by | to_yaml")
    data = template_placement.json_data(value)
    text = yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=1 << 30).strip()
    structured = template_placement.Structured(text.removesuffix("\n...").strip())
    structured.value = data
    return structured


def to_json(value: Any, indent: int | None = None) -> template_placement.Structured:
    """Jinja2's ``tojson``, whose text YAML would read as the value: a whole plain scalar takes that value (``"web"``
    without its quotes, a mapping as a mapping), a string context the JSON text."""
    template_placement.refuse_secrets(value, "made JSON text by | tojson")
    data = template_placement.json_data(value)
    structured = template_placement.Structured(template_limits.json_text(data, indent))
    structured.value = data
    return structured


def indent(value: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> Any:
    """Jinja2's ``indent``, placing the value unchanged.

    In a text template ``| indent(n)`` moves a multi-line value's later lines to the block it is written in, and
    YAML takes those ``n`` columns off again. okt places the value itself, so the columns it added stayed in it (an
    embedded file's lines moved right), and ``| to_yaml | indent(n)`` turned a mapping into its text."""
    return value


_NO_DEFAULT: Any = object()


def _no_number(value: Any, filter_name: str, zero: str) -> ValueError:
    # The value's type, never its text: the message goes to the Ready condition, and a template may have read the
    # value out of a secret (``cr.spec.pin.get_secret_value() | int``); the template line says which value it was.
    return ValueError(
        f"a {type(value).__name__} that is no number (| {filter_name}({zero}) would place {zero} instead)"
    )


def to_int(value: Any, default: Any = _NO_DEFAULT, base: int = 10) -> Any:
    """Jinja2's ``int``, failing on a value that is no number: its silent ``0`` would write ``replicas: 0`` for a
    custom resource's ``size: three``. An explicit default (``| int(1)``) is still taken instead."""
    number = jinja2.filters.do_int(value, _NO_DEFAULT, base)
    if number is not _NO_DEFAULT:
        return number
    if default is _NO_DEFAULT:
        raise _no_number(value, "int", "0")
    return default


def to_float(value: Any, default: Any = _NO_DEFAULT) -> Any:
    """Jinja2's ``float``, failing on a value that is no number unless a default is given (see :func:`to_int`)."""
    number = jinja2.filters.do_float(value, _NO_DEFAULT)
    if number is not _NO_DEFAULT:
        return number
    if default is _NO_DEFAULT:
        raise _no_number(value, "float", "0.0")
    return default


def to_string(value: Any) -> str:
    """Jinja2's ``string``, refusing a pydantic secret: its text is pydantic's mask, never the secret."""
    template_placement.refuse_secrets(value, "made text by | string")
    return value if isinstance(value, str) else str(value)  # a string (Markup too) as it is, as Jinja2's keeps it


RANDOM = (
    "| random and lipsum give another value at each render: the child's checksum would change at each reconcile, and "
    "okt would rewrite it each time; draw a value once and keep it (a Secret the operator creates when missing), or "
    "derive it from the custom resource"
)


def random(*args: Any, **kwargs: Any) -> Any:
    """Jinja2's ``random`` filter and ``lipsum``, refused: a template renders the same child for the same custom
    resource (see :data:`RANDOM`)."""
    raise jinja2.exceptions.TemplateRuntimeError(RANDOM)


@jinja2.pass_environment
def attr(environment: jinja2.Environment, obj: Any, name: Any) -> Any:
    """Jinja2's ``attr``, naming a missing attribute by its type, never its text: a template may read the name out of a
    secret (``| attr(cr.spec.field)``), and the message goes to the Ready condition."""
    value = jinja2.filters.do_attr(environment, obj, name)
    if isinstance(value, jinja2.Undefined):
        hint = f"{type(obj).__name__!r} object has no attribute for that {type(name).__name__}"
        return environment.undefined(hint, obj=obj, name=name)
    return value


LISTED = ("items", "map", "select", "reject", "selectattr", "rejectattr", "unique", "batch", "slice", "reverse")
"""Jinja2's filters that give an iterator (a generator, ``reversed``), read by okt's templates as a list."""


def listed(filter_: Callable[..., Any]) -> Callable[..., Any]:
    """A Jinja2 filter whose iterator is read at once into a list.

    Jinja2 hands a template the iterator itself. Placed in a string, its text, ``<generator object sync_do_map at
    0x7f...>``, held its address, another at each render: the child's checksum changed at each reconcile, and okt
    rewrote it each time. Its truth was always true (``{% if hosts | select(...) %}``), its ``| length`` a TypeError,
    and a filter's error waited for whatever read it: ``| items`` of a value that is no mapping failed in the
    placement, naming no line, or placed that text. A list has its items' text, truth and length, and the filter's
    error is raised where the template calls it."""

    @functools.wraps(filter_)  # keeps Jinja2's pass_context / pass_environment mark
    def read_at_once(*args: Any, **kwargs: Any) -> Any:
        result = filter_(*args, **kwargs)
        return list(result) if isinstance(result, Iterator) else result

    return read_at_once
