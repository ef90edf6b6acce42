"""A controller: the events of one reconciler's kinds turned into keys, and workers turning keys into reconciles.

Why this exists: it is the wiring controller-runtime gives OKT in Go. A reconciler declares its primary kind and the
kinds it owns (and owned once: ``legacy_owns``, whose leftover children its prune reads from the cache); the controller
watches them through the shared :class:`okt.runtime.cache.Cache`, maps every relevant event to the key (namespace,
name) of the primary object it concerns, and runs ``workers`` threads that take keys from a
:class:`okt.runtime.workqueue.WorkQueue`, reconcile them, and drive the queue from the reconcile's one outcome.

Guarantees:

* **event mapping** — a primary's ADDED event enqueues its key; a MODIFIED event only if it changed the generation, the
  deletionTimestamp, the finalizers, the labels or the annotations (a status-only write, ours included, never loops); a
  DELETED primary's requeue and backoff are dropped (a recreated one's too: they were the old object's), and it is not
  reconciled (the core ran its finalizer before the API let it go) unless the store holds it again — or unless it went
  **with okt's finalizer still on it**: a deletion that did not wait for the finalizer (the API server can delete an
  object whose finalizer was added while the deletion was under way, Kubernetes issue 77988; or someone deleted it from
  etcd). Once the API confirms it is gone (a watch also says ``DELETED`` of an object that merely left its selection:
  that one is left alone), its cleanup runs on its last known state (``cleanup(ctx)``; the finalizer's removal finds it
  gone), retried with backoff until it succeeds, so what it was to release is released (or until it gives up: its last
  state is dropped then, as nothing can change a gone object); a child's event enqueues the owner named by its
  *controller* ownerReference (for a modification, before the change too: an owner the child stopped naming has lost it)
  when that owner is of the primary kind and is in the cache with that uid (the children of a deleted owner, which the
  garbage collector removes, wake nothing) — its addition or deletion at once; a modification only when it changed
  something outside the status (but for the resource class's ``foreign_annotations``) or the class's ``status_view`` (a
  Deployment's readiness counts, not every status rewrite of its controller; a view that raises counts as changed), and
  after the reconciler's ``child_change_delay``, so a burst of them is one reconcile; an event of a kind the reconciler
  ``watches`` is mapped on the controller's mapping thread, in the order the watch told them (its informer's thread
  only hands it over; the events of one object that wait together are mapped as one, so at most one waits per
  object: :mod:`okt.runtime.mapping_queue`), and the first lists' are all mapped before the workers start (their keys
  join the sweep's);
* **deletions told** (a reconciler that overrides ``on_deleted``, leading): a primary's ``DELETED`` keeps its last
  state (:mod:`okt.runtime.deletions`) and queues its key; the worker that takes the key calls ``on_deleted`` for it
  before anything else — so before the reconcile of an object recreated under that name — once the API says it is
  gone (not for one that merely left the selection, nor for one deleted after it left it: the ``DELETED`` of an object
  out of the selection, as the event tells it, is no deletion of the operator's), and reconciles nothing when no
  object is left to reconcile; a hook that raises is logged, counted and called again after the key's backoff, a
  bounded number of times (a read the API server did not answer is no call: it is made again until it is answered);
* **one reconcile per key at a time**, whatever the number of workers (the queue's guarantee);
* **a standby queues nothing** (``standby=True``, a leader-elected replica before it leads): its events change its
  cache only, and its queue stays empty; once it leads, :meth:`Controller.start_workers` queues first the primaries
  a live event named meanwhile (a change made at the failover), then every primary of that warm cache as a sweep (no
  relist), with the objects deleted meanwhile whose reconcile is still due;
* **no reconcile for okt's own echo**: an event arriving while its primary is being reconciled is held until that
  reconcile ends; it then requeues the key unless it announced exactly a version the reconcile itself wrote (the
  watch is often faster than the answer to the write) — any other change, or a deletion, requeues as usual. A kind
  the reconciler ``watches`` is mapped for its own writes too (a child one primary owns and others name): the
  primaries the mapping names are reconciled, the writer's among them when it names it;
* **outcome → queue**: ``done`` forgets the key's backoff; ``requeue_after(s)`` forgets it and schedules the key in
  ``s``; ``retry`` counts one more failure of the key and schedules it after the larger of the per-key exponential
  backoff and the delay the error asked for (a ``TemporaryError``'s, a conflict's, a 429's ``retryAfterSeconds``,
  capped at 6 h as every delay);
  ``give_up`` forgets it (it comes back when the object or a child changes); the outcome of a reconcile whose object
  left the cache meanwhile (deleted, or out of the selection) is dropped with the key's backoff, as its deletion's
  event dropped them — but for a cleanup past okt's finalizer or a ClusterOperator's mirror, still to be done;
* **back from an outage at once**: a key whose reconcile failed because the API server did not answer
  (:class:`okt.errors.Unavailable`), or on a read of a kind whose watch it refused or no longer served, is retried as
  soon as an informer reaches the API server again, its backoff reset
  — not minutes later, when the backoff it climbed during the outage runs out;
* **no reconcile on a stale store**: a reconcile that reads a kind whose list or watch the API server refuses
  (``403``: the role lost the rule; ``404``: the kind is not served any more) fails with a ``Forbidden`` or a
  ``NotFound`` naming the kind (see :meth:`okt.runtime.cache.Cache.refusal`) and is retried with backoff; the
  reconciles that do not read it go on;
* a reconcile function that **raises** counts as ``retry`` (result ``error`` in the metrics): no key is lost, no worker
  dies;
* each reconcile runs with controller, namespace, name and a reconcile id bound to the logging context.

Caveats: the cleanup of an object deleted past okt's finalizer is remembered in memory only: if the operator stops
before it succeeds, or the object was so deleted while no operator watched, nothing can tell it any more.

The reconcile function is a parameter (default :func:`okt.reconciler.core.reconcile`), so the wiring can be exercised
with a plain function.
"""

from __future__ import annotations

import builtins
import copy
import datetime
import functools
import threading
import time
from collections.abc import Container, Mapping
from typing import Any, Protocol

import structlog

from okt import coroutines, delays, errors, secret_values
from okt import names as names_mod
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, objects, selectors
from okt.reconciler import context as context_mod
from okt.reconciler import core, indexes, refused_reports, timers
from okt.reconciler import reconciler as reconciler_mod
from okt.reconciler import watches as watches_mod
from okt.resources import resource, take_over
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import changes, logs, mapping_queue, packing, workqueue
from okt.runtime import daemons as daemons_mod
from okt.runtime import deletions as deletions_mod
from okt.runtime import informer as informer_mod
from okt.runtime import metrics as metrics_mod
from okt.status import events
from okt.status import writer as status_writer

QueueKey = tuple[str | None, str]
"""``(namespace, name)`` of a primary object; namespace is ``None`` for a cluster-scoped kind."""

_log = structlog.get_logger("okt.controller")


DAEMON_STOP_POLL = 0.2
"""Seconds between two looks at a deleted object whose daemons have not returned yet (its finalization waits)."""


class ReconcileFunction(Protocol):
    """The signature of :func:`okt.reconciler.core.reconcile`, as the controller calls it."""

    def __call__(
        self,
        reconciler: reconciler_mod.Reconciler,
        client: kube_client.Client,
        reader: context_mod.Reader | None,
        namespace: str | None,
        name: str,
        *,
        kind: kinds.Kind | None = None,
        logger: structlog.typing.FilteringBoundLogger | None = None,
        recorder: events.EventRecorder | None = None,
    ) -> stepper.Run: ...


# -- pure rules ------------------------------------------------------------------------------------------------


def _unmapped(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The handler of a kind watched for its indexes alone: the cache keeps them, no change reconciles anything."""


def key_of(obj: Mapping[str, Any], namespaced: bool = True) -> QueueKey:
    """The queue key of a primary object."""
    meta = obj.get("metadata") or {}
    return ((meta.get("namespace") or None) if namespaced else None, str(meta.get("name") or ""))


def owner_key(child: Mapping[str, Any], owner_kind: kinds.Kind) -> QueueKey | None:
    """The key of ``child``'s controller owner when that owner is of ``owner_kind`` (any version of its group)."""
    ref = objects.controller_of(child)
    if ref is None or ref.get("kind") != owner_kind.kind or not ref.get("name"):
        return None
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    if group != owner_kind.group:
        return None
    namespace = (child.get("metadata") or {}).get("namespace") or None
    return (namespace if owner_kind.namespaced else None, str(ref["name"]))


def apply_outcome(
    queue: workqueue.WorkQueue[QueueKey], key: QueueKey, outcome: results_mod.Outcome, *, unread: bool = False
) -> None:
    """Drive the queue from a reconcile's outcome (see the module docstring); ``unread``: the reconcile failed on a
    read the cache could not answer (see :meth:`okt.runtime.cache.Cache.refusal`), retried with the failures for lack
    of an answer."""
    kind = outcome.kind
    if kind is results_mod.OutcomeKind.RETRY:
        # Every failure counts toward the key's backoff, whatever delay the error asked for: a conflict that
        # persists, or a TemporaryError(delay=1) raised forever, still backs off.
        asked = outcome.delay or 0.0
        if isinstance(outcome.error, errors.TooManyRequests) and outcome.error.retry_after:
            # Capped as every requeue delay is: the header is whatever answered (a proxy may ask for a day).
            asked = max(asked, min(outcome.error.retry_after, results_mod.MAX_DELAY))
        unanswered = unread or isinstance(outcome.error, errors.Unavailable)
        queue.add_rate_limited(key, at_least=asked, unanswered=unanswered)
        return
    queue.forget(key)
    if kind is results_mod.OutcomeKind.REQUEUE_AFTER and outcome.delay is not None:
        queue.add_after(key, outcome.delay)


# -- the controller --------------------------------------------------------------------------------------------


class _Writes:
    """The cache as one controller's reconciles read it: what they write goes through to the store as that
    controller's, so the watch's echo of it wakes every other controller watching the kind (a child of this one that
    is another's primary, a kind another one ``okt.watch``-es) and not this one's primary and child handlers, which
    know what it wrote — but its own ``okt.watch`` of the kind maps it: the primaries it names read what was written.

    A read of a kind the API server no longer lets okt list or watch, or no longer serves (an index of such a kind
    read whole too), raises :meth:`okt.runtime.cache.Cache.refusal`'s error: what the store holds of it is as old as
    the refusal, and a reconcile that took it for current would find a child deleted meanwhile unchanged, and say
    Ready."""

    def __init__(self, cache: cache_mod.Cache, writer: object) -> None:
        self._cache = cache
        self._writer = writer
        self.refused: errors.ApiError | None = None
        """The refusal a read raised, if one did."""

    def _check(self, kind: kinds.Kind, namespace: str | None) -> None:
        refused = self._cache.refusal(kind, namespace)
        if refused is not None:
            self.refused = refused
            raise refused

    def unwatched(self, kind: kinds.Kind, namespace: str | None) -> bool:
        return self._cache.unwatched(kind, namespace)

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        self._check(kind, namespace)
        return self._cache.get(kind, name, namespace)

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        self._check(kind, namespace)
        return self._cache.list(kind, namespace, labels)

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        owner_uid: str,
        labels: Mapping[str, str],
        skip: Container[tuple[str, str]] = (),
    ) -> builtins.list[dict[str, Any]]:
        self._check(kind, namespace)
        return self._cache.owned(kind, namespace, owner_uid, labels, skip)

    def whole_index(self, index: str) -> indexes.Index | None:
        refused = self._cache.index_refusal(index)
        if refused is not None:
            self.refused = refused
            raise refused
        return self._cache.whole_index(index)

    def observe(self, obj: Mapping[str, Any]) -> None:
        self._cache.observe(obj, self._writer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)


class _Gone(_Writes):
    """The controller's view of the cache, except that for one object deleted past okt's finalizer it answers with
    that object's last known state, marked as being deleted (so that a reconcile of it runs its cleanup)."""

    def __init__(self, cache: cache_mod.Cache, writer: object, kind: kinds.Kind, obj: Mapping[str, Any]) -> None:
        super().__init__(cache, writer)
        self._kind = kind
        self._key = key_of(obj, kind.namespaced)
        self._obj = obj

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        if (kind.api_version, kind.kind) == (self._kind.api_version, self._kind.kind) and self._key == (
            namespace if kind.namespaced else None,
            name,
        ):
            return copy.deepcopy(dict(self._obj))
        return super().get(kind, name, namespace)


def gone_past_finalizers(obj: Mapping[str, Any], finalizers: Container[str]) -> dict[str, Any] | None:
    """The last state of a deleted object that carried one of ``finalizers`` and was never marked as being deleted —
    returned marked so, as a reconcile of it must see it — or None.

    A deletion that waited for its finalizers marks the object first (``deletionTimestamp``), and the watch's
    ``DELETED`` tells the last state stored, which still lists the finalizer okt's own removal took away (the API
    server deletes instead of storing that removal): that one is None, its cleanup ran. An object gone with a
    finalizer and no such mark went without waiting.
    """
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp") or not any(f in finalizers for f in meta.get("finalizers") or ()):
        return None
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**obj, "metadata": {**meta, "deletionTimestamp": stamp}}


class Controller:
    """Watches a reconciler's kinds and reconciles its primary objects with ``workers`` threads.

    Args:
        reconciler_cls: the :class:`okt.Reconciler` subclass; one instance serves every worker.
        client: the shared API client (writes go there).
        cache: the shared cache (reads come from there).
        workers: the number of worker threads (the reconciler's ``max_concurrent`` wins when set).
        reconcile: the reconcile function (default :func:`okt.reconciler.core.reconcile`).
        metrics: where to report; a private :class:`~okt.runtime.metrics.Metrics` when ``None``.
        backoff: the per-key backoff of failed reconciles.
        record_events: give the reconcile an Event recorder (Kubernetes Events in ``kubectl describe``).
        standby: a replica that does not lead yet (leader election): its events queue no key before
            :meth:`start_workers`, which then queues every cached primary as a sweep. A standby's queue stays empty,
            so its depth (``okt_workqueue_depth``) is 0 and an alert on it does not fire on every standby; its warm
            cache is what the sweep is made from.
    """

    _to_map: mapping_queue.MappingQueue | None = None
    """The events of watched kinds still to map, in the order their informers told them, at most one per watched
    object (see :meth:`on_related_event`), and markers set once the events before them are mapped. Made by
    :meth:`watch` for a reconciler with watches."""
    _said_stuck = False
    """Whether the log told the workers stuck, this spell (see :meth:`stuck`)."""
    _mapping: tuple[float, str] | None = None
    """When the mapping thread took the event it maps now (on :func:`time.monotonic`), and the watched object's
    ``Kind namespace/name``; ``None`` between two events (see :meth:`mapping_stuck`)."""
    _said_mapping_stuck = False
    """Whether the log told the mapping stuck, this spell (see :meth:`mapping_stuck`)."""

    def __init__(
        self,
        reconciler_cls: type[reconciler_mod.Reconciler],
        client: kube_client.Client,
        cache: cache_mod.Cache,
        *,
        workers: int = 4,
        reconcile: ReconcileFunction = core.reconcile,
        metrics: metrics_mod.Metrics | None = None,
        backoff: backoff_mod.Backoff | None = None,
        record_events: bool = True,
        standby: bool = False,
    ) -> None:
        reconciler_cls = core.resolved(reconciler_cls, client)  # a kind named as kubectl names it: discovered
        self.reconciler_cls = reconciler_cls
        self.reconciler = reconciler_cls()
        self._ignored_annotations = changes.ignored_annotations(
            names_mod.Names(reconciler_cls.prefix, tuple(reconciler_cls.legacy_prefixes))
        )
        self.client = client
        self.cache = cache
        self.name = reconciler_cls.controller_name()
        self.workers = reconciler_cls.max_concurrent or workers
        if self.workers < 1:
            raise ValueError(f"a controller needs at least one worker, got {self.workers}")
        self.kind = core.primary_kind(reconciler_cls, client)
        # The kinds of the children watched: those owned, and those an earlier version owned (``legacy_owns``), whose
        # children the prune reads from the cache; an informer for them only when some are declared.
        self.owned = [
            k
            for k in (*core.owned_kinds(reconciler_cls, client), *core.legacy_kinds(reconciler_cls, client))
            if k != self.kind
        ]
        self.related = core.watched_kinds(reconciler_cls, client)
        self._watched_by_type = {(k.api_version, k.kind): k for k in (self.kind, *self.owned)}
        self._classes_by_type: dict[tuple[str, str], tuple[type[resource.Resource], ...]] = {}
        for cls in reconciler_cls.owns:
            type_key = (cls.api_version, cls.kind)
            self._classes_by_type[type_key] = (*self._classes_by_type.get(type_key, ()), cls)
        self.metrics = metrics if metrics is not None else metrics_mod.Metrics()
        self.queue: workqueue.WorkQueue[QueueKey] = workqueue.WorkQueue(
            backoff, observer=self.metrics.queue_times(self.name)
        )
        self._pacer = workqueue.SweepPacer(self.queue, self.workers) if self.workers > 1 else None
        """How many keys of a sweep run at once (see :class:`okt.runtime.workqueue.SweepPacer`)."""
        self._reconcile = reconcile
        self._recorder = events.EventRecorder(client, self.name) if record_events else None
        self.write_fence: fence_mod.WriteFence | None = None
        """Asked before every write of a reconcile (the leader-elected manager sets it; see ``fence_mod.fenced``)."""
        self._threads: list[threading.Thread] = []
        self._child_delay = delays.capped(reconciler_cls.child_change_delay)
        # Events held while their primary is reconciled: (kind, namespace, name, resourceVersion), delay per key.
        self._held: dict[QueueKey, list[tuple[tuple[kinds.Kind, str | None, str, str], float]]] = {}
        self._held_lock = threading.Lock()
        # Objects deleted with okt's finalizer still on them, by key, until their cleanup succeeded (guarded by
        # _held_lock).
        self._gone: dict[QueueKey, dict[str, Any]] = {}
        self._standing_by = standby
        """No key is queued before the workers start (guarded by _held_lock)."""
        self._deleted_standing_by: QueueKey | None = None
        """The last primary whose deletion would have queued its key while standing by (guarded by _held_lock): a
        ClusterOperator's mirror forgets a deleted object in its reconcile, and the sweep has no key for it."""
        self._changed_standing_by: set[QueueKey] = set()
        """The cached primaries a live event (not a list's) would have queued while standing by (guarded by
        _held_lock): queued first once this replica leads, before the sweep — a change made at the failover is what
        someone waits for."""
        # The deleted objects whose on_deleted is still to be called, when the reconciler overrides it.
        self._deletions: deletions_mod.Deletions[QueueKey] | None = (
            deletions_mod.Deletions(backoff, self._in_selection)
            if reconciler_cls.on_deleted is not reconciler_mod.Reconciler.on_deleted
            else None
        )
        self._finalizers = frozenset(
            f for f in (reconciler_cls.finalizer, *reconciler_cls.legacy_finalizers) if isinstance(f, str) and f
        )
        self._watching = False
        self._lock = threading.Lock()
        self._processed = 0
        self._log: structlog.typing.FilteringBoundLogger = structlog.get_logger("okt.controller").bind(
            controller=self.name
        )
        self._prepare_metrics()
        self.metrics.workers(self.name, self.workers)
        self.metrics.track_queue(self.name, lambda: len(self.queue))
        self.daemons = daemons_mod.Supervisor(
            self.reconciler,
            client,
            self.kind,
            read=lambda namespace, name: self.cache.get(self.kind, name, namespace),
            enqueue=lambda namespace, name: self.queue.add((namespace, name)),
            fence=lambda: self.write_fence,
            controller=self.name,
            # Through the reconciles' view: an index of a kind refused to okt raises, as in a reconcile.
            read_index=lambda name: indexes.read(
                _Writes(self.cache, self), client, self.name, self.reconciler.settings().watch_indexes, name
            ),
        )
        """The ``@okt.daemon`` threads of the primaries: started with the workers, stopped with them."""
        self.metrics.track_priorities(self.name, self.queue.depths)
        pacer = self._pacer
        self.metrics.track_sweep_width(self.name, lambda: pacer.width if pacer is not None else self.workers)

    def _prepare_metrics(self) -> None:
        """Create this controller's series at zero, and have its timers' failed calls counted."""
        self.metrics.prepare(self.name)
        self.reconciler.timer_clock.count_failures(
            self.metrics.count_timers(self.name, timers.declared(self.reconciler_cls))
        )

    @functools.cached_property
    def field_owners(self) -> take_over.FieldOwners | None:
        """The managedFields entries of the children an update takes over, which the cache keeps of them (None: the
        merge strategy takes over none)."""
        return take_over.FieldOwners.of(self.reconciler.settings().writes)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def watch(self) -> None:
        """Start watching the primary kind (with the cache's label selector) and every owned kind (idempotent)."""
        with self._lock:
            if self._watching:
                return
            self._watching = True
        filtered = type(self.reconciler).when is not reconciler_mod.Reconciler.when or bool(
            self.reconciler_cls.annotation_selector
        )
        self.cache.start(
            self.kind,
            self.on_primary_event,
            use_selector=True,
            status_owners=self.reconciler_cls.applies_status(),
            keep=self.reconciler.selects if filtered else None,
            indexers={
                watches_mod.index_name(self.name, name): functools.partial(
                    watches_mod.safe_index,
                    function,
                    failed=functools.partial(self.metrics.index_failed, self.name, name),
                )
                for name, function in self.reconciler_cls.indexes.items()
            },
            writer=self,
        )
        for kind in self.owned:
            self.cache.start(kind, self.on_child_event, field_owners=self.field_owners, writer=self)
        watch_indexes = [name for _, watched in self.related for name in watched.indexes]
        self.metrics.prepare_watches(
            self.name, [str(kind) for kind, _ in self.related], [*self.reconciler_cls.indexes, *watch_indexes]
        )
        if any(watched.map is not None for _, watched in self.related):
            self._to_map = mapping_queue.MappingQueue()
            self.metrics.track_mapping(self.name, functools.partial(len, self._to_map))
            threading.Thread(
                target=self._map_related, args=(self._to_map,), name=f"okt-{self.name}-mapper", daemon=True
            ).start()
        for kind, watched in self.related:
            self.cache.start(
                kind,
                functools.partial(self.on_related_event, watched) if watched.map is not None else _unmapped,
                indexers={
                    watches_mod.index_name(self.name, name): indexes.Indexer(
                        name, function, failed=functools.partial(self.metrics.index_failed, self.name, name)
                    )
                    for name, function in watched.indexes.items()
                },
                # Speaking for no writer: the echo of this controller's own write of a watched object (a child it owns
                # that other primaries name, an object of its own kind another one names) is news to the primaries
                # the mapping names, which the reconcile that wrote it is not. Said for this controller, it was
                # swallowed with the echo its primary and child handlers need not hear, whenever the write's answer
                # reached the store before the watch told it: those primaries kept what they had read.
                writer=None,
            )
        # Every kind the cache's sync (and so /readyz) waits for, the watched ones too.
        for kind in (self.kind, *self.owned, *(kind for kind, _ in self.related)):
            self.metrics.track_sync(str(kind), *self.cache.progress(kind))
        self.cache.on_recovered(self._retry_unanswered)
        if self.daemons:
            self.cache.on_refusal_changed(self.kind, self._primary_refusal_changed)
        self._log.info("watching", kind=str(self.kind), owns=[str(k) for k in self.owned])

    def _primary_refusal_changed(self, namespace: str | None) -> None:
        """The API server stopped serving the primary kind or refusing okt its list and watch in ``namespace`` (the
        scope of the informer that tells it: every namespace when ``None``), or started again: the daemons of the
        objects there are stopped meanwhile, and started again for what the cache holds there once it is listed again
        (see :meth:`okt.runtime.daemons.Supervisor.suspend`); those of the other watched namespaces go on. What the
        cache says is read under the lock: a change told while the workers start is acted on after their first look,
        on the state it leaves."""
        with self._lock:
            refused = self.cache.refusal(self.kind, namespace)
            if refused is None:
                self.daemons.resume(self.cache.each(self.kind, namespace), namespace)
            else:
                self.daemons.suspend(refused, namespace)

    def _retry_unanswered(self) -> None:
        retried = self.queue.retry_unanswered()
        if retried:
            self._log.info("the API server answers again: retrying what failed for lack of an answer", keys=retried)

    def start_workers(self) -> None:
        """Start the worker threads (idempotent); call once the cache is synced."""
        with self._lock:
            if self._threads:
                return
            self._threads = [
                threading.Thread(target=self._work, name=f"okt-{self.name}-worker-{i}", daemon=True)
                for i in range(self.workers)
            ]
        self._mapped_so_far()
        self._stop_standing_by()
        self.metrics.track_timers(self.name, self.reconciler.timer_clock.overdue)
        for thread in self._threads:
            thread.start()
        self._log.info("workers started", workers=self.workers)
        if self.daemons:
            for informer in self.cache.informers(self.kind):
                # A namespace where the kind is refused or not served since the caches synced starts no daemon.
                self._primary_refusal_changed(informer.namespace)
            # One object at a time: the primaries decoded all at once were, at 10,000 objects, a spike of the
            # whole store's decoded size right when the sweep starts (and resident memory after it).
            self.daemons.start(self.cache.each(self.kind))

    def _mapped_so_far(self) -> None:
        """Wait until every event of a watched kind told so far is mapped (the first lists' are: the cache is synced),
        so that the primaries they name join the sweep's keys before a worker takes one, as when the informer mapped
        them itself before it synced (a key mapped after its reconcile would be reconciled again for nothing)."""
        if self._to_map is None:
            return
        reached = threading.Event()
        self._to_map.mark(reached)
        reached.wait()

    def _stop_standing_by(self) -> None:
        """Queue what a standby held back: the primaries live events named, then every cached primary (the sweep),
        and the objects deleted meanwhile whose reconcile is still due (deleted past okt's finalizer, or the last one
        a ClusterOperator's mirror must forget).

        An event the standby dropped changed the store before it was delivered, so the keys read after the flag is
        down include it; an event delivered after that queues its key as usual."""
        with self._held_lock:
            if not self._standing_by:
                return
            self._standing_by = False
            deleted = [*self._gone, *((self._deleted_standing_by,) if self._deleted_standing_by else ())]
            changed = self._changed_standing_by
            self._deleted_standing_by, self._changed_standing_by = None, set()
        for key in (*deleted, *changed):
            self.queue.add(key)
        for key in self.cache.keys(self.kind):
            self.queue.add(key, low=True)  # a key queued live above stays in the live lane

    def shutdown(self, grace: float | daemons_mod.Left = 30.0) -> list[str]:
        """Stop taking keys and wait up to ``grace`` seconds for in-flight reconciles and for the daemons, asked to
        stop; returns what still runs then (empty: they all finished): the reconciles counted, each daemon by name
        (``namespace/name: daemon``). ``grace`` may say, asked again as the wait goes, how long it has left (the
        manager's, cut short when the lease is lost meanwhile)."""
        if self._to_map is not None:
            self._to_map.close()
        self.queue.shutdown()
        self.daemons.halt()
        began = time.monotonic()
        remaining = grace if callable(grace) else daemons_mod.fixed(grace)
        for thread in self._threads:
            daemons_mod.join(thread, remaining)
        self.daemons.join(remaining)
        unfinished = sum(thread.is_alive() for thread in self._threads)
        left = [
            f"{namespace}/{name}: {daemon}" if namespace else f"{name}: {daemon}"
            for namespace, name, daemon in self.daemons.running()
        ]
        if unfinished:
            on = self.working_on()
            self._log.warning(
                "reconciles still running after the grace period",
                running=unfinished,
                on=on,
                grace=round(time.monotonic() - began, 2),
            )
            left.insert(0, f"{unfinished} reconcile{'s' if unfinished > 1 else ''} of {self.name} ({on})")
        return left

    def working_on(self, most: int = 5) -> str:
        """The objects the workers reconcile now, as ``namespace/name`` (the first ``most``, then how many more):
        what a stuck worker or a shutdown left running is on, for the log and the probes."""
        keys = self.queue.processing_keys()
        shown = [f"{namespace}/{name}" if namespace else name for namespace, name in keys[:most]]
        return ", ".join(shown + ([f"{len(keys) - most} more"] if len(keys) > most else [])) or "nothing"

    @property
    def processed(self) -> int:
        """How many reconciles finished so far."""
        return self._processed

    @property
    def in_flight(self) -> int:
        """How many reconciles are running now."""
        return self.queue.processing_count

    # -- events --------------------------------------------------------------------------------------------------

    def on_primary_event(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.daemons.observe(event_type, obj)
        key = key_of(obj, self.kind.namespaced)
        if event_type == informer_mod.DELETED:
            # Its timers' schedule goes with it (a new object of that name has another uid, and a schedule of its
            # own): kept, it would stay until a sweep that may never come once no timer runs any more.
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            self.reconciler.timer_clock.forget(uid, timers.declared(self.reconciler_cls))
            # And what its last status write left (another uid, if it comes back): kept, the residues of objects long
            # gone pushed out those of live ones, whose status was then written again at every reconcile.
            status_writer.RESIDUES.forget(uid)
            refused_reports.REFUSED.forget(uid)  # and its report the API server refused, if it had one
            if self._recorder is not None:
                self._recorder.forget(uid)  # the Events said of it: the same, or repeats of live objects' became new
            told = self._note_deletion(key, obj)
            stored = self.cache.uid(self.kind, key[1], key[0])
            if stored != uid:
                # Its requeue and backoff go with it (kept, they stayed for hours and woke a reconcile of nothing); a
                # reconcile its deletion still needs is queued below, now. Also when another object of that name is
                # stored already (deleted and created again while the watch was down: the relist tells the deletion
                # after it stored the new one): the failures counted were the old object's, and the new one's first
                # failure waited out the backoff they had climbed.
                self.queue.discard(key)
            # Gone for good unless it came back (recreated) in the meantime, or went with okt's finalizer on.
            if stored is None:
                last = gone_past_finalizers(obj, self._finalizers)
                with self._held_lock:
                    # A standby's memory of a live change goes with its object: kept, it grew with every object
                    # created and deleted while the replica stood by, and leading reconciled each of them, long gone.
                    self._changed_standing_by.discard(key)
                    if last is not None:
                        self._gone[key] = last
                if last is None and not told and not self.reconciler_cls.cluster_operator:
                    return  # nothing left to do (a ClusterOperator's mirror must still forget it: okt.reconciler.core)
        elif not changes.primary_change_matters(event_type, obj, old, self._ignored_annotations):
            return
        self._enqueue(key, event_type, obj)

    def _in_selection(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj``, as an event tells it, is in this controller's selection: the cache's label selector and
        the reconciler's client-side filters (``annotation_selector``, ``when``)."""
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if not selectors.matcher(self.cache.label_selector)(labels):
            return False
        filtered = type(self.reconciler).when is not reconciler_mod.Reconciler.when or bool(
            self.reconciler_cls.annotation_selector
        )
        return self.reconciler.selects(obj) if filtered else True

    def _note_deletion(self, key: QueueKey, obj: Mapping[str, Any]) -> bool:
        """Keep ``obj``'s deletion for its ``on_deleted`` call (when the reconciler has one, on the leader only: a
        standby's workers never run, and what it kept would grow with every deletion); whether ``key`` has deletions
        to tell."""
        if self._deletions is None:
            return False
        with self._held_lock:
            if self._standing_by:
                return False
        self._deletions.note(key, obj)
        return key in self._deletions  # one noted before and still due too: its delayed retry was just discarded

    def on_child_event(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        # A modification concerns the owner the child named before it too: one whose ownerReference was removed or
        # pointed elsewhere has lost its child (drift its reconcile repairs), and the new object no longer names it.
        versions = (obj, old) if event_type == informer_mod.MODIFIED and old is not None else (obj,)
        keys: dict[QueueKey, None] = {}
        for version in versions:
            key = owner_key(version, self.kind)
            if key is None or key in keys:
                continue
            owner_uid = self.cache.uid(self.kind, key[1], key[0])  # the owner itself is not decoded
            if owner_uid is None or owner_uid != objects.controller_uid(version):
                # The owner is gone (the garbage collector deleting its children) or is another object of that
                # name: a reconcile would only find the owner missing.
                continue
            keys[key] = None
        if not keys:
            return
        classes = self._classes_by_type.get((str(obj.get("apiVersion")), str(obj.get("kind"))), ())
        if not changes.child_change_matters(event_type, obj, old, classes, self._log):
            return
        for key in keys:
            self._enqueue(key, event_type, obj, self._child_delay if event_type == informer_mod.MODIFIED else 0.0)

    def on_related_event(
        self, watched: watches_mod.Watch, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """An object of a watched kind changed: its mapping is run on the controller's mapping thread, in the order
        the informer told the events (see :meth:`map_related_event`), merged with the event of the same object
        waiting already, if one is (see :mod:`okt.runtime.mapping_queue`).

        Not on the informer's thread, which must keep up with the watch: a mapping's ``ctx.index`` decodes every
        primary it finds (a ConfigMap shared by thousands of primaries cost the informer a second per change, during
        which the store fell behind for every controller sharing it), and the mapping function is the user's code.
        Merged, because the informer does not wait for the mapping: the events a slow one left behind, held one by one,
        grew without limit (a relist of every watched object, a shared object changing often)."""
        assert self._to_map is not None, "watch() starts the mapping thread before any watched kind"
        self._to_map.put(mapping_queue.Event(watched, event_type, obj, old, informer_mod.sweeping()))

    def _map_related(self, to_map: mapping_queue.MappingQueue) -> None:
        while (event := to_map.get()) is not None:
            if isinstance(event, threading.Event):
                event.set()  # every event before it is mapped
                continue
            meta = event.obj.get("metadata") or {}
            where = "/".join(str(part) for part in (meta.get("namespace"), meta.get("name")) if part)
            self._mapping = (time.monotonic(), f"{event.obj.get('kind')} {where}")
            try:
                self.map_related_event(event.watched, event.event_type, event.obj, event.old, sweep=event.sweep)
            # The thread maps every later event all the same, and sets the markers start_workers waits for: a mapping
            # that raised SystemExit (or any BaseException) ended the thread, and the workers never started.
            except BaseException as exc:
                self._log.error("mapping a watched object's event failed", error=errors.said(exc))
            finally:
                self._mapping = None

    def map_related_event(
        self,
        watched: watches_mod.Watch,
        event_type: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        sweep: bool = False,
    ) -> None:
        """Reconcile the primaries the mapping of one event of a watched kind names that the cache holds (a name
        outside the watched namespaces is dropped unread: the cache would read it from the API, and the reconcile
        that followed would manage an object of a namespace the operator does not watch); ``sweep``: the event came
        from a list of the watched kind (a start, a relist), and is part of the sweep, as its primaries' is."""
        ctx = watches_mod.MapContext(
            self.kind,
            self.cache,
            self._log,
            find=lambda name, value: watches_mod.lookup(
                self.cache, self.kind, self.name, self.reconciler_cls.indexes, name, value
            ),
        )
        watched_namespaces = self.cache.namespaces if self.kind.namespaced else None
        kind = f"{obj.get('kind')}.{obj.get('apiVersion')}"  # as str(Kind) spells it
        failed = functools.partial(self.metrics.watch_map_failed, self.name, kind)
        for key in watches_mod.keys_for_event(watched, event_type, obj, old, ctx, failed=failed):
            if watched_namespaces is not None and key[0] not in watched_namespaces:
                continue
            if self.cache.uid(self.kind, key[1], key[0]) is not None:
                with self._held_lock:
                    if not self._standing_by:
                        self.queue.add(key, low=sweep)
                    elif not sweep:
                        self._changed_standing_by.add(key)

    def _enqueue(self, key: QueueKey, event_type: str, obj: Mapping[str, Any], delay: float = 0.0) -> None:
        meta = obj.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "")
        kind = self._watched_by_type.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        with self._held_lock:
            if self._standing_by:
                primary = (obj.get("apiVersion"), obj.get("kind")) == (self.kind.api_version, self.kind.kind)
                if event_type == informer_mod.DELETED and primary:
                    self._deleted_standing_by = key
                    self._changed_standing_by.discard(key)  # only a cached primary is kept: the set stays bounded
                elif not informer_mod.sweeping() and self.cache.uid(self.kind, key[1], key[0]) is not None:
                    self._changed_standing_by.add(key)
                return
            if event_type != informer_mod.DELETED and version and kind is not None and self.queue.processing(key):
                ref = (kind, meta.get("namespace"), str(meta.get("name")), version)
                self._held.setdefault(key, []).append((ref, delay))
                return
            # The sweep after a list waits behind what the watch says now (see okt.runtime.workqueue).
            self.queue.add_after(key, delay, low=informer_mod.sweeping())

    def _finish(self, key: QueueKey, take_next: bool = False) -> QueueKey | None:
        """Mark ``key`` done, requeueing it first if an event held during its reconcile told something new; with
        ``take_next``, also take the next ready key for the calling worker (None when none is ready yet)."""
        with self._held_lock:
            held = self._held.pop(key, ())
            # Every held event is looked up (each answer is consumed), not just up to the first unknown one.
            unknown = [delay for ref, delay in held if not self.cache.knows(*ref)]
            if unknown:
                self.queue.add_after(key, min(unknown))  # now, while processing: queued again by done()
            swept = self.queue.taken_low(key)
            if take_next:
                following = self.queue.done_and_take(key)
            else:
                following = None
                self.queue.done(key)
        if swept and self._pacer is not None:
            self._pacer.finished()
        return following

    # -- workers -------------------------------------------------------------------------------------------------

    def _gone_object(self, key: QueueKey) -> dict[str, Any] | None:
        """The last state of ``key``'s object if it was deleted past okt's finalizer and its cleanup is still due.

        None when the object is in fact there: a watch also says ``DELETED`` of an object that left its selection (a
        label selector, ``annotation_selector`` or ``when(obj)`` that stopped matching), so the API is asked; an
        object there with the same uid was not deleted and is left alone (it is not the operator's any more), and
        one recreated since is reconciled as usual.

        Raises:
            okt.errors.ApiError: the API could not say whether the object is there (the key is retried).
        """
        if not self._gone:  # the usual case, asked on every reconcile: no lock taken
            return None
        with self._held_lock:
            gone = self._gone.get(key)
        if gone is None:
            return None
        there = self.client.get_or_none(self.kind, key[1], key[0])
        if there is None or packing.uid(there) != packing.uid(gone):
            if self.cache.uid(self.kind, key[1], key[0]) is None:
                return gone
            self._log.warning(
                "recreated before the cleanup of the object deleted past okt's finalizer succeeded; that cleanup "
                "is dropped",
                namespace=key[0],
                name=key[1],
            )
        with self._held_lock:
            if self._gone.get(key) is gone:
                del self._gone[key]
        return None

    def _run(
        self, namespace: str | None, name: str, reader: _Writes
    ) -> tuple[stepper.Run | None, results_mod.Outcome, str]:
        """One reconcile through ``reader``: its run, outcome and metrics result."""
        try:
            run = self._reconcile(
                self.reconciler,
                self.client,
                reader,
                namespace,
                name,
                kind=self.kind,
                logger=self._log,
                recorder=self._recorder,
            )
        except BaseException as exc:  # a crashing reconcile is retried, never fatal to the worker
            # Whatever it is: a hook's sys.exit() (SystemExit), asyncio.run() of a task cancelled (CancelledError), a
            # KeyboardInterrupt raised by hand end only this thread — a SystemExit silently, as threading ignores it —
            # and the controller would go on with one worker less (none, after as many). Signals reach the main thread
            # only, which runs no reconcile: nothing caught here is the process being asked to stop.
            self._log.exception("reconcile raised", namespace=namespace, name=name)
            return None, results_mod.Outcome.retry(exc), "error"
        failed_status = run.results.count(results_mod.Operation.STATUS_UPDATE_ERROR)
        if failed_status:
            self.metrics.status_write_errors_total.labels(controller=self.name).inc(failed_status)
        return run, run.outcome, run.outcome.kind.value

    def _daemons_still_running(self, namespace: str | None, name: str) -> bool:
        """Whether the object is being deleted while one of its daemons still runs: its finalization waits for them
        (they were asked to stop when the deletion was seen), checked again every ``DAEMON_STOP_POLL`` seconds."""
        if not self.daemons:
            return False
        obj = self.cache.get(self.kind, name, namespace)
        meta = (obj or {}).get("metadata") or {}
        if not meta.get("deletionTimestamp") or not self.daemons.stopping(str(meta.get("uid") or "")):
            return False
        self._log.debug("finalization waits for the object's daemons to return", namespace=namespace, name=name)
        return True

    def _work(self) -> None:
        key = self.queue.get()
        while key is not None:
            try:
                self.process(key)
            except BaseException:
                # A fault of okt's own work around the reconcile: the thread ends, said here once, and
                # :attr:`workers_ended` has ``/healthz`` fail, so the pod is restarted with all its workers.
                self._log.exception("a worker ended", namespace=key[0], name=key[1])
                self._finish(key)
                return
            key = self._finish(key, take_next=True)
            if key is None:
                key = self.queue.get()

    @property
    def stalled_for(self) -> float:
        """Seconds every worker has been on the reconcile it runs now; 0 while one is free, or before they start."""
        if not self._threads:
            return 0.0
        return self.metrics.stalled_seconds(self.name, self.workers)

    def stuck(self, after: float) -> str | None:
        """Why ``/healthz`` fails when every worker has been on one reconcile for more than ``after`` seconds (naming
        the objects they are on), or ``None``. Said once per spell in the log too, however often the probes ask: the
        probe's answer goes to the kubelet, and the log is what stays after the restart it causes."""
        stalled = self.stalled_for
        if stalled <= after:
            self._said_stuck = False
            return None
        said = (
            f"every worker of the controller {self.name} has been on one reconcile for {stalled:.1f} s "
            f"(more than {after:g} s): {self.working_on()}"
        )
        if not self._said_stuck:
            self._said_stuck = True
            self._log.warning("workers stuck", detail=said)
        return said

    def mapping_stuck(self, after: float) -> str | None:
        """Why ``/healthz`` fails when the mapping thread has been on one event of a watched kind for more than
        ``after`` seconds (naming the watched object), or ``None``. Said once per spell in the log too, as
        :meth:`stuck` says the workers'.

        The mapping is the operator's own code, on the controller's one mapping thread: one that never returns (a
        call without a timeout, a deadlock) maps no later change of any watched object, and during the start holds
        the workers, which wait for the first lists' mappings, from ever starting — a controller that reconciles
        nothing, whose workers are all free, so :meth:`stuck` never fires."""
        mapping = self._mapping
        took = 0.0 if mapping is None else time.monotonic() - mapping[0]
        if mapping is None or took <= after:
            self._said_mapping_stuck = False
            return None
        said = (
            f"the controller {self.name} has been mapping one event for {took:.1f} s (more than {after:g} s): "
            f"{mapping[1]}"
        )
        if not self._said_mapping_stuck:
            self._said_mapping_stuck = True
            self._log.warning("mapping stuck", detail=said)
        return said

    @property
    def workers_ended(self) -> int:
        """How many worker threads ended before the shutdown began (a worker ends only then, or on a fault of okt's
        own: it never comes back)."""
        if self.queue.shutting_down:
            return 0
        # Started (an ident) and no longer alive: a thread not started yet is not alive either.
        return sum(thread.ident is not None and not thread.is_alive() for thread in self._threads)

    def process(self, key: QueueKey) -> results_mod.Outcome:
        """Reconcile one key now and drive the queue from the outcome (the workers' body; the key must be owned)."""
        namespace, name = key
        if self._daemons_still_running(namespace, name):
            outcome = results_mod.Outcome.requeue_after(DAEMON_STOP_POLL)
            apply_outcome(self.queue, key, outcome)
            return outcome
        run = None
        gone = None
        reader: _Writes | None = None
        with (
            self.metrics.active(self.name),
            logs.reconcile_context(self.name, namespace, name),
            fence_mod.fenced(self.write_fence),
        ):
            told, retry_in = self._tell_deletions(key)
            if told and not self._reconcile_due(key):
                # Only deletions to tell: there is no object to reconcile.
                apply_outcome(self.queue, key, results_mod.Outcome.done())
                if retry_in is not None:
                    self.queue.add_after(key, retry_in)
                return results_mod.Outcome.done()
            # The reconcile's duration begins here: on_deleted calls of the same turn are no part of it (a slow
            # clean-up was seen as slow reconciles).
            started = time.monotonic()
            try:
                gone = self._gone_object(key)
            except errors.ApiError as exc:
                # Whether it is gone is not known yet: asked again after the key's backoff, nothing else done.
                self._log.warning(
                    "cannot tell yet whether the object deleted with okt's finalizer on it is gone; retrying",
                    namespace=namespace,
                    name=name,
                    error=str(exc),
                )
                outcome, result = results_mod.Outcome.retry(exc), "error"
            else:
                # The view of the cache it reads (of ``gone``, the last state of an object deleted past okt's
                # finalizer, when given).
                reader = _Writes(self.cache, self) if gone is None else _Gone(self.cache, self, self.kind, gone)
                run, outcome, result = self._run(namespace, name, reader)
        self.metrics.reconciled(self.name, result, time.monotonic() - started, run)
        if gone is not None and run is not None:
            self._settle_gone(key, gone, run)
        with self._lock:
            self._processed += 1
        if gone is None and self._left_the_cache(key) and not (self._deletions is not None and key in self._deletions):
            # The object went while it was reconciled (its deletion's event dropped the key's backoff and due time
            # before this outcome came): a retry or a requeue would only reconcile nothing, after a backoff of up to
            # hours. Not when its on_deleted is still to be called: its deletion's event queued the key for it.
            self.queue.discard(key)
        else:
            # A read the cache could not answer (its kind's watch refused or unserved) is retried as soon as an
            # informer is answered again, as a failure for lack of an answer is: nothing of that kind may change
            # meanwhile to wake the key, which would otherwise wait out the backoff it climbed, up to minutes.
            apply_outcome(self.queue, key, outcome, unread=reader is not None and reader.refused is not None)
        if retry_in is not None:
            self.queue.add_after(key, retry_in)  # an on_deleted to call again, whatever the new object's outcome
        return outcome

    def _reconcile_due(self, key: QueueKey) -> bool:
        """Whether ``key`` needs a reconcile besides its deletions' ``on_deleted``: its name is in the cache again
        (recreated), its object went past okt's finalizer and its cleanup is due, or a ClusterOperator's mirror must
        forget it."""
        if self.cache.uid(self.kind, key[1], key[0]) is not None or self.reconciler_cls.cluster_operator:
            return True
        with self._held_lock:
            return key in self._gone

    def _tell_deletions(self, key: QueueKey) -> tuple[bool, float | None]:
        """Call ``on_deleted`` for each deletion of ``key`` still to be told, oldest first: whether there were any,
        and in how many seconds to call again one that failed (None: none failed, or none may be called again)."""
        if self._deletions is None:
            return False, None
        due = self._deletions.take(key)
        retry_in = None
        for deletion in due:
            try:
                if self._tell(key, deletion):
                    continue
            except deletions_mod.UNANSWERED:
                # No call of the hook: an outage spends none of its attempts (it lost the deletions seen before it).
                again: deletions_mod.Deletion | None = deletion.unanswered_once()
            else:
                again = deletion.failed()
            if again is None:
                self._log.error(
                    "on_deleted failed for the last time: this deletion is not told again",
                    namespace=key[0],
                    name=key[1],
                    uid=deletion.uid,
                    attempts=deletions_mod.ATTEMPTS,
                )
                continue
            self._deletions.put_back(key, again)
            delay = self._deletions.delay(again)
            retry_in = delay if retry_in is None else min(retry_in, delay)
        return bool(due), retry_in

    def _tell(self, key: QueueKey, deletion: deletions_mod.Deletion) -> bool:
        """Call ``on_deleted`` for ``deletion`` if its object is in fact gone; False when it must be called again (it
        raised, or the API refused to say whether the object is gone).

        Raises:
            deletions_mod.UNANSWERED: the API server did not answer whether the object is gone (the hook is not
                called).
        """
        try:
            there = self.client.get_or_none(self.kind, key[1], key[0])
        except errors.ApiError as exc:
            self._log.warning(
                "cannot tell yet whether the object is deleted; on_deleted waits",
                namespace=key[0],
                name=key[1],
                error=str(exc),
            )
            if isinstance(exc, deletions_mod.UNANSWERED):
                raise
            return False
        if there is not None and packing.uid(there) == deletion.uid:
            # A watch says DELETED of an object that left the selection, too: that one is still there.
            self._log.debug("left the selection, not deleted: no on_deleted", namespace=key[0], name=key[1])
            return True
        # The values of the Secrets the hook reads, and of the one it is given (a reconciler of Secrets), are left out
        # of what is said of its error, as a reconcile's are.
        with secret_values.given(deletion.obj):
            try:
                coroutines.call(self.reconciler.on_deleted, objects.CustomResource(copy.deepcopy(dict(deletion.obj))))
            except BaseException as exc:  # whatever it is: a hook's sys.exit() would end the worker (see _run)
                self.metrics.on_deleted_errors_total.labels(controller=self.name).inc()
                # Said as a hook's exception is (a pydantic ValidationError by its fields, never the spec's values it
                # was given), with where it was raised.
                self._log.error(
                    "on_deleted raised",
                    namespace=key[0],
                    name=key[1],
                    uid=deletion.uid,
                    failures=deletion.failures + 1,
                    error=errors.said(exc),
                    **errors.where_raised(exc),
                )
                return False
        return True

    def _left_the_cache(self, key: QueueKey) -> bool:
        """Whether ``key``'s primary is gone from the watched store (deleted, or out of the selection) and nothing of
        this controller reconciles it any more: not the cleanup of an object deleted past okt's finalizer, nor a
        ClusterOperator's mirror, which forgets it in a reconcile (either may have to be retried). Asked of the store
        only, nothing read from the API: False before :meth:`watch`."""
        if not self._watching or self.reconciler_cls.cluster_operator:
            return False
        with self._held_lock:
            if key in self._gone:
                return False
        return self.cache.uid(self.kind, key[1], key[0]) is None

    def _settle_gone(self, key: QueueKey, gone: dict[str, Any], run: stepper.Run) -> None:
        """Drop the last state of ``key``'s object, deleted past okt's finalizer, once its cleanup is over: it said it
        is done, or it gave up. A give-up waits for the object to change, and a gone object never will: kept, its last
        state stayed for the life of the process. A ``requeue_after`` or an error keeps it for the next attempt."""
        if run.outcome.kind is results_mod.OutcomeKind.GIVE_UP:
            self._log.warning(
                "deleted with okt's finalizer still on it (its deletion did not wait for it): its cleanup gave up, and "
                "is not run again (the object is gone)",
                namespace=key[0],
                name=key[1],
                reason=run.outcome.reason,
            )
        elif run.results.first_error is None and run.results.count(results_mod.Operation.FINALIZER_REMOVED):
            self._log.warning(
                "deleted with okt's finalizer still on it (its deletion did not wait for it): its cleanup ran on its "
                "last known state",
                namespace=key[0],
                name=key[1],
            )
        else:
            return
        with self._held_lock:
            if self._gone.get(key) is gone:
                del self._gone[key]
