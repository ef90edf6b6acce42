"""Fixtures of the capability sample's tests: the Cache CRD from the generated ``deploy/crd.yaml`` on the node's
control plane (okt's plugin gives ``node_plane``, ``node_kube`` and ``node_namespace``), and the operator run by okt's
Manager in the test's process.

The repository root is put on ``sys.path`` so that ``samples.capability`` imports as a package (pytest's importlib
mode does not add it), as ``okt run -m samples.capability.main`` imports it.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable, Iterator

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from okt.kube import client as kube_client  # noqa: E402
from okt.kube import kinds  # noqa: E402
from okt.testing import crds, running  # noqa: E402
from samples.capability import main as operator  # noqa: E402

CRD = ROOT / "samples" / "capability" / "deploy" / "crd.yaml"


@pytest.fixture
def caches(node_kube: kube_client.Client) -> kinds.Kind:
    """The Cache kind, served from the generated CRD (its schema and defaults, as a cluster would have them)."""
    return crds.ensure_crd(node_kube, yaml.safe_load(CRD.read_text(encoding="utf-8")))


@pytest.fixture
def run_operator(node_kube: kube_client.Client, node_namespace: str) -> Iterator[Callable[[], running.RunningOperator]]:
    """Start the operator (watching the test's namespace); every one started is stopped after the test."""
    started: list[running.RunningOperator] = []

    def start() -> running.RunningOperator:
        started.append(
            running.RunningOperator.start(
                node_kube, operator.CacheReconciler, namespaces=[node_namespace], metrics_bind="127.0.0.1:0"
            )
        )
        return started[-1]

    yield start
    for one in started:
        one.stop()


@pytest.fixture
def capability_operator(
    caches: kinds.Kind, run_operator: Callable[[], running.RunningOperator]
) -> running.RunningOperator:
    """The operator, running for the test."""
    return run_operator()
