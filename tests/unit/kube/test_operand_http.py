"""What ``okt.kube.operand_http.call`` refuses before anything is sent, what its errors say, when it stops waiting."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Literal

import pykube
import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import operand_http
from okt.testing import FakeClient


def nowhere() -> kube_client.Client:
    """A client of an API server at a port nothing listens on: a test asserts nothing was sent."""
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "static"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    return kube_client.Client(pykube.KubeConfig(doc))


def test_a_ca_file_on_the_proxy_route_is_refused_as_the_api_servers_hop_does_not_verify() -> None:
    client = nowhere()
    try:
        with pytest.raises(ValueError, match="direct route"):
            operand_http.call(
                client, operand_http.Target("pods", "web", "ns"), "/", port=8443, scheme="https", verify="ca.pem"
            )
    finally:
        client.close()
    assert client.stats.snapshot() == {}


@contextlib.contextmanager
def operand(answer: bytes | None) -> Iterator[int]:
    """A local operand at 127.0.0.1 answering each request with ``answer`` (``None``: never answering; ``b""``:
    closing the connection unanswered); yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                conn.recv(65536)
                conn.sendall(answer)
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in held:
            conn.close()


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port: int = listener.getsockname()[1]
    return port


def refused_client() -> kube_client.Client:
    """A client of an API server that refuses every connection."""
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{closed_port()}"}}],
        "users": [{"name": "u", "user": {"token": "static"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    return kube_client.Client(pykube.KubeConfig(doc))


FORBIDDEN = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\nConnection: close\r\n\r\ndenied"
ECHOED = b"no such page: /admin?token=s3cret&amp;user=root&amp;flag"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(ECHOED), ECHOED)


@pytest.mark.parametrize(
    ("route", "answer", "raised"),
    [
        ("direct", FORBIDDEN, errors.HttpError),
        ("direct", NOT_FOUND, errors.HttpError),
        ("direct", None, errors.RemoteTimeout),
        ("direct", b"", errors.RemoteError),
        ("proxy", b"", errors.Unavailable),  # nothing reached the operand: the API server's error, as for any request
        ("proxy-session", b"", errors.Unavailable),
    ],
    ids=[
        "answered-403",
        "answered-404-echoing-the-path",
        "no-answer-in-time",
        "closed-unanswered",
        "api-server-refused",
        "forward-proxy-refused",
    ],
)
def test_a_failed_calls_message_shows_the_querys_keys_and_none_of_its_values(
    route: str, answer: bytes | None, raised: type[errors.OktError], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token given in the query must not reach the conditions, Events and logs the message goes to. Through a
    forward proxy, the request takes ``requests``' session, whose error quotes the URL."""
    if route == "proxy-session":
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "ns"}}
    with operand(answer) as port:
        if route == "direct":
            client: kube_client.Client = FakeClient(objects=[{**pod, "status": {"podIP": "127.0.0.1"}}])
        else:
            client = refused_client()
        try:
            with pytest.raises(raised) as failed:
                operand_http.call(
                    client,
                    operand_http.Target("pods", "web", "ns"),
                    "/admin?token=s3cret&user=root&flag",
                    port=port,
                    timeout=0.5,
                    route="direct" if route == "direct" else "proxy",
                )
        finally:
            client.close()

    assert type(failed.value) is raised
    assert "/admin?token=…&user=…&…" in str(failed.value)
    assert "s3cret" not in str(failed.value)
    # Nor the log of a hook that let it through: its traceback shows every cause (a transport error quotes the URL).
    assert "s3cret" not in "".join(traceback.format_exception(failed.value))
    assert "root" not in str(failed.value)


def test_an_answers_head_trickled_past_the_timeout_raises_remote_timeout_on_the_direct_route() -> None:
    """The deadline holds from the first byte on: the head of an answer may trickle as its body may."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Padding: " + b"." * 24 + b"\r\n\r\nok"  # 0.2 s a byte: 12 s
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):  # the caller hung up
            conn.recv(65536)
            for byte in head:
                conn.sendall(bytes([byte]))
                if stop.wait(0.2):
                    return

    threading.Thread(target=trickle, daemon=True).start()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "ns"}}
    client = FakeClient(objects=[{**pod, "status": {"podIP": "127.0.0.1"}}])
    timeout = 0.5
    started = time.monotonic()
    try:
        with pytest.raises(errors.RemoteTimeout):
            operand_http.call(
                client,
                operand_http.Target("pods", "web", "ns"),
                "/",
                port=listener.getsockname()[1],
                timeout=timeout,
                route="direct",
            )
        took = time.monotonic() - started
    finally:
        stop.set()
        listener.close()

    assert took < 5 * timeout


@pytest.mark.parametrize("namespace", ["team-a/secrets/db?", "elsewhere/../team-a", "team-a/"])
def test_a_namespace_that_is_no_namespaces_name_never_goes_into_a_proxy_path(namespace: str) -> None:
    target = operand_http.Target.parse("service/web", namespace)

    with pytest.raises(errors.InvalidSpec, match="not a valid namespace name"):
        operand_http.proxy_path(target, "/stats", None, "http")


@pytest.mark.parametrize(
    "target", ["web:9999", "service/https:web", "pod/web-0:8443", "Web", "svc/web%2Fx", "svc/-web"]
)
def test_a_target_name_that_is_no_pods_or_services_name_is_refused_before_it_picks_a_port_or_a_scheme(
    target: str,
) -> None:
    with pytest.raises(errors.InvalidSpec, match="not a Pod's or a Service's name"):
        operand_http.Target.parse(target, "team-a")


@pytest.mark.parametrize(("target", "name"), [("web", "web"), ("pod/web-0.db", "web-0.db"), ("svc/a1", "a1")])
def test_a_target_names_its_object(target: str, name: str) -> None:
    assert operand_http.Target.parse(target, "team-a").name == name


@pytest.mark.parametrize(
    ("route", "scheme", "server_name"),
    [("proxy", "https", "web.ns.svc"), ("direct", "http", "web.ns.svc"), ("direct", "https", "")],
)
def test_a_server_name_where_nothing_checks_a_certificate_is_refused_before_anything_is_sent(
    route: operand_http.Route, scheme: Literal["http", "https"], server_name: str
) -> None:
    client = nowhere()
    try:
        with pytest.raises(ValueError, match="server_name="):
            target = operand_http.Target("pods", "web", "ns")
            operand_http.call(client, target, "/", scheme=scheme, route=route, server_name=server_name)
    finally:
        client.close()
    assert client.stats.snapshot() == {}
