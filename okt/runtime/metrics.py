"""Prometheus metrics: what okt's runtime reports, in controller-runtime's families and its own.

Why this exists: an operator in production is watched by Prometheus. okt's runtime reports what an SRE needs to see —
reconciles by result, their duration, errors, queue depth, busy workers, API requests, webhook requests;
:mod:`okt.runtime.probe_server` serves them on ``/metrics``, beside the kubelet's probes.

Two families side by side:

* **controller-runtime's** names, types and labels (``controller_runtime_*``, client-go's ``workqueue_*{name}``,
  ``leader_election_master_status{name}``, ``rest_client_requests_total{code,method,host}``), so the Grafana
  dashboards and alerts written for Go operators work unchanged — :data:`CONTROLLER_RUNTIME` lists them;
* **okt's own** (``okt_*``), which say what those cannot: the outcome kinds (``give_up``), the Stepper path of each
  reconcile, the children left alone because their checksum matched, the status writes that failed, the requests
  by verb and resource, what the webhooks' answers said.

Guarantees:

* every :class:`Metrics` owns its own ``CollectorRegistry`` (several managers in one process, as in tests and
  benchmarks, never collide, and nothing is registered globally);
* ``okt_api_requests_total{verb,resource}`` is read from :attr:`okt.kube.client.Client.stats` at scrape time: the
  request path pays nothing for it;
* ``okt_workqueue_depth``, ``workqueue_depth``, ``workqueue_unfinished_work_seconds`` and
  ``workqueue_longest_running_processor_seconds`` are computed at scrape time, as is
  ``leader_election_master_status``;
* every series of a controller exists (at zero) from the moment it is prepared, before the first reconcile;
* a webhook's series are labelled with the path it is served on, never with a path a request named (a scanner's
  paths would each make a series);
* ``/metrics`` serves no ``_created`` series of okt's families (prometheus_client's, which controller-runtime has not).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

import prometheus_client
import structlog
from prometheus_client import core as prom_core
from prometheus_client import registry as prom_registry

from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client

#: The ``result`` label values of ``okt_reconcile_total``: the outcome kinds, plus ``error`` when a reconcile raised.
RESULTS = ("done", "requeue_after", "retry", "give_up", "error")

#: Reconcile duration buckets, in seconds: from a no-op over a converged object (1-2 ms, measured in the benchmarks) to
#: a slow multi-child create.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

#: The ``result`` label values of ``controller_runtime_reconcile_total``, controller-runtime's own.
CONTROLLER_RUNTIME_RESULTS = ("success", "error", "requeue", "requeue_after")

#: okt's result (:data:`RESULTS`) as controller-runtime names it: a retry or a raised reconcile returned an error; a
#: give-up is controller-runtime's "no error, no requeue" — unless it was alarming (an invalid spec), which is its
#: terminal error, counted as ``error``.
_CONTROLLER_RUNTIME_RESULT = {
    "done": "success",
    "requeue_after": "requeue_after",
    "retry": "error",
    "error": "error",
    "give_up": "success",
}

#: controller-runtime's ``controller_runtime_reconcile_time_seconds`` buckets.
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0),
    *(50.0, 60.0),
)

#: client-go's work queue latency buckets: ``ExponentialBuckets(10e-9, 10, 10)``, 10 ns to 10 s.
WORKQUEUE_BUCKETS = tuple(1e-8 * 10**exponent for exponent in range(10))

#: The controller-runtime series okt exports: name -> (Prometheus type, label names). The names dashboards query
#: (a counter's samples carry ``_total``, a histogram's ``_bucket``/``_sum``/``_count``).
CONTROLLER_RUNTIME: dict[str, tuple[str, tuple[str, ...]]] = {
    "controller_runtime_reconcile_total": ("counter", ("controller", "result")),
    "controller_runtime_reconcile_errors_total": ("counter", ("controller",)),
    "controller_runtime_reconcile_time_seconds": ("histogram", ("controller",)),
    "controller_runtime_max_concurrent_reconciles": ("gauge", ("controller",)),
    "controller_runtime_active_workers": ("gauge", ("controller",)),
    "workqueue_depth": ("gauge", ("name",)),
    "workqueue_adds_total": ("counter", ("name",)),
    "workqueue_queue_duration_seconds": ("histogram", ("name",)),
    "workqueue_work_duration_seconds": ("histogram", ("name",)),
    "workqueue_retries_total": ("counter", ("name",)),
    "workqueue_unfinished_work_seconds": ("gauge", ("name",)),
    "workqueue_longest_running_processor_seconds": ("gauge", ("name",)),
    "leader_election_master_status": ("gauge", ("name",)),
    "rest_client_requests_total": ("counter", ("code", "method", "host")),
    "controller_runtime_webhook_requests_total": ("counter", ("webhook", "code")),
    "controller_runtime_webhook_latency_seconds": ("histogram", ("webhook",)),
    "controller_runtime_webhook_requests_in_flight": ("gauge", ("webhook",)),
}

#: ``controller_runtime_webhook_latency_seconds`` buckets: Prometheus' default ones (controller-runtime's), and past
#: them up to 30 s, the longest the API server waits for a webhook (its ``timeoutSeconds``, 10 by default): a review
#: that takes 12 s fails every call of a webhook left at the default, and those buckets put it with one of 25 s.
WEBHOOK_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0)

#: The ``verdict`` label values of ``okt_webhook_reviews_total``: an admission review ``allowed`` or ``refused``, a
#: conversion ``converted`` or ``failed``; keyed by what the answer says (:func:`okt.runtime.webhook_reviews.verdict`).
WEBHOOK_VERDICTS = {"allowed": "allowed", "refused": "refused", "Success": "converted", "Failure": "failed"}

_log = structlog.get_logger(__name__)


class ApiRequestsCollector(prom_registry.Collector):
    """``okt_api_requests_total{verb,resource}`` from a client's request counters, read at scrape time."""

    def __init__(self, client: kube_client.Client) -> None:
        self._client = client

    def collect(self) -> Iterator[prom_core.Metric]:
        family = prom_core.CounterMetricFamily(
            "okt_api_requests", "Requests sent to the Kubernetes API server.", labels=("verb", "resource")
        )
        for (verb, resource), count in sorted(self._client.stats.snapshot().items()):
            family.add_metric((verb, resource), count)
        yield family
        rest = prom_core.CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=("code", "method", "host"),
        )
        for (code, method), count in sorted(self._client.stats.responses().items()):
            rest.add_metric((code, method, getattr(self._client, "host", "")), count)
        yield rest


class QueueTimes:
    """client-go's work queue metrics of one queue: a :class:`okt.runtime.workqueue.Observer`.

    Remembers when each pending key was added and when each handed-out key was taken, to observe
    ``workqueue_queue_duration_seconds`` and ``workqueue_work_duration_seconds`` and to compute the unfinished work at
    scrape time. Its own lock guards those times: the queue calls it under the queue's lock, a scrape reads from
    another thread.
    """

    def __init__(self, metrics: Metrics, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._added_at: dict[Hashable, float] = {}
        self._taken_at: dict[Hashable, float] = {}
        self._adds = metrics.workqueue_adds_total.labels(name=name)
        self._retries = metrics.workqueue_retries_total.labels(name=name)
        self._waited = metrics.workqueue_queue_duration_seconds.labels(name=name)
        self._worked = metrics.workqueue_work_duration_seconds.labels(name=name)
        metrics.workqueue_unfinished_work_seconds.labels(name=name).set_function(self.unfinished_seconds)
        metrics.workqueue_longest_running_processor_seconds.labels(name=name).set_function(self.longest_seconds)

    def added(self, key: Hashable) -> None:
        self._adds.inc()
        with self._lock:
            self._added_at.setdefault(key, self._clock())

    def taken(self, key: Hashable) -> None:
        now = self._clock()
        with self._lock:
            added = self._added_at.pop(key, None)
            self._taken_at[key] = now
        if added is not None:
            self._waited.observe(now - added)

    def done(self, key: Hashable) -> None:
        now = self._clock()
        with self._lock:
            taken = self._taken_at.pop(key, None)
        if taken is not None:
            self._worked.observe(now - taken)

    def retried(self, key: Hashable) -> None:
        self._retries.inc()

    def unfinished_seconds(self) -> float:
        """How long the keys being processed have been, summed (a stuck worker makes it grow)."""
        now = self._clock()
        with self._lock:
            return sum(now - taken for taken in self._taken_at.values())

    def longest_seconds(self) -> float:
        """How long the longest-running key being processed has been."""
        now = self._clock()
        with self._lock:
            return max((now - taken for taken in self._taken_at.values()), default=0.0)

    def stalled_seconds(self, workers: int) -> float:
        """How long each of ``workers`` keys being processed has been at least (the most recently taken one's time):
        how long ``workers`` workers have all been busy with the keys they hold; 0 while fewer keys are processed."""
        now = self._clock()
        with self._lock:
            if len(self._taken_at) < workers:
                return 0.0
            return min(now - taken for taken in self._taken_at.values())


class Metrics:
    """okt's collectors on one registry (one per manager).

    Args:
        registry: the registry to register into; a fresh one when ``None``.
    """

    def __init__(self, registry: prometheus_client.CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else prometheus_client.CollectorRegistry(auto_describe=True)
        self._bound: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._queue_times: dict[str, QueueTimes] = {}
        self.reconcile_total = prometheus_client.Counter(
            "okt_reconcile",
            "Reconciles by controller and result.",
            ("controller", "result"),
            registry=self.registry,
        )
        self.reconcile_errors_total = prometheus_client.Counter(
            "okt_reconcile_errors",
            "Reconciles that ended in an error (a retry outcome, or an exception).",
            ("controller",),
            registry=self.registry,
        )
        self.reconcile_duration_seconds = prometheus_client.Histogram(
            "okt_reconcile_duration_seconds",
            "How long one reconcile took (not the on_deleted calls a worker makes before it in the same turn, which "
            "no duration counts).",
            ("controller",),
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.workqueue_depth = prometheus_client.Gauge(
            "okt_workqueue_depth", "Keys ready to be reconciled.", ("controller",), registry=self.registry
        )
        self.active_workers = prometheus_client.Gauge(
            "okt_active_workers", "Workers busy reconciling.", ("controller",), registry=self.registry
        )
        self.status_write_errors_total = prometheus_client.Counter(
            "okt_status_write_errors",
            "Status writes that failed (a CRD without the status subresource, a conflict, a refused write...).",
            ("controller",),
            registry=self.registry,
        )
        self.on_deleted_errors_total = prometheus_client.Counter(
            "okt_on_deleted_errors",
            "Calls of the reconciler's on_deleted hook that raised (each is retried a few times, then dropped).",
            ("controller",),
            registry=self.registry,
        )
        self.watch_map_errors_total = prometheus_client.Counter(
            "okt_watch_map_errors",
            "Calls of a watch's mapping function that raised or returned what names no primary, by watched kind.",
            ("controller", "kind"),
            registry=self.registry,
        )
        self.index_errors_total = prometheus_client.Counter(
            "okt_index_errors",
            "Calls of an index function that raised: the object is left out of that index until it changes.",
            ("controller", "index"),
            registry=self.registry,
        )
        self.timer_errors_total = prometheus_client.Counter(
            "okt_timer_errors",
            "Timer calls that failed (raised, returned an error or a value okt cannot use, or ran past their timeout).",
            ("controller", "timer"),
            registry=self.registry,
        )
        self.reconcile_paths_total = prometheus_client.Counter(
            "okt_reconcile_paths",
            "Reconciles by the Stepper path they took (>CRChecker>...>End).",
            ("controller", "path"),
            registry=self.registry,
        )
        self.writes_skipped_total = prometheus_client.Counter(
            "okt_writes_skipped",
            "Children left alone because their checksum and fields already matched (a write saved).",
            ("controller",),
            registry=self.registry,
        )
        self.workqueue_depth_by_priority = prometheus_client.Gauge(
            "okt_workqueue_depth_by_priority",
            "Keys ready to be reconciled, by lane: live (watch events, requeues) or sweep (after a list, resyncs).",
            ("controller", "priority"),
            registry=self.registry,
        )
        self.watch_events_pending = prometheus_client.Gauge(
            "okt_watch_events_pending",
            "Events of watched kinds waiting for the controller's mapping thread (at most one per watched object).",
            ("controller",),
            registry=self.registry,
        )
        self.sweep_width = prometheus_client.Gauge(
            "okt_sweep_width",
            "How many keys of the sweep are reconciled at once: 1, or the workers when that finishes more per second.",
            ("controller",),
            registry=self.registry,
        )
        self.timer_calls_overdue = prometheus_client.Gauge(
            "okt_timer_calls_overdue",
            "Timer calls still running past their timeout: each holds a thread okt cannot stop.",
            ("controller",),
            registry=self.registry,
        )
        self.cache_objects = prometheus_client.Gauge(
            "okt_cache_objects", "Objects in the informers' stores, by kind.", ("kind",), registry=self.registry
        )
        self.cache_synced = prometheus_client.Gauge(
            "okt_cache_synced",
            "1 once every informer of the kind has its first list stored.",
            ("kind",),
            registry=self.registry,
        )
        self.kind_served = prometheus_client.Gauge(
            "okt_kind_served",
            "1 while the API server serves the kind, 0 once its list or watch is answered not found or not allowed "
            "(its CRD deleted, its version no longer served) until it is listed again.",
            ("kind",),
            registry=self.registry,
        )
        self.webhook_reviews_total = prometheus_client.Counter(
            "okt_webhook_reviews",
            "Reviews a webhook answered, by what the answer said: allowed or refused (admission), converted or failed "
            "(conversion).",
            ("webhook", "verdict"),
            registry=self.registry,
        )
        self._controller_runtime(self.registry)
        self._api: ApiRequestsCollector | None = None

    def _controller_runtime(self, registry: prometheus_client.CollectorRegistry) -> None:
        """controller-runtime's and client-go's series (their help texts too), beside okt's."""
        self.cr_reconcile_total = prometheus_client.Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        )
        self.cr_reconcile_errors_total = prometheus_client.Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        )
        self.cr_reconcile_time_seconds = prometheus_client.Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.cr_max_concurrent_reconciles = prometheus_client.Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ("controller",),
            registry=registry,
        )
        self.cr_active_workers = prometheus_client.Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ("controller",),
            registry=registry,
        )
        self.workqueue_depth_by_name = prometheus_client.Gauge(
            "workqueue_depth", "Current depth of workqueue", ("name",), registry=registry
        )
        self.workqueue_adds_total = prometheus_client.Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", ("name",), registry=registry
        )
        self.workqueue_queue_duration_seconds = prometheus_client.Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ("name",),
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self.workqueue_work_duration_seconds = prometheus_client.Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ("name",),
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self.workqueue_retries_total = prometheus_client.Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", ("name",), registry=registry
        )
        self.workqueue_unfinished_work_seconds = prometheus_client.Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads.",
            ("name",),
            registry=registry,
        )
        self.workqueue_longest_running_processor_seconds = prometheus_client.Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            ("name",),
            registry=registry,
        )
        self.leader_election_master_status = prometheus_client.Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ("name",),
            registry=registry,
        )
        self.webhook_requests_total = prometheus_client.Counter(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            ("webhook", "code"),
            registry=registry,
        )
        self.webhook_latency_seconds = prometheus_client.Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ("webhook",),
            buckets=WEBHOOK_LATENCY_BUCKETS,
            registry=registry,
        )
        self.webhook_requests_in_flight = prometheus_client.Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ("webhook",),
            registry=registry,
        )

    def track_priorities(self, controller: str, depths: Callable[[], tuple[int, int]]) -> None:
        """Export ``okt_workqueue_depth_by_priority{controller, priority}``: ``live`` and ``sweep`` at scrape time, from
        ``depths()``, the ready keys of each lane read at once."""
        gauge = self.workqueue_depth_by_priority
        gauge.labels(controller=controller, priority="live").set_function(lambda: float(depths()[0]))
        gauge.labels(controller=controller, priority="sweep").set_function(lambda: float(depths()[1]))

    def track_sweep_width(self, controller: str, width: Callable[[], int]) -> None:
        """Export ``okt_sweep_width{controller}`` at scrape time."""
        self.sweep_width.labels(controller=controller).set_function(lambda: float(width()))

    def track_mapping(self, controller: str, pending: Callable[[], int]) -> None:
        """Export ``okt_watch_events_pending{controller}`` as ``pending()`` at scrape time."""
        self.watch_events_pending.labels(controller=controller).set_function(lambda: float(pending()))

    def track_timers(self, controller: str, overdue: Callable[[], int]) -> None:
        """Export ``okt_timer_calls_overdue{controller}`` as ``overdue()`` at scrape time."""
        self.timer_calls_overdue.labels(controller=controller).set_function(lambda: float(overdue()))

    def track_sync(
        self, kind: str, stored: Callable[[], int], synced: Callable[[], bool], served: Callable[[], bool]
    ) -> None:
        """Export the sync progress of ``kind`` at scrape time: ``okt_cache_objects``, ``okt_cache_synced`` and
        ``okt_kind_served``."""
        self.cache_objects.labels(kind=kind).set_function(lambda: float(stored()))
        self.cache_synced.labels(kind=kind).set_function(lambda: float(synced()))
        self.kind_served.labels(kind=kind).set_function(lambda: float(served()))

    def watch_client(self, client: kube_client.Client) -> None:
        """Export ``okt_api_requests_total`` from ``client`` (once; later calls are ignored)."""
        if self._api is None:
            self._api = ApiRequestsCollector(client)
            self.registry.register(self._api)

    def track_queue(self, controller: str, depth: Callable[[], int]) -> None:
        """Export ``okt_workqueue_depth{controller}`` and ``workqueue_depth{name}`` as ``depth()`` at scrape time."""
        self.workqueue_depth.labels(controller=controller).set_function(lambda: float(depth()))
        self.workqueue_depth_by_name.labels(name=controller).set_function(lambda: float(depth()))

    def queue_times(self, controller: str) -> QueueTimes:
        """The observer of ``controller``'s work queue (client-go's ``workqueue_*{name}`` series)."""
        times = self._queue_times[controller] = QueueTimes(self, controller)
        return times

    def stalled_seconds(self, controller: str, workers: int) -> float:
        """How long ``workers`` workers of ``controller`` have all been on the keys they hold (see
        :meth:`QueueTimes.stalled_seconds`); 0 for a controller whose queue has no observer here."""
        times = self._queue_times.get(controller)
        return times.stalled_seconds(workers) if times is not None else 0.0

    def track_leader(self, lease: str, leading: Callable[[], bool]) -> None:
        """Export ``leader_election_master_status{name=lease}`` as ``leading()`` at scrape time."""
        self.leader_election_master_status.labels(name=lease).set_function(lambda: float(leading()))

    def workers(self, controller: str, count: int) -> None:
        """Export ``controller_runtime_max_concurrent_reconciles{controller}``."""
        self.cr_max_concurrent_reconciles.labels(controller=controller).set(count)

    def prepare(self, controller: str) -> None:
        """Create every series of ``controller`` at zero, so dashboards see them before the first reconcile."""
        for result in RESULTS:
            self.reconcile_total.labels(controller=controller, result=result)
        self.reconcile_errors_total.labels(controller=controller)
        self.status_write_errors_total.labels(controller=controller)
        self.on_deleted_errors_total.labels(controller=controller)
        self.reconcile_duration_seconds.labels(controller=controller)
        self.active_workers.labels(controller=controller).set(0)
        self.writes_skipped_total.labels(controller=controller)
        for result in CONTROLLER_RUNTIME_RESULTS:
            self.cr_reconcile_total.labels(controller=controller, result=result)
        self.cr_reconcile_errors_total.labels(controller=controller)
        self.cr_reconcile_time_seconds.labels(controller=controller)
        self.cr_active_workers.labels(controller=controller).set(0)
        for family in (self.workqueue_adds_total, self.workqueue_retries_total):
            family.labels(name=controller)
        for histogram in (self.workqueue_queue_duration_seconds, self.workqueue_work_duration_seconds):
            histogram.labels(name=controller)

    def prepare_watches(self, controller: str, kinds: Iterable[str], indexes: Iterable[str]) -> None:
        """Create the error series of ``controller``'s watched kinds and indexes at zero."""
        for kind in kinds:
            self.watch_map_errors_total.labels(controller=controller, kind=kind)
        for index in indexes:
            self.index_errors_total.labels(controller=controller, index=index)

    def count_timers(self, controller: str, names: Iterable[str]) -> Callable[[str], None]:
        """Create ``okt_timer_errors_total`` of ``controller``'s timers at zero; returns what counts one failed call."""
        for name in names:
            self.timer_errors_total.labels(controller=controller, timer=name)
        return lambda name: self._labelled(self.timer_errors_total, controller, name).inc()

    def watch_map_failed(self, controller: str, kind: str) -> None:
        """Count one call of a watch's mapping function that raised or returned what names no primary."""
        self._labelled(self.watch_map_errors_total, controller, kind).inc()

    def index_failed(self, controller: str, index: str) -> None:
        """Count one call of an index function that raised."""
        self._labelled(self.index_errors_total, controller, index).inc()

    @contextlib.contextmanager
    def active(self, controller: str) -> Iterator[None]:
        """Count a worker as busy for the duration of the block."""
        gauges = [self._labelled(family, controller) for family in (self.active_workers, self.cr_active_workers)]
        for gauge in gauges:
            gauge.inc()
        try:
            yield
        finally:
            for gauge in gauges:
                gauge.dec()

    def prepare_webhooks(self, webhooks: Iterable[str]) -> None:
        """Create the series of the webhooks served on these paths at zero (their requests by code come with the
        first answer of each code)."""
        for webhook in webhooks:
            self.webhook_latency_seconds.labels(webhook=webhook)
            self.webhook_requests_in_flight.labels(webhook=webhook).set(0)

    @contextlib.contextmanager
    def webhook_request(self, webhook: str) -> Iterator[Callable[[int, str | None], None]]:
        """Count one request to the webhook served on the path ``webhook`` as in flight for the duration of the
        block, which calls what it is given once, with the answer's HTTP status code and, for a review answered, what
        the answer says (:func:`okt.runtime.webhook_reviews.verdict`), before writing it: the answer is counted and
        timed then (so a caller that has read it finds it counted, and one gone meanwhile was answered all the same);
        a request that ends unanswered (its body never came whole, its connection cut first) is not."""
        in_flight = self._labelled(self.webhook_requests_in_flight, webhook)
        started = time.monotonic()

        def answered(code: int, verdict: str | None) -> None:
            self._labelled(self.webhook_latency_seconds, webhook).observe(time.monotonic() - started)
            self._labelled(self.webhook_requests_total, webhook, str(code)).inc()
            said = WEBHOOK_VERDICTS.get(verdict or "")
            if said is not None:
                self._labelled(self.webhook_reviews_total, webhook, said).inc()

        in_flight.inc()
        try:
            yield answered
        finally:
            in_flight.dec()

    def _labelled(self, family: Any, *values: str) -> Any:
        """``family.labels(*values)``, remembered: the metrics of every reconcile take the same few label values, and
        prometheus_client builds and locks anew for each lookup."""
        key = (id(family), values)
        child = self._bound.get(key)
        if child is None:
            child = self._bound[key] = family.labels(*values)
        return child

    def reconciled(self, controller: str, result: str, seconds: float, run: stepper.Run | None = None) -> None:
        """Record one finished reconcile (``result`` from :data:`RESULTS`; ``run`` when it returned one)."""
        self._labelled(self.reconcile_total, controller, result).inc()
        self._labelled(self.reconcile_duration_seconds, controller).observe(seconds)
        if result in ("retry", "error"):
            self._labelled(self.reconcile_errors_total, controller).inc()
        alarming = run is not None and result == "give_up" and run.results.has_error
        cr_result = "error" if alarming else _CONTROLLER_RUNTIME_RESULT.get(result, "error")
        self._labelled(self.cr_reconcile_total, controller, cr_result).inc()
        self._labelled(self.cr_reconcile_time_seconds, controller).observe(seconds)
        if cr_result == "error":
            self._labelled(self.cr_reconcile_errors_total, controller).inc()
        if run is not None:
            self._labelled(self.reconcile_paths_total, controller, run.path_str).inc()
            skipped = run.results.count(results_mod.Operation.UNCHANGED)
            if skipped:
                self._labelled(self.writes_skipped_total, controller).inc(skipped)

    def exposition(self) -> bytes:
        """okt's registry, then the process's default one, in the Prometheus text format.

        The default registry is where an operator's own metrics land when its code declares them the usual way
        (``prometheus_client.Gauge(...)`` without ``registry=``), with the process and Python collectors: they are
        served on the same ``/metrics``.
        """
        return prometheus_client.generate_latest(_WithoutCreated(self.registry)) + prometheus_client.generate_latest(
            prometheus_client.REGISTRY
        )


class _WithoutCreated(prom_registry.Collector):
    """A registry's families without prometheus_client's ``_created`` samples, which the text format would serve as
    gauges of their own (``okt_reconcile_created``, ``workqueue_adds_created``...): controller-runtime serves none."""

    def __init__(self, registry: prometheus_client.CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[prom_core.Metric]:
        for family in self._registry.collect():
            created = family.name + "_created"
            family.samples = [sample for sample in family.samples if sample.name != created]
            yield family
