"""okt.testing.crds.ensure_crd: the kind it returns is ready for what an operator does with it at once."""

from __future__ import annotations

import contextlib
import secrets

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, waiting

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


def test_a_crd_still_being_deleted_is_waited_for_and_never_stripped_of_its_cleanup(
    kube: kube_client.Client, namespace: str
) -> None:
    """A CRD deleted while a custom resource's finalizer holds it stays until its resources are gone; replacing it
    then would drop the API server's cleanup finalizer: the CRD vanishes at once and its resources stay in etcd,
    to come back with the next CRD of that name."""
    group = f"t{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Held", "helds")
    name = f"helds.{group}"
    kind = crds.ensure_crd(kube, crd)
    metadata = {"name": "held", "namespace": namespace, "finalizers": ["okt.io/hold"]}
    kube.create({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata}, kind)
    kube.delete(kinds.CRD, name)
    try:
        with pytest.raises(waiting.WaitTimeout, match="being deleted"):
            crds.ensure_crd(kube, crd, timeout=2)

        live = kube.get(kinds.CRD, name)
        assert live["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
        assert kube.get(kind, "held", namespace)["metadata"]["deletionTimestamp"]
    finally:
        with contextlib.suppress(errors.NotFound):
            kube.patch(kind, "held", {"metadata": {"finalizers": None}}, namespace)
        waiting.wait_for(lambda: kube.get_or_none(kinds.CRD, name) is None, message=f"CRD {name} to go")
