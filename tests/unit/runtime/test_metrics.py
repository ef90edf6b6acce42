"""Metrics and the probe server, without a cluster: collectors, bind addresses, status codes and bodies."""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import prometheus_client
import pytest
import structlog

import okt
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.runtime import metrics as metrics_mod
from okt.runtime import probe_server
from okt.runtime import probes as probes_mod
from okt.testing import wait_for


class StatsOnly:
    """What the API-requests collector reads from a client: its request counters."""

    def __init__(self) -> None:
        self.stats = kube_client.RequestStats()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("0", None),
        ("", None),
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        (":9090", ("0.0.0.0", 9090)),
        ("localhost:0", ("localhost", 0)),
        ("[::1]:8443", ("::1", 8443)),
    ],
)
def test_bind_addresses_parse_to_host_and_port_or_disabled(address: str, expected: tuple[str, int] | None) -> None:
    assert probe_server.parse_bind(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:", "host:http", "host:70000"])
def test_malformed_bind_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        probe_server.parse_bind(address)


def test_a_finished_reconcile_is_counted_by_result_and_timed() -> None:
    metrics = metrics_mod.Metrics()
    metrics.prepare("widget")
    metrics.reconciled("widget", "done", 0.02)
    metrics.reconciled("widget", "retry", 0.3)
    metrics.reconciled("widget", "error", 0.1)
    sample = metrics.registry.get_sample_value
    assert sample("okt_reconcile_total", {"controller": "widget", "result": "done"}) == 1
    assert sample("okt_reconcile_total", {"controller": "widget", "result": "give_up"}) == 0
    assert sample("okt_reconcile_errors_total", {"controller": "widget"}) == 2
    assert sample("okt_reconcile_duration_seconds_count", {"controller": "widget"}) == 3
    assert sample("okt_reconcile_duration_seconds_bucket", {"controller": "widget", "le": "0.025"}) == 1


def test_active_workers_count_the_reconciles_in_progress() -> None:
    metrics = metrics_mod.Metrics()
    sample = metrics.registry.get_sample_value
    with metrics.active("widget"):
        with metrics.active("widget"):
            assert sample("okt_active_workers", {"controller": "widget"}) == 2
        assert sample("okt_active_workers", {"controller": "widget"}) == 1
    assert sample("okt_active_workers", {"controller": "widget"}) == 0


def test_queue_depth_and_api_requests_are_read_at_scrape_time() -> None:
    metrics = metrics_mod.Metrics()
    depth = [0]
    metrics.track_queue("widget", lambda: depth[0])
    client: Any = StatsOnly()
    metrics.watch_client(client)
    metrics.watch_client(client)
    depth[0] = 7
    client.stats.record("patch", "widgets/status")
    client.stats.record("patch", "widgets/status")
    sample = metrics.registry.get_sample_value
    assert sample("okt_workqueue_depth", {"controller": "widget"}) == 7
    assert sample("okt_api_requests_total", {"verb": "patch", "resource": "widgets/status"}) == 2


def test_two_metrics_objects_never_share_series() -> None:
    first, second = metrics_mod.Metrics(), metrics_mod.Metrics()
    first.reconciled("widget", "done", 0.01)
    assert second.registry.get_sample_value("okt_reconcile_total", {"controller": "widget", "result": "done"}) is None


@pytest.fixture
def serve() -> Iterator[Callable[..., probe_server.ProbeServer]]:
    servers: list[probe_server.ProbeServer] = []

    def start(healthy: tuple[bool, str] = (True, "ok"), ready: Any = (True, "ok")) -> probe_server.ProbeServer:
        metrics = metrics_mod.Metrics()
        metrics.reconciled("widget", "done", 0.01)
        ready_check = ready if callable(ready) else (lambda: ready)
        server = probe_server.ProbeServer(("127.0.0.1", 0), metrics, lambda: healthy, ready_check)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_metrics_are_served_in_the_prometheus_text_format(serve: Any) -> None:
    server = serve()
    status, content_type, body = fetch(server.url + "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    assert 'okt_reconcile_total{controller="widget",result="done"} 1.0' in body


@pytest.mark.parametrize(
    ("path", "healthy", "ready", "expected"),
    [
        ("/healthz", (True, "ok"), (False, "x"), (200, "ok")),
        ("/healthz", (False, "shutting down"), (True, "ok"), (503, "not ready: shutting down")),
        ("/readyz", (True, "ok"), (True, "ok"), (200, "ok")),
        ("/readyz", (True, "ok"), (False, "caches not synced"), (503, "not ready: caches not synced")),
        ("/readyz", (True, "ok"), (True, "a kind unserved"), (200, "ok (a kind unserved)")),
        ("/readyz?verbose", (True, "ok"), (True, "ok"), (200, "ok")),
        ("/nope", (True, "ok"), (True, "ok"), (404, "not found")),
    ],
)
def test_probes_answer_with_the_checks_verdict(
    serve: Any, path: str, healthy: tuple[bool, str], ready: tuple[bool, str], expected: tuple[int, str]
) -> None:
    server = serve(healthy=healthy, ready=ready)
    status, _, body = fetch(server.url + path)
    assert (status, body) == expected


def test_a_check_that_raises_fails_the_probe_instead_of_the_server(serve: Any) -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("boom")

    server = serve(ready=broken)
    status, _, body = fetch(server.url + "/readyz")
    assert status == 503
    assert "boom" in body
    assert fetch(server.url + "/healthz")[0] == 200


def test_a_stopped_server_releases_its_port(serve: Any) -> None:
    server = serve()
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url + "/healthz", timeout=2)


@pytest.mark.skipif(not socket.has_ipv6, reason="this Python has no IPv6")
def test_an_ipv6_bind_address_is_served() -> None:
    """``[::1]:PORT`` parses as an address to bind (``[::]:8080`` is every interface of an IPv6-only pod)."""
    address = probe_server.parse_bind("[::1]:0")
    assert address is not None
    server = probe_server.ProbeServer(address, metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"))
    server.start()
    try:
        assert server.url.startswith("http://[::1]:")
        status, _, body = fetch(server.url + "/healthz")
    finally:
        server.stop()
    assert (status, body) == (200, "ok")


@pytest.mark.parametrize(
    "host", ["127.0.0.1", pytest.param("::1", marks=pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6"))]
)
def test_a_port_bound_before_the_server_is_made_is_served_and_closed_at_stop(host: str) -> None:
    """okt run binds the port before it says anything and hands the socket over: the server serves that one, and
    frees the port when it stops."""
    listener = probe_server.listen((host, 0))
    port = listener.getsockname()[1]
    server = probe_server.ProbeServer(listener, metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"))
    server.start()
    try:
        assert server.port == port
        status, _, body = fetch(server.url + "/healthz")
    finally:
        server.stop()
    assert (status, body) == (200, "ok")
    assert listener.fileno() == -1
    socket.create_server((host, port), family=listener.family).close()  # free again


def test_a_server_made_without_metrics_answers_the_probes_it_was_given_until_served_the_managers() -> None:
    """okt run answers the probes from the moment it binds their port, while its API server does not answer yet; the
    manager's answers follow on the same server, the log saying it serves from then on."""
    metrics = metrics_mod.Metrics()
    metrics.reconciled("widget", "done", 0.01)
    server = probe_server.ProbeServer(
        probe_server.listen(("127.0.0.1", 0)), None, lambda: (True, "ok"), lambda: (False, "waiting")
    )
    try:
        with structlog.testing.capture_logs() as started:
            server.start()
        before = [fetch(server.url + path)[::2] for path in ("/healthz", "/readyz", "/metrics")]
        with structlog.testing.capture_logs() as served:
            server.serve(metrics, lambda: (True, "ok"), lambda: (True, "ok"))
        after = [fetch(server.url + path)[::2] for path in ("/healthz", "/readyz")]
        status, _, body = fetch(server.url + "/metrics")
    finally:
        server.stop()
    assert before == [(200, "ok"), (503, "not ready: waiting"), (503, probe_server.STARTING)]
    assert started == []  # a start that fails is its one line
    assert after == [(200, "ok"), (200, "ok")]
    assert status == 200 and 'okt_reconcile_total{controller="widget",result="done"} 1.0' in body
    assert [e["event"] for e in served] == ["serving metrics and probes"]


def test_a_metrics_port_in_use_is_refused_as_it_is_bound() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(okt.errors.ConfigurationError) as refused:
            probe_server.listen(("127.0.0.1", port))
    assert str(refused.value) == f"cannot serve metrics and probes on 127.0.0.1:{port}: Address already in use"


def run_of(outcome: results_mod.Outcome, results: results_mod.Results | None = None) -> stepper.Run:
    path = (okt.State.CRChecker, okt.State.ObjectsGetter, okt.State.End)
    return stepper.Run(path, outcome, results if results is not None else results_mod.Results())


def alarming_give_up() -> results_mod.Results:
    results = results_mod.Results()
    results.give_up("spec.size must be positive", alarming=True)
    return results


@pytest.mark.parametrize(
    ("result", "results", "expected"),
    [
        ("done", None, "success"),
        ("requeue_after", None, "requeue_after"),
        ("retry", None, "error"),
        ("error", None, "error"),
        ("give_up", None, "success"),
        ("give_up", alarming_give_up(), "error"),
    ],
)
def test_okts_results_are_counted_with_controller_runtimes_result_names(
    result: str, results: results_mod.Results | None, expected: str
) -> None:
    metrics = metrics_mod.Metrics()
    metrics.prepare("widget")
    outcome = results_mod.Outcome.done() if results is None else results.outcome()
    metrics.reconciled("widget", result, 0.2, run_of(outcome, results))
    sample = metrics.registry.get_sample_value
    counted = {
        name: sample("controller_runtime_reconcile_total", {"controller": "widget", "result": name})
        for name in metrics_mod.CONTROLLER_RUNTIME_RESULTS
    }
    assert counted == {name: float(name == expected) for name in metrics_mod.CONTROLLER_RUNTIME_RESULTS}
    assert sample("controller_runtime_reconcile_errors_total", {"controller": "widget"}) == float(expected == "error")
    assert sample("controller_runtime_reconcile_time_seconds_bucket", {"controller": "widget", "le": "0.25"}) == 1


def test_the_path_taken_and_the_children_left_alone_are_counted() -> None:
    metrics = metrics_mod.Metrics()
    results = results_mod.Results()
    for child in ("configmaps/a", "services/a"):
        results.add(results_mod.Operation.UNCHANGED, child)
    metrics.reconciled("widget", "done", 0.01, run_of(results_mod.Outcome.done(), results))
    sample = metrics.registry.get_sample_value
    path = ">CRChecker>ObjectsGetter>End"
    assert sample("okt_reconcile_paths_total", {"controller": "widget", "path": path}) == 1
    assert sample("okt_writes_skipped_total", {"controller": "widget"}) == 2


def test_queue_times_observe_the_wait_and_the_work_and_report_unfinished_work() -> None:
    metrics = metrics_mod.Metrics()
    now = [100.0]
    times = metrics_mod.QueueTimes(metrics, "widget", clock=lambda: now[0])
    times.added("a")
    now[0] += 2.0
    times.taken("a")
    now[0] += 3.0
    times.added("b")
    times.taken("b")
    now[0] += 1.0
    sample = metrics.registry.get_sample_value
    assert sample("workqueue_unfinished_work_seconds", {"name": "widget"}) == 5.0
    assert sample("workqueue_longest_running_processor_seconds", {"name": "widget"}) == 4.0
    times.done("a")
    times.done("b")
    times.retried("b")
    assert sample("workqueue_adds_total", {"name": "widget"}) == 2
    assert sample("workqueue_retries_total", {"name": "widget"}) == 1
    assert sample("workqueue_queue_duration_seconds_sum", {"name": "widget"}) == 2.0
    assert sample("workqueue_work_duration_seconds_sum", {"name": "widget"}) == 5.0
    assert sample("workqueue_unfinished_work_seconds", {"name": "widget"}) == 0.0


def test_workers_are_stalled_for_as_long_as_the_last_of_them_took_its_key_and_never_while_one_is_free() -> None:
    now = [100.0]
    times = metrics_mod.QueueTimes(metrics_mod.Metrics(), "widget", clock=lambda: now[0])
    times.added("a")
    times.taken("a")
    now[0] += 5.0
    assert times.stalled_seconds(2) == 0.0  # the second worker is free
    assert times.stalled_seconds(1) == 5.0
    times.added("b")
    times.taken("b")
    now[0] += 2.0
    assert times.stalled_seconds(2) == 2.0
    times.done("b")
    assert times.stalled_seconds(2) == 0.0


def test_queue_depth_by_priority_and_sync_progress_are_read_at_scrape_time() -> None:
    metrics = metrics_mod.Metrics()
    depth = {"live": 2, "low": 3, "stored": 0, "synced": False, "served": True}
    metrics.track_priorities("c", lambda: (depth["live"], depth["low"]))
    metrics.track_sync("Gadget", lambda: depth["stored"], lambda: depth["synced"], lambda: depth["served"])
    depth.update(stored=40, synced=True, served=False)
    body = metrics.exposition().decode()
    assert 'okt_workqueue_depth_by_priority{controller="c",priority="live"} 2.0' in body
    assert 'okt_workqueue_depth_by_priority{controller="c",priority="sweep"} 3.0' in body
    assert 'okt_cache_objects{kind="Gadget"} 40.0' in body
    assert 'okt_cache_synced{kind="Gadget"} 1.0' in body
    assert 'okt_kind_served{kind="Gadget"} 0.0' in body


@pytest.mark.parametrize(
    ("track", "series"), [("track_sweep_width", "okt_sweep_width"), ("track_mapping", "okt_watch_events_pending")]
)
def test_a_gauge_of_the_controllers_state_is_read_at_scrape_time(track: str, series: str) -> None:
    metrics = metrics_mod.Metrics()
    value = {"now": 1}
    getattr(metrics, track)("c", lambda: value["now"])
    assert f'{series}{{controller="c"}} 1.0' in metrics.exposition().decode()
    value["now"] = 8
    assert f'{series}{{controller="c"}} 8.0' in metrics.exposition().decode()


def test_an_operators_own_metrics_in_the_default_registry_are_served_beside_okts() -> None:
    gauge = prometheus_client.Gauge("okt_test_operand_items", "Items the operand holds (a user's metric).")
    try:
        gauge.set(7)
        body = metrics_mod.Metrics().exposition().decode()
        assert "okt_test_operand_items 7.0" in body
        assert "# TYPE okt_reconcile_total counter" in body
    finally:
        prometheus_client.REGISTRY.unregister(gauge)


class BrokenCollector(prometheus_client.registry.Collector):
    """An operator's own collector whose source of numbers is away (once registered: registering it collects)."""

    def __init__(self) -> None:
        self.away = False

    def collect(self) -> Iterator[prometheus_client.Metric]:
        if self.away:
            raise ConnectionError("the operand's stats endpoint refused the connection")
        return iter(())


def test_an_operators_collector_that_raises_makes_metrics_answer_500_naming_its_error_and_probes_go_on(
    serve: Any,
) -> None:
    server = serve()
    collector = BrokenCollector()
    prometheus_client.REGISTRY.register(collector)
    collector.away = True
    try:
        status, content_type, body = fetch(server.url + "/metrics")
    finally:
        prometheus_client.REGISTRY.unregister(collector)
    assert status == 500
    assert content_type.startswith("text/plain")
    assert "ConnectionError: the operand's stats endpoint refused the connection" in body
    assert len(body.strip().splitlines()) == 1, body
    assert fetch(server.url + "/healthz")[:3:2] == (200, "ok")
    assert fetch(server.url + "/metrics")[0] == 200


def test_a_connection_that_sends_nothing_is_closed_by_the_server_and_probes_are_answered_meanwhile() -> None:
    """Each connection holds a thread of the server until its request is read: one that never sends held it for
    ever, and as many as a misbehaving client opened piled up."""
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"), read_timeout=0.2
    )
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as silent:
            assert fetch(server.url + "/healthz")[::2] == (200, "ok")
            assert silent.recv(1) == b""  # closed by the server, not by this timeout
    finally:
        server.stop()


def test_a_client_that_leaves_before_the_answer_is_logged_at_debug_level_and_nothing_goes_to_stderr(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubelet gives up on a probe after 1 s by default: its answer then fails to be written. socketserver's own
    handling printed a traceback to standard error, lines no JSON log pipeline can read, at each such probe."""
    asked, left = threading.Event(), threading.Event()

    def ready() -> tuple[bool, str]:
        asked.set()
        left.wait(10)
        return True, "ok"

    server = serve(ready=ready)
    with structlog.testing.capture_logs() as logged:
        client = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        client.sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
        assert asked.wait(10)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, as on a timeout
        client.close()
        left.set()
        wait_for(lambda: any(entry["event"] == "probe client left before the answer" for entry in logged), timeout=10)
    assert capsys.readouterr().err == ""


def test_a_client_trickling_its_request_head_is_cut_off_at_one_deadline_and_probes_are_answered_meanwhile() -> None:
    """The timeout was per read: a client sending one byte of its head every so often, each well within the timeout,
    held its thread of the server for as long as it went on."""
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"), read_timeout=0.5
    )
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as trickling:
            trickling.sendall(b"GET /healthz HTTP/1.1\r\nX-Trickle: ")
            answered_meanwhile = fetch(server.url + "/readyz")[::2]
            cut_off = False
            for _ in range(60):  # 60 bytes, one each 0.1 s: every read well within the 0.5 s timeout
                try:
                    trickling.sendall(b"x")
                    readable, _, _ = select.select([trickling], [], [], 0.1)
                    cut_off = bool(readable) and trickling.recv(1) == b""
                except OSError:  # reset by the server
                    cut_off = True
                if cut_off:
                    break
    finally:
        server.stop()
    assert answered_meanwhile == (200, "ok")
    assert cut_off, "the server still read a head it had been sent byte by byte for 6 s"


def test_connections_past_the_cap_while_every_one_held_is_being_answered_are_closed_at_once() -> None:
    """Each connection holds a thread of the server until it is answered: a few hundred slow clients held as many
    threads, and their memory, with no end to how many. Only one still waiting for its request gives its slot up."""
    answering, release = threading.Semaphore(0), threading.Event()

    def ready() -> tuple[bool, str]:
        answering.release()
        release.wait(30)
        return True, "ok"

    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), ready, read_timeout=60
    )
    server.start()
    busy: list[socket.socket] = []
    per_address = probe_server.MAX_CONNECTIONS_PER_ADDRESS
    try:
        with structlog.testing.capture_logs() as logged:
            for i in range(probe_server.MAX_CONNECTIONS):  # from as many addresses as the cap per address needs
                busy.append(connect_from(f"127.0.0.{2 + i // per_address}", server.port))
                busy[-1].sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
            for _ in busy:
                assert answering.acquire(timeout=10)
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as beyond:
                beyond.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                try:
                    refused = beyond.recv(1) == b""
                except ConnectionResetError:
                    refused = True
            release.set()
            for connection in busy:  # the connections held are still answered
                assert connection.recv(1024).startswith(b"HTTP/1.0 200")
            wait_for(lambda: probe(server.url + "/healthz") == (200, "ok"), timeout=10)
    finally:
        release.set()
        for connection in busy:
            connection.close()
        server.stop()
    assert refused
    refusals = [entry["log_level"] for entry in logged if entry["event"].startswith("the metrics and probe server")]
    assert refusals[0] == "warning"


def test_slow_clients_from_several_addresses_holding_every_slot_leave_the_probes_answered() -> None:
    """Slow clients from 8 addresses (all of 127.0.0.0/8 is this host's), 8 each as the cap per address allows, held
    every slot for the whole read timeout, again as each was cut off: every kubelet probe meanwhile was closed
    unanswered, and the pod restarted for it. A probe takes the slot of the oldest still waiting of the address that
    holds the most."""
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"), read_timeout=60
    )
    server.start()
    slow: list[socket.socket] = []
    per_address = probe_server.MAX_CONNECTIONS_PER_ADDRESS
    try:
        with structlog.testing.capture_logs() as logged:
            for i in range(probe_server.MAX_CONNECTIONS):
                slow.append(connect_from(f"127.0.0.{2 + i // per_address}", server.port))
                slow[-1].sendall(b"GET /healthz HTTP/1.0\r\nX-Slow: ")  # a head that never ends
            answered = probe(server.url + "/healthz")
            closed = [c for c in slow if select.select([c], [], [], 0)[0] and c.recv(1) == b""]
            for connection in set(slow) - set(closed):  # the others are still held, answered once their head ends
                connection.sendall(b"x\r\n\r\n")
                assert connection.recv(1024).startswith(b"HTTP/1.0 200")
    finally:
        for connection in slow:
            connection.close()
        server.stop()
    assert answered == (200, "ok")
    assert closed == slow[:1]  # the oldest of the addresses holding the most
    taken = [entry for entry in logged if entry["event"].startswith("the metrics and probe server")]
    assert taken[0]["log_level"] == "warning"
    assert (taken[0]["closed"], taken[0]["address"]) == ("127.0.0.2", "127.0.0.1")


def connect_from(source: str, port: int) -> socket.socket:
    """A connection to the server on 127.0.0.1 from ``source``, another address of the loopback network (all of
    127.0.0.0/8 is this host's)."""
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def test_one_address_holding_its_most_connections_leaves_the_probes_answered_from_any_address() -> None:
    """One client that reaches the port (the probes need no token) opening connections and sending nothing held every
    slot of the cap, each for the whole read timeout, again and again: every kubelet probe meanwhile was closed
    unanswered, and the pod restarted for it."""
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"), read_timeout=60
    )
    server.start()
    flood: list[socket.socket] = []
    try:
        with structlog.testing.capture_logs() as logged:
            for _ in range(probe_server.MAX_CONNECTIONS):
                flood.append(connect_from("127.0.0.2", server.port))
            answered = probe(server.url + "/healthz")
            # A probe from that very address (a hostNetwork pod shares the node's with the kubelet) takes the slot of
            # its oldest connection still waiting.
            flood.append(connect_from("127.0.0.2", server.port))
            flood[-1].sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            assert flood[-1].recv(1024).startswith(b"HTTP/1.0 200")
            held = flood[-probe_server.MAX_CONNECTIONS_PER_ADDRESS : -1]
            for connection in held:  # the newest from that address are held, each in its oldest's slot, and served
                connection.sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
                assert connection.recv(1024).startswith(b"HTTP/1.0 200")
    finally:
        for connection in flood:
            connection.close()
        server.stop()
    assert answered == (200, "ok")
    refusals = [entry for entry in logged if entry["event"].startswith("the metrics and probe server")]
    assert refusals[0]["log_level"] == "warning"
    assert refusals[0]["address"] == "127.0.0.2"


def probe(url: str) -> tuple[int, str] | None:
    """A probe's status and body, or ``None`` when the server closed the connection without an answer."""
    try:
        status, _content_type, body = fetch(url)
    except OSError:  # urllib's URLError, a reset, a connection closed before the status line
        return None
    return status, body


def _get(url: str, accept: str) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


@pytest.mark.parametrize(
    ("healthy", "status", "said"), [((True, "ok"), 200, "ok"), ((False, "shutting down"), 503, "shutting down")]
)
def test_healthz_asked_for_json_adds_the_operators_probes_which_never_change_its_status(
    healthy: tuple[bool, str], status: int, said: str
) -> None:
    calls: list[str] = []

    def depth() -> int:
        calls.append("depth")
        return 3

    def database() -> None:
        raise ConnectionError("postgres://admin:hunter2@db refused")

    report = probes_mod.Probes({"depth": depth, "database": database}).report
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: healthy, lambda: (True, "ok"), probes=report
    )
    server.start()
    try:
        plain = _get(server.url + "/healthz", "*/*")
        called_by_plain = list(calls)
        answer = _get(server.url + "/healthz", "text/html, application/json;q=0.9")
    finally:
        server.stop()

    assert plain == (status, "text/plain", "ok" if status == 200 else f"not ready: {said}")
    assert called_by_plain == []
    assert answer[:2] == (status, "application/json")
    assert json.loads(answer[2]) == {"status": said, "probes": {"depth": 3}, "failed": {"database": "ConnectionError"}}
    assert "hunter2" not in answer[2]


def _answer(port: int, head: bytes) -> bytes:
    """What the server answers a connection that sends ``head``, read until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(head)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def test_a_request_head_past_its_cap_is_answered_431_in_one_line_and_never_read_whole(serve: Any) -> None:
    """http.server bounds a head at 100 lines of 64 KiB each: 6.4 MiB held per connection, read in full from any client
    that reaches the port (the probes need no token), and 64 of them at once grew the process by about 400 MiB — an
    operator's memory limit, and the pod killed for it. A probe's or a scrape's head is well under 1 KiB; a bearer
    token a few."""
    server = serve()
    big = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"a" * 8000) for i in range(8))  # 64 KB in 8 lines
    answer = _answer(server.port, b"GET /healthz HTTP/1.1\r\nHost: probes\r\n" + big + b"\r\n")
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.0 431 ")
    assert body.decode().splitlines() == [
        f"the request head is over {probe_server.MAX_HEAD_BYTES} bytes: send fewer or shorter headers"
    ]
    # Under the cap, a head the size of a long bearer token's is served as before.
    fits = b"Authorization: Bearer " + b"t" * 8000 + b"\r\n"
    assert _answer(server.port, b"GET /healthz HTTP/1.1\r\nHost: probes\r\n" + fits + b"\r\n").endswith(b"\r\n\r\nok")


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"NONSENSE\r\n\r\n", b"400"),
        (b"GET /healthz HTTP/9\r\n\r\n", b"400"),
        (b"POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n", b"501"),
    ],
)
def test_a_malformed_request_is_answered_in_one_plain_line(serve: Any, head: bytes, status: bytes) -> None:
    """http.server answers a request it cannot serve with a page of HTML: no line a client or a log can read."""
    answer = _answer(serve().port, head)
    headers, _, body = answer.partition(b"\r\n\r\n")
    assert headers.split(b" ", 2)[1] == status
    assert b"Content-Type: text/plain; charset=utf-8" in headers.split(b"\r\n")
    assert len(body.decode().strip().splitlines()) == 1, body
    assert b"<" not in body
