"""The probe server: ``/metrics``, ``/healthz`` and ``/readyz`` on one small HTTP port.

Why this exists: an operator in production is scraped by Prometheus and restarted by its kubelet's probes. This serves
the metrics of :class:`okt.runtime.metrics.Metrics` and answers the probes from the manager's real state, on the
address ``okt run --metrics-bind-address`` names.

Guarantees:

* the server is a stdlib ``ThreadingHTTPServer`` on a daemon thread: a slow scraper never blocks a probe, and the
  server never keeps the process alive; ``stop()`` closes the socket;
* a connection whose client has not sent its whole request head :data:`READ_TIMEOUT` seconds after it began (one
  deadline for the head, however the client trickles it), or stops reading the answer for that long, is closed: each
  one holds a thread of the server until then, and the probes are answered meanwhile on threads of their own; a
  client that leaves before its answer is logged at debug level, and a request the server fails is logged as an
  error, never printed to standard error;
* a request head (request line and headers) is read up to :data:`MAX_HEAD_BYTES`: past them it is answered ``431``
  in one line and the connection closed, the rest never read; a request the server cannot serve (a malformed request
  line, a method other than ``GET``) is answered its ``4xx``/``5xx`` in one plain line, never a page of HTML;
* at most :data:`MAX_CONNECTIONS` connections are held at once, and :data:`MAX_CONNECTIONS_PER_ADDRESS` from one
  client address. One more takes the slot of a connection still **waiting for its request** (not yet sent whole),
  which is closed: from its own address when that one holds its most, otherwise the oldest of the address holding
  the most — so a probe (whose request comes at once) is answered whatever slow clients hold, from however many
  addresses, and the kubelet's is closed only while its address holds the most, never once its request is read
  (nginx reclaims the connections still waiting for a request, oldest first, the same way). Only when every one
  held is being answered is the new one closed as soon as it is accepted, without a thread or an answer. Either is
  warned of (once a minute, at debug level in between);
* a server made without metrics (okt run's while it starts: :meth:`ProbeServer.serve` gives them once the manager
  starts) answers ``/metrics`` ``503`` in one line, and the probes with what it was given;
* ``/metrics`` answers ``500`` with one line naming the error when a collector raised (an operator's own, in the
  default registry), logged as a warning (at debug level while the same error repeats), never a connection closed
  without an answer; the probes are unaffected;
* ``/healthz`` answers ``200 ok`` while ``healthy()`` holds, ``/readyz`` ``200 ok`` while ``ready()`` holds (``200 ok
  (note)`` when it holds with a note other than ``ok``); otherwise ``503`` with a one-line reason; anything else is
  ``404``;
* ``/healthz`` asked for JSON (``Accept: application/json``; the kubelet asks for ``*/*``) answers the same status
  with ``{"status": "ok" or the reason, "probes": {...}, "failed": {...}}``, the operator's own probes
  (:mod:`okt.runtime.probes`), which never change the status.

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

import collections
import contextlib
import functools
import http.server
import io
import ipaddress
import json
import pathlib
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import prometheus_client
import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.runtime import metrics as metrics_mod
from okt.runtime import metrics_auth, ports

DISABLED = "0"
STARTING = "the operator is starting: /metrics is served once it started"
"""What ``/metrics`` answers (``503``) on a server not given its metrics yet (:meth:`ProbeServer.serve`)."""

#: Seconds the probe server gives a client to send its whole request head, and to take each write of the answer,
#: before it closes the connection (the kubelet's probes give up after 1 s by default; controller-runtime's server
#: waits 32 s for headers).
READ_TIMEOUT = 10.0

MAX_HEAD_BYTES = 32 * 1024
"""Bytes a request's head (its request line and headers) may take: past them, the server answers ``431`` in one line
and closes the connection, reading no more. http.server's own bounds (100 lines of 64 KiB) let a client that reaches
the port — the probes need no token — have 6.4 MiB read and held per connection, :data:`MAX_CONNECTIONS` times at
once; a probe's or a scrape's head is under 1 KiB, a bearer token's a few (Go's servers allow 1 MiB)."""

MAX_CONNECTIONS = 64
"""Connections the probe server holds at most: each holds a thread (and its stack) until its request is answered, up to
:data:`READ_TIMEOUT` for a slow or silent client, so a few hundred such clients held as many threads and their memory.
One beyond the cap takes the slot of one still waiting for its request, closed for it (the oldest of the address that
holds the most): slow clients from as many addresses as it takes to hold every slot (all of 127.0.0.0/8 is one host's)
closed the kubelet's probes unanswered, as one address alone did before :data:`MAX_CONNECTIONS_PER_ADDRESS`. One
beyond it is closed at once only when every one held is being answered. Prometheus and the kubelet open one or two at
a time."""

MAX_CONNECTIONS_PER_ADDRESS = 8
"""Connections the probe server holds at most from one client address: one client opening connections and sending
nothing, again as each is cut off, held every slot of :data:`MAX_CONNECTIONS`, and the kubelet's probes, from the
node's address, were closed unanswered until the pod restarted for it. One more from an address holding its most
takes the slot of that address's oldest connection still waiting for its request (a hostNetwork pod shares the
node's address with the kubelet). The kubelet, Prometheus and an engineer's ``curl`` each open one or two at a
time."""

_REFUSALS_WARNED_EVERY = 60.0
"""Seconds between two warnings about connections refused past :data:`MAX_CONNECTIONS` (debug lines in between)."""

_log = structlog.get_logger(__name__)


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


class _Slot:
    """One connection held (see :meth:`_Server.verify_request`): where it comes from, since when, the socket it is
    served on (the TLS one once wrapped), and whether it still waits for its request head — the only time it may be
    closed for a new connection: once read, its answer is under way, and one of a probe or a scrape is quick."""

    __slots__ = ("address", "closed", "since", "socket", "waiting")

    def __init__(self, address: str, connection: socket.socket) -> None:
        self.address = address
        self.since = time.monotonic()
        self.socket = connection
        self.waiting = True
        self.closed = False


class _HeadTooLarge(Exception):
    """The request's head reached :data:`MAX_HEAD_BYTES` before its end: answered ``431``, the rest never read."""


class _HeadReader(io.RawIOBase):
    """The connection's bytes, each read given what is left of the request's one deadline (:attr:`_Handler.deadline`)
    and of its head's bytes (:data:`MAX_HEAD_BYTES`: one read never takes more).

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
        room = self._handler.server.max_head_bytes - self._handler.head_bytes
        if room <= 0:
            raise _HeadTooLarge
        self._handler.connection.settimeout(left)
        with memoryview(buffer) as view:
            read = int(self._handler.connection.recv_into(view[:room]))
        self._handler.head_bytes += read
        return read


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    deadline: float
    head_bytes = 0
    """Bytes of the connection read so far (one request per connection: HTTP/1.0, closed after its answer)."""

    secured = False
    # http.server answers what it cannot serve with a page of HTML, and a malformed request line as HTTP/0.9 would be
    # answered: the page alone, without a status line. One plain line with a status line instead.
    default_request_version = "HTTP/1.0"
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(message)s\n"

    def setup(self) -> None:
        # Without a timeout, a connection that never sends held its thread for ever, and they piled up, one thread
        # each; with a timeout per read, one that trickled its head did. The head has one deadline (a TLS handshake
        # included), and the answer a timeout per write (a client that stops taking it): either ends the connection.
        self.deadline = time.monotonic() + self.server.read_timeout
        self.accepted = self.request  # the server's key of this connection's slot, whatever wraps it
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
            # The accepted socket is the TLS one's now (closing it for a newer connection closes this one): closed
            # already, in the moment it was handed over, when the server no longer holds it.
            if not self.server.serves_on(self.accepted, wrapped):
                raise ConnectionAbortedError("closed for a newer connection before its TLS handshake")
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

    def parse_request(self) -> bool:
        # The head is read (or refused): from here the request is being answered, and its slot is no longer taken
        # for a new connection.
        try:
            return super().parse_request()
        finally:
            self.server.head_read(self.accepted)

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.server.read_timeout
        try:
            super().handle_one_request()
        except _HeadTooLarge:
            self.close_connection = True
            if not hasattr(self, "command"):  # still in the request line: what http.server's own 414 sets
                self.requestline, self.request_version, self.command = "", "", ""
            limit = self.server.max_head_bytes
            self.send_error(431, f"the request head is over {limit} bytes: send fewer or shorter headers")

    def do_GET(self) -> None:
        self.connection.settimeout(self.server.read_timeout)  # the head is read: the answer's writes from here
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            # Read before the protection: a server given its metrics (serve()) is given its protection first.
            metrics = self.server.metrics
            if metrics is None:
                self._send(503, STARTING.encode(), "text/plain")
                return
            refusal = self._refusal()
            if refusal is not None:
                status, line = refusal
                self._send(status, line.encode(), "text/plain", bearer=status == 401)
                return
            try:
                exposition = metrics.exposition()
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
            if path == "/healthz" and _asks_json(self.headers.get_all("Accept") or []):
                report = _probe_report(self.server.probes)
                answer = {"status": noted if ok else reason, **report}
                self._send(200 if ok else 503, json.dumps(answer).encode(), "application/json")
                return
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


def _asks_json(accept: list[str]) -> bool:
    """Whether a request's ``Accept`` headers name ``application/json`` itself (``*/*`` does not)."""
    return any(
        item.split(";", 1)[0].strip().lower() == "application/json" for each in accept for item in each.split(",")
    )


def _probe_report(probes: Callable[[], dict[str, dict[str, Any]]] | None) -> dict[str, dict[str, Any]]:
    if probes is None:
        return {"probes": {}, "failed": {}}
    try:
        return probes()
    except Exception as exc:  # okt's own fault: the answer still says the status
        _log.exception("the probes' report failed")
        return {"probes": {}, "failed": {"okt": type(exc).__name__}}


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
    metrics: metrics_mod.Metrics | None
    healthy: Callable[[], tuple[bool, str]]
    ready: Callable[[], tuple[bool, str]]
    probes: Callable[[], dict[str, dict[str, Any]]] | None = None
    read_timeout: float
    max_head_bytes: int = MAX_HEAD_BYTES
    max_connections: int
    connections: threading.BoundedSemaphore
    max_per_address: int
    by_address: collections.Counter[str]
    by_address_lock: threading.Lock
    held: dict[Any, _Slot]
    """Each connection held, by the socket it was accepted on, oldest first."""
    refusals_warned: float | None = None
    tls: Callable[[], ssl.SSLContext] | None = None
    reviewer: metrics_auth.Reviewer | None = None
    collector_error: str | None = None

    def verify_request(self, request: Any, client_address: Any) -> bool:
        # Called on the serving thread for each accepted connection, before a thread is started for it: one past the
        # caps takes the slot of one still waiting for its request (closed here), or, when every one held is being
        # answered, is closed there (socketserver's shutdown_request), and takes no thread.
        address = str(client_address[0])
        with self.by_address_lock:
            full = self.by_address[address] >= self.max_per_address
            if full:
                # Its own address's oldest waiting: one client (perhaps sharing the node's address with the kubelet)
                # never holds its most against a newer connection of the same address that sends its request.
                taken = next((s for s in self.held.values() if s.waiting and s.address == address), None)
            elif self.connections.acquire(blocking=False):
                taken = None
            else:
                waiting = [s for s in self.held.values() if s.waiting]
                # The address holding the most, its oldest: however many addresses slow clients hold slots from, a
                # probe's connection is taken only while its own address holds as many as any other.
                taken = max(waiting, key=lambda s: (self.by_address[s.address], -s.since), default=None)
                full = taken is None
            if taken is not None:
                self._close_waiting(taken)
            if not full or taken is not None:
                self.by_address[address] += 1
                self.held[request] = _Slot(address, request)
                if taken is None:
                    return True
        self._warn(address, full, taken)
        return taken is not None

    def _close_waiting(self, slot: _Slot) -> None:
        """Close a connection still waiting for its request, its slot handed to a new one (the lock is held): its
        thread's read ends at once, and its end frees nothing (:meth:`_release`)."""
        slot.closed = True
        del self.held[next(key for key, held in self.held.items() if held is slot)]
        self.by_address[slot.address] -= 1
        if not self.by_address[slot.address]:
            del self.by_address[slot.address]
        # The plain socket's shutdown, even of a TLS one: it ends the read blocked on it, on any thread. An error:
        # gone already (the client left), or handed to the TLS socket a moment ago (serves_on says so to its thread).
        with contextlib.suppress(OSError):
            socket.socket.shutdown(slot.socket, socket.SHUT_RDWR)

    def _warn(self, address: str, full: bool, taken: _Slot | None) -> None:
        now = time.monotonic()
        if self.refusals_warned is None or now - self.refusals_warned >= _REFUSALS_WARNED_EVERY:
            self.refusals_warned = now
            log = _log.warning
        else:
            log = _log.debug
        if taken is not None:
            log(
                "the metrics and probe server holds its most connections, one still waiting for its request is "
                "closed for a new one",
                closed=taken.address,
                address=address,
                waited=round(time.monotonic() - taken.since, 3),
            )
        elif full and self.by_address[address] >= self.max_per_address:
            log(
                "the metrics and probe server holds its most connections from one address, all being answered, a "
                "new one is closed",
                address=address,
                most=self.max_per_address,
            )
        else:
            said = "the metrics and probe server holds its most connections, all being answered, a new one is closed"
            log(said, most=self.max_connections)

    def head_read(self, accepted: Any) -> None:
        """The connection accepted as ``accepted`` has its request head read: its slot is no longer taken for a new
        connection."""
        with self.by_address_lock:
            slot = self.held.get(accepted)
            if slot is not None:
                slot.waiting = False

    def serves_on(self, accepted: Any, wrapped: socket.socket) -> bool:
        """The connection accepted as ``accepted`` is served on ``wrapped`` (its TLS socket) from now on: whether it
        still holds its slot (False: it was closed for a newer connection while its handshake went on)."""
        with self.by_address_lock:
            slot = self.held.get(accepted)
            if slot is None:
                return False
            slot.socket = wrapped
            return True

    def _release(self, request: Any) -> None:
        """Free the slot a connection took (see :meth:`verify_request`), unless it was handed to a newer one."""
        with self.by_address_lock:
            slot = self.held.pop(request, None)
            if slot is None:
                return
            self.by_address[slot.address] -= 1
            if not self.by_address[slot.address]:
                del self.by_address[slot.address]
            self.connections.release()

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot it took is free again
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

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


def _check_protection(
    tls: ssl.SSLContext | Callable[[], ssl.SSLContext] | None, reviewer: metrics_auth.Reviewer | None
) -> None:
    if reviewer is not None and tls is None:
        raise ValueError("a /metrics reviewer needs TLS: a bearer token is never read over plain HTTP")


def listen(address: tuple[str, int]) -> socket.socket:
    """``address`` (see :func:`parse_bind`) bound for a :class:`ProbeServer` to serve: ``okt run`` binds it before it
    says anything, so a port in use is its one line (see :mod:`okt.runtime.ports`).

    Raises:
        okt.errors.ConfigurationError: the address cannot be bound (in use, not an address of this host).
    """
    host, port = address
    try:
        return ports.listen(host, port, _Server.request_queue_size)
    except OSError as exc:  # a port in use, an address not of this host: the operator's configuration
        raise errors.ConfigurationError(
            f"cannot serve metrics and probes on {host}:{port}: {exc.strerror or exc}"
        ) from exc


class ProbeServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on one address.

    Args:
        address: ``(host, port)`` (see :func:`parse_bind`), or a socket bound to it already (:func:`listen`), which
            the server takes over.
        metrics: the metrics to expose; ``None`` answers ``/metrics`` ``503`` (:data:`STARTING`) until :meth:`serve`
            gives them.
        healthy: returns ``(ok, reason)`` for ``/healthz``.
        ready: returns ``(ok, reason)`` for ``/readyz``.
        probes: returns the operator's probes' report (:meth:`okt.runtime.probes.Probes.report`) for ``/healthz``'s
            JSON answer; none when ``None``.
        read_timeout: seconds a connection has to send its whole request head (one deadline, however it is trickled),
            and to take each write of the answer, before it is closed.
        max_connections: connections held at once at most; one more takes the slot of one still waiting for its
            request (closed for it), or is closed as soon as it is accepted when every one held is being answered.
        max_connections_per_address: connections held at once at most from one client address; one more takes the
            slot of that address's oldest still waiting for its request, or is closed at once when there is none.
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
        address: tuple[str, int] | socket.socket,
        metrics: metrics_mod.Metrics | None,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        *,
        read_timeout: float = READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        max_connections_per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
        tls: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        reviewer: metrics_auth.Reviewer | None = None,
        probes: Callable[[], dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        _check_protection(tls, reviewer)
        listener = address if isinstance(address, socket.socket) else listen(address)
        self._server = (_Server6 if listener.family == socket.AF_INET6 else _Server)(
            listener.getsockname()[:2], _Handler, bind_and_activate=False
        )
        ports.serve_on(self._server, listener)
        self._answer(metrics, healthy, ready, tls, reviewer, probes)
        self._server.read_timeout = read_timeout
        self._server.max_connections = max_connections
        self._server.connections = threading.BoundedSemaphore(max_connections)
        self._server.max_per_address = max_connections_per_address
        self._server.by_address, self._server.by_address_lock = collections.Counter(), threading.Lock()
        self._server.held = {}
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
        """Serve; said in a log line once ``/metrics`` is served (here, or by :meth:`serve`)."""
        self._thread.start()
        if self._server.metrics is not None:
            self._say_serving()

    def serve(
        self,
        metrics: metrics_mod.Metrics,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        *,
        tls: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        reviewer: metrics_auth.Reviewer | None = None,
        probes: Callable[[], dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        """Answer from now on with these (as the constructor's arguments of the same names), where it answered with
        what it was made with, and serve if not started yet: a server that answers the probes of a start (okt run's,
        while its API server does not answer yet) answers the manager's once it starts, on the same socket, with no
        moment unserved.

        Raises:
            ValueError: a ``reviewer`` without ``tls``.
        """
        _check_protection(tls, reviewer)
        self._answer(metrics, healthy, ready, tls, reviewer, probes)
        if self._thread.ident is None:
            self.start()
        else:
            self._say_serving()

    def _answer(
        self,
        metrics: metrics_mod.Metrics | None,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        tls: ssl.SSLContext | Callable[[], ssl.SSLContext] | None,
        reviewer: metrics_auth.Reviewer | None,
        probes: Callable[[], dict[str, dict[str, Any]]] | None,
    ) -> None:
        if isinstance(tls, ssl.SSLContext):
            context = tls
            self._server.tls = lambda: context
        else:
            self._server.tls = tls
        self._server.reviewer = reviewer
        self._server.probes = probes
        self._server.healthy = healthy
        self._server.ready = ready
        # The protection of /metrics before the metrics, which a request reads first (_Handler.do_GET): served by a
        # server being given both, they are served protected.
        self._server.metrics = metrics

    def _say_serving(self) -> None:
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
