"""Fixtures of the tests that need Pods to really run: a control plane with a node (kubelet + scheduler on Docker).

Where no node can run (no Docker daemon, not root, cgroup v2), every test asking for ``node_plane`` is skipped with
one line saying why; the rest of the suite still runs.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, node


@pytest.fixture(scope="session")
def node_plane() -> Iterator[envtest.ControlPlane]:
    """A control plane with the local node, Ready and schedulable (the StatefulSet and Endpoints controllers run
    too: Services have endpoints, so the API server's Service proxy reaches their Pods)."""
    reason = node.unavailable()
    if reason is not None:
        pytest.skip(f"no local node: {reason}")
    plane = envtest.ControlPlane(
        node=True,
        controllers=(*envtest.DEFAULT_CONTROLLERS, "statefulset", "endpoint"),
        out=lambda line: print(line, file=sys.stderr, flush=True),
    )
    plane.start()
    print(f"local node Ready in {plane.node_ready_seconds:.1f}s", file=sys.stderr, flush=True)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def node_kube(node_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    client = kube_client.Client.from_kubeconfig(node_plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def node_namespace(node_kube: kube_client.Client) -> Iterator[str]:
    """A fresh namespace on the node's control plane; deleting it stops its Pods."""
    name = f"okt-node-{secrets.token_hex(4)}"
    node_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield name
    node_kube.delete(kinds.NAMESPACE, name)
