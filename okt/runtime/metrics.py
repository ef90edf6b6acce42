"""Prometheus metrics and the probe server: ``/metrics``, ``/healthz`` and ``/readyz`` on one small HTTP port.

Why this exists: an operator in production is watched by Prometheus and restarted by its kubelet's probes. okt's
runtime reports what an SRE needs to see — reconciles by result, their duration, errors, queue depth, busy workers,
API requests — and answers the probes from the manager's real state.

Two families side by side:

* **controller-runtime's** names, types and labels (``controller_runtime_*``, client-go's ``workqueue_*{name}``,
  ``leader_election_master_status{name}``, ``rest_client_requests_total{code,method,host}``), so the Grafana
  dashboards and alerts written for Go operators work unchanged — :data:`CONTROLLER_RUNTIME` lists them;
* **okt's own** (``okt_*``), which say what those cannot: the outcome kinds (``give_up``), the Stepper path of each
  reconcile, the children left alone because their checksum matched, the status writes that failed, the requests
  by verb and resource.

Guarantees:

* every :class:`Metrics` owns its own ``CollectorRegistry`` (several managers in one process, as in tests and
  benchmarks, never collide, and nothing is registered globally);
* ``okt_api_requests_total{verb,resource}`` is read from :attr:`okt.kube.client.Client.stats` at scrape time: the
  request path pays nothing for it;
* ``okt_workqueue_depth``, ``workqueue_depth``, ``workqueue_unfinished_work_seconds`` and
  ``workqueue_longest_running_processor_seconds`` are computed at scrape time, as is
  ``leader_election_master_status``;
* every series of a controller exists (at zero) from the moment it is prepared, before the first reconcile;
* the server is a stdlib ``ThreadingHTTPServer`` on a daemon thread: a slow scraper never blocks a probe, and the
  server never keeps the process alive; ``stop()`` closes the socket;
* a connection whose client has not sent its whole request head :data:`READ_TIMEOUT` seconds after it began (one
  deadline for the head, however the client trickles it), or stops reading the answer for that long, is closed: each
  one holds a thread of the server until then, and the probes are answered meanwhile on threads of their own; a
  client that leaves before its answer is logged at debug level, and a request the server fails is logged as an
  error, never printed to standard error;
* at most :data:`MAX_CONNECTIONS` connections are held at once: one more is closed as soon as it is accepted, without
  a thread or an answer, warned of (once a minute, at debug level in between); the probes are answered again as soon
  as one of those held ends;
* ``/metrics`` answers ``500`` with one line naming the error when a collector raised (an operator's own, in the
  default registry), logged as a warning (at debug level while the same error repeats), never a connection closed
  without an answer; the probes are unaffected;
* ``/healthz`` answers ``200 ok`` while ``healthy()`` holds, ``/readyz`` ``200 ok`` while ``ready()`` holds (``200 ok
  (note)`` when it holds with a note other than ``ok``); otherwise ``503`` with a one-line reason; anything else is
  ``404``.

Bind addresses: ``"host:port"`` (``":8080"`` is every IPv4 interface, ``"[::]:8080"`` every IPv6 one, port ``0``
picks a free one — see :attr:`ProbeServer.port`), or ``"0"`` to disable the server.

Who may read ``/metrics`` (:func:`protection`): on a loopback address, anyone (a local run); on any other, as
controller-runtime serves it, only over TLS and to a bearer token the API server authenticates and allows to ``get
/metrics`` (:mod:`okt.runtime.metrics_auth`). The probes stay open to every client on the same port, since the kubelet
sends no token: a connection that opens with a TLS handshake is served TLS, any other stays plain HTTP and is
answered the probes only — so a Deployment whose probes ``httpGet`` that port keeps working, and a bearer token is
never read over plain HTTP. One port rather than a separate probe address (controller-runtime's
``--health-probe-bind-address``): ``--metrics-bind-address :8080`` and the probes existing Deployments point at it
keep their meaning.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import ipaddress
import pathlib
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

import prometheus_client
import structlog
from prometheus_client import core as prom_core
from prometheus_client import registry as prom_registry

from okt import errors
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.runtime import metrics_auth

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
}

DISABLED = "0"

#: Seconds the probe server gives a client to send its whole request head, and to take each write of the answer,
#: before it closes the connection (the kubelet's probes give up after 1 s by default; controller-runtime's server
#: waits 32 s for headers).
READ_TIMEOUT = 10.0

MAX_CONNECTIONS = 64
"""Connections the probe server holds at most: each holds a thread (and its stack) until its request is answered, up to
:data:`READ_TIMEOUT` for a slow or silent client, so a few hundred such clients held as many threads and their memory.
One beyond the cap is closed as soon as it is accepted, and the probes are answered again once one of the others ends;
Prometheus and the kubelet open one or two at a time."""

_REFUSALS_WARNED_EVERY = 60.0
"""Seconds between two warnings about connections refused past :data:`MAX_CONNECTIONS` (debug lines in between)."""

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
            "How long one reconcile took.",
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
        return prometheus_client.generate_latest(self.registry) + prometheus_client.generate_latest(
            prometheus_client.REGISTRY
        )


_CERT_FILE, _KEY_FILE = "tls.crt", "tls.key"
"""A certificate folder's files, a ``kubernetes.io/tls`` Secret's keys (as :mod:`okt.runtime.certs` reads them)."""
_CERTIFICATE = "/metrics certificate"
"""What the logs call it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address's) is reachable from this host only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve anywhere
        return False


def reviews_tokens(address: tuple[str, int], *, secure: bool = True) -> bool:
    """Whether ``/metrics`` on ``address`` is served to a bearer token the API server reviews (:func:`protection`):
    on any address but loopback, unless ``secure`` is False."""
    return secure and not is_loopback(address[0])


def protection(
    address: tuple[str, int], client: kube_client.Client, *, secure: bool = True, cert_dir: str | None = None
) -> tuple[Callable[[], ssl.SSLContext] | None, metrics_auth.Reviewer | None]:
    """The TLS context (what gives it to each new TLS connection) and the token reviewer of ``/metrics`` on
    ``address`` (see :class:`ProbeServer`).

    A loopback address, or ``secure`` False, serves it plain to anyone: ``(None, None)``. Any other address serves it
    over TLS to a bearer token the API server authenticates and authorizes (:mod:`okt.runtime.metrics_auth`), with
    the certificate in ``cert_dir`` (``tls.crt``, ``tls.key``: a mounted ``kubernetes.io/tls`` Secret) or, without
    one, a self-signed one made for this process (Prometheus scrapes pods by IP address; give it the CA or
    ``insecure_skip_verify``). ``cert_dir`` is read at start and again for each new TLS connection, as the webhook
    server reads its own (:class:`okt.runtime.served_certificate.ServedCertificate`): a rotation (cert-manager's, the
    kubelet swapping the mounted files) is served from the next one, a pair that does not load never is (the previous
    one is).

    Raises:
        okt.errors.ConfigurationError: the files in ``cert_dir`` are missing, unreadable or do not match.
    """
    if not reviews_tokens(address, secure=secure):
        return None, None
    # Imported here: cryptography costs every operator that serves no TLS ~8 MiB of memory.
    from okt.runtime import certs, served_certificate

    if cert_dir is None:
        hosts = [socket.gethostname(), *certs.LOCAL_HOSTS]
        if address[0] not in ("0.0.0.0", "::"):
            hosts.insert(0, address[0])
        context = certs.self_signed(hosts).server_context()
        return lambda: context, metrics_auth.Reviewer(client)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    folder = pathlib.Path(cert_dir)
    try:
        context.load_cert_chain(folder / _CERT_FILE, folder / _KEY_FILE)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or exc
        raise errors.ConfigurationError(
            f"cannot serve /metrics with the certificate in {folder} ({_CERT_FILE}, {_KEY_FILE}): {reason}"
        ) from None
    read = functools.partial(certs.from_directory, folder, what=_CERTIFICATE)
    served = served_certificate.ServedCertificate(read(), read, str(folder), what=_CERTIFICATE, logger=__name__)
    return served.reread, metrics_auth.Reviewer(client)


def parse_bind(address: str) -> tuple[str, int] | None:
    """``"host:port"`` -> ``(host, port)``; ``":port"`` binds every interface; ``"0"`` (or empty) -> ``None``.

    Raises:
        ValueError: the address is not of that form.
    """
    address = address.strip()
    if address in ("", DISABLED):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"a bind address is HOST:PORT (or '0' to disable), got {address!r}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


_TLS_HANDSHAKE = b"\x16"
"""The first byte a TLS client sends (a handshake record); a plain HTTP request starts with its method's letter."""


class _HeadReader(io.RawIOBase):
    """The connection's bytes, each read given what is left of the request's one deadline (:attr:`_Handler.deadline`).

    A socket's timeout bounds each read alone: a client sending one byte of its head within every timeout held its
    thread of the server for as long as it went on. Past the deadline a read raises :class:`TimeoutError`, which ends
    the connection (``http.server`` logs it as a timed-out request, at debug level here).
    """

    def __init__(self, handler: _Handler) -> None:
        super().__init__()
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._handler.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request head was not read within {self._handler.server.read_timeout:g} s")
        self._handler.connection.settimeout(left)
        return int(self._handler.connection.recv_into(buffer))


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    deadline: float

    secured = False

    def setup(self) -> None:
        # Without a timeout, a connection that never sends held its thread for ever, and they piled up, one thread
        # each; with a timeout per read, one that trickled its head did. The head has one deadline (a TLS handshake
        # included), and the answer a timeout per write (a client that stops taking it): either ends the connection.
        self.deadline = time.monotonic() + self.server.read_timeout
        if self.server.tls is not None:
            self._secure()
        super().setup()
        self.connection.settimeout(self.server.read_timeout)
        self.rfile = io.BufferedReader(_HeadReader(self))

    def _secure(self) -> None:
        """Serve TLS on a connection that opens with a TLS handshake; one that opens with plain HTTP (the kubelet's
        probes) stays plain, and is answered the probes only."""
        raw: socket.socket = self.request
        raw.settimeout(self.server.read_timeout)  # the deadline was just set: all of it is left
        if raw.recv(1, socket.MSG_PEEK) != _TLS_HANDSHAKE:
            return
        assert self.server.tls is not None
        wrapped = self.server.tls().wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        try:
            wrapped.settimeout(max(self.deadline - time.monotonic(), 0.001))  # the handshake's whole time
            wrapped.do_handshake()
        except BaseException:
            wrapped.close()
            raise
        self.request = wrapped  # what the handler reads and writes from here (``connection``)
        self.secured = True

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self.secured:  # the server closes the socket it accepted, which the TLS one took over
                self.connection.close()

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.server.read_timeout
        super().handle_one_request()

    def do_GET(self) -> None:
        self.connection.settimeout(self.server.read_timeout)  # the head is read: the answer's writes from here
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            refusal = self._refusal()
            if refusal is not None:
                status, line = refusal
                self._send(status, line.encode(), "text/plain", bearer=status == 401)
                return
            try:
                exposition = self.server.metrics.exposition()
            except Exception as exc:  # an operator's own collector raised: an answer, never a closed connection
                self._send(500, self.server.collector_failed(exc).encode(), "text/plain")
                return
            self.server.collector_error = None
            self._send(200, exposition, prometheus_client.CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/readyz"):
            check = self.server.healthy if path == "/healthz" else self.server.ready
            ok, reason = _probe(check)
            # Ready with a note (a kind the API server stopped serving) says so after the "ok".
            noted = "ok" if reason == "ok" else f"ok ({reason})"
            body = noted if ok else f"not ready: {reason}"
            self._send(200 if ok else 503, body.encode(), "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def _refusal(self) -> tuple[int, str] | None:
        """Why ``/metrics`` is not served to this request (``(status, one line)``), or ``None``."""
        reviewer = self.server.reviewer
        if reviewer is None:
            return None
        if not self.secured:
            return 403, "forbidden: /metrics is served over https on this address, to a bearer token"
        verdict = reviewer.review(self.headers.get("Authorization"))
        return None if verdict.allowed else (verdict.status, verdict.message)

    def _send(self, status: int, body: bytes, content_type: str, *, bearer: bool = False) -> None:
        self.send_response(status)
        if bearer:
            self.send_header("WWW-Authenticate", 'Bearer realm="metrics"')
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("probe request", line=format % args)


def _probe(check: Callable[[], tuple[bool, str]]) -> tuple[bool, str]:
    try:
        return check()
    except Exception as exc:  # a failing check is a failed probe, never a crashed server thread
        return False, repr(exc)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's backlog of 5: a burst of connections beyond it waited for the client's SYN retry (1 s, the
    # kubelet's probe timeout) before they were even accepted, to be served or closed past the cap.
    request_queue_size = MAX_CONNECTIONS
    metrics: Metrics
    healthy: Callable[[], tuple[bool, str]]
    ready: Callable[[], tuple[bool, str]]
    read_timeout: float
    max_connections: int
    connections: threading.BoundedSemaphore
    refusals_warned: float | None = None
    tls: Callable[[], ssl.SSLContext] | None = None
    reviewer: metrics_auth.Reviewer | None = None
    collector_error: str | None = None

    def verify_request(self, request: Any, client_address: Any) -> bool:
        # Called on the serving thread for each accepted connection, before a thread is started for it: one past the
        # cap is closed there (socketserver's shutdown_request), and takes no thread.
        if self.connections.acquire(blocking=False):
            return True
        now = time.monotonic()
        if self.refusals_warned is None or now - self.refusals_warned >= _REFUSALS_WARNED_EVERY:
            self.refusals_warned = now
            log = _log.warning
        else:
            log = _log.debug
        log("the metrics and probe server holds its most connections, a new one is closed", most=self.max_connections)
        return False

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot it took is free again
            self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def collector_failed(self, exc: Exception) -> str:
        """The one line ``/metrics`` answers when a collector raised (an operator's own, in the default registry:
        Prometheus records the failed scrape), logged as a warning when it differs from the scrape before it."""
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        said, self.collector_error = self.collector_error, error
        (_log.debug if said == error else _log.warning)("a metrics collector failed, /metrics answers 500", error=error)
        return f"a metrics collector failed: {error}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver's own prints a traceback to standard error: lines a JSON log pipeline cannot read, at each
        # probe the kubelet gave up on (after 1 s by default) before its answer was written.
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # reset, broken pipe, the read timeout: the client's doing
            _log.debug("probe client left before the answer", error=f"{type(exc).__name__}: {exc}")
        else:
            _log.exception("the metrics and probe server failed to answer a request")


class _Server6(_Server):
    """An IPv6 address (``[::]:8080``: an IPv6-only pod's every interface) needs an IPv6 socket."""

    address_family = socket.AF_INET6


class ProbeServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on one address.

    Args:
        address: ``(host, port)`` (see :func:`parse_bind`).
        metrics: the metrics to expose.
        healthy: returns ``(ok, reason)`` for ``/healthz``.
        ready: returns ``(ok, reason)`` for ``/readyz``.
        read_timeout: seconds a connection has to send its whole request head (one deadline, however it is trickled),
            and to take each write of the answer, before it is closed.
        max_connections: connections held at once at most; one more is closed as soon as it is accepted.
        tls: serve connections that open with a TLS handshake over TLS with this context, or with the one this
            callable gives for each of them (a certificate read again: see :func:`protection`); the others stay plain
            HTTP.
        reviewer: serve ``/metrics`` only over TLS, to a bearer token it lets in (``tls`` is then required); the
            probes stay open to every connection, plain or TLS, for the kubelet, which sends no token.

    Raises:
        okt.errors.ConfigurationError: the address cannot be bound (in use, not an address of this host).
        ValueError: a ``reviewer`` without ``tls``.
    """

    def __init__(
        self,
        address: tuple[str, int],
        metrics: Metrics,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        *,
        read_timeout: float = READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        tls: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        reviewer: metrics_auth.Reviewer | None = None,
    ) -> None:
        if reviewer is not None and tls is None:
            raise ValueError("a /metrics reviewer needs TLS: a bearer token is never read over plain HTTP")
        try:
            self._server = (_Server6 if ":" in address[0] else _Server)(address, _Handler)
        except OSError as exc:  # a port in use, an address not of this host: the operator's configuration
            host, port = address
            raise errors.ConfigurationError(
                f"cannot serve metrics and probes on {host}:{port}: {exc.strerror or exc}"
            ) from exc
        self._server.metrics = metrics
        self._server.healthy = healthy
        self._server.ready = ready
        self._server.read_timeout = read_timeout
        self._server.max_connections = max_connections
        self._server.connections = threading.BoundedSemaphore(max_connections)
        if isinstance(tls, ssl.SSLContext):
            context = tls
            self._server.tls = lambda: context
        else:
            self._server.tls = tls
        self._server.reviewer = reviewer
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="okt-probes", daemon=True
        )

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The bound port (the chosen one when the address asked for port 0)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The probes' URL (plain HTTP, whatever serves ``/metrics``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def metrics_url(self) -> str:
        """The URL of ``/metrics``: ``https`` when it is served over TLS only."""
        url = self.url + "/metrics"
        return url.replace("http://", "https://", 1) if self._server.reviewer is not None else url

    def start(self) -> None:
        self._thread.start()
        secured = self._server.reviewer is not None
        _log.info(
            "serving metrics and probes",
            address=f"{self.host}:{self.port}",
            metrics="https, to a bearer token allowed to get /metrics" if secured else "http, to anyone",
        )

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
