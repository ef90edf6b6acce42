"""``okt gen deploy --watch-namespace/-l``: the tree of an operator serving some namespaces and labels, applied with
``kubectl apply -k`` to a real control plane, binds the operator's rules in those namespaces only, and its
Deployment and webhooks follow the same scope.

The operator's identity is asked about with kubectl's impersonation (``auth can-i --as``), the API server's own RBAC
authorizer answering, as it answers ``okt run``'s permission check.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL = "/usr/bin/kubectl"
NAME = "shop-operator"
OPERATOR = """
    import okt
    import pydantic


    class StallSpec(pydantic.BaseModel):
        size: int = pydantic.Field(default=1, ge=1)


    class StallConfig(okt.MutableResource):
        api_version = "v1"
        kind = "ConfigMap"


    class StallReconciler(okt.Reconciler):
        api_version = "scope.okt.example.com/v1alpha1"
        kind = "Stall"
        spec_model = StallSpec
        owns = (StallConfig,)
"""

pytestmark = pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")


def run(command: list[str], cwd: pathlib.Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, f"{command}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


@pytest.fixture
def namespaces(kube: kube_client.Client) -> Iterator[list[str]]:
    """The operator's namespace, two it serves and one it does not; the tree's cluster-scoped objects removed after."""
    token = secrets.token_hex(3)
    names = [f"okt-scope-{token}-{role}" for role in ("op", "a", "b", "other")]
    for name in names:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield names
    rbac = "rbac.authorization.k8s.io/v1"
    kube.delete(kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"), NAME)
    for kind, name in (
        ("ClusterRole", NAME),
        ("ClusterRole", f"{NAME}-webhooks"),
        ("ClusterRoleBinding", f"{NAME}-webhooks"),
    ):
        kube.delete(kube.resolve(rbac, kind), name)
    for name in names:
        kube.delete(kinds.NAMESPACE, name)


def test_the_tree_of_an_operator_serving_some_namespaces_binds_its_rules_there_only_and_runs_it_on_them(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespaces: list[str], tmp_path: pathlib.Path
) -> None:
    operator_namespace, served_a, served_b, unserved = namespaces
    (tmp_path / "main.py").write_text(textwrap.dedent(OPERATOR))
    scope = ["--watch-namespace", served_a, "--watch-namespace", served_b, "--selector", "shop=open"]
    identity = ["--name", NAME, "--namespace", operator_namespace, "--image", "registry.example.com/shop:0.1.0"]
    run([sys.executable, "-m", "okt", "gen", "deploy", "main.py", *identity, *scope], tmp_path)
    kubectl = [KUBECTL, "--kubeconfig", str(control_plane.kubeconfig)]

    applied = run([*kubectl, "apply", "-k", "config/overlays/default"], tmp_path)

    assert f"deployment.apps/{NAME} created" in applied, applied
    account = f"system:serviceaccount:{operator_namespace}:{NAME}"

    def can(verb: str, resource: str, namespace: str) -> bool:
        command = [*kubectl, "auth", "can-i", verb, resource, "-n", namespace, "--as", account]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        return completed.stdout.strip() == "yes"

    for served in (served_a, served_b):
        assert can("watch", "stalls.scope.okt.example.com", served)
        assert can("patch", "stalls.scope.okt.example.com/status", served)
        assert can("create", "configmaps", served)
    assert not can("list", "stalls.scope.okt.example.com", unserved)
    assert not can("create", "configmaps", unserved)
    # Its okt run leads on the Lease --lease-name names: that one alone it may read and update, any it may create.
    assert can("update", f"leases.coordination.k8s.io/{NAME}", operator_namespace)
    assert can("get", f"leases.coordination.k8s.io/{NAME}", operator_namespace)
    assert can("create", "leases.coordination.k8s.io", operator_namespace)
    assert not can("update", "leases.coordination.k8s.io/kube-scheduler", operator_namespace)
    assert not can("get", "leases.coordination.k8s.io/another-release", operator_namespace)
    deployment = kube.get(kube.resolve("apps/v1", "Deployment"), NAME, operator_namespace)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert sorted(arg for arg in args if arg.startswith("--namespace=")) == [
        f"--namespace={served_a}",
        f"--namespace={served_b}",
    ]
    assert "--selector=shop=open" in args and "--all-namespaces" not in args
    validating = kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    (hook,) = kube.get(validating, NAME, None)["webhooks"]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == sorted([served_a, served_b])
    assert hook["objectSelector"]["matchExpressions"] == [{"key": "shop", "operator": "In", "values": ["open"]}]
