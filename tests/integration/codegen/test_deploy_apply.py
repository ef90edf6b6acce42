"""``kubectl apply -k`` of ``okt gen deploy``'s tree installs the operator on a real control plane.

The tree is generated as a user does (``python -m okt gen deploy FILE``) and applied with the machine's real kubectl
(1.32, kustomize built in) to the session's kube-apiserver. The operator's Deployment is created (the controller
manager rolls out its ReplicaSet); its Pods need an image and a node, which are other tests' business. The OLM
bundle's CRD files are checked by the API server too (server-side dry run: the control plane has no OLM to take the
ClusterServiceVersion).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, waiting

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL = "/usr/bin/kubectl"
OPERATOR = """
    import okt
    import pydantic


    class GizmoSpec(pydantic.BaseModel):
        size: int = pydantic.Field(default=1, ge=1)


    class GizmoConfig(okt.MutableResource):
        api_version = "v1"
        kind = "ConfigMap"


    class GizmoReconciler(okt.Reconciler):
        api_version = "deploy.okt.example.com/v1alpha1"
        kind = "Gizmo"
        spec_model = GizmoSpec
        owns = (GizmoConfig,)


    class GadgetSpecAlpha(pydantic.BaseModel):
        colour: str


    class GadgetReconciler(okt.Reconciler):
        api_version = "deploy.okt.example.com/v1beta1"
        kind = "Gadget"
        spec_models = {"v1alpha1": GadgetSpecAlpha}
        converters = {
            ("v1alpha1", "v1beta1"): lambda spec: {"color": spec.colour},
            ("v1beta1", "v1alpha1"): lambda spec: {"colour": spec["color"]},
        }
"""

pytestmark = pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")


def run(command: list[str], cwd: pathlib.Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, f"{command}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def test_kubectl_apply_k_installs_the_generated_tree(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    (tmp_path / "main.py").write_text(textwrap.dedent(OPERATOR))
    okt_gen = [sys.executable, "-m", "okt", "gen"]
    identity = ["--name", "gizmo-operator", "--image", "registry.example.com/gizmo-operator:0.3.0"]
    run([*okt_gen, "deploy", "main.py", "--namespace", "gizmo-system", *identity], tmp_path)
    run([*okt_gen, "bundle", "main.py", "--version", "0.3.0", *identity], tmp_path)
    kubectl = [KUBECTL, "--kubeconfig", str(control_plane.kubeconfig)]

    for bundled in ("gizmos", "gadgets"):
        manifest = f"bundle/manifests/{bundled}.deploy.okt.example.com.yaml"
        run([*kubectl, "apply", "--dry-run=server", "-f", manifest], tmp_path)
    applied = run([*kubectl, "apply", "-k", "config/overlays/default"], tmp_path)

    assert "deployment.apps/gizmo-operator created" in applied, applied
    crds = kube.resolve("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert kube.get(crds, "gizmos.deploy.okt.example.com", None)["spec"]["names"]["kind"] == "Gizmo"
    assert kube.get(kinds.NAMESPACE, "gizmo-system", None)
    assert kube.get(kube.resolve("v1", "ServiceAccount"), "gizmo-operator", "gizmo-system")
    binding = kube.get(kube.resolve("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), "gizmo-operator", None)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gizmo-operator", "namespace": "gizmo-system"}]
    deployment = kube.get(kube.resolve("apps/v1", "Deployment"), "gizmo-operator", "gizmo-system")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.example.com/gizmo-operator:0.3.0"
    assert pod["serviceAccountName"] == "gizmo-operator"
    # Gizmo has a spec model, so a validating webhook: its Service and configuration, moved to the namespace
    service = kube.get(kube.resolve("v1", "Service"), "gizmo-operator-webhooks", "gizmo-system")
    assert service["spec"]["ports"][0]["targetPort"] == "webhooks"
    validating = kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    (hook,) = kube.get(validating, "gizmo-operator", None)["webhooks"]
    assert hook["clientConfig"]["service"]["namespace"] == "gizmo-system"
    role = kube.get(kube.resolve("rbac.authorization.k8s.io/v1", "Role"), "gizmo-operator-webhooks", "gizmo-system")
    assert role["rules"][0]["resourceNames"] == ["gizmo-operator-webhooks-tls"]
    assert "--webhook-configuration=gizmo-operator" in pod["containers"][0]["args"]
    # Gadget has converters: its CRD converts through the same Service, moved to the namespace too
    conversion = kube.get(crds, "gadgets.deploy.okt.example.com", None)["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["clientConfig"]["service"] == {
        "name": "gizmo-operator-webhooks",
        "namespace": "gizmo-system",
        "path": "/convert/gadget",
        "port": 443,
    }
    cluster_role = kube.get(
        kube.resolve("rbac.authorization.k8s.io/v1", "ClusterRole"), "gizmo-operator-webhooks", None
    )
    assert {"gadgets.deploy.okt.example.com"} == {
        name
        for rule in cluster_role["rules"]
        if rule["apiGroups"] == ["apiextensions.k8s.io"]
        for name in rule["resourceNames"]
    }
    replica_sets = kube.resolve("apps/v1", "ReplicaSet")
    waiting.wait_for(
        lambda: kube.list(replica_sets, "gizmo-system", label_selector="app.kubernetes.io/name=gizmo-operator")[0],
        timeout=60,
        message="the Deployment's ReplicaSet",
    )
