"""A forward proxy for tests of what okt sends through one: it tunnels each ``CONNECT`` and keeps the targets it was
asked for.

Why this exists: a client's proxy settings (``HTTPS_PROXY``, a kubeconfig's ``proxy-url``) decide which connections
go through it; a test reads that in :attr:`ConnectProxy.targets`. The TLS of each tunnelled connection passes through
untouched (the fault proxy of :mod:`okt.testing.faults` ends TLS itself).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator


class ConnectProxy:
    """Tunnels each ``CONNECT`` to the address it names, or to ``upstream`` when given (whatever the request names:
    a host only this proxy resolves), keeping the targets asked for, one per tunnelled connection."""

    def __init__(self, upstream: tuple[str, int] | None = None) -> None:
        self._upstream = upstream
        self.targets: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

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
        with conn:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                chunk = conn.recv(1)
                if not chunk:
                    return
                head += chunk
            method, target = head.split()[:2]
            if method != b"CONNECT":
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            with self._lock:
                self.targets.append(target.decode())
            host, port = target.decode().rsplit(":", 1)
            with socket.create_connection(self._upstream or (host, int(port))) as upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                while True:
                    ready, _, _ = select.select([conn, upstream], [], [])
                    for source in ready:
                        data = source.recv(65536)
                        if not data:
                            return
                        (upstream if source is conn else conn).sendall(data)


@contextlib.contextmanager
def connect_proxy(upstream: tuple[str, int] | None = None) -> Iterator[ConnectProxy]:
    """A :class:`ConnectProxy`, closed on exit."""
    proxy = ConnectProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
