"""A field of the spec given under two of its names, with different values: which one is meant is not the model's to
guess.

Why this exists: a model with ``populate_by_name`` (``validate_by_name``) reads a field by its alias and by its Python
name, and an ``AliasChoices`` by each choice; ``okt gen crd`` declares each of them, so the API server stores all.
Given two of them with different values (``replicaCount: 2`` and ``replica_count: 3``), pydantic takes the first it
looks up (the alias) and drops the other without a word: the object says 3 where the operator runs 2.
:func:`given_twice` finds each such field, so that the spec is an ``InvalidSpec`` naming both keys (Ready False, and
refused at admission when the webhook validates it), as the API server refuses a key given twice in JSON.

Guarantees: the walk follows the data: a field's value is read as its annotation says (a nested model, a list, a
tuple, a set or a mapping of them, ``Optional``), through the key the model reads, so a nested model's fields given
twice are found too. Names given twice with the same value are one value, not refused. Values are compared, never
quoted: the message names the keys only (a Secret's value would otherwise land in the condition, an Event and the log).

Cost: :func:`given_twice` runs at every reconcile (every spec is read through it). What a model can hold twice is
read from the model once: a model none of whose fields, nested models' included, has two names reads nothing of the
data, and a field whose value holds no such model is not walked into.

Caveats: a union of several models (a discriminated union) is not walked into — which member reads the value is
pydantic's to decide; an ``AliasPath`` into a nested value is no top-level name.
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

import pydantic

from okt import errors

DUPLICATE = "FieldValueDuplicate"
"""The API's cause type of a value given twice (``k8s.io/apimachinery``'s ``field.ErrorTypeDuplicate``)."""

_SEQUENCES = (list, set, frozenset, collections.abc.Sequence, collections.abc.Set, collections.abc.MutableSequence)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def given_twice(model: type[pydantic.BaseModel], data: Any, prefix: str = "spec") -> list[errors.StatusCause]:
    """One cause per name a field of ``data`` (read as ``model``, at ``prefix``) is given under besides the one the
    model reads, with another value; the cause's field is that name's path, its message names the one read. In the
    model's order, a nested model's causes after its parent's field."""
    causes: list[errors.StatusCause] = []
    if _may_repeat(model):
        _walk_model(model, data, prefix, causes)
    return causes


def names(model: type[pydantic.BaseModel], name: str, field: pydantic.fields.FieldInfo) -> list[str]:
    """The top-level keys ``model`` reads ``field`` by, first the one it looks up first (its aliases in order, then
    its Python name when the model reads fields by name too)."""
    config = model.model_config
    by_alias = config.get("validate_by_alias", True) is not False
    by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
    alias = field.validation_alias if field.validation_alias is not None else field.alias
    keys: list[str] = []
    if by_alias and alias is not None:
        choices = alias.choices if isinstance(alias, pydantic.AliasChoices) else [alias]
        for choice in choices:
            key = choice if isinstance(choice, str) else choice.path[0] if len(choice.path) == 1 else None
            if isinstance(key, str):
                keys.append(key)
    if by_name or alias is None or not by_alias:
        keys.append(name)
    return list(dict.fromkeys(keys))


@functools.cache
def _read_by(model: type[pydantic.BaseModel]) -> tuple[tuple[tuple[str, ...], Any, bool], ...]:
    """Each field's names (:func:`names`), annotation, and whether its value may hold a model with a field given twice
    (walked into), read from ``model`` once, not at every reconcile."""
    return tuple(
        (
            tuple(names(model, name, field)),
            field.annotation,
            any(_may_repeat(inner) for inner in _models_in(field.annotation)),
        )
        for name, field in model.model_fields.items()
    )


@functools.cache
def _may_repeat(model: type[pydantic.BaseModel]) -> bool:
    """Whether a field of ``model``, or of a model its fields hold as :func:`_walk` follows them, has two names."""
    seen = {model}
    pending = [model]
    while pending:
        current = pending.pop()
        for name, field in current.model_fields.items():
            if len(names(current, name, field)) > 1:
                return True
            for inner in _models_in(field.annotation):
                if inner not in seen:
                    seen.add(inner)
                    pending.append(inner)
    return False


def _models_in(annotation: Any) -> list[type[pydantic.BaseModel]]:
    """The models :func:`_walk` follows a value of ``annotation`` into (not those their own fields hold)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0])
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    if origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in args if arg is not type(None)]
        return _models_in(members[0]) if len(members) == 1 else []
    if origin is tuple:
        return [model for arg in args if arg is not Ellipsis for model in _models_in(arg)]
    if origin in _SEQUENCES and args:
        return _models_in(args[0])
    if origin in _MAPPINGS and len(args) == 2:
        return _models_in(args[1])
    return []


def _walk_model(model: type[pydantic.BaseModel], data: Any, path: str, causes: list[errors.StatusCause]) -> None:
    if not isinstance(data, Mapping):
        return
    for keys, annotation, walked in _read_by(model):
        if len(keys) == 1 and not walked:
            continue  # one name, and no model with a field given twice below it: nothing to find
        given = [key for key in keys if key in data]
        if not given:
            continue
        read = given[0]
        for other in given[1:]:
            if data[other] != data[read]:
                said = (
                    f"the same field as {_path(path, read)}, given another value: give it under one name "
                    f"({model.__name__} reads {read!r} and would drop {other!r})"
                )
                causes.append(errors.StatusCause(DUPLICATE, said, _path(path, other)))
        if walked:
            _walk(annotation, data[read], _path(path, read), causes)


def _walk(annotation: Any, value: Any, path: str, causes: list[errors.StatusCause]) -> None:
    """Follow ``value`` as ``annotation`` says, into the models it holds."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        _walk(args[0], value, path, causes)
    elif isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        _walk_model(annotation, value, path, causes)
    elif origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in args if arg is not type(None)]
        if len(members) == 1:  # Optional[X]: X it is; of several members, pydantic decides which reads it
            _walk(members[0], value, path, causes)
    elif origin is tuple and isinstance(value, list | tuple):
        for index, item in enumerate(value):
            item_type = (
                args[0] if len(args) == 2 and args[1] is Ellipsis else args[index] if index < len(args) else None
            )
            if item_type is not None:
                _walk(item_type, item, f"{path}[{index}]", causes)
    elif origin in _SEQUENCES and args and isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _walk(args[0], item, f"{path}[{index}]", causes)
    elif origin in _MAPPINGS and len(args) == 2 and isinstance(value, Mapping):
        for key, item in value.items():
            _walk(args[1], item, _path(path, str(key)), causes)


def _path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
