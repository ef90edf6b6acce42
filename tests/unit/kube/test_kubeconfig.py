"""What a kubeconfig says beyond where the token comes from: impersonation (``as``, ``as-uid``, ``as-groups``,
``as-user-extra``) sent with every request as kubectl sends it, a cluster's ``proxy-url``, and the fields okt would not
do as kubectl does, refused at start with one line naming them."""

from __future__ import annotations

import importlib.util
import pathlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pykube
import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, kubeconfig, podexec
from okt.runtime import certs


def config(user: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> pykube.KubeConfig:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", **(cluster or {})}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    return pykube.KubeConfig(doc)


@pytest.mark.parametrize(
    ("user", "headers"),
    [
        ({"token": "t"}, ()),
        ({"as": "someone"}, (("Impersonate-User", "someone"),)),
        (
            {"as": "system:serviceaccount:shop:app", "as-uid": "42", "as-groups": ["a", "b"]},
            (
                ("Impersonate-User", "system:serviceaccount:shop:app"),
                ("Impersonate-Uid", "42"),
                ("Impersonate-Group", "a"),
                ("Impersonate-Group", "b"),
            ),
        ),
        (
            {"as": "someone", "as-user-extra": {"acme.com/team name": ["x", "y"], "scopes%": ["z"]}},
            (
                ("Impersonate-User", "someone"),
                ("Impersonate-Extra-acme.com%2Fteam%20name", "x"),
                ("Impersonate-Extra-acme.com%2Fteam%20name", "y"),
                ("Impersonate-Extra-scopes%25", "z"),
            ),
        ),
    ],
)
def test_impersonation_is_the_headers_kubectl_sends(user: dict[str, Any], headers: tuple[tuple[str, str], ...]) -> None:
    assert kubeconfig.impersonation(config(user)) == headers


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"as-groups": ["admins"]}, "asks for as-uid, as-groups or as-user-extra without as (the user to impersonate)"),
        ({"as-uid": "42"}, "without as (the user to impersonate)"),
        ({"as": "someone", "as-groups": "admins"}, "as-groups must be a list of group names"),
        ({"as": "someone", "as-user-extra": {"team": "a"}}, "as-user-extra must map names to lists of values"),
        ({"as": "someone\r\nImpersonate-Group: system:masters"}, "as holds control characters"),
        ({"as": "someone", "as-groups": ["ünïcödé✓"]}, "as-groups holds characters a header cannot carry"),
        ({"as": 42}, "as must be text, got int"),
    ],
)
def test_impersonation_a_header_could_not_say_as_asked_is_refused_at_start(user: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kube_client.Client(config({"token": "t", **user}))


@pytest.mark.parametrize(
    ("given", "used"),
    [
        (None, None),
        ("", None),
        ("http://proxy.example:3128", "http://proxy.example:3128"),
        ("https://user:secret@proxy.example", "https://user:secret@proxy.example"),
    ],
)
def test_a_proxy_url_is_taken_as_given(given: str | None, used: str | None) -> None:
    assert kubeconfig.proxy_url(config(cluster={} if given is None else {"proxy-url": given})) == used


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("ftp://user:secret@proxy.example", "got ftp://"),
        ("proxy.example:3128", "got proxy.example://"),
        ("http://", "got http://"),
        ("//user:secret@proxy.example", "got no scheme"),
        (3128, "got no scheme"),
    ],
)
def test_a_proxy_url_kubectl_would_refuse_is_refused_without_quoting_it(given: object, said: str) -> None:
    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client(config(cluster={"proxy-url": given}))

    assert str(raised.value) == (
        f"the kubeconfig's proxy-url must be an http://, https:// or socks5:// URL with a host, {said}"
    )
    assert "secret" not in str(raised.value)


def test_a_socks5_proxy_url_without_pysocks_is_refused_in_one_line() -> None:
    if importlib.util.find_spec("socks") is not None:
        pytest.skip("PySocks is installed: a socks5 proxy-url is used")

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client(config(cluster={"proxy-url": "socks5://127.0.0.1:1080"}))

    assert str(raised.value) == (
        "the kubeconfig's proxy-url is a socks5:// proxy, which needs PySocks: pip install PySocks"
    )


@pytest.mark.parametrize(
    ("user", "cluster", "message"),
    [
        (
            {"token": "t"},
            {"certificate-authority": "ca.pem", "certificate-authority-data": "Y2E="},
            "certificate-authority",
        ),
        (
            {"client-certificate": "c.pem", "client-certificate-data": "Yw==", "client-key": "k.pem"},
            {},
            "client-certificate",
        ),
        ({"client-certificate": "c.pem", "client-key": "k.pem", "client-key-data": "aw=="}, {}, "client-key"),
        ({"client-certificate": "c.pem"}, {}, "client-certificate but no client-key"),
        ({"client-certificate-data": "Yw=="}, {}, "client-certificate but no client-key"),
        ({"token": "t", "username": "u", "password": "p"}, {}, "both a token and a username/password"),
        (
            {
                "exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1"},
                "auth-provider": {"name": "oidc", "config": {}},
            },
            {},
            "both exec and auth-provider",
        ),
        ({"auth-provider": {"name": "azure", "config": {}}}, {}, "auth-provider 'azure' is not one okt can run"),
        ({"auth-provider": {"config": {}}}, {}, "auth-provider None is not one okt can run"),
    ],
)
def test_what_kubectl_refuses_or_okt_cannot_do_is_refused_at_start_naming_the_field(
    tmp_path: pathlib.Path, user: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    for name in ("ca.pem", "c.pem", "k.pem"):  # a file named is read from the kubeconfig's folder
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config(user, cluster).doc))

    with pytest.raises(errors.ConfigurationError, match=message):
        kube_client.Client.from_kubeconfig(path)


@pytest.mark.parametrize(
    ("user", "cluster", "message"),
    [
        (
            {"token": "t"},
            {"certificate-authority": "ca.pem"},
            r"CA file .*/ca\.pem cannot be used: it holds no usable CA",
        ),
        ({"token": "t"}, {"certificate-authority-data": "bm90IFBFTQo="}, "certificate-authority-data cannot be used"),
        (
            {"client-certificate": "c.pem", "client-key": "other.key"},
            {"certificate-authority": "good.pem"},
            r"client-certificate and client-key \(.*/c\.pem, .*/other\.key\) cannot be used: it holds no usable",
        ),
        (  # refused, not asked for on the terminal as OpenSSL would (kubectl reads no passphrase either)
            {"client-certificate": "c.pem", "client-key": "encrypted.key"},
            {"certificate-authority": "good.pem"},
            r"client-certificate and client-key \(.*/c\.pem, .*/encrypted\.key\) cannot be used",
        ),
    ],
    ids=["ca-file", "ca-data", "key-of-another-certificate", "encrypted-key"],
)
def test_a_certificate_that_cannot_be_loaded_is_refused_at_start_naming_it(
    tmp_path: pathlib.Path, user: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    mine, another = certs.self_signed(), certs.self_signed()
    (tmp_path / "ca.pem").write_text("not PEM\n")
    (tmp_path / "good.pem").write_bytes(mine.ca_pem)
    (tmp_path / "c.pem").write_bytes(mine.cert_pem)
    (tmp_path / "other.key").write_bytes(another.key_pem)
    key = serialization.load_pem_private_key(mine.key_pem, password=None)
    encryption = serialization.BestAvailableEncryption(b"secret")
    (tmp_path / "encrypted.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config(user, cluster).doc))

    with pytest.raises(errors.ConfigurationError, match=message):
        kube_client.Client.from_kubeconfig(path)


class RecordingServer:
    """Answers every request ``answer`` on a connection of its own, and keeps each request's head."""

    def __init__(self, answer: bytes) -> None:
        self.heads: list[bytes] = []
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as reader:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        break
                    head += line
                self.heads.append(head)
                conn.sendall(self._answer)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    # One answer for all: an object to a get, an empty list to a list, an event to a watch.
    body = b'{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}},"items":[]}\n'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
    recording = RecordingServer(answer % len(body) + body)
    yield recording
    recording.close()


def impersonation_lines(head: bytes) -> list[str]:
    return [line for line in head.decode("latin-1").split("\r\n") if line.lower().startswith("impersonate-")]


def test_every_way_a_request_leaves_carries_the_impersonation_one_line_per_value(server: RecordingServer) -> None:
    user = {"token": "t", "as": "someone", "as-groups": ["a", "b"], "as-user-extra": {"team": ["x"]}}
    doc = config(user).doc
    doc["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{server.port}"
    client = kube_client.Client(pykube.KubeConfig(doc))
    try:
        client.get_or_none(kinds.CONFIG_MAP, "a", "default")  # the direct path
        client.list(kinds.CONFIG_MAP, "default")  # the session
        next(iter(client.watch(kinds.CONFIG_MAP, "default", resource_version="0")))
        with pytest.raises(errors.OktError):  # the upgrade is answered 200, not 101: what was sent is the point
            podexec.run(client, "default", "p", None, ["true"], timeout=5)
    finally:
        client.close()

    expected = [
        "Impersonate-User: someone",
        "Impersonate-Group: a",
        "Impersonate-Group: b",
        "Impersonate-Extra-team: x",
    ]
    assert len(server.heads) == 4
    assert [[line.lower() for line in impersonation_lines(h)] for h in server.heads] == [
        [line.lower() for line in expected]
    ] * 4
