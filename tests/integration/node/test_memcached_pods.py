"""The memcached sample's Available/Progressing conditions follow real Pods on the local node.

No status is patched by hand here: the Deployment and ReplicaSet controllers count Pods the kubelet really started
and probed, and the operator derives the Memcached's conditions from that.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, envtest, images, waiting
from samples.memcached.memcached_operator import MemcachedReconciler
from samples.memcached.tests import harness

pytestmark = pytest.mark.integration

POD = kinds.BUILTIN[("v1", "Pod")]
TIMEOUT = 90.0


@pytest.fixture
def memcacheds(
    node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str
) -> Iterator[harness.Memcacheds]:
    """The operator (okt's Manager, in this process) watching the test's namespace on the node's control plane."""
    yield from running_sample(MemcachedReconciler, node_plane, node_kube, node_namespace)


def running_sample(
    reconciler: type[MemcachedReconciler],
    plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
) -> Iterator[harness.Memcacheds]:
    """The sample's CRD applied and ``reconciler`` running in this process until the generator is closed."""
    kind = harness.apply_crd(kube, plane=plane)
    with RunningOperator.start(kube, reconciler, namespaces=[namespace]):
        yield harness.Memcacheds(kube, kind, namespace)


def conditions(memcacheds: harness.Memcacheds, name: str) -> dict[str, tuple[str, str]]:
    """The Memcached's conditions as ``type -> (status, reason)``, for its current generation only."""
    obj = memcacheds.get(name) or {}
    generation = (obj.get("metadata") or {}).get("generation")
    return {
        c["type"]: (c["status"], c.get("reason", ""))
        for c in (obj.get("status") or {}).get("conditions") or ()
        if c.get("observedGeneration") == generation
    }


def wait_conditions(memcacheds: harness.Memcacheds, name: str, timeout: float = TIMEOUT, **wanted: str) -> None:
    """Wait until each named condition has the wanted status (``Available="True"``)."""
    waiting.wait_for(
        lambda: all(conditions(memcacheds, name).get(t, ("", ""))[0] == s for t, s in wanted.items()),
        timeout=timeout,
        interval=0.1,
        message=lambda: f"{name} {wanted} (now: {conditions(memcacheds, name)})",
    )


def memcached_pods(memcacheds: harness.Memcacheds, name: str) -> list[dict[str, Any]]:
    pods, _ = memcacheds.client.list(POD, memcacheds.namespace, label_selector=f"app.kubernetes.io/instance={name}")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def memcached_stats(ip: str) -> dict[str, str]:
    """memcached's ``stats`` over TCP from one Pod the test started."""
    with socket.create_connection((ip, 11211), timeout=5) as conn:
        conn.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    fields = (line.split(" ", 2) for line in data.decode().splitlines() if line.startswith("STAT "))
    return {parts[1]: parts[2] for parts in fields if len(parts) == 3}


def test_available_follows_real_pods_through_a_killed_pod_and_back(memcacheds: harness.Memcacheds) -> None:
    memcacheds.create("cache", 2, images.MEMCACHED)

    wait_conditions(memcacheds, "cache", Available="True", Progressing="False", Degraded="False", Ready="True")
    pods = memcached_pods(memcacheds, "cache")
    assert len(pods) == 2
    assert memcached_stats(pods[0]["status"]["podIP"])["version"].startswith("1.6")
    assert (memcacheds.get("cache") or {})["status"]["availableReplicas"] == 2

    memcacheds.client.delete(POD, pods[0]["metadata"]["name"], memcacheds.namespace)

    wait_conditions(memcacheds, "cache", Available="False", Progressing="True")
    assert conditions(memcacheds, "cache")["Available"] == ("False", "ReplicasUnavailable")
    wait_conditions(memcacheds, "cache", Available="True", Progressing="False", Degraded="False")
    after = memcached_pods(memcacheds, "cache")
    assert pods[0]["metadata"]["name"] not in {p["metadata"]["name"] for p in after}
    assert len(after) == 2


def failures(memcacheds: harness.Memcacheds, name: str) -> int:
    """How many times the Memcached's containers failed to start (restarts, or a waiting state with an error)."""
    count = 0
    for pod in memcached_pods(memcacheds, name):
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            waiting_reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            count += int(status.get("restartCount") or 0) + (waiting_reason in START_FAILURES)
    return count


START_FAILURES = frozenset({"RunContainerError", "CrashLoopBackOff", "CreateContainerError"})
STUCK_FOR = 3.0


def test_an_image_whose_command_cannot_start_leaves_the_rollout_stuck(memcacheds: harness.Memcacheds) -> None:
    # busybox has no entrypoint: the sample's arguments (-m 64 ...) become a command that does not exist
    memcacheds.create("broken", 1, images.BUSYBOX)

    waiting.wait_for(lambda: failures(memcacheds, "broken") >= 1, timeout=TIMEOUT, message="the container to fail")

    deadline = time.monotonic() + STUCK_FOR
    while time.monotonic() < deadline:  # stuck: nothing changes while the container keeps failing
        found = conditions(memcacheds, "broken")
        assert found["Available"] == ("False", "ReplicasUnavailable")
        assert found["Progressing"] == ("True", "RollingOut")
        assert (memcacheds.get("broken") or {})["status"]["availableReplicas"] == 0
        time.sleep(0.5)


class ImpatientMemcachedReconciler(MemcachedReconciler):
    """The sample with a 5-second rollout deadline: a stuck rollout is reported within seconds, not 10 minutes."""

    params = {**MemcachedReconciler.params, "progress_deadline_seconds": 5}


@pytest.fixture
def impatient_memcacheds(
    node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str
) -> Iterator[harness.Memcacheds]:
    yield from running_sample(ImpatientMemcachedReconciler, node_plane, node_kube, node_namespace)


def degraded_condition(memcacheds: harness.Memcacheds, name: str) -> dict[str, Any]:
    found = [
        c for c in ((memcacheds.get(name) or {}).get("status") or {}).get("conditions") or () if c["type"] == "Degraded"
    ]
    return found[0] if found else {}


def test_a_rollout_stuck_past_its_deadline_turns_the_memcached_degraded_with_the_deployments_reason(
    impatient_memcacheds: harness.Memcacheds,
) -> None:
    memcacheds = impatient_memcacheds
    memcacheds.create("stuck", 1, images.BUSYBOX)  # busybox cannot run memcached's arguments: no progress, ever
    wait_conditions(memcacheds, "stuck", Available="False", Degraded="False")

    wait_conditions(memcacheds, "stuck", timeout=TIMEOUT, Degraded="True")

    degraded = degraded_condition(memcacheds, "stuck")
    assert degraded["reason"] == "ProgressDeadlineExceeded"
    assert degraded["message"].startswith("Deployment stuck: ")
    found = conditions(memcacheds, "stuck")
    assert found["Available"] == ("False", "ReplicasUnavailable")
    assert found["Progressing"] == ("False", "ProgressDeadlineExceeded")  # as the Deployment says: given up
    assert found["Ready"][0] == "True"  # the operator did its part: the children are as desired
    deployment = memcacheds.client.get(kinds.BUILTIN[("apps/v1", "Deployment")], "stuck", memcacheds.namespace)
    assert deployment["spec"]["progressDeadlineSeconds"] == 5
