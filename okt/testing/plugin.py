"""The okt pytest plugin: a real control plane per test session, a fresh namespace per test.

Fixtures:

``control_plane`` (session)
    a started :class:`okt.testing.envtest.ControlPlane` (built once per machine if needed). If it cannot start, every
    test that asks for it errors — integration tests are never skipped silently.
``kube`` (session)
    an admin :class:`okt.kube.client.Client` on that control plane.
``namespace`` (function)
    a fresh namespace name, deleted after the test.
``apply_crd`` (session)
    a function that creates (or replaces) a CRD from a dict and waits until it is Established and served, its kind
    listed by discovery (see :func:`okt.testing.crds.ensure_crd`).
``node_plane`` (session), ``node_kube`` (session), ``node_namespace`` (function)
    the same three for tests whose Pods must really run: a separate control plane with the local node
    (:mod:`okt.testing.node`). Where no node can run (no Docker daemon, not root, cgroup v2), a test asking for
    them is skipped with one line saying why; the rest of the suite still runs.

Marker: ``integration``, declared here for the tests that talk to the control plane (``-m integration`` selects
them, ``-m "not integration"`` leaves them out), so a project marks them without declaring it, under
``--strict-markers`` too.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest, node


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs the real local control plane (okt.testing)")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[envtest.ControlPlane]:
    plane = envtest.ControlPlane(out=lambda line: print(line, file=sys.stderr, flush=True))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kube(control_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def namespace(kube: kube_client.Client) -> Iterator[str]:
    name = f"okt-test-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield name
    kube.delete(kinds.NAMESPACE, name)


@pytest.fixture(scope="session")
def apply_crd(kube: kube_client.Client, control_plane: envtest.ControlPlane) -> Callable[[dict[str, Any]], kinds.Kind]:
    return lambda crd: crds.ensure_crd(kube, crd, plane=control_plane)


@pytest.fixture(scope="session")
def node_plane() -> Iterator[envtest.ControlPlane]:
    """A control plane with the local node, Ready and schedulable (the StatefulSet and Endpoints controllers run
    too, as on every plane with a node: Services have endpoints, so the API server's Service proxy reaches their Pods;
    and every namespace gets the ``kube-root-ca.crt`` ConfigMap, so a Pod can mount the API server's CA beside a
    projected ServiceAccount token)."""
    reason = node.unavailable()
    if reason is not None:
        pytest.skip(f"no local node: {reason}")
    plane = envtest.ControlPlane(node=True, out=lambda line: print(line, file=sys.stderr, flush=True))
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
