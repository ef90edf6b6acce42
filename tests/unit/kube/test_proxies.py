"""A proxy that cannot be reached is named with the setting that chose it; which proxy is chosen does not change."""

from __future__ import annotations

import pathlib
import socket

import pytest

from okt import errors
from okt.kube import client as kube_client

_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _kubeconfig(path: pathlib.Path, server: str, proxy_url: str | None = None) -> pathlib.Path:
    proxy = f", proxy-url: '{proxy_url}'" if proxy_url else ""
    path.write_text(
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'{proxy}}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    return path


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_proxy_the_kubeconfig_names_that_refuses_connections_is_named_as_the_kubeconfigs(
    tmp_path: pathlib.Path,
) -> None:
    port = _closed_port()
    path = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443", f"http://user:secret@127.0.0.1:{port}")
    with pytest.raises(errors.Unavailable) as raised:
        kube_client.Client.from_kubeconfig(str(path)).server_version()
    assert str(raised.value) == (
        f"GET /version -> no response (Unavailable): cannot reach the proxy http://127.0.0.1:{port} that the "
        "kubeconfig's proxy-url names: it cannot be connected to: Connection refused"
    )


def test_the_lower_case_variable_is_named_where_both_cases_are_set(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # urllib takes the lower-case one: the variable named is the one that chose the proxy.
    port = _closed_port()
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
    path = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443")
    with pytest.raises(errors.Unavailable, match=rf"proxy http://127\.0\.0\.1:{port} that \$https_proxy names: "):
        kube_client.Client.from_kubeconfig(str(path)).server_version()


def test_a_server_no_proxy_excepts_is_reached_directly_and_said_as_before(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_port = _closed_port()
    monkeypatch.setenv("HTTPS_PROXY", "http://no-such-host.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    path = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{server_port}")
    with pytest.raises(errors.Unavailable) as raised:
        kube_client.Client.from_kubeconfig(str(path)).server_version()
    assert "proxy" not in str(raised.value) and "Connection refused" in str(raised.value)


def test_a_proxy_set_without_a_scheme_is_named_as_requests_reads_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests takes ``host:port`` for ``http://host:port``: urlsplit alone read no host in it.
    port = _closed_port()
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{port}")
    path = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443")
    with pytest.raises(errors.Unavailable) as raised:
        kube_client.Client.from_kubeconfig(str(path)).server_version()
    assert str(raised.value) == (
        f"GET /version -> no response (Unavailable): cannot reach the proxy http://127.0.0.1:{port} that $HTTPS_PROXY "
        "names: it cannot be connected to: Connection refused"
    )
