"""An operator whose webhooks judge a built-in kind it runs as never locks out its own Deployment.

An operator of Deployments with a ``check`` has a validating webhook on every Deployment, ``failurePolicy: Fail``.
When the operator is down, nothing answers that webhook: were its own Deployment judged too, the update that would
fix it (a new image, a rollback) would be refused, and its ReplicaSet never created — a deadlock only a cluster admin
deleting the configuration ends. The tree ``okt gen deploy`` writes is applied here with ``kubectl apply -k``, through
an overlay that renames and relabels everything as installations do (``namePrefix``, ``commonLabels``), to a real
control plane where the operator's Pods never run (no image): its own Deployment still rolls out and updates, while
every other Deployment is refused, unjudged.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, waiting

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL = "/usr/bin/kubectl"
NAME = "team-guard-operator"  # as the overlay's namePrefix makes it
NAMESPACE = "guard-system"
OTHER_NAMESPACE = "guard-apps"
OPERATOR = """
    import okt


    class DeploymentGuard(okt.Reconciler):
        api_version = "apps/v1"
        kind = "Deployment"

        def check(self, ctx):
            return None
"""
OVERLAY = """
    apiVersion: kustomize.config.k8s.io/v1beta1
    kind: Kustomization
    resources:
    - ../default
    namePrefix: team-
    commonLabels:
      app.kubernetes.io/name: team-guard
"""

pytestmark = pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")


def run(command: list[str], cwd: pathlib.Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, f"{command}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


@pytest.fixture
def cleanup(control_plane: envtest.ControlPlane, kube: kube_client.Client, tmp_path: pathlib.Path) -> Iterator[None]:
    """The tree's objects removed after, the webhook configuration first: left behind, it would refuse every
    Deployment of the other tests sharing the control plane."""
    yield
    kube.delete(kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"), NAME)
    kubectl = [KUBECTL, "--kubeconfig", str(control_plane.kubeconfig)]
    run([*kubectl, "delete", "-k", "config/overlays/team", "--ignore-not-found", "--wait=false"], tmp_path)
    kube.delete(kinds.NAMESPACE, OTHER_NAMESPACE)


def deployment(name: str, labels: dict[str, str]) -> dict[str, object]:
    container = {"name": "app", "image": "registry.example.com/app:1"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": OTHER_NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def test_the_operator_s_own_deployment_updates_while_its_webhook_is_down_and_others_are_still_judged(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, tmp_path: pathlib.Path, cleanup: None
) -> None:
    (tmp_path / "main.py").write_text(textwrap.dedent(OPERATOR))
    identity = ["--name", "guard-operator", "--namespace", NAMESPACE, "--image", "registry.example.com/guard:0.1.0"]
    run([sys.executable, "-m", "okt", "gen", "deploy", "main.py", *identity], tmp_path)
    (tmp_path / "config/overlays/team").mkdir()
    (tmp_path / "config/overlays/team/kustomization.yaml").write_text(textwrap.dedent(OVERLAY))
    kubectl = [KUBECTL, "--kubeconfig", str(control_plane.kubeconfig)]
    applied = run([*kubectl, "apply", "-k", "config/overlays/team"], tmp_path)
    assert f"validatingwebhookconfiguration.admissionregistration.k8s.io/{NAME} created" in applied, applied
    deployments = kube.resolve("apps/v1", "Deployment")

    # The webhook is down (its Service has no endpoints): the operator's own Deployment is fixed all the same ...
    fixed = kube.patch(
        deployments, NAME, {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 41}}}}, NAMESPACE
    )

    assert fixed["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 41
    # ... and its controller creates the ReplicaSets of both templates (a ReplicaSet carries its template's labels).
    replica_sets = kube.resolve("apps/v1", "ReplicaSet")
    waiting.wait_for(
        lambda: len(kube.list(replica_sets, NAMESPACE)[0]) == 2, timeout=60, message="the operator's ReplicaSets"
    )
    # Any other Deployment is still judged: unanswered under failurePolicy Fail, refused.
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OTHER_NAMESPACE}}, kinds.NAMESPACE)
    with pytest.raises(errors.ApiError, match="failed calling webhook"):
        kube.create(deployment("shop", {"app.kubernetes.io/name": "shop"}), deployments)
