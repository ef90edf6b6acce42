"""Informers: one thread per watched kind and namespace scope keeping a local store current, and telling who cares.

Why this exists: a reconcile reads many objects; reading them from the API every time would cost a request per read
and per worker. An informer lists a kind once, then follows a watch from the list's resourceVersion, so reads come
from memory and every change is announced as an event. Python has no client-go; this module holds okt to the same
guarantees.

Guarantees:

* **list, then watch from the list's resourceVersion**: no change between the two is missed; the first list is
  answered from the API server's watch cache (``resourceVersion=0``, as client-go's reflector asks), read as it
  streams and stored a page at a time; a relist reads etcd, page by page, so the store never goes back in time — in
  one answer, still read a page at a time, after a relist whose continue token expired between two pages;
* **bookmarks** move the resourceVersion forward and nothing else (no event, no store change); one older than the
  resourceVersion held is ignored;
* **410 Gone** (an HTTP answer or an ``ERROR`` event) triggers a relist whose result is *diffed* against the store:
  objects that vanished produce ``DELETED``, changed ones ``MODIFIED``, new ones ``ADDED``, and one deleted and
  created again (another uid) ``DELETED`` then ``ADDED`` — nothing is lost while the watch was broken; an object that
  left the selection meanwhile is told as a leave, as the watch tells one of the ``keep`` filter: ``DELETED`` with
  its state now, out of the selection (the list gives it for the filter; one a label-selected list lacks is read by
  name once, and only one the API no longer has is told with its last stored state, as deleted — so is every one
  past the first :data:`_MISSING_READS`, and every one after the kind was served in no version, as none is read);
* **transport failures** (API server down, a silent stream past ``inactivity_timeout``) reconnect with capped, jittered
  exponential backoff over consecutive failures (a watch that delivered events, or lasted the longest pause, before
  it broke starts the count over); the watch resumes from the last resourceVersion, and a relist follows when the
  server no longer has it, or has not reached it (etcd restored from a backup: a list of at most one object, read
  from etcd before the watch resumes, says where the server stands); a list or watch throttled (``429``) waits at
  least the ``Retry-After`` the API server gave, up to the backoff's longest pause;
* **out-of-order protection**: a stored object is only replaced by one with a higher resourceVersion (compared as
  integers when both are numeric, as the API server's always are); an event for an *older* version than the stored one
  is ignored entirely. A relist read from etcd is the exception: it is what the server holds, so a listed version
  other than the stored one replaces it even when its number is lower (etcd restored from a backup takes the versions
  back: the watch from before is answered 410 Gone, as Kubernetes' restore procedure makes sure, and the relist finds
  the objects as the backup held them), but for okt's own answer newer than the list;
* events from a list (and resyncs, and replays: :meth:`Informer.replay`) are delivered with :func:`sweeping` true
  on the thread that tells them, so a handler can put the sweep over every object behind what the watch says now;
* ``has_synced`` is set once the first list is in the store and its ``ADDED`` events were delivered;
* the store holds each object encoded (marshal) and compressed against a dictionary shared by the informer's objects
  (:class:`~okt.runtime.packing.Packed`, :class:`~okt.runtime.packing.Codec`: objects of one kind repeat most of each
  other, so each keeps little more than what is its own), keyed by ``(namespace, name)`` (namespace ``""`` for
  cluster-scoped objects), without what okt never reads (:func:`~okt.runtime.packing.strip`: ``metadata.managedFields``
  — a primary whose status okt applies keeps only who owns which status field and condition, a child okt applies the
  entries a take-over moves — and kubectl's ``last-applied-configuration`` annotation); every read decodes a private
  copy, but for the resourceVersion and the uid, kept beside it (:meth:`Informer.uid` decodes nothing);
* **okt's own writes**: :meth:`Informer.observe` stores the API's answer at once and the watch's echo of that version
  is swallowed — or, when the write-through named its writer, delivered with :func:`echo_of` naming it, so that a
  handler sharing the informer with the writer (another controller watching the kind) still learns of the change;
  when the echo won the race and was announced first, :meth:`Informer.knows` tells the controller so
  (once), and the reconcile that wrote it is not repeated for nothing; someone else's change that the watch tells
  only after such an answer (it happened between okt's read and its write) is announced all the same;
* optional secondary **indexes** (``indexers``: name -> function returning index values) are kept in step with the
  store, so "the children of this owner" is a dict lookup; one added to a running informer
  (:meth:`Informer.add_indexers`) is built over the objects stored then without the lock, which the kind's reads and
  events take, and is read only once it holds every stored object as last stored;
* **only what it held is told gone**: a watch's ``DELETED`` of an object the store does not hold (the ``keep`` filter
  kept it out, or its leave was told already) is not announced — its handlers never held it, and would tell its
  timers, daemons and queue key of an object unknown to them;
* a handler that raises is logged and never stops the informer;
* after its list or watch failed, the first list or watch the API server answers calls ``on_recovered`` once (the
  controllers retry at once what failed while the API server was away);
* **a kind that stops being served** (its CRD deleted, or its version no longer served: the list or watch answers
  ``404`` or ``405``) is retried with the reconnect backoff, logged once as a warning saying why as discovery tells it
  then (another version of the group serves the kind: its objects are kept; or none does: they went with the CRD), the
  retries at debug level, and :attr:`Informer.served` is False until the API server lists it again; that list is
  diffed against the store as after a ``410`` (what went with the CRD is ``DELETED``, what was created again
  ``ADDED``, and of a version no longer served, one that left the selection meanwhile is read by name and told as a
  leave, not as deleted), and every object it finds unchanged is announced as ``RESYNC``, so that what failed
  meanwhile is reconciled again — all of it once the whole list is in the store and :attr:`Informer.served` is True
  again (told page by page as it is stored, each change woke a reconcile that read the kind still refused by the
  cache, and failed); ``on_refusal`` is called when :attr:`Informer.served` turns False, and once that list is in
  the store, before any of its changes is told (the kind's daemons are stopped meanwhile, and started again from that
  list);
* **an API server that has just restarted** answers a custom kind ``404`` for a moment, until its CRD handlers are in
  place (the built-in kinds at once): a ``404`` or ``405`` right after the list or watch was answered nothing at all
  is retried as any failure (logged once, at info level), the kind still served, for :data:`STARTING_GRACE` from the
  first of them; the list or watch that answers then is an ordinary one (a relist only diffs). One past the grace is
  the kind no longer served, as above, and so is one after the API server answered again;
* **a kind okt may no longer list or watch** (its role lost the rule: ``403``) is retried with the reconnect backoff,
  logged once as a warning, and :attr:`Informer.refusal` holds the refusal until a list is answered again: the store
  holds what was seen before it, which nothing refreshes meanwhile. That list is diffed against the store before the
  refusal is lifted, what changed meanwhile told then (as above, not while the refusal still holds), and
  ``on_recovered`` called: resumed from where the watch stood instead, the watch tells what changed meanwhile only
  after it opened, and the reconciles retried at its opening read the store from before. The changes of such a list
  are held encoded, as the store holds objects, until they are told. Only that list lifts the refusal (a watch is
  never opened before it): ``on_refusal`` is called at the first ``403``, and once the list is in the store, before
  its changes are told, as for a kind no longer served.

Caveats: events are delivered one at a time — the watch's and the lists' on the informer's own thread, the resyncs'
on a thread of their own and a :meth:`Informer.replay`'s on its caller's, never at the same time as the others, each
object as stored when its turn comes (one deleted meanwhile is not told again): handlers must be quick (enqueue a key
and return). ``stop()`` returns at once,
closes the open watch stream, and no event is delivered after it; the threads are daemons and never keep the process
alive.
"""

from __future__ import annotations

import collections
import random
import re
import threading
import time
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Mapping
from typing import Any

import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, selectors
from okt.resources import take_over
from okt.runtime import backoff as backoff_mod
from okt.runtime import packing

_JITTER = random.Random()
"""okt's own source of jitter: drawing from the module-level generator would move the state of every other
user of it (a seeded simulation, a property-based test) from a background thread."""

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
RESYNC = "RESYNC"
"""Periodic re-announcement of an unchanged object (only with ``resync``); ``old`` is the same object."""

BOOKMARK = "BOOKMARK"
ERROR = "ERROR"

_PAGE = 100
"""Objects a list holds decoded at once (a page of Deployments as the API sends them, managedFields and all, decodes
to a few MiB; the informers of several kinds list at the same time at start-up): the page size asked of etcd, and the
size of the pages an unpaged answer from the watch cache is handed out in."""

_MISSING_READS = 100
"""How many of the stored objects a label-selected relist lacks it reads by name, to tell a leave of the selection
from a deletion; the rest are told as deleted, with their last stored state. The reads go one after the other and
most find nothing: after a long outage during which thousands were deleted, reading each would hold the relist, and
every event of the kind behind it, for as many round trips. A few left the selection while the watch was broken in
the common case; a worker's read of the API tells one of the rest as still there."""

_KNOWN_ECHOES = 4096
"""How many (object, version) pairs okt wrote after the watch announced them are remembered for :meth:`Informer.knows`
(each is consumed by the controller within the reconcile that wrote it; the bound only guards against leaks)."""

StoreKey = tuple[str, str]
"""``(namespace, name)``; namespace is ``""`` for cluster-scoped objects."""

Bucket = tuple[StoreKey, ...] | set[StoreKey]
"""The keys under one index value: a tuple while few (most owners have one child of a kind: a set of one costs four
times the memory), a set beyond :data:`_SMALL_BUCKET` (adding and removing stay cheap for an owner of thousands)."""

_SMALL_BUCKET = 8

_Ahead = tuple[Mapping[str, packing.Indexer], packing.Packed]
"""An object packed before the informer's lock is taken, with the indexers it was indexed by (see
:meth:`Informer._packed_ahead`)."""

EventHandler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]
"""``on_event(type, obj, old)``: type is ADDED / MODIFIED / DELETED / RESYNC; ``old`` the replaced object or None."""

#: The reconnect backoff: quick first retry, capped so an outage of minutes is noticed within half a minute.
RECONNECT_BACKOFF = backoff_mod.Backoff(base=0.2, factor=2.0, cap=30.0, jitter=0.2)

#: A watch that ends sooner than this without delivering anything counts as a failure (and backs off).
_SHORTEST_WATCH = 1.0

_NOT_SERVED = (404, 405)
"""The answers of a list or watch of a kind the API server does not serve (any more): not found (a CRD deleted, a
version no longer served) or not allowed (a version that lost the verb)."""

STARTING_GRACE = 30.0
"""Seconds during which ``404`` or ``405`` answers that follow an outage of the API server (its list or watch answered
nothing at all) are taken for an API server that has just started and not loaded its CRDs yet, counted from the first
of them: it answers the built-in kinds at once, a custom kind only once its CRD handlers are in place, a moment later.
One answered past the grace is the kind no longer served. Since Kubernetes 1.16 such a server answers ``503 server is
starting`` until then (the local 1.20 control plane does), retried as any outage; the ``404`` is older servers', and
that of a routing race newer ones still show now and then (kubernetes/kubernetes#115241; the local 1.20 one too, on a
loaded machine). A start's
``404`` and a deleted CRD's are the same answer, so the first after an outage cannot be told apart without a read.

Not shortened by a read: ``/readyz`` (its ``crd-informer-synced`` check) may be answered by another API server than the
``404`` behind a load balancer, and a ``GET`` of the CRD that finds none cannot tell a CRD deleted during the outage
from a kind no CRD serves (an aggregated API, ``404`` too until its APIService is registered); the role ``okt gen
rbac`` writes grants no read of either. A CRD deleted while the API server was unreachable is told up to this late."""

_REFUSED = 403
"""The answer of a list or watch the operator's role does not grant (any more)."""

_log = structlog.get_logger(__name__)

_delivery = threading.local()


def sweeping() -> bool:
    """Whether the event being delivered on this thread comes from a list (the sweep over every object after a start
    or a relist), a periodic resync or a replay (a handler joining a kind already watched) rather than from the watch:
    a handler may give it a lower priority."""
    return bool(getattr(_delivery, "sweep", False))


def echo_of() -> object | None:
    """The writer (as given to :meth:`Informer.observe`) whose own write the event being delivered on this thread
    echoes, or None: that writer already knows it, whoever else shares the informer does not."""
    return getattr(_delivery, "echo_of", None)


def store_key(obj: Mapping[str, Any]) -> StoreKey:
    """The store key of an object: ``(namespace or "", name)``."""
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


_QUERY = re.compile(r"\?[^\s'\"()<>]*")
"""A request's query as a transport's error text quotes it (``...with url: /api/v1/...?watch=true&...``)."""
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
"""The address of an object its repr quotes (``<urllib3.connection.HTTPSConnection object at 0x7f...>``)."""


def _failure_kind(exc: BaseException) -> tuple[str, str]:
    """What stays the same across the retries of one failure of a list or watch: the exception's class and its text
    without the request's query (each watch asks for its own random ``timeoutSeconds``, from the resourceVersion it
    stands at) nor the addresses of objects, which differ per request though the outage is the same."""
    return type(exc).__qualname__, _ADDRESS.sub("", _QUERY.sub("", str(exc)))


def is_newer(candidate: str, current: str) -> bool | None:
    """Whether resourceVersion ``candidate`` is newer than ``current``: True, False, or None when they are equal.

    Numeric versions (all the API server hands out) are compared as integers; anything else only by (in)equality, a
    different opaque version counting as newer.
    """
    if candidate == current:
        return None
    if candidate.isdigit() and current.isdigit():
        return int(candidate) > int(current)
    return True


def _bucket_with(bucket: Bucket, key: StoreKey) -> Bucket:
    if isinstance(bucket, set):
        bucket.add(key)
        return bucket
    if key in bucket:
        return bucket
    return (*bucket, key) if len(bucket) < _SMALL_BUCKET else {*bucket, key}


def _bucket_without(bucket: Bucket, key: StoreKey) -> Bucket:
    if isinstance(bucket, set):
        bucket.discard(key)
        return bucket
    return tuple(k for k in bucket if k != key)


def _unpacked(packed: packing.Packed | None) -> dict[str, Any] | None:
    return None if packed is None else packed.unpack()


class IndexSnapshot(Mapping[Hashable, tuple[packing.Packed, ...]]):
    """An index of an informer's store and the store, as they stood at one moment (:meth:`Informer.index_snapshot`):
    value -> the stored entries under it, looked up when read (none decoded)."""

    __slots__ = ("_store", "_table")

    def __init__(self, table: Mapping[Hashable, Bucket], store: Mapping[StoreKey, packing.Packed]) -> None:
        self._table = table
        self._store = store

    def __getitem__(self, value: Hashable) -> tuple[packing.Packed, ...]:
        store = self._store
        return tuple([store[key] for key in self._table[value]])

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


class Informer:
    """List+watch of one kind in one namespace scope (``None``: all namespaces, or a cluster-scoped kind).

    Args:
        client: the shared API client.
        kind: what to watch.
        namespace: the namespace to watch, ``None`` for all (or for a cluster-scoped kind).
        label_selector: a label selector the API filters with.
        on_event: called as ``on_event(type, obj, old)`` for every change (see :data:`EventHandler`).
        resync: when set, every ``resync`` seconds each stored object is announced again as ``RESYNC``.
        watch_timeout: the server-side lifetime of one watch request, in seconds (each watch asks for a random value
            between half and all of it, so many informers do not reconnect in lockstep).
        inactivity_timeout: a watch stream silent for this long is considered broken and reconnected.
        indexers: secondary indexes kept with the store, ``name -> function(obj) -> index values``.
        backoff: the reconnect backoff after consecutive failures.
        status_owners: keep who owns which status field of each object (see :func:`~okt.runtime.packing.strip`).
        field_owners: keep the managedFields entries a take-over of a child would move (see
            :func:`~okt.runtime.packing.strip`).
        keep: a client-side filter: objects it refuses are not stored, nor is their deletion announced (one that
            stops passing leaves the store and is announced as ``DELETED``). Called on the informer's thread, some
            calls with its lock held, and on the thread of an answer okt wrote through: keep it quick and pure.
        on_recovered: called on the informer's thread when the API server answers a list or watch again after one
            failed.
        on_refusal: called on the informer's thread when :attr:`served` or :attr:`refusal` changes, once it has: when
            the kind is found no longer served, when its list or watch is first refused (``403``), and when the list
            that answers again is in the store, before any of its changes is told (once, for both).
        starting_grace: how long ``404`` or ``405`` answers right after an outage of the API server are retried as
            an API server still loading its CRDs, before the kind is taken for no longer served (see
            :data:`STARTING_GRACE`).
    """

    def __init__(
        self,
        client: kube_client.Client,
        kind: kinds.Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        on_event: EventHandler,
        resync: float | None = None,
        watch_timeout: int = 300,
        inactivity_timeout: float = 330.0,
        indexers: Mapping[str, packing.Indexer] | None = None,
        backoff: backoff_mod.Backoff = RECONNECT_BACKOFF,
        status_owners: bool = False,
        field_owners: take_over.FieldOwners | None = None,
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
        on_recovered: Callable[[], None] | None = None,
        on_refusal: Callable[[], None] | None = None,
        starting_grace: float = STARTING_GRACE,
    ) -> None:
        if resync is not None and resync <= 0:
            raise ValueError(f"resync must be > 0 seconds, got {resync!r}")
        if not 0 <= starting_grace < float("inf"):
            raise ValueError(f"starting_grace must be a finite number of seconds >= 0, got {starting_grace!r}")
        self.client = client
        self.kind = kind
        self.namespace = namespace if kind.namespaced else None
        self.label_selector = label_selector or None
        # The watch and the list are filtered by the server, but an answer to okt's own write is not: one for an
        # object relabelled out of the selection must not be stored.
        self._selects = selectors.matcher(self.label_selector) if self.label_selector else None
        self._on_event = on_event
        self._resync = resync
        self._watch_timeout = max(int(watch_timeout), 1)
        self._inactivity_timeout = inactivity_timeout
        self._indexers = dict(indexers or {})
        # What the store keeps of each object: its payloads too only when an indexer keeps some, so that every other
        # informer stores objects as it did before indexes could keep payloads (no extra work, no extra slot).
        self._packing: type[packing.Packed] = (
            packing.WithPayloads if packing.keeps_payloads(self._indexers.values()) else packing.Packed
        )
        self._backoff = backoff
        self._status_owners = status_owners
        self._field_owners = field_owners
        self._keep = keep
        self._on_recovered = on_recovered
        self._on_refusal = on_refusal
        self._failing = False  # the last list or watch failed; the next one answered calls on_recovered
        self._served = True  # False from a list or watch answered 404 or 405 until a list succeeds again
        # While not served: False once discovery said no version of the kind's group serves it (its CRD deleted, its
        # objects with it), True while another version serves it (or discovery could not say): its objects are kept.
        self._objects_kept = True
        self._starting_grace = starting_grace
        # The last list or watch that failed was answered nothing at all (the API server down, or restarting), and
        # none was answered since: a 404 or 405 now may come from an API server that has not loaded its CRDs yet.
        self._unanswered = False
        # When the first 404 or 405 after such an outage came (time.monotonic()), None before it.
        self._starting_since: float | None = None
        self._refusal: errors.ApiError | None = None  # the 403 of the last list or watch, until one is answered
        # The last relist's continue token expired between two pages: the next one asks for one answer.
        self._list_whole = False
        self._failures = 0  # consecutive list or watch failures, for the reconnect backoff
        # The last of them (its event and _failure_kind): a repeat in a row is logged at debug level.
        self._failure_said: tuple[str, ...] = ()
        self._lock = threading.RLock()
        # Held by add_indexers from its snapshot of the store until the indexes it adds are complete: one at a time.
        self._adding = threading.Lock()
        # Held from a change of the store to the end of its announcement (an event of the watch, a whole list), and
        # by the resync for each object it reads and announces: it runs on a thread of its own, and must never tell
        # a state older than one the watch or a list told already.
        self._delivering = threading.Lock()
        self._store: dict[StoreKey, packing.Packed] = {}
        self._codec = packing.Codec()
        self._indexes: dict[str, dict[Hashable, Bucket]] = {name: {} for name in self._indexers}
        # The indexes that can be read: every one of _indexers but those add_indexers is building (the last ones),
        # which each object stored meanwhile enters, and are read only once the objects stored before entered them
        # too. Replaced whole, never changed, so that has_index reads it without the lock.
        self._readable = frozenset(self._indexers)
        # Keys whose stored object came from observe() and is not yet confirmed by the watch, with the object the
        # watch delivered last (None when the watch never delivered one).
        self._shadowed: dict[StoreKey, packing.Packed | None] = {}
        # The writer of the answer observe() stored last for a shadowed key (None: not named), for the echo.
        self._writers: dict[StoreKey, object | None] = {}
        # (key, resourceVersion) of okt's own writes whose watch event was delivered before observe() saw the answer.
        self._known_echoes: collections.OrderedDict[tuple[StoreKey, str], None] = collections.OrderedDict()
        self._resource_version = ""
        self._stop = threading.Event()
        self._open_stream: Any = None
        self._threads: list[threading.Thread] = []
        self.has_synced = threading.Event()
        self.relists = 0
        self.reconnects = 0
        self._log = _log.bind(kind=str(kind), namespace=self.namespace)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the list+watch thread (and the resync thread when ``resync`` is set); idempotent."""
        with self._lock:
            if self._threads:
                return
            name = f"okt-informer-{self.kind.plural}-{self.namespace or '*'}"
            self._threads.append(threading.Thread(target=self._run, name=name, daemon=True))
            if self._resync is not None:
                self._threads.append(threading.Thread(target=self._run_resync, name=f"{name}-resync", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 0.0) -> None:
        """Stop delivering events and close the watch stream; waits up to ``timeout`` seconds for the threads."""
        self._stop.set()
        stream = self._open_stream
        if stream is not None:
            kube_client.interrupt(stream)
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(timeout)

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the threads of a stopped informer to end; whether they all did."""
        for thread in list(self._threads):
            if thread is not threading.current_thread() and thread.ident is not None:
                thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def served(self) -> bool:
        """False while the API server answers this kind's list or watch ``404`` or ``405`` (its CRD deleted, or its
        version no longer served); True again once a list succeeds."""
        return self._served

    @property
    def refusal(self) -> errors.ApiError | None:
        """The ``403`` the API server answered this kind's last list or watch with (okt's role no longer grants
        them): the store holds what was listed and watched before, and may be stale. None again once a list is
        answered and in the store (the watch opens only after it)."""
        return self._refusal

    @property
    def resource_version(self) -> str:
        """The resourceVersion the next watch starts from."""
        with self._lock:
            return self._resource_version

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A private copy of the stored object, or ``None``.

        Without the informer's lock: one lookup in the store, which is only ever changed in place, finds the entry as
        it was before or after a concurrent change (an entry's encoded object never changes once stored), so the lock
        would add nothing but a wait. And the wait was long: the writer holds the lock while it encodes an event's
        object, or a page of a relist; at 10,000 objects, in the sweep after a restart with the control plane busy,
        12 % of the worker threads' samples (py-spy) were this wait.
        """
        return _unpacked(self._store.get((namespace or "", name)))

    def uid(self, namespace: str | None, name: str) -> str | None:
        """The uid of the stored object (``""`` when it has none), or ``None`` when none is stored: nothing decoded
        (every event of a child asks it of its owner), and without the lock, as :meth:`get`."""
        packed = self._store.get((namespace or "", name))
        return None if packed is None else packed.uid

    def items(self) -> list[dict[str, Any]]:
        """Private copies of every stored object, in no particular order."""
        with self._lock:
            packed = list(self._store.values())
        return [p.unpack() for p in packed]

    def stored_keys(self) -> list[StoreKey]:
        """The store keys of every stored object (none decoded)."""
        with self._lock:
            return list(self._store)

    def each(self) -> Iterator[dict[str, Any]]:
        """Private copies of the objects stored when called, each decoded only when the caller reaches it (a list of
        every object decoded at once would be the store's whole size again, at once, as resident memory)."""
        with self._lock:
            packed = list(self._store.values())
        return (p.unpack() for p in packed)

    def by_index(self, index: str, value: Hashable, skip: Container[StoreKey] = ()) -> list[dict[str, Any]]:
        """Private copies of the stored objects whose ``index`` function returned ``value``, but for those whose
        ``(namespace, name)`` is in ``skip`` (never decoded: the caller holds them already)."""
        with self._lock:
            packed = [self._store[key] for key in self._table_locked(index).get(value, ()) if key not in skip]
        return [p.unpack() for p in packed]

    def has_index(self, index: str) -> bool:
        """Whether ``index`` is kept and can be read: False for one :meth:`add_indexers` is still building."""
        return index in self._readable

    def index_position(self, index: str) -> int:
        """Where ``index`` stands among the store's indexes: the position of its values and payloads in each stored
        entry (:attr:`~okt.runtime.packing.Packed.index`), which never changes once the index is kept."""
        with self._lock:
            return [name for name in self._indexers if name in self._readable].index(index)

    def index_held(self, index: str, value: Hashable) -> tuple[packing.Packed, ...]:
        """The stored entries whose ``index`` holds ``value``, as they stand, none decoded: under the lock, one lookup
        per entry under that value, whatever the size of the rest of the index."""
        with self._lock:
            store = self._store
            return tuple([store[key] for key in self._table_locked(index).get(value, ())])

    def index_snapshot(self, index: str) -> IndexSnapshot:
        """The whole of ``index`` as it stands: each value it holds, with the stored entries under it, none decoded.

        Under the lock, a copy of the index's table and of the store's (each at C speed: a fraction of a millisecond
        at 20,000 objects) and one pass over the index's values, copying the keys of the buckets changed in place
        (those past :data:`_SMALL_BUCKET`); nothing is decoded, and the entries under a value are looked up when it is
        read. A stored entry is replaced when its object changes, never changed (but for the values of an index added
        after it, appended), so the entries the snapshot hands out keep what they held when it was taken, and the
        caller decodes the objects and copies the payloads (:meth:`~okt.runtime.packing.Packed.payloads_of`) it reads
        without the lock."""
        with self._lock:
            table = dict(self._table_locked(index))
            store = dict(self._store)
            for value, bucket in table.items():
                if bucket.__class__ is set:
                    table[value] = tuple(bucket)
        return IndexSnapshot(table, store)

    def add_indexers(self, indexers: Mapping[str, packing.Indexer]) -> None:
        """Keep more indexes, built over what is stored (an index of that name already kept is left as is); returns
        once they hold every stored object.

        The operator's index functions, which may take their time or never return, run over the objects stored when
        the call began without the informer's lock, which every read of the kind takes: reads of the store and of the
        other indexes, events, okt's own answers stored, go on meanwhile. The new indexes are kept from that moment:
        an object stored since (by an event, a list, okt's own answer) is indexed by them as it is stored, before the
        lock as by the others, and what was computed for one replaced or deleted since is dropped, so each object
        enters them as its latest stored version, and each version once. Until the call returns they are not read:
        :meth:`has_index` is False, and :meth:`by_index`, :meth:`index_held`, :meth:`index_snapshot` and
        :meth:`index_position` refuse them as an index not kept. Additions are made one at a time: a call waits for
        the one under way. An index function that raises ends the call with its error, and none of ``indexers`` is
        kept."""
        with self._adding:
            with self._lock:
                added = {name: fn for name, fn in indexers.items() if name not in self._indexers}
                if not added:
                    return
                kept, packing_before = len(self._indexers), self._packing
                snapshot = list(self._store.items())
                if packing.keeps_payloads(added.values()):
                    self._packing = packing.WithPayloads
                for name in added:
                    self._indexes[name] = {}
                # A new mapping, never this one changed, and after the packing it needs: an entry packed ahead of the
                # lock (see _packed_ahead) with the indexers read before is told from one packed with these.
                self._indexers = {**self._indexers, **added}
            try:
                built = [(key, stored, packing.Indexed.of(stored.unpack(), added.values())) for key, stored in snapshot]
            except BaseException:
                with self._lock:
                    self._give_up_indexes_locked(added, kept, packing_before)
                raise
            del snapshot
            with self._lock:
                for key, stored, indexed in built:
                    if self._store.get(key) is not stored:
                        continue  # replaced since (and indexed by all as it was stored), or deleted
                    packed = stored
                    if self._packing is packing.WithPayloads and not isinstance(stored, packing.WithPayloads):
                        packed = self._store[key] = packing.WithPayloads.of(stored)
                    packed.add_index(indexed)  # in the order of ``_indexers``, the added last
                    for name, values in zip(added, indexed.values, strict=True):
                        index = self._indexes[name]
                        for value in values:
                            index[value] = _bucket_with(index.get(value, ()), key)
                self._readable = frozenset(self._indexers)

    def _give_up_indexes_locked(
        self, added: Mapping[str, packing.Indexer], kept: int, packing_before: type[packing.Packed]
    ) -> None:
        """Undo the start of an :meth:`add_indexers` whose build failed: the indexers as before, and each entry stored
        meanwhile with the values of the first ``kept`` indexes only."""
        # A new mapping again: an entry packed ahead with the one given up is packed again under the lock.
        self._indexers = {name: fn for name, fn in self._indexers.items() if name not in added}
        self._packing = packing_before
        for name in added:
            del self._indexes[name]
        for packed in self._store.values():
            if len(packed.index) > kept:
                packed.keep_index(kept)

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    def replay(self, tell: Callable[[dict[str, Any]], None]) -> None:
        """Hand ``tell`` a private copy of every stored object, on the caller's thread, each read from the store when
        its turn comes and told while the watch's and the lists' events wait (nothing once stopped), with
        :func:`sweeping` true: it goes over every object, as a list does, and a handler puts it behind what the watch
        says now.

        For whoever tells the objects again beside the watch (the periodic resync, a handler joining a kind already
        watched): each is told as the handlers last heard of it, or newer (okt's own write, stored before its echo),
        never as a state older than an event told them — and one the watch told deleted is not told at all. Taken
        from a list of the objects read before, one deleted meanwhile was told after its ``DELETED``, as if it had
        come back. A list under way is waited for: its changes are in the store before the next object is read.
        """
        for key in self.stored_keys():
            if self._stop.is_set():
                return
            with self._delivering:
                packed = self._store.get(key)
                if packed is None:
                    continue
                was, _delivery.sweep = sweeping(), True
                try:
                    tell(packed.unpack())
                finally:
                    _delivery.sweep = was

    # -- writes from okt itself ----------------------------------------------------------------------------------

    def observe(self, obj: Mapping[str, Any], writer: object | None = None) -> bool:
        """Write-through: store the API's answer to one of okt's own writes, if it is newer than the stored object.

        No event is produced, and the watch's echo of that same version is swallowed when it arrives (the writer
        already knows it) — unless ``writer`` names who wrote it: the echo is then delivered with :func:`echo_of`
        naming it, for whoever else handles the informer's events (they know nothing of it yet); a later version
        from anyone is delivered as usual, and so is someone else's version older than this answer that the watch
        tells after it (the writer acted on what it read before that change).
        An answer not newer than what the watch last told is not stored for an object the store lacks: the object
        was deleted (or left the selection) after that answer. Nor is an answer outside the label selector or the
        ``keep`` filter. Returns whether the store changed. The object is shallow-copied (its metadata without
        ``managedFields``), so the caller's dict is never aliased by the store.
        """
        stored_obj = packing.strip(
            {**obj, "metadata": dict(obj.get("metadata") or {})}, self._status_owners, self._field_owners
        )
        if (self._keep is not None and not self._keep(stored_obj)) or (
            self._selects is not None and not self._selects((stored_obj["metadata"]).get("labels") or {})
        ):
            # Outside the selection (relabelled since the writer read it): the watch tells it as deleted, and the
            # store must not keep it past that.
            return False
        version = packing.resource_version(stored_obj)
        key = store_key(stored_obj)
        ahead = self._packed_ahead(key, stored_obj, version)
        with self._lock:
            current = self._store.get(key)
            if current is None and version and is_newer(version, self._resource_version) is not True:
                # The store holds everything up to the version the watch (or the list) last told, and this object
                # is not in it: the answer is from before its deletion (okt's finalizer removal, a write the garbage
                # collector overtook) or from before it left the selection. Storing it would bring back a ghost that
                # reads as existing until the next relist.
                return False
            if current is not None and not is_newer(version, current.rv):
                if version and version == current.rv and key not in self._shadowed:
                    # The watch announced this very version before the answer reached the writer.
                    self._known_echoes[(key, version)] = None
                    while len(self._known_echoes) > _KNOWN_ECHOES:
                        self._known_echoes.popitem(last=False)
                return False
            # Remember what the watch last said, so its next event reports the change against that, not against
            # this write-through copy (events describe the watch's history; observe only makes reads fresher).
            self._shadowed.setdefault(key, current)
            self._writers[key] = writer
            self._put_locked(key, stored_obj, current, ahead)
            return True

    def knows(self, namespace: str | None, name: str, version: str) -> bool:
        """Whether okt itself wrote this version of the object and observed the answer *after* the watch had already
        announced it — that event told the writer nothing new. Answers True once per such version."""
        with self._lock:
            try:
                del self._known_echoes[((namespace or "", name), version)]
            except KeyError:
                return False
            return True

    # -- the list+watch loop -------------------------------------------------------------------------------------

    def _run(self) -> None:
        expired = 0  # consecutive 410s: the first relists at once, a repeat backs off
        need_list = True
        check_version = False  # the watch broke: see where the server stands before resuming it
        while not self._stop.is_set():
            try:
                if check_version and not need_list:
                    need_list = self._server_went_back()
                    self._unanswered = False  # answered: the kind is served
                    self._starting_since = None
                check_version = False
                if need_list:
                    with self._delivering:
                        self._relist(announce_unchanged=not self._served)
                    need_list = False
                    self._answered()
                if self._stop.is_set():  # a list answered after the stop opens no watch
                    return
                self._watch()
                self._failures = expired = 0
            except errors.Gone:
                expired += 1
                # A watch from a version etcd compacted away, or a list's continue token between two pages (etcd
                # compacted past the snapshot the pages come from).
                what = "list" if need_list else "watch"
                self._log.info("expired, relisting", expired=what, resource_version=self.resource_version)
                need_list = True
                if expired > 1:
                    self._stop.wait(self._backoff.delay(expired - 1))
            except errors.ApiError as exc:
                if self._stop.is_set():
                    return
                need_list, check_version = self._failed(exc, need_list)
            except Exception as exc:  # never let an unexpected answer kill the informer
                self._failures += 1
                self._failing = True
                delay = self._backoff.delay(self._failures)
                self._said_failure(self._log.error, "informer error, relisting", exc, repr(exc), delay)
                need_list = True
                self._stop.wait(delay)

    def _failed(self, exc: errors.ApiError, need_list: bool) -> tuple[bool, bool]:
        """Say a list or watch that failed (but for a ``410``) as it deserves, and wait the reconnect backoff; returns
        whether to list next (``need_list`` as it was, or True) and whether to see first where the server stands."""
        check_version = False
        self._failures += 1
        self.reconnects += 1
        self._failing = True
        starting = exc.status in _NOT_SERVED and self._starting()
        delay = self._backoff.delay(self._failures)
        if isinstance(exc, errors.TooManyRequests) and exc.retry_after:
            # The API server said when to come back (client-go's list and watch wait for it too); no longer than the
            # backoff's longest pause, as whatever answered may ask for a day, and the store is stale meanwhile.
            delay = max(delay, min(exc.retry_after, self._backoff.cap))
        if starting:
            # Right after the API server answered nothing (restarted: a cluster upgrade, a control-plane node
            # rolled), a 404 is most likely its CRD handlers not loaded yet: retried as any failure, and the
            # list that answers then is an ordinary relist, or none (the watch resumes). Taken for a kind no
            # longer served, its relist announced every object found unchanged: a sweep of the kind after
            # every restart of the API server, and a warning of a CRD deleted.
            self._said_failure(
                self._log.info,
                "the API server does not serve the kind yet (starting: its CRDs not loaded), retrying",
                exc,
                str(exc),
                delay,
            )
            check_version = True
        elif exc.status in _NOT_SERVED:
            # The kind is gone from the API (a CRD deleted, a version no longer served): said once, as the
            # retries of an outage that may last for days would fill the log. The store is diffed against
            # the list that answers again: a watch from where this one stood would tell nothing of what the
            # CRD's deletion took with it, or of an object created again since.
            need_list = True
            if self._served:
                self._log.warning(
                    "the API server does not serve the kind any more: reconciles that read it fail until it "
                    "does, and it is listed again with backoff",
                    cause=self._why_not_served(),
                    error=str(exc),
                    failures=self._failures,
                    retry_in=round(delay, 2),
                )
            else:
                self._log.debug(
                    "the API server does not serve the kind any more: listing it again with backoff",
                    error=str(exc),
                    failures=self._failures,
                    retry_in=round(delay, 2),
                )
            if self._served:
                self._served = False
                self._refusal_changed()
        elif exc.status == _REFUSED:
            # Said once: the retries go on for as long as the role lacks the rule, which may be days. The
            # reads of the store fail meanwhile (see Cache.refusal): what it holds is as old as the refusal.
            # Listed again, not watched from where the watch stood: the refusal is lifted, and the reconciles
            # that failed on it retried, once the store holds what changed meanwhile.
            need_list = True
            (self._log.debug if self._refusal is not None else self._log.warning)(
                "the API server refuses to list or watch the kind: what the cache holds of it may be stale, "
                "and the reconciles that read it fail until it is granted again",
                error=str(exc),
                failures=self._failures,
                retry_in=round(delay, 2),
            )
            first = self._refusal is None
            self._refusal = exc
            if first:
                self._refusal_changed()
        else:
            self._said_failure(self._log.warning, "list or watch failed, retrying", exc, str(exc), delay)
            check_version = True
            if isinstance(exc, errors.Unavailable):
                self._unanswered = True  # the grace, once open, still counts from the outage's first 404
        self._stop.wait(delay)
        return need_list, check_version

    def _refusal_changed(self) -> None:
        """Tell ``on_refusal`` that :attr:`served` or :attr:`refusal` changed; one that raises is logged and never
        stops the informer."""
        if self._on_refusal is None:
            return
        try:
            self._on_refusal()
        except Exception:
            self._log.exception("the handler of a change of the kind being served or refused failed")

    def _starting(self) -> bool:
        """Whether a ``404`` or ``405`` answered now is taken for an API server that has just started and not loaded
        its CRDs yet: the last failure before it was no answer at all, the kind was served then, and the first such
        answer since came less than the starting grace ago (:data:`STARTING_GRACE`). The first opens the grace, and
        the backoff of the outage starts over (the API server answers again: its CRDs are a moment away); one past
        the grace closes it (the kind is not served)."""
        if not (self._unanswered and self._served):
            return False
        now = time.monotonic()
        if self._starting_since is None:
            self._starting_since = now
            self._failures = 1
        if now - self._starting_since < self._starting_grace:
            return True
        self._unanswered = False
        self._starting_since = None
        return False

    def _why_not_served(self) -> str:
        """Why the API server no longer serves the kind, as discovery tells it now (asked once per outage, when the
        first list or watch is answered ``404`` or ``405``), for the warning; sets :attr:`_objects_kept`.

        Served in another version of its group, the kind's objects are still there (a version set to ``served:
        false``, or removed from the CRD): the list that answers again may lack one only because it left the selection
        meanwhile, which :meth:`_read_missing` tells. Served in none, they went with the CRD."""
        try:
            elsewhere = self.client.versions_serving(self.kind)
        except Exception as exc:  # the informer's loop goes on whatever discovery answers
            self._objects_kept = True  # not known: the objects a relist lacks are read by name, as after any outage
            return f"its CRD deleted, or its version no longer served (discovery could not say which: {exc})"
        self._objects_kept = bool(elsewhere)
        if elsewhere:
            return (
                f"{self.kind.api_version} is no longer served (the API server serves {self.kind.kind} in "
                f"{', '.join(elsewhere)}): its objects are kept, and the cache holds them as they were"
            )
        if (self.kind.api_version, self.kind.kind) in kinds.BUILTIN:
            return f"no version of {self.kind.group or 'the core group'} serves {self.kind.kind}"
        return f"no version of {self.kind.group} serves {self.kind.kind} (its CRD deleted)"

    def _server_went_back(self) -> bool:
        """Whether the API server's resourceVersion is now behind the one the watch resumes from: etcd restored from a
        backup without moving its revision on. A watch from a version etcd has not reached is answered nothing until
        etcd passes it (what the restore undid, and what changed since, would never be told), so the informer lists
        again instead (client-go lists after a broken watch, and so learns it too). Asked with a list of at most one
        object, from etcd, after a watch broke."""
        held = self.resource_version
        if not held:
            return False
        pages = self.client.list_pages(self.kind, self.namespace, label_selector=self.label_selector, page_size=1)
        try:
            current = next((version for _, version in pages if version), "")
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # the rest of the list is not wanted: its answer is closed
        if is_newer(current, held) is not False:
            return False
        self._log.warning(
            "the API server's resourceVersion went back (etcd restored from a backup): listing again",
            resource_version=held,
            server_resource_version=current,
        )
        return True

    def _said_failure(self, say: Callable[..., Any], event: str, exc: BaseException, error: str, delay: float) -> None:
        """Log a failed list or watch (``exc``, said as ``error``): at ``say``'s level, or at debug level when the
        failure before it, in a row, was the same (:func:`_failure_kind`; an outage fails every reconnect of every
        informer alike, for as long as it lasts)."""
        said, self._failure_said = self._failure_said, (event, *_failure_kind(exc))
        repeated = self._failures > 1 and said == self._failure_said
        (self._log.debug if repeated else say)(event, error=error, failures=self._failures, retry_in=round(delay, 2))

    def _relist(self, announce_unchanged: bool = False) -> None:
        """List the kind and diff the list against the store into events; with ``announce_unchanged`` (the first
        list after the kind was not served), an object found unchanged is announced too, as ``RESYNC``."""
        # Page by page: each page is packed into the store and announced before the next is decoded, so a list of
        # thousands of objects never lives as dicts all at once (the allocator would keep that peak as resident
        # memory), and an object is announced from the dict just decoded rather than decoded again from the store.
        # What a page stored is announced even when a later page fails: the retry would not see it as new.
        listed: set[StoreKey] = set()
        # What the list says of objects whose store entry is okt's own answer, newer than the list: the watch, which
        # resumes from the list, may still tell changes from before that answer.
        relisted: dict[StoreKey, packing.Packed] = {}
        # The first list is served from the API server's watch cache (client-go's reflector lists so too): no read
        # of etcd, which a busy control plane pays for most. A relist (the watch expired, an error) reads etcd, so
        # the store never goes back to an older state than it has seen.
        #
        # A relist whose continue token expired between two pages (etcd compacted past its snapshot, as it does every
        # few minutes: a list slower than that meets it every time, and would be listed again, paged, for ever) is
        # listed next in one answer, which comes from one snapshot however long it takes to read (client-go's pager
        # does so too); it is still read as it streams, a page at a time.
        etcd = bool(self.relists)
        pages = self.client.list_pages(
            self.kind,
            self.namespace,
            label_selector=self.label_selector,
            page_size=_PAGE,
            resource_version=None if etcd else "0",
            paged=not self._list_whole,
        )
        # Stored objects the list holds but the ``keep`` filter refuses now: they left the selection, and are told
        # below with the state listed (as a leave the watch tells is), not with the one stored from before.
        refused: dict[StoreKey, dict[str, Any]] = {}
        # The list that ends a refusal or an outage of the kind: the reads of the store fail until it is done (see
        # Cache.refusal), so what it tells is held until then — told at once, each change's reconcile failed on the
        # refusal and was done again once lifted (its status written twice). Held encoded, as the store holds them.
        held: list[tuple[str, packing.Packed, packing.Packed | None]] | None = (
            [] if not self._served or self._refusal is not None else None
        )
        try:
            version = self._store_pages(pages, etcd, announce_unchanged, listed, relisted, refused, held)
            there = {**self._read_missing(listed, refused, version), **refused}
        except BaseException:
            if held:  # what the pages stored is told all the same: the retry would not see it as new
                self._announce_sweep(self._unpacked(held))
            raise
        # Each stored object the list lacks, with its state now when it is still there (it left the selection).
        gone: list[tuple[packing.Packed, dict[str, Any] | None]] = []
        with self._lock:
            for key in [key for key in self._store if key not in listed]:
                stored = self._store[key]
                if self._kept_past(key, stored, version):
                    continue
                self._remove_locked(key, stored)
                now = there.get(key)
                gone.append((stored, now if now is not None and packing.uid(now) == stored.uid else None))
            # An answer of okt's newer than the list stays shadowed, against what the list said of the object (or
            # nothing, when the list lacked it): the watch's events up to that answer are told against it, and the
            # answer's own echo is swallowed.
            self._shadowed = {
                key: relisted.get(key)
                for key in self._shadowed
                if key in self._store and is_newer(self._store[key].rv, version) is True
            }
            self._writers = {key: writer for key, writer in self._writers.items() if key in self._shadowed}
            self._resource_version = version
            self.relists += 1
        left = sum(now is not None for _, now in gone)
        self._log.debug("listed", count=len(listed), resource_version=version, deleted=len(gone) - left, left=left)
        # Told once both are lifted, the list in the store and none of its changes told yet: what the kind's daemons
        # start from is what the API server holds now, and an object the list lacks starts none.
        lifted = not self._served or self._refusal is not None
        if not self._served:
            self._served = True
            self._log.info(
                "the API server serves the kind again", count=len(listed), deleted=len(gone) - left, left=left
            )
        if self._refusal is not None:
            self._refusal = None
            self._log.info("the API server lets okt list and watch the kind again")
        if lifted:
            self._refusal_changed()
        if held:
            self._announce_sweep(self._unpacked(held))
        # A leave is told as the watch tells one of the ``keep`` filter: DELETED with the object as it is now, out of
        # the selection; a deletion with the last state stored.
        self._announce_sweep((DELETED, packed.unpack() if now is None else now, None) for packed, now in gone)
        self.has_synced.set()

    def _store_pages(
        self,
        pages: Iterable[tuple[list[dict[str, Any]], str]],
        etcd: bool,
        announce_unchanged: bool,
        listed: set[StoreKey],
        relisted: dict[StoreKey, packing.Packed],
        refused: dict[StoreKey, dict[str, Any]],
        held: list[tuple[str, packing.Packed, packing.Packed | None]] | None,
    ) -> str:
        """Store the pages of a list one at a time, each page's changes told (or ``held``) before the next is read;
        fills ``listed``, ``relisted`` and ``refused`` (see :meth:`_relist`), and returns the list's resourceVersion."""
        version = ""
        answered = False
        try:
            for page, page_version in pages:
                answered = True
                version = page_version
                changes: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
                # Each object to be stored is packed and indexed before the lock, as an event's is (see _handle).
                kept: list[tuple[StoreKey, dict[str, Any], _Ahead | None]] = []
                for item in page:
                    packing.strip(item, self._status_owners, self._field_owners)
                    key = store_key(item)
                    if self._keep is not None and not self._keep(item):
                        if key in self._store:
                            refused[key] = item  # filtered out: not stored, and dropped below as a leave
                        continue
                    kept.append((key, item, self._packed_ahead(key, item, packing.resource_version(item), etcd)))
                with self._lock:
                    for key, item, ahead in kept:
                        listed.add(key)
                        changes.extend(
                            self._listed_locked(
                                key, item, relisted, announce_unchanged, page_version if etcd else "", ahead
                            )
                        )
                del kept
                del page
                if held is None:
                    self._announce_sweep(changes)
                else:
                    held.extend(self._packed(changes))
                del changes
        except errors.Gone:
            self._list_whole = answered  # a page came: the 410 answered its continue token
            raise
        self._list_whole = False
        return version

    def _packed(
        self, changes: Iterable[tuple[str, dict[str, Any], dict[str, Any] | None]]
    ) -> Iterator[tuple[str, packing.Packed, packing.Packed | None]]:
        """``changes`` encoded to be held (an unchanged object's ``old`` is the object itself: encoded once)."""
        for event_type, obj, old in changes:
            packed = packing.Packed(obj, {}, self._codec)
            yield (
                event_type,
                packed,
                packed if old is obj else None if old is None else packing.Packed(old, {}, self._codec),
            )

    @staticmethod
    def _unpacked(
        held: Iterable[tuple[str, packing.Packed, packing.Packed | None]],
    ) -> Iterator[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        """The changes :meth:`_packed` held, decoded one at a time as they are told."""
        for event_type, packed, old in held:
            obj = packed.unpack()
            yield event_type, obj, obj if old is packed else _unpacked(old)

    def _kept_past(self, key: StoreKey, stored: packing.Packed, version: str) -> bool:
        """Whether ``stored``, missing from a list answered at ``version``, stays: an object observed from okt's own
        write after the list was served is newer than the list. Only such an answer, not yet told by the watch: one
        the watch told is missing from a list older than it only when resourceVersions went back (etcd restored from
        a backup) — it is gone. The lock is held."""
        return key in self._shadowed and is_newer(stored.rv, version) is True

    def _read_missing(
        self, listed: Container[StoreKey], refused: Container[StoreKey], version: str
    ) -> dict[StoreKey, dict[str, Any]]:
        """The stored objects a relist of a label-selected informer lacks that are still there, read by name once
        each (rare: only what went while the watch was broken, never per event).

        The API server's list cannot say whether one it lacks was deleted or left the selection (relabelled); the
        watch would have told a leave as ``DELETED`` too, but with the object from before it left, which a worker's
        read of the API then finds — unless the object was deleted since, and its deletion is told to ``on_deleted``
        though it was no longer the operator's when it went. Read now, one still there is told with its state out of
        the selection, as a leave.

        Bounded: none is read by the first list after the kind was served in no version (every object went with its
        CRD; see :meth:`_why_not_served` — one whose version was no longer served kept its objects, and they are
        read), and at most :data:`_MISSING_READS` by any other; the rest are told as deleted, with their last stored
        state. An object okt may not read (a role granting list and watch but not get: ``okt gen rbac`` grants get) is
        told as deleted too; any other failure fails the relist, which is retried.
        """
        if self.label_selector is None or not (self._served or self._objects_kept):
            return {}
        with self._lock:
            missing = [
                key
                for key, stored in self._store.items()
                if key not in listed and key not in refused and not self._kept_past(key, stored, version)
            ]
        lacked = len(missing)
        if lacked > _MISSING_READS:
            self._log.debug(
                "a relist lacks more stored objects than it reads by name: those not read are told as deleted",
                missing=lacked,
                unread=lacked - _MISSING_READS,
            )
            del missing[_MISSING_READS:]
        found: dict[StoreKey, dict[str, Any]] = {}
        for namespace, name in missing:
            if self._stop.is_set():
                break
            try:
                obj = self.client.get_or_none(self.kind, name, namespace or None)
            except errors.Forbidden as exc:
                self._log.warning(
                    "okt may not get the objects a relist lacks to tell whether they left the selection or were "
                    "deleted: they are told as deleted; grant get on the kind (okt gen rbac does)",
                    missing=lacked,
                    error=str(exc),
                )
                break
            if obj is not None:
                obj.setdefault("apiVersion", self.kind.api_version)
                obj.setdefault("kind", self.kind.kind)
                found[(namespace, name)] = packing.strip(obj, self._status_owners, self._field_owners)
        return found

    def _listed_locked(
        self,
        key: StoreKey,
        item: dict[str, Any],
        relisted: dict[StoreKey, packing.Packed],
        announce_unchanged: bool,
        etcd_version: str,
        ahead: _Ahead | None,
    ) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        """Store a listed object (as packed ``ahead``: :meth:`_packed_ahead`) and return the events that tell it
        against the store (see :meth:`_relist`); an answer of okt's newer than the list goes into ``relisted``.
        ``etcd_version`` is the list's resourceVersion when it was read from etcd (a relist), ``""`` when from the
        watch cache. The lock is held."""
        changes: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        current = self._store.get(key)
        listed_version = packing.resource_version(item)
        if current is None:
            self._put_locked(key, item, None, ahead)
            changes.append((ADDED, item, None))
        elif is_newer(listed_version, current.rv) or (
            # A list read from etcd is what the server holds now: a stored version it does not hold, though newer by
            # its number, is one etcd lost (restored from a backup: the versions went back), unless it is okt's own
            # answer, newer than the list. Kept, it hid the object's current state until a change outnumbered it,
            # and the watch's events for the object were dropped as out of order meanwhile.
            etcd_version
            and listed_version != current.rv
            and not (key in self._shadowed and is_newer(current.rv, etcd_version) is True)
        ):
            # Against what the watch said last: the store may hold the answer to okt's own write, which
            # carries whatever changed before it (a spec change the watch never told).
            watched = self._shadowed.get(key, current)
            before = None if watched is None else watched.unpack()
            self._put_locked(key, item, current, ahead)
            if before is None:
                changes.append((ADDED, item, None))
            elif packing.uid(before) != packing.uid(item):
                # Deleted and created again while the watch was down: another object, as the watch
                # would have told (a modification may look like nothing new: same spec, generation 1).
                changes.append((DELETED, before, None))
                changes.append((ADDED, item, None))
            else:
                changes.append((MODIFIED, item, before))
        elif key in self._shadowed:
            # The store holds the answer to okt's own write and the watch never told what came before
            # it (someone may have changed the object between okt's read and its write): announced
            # against what the watch said last, unless the list says just that.
            watched = self._shadowed[key]
            if current.rv != packing.resource_version(item):
                relisted[key] = packing.Packed(item, {}, self._codec)
            if watched is None or watched.rv != packing.resource_version(item):
                changes.append((ADDED if watched is None else MODIFIED, item, _unpacked(watched)))
            elif announce_unchanged:
                changes.append((RESYNC, item, item))
        elif announce_unchanged:
            changes.append((RESYNC, item, item))
        return changes

    def _announce_sweep(self, events: Iterable[tuple[str, dict[str, Any], dict[str, Any] | None]]) -> None:
        """Emit events of a list (or resync) as such: see :func:`sweeping`."""
        _delivery.sweep = True
        try:
            for event_type, obj, old in events:
                self._emit(event_type, obj, old)
        finally:
            _delivery.sweep = False

    def _remember_stream(self, response: Any) -> None:
        self._open_stream = response
        if self._stop.is_set():
            kube_client.interrupt(response)
            return
        self._answered()

    def _answered(self) -> None:
        """A list or watch was answered: tell ``on_recovered`` when the one before had failed."""
        self._unanswered = False
        self._starting_since = None
        if not self._failing:
            return
        self._failing = False
        # A refusal is not lifted here but by the list that answers (see _relist), once in the store: lifted with a
        # watch's opening, the reads of the kind and its daemons would go on from the store as old as the refusal.
        self._log.info("the API server answers again")
        if self._on_recovered is not None:
            try:
                self._on_recovered()
            except Exception:
                self._log.exception("the recovery handler raised")

    def _watch(self) -> None:
        # Spread reconnects of many informers, as client-go does.
        timeout = _JITTER.randint(max(self._watch_timeout // 2, 1), self._watch_timeout)
        stream = self.client.watch(
            self.kind,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
            inactivity_timeout=self._inactivity_timeout,
            on_open=self._remember_stream,
        )
        started = time.monotonic()
        delivered = 0
        try:
            for event in stream:
                if self._stop.is_set():
                    return
                with self._delivering:
                    self._handle(str(event.get("type", "")), event.get("object") or {})
                delivered += 1
        finally:
            # A watch that streamed, or lasted as long as the longest pause, before it broke — a load balancer
            # cutting a connection, busy or idle — was a success: the failures before it are no streak with the one
            # that ends it (and an attempt that long spaced the retries as the backoff would). Counted in a row,
            # repeated cuts reached the longest pause, no event seen meanwhile.
            if delivered or time.monotonic() - started >= self._backoff.cap:
                self._failures = 0
        if self._stop.is_set():
            return
        if not delivered and time.monotonic() - started < _SHORTEST_WATCH:
            # A server closing every watch at once (shutting down, a proxy in the way) must not spin this loop.
            raise errors.ApiError.from_status(0, "WatchClosed", "the watch ended at once without any event")

    def _handle(self, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == ERROR:
            code = int(obj.get("code") or 0)
            raise errors.ApiError.from_status(code, str(obj.get("reason") or "WatchError"), str(obj.get("message")))
        version = packing.resource_version(obj)
        if event_type == BOOKMARK:
            with self._lock:
                # Only forward: a bookmark behind what the stream already told (a proxy or a server replaying its
                # stream) would resume the next watch from there, and what it told since would be told again.
                if version and is_newer(version, self._resource_version) is not False:
                    self._resource_version = version
            return
        if event_type not in (ADDED, MODIFIED, DELETED):
            self._log.warning("unknown watch event ignored", type=event_type)
            return
        obj.setdefault("apiVersion", self.kind.api_version)
        obj.setdefault("kind", self.kind.kind)
        packing.strip(obj, self._status_owners, self._field_owners)
        key = store_key(obj)
        kept = event_type == DELETED or self._keep is None or self._keep(obj)
        # Packed (and indexed: the operator's index functions, which may take their time or never return) before the
        # lock, which every read of the kind takes; this thread is the only one telling events, so no later event of
        # the object can be stored meanwhile (an answer of okt's own write can: see _packed_ahead).
        ahead = self._packed_ahead(key, obj, version) if event_type != DELETED and kept else None
        with self._lock:
            if version:
                self._resource_version = version
            current = self._store.get(key)
            if event_type == DELETED and current is None:
                # Never stored (the filter kept it out, or its leave was told already): the handlers never held it,
                # and a deletion would tell its timers, daemons and queue key of an object unknown to them.
                return
            if not kept:
                # Filtered out: never stored; one that leaves the filter leaves the store, announced as deleted.
                if current is None:
                    self._shadowed.pop(key, None)
                    self._writers.pop(key, None)
                    return
                event_type = DELETED
            newer = None if current is None else is_newer(version, current.rv)
            shadowed = key in self._shadowed
            watched = self._shadowed.pop(key) if shadowed else current
            writer = self._writers.pop(key, None)
            echo = None
            if event_type == DELETED:
                # A stored object newer than the deletion (recreated and observed since) stays.
                if current is not None and newer is not False:
                    self._remove_locked(key, current)
                emitted: tuple[str, dict[str, Any], dict[str, Any] | None] = (DELETED, obj, None)
            elif newer is False:
                if not shadowed:
                    return  # an event older than what we hold: out of order, nothing new to say
                # Someone else's change from before okt's own write, whose answer reached the store first: the
                # writer acted on what it had read before this change (a spec changed between a reconcile's read
                # and its status write), so it is announced as usual, against what the watch said last. The store
                # keeps the newer answer; the echo of okt's write, still to come, is swallowed.
                self._shadowed[key] = packing.Packed(obj, {}, self._codec)
                self._writers[key] = writer
                emitted = (ADDED if watched is None else MODIFIED, obj, watched.unpack() if watched else None)
            elif newer is None and shadowed:
                # The echo of okt's own write, already in the store through observe(): the reconcile that wrote
                # it knows this exact version, so there is nothing new to tell it (and no needless reconcile). Told
                # against what the watch said last to the others, when the writer is named.
                if writer is None:
                    return
                echo = writer
                emitted = (ADDED if watched is None else MODIFIED, obj, watched.unpack() if watched else None)
            else:
                if newer is True or current is None:
                    self._put_locked(key, obj, current, ahead)
                emitted = (ADDED if watched is None else MODIFIED, obj, watched.unpack() if watched else None)
        self._emit(*emitted, echo=echo)

    def _run_resync(self) -> None:
        assert self._resync is not None
        while not self._stop.wait(self._resync):
            if not self.has_synced.is_set():
                continue
            # Each object as stored when it is told, not as a list of them taken before: the watch's thread tells
            # its changes meanwhile, and a deletion told before this object's turn came was followed by a RESYNC of
            # the object gone (its daemons started again, for good).
            self.replay(lambda obj: self._emit(RESYNC, obj, obj))

    def _emit(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, echo: object | None = None
    ) -> None:
        if self._stop.is_set():
            return
        _delivery.echo_of = echo
        try:
            self._on_event(event_type, obj, old)
        except Exception as exc:  # a faulty handler must not stop the informer
            self._log.error(
                "event handler failed", event_type=event_type, object=store_key(obj), error=errors.said(exc)
            )
        finally:
            _delivery.echo_of = None

    # -- store and indexes ---------------------------------------------------------------------------------------

    def _packed_ahead(self, key: StoreKey, obj: Mapping[str, Any], version: str, etcd: bool = False) -> _Ahead | None:
        """``obj`` packed and indexed without the lock, to be stored by :meth:`_put_locked` — or None when the store
        holds a version of it not older (the put is not expected: nothing packed for an event dropped or swallowed,
        nor for an object a relist finds unchanged, so no object is packed twice); with ``etcd`` (a relist's object,
        which replaces any other version: see :meth:`_listed_locked`), None when the store holds that very version.

        Read without the lock, as :meth:`get` reads: only okt's own answers (:meth:`observe`) change the entry of an
        object from another thread meanwhile, to a newer one, after which the put under the lock is refused and this
        entry dropped; an index added meanwhile (:meth:`add_indexers`) has it packed again, under the lock."""
        current = self._store.get(key)
        if current is not None and (current.rv == version if etcd else is_newer(version, current.rv) is not True):
            return None
        indexers = self._indexers  # before the packing: add_indexers sets the packing first
        return indexers, self._packing(obj, indexers, self._codec)

    # -- the lock is held ----------------------------------------------------------------------------------------

    def _put_locked(
        self, key: StoreKey, obj: Mapping[str, Any], current: packing.Packed | None, ahead: _Ahead | None = None
    ) -> packing.Packed:
        """Store ``obj``: as packed ``ahead`` of the lock (:meth:`_packed_ahead`) when that was with the indexes
        kept now, else packed here."""
        if current is not None:
            self._unindex_locked(key, current)
        if ahead is not None and ahead[0] is self._indexers:  # no index added since (it replaces the mapping)
            packed = ahead[1]
        else:
            packed = self._packing(obj, self._indexers, self._codec)
        self._store[key] = packed
        for name, values in zip(self._indexers, packed.index, strict=True):
            index = self._indexes[name]
            for value in values:
                index[value] = _bucket_with(index.get(value, ()), key)
        return packed

    def _table_locked(self, index: str) -> dict[Hashable, Bucket]:
        """The table of ``index``, to read it: a ``KeyError`` for one not kept, or still being built."""
        if index not in self._readable:
            raise KeyError(index)
        return self._indexes[index]

    def _remove_locked(self, key: StoreKey, current: packing.Packed) -> None:
        self._unindex_locked(key, current)
        del self._store[key]

    def _unindex_locked(self, key: StoreKey, packed: packing.Packed) -> None:
        """Take ``key`` out of the indexes under the values its entry holds. An entry stored before an index
        add_indexers is building holds the values of the indexes readable then alone (the added come last, all at
        once); any other count is an entry out of step with the indexes, whose values would be left behind stale,
        refused as zip's ``strict`` refuses it."""
        held = len(packed.index)
        if held != len(self._indexers) and held != len(self._readable):
            raise ValueError(
                f"a stored entry holds the values of {held} indexes: the store keeps {len(self._indexers)}, "
                f"{len(self._readable)} of them readable"
            )
        for name, values in zip(self._indexers, packed.index, strict=False):  # the added ones left out, as said
            index = self._indexes[name]
            for value in values:
                bucket = _bucket_without(index.get(value, ()), key)
                if bucket:
                    index[value] = bucket
                else:
                    index.pop(value, None)
