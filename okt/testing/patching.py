"""How the API server changes an object: merge patches, JSON patches, the fields an apply merges, owns and removes.

Why this exists: :class:`okt.testing.FakeClient` must answer a write the way the API server would, and these rules
are pure functions over plain dicts — pinned on their own by unit tests, and small enough to read against the RFCs.

Guarantees: no function mutates its arguments; a failed JSON patch ``test`` (or a path that does not exist, but for
a ``replace`` of an object's key) raises :class:`okt.errors.Invalid`, as the API server answers 422.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from okt import errors

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


def apply_merge(target: Any, applied: Any) -> Any:
    """How server-side apply merges an applied object into a stored one: objects merge key by key and anything else
    replaces, as in a merge patch — but a ``null`` is a value like any other, stored as it is (what an apply removes
    is what its manager no longer applies: see :func:`without`)."""
    if not isinstance(applied, Mapping):
        return copy.deepcopy(applied)
    result = copy.deepcopy(dict(target)) if isinstance(target, Mapping) else {}
    for key, value in applied.items():
        result[key] = apply_merge(result.get(key), value)
    return result


def fields(obj: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every field of ``obj`` by its path, as field ownership counts them: each value that is not an object (a list
    is one field, replaced whole) and each empty object."""
    found: dict[tuple[str, ...], Any] = {}
    for key, value in obj.items():
        if isinstance(value, Mapping) and value:
            found.update(fields(value, (*prefix, key)))
        else:
            found[(*prefix, key)] = value
    return found


def without(obj: Mapping[str, Any], paths: Iterable[tuple[str, ...]]) -> dict[str, Any]:
    """A copy of ``obj`` without the fields at ``paths``; an object one of these removals leaves empty goes too (as
    an apply's removal of its manager's last key of ``labels`` leaves no ``labels: {}``)."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    for path in paths:
        _remove(result, path)
    return result


def _remove(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    head, *rest = path
    if head not in obj:
        return
    if rest and isinstance(obj[head], dict):
        _remove(obj[head], tuple(rest))
        if not obj[head]:
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
                found = None if current is _ABSENT else current
                raise _invalid(f"the test of {path} failed: it holds {found!r}, not {op.get('value')!r}")
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
