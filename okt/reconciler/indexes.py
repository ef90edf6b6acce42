"""Indexes of watched kinds, read whole: a mapping of key -> the objects (or values) under it, kept by the cache.

Why this exists: Kopf's ``@kopf.index("pods")`` keeps an index over the objects of another kind, and its handlers
read it as a mapping (``len(index)``, ``index.items()``, ``index[key]``): the Pods of each node, the phase of each
Pod. okt's ``indexes`` are over the primaries and answer lookups (``ctx.index(name, value)``); an index of a watched
kind is declared with the watch, in the shape of the primaries' ones::

    class NodeReconciler(okt.Reconciler):
        watches = (okt.watch("pods", indexes={"phases": lambda pod: {okt.ref_of(pod): pod["status"].get("phase")}}),)

        @okt.every(seconds=30)
        def count(self, ctx: okt.Context) -> None:
            phases = ctx.indexed("phases")  # an okt.Index: {"ns/name": ("Running",), ...}
            ctx.status_fields["running"] = sum(phase == "Running" for (phase,) in phases.values())

The function is given each object of the kind and returns its keys, as a primary index's function does (one key:
text, a number, None or a tuple of them; several: a list of those; nothing: None or an empty list): the index holds,
under each key, the objects that returned it. Or it returns a mapping ``{key: value}``: the index holds, under each
key, the values returned for it (Kopf's ``return {key: value}``), and not the object. Keys read back as the function
returned them, as the keys of a dict do (Kopf's index is one)::

    def app_of(pod):  # the index: {(namespace, app): (name, ...)}
        return {(pod["metadata"]["namespace"], pod["metadata"]["labels"].get("app")): pod["metadata"]["name"]}

    for (namespace, app), names in ctx.indexed("apps").items(): ...
    ctx.indexed("apps").get(("default", "web"), ())

Guarantees:

* the index is kept by the kind's informer with its store, on every change of it: an object added, modified or
  deleted, and a relist (after ``410 Gone``, a reconnect, a kind served again) replacing what the store held — what
  the relist lacks leaves the index as it leaves the store. Nothing scans the objects at a read;
* reads are cheap and hold the informer's lock briefly, safe from any thread (hooks, timers, daemons).
  ``ctx.indexed(name)`` reads nothing yet. A lookup of one key (``index[key]``, ``index.get(key)``, ``key in index``)
  reads the index as it stands at that lookup, the lock held while that key's entries alone are taken: two lookups may
  see two moments. The first whole read (``len``, iteration, ``keys()``, ``items()``, ``values()``, ``==``) takes one
  snapshot of the keys and of the stored entries under them (under the lock, a copy of the index's table and of the
  store's, nothing decoded), and every later read of that index answers from it, lookups included; a later
  ``ctx.indexed(name)`` sees the later changes. A kind watched in several namespaces has an informer each: a whole
  read takes their snapshots one after the other;
* memory: the objects under a key are the cache's own, decoded into private copies only when that key is read, and
  without the lock; a value an index function returns is copied when kept (the object it came from goes on to the
  handlers, which may change it), kept once, with the stored object, and leaves with it; each read of it gives a copy
  of its own, as of an object: a reader may change what it read, and no other read sees it;
* keys are those the function returned, kept once each (no text of them beside), by the rule of the primaries'
  index values (:func:`okt.reconciler.watches.index_key`): iterating gives each as it was returned — a tuple as a
  tuple, a number as that number, a text as text (plain ``str``, ``int``, ``float`` and ``tuple``: an enum member as
  its value, a named tuple as a plain tuple) — and a lookup finds it by any value Python finds equal, as a dict does;
* an index of a kind the API server no longer lets okt list and watch, or no longer serves, is not read: a running
  operator's ``ctx.indexed(name)`` (a reconcile's, a timer's, a daemon's) raises the ``okt.Forbidden`` or
  ``okt.NotFound`` a read of that kind raises then (:meth:`okt.runtime.cache.Cache.refusal`), until it is listed
  again — kept from the watch, the index holds what was there at the refusal, objects deleted since included;
* an index function that raises for an object is logged once for that object (its uid), until it succeeds for it
  again, and counted (``okt_index_errors_total``); that object is left out of the index, the others kept, and the
  informer carries on. A key an index cannot hold (a mapping, a list, NaN) is left out the same way.

Caveats: keys are Python's dict keys: ``1``, ``1.0`` and ``True`` are one key (where objects returned equal keys of
two types, the one the index held first is iterated), the text ``"1"`` another, as the tuples ``("ns", 1)`` and
``("ns", "1")`` are: a number read from a label or an annotation is text, and a lookup by a number does not find it
(return ``int(...)`` of it). A list returned is several keys, never one: a key of several parts is a tuple. A value
is copied when kept and at each read (``copy.deepcopy``): keep values small (a phase, a name, a few fields rather
than the whole object); one that cannot be copied is left out as a key an index cannot hold is. ``if key in index:
index[key]`` on an index not read whole looks twice, and the key may leave in between: ``index.get(key)`` looks once.
An index read whole holds the entries stored at its snapshot (references, not copies) for as long as it is kept: read
one whole when needed rather than keeping it.
Without a running operator's cache (a plain ``okt.reconcile`` call), ``ctx.indexed(name)`` lists the kind from the API
and builds the index from it, with the same answer: fixed at once, as an index read whole is.
"""

from __future__ import annotations

import collections
import copy
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod

_REMEMBERED = 4096
"""How many objects whose index function raised are remembered, not to say it again at each of their changes (a
deleted object's uid leaves once more have raised since; one said again after that costs a log line)."""


def copied(entry: Any) -> Any:
    """A value an index holds, as a read gives it: a copy of its own (one reader's change is never another's)."""
    return copy.deepcopy(entry)


class Source(Protocol):
    """Where an :class:`Index` reads what it holds: the cache's store of a watched kind (one per informer), or the
    entries of an index built at once. What it hands over is undecoded (a stored object's entry, a kept value), and
    :meth:`decoded` makes each a private copy when a reader reaches its key."""

    def held(self, key: watches.IndexKey) -> Sequence[Any]:
        """What is under ``key`` now, undecoded (empty for none): it costs that key's entries, not the index's."""
        ...

    def snapshot(self) -> Mapping[watches.IndexKey, Sequence[Any]]:
        """Every key with what is under it, taken at once (one pass over the keys), undecoded; never empty under a
        key."""
        ...

    def decoded(self, key: watches.IndexKey, entry: Any) -> Iterable[Any]:
        """Private copies of what ``entry`` holds under ``key``: its object, or the values its function gave."""
        ...


class _Fixed:
    """The entries of an index built at once (:meth:`Index.of`, a plain ``okt.reconcile`` call): never changed."""

    __slots__ = ("_decode", "_entries")

    def __init__(self, entries: Mapping[watches.IndexKey, Sequence[Any]], decode: Callable[[Any], Any]) -> None:
        self._entries = {key: tuple(held) for key, held in entries.items() if held}
        self._decode = decode

    def held(self, key: watches.IndexKey) -> Sequence[Any]:
        return self._entries.get(key, ())

    def snapshot(self) -> Mapping[watches.IndexKey, Sequence[Any]]:
        return self._entries

    def decoded(self, key: watches.IndexKey, entry: Any) -> Iterable[Any]:
        return (self._decode(entry),)


_Whole = tuple[list[tuple[Source, Mapping[watches.IndexKey, Sequence[Any]]]], Mapping[watches.IndexKey, Any]]
"""An index read whole: each source with its snapshot, and every key of them (in the order the sources give them)."""


class Index(Mapping[watches.IndexKey, tuple[Any, ...]]):
    """An index of a watched kind (see :mod:`okt.reconciler.indexes`): key -> a tuple of the objects (private copies)
    or of the values its function returned for that key. Read-only. Keys are those the function returned (a tuple as
    a tuple), looked up as a dict looks its keys up.

    A lookup of one key (``index[key]``, ``index.get(key)``, ``key in index``) reads the store as it stands then, and
    costs that key's entries alone. The first whole read (``len``, iteration, ``keys()``, ``items()``, ``values()``,
    ``==``) takes one snapshot of the keys and of the entries under each, and every read of this index answers from it
    from then on, lookups included; objects are decoded and values copied only when their key is reached.
    """

    __slots__ = ("_lock", "_sources", "_whole")

    def __init__(
        self, entries: Mapping[watches.IndexKey, Sequence[Any]], *, decode: Callable[[Any], Any] = copied
    ) -> None:
        """An index fixed at once: ``entries`` (copied), each entry given to ``decode`` when its key is read; keys
        as :func:`okt.reconciler.watches.index_key` keeps them."""
        fixed = _Fixed(entries, decode)
        self._sources: tuple[Source, ...] = (fixed,)
        self._whole: _Whole | None = ([(fixed, fixed.snapshot())], fixed.snapshot())
        self._lock = threading.Lock()

    @classmethod
    def over(cls, sources: Sequence[Source]) -> Index:
        """The index that ``sources`` hold (a watched kind's informers: one per watched namespace), read from them
        when read."""
        made = cls.__new__(cls)
        made._sources = tuple(sources)
        made._whole = None
        made._lock = threading.Lock()
        return made

    @classmethod
    def of(cls, objs: Iterable[Mapping[str, Any]], function: Callable[[Mapping[str, Any]], Any]) -> Index:
        """The index ``function`` (an :class:`Indexer`) makes of ``objs``."""
        entries: dict[watches.IndexKey, list[Any]] = {}
        for obj in objs:
            kept = function(obj)
            pairs = kept.items() if isinstance(kept, Mapping) else ((key, obj) for key in dict.fromkeys(kept))
            for key, value in pairs:
                entries.setdefault(key, []).append(value)
        return cls(entries)

    def __getitem__(self, key: object) -> tuple[Any, ...]:
        """The objects (private copies) or values under ``key``, looked up as a dict looks a key up (``("ns", 1)``
        finds ``("ns", 1.0)``, never ``("ns", "1")``).

        Raises:
            KeyError: no object is under ``key``.
            TypeError: ``key`` is not one an index holds (a mapping, a list...).
        """
        found = watches.index_key(key)
        held = self._held(found)
        if not held:
            raise KeyError(key)
        return tuple(item for source, entries in held for entry in entries for item in source.decoded(found, entry))

    def __contains__(self, key: object) -> bool:
        try:
            found = watches.index_key(key)
        except TypeError:
            return False
        return bool(self._held(found))

    def __iter__(self) -> Iterator[watches.IndexKey]:
        return iter(self._read_whole()[1])

    def __len__(self) -> int:
        return len(self._read_whole()[1])

    def __repr__(self) -> str:
        # Keys and values may come from a Secret: said by their number only. A repr reads nothing.
        whole = self._whole
        return "okt.Index(not read whole)" if whole is None else f"okt.Index({len(whole[1])} keys)"

    def _held(self, key: watches.IndexKey) -> list[tuple[Source, Sequence[Any]]]:
        """What each source holds under ``key``: from the snapshot once there is one, else as each stands now."""
        whole = self._whole
        if whole is None:
            found = [(source, source.held(key)) for source in self._sources]
        else:
            found = [(source, snapshot.get(key, ())) for source, snapshot in whole[0]]
        return [(source, entries) for source, entries in found if entries]

    def _read_whole(self) -> _Whole:
        with self._lock:
            if self._whole is None:
                parts = [(source, source.snapshot()) for source in self._sources]
                keys: Mapping[watches.IndexKey, Any] = (
                    parts[0][1] if len(parts) == 1 else dict.fromkeys(key for _, part in parts for key in part)
                )
                self._whole = (parts, keys)
            return self._whole


class Indexer:
    """One index of a watched kind as the informer keeps it: ``function`` called safely on each object, its keys kept
    as :func:`okt.reconciler.watches.index_key` keeps them; what it returns for one object is a tuple of keys (the
    object is held under each), or a mapping of keys to the values held. A call that raises is logged once per
    object and counted with ``failed()``: the object is left out of the index."""

    keeps_payloads = True
    """What it returns may be a mapping whose values the store keeps (:func:`okt.runtime.packing.keeps_payloads`)."""

    def __init__(self, name: str, function: watches.IndexFunction, *, failed: Callable[[], None] | None = None) -> None:
        self.name = name
        self.function = function
        self._failed = failed
        self._lock = threading.Lock()
        self._raised: collections.OrderedDict[str, None] = collections.OrderedDict()

    def __call__(self, obj: Mapping[str, Any]) -> tuple[watches.IndexKey, ...] | dict[watches.IndexKey, Any]:
        meta = obj.get("metadata") or {}
        who = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        try:
            result = self.function(obj)
        except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
            raise
        except BaseException as exc:  # any: see watches.safe_index
            self._raised_for(who, obj, exc)
            return ()
        with self._lock:
            self._raised.pop(who, None)
        if not isinstance(result, Mapping):
            return watches.safe_index(lambda _: result, obj, failed=self._failed)
        kept: dict[watches.IndexKey, Any] = {}
        refused = 0
        for key, value in result.items():
            try:
                # A copy: the object the function was given goes on to the handlers and the mapping functions, which
                # may change it, and a value of it kept as is would change with it.
                kept[watches.index_key(key)] = copy.deepcopy(value)
            except (TypeError, copy.Error):
                refused += 1
        if refused:
            structlog.get_logger("okt.indexes").warning(
                "an index function returned a key an index cannot hold, or a value it cannot copy: that key is left "
                "out of the index",
                index=self.name,
                name=meta.get("name"),
                namespace=meta.get("namespace"),
                keys=refused,
            )
            if self._failed is not None:
                self._failed()
        return kept

    def _raised_for(self, who: str, obj: Mapping[str, Any], exc: BaseException) -> None:
        meta = obj.get("metadata") or {}
        with self._lock:
            said = who in self._raised
            self._raised[who] = None
            self._raised.move_to_end(who)
            while len(self._raised) > _REMEMBERED:
                self._raised.popitem(last=False)
        if self._failed is not None:
            self._failed()
        if not said:
            structlog.get_logger("okt.indexes").warning(
                "an index function raised: the object is left out of the index until it changes and the function "
                "succeeds for it (said once per object)",
                index=self.name,
                name=meta.get("name"),
                namespace=meta.get("namespace"),
                error=watches.said_of(exc, obj),
            )


def read(
    reader: context_mod.Reader,
    client: kube_client.Client,
    controller: str,
    declared: Mapping[str, tuple[kinds.Kind | str, watches.IndexFunction]],
    name: str,
) -> Index:
    """The index ``name`` of a watched kind, read whole: from the cache, which keeps it; without one (a plain
    ``okt.reconcile`` call), built from a list of the kind.

    Raises:
        okt.ConfigurationError: no watch of the reconciler declares an index of that name.
    """
    found = declared.get(name)
    if found is None:
        raise errors.ConfigurationError(
            f"no index {name!r} of a watched kind is declared (declared: {sorted(declared) or 'none'}): "
            'okt.watch(kind, indexes={"name": fn})'
        )
    whole = getattr(reader, "whole_index", None)
    if whole is not None:
        index: Index | None = whole(watches.index_name(controller, name))
        if index is not None:
            return index
    kind, function = found
    return Index.of(reader.list(watches.resolve(client, kind), None), Indexer(name, function))
