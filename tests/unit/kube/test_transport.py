"""Which requests take the direct path (headers built once, the session's own pool) and which stay on the session."""

from __future__ import annotations

import base64
import os
import pathlib
import re
import stat
import warnings
from typing import Any

import pykube
import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import transport

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
    key = base64.b64encode(f"-----BEGIN PRIVATE KEY-----\n{tmp_path}\n-----END PRIVATE KEY-----\n".encode()).decode()
    kubeconfig = config(tmp_path, {"client-certificate-data": key, "client-key-data": key})

    client = kube_client.Client(kubeconfig)

    assert client.tls.cert is not None
    for written in client.tls.cert:
        assert stat.S_IMODE(os.stat(written).st_mode) & 0o077 == 0
        assert stat.S_IMODE(os.stat(os.path.dirname(written)).st_mode) & 0o077 == 0
        assert pathlib.Path(written).read_bytes() == base64.b64decode(key)
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
