"""Pods on the local node really run: scheduled, started from local images, probed, reachable, exec-able.

And the workload readiness helpers (:class:`okt.resources.helpers.Readiness`) read what real controllers report:
a Deployment's available replicas dip when a Pod is killed and recover when its replacement is ready.
Every address touched is the IP of a Pod the test started itself.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.resources import helpers
from okt.testing import envtest, images, kubectl, waiting

pytestmark = pytest.mark.integration

POD = kinds.BUILTIN[("v1", "Pod")]
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
STATEFUL_SET = kinds.BUILTIN[("apps/v1", "StatefulSet")]
START_TIMEOUT = 60.0
WEB = "mkdir -p /www && echo served-by-$HOSTNAME > /www/index.html && exec httpd -f -p 8080 -h /www"
"""busybox's httpd serving one page: the Pod's readiness probe and the host both fetch it."""


def web_container() -> dict[str, Any]:
    return {
        "name": "web",
        "image": images.BUSYBOX,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", WEB],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1},
    }


def web_pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"containers": [web_container()], "terminationGracePeriodSeconds": 1},
    }


def web_workload(kind: str, name: str, namespace: str, replicas: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [web_container()], "terminationGracePeriodSeconds": 1},
        },
    }
    if kind == "StatefulSet":
        spec |= {"serviceName": name, "podManagementPolicy": "Parallel"}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod_ready(pod: dict[str, Any] | None) -> bool:
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait_pod_ready(kube: kube_client.Client, name: str, namespace: str) -> dict[str, Any]:
    found = waiting.wait_for(
        lambda: (pod := kube.get_or_none(POD, name, namespace)) and pod_ready(pod) and pod,
        timeout=START_TIMEOUT,
        interval=0.2,
        message=lambda: f"Pod {name} Ready (status: {(kube.get_or_none(POD, name, namespace) or {}).get('status')})",
    )
    assert isinstance(found, dict)
    return found


def fetch(ip: str, port: int = 8080) -> str:
    with urllib.request.urlopen(f"http://{ip}:{port}/index.html", timeout=5) as response:
        return str(response.read().decode().strip())


def test_a_pod_is_scheduled_runs_passes_its_readiness_probe_and_serves_on_its_pod_ip(
    node_kube: kube_client.Client, node_namespace: str
) -> None:
    node_kube.create(web_pod("web", node_namespace))

    pod = wait_pod_ready(node_kube, "web", node_namespace)

    assert pod["spec"]["nodeName"] == "localhost"
    assert pod["status"]["phase"] == "Running"
    assert fetch(pod["status"]["podIP"]) == "served-by-web"


def test_kubectl_exec_runs_a_command_in_the_pods_container(
    node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str
) -> None:
    node_kube.create(web_pod("shell", node_namespace))
    wait_pod_ready(node_kube, "shell", node_namespace)

    answer = kubectl.kubectl(
        node_plane.kubeconfig, "exec", "-n", node_namespace, "shell", "--", "cat", "/www/index.html"
    )

    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == "served-by-shell"


def test_a_killed_pod_makes_the_deployment_readiness_dip_until_its_replacement_is_ready(
    node_kube: kube_client.Client, node_namespace: str
) -> None:
    node_kube.create(web_workload("Deployment", "web", node_namespace, replicas=2))

    def readiness() -> helpers.Readiness:
        return helpers.Readiness.of(node_kube.get(DEPLOYMENT, "web", node_namespace))

    waiting.wait_for(lambda: readiness().available_all, timeout=START_TIMEOUT, message=lambda: f"{readiness()}")
    assert not readiness().progressing
    pods, _ = node_kube.list(POD, node_namespace, label_selector="app=web")
    killed = pods[0]["metadata"]["name"]

    node_kube.delete(POD, killed, node_namespace)

    dipped = waiting.wait_for(
        lambda: (now := readiness()).available < 2 and now, timeout=30, interval=0.02, message="the dip"
    )
    assert dipped.available == 1
    assert not dipped.available_all
    assert dipped.progressing
    waiting.wait_for(lambda: readiness().available_all, timeout=START_TIMEOUT, message=lambda: f"{readiness()}")
    pods, _ = node_kube.list(POD, node_namespace, label_selector="app=web")
    running = [p for p in pods if pod_ready(p) and not p["metadata"].get("deletionTimestamp")]
    assert len(running) == 2
    assert killed not in {p["metadata"]["name"] for p in running}
    assert {fetch(p["status"]["podIP"]) for p in running} == {f"served-by-{p['metadata']['name']}" for p in running}


def test_a_stateful_sets_ready_replicas_are_counted_from_its_real_pods(
    node_kube: kube_client.Client, node_namespace: str
) -> None:
    node_kube.create(web_workload("StatefulSet", "db", node_namespace, replicas=2))

    def readiness() -> helpers.Readiness:
        return helpers.Readiness.of(node_kube.get(STATEFUL_SET, "db", node_namespace))

    ready = waiting.wait_for(
        lambda: (now := readiness()).ready == 2 and now, timeout=START_TIMEOUT, message=lambda: f"{readiness()}"
    )

    assert ready.observed
    assert ready.updated == 2
    assert not ready.progressing
