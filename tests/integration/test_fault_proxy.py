"""The fault-injecting proxy forwards faithfully at rate 0 and injects every kind of fault, reproducibly, above it."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, faults

_MADE: list[kube_client.Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """The clients a test made through its proxy are closed after it (left to the garbage collector, their sockets
    were said unclosed during a later test, one that records the warnings it gets)."""
    yield
    while _MADE:
        _MADE.pop().close()


def client_through(proxy: faults.FaultProxy, plane: envtest.ControlPlane, tmp_path: pathlib.Path) -> kube_client.Client:
    client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(plane.kubeconfig, tmp_path / "kubeconfig-proxy"))
    _MADE.append(client)
    return client


def configmap(name: str, namespace: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def test_a_proxy_at_rate_zero_is_a_transparent_pipe(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        for i in range(10):
            client.create(configmap(f"c{i}", namespace), kinds.CONFIG_MAP)
        items, _ = client.list(kinds.CONFIG_MAP, namespace)
    assert sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("c")) == [
        f"c{i}" for i in range(10)
    ]
    assert sum(proxy.injected.values()) == 0


def test_faults_are_injected_and_lost_responses_still_write(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    with faults.FaultProxy(
        control_plane.url, str(control_plane.ca_file), rate=0.5, seed=7, kinds=("500", "409", "lost-response")
    ) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        acknowledged = 0
        for i in range(60):
            try:
                client.create(configmap(f"f{i}", namespace), kinds.CONFIG_MAP)
                acknowledged += 1
            except errors.ApiError as exc:
                assert isinstance(exc, errors.ServerError | errors.Conflict)
    items, _ = kube.list(kinds.CONFIG_MAP, namespace)
    stored = sum(1 for i in items if i["metadata"]["name"].startswith("f"))
    assert set(proxy.injected) == {"500", "409", "lost-response"}
    assert stored == acknowledged + proxy.injected["lost-response"]


def test_a_dropped_watch_stream_ends_early(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    for i in range(30):
        kube.create(configmap(f"w{i}", namespace), kinds.CONFIG_MAP)
    with faults.FaultProxy(
        control_plane.url, str(control_plane.ca_file), rate=1.0, seed=3, kinds=("watch-drop",)
    ) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        events = []
        with pytest.raises(errors.Unavailable):
            for event in client.watch(kinds.CONFIG_MAP, namespace, resource_version="0", timeout_seconds=5):
                events.append(event)
    assert proxy.injected["watch-drop"] == 1
    assert len(events) < 30


def test_a_refusal_answers_the_writes_of_its_resource_only_as_the_api_server_throttles(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    kube.create(configmap("before", namespace), kinds.CONFIG_MAP)
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        with proxy.refusing("configmaps", "429", retry_after=7) as refused:
            with pytest.raises(errors.TooManyRequests) as caught:
                client.create(configmap("during", namespace), kinds.CONFIG_MAP)
            assert client.get(kinds.CONFIG_MAP, "before", namespace)["metadata"]["name"] == "before"  # reads pass
            secret = {**configmap("s", namespace), "kind": "Secret"}
            client.create(secret, kinds.BUILTIN[("v1", "Secret")])  # another resource's write passes
        client.create(configmap("after", namespace), kinds.CONFIG_MAP)
    assert caught.value.retry_after == 7
    assert (len(refused), proxy.injected["429"]) == (1, 1)
    assert kube.get_or_none(kinds.CONFIG_MAP, "during", namespace) is None
    assert kube.get_or_none(kinds.CONFIG_MAP, "after", namespace) is not None


@pytest.mark.parametrize(("answer", "retry_after"), [("404", None), ("500", 3), ("429", 0)])
def test_a_refusal_the_proxy_cannot_give_is_refused_before_the_block(
    control_plane: envtest.ControlPlane, answer: str, retry_after: int | None
) -> None:
    proxy = faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0)
    try:
        with pytest.raises(ValueError), proxy.refusing("configmaps", answer, retry_after=retry_after):
            pass
    finally:
        proxy.stop()
