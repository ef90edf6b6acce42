"""Fixtures of the lifecycle sample's tests: the CRD from ``deploy/crd.yaml`` and the operator run by okt's Manager
(:class:`okt.testing.RunningOperator`).

The repository root is put on ``sys.path`` so that ``samples.lifecycle`` imports as a package (pytest's importlib
mode does not add it).
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import okt  # noqa: E402
from okt.kube import kinds  # noqa: E402
from okt.testing import RunningOperator  # noqa: E402
from samples.lifecycle.lifecycle_operator import WebAppReconciler  # noqa: E402
from samples.lifecycle.tests import harness  # noqa: E402


@pytest.fixture(scope="session")
def webapp_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    """The WebApp kind, served by the control plane from the generated ``deploy/crd.yaml``."""
    return apply_crd(harness.load_crd())


@pytest.fixture
def operator(kube: okt.Client, webapp_kind: kinds.Kind, namespace: str) -> Iterator[RunningOperator]:
    """The operator, watching the test's namespace, stopped after the test."""
    with RunningOperator.start(kube, WebAppReconciler, namespaces=[namespace]) as running:
        yield running


@pytest.fixture
def webapps(kube: okt.Client, webapp_kind: kinds.Kind, namespace: str) -> harness.WebApps:
    """Create, change and read WebApps (and their Jobs and Deployment) in the test's namespace."""
    return harness.WebApps(kube, webapp_kind, namespace)
