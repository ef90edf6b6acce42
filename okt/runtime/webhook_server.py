"""The webhook server: admission and conversion reviews served over HTTPS by the operator process.

Why this exists: the API server calls webhooks, over TLS, on a port of their own; the reviews are answered by the
reconcilers' own code (:mod:`okt.reconciler.admission`, :mod:`okt.reconciler.conversion`) at the paths
:mod:`okt.reconciler.webhooks` declares, so the configurations ``okt gen webhooks`` writes point where this serves.

Guarantees:

* it serves from :meth:`WebhookServer.start` to :meth:`WebhookServer.stop`, whatever the leader election says: a
  standby replica answers admission as the leader does (a review writes nothing); once stopped it answers nothing,
  not even on a connection the API server kept alive (the reviews in flight when it stops are answered first, each
  within its request timeout), and a connection still in its TLS handshake is cut, not waited for;
  :attr:`WebhookServer.serving` says whether it serves (the manager's ``/readyz`` is ``503`` while it does not);
* each connection's TLS handshake and request run on their own thread (a slow client never blocks the others), with
  a timeout between two reads; at most :attr:`Options.max_connections` connections are served at once, the next ones
  wait to be accepted (in the listen backlog) until one ends, so a storm of connections costs no more threads, and
  a connection kept alive between requests is closed when one waits for its slot; a request not answered within
  :attr:`Options.request_timeout` of its first byte (a client trickling a body it never finishes) has its connection
  cut, so no client holds a thread for ever;
* a certificate directory is read again for each new connection: a renewal written there (cert-manager's, into the
  mounted Secret) is served from the next one, without a restart; a certificate Secret is read again every
  :attr:`Options.reload_interval` seconds, and a rotation (cert-manager's) is served from the next connection after
  that read; a pair that does not load (a certificate whose key is not written yet) is never served, nor is one
  that cannot be read (a Secret gone, an API server away): the previous one is, until a pair loads;
* AdmissionReview and ConversionReview are answered in the version they came in (``v1``, or ``v1beta1`` from an API
  server configured for it); a review of another version or kind, or a malformed one, is a ``400`` naming what is
  wrong; an unknown path a ``404``; a review is never a ``500`` for a problem of the object (refusals are answers,
  see the review modules); bodies larger than a review the API server sends are refused unread (a ``413``: above
  :data:`MAX_ADMISSION_BODY` at an admission path, :data:`MAX_BODY` at a conversion one), and so are bodies of more
  values than their size allows a review (:data:`BYTES_PER_VALUE`), before they are decoded, so decoding costs
  about as much memory as the largest real review does; bodies said to be other than ``application/json`` are a
  ``415``; the bodies decoded and judged at once weigh :data:`BODIES_AT_ONCE` at most, the others wait their turn
  (within the request timeout, else a ``503``), so many connections each sending a large review cost no more;
* no object content is logged, only the review's uid, path and verdict; a review that fails inside okt (a bug, not
  the object's problem) is a ``500`` saying the error's type and a fixed message, logged once with the type and the
  stack of it and of the exceptions it came from, never their text (it may hold what the review carried).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import io
import json
import pathlib
import re
import socket
import ssl
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.reconciler import admission, conversion, webhooks
from okt.reconciler import reconciler as reconciler_mod
from okt.runtime import certs

DEFAULT_PORT = 9443
"""The webhook port controller-runtime uses (and kubebuilder's Services target)."""
MAX_BODY = 16 * 1024 * 1024
"""The largest ConversionReview served: it holds a list of objects (a page of a list, or the whole list the API
server's watch cache serves), which no limit of the API bounds; 16 MiB is some thousands of objects."""
MAX_ADMISSION_BODY = 8 * 1024 * 1024
"""The largest AdmissionReview served: it holds the object (the API server refuses a request body over 3 MiB) and,
for an UPDATE, the old one (etcd stores objects up to 1.5 MiB), with room for the envelope and JSON's escapes."""
BYTES_PER_VALUE = 16
"""A body's ``{``, ``[`` and ``,`` (each a dict, a list or an item decoding creates) may number one per so many bytes
of its limit. The API server's JSON has about one per 12 to 18 bytes (managedFields are the densest), and decoded is
some 10 times its size; a body of small values (``[{},{},...]``) would cost up to 130 bytes of memory each, 30 times
its size and more, so past this count it is refused before it is decoded."""
BODIES_AT_ONCE = 16 * 1024 * 1024
"""The :func:`weight` of the review bodies decoded and judged at once (thousands of common reviews, two of the
largest admission reviews, one of the largest conversion reviews); a body that does not fit waits until it does.
Decoded, each costs some 10 times its weight: this bounds what every connection together costs, not one review."""
HANDSHAKE_TIMEOUT = 10.0
RELOAD_INTERVAL = 10.0
"""How often a certificate Secret is read again (as often as controller-runtime's certificate watcher reads its files):
an issuer renews well before the end (cert-manager at two thirds of the lifetime), so a rotation is served within
seconds, for one ``get`` of a Secret every ten seconds."""
REQUEST_TIMEOUT = 30.0
"""The longest the API server waits for a webhook (its ``timeoutSeconds`` is at most 30)."""
MAX_CONNECTIONS = 32
"""Connections served at once (each has a thread); the API server keeps a few alive per webhook and opens more only
for concurrent reviews."""
BACKLOG = 128
"""Connections the kernel keeps waiting to be accepted while every slot is taken (past it, a client's connect is
retried by its own TCP stack)."""

Review = Callable[[Mapping[str, Any]], dict[str, Any]]
_log = structlog.get_logger("okt.webhooks")


@dataclasses.dataclass(frozen=True)
class Options:
    """How ``okt run`` (or a :class:`~okt.runtime.manager.Manager`) serves webhooks.

    Args:
        host: the address to bind (``0.0.0.0``: every interface, as in a pod).
        port: the port (0: a free one, see :attr:`WebhookServer.port`).
        certificates: the serving certificate; a directory (``tls.crt``, ``tls.key``, optionally ``ca.crt``: a
            mounted Secret): the certificate in it, read again when its files change; a
            :class:`~okt.runtime.certs.SecretSource`: the certificate in that Secret, read again every
            ``reload_interval``; None: a CA and a certificate generated for ``hosts``.
        hosts: the names and addresses a generated certificate is valid for.
        request_timeout: the seconds a request may take, from its first byte to its answer, before its connection is
            cut (past the API server's own timeout, nobody waits for the answer any more).
        max_connections: the connections served at once; the next ones wait to be accepted until one ends.
        reload_interval: the seconds between two reads of a certificate Secret.
    """

    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    certificates: certs.Bundle | pathlib.Path | certs.SecretSource | None = None
    hosts: tuple[str, ...] = certs.LOCAL_HOSTS
    request_timeout: float = REQUEST_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    reload_interval: float = RELOAD_INTERVAL

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise errors.ConfigurationError(f"max_connections must be at least 1, not {self.max_connections}")
        if not self.reload_interval > 0:
            raise errors.ConfigurationError(f"reload_interval must be more than 0 seconds, not {self.reload_interval}")


def reviews_of(
    reconcilers: Sequence[type[reconciler_mod.Reconciler]],
    client: kube_client.Client,
    scope: admission.Scope = admission.EVERYTHING,
) -> dict[str, Review]:
    """The review function of every declared webhook, by path (admission judging only the objects of ``scope``)."""
    routes: dict[str, Review] = {}
    for endpoint in webhooks.all_endpoints(reconcilers):
        routes[endpoint.path] = _review(endpoint, endpoint.reconciler(), client, scope)
    return routes


def _review(
    endpoint: webhooks.Endpoint,
    reconciler: reconciler_mod.Reconciler,
    client: kube_client.Client,
    scope: admission.Scope,
) -> Review:
    if endpoint.purpose is webhooks.Purpose.VALIDATING:
        return lambda review: admission.respond(
            review, admission.validate(reconciler, _request(review, *_ADMISSION), client, scope)
        )
    if endpoint.purpose is webhooks.Purpose.MUTATING:
        return lambda review: admission.respond(
            review, admission.mutate(reconciler, _request(review, *_ADMISSION), scope)
        )
    return lambda review: conversion.respond(
        review, conversion.convert(endpoint.reconciler, _request(review, *_CONVERSION))
    )


_ADMISSION = ("AdmissionReview", admission.REVIEW_API_VERSIONS)
_GROUP_VERSION = re.compile(r"[^/\s]+/[^/\s]+")
_CONVERSION = ("ConversionReview", conversion.REVIEW_API_VERSIONS)


class BadReview(ValueError):
    """A request body that is not a review okt can answer (a 400, not a refusal)."""


class TooLarge(ValueError):
    """A request body larger than a review the API server sends (a 413)."""


def weight(raw: bytes) -> int:
    """What decoding ``raw`` costs, as the size of a review that costs as much: its own size, or
    :data:`BYTES_PER_VALUE` for each of its ``{``, ``[`` and ``,`` when that is more.

    The count errs on the side of the memory: a ``,`` inside a string counts too, which only a string of some
    megabytes of commas would notice."""
    values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    return max(len(raw), values * BYTES_PER_VALUE)


def decode(raw: bytes, limit: int) -> Any:
    """The JSON of ``raw``, a body of at most ``limit`` bytes, or :class:`TooLarge` before decoding when it holds
    more values than a review of that size does (see :data:`BYTES_PER_VALUE`)."""
    if weight(raw) > limit:
        values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
        most = limit // BYTES_PER_VALUE
        raise TooLarge(f"a review here holds at most {most} values ({{, [ and , of its JSON), this body {values}")
    return json.loads(raw)


def limits_of(reconcilers: Sequence[type[reconciler_mod.Reconciler]]) -> dict[str, int]:
    """The largest body served at each path (by what its review holds: see :data:`MAX_BODY`)."""
    return {
        endpoint.path: MAX_BODY if endpoint.purpose is webhooks.Purpose.CONVERSION else MAX_ADMISSION_BODY
        for endpoint in webhooks.all_endpoints(reconcilers)
    }


def _request(review: Mapping[str, Any], kind: str, api_versions: Sequence[str]) -> Mapping[str, Any]:
    """The review's request, of the shape the review modules read (anything else is a 400 naming what is wrong, not
    a 500 of an AttributeError deep in them).

    The review must be a ``kind`` of one of ``api_versions``: the answer carries the review's apiVersion, and one in
    a version (or of a kind) this webhook does not speak would be answered in a form the caller cannot read.
    """
    if review.get("kind") != kind or review.get("apiVersion") not in api_versions:
        spoken = ", ".join(api_versions)
        raise BadReview(
            f"a {kind} ({spoken}) is served here, not apiVersion {review.get('apiVersion')!r}, "
            f"kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
        raise BadReview("the review has no request with a uid")
    # What decides the answer is never guessed: an admission review without its operation would be admitted
    # unjudged, a conversion review without its target answered "Success" with nothing converted.
    if kind == "AdmissionReview" and not isinstance(request.get("operation"), str):
        raise BadReview("request.operation is missing or not a string (CREATE, UPDATE, DELETE or CONNECT)")
    if kind == "ConversionReview" and not _GROUP_VERSION.fullmatch(str(request.get("desiredAPIVersion"))):
        raise BadReview(f"request.desiredAPIVersion {request.get('desiredAPIVersion')!r} is not a group/version")
    for field in ("object", "oldObject", "resource"):
        if request.get(field) is not None and not isinstance(request[field], Mapping):
            raise BadReview(f"request.{field} is not a JSON object")
    objects = request.get("objects")
    if objects is not None and not isinstance(objects, list):
        raise BadReview("request.objects is not a list")
    named = [("request.object", request.get("object")), ("request.oldObject", request.get("oldObject"))]
    named += [(f"request.objects[{i}]", obj) for i, obj in enumerate(objects or ())]
    for i, obj in enumerate(objects or ()):
        if not isinstance(obj, Mapping):
            raise BadReview(f"request.objects[{i}] is not a JSON object")
    for field in ("name", "namespace"):
        if request.get(field) is not None and not isinstance(request[field], str):
            raise BadReview(f"request.{field} is not a string")
    for where, obj in named:
        if isinstance(obj, Mapping) and obj.get("metadata") is not None:
            _check_metadata(f"{where}.metadata", obj["metadata"])
    return request


def _check_metadata(where: str, meta: Any) -> None:
    """What of an object's metadata admission reads (its scope, its selection) has the API's types: a 400, not a 500
    of a list where a string was hashed."""
    if not isinstance(meta, Mapping):
        raise BadReview(f"{where} is not a JSON object")
    for field in ("name", "namespace"):
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise BadReview(f"{where}.{field} is not a string")
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
            raise BadReview(f"{where}.{field} is not a JSON object of strings")


class WebhookServer:
    """Serves the webhooks of ``reconcilers`` over HTTPS (see the module docstring).

    Args:
        options: where to listen and which certificate to serve.
        reconcilers: the reconciler classes whose webhooks are served.
        client: the API client a validating webhook's ``check(ctx)`` reads through.
        scope: the objects the operator serves (its namespaces and label selector): admission judges and defaults
            only those, and admits the others untouched (conversion converts every object: the API server stores
            and serves all of the kind).
    """

    def __init__(
        self,
        options: Options,
        reconcilers: Sequence[type[reconciler_mod.Reconciler]],
        client: kube_client.Client,
        scope: admission.Scope = admission.EVERYTHING,
    ) -> None:
        source = options.certificates
        if isinstance(source, pathlib.Path):
            read = functools.partial(certs.from_directory, source)
            self._served = _Served(read(), read, str(source))
        elif isinstance(source, certs.SecretSource):
            self._served = _Served(source.read(), source.read, f"Secret {source.where}")
        else:
            self._served = _Served(source or certs.self_signed(options.hosts), None)
        self.routes = reviews_of(reconcilers, client, scope)
        self._server = _Server((options.host, options.port), _Handler, bind_and_activate=False)
        # A directory is read on each new connection (three small files); a Secret on a thread of its own, so no
        # handshake waits for the API server.
        self._server.tls = self._served.reread if isinstance(source, pathlib.Path) else self._served.context
        self._server.routes = self.routes
        self._server.limits = limits_of(reconcilers)
        self._server.request_timeout = options.request_timeout
        self._server.slots = threading.BoundedSemaphore(options.max_connections)
        self._server.bodies = _Budget(BODIES_AT_ONCE)
        try:
            self._server.server_bind()
            self._server.server_activate()
        except OSError as exc:
            self._server.server_close()
            message = f"cannot serve webhooks on {options.host}:{options.port}: {exc.strerror or exc}"
            raise errors.ConfigurationError(message) from exc
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="okt-webhooks", daemon=True
        )
        self._watchdog = threading.Thread(target=self._server.cut_overdue, name="okt-webhooks-deadlines", daemon=True)
        self._stopped = threading.Event()
        self._reloader = (
            threading.Thread(
                target=self._reread_every, args=(options.reload_interval,), name="okt-webhooks-secret", daemon=True
            )
            if isinstance(source, certs.SecretSource)
            else None
        )

    @property
    def port(self) -> int:
        """The bound port (the chosen one when the options asked for port 0)."""
        return int(self._server.server_address[1])

    @property
    def certificates(self) -> certs.Bundle:
        """The certificate served to the next connection."""
        return self._served.bundle

    @property
    def ca_bundle(self) -> str:
        """The ``caBundle`` of a webhook configuration calling this server (base64 of the CA's PEM)."""
        return self.certificates.ca_bundle()

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        """``https://host:port/path``: a ``clientConfig.url`` for an API server on ``host``'s side."""
        return f"https://{host}:{self.port}{path}"

    @property
    def serving(self) -> bool:
        """Whether the server accepts connections: started, its thread alive and its socket open (``/readyz``
        depends on it, as controller-runtime's webhook ``StartedChecker``)."""
        return self._thread.is_alive() and self._server.socket.fileno() != -1

    def start(self) -> None:
        self._thread.start()
        self._watchdog.start()
        if self._reloader is not None:
            self._reloader.start()
        _log.info("serving webhooks", port=self.port, paths=sorted(self.routes))

    def stop(self) -> None:
        """Stop serving and close the socket: no new connection is accepted, the idle ones are cut, and the reviews
        in flight are answered first (each within its request timeout, then cut)."""
        self._stopped.set()
        if self._reloader is not None and self._reloader.is_alive():
            # Not for a read in flight to an API server that does not answer: the thread is a daemon, and stops there.
            self._reloader.join(timeout=1.0)
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.close_connections()
        if self._watchdog.is_alive():
            self._watchdog.join()
        self._server.server_close()

    def _reread_every(self, interval: float) -> None:
        while not self._stopped.wait(interval):
            try:
                self._served.reread()
            except Exception as exc:  # a bug: the thread goes on, the pair served stays; its type only (no values)
                _log.error("the webhook certificate was not read again", error=type(exc).__name__)


class _Served:
    """The serving certificate and its TLS context, read again from where it is kept (a directory, a Secret).

    Why: whoever issues the certificate renews it in place (cert-manager writes the Secret, the kubelet swaps the
    mounted files), and a server that kept the pair read at start serves the old one until it ends, then fails
    every handshake. A changed pair whose key does not match is refused once, logged, and the previous pair served
    instead; a read that fails (a Secret deleted, an API server away) is logged once and the previous pair served.
    """

    def __init__(self, bundle: certs.Bundle, read: Callable[[], certs.Bundle] | None, where: str = "") -> None:
        self.bundle = bundle
        self._context = bundle.server_context()
        self._read = read
        self._where = where
        self._refused: certs.Bundle | None = None
        self._failure: str | None = None
        self._reading = threading.Lock()  # one read at a time; the pair served is swapped under _lock
        self._lock = threading.Lock()

    def context(self) -> ssl.SSLContext:
        """The TLS context of the certificate served now."""
        with self._lock:
            return self._context

    def reread(self) -> ssl.SSLContext:
        """Read the certificate again and serve it from now on when it changed and loads; the context to serve."""
        if self._read is None:
            return self.context()
        with self._reading:
            try:
                bundle = self._read()
            except (errors.OktError, ValueError) as exc:
                self._read_failed(exc)
                return self.context()
            self._failure = None
            if bundle in (self.bundle, self._refused):
                return self.context()
            try:
                context = bundle.server_context()
            except errors.ConfigurationError as exc:
                self._refused = bundle
                _log.warning("the renewed webhook certificate is not served", source=self._where, error=str(exc))
                return self.context()
            with self._lock:
                self.bundle, self._context, self._refused = bundle, context, None
            _log.info("serving the renewed webhook certificate", source=self._where)
            return context

    def _read_failed(self, exc: Exception) -> None:
        # okt's own messages name the Secret or the file, never their content; another error is said by its type.
        said = str(exc) if isinstance(exc, errors.OktError) else type(exc).__name__
        if said != self._failure:  # once, not on every read while it lasts
            self._failure = said
            _log.warning("the webhook certificate could not be read again: the previous one is served", error=said)


class _Budget:
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


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = BACKLOG
    tls: Callable[[], ssl.SSLContext]
    routes: Mapping[str, Review]
    limits: Mapping[str, int]
    request_timeout: float
    slots: threading.BoundedSemaphore
    bodies: _Budget

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.drained = threading.Condition(self.connections_lock)
        self.closing = False
        self.deadlines: dict[socket.socket, float] = {}
        self.idle: dict[socket.socket, float] = {}  # past the handshake, between requests: since when
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
        """Every slot is taken and a connection waits: end the one idle the longest (a client keeps connections for
        its next requests, and the API server keeps more than a few; kept, they would hold the slots until the
        timeout between two reads closes them)."""
        with self.connections_lock:
            if not self.idle:
                return
            connection = min(self.idle, key=self.idle.__getitem__)
            del self.idle[connection]
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)

    def start_request(self, connection: socket.socket) -> bool:
        """A request began on ``connection``: it must be answered within the request timeout (False: the server is
        closing, the request is not served)."""
        with self.connections_lock:
            self.idle.pop(connection, None)
            if self.closing:
                return False
            self.deadlines[connection] = time.monotonic() + self.request_timeout
            return True

    def end_request(self, connection: socket.socket) -> None:
        with self.connections_lock:
            self.deadlines.pop(connection, None)
            self.idle[connection] = time.monotonic()
            self.drained.notify_all()

    def cut_overdue(self) -> None:
        """Until the server closes, cut the connections whose request is past its deadline.

        Why a watch of its own: the timeout of a socket bounds one read, and a client sending a byte now and then
        never reaches it; the request as a whole needs a deadline that no read resets."""
        interval = min(0.5, self.request_timeout / 4)
        while not self.closed.wait(interval):
            now = time.monotonic()
            with self.connections_lock:
                overdue = [connection for connection, deadline in self.deadlines.items() if deadline <= now]
                for connection in overdue:
                    del self.deadlines[connection]
                self.drained.notify_all()
            for connection in overdue:
                _log.debug("a webhook request passed its timeout: its connection is cut", timeout=self.request_timeout)
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake, on the connection's own thread (never the accepting one).

        The handshake is bounded by its socket's timeout as a whole (CPython's handshake keeps one deadline), and a
        connection still in it is one of :attr:`connections`, so stopping cuts it rather than waiting for it."""
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
            try:
                wrapped.do_handshake()
            except (ssl.SSLError, OSError) as exc:
                _log.debug("webhook TLS handshake failed", client=str(client_address[0]), error=str(exc))
                return
            with self.connections_lock:
                self.idle[wrapped] = time.monotonic()
            super().finish_request(wrapped, client_address)
        finally:
            with self.connections_lock:
                self.connections.discard(wrapped)
                self.idle.pop(wrapped, None)
            # shutdown_request closes the raw socket; the TLS wrapper must be closed too.
            wrapped.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log.debug("webhook connection failed", client=str(client_address[0]))


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def handle_one_request(self) -> None:
        """One request, within the request timeout from its first byte (the wait for it, on a kept-alive connection,
        is bounded by the socket's timeout alone)."""
        try:  # a buffered reader, as StreamRequestHandler makes it (rbufsize -1): what is peeked stays for the request
            started = cast(io.BufferedReader, self.rfile).peek(1)
        except OSError:  # the socket's timeout (an idle connection), or a connection gone
            started = b""
        if not started:
            self.close_connection = True
            return
        if not self.server.start_request(self.connection):
            self.close_connection = True
            return
        try:
            super().handle_one_request()
        finally:
            self.server.end_request(self.connection)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        limit = self.server.limits.get(path, MAX_ADMISSION_BODY)
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
        cost = min(weight(raw), limit)  # a heavier one is refused before it is decoded
        if not self.server.bodies.take(cost, self.server.request_timeout):
            self._send(503, {"error": "too many large reviews at once: this one waited past the request timeout"})
            return
        try:
            status, answer = self._answer(path, review, raw, limit)
        finally:
            self.server.bodies.give_back(cost)
        self._send(status, answer)

    def _answer(self, path: str, review: Review, raw: bytes, limit: int) -> tuple[int, Mapping[str, Any]]:
        try:
            body = decode(raw, limit)
        except TooLarge as exc:
            return 413, {"error": str(exc)}
        except (ValueError, RecursionError) as exc:  # JSON's own errors say a position, never the body's text
            return 400, {"error": str(exc)}
        if not isinstance(body, dict):
            return 400, {"error": "the body is not a JSON object"}
        try:
            answer = review(body)
        except (BadReview, RecursionError) as exc:  # RecursionError: an object nested past what okt walks
            return 400, {"error": str(exc)}
        except Exception as exc:  # a bug of okt, not of the object: the API server applies the failurePolicy
            # Its text may hold what the review carried (a Secret's data): the reply and the log say its type only,
            # and the log where it was raised.
            _log.error("a webhook failed", path=path, error=type(exc).__name__, stack=_stack(exc))
            return 500, {"error": f"{type(exc).__name__}: the webhook failed inside the operator (its log says where)"}
        _log.debug("review answered", path=path, uid=(body.get("request") or {}).get("uid"), answer=_verdict(answer))
        return 200, answer

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
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


def _verdict(answer: Mapping[str, Any]) -> str:
    response = answer.get("response") or {}
    if "allowed" in response:
        return "allowed" if response["allowed"] else "refused"
    return str((response.get("result") or {}).get("status", "?"))
