"""Prometheus metrics and the probe server: ``/metrics``, ``/healthz`` and ``/readyz`` on one small HTTP port.

Why this exists: an operator in production is watched by Prometheus and restarted by its kubelet's probes. okt's
runtime reports what an SRE needs to see — reconciles by result, their duration, errors, queue depth, busy workers,
API requests — and answers the probes from the manager's real state.

Guarantees:

* every :class:`Metrics` owns its own ``CollectorRegistry`` (several managers in one process, as in tests and
  benchmarks, never collide, and nothing is registered globally);
* ``okt_api_requests_total{verb,resource}`` is read from :attr:`okt.kube.client.Client.stats` at scrape time: the
  request path pays nothing for it;
* ``okt_workqueue_depth`` is also computed at scrape time from the queue itself;
* the server is a stdlib ``ThreadingHTTPServer`` on a daemon thread: a slow scraper never blocks a probe, and the
  server never keeps the process alive; ``stop()`` closes the socket;
* ``/healthz`` answers ``200 ok`` while ``healthy()`` holds, ``/readyz`` ``200 ok`` while ``ready()`` holds; otherwise
  ``503`` with a one-line reason; anything else is ``404``.

Bind addresses: ``"host:port"`` (``":8080"`` is every interface, port ``0`` picks a free one — see
:attr:`ProbeServer.port`), or ``"0"`` to disable the server.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

import prometheus_client
import structlog
from prometheus_client import core as prom_core
from prometheus_client import registry as prom_registry

from okt.kube import client as kube_client

#: The ``result`` label values of ``okt_reconcile_total``: the outcome kinds, plus ``error`` when a reconcile raised.
RESULTS = ("done", "requeue_after", "retry", "give_up", "error")

#: Reconcile duration buckets, in seconds: from a no-op (a few ms) to a slow multi-child create.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

DISABLED = "0"

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


class Metrics:
    """okt's collectors on one registry (one per manager).

    Args:
        registry: the registry to register into; a fresh one when ``None``.
    """

    def __init__(self, registry: prometheus_client.CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else prometheus_client.CollectorRegistry(auto_describe=True)
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
        self.workqueue_depth_by_priority = prometheus_client.Gauge(
            "okt_workqueue_depth_by_priority",
            "Keys ready to be reconciled, by lane: live (watch events, requeues) or sweep (after a list, resyncs).",
            ("controller", "priority"),
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
        self._api: ApiRequestsCollector | None = None

    def track_priorities(self, controller: str, depth: Callable[[], int], low: Callable[[], int]) -> None:
        """Export ``okt_workqueue_depth_by_priority{controller, priority}``: ``live`` and ``sweep`` at scrape time."""
        gauge = self.workqueue_depth_by_priority
        gauge.labels(controller=controller, priority="live").set_function(lambda: float(depth() - low()))
        gauge.labels(controller=controller, priority="sweep").set_function(lambda: float(low()))

    def track_sync(self, kind: str, stored: Callable[[], int], synced: Callable[[], bool]) -> None:
        """Export the sync progress of ``kind``: ``okt_cache_objects`` and ``okt_cache_synced`` at scrape time."""
        self.cache_objects.labels(kind=kind).set_function(lambda: float(stored()))
        self.cache_synced.labels(kind=kind).set_function(lambda: float(synced()))

    def watch_client(self, client: kube_client.Client) -> None:
        """Export ``okt_api_requests_total`` from ``client`` (once; later calls are ignored)."""
        if self._api is None:
            self._api = ApiRequestsCollector(client)
            self.registry.register(self._api)

    def track_queue(self, controller: str, depth: Callable[[], int]) -> None:
        """Export ``okt_workqueue_depth{controller}`` as ``depth()`` at scrape time."""
        self.workqueue_depth.labels(controller=controller).set_function(lambda: float(depth()))

    def prepare(self, controller: str) -> None:
        """Create every series of ``controller`` at zero, so dashboards see them before the first reconcile."""
        for result in RESULTS:
            self.reconcile_total.labels(controller=controller, result=result)
        self.reconcile_errors_total.labels(controller=controller)
        self.status_write_errors_total.labels(controller=controller)
        self.reconcile_duration_seconds.labels(controller=controller)
        self.active_workers.labels(controller=controller).set(0)

    @contextlib.contextmanager
    def active(self, controller: str) -> Iterator[None]:
        """Count a worker as busy for the duration of the block."""
        gauge = self.active_workers.labels(controller=controller)
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()

    def reconciled(self, controller: str, result: str, seconds: float) -> None:
        """Record one finished reconcile (``result`` from :data:`RESULTS`)."""
        self.reconcile_total.labels(controller=controller, result=result).inc()
        self.reconcile_duration_seconds.labels(controller=controller).observe(seconds)
        if result in ("retry", "error"):
            self.reconcile_errors_total.labels(controller=controller).inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return prometheus_client.generate_latest(self.registry)


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


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, self.server.metrics.exposition(), prometheus_client.CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/readyz"):
            check = self.server.healthy if path == "/healthz" else self.server.ready
            ok, reason = _probe(check)
            self._send(200 if ok else 503, (b"ok" if ok else f"not ready: {reason}".encode()), "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
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
    metrics: Metrics
    healthy: Callable[[], tuple[bool, str]]
    ready: Callable[[], tuple[bool, str]]


class ProbeServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on one address.

    Args:
        address: ``(host, port)`` (see :func:`parse_bind`).
        metrics: the metrics to expose.
        healthy: returns ``(ok, reason)`` for ``/healthz``.
        ready: returns ``(ok, reason)`` for ``/readyz``.
    """

    def __init__(
        self,
        address: tuple[str, int],
        metrics: Metrics,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
    ) -> None:
        self._server = _Server(address, _Handler)
        self._server.metrics = metrics
        self._server.healthy = healthy
        self._server.ready = ready
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
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self._thread.start()
        _log.info("serving metrics and probes", address=f"{self.host}:{self.port}")

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
