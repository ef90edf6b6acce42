"""How an informer's store keeps each object: encoded, compressed against its kind's others, without what okt never
reads.

Why this exists: an operator's cache holds every object of every kind it watches, for as long as it runs; kept as
nested dicts, with their managedFields and kubectl's copy of the whole object, the store is most of the process's
memory. This module is the one place that decides what a stored object keeps and how its bytes are held.

Guarantees:

* :func:`strip` drops only what okt never reads (``metadata.managedFields`` but for the entries asked to be kept, and
  kubectl's ``last-applied-configuration`` annotation), and never changes a nested value in place;
* a :class:`Packed` object decodes to an equal, private copy on every read (a reconcile may change it freely); its
  resourceVersion, uid and index values are kept beside the bytes, so reading them decodes nothing;
* the bytes are only ever read back by the process that wrote them (marshal's format is Python's own).
"""

from __future__ import annotations

import dataclasses
import json
import marshal
import threading
import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from okt.resources import take_over
from okt.status import writer

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""kubectl's copy of the whole object it applied: as large as the object, and okt never reads it."""

_MARSHAL_FORMAT = 2
_WINDOW_BITS = 12
"""Raw deflate with a 4 KiB window: the dictionary and an object's repeats of it fit, and the state stays small."""

Indexer = Callable[[Mapping[str, Any]], Iterable[Hashable]]
"""A secondary index of an informer's store: an object's values under it (any hashable value, kept as it is given: a
uid's text, a key of an index of a watched kind), kept with it (:attr:`Packed.index`). One
that says so (:func:`keeps_payloads`) and returns a mapping ``{value: payload}`` keeps its payloads too
(:attr:`WithPayloads.payloads`): what a whole read of the index gives under each value instead of the object, without a
second copy of the object."""


def resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


class Codec:
    """Encodes one informer's objects and compresses them against a dictionary: the encoding of the first it stores.

    Why: objects of one kind in one store share most of their bytes — keys, labels, the template of a Deployment, the
    namespace, the owner's kind. Deflate primed with one of them keeps, for each other, little more than its own
    names, uids and versions (measured: a Deployment of 2.2 KB in 0.1 KB), and decompressing costs a few percent of
    decoding it. The dictionary never changes once chosen (every stored object is read with it); the primed
    (de)compressors are copied for each object, so the dictionary is hashed once.
    """

    __slots__ = ("_compressor", "_decompressor", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compressor: Any = None
        self._decompressor: Any = None

    def pack(self, obj: Mapping[str, Any]) -> bytes:
        raw = _encode(obj)
        if self._compressor is None:
            with self._lock:
                if self._compressor is None:
                    zdict = raw[-(1 << _WINDOW_BITS) :]
                    self._decompressor = zlib.decompressobj(-_WINDOW_BITS, zdict=zdict)
                    self._compressor = zlib.compressobj(
                        1, zlib.DEFLATED, -_WINDOW_BITS, 4, zlib.Z_DEFAULT_STRATEGY, zdict
                    )
        compressor = self._compressor.copy()
        data: bytes = compressor.compress(raw) + compressor.flush()
        return data

    def unpack(self, data: bytes) -> dict[str, Any]:
        # Bytes this process wrote (see _encode): never anything received.
        obj: dict[str, Any] = marshal.loads(self._decompressor.copy().decompress(data))  # noqa: S302
        return obj


def _encode(obj: Any) -> bytes:
    """``obj`` in marshal's format 2: several times quicker to write than JSON and a little quicker to read, and
    deterministic (format 2 has no back-references, which depend on reference counts), so the dictionary still
    matches. Only ever read back by this process (marshal's format changes between Python versions, and it is never
    given bytes from elsewhere). An object holding something marshal does not know (a subclass of dict) goes through
    JSON first, as the API would have returned it."""
    try:
        return marshal.dumps(obj, _MARSHAL_FORMAT)
    except ValueError:
        return marshal.dumps(json.loads(json.dumps(obj)), _MARSHAL_FORMAT)


class Packed:
    """One stored object, kept encoded and compressed: a small fraction of the memory of nested dicts, and every read
    decodes a private copy (which a reconcile may then change freely). Its index values alone: an informer none of
    whose indexers keeps payloads (:func:`keeps_payloads`) stores these, and pays nothing for payloads."""

    __slots__ = ("codec", "data", "index", "rv", "uid")

    payloads: tuple[tuple[Any, ...] | None, ...] | None = None
    """Per index, in the order of :attr:`index`: the payloads of its values, one each, or None where the indexer
    returned values alone (a whole read gives the object); None for all here (see :class:`WithPayloads`)."""

    def __init__(self, obj: Mapping[str, Any], indexers: Mapping[str, Indexer], codec: Codec) -> None:
        self.codec = codec
        self.data = codec.pack(obj)
        self.rv = resource_version(obj)
        self.uid = uid(obj)
        self.index: tuple[tuple[Hashable, ...], ...] = tuple(tuple(indexer(obj)) for indexer in indexers.values())

    def add_index(self, indexed: Indexed) -> None:
        """Keep the values of more indexes too, after those kept already."""
        self.index = (*self.index, *indexed.values)

    def keep_index(self, count: int) -> None:
        """Keep the values of the first ``count`` indexes only (the indexes added after them were given up)."""
        self.index = self.index[:count]

    def payloads_of(self, position: int, value: Hashable) -> tuple[Any, ...] | None:
        """The payloads the indexer at ``position`` gave ``value``, None when it gave values alone."""
        if self.payloads is None or self.payloads[position] is None:
            return None
        payloads = self.payloads[position]
        assert payloads is not None
        return tuple(p for v, p in zip(self.index[position], payloads, strict=True) if v == value)

    def unpack(self) -> dict[str, Any]:
        return self.codec.unpack(self.data)


class WithPayloads(Packed):
    """A stored object of an informer one of whose indexers keeps payloads (:func:`keeps_payloads`): the payloads an
    indexer returning a mapping ``{value: payload}`` gave it are kept with it, in :attr:`payloads`."""

    __slots__ = ("payloads",)

    def __init__(self, obj: Mapping[str, Any], indexers: Mapping[str, Indexer], codec: Codec) -> None:
        self.codec = codec
        self.data = codec.pack(obj)
        self.rv = resource_version(obj)
        self.uid = uid(obj)
        self.index = ()
        self.payloads = None
        self.add_index(Indexed.of(obj, indexers.values()))

    @classmethod
    def of(cls, packed: Packed) -> WithPayloads:
        """``packed`` as one that can keep payloads too (an indexer that keeps them added to its informer)."""
        made = cls.__new__(cls)
        made.codec, made.data, made.rv, made.uid = packed.codec, packed.data, packed.rv, packed.uid
        made.index, made.payloads = packed.index, packed.payloads
        return made

    def add_index(self, indexed: Indexed) -> None:
        """Keep the values (and payloads) of more indexes too, after those kept already."""
        before = len(self.index)
        self.index = (*self.index, *indexed.values)
        if self.payloads is not None or any(p is not None for p in indexed.payloads):
            self.payloads = (*(self.payloads or (None,) * before), *indexed.payloads)

    def keep_index(self, count: int) -> None:
        """Keep the values and payloads of the first ``count`` indexes only."""
        self.index = self.index[:count]
        if self.payloads is not None:
            self.payloads = self.payloads[:count]


@dataclasses.dataclass(frozen=True, slots=True)
class Indexed:
    """What some indexers give one object, apart from its stored entry: an index added to an informer already
    running is computed over the stored objects without the informer's lock, and kept with each entry
    (:meth:`Packed.add_index`) under it."""

    values: tuple[tuple[Hashable, ...], ...]
    """Per indexer, the values it gave."""
    payloads: tuple[tuple[Any, ...] | None, ...]
    """Per indexer, the payloads of its values, one each, or None where it gave values alone."""

    @classmethod
    def of(cls, obj: Mapping[str, Any], indexers: Iterable[Indexer]) -> Indexed:
        results = [indexer(obj) for indexer in indexers]
        return cls(
            tuple(tuple(result) for result in results),
            tuple(tuple(result.values()) if isinstance(result, Mapping) else None for result in results),
        )


def keeps_payloads(indexers: Iterable[Indexer]) -> bool:
    """Whether one of ``indexers`` may return a mapping ``{value: payload}`` whose payloads are kept: one says so with
    a true attribute ``keeps_payloads`` (:class:`okt.reconciler.indexes.Indexer` does)."""
    return any(getattr(indexer, "keeps_payloads", False) for indexer in indexers)


def strip(
    obj: dict[str, Any], status_owners: bool = False, field_owners: take_over.FieldOwners | None = None
) -> dict[str, Any]:
    """Drop what okt never reads from ``obj``'s metadata (which is changed in place; nested values are replaced,
    never changed): ``managedFields`` (often the largest part of an object; but for a primary whose status okt
    applies, who owns which status field: ``status_owners`` keeps that much; for a child okt applies, the entries a
    take-over would move: ``field_owners`` keeps those, and an empty list when there is none, so that the child says
    it has none) and kubectl's ``last-applied-configuration`` annotation (a copy of the whole object as kubectl last
    applied it)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        entries = meta.pop("managedFields", None)
        taken = field_owners.kept(entries) if field_owners is not None else []
        if status_owners and entries and isinstance(entries, list):
            # An entry a take-over moves is kept whole, its status part with it.
            rest = [e for e in entries if field_owners is None or not field_owners.moves(e)]
            taken.extend(writer.compact_managed_fields(rest))
        if taken or field_owners is not None:
            meta["managedFields"] = taken
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            kept = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
            if kept:
                meta["annotations"] = kept
            else:
                del meta["annotations"]
    return obj
