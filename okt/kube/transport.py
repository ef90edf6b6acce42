"""The direct request path: okt's requests answered whole, written in one piece over kept-alive connections of its own.

Why this exists: for every request, ``requests`` merges session settings, cookies, hooks and proxy settings, prepares
a new request object, and re-checks the TLS files on disk; pykube's adapter then re-reads the kubeconfig's
credentials; urllib3 and ``http.client`` underneath still cost about 0.7 ms of the interpreter per request (see
:class:`DirectTransport`). On a 2-core machine converging a thousand objects that bookkeeping costs more CPU than the
HTTP itself, and the operator competes with the API server for those cores. When no plugin refreshes the credentials
(a bearer token, a token file read again now and then, a client certificate, basic auth) and no proxy is in the way,
nothing of it needs redoing: :class:`DirectTransport` builds the head of every request once (but a token that can
change, given with each request), writes each request with one ``sendall`` on a kept-alive connection, and reads the
answer (HTTP/1.1: a length, chunks, or the end of the connection) from the connection's buffered reader.

Guarantees:

* the same TLS verification as the session: the kubeconfig's CA (or ``PYKUBE_SSL_CERTIFICATE_AUTHORITY``),
  ``insecure-skip-tls-verify``, the client certificate and ``tls-server-name`` (:class:`TLS`);
* :meth:`DirectTransport.for_config` answers ``None`` — use the session — for credentials pykube refreshes (auth
  providers: pykube retries them on 401) and for a proxy; a credential plugin's token or client certificate
  (:class:`okt.kube.tokens.ExecToken`) is the one of the moment on each request;
* the kubeconfig's impersonation (:func:`okt.kube.kubeconfig.impersonation`) goes with every request, on the direct
  path as on the session (:class:`SessionAdapter`), a header repeated once per value;
* the request target is percent-encoded where it must be: no value (an object's name) can end the request line or
  add a header;
* no retries and no redirects: a failure is the caller's to classify (:class:`okt.errors.ApiError`); the answer is
  read whole; a connection goes back to the pool only after a whole answer that lets it be kept, and one the server
  closed while idle is never reused.

Caveats: streaming requests (watches, lists) stay on the session, which handles long-lived chunked bodies (reading a
watch's events from the connection's buffer instead measured no less CPU for the informers). Answers are not asked to
be compressed (the direct path reads single objects; the API server would spend CPU to shrink them on a link that
rarely needs it); a server that compresses anyway is decoded.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib
import json
import os
import pathlib
import select
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import urllib.parse
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pykube
import pykube.config
import pykube.http
import requests
import urllib3
import urllib3.connection
import urllib3.util.ssltransport

TimeoutSpec = float | tuple[float, float]
_Context = TypeVar("_Context", bound=ssl.SSLContext)


_on_connect: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("okt_on_connect", default=None)


@contextlib.contextmanager
def asked_once_connected(ready: Callable[[], None] | None) -> Iterator[None]:
    """Call ``ready`` once each connection this thread makes in the block is made (TCP, TLS, a proxy's tunnel), just
    before anything is written on it: what it raises is raised, the connection closed, nothing sent.

    Why: making a connection may take as long as its timeout, and what allowed a request before it was made may not
    hold any more (okt's write fence: leadership may have been lost meanwhile, and the next leader be writing). Every
    connection okt makes to send a request asks it — the direct path's (:func:`open_socket`), the session's
    (:class:`SessionAdapter`'s pools), a websocket's, a call straight to an operand's (:class:`HTTPConnection`,
    :class:`HTTPSConnection`) — so one block covers a request whichever way it leaves.
    """
    token = _on_connect.set(ready)
    try:
        yield
    finally:
        _on_connect.reset(token)


def connected() -> None:
    """Ask the thread's ``ready`` (see :func:`asked_once_connected`), if any: a connection was just made."""
    ready = _on_connect.get()
    if ready is not None:
        ready()


class _AskedOnceConnected:
    """A urllib3 connection's ``connect`` asking :func:`connected` once the connection is made (closed if it raises)."""

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]  # a mixin of urllib3's connection classes
        try:
            connected()
        except BaseException:
            self.close()  # type: ignore[attr-defined]
            raise


class HTTPConnection(_AskedOnceConnected, urllib3.connection.HTTPConnection):
    """urllib3's connection, asking :func:`connected` once made."""


class HTTPSConnection(_AskedOnceConnected, urllib3.connection.HTTPSConnection):
    """urllib3's TLS connection, asking :func:`connected` once made (the handshake done, a proxy's tunnel too)."""


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = HTTPConnection


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = HTTPSConnection


_POOLS: dict[str, type[urllib3.HTTPConnectionPool]] = {"http": _HTTPPool, "https": _HTTPSPool}


class SessionAdapter(pykube.http.KubernetesHTTPAdapter):  # type: ignore[misc]  # pykube is untyped
    """pykube's adapter (its credentials, refreshed as pykube does) whose connections ask :func:`connected` once made,
    directly and through an HTTP proxy (a SOCKS proxy's connections are urllib3's own: not asked), whose connections
    to an ``https://`` proxy are made with :meth:`TLS.proxy_context` (as kubectl makes them, offering a credential
    plugin's client certificate too), and whose requests all carry ``impersonation``'s headers (see
    :func:`okt.kube.kubeconfig.impersonation`)."""

    def __init__(
        self, kube_config: pykube.KubeConfig, *, impersonation: Sequence[tuple[str, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(kube_config, **kwargs)
        self.impersonation = tuple(impersonation)
        self._offering: tuple[tuple[str, str], ssl.SSLContext] | None = None
        self.certificate: Callable[[], tuple[str, str] | None] | None = None
        """The client certificate and key files of the kubeconfig's credential plugin of the moment, when okt runs
        the plugin (:class:`okt.kube.tokens.ExecToken`, whose token comes with each request): pykube's adapter then
        runs it no more (it ran it for every request, writing its certificate to new files each time)."""

    def _setup_request_auth(self, config: pykube.KubeConfig, request: requests.PreparedRequest, kwargs: Any) -> Any:
        if self.certificate is not None and "exec" in config.user:
            return None  # the plugin's token, if it gives one, is in the request's headers already
        return super()._setup_request_auth(config, request, kwargs)

    def _setup_request_certificates(
        self, config: pykube.KubeConfig, request: requests.PreparedRequest, kwargs: dict[str, Any]
    ) -> None:
        super()._setup_request_certificates(config, request, kwargs)
        if self.certificate is not None and "client-certificate" not in config.user:
            files = self.certificate()
            if files is not None:
                kwargs["cert"] = files  # the same files while the plugin gives the same: urllib3's pool is kept

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> urllib3.PoolManager:
        if proxy not in self.proxy_manager and proxy.lower().startswith("https:"):
            # urllib3 would check an https proxy for its own host and offer it no client certificate: kubectl checks
            # it for tls-server-name and offers the kubeconfig's certificate (see TLS.proxy_context)
            proxy_kwargs.setdefault("proxy_ssl_context", TLS.of(self.kube_config).proxy_context())
        manager: urllib3.PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _POOLS
        name = self.kube_config.cluster.get("tls-server-name")
        if name:  # pykube gives it to its direct pools only: through a proxy, the server's name is checked as well
            manager.connection_pool_kw.update(server_hostname=name, assert_hostname=name)
        return manager

    def get_connection_with_tls_context(
        self,
        request: requests.PreparedRequest,
        verify: bool | str | None,
        proxies: Mapping[str, str] | None = None,
        cert: tuple[str, str] | str | None = None,
    ) -> urllib3.HTTPConnectionPool:
        """The pool for ``request``; through an ``https://`` proxy with a client certificate other than the
        kubeconfig's (a credential plugin's, see :attr:`certificate`), one whose connections offer that certificate
        to the proxy too, as kubectl's transport offers the plugin's (client-go's exec authenticator gives the TLS
        config its certificate of the moment)."""
        proxy = requests.utils.select_proxy(request.url or "", proxies)
        tls = TLS.of(self.kube_config)
        if not isinstance(cert, tuple) or cert == tls.cert or not proxy or not proxy.lower().startswith("https:"):
            return super().get_connection_with_tls_context(request, verify, proxies, cert)  # type: ignore[no-any-return]
        try:
            host, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        except ValueError as exc:
            raise requests.exceptions.InvalidURL(exc, request=request) from None
        manager = self.proxy_manager_for(proxy)
        assert isinstance(manager, urllib3.ProxyManager) and manager.proxy_config is not None  # an https proxy's
        # urllib3 keeps pools by their settings, the proxy's among them: one for each certificate offered
        pool_kwargs["_proxy_config"] = manager.proxy_config._replace(ssl_context=self._proxy_context(tls, cert))
        pool: urllib3.HTTPConnectionPool = manager.connection_from_host(**host, pool_kwargs=pool_kwargs)
        return pool

    def tls(self) -> TLS:
        """The TLS settings of a connection made now: the kubeconfig's (:meth:`TLS.of`), with the client certificate
        the credential plugin gives now (:attr:`certificate`; else the one pykube's adapter kept when it last ran it)
        where the kubeconfig names none — as the session's next request offers it."""
        tls = TLS.of(self.kube_config)
        if tls.cert is None and self.certificate is not None:
            files = self.certificate()
            return tls if files is None else dataclasses.replace(tls, cert=files)
        if tls.cert is None and self.cert is not None and self.key is not None:
            return dataclasses.replace(tls, cert=(self.cert.name, self.key.name))
        return tls

    def _proxy_context(self, tls: TLS, cert: tuple[str, str]) -> ssl.SSLContext:
        """:meth:`TLS.proxy_context` offering ``cert``, made once for each certificate (the last one kept)."""
        made = self._offering
        if made is None or made[0] != cert:
            made = self._offering = (cert, dataclasses.replace(tls, cert=cert).proxy_context())
        return made[1]

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if self.impersonation:
            # urllib3 writes a header dict's repeated fields one line each: one Impersonate-Group per group, as the
            # API server reads them (groups joined with commas would be one group of that name).
            headers = urllib3.HTTPHeaderDict(request.headers)
            for name, value in self.impersonation:
                headers.add(name, value)
            request.headers = headers  # type: ignore[assignment]  # a case-insensitive mapping as requests' own
        response: requests.Response = super().send(request, **kwargs)
        return response


class TLSInTLS(urllib3.util.ssltransport.SSLTransport):
    """The API server's TLS inside the TLS connection to an ``https://`` proxy (urllib3's :class:`SSLTransport`, the
    layer the session's requests tunnel through such a proxy with): a socket as far as a websocket uses one.

    Why a class of its own: websocket-client closes a socket only once it sees it open (its ``_closed``), which the
    transport does not say; read here from the connection to the proxy, the stream's end closes it at once too.
    """

    @property
    def _closed(self) -> bool:
        closed: bool = getattr(self.socket, "_closed", False)
        return closed

    def shutdown(self, how: int) -> None:
        """Shut the connection to the proxy down (the tunnel with it)."""
        self.socket.shutdown(how)


Socket = socket.socket | TLSInTLS
"""A connection made by :func:`open_socket`: a socket, or the API server's TLS inside an ``https://`` proxy's."""

_TUNNELLING = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")
"""The schemes of the proxies :func:`open_socket` tunnels through, those the session's requests take (SOCKS with
PySocks)."""


def open_socket(
    host: str,
    port: int,
    context: ssl.SSLContext | None,
    server_name: str,
    timeout: float,
    *,
    proxy: str | None = None,
    proxy_context: ssl.SSLContext | None = None,
) -> Socket:
    """A connection to ``host:port`` (TLS with ``context`` when given), made, then :func:`connected` asked.

    ``proxy``: the URL of the proxy through which the connection is tunnelled, as the session's are: ``http://`` and
    ``https://`` with ``CONNECT`` (its user and password, if any, sent as basic auth), an ``https://`` one reached over
    TLS with ``proxy_context`` (which decides the name checked: :meth:`TLS.proxy_context`), the API server's TLS then
    inside it (:class:`TLSInTLS`);
    ``socks5://`` (``socks5h://``: the proxy resolves ``host``), ``socks4://`` or ``socks4a://`` through PySocks.

    Raises:
        OSError: the connection could not be made (refused, timed out, the proxy refused the tunnel, a TLS
            handshake failed).
        ValueError: a proxy of another scheme or without a host, an ``https://`` one without ``proxy_context``, or a
            SOCKS one without PySocks installed.
    """
    via = urllib.parse.urlsplit(proxy) if proxy else None
    if via is not None and (via.scheme not in _TUNNELLING or not via.hostname):
        raise ValueError(f"a proxy must be a {'://, '.join(_TUNNELLING)}:// URL with a host, got {via.scheme}://")
    if via is not None and via.scheme == "https" and proxy_context is None:
        raise ValueError("an https:// proxy needs the TLS settings to check it with")
    if via is not None and via.scheme.startswith("socks"):
        sock = _socks_connection(host, port, via, timeout)
    else:
        where = (via.hostname or "", via.port or _PROXY_PORTS[via.scheme]) if via is not None else (host, port)
        sock = socket.create_connection(where, timeout=timeout)
    made: Socket = sock
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if via is not None and via.scheme == "https" and proxy_context is not None:
            sock = proxy_context.wrap_socket(sock, server_hostname=via.hostname)
            made = sock
        if via is not None and via.scheme.startswith("http"):
            _tunnel(sock, host, port, via)
        if context is not None:
            if isinstance(sock, ssl.SSLSocket):  # the proxy's TLS: the API server's goes inside it
                made = TLSInTLS(sock, context, server_hostname=server_name)
            else:
                made = sock = context.wrap_socket(sock, server_hostname=server_name)
        connected()
    except BaseException:
        made.close()
        raise
    return made


_PROXY_PORTS = {"http": 80, "https": 443}
"""The port of a proxy whose URL names none, as urllib3 takes it (the URL's scheme's)."""


def _socks_connection(host: str, port: int, via: urllib.parse.SplitResult, timeout: float) -> socket.socket:
    """A connection to ``host:port`` through the SOCKS proxy ``via`` (PySocks, as the session's requests speak it;
    ``socks5h`` and ``socks4a`` leave resolving ``host`` to the proxy)."""
    try:
        socks: Any = importlib.import_module("socks")
    except ImportError:
        raise ValueError(f"a {via.scheme}:// proxy needs PySocks: pip install PySocks") from None
    kind = socks.SOCKS5 if via.scheme.startswith("socks5") else socks.SOCKS4
    made: socket.socket = socks.create_connection(
        (host, port),
        timeout=timeout,
        proxy_type=kind,
        proxy_addr=via.hostname,
        proxy_port=via.port or 1080,
        proxy_rdns=via.scheme in ("socks5h", "socks4a"),
        proxy_username=urllib.parse.unquote(via.username) if via.username is not None else None,
        proxy_password=urllib.parse.unquote(via.password) if via.password is not None else None,
    )
    return made


def keylog_file() -> str | None:
    """The file ``$SSLKEYLOGFILE`` names, where each TLS context made for the API server appends its session keys
    (for Wireshark), as ``ssl.create_default_context`` and urllib3 honour it; None when unset or empty, or when Python
    ignores the environment (``-E``)."""
    keylog = os.environ.get("SSLKEYLOGFILE")
    return keylog if keylog and not sys.flags.ignore_environment else None


@dataclasses.dataclass(frozen=True)
class TLS:
    """How a kubeconfig says to check the API server and prove who we are: what every connection to it must use.

    ``verify`` is ``True`` (the system's CAs), a CA file, or ``False`` (``insecure-skip-tls-verify``); ``cert`` the
    client certificate and key files; ``server_name`` the kubeconfig's ``tls-server-name``.
    """

    verify: bool | str = True
    cert: tuple[str, str] | None = None
    server_name: str | None = None

    @classmethod
    def of(cls, config: pykube.KubeConfig) -> TLS:
        """Read as pykube's adapter reads it (``PYKUBE_SSL_CERTIFICATE_AUTHORITY`` first, then the kubeconfig)."""
        user, cluster = config.user, config.cluster
        cert = None
        if "client-certificate" in user:
            cert = (user["client-certificate"].filename(), user["client-key"].filename())
        verify: bool | str = True
        if os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY") is not None:
            verify = os.environ["PYKUBE_SSL_CERTIFICATE_AUTHORITY"]
        elif "certificate-authority" in cluster:
            verify = cluster["certificate-authority"].filename()
        elif "insecure-skip-tls-verify" in cluster:
            verify = not cluster["insecure-skip-tls-verify"]
        return cls(verify, cert, cluster.get("tls-server-name"))

    def proxy_context(self) -> ssl.SSLContext:
        """An ``ssl`` context for the connection to an ``https://`` proxy, as kubectl makes it (Go's ``net/http``
        dials an https proxy with the transport's own TLS settings): its certificate checked against the same CAs as
        the API server's (the CA file, the system's CAs without one, nothing with ``insecure-skip-tls-verify``), for
        ``tls-server-name`` when the kubeconfig sets one — the name asked of the proxy too, whatever host a caller
        wraps a socket for — else for the proxy's own host; the client certificate offered if the proxy asks for one.

        Why here and nowhere else: every connection to a proxy (the session's, through urllib3; a websocket's and the
        direct path's, through :func:`open_socket`) is wrapped with this context, so none can check another name.
        """
        context = self._made(_ProxyContext)
        context.name = self.server_name
        return context

    def context(self) -> ssl.SSLContext:
        """An ``ssl`` context with these settings (for connections ``requests`` does not make: the direct path,
        websockets)."""
        return self._made(ssl.SSLContext)

    def _made(self, kind: type[_Context]) -> _Context:
        """A client context of ``kind`` checking certificates and proving who we are as these settings say, as
        ``ssl.create_default_context`` makes one (it makes none of a subclass)."""
        context = kind(ssl.PROTOCOL_TLS_CLIENT)
        if sys.version_info >= (3, 13):  # create_default_context's flags since Python 3.13
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        keylog = keylog_file()
        if keylog is not None:
            context.keylog_filename = keylog
        if self.verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif isinstance(self.verify, str) and os.path.isdir(self.verify):  # a folder of CAs, as requests accepts
            context.load_verify_locations(capath=self.verify)
        elif isinstance(self.verify, str):
            context.load_verify_locations(cafile=self.verify)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self.cert is not None:
            context.load_cert_chain(*self.cert)
        return context


class _ProxyContext(ssl.SSLContext):
    """A client context that checks its peer for ``name`` (when set) whatever name the caller asks for: urllib3 wraps
    the connection to a proxy for the proxy's host, kubectl checks ``tls-server-name`` there too (and sends it as the
    TLS server name)."""

    name: str | None = None

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        return super().wrap_socket(
            sock, server_side, do_handshake_on_connect, suppress_ragged_eofs, self.name or server_hostname, session
        )


_INLINE = (("clusters", "cluster", ("certificate-authority",)), ("users", "user", ("client-certificate", "client-key")))
"""Where a kubeconfig may hold a certificate or key inline (``<field>-data``): section, entry key and fields."""


def keep_inline_files_private(config: pykube.KubeConfig) -> None:
    """Write the kubeconfig's inline CA, client certificate and client key to files only this user can read.

    Why: TLS libraries read certificates and keys from files, and pykube writes an inline one to
    ``/tmp/new-pykube.<md5>.crt`` with the process's umask — a client key any local user can read, left behind at
    exit — and trusts such a file already there, so a CA another user put at that name first would be trusted.
    Here each goes to a new folder of mode 0700 (removed when ``config`` is collected or the process exits), and
    ``config``'s parsed clusters and users point at those files, for the session and the direct path alike. The
    kubeconfig's own document (which pykube may write back to its file) is left as it is.
    """
    folder: pathlib.Path | None = None
    for section, entry_key, fields in _INLINE:
        parsed = getattr(config, section)
        for number, entry in enumerate(config.doc.get(section) or ()):
            for field in fields:
                if f"{field}-data" not in (entry.get(entry_key) or {}) or entry.get("name") not in parsed:
                    continue
                if folder is None:
                    folder = pathlib.Path(tempfile.mkdtemp(prefix="okt-kubeconfig-"))
                    weakref.finalize(config, shutil.rmtree, folder, ignore_errors=True)
                path = folder / f"{entry_key}-{number}-{field}"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(parsed[entry["name"]][field].bytes())
                parsed[entry["name"]][field] = pykube.config.BytesOrFile(filename=str(path))


class Response:
    """An answer read whole: status, reason, body and header fields (what okt's verbs need from
    ``requests.Response``; a refusal's ``Retry-After`` is in a header field)."""

    __slots__ = ("content", "headers", "reason", "status_code", "url")

    def __init__(
        self, status_code: int, reason: str, content: bytes, url: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.status_code = status_code
        self.reason = reason
        self.content = content
        self.url = url
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        """The header fields, looked up by lowercase name."""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def close(self) -> None:
        """Nothing to release: the body was read and the connection returned to the pool."""


class DirectTransport:
    """Sends requests with headers built once over kept-alive connections of its own (HTTP/1.1, TLS as the session's).

    Why not urllib3's pool: for a request answered whole, urllib3 and ``http.client`` cost about 0.7 ms of the
    interpreter's time (the pool's bookkeeping, a timeout object, the target re-encoded, the headers parsed by the
    ``email`` package, a file object made per answer); writing the request in one piece and reading the answer from a
    buffered reader kept with the connection costs well under half of it (a GET, its answer decoded: 260-320 µs of
    CPU against 735 µs). A reconcile that writes three children and a status sends four such requests; on a machine
    the API server shares, that is the operator's largest cost.
    """

    def __init__(
        self,
        base: str,
        headers: Mapping[str, str],
        tls: TLS | None = None,
        *,
        pool_size: int = 10,
        impersonation: Sequence[tuple[str, str]] = (),
        certificate: Callable[[], tuple[str, str] | None] | None = None,
    ) -> None:
        """``headers`` hold the credentials of a token that never changes; one that can is given to each
        :meth:`send` instead. ``impersonation``: header fields sent with every request after ``headers``, a name
        perhaps repeated (see :func:`okt.kube.kubeconfig.impersonation`). ``certificate``: the client certificate
        and key files of the moment, where a credential plugin gives them (in place of ``tls``' own): the kept-alive
        connections are closed when it gives another, as client-go closes its connections then."""
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base!r}")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        """The server URL's path (a proxy in front of the API server may serve it under one)."""
        self.headers = dict(headers)
        """Sent with every request (credentials included): built once."""
        host = parts.netloc.rpartition("@")[2]
        fields = [*{"Host": host, **self.headers}.items(), *impersonation]
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fields)
        self._tls = (tls or TLS()) if parts.scheme == "https" else None
        self._context: ssl.SSLContext | None = None
        """Made at the first connection: a CA file that cannot be read fails that request, not the client's making."""
        self._certificate = certificate
        self._offered: tuple[str, str] | None = None
        """The plugin's certificate files :attr:`_context` and the kept-alive connections were made with."""
        self._server_name = (self._tls.server_name if self._tls else None) or self._host
        self._pool_size = pool_size
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    @classmethod
    def for_config(
        cls,
        config: pykube.KubeConfig,
        base: str,
        proxies: Mapping[str, str],
        user_agent: str,
        *,
        pool_size: int = 10,
        changing_token: bool = False,
        impersonation: Sequence[tuple[str, str]] = (),
        certificate: Callable[[], tuple[str, str] | None] | None = None,
    ) -> DirectTransport | None:
        """The direct path for ``config``, or ``None`` when the session must be used (credentials a plugin
        refreshes, a proxy, a header that could not be sent as it is). ``changing_token``: the bearer token comes
        from a file read again now and then or from a credential plugin (:mod:`okt.kube.tokens`), and is given to
        each :meth:`send`; none from the kubeconfig is built in. ``impersonation``, ``certificate`` (a credential
        plugin's, where the kubeconfig names no client certificate): as :meth:`__init__` takes them."""
        user = config.user
        refreshing = ("exec" in user and not changing_token) or "auth-provider" in user
        if refreshing or proxies or not base.startswith(("http://", "https://")):
            return None
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if not changing_token and user.get("token"):
            headers["Authorization"] = f"Bearer {user['token']}"
        elif not changing_token and user.get("username") and user.get("password"):
            basic = urllib3.util.make_headers(basic_auth=f"{user['username']}:{user['password']}")
            headers["Authorization"] = basic["authorization"]
        if any(c in value for value in headers.values() for c in "\r\n\0"):
            return None  # the session refuses such a header with its own error
        tls = TLS.of(config)
        if tls.cert is not None:
            certificate = None  # the kubeconfig's own comes first, as on the session
        return cls(base, headers, tls, pool_size=pool_size, impersonation=impersonation, certificate=certificate)

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        timeout: TimeoutSpec,
        token: str | None = None,
    ) -> Response:
        """One request, answered whole. Never retried: a failure is the caller's to classify. ``token``: the bearer
        token of this request, when it can change (see :meth:`for_config`). A new connection asks the thread's
        ``ready`` once made (see :func:`asked_once_connected`): what it raises is raised, nothing sent.

        Raises:
            OSError: the request did not get an answer (refused, reset, timed out, closed before or during the
                answer, an answer that is not HTTP).
        """
        url, request, body = self._request(method, path, params, data, content_type, token)
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        conn = self._take(connect)
        try:
            conn.send(request, body, read)
            status, reason, content, keep, fields = _read_answer(conn.reader, method)
        except BaseException:
            conn.close()
            raise
        self._give_back(conn, keep)
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in fields.items()}
        return Response(status, reason, content, url, headers)

    def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        token: str | None,
    ) -> tuple[str, bytes, bytes | None]:
        """The URL (as shown in errors), the request's head (with a small body joined) and a large body on its own."""
        url = self.prefix + path
        target = urllib.parse.quote(url, safe=_TARGET_SAFE)
        if params:
            query = urllib.parse.urlencode(params)
            url, target = f"{url}?{query}", f"{target}?{query}"
        body = data.encode() if isinstance(data, str) else data
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed}"
        if token is not None:
            head += f"Authorization: Bearer {token}\r\n"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        elif method in _BODY_METHODS:
            head += "Content-Length: 0\r\n"
        request = (head + "\r\n").encode("latin-1")
        if body and len(body) < _JOIN_BELOW:
            return url, request + body, None
        return url, request, body or None

    def close(self) -> None:
        """Close the kept-alive connections (one in use is closed when its request ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self, connect_timeout: float) -> _Connection:
        """A kept-alive connection the server has not closed meanwhile, else a new one (with the plugin's
        certificate of the moment: those made with another are closed)."""
        if self._certificate is not None and self._tls is not None:
            files = self._certificate()
            if files != self._offered or self._context is None:
                context = dataclasses.replace(self._tls, cert=files).context()
                with self._lock:
                    self._context, self._offered = context, files
                self.close()
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(connect_timeout)
            if not conn.dropped():
                return conn
            conn.close()

    def _give_back(self, conn: _Connection, keep: bool) -> None:
        if keep:
            with self._lock:
                if len(self._idle) < self._pool_size and conn.context is self._context:
                    self._idle.append(conn)
                    return
        conn.close()

    def _connect(self, timeout: float) -> _Connection:
        if self._tls is not None and self._context is None:
            self._context = self._tls.context()
        context = self._context
        return _Connection(open_socket(self._host, self._port, context, self._server_name, timeout), context)


def _tunnel(sock: socket.socket, host: str, port: int, via: urllib.parse.SplitResult) -> None:
    """Ask the proxy ``via`` for a tunnel to ``host:port`` on ``sock`` (HTTP ``CONNECT``).

    Raises:
        OSError: the proxy refused it or did not answer in HTTP.
    """
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    if via.username is not None:
        user = f"{urllib.parse.unquote(via.username)}:{urllib.parse.unquote(via.password or '')}"
        head += f"Proxy-Authorization: {urllib3.util.make_headers(basic_auth=user)['authorization']}\r\n"
    sock.sendall((head + "\r\n").encode("latin-1"))
    reader = sock.makefile("rb", buffering=0)  # unbuffered: the TLS handshake that follows reads the socket itself
    line = b""
    while not line.endswith(b"\n") and len(line) <= _MAX_LINE:
        byte = reader.read(1)
        if not byte:
            raise ConnectionResetError("the proxy closed the connection without answering")
        line += byte
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ConnectionError(f"the proxy's answer is not HTTP: {line[:80]!r}")
    ended = line
    while not ended.endswith(b"\r\n\r\n") and not ended.endswith(b"\n\n"):
        byte = reader.read(1)
        if not byte:
            raise ConnectionResetError("the proxy closed the connection in its answer")
        ended = ended[-3:] + byte
    if not 200 <= int(parts[1]) <= 299:
        raise ConnectionRefusedError(f"the proxy refused the tunnel to {target}: {line.strip().decode('latin-1')}")


_TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~"
"""Kept as they are in a request target (RFC 3986's reserved characters and ``%``); anything else — a space, a
control character, a byte beyond ASCII — is percent-encoded, so no value can end the request line or add a header."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_JOIN_BELOW = 64 * 1024
"""A body smaller than this goes out in the same write as the head (one system call, one TLS record)."""
_MAX_LINE = 64 * 1024
_MAX_HEADERS = 200


class _Connection:
    """One kept-alive connection to the API server and the buffered reader of its answers."""

    __slots__ = ("context", "reader", "sock")

    def __init__(self, sock: Socket, context: ssl.SSLContext | None = None) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")
        self.context = context
        """The context it was made with: one made with a credential plugin's certificate before another is not kept."""

    def send(self, request: bytes, body: bytes | None, timeout: float) -> None:
        self.sock.settimeout(timeout)
        self.sock.sendall(request)
        if body:
            self.sock.sendall(body)

    def dropped(self) -> bool:
        """Whether the server closed (or wrote on) this idle connection: readable now means it is not usable."""
        try:
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
        with contextlib.suppress(OSError):
            self.sock.close()


def _read_answer(reader: Any, method: str) -> tuple[int, str, bytes, bool, dict[bytes, bytes]]:
    """Status, reason, body, whether the connection may be kept and the header fields (names lowercased), read from
    ``reader`` (HTTP/1.x)."""
    status, reason, headers, keep = _read_head(reader)
    framing = _framing(headers, method, status)
    if framing == "none":
        content = b""
    elif framing == "chunked":
        content = b"".join(_chunks(reader))
    elif framing == "length":
        try:
            length = int(headers[b"content-length"])
        except ValueError:
            raise ConnectionError(f"bad Content-Length: {headers[b'content-length'][:40]!r}") from None
        content = reader.read(length)
        if len(content) != length:
            raise ConnectionResetError(f"the answer was cut short ({len(content)} of {length} bytes)")
    else:
        content, keep = reader.read(), False  # delimited by the end of the connection
    return status, reason, _decoded(content, headers), keep, headers


def _read_head(reader: Any) -> tuple[int, str, dict[bytes, bytes], bool]:
    """Status, reason, header fields and whether HTTP lets the connection be kept, skipping 1xx answers."""
    while True:
        line = reader.readline(_MAX_LINE + 1)
        if not line:
            raise ConnectionResetError("the server closed the connection without answering")
        version, _, rest = line.rstrip(b"\r\n").partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ConnectionError(f"not an HTTP answer: {line[:80]!r}")
        status = int(code)
        headers = _read_headers(reader)
        if status >= 200 or status == 101:
            break  # 1xx answers (100 Continue, 103 Early Hints) come before the real one
    keep = version == b"HTTP/1.1" and b"close" not in headers.get(b"connection", b"").lower()
    return status, reason.decode("latin-1"), headers, keep


def _framing(headers: Mapping[bytes, bytes], method: str, status: int) -> str:
    """How the body ends: ``none``, ``chunked``, ``length`` or ``close`` (the end of the connection)."""
    if method == "HEAD" or status in (204, 304) or status < 200:
        return "none"
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        return "chunked"
    return "length" if b"content-length" in headers else "close"


def _decoded(content: bytes, headers: Mapping[bytes, bytes]) -> bytes:
    encoding = headers.get(b"content-encoding", b"identity").strip().lower()
    if encoding in (b"gzip", b"x-gzip", b"deflate"):
        try:
            return zlib.decompress(content, 47)  # 32 + 15: a gzip or zlib header, found by itself
        except zlib.error as exc:
            raise ConnectionError(f"an answer encoded {encoding.decode()} could not be decoded: {exc}") from None
    if encoding != b"identity":
        raise ConnectionError(f"an answer in an encoding not asked for: {encoding[:40]!r}")
    return content


def _read_headers(reader: Any) -> dict[bytes, bytes]:
    """The header fields up to the blank line, names lowercased (a repeated field keeps its values, comma-joined)."""
    headers: dict[bytes, bytes] = {}
    for _ in range(_MAX_HEADERS):
        line = reader.readline(_MAX_LINE + 1)
        if line in (b"\r\n", b"\n"):
            return headers
        if not line or len(line) > _MAX_LINE:
            raise ConnectionError("the answer's headers were cut short or too long")
        name, sep, value = line.partition(b":")
        if not sep:
            raise ConnectionError(f"not a header field: {line[:80]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = headers[name] + b", " + value if name in headers else value
    raise ConnectionError(f"more than {_MAX_HEADERS} header fields in an answer")


def _chunks(reader: Any) -> Iterator[bytes]:
    """The chunks of a chunked body as they arrive, up to the last one (and past its trailer)."""
    while True:
        line = reader.readline(_MAX_LINE + 1)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ConnectionResetError(
                f"the answer was cut short or is not chunked as it says: {line[:40]!r}"
            ) from None
        if size == 0:
            _read_headers(reader)  # the trailer, up to its blank line
            return
        chunk = reader.read(size + 2)
        if len(chunk) != size + 2:
            raise ConnectionResetError("the answer was cut short inside a chunk")
        yield chunk[:size]
