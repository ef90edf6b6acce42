"""The memcached operator installed as users install it — ``kubectl apply -k`` of ``okt gen deploy``'s tree — runs
in its own Pod on the local node and reconciles with its generated ServiceAccount and RBAC.

The tree is generated from the sample (``python -m okt gen deploy``) and applied through a test overlay that changes
only what the local node lacks (docs/guide/testing.md, "The operator in its own Pod"): one replica on the host's
network with the API server's loopback address (no kube-proxy routes the ``kubernetes`` Service), and the
ServiceAccount token and CA mounted as the ServiceAccount admission of Kubernetes 1.21+ mounts them. The image is
made from this machine's Python, okt and the sample (:mod:`okt.testing.operator_image`).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, images, operator_image, waiting
from samples.memcached.memcached_operator import api
from samples.memcached.tests import harness

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "samples" / "memcached"
KUBECTL = "/usr/bin/kubectl"
NAME = "memcached-operator"
IMAGE = "okt-test/memcached-operator:node"
POD = kinds.BUILTIN[("v1", "Pod")]
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def image() -> str:
    """The sample's operator image in the local Docker (imported once per content: later sessions reuse it)."""
    built = operator_image.operator_image(
        IMAGE, {"app/main.py": SAMPLE / "main.py", "app/memcached_operator": SAMPLE / "memcached_operator"}
    )
    name, _imported = operator_image.ensure(built, out=lambda line: print(line, file=sys.stderr, flush=True))
    return name


def run(command: list[str], cwd: pathlib.Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, f"{command}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def node_overlay(
    base: dict[str, Any], plane: envtest.ControlPlane, probe_port: int, webhook_port: int
) -> list[dict[str, Any]]:
    """The JSON patch of the test overlay: what the local node lacks, nothing of the operator's own settings."""
    container = base["spec"]["template"]["spec"]["containers"][0]
    # on the host's network, the ports are the machine's: free ones instead of 8080 and the webhooks' 9443
    free = {"--metrics-bind-address": f":{probe_port}", "--webhook-port": str(webhook_port)}
    args = [
        f"{option}={free[option]}" if option in free else f"{option}={value}" if value else option
        for option, _, value in (arg.partition("=") for arg in container["args"])
    ]
    assert "--webhook-port=9443" in container["args"] and container["ports"][1]["name"] == "webhooks"
    spec = "/spec/template/spec"
    account = "/var/run/secrets/kubernetes.io/serviceaccount"
    return [
        {"op": "replace", "path": "/spec/replicas", "value": 1},
        {"op": "add", "path": f"{spec}/hostNetwork", "value": True},
        {"op": "replace", "path": f"{spec}/containers/0/args", "value": args},
        {"op": "replace", "path": f"{spec}/containers/0/ports/0/containerPort", "value": probe_port},
        {"op": "replace", "path": f"{spec}/containers/0/ports/1/containerPort", "value": webhook_port},
        {
            "op": "add",
            "path": f"{spec}/containers/0/env/-",
            "value": {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
        },
        {
            "op": "add",
            "path": f"{spec}/containers/0/env/-",
            "value": {"name": "KUBERNETES_SERVICE_PORT", "value": str(plane.port)},
        },
        {
            "op": "add",
            "path": f"{spec}/volumes",
            "value": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 0o444,
                        "sources": [
                            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {
                                "downwardAPI": {
                                    "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                                }
                            },
                        ],
                    },
                }
            ],
        },
        {
            "op": "add",
            "path": f"{spec}/containers/0/volumeMounts",
            "value": [{"name": "kube-api-access", "mountPath": account, "readOnly": True}],
        },
    ]


def operator_pods(kube: kube_client.Client, namespace: str) -> list[dict[str, Any]]:
    pods, _ = kube.list(POD, namespace, label_selector=f"app.kubernetes.io/name={NAME}")
    return pods


def pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def describe(plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str) -> str:
    """The operator Pods' states and last log lines, for a failed wait."""
    lines = []
    for pod in operator_pods(kube, namespace):
        name = pod["metadata"]["name"]
        statuses = json.dumps((pod.get("status") or {}).get("containerStatuses"))
        lines.append(f"{name}: {statuses}")
        for previous in ("--previous=false", "--previous=true"):
            logs = subprocess.run(
                [KUBECTL, "--kubeconfig", str(plane.kubeconfig), "logs", "-n", namespace, name, "--tail=20", previous],
                capture_output=True,
                text=True,
                check=False,
            )
            lines.append(f"logs {previous}:\n{logs.stdout}{logs.stderr}")
    return "\n".join(lines) or "no operator Pod"


@pytest.fixture
def installed(
    image: str,
    node_plane: envtest.ControlPlane,
    node_kube: kube_client.Client,
    node_namespace: str,
    tmp_path: pathlib.Path,
) -> Iterator[pathlib.Path]:
    """The generated tree applied through the node overlay into the test's namespace; cluster-wide RBAC removed after
    (the CRD stays: other tests of the session serve Memcacheds too)."""
    generate = [sys.executable, "-m", "okt", "gen", "deploy", str(SAMPLE / "main.py"), "--name", NAME]
    run([*generate, "--namespace", node_namespace, "--image", image, "--out", "config"], tmp_path)
    base = yaml.safe_load((tmp_path / "config" / "base" / "manager.yaml").read_text())
    overlay = tmp_path / "config" / "overlays" / "node"
    overlay.mkdir()
    patch = node_overlay(base, node_plane, *envtest.free_ports(2))
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../default"],
        "patches": [{"target": {"kind": "Deployment", "name": NAME}, "patch": json.dumps(patch)}],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    try:
        yield overlay
    finally:  # the webhooks first: with the operator gone they would refuse every Memcached of later tests
        admission = "admissionregistration.k8s.io/v1"
        node_kube.delete(node_kube.resolve(admission, "ValidatingWebhookConfiguration"), NAME)
        for kind in ("ClusterRoleBinding", "ClusterRole"):
            for name in (NAME, f"{NAME}-webhooks"):
                node_kube.delete(node_kube.resolve("rbac.authorization.k8s.io/v1", kind), name)


def test_the_applied_tree_runs_the_operator_in_its_pod_which_reconciles_a_memcached_with_its_own_rbac(
    installed: pathlib.Path, node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str
) -> None:
    applied = run([KUBECTL, "--kubeconfig", str(node_plane.kubeconfig), "apply", "-k", str(installed)], installed)
    assert f"deployment.apps/{NAME} created" in applied, applied

    waiting.wait_for(
        lambda: any(pod_ready(pod) for pod in operator_pods(node_kube, node_namespace)),
        timeout=TIMEOUT,
        message=lambda: f"the operator Pod Ready ({describe(node_plane, node_kube, node_namespace)})",
    )
    pod = operator_pods(node_kube, node_namespace)[0]
    assert pod["spec"]["nodeName"] == "localhost"
    assert pod["spec"]["serviceAccountName"] == NAME
    assert pod["spec"]["containers"][0]["image"] == IMAGE

    # the operator wrote the CA of the certificate it keeps in its Secret into its webhook configuration
    validating = node_kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    (hook,) = node_kube.get(validating, NAME)["webhooks"]
    tls = node_kube.get(kinds.BUILTIN[("v1", "Secret")], f"{NAME}-webhooks-tls", node_namespace)
    assert hook["clientConfig"]["caBundle"] == tls["data"]["ca.crt"]
    kind = node_kube.resolve(api.API_VERSION, api.KIND)
    memcacheds = harness.Memcacheds(node_kube, kind, node_namespace)
    # the API server calls the in-cluster webhook through its Service (failurePolicy Fail: no answer, no object)
    with pytest.raises(okt.ApiError, match=f'admission webhook "{hook["name"]}" denied the request'):
        memcacheds.create("floating", 1, "memcached:latest")
    memcacheds.create("cache", 1, images.MEMCACHED)
    try:
        waiting.wait_for(
            lambda: memcacheds.summary("cache").converged,
            timeout=TIMEOUT,
            message=lambda: (
                f"cache Ready with children ({memcacheds.summary('cache')}; "
                f"{describe(node_plane, node_kube, node_namespace)})"
            ),
        )
        children = memcacheds.children("cache")
        owner = children["Deployment"]["metadata"]["ownerReferences"][0]  # type: ignore[index]
        assert owner["kind"] == api.KIND and owner["name"] == "cache"
    finally:
        memcacheds.delete("cache")  # the operator (still running) removes its finalizer before the namespace goes
        memcacheds.wait_gone("cache", timeout=TIMEOUT)
