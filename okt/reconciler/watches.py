"""Watches of related kinds and indexes over the primaries: reconcile the objects a change concerns, by lookup.

Why this exists: a primary often depends on objects it does not own — a shared ConfigMap, a Secret named in its
spec, the Nodes it runs on. Their changes must reconcile the primaries that depend on them (controller-runtime's
``Watches(..., EnqueueRequestsFromMapFunc(fn))``), and finding those primaries must not scan every object of the kind
on every event (Kopf's indexes).

The declaration lives on the reconciler, in the shape of ``owns``: a tuple of values, one per related kind, each
naming the kind and how one of its objects maps to primaries::

    class MemcachedReconciler(okt.Reconciler):
        indexes = {"config": lambda obj: [f"{obj['metadata']['namespace']}/{obj['spec'].get('configMap')}"]}
        watches = (okt.watch("configmaps", map=lambda cm, ctx: ctx.index("config", okt.ref_of(cm))),)

Why a value per kind (``okt.watch(kind, map=fn)``) and not a decorator on a method (``@kopf.on.event``): a watch is
not a handler — it does no work but say *which* primaries to reconcile, and the reconcile stays the one place where
work happens; a tuple reads like ``owns`` next to it, and ``okt gen rbac`` reads the kinds from it the same way.
Why the lookups are of indexes on the *primaries*: the question a mapping asks is always "which primaries name this
object"; an index on the primary kind answers it from the store the controller keeps anyway (no extra informer), and
the same index serves a reconcile (``ctx.index(name, value)``). An index of the watched kind itself, read whole as
Kopf's handlers read ``@kopf.index("pods")``, is declared with its watch (``okt.watch(kind, indexes=...)``) and read
with ``ctx.indexed(name)``: see :mod:`okt.reconciler.indexes`.

Guarantees: an index is kept in step with the cache (no scan at lookup; a reader without indexes — a plain
``okt.reconcile`` call — falls back to filtering a list, with the same answer); the mapping function sees every change
of a watched object, the controller's own writes of it included (for a modification, both the old and the new object
are mapped, so a primary that named the object before the change is reconciled too; the changes of one object that
wait together for a slow mapping are mapped as one, from the state before the first to the state after the last: see
:mod:`okt.runtime.mapping_queue`); a mapping
function that raises, or returns items that name no primary (not a key, a key or object whose name is empty, or a key
without the namespace a namespaced primary needs), is logged and counted (``okt_watch_map_errors_total``), and the keys
it did return are still reconciled; an index function that raises for an object is logged and counted
(``okt_index_errors_total``), and leaves that object out of the index, the others in; only the primaries the
controller's cache holds are reconciled (a name outside the watched namespaces, refused by the filters, or of no
object, maps to nothing).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from okt import errors, secret_values
from okt.kube import client as kube_client
from okt.kube import kinds, objects

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod

Key = tuple[str | None, str]
"""``(namespace, name)`` of a primary object."""
IndexKey = str | int | float | None | tuple["IndexKey", ...]
"""What an index keeps under each object, and a lookup looks up (:func:`index_key`): text, a number (a boolean is one),
None, or a tuple of them; two are one key exactly when Python's ``==`` says so, as for the keys of a dict."""
IndexFunction = Callable[[Mapping[str, Any]], Iterable[Any] | int | float | tuple[Any, ...] | None]
"""``fn(obj) -> index values`` of one primary object: none (None, or an empty list) leaves the object out of the
index; a string, a number or a tuple is one value; a list (a set, any other iterable) holds several. Each value is
text, a number, a boolean, None or a tuple of them, kept as itself (:func:`index_key`): a lookup finds it by a value
Python finds equal (``1`` by ``1.0``, never by ``"1"``)."""
MapResult = Iterable["Key | Mapping[str, Any]"]
"""What a mapping function returns: keys ``(namespace, name)``, or primary objects (e.g. from ``ctx.index``)."""
MapFunction = Callable[[Mapping[str, Any], "MapContext"], MapResult]
"""``fn(obj, ctx) -> primaries to reconcile`` for one object of a watched kind."""


@dataclasses.dataclass(frozen=True)
class Watch:
    """A related kind whose changes reconcile the primaries ``map`` names, and whose ``indexes`` the cache keeps
    (see :func:`watch`)."""

    kind: kinds.Kind | str
    map: MapFunction | None
    indexes: Mapping[str, IndexFunction] = dataclasses.field(default_factory=dict)


def watch(
    kind: kinds.Kind | str, *, map: MapFunction | None = None, indexes: Mapping[str, IndexFunction] | None = None
) -> Watch:
    """Declare a related kind: each change of one of its objects reconciles the primaries ``map(obj, ctx)`` returns,
    and the cache keeps its ``indexes``, read whole with ``ctx.indexed(name)``.

    Args:
        kind: a :class:`okt.Kind`, or the kind named as ``kubectl`` does (``"configmaps"``, ``"cm"``, ``"Secret"``,
            ``"ingresses.networking.k8s.io"``), resolved by discovery when the controller starts.
        map: ``map(obj, ctx)`` with ``obj`` the watched object and ``ctx`` a :class:`MapContext`; returns keys
            ``(namespace, name)`` or primary objects. It runs on the controller's mapping thread, one event at a
            time in the order the watch told them (not on the informer's, which keeps up with the watch meanwhile):
            a slow one delays the mappings after it, not the cache. None: a change reconciles nothing (the kind is
            watched for its indexes).
        indexes: Kopf's ``@kopf.index(kind)``: ``name -> fn(obj)``, each an index over the kind's objects kept by
            the cache and read whole, as a mapping, with ``ctx.indexed(name)`` in hooks, timers and daemons.
            ``fn(obj)`` returns keys (the index holds the objects under them) or a mapping ``{key: value}`` (the
            index holds the values): see :mod:`okt.reconciler.indexes`. Names are the reconciler's, apart from
            its ``indexes``.

    Raises:
        TypeError: ``map`` or an index function is not a function, an index's name is no text, or neither ``map``
            nor ``indexes`` is given (the watch would do nothing).
    """
    if map is not None and not callable(map):
        raise TypeError(f"okt.watch(map=...) needs a function, got {map!r}")
    if indexes is not None and not isinstance(indexes, Mapping):
        raise TypeError(f'okt.watch(indexes=...) needs a mapping of names to functions, {{"name": fn}}: {indexes!r}')
    for name, function in (indexes or {}).items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"okt.watch(indexes=...): an index's name is text, got {name!r}")
        if not callable(function):
            raise TypeError(f"okt.watch(indexes=...): index {name!r} needs a function, got {function!r}")
    if map is None and not indexes:
        raise TypeError("okt.watch(kind) needs map=fn, indexes={name: fn}, or both: a watch of neither does nothing")
    return Watch(kind, map, dict(indexes or {}))


def resolve(client: kube_client.Client, kind: kinds.Kind | str) -> kinds.Kind:
    """A watch's kind: as declared, or resolved from its kubectl name by discovery."""
    if isinstance(kind, kinds.Kind):
        return kind
    return client.resolve_name(kind)


def ref_of(obj: Mapping[str, Any]) -> str:
    """``"namespace/name"`` (``"name"`` for a cluster-scoped object): the usual value of an index naming an object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def index_name(controller: str, name: str) -> str:
    """The name of a reconciler's index in the shared cache (two controllers may use the same short name)."""
    return f"{controller}/{name}"


def lookup(
    reader: context_mod.Reader,
    kind: kinds.Kind,
    controller: str,
    indexes: Mapping[str, IndexFunction],
    name: str,
    value: object,
    *,
    selects: Callable[[Mapping[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """The primaries whose index ``name`` holds ``value``: from the cache's index, or by filtering a list — of the
    objects ``selects`` keeps (the reconciler's filters, which decide what the cache, and so its index, holds).
    Index values are kept as themselves (:func:`index_key`), and ``value`` is looked up as a dict looks a key up: a
    port number finds what the index function returned as that number or as a float of the same value, not as its
    text (a label's ``"8080"``: the function returns ``int(...)`` of it, or the lookup is by text).

    Raises:
        okt.ConfigurationError: the reconciler declares no index of that name.
        TypeError: ``value`` is not one an index holds (a mapping, a list...: see :func:`index_key`).
    """
    function = indexes.get(name)
    if function is None:
        raise errors.ConfigurationError(f"no index {name!r} is declared (declared: {sorted(indexes) or 'none'})")
    value = index_key(value)
    by_index = getattr(reader, "by_index", None)
    if by_index is not None:
        found: list[dict[str, Any]] | None = by_index(kind, index_name(controller, name), value)
        if found is not None:
            return found
    return [
        obj
        for obj in reader.list(kind, None)
        if (selects is None or selects(obj)) and value in set(safe_index(function, obj))
    ]


def safe_index(
    function: IndexFunction, obj: Mapping[str, Any], *, failed: Callable[[], None] | None = None
) -> tuple[IndexKey, ...]:
    """The index values of ``obj``, each as an index keeps it (:func:`index_key`); none when the function raises (a
    bad object must not stop the informer), and without those an index cannot hold (a mapping, a list, a set): either
    is logged, by the value's type, never its content, and ``failed()`` called (the controller counts it).

    A string, a number or a tuple returned alone is one value: a string is an iterable of strings too, and indexing
    its characters would make every lookup of the value miss, silently; a tuple is a key of several parts, as in a
    dict (``(namespace, app)``), and a list (any other iterable) holds several values."""
    meta = obj.get("metadata") or {}
    try:
        values = function(obj)
        if values is None:
            return ()
        kept: list[IndexKey] = []
        refused: list[TypeError] = []
        for value in (values,) if isinstance(values, str | int | float | tuple) else values:
            try:
                kept.append(index_key(value))
            except TypeError as exc:
                refused.append(exc)
    except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
        raise
    # Any exception, SystemExit or one of the operator's own BaseException's too: one escaping would end the
    # informer's thread (the kind's cache stops), and Python's own last word on it quotes the text said_of leaves out.
    except BaseException as exc:
        structlog.get_logger("okt.watches").warning(
            "an index function raised: the object is left out of the index",
            name=meta.get("name"),
            namespace=meta.get("namespace"),
            error=said_of(exc, obj),
        )
        if failed is not None:
            failed()
        return ()
    if refused:
        structlog.get_logger("okt.watches").warning(
            "an index function returned a value an index cannot hold: that value is left out of the index",
            name=meta.get("name"),
            namespace=meta.get("namespace"),
            error=errors.said(refused[0]),
            **({"more": len(refused) - 1} if len(refused) > 1 else {}),
        )
        if failed is not None:
            failed()
    return tuple(kept)


def said_of(exc: BaseException, obj: Mapping[str, Any]) -> str:
    """``exc``, raised by an index, mapping or filter function given ``obj``, as :func:`okt.errors.said` says it —
    ``obj``'s values left out when it is a Secret (:mod:`okt.secret_values`: an index of Secrets, a mapping of a
    watched Secret, a reconciler's ``when`` of its Secrets, that fails on a value, ``int(...)`` of a port that is none,
    quotes it).

    Why only on failure: an index function runs for every object of every event, and a block around each call would
    cost every event what only a failure needs (a Secret read through a client there is the rare case, see
    :func:`keys_for_event` for a mapping's reads)."""
    with secret_values.given(obj):
        return errors.said(exc)


def index_key(value: object) -> IndexKey:
    """The key an index keeps for ``value``, and a lookup looks ``value`` up by: both are made by this one rule, and
    two values are one key exactly when Python's ``==`` says so, as two keys of a dict are.

    * a string is itself (a ``str`` enum member its value: ``Tier.GOLD`` is ``"gold"``);
    * a number or a boolean is itself (an ``int`` enum member its value); as in a dict, ``1``, ``1.0`` and ``True``
      are one key, and the text ``"1"`` is another;
    * None is itself;
    * a tuple is the tuple of its items, each kept so (a named tuple as a plain one): ``("ns", 1)`` finds
      ``("ns", 1.0)``, never ``("ns", "1")`` nor the text ``'["ns", 1]'``.

    Why the value itself and not its text: an index read whole (:class:`okt.Index`) gives its keys back as the
    function returned them, a tuple as a tuple, which no text can be read back into without a second copy of each;
    and a text mixes keys Python tells apart (the tuple ``("a", "b")`` and the string ``'["a","b"]'``). Kept as a
    plain ``str``, ``int``, ``float`` or ``tuple``, a key compares and hashes as Python's own types do, whatever class
    the function returned (an enum member, a subclass with an ``__eq__`` of its own).

    Raises:
        TypeError: ``value`` is (or a tuple holds) a mapping, a list, a set or another object (a mutable value
            has no lasting hash, another class compares as it chooses, by identity often, so a lookup would miss,
            silently), or NaN, which equals nothing, itself included. Said by its type, never its content (an index
            may read a Secret).
    """
    wrong = _unindexable(value)
    if wrong is not None:
        raise TypeError(f"an index value is text, a number or a tuple of them, got a {wrong}")
    return _plain(value)


def _plain(value: object) -> IndexKey:
    """``value`` (which :func:`_unindexable` accepts) as Python's own types: ``str``, ``int`` (``bool``), ``float``,
    None, ``tuple``."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    assert isinstance(value, tuple)
    return tuple(_plain(item) for item in value)


def _unindexable(value: object) -> str | None:
    """The type of what makes ``value`` unfit for an index, or None."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if value is None or isinstance(value, str | int | float):
        return None
    if isinstance(value, tuple):
        return next((f"tuple holding a {inner}" for inner in map(_unindexable, value) if inner is not None), None)
    return type(value).__name__


@dataclasses.dataclass(frozen=True)
class MapContext:
    """What a mapping function receives besides the watched object.

    Attributes:
        kind: the primary kind.
        reader: the cache (reads of any kind; watched kinds from memory).
        log: a logger bound with the controller's name.
    """

    kind: kinds.Kind
    reader: context_mod.Reader
    log: structlog.typing.FilteringBoundLogger
    find: Callable[[str, object], list[dict[str, Any]]] = dataclasses.field(repr=False)

    def index(self, name: str, value: object) -> list[dict[str, Any]]:
        """The primaries whose index ``name`` (the reconciler's ``indexes``) holds ``value`` (looked up as a dict looks
        a key up: see :func:`index_key`): a lookup, no scan."""
        return self.find(name, value)


def keys_of(
    result: MapResult | None, namespaced: bool, kind: kinds.Kind | None = None
) -> tuple[list[Key], list[BaseException]]:
    """The distinct keys a mapping function returned (objects turned into their keys), in order, and what was wrong
    with the rest: an item that is not a key is left out, never the keys beside it (a primary one bad item kept from
    its reconcile would wait, silently, for a change that may never come).

    What is wrong, each a ``TypeError``: an item that is neither a key nor an object; an object of another kind than
    the primary ``kind`` (the watched object itself, say, whose name would name a primary that has nothing to do with
    it); a key or object whose name is empty (a field the mapping read was empty); for a namespaced primary, a key
    without a namespace (it names no object); a result that is not a list (one key, one object or a string, whose
    items are not keys). An exception raised while the result is read (a generator's) ends it: what it gave before is
    kept.
    """
    what = f"(namespace, name) keys or {kind.kind} objects" if kind is not None else "(namespace, name) keys or objects"
    wrong = _not_a_list(result, what)
    if wrong is not None:
        return [], [wrong]
    found: dict[Key, None] = {}
    problems: list[BaseException] = []
    try:
        for item in result or ():
            try:
                key = _key_of(item, namespaced, kind, what)
            except TypeError as exc:
                problems.append(exc)
                continue
            found[key] = None
    except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
        raise
    except BaseException as exc:  # as a mapping's own raising (see keys_for_event)
        problems.append(exc)
    return list(found), problems


def _not_a_list(result: object, what: str) -> TypeError | None:
    """Why ``result`` is not a list of keys or objects as a whole, or None."""
    if result is None:
        return None
    if isinstance(result, str | bytes):
        return TypeError(f"a mapping function returns a list of {what}, got {_said(result)}: return a list of keys")
    if isinstance(result, tuple) and len(result) == 2 and all(isinstance(part, str | None) for part in result):
        return TypeError(
            f"a mapping function returns a list of {what}, got one key {result!r}: return a list of keys, [{result!r}]"
        )
    if isinstance(result, Mapping):
        meta = result.get("metadata") or {}
        return TypeError(
            f"a mapping function returns a list of {what}, got one object ({result.get('kind')} "
            f"{meta.get('name')!r}): return a list of objects, [obj]"
        )
    if not isinstance(result, Iterable):
        return TypeError(f"a mapping function returns a list of {what}, got {_said(result)}, which is not a list")
    return None


def _key_of(item: object, namespaced: bool, kind: kinds.Kind | None, what: str) -> Key:
    """The key one item of a mapping's result names.

    Raises:
        TypeError: it names no primary (see :func:`keys_of`).
    """
    if isinstance(item, Mapping):
        meta = item.get("metadata") or {}
        other = (item.get("apiVersion"), item.get("kind"))
        if kind is not None and item.get("kind") and other != (kind.api_version, kind.kind):
            raise TypeError(f"a mapping function returns {what}, got a {item.get('kind')} ({meta.get('name')!r})")
        namespace, name = meta.get("namespace"), str(meta.get("name") or "")
    elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
        namespace, name = item
    else:
        raise TypeError(f"a mapping function returns {what}, got {_said(item)}")
    primary = kind.kind if kind is not None else "primary"
    if not name:
        # An empty name (a field the mapping read left empty) names no object: left out silently, the primary the
        # mapping meant waited for a change that never came.
        got = f"{(namespace, name)!r}" if not isinstance(item, Mapping) else f"a {item.get('kind') or 'object'}"
        raise TypeError(f"a mapping function's result names no {primary}: its name is empty, got {got}")
    if not namespaced:
        return None, name
    if not (isinstance(namespace, str) and namespace):
        raise TypeError(f"a {primary} is namespaced: its key names its namespace, got {(namespace, name)!r}")
    return namespace, name


def _said(value: object) -> str:
    """What a mapping function returned that is no key nor object, said by its type, never its content: a mapping may
    read a Secret, and return from it what it meant to read elsewhere (as an index value is said: :func:`index_key`).
    """
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "bytes"
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    if isinstance(value, tuple | list):
        return f"{article} {name} of {len(value)} items"
    return f"{article} {name}"


def _content(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": objects.lasting_metadata(obj)}


def keys_for_event(
    watched: Watch,
    event_type: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    ctx: MapContext,
    *,
    failed: Callable[[], None] | None = None,
) -> list[Key]:
    """The primaries one event of a watched kind concerns: ``map`` of the new object and, when ``old`` is given and
    differs from it in more than its resourceVersion, of ``old`` too — the object before a modification, or the first
    state of the events of one object that waited together for the mapping (see :mod:`okt.runtime.mapping_queue`). A
    modification that changed nothing but the resourceVersion concerns none; what a mapping function returned that
    names no primary (see :func:`keys_of`), or its raising, is logged and ``failed()`` called (the controller counts
    it), once per call, and the keys it did return are kept."""
    unchanged = old is not None and _content(obj) == _content(old)
    if watched.map is None or (unchanged and event_type == "MODIFIED"):
        return []
    found: dict[Key, None] = {}
    # The event's block (:mod:`okt.secret_values`): a mapping may read a Secret (through ``ctx.reader``) to name its
    # primaries, and its values are left out of what is said of its failure (5 calls an event: the block's enter and
    # exit, and the context variable's get, set and reset).
    with secret_values.held():
        for version in (obj,) if old is None or unchanged else (obj, old):
            try:
                keys, problems = keys_of(watched.map(version, ctx), ctx.kind.namespaced, ctx.kind)
            except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
                raise
            # Any exception: one that is no Exception (SystemExit, the operator's own) escaped the block, and the
            # mapping thread said it with the values the block leaves out.
            except BaseException as exc:
                keys, problems = [], [exc]
            found.update(dict.fromkeys(keys))
            if problems:
                meta = version.get("metadata") or {}
                # One line per call, not per item: a mapping that returns thousands of wrong items says so once.
                ctx.log.error(
                    "a watch's mapping function raised or returned what names no primary: that part reconciles nothing",
                    watched=str(version.get("kind")),
                    name=meta.get("name"),
                    namespace=meta.get("namespace"),
                    error=said_of(problems[0], version),
                    **({"more": len(problems) - 1} if len(problems) > 1 else {}),
                )
                if failed is not None:
                    failed()
    return list(found)
