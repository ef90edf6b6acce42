"""The harness's watched view of a namespace, on the real API server: its verdicts follow what the watches show."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import cluster, contenders, manifests, watched  # noqa: E402
from okt.kube import client as kube_client  # noqa: E402
from okt.kube import kinds  # noqa: E402
from okt.testing import crds, wait_for  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture
def memcached(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(crds.load_crd(contenders.CRD))


def converge_by_hand(kube: kube_client.Client, namespace: str, name: str, size: int) -> None:
    """What a contender does for one object: three owned children, then Ready=True."""
    cr = kube.create(manifests.custom_resource(name, namespace, size), cluster.MEMCACHED)
    owner = manifests.owner_reference(cr)
    for child in manifests.children(name, namespace, cr["spec"]):
        child["metadata"]["ownerReferences"] = [owner]
        kube.create(child)
    status = {"observedGeneration": 1, "conditions": [manifests.ready_condition(1, None)]}
    kube.patch(cluster.MEMCACHED, name, {"status": status}, namespace, subresource="status")


def saying(view: watched.WatchedNamespace, text: str) -> Callable[[], bool]:
    """A predicate: the view, asked for its verdict, describes what it saw with ``text``."""

    def check() -> bool:
        view.converged()
        return text in view.last

    return check


def test_the_view_says_converged_only_once_every_object_is_ready_with_its_children(
    kube: kube_client.Client, namespace: str, memcached: kinds.Kind
) -> None:
    with watched.WatchedNamespace(kube, namespace, 2) as view:
        converge_by_hand(kube, namespace, "one", 1)
        wait_for(saying(view, "1/2 Ready"), timeout=10)
        assert not view.converged()

        converge_by_hand(kube, namespace, "two", 1)
        wait_for(view.converged, timeout=10)

        kube.delete(kinds.BUILTIN[("v1", "Service")], "two", namespace)
        wait_for(saying(view, "Service 1"), timeout=10)
        assert not view.converged()


def test_the_view_follows_the_deployments_replicas(
    kube: kube_client.Client, namespace: str, memcached: kinds.Kind
) -> None:
    converge_by_hand(kube, namespace, "scaled", 1)
    deployments = kinds.BUILTIN[("apps/v1", "Deployment")]
    with watched.WatchedNamespace(kube, namespace, 1) as view:
        assert view.converged()
        assert not view.replicas_are(3)
        kube.patch(deployments, "scaled", {"spec": {"replicas": 3}}, namespace)
        wait_for(lambda: view.replicas_are(3), timeout=10)
        assert view.last == "1/1 Deployments at 3 replicas"
