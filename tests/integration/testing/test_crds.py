"""okt.testing.crds.ensure_crd (and a control plane's install_crd): the kind it returns is ready for what an operator
does with it at once."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import Any

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest, waiting

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


def _blocking_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_a_kind_installed_moments_ago_can_own_a_child_that_blocks_its_deletion(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str
) -> None:
    """The API server's owner-reference admission maps a blockOwnerDeletion reference's kind through discovery it
    reloads only every 30 s on a stock 1.20 server (such a child was refused with 403 until then); the local control
    plane's looks a kind it does not know up again at once."""
    known = kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "known", "namespace": namespace}},
        kinds.CONFIG_MAP,
    )
    # The admission has mapped an owner's kind since its last reload: what it knows is what it read then.
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "of-known", "namespace": namespace, "ownerReferences": [_blocking_reference(known)]},
        },
        kinds.CONFIG_MAP,
    )
    group = f"o{secrets.token_hex(4)}.okt.io"
    control_plane.install_crd(crds.schemaless_crd(group, "Owner", "owners"))
    kind = kinds.Kind(f"{group}/v1", "Owner", "owners", True)
    try:
        metadata = {"name": "owner", "namespace": namespace}
        owner = kube.create({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata}, kind)
        reference = _blocking_reference(owner)
        child = kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "child", "namespace": namespace, "ownerReferences": [reference]},
            },
            kinds.CONFIG_MAP,
        )
    finally:
        kube.delete(kinds.CRD, f"owners.{group}")

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


def _by_ensure_crd(client: kube_client.Client, plane: envtest.ControlPlane) -> Callable[[dict[str, Any]], object]:
    return lambda crd: crds.ensure_crd(client, crd)


def _by_install_crd(client: kube_client.Client, plane: envtest.ControlPlane) -> Callable[[dict[str, Any]], object]:
    return plane.install_crd


# Discovery lists a new kind late one time in four: several CRDs each.
@pytest.mark.parametrize(("installer", "count"), [(_by_ensure_crd, 8), (_by_install_crd, 8)])
def test_discovery_lists_a_new_kind_in_every_served_version_as_soon_as_its_crd_is_installed(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    installer: Callable[[kube_client.Client, envtest.ControlPlane], Callable[[dict[str, Any]], object]],
    count: int,
) -> None:
    """An operator started at once finds its kinds in discovery, where the API server lists a new CRD's kind a moment
    after the CRD turns Established."""
    install = installer(kube, control_plane)
    unlisted: list[str] = []
    for _ in range(count):
        group = f"d{secrets.token_hex(4)}.okt.io"
        crd = crds.schemaless_crd(group, "Listed", "listeds")
        crd["spec"]["versions"].append({**crd["spec"]["versions"][0], "name": "v2", "storage": False})
        install(crd)
        try:
            unlisted += [f"{group}/{v}" for v in ("v1", "v2") if not _lists(kube, f"{group}/{v}", "Listed")]
        finally:
            kube.delete(kinds.CRD, f"listeds.{group}")
    assert unlisted == []


def _lists(client: kube_client.Client, api_version: str, kind: str) -> bool:
    try:
        listing = client.request("GET", f"/apis/{api_version}", verb="get", resource="discovery").json()
    except errors.NotFound:
        return False
    return any(resource.get("kind") == kind for resource in listing.get("resources") or ())
