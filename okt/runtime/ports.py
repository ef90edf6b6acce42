"""Ports bound before they are served.

A port another process holds is found only by binding it, and ``okt run`` says a mistake found before the operator
serves in one line. Bound as its server was made, in the manager's start, the metrics port was found held once the
version line was printed, and the webhook port once the probes were served and had said so. :func:`listen` binds a
port before anything is said; the server is then made on that socket (:func:`serve_on`), so no other process can take
the port between the check and the serving, as it could if the check bound the port and closed it again.
"""

from __future__ import annotations

import socket
import socketserver


def listen(host: str, port: int, backlog: int) -> socket.socket:
    """A socket bound to ``host:port`` (an IPv6 address when ``host`` has a ``:``; port 0: a free one) and listening,
    with up to ``backlog`` connections waiting to be accepted; bound as :mod:`http.server` binds one
    (``SO_REUSEADDR``: a restarted operator binds its port at once, its former connections still closing).

    Raises:
        OSError: the port cannot be bound (held by another process, an address not of this host).
    """
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(backlog)
    except BaseException:
        listener.close()
        raise
    return listener


def serve_on(server: socketserver.TCPServer, listener: socket.socket) -> None:
    """Make ``server``, made with ``bind_and_activate=False``, serve the connections of ``listener`` (see
    :func:`listen`): it takes the socket over, and closes it when it is closed."""
    server.socket.close()  # the one it made for itself, never bound
    server.socket = listener
    server.server_address = listener.getsockname()
