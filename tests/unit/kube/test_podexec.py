"""How an exec reads the stream the API server sends: the exit code comes from the error channel's Status, and a
stream that ends without that Status is a broken exec, never a success.

A scripted server on loopback (plain HTTP) accepts the websocket upgrade as the API server does
(``v4.channel.k8s.io``), sends the frames a test gives, then closes the connection.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import podexec
from tests.unit.kube import loopback

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CLOSE = b"\x88\x00"
"""A close frame without a body, as the server sends it."""


def frame(channel: int, data: bytes) -> bytes:
    """One binary frame of ``channel`` (a server's frames are not masked)."""
    payload = bytes([channel]) + data
    if len(payload) < 126:
        return bytes([0x82, len(payload)]) + payload
    return bytes([0x82, 126]) + len(payload).to_bytes(2, "big") + payload


def status(**fields: object) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, **fields}).encode()


class UpgradingServer:
    """Answers one websocket upgrade, sends ``frames``, and closes the connection."""

    def __init__(self, frames: bytes) -> None:
        self.frames = frames
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        with conn:
            reader = conn.makefile("rb")
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = reader.readline()
                if not line:
                    return
                head += line
            key = next(
                line.split(b":", 1)[1].strip()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key")
            )
            accept = base64.b64encode(hashlib.sha1(key + _GUID.encode()).digest()).decode()
            conn.sendall(
                (
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: {podexec.PROTOCOLS[0]}\r\n\r\n"
                ).encode()
                + self.frames
            )
            reader.close()

    def close(self) -> None:
        self._listener.close()


ExecAgainst = Callable[[bytes], podexec.ExecResult]


@pytest.fixture
def exec_against() -> Iterator[ExecAgainst]:
    opened: list[tuple[UpgradingServer, kube_client.Client]] = []

    def run(frames: bytes) -> podexec.ExecResult:
        server = UpgradingServer(frames)
        client = loopback.client_for(server.port)
        opened.append((server, client))
        return podexec.run(client, "ns", "web", "web", ["backup"], timeout=10)

    yield run
    for server, client in opened:
        client.close()
        server.close()


EXIT_3 = status(
    status="Failure",
    reason="NonZeroExitCode",
    message="command terminated with non-zero exit code: error executing command [backup], exit code 3",
    details={"causes": [{"reason": "ExitCode", "message": "3"}]},
)


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        (frame(1, b"done\n") + frame(3, status(status="Success")) + CLOSE, okt.ExecResult("done\n", "", 0)),
        (frame(1, b"half\n") + frame(2, b"oops\n") + frame(3, EXIT_3) + CLOSE, okt.ExecResult("half\n", "oops\n", 3)),
    ],
    ids=["success", "non-zero exit"],
)
def test_the_exit_code_is_the_one_the_error_channel_reports(
    exec_against: ExecAgainst, frames: bytes, expected: podexec.ExecResult
) -> None:
    assert exec_against(frames) == expected


@pytest.mark.parametrize(
    "frames",
    [frame(1, b"half of the backup\n"), frame(1, b"half of the backup\n") + CLOSE],
    ids=["connection dropped", "closed"],
)
def test_a_stream_that_ends_before_the_commands_status_raises_remote_error(
    exec_against: ExecAgainst, frames: bytes
) -> None:
    with pytest.raises(okt.RemoteError, match=r"exec in pod ns/web container web: .*ended"):
        exec_against(frames)


class Recorder:
    """A server that keeps what each connection to it sends."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    self.received.append(conn.recv(65536))

    def close(self) -> None:
        self._listener.close()


def test_a_redirect_answered_to_the_upgrade_is_the_answer_and_is_not_followed() -> None:
    """Followed, the exec would go to wherever the answer points — with the client's credentials, over a connection
    the write fence was never asked for."""
    elsewhere = Recorder()
    listener = socket.create_server(("127.0.0.1", 0))

    def redirect() -> None:
        conn, _ = listener.accept()
        with conn:
            reader = conn.makefile("rb")
            while reader.readline() not in (b"\r\n", b""):
                pass
            location = f"ws://127.0.0.1:{elsewhere.port}/collect"
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())
            reader.close()

    threading.Thread(target=redirect, daemon=True).start()
    client = loopback.client_for(listener.getsockname()[1])
    try:
        with pytest.raises(okt.ApiError, match=r"exec in pod ns/web container web: .*302"):
            podexec.run(client, "ns", "web", "web", ["backup"], timeout=10)
    finally:
        client.close()
        listener.close()
        elsewhere.close()
    assert elsewhere.received == []


def test_a_pod_name_from_the_custom_resource_never_leaves_the_pods_exec_path() -> None:
    """Escaped, a ``/`` would still be decoded by the API server: such a name is refused before it goes into a path."""
    with pytest.raises(okt.InvalidSpec, match=r"Pod name 'web-0/\.\./.*': an object's name may not be"):
        podexec.exec_path("team-a", "web-0/../../../secrets/db", None, ["true"])


@pytest.mark.parametrize("namespace", ["team-a/secrets/db?", "elsewhere/../team-a"])
def test_a_namespace_that_is_no_namespaces_name_never_goes_into_an_exec_path(namespace: str) -> None:
    with pytest.raises(okt.InvalidSpec, match="not a valid namespace name"):
        podexec.exec_path(namespace, "web-0", None, ["true"])


@pytest.mark.parametrize("command", ["redis-cli -a hunter2 BGSAVE", b"redis-cli -a hunter2 BGSAVE"])
def test_a_command_given_as_one_string_is_refused_without_its_text(command: object) -> None:
    """The error's text goes to the log, the Ready condition and an Event: a command line often holds a password."""
    with pytest.raises(TypeError) as refused:
        podexec.run(None, "ns", "web", "web", command, timeout=10)  # type: ignore[arg-type]

    assert "hunter2" not in str(refused.value)
    assert "of 27 characters (its text left out): an exec takes an argument list" in str(refused.value)


@pytest.mark.parametrize("command", ["redis-cli BGSAVE", b"redis-cli"])
def test_a_command_given_as_one_string_is_refused_before_anything_is_sent(command: object) -> None:
    """A ``str`` is a sequence of strings too: run as given, each character would be an argument (``r``, ``e``, ...),
    and the exec would run ``r`` and report exit code 126 — with no word of the mistake."""
    server = Recorder()
    client = loopback.client_for(server.port)
    try:
        with pytest.raises(TypeError, match=r"an argument list.*\['sh', '-c', \.\.\.\]"):
            podexec.run(client, "ns", "web", "web", command, timeout=10)  # type: ignore[arg-type]
    finally:
        client.close()
        server.close()
    assert server.received == []
