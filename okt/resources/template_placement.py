"""Placing a render's values in the slots of its skeleton's tree: each value as data, never as YAML text.

A value that is the whole of a plain (unquoted, untagged) scalar is placed as itself, in its JSON form (a string stays
that very string, a mapping the same mapping); anywhere else its text is placed, and the scalar is that string. Keys
are always strings. :func:`fill` builds each render's private object from a skeleton's tree
(:mod:`okt.resources.template_skeleton`) and the values the render recorded (:mod:`okt.resources.template_recording`).
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import enum
import functools
import json
import math
import typing
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pydantic
import pydantic_core

from okt import errors
from okt.resources import stored_numbers, template_secrets


class Structured(str):
    """What ``to_yaml`` and ``tojson`` return: the value's YAML or JSON text (for string contexts) and the value it
    stands for (placed as itself in a whole plain scalar)."""

    value: Any


def refuse_secrets(value: Any, how: str) -> None:
    """Raise :class:`~okt.resources.template_secrets.MadeText` when ``value`` is a pydantic secret (``how`` says what
    the template does with it) or holds one (a list, a mapping or a model of them, placed or made text whole).

    Its text and its JSON form are pydantic's mask, never the secret: placed in a child, it wrote ``**********`` there
    as if that were the value, and nothing said so (see :mod:`okt.resources.template_secrets`)."""
    if isinstance(value, template_secrets.ANY_SECRET):
        raise template_secrets.MadeText(template_secrets.kind_of(value), how)
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int or kind is float or kind is bool or item is None or id(item) in seen:
            continue
        seen.add(id(item))
        children: list[Any] = []
        if isinstance(item, pydantic.BaseModel):
            children.extend(item.__dict__.values())
            children.extend((item.__pydantic_extra__ or {}).values())
        elif isinstance(item, Mapping):
            children.extend(item.keys())
            children.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            children.extend(item)
        for child in children:
            if isinstance(child, template_secrets.ANY_SECRET):
                raise template_secrets.MadeText(template_secrets.kind_of(child), f"inside the {kind.__name__} {how}")
        stack.extend(children)


KEYS_MADE_EQUAL = (
    'a mapping two of whose keys are one string as JSON writes keys (1 and "1", true and "true", null and '
    '"null"): a child\'s keys are strings, and one of the two values would be lost'
)
NOT_FINITE = "not a finite number (NaN or an infinity): a number JSON cannot write, which no child can hold"


def _place_stored_numbers(data: Any) -> None:
    """Put the numbers the API server stores (:func:`okt.resources.stored_numbers.stored_number`) in place of
    ``data``'s (a model's JSON dump)."""
    stack = [data]
    while stack:
        item = stack.pop()
        entries = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in entries:
            kind = type(child)
            if kind is int or kind is float:
                item[key] = stored_numbers.stored_number(child)
            elif kind is dict or kind is list:
                stack.append(child)


def json_data(value: Any) -> Any:
    """A private, JSON-shaped copy of a value placed with ``to_yaml`` (its structure comes from its own type).

    Raises a ValueError for NaN or an infinity (``| float`` of ``"nan"``, a product past the largest float, a model's
    ``float`` field given ``"inf"``, whatever the model's JSON form writes for it): JSON cannot write them, and the
    child's checksum refused them at each reconcile. Raises one too for a mapping two of whose keys are one string
    as JSON writes keys (``1`` and ``"1"``, ``true`` and ``"true"``, of a dict the template built from a custom
    resource's values): the one written last took the other's place, and the other's value was lost, silently."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if -stored_numbers.INT64 <= value < stored_numbers.INT64 else stored_numbers.stored_number(value)
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(NOT_FINITE)
        return stored_numbers.stored_number(value)
    if isinstance(value, Mapping):
        data = {json_key(json_data(key)): json_data(item) for key, item in value.items()}
        if len(data) != len(value):
            raise ValueError(KEYS_MADE_EQUAL)
        return data
    if isinstance(value, list | tuple):
        return [json_data(item) for item in value]
    if isinstance(value, pydantic.BaseModel):
        # Its own values are checked, not only its JSON form: a serializer (or a pydantic honouring the model's
        # ser_json_inf_nan there, as its JSON text does) writes null or a string for NaN, placed silently.
        python = value.model_dump(by_alias=True, exclude_none=True)
        _refuse_not_finite(python)
        data = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        if _has_sets(type(value)):
            _sort_sets(python, data)
        _refuse_not_finite(data)
        _place_stored_numbers(data)
        return data
    if isinstance(value, set | frozenset):
        return in_order([json_data(item) for item in value])
    if isinstance(value, str):
        return str.__str__(value)  # an enum's or a subclass's plain string, as JSON would write it
    if isinstance(value, bool | int | float):
        return json_data(json.loads(json.dumps(value)))  # a subclass's (an IntEnum's) plain number
    try:  # anything else (an enum, a set, a date, a Decimal...): its JSON form, as pydantic writes it
        return json_data(pydantic_core.to_jsonable_python(value, by_alias=True, exclude_none=True))
    except pydantic_core.PydanticSerializationError as exc:
        raise errors.MutationError(f"template error: cannot place a {kind.__name__} as data: {exc}") from exc


def refuse_not_finite_in(model: pydantic.BaseModel, chosen: Mapping[str, Any]) -> None:
    """Raise a ValueError when the fields of a model that a dump with ``chosen`` arguments (``include``,
    ``exclude``...) writes hold a float NaN or infinity (pydantic's ``model_dump_json()`` writes ``null`` for it, its
    ``model_dump(mode="json")`` the float itself)."""
    arguments = {name: chosen[name] for name in _CHOOSING if name in chosen}
    _refuse_not_finite(model.model_dump(**arguments))


_CHOOSING = ("include", "exclude", "exclude_unset", "exclude_defaults", "exclude_none")


def _refuse_not_finite(data: Any) -> None:
    """Raise a ValueError for a float NaN or infinity in a model's dump (Python's or JSON's)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(NOT_FINITE)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)


def in_order(items: Iterable[Any]) -> list[Any]:
    """A set's items in one order, whatever the set's history: numbers by value, then strings, then the rest by their
    JSON text. A set iterates in the order its hashes and insertions made (``{0, 8}`` built from ``[8, 0]`` gives 8
    first), and a set of strings in another order in each process (hash randomization): placed as it iterated, the
    same desired child rendered otherwise after a restart, and its checksum with it."""
    return sorted(items, key=_order)


class OrderedSet(frozenset[Any]):
    """A set as a template reads it: its own membership and size, its items in :func:`in_order`'s order (a loop, a
    join, its text, its placement)."""

    order: list[Any]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.order)

    def __repr__(self) -> str:  # a set's text, as Python writes one, in that order
        return "{" + ", ".join(map(repr, self.order)) + "}" if self.order else "set()"


def ordered_set(items: set[Any] | frozenset[Any]) -> OrderedSet:
    ordered = OrderedSet(items)
    ordered.order = in_order(items)
    return ordered


def _order(item: Any) -> tuple[int, Any]:
    if isinstance(item, int | float) and not isinstance(item, bool):
        return (0, item)
    if isinstance(item, str):
        return (1, item)
    try:
        return (2, json.dumps(json_data(item), sort_keys=True))
    except (TypeError, ValueError, errors.MutationError):
        return (3, type(item).__name__)


@functools.cache
def _has_sets(model: type[pydantic.BaseModel]) -> bool:
    """Whether a model's fields (its nested models' too) may hold a set."""
    stack: list[Any] = [field.annotation for field in model.model_fields.values()]
    seen: set[int] = set()
    while stack:
        annotation = stack.pop()
        if id(annotation) in seen:
            continue
        seen.add(id(annotation))
        origin = typing.get_origin(annotation) or annotation
        if isinstance(origin, type) and issubclass(origin, set | frozenset | collections.abc.Set):
            return True
        if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            stack.extend(field.annotation for field in annotation.model_fields.values())
        stack.extend(typing.get_args(annotation))
    return False


def _sort_sets(python: Any, data: Any) -> None:
    """Put the lists of ``data`` (a model's JSON dump) that are sets in ``python`` (its Python dump) in order."""
    if isinstance(python, set | frozenset) and isinstance(data, list):
        data[:] = in_order(data)
    elif isinstance(python, Mapping) and isinstance(data, dict):
        for key, item in python.items():
            if type(key) is str and key in data:
                _sort_sets(item, data[key])
    elif isinstance(python, list | tuple) and isinstance(data, list) and len(python) == len(data):
        for item, datum in zip(python, data, strict=True):
            _sort_sets(item, datum)


def json_key(key: Any) -> str:
    """A mapping key as JSON writes it (Kubernetes objects only have string keys)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return str(key)


class Unplaceable(Exception):
    """A value that cannot stand in its slot; ``path`` is filled in (innermost first) on the way out."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line  # the template line that recorded the value, when it is known
        self.path: list[str | int] = []

    def where(self) -> str:
        text = ""
        for step in reversed(self.path):
            text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
        return text or "(root)"


@dataclasses.dataclass(frozen=True)
class Slot:
    """A scalar holding expressions: its literal parts and expression indices, and whether it is plain (unquoted,
    untagged: a lone expression there places its value as itself)."""

    parts: tuple[str | int, ...]
    plain: bool
    lone: int | None = dataclasses.field(init=False, repr=False, compare=False)
    """The index of the one value the scalar holds with no text beside it, or None: known once, when the skeleton
    is parsed, rather than at each render of every child."""

    def __post_init__(self) -> None:
        first = self.parts[0]
        object.__setattr__(self, "lone", first if len(self.parts) == 1 and isinstance(first, int) else None)

    def text(self, values: list[Any]) -> str:
        if self.lone is not None:
            value = values[self.lone]
            if type(value) is template_secrets.TemplateSecret:
                return value.placed_text()  # a secret the scalar holds alone: its value
        text = ""
        for part in self.parts:
            if isinstance(part, str):
                text += part
            elif type(value := values[part]) is template_secrets.TemplateSecret:
                raise Unplaceable(
                    str(template_secrets.MadeText(value.kind, "joined with other text in one scalar")),
                    line=getattr(values, "lines", {}).get(part),
                )
            else:
                text += _text(value)
        return text

    def written(self) -> str:
        """The scalar as the template writes it, ``{{ }}`` for each value: what a message names, never the values
        (a template may have read one out of a secret)."""
        return "".join("{{ }}" if isinstance(part, int) else part for part in self.parts)

    def value(self, values: list[Any]) -> Any:
        if self.plain and self.lone is not None:
            return _placed(values[self.lone])
        # Quoted, block, tagged !!str, or values joined with text: a string, whatever YAML would read in its text.
        return self.text(values)

    def key(self, values: list[Any]) -> str:
        if self.lone is not None:
            value = values[self.lone]
            if type(value) is template_secrets.TemplateSecret:
                raise Unplaceable(
                    str(template_secrets.MadeText(value.kind, "placed as a mapping key")),
                    line=getattr(values, "lines", {}).get(self.parts[0]),
                )
            if type(value) is Structured:
                if not isinstance(value.value, str):
                    raise Unplaceable(f"a mapping key must be a string, got a {type(value.value).__name__}")
                return value.value
        return self.text(values)


def _text(value: Any) -> str:
    """A value's text, as Jinja2 writes it (``to_yaml``'s is its YAML text; an enum's, its value's)."""
    if type(value) is str:
        return value
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _placed(value: Any) -> Any:
    """What a whole plain scalar holding one value holds: the value itself, in its JSON form — never what YAML reads
    in its text (the string ``"yes"`` stays that string). An object with no JSON form places its text."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int and -stored_numbers.INT64 <= value < stored_numbers.INT64:
        return value
    if kind is template_secrets.TemplateSecret:
        value = value.placed()
        kind = type(value)
        if kind is not int and kind is not float:
            return value
    try:
        return json_data(value.value if kind is Structured else value)
    except ValueError as exc:
        raise Unplaceable(str(exc)) from None
    except errors.MutationError:
        if kind is Structured:
            raise
        return str(value)


_LITERALS = frozenset({str, int, float, bool, type(None)})
"""The types of a skeleton's literal scalars, placed as they are: most of a template's values, so :func:`fill` places
them inside its loops rather than by a call each."""


def fill(value: Any, values: list[Any]) -> Any:
    kind = type(value)
    if kind is dict:
        result: dict[str, Any] = {}
        keyed = False  # a key placed from values, which may equal another key once placed
        for key, item in value.items():
            if type(key) is str:
                placed = key
            else:
                placed, keyed = key.key(values), True
            if type(item) in _LITERALS:
                result[placed] = item
                continue
            try:
                result[placed] = fill(item, values)
            except Unplaceable as exc:
                exc.path.append(key if type(key) is str else key.written())
                raise
        # The skeleton's own keys are distinct (YAML's mapping): only one placed from values can make two equal.
        if keyed and len(result) != len(value):
            raise Unplaceable(_duplicate(value, values))
        return result
    if kind is list:
        filled = []
        for index, item in enumerate(value):
            if type(item) in _LITERALS:
                filled.append(item)
                continue
            try:
                filled.append(fill(item, values))
            except Unplaceable as exc:
                exc.path.append(index)
                raise
        return filled
    if kind is Slot:
        return value.value(values)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)  # a literal YAML-only value (a date, a set...): never shared between renders


def _duplicate(mapping: dict[Any, Any], values: list[Any]) -> str:
    """What makes two keys of ``mapping`` equal once the values are placed: a key the template writes is named, a key
    placed from values only as the template writes it (a template may have read a value out of a secret)."""
    seen: dict[str, Any] = {}
    for key in mapping:
        placed = key if type(key) is str else key.key(values)
        if placed in seen:
            other = seen[placed]
            if type(key) is str or type(other) is str:
                return f"the key {placed!r} appears twice once the values are placed"
            return (
                f"two keys placed from values ({other.written()!r} and {key.written()!r}) are equal once the values "
                "are placed"
            )
        seen[placed] = key
    return "two keys are equal once the values are placed"
