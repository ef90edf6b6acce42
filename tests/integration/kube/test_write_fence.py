"""The write fence is asked when a write leaves the process, not before it waits its turn at the client's rate
limit: leadership can be lost during that wait, and the next leader may be writing by the time it ends."""

from __future__ import annotations

import time

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, operand_http
from okt.testing import envtest

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
        with pytest.raises(errors.NotLeader), kube_client.fenced(fence):
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
        with pytest.raises(errors.NotLeader), kube_client.fenced(fence):
            operand_http.call(client, target, "/flush", method="POST", port=8080)
        assert time.monotonic() >= lost_at
        assert client.stats.snapshot()[("proxy", "pods/proxy")] == 0
    finally:
        client.close()
