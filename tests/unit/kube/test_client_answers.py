"""How the client reads answers a server may give but a healthy control plane rarely does: throttled, cut short.

A scripted server on loopback (plain HTTP) answers the n-th request with the bytes a test gives, then closes the
connection; the client under test is an ordinary :class:`okt.kube.client.Client` built from a kubeconfig naming it.
"""

from __future__ import annotations

import gzip
import json
import math
import pathlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds
from okt.runtime import certs
from tests.unit.kube import loopback

CONFIG_MAP = kinds.BUILTIN[("v1", "ConfigMap")]

Answer = bytes | Callable[[], bytes]


class ScriptedServer:
    """Answers the n-th request with ``answers[n]`` (bytes, or a function giving them when the request came) on a
    connection of its own, and records each request's head."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.hold: threading.Event | None = None
        """Set: each connection is closed only once it is (an answer that ends with the connection goes on)."""
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
                reader = conn.makefile("rb")
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        break
                    head += line
                if not head:
                    continue
                self.requests.append(head)
                answer = self.answers[len(self.requests) - 1]
                conn.sendall(answer() if callable(answer) else answer)
                if self.hold is not None:
                    self.hold.wait(60)
                reader.close()

    def close(self) -> None:
        self._listener.close()


Start = Callable[..., tuple[ScriptedServer, kube_client.Client]]


@pytest.fixture
def start(tmp_path: pathlib.Path) -> Iterator[Start]:
    opened: list[tuple[ScriptedServer, kube_client.Client]] = []

    def run(
        answers: list[Answer],
        *,
        user: dict[str, str] | None = None,
        cluster: dict[str, object] | None = None,
        **options: object,
    ) -> tuple[ScriptedServer, kube_client.Client]:
        server = ScriptedServer(answers)
        client = loopback.client_for(server.port, user=user, cluster=cluster, **options)
        opened.append((server, client))
        return server, client

    yield run
    for server, client in opened:
        client.close()
        server.close()


def answer(status: str, body: bytes, *headers: str) -> bytes:
    fields = "".join(f"{field}\r\n" for field in headers)
    return f"HTTP/1.1 {status}\r\n{fields}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


OK = answer(
    "200 OK", b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}', "Content-Type: application/json"
)
THROTTLED = answer(
    "429 Too Many Requests",
    b"Too many requests, please try again later.\n",
    "Content-Type: text/plain; charset=utf-8",
    "Retry-After: 7",
)
"""What the API server's priority and fairness answers a request it rejects: a text body, the wait in the header."""


def test_a_throttled_request_waits_the_retry_after_the_server_gives_in_its_header(start: Start) -> None:
    _, client = start([THROTTLED])

    with pytest.raises(okt.TooManyRequests) as raised:
        client.get(CONFIG_MAP, "a", "default")

    assert raised.value.retry_after == 7.0


def test_a_throttled_list_waits_the_retry_after_the_server_gives_in_its_header(start: Start) -> None:
    _, client = start([THROTTLED])

    with pytest.raises(okt.TooManyRequests) as raised:
        client.list(CONFIG_MAP, "default")

    assert raised.value.retry_after == 7.0


def test_a_throttled_watch_waits_the_retry_after_the_server_gives_in_its_header(start: Start) -> None:
    _, client = start([THROTTLED])

    with pytest.raises(okt.TooManyRequests) as raised:
        next(iter(client.watch(CONFIG_MAP, "default", resource_version="1")))

    assert raised.value.retry_after == 7.0


def test_a_retry_after_in_the_status_is_taken_as_well(start: Start) -> None:
    status = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,'
    status += b'"details":{"retryAfterSeconds":4}}'
    _, client = start([answer("429 Too Many Requests", status, "Content-Type: application/json", "Retry-After: 4")])

    with pytest.raises(okt.TooManyRequests) as raised:
        client.get(CONFIG_MAP, "a", "default")

    assert raised.value.retry_after == 4.0


def test_a_watch_refused_with_an_answer_cut_short_is_an_api_error(start: Start) -> None:
    cut = b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 90\r\n\r\n"
    _, client = start([cut + b'{"kind":"Status","apiVersion":"v1"'])

    with pytest.raises(okt.errors.Unavailable):
        next(iter(client.watch(CONFIG_MAP, "default", resource_version="1")))


class FrozenClock:
    def __call__(self) -> float:
        return 0.0


def test_a_request_sent_again_with_a_renewed_token_waits_its_turn_in_the_rate_limit(
    start: Start, tmp_path: pathlib.Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first")

    def rotated_then_refused() -> bytes:
        token.write_text("second")
        return answer("401 Unauthorized", b"", "Content-Type: application/json")

    limit = kube_client.RateLimit(qps=1000, burst=1, clock=FrozenClock())
    server, client = start([rotated_then_refused, OK], rate_limit=limit, token_file=token)

    client.get(CONFIG_MAP, "a", "default")

    assert [b"Bearer second" in head for head in server.requests] == [False, True]
    # Both requests took their token from the bucket: the next one waits for a third (the clock stands still).
    assert limit.reserve() == pytest.approx(2 / 1000)


def test_a_watch_whose_answer_ends_with_the_connection_gives_each_event_as_it_arrives(start: Start) -> None:
    """A server or proxy may stream without chunks (no length, the end of the connection ends the answer): each
    event must still be handed out when it arrives, not once the stream ends."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    event = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}\n'
    server, client = start([head + event])
    release = server.hold = threading.Event()
    received: list[dict[str, object]] = []
    arrived = threading.Event()

    def read() -> None:
        for got in client.watch(CONFIG_MAP, "default", resource_version="1"):
            received.append(got)
            arrived.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert arrived.wait(30), "the event was not handed out while the stream was open"
    finally:
        release.set()
    reader.join(30)
    assert [got["type"] for got in received] == ["ADDED"]


INVALID_FINALIZER = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \\"a\\" is invalid: '
    b'metadata.finalizers: Invalid value: \\"example.com/clean up\\": name part must consist of alphanumeric '
    b'characters","reason":"Invalid","details":{"name":"a","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid",'
    b'"message":"Invalid value: \\"example.com/clean up\\": name part must consist of alphanumeric characters",'
    b'"field":"metadata.finalizers"},{"reason":"FieldValueRequired","message":"Required value",'
    b'"field":"metadata.labels"}]},"code":422}'
)
"""What the API server answers a patch adding a finalizer it refuses (its message shortened), a second cause added."""


def test_the_causes_of_a_refused_request_are_kept_on_the_error(start: Start) -> None:
    _, client = start([answer("422 Unprocessable Entity", INVALID_FINALIZER, "Content-Type: application/json")])

    with pytest.raises(okt.Invalid) as raised:
        client.patch(
            CONFIG_MAP,
            "a",
            [{"op": "add", "path": "/metadata/finalizers/-", "value": "x"}],
            "default",
            patch_type="json",
        )

    assert raised.value.causes == (
        okt.errors.StatusCause(
            "FieldValueInvalid",
            'Invalid value: "example.com/clean up": name part must consist of alphanumeric characters',
            "metadata.finalizers",
        ),
        okt.errors.StatusCause("FieldValueRequired", "Required value", "metadata.labels"),
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server rejected our request due to an '
        b'error in our request","reason":"Invalid","details":{},"code":422}',
        b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422}',
        b"not a Status",
    ],
    ids=["empty-details", "no-details", "text"],
)
def test_a_refusal_without_causes_has_none(start: Start, body: bytes) -> None:
    _, client = start([answer("422 Unprocessable Entity", body, "Content-Type: application/json")])

    with pytest.raises(okt.Invalid) as raised:
        client.patch(
            CONFIG_MAP,
            "a",
            [{"op": "add", "path": "/metadata/finalizers/-", "value": "x"}],
            "default",
            patch_type="json",
        )

    assert raised.value.causes == ()


def test_a_value_server_side_apply_quotes_in_a_cause_is_left_out_as_in_the_message(start: Start) -> None:
    quoted = b"&value.valueUnstructured{Value:987654}"
    body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":".data.pin: '
    body += b"expected string, got " + quoted + b'","details":{"causes":[{"reason":"FieldValueTypeInvalid",'
    body += b'"message":"expected string, got ' + quoted + b'","field":".data.pin"}]}}'
    _, client = start([answer("422 Unprocessable Entity", body, "Content-Type: application/json")])

    with pytest.raises(okt.Invalid) as raised:
        client.get(CONFIG_MAP, "a", "default")

    assert raised.value.causes == (
        okt.errors.StatusCause("FieldValueTypeInvalid", "expected string, got a value (left out)", ".data.pin"),
    )


@pytest.mark.parametrize("patch_type", ["merge", "apply"])
def test_a_body_holding_a_number_json_cannot_write_is_refused_before_anything_is_sent(
    start: Start, patch_type: str
) -> None:
    _, client = start([OK])
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"ratio": math.nan}}

    with pytest.raises(ValueError, match="not JSON compliant"):
        client.patch(CONFIG_MAP, "a", body, "default", patch_type=patch_type, field_manager="okt")

    assert client.stats.snapshot() == {}
    assert client.get(CONFIG_MAP, "a", "default")["metadata"]["name"] == "a"  # the server's one answer still unused


def test_a_write_sent_again_with_a_renewed_token_waits_no_longer_than_its_fence_allowed_the_first(
    start: Start, tmp_path: pathlib.Path
) -> None:
    """The fence bounds the write's whole wait, not each sending of it: sent once more after a 401, it waits only what
    is left, and ends without an answer it would have waited for past the fence's time."""
    token = tmp_path / "token"
    token.write_text("first")

    def rotated_then_refused_late() -> bytes:
        time.sleep(1.5)
        token.write_text("second")
        return answer("401 Unauthorized", b"", "Content-Type: application/json")

    def created_late() -> bytes:
        time.sleep(1.0)
        return OK

    server, client = start([rotated_then_refused_late, created_late], token_file=token)
    fence = fence_mod.Fence(lambda verb, resource: None, lambda: 2.0)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}

    with pytest.raises(okt.errors.Unavailable), fence_mod.fenced(fence):
        client.create(body, CONFIG_MAP)

    assert [b"Bearer second" in head for head in server.requests] == [False, True]


def _list_answer(names: list[str], gzipped: bool) -> bytes:
    body = json.dumps(
        {
            "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": n}} for n in names],
        }
    ).encode()
    if gzipped:
        return answer("200 OK", gzip.compress(body), "Content-Type: application/json", "Content-Encoding: gzip")
    return answer("200 OK", body, "Content-Type: application/json")


def _accepted_encoding(head: bytes) -> str:
    fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
    return fields.get(b"Accept-Encoding", b"").decode()


def test_a_list_is_answered_gzipped_if_the_server_likes_unless_the_kubeconfig_disables_compression(
    start: Start,
) -> None:
    server, client = start([_list_answer(["a", "b"], gzipped=True)])
    assert client.compression
    assert [item["metadata"]["name"] for item in client.list(CONFIG_MAP, "default")[0]] == ["a", "b"]
    assert "gzip" in _accepted_encoding(server.requests[0])

    server, client = start([_list_answer(["a", "b"], gzipped=False)], cluster={"disable-compression": True})
    assert not client.compression
    assert [item["metadata"]["name"] for item in client.list(CONFIG_MAP, "default")[0]] == ["a", "b"]
    assert _accepted_encoding(server.requests[0]) == "identity"


def test_compression_asked_of_the_client_overrides_the_kubeconfig(start: Start) -> None:
    server, client = start(
        [_list_answer(["a"], gzipped=False)], cluster={"disable-compression": False}, compression=False
    )
    client.list(CONFIG_MAP, "default")
    assert _accepted_encoding(server.requests[0]) == "identity"


@pytest.mark.parametrize("value", ["true", 1])
def test_a_disable_compression_that_is_not_a_boolean_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(okt.ConfigurationError, match="disable-compression must be true or false"):
        loopback.client_for(1, cluster={"disable-compression": value})


def test_the_in_cluster_client_asks_for_answers_uncompressed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "namespace").write_text("default")
    (tmp_path / "ca.crt").write_bytes(certs.self_signed().ca_pem)  # loaded when the client is made
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    client = kube_client.Client.in_cluster(tmp_path)
    try:
        assert not client.compression
    finally:
        client.close()
    client = kube_client.Client.in_cluster(tmp_path, compression=True)
    try:
        assert client.compression
    finally:
        client.close()


PAGE_NOT_FOUND = answer("404 Not Found", b"404 page not found\n", "Content-Type: text/plain; charset=utf-8")
OBJECT_NOT_FOUND = answer(
    "404 Not Found",
    json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "code": 404,
            "message": 'configmaps "a" not found',
        }
    ).encode(),
    "Content-Type: application/json",
)


def test_a_404_with_no_status_is_a_path_not_served_never_an_object_gone(start: Start) -> None:
    _, client = start([PAGE_NOT_FOUND, PAGE_NOT_FOUND, PAGE_NOT_FOUND])
    with pytest.raises(okt.NotServed, match="404 page not found"):
        client.get_or_none(CONFIG_MAP, "a", "default")
    with pytest.raises(okt.NotServed):
        client.delete(CONFIG_MAP, "a", "default")
    with pytest.raises(okt.NotFound):  # still a NotFound to code asking whether a kind is served
        client.get(CONFIG_MAP, "a", "default")


def test_a_404_status_is_the_object_gone(start: Start) -> None:
    _, client = start([OBJECT_NOT_FOUND, OBJECT_NOT_FOUND])
    assert client.get_or_none(CONFIG_MAP, "a", "default") is None
    assert client.delete(CONFIG_MAP, "a", "default") is False
