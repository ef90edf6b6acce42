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
    a function that creates (or replaces) a CRD from a dict and waits until it is Established.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest


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
