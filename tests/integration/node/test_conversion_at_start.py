"""A starting operator whose watched kind's stored objects need its own conversion webhook to be listed: installed as
users install it (``okt gen deploy``'s tree, through the node overlay of :mod:`test_operator_in_cluster`), its Pod
is ready once its webhook server serves, is called for the conversion its sync waits for, and syncs.

The kind was served in v1alpha1 only when its objects were stored; the operator's CRD adds v1beta1, stores that
version and converts through the operator's webhook Service. Listing the v1beta1 objects the operator watches makes
the API server convert each stored v1alpha1 object through that Service, which routes to ready Pods only: a Pod
ready only once that list is done would never be called, nor sync.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest, operator_image, waiting
from tests.integration import converting
from tests.integration.node import test_operator_in_cluster as in_cluster

pytestmark = pytest.mark.integration

GROUP = "start.node.okt.example.com"
NAME = "gadget-operator"
IMAGE = "okt-test/gadget-operator:node"
ALPHA = kinds.Kind(f"{GROUP}/v1alpha1", "Gadget", "gadgets")
BETA = kinds.Kind(f"{GROUP}/v1beta1", "Gadget", "gadgets")
POD = kinds.BUILTIN[("v1", "Pod")]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return converting.gadget_operator(tmp_path_factory.mktemp("gadgets"), GROUP)


@pytest.fixture(scope="module")
def image(source: pathlib.Path) -> str:
    built = operator_image.operator_image(IMAGE, {"app/main.py": source})
    name, _imported = operator_image.ensure(built, out=lambda line: print(line, file=sys.stderr, flush=True))
    return name


def operator_pods(kube: kube_client.Client, namespace: str) -> list[dict[str, Any]]:
    pods, _ = kube.list(POD, namespace, label_selector=f"app.kubernetes.io/name={NAME}")
    return pods


def pod_log(plane: envtest.ControlPlane, namespace: str, name: str, *options: str) -> str:
    logs = subprocess.run(
        [in_cluster.KUBECTL, "--kubeconfig", str(plane.kubeconfig), "logs", "-n", namespace, name, *options],
        capture_output=True,
        text=True,
        check=False,
    )
    return logs.stdout + logs.stderr


def describe(plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str) -> str:
    """The operator Pods' states and last log lines, for a failed wait."""
    lines = []
    for pod in operator_pods(kube, namespace):
        name = pod["metadata"]["name"]
        lines.append(f"{name}: {json.dumps((pod.get('status') or {}).get('conditions'))}")
        lines.append(pod_log(plane, namespace, name, "--tail=10"))
    return "\n".join(lines) or "no operator Pod"


@pytest.fixture
def overlay(
    image: str,
    source: pathlib.Path,
    node_plane: envtest.ControlPlane,
    node_kube: kube_client.Client,
    node_namespace: str,
    tmp_path: pathlib.Path,
) -> Iterator[pathlib.Path]:
    """The generated tree with the node overlay; its cluster-wide objects (the CRD, the RBAC) removed after."""
    generate = [sys.executable, "-m", "okt", "gen", "deploy", str(source), "--name", NAME]
    in_cluster.run([*generate, "--namespace", node_namespace, "--image", image, "--out", "config"], tmp_path)
    base = yaml.safe_load((tmp_path / "config" / "base" / "manager.yaml").read_text())
    directory = tmp_path / "config" / "overlays" / "node"
    directory.mkdir()
    patch = in_cluster.node_overlay(base, node_plane, *envtest.free_ports(2))
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../default"],
        "patches": [{"target": {"kind": "Deployment", "name": NAME}, "patch": json.dumps(patch)}],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    try:
        yield directory
    finally:
        node_kube.delete(kinds.CRD, f"gadgets.{GROUP}")
        for kind in ("ClusterRoleBinding", "ClusterRole"):
            for name in (NAME, f"{NAME}-webhooks"):
                node_kube.delete(node_kube.resolve("rbac.authorization.k8s.io/v1", kind), name)


def test_a_starting_operator_is_called_for_the_conversion_its_sync_waits_for_and_becomes_ready(
    overlay: pathlib.Path, node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str
) -> None:
    crds.ensure_crd(node_kube, crds.schemaless_crd(GROUP, "Gadget", "gadgets", "v1alpha1"))
    stored = {
        "apiVersion": ALPHA.api_version,
        "kind": "Gadget",
        "metadata": {"name": "red", "namespace": node_namespace},
        "spec": {"colour": "red"},
    }
    node_kube.create(stored, ALPHA)

    kubectl = [in_cluster.KUBECTL, "--kubeconfig", str(node_plane.kubeconfig)]
    applied = in_cluster.run([*kubectl, "apply", "-k", str(overlay)], overlay)
    assert f"deployment.apps/{NAME} created" in applied, applied

    waiting.wait_for(
        lambda: any(in_cluster.pod_ready(pod) for pod in operator_pods(node_kube, node_namespace)),
        timeout=in_cluster.TIMEOUT,
        message=lambda: f"the operator Pod Ready ({describe(node_plane, node_kube, node_namespace)})",
    )
    # Ready, then synced: the list its caches waited for went through its own conversion webhook.
    waiting.wait_for(
        lambda: any(
            "caches synced" in pod_log(node_plane, node_namespace, pod["metadata"]["name"])
            for pod in operator_pods(node_kube, node_namespace)
        ),
        timeout=in_cluster.TIMEOUT,
        message=lambda: f"the operator's caches synced ({describe(node_plane, node_kube, node_namespace)})",
    )
    assert node_kube.get(BETA, "red", node_namespace)["spec"] == {"color": "red"}
