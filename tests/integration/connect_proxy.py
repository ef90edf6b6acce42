"""Forward proxies for tests of what okt sends through one: each tunnels the connections it is asked for and keeps the
targets it was asked for.

Why this exists: a client's proxy settings (``HTTPS_PROXY``, a kubeconfig's ``proxy-url``) decide which connections
go through it; a test reads that in :attr:`ConnectProxy.targets`. The TLS of each tunnelled connection passes through
untouched (the fault proxy of :mod:`okt.testing.faults` ends TLS itself); an ``https://`` proxy's own TLS, around
the tunnel, is the proxy's. Two ways of asking: HTTP ``CONNECT`` (:class:`ConnectProxy`, served over TLS too) and
SOCKS5 (:class:`Socks5Proxy`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import pathlib
import select
import socket
import ssl
import struct
import threading
import urllib.parse
from collections.abc import Iterator

import yaml

from okt.runtime import certs
from okt.testing import envtest


class ConnectProxy:
    """Tunnels each ``CONNECT`` to the address it names, or to ``upstream`` when given (whatever the request names:
    a host only this proxy resolves), keeping the targets asked for, one per tunnelled connection.

    ``tls``: served over TLS with that context (an ``https://`` proxy), the tunnelled TLS then inside it."""

    def __init__(self, upstream: tuple[str, int] | None = None, *, tls: ssl.SSLContext | None = None) -> None:
        self._upstream = upstream
        self._tls = tls
        self.targets: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def scheme(self) -> str:
        return "http" if self._tls is None else "https"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._port}"

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        try:
            if self._tls is not None:
                conn = self._tls.wrap_socket(conn, server_side=True)
            target = self._asked(conn)
            if target is None:
                return
            with self._lock:
                self.targets.append(target)
            host, port = target.rsplit(":", 1)
            with socket.create_connection(self._upstream or (host.strip("[]"), int(port))) as upstream:
                self._granted(conn)
                _relay(conn, upstream)
        except OSError:
            return  # a client that did not trust this proxy's certificate, or a side that went away
        finally:
            conn.close()

    def _asked(self, conn: socket.socket) -> str | None:
        """The ``host:port`` the client asks a tunnel to, or None (refused, or the client went away)."""
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            chunk = conn.recv(1)
            if not chunk:
                return None
            head += chunk
        method, target = head.split()[:2]
        if method != b"CONNECT":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return None
        return target.decode()

    def _granted(self, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")


class Socks5Proxy(ConnectProxy):
    """A SOCKS5 proxy (RFC 1928: no authentication, ``CONNECT`` only) tunnelling as :class:`ConnectProxy` does; a
    target asked by name is kept as that name (the client left resolving it to the proxy)."""

    @property
    def scheme(self) -> str:
        return "socks5"

    def _asked(self, conn: socket.socket) -> str | None:
        greeting = _exactly(conn, 2)
        if greeting is None or greeting[0] != 5 or _exactly(conn, greeting[1]) is None:
            return None
        conn.sendall(b"\x05\x00")  # no authentication
        request = _exactly(conn, 4)
        if request is None or request[:3] != b"\x05\x01\x00":
            conn.sendall(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
            return None
        kind = request[3]
        if kind == 1:
            address = _exactly(conn, 4)
            host = str(ipaddress.IPv4Address(address)) if address else None
        elif kind == 4:
            address = _exactly(conn, 16)
            host = f"[{ipaddress.IPv6Address(address)}]" if address else None
        else:
            length = _exactly(conn, 1)
            name = _exactly(conn, length[0]) if length else None
            host = name.decode() if name is not None else None
        port = _exactly(conn, 2)
        if host is None or port is None:
            return None
        return f"{host}:{struct.unpack('>H', port)[0]}"

    def _granted(self, conn: socket.socket) -> None:
        conn.sendall(b"\x05\x00\x00\x01" + bytes(6))


def _exactly(conn: socket.socket, count: int) -> bytes | None:
    """``count`` bytes read from ``conn``, or None when it ended first."""
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _relay(conn: socket.socket, upstream: socket.socket) -> None:
    """Copy each side's bytes to the other until one ends. What a TLS socket has already decrypted is not seen by
    ``select``: it is read before waiting again."""
    while True:
        ready, _, _ = select.select([conn, upstream], [], [])
        for source in ready:
            data = source.recv(65536)
            while isinstance(source, ssl.SSLSocket) and source.pending():
                data += source.recv(source.pending())
            if not data:
                return
            (upstream if source is conn else conn).sendall(data)


@contextlib.contextmanager
def connect_proxy(
    upstream: tuple[str, int] | None = None, *, tls: ssl.SSLContext | None = None
) -> Iterator[ConnectProxy]:
    """A :class:`ConnectProxy` (over TLS with ``tls``), closed on exit."""
    proxy = ConnectProxy(upstream, tls=tls)
    try:
        yield proxy
    finally:
        proxy.close()


SCHEMES = ("http", "https", "socks5")
"""The schemes of a kubeconfig's ``proxy-url`` (kubectl's), which :func:`proxied_kubeconfig` serves."""


@contextlib.contextmanager
def proxied_kubeconfig(
    plane: envtest.ControlPlane, directory: pathlib.Path, scheme: str, *, trusted: bool = True
) -> Iterator[tuple[ConnectProxy, pathlib.Path]]:
    """A proxy of ``scheme`` tunnelling every connection to ``plane``'s API server, and the admin's kubeconfig whose
    cluster is reached through it only: its server is a name only the proxy resolves (``.invalid`` never does).

    An ``https`` proxy's certificate is of a CA of its own, which the cluster's ``certificate-authority`` holds
    beside the API server's (kubectl checks an https proxy against the same CAs) unless ``trusted`` is false.
    """
    parts = urllib.parse.urlsplit(plane.url)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
    proxy_certificate = certs.self_signed(("127.0.0.1",))
    proxy_ca = proxy_certificate.ca_pem if trusted else certs.self_signed(("127.0.0.1",)).ca_pem
    if scheme == "socks5":
        proxy: ConnectProxy = Socks5Proxy(upstream)
    else:
        proxy = ConnectProxy(upstream, tls=proxy_certificate.server_context() if scheme == "https" else None)
    try:
        cas = directory / "ca.crt"
        cas.write_bytes(plane.ca_file.read_bytes() + proxy_ca)
        doc = yaml.safe_load(plane.kubeconfig.read_text())
        doc["clusters"][0]["cluster"].update(
            {
                "server": f"https://api.okt.invalid:{parts.port}",
                "tls-server-name": "kubernetes",
                "proxy-url": proxy.url,
                "certificate-authority": str(cas),
            }
        )
        kubeconfig = directory / "kubeconfig"
        envtest.write_private(kubeconfig, yaml.safe_dump(doc))
        yield proxy, kubeconfig
    finally:
        proxy.close()
