"""The direct path's HTTP/1.1: answers framed every way a server may frame them, connections kept only when they can be.

A scripted server on loopback answers each request with the bytes a test gives, and records which connection each
request came on.
"""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from okt.kube import transport

Answer = bytes | Callable[[socket.socket], None]


class ScriptedServer:
    """Answers the n-th request with ``answers[n]`` (bytes to send, or a function given the connection)."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[tuple[int, bytes]] = []
        """(connection number, the request's head and body) in the order they came."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection = 0
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            connection += 1
            threading.Thread(target=self._talk, args=(conn, connection), daemon=True).start()

    def _talk(self, conn: socket.socket, number: int) -> None:
        reader = conn.makefile("rb")
        with conn:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                self.requests.append((number, head + reader.read(length)))
                answer = self.answers[len(self.requests) - 1]
                if callable(answer):
                    answer(conn)
                    return
                conn.sendall(answer)

    def close(self) -> None:
        self._listener.close()


Serve = Callable[[list[Answer]], tuple[ScriptedServer, transport.DirectTransport]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ScriptedServer] = []
    directs: list[transport.DirectTransport] = []

    def start(answers: list[Answer]) -> tuple[ScriptedServer, transport.DirectTransport]:
        server = ScriptedServer(answers)
        direct = transport.DirectTransport(f"http://127.0.0.1:{server.port}/prefix", {"Authorization": "Bearer t"})
        servers.append(server)
        directs.append(direct)
        return server, direct

    yield start
    for direct in directs:
        direct.close()
    for server in servers:
        server.close()


def get(direct: transport.DirectTransport, path: str = "/api/v1/namespaces") -> transport.Response:
    return direct.send("GET", path, params=None, data=None, content_type="", timeout=5.0)


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a": "b"}\n'


def test_an_answer_with_a_length_is_read_and_its_connection_kept_for_the_next_request(serve: Serve) -> None:
    server, direct = serve([OK, OK])

    first, second = get(direct), get(direct)

    assert (first.status_code, first.reason, first.json()) == (200, "OK", {"a": "b"})
    assert second.json() == {"a": "b"}
    assert [number for number, _ in server.requests] == [1, 1]
    head = server.requests[0][1].decode()
    assert head.startswith("GET /prefix/api/v1/namespaces HTTP/1.1\r\n")
    assert "Authorization: Bearer t\r\n" in head and f"Host: 127.0.0.1:{server.port}\r\n" in head


def test_a_chunked_answer_is_put_together_and_a_trailer_read_past(serve: Serve) -> None:
    chunked = (
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n{"a"\r\n7;ext=1\r\n: "bc"}\r\n0\r\nX-Trailer: 1\r\n\r\n'
    )
    server, direct = serve([chunked, OK])

    answer = get(direct)

    assert (answer.status_code, answer.json()) == (201, {"a": "bc"})
    assert get(direct).json() == {"a": "b"}
    assert [number for number, _ in server.requests] == [1, 1]


def test_an_answer_ended_by_closing_the_connection_is_read_whole_and_the_connection_not_reused(serve: Serve) -> None:
    def close_delimited(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[1, 2, 3]")

    server, direct = serve([close_delimited, OK])

    assert get(direct).json() == [1, 2, 3]
    assert get(direct).json() == {"a": "b"}
    assert [number for number, _ in server.requests] == [1, 2]


def test_connection_close_is_obeyed_and_informational_answers_skipped(serve: Serve) -> None:
    closing = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    server, direct = serve([closing, OK])

    answer = get(direct)

    assert (answer.status_code, answer.reason, answer.content) == (404, "Not Found", b"{}")
    get(direct)
    assert [number for number, _ in server.requests] == [1, 2]


def test_a_connection_the_server_closed_while_idle_is_not_reused(serve: Serve) -> None:
    closed = threading.Event()

    def answer_then_close(conn: socket.socket) -> None:
        conn.sendall(OK)
        conn.shutdown(socket.SHUT_RDWR)
        closed.set()

    server, direct = serve([answer_then_close, OK])
    get(direct)
    assert closed.wait(5.0)

    assert get(direct).json() == {"a": "b"}
    assert [number for number, _ in server.requests] == [1, 2]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"cut": ', "cut short"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", "cut short"),
        (b"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP answer"),
        (b"", "closed the connection without answering"),
    ],
    ids=["length", "chunk", "not http", "nothing"],
)
def test_an_answer_cut_short_or_not_http_is_an_os_error_and_the_connection_dropped(
    serve: Serve, answer: bytes, says: str
) -> None:
    def then_close(conn: socket.socket) -> None:
        conn.sendall(answer)
        conn.shutdown(socket.SHUT_RDWR)

    server, direct = serve([then_close, OK])

    with pytest.raises(OSError, match=says):
        get(direct)
    assert get(direct).json() == {"a": "b"}
    assert [number for number, _ in server.requests] == [1, 2]


def test_no_value_in_the_path_can_end_the_request_line_or_add_a_header(serve: Serve) -> None:
    server, direct = serve([OK])

    get(direct, "/api/v1/namespaces/x y\r\nX-Injected: 1\r\n\r\nGET /other")

    head = server.requests[0][1].decode()
    assert head.startswith("GET /prefix/api/v1/namespaces/x%20y%0D%0AX-Injected:%201%0D%0A%0D%0AGET%20/other HTTP/1.1")
    assert "\r\nX-Injected" not in head


def test_a_body_is_sent_with_its_type_and_length_and_parameters_encoded(serve: Serve) -> None:
    server, direct = serve([OK])

    direct.send(
        "PATCH",
        "/apis/x/v1/things/a",
        params={"fieldManager": "okt", "labelSelector": "a=b,c in (d)"},
        data='{"spec": {}}',
        content_type="application/apply-patch+yaml",
        timeout=5.0,
    )

    head, _, body = server.requests[0][1].decode().partition("\r\n\r\n")
    assert head.startswith("PATCH /prefix/apis/x/v1/things/a?fieldManager=okt&labelSelector=a%3Db%2Cc+in+%28d%29 ")
    assert "Content-Type: application/apply-patch+yaml\r\n" in head and "Content-Length: 12" in head
    assert body == '{"spec": {}}'


def test_a_compressed_answer_is_decoded(serve: Serve) -> None:
    payload = gzip.compress(b'{"big": true}')
    answer = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload
    _, direct = serve([answer])

    assert get(direct).json() == {"big": True}


def test_each_request_carries_the_changing_token_it_is_given() -> None:
    server = ScriptedServer([OK, OK])
    direct = transport.DirectTransport(f"http://127.0.0.1:{server.port}", {"User-Agent": "t"})
    try:
        for token in ("first", "second"):
            direct.send("GET", "/api", params=None, data=None, content_type="", timeout=5.0, token=token)
    finally:
        direct.close()
        server.close()

    heads = [request.decode() for _, request in server.requests]
    assert "Authorization: Bearer first\r\n" in heads[0]
    assert "Authorization: Bearer second\r\n" in heads[1]
    assert [head.count("Authorization:") for head in heads] == [1, 1]
