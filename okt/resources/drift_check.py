"""The drift check: whether a live child still holds what okt wrote of it, field by field.

Why this exists: a checksum alone cannot see an out-of-band edit (the stored hash stays), and deep equality with the
live object sees every server default as drift. So the write path (:mod:`okt.resources.apply`) compares, besides
the checksum, a view of the desired object with the live one: the fields ``hashable_ref()`` covers
(:func:`drift_view`), any of which missing or different in the live object is drift (:func:`in_place`). What the server
makes of okt's own writes — a zero value it leaves out, a quantity in its canonical form — is no drift
(:class:`ServerForms`, :mod:`okt.resources.quantities`), and neither is another manager's item in a list server-side
apply merges by key, which okt's apply keeps (:mod:`okt.resources.list_keys`).

Guarantees: server-defaulted fields never read as drift (they are not in the view); a field left out of
``hashable_ref()`` is neither compared nor repaired; a built-in kind's quantity matches as okt wrote it or in its
canonical form, in no other spelling; a number beyond what the server keeps exactly (an integer beyond int64)
matches as the server stores it, however the child was built (:mod:`okt.resources.stored_numbers`); a built-in
kind's keyed list matches when it holds okt's items by their keys, in the template's order, whatever other items it
holds — told from the live object alone, so a restart over such a child writes nothing; a key field of such a list
the template leaves to the server (a port's ``protocol``) is compared as the server's default, whether the list is
compared by key or item by item. Caveat: the server's forms are remembered in the process only: after a restart, a
child holding one (a zero value the server left out) is written once more. A custom resource's lists are compared item
by item, at the same index, unless its class carries its CRD's schema
(:attr:`okt.resources.resource.Resource.openapi_schema`): without, another writer's item in one of its map lists is
drift.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

import pydantic

from okt.kube import kinds, objects
from okt.resources import checksum, list_keys, quantities, resource


def keyed_lists(res: resource.Resource) -> list_keys.Lists | None:
    """The lists of ``res``'s kind that server-side apply merges by key: okt's table's for a built-in kind
    (:data:`okt.resources.list_keys.KINDS`), those its class declares for any other (:attr:`Resource.openapi_schema
    <okt.resources.resource.Resource.openapi_schema>`, a custom resource's CRD), or None."""
    api_version = str(res.desired.get("apiVersion") or "")
    if kinds.is_builtin_group(api_version):
        return list_keys.lists_of(api_version, str(res.desired.get("kind") or ""))
    return type(res).keyed_lists


def _comparable(
    desired: Mapping[str, Any], lists: list_keys.Lists | None, *, marked: bool = True, keyed: bool = True
) -> dict[str, Any]:
    """What the drift check compares of ``desired``; with ``marked``, a built-in kind's quantities marked as such
    (:class:`okt.resources.checksum.Quantity`: they match the canonical form the server stores, no other value
    does), and its lists server-side apply merges by key (``lists``) marked so (:mod:`okt.resources.list_keys`:
    another manager's items in them are no drift) unless not ``keyed`` (children written by merge patches, which
    replace a list whole: another manager's item is drift there, and a key field the server defaults is spelled out
    in okt's items, compared at their index). Marking copies the object: unmarked, the view is the cheaper first look,
    which :func:`in_place` completes with :func:`list_keys.defaults_kept`."""
    body = {k: v for k, v in desired.items() if k not in ("status", "metadata")}
    meta = desired.get("metadata") or {}
    body["metadata"] = {k: meta[k] for k in ("labels", "annotations") if k in meta}
    builtin = kinds.is_builtin_group(str(desired.get("apiVersion") or ""))
    if marked and (builtin or lists is not None):
        body = objects.json_copy(body)
        if builtin:
            quantities.convert_quantities(body, quantities.marked_quantity)
        if lists is not None:
            list_keys.mark(body, keyed=keyed, lists=lists)
    return body


def drift_view(res: resource.Resource, *, keyed: bool = True) -> dict[str, Any]:
    """The part of the desired object the drift check compares with the live one: what ``hashable_ref()`` covers.

    A desired field is compared when ``hashable_ref()`` holds it at the same path (its top-level ``labels`` and
    ``annotations`` stand for ``metadata``'s, as the default builds them); a mapping is narrowed key by key, anything
    else is covered whole. So a field left out of the hash is not repaired either: another controller may manage
    it (OKT's contract). A ``hashable_ref()`` that is not a mapping (a version string) covers no field. ``keyed``:
    the lists server-side apply merges by key are compared by key (False for a child written by merge patches).
    """
    shape = drift_shape(res)
    return {} if shape is None else checksum.narrowed(_comparable(res.desired, keyed_lists(res), keyed=keyed), shape)


def in_place(res: resource.Resource, live: Mapping[str, Any], *, keyed: bool = True) -> bool:
    """Whether ``live`` holds every field of :func:`drift_view` — ``checksum.is_subset(drift_view(res), live)`` in one
    walk, without building the view (every child of every reconcile is checked; drift is the rare case). The view's
    quantities and keyed lists are marked only when the unmarked one, compared item by item at the same index,
    differs from ``live``: a template's quantities written as the server stores them (``memory: 64Mi``) then cost no
    copy of the object. That first look counts a key field the template leaves to the server (a port's ``protocol``)
    as its default (:func:`list_keys.defaults_kept`): okt's port made UDP is drift, as the marked view has it.
    ``keyed``: as for :func:`drift_view`."""
    shape = drift_shape(res)
    if shape is None:
        return True
    lists = keyed_lists(res)
    if checksum.is_subset_within(_comparable(res.desired, lists, marked=False), shape, live) and (
        lists is None or list_keys.defaults_kept(res.desired, shape, live, lists)
    ):
        return True
    marks = lists is not None or kinds.is_builtin_group(str(res.desired.get("apiVersion") or ""))
    return marks and checksum.is_subset_within(_comparable(res.desired, lists, keyed=keyed), shape, live)


def drift_shape(res: resource.Resource) -> dict[str, Any] | None:
    """``hashable_ref()`` shaped like the object (its ``labels`` and ``annotations`` under ``metadata``), or None."""
    ref = res.hashable_ref()
    if isinstance(ref, pydantic.BaseModel):
        ref = ref.model_dump(mode="json", by_alias=True, exclude_none=True)
    if type(ref) is not dict and not isinstance(ref, Mapping):  # the exact dict told apart without the ABC check
        return None
    shape = {k: v for k, v in ref.items() if k not in ("labels", "annotations", "metadata")}
    given = ref.get("metadata")
    metadata = dict(given or {}) if type(given) is dict or isinstance(given, Mapping) else {}
    metadata.update({k: ref[k] for k in ("labels", "annotations") if k in ref})
    if metadata:
        shape["metadata"] = metadata
    return shape


class ServerForms:
    """What the API server made of okt's last write of each child, where it differs from what okt wrote.

    Why this exists: the server leaves out the zero value of many built-in fields (``stdin: false``, ``value: ""``,
    ``hostPort: 0`` are not stored), so a desired field that sets one never reads as in place, and a drift check that
    trusts only the live object writes again on every reconcile — for nothing, as the answer to each write shows.
    Whether a missing field was left out by the server or removed by someone (a ``false`` that matters, such as
    ``allowPrivilegeEscalation``) cannot be told from the live object alone; the answer to okt's own write tells it.

    So after each write okt remembers, per object, the fields that differ in the server's answer (path and stored
    value) for that desired state; a later drift exactly made of those fields with those values is the server's form,
    not drift. Anything else — another value there, another field, another desired state — is compared as ever.
    Bounded (the oldest entries are forgotten first: such a child is written once more); safe across worker threads.
    """

    LIMIT = 8192

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._forms: collections.OrderedDict[str, tuple[str, frozenset[tuple[str, str | None]]]] = (
            collections.OrderedDict()
        )

    def remember(
        self, view: Mapping[str, Any] | None, res: resource.Resource, written: Mapping[str, Any], *, keyed: bool = True
    ) -> None:
        """Record what differs between the drift view okt wrote from (``view``; None: :func:`drift_view` of ``res``,
        whose desired object its write left as the next reconcile builds it) and the server's answer. ``keyed``: as
        for :func:`drift_view`, as the next reconcile's drift check builds it — a view built otherwise (a key field
        the server defaults spelled out, or not) has another checksum, and would never explain that drift."""
        uid = (written.get("metadata") or {}).get("uid")
        if not uid:
            return
        if view is None and in_place(res, written, keyed=keyed):
            found = []  # the usual case, on every write: the answer holds what okt wrote (one walk, no view built)
        else:
            view = drift_view(res, keyed=keyed) if view is None else view
            found = checksum.mismatches(view, written)
        with self._lock:
            if not found:
                self._forms.pop(uid, None)
                return
            self._forms[uid] = (checksum.checksum(view), frozenset(found))
            self._forms.move_to_end(uid)
            while len(self._forms) > self._limit:
                self._forms.popitem(last=False)

    def explain(self, live: Mapping[str, Any], view: Mapping[str, Any], found: list[tuple[str, str | None]]) -> bool:
        """Whether every mismatch ``found`` between ``view`` and ``live`` is what the server made of okt's write."""
        uid = (live.get("metadata") or {}).get("uid")
        with self._lock:
            known = self._forms.get(uid) if uid else None
        return known is not None and set(found) <= known[1] and known[0] == checksum.checksum(view)


SERVER_FORMS = ServerForms()
