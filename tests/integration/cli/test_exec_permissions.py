"""What the API server authorizes of ``ctx.exec``'s websocket, and what ``okt run``'s permission check asks for it: a
websocket upgrade is a GET, which API servers before 1.30 authorize as ``get`` on ``pods/exec`` (later ones as
``create``), so an operator running ``ctx.exec`` needs both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

import okt
from okt import errors
from okt.cli import permissions
from okt.codegen import rbac
from okt.kube import client as kube_client
from okt.kube import kinds, podexec
from okt.testing import envtest
from tests.integration import service_accounts

pytestmark = pytest.mark.integration

ROLE = kinds.Kind("rbac.authorization.k8s.io/v1", "Role", "roles")
ROLE_BINDING = kinds.Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
SERVICE_ACCOUNT = kinds.Kind("v1", "ServiceAccount", "serviceaccounts")
POD = kinds.Kind("v1", "Pod", "pods")


class Execing(okt.Reconciler):
    """ConfigMaps, each reconcile running a command in a Pod; its ``permissions`` name ``create`` on pods/exec only."""

    api_version = "v1"
    kind = "ConfigMap"
    permissions: ClassVar = {("", "pods/exec"): ("create",)}


def _client_holding(
    kube: kube_client.Client, plane: envtest.ControlPlane, namespace: str, rules: Sequence[dict[str, Any]]
) -> kube_client.Client:
    """A client authenticated as a ServiceAccount of ``namespace`` bound to a Role of ``rules`` there."""
    metadata = {"name": "execer", "namespace": namespace}
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}, SERVICE_ACCOUNT)
    kube.create({"apiVersion": ROLE.api_version, "kind": "Role", "metadata": metadata, "rules": list(rules)}, ROLE)
    binding = {
        "apiVersion": ROLE_BINDING.api_version,
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "execer"},
        "subjects": [{"kind": "ServiceAccount", "name": "execer", "namespace": namespace}],
    }
    kube.create(binding, ROLE_BINDING)
    return kube_client.Client.from_kubeconfig(service_accounts.kubeconfig_of(kube, plane, namespace, "execer"))


@pytest.mark.parametrize(("verbs", "status"), [(["create"], 403), (["get"], 400)], ids=["create", "get"])
def test_the_api_server_authorizes_an_exec_websocket_as_get_on_pods_exec(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, verbs: list[str], status: int
) -> None:
    container = {"name": "operand", "image": "operand"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    kube.create({**pod, "spec": {"containers": [container]}}, POD)
    client = _client_holding(
        kube, control_plane, namespace, [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}]
    )
    try:
        with pytest.raises(errors.ApiError) as raised:  # no node runs the Pod: authorized, the exec fails after
            podexec.run(client, namespace, "operand", None, ["true"], timeout=10)
    finally:
        client.close()

    # 403 "cannot get resource pods/exec"; authorized, 400 "pod operand does not have a host assigned"
    assert raised.value.status == status, raised.value


def test_the_permission_check_of_an_operator_declaring_create_on_pods_exec_asks_for_get_too(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str
) -> None:
    # Only what the entry named was asked: an identity holding create alone passed, and every exec was refused.
    generated = rbac.rbac_for_reconcilers(
        [Execing], namespace=namespace, cluster_wide=False, leader_elect=False, metrics_auth=False
    )
    rules = [
        {**rule, "verbs": ["create"]} if rule["resources"] == ["pods/exec"] else rule
        for document in generated
        if document["kind"] == "Role"
        for rule in document["rules"]
    ]
    client = _client_holding(kube, control_plane, namespace, rules)
    warnings: list[str] = []
    try:
        refused = permissions.missing(
            client, [Execing], [namespace], leader_elect=False, lease_namespace=namespace, warn=warnings.append
        )
    finally:
        client.close()

    assert (refused, warnings) == ([permissions.Permission("get", "", "pods/exec", namespace)], [])
