"""A fault-injecting loopback proxy between an operator and the kube-apiserver.

Why this exists: an operator is only as good as its behaviour when the API misbehaves. The proxy listens on plain HTTP
on loopback (point the operator's kubeconfig at :attr:`FaultProxy.url`) and forwards every request to the real
apiserver over TLS, injecting, with probability ``rate`` per request:

* ``500``/``503`` answers *without* forwarding (the write never happened);
* ``lost-response``: a write is forwarded, then answered with 500 (the write happened, the client does not know);
* ``409`` Conflict for writes, without forwarding;
* ``reset``: the connection is closed with no answer (a transport error / timeout for the client);
* ``watch-drop``: a watch stream is cut after a random number of events;
* ``watch-freeze``: a watch is answered (200, its headers) and then stays silent with the connection open until the
  proxy stops — a half-dead stream behind a load balancer, which only a client-side inactivity timeout detects.
  Not among the default kinds: a client without that timeout would hang, which is what it is for.
* ``stale-bookmark``: a watch relays its first event, then a ``BOOKMARK`` carrying the resourceVersion the watch
  started from (older than that event), and ends — a bookmark behind what the stream already told, as a proxy or an
  API server that replays its stream may send. A client that moves its resourceVersion back with it resumes from
  there and is told again what it already knew. Not among the default kinds.

One fault is scripted, not drawn: ``with proxy.restarting(not_served=("example.com",)): ...`` plays a kube-apiserver
that has just restarted. On entering, every connection open through the proxy is cut at once, watches mid-stream
included, with no answer (as the API server going down cuts them: the client sees a transport error); then, until
the block ends, every request under ``/apis/<group>`` of a group in ``not_served`` is answered ``404`` with the API
server's own body (``404 page not found``, ``text/plain``), as a restarted API server answers its custom kinds until
their CRD handlers are loaded, and ``/readyz`` is answered ``500`` (its ``autoregister-completion`` check failing, as
until those kinds are registered), while every other path (the built-in kinds) is relayed; after the block everything
is relayed again. Counted in :attr:`FaultProxy.injected` as ``restart`` (one per block) and ``404`` (one per answer).

Another is scripted: ``with proxy.refusing("configmaps", "429", retry_after=3) as refused: ...`` answers, until the
block ends, every write (``POST``, ``PUT``, ``PATCH``, ``DELETE``) of that resource without forwarding it: ``500`` or
``503`` as the API server fails, ``429`` as it throttles (its ``Retry-After`` header and ``retryAfterSeconds`` in the
Status's details, as the API server gives them), or ``reset`` (the connection closed with no answer). ``refused``
lists the monotonic time of each request so answered; each is counted in :attr:`FaultProxy.injected` by its answer.

Guarantees: the decisions come from a seeded RNG (reproducible runs), and the scripted faults use none; every
injected fault is counted by kind in :attr:`FaultProxy.injected`; ``rate=0`` makes the proxy a transparent pipe.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import http.server
import json
import pathlib
import random
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any

import yaml

from okt.testing import envtest

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REFUSALS = frozenset({"500", "503", "429", "reset"})
"""The answers :meth:`FaultProxy.refusing` gives the writes it refuses."""
KINDS = frozenset({"500", "503", "lost-response", "409", "reset", "watch-drop", "watch-freeze", "stale-bookmark"})
"""The faults the proxy knows how to inject (the module's list)."""
NOT_FOUND_BODY = b"404 page not found\n"
"""What the kube-apiserver answers a path it has no handler for (text/plain): a custom kind before its CRD's handler
is in place."""
NOT_READY_BODY = b"[-]autoregister-completion failed: reason withheld\nreadyz check failed\n"
"""What a kube-apiserver that has just started answers ``/readyz`` with (500, text/plain) until its CRDs' kinds are
registered."""
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
        "host",
        "content-length",
    }
)


def _status_body(code: int, reason: str, message: str, retry_after: int | None = None) -> bytes:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if retry_after is not None:
        status["details"] = {"retryAfterSeconds": retry_after}
    return json.dumps(status).encode()


def _resource_of(path: str) -> str:
    """The resource a request's path names (``configmaps`` of ``/api/v1/namespaces/ns/configmaps/c``), or ``""``."""
    parts = [part for part in urllib.parse.urlsplit(path).path.split("/") if part]
    # /api/v1/... or /apis/<group>/<version>/..., then namespaces/<ns>/ for a namespaced resource.
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return rest[0] if rest else ""


class Refusal(list[float]):
    """The monotonic times of the requests a :meth:`FaultProxy.refusing` block refused, in order."""

    def __init__(self, resource: str, answer: str, retry_after: int | None) -> None:
        super().__init__()
        self.resource = resource
        self.answer = answer
        self.retry_after = retry_after


def _bookmark(line: bytes, resource_version: str) -> bytes:
    """A watch line: a ``BOOKMARK`` at ``resource_version`` of the kind of the object the event ``line`` carries."""
    try:
        obj = json.loads(line).get("object") or {}
    except ValueError:
        obj = {}
    bookmark = {
        "type": "BOOKMARK",
        "object": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", ""),
            "metadata": {"resourceVersion": resource_version},
        },
    }
    return json.dumps(bookmark).encode() + b"\n"


class FaultProxy:
    """``with FaultProxy(upstream_url, ca_file, rate=0.1) as proxy: ...`` — then use ``proxy.url``."""

    def __init__(
        self,
        upstream: str,
        ca_file: str | None = None,
        *,
        rate: float = 0.1,
        seed: int = 0,
        kinds: tuple[str, ...] = ("500", "503", "lost-response", "409", "reset", "watch-drop"),
    ) -> None:
        unknown = sorted(set(kinds) - KINDS)
        if unknown:
            # A misspelt kind would be chosen, counted in ``injected`` and never injected.
            raise ValueError(f"unknown fault kind {', '.join(unknown)}: the proxy injects {', '.join(sorted(KINDS))}")
        parsed = urllib.parse.urlsplit(upstream)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 443
        self._ssl = ssl.create_default_context(cafile=ca_file)
        self.rate = rate
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._kinds = kinds
        self.injected: collections.Counter[str] = collections.Counter()
        self.forwarded = 0
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()  # the connections open through the proxy
        self._not_served: tuple[str, ...] = ()  # the groups answered 404 while restarting
        self._refusals: list[Refusal] = []  # the writes refused by a block of refusing()
        self._stopping = threading.Event()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="okt-fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, source: str | pathlib.Path, target: str | pathlib.Path) -> pathlib.Path:
        """Write to ``target`` the kubeconfig read from ``source``, its cluster pointing at this proxy (plain HTTP on
        loopback: the proxy checks the API server's certificate itself); returns ``target`` as a path. It keeps the
        source's credentials, so it is readable by its owner only."""
        config = yaml.safe_load(pathlib.Path(source).read_text())
        config["clusters"][0]["cluster"] = {"server": self.url}
        path = pathlib.Path(target)
        envtest.write_private(path, yaml.safe_dump(config))
        return path

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket; also for a proxy never started (``shutdown()`` would wait
        forever for a serving loop that never ran)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def restarting(self, not_served: Iterable[str]) -> Iterator[FaultProxy]:
        """A kube-apiserver that has just restarted, for the block (see the module docstring): every connection open
        through the proxy is cut at once with no answer, then the paths under ``/apis/<group>`` of each group of
        ``not_served`` are answered ``404 page not found`` until the block ends, every other path relayed (none
        given: the cut alone, an API server whose CRDs are in place as soon as it answers)."""
        if isinstance(not_served, str):  # its letters would be taken for groups, none of them ever answered 404
            raise TypeError(f"not_served is a collection of API groups, got the string {not_served!r}")
        groups = tuple(not_served)
        if not all(isinstance(group, str) and group and "/" not in group for group in groups):
            raise ValueError(f"not_served must hold API group names (as example.com), got {groups!r}")
        with self._lock:
            self._not_served = groups
            open_connections = list(self._connections)
        with self._rng_lock:
            self.injected["restart"] += 1
        for connection in open_connections:
            with contextlib.suppress(OSError):  # closed by its handler meanwhile
                connection.shutdown(socket.SHUT_RDWR)
        try:
            yield self
        finally:
            with self._lock:
                self._not_served = ()

    @contextlib.contextmanager
    def refusing(self, resource: str, answer: str = "500", *, retry_after: int | None = None) -> Iterator[Refusal]:
        """Refuse every write of ``resource`` (a plural, as ``configmaps``) with ``answer`` for the block: see the
        module docstring. ``retry_after`` (whole seconds) goes with a ``429`` only.

        Raises:
            ValueError: ``answer`` is not one of :data:`REFUSALS`, or ``retry_after`` is given with another answer or
                is not a positive number of seconds.
        """
        if answer not in REFUSALS:
            raise ValueError(f"unknown refusal {answer!r}: the proxy refuses with {', '.join(sorted(REFUSALS))}")
        if retry_after is not None and (answer != "429" or isinstance(retry_after, bool) or retry_after < 1):
            raise ValueError(f"retry_after is a 429's whole number of seconds >= 1, got {retry_after!r} for {answer}")
        if not resource or "/" in resource:
            raise ValueError(f"resource must be a plural as configmaps, got {resource!r}")
        refusal = Refusal(resource, answer, retry_after)
        with self._lock:
            self._refusals.append(refusal)
        try:
            yield refusal
        finally:
            with self._lock:
                self._refusals.remove(refusal)

    def _refusal(self, method: str, path: str) -> Refusal | None:
        """The refusal of a block of :meth:`refusing` that answers this request (recorded and counted), if any."""
        if method not in WRITE_METHODS:
            return None
        resource = _resource_of(path)
        with self._lock:
            refusal = next((r for r in self._refusals if r.resource == resource), None)
            if refusal is not None:
                refusal.append(time.monotonic())
        if refusal is not None:
            with self._rng_lock:
                self.injected[refusal.answer] += 1
        return refusal

    def _starting(self) -> bool:
        """Whether a block of :meth:`restarting` with groups not served yet is under way."""
        with self._lock:
            return bool(self._not_served)

    def _served(self, path: str) -> bool:
        """Whether ``path`` (a request's, its query included) is relayed: not one under a group not served while the
        API server restarts (counted as an injected ``404`` when it is not)."""
        with self._lock:
            groups = self._not_served
        route = urllib.parse.urlsplit(path).path
        if not any(route == f"/apis/{group}" or route.startswith(f"/apis/{group}/") for group in groups):
            return True
        with self._rng_lock:
            self.injected["404"] += 1
        return False

    def _choose(self, method: str, is_watch: bool) -> str | None:
        with self._rng_lock:
            if self.rate <= 0 or self._rng.random() >= self.rate:
                return None
            candidates = [k for k in self._kinds if self._applies(k, method, is_watch)]
            if not candidates:
                return None
            kind = self._rng.choice(candidates)
            self.injected[kind] += 1
            return kind

    @staticmethod
    def _applies(kind: str, method: str, is_watch: bool) -> bool:
        if kind in ("watch-drop", "watch-freeze", "stale-bookmark"):
            return is_watch
        if kind in ("lost-response", "409"):
            return method in WRITE_METHODS
        return not is_watch or kind == "reset"

    def _watch_budget(self) -> int:
        with self._rng_lock:
            return self._rng.randint(0, 20)

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self._host, self._port, context=self._ssl, timeout=330)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                with proxy._lock:
                    proxy._connections.add(self.connection)

            def finish(self) -> None:
                with proxy._lock:
                    proxy._connections.discard(self.connection)
                super().finish()

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                query = urllib.parse.urlsplit(self.path).query
                is_watch = "watch=true" in query or "watch=1" in query
                if self._scripted():
                    return
                fault = proxy._choose(self.command, is_watch)
                if fault == "reset":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault in ("500", "503"):
                    self._answer(
                        int(fault), "InternalError" if fault == "500" else "ServiceUnavailable", "injected fault"
                    )
                    return
                if fault == "409":
                    self._answer(409, "Conflict", "injected conflict: the object has been modified")
                    return
                if fault == "watch-freeze":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.flush()
                    proxy._stopping.wait()
                    self.close_connection = True
                    return
                upstream = proxy._connect()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                except OSError:
                    self._answer(503, "ServiceUnavailable", "upstream unreachable")
                    return
                proxy.forwarded += 1
                if fault == "lost-response":
                    response.read()
                    upstream.close()
                    self._answer(500, "InternalError", "injected fault after the write was applied")
                    return
                if is_watch and fault == "stale-bookmark":
                    started = urllib.parse.parse_qs(query).get("resourceVersion", [""])[0]
                    self._stream(response, 1, stale_bookmark=started)
                elif is_watch:
                    self._stream(response, proxy._watch_budget() if fault == "watch-drop" else None)
                else:
                    payload = response.read()
                    self.send_response(response.status)
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_HEADERS:
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                upstream.close()

            def _stream(
                self, response: http.client.HTTPResponse, budget: int | None, stale_bookmark: str | None = None
            ) -> None:
                """Relay a watch's lines; after ``budget`` lines the stream ends (when ``stale_bookmark`` is given,
                after a ``BOOKMARK`` with that resourceVersion, of the kind of the last object relayed)."""
                self.send_response(response.status)
                self.send_header("Content-Type", response.getheader("Content-Type") or "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                lines = 0
                try:
                    while True:
                        line = response.readline()
                        if not line:
                            break
                        self._chunk(line)
                        lines += 1
                        if budget is not None and lines >= budget:
                            if stale_bookmark is not None:
                                self._chunk(_bookmark(line, stale_bookmark))
                            self.close_connection = True
                            return
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    self.close_connection = True

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _scripted(self) -> bool:
                """Answer the request as a scripted fault does (:meth:`FaultProxy.restarting`,
                :meth:`FaultProxy.refusing`), if one applies; whether one did."""
                if not proxy._served(self.path):
                    self._not_found()
                    return True
                if proxy._starting() and urllib.parse.urlsplit(self.path).path == "/readyz":
                    self._text(500, NOT_READY_BODY)
                    return True
                refusal = proxy._refusal(self.command, self.path)
                if refusal is not None:
                    self._refuse(refusal)
                    return True
                return False

            def _refuse(self, refusal: Refusal) -> None:
                if refusal.answer == "reset":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif refusal.answer == "429":
                    self._answer(
                        429,
                        "TooManyRequests",
                        "injected throttling: the server has received too many requests and has asked us to try "
                        "again later",
                        retry_after=refusal.retry_after,
                    )
                else:
                    code = int(refusal.answer)
                    self._answer(code, "InternalError" if code == 500 else "ServiceUnavailable", "injected refusal")

            def _not_found(self) -> None:
                """The API server's answer to a path it has no handler for (not a Status: plain text)."""
                self._text(404, NOT_FOUND_BODY)

            def _text(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("X-Content-Type-Options", "nosniff")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _answer(self, code: int, reason: str, message: str, retry_after: int | None = None) -> None:
                payload = _status_body(code, reason, message, retry_after)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                if retry_after is not None:
                    self.send_header("Retry-After", str(retry_after))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler
