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
import datetime
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
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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
    plane: envtest.ControlPlane,
    directory: pathlib.Path,
    scheme: str,
    *,
    trusted: bool = True,
    server_name: str | None = "kubernetes",
    proxy_hosts: tuple[str, ...] | None = None,
    client_ca: bytes | None = None,
    user: dict[str, str] | None = None,
) -> Iterator[tuple[ConnectProxy, pathlib.Path]]:
    """A proxy of ``scheme`` tunnelling every connection to ``plane``'s API server, and the admin's kubeconfig whose
    cluster is reached through it: with ``server_name`` (its ``tls-server-name``, a name the API server's
    certificate holds) the server is a name only the proxy resolves (``.invalid`` never does); without, the server
    is the API server's own address.

    An ``https`` proxy's certificate is of a CA of its own, which the cluster's ``certificate-authority`` holds
    beside the API server's (kubectl checks an https proxy against the same CAs) unless ``trusted`` is false. It is
    valid for ``proxy_hosts``: by default the name kubectl checks it for, ``server_name`` when set (Go's
    ``net/http`` dials an https proxy with the cluster's TLS settings), else the proxy's address. With
    ``client_ca``, the proxy asks for a client certificate that CA signed and refuses a client without one;
    ``user``: fields added to the kubeconfig's user (a client certificate, see :func:`client_certificate`).
    """
    parts = urllib.parse.urlsplit(plane.url)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
    hosts = proxy_hosts or ((server_name,) if server_name else ("127.0.0.1",))
    proxy_certificate = certs.self_signed(hosts)
    proxy_ca = proxy_certificate.ca_pem if trusted else certs.self_signed(hosts).ca_pem
    if scheme == "socks5":
        proxy: ConnectProxy = Socks5Proxy(upstream)
    else:
        tls = proxy_certificate.server_context() if scheme == "https" else None
        if tls is not None and client_ca is not None:
            tls.verify_mode = ssl.CERT_REQUIRED
            tls.load_verify_locations(cadata=client_ca.decode())
        proxy = ConnectProxy(upstream, tls=tls)
    try:
        cas = directory / "ca.crt"
        cas.write_bytes(plane.ca_file.read_bytes() + proxy_ca)
        doc = yaml.safe_load(plane.kubeconfig.read_text())
        cluster = doc["clusters"][0]["cluster"]
        cluster.update({"proxy-url": proxy.url, "certificate-authority": str(cas)})
        if server_name:
            cluster.update({"server": f"https://api.okt.invalid:{parts.port}", "tls-server-name": server_name})
        doc["users"][0]["user"].update(user or {})
        kubeconfig = directory / "kubeconfig"
        envtest.write_private(kubeconfig, yaml.safe_dump(doc))
        yield proxy, kubeconfig
    finally:
        proxy.close()


def client_certificate(directory: pathlib.Path, ca: str = "proxy clients' CA") -> tuple[bytes, dict[str, str]]:
    """A new CA (PEM) named ``ca`` and a client certificate it signed, written with its key to ``directory``: the
    kubeconfig user's ``client-certificate`` and ``client-key`` fields. (The control plane asks for no client
    certificate: the user's token still says who it is.) A server trusting two such CAs needs them named apart."""
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a proxy's client")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "client.crt", directory / "client.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    private = serialization.PrivateFormat.PKCS8
    envtest.write_private(
        key_file, key.private_bytes(serialization.Encoding.PEM, private, serialization.NoEncryption()).decode()
    )
    return ca.public_bytes(serialization.Encoding.PEM), {
        "client-certificate": str(cert_file),
        "client-key": str(key_file),
    }
