"""A path on the operand stays on the operand: no dot segment climbs out of the API server's proxy subresource.

The client here reaches the API server through an HTTPS proxy (``HTTPS_PROXY``): its requests take the session,
whose URL handling resolves dot segments before anything is sent, as any HTTP client or intermediary may.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import operand_http
from okt.testing import envtest

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def connect_proxy() -> Iterator[str]:
    """A forward proxy that tunnels each ``CONNECT`` to its address; yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def tunnel(conn: socket.socket) -> None:
        with conn:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                chunk = conn.recv(1)
                if not chunk:
                    return
                head += chunk
            host, port = head.split()[1].decode().rsplit(":", 1)
            with socket.create_connection((host, int(port))) as upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                while True:
                    ready, _, _ = select.select([conn, upstream], [], [])
                    for source in ready:
                        data = source.recv(65536)
                        if not data:
                            return
                        (upstream if source is conn else conn).sendall(data)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=tunnel, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


@pytest.mark.parametrize(
    "path", ["../../../secrets/keys", "/a/../../../../secrets/keys", "%2e%2e/%2E%2E/../secrets/keys"]
)
def test_dot_segments_in_an_operand_path_never_reach_another_resource(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keys", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": "hunter2"}})
    with connect_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
        try:
            with pytest.raises(errors.HttpError) as raised:
                operand_http.call(client, operand_http.Target("services", "web", namespace), path, port=80)
        finally:
            client.close()

    assert raised.value.status == 404
    assert 'services \\"web\\" not found' in raised.value.body
