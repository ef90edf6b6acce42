"""The webhook server's connections: each one's TLS handshake, its requests and the limits that keep many of them
cheap.

Why this exists: the API server (or anyone who reaches the port) opens connections, keeps them alive, and may send
slowly or never finish; a server that gave each a thread for as long as it liked, or decoded every large body at
once, would be stopped by a few bad clients. :class:`Server` and :class:`Handler` are what
:class:`~okt.runtime.webhook_server.WebhookServer` serves with.

Guarantees:

* each connection's TLS handshake and request run on their own thread (a slow client never blocks the others), with
  a timeout between two reads; a new connection's handshake, then its first request line, must each arrive within
  :data:`HANDSHAKE_TIMEOUT` (the API server sends at once); at most ``max_connections`` connections are served at
  once, the next ones wait to be accepted (in the listen backlog) until one ends, so a storm of connections costs no
  more threads, and when one waits for its slot a silent connection (new, nothing sent) is closed for it, else one
  kept alive between requests, never one with a request in flight; a request not answered within the request
  timeout of its first byte (a client trickling a body it never finishes), or within the ``timeout`` its caller
  gives in the URL when sooner (the API server's ``?timeout=10s``: past it, it has given up), has its connection
  cut, so no client holds a thread for ever (a hook that does not return does: :meth:`Server.held_past_deadline`
  counts those, and the log names the review, once cut and once answered to no one);
* once closing, the server answers nothing more, not even on a connection kept alive (the reviews in flight are
  answered first, each within its request timeout), and a connection still in its TLS handshake is cut;
* an unknown path is a ``404``; a body refused by :mod:`okt.runtime.webhook_reviews` a ``400`` or ``413``; bodies
  said to be other than ``application/json`` are a ``415``; the bodies decoded and judged at once weigh
  :data:`BODIES_AT_ONCE` at most, the others wait their turn (within the request timeout, else a ``503``), so many
  connections each sending a large review cost no more; a review is never a ``500`` for a problem of the object
  (refusals are answers, see the review modules);
* no object content is logged, only the review's uid, path and verdict, and no header (the API server's credentials
  for its webhook calls travel there: they are given, read-only, to the admission hooks); a review that fails inside
  okt (a bug, not the object's problem) is a ``500`` saying the error's type and a fixed message, logged once with
  the type and the stack of it and of the exceptions it came from, never their text (it may hold what the review
  carried).
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import re
import select
import socket
import ssl
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, cast

import structlog

from okt.reconciler import admission_request
from okt.runtime import metrics as metrics_mod
from okt.runtime import webhook_reviews

BODIES_AT_ONCE = 16 * 1024 * 1024
"""The :func:`weight` of the review bodies decoded and judged at once (thousands of common reviews, two of the
largest admission reviews, one of the largest conversion reviews); a body that does not fit waits until it does.
Decoded, each costs some 10 times its weight: this bounds what every connection together costs, not one review."""
HANDSHAKE_TIMEOUT = 5.0
"""The seconds a new connection has for its TLS handshake, and then for its first request line: the API server says
hello as soon as it connects and sends its review as soon as the handshake ends (milliseconds, even across a
cluster), so a connection silent this long is no caller's, and gives back its slot."""
IDLE_TIMEOUT = 10.0
"""The seconds a connection kept alive after a request may wait for the next one (and a request for its next bytes)."""
SILENT_GRACE = 0.5
"""The seconds a new connection is left alone, when every slot is taken, before it may give its slot up as silent:
enough for a caller's hello and handshake to arrive, however loaded this process is."""
MAX_CONNECTIONS = 32
"""Connections served at once (each has a thread); the API server keeps a few alive per webhook and opens more only
for concurrent reviews."""
BACKLOG = 128
"""Connections the kernel keeps waiting to be accepted while every slot is taken (past it, a client's connect is
retried by its own TCP stack)."""

_log = structlog.get_logger("okt.webhooks")


class Budget:
    """A weight shared by the requests: each takes its body's :func:`weight` while the body is decoded and judged."""

    def __init__(self, total: int) -> None:
        self._free = total
        self._changed = threading.Condition()

    def take(self, size: int, timeout: float) -> bool:
        """Take ``size`` once it is free; False if it was not within ``timeout``.

        ``size`` is at most the total (a body's limit never exceeds it), so the wait always ends."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._free >= size, timeout):
                return False
            self._free -= size
            return True

    def give_back(self, size: int) -> None:
        with self._changed:
            self._free += size
            self._changed.notify_all()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = BACKLOG
    tls: Callable[[], ssl.SSLContext]
    routes: Mapping[str, webhook_reviews.Review]
    limits: Mapping[str, int]
    request_timeout: float
    slots: threading.BoundedSemaphore
    bodies: Budget
    metrics: metrics_mod.Metrics

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.drained = threading.Condition(self.connections_lock)
        self.closing = False
        self.deadlines: dict[socket.socket, float] = {}
        self.timeouts: dict[socket.socket, float] = {}  # the seconds each request in flight has, from its first byte
        self.judged: dict[socket.socket, dict[str, Any]] = {}  # the reviews whose hooks run: what the log names
        self.fresh: dict[socket.socket, float] = {}  # in its handshake or waiting for its first request: since when
        self.idle: dict[socket.socket, float] = {}  # kept alive after a request, waiting for the next: since when
        # Cut past their request timeout while their review is still judged: a hook that does not return keeps its
        # thread, and so its slot, however the connection ends.
        self.overdue: set[socket.socket] = set()
        self.closed = threading.Event()
        self.stopping = threading.Event()

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept the next connection once a slot is free (it waits in the listen backlog until then).

        Why here: the threading server starts a thread for every accepted connection, and a client opening hundreds
        (or a storm of API server calls) would get hundreds; not accepting is the queue that costs nothing."""
        while not self.slots.acquire(timeout=0.1):
            if self.stopping.is_set():
                raise OSError("the webhook server is stopping")
            self.cut_an_idle_connection()
        try:
            return super().get_request()
        except BaseException:
            self.slots.release()
            raise

    def shutdown_request(self, request: Any) -> None:
        """The connection is done (served, failed or refused): its slot is free for the next one."""
        try:
            super().shutdown_request(request)
        finally:
            self.slots.release()

    def shutdown(self) -> None:
        self.stopping.set()  # the accepting loop may be waiting for a slot
        super().shutdown()

    def close_connections(self) -> None:
        """End the kept-alive connections too: a stopped server answers nothing more (the API server then applies
        the failurePolicy instead of getting answers from a half-stopped process).

        A review in flight is answered first, within its deadline (the API server waits for it, and cutting it would
        refuse, under a failurePolicy of Fail, an object the review was about to admit); the connections without
        one (idle, or in their handshake) are cut at once."""
        with self.connections_lock:
            self.closing = True
            idle = [connection for connection in self.connections if connection not in self.deadlines]
        for connection in idle:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        with self.drained:
            self.drained.wait_for(lambda: not self.deadlines, timeout=self.request_timeout + 1)
            open_now = list(self.connections)
        self.closed.set()
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def cut_an_idle_connection(self) -> None:
        """Every slot is taken and a connection waits: end a silent one, else the one idle the longest.

        Silent: new for :data:`SILENT_GRACE` at least, with no request begun and nothing to read (the API server
        sends at once: a client that connects and says nothing would hold its slot until its handshake timeout).
        Idle: kept alive after a request (a client keeps connections for its next requests, and the API server keeps
        more than a few; kept, they would hold the slots until the timeout between two reads closes them). A
        connection with a request in flight is never cut for another."""
        now = time.monotonic()
        with self.connections_lock:
            waiting = sorted((since, id(c), c) for c, since in self.fresh.items() if now - since >= SILENT_GRACE)
            silent = next((connection for *_, connection in waiting if not _readable(connection)), None)
            if silent is not None:
                connection = silent
                del self.fresh[connection]
            elif self.idle:
                connection = min(self.idle, key=self.idle.__getitem__)
                del self.idle[connection]
            else:
                return
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)

    def start_request(self, connection: socket.socket) -> bool:
        """A request began on ``connection``: it must be answered within the request timeout (False: the server is
        closing, the request is not served)."""
        with self.connections_lock:
            self.fresh.pop(connection, None)
            self.idle.pop(connection, None)
            if self.closing:
                return False
            self.deadlines[connection] = time.monotonic() + self.request_timeout
            self.timeouts[connection] = self.request_timeout
            return True

    def caller_gives_up(self, connection: socket.socket, seconds: float) -> None:
        """The caller of the request on ``connection`` waits ``seconds`` from its first byte (the API server's
        ``?timeout=``): its deadline, when sooner than the request timeout. Past it no one reads the answer, and a
        stopping server waiting for it would wait for no one."""
        with self.connections_lock:
            deadline = self.deadlines.get(connection)
            if deadline is not None and seconds < self.timeouts[connection]:
                self.deadlines[connection] = deadline - self.timeouts[connection] + seconds
                self.timeouts[connection] = seconds

    def judging(self, connection: socket.socket, review: dict[str, Any] | None) -> bool:
        """The review on ``connection`` is being judged (``review``: what the log may name of it), or is no more
        (``None``); True when its connection was cut meanwhile, past its deadline: its answer reaches no one."""
        with self.connections_lock:
            if review is None:
                self.judged.pop(connection, None)
            else:
                self.judged[connection] = review
            return connection in self.overdue

    def end_request(self, connection: socket.socket) -> None:
        with self.connections_lock:
            self.deadlines.pop(connection, None)
            self.timeouts.pop(connection, None)
            self.idle[connection] = time.monotonic()
            self.drained.notify_all()

    def held_past_deadline(self) -> int:
        """The slots held by connections cut past their request timeout whose thread has not ended: a review whose
        hook does not return (a call without a timeout, a deadlock) holds its slot for as long, answered to no one."""
        with self.connections_lock:
            return len(self.overdue)

    def cut_overdue(self) -> None:
        """Until the server closes, cut the connections whose request is past its deadline.

        Why a watch of its own: the timeout of a socket bounds one read, and a client sending a byte now and then
        never reaches it; the request as a whole needs a deadline that no read resets."""
        interval = min(0.5, self.request_timeout / 4)
        while not self.closed.wait(interval):
            now = time.monotonic()
            with self.connections_lock:
                overdue = [
                    (connection, self.timeouts.get(connection, self.request_timeout), self.judged.get(connection))
                    for connection, deadline in self.deadlines.items()
                    if deadline <= now
                ]
                for connection, *_ in overdue:
                    del self.deadlines[connection]
                    self.overdue.add(connection)
                self.drained.notify_all()
            for connection, seconds, review in overdue:
                if review is None:  # a client slow to send its request: the client's problem, not the operator's
                    _log.debug("a webhook request passed its timeout: its connection is cut", timeout=seconds)
                else:  # a hook that has not returned: the API server has given up on it and applies its policy
                    _log.warning(
                        "a webhook review was not answered within its timeout: its connection is cut, its hook runs on",
                        timeout=seconds,
                        **review,
                    )
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake, on the connection's own thread (never the accepting one).

        The handshake is bounded by its socket's timeout as a whole (CPython's handshake keeps one deadline),
        :data:`HANDSHAKE_TIMEOUT`, and so is the wait for the first request line; a connection still in them is one
        of :attr:`connections`, so stopping cuts it rather than waiting for it, and one of :attr:`fresh`, so a
        connection waiting for a slot may take its place once it has been silent a while."""
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            wrapped = self.tls().wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except (ssl.SSLError, OSError) as exc:
            _log.debug("webhook TLS handshake failed", client=str(client_address[0]), error=str(exc))
            return
        try:
            with self.connections_lock:
                if self.closing:
                    return
                self.connections.add(wrapped)
                self.fresh[wrapped] = time.monotonic()
            try:
                wrapped.do_handshake()
            except (ssl.SSLError, OSError) as exc:
                _log.debug("webhook TLS handshake failed", client=str(client_address[0]), error=str(exc))
                return
            super().finish_request(wrapped, client_address)
        finally:
            with self.connections_lock:
                self.connections.discard(wrapped)
                self.fresh.pop(wrapped, None)
                self.idle.pop(wrapped, None)
                self.overdue.discard(wrapped)
                self.judged.pop(wrapped, None)
            # shutdown_request closes the raw socket; the TLS wrapper must be closed too.
            wrapped.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log.debug("webhook connection failed", client=str(client_address[0]))


class Server6(Server):
    """An IPv6 address (``::``: every interface of an IPv6-only pod) needs an IPv6 socket."""

    address_family = socket.AF_INET6


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def handle_one_request(self) -> None:
        """One request, within the request timeout from its first byte (the wait for it is bounded by the socket's
        timeout alone: :data:`HANDSHAKE_TIMEOUT` for the first request of a connection, :data:`IDLE_TIMEOUT` for the
        next ones of a kept-alive one, and between two reads of a request)."""
        try:  # a buffered reader, as StreamRequestHandler makes it (rbufsize -1): what is peeked stays for the request
            started = cast(io.BufferedReader, self.rfile).peek(1)
        except OSError:  # the socket's timeout (a silent or idle connection), or a connection gone
            started = b""
        if not started:
            self.close_connection = True
            return
        self.connection.settimeout(IDLE_TIMEOUT)
        if not self.server.start_request(self.connection):
            self.close_connection = True
            return
        try:
            super().handle_one_request()
        finally:
            self.server.end_request(self.connection)

    answered: Callable[[int, str | None], None] | None = None
    """Counts the answer to the request in flight (see :meth:`okt.runtime.metrics.Metrics.webhook_request`)."""

    def do_POST(self) -> None:
        path = self.path.partition("?")[0]
        if path not in self.server.routes:
            # No webhook to count it under (a scan, a stale configuration: as controller-runtime, whose metrics are
            # those of the webhooks it serves).
            self.answered = None
            self._post()
            return
        with self.server.metrics.webhook_request(path) as self.answered:
            self._post()

    def _post(self) -> None:
        path, _, query = self.path.partition("?")
        seconds = caller_timeout(query)
        if seconds is not None:
            self.server.caller_gives_up(self.connection, seconds)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        limit = self.server.limits.get(path, webhook_reviews.MAX_ADMISSION_BODY)
        if length <= 0 or length > limit:
            self.close_connection = True  # the body is not read: the connection cannot carry another request
            error = f"a review here is a JSON body of up to {limit // (1024 * 1024)} MiB"
            self._send(400 if length <= 0 else 413, {"error": error})
            return
        raw = self.rfile.read(length)
        review = self.server.routes.get(path)
        if review is None:
            self._send(404, {"error": f"no webhook at {path}"})
            return
        declared = self.headers.get("Content-Type")
        if declared is not None and self.headers.get_content_type() != "application/json":
            # The API server sends JSON, saying so; a body said to be anything else is not a review to guess at.
            self._send(415, {"error": f"a review is application/json, not {declared}"})
            return
        # Decoded, a body costs many times its size: the bodies decoded and judged at once are bounded together.
        # Read, it costs its size, and written, its answer's: a client slow to send or to read holds up no other.
        cost = min(webhook_reviews.weight(raw), limit)  # a heavier one is refused before it is decoded
        if not self.server.bodies.take(cost, self.server.request_timeout):
            self._send(503, {"error": "too many large reviews at once: this one waited past the request timeout"})
            return
        try:
            status, answer = self._answer(path, review, raw, limit)
        finally:
            self.server.bodies.give_back(cost)
        self._send(status, answer)

    def _answer(
        self, path: str, review: webhook_reviews.Review, raw: bytes, limit: int
    ) -> tuple[int, Mapping[str, Any]]:
        try:
            body = webhook_reviews.decode(raw, limit)
        except webhook_reviews.TooLarge as exc:
            return 413, {"error": str(exc)}
        except (ValueError, RecursionError) as exc:  # JSON's own errors say a position, never the body's text
            return 400, {"error": str(exc)}
        if not isinstance(body, dict):
            return 400, {"error": "the body is not a JSON object"}
        named = _named(path, body)
        started = time.monotonic()
        self.server.judging(self.connection, named)
        try:
            answer = review(body, admission_request.Headers(self.headers.items()))
        except (webhook_reviews.BadReview, RecursionError) as exc:  # RecursionError: nested past what okt walks
            return 400, {"error": str(exc)}
        except Exception as exc:  # a bug of okt, not of the object: the API server applies the failurePolicy
            # Its text may hold what the review carried (a Secret's data): the reply and the log say its type only,
            # and the log where it was raised.
            _log.error("a webhook failed", path=path, error=type(exc).__name__, stack=_stack(exc))
            return 500, {"error": f"{type(exc).__name__}: the webhook failed inside the operator (its log says where)"}
        finally:
            if self.server.judging(self.connection, None):
                _log.warning(
                    "a webhook review was answered after its connection was cut: no one received the answer",
                    seconds=round(time.monotonic() - started, 3),
                    **named,
                )
        _log.debug(
            "review answered",
            path=path,
            uid=(body.get("request") or {}).get("uid"),
            answer=webhook_reviews.verdict(answer),
        )
        return 200, answer

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        if self.answered is not None:
            self.answered(status, webhook_reviews.verdict(payload) if status == 200 else None)
        body = json.dumps(payload).encode()
        self.send_response(status)
        if self.server.closing:  # the last answer of a stopping server: the client must not send another here
            self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None  # one structured line per review instead (review answered)


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def caller_timeout(query: str) -> float | None:
    """The seconds a request's caller waits for its answer, from the ``timeout`` of its URL's ``query`` as the API
    server writes it (a Go duration: ``10s``, ``1m0s``, ``1.5s``); None when there is none, or none that reads as one
    above zero."""
    values = urllib.parse.parse_qs(query).get("timeout")
    if not values:
        return None
    parts = _DURATION.findall(values[0])
    if not parts or "".join(number + unit for number, unit in parts) != values[0]:
        return None
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    return seconds if seconds > 0 else None


def _named(path: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """What the log may say of the review ``body`` at ``path``: its uid, and for an admission review the object's
    namespace and name (never its content)."""
    request = body.get("request")
    request = request if isinstance(request, dict) else {}
    named: dict[str, Any] = {"path": path}
    for field in ("uid", "namespace", "name"):
        if isinstance(request.get(field), str):
            named[field] = request[field]
    return named


def _readable(connection: socket.socket) -> bool:
    """Whether bytes (or the end) wait on ``connection`` now: a client that has spoken is not silent."""
    try:
        return bool(select.select([connection], [], [], 0)[0])
    except (OSError, ValueError):  # closed meanwhile by its own thread: nothing to cut
        return True


def _stack(exc: BaseException) -> str:
    """Where ``exc`` was raised, and the exceptions it was raised from or during, as a traceback says it but with each
    exception's type alone (its text, a value it was given, is never part of it)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return "\n".join(
        f"{type(link).__name__}, raised at:\n{''.join(traceback.format_tb(link.__traceback__))}"
        for link in reversed(chain)
    )
