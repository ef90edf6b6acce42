"""Tokens that change under a running client: a rotated token file, read again; a credential plugin, run once and
again when its token is refused.

The tokens are real bound ServiceAccount tokens from the API server's TokenRequest API, each bound to a Secret:
deleting the Secret invalidates its token at once, as expiry would. The client holds the file's path (a kubeconfig's
``tokenFile``, or the in-cluster configuration) or runs a kubeconfig's ``exec`` plugin; a fresh token is put in
place, the old one invalidated, and the client's next request — answered whole on the direct path, or streamed
through the session — gets through without a restart.
"""

from __future__ import annotations

import pathlib
import shutil
import time

import pytest
import yaml

import okt
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, podexec
from okt.testing import envtest, wait_for

pytestmark = pytest.mark.integration

ACCOUNT = "rotating"
SECRET = kinds.BUILTIN[("v1", "Secret")]
SERVICE_ACCOUNT = kinds.BUILTIN[("v1", "ServiceAccount")]


@pytest.fixture
def account(kube: kube_client.Client, namespace: str) -> str:
    """A ServiceAccount of ``namespace`` that may read (and write) anything: the name of ``namespace``."""
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": namespace}})
    kube.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": ACCOUNT, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
        }
    )
    return namespace


def bound_token(kube: kube_client.Client, namespace: str, anchor: str) -> str:
    """A token of the ServiceAccount, valid as long as the Secret ``anchor`` (created here) exists."""
    secret = kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": anchor, "namespace": namespace}})
    reference = {"apiVersion": "v1", "kind": "Secret", "name": anchor, "uid": secret["metadata"]["uid"]}
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token",
        verb="create",
        resource="serviceaccounts/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600, "boundObjectRef": reference},
        },
    )
    return str(answer.json()["status"]["token"])


def invalidate(plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, anchor: str, token: str) -> None:
    """Delete the Secret ``token`` is bound to, and wait until the API server refuses the token."""
    kube.delete(SECRET, anchor, namespace)
    path = plane.kubeconfig_for(envtest.TokenUser(ACCOUNT, token), plane.directory / f"kubeconfig-{anchor}")
    holder = kube_client.Client.from_kubeconfig(path)

    def refused() -> bool:
        try:
            holder.get(SERVICE_ACCOUNT, ACCOUNT, namespace)
        except okt.Unauthorized:
            return True
        return False

    try:
        wait_for(refused, timeout=30, interval=0.2, message=f"the token bound to {anchor} to be refused")
    finally:
        holder.close()


def kubeconfig_with_token_file(plane: envtest.ControlPlane, folder: pathlib.Path) -> pathlib.Path:
    """The control plane's kubeconfig whose user has only ``tokenFile: token`` (relative to the kubeconfig)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["users"][0]["user"] = {"tokenFile": "token"}
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def unauthorized_answers(client: kube_client.Client) -> int:
    return sum(n for (code, _), n in client.stats.responses().items() if code == "401")


def test_a_kubeconfig_token_file_rotated_under_a_running_client_is_read_again(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    token_path = tmp_path / "token"
    token_path.write_text(bound_token(kube, account, "anchor-1") + "\n")
    client = kube_client.Client.from_kubeconfig(kubeconfig_with_token_file(control_plane, tmp_path))
    try:
        first = client.get(SERVICE_ACCOUNT, ACCOUNT, account)
        for anchor, fresh, read in (
            ("anchor-1", "anchor-2", lambda: client.list(kinds.CONFIG_MAP, account)[1]),  # streamed: the session
            ("anchor-2", "anchor-3", lambda: client.get(SERVICE_ACCOUNT, ACCOUNT, account)),  # answered whole: direct
        ):
            held = _held(client)
            token_path.write_text(bound_token(kube, account, fresh))
            invalidate(control_plane, kube, account, anchor, held)
            assert read()
        refused = unauthorized_answers(client)
        created = client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": account}}
        )
    finally:
        client.close()

    assert first["metadata"]["name"] == ACCOUNT
    assert refused == 2  # one refused request per rotation, each sent again once with the new token
    assert created["metadata"]["name"] == "c"


def _held(client: kube_client.Client) -> str:
    return client.credential_headers()["Authorization"].removeprefix("Bearer ")


def test_in_cluster_the_service_account_token_is_read_again_as_the_kubelet_rotates_it(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    account: str,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mounted = tmp_path / "serviceaccount"
    mounted.mkdir()
    shutil.copy(control_plane.ca_file, mounted / "ca.crt")
    (mounted / "namespace").write_text(account)
    (mounted / "token").write_text(bound_token(kube, account, "pod-1"))
    host, port = control_plane.url.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)

    client = kube_client.Client.in_cluster(mounted)
    try:
        before = client.get(SERVICE_ACCOUNT, ACCOUNT, account)
        held = _held(client)
        (mounted / "token").write_text(bound_token(kube, account, "pod-2"))
        invalidate(control_plane, kube, account, "pod-1", held)
        after = client.get(SERVICE_ACCOUNT, ACCOUNT, account)
    finally:
        client.close()

    assert client.default_namespace == account
    assert before["metadata"]["uid"] == after["metadata"]["uid"]
    assert unauthorized_answers(client) == 1


def test_in_cluster_without_its_files_is_one_clear_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(okt.ConfigurationError, match="in-cluster configuration"):
        kube_client.Client.in_cluster(tmp_path / "nowhere")


def _with_plugin(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, script: str, **env: pathlib.Path
) -> pathlib.Path:
    """``tmp_path / "kubeconfig"``: the control plane's, its user's credentials given by the credential plugin
    ``script`` (written as ``tmp_path / "plugin"``) run with the variables ``env`` naming files."""
    (tmp_path / "plugin").write_text(script)
    (tmp_path / "plugin").chmod(0o755)
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    variables = [{"name": name, "value": str(path)} for name, path in env.items()]
    plugin = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./plugin", "env": variables}
    config["users"][0]["user"] = {"exec": plugin}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    return tmp_path / "kubeconfig"


PLUGIN = """#!/bin/sh
echo run >> "$RUNS"
printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "%s"}}' \\
    "$(cat "$TOKEN")"
"""


def test_a_credential_plugin_runs_once_and_again_when_its_token_is_refused(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    token_path, runs = tmp_path / "token", tmp_path / "runs"
    token_path.write_text(bound_token(kube, account, "plugin-1"))
    _with_plugin(control_plane, tmp_path, PLUGIN, RUNS=runs, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        read = [client.get(SERVICE_ACCOUNT, ACCOUNT, account)["metadata"]["name"] for _ in range(20)]
        listed = client.list(kinds.CONFIG_MAP, account)[1]
        runs_before = len(runs.read_text().splitlines())
        held = _held(client)
        token_path.write_text(bound_token(kube, account, "plugin-2"))
        invalidate(control_plane, kube, account, "plugin-1", held)
        after = client.get(SERVICE_ACCOUNT, ACCOUNT, account)
    finally:
        client.close()

    assert read == [ACCOUNT] * 20 and listed
    assert runs_before == 1  # once for 21 requests, not once per request
    assert len(runs.read_text().splitlines()) == 2  # and once more when its token was refused
    assert after["metadata"]["name"] == ACCOUNT
    assert unauthorized_answers(client) == 1


SLOW_PLUGIN = """#!/bin/sh
if [ -e "$SLOW" ]; then sleep "$(cat "$SLOW")"; fi
printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "%s"}}' \\
    "$(cat "$TOKEN")"
"""


def test_a_write_refused_for_its_token_is_not_sent_again_once_the_write_fence_refuses_it(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    """Leadership can be lost while the credential plugin runs again: the write is sent again only if the fence
    still lets it through."""
    token_path, slow = tmp_path / "token", tmp_path / "slow"
    token_path.write_text(bound_token(kube, account, "fenced-1"))
    _with_plugin(control_plane, tmp_path, SLOW_PLUGIN, SLOW=slow, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        client.get(SERVICE_ACCOUNT, ACCOUNT, account)
        held = _held(client)
        token_path.write_text(bound_token(kube, account, "fenced-2"))
        invalidate(control_plane, kube, account, "fenced-1", held)
        slow.write_text("2")  # the plugin's next run takes 2 s; leadership is lost 1 s into it
        lost_at = time.monotonic() + 1.0

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": account}}
        with pytest.raises(okt.NotLeader), fence_mod.fenced(fence):
            client.create(body, kinds.CONFIG_MAP)
    finally:
        client.close()

    assert unauthorized_answers(client) == 1
    assert kube.get_or_none(kinds.CONFIG_MAP, "late", account) is None


EXPIRING_PLUGIN = """#!/bin/sh
if [ -e "$SLOW" ]; then sleep "$(cat "$SLOW")"; fi
status='{"token": "%s", "expirationTimestamp": "%s"}'
printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": '"$status"'}' \\
    "$(cat "$TOKEN")" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
"""
"""A plugin whose token expires as it is given: it is run again before every request."""


def test_a_write_whose_expiring_token_was_renewed_past_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    """The plugin runs again for a token about to expire before the write leaves, and may take long (a cloud CLI
    refreshing its own session): the fence is asked once the token is in hand, not before, and the write would go
    out on a kept-alive connection without connecting again."""
    token_path, slow = tmp_path / "token", tmp_path / "slow"
    token_path.write_text(bound_token(kube, account, "expiring"))
    _with_plugin(control_plane, tmp_path, EXPIRING_PLUGIN, SLOW=slow, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        client.get(SERVICE_ACCOUNT, ACCOUNT, account)  # a connection is kept alive for the write
        slow.write_text("2")  # the plugin's next run takes 2 s; leadership is lost 1 s into it
        lost_at = time.monotonic() + 1.0

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": account}}
        with pytest.raises(okt.NotLeader), fence_mod.fenced(fence):
            client.create(body, kinds.CONFIG_MAP)
    finally:
        client.close()

    assert kube.get_or_none(kinds.CONFIG_MAP, "late", account) is None
    assert client.stats.writes() == 0


def test_an_exec_whose_expiring_token_was_renewed_past_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    """An exec's websocket takes the token of the moment too: the fence is asked once its connection is made, with
    the token already in hand (the Pod does not exist: an exec that was sent is answered NotFound)."""
    token_path, slow = tmp_path / "token", tmp_path / "slow"
    token_path.write_text(bound_token(kube, account, "expiring"))
    _with_plugin(control_plane, tmp_path, EXPIRING_PLUGIN, SLOW=slow, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        slow.write_text("2")  # the plugin's next run takes 2 s; leadership is lost 1 s into it
        lost_at = time.monotonic() + 1.0

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        with pytest.raises(okt.NotLeader), fence_mod.fenced(fence):
            podexec.run(client, account, "operand", None, ["sh", "-c", "flush"], timeout=30)
    finally:
        client.close()


FAILING_PLUGIN = """#!/bin/sh
if [ -e "$DOWN" ]; then echo "the identity provider is down" >&2; exit 1; fi
printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "%s"}}' \\
    "$(cat "$TOKEN")"
"""
"""A plugin that fails once the file ``$DOWN`` exists (a cloud's identity provider down)."""


def connections_taken(client: kube_client.Client) -> int:
    """How many connections of the client's session to the API server are out of its pool: held by an answer not
    closed (never given back, however the answer ends)."""
    pools = client._session.get_adapter(client.base_url).poolmanager.pools
    keys = pools.keys()  # urllib3's container of pools has no iteration of its own
    return sum(pools[key].pool.maxsize - pools[key].pool.qsize() for key in keys)


def test_a_streamed_answer_refused_for_its_token_is_closed_when_the_renewal_fails(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    """The credential plugin fails when run again: the 401 of a list, a watch or a request read by a deadline (all
    streamed through the session) is closed, its connection given back, however often it happens."""
    token_path, down = tmp_path / "token", tmp_path / "down"
    token_path.write_text(bound_token(kube, account, "failing"))
    _with_plugin(control_plane, tmp_path, FAILING_PLUGIN, DOWN=down, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        client.list(kinds.CONFIG_MAP, account)
        taken_before = connections_taken(client)
        invalidate(control_plane, kube, account, "failing", _held(client))
        down.touch()
        path = kinds.CONFIG_MAP.collection_path(account)
        streamed = {
            "list": lambda: client.list(kinds.CONFIG_MAP, account),
            "watch": lambda: next(client.watch(kinds.CONFIG_MAP, account, resource_version="0")),
            "read by a deadline": lambda: client.request(
                "GET", path, verb="list", resource="configmaps", deadline=time.monotonic() + 10
            ),
        }
        refusals = []
        for read in [*streamed.values()] * 3:
            with pytest.raises(okt.Unauthorized) as refused:
                read()
            refusals.append(str(refused.value))
        taken = connections_taken(client)
    finally:
        client.close()

    assert all("the identity provider is down" in said for said in refusals), refusals
    assert taken_before == 0
    assert taken == 0  # each refused answer closed, though the renewal raised


def test_an_exec_whose_token_is_refused_is_sent_again_with_the_token_the_plugin_gives_again(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, account: str, tmp_path: pathlib.Path
) -> None:
    """The websocket's upgrade refused with 401 runs the plugin again, as any other request does, and is sent once
    more with its token: the API server then looks for the Pod (there is none: NotFound), not Unauthorized."""
    token_path, runs = tmp_path / "token", tmp_path / "runs"
    token_path.write_text(bound_token(kube, account, "exec-1"))
    _with_plugin(control_plane, tmp_path, PLUGIN, RUNS=runs, TOKEN=token_path)

    client = kube_client.Client.from_kubeconfig(tmp_path / "kubeconfig")
    try:
        held = _held(client)
        token_path.write_text(bound_token(kube, account, "exec-2"))
        invalidate(control_plane, kube, account, "exec-1", held)
        with pytest.raises(okt.ApiError) as answered:
            podexec.run(client, account, "operand", None, ["true"], timeout=30)
        renewed = _held(client)
        connections = client.stats.snapshot()[("connect", "pods/exec")]
    finally:
        client.close()

    assert type(answered.value) is okt.NotFound, answered.value
    assert len(runs.read_text().splitlines()) == 2  # once at start, once when the upgrade was refused
    assert renewed != held
    assert connections == 2  # the refused upgrade, and the one sent again
