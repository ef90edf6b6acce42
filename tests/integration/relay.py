"""A TCP relay to the API server that can hold a connection, or the bytes a client sends, until told to proceed.

Why this exists: the write fence is asked as a write leaves the process, and once more when its connection is made;
a stopping leader waits for the writes still on the wire. Testing either needs a request held between the client and
the API server, with the TLS of the client's own connection passed through untouched (the fault proxy of
:mod:`okt.testing.faults` ends TLS itself, and answers at the HTTP level).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.parse


class Relay:
    """Relays every connection to ``upstream`` (the API server's URL).

    With ``hold_connections``, each new connection waits before it reaches the API server (its TLS handshake waits,
    :attr:`connected` is set) until :attr:`proceed` is set — a connection to a server under load takes its time.
    Once :attr:`hold` is set, the bytes a client sends are held (:attr:`held` is set) until :attr:`proceed` is set —
    a request on the wire that the API server has not received yet.
    """

    def __init__(self, upstream: str, *, hold_connections: bool = False) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self._hold_connections = hold_connections
        self.connected = threading.Event()
        self.hold = threading.Event()
        self.held = threading.Event()
        self.proceed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._listener.getsockname()[1]}"

    def close(self) -> None:
        self.proceed.set()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        if self._hold_connections:
            self.connected.set()
            self.proceed.wait()
        upstream = socket.create_connection(self._upstream)
        self._sockets.append(upstream)
        threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, outbound: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if outbound and self.hold.is_set():
                    self.held.set()
                    self.proceed.wait()
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)
