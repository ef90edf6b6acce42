"""Fixtures of the memcached sample's tests: the CRD from ``deploy/crd.yaml`` and the operator run by okt's Manager
(:class:`okt.testing.RunningOperator`).

The repository root is put on ``sys.path`` so that ``samples.memcached`` imports as a package (pytest's importlib
mode does not add it), exactly as ``python -m samples.memcached.demo`` and the benchmarks import it.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable, Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import okt  # noqa: E402
from okt.testing import RunningOperator, envtest  # noqa: E402
from samples.memcached.memcached_operator import MemcachedReconciler  # noqa: E402
from samples.memcached.tests import harness  # noqa: E402


@pytest.fixture(scope="session")
def operator_identity() -> envtest.TokenUser:
    """The identity a pod of deploy/deployment.yaml has: its ServiceAccount, as a token user of the control plane."""
    return envtest.TokenUser.service_account(harness.OPERATOR_NAMESPACE, harness.SERVICE_ACCOUNT)


@pytest.fixture(scope="session")
def memcached_kind(kube: okt.Client, control_plane: envtest.ControlPlane) -> okt.Kind:
    """The Memcached kind, served by the control plane from the generated ``deploy/crd.yaml`` (its garbage collector
    told of the kind at once: a deleted Memcached's children go within a second, not after its 30 s rediscovery)."""
    return harness.apply_crd(kube, plane=control_plane)


@pytest.fixture
def run_operator(
    kube: okt.Client, memcached_kind: okt.Kind, namespace: str
) -> Iterator[Callable[..., RunningOperator]]:
    """Start the operator (okt's Manager, watching the test's namespace); every one started is stopped after."""
    started: list[RunningOperator] = []

    def start(reconciler: type[okt.Reconciler] = MemcachedReconciler) -> RunningOperator:
        operator = RunningOperator.start(kube, reconciler, namespaces=[namespace])
        started.append(operator)
        return operator

    yield start
    for operator in started:
        operator.stop()


@pytest.fixture
def operator(run_operator: Callable[..., RunningOperator]) -> RunningOperator:
    """The operator with its finalizer, running for the test."""
    return run_operator()


@pytest.fixture
def memcacheds(kube: okt.Client, memcached_kind: okt.Kind, namespace: str) -> harness.Memcacheds:
    """Create, read and wait for Memcacheds (and their children) in the test's namespace."""
    return harness.Memcacheds(kube, memcached_kind, namespace)


@pytest.fixture(scope="session")
def bare_plane(operator_identity: envtest.TokenUser) -> Iterator[envtest.ControlPlane]:
    """A second control plane, without the deployment and replicaset controllers — so a test can play the kubelet by
    writing a Deployment's status — and with the operator's ServiceAccount as a token user (for RBAC tests)."""
    with envtest.ControlPlane(controllers=("garbagecollector", "namespace"), users=[operator_identity]) as plane:
        yield plane
