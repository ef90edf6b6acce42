"""The write fence is asked when a write leaves the process, not before it waits its turn at the client's rate
limit: leadership can be lost during that wait, and the next leader may be writing by the time it ends."""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable

import pytest
import yaml

from okt import errors
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, operand_http, podexec
from okt.runtime import metrics as metrics_mod
from okt.testing import envtest
from tests.integration.relay import Relay

pytestmark = pytest.mark.integration

QPS = 0.5
"""One request every 2 s once the burst of one is spent."""


def test_a_write_that_waited_at_the_rate_limit_past_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    client = kube_client.Client.from_kubeconfig(
        control_plane.kubeconfig, rate_limit=kube_client.RateLimit(qps=QPS, burst=1)
    )
    try:
        client.get(kinds.NAMESPACE, namespace)  # the burst is spent: the next request waits about 1 / QPS
        lost_at = time.monotonic() + 0.5 / QPS  # leadership is lost halfway through that wait

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": namespace}}
        with pytest.raises(errors.NotLeader), fence_mod.fenced(fence):
            client.create(body, kinds.CONFIG_MAP)
        assert time.monotonic() >= lost_at
        assert kube.get_or_none(kinds.CONFIG_MAP, "late", namespace) is None
    finally:
        client.close()


def test_a_call_to_an_operand_that_waited_at_the_rate_limit_past_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    """A POST to an operand through the API server's proxy may change the operand: fenced as a write, at the moment
    it leaves the process."""
    client = kube_client.Client.from_kubeconfig(
        control_plane.kubeconfig, rate_limit=kube_client.RateLimit(qps=QPS, burst=1)
    )
    try:
        client.get(kinds.NAMESPACE, namespace)  # the burst is spent: the next request waits about 1 / QPS
        lost_at = time.monotonic() + 0.5 / QPS

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        target = operand_http.Target("pods", "operand", namespace)
        with pytest.raises(errors.NotLeader), fence_mod.fenced(fence):
            operand_http.call(client, target, "/flush", method="POST", port=8080)
        assert time.monotonic() >= lost_at
        assert client.stats.snapshot()[("proxy", "pods/proxy")] == 0
    finally:
        client.close()


def test_a_write_whose_connection_was_made_after_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The fence is asked again once the connection is made: making it (TCP, TLS) may take as long as the client's
    timeout, and the next leader may be writing by the time it is made."""
    relay = Relay(control_plane.url, hold_connections=True)
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = relay.url
    envtest.write_private(tmp_path / "relayed", yaml.safe_dump(config))
    client = kube_client.Client.from_kubeconfig(tmp_path / "relayed")
    lost = threading.Event()

    def fence(verb: str, resource: str) -> str | None:
        return "leadership lost" if lost.is_set() else None

    outcome: list[BaseException | None] = []

    def write() -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": namespace}}
        try:
            with fence_mod.fenced(fence):
                client.create(body, kinds.CONFIG_MAP)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    writer = threading.Thread(target=write, daemon=True)
    try:
        writer.start()
        assert relay.connected.wait(10), "the write connects"
        lost.set()  # leadership is lost while the connection is being made
        relay.proceed.set()
        writer.join(30)
        assert len(outcome) == 1
        assert isinstance(outcome[0], errors.NotLeader)
        assert kube.get_or_none(kinds.CONFIG_MAP, "late", namespace) is None
    finally:
        relay.close()
        client.close()


def _relayed_client(control_plane: envtest.ControlPlane, tmp_path: pathlib.Path) -> tuple[Relay, kube_client.Client]:
    """A client whose every new connection to the API server is held by a :class:`Relay` until it proceeds."""
    relay = Relay(control_plane.url, hold_connections=True)
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = relay.url
    envtest.write_private(tmp_path / "relayed", yaml.safe_dump(config))
    return relay, kube_client.Client.from_kubeconfig(tmp_path / "relayed")


def _lost_while_connecting(relay: Relay, write: Callable[[], object]) -> BaseException | None:
    """What ``write`` raised (None: nothing) when leadership is lost while its connection is being made."""
    lost = threading.Event()

    def fence(verb: str, resource: str) -> str | None:
        return "leadership lost" if lost.is_set() else None

    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            with fence_mod.fenced(fence):
                write()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    writer = threading.Thread(target=run, daemon=True)
    writer.start()
    assert relay.connected.wait(10), "the write connects"
    lost.set()
    relay.proceed.set()
    writer.join(30)
    assert len(outcome) == 1, "the write ended"
    return outcome[0]


def test_a_write_through_the_session_whose_connection_was_made_after_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A write with a deadline goes through the ``requests`` session (as every write does when the direct path is not
    available): its connection is made by urllib3, and the fence is asked again once it is made too."""
    relay, client = _relayed_client(control_plane, tmp_path)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": namespace}}
    try:
        outcome = _lost_while_connecting(
            relay,
            lambda: client.request(
                "POST",
                kinds.CONFIG_MAP.collection_path(namespace),
                verb="create",
                resource="configmaps",
                body=body,
                deadline=time.monotonic() + 30,
            ),
        )
        assert isinstance(outcome, errors.NotLeader)
        assert kube.get_or_none(kinds.CONFIG_MAP, "late", namespace) is None
        assert client.stats.writes() == 0
    finally:
        relay.close()
        client.close()


def test_a_write_refused_once_connected_is_never_counted_then_taken_back(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """``okt_api_requests_total`` counted a write before its connection was made and took it back when the fence
    refused it there: a scrape meanwhile read a count one higher than the next one, a decrease Prometheus reads as a
    restart of the process (``rate()`` then counts the whole count again)."""
    relay, client = _relayed_client(control_plane, tmp_path)
    metrics = metrics_mod.Metrics()
    metrics.watch_client(client)
    lost = threading.Event()
    scraped: list[float | None] = []

    def scrape() -> float:
        value = metrics.registry.get_sample_value(
            "okt_api_requests_total", {"verb": "create", "resource": "configmaps"}
        )
        return value or 0.0

    def fence(verb: str, resource: str) -> str | None:
        return "leadership lost" if lost.is_set() else None

    outcome: list[BaseException | None] = []

    def write() -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": namespace}}
        try:
            with fence_mod.fenced(fence):
                client.create(body, kinds.CONFIG_MAP)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    writer = threading.Thread(target=write, daemon=True)
    try:
        writer.start()
        assert relay.connected.wait(10), "the write connects"
        scraped.append(scrape())  # a scrape while the connection is being made
        lost.set()
        relay.proceed.set()
        writer.join(30)
        scraped.append(scrape())
        assert len(outcome) == 1
        assert isinstance(outcome[0], errors.NotLeader)
        assert scraped == [0.0, 0.0]  # nothing left the process: never counted, so never taken back
    finally:
        relay.close()
        client.close()


def test_an_exec_whose_connection_was_made_after_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """An exec may change the operand: its upgrade request is not written once leadership is lost, however long its
    websocket took to connect. (The Pod does not exist: an exec that was sent is answered NotFound.)"""
    relay, client = _relayed_client(control_plane, tmp_path)
    try:
        outcome = _lost_while_connecting(
            relay, lambda: podexec.run(client, namespace, "operand", None, ["sh", "-c", "flush"], timeout=30)
        )
        assert isinstance(outcome, errors.NotLeader), repr(outcome)
    finally:
        relay.close()
        client.close()


@pytest.mark.parametrize(
    ("method", "verb", "path"),
    [
        ("DELETE", "deletecollection", "{collection}"),
        ("POST", "post", "{collection}"),
        ("PUT", "replace", "{collection}/kept"),
    ],
)
def test_a_request_that_changes_the_server_is_fenced_whatever_verb_its_caller_names(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, method: str, verb: str, path: str
) -> None:
    """``Client.request`` is public: a hook may send a request of its own through ``ctx.client`` (a deletecollection,
    which the client has no method for) and name its verb as it likes. Whether the fence is asked went by that name
    alone (okt's five write verbs): a DELETE of a whole collection, named ``deletecollection`` as Kubernetes names
    it, left a replica that no longer led and emptied the namespace beside the next leader."""
    kept = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "namespace": namespace}}
    kube.create(kept, kinds.CONFIG_MAP)
    collection = kinds.CONFIG_MAP.collection_path(namespace)
    other = {**kept, "metadata": {"name": "other", "namespace": namespace}}
    bodies = {"DELETE": None, "POST": other, "PUT": kube.get(kinds.CONFIG_MAP, "kept", namespace)}
    written_before = kube.get(kinds.CONFIG_MAP, "kept", namespace)["metadata"]["resourceVersion"]

    with pytest.raises(errors.NotLeader), fence_mod.fenced(lambda verb, resource: "leadership lost"):
        kube.request(method, path.format(collection=collection), verb=verb, resource="configmaps", body=bodies[method])

    assert kube.get(kinds.CONFIG_MAP, "kept", namespace)["metadata"]["resourceVersion"] == written_before
    assert kube.get_or_none(kinds.CONFIG_MAP, "other", namespace) is None
