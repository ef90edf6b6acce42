"""Which requests take the direct path (headers built once, the session's own pool) and which stay on the session."""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
import re
import socket
import ssl
import stat
import threading
import warnings
from typing import Any

import pykube
import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import transport
from okt.runtime import certs

BASE = "https://127.0.0.1:6443/prefix"


def config(tmp_path: pathlib.Path, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> pykube.KubeConfig:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": BASE, **(cluster or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    return pykube.KubeConfig(doc)


def direct(kubeconfig: pykube.KubeConfig, proxies: dict[str, str] | None = None) -> transport.DirectTransport | None:
    return transport.DirectTransport.for_config(kubeconfig, BASE, proxies or {}, "t")


@pytest.mark.parametrize(
    "user",
    [
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "credential-helper"}},
        {"auth-provider": {"name": "oidc", "config": {"id-token": "x"}}},
    ],
    ids=["exec plugin", "auth provider"],
)
def test_credentials_that_refresh_stay_on_the_session(tmp_path: pathlib.Path, user: dict[str, Any]) -> None:
    assert direct(config(tmp_path, user)) is None


def test_a_proxy_keeps_requests_on_the_session(tmp_path: pathlib.Path) -> None:
    assert direct(config(tmp_path, {"token": "t"}), {"https": "http://proxy:3128"}) is None


@pytest.mark.parametrize(
    ("user", "authorization"),
    [({"token": "abc"}, "Bearer abc"), ({"username": "ann", "password": "pw"}, "Basic YW5uOnB3"), ({}, None)],
)
def test_static_credentials_take_the_direct_path_with_headers_built_once(
    tmp_path: pathlib.Path, user: dict[str, Any], authorization: str | None
) -> None:
    found = direct(config(tmp_path, user, {"insecure-skip-tls-verify": True}))
    assert found is not None
    assert found.headers.get("Authorization") == authorization
    assert found.headers["User-Agent"] == "t"
    assert found.prefix == "/prefix"


def test_a_token_file_takes_the_direct_path_with_no_token_built_in(tmp_path: pathlib.Path) -> None:
    found = transport.DirectTransport.for_config(
        config(tmp_path, {"token": "stale"}, {"insecure-skip-tls-verify": True}), BASE, {}, "t", changing_token=True
    )

    assert found is not None
    assert "Authorization" not in found.headers


def test_a_client_key_given_inline_is_written_where_only_its_user_can_read_it(tmp_path: pathlib.Path) -> None:
    bundle = certs.self_signed()  # loaded when the client is made: a real pair
    given = (bundle.cert_pem, bundle.key_pem)
    inline = [base64.b64encode(pem).decode() for pem in given]
    kubeconfig = config(tmp_path, {"client-certificate-data": inline[0], "client-key-data": inline[1]})

    client = kube_client.Client(kubeconfig)

    assert client.tls.cert is not None
    for written, pem in zip(client.tls.cert, given, strict=True):
        assert stat.S_IMODE(os.stat(written).st_mode) & 0o077 == 0
        assert stat.S_IMODE(os.stat(os.path.dirname(written)).st_mode) & 0o077 == 0
        assert pathlib.Path(written).read_bytes() == pem
    assert kubeconfig.user["client-key"].filename() == client.tls.cert[1]  # what the session sends, too


@pytest.mark.parametrize("value", ["false", "true", 0, "no"])
def test_insecure_skip_tls_verify_that_is_not_true_or_false_is_refused_at_start(
    tmp_path: pathlib.Path, value: object
) -> None:
    kubeconfig = config(tmp_path, {"token": "t"}, {"insecure-skip-tls-verify": value})

    with pytest.raises(errors.ConfigurationError, match="insecure-skip-tls-verify must be true or false"):
        kube_client.Client(kubeconfig)


@pytest.mark.parametrize(("value", "verify"), [(False, True), (True, False)])
def test_insecure_skip_tls_verify_turns_verification_off_only_when_true(
    tmp_path: pathlib.Path, value: bool, verify: bool
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kube_client.InsecureTLSWarning)  # said once per process: maybe not here
        client = kube_client.Client(config(tmp_path, {"token": "t"}, {"insecure-skip-tls-verify": value}))

    assert client.tls.verify is verify


def test_an_empty_ca_in_the_environment_is_refused_at_start_not_read_as_verify_nothing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pykube hands the variable's value to requests as ``verify``, where "" reads as False: no verification at all.
    monkeypatch.setenv("PYKUBE_SSL_CERTIFICATE_AUTHORITY", "")
    kubeconfig = config(tmp_path, {"token": "t"})

    with pytest.raises(errors.ConfigurationError, match="PYKUBE_SSL_CERTIFICATE_AUTHORITY is set but empty"):
        kube_client.Client(kubeconfig)


@pytest.mark.parametrize(
    ("proxy", "said"),
    [
        (
            "ftp://proxy.example:21",
            "a proxy must be a http://, https://, socks4://, socks4a://, socks5://, socks5h:// URL",
        ),
        ("http://", "with a host, got http://"),
        ("https://proxy.example:3128", "an https:// proxy needs the TLS settings to check it with"),
    ],
)
def test_a_connection_through_a_proxy_it_cannot_tunnel_through_is_refused_in_one_line_before_connecting(
    proxy: str, said: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(said)) as refused:
        transport.open_socket("api.example", 443, None, "api.example", 1.0, proxy=proxy)

    assert "\n" not in str(refused.value)


def proxy_handshake(
    tmp_path: pathlib.Path, server_name: str | None, hosts: tuple[str, ...]
) -> tuple[str, list[str | None]]:
    """The TLS handshake of :meth:`transport.TLS.proxy_context` with a proxy certified for ``hosts``, the socket
    wrapped for the proxy's address as urllib3 wraps it: ``ok`` or why the proxy was refused, and the server name
    the proxy was sent (None: none)."""
    bundle = certs.self_signed(hosts)
    (tmp_path / "ca.crt").write_bytes(bundle.ca_pem)
    served = bundle.server_context()
    sent: list[str | None] = []
    served.sni_callback = lambda _sock, name, _context: sent.append(name) and None
    near, far = socket.socketpair()
    near.settimeout(10)
    far.settimeout(10)

    def serve() -> None:
        with contextlib.suppress(OSError):  # the client refused the proxy's certificate
            served.wrap_socket(far, server_side=True).close()

    server = threading.Thread(target=serve)
    server.start()
    try:
        tls = transport.TLS(str(tmp_path / "ca.crt"), None, server_name)
        tls.proxy_context().wrap_socket(near, server_hostname="127.0.0.1").close()
        outcome = "ok"
    except ssl.SSLCertVerificationError as exc:
        outcome = exc.verify_message
        near.close()
    far.close()
    server.join(10)
    return outcome, sent


@pytest.mark.parametrize(
    ("server_name", "hosts", "outcome", "sent"),
    [
        ("kubernetes", ("kubernetes",), "ok", ["kubernetes"]),
        ("kubernetes", ("127.0.0.1",), "Hostname mismatch, certificate is not valid for 'kubernetes'.", ["kubernetes"]),
        (None, ("127.0.0.1",), "ok", [None]),
        (None, ("kubernetes",), "IP address mismatch, certificate is not valid for '127.0.0.1'.", [None]),
    ],
)
def test_an_https_proxy_is_checked_for_tls_server_name_when_set_whatever_host_it_is_dialled_at(
    tmp_path: pathlib.Path, server_name: str | None, hosts: tuple[str, ...], outcome: str, sent: list[str | None]
) -> None:
    """As kubectl checks it (Go's net/http dials the proxy with the cluster's TLS settings, ServerName included),
    and sends that name (an address is never sent)."""
    assert proxy_handshake(tmp_path, server_name, hosts) == (outcome, sent)
