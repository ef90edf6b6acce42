"""The webhook server: admission and conversion reviews served over HTTPS by the operator process.

Why this exists: the API server calls webhooks, over TLS, on a port of their own; the reviews are answered by the
reconcilers' own code (:mod:`okt.reconciler.admission`, :mod:`okt.reconciler.conversion`) at the paths
:mod:`okt.reconciler.webhooks` declares, so the configurations ``okt gen webhooks`` writes point where this serves.
What a body must be to be a review is :mod:`okt.runtime.webhook_reviews`'s; how connections are served and bounded,
:mod:`okt.runtime.webhook_connections`'s.

Guarantees:

* it serves from :meth:`WebhookServer.start` to :meth:`WebhookServer.stop`, whatever the leader election says: a
  standby replica answers admission as the leader does (a review writes nothing); once stopped it answers nothing,
  not even on a connection the API server kept alive (the reviews in flight when it stops are answered first, each
  within its request timeout or its caller's), and a connection still in its TLS handshake is cut, not waited for;
  :attr:`WebhookServer.serving` says whether it serves (the manager's ``/healthz`` and ``/readyz`` are ``503`` while
  it does not);
* at most :attr:`Options.max_connections` connections are served at once, and a request not answered within
  :attr:`Options.request_timeout` of its first byte, or within the ``?timeout=`` the API server gives when sooner,
  has its connection cut (see :mod:`okt.runtime.webhook_connections`); a review whose hook has not returned by then
  is logged, and keeps its thread, and its slot, until it does: while every slot is held so, the server accepts
  nothing and is not serving (:attr:`WebhookServer.stalled`);
* a certificate directory is read again for each new connection: a renewal written there (cert-manager's, into the
  mounted Secret) is served from the next one, without a restart; a certificate Secret is read again every
  :attr:`Options.reload_interval` seconds, and a rotation (cert-manager's) is served from the next connection after
  that read, as is the Service's own certificate kept in its Secret (renewed there by the read that finds it within
  :data:`~okt.runtime.certs.RENEW_BEFORE` of its end, or as another replica renewed it); a pair that does not load
  (a certificate whose key is not written yet) is never served, nor is one that cannot be read (a Secret gone, an
  API server away): the previous one is, until a pair loads; with :attr:`Options.trust_ca`, a renewed pair under
  another CA is served only once that CA is trusted;
* with :attr:`Options.restore_ca`, the CAs the callers must trust are checked every :attr:`Options.reload_interval`
  seconds wherever they were written (okt run: the webhook configurations, the CRDs' conversion webhooks, the
  ``--webhook-ca-file``), and written again by every replica, leader or not, where its own are missing (nothing where
  they are there); a CA that has ended leaves them then, whether or not the pair served changed (it verifies no
  certificate any more: no replica is served by it), the others stay.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import pathlib
import socket
import threading
from collections.abc import Callable, Sequence

import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.reconciler import admission
from okt.reconciler import reconciler as reconciler_mod
from okt.runtime import certs, ports, served_certificate, webhook_connections, webhook_reviews
from okt.runtime import metrics as metrics_mod

DEFAULT_PORT = 9443
"""The webhook port controller-runtime uses (and kubebuilder's Services target)."""
RELOAD_INTERVAL = 10.0
"""How often a certificate Secret is read again (as often as controller-runtime's certificate watcher reads its files):
an issuer renews well before the end (cert-manager at two thirds of the lifetime), so a rotation is served within
seconds, for one ``get`` of a Secret every ten seconds."""
REQUEST_TIMEOUT = 30.0
"""The longest the API server waits for a webhook (its ``timeoutSeconds`` is at most 30)."""

_log = structlog.get_logger("okt.webhooks")


@dataclasses.dataclass(frozen=True)
class Options:
    """How ``okt run`` (or a :class:`~okt.runtime.manager.Manager`) serves webhooks.

    Args:
        host: the address to bind (``0.0.0.0``: every IPv4 interface, as in a pod; ``::``: every interface of an
            IPv6-only pod).
        port: the port (0: a free one, see :attr:`WebhookServer.port`).
        certificates: the serving certificate; a directory (``tls.crt``, ``tls.key``, optionally ``ca.crt``: a
            mounted Secret): the certificate in it, read again when its files change; a
            :class:`~okt.runtime.certs.SecretSource`: the certificate in that Secret, read again every
            ``reload_interval``; a :class:`~okt.runtime.certs.ServiceSource`: the Service's own certificate in its
            Secret, read again as often and renewed there when it nears its end; None: a CA and a certificate
            generated for ``hosts``.
        hosts: the names and addresses a generated certificate is valid for; None: those of
            :func:`generated_hosts` (the local ones, and ``host`` when it is one address).
        request_timeout: the seconds a request may take, from its first byte to its answer, before its connection is
            cut (past the API server's own timeout, nobody waits for the answer any more).
        max_connections: the connections served at once; the next ones wait to be accepted until one ends.
        reload_interval: the seconds between two reads of a certificate Secret, and between two tries of
            ``trust_ca`` for a renewal read from a directory.
        trust_ca: for a certificate read again (a directory, a Secret), called before a renewed pair whose CA is
            another is served, with the CAs the callers must trust from then on (PEM: the renewed pair's CA, then the
            served one's, which the replicas that have not read the renewal yet still present); what it raises keeps
            the served pair until a later read (okt run writes them into the webhook configurations' caBundle).
        restore_ca: called every ``reload_interval`` with the CAs the callers must trust (PEM: those ``trust_ca`` was
            last given, else the served pair's), to write them again wherever they are missing and nothing where
            they are all there (okt run: a webhook configuration or CRD replaced without them, by ``kubectl
            replace`` or a Helm upgrade, whose every call fails until they are back; the ``--webhook-ca-file``), and
            to drop those that have ended where they are. Every replica calls it with its own CAs: as long as each
            writes only where its own are missing, none undoes another's write.
        on_serving: called once the server listens, with the served pair's CA (PEM), before :meth:`WebhookServer.start`
            returns; what it raises stops the server and the start (okt run writes ``--webhook-ca-file`` there: a run
            that cannot bind its ports writes no CA for the configurations to trust).
        port_held: what the error of a port another process holds adds, in parentheses: the ways out the caller
            gives (okt run names ``--webhook-port 0`` and ``--no-webhooks``).
        listener: ``host:port`` bound already (:func:`listen`), which the server takes over instead of binding it:
            okt run binds it before it says anything.
    """

    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    certificates: certs.Bundle | pathlib.Path | certs.SecretSource | certs.ServiceSource | None = None
    hosts: tuple[str, ...] | None = None
    request_timeout: float = REQUEST_TIMEOUT
    max_connections: int = webhook_connections.MAX_CONNECTIONS
    reload_interval: float = RELOAD_INTERVAL
    trust_ca: Callable[[bytes], None] | None = None
    restore_ca: Callable[[bytes], None] | None = None
    on_serving: Callable[[bytes], None] | None = None
    port_held: str = ""
    listener: socket.socket | None = None

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise errors.ConfigurationError(f"max_connections must be at least 1, not {self.max_connections}")
        if not self.reload_interval > 0:
            raise errors.ConfigurationError(f"reload_interval must be more than 0 seconds, not {self.reload_interval}")

    def certificate_hosts(self) -> tuple[str, ...]:
        """The names and addresses a certificate generated for these options is valid for."""
        return self.hosts if self.hosts is not None else generated_hosts(self.host)


_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def _joined(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[::1]:9443``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def generated_hosts(host: str) -> tuple[str, ...]:
    """The names a certificate generated for a server binding ``host`` is valid for: the local ones, and ``host`` when
    it is one address (``192.168.1.5``: the address an API server outside this host dials), not every one."""
    if host in _EVERY_ADDRESS or host in certs.LOCAL_HOSTS:
        return certs.LOCAL_HOSTS
    return (*certs.LOCAL_HOSTS, host)


def listen(host: str, port: int, port_held: str = "") -> socket.socket:
    """``host:port`` bound for a :class:`WebhookServer` to serve (:attr:`Options.listener`): ``okt run`` binds it
    before it says anything, so a port in use is its one line (see :mod:`okt.runtime.ports`).

    Raises:
        okt.errors.ConfigurationError: the port cannot be bound; one another process holds says ``port_held`` too, in
            parentheses (:attr:`Options.port_held`).
    """
    try:
        return ports.listen(host, port, webhook_connections.Server.request_queue_size)
    except OSError as exc:
        message = f"cannot serve webhooks on {_joined(host, port)}: {exc.strerror or exc}"
        if exc.errno == errno.EADDRINUSE and port_held:
            message = f"{message} ({port_held})"
        raise errors.ConfigurationError(message) from exc


class WebhookServer:
    """Serves the webhooks of ``reconcilers`` over HTTPS (see the module docstring).

    Args:
        options: where to listen and which certificate to serve.
        reconcilers: the reconciler classes whose webhooks are served.
        client: the API client a validating webhook's ``check(ctx)`` reads through.
        scope: the objects the operator serves (its namespaces and label selector): admission judges and defaults
            only those, and admits the others untouched (conversion converts every object: the API server stores
            and serves all of the kind).
        metrics: where the requests are counted and timed, by webhook (controller-runtime's
            ``controller_runtime_webhook_*`` and ``okt_webhook_reviews_total``); a private
            :class:`~okt.runtime.metrics.Metrics` when ``None``.
    """

    def __init__(
        self,
        options: Options,
        reconcilers: Sequence[type[reconciler_mod.Reconciler]],
        client: kube_client.Client,
        scope: admission.Scope = admission.EVERYTHING,
        metrics: metrics_mod.Metrics | None = None,
    ) -> None:
        source = options.certificates
        if isinstance(source, pathlib.Path):
            read = functools.partial(certs.from_directory, source)
            # Read on each connection: a renewal's CA that could not be written is tried again once a reload interval.
            self._served = served_certificate.ServedCertificate(
                read(), read, str(source), options.trust_ca, options.reload_interval, options.restore_ca
            )
        elif isinstance(source, certs.SecretSource | certs.ServiceSource):
            self._served = served_certificate.ServedCertificate(
                source.read(), source.read, f"Secret {source.where}", options.trust_ca, restore=options.restore_ca
            )
        else:
            bundle = source or certs.self_signed(options.certificate_hosts())
            self._served = served_certificate.ServedCertificate(bundle, None, restore=options.restore_ca)
        self.routes = webhook_reviews.reviews_of(reconcilers, client, scope)
        listener = options.listener
        if listener is None:
            listener = listen(options.host, options.port, options.port_held)
        server = webhook_connections.Server6 if listener.family == socket.AF_INET6 else webhook_connections.Server
        self._server = server(listener.getsockname()[:2], webhook_connections.Handler, bind_and_activate=False)
        ports.serve_on(self._server, listener)
        # A directory is read on each new connection (three small files); a Secret on a thread of its own, so no
        # handshake waits for the API server.
        self._server.tls = self._served.reread if isinstance(source, pathlib.Path) else self._served.context
        self._server.routes = self.routes
        self._server.metrics = metrics if metrics is not None else metrics_mod.Metrics()
        self._server.metrics.prepare_webhooks(self.routes)
        self._server.limits = webhook_reviews.limits_of(reconcilers)
        self._server.request_timeout = options.request_timeout
        self._server.slots = threading.BoundedSemaphore(options.max_connections)
        self._max_connections = options.max_connections
        self._server.bodies = webhook_connections.Budget(webhook_connections.BODIES_AT_ONCE)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="okt-webhooks", daemon=True
        )
        self._watchdog = threading.Thread(target=self._server.cut_overdue, name="okt-webhooks-deadlines", daemon=True)
        self._stopped = threading.Event()
        self._on_serving = options.on_serving
        # A Secret is read again on this thread, and the CAs restored where they went missing.
        self._reads_secret = isinstance(source, certs.SecretSource | certs.ServiceSource)
        self._reloader = (
            threading.Thread(
                target=self._reread_every, args=(options.reload_interval,), name="okt-webhooks-secret", daemon=True
            )
            if self._reads_secret or options.restore_ca is not None
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
        """``https://host:port/path``: a ``clientConfig.url`` for an API server on ``host``'s side (an IPv6
        address in brackets)."""
        return f"https://{_joined(host, self.port)}{path}"

    @property
    def serving(self) -> bool:
        """Whether the server accepts connections: started, its thread alive, its socket open and not
        :attr:`stalled` (``/healthz`` and ``/readyz`` depend on it, as on controller-runtime's webhook
        ``StartedChecker``)."""
        return self._thread.is_alive() and self._server.socket.fileno() != -1 and not self.stalled

    @property
    def stalled(self) -> bool:
        """Whether every connection slot is held by a review past its request timeout, its hook still running (a
        ``check``, ``default`` or converter that does not return): no connection is accepted until one returns."""
        return self._server.held_past_deadline() >= self._max_connections

    def start(self) -> None:
        self._thread.start()
        self._watchdog.start()
        if self._reloader is not None:
            self._reloader.start()
        _log.info("serving webhooks", port=self.port, paths=sorted(self.routes))
        if self._on_serving is not None:
            try:
                self._on_serving(self.certificates.ca_pem)
            except BaseException:
                self.stop()
                raise

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
                if self._reads_secret:
                    self._served.reread()
            except Exception as exc:  # a bug: the thread goes on, the pair served stays; its type only (no values)
                _log.error("the webhook certificate was not read again", error=type(exc).__name__)
            self._served.restore()
