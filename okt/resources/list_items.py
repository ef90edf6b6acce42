"""The items of okt's lists that an apply cannot repair: reordered by someone, or made another writer's by an edit of
their key.

Why this exists: server-side apply merges list items by their key. It keeps the live order of the items it finds, so
it cannot undo a reordering (env vars, whose order matters); and an item whose key someone edited (a port renumbered)
is another manager's from then on, which an apply keeps beside okt's item. After an apply, the write path
(:mod:`okt.resources.apply`) sends one JSON patch more for each, worked out here.

Guarantees: each patch first tests the items it rests on (:func:`okt.kube.patches.guard`), not the resourceVersion a
workload's controller keeps bumping, and is worked out again from a new read when another writer changed them in
between; nothing is changed, only okt's own items put back in order, or the items another writer made of okt's
removed with okt's missing items put back beside them in the same patch (a list the API server requires, a Service's
ports, is never left empty); another manager's items, which look like none of okt's, are never removed; lists in
which every item of okt's is in place are never touched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, patches
from okt.resources import checksum, writing


def put_back_in_order(
    client: kube_client.Client,
    kind: kinds.Kind,
    view: Mapping[str, Any],
    applied: dict[str, Any],
    options: writing.WriteOptions,
) -> dict[str, Any]:
    """Put the items of okt's lists that someone reordered back in the template's order; the applied object, or the
    answer to that one more write.

    An apply merges list items by their key and keeps the live order of those it finds, so it cannot undo a
    reordering (env vars, whose order matters: one may refer to those before it). One JSON patch replaces each such
    list with its own live items in the template's order: nothing is added, dropped or changed. In a list the server
    merges by key (:class:`checksum.KeyedList`), okt's items, found by their keys, take the places they hold in the
    template's order, and another manager's items stay where they are. It first tests that
    each list still holds those items as read (:func:`patches.guard`), not the object's resourceVersion, which a
    workload's controller bumps again and again while the reordered pod template rolls out; a patch whose test fails
    all the same (someone changed the list) is worked out again from the object read anew, up to
    ``TAKE_OVER_ATTEMPTS``. The next apply takes over what it wrote (:func:`okt.resources.take_over.take_over`).
    """

    def plan(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        reordered = _reordered_lists(view, obj, "")
        if not reordered:
            return []
        guard = patches.guard([(pointer, live) for pointer, live, _ in reordered], obj.get("metadata") or {})
        return [*guard, *({"op": "replace", "path": pointer, "value": items} for pointer, _, items in reordered)]

    return _patch_guarded(client, kind, applied, plan, options)[0]


def drop_rekeyed(
    client: kube_client.Client,
    kind: kinds.Kind,
    desired: Mapping[str, Any],
    before: Mapping[str, Any],
    after: dict[str, Any],
    options: writing.WriteOptions,
    *,
    unique: Collection[str] = (),
) -> dict[str, Any] | None:
    """Remove the items another writer made of okt's: the answer to that one more write, or None when there are none.

    An item of a keyed list (a port by ``containerPort``, an env var by ``name``) whose key someone edited (a port
    renumbered by ``kubectl edit``, an env var renamed) is another manager's item from then on: an apply adds okt's
    item back beside it, and cannot remove it. So in each list of ``desired`` that ``before`` (the object okt
    wrote over) lacks one of okt's items in, the item of ``before`` made of each such item of okt's is removed from
    ``after``, by one JSON patch: an item whose key okt's template does not hold that still holds every other field
    okt's item sets (:func:`checksum.is_subset`), at most one for each of okt's items, the one at the same index
    first. Other managers' items in that list (a port an exporter added, an env var a webhook injected) stay, as
    server-side apply keeps them. An item edited beyond its key (an env var renamed and given another value) looks like
    none of okt's and stays too, okt's own added back beside it; unless the API server refused that for a value it
    takes once in the list (``unique``: the fields a :data:`DUPLICATE` cause names, a Service port's ``name``): then
    the item of ``before`` that holds okt's item's value in one of those fields is the one removed. The same patch
    appends okt's items that ``after`` lacks (an apply refused for the duplicate has not added them yet): removed
    alone, the only port of a Service would leave it without ports, which the API server refuses. Items of other
    managers in lists where all of okt's items are in place are never touched. A list's keys are read from
    ``after``'s ``managedFields``: a list no manager keys there is left as it is.

    The patch tests, before it removes anything, that each index still holds the item of that key
    (:func:`patches.guard`), not the object's resourceVersion: a workload's controller rewrites the status many times
    in a row after a change of the pod template (the edit's, then okt's own write), and a patch tested against the
    resourceVersion lost to those writes at each attempt. A patch whose test fails all the same (the list changed in
    between) is worked out again from the object read anew, as :func:`okt.resources.take_over.take_over` does, up to
    ``TAKE_OVER_ATTEMPTS``.
    """

    def plan(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        found = _rekeyed(desired, before, obj, _Lists(_list_keys(obj), frozenset(unique)), (), "")
        if not found:
            return []
        guard = patches.guard([each for _, item_keys in found for each in item_keys], obj.get("metadata") or {})
        return [*guard, *(operation for operation, _ in found)]

    patched, sent = _patch_guarded(client, kind, after, plan, options)
    return patched if sent else None


def _patch_guarded(
    client: kube_client.Client,
    kind: kinds.Kind,
    obj: dict[str, Any],
    plan: Callable[[Mapping[str, Any]], list[dict[str, Any]]],
    options: writing.WriteOptions,
) -> tuple[dict[str, Any], bool]:
    """Send the JSON patch ``plan`` works out from ``obj`` (its tests first: :func:`patches.guard`), and the object with
    whether a patch was sent. A patch refused for its tests alone (someone wrote the lists in between) is worked out
    again from the object read anew, up to ``TAKE_OVER_ATTEMPTS``; one refused for what it writes is raised (reading
    again cannot help), as is the last attempt's refusal. An empty plan sends nothing."""
    for attempt in range(patches.TAKE_OVER_ATTEMPTS):
        patch = plan(obj)
        if not patch:
            return obj, False
        meta = obj.get("metadata") or {}
        try:
            answer = client.patch(
                kind, meta["name"], patch, meta.get("namespace"), patch_type="json", field_manager=options.field_manager
            )
            return answer, True
        except errors.Invalid as exc:
            if exc.causes or attempt == patches.TAKE_OVER_ATTEMPTS - 1:
                raise
            obj = client.get(kind, meta["name"], meta.get("namespace"))
    raise AssertionError("not reached: the last attempt returns or raises")


DUPLICATE = "FieldValueDuplicate"
"""The cause the API server gives a value that must be unique in its list and is not (a port's name)."""

_LAST_FIELD = re.compile(r"([^.\[\]]+)(?:\[\d+\])*$")


def duplicated(exc: errors.ApiError) -> frozenset[str]:
    """The names of the fields ``exc`` refuses a :data:`DUPLICATE` value of (``name`` for ``spec.ports[1].name``)."""
    found = (_LAST_FIELD.search(cause.field) for cause in exc.causes if cause.reason == DUPLICATE)
    return frozenset(match.group(1) for match in found if match)


_ITEM = 0
"""Stands for any item of a list in a :func:`_list_keys` path (field names are strings)."""


def _list_keys(obj: Mapping[str, Any]) -> dict[tuple[str | int, ...], tuple[str, ...]]:
    """The key fields of each keyed list of ``obj``, by path, as its ``managedFields`` name items
    (``k:{"containerPort":8080,"protocol":"TCP"}``)."""
    keys: dict[tuple[str | int, ...], tuple[str, ...]] = {}

    def walk(fields: Mapping[str, Any], path: tuple[str | int, ...]) -> None:
        for name, inner in fields.items():
            if not isinstance(inner, Mapping):
                continue
            if name.startswith("f:"):
                walk(inner, (*path, name[2:]))
            elif name.startswith("k:"):
                try:
                    key = json.loads(name[2:])
                except ValueError:
                    continue
                if isinstance(key, dict):
                    keys[path] = tuple(sorted(key))
                walk(inner, (*path, _ITEM))

    for entry in (obj.get("metadata") or {}).get("managedFields") or ():
        walk(entry.get("fieldsV1") or {}, ())
    return keys


class _Lists:
    """What :func:`_rekeyed` knows of the object's lists: the key fields of each keyed list, by path
    (:func:`_list_keys`), and the fields the API server takes one value of in a list (:func:`duplicated`)."""

    __slots__ = ("keys", "unique")

    def __init__(self, keys: Mapping[tuple[str | int, ...], tuple[str, ...]], unique: frozenset[str]) -> None:
        self.keys = keys
        self.unique = unique


def _rekeyed(
    desired: Any,
    before: Any,
    after: Any,
    lists: _Lists,
    path: tuple[str | int, ...],
    pointer: str,
) -> list[tuple[dict[str, Any], list[tuple[str, Any]]]]:
    """The JSON patch operations of :func:`drop_rekeyed` on ``after``, in an order one patch can apply them: inside an
    item before the item's own list; in each list, okt's missing items appended, then the items made of okt's
    (:func:`_made_of_ours`) removed from the last to the first. Each removal comes with the pointer and value of each
    key field of its item (the patch's tests); an append with none."""
    if isinstance(desired, Mapping) and isinstance(after, Mapping):
        found: list[tuple[dict[str, Any], list[tuple[str, Any]]]] = []
        for key, value in desired.items():
            if key in after:
                earlier = before.get(key) if isinstance(before, Mapping) else None
                found.extend(_rekeyed(value, earlier, after[key], lists, (*path, key), f"{pointer}/{escaped(key)}"))
        return found
    names = lists.keys.get(path)
    if names is None or not isinstance(desired, list) or not isinstance(after, list):
        return []

    def key_of(item: Any) -> str | None:
        return checksum.canonical_json([item.get(name) for name in names]) if isinstance(item, Mapping) else None

    ours = {key_of(item): item for item in desired}
    earlier = {key_of(item): item for item in before} if isinstance(before, list) else {}
    found = []
    for index, item in enumerate(after):
        key = key_of(item)
        if key in ours:
            found.extend(_rekeyed(ours[key], earlier.get(key), item, lists, (*path, _ITEM), f"{pointer}/{index}"))
    if ours.keys() - earlier.keys():
        gone = [
            (i, item) for i, item in enumerate(desired) if isinstance(item, Mapping) and key_of(item) not in earlier
        ]
        held = [(i, key_of(item)) for i, item in enumerate(after) if isinstance(item, Mapping)]
        others = [i for i, key in held if key not in ours and key in earlier]
        foreign = _made_of_ours(gone, after, others, names, lists.unique)
        if foreign:
            present = {key_of(item) for item in after}
            missing = [item for key, item in ours.items() if key not in present]
            found.extend(({"op": "add", "path": f"{pointer}/-", "value": item}, []) for item in missing)
        for index in reversed(foreign):
            at = f"{pointer}/{index}"
            tests = [(f"{at}/{escaped(name)}", after[index].get(name)) for name in names]
            found.append(({"op": "remove", "path": at}, tests))
    return found


def _made_of_ours(
    gone: list[tuple[int, Mapping[str, Any]]],
    after: list[Any],
    others: list[int],
    names: tuple[str, ...],
    unique: frozenset[str],
) -> list[int]:
    """The indices, in order, of the items of ``after`` (among ``others``: not okt's, held before okt's write) made of
    okt's items ``gone`` (each with its index in the template) by an edit of their key.

    For each of okt's items in turn, the first of ``others`` not taken yet that holds every field of okt's item but
    its key fields (``names``), the one at the item's index in the template first; failing that, one that holds okt's
    item's value in a field of ``unique`` (the API server refused the item beside it for that value). An item looking
    like none of okt's is another manager's, and is not taken."""
    taken: list[int] = []
    for place, item in gone:
        left = [i for i in others if i not in taken]
        rest = {name: value for name, value in item.items() if name not in names}
        like = [i for i in left if checksum.is_subset(rest, after[i])]
        if not like:
            held = [name for name in unique if item.get(name) is not None]
            like = [i for i in left if any(after[i].get(name) == item[name] for name in held)]
        if like:
            taken.append(place if place in like else like[0])
    return sorted(taken)


def escaped(key: object) -> str:
    """``key`` as a JSON pointer's reference token."""
    return str(key).replace("~", "~0").replace("/", "~1")


def _reordered_lists(desired: Any, live: Any, pointer: str) -> list[tuple[str, list[Any], list[Any]]]:
    """Each list of ``live`` (its JSON pointer, and the list) that holds the items of ``desired``'s list there in
    another order, with those items in ``desired``'s order."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        found: list[tuple[str, list[Any], list[Any]]] = []
        for key, value in desired.items():
            if key in live:
                found.extend(_reordered_lists(value, live[key], f"{pointer}/{escaped(key)}"))
        return found
    if type(desired) is checksum.KeyedList and desired.by_key() and isinstance(live, list):
        return _reordered_keyed(desired, live, pointer)
    if not isinstance(desired, list | tuple) or not isinstance(live, list) or len(desired) != len(live):
        return []
    pairs = list(zip(desired, live, strict=True))
    inner = [_reordered_lists(wanted, item, f"{pointer}/{i}") for i, (wanted, item) in enumerate(pairs)]
    if all(found or checksum.is_subset(wanted, item) for (wanted, item), found in zip(pairs, inner, strict=True)):
        return [each for found in inner for each in found]  # in order here; perhaps not inside an item
    left = list(range(len(live)))
    order = []
    for wanted in desired:
        index = next((i for i in left if checksum.is_subset(wanted, live[i])), None)
        if index is None:
            return []  # not the same items: an apply's business, not an order's
        left.remove(index)
        order.append(index)
    return [(pointer, live, [live[i] for i in order])]


def _reordered_keyed(
    desired: checksum.KeyedList, live: list[Any], pointer: str
) -> list[tuple[str, list[Any], list[Any]]]:
    """:func:`_reordered_lists` of a list the server merges by key, which may hold other managers' items beside okt's:
    okt's items, found by their keys, are put in the template's order in the places they hold; every other item stays
    where it is."""
    placed = desired.placed(live)
    if placed is not None:  # in order here; perhaps not inside an item
        inner = (_reordered_lists(wanted, live[i], f"{pointer}/{i}") for wanted, i in zip(desired, placed, strict=True))
        return [each for found in inner for each in found]
    at: dict[str | None, int] = {}
    for index, item in enumerate(live):
        at.setdefault(desired.key_of(item), index)
    order: list[int] = []
    for wanted in desired:
        index = at.get(desired.key_of(wanted), -1)
        if index < 0 or index in order:
            return []  # not all of okt's items: an apply's business, not an order's
        order.append(index)
    items = list(live)
    for place, index in zip(sorted(order), order, strict=True):
        items[place] = live[index]
    return [(pointer, live, items)]
