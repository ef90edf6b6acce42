"""The cache: the informers of one manager, and the read side every reconcile goes through.

Why this exists: reconciles read the custom resource and its children many times; the cache answers from the
informers' stores instead of the API (the :class:`okt.reconciler.core.Reader` protocol), fans each informer's events
out to every controller that asked for the kind, and indexes children by their controller owner so that "which
primary does this child belong to" and "which children does this primary have" are dict lookups.

Guarantees:

* one informer per (kind, namespace scope): all namespaces, or one per watched namespace for a namespaced kind
  (a cluster-scoped kind always has one cluster-wide informer);
* **reads return private copies**: a reconcile may mutate what :meth:`Cache.get` / :meth:`Cache.list` /
  :meth:`Cache.owned_by` return without corrupting the store (only reads pay for a copy; the store itself is not
  duplicated);
* a kind nobody started an informer for, or a namespace outside the watched ones, is read **live** from the API (so a
  reconcile can read any object; only watched kinds are cached);
* :meth:`Cache.observe` writes okt's own write answers through to the store, if newer; the watch's echo of such a
  write is delivered to every handler but those of its writer (another controller watching the kind learns of it);
* a handler added to a kind that is already watched receives an ``ADDED`` event for every stored object, on the
  caller's thread, each as stored when its turn comes while the informer's thread waits (that thread may have told
  the handler of it already): never one the watch told deleted meanwhile, nor a state older than one told; it is the
  handler's sweep, told with :func:`okt.runtime.informer.sweeping` true, as a list's events are;
* a handler that raises is logged (the kind, the event and the object's name, nothing of its content) and keeps the
  event from no other handler of the kind: one controller's bug leaves the others sharing the informer informed.
* a kind whose list or watch the API server refuses (``403``: the operator's role lost the rule; or ``404``/``405``:
  the kind is not served any more) is named by :meth:`Cache.refusal` until a list or watch of it is answered again:
  the store keeps what it held, which nothing refreshes meanwhile, and a controller's reconciles refuse to read it
  (the other kinds are served as usual).

Caveats: the label selector, when set, applies to the kinds started with ``use_selector=True`` (the primary kinds),
never to children, which do not carry the user's labels; a kind is started with one choice for its lifetime.
"""

from __future__ import annotations

import builtins
import functools
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import structlog

from okt import errors, secret_values
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.reconciler import indexes, watches
from okt.resources import take_over
from okt.runtime import informer as informer_mod
from okt.runtime import packing

_log = structlog.get_logger(__name__)

#: The index of children by the uid of their controller owner.
OWNER_INDEX = "owner-uid"

_KindKey = tuple[str, str]


def _owner_uids(obj: Mapping[str, Any]) -> Iterable[str]:
    uid = objects.controller_uid(obj)
    return (uid,) if uid else ()


def labels_match(obj: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    """Whether ``obj`` carries every label of ``labels`` with the same value (``None`` or empty matches all)."""
    if not labels:
        return True
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


class Cache:
    """Informers per kind, event fan-out, and the store-backed :class:`~okt.reconciler.core.Reader`.

    Args:
        client: the shared API client.
        namespaces: the namespaces to watch; ``None`` (or empty) watches all namespaces.
        label_selector: the selector for kinds started with ``use_selector=True``.
        resync: a periodic re-announcement interval for every informer (see :class:`~okt.runtime.informer.Informer`).
        watch_timeout: passed to every informer.
        inactivity_timeout: passed to every informer.
    """

    def __init__(
        self,
        client: kube_client.Client,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        *,
        resync: float | None = None,
        watch_timeout: int = 300,
        inactivity_timeout: float = 330.0,
    ) -> None:
        self.client = client
        self.namespaces: tuple[str, ...] | None = tuple(dict.fromkeys(namespaces)) if namespaces else None
        self.label_selector = label_selector or None
        self._resync = resync
        self._watch_timeout = watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._lock = threading.RLock()
        self._kinds: dict[_KindKey, kinds.Kind] = {}
        self._informers: dict[_KindKey, dict[str | None, informer_mod.Informer]] = {}
        # The handlers of each kind, with the writer each speaks for (see :meth:`observe`).
        self._handlers: dict[_KindKey, list[tuple[informer_mod.EventHandler, object | None]]] = {}
        self._selected: dict[_KindKey, bool] = {}
        self._status_owners: dict[_KindKey, bool] = {}
        self._status_owners_wanted: set[_KindKey] = set()
        self._field_owners: dict[_KindKey, take_over.FieldOwners | None] = {}
        self._field_owners_wanted: dict[_KindKey, take_over.FieldOwners] = {}
        self._filtered: dict[_KindKey, bool] = {}
        self._stopped = False
        self._recovery_listeners: list[Callable[[], None]] = []
        self._refusal_listeners: dict[_KindKey, list[Callable[[str | None], None]]] = {}

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(
        self,
        kind: kinds.Kind,
        on_event: informer_mod.EventHandler,
        *,
        use_selector: bool = False,
        status_owners: bool = False,
        field_owners: take_over.FieldOwners | None = None,
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
        indexers: Mapping[str, packing.Indexer] | None = None,
        writer: object | None = None,
    ) -> None:
        """Watch ``kind`` (once) and deliver its events to ``on_event`` (every caller gets every event, but the echo
        of a write ``writer`` made and wrote through with :meth:`observe`: it knows that one).

        ``indexers`` adds secondary indexes over the kind's store (:meth:`by_index`), also to a kind already watched:
        over the objects stored then, on the caller's thread, without the cache's lock nor the informer's (an index
        function that hangs holds this start, and another start adding indexes to the kind, never ``/readyz``, the
        start of another kind, the kind's reads or its events: see
        :meth:`okt.runtime.informer.Informer.add_indexers`).

        ``status_owners`` keeps who owns which status field of each object (what applying the status needs), as
        does :meth:`keep_status_owners` before; ``field_owners`` keeps the managedFields entries a take-over of a
        child would move (what updating a child okt applies needs), as does :meth:`keep_field_owners` before;
        ``keep`` filters objects on the client side (see :class:`okt.runtime.informer.Informer`).

        Raises:
            okt.ConfigurationError: ``kind`` was started before with a different ``use_selector`` or a filter, or
                without the status owners or the field owners this start asks for.
            RuntimeError: the cache is stopped.
        """
        key = (kind.api_version, kind.kind)
        replay: list[informer_mod.Informer] = []
        with self._lock:
            if self._stopped:
                raise RuntimeError("the cache is stopped")
            status_owners = status_owners or key in self._status_owners_wanted
            wanted = self._field_owners_wanted.get(key)
            if wanted is not None:
                field_owners = wanted if field_owners is None else field_owners | wanted
            if key in self._informers:
                if status_owners and not self._status_owners[key]:
                    # The store holds the kind without who owns its status fields, and cannot get them back.
                    raise errors.ConfigurationError(
                        f"{kind.kind} ({kind.api_version}) is already watched without its status owners, which "
                        "applying its status needs: declare it with Cache.keep_status_owners before starting it"
                    )
                kept = self._field_owners[key]
                if field_owners is not None and (kept is None or not kept.covers(field_owners)):
                    # The store holds the kind without the entries a take-over needs, and cannot get them back: its
                    # objects would read as if there were none to take over.
                    raise errors.ConfigurationError(
                        f"{kind.kind} ({kind.api_version}) is already watched without the managedFields entries of "
                        "its field managers, which updating it as a child needs: declare them with "
                        "Cache.keep_field_owners before starting it"
                    )
                narrowed = (self.label_selector is not None and self._selected[key] != use_selector) or (
                    keep is not None or self._filtered.get(key, False)
                )
                if narrowed:
                    # One store per kind: a view narrowed by a selector or a filter cannot also serve the full one.
                    raise errors.ConfigurationError(
                        f"{kind.kind} ({kind.api_version}) is watched twice in one process, once narrowed (a primary "
                        "with a label selector or a filter) and once whole (a primary or an owned kind): run the "
                        "two reconcilers in separate processes, or drop the narrowing"
                    )
                # Replay whatever is stored, synced or not: an object may also arrive by the informer thread, and a
                # duplicate ADDED is harmless where a missed one is not. The handler joins before the replay (below):
                # what the store no longer holds when the replay reaches it, its events told the handler.
                replay = list(self._informers[key].values())
                new: list[informer_mod.Informer] = []
            else:
                self._kinds[key] = kind
                self._selected[key] = use_selector
                self._status_owners[key] = status_owners
                self._field_owners[key] = field_owners
                self._filtered[key] = keep is not None
                self._handlers[key] = [(on_event, writer)]
                scopes: Sequence[str | None] = self.namespaces if kind.namespaced and self.namespaces else (None,)
                selector = self.label_selector if use_selector else None
                informers = {
                    scope: informer_mod.Informer(
                        self.client,
                        kind,
                        scope,
                        selector,
                        on_event=self._fan_out(key),
                        resync=self._resync,
                        watch_timeout=self._watch_timeout,
                        inactivity_timeout=self._inactivity_timeout,
                        indexers={OWNER_INDEX: _owner_uids, **(indexers or {})},
                        status_owners=status_owners,
                        field_owners=field_owners,
                        keep=keep,
                        on_recovered=self._recovered,
                        on_refusal=functools.partial(self._refusal_changed, key, scope),
                    )
                    for scope in scopes
                }
                self._informers[key] = informers
                new = list(informers.values())
        # The indexes added to a kind already watched are built over its stored objects by the operator's own index
        # functions, which may take their time or never return: never under the cache's lock, which /readyz takes,
        # and every other start (nor under the informer's: its reads and events go on, see Informer.add_indexers).
        # Before the replay, so the handler joining finds them complete. One informer after the other: of a kind
        # watched in several namespaces, an index is readable meanwhile in the namespaces built so far (by_index says
        # None, whole_index covers those alone). Nothing reads it then: it is named for the controller starting
        # (watches.index_name; one name per controller in a manager, per index in a reconciler), whose reconciles,
        # timers and daemons begin once every controller's watch() returned (Manager._begin), and whose mapping
        # thread reads only the primaries' indexes, added by the primary's start before that thread runs. A reader
        # of an index while its start is under way would have to wait for that start.
        for informer in replay:
            informer.add_indexers(indexers or {})
        if replay:
            # Once its indexes are there: an event it is told reads them (a watch's mapping), none reads as unwatched.
            with self._lock:
                self._handlers[key].append((on_event, writer))
        # A handler joining a synced kind learns what is already there; later events follow on the informer thread.
        # Each object as stored when its turn comes, while that thread waits (see Informer.replay), and without the
        # cache's lock, which the thread takes to deliver: taken from a list of the objects read before, the replay
        # told one deleted meanwhile after its DELETED (a reconcile of an object gone), and a state older than the one
        # a MODIFIED had told (a watch's mapping named the primaries the object named before).
        for informer in replay:
            informer.replay(lambda obj: _deliver(kind, on_event, informer_mod.ADDED, obj, None))
        for informer in new:
            informer.start()

    def keep_status_owners(self, kind: kinds.Kind) -> None:
        """Keep who owns which status field of ``kind``'s objects, whoever starts the kind: a kind one reconciler owns
        may be the primary of another that applies its status, and a store started without the owners cannot get
        them back (its objects would read as if okt owned no status field). Call it before starting the kind."""
        with self._lock:
            self._status_owners_wanted.add((kind.api_version, kind.kind))

    def keep_field_owners(self, kind: kinds.Kind, owners: take_over.FieldOwners) -> None:
        """Keep the managedFields entries of ``kind``'s objects a take-over for ``owners`` would move, whoever starts
        the kind (see :meth:`keep_status_owners`: a store started without them cannot get them back). Call it before
        starting the kind."""
        key = (kind.api_version, kind.kind)
        with self._lock:
            known = self._field_owners_wanted.get(key)
            self._field_owners_wanted[key] = owners if known is None else known | owners

    def _fan_out(self, key: _KindKey) -> informer_mod.EventHandler:
        def deliver(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            with self._lock:
                handlers = tuple(self._handlers.get(key, ()))
            echo = informer_mod.echo_of()
            for handler, writer in handlers:
                if echo is None or writer is not echo:
                    _deliver(kind, handler, event_type, obj, old)

        kind = self._kinds[key]
        return deliver

    def on_recovered(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (on an informer's thread) whenever an informer reaches the API server again after its
        list or watch failed."""
        with self._lock:
            if listener not in self._recovery_listeners:
                self._recovery_listeners.append(listener)

    def _recovered(self) -> None:
        with self._lock:
            listeners = tuple(self._recovery_listeners)
        for listener in listeners:
            listener()

    def on_refusal_changed(self, kind: kinds.Kind, listener: Callable[[str | None], None]) -> None:
        """Call ``listener`` (on an informer's thread) whenever an informer of ``kind`` finds the kind no longer served
        (:attr:`okt.runtime.informer.Informer.served`) or its list or watch first refused
        (:attr:`okt.runtime.informer.Informer.refusal`), and when the list that answers again is in the store, before
        any of its changes: it reads :meth:`refusal` of the scope it is given then — the informer's namespace, or
        ``None`` for one of every namespace (and a cluster-scoped kind's). Each watched namespace is listed and watched
        on its own: a Role taken away in one is refused there only."""
        with self._lock:
            listeners = self._refusal_listeners.setdefault((kind.api_version, kind.kind), [])
            if listener not in listeners:
                listeners.append(listener)

    def _refusal_changed(self, key: _KindKey, scope: str | None) -> None:
        with self._lock:
            listeners = tuple(self._refusal_listeners.get(key, ()))
        for listener in listeners:
            listener(scope)

    @property
    def synced(self) -> bool:
        """Whether every informer started so far has its first list in the store."""
        with self._lock:
            informers = self._all_informers()
        return all(i.has_synced.is_set() for i in informers)

    def unserved(self) -> list[kinds.Kind]:
        """The watched kinds the API server does not serve any more (their CRD deleted, or their version no longer
        served: see :attr:`okt.runtime.informer.Informer.served`), in the order they were started."""
        with self._lock:
            watched = [(self._kinds[key], scoped) for key, scoped in self._informers.items()]
        return [kind for kind, scoped in watched if not all(i.served for i in scoped.values())]

    def refusal(self, kind: kinds.Kind, namespace: str | None) -> errors.ApiError | None:
        """Why what the cache holds of ``kind`` in ``namespace`` (every watched namespace when ``None``) cannot be
        trusted, as the error a read of it raises: the API server refuses its list or watch — a ``Forbidden`` (403:
        the operator's role no longer grants them, see :attr:`okt.runtime.informer.Informer.refusal`) or a
        ``NotFound`` (404 or 405: the kind is not served any more, see :attr:`okt.runtime.informer.Informer.served`)
        — and nothing has refreshed the store since. None when it is watched and served to okt, or not watched (it is
        then read from the API)."""
        # Asked before every read of a reconcile: no lock (a kind's informers are never changed once started).
        scoped = self._informers.get((kind.api_version, kind.kind))
        if not scoped:
            return None
        if kind.namespaced and namespace is not None and None not in scoped:
            found = scoped.get(namespace)
            chosen: Iterable[informer_mod.Informer] = () if found is None else (found,)
        else:
            chosen = scoped.values()
        for informer in chosen:
            where = f" in namespace {informer.namespace}" if informer.namespace else ""
            if not informer.served:
                return errors.NotFound(
                    404,
                    "NotFound",
                    f"the API server does not serve {kind.kind} ({kind.api_version}) any more (its CRD deleted, or "
                    f"its version no longer served), so what okt holds of them{where} may be stale: okt reads them "
                    "again once it serves them",
                )
            refused = informer.refusal
            if refused is not None:
                # Before the first sync the store holds nothing yet: "stale" would send the reader the wrong way.
                synced = informer.has_synced.is_set()
                held = "so what it holds of them may be stale" if synced else "so it holds none of them yet"
                return errors.Forbidden(
                    refused.status,
                    refused.api_reason,
                    f"okt may {'no longer' if synced else 'not'} list and watch {kind.kind} "
                    f"({kind.api_version}){where}, {held}: grant list and watch on {kind.plural} (okt gen rbac "
                    f"writes every rule the operator needs); the API server said: {refused.api_message}",
                )
        return None

    def blocked(self) -> list[tuple[kinds.Kind, errors.ApiError]]:
        """The watched kinds not synced yet because the API server refuses their list or watch (``403``) or does not
        serve them, each with the error :meth:`refusal` words for it (the rule to grant), in the order they were
        started. Nothing but the API server's answer to come keeps them from syncing."""
        with self._lock:
            watched = [(self._kinds[key], scoped) for key, scoped in self._informers.items()]
        blocked = []
        for kind, scoped in watched:
            if all(i.has_synced.is_set() for i in scoped.values()):
                continue
            refused = self.refusal(kind, None)
            if refused is not None:
                blocked.append((kind, refused))
        return blocked

    def refused(self) -> list[tuple[kinds.Kind, errors.ApiError]]:
        """The watched kinds synced once whose list or watch the API server refuses okt since (``403``: the
        operator's role lost the rule), each with the error :meth:`refusal` words for it (the rule to grant), in the
        order they were started: their reads fail, saying so, until it is granted again. A kind not synced yet is
        :meth:`blocked`'s, one not served :meth:`unserved`'s."""
        with self._lock:
            watched = [(self._kinds[key], scoped) for key, scoped in self._informers.items()]
        refused = []
        for kind, scoped in watched:
            informers = scoped.values()
            if not all(i.has_synced.is_set() and i.served for i in informers):
                continue
            if any(i.refusal is not None for i in informers):
                refusal = self.refusal(kind, None)
                if refusal is not None:
                    refused.append((kind, refusal))
        return refused

    def settled(self) -> bool:
        """Whether every informer started so far has synced, or is refused or not served by the API server: no first
        list is still under way, so a read of a watched kind is either served from a full store or fails."""
        with self._lock:
            informers = self._all_informers()
        return all(i.has_synced.is_set() or i.refusal is not None or not i.served for i in informers)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until :attr:`synced` (True) or ``timeout`` seconds pass (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            informers = self._all_informers()
        for informer in informers:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not informer.has_synced.wait(remaining):
                return False
        return True

    def stop(self, wait: float | Callable[[], float] = 0.0) -> None:
        """Stop every informer (no event is delivered afterwards, no list or watch begins); the stores stay readable.

        ``wait`` bounds, in seconds, the wait for their threads to end (a list under way when the stop came is
        answered first: it cannot be interrupted); a callable is asked again before each thread."""
        with self._lock:
            self._stopped = True
            informers = self._all_informers()
        for informer in informers:
            informer.stop()
        left = wait if callable(wait) else (lambda: wait)
        for informer in informers:
            informer.join(left())

    def progress(self, kind: kinds.Kind) -> tuple[Callable[[], int], Callable[[], bool], Callable[[], bool]]:
        """How far the sync of ``kind`` is: a count of its stored objects, whether every informer has listed, and
        whether the API server still serves it (see :meth:`unserved`)."""

        def stored() -> int:
            return sum(len(i) for i in self.informers(kind))

        def synced() -> bool:
            return all(i.has_synced.is_set() for i in self.informers(kind))

        def served() -> bool:
            return all(i.served for i in self.informers(kind))

        return stored, synced, served

    def informers(self, kind: kinds.Kind) -> list[informer_mod.Informer]:
        """The informers of ``kind`` (empty when it is not watched)."""
        with self._lock:
            return list(self._informers.get((kind.api_version, kind.kind), {}).values())

    def _all_informers(self) -> list[informer_mod.Informer]:
        return [i for scoped in self._informers.values() for i in scoped.values()]

    def unwatched(self, kind: kinds.Kind, namespace: str | None) -> bool:
        """Whether ``kind`` is watched in some namespaces only (``okt run -n``), and ``namespace`` is not one of them:
        an object okt writes there is read from the API, but no change of it is ever heard of."""
        scoped = self._informers.get((kind.api_version, kind.kind))
        if not scoped or not kind.namespaced or namespace is None:
            return False
        return None not in scoped and namespace not in scoped

    def _informer_for(self, kind: kinds.Kind, namespace: str | None) -> informer_mod.Informer | None:
        with self._lock:
            scoped = self._informers.get((kind.api_version, kind.kind))
        if not scoped:
            return None
        if None in scoped:
            return scoped[None]
        return scoped.get(namespace)

    # -- the Reader protocol -------------------------------------------------------------------------------------

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        """The object (a private copy), or ``None`` when it does not exist.

        Raises:
            okt.InvalidSpec: a ``name`` no object can have (empty, ``db/``), from the store as from a request
                (:func:`okt.kube.kinds.check_name`).
        """
        kinds.check_name(kind, name)
        informer = self._informer_for(kind, namespace if kind.namespaced else None)
        if informer is None:
            return self.client.get_or_none(kind, name, namespace if kind.namespaced else None)
        found = informer.get(namespace if kind.namespaced else None, name)
        if found is not None:
            secret_values.hold(kind.api_version, kind.kind, (found,))
        return found

    def uid(self, kind: kinds.Kind, name: str, namespace: str | None) -> str | None:
        """The uid of the object (``""`` when it has none), or ``None`` when it does not exist: from the store without
        decoding the object, for a watched kind; read from the API otherwise. A ``name`` no object can have: as
        :meth:`get`."""
        kinds.check_name(kind, name)
        informer = self._informer_for(kind, namespace if kind.namespaced else None)
        if informer is None:
            found = self.get(kind, name, namespace)
            return None if found is None else str((found.get("metadata") or {}).get("uid") or "")
        return informer.uid(namespace if kind.namespaced else None, name)

    def each(self, kind: kinds.Kind, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Every cached object of a watched ``kind`` in ``namespace`` (all its namespaces when ``None``), decoded one
        at a time as the caller goes; nothing for a kind that is not watched."""
        with self._lock:
            scoped = dict(self._informers.get((kind.api_version, kind.kind), {}))
        if kind.namespaced and namespace is not None:
            chosen = [i for scope, i in scoped.items() if scope in (None, namespace)]
        else:
            chosen = builtins.list(scoped.values())
        for informer in chosen:
            if informer.namespace is None and kind.namespaced and namespace is not None:
                yield from (obj for obj in informer.each() if _namespace(obj) == namespace)
            else:
                yield from informer.each()

    def keys(self, kind: kinds.Kind) -> Iterator[tuple[str | None, str]]:
        """``(namespace, name)`` of every cached object of a watched ``kind`` (namespace ``None`` when cluster-scoped),
        none decoded; nothing for a kind that is not watched."""
        with self._lock:
            chosen = builtins.list(self._informers.get((kind.api_version, kind.kind), {}).values())
        for informer in chosen:
            for namespace, name in informer.stored_keys():
                yield namespace or None, name

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """The objects of ``kind`` in ``namespace`` (all watched namespaces when ``None``) carrying ``labels``.

        Served from the store, filtered in memory; from the API when the kind or namespace is not watched.

        Raises:
            okt.InvalidSpec: ``labels`` that are no selector's (:func:`okt.kube.kinds.label_selector`), either way.
        """
        selector = kinds.label_selector(labels)
        with self._lock:
            scoped = dict(self._informers.get((kind.api_version, kind.kind), {}))
        if kind.namespaced and namespace is not None:
            chosen = [i for scope, i in scoped.items() if scope in (None, namespace)]
        else:
            chosen = list(scoped.values())
        if not chosen:
            scope = namespace if kind.namespaced else None
            items, _ = self.client.list(kind, scope, label_selector=selector)
            owners = self._status_owners.get((kind.api_version, kind.kind), False)
            field_owners = self._field_owners.get((kind.api_version, kind.kind))
            for item in items:
                packing.strip(item, owners, field_owners)
            return items
        found = [
            obj
            for informer in chosen
            for obj in informer.items()
            if (namespace is None or not kind.namespaced or _namespace(obj) == namespace) and labels_match(obj, labels)
        ]
        secret_values.hold(kind.api_version, kind.kind, found)
        return found

    def observe(self, obj: Mapping[str, Any], writer: object | None = None) -> None:
        """Write-through of an API answer to one of okt's own writes (ignored for kinds that are not watched).

        The watch's echo of it wakes none of the handlers of ``writer`` (see :meth:`start`), and every other one;
        without a writer, it wakes none."""
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        with self._lock:
            kind = self._kinds.get(key)
            # Only the writer handles the kind (one controller, the usual case): its echo is swallowed, as it was
            # before writers were named, not decoded to be delivered to nobody.
            if writer is not None and all(w is writer for _, w in self._handlers.get(key, ())):
                writer = None
        if kind is None:
            return
        namespace = _namespace(obj) or None
        informer = self._informer_for(kind, namespace if kind.namespaced else None)
        if informer is not None:
            informer.observe(obj, writer)

    def knows(self, kind: kinds.Kind, namespace: str | None, name: str, version: str) -> bool:
        """Whether this version of the object is okt's own write, announced by the watch before the writer observed
        it (see :meth:`okt.runtime.informer.Informer.knows`); True once per such version."""
        informer = self._informer_for(kind, namespace if kind.namespaced else None)
        return informer is not None and informer.knows(namespace if kind.namespaced else None, name, version)

    # -- owners --------------------------------------------------------------------------------------------------

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        owner_uid: str,
        labels: Mapping[str, str],
        skip: Container[tuple[str, str]] = (),
    ) -> builtins.list[dict[str, Any]]:
        """Objects of ``kind`` in ``namespace`` controlled by ``owner_uid``, from the owner index (no scan), but for
        those whose ``(namespace, name)`` is in ``skip`` (``""`` for a cluster-scoped one): a reconcile already holds
        the children it declared, and the store does not decode them again.

        Kinds the cache does not watch are listed from the API with ``labels`` and filtered by controller.
        """
        informers = self.informers(kind)
        if not informers:
            items = self.list(kind, namespace, labels)
            return [
                obj
                for obj in items
                if objects.controller_uid(obj) == owner_uid and informer_mod.store_key(obj) not in skip
            ]
        # The informers just taken: every reconcile's prune asks this of each kind it owns, one lock taken is enough.
        return [
            obj
            for i in informers
            for obj in i.by_index(OWNER_INDEX, owner_uid, skip)
            if namespace is None or not kind.namespaced or _namespace(obj) == namespace
        ]

    def by_index(self, kind: kinds.Kind, index: str, value: watches.IndexKey) -> builtins.list[dict[str, Any]] | None:
        """The stored objects of ``kind`` whose ``index`` holds ``value`` (private copies); None when ``kind`` is not
        watched with that index."""
        informers = self.informers(kind)
        if not informers or not all(i.has_index(index) for i in informers):
            return None
        return [obj for i in informers for obj in i.by_index(index, value)]

    def whole_index(self, index: str) -> indexes.Index | None:
        """``index`` over every kind watched with it (see :class:`okt.Index`), read from the stores when read: under
        each value, the payloads its function gave that value, or the objects where it gave values alone, decoded or
        copied only when read (the store keeps them once); None when no kind is watched with that index."""
        with self._lock:
            found = [i for i in self._all_informers() if i.has_index(index)]
        if not found:
            return None
        return indexes.Index.over([_StoredIndex(informer, index) for informer in found])

    def index_refusal(self, index: str) -> errors.ApiError | None:
        """Why ``index`` cannot be trusted: the :meth:`refusal` of a kind watched with it (its informers keep it from
        their watch, as their store: refused or not served, it holds what was there then, objects deleted since
        included). None when every such kind is served to okt, or none is watched with it."""
        with self._lock:
            found = {(i.kind.api_version, i.kind.kind): i.kind for i in self._all_informers() if i.has_index(index)}
        for kind in found.values():
            refused = self.refusal(kind, None)
            if refused is not None:
                return refused
        return None

    def owned_by(
        self, kind: kinds.Kind, owner_uid: str, skip: Container[tuple[str, str]] = ()
    ) -> builtins.list[dict[str, Any]]:
        """The objects of ``kind`` whose controller ownerReference has ``owner_uid`` (private copies), but for those
        whose ``(namespace, name)`` is in ``skip``."""
        return [obj for i in self.informers(kind) for obj in i.by_index(OWNER_INDEX, owner_uid, skip)]


class _StoredIndex:
    """One informer's index as an :class:`okt.Index` reads it (an :class:`okt.reconciler.indexes.Source`): its entries
    taken under the informer's lock, decoded without it."""

    __slots__ = ("_index", "_informer", "_position")

    def __init__(self, informer: informer_mod.Informer, index: str) -> None:
        self._informer = informer
        self._index = index
        self._position = informer.index_position(index)

    def held(self, key: watches.IndexKey) -> tuple[packing.Packed, ...]:
        return self._informer.index_held(self._index, key)

    def snapshot(self) -> Mapping[watches.IndexKey, tuple[packing.Packed, ...]]:
        # The informer keeps any hashable value; this index's are the keys its Indexer made (watches.index_key).
        return cast(Mapping[watches.IndexKey, tuple[packing.Packed, ...]], self._informer.index_snapshot(self._index))

    def decoded(self, key: watches.IndexKey, entry: packing.Packed) -> tuple[Any, ...]:
        """The payloads ``entry`` has under ``key``, copied, or its object decoded where its function gave keys alone
        (either a private copy)."""
        payloads = entry.payloads_of(self._position, key)
        if payloads is None:
            return (entry.unpack(),)
        return tuple(indexes.copied(payload) for payload in payloads)


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _deliver(
    kind: kinds.Kind,
    handler: informer_mod.EventHandler,
    event_type: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    """Hand one event to one handler; one that raises is logged, and the next handler still gets the event."""
    try:
        handler(event_type, obj, old)
    except Exception as exc:
        meta = obj.get("metadata") or {}
        _log.error(
            "event handler failed",
            kind=str(kind),
            event_type=event_type,
            name=meta.get("name"),
            namespace=meta.get("namespace"),
            error=errors.said(exc),
        )
