"""okt.testing.FaultProxy without a control plane: what it is asked to inject and the kubeconfig it writes."""

from __future__ import annotations

import http.client
import os
import pathlib
import socket
import stat
import threading
from typing import Any

import pytest
import yaml

from okt.testing import faults


def test_the_kubeconfig_pointing_at_the_proxy_is_readable_by_its_owner_only(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "kubeconfig"
    source.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "admin", "user": {"token": "secret-token"}}],
            }
        )
    )
    previous = os.umask(0o022)
    try:
        with faults.FaultProxy("https://127.0.0.1:6443", rate=0) as proxy:
            written = proxy.kubeconfig(source, tmp_path / "through-the-proxy")
    finally:
        os.umask(previous)

    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    config = yaml.safe_load(written.read_text())
    assert config["clusters"][0]["cluster"] == {"server": proxy.url}
    assert config["users"][0]["user"]["token"] == "secret-token"


@pytest.mark.parametrize("kinds", [("500", "50O"), ("watch_drop",)])
def test_fault_kinds_the_proxy_would_never_inject_are_refused_when_it_is_made(kinds: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="fault kind"):
        faults.FaultProxy("https://127.0.0.1:6443", rate=1.0, kinds=kinds)


def test_stopping_a_proxy_that_was_never_started_returns_and_frees_its_port() -> None:
    proxy = faults.FaultProxy("https://127.0.0.1:6443", rate=0)
    port = int(proxy.url.rsplit(":", 1)[1])

    stopping = threading.Thread(target=proxy.stop, daemon=True)
    stopping.start()
    stopping.join(10)

    assert not stopping.is_alive(), "stop() of a proxy never started did not return"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def get(url: str, path: str) -> tuple[int, str, bytes]:
    """GET ``path`` from the proxy at ``url``: the status, content type and body of the answer."""
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type") or "", answer.read()
    finally:
        connection.close()


def test_a_restarting_api_server_answers_404_under_the_groups_not_served_and_relays_every_other_path() -> None:
    # Nothing listens upstream: a path the proxy relays is answered 503 (upstream unreachable).
    with faults.FaultProxy("https://127.0.0.1:1", rate=0) as proxy:
        with proxy.restarting(not_served=["example.com"]):
            during = {
                path: get(proxy.url, path)[0]
                for path in (
                    "/apis/example.com",
                    "/apis/example.com/v1",
                    "/apis/example.com/v1/namespaces/ns/things?watch=true",
                    "/apis/example.community/v1/things",
                    "/apis/other.example.com/v1/things",
                    "/api/v1/configmaps",
                )
            }
            refusal = get(proxy.url, "/apis/example.com/v1/things")
        after = get(proxy.url, "/apis/example.com/v1/things")[0]

    assert during == {
        "/apis/example.com": 404,
        "/apis/example.com/v1": 404,
        "/apis/example.com/v1/namespaces/ns/things?watch=true": 404,
        "/apis/example.community/v1/things": 503,
        "/apis/other.example.com/v1/things": 503,
        "/api/v1/configmaps": 503,
    }
    assert refusal == (404, "text/plain; charset=utf-8", b"404 page not found\n")
    assert after == 503
    assert proxy.injected == {"restart": 1, "404": 4}


def test_a_restart_cuts_the_connections_open_through_the_proxy() -> None:
    with faults.FaultProxy("https://127.0.0.1:1", rate=0) as proxy:
        connection = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=10)
        try:
            connection.request("GET", "/api/v1/configmaps")
            answer = connection.getresponse()
            answer.read()
            kept_alive = not answer.will_close
            assert connection.sock is not None
            with proxy.restarting(not_served=()):
                cut = connection.sock.recv(1)
        finally:
            connection.close()

    assert kept_alive
    assert cut == b""  # the proxy's end closed, with no answer
    assert proxy.injected == {"restart": 1}


@pytest.mark.parametrize(
    ("not_served", "error"),
    [("example.com", TypeError), (["example.com", ""], ValueError), (["example.com/v1"], ValueError)],
)
def test_groups_a_restart_would_never_answer_404_are_refused(not_served: Any, error: type[Exception]) -> None:
    proxy = faults.FaultProxy("https://127.0.0.1:1", rate=0)
    try:
        with pytest.raises(error, match="not_served"), proxy.restarting(not_served=not_served):
            pass
    finally:
        proxy.stop()
    assert proxy.injected == {}
