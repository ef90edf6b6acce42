"""okt.testing.crds.ensure_crd: the kind it returns is ready for what an operator does with it at once."""

from __future__ import annotations

import secrets

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("attempt", range(2))
def test_a_new_cluster_scoped_kind_can_own_a_child_as_soon_as_it_is_returned(
    kube: kube_client.Client, namespace: str, attempt: int
) -> None:
    """A child's controller reference blocks its owner's deletion: the API server's admission must know the kind
    (its REST mapping lags a moment behind a new CRD, and until then refuses such a child with 403)."""
    group = f"c{secrets.token_hex(4)}.okt.io"
    kind = crds.ensure_crd(kube, crds.schemaless_crd(group, "Cluster", "clusters", namespaced=False))
    try:
        owner = kube.create({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "owner"}}, kind)
        reference = {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "name": "owner",
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        child = kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"child-{attempt}", "namespace": namespace, "ownerReferences": [reference]},
            },
            kinds.CONFIG_MAP,
        )
    finally:
        kube.delete(kinds.CRD, f"clusters.{group}")

    assert child["metadata"]["ownerReferences"] == [reference]
