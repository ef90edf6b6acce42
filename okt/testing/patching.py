"""How the API server changes an object: merge patches, JSON patches, the fields an apply merges, owns and removes.

Why this exists: :class:`okt.testing.FakeClient` must answer a write the way the API server would, and these rules
are pure functions over plain dicts — pinned on their own by unit tests, and small enough to read against the RFCs.

Guarantees: no function mutates its arguments; a failed JSON patch ``test`` (or a path that does not exist, but for
a ``replace`` of an object's key) raises :class:`okt.errors.Invalid`, as the API server answers 422.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from okt import errors
from okt.resources import list_keys

_ABSENT = object()


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` deletes a key, anything else (lists included) replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = copy.deepcopy(dict(target)) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


Path: TypeAlias = tuple["str | Item", ...]
"""Where a field is in an object: the names of the mappings it is in, and for an item of a keyed list its
:class:`Item` — ``("spec", "ports", Item(...), "name")``."""

SET = list_keys.Keyed(())
"""A list whose items are their own keys (``x-kubernetes-list-type: set``, such as ``metadata.finalizers``)."""

METADATA: list_keys.Schema = {"finalizers": SET, "ownerReferences": list_keys.Keyed(("uid",))}
"""The keyed lists of every object's ``metadata``, whatever its kind."""


@dataclasses.dataclass(frozen=True)
class Item:
    """An item of a keyed list in a field's :data:`Path`: the values of its key fields, as the API server's
    managedFields name it (``k:{"port":80,"protocol":"TCP"}``), or the item itself in a set (``v:"a/b"``)."""

    key: tuple[tuple[str, Any], ...]

    def __repr__(self) -> str:
        if len(self.key) == 1 and not self.key[0][0]:
            return f"v:{json.dumps(self.key[0][1])}"
        return f"k:{json.dumps(dict(self.key), separators=(',', ':'))}"


def schema_of(api_version: str, kind: str) -> list_keys.Schema:
    """The keyed lists of an object of ``kind``: its metadata's (:data:`METADATA`) and those of
    :data:`okt.resources.list_keys.KINDS`; every other list is atomic."""
    return {**(list_keys.schema_of(api_version, kind) or {}), "metadata": METADATA}


def apply_merge(target: Any, applied: Any, schema: list_keys.Schema | None = None) -> Any:
    """How server-side apply merges an applied object into a stored one: objects merge key by key and anything else
    replaces, as in a merge patch — but a ``null`` is a value like any other, stored as it is (what an apply removes
    is what its manager no longer applies: see :func:`without`).

    A list ``schema`` names (see :func:`schema_of`) merges item by item: an applied item is merged into the stored item
    of the same key, the other stored items stay where they are, and new items are appended (:func:`_merge_items`).
    A keyed list whose items cannot be told apart (an item without its key, two items of one key: the API server
    refuses the apply) replaces, as every other list does.
    """
    if not isinstance(applied, Mapping):
        return copy.deepcopy(applied)
    result = copy.deepcopy(dict(target)) if isinstance(target, Mapping) else {}
    for key, value in applied.items():
        inner = (schema or {}).get(key)
        if isinstance(inner, list_keys.Keyed):
            merged = _merge_items(result.get(key), value, inner)
            result[key] = merged if merged is not None else copy.deepcopy(value)
        else:
            result[key] = apply_merge(result.get(key), value, inner)
    return result


def _merge_items(stored: Any, applied: Any, keyed: list_keys.Keyed) -> list[Any] | None:
    """The items of a keyed list after an apply, or None where either list's items cannot be keyed: the stored items
    in their order, each merged with the applied item of its key, then the new items in the applied order (as the
    API server okt is tested on orders them; newer ones put the applied items in the applied order among the
    others)."""
    stored_items = stored if isinstance(stored, list) else []
    stored_keys, applied_keys = _keys(stored_items, keyed), _keys(applied, keyed)
    if stored_keys is None or applied_keys is None:
        return None
    new = dict(zip(applied_keys, applied, strict=True))

    def merged(old: Any, key: Item) -> Any:
        return apply_merge(old, new[key], keyed.items) if keyed.fields else copy.deepcopy(new[key])

    result = [
        merged(item, key) if key in new else copy.deepcopy(item)
        for item, key in zip(stored_items, stored_keys, strict=True)
    ]
    return result + [merged(None, key) for key in applied_keys if key not in stored_keys]


def _keys(items: Any, keyed: list_keys.Keyed) -> list[Item] | None:
    """The key of each of ``items``, or None where one has none (a key field missing, not a plain value) or two
    share one."""
    if not isinstance(items, list):
        return None
    keys: list[Item] = []
    for item in items:
        if not keyed.fields:
            pairs: tuple[tuple[str, Any], ...] = (("", item),)
        elif isinstance(item, Mapping):
            pairs = tuple((name, item.get(name, keyed.defaults.get(name))) for name in keyed.fields)
        else:
            return None
        if any(value is None or isinstance(value, dict | list) for _, value in pairs):
            return None
        keys.append(Item(pairs))
    return keys if len(set(keys)) == len(keys) else None


def fields(obj: Mapping[str, Any], schema: list_keys.Schema | None = None, prefix: Path = ()) -> dict[Path, Any]:
    """Every field of ``obj`` by its path, as field ownership counts them: each value that is not an object (a list
    is one field, replaced whole) and each empty object.

    An item of a list ``schema`` keys is owned by its key, as the API server's managedFields own it: the item itself
    (its path ends in its :class:`Item`, its value is the key) and each of its fields but the key's; an empty keyed
    list holds no field. A keyed list whose items cannot be keyed is one field, as other lists are.
    """
    found: dict[Path, Any] = {}
    for key, value in obj.items():
        inner = (schema or {}).get(key)
        keys = _keys(value, inner) if isinstance(inner, list_keys.Keyed) else None
        if isinstance(inner, list_keys.Keyed) and keys is not None:
            for item, item_key in zip(value, keys, strict=True):
                path = (*prefix, key, item_key)
                found[path] = item_key
                if isinstance(item, Mapping):
                    rest = {name: field for name, field in item.items() if name not in inner.fields}
                    found.update(fields(rest, inner.items, path))
        elif isinstance(value, Mapping) and value:
            found.update(fields(value, inner if isinstance(inner, Mapping) else None, (*prefix, key)))
        else:
            found[(*prefix, key)] = value
    return found


def untyped(
    obj: Any, schema: list_keys.Schema | None, undefaulted: Collection[tuple[str, str]] = (), prefix: Path = ()
) -> str | None:
    """Why the API server cannot type ``obj`` as an apply of an object whose keyed lists ``schema`` names, or None:
    an item of a keyed list that leaves out a key field with no default (``undefaulted``: the fields, by the list's
    :func:`text` and the key field's name, that have none on the server although okt's table gives one), or two items
    of one key — in the server's words (``.spec.ports: element 0: associative list with keys has an element that
    omits key field "protocol" (and doesn't have default value)``, ``.spec.ports: duplicate entries for key
    [port=80,protocol="TCP"]``). Lists of plain values (sets) are not checked."""
    if not isinstance(obj, Mapping):
        return None
    for key, value in obj.items():
        inner = (schema or {}).get(key)
        if inner is None:
            continue
        path = (*prefix, key)
        if not isinstance(inner, list_keys.Keyed):
            found = untyped(value, inner, undefaulted, path)
        elif inner.fields and isinstance(value, list):
            found = _untyped_items(value, inner, undefaulted, path)
        else:
            found = None
        if found:
            return found
    return None


def _untyped_items(
    items: list[Any], keyed: list_keys.Keyed, undefaulted: Collection[tuple[str, str]], path: Path
) -> str | None:
    seen: set[Item] = set()
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        for name in keyed.fields:
            if name not in item and (name not in keyed.defaults or (text(path), name) in undefaulted):
                return (
                    f"{text(path)}: element {index}: associative list with keys has an element that omits key field "
                    f"{json.dumps(name)} (and doesn't have default value)"
                )
        key = Item(tuple((name, item.get(name, keyed.defaults.get(name))) for name in keyed.fields))
        if any(isinstance(value, dict | list) for _, value in key.key):
            continue
        if key in seen:
            return f"{text(path)}: duplicate entries for key {text((key,))}"
        seen.add(key)
        found = untyped(item, keyed.items, undefaulted, (*path, key))
        if found:
            return found
    return None


def text(path: Path) -> str:
    """A field's path as the API server writes it in a conflict: ``.spec.replicas``,
    ``.spec.template.spec.containers[name="app"].image``, ``.spec.ports[port=80,protocol="TCP"].name``, an item of a
    set ``.metadata.finalizers[="a/b"]``."""
    parts: list[str] = []
    for step in path:
        if not isinstance(step, Item):
            parts.append(f".{step}")
        elif len(step.key) == 1 and not step.key[0][0]:
            parts.append(f"[={json.dumps(step.key[0][1])}]")
        else:
            parts.append("[" + ",".join(f"{name}={json.dumps(value)}" for name, value in sorted(step.key)) + "]")
    return "".join(parts)


def without(obj: Mapping[str, Any], paths: Iterable[Path], schema: list_keys.Schema | None = None) -> dict[str, Any]:
    """A copy of ``obj`` without the fields at ``paths``; an object one of these removals leaves empty goes too (as
    an apply's removal of its manager's last key of ``labels`` leaves no ``labels: {}``).

    A path ending in an item of a keyed list (see :func:`fields`) removes the whole item, the fields in it another
    writer set since included, as the API server does; a keyed list left without items goes, as an empty object does.
    """
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    for path in paths:
        _remove(result, path, schema)
    return result


def _remove(obj: dict[str, Any], path: Path, schema: list_keys.Schema | None) -> None:
    head, *rest = path
    if not isinstance(head, str) or head not in obj:
        return
    inner = (schema or {}).get(head)
    value = obj[head]
    if rest and isinstance(rest[0], Item):
        if not isinstance(inner, list_keys.Keyed):
            return
        keys = _keys(value, inner)
        if keys is None or rest[0] not in keys:
            return
        index = keys.index(rest[0])
        item = value[index]
        if len(rest) > 1 and isinstance(item, dict):
            _remove(item, tuple(rest[1:]), inner.items)
        elif len(rest) == 1:
            del value[index]
            if not value:
                del obj[head]
    elif rest and isinstance(value, dict):
        _remove(value, tuple(rest), inner if isinstance(inner, Mapping) else None)
        if not value:
            del obj[head]
    elif not rest:
        del obj[head]


def json_patch(target: Mapping[str, Any], operations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """RFC 6902's ``test``, ``add``, ``remove`` and ``replace``, applied in order to a copy of ``target``, as the API
    server applies them (unlike RFC 6902, a ``replace`` of a missing key of an object sets it).

    Raises:
        okt.errors.Invalid: a ``test`` failed, or a path does not exist (the API server's 422).
        okt.errors.BadRequest: another operation (``move``, ``copy``).
    """
    doc: dict[str, Any] = copy.deepcopy(dict(target))
    for op in operations:
        kind, path = str(op.get("op")), str(op.get("path"))
        container, last = _parent(doc, path, kind)
        if isinstance(container, list):
            index = len(container) if last == "-" else _index(last, path, kind)
            current = container[index] if index < len(container) else _ABSENT
        else:
            current = container.get(last, _ABSENT)
        if kind == "test":
            if current is _ABSENT or not _same_json(current, op.get("value")):
                # Named by its path, never by the values: they may be a Secret's data, and the API server quotes
                # neither (its message says nothing of the path either).
                held = "nothing is there" if current is _ABSENT else "it holds another value than the one tested"
                raise _invalid(f"the test of {path} failed: {held}")
        elif kind == "add":
            value = copy.deepcopy(op.get("value"))
            if isinstance(container, list):
                if index > len(container):  # "-" or the index just past the end appends; beyond it, nothing does
                    raise _invalid(f"add {path}: the list has only {len(container)} items")
                container.insert(index, value)
            else:
                container[last] = value
        elif kind in ("remove", "replace"):
            # The API server's JSON patch library replaces a missing key of an object as if added; a missing list
            # item, or a missing key to remove, is refused.
            if current is _ABSENT and (kind == "remove" or isinstance(container, list)):
                raise _invalid(f"{kind} {path}: the path does not exist")
            if isinstance(container, list):
                if kind == "remove":
                    del container[index]
                else:
                    container[index] = copy.deepcopy(op.get("value"))
            elif kind == "remove":
                del container[last]
            else:
                container[last] = copy.deepcopy(op.get("value"))
        else:
            raise errors.ApiError.from_status(400, "BadRequest", f"unsupported JSON patch operation {kind!r}")
    return doc


def _same_json(stored: Any, tested: Any) -> bool:
    """Whether a ``test`` of ``tested`` passes against ``stored`` as on the API server, which compares the JSON text
    of the two (object keys in any order): ``true`` is not ``1``, nor is ``1.0`` the integer ``1`` (Python's ``==``
    says both are)."""
    return json.dumps(stored, sort_keys=True) == json.dumps(tested, sort_keys=True)


def _parent(doc: dict[str, Any], path: str, op: str) -> tuple[dict[str, Any] | list[Any], str]:
    """The container a JSON pointer's last token is in, and that token (``~1`` and ``~0`` unescaped)."""
    *parents, last = [token.replace("~1", "/").replace("~0", "~") for token in path.split("/")[1:]]
    container: Any = doc
    try:
        for token in parents:
            container = container[int(token)] if isinstance(container, list) else container[token]
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise _invalid(f"{op} {path}: the path does not exist") from exc
    if not isinstance(container, dict | list):
        raise _invalid(f"{op} {path}: the path does not exist")
    return container, last


def _index(token: str, path: str, op: str) -> int:
    try:
        return int(token)
    except ValueError as exc:
        raise _invalid(f"{op} {path}: {token!r} is not a list index") from exc


def _invalid(message: str) -> errors.ApiError:
    return errors.ApiError.from_status(422, "Invalid", message)
