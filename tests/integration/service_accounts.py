"""A kubeconfig holding only a ServiceAccount's token, as a Pod running as that account would hold: for the tests
that run an operator with exactly the RBAC ``okt gen rbac`` generates."""

from __future__ import annotations

import pathlib
import secrets

from okt.kube import client as kube_client
from okt.testing import envtest


def kubeconfig_of(kube: kube_client.Client, plane: envtest.ControlPlane, namespace: str, name: str) -> pathlib.Path:
    """A kubeconfig of ``plane`` holding a token of the ServiceAccount ``namespace/name`` (a TokenRequest, an hour)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        verb="create",
        resource="serviceaccounts/token",
        body=review,
    ).json()
    user = envtest.TokenUser(name=f"system:serviceaccount:{namespace}:{name}", token=answer["status"]["token"])
    return plane.kubeconfig_for(user, plane.directory / f"kubeconfig-{secrets.token_hex(4)}")
