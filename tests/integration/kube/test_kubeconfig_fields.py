"""What a kubeconfig says of who okt is and how it reaches the API server, done as kubectl does it: the user's ``as``
and ``as-groups`` make every request act as that user (refused, as the API server's RBAC refuses that user, or
allowed by a binding to that user's group), and the cluster's ``proxy-url`` carries every request, watch and exec.

Both are checked on every way a request leaves: answered whole (okt's direct path), a list and a watch (the session),
an exec (a websocket). The control plane authorizes with RBAC; the admin of its kubeconfig (``system:masters``) may
impersonate anyone.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import sys
import urllib.parse
from typing import Any

import pytest
import yaml

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, podexec
from okt.testing import envtest, kubectl
from tests.integration import connect_proxy

pytestmark = pytest.mark.integration


def kubeconfig_with(
    control_plane: envtest.ControlPlane,
    target: pathlib.Path,
    user: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
) -> pathlib.Path:
    """The admin's kubeconfig with ``user`` and ``cluster`` fields added, written to ``target``."""
    doc = yaml.safe_load(control_plane.kubeconfig.read_text())
    doc["users"][0]["user"].update(user or {})
    doc["clusters"][0]["cluster"].update(cluster or {})
    envtest.write_private(target, yaml.safe_dump(doc))
    return target


def every_way(client: kube_client.Client, namespace: str) -> dict[str, BaseException | None]:
    """What each way a request leaves raised (None: it went through): a get (the direct path), a list and a watch
    (the session), an exec (a websocket)."""

    def watch() -> None:
        for _ in client.watch(kinds.CONFIG_MAP, namespace, resource_version="0", timeout_seconds=1):
            return

    ways = {
        "get": lambda: client.get_or_none(kinds.CONFIG_MAP, "settings", namespace),
        "list": lambda: client.list(kinds.CONFIG_MAP, namespace),
        "watch": watch,
        "exec": lambda: podexec.run(client, namespace, "absent", None, ["true"], timeout=30),
    }
    outcomes: dict[str, BaseException | None] = {}
    for way, call in ways.items():
        try:
            call()
        except errors.OktError as exc:
            outcomes[way] = exc
        else:
            outcomes[way] = None
    return outcomes


def test_a_user_with_as_is_refused_as_the_impersonated_user_on_every_way_a_request_leaves(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    path = kubeconfig_with(control_plane, tmp_path / "kubeconfig", {"as": "someone"})
    client = kube_client.Client.from_kubeconfig(path)
    try:
        outcomes = every_way(client, namespace)
    finally:
        client.close()

    assert {way: type(exc).__name__ for way, exc in outcomes.items()} == dict.fromkeys(outcomes, "Forbidden")
    for exc in outcomes.values():
        assert 'User "someone" cannot' in str(exc)


def test_a_user_with_as_groups_gets_what_a_binding_to_one_of_its_groups_grants(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Bound to the second of two groups: the groups go one header each (joined, they would be one group named
    ``readers-a, readers-b``, bound to nothing)."""
    kube.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "reader", "namespace": namespace},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["pods", "pods/exec"], "verbs": ["get", "create"]},
            ],
        }
    )
    kube.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "reader", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "readers-b"}],
        }
    )
    user = {"as": "someone", "as-groups": ["readers-a", "readers-b"], "as-user-extra": {"team": ["a"]}}
    client = kube_client.Client.from_kubeconfig(kubeconfig_with(control_plane, tmp_path / "kubeconfig", user))
    try:
        outcomes = every_way(client, namespace)
        with pytest.raises(errors.Forbidden, match='User "someone" cannot list resource "configmaps"'):
            client.list(kinds.CONFIG_MAP, "default")  # bound in its namespace only
    finally:
        client.close()

    assert {way: exc for way, exc in outcomes.items() if way != "exec"} == dict.fromkeys(("get", "list", "watch"))
    assert isinstance(outcomes["exec"], errors.NotFound)  # allowed to ask: the Pod is not there


@pytest.mark.parametrize("scheme", connect_proxy.SCHEMES)
def test_a_cluster_with_proxy_url_is_reached_through_that_proxy_on_every_way_a_request_leaves(
    control_plane: envtest.ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
) -> None:
    """The server's name is one only the proxy resolves: a request that went around the proxy would fail. The
    environment's proxy, which leads nowhere, is not used: proxy-url replaces it. Through an https proxy, the API
    server's TLS goes inside the proxy's (TLS in TLS), the proxy's certificate checked against the kubeconfig's CAs;
    through a socks5 one, the proxy resolves the server's name."""
    if scheme == "socks5" and importlib.util.find_spec("socks") is None:
        pytest.skip("PySocks is not installed: a socks5 proxy-url is refused at start (tests/unit/kube)")
    port = urllib.parse.urlsplit(control_plane.url).port
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with connect_proxy.proxied_kubeconfig(control_plane, tmp_path, scheme) as (proxy, kubeconfig):
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            outcomes = every_way(client, namespace)
        finally:
            client.close()

    assert proxy.url.startswith(f"{scheme}://")
    assert {way: exc for way, exc in outcomes.items() if way != "exec"} == dict.fromkeys(("get", "list", "watch"))
    assert isinstance(outcomes["exec"], errors.NotFound)  # the API server's answer, through the tunnel
    assert set(proxy.targets) == {f"api.okt.invalid:{port}"}
    assert len(proxy.targets) >= 2  # the exec's websocket is a connection of its own


def test_an_https_proxy_whose_certificate_the_kubeconfigs_cas_do_not_vouch_for_is_refused_on_every_way(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Its certificate is checked as the API server's is, as kubectl checks it: no request, watch or exec goes
    through a proxy that could read them all."""
    with connect_proxy.proxied_kubeconfig(control_plane, tmp_path, "https", trusted=False) as (proxy, kubeconfig):
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            outcomes = every_way(client, namespace)
        finally:
            client.close()

    assert {way: type(exc).__name__ for way, exc in outcomes.items()} == dict.fromkeys(outcomes, "Unavailable")
    assert "CERTIFICATE_VERIFY_FAILED" in str(outcomes["exec"])
    assert proxy.targets == []  # refused before asking for any tunnel


THROUGH = {"get": None, "list": None, "watch": None, "exec": "NotFound"}
"""What :func:`every_way` meets through a proxy that lets it through: the API server's answers (the exec's Pod is
not there)."""
REFUSED = dict.fromkeys(THROUGH, "Unavailable")


@pytest.mark.parametrize(
    ("server_name", "proxy_hosts", "asks_certificate", "has_certificate", "kubectl_goes_through"),
    [
        pytest.param("kubernetes", ("kubernetes",), False, False, True, id="tls-server-name-proxy-certified-for-it"),
        pytest.param(
            "kubernetes", ("127.0.0.1",), False, False, False, id="tls-server-name-proxy-certified-for-its-host"
        ),
        pytest.param(None, ("127.0.0.1",), False, False, True, id="proxy-certified-for-its-host"),
        pytest.param(None, ("kubernetes",), False, False, False, id="proxy-certified-for-another-name"),
        pytest.param(None, ("127.0.0.1",), True, True, True, id="proxy-asks-a-client-certificate-the-user-has"),
        pytest.param(None, ("127.0.0.1",), True, False, False, id="proxy-asks-a-client-certificate-the-user-lacks"),
        pytest.param("kubernetes", ("kubernetes",), True, True, True, id="tls-server-name-and-a-client-certificate"),
    ],
)
def test_an_https_proxy_lets_okt_through_exactly_where_it_lets_kubectl_through(
    control_plane: envtest.ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    server_name: str | None,
    proxy_hosts: tuple[str, ...],
    asks_certificate: bool,
    has_certificate: bool,
    kubectl_goes_through: bool,
) -> None:
    """kubectl (Go's ``net/http``) dials an https proxy with the cluster's own TLS settings: the proxy's certificate
    is checked for ``tls-server-name`` when the kubeconfig sets one (for the proxy's host only without), and the
    user's client certificate is offered if the proxy asks for one. okt's every way — the session's requests and
    watch, a websocket's exec — goes through the same proxy where kubectl does, and nowhere else."""
    client_ca, user = connect_proxy.client_certificate(tmp_path)
    with connect_proxy.proxied_kubeconfig(
        control_plane,
        tmp_path,
        "https",
        server_name=server_name,
        proxy_hosts=proxy_hosts,
        client_ca=client_ca if asks_certificate else None,
        user=user if has_certificate else None,
    ) as (proxy, kubeconfig):
        by_kubectl = kubectl.kubectl(kubeconfig, "get", "--raw", "/version", "--request-timeout=20s")
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            outcomes = every_way(client, namespace)
        finally:
            client.close()

    assert (by_kubectl.returncode == 0) is kubectl_goes_through, by_kubectl.stderr
    assert {way: type(exc).__name__ if exc else None for way, exc in outcomes.items()} == (
        THROUGH if kubectl_goes_through else REFUSED
    )
    assert bool(proxy.targets) is kubectl_goes_through  # a refused proxy was never asked for a tunnel


CERTIFICATE_PLUGIN = """#!{python}
import json, os, pathlib
certificate, key = (pathlib.Path(os.environ[name]).read_text() for name in ("CERTIFICATE", "KEY"))
status = {{"clientCertificateData": certificate, "clientKeyData": key}}
if os.environ.get("EXPIRES"):
    status["expirationTimestamp"] = os.environ["EXPIRES"]
with open(os.environ["RUNS"], "a") as runs:
    runs.write("run\\n")
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": status}}))
"""
"""A credential plugin giving the client certificate and key of the files ``$CERTIFICATE`` and ``$KEY`` name, and
``$EXPIRES`` as their expiry when set; it counts its runs in ``$RUNS``, a line each."""

EXPIRED = "2000-01-01T00:00:00Z"
"""An ``expirationTimestamp`` long past: the plugin runs again for each request, giving the certificate of the
moment."""


class CertificatePlugin:
    """:data:`CERTIFICATE_PLUGIN` in ``folder``, giving the certificate and key it is handed (:meth:`gives`)."""

    def __init__(self, folder: pathlib.Path, *, expires: str | None = None) -> None:
        self.folder = folder
        self.script = folder / "plugin"
        self.script.write_text(CERTIFICATE_PLUGIN.format(python=sys.executable))
        self.script.chmod(0o700)
        env = {
            "CERTIFICATE": str(folder / "plugin.crt"),
            "KEY": str(folder / "plugin.key"),
            "RUNS": str(folder / "runs"),
            "EXPIRES": expires or "",
        }
        self.spec = {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(self.script),
            "env": [{"name": name, "value": value} for name, value in env.items()],
        }

    def gives(self, fields: dict[str, str]) -> None:
        """Give the client certificate and key of ``fields`` (:func:`connect_proxy.client_certificate`'s)."""
        shutil.copyfile(fields["client-certificate"], self.folder / "plugin.crt")
        shutil.copyfile(fields["client-key"], self.folder / "plugin.key")

    @property
    def runs(self) -> int:
        path = self.folder / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0


def certificate_only(kubeconfig: pathlib.Path) -> None:
    """Drop the admin's token from ``kubeconfig``: the plugin's certificate is all the user has."""
    doc = yaml.safe_load(kubeconfig.read_text())
    del doc["users"][0]["user"]["token"]
    envtest.write_private(kubeconfig, yaml.safe_dump(doc))


ANONYMOUS = {"get": "Forbidden", "list": "Forbidden", "watch": "Forbidden", "exec": "Forbidden"}
"""What :func:`every_way` meets past the proxy with no token: the API server asks no client certificate, so the
plugin's leaves every request anonymous, refused by RBAC (where a proxy that refused it gives ``Unavailable``)."""


def test_an_https_proxy_is_offered_the_client_certificate_a_credential_plugin_gives_as_kubectl_offers_it(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """kubectl offers an https proxy whatever client certificate its transport holds, a credential plugin's too
    (client-go's exec authenticator gives the TLS config the plugin's certificate of the moment). okt's every way
    offers it as well, and the plugin's next one once it gives another: a certificate of a CA the proxy does not
    accept is refused by both, then one of its CA lets both through."""
    (tmp_path / "accepted").mkdir()
    (tmp_path / "other").mkdir()
    client_ca, accepted = connect_proxy.client_certificate(tmp_path / "accepted")
    _, other = connect_proxy.client_certificate(tmp_path / "other")
    plugin = CertificatePlugin(tmp_path, expires=EXPIRED)  # run for each request: its certificate of the moment
    plugin.gives(other)
    with connect_proxy.proxied_kubeconfig(
        control_plane, tmp_path, "https", server_name=None, client_ca=client_ca, user={"exec": plugin.spec}
    ) as (proxy, kubeconfig):
        certificate_only(kubeconfig)
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            refused_kubectl = kubectl.kubectl(kubeconfig, "get", "--raw", "/version", "--request-timeout=20s")
            refused = every_way(client, namespace)
            refused_targets = list(proxy.targets)
            plugin.gives(accepted)
            through_kubectl = kubectl.kubectl(kubeconfig, "get", "--raw", "/version", "--request-timeout=20s")
            through = every_way(client, namespace)
        finally:
            client.close()

    assert refused_kubectl.returncode != 0
    assert {way: type(exc).__name__ for way, exc in refused.items() if exc} == REFUSED
    assert refused_targets == []
    assert through_kubectl.returncode == 0, through_kubectl.stderr
    assert {way: type(exc).__name__ for way, exc in through.items() if exc} == ANONYMOUS
    assert proxy.targets


def test_a_credential_plugin_that_gives_a_client_certificate_runs_once_and_its_connections_are_kept(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """client-go runs a plugin that gives a client certificate once, keeps the certificate until the expiry the
    plugin gives (none here), and keeps its connections: so does okt, on every way a request leaves — the
    certificate still offered to an https proxy that asks for one, through a tunnel kept for the next request."""
    client_ca, accepted = connect_proxy.client_certificate(tmp_path)
    plugin = CertificatePlugin(tmp_path)
    plugin.gives(accepted)
    with connect_proxy.proxied_kubeconfig(
        control_plane, tmp_path, "https", server_name=None, client_ca=client_ca, user={"exec": plugin.spec}
    ) as (proxy, kubeconfig):
        certificate_only(kubeconfig)
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            outcomes = every_way(client, namespace)
            tunnels = len(proxy.targets)
            lists = []
            for _ in range(10):
                try:
                    client.list(kinds.CONFIG_MAP, namespace)
                except errors.Forbidden as exc:  # anonymous past the proxy: the API server asks no certificate
                    lists.append(type(exc).__name__)
            more_tunnels = len(proxy.targets) - tunnels
        finally:
            client.close()

    assert {way: type(exc).__name__ for way, exc in outcomes.items() if exc} == ANONYMOUS
    assert lists == ["Forbidden"] * 10
    assert more_tunnels <= 1  # the session's tunnel kept (pykube's adapter made a new pool, so a tunnel, for each)
    assert plugin.runs == 1


@pytest.mark.parametrize(("expires", "runs_at_least"), [(None, 1), (EXPIRED, 11)], ids=["no expiry", "expired"])
def test_a_credential_plugin_that_gives_a_client_certificate_runs_again_only_once_it_expired(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path, expires: str | None, runs_at_least: int
) -> None:
    """On the direct path (no proxy) too, the plugin runs once for ten requests; given an expiry already past, it
    runs again for each of them."""
    _, accepted = connect_proxy.client_certificate(tmp_path)
    plugin = CertificatePlugin(tmp_path, expires=expires)
    plugin.gives(accepted)
    kubeconfig = kubeconfig_with(control_plane, tmp_path / "kubeconfig", {"exec": plugin.spec})
    certificate_only(kubeconfig)
    client = kube_client.Client.from_kubeconfig(kubeconfig)
    answers = []
    try:
        for _ in range(10):
            try:
                client.get_or_none(kinds.CONFIG_MAP, "settings", namespace)
            except errors.Forbidden as exc:  # anonymous: the API server asks no client certificate
                answers.append(type(exc).__name__)
    finally:
        client.close()

    assert answers == ["Forbidden"] * 10
    assert plugin.runs >= runs_at_least
    assert plugin.runs == 1 or expires is not None
