"""JSON patches of what okt read: the tests that guard them, and the field sets of ``managedFields`` they move.

Why this exists: okt edits an object's ``managedFields`` (a take-over of what its earlier writes left to other entries,
for a child and for a status alike) and reorders or removes items of a child's lists, each by one JSON patch. Such a
patch must land only on what okt read, yet a test of the object's resourceVersion loses to any write in between: a
workload's controller writes a Deployment's status many times a second while it rolls out, another controller the
status of a custom resource beside okt. So a patch tests the very values it is about (okt's own managedFields
entries, the list items it moves), which those writes leave alone.

Guarantees: the tests of :func:`guard` pass only while each tested value is as okt read it, or, where the API server
cannot compare a value as okt writes it, only while the object is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

TAKE_OVER_ATTEMPTS = 3
"""How often a guarded patch is worked out again when another writer changes what it tests between okt's read and
the patch."""


def guard(values: list[tuple[str, Any]], meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tests that guard a JSON patch of okt's: that each pointer of ``values`` still holds its value, where the API
    server compares the value as okt writes it; else (a value okt cannot write as the server does) that the object's
    resourceVersion is still ``meta``'s."""
    if all(same_in_go(value) for _, value in values):
        return [{"op": "test", "path": pointer, "value": value} for pointer, value in values]
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")}]


def same_in_go(value: Any) -> bool:
    """Whether the API server writes ``value`` in JSON with the very bytes okt does: its JSON patch ``test`` compares
    the bytes of each string and number, and Go escapes ``<``, ``>`` and ``&`` where Python does not, writes other
    than ASCII as it is where Python escapes it, and may write a float otherwise (such values never test equal)."""
    if isinstance(value, Mapping):
        return all(same_in_go(key) and same_in_go(item) for key, item in value.items())
    if isinstance(value, list):
        return all(same_in_go(item) for item in value)
    if isinstance(value, bool | int):
        return True
    return isinstance(value, str) and all(" " <= char <= "~" and char not in "<>&" for char in value)


def union(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    """Merge a fieldsV1 tree into another (both are sets of paths written as nested maps)."""
    for key, value in other.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            union(into[key], value)
        elif key not in into:
            into[key] = copy.deepcopy(value)
