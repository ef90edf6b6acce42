"""A conversion webhook called by the API server through the operator's Service, with the CA ``okt run`` wrote.

``okt run --webhook-service --webhook-configuration`` (the arguments of ``okt gen deploy``'s Deployment) runs on this
machine; the Service in front of it has hand-written Endpoints with the node's address (what the endpoints
controller writes for a Pod on the host's network). The node's control plane routes webhook calls to a Service's
endpoints (no kube-proxy), and verifies the served certificate against the CRD's ``caBundle`` for the name
``<service>.<namespace>.svc``: an object created as v1alpha1 and read as v1beta1 has gone through all of it.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from okt.codegen import crd, webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import loader
from okt.testing import OperatorProcess, crds, envtest, wait_for
from tests.integration import converting

pytestmark = pytest.mark.integration

SERVICE = "gadget-operator-webhooks"
ALPHA = kinds.Kind("conv.node.okt.example.com/v1alpha1", "Gadget", "gadgets")
BETA = kinds.Kind("conv.node.okt.example.com/v1beta1", "Gadget", "gadgets")


def node_address(client: kube_client.Client) -> str:
    (node,), _version = client.list(kinds.BUILTIN[("v1", "Node")], None)
    return next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")


def service_to_this_machine(namespace: str, port: int, address: str) -> list[dict[str, Any]]:
    """A Service without a selector and its Endpoints: port 443 to ``address:port``."""
    metadata = {"name": SERVICE, "namespace": namespace}
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata,
            "spec": {"ports": [{"port": 443, "targetPort": port}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": metadata,
            "subsets": [{"addresses": [{"ip": address}], "ports": [{"port": port}]}],
        },
    ]


@pytest.fixture
def gadgets(node_kube: kube_client.Client, node_namespace: str, tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    source = converting.gadget_operator(tmp_path, "conv.node.okt.example.com", stored_model=True)
    (reconciler,) = loader.load_reconcilers(str(source))
    client_config = webhooks.ClientConfig(service=SERVICE, namespace=node_namespace)
    definition = crd.crd_for_reconciler(reconciler, webhooks.conversion_client_config(reconciler, client_config))
    crds.ensure_crd(node_kube, definition)
    try:
        yield source
    finally:
        node_kube.delete(kinds.CRD, definition["metadata"]["name"])


def test_the_api_server_converts_through_the_operators_service_with_the_ca_it_wrote(
    node_plane: envtest.ControlPlane, node_kube: kube_client.Client, node_namespace: str, gadgets: pathlib.Path
) -> None:
    args = ["--webhook-service", SERVICE, "--webhook-configuration", "gadget-operator"]
    running = OperatorProcess.okt_run(
        gadgets,
        kubeconfig=node_plane.kubeconfig,
        namespaces=[node_namespace],
        args=args,
        log_path=gadgets.with_suffix(".log"),
    )
    with running as operator:
        serving = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "serving webhooks"), None),
            timeout=30,
            message="the webhook server's log line",
        )
        for document in service_to_this_machine(node_namespace, serving["port"], node_address(node_kube)):
            node_kube.create(document, node_kube.resolve("v1", document["kind"]))
        body = {
            "apiVersion": ALPHA.api_version,
            "kind": "Gadget",
            "metadata": {"name": "red", "namespace": node_namespace},
            "spec": {"colour": "red"},
        }

        node_kube.create(body, ALPHA)

        assert node_kube.get(BETA, "red", node_namespace)["spec"] == {"color": "red"}
        assert node_kube.get(ALPHA, "red", node_namespace)["spec"] == {"colour": "red"}
        node_kube.delete(BETA, "red", node_namespace)
