"""A deleted Cache takes its Prometheus series with it (``on_deleted``), on the local control plane: no Pods are
needed to see it, so the series a ready memcached's statistics would have set are set by the test."""

from __future__ import annotations

import functools
from typing import Any

import prometheus_client
import pytest
import yaml

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest, running, waiting
from samples.capability import main as operator

from .conftest import CRD

pytestmark = pytest.mark.integration

DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
SERIES = (
    "capability_cache_items",
    "capability_cache_bytes",
    "capability_cache_busiest_items",
    "capability_stats_reads_total",
    "capability_autopilot_scale_outs_total",
)


def series(namespace: str, name: str) -> dict[str, float | None]:
    labels = {"namespace": namespace, "name": name}
    return {metric: prometheus_client.REGISTRY.get_sample_value(metric, labels) for metric in SERIES}


def read_statistics(namespace: str, name: str) -> None:
    """What Level 4 and 5 record of a Cache whose Pods answered (the local control plane runs none)."""
    for gauge in (operator.ITEMS, operator.BYTES, operator.BUSIEST):
        gauge.labels(namespace, name).set(7)
    operator.STATS_READS.labels(namespace, name).inc()
    operator.SCALE_OUTS.labels(namespace, name).inc()


def test_a_deleted_caches_metric_series_go_with_it_and_another_caches_stay(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    kind = crds.ensure_crd(kube, yaml.safe_load(CRD.read_text(encoding="utf-8")), plane=control_plane)
    with running.RunningOperator.start(kube, operator.CacheReconciler, namespaces=[namespace]):
        for name in ("gone", "kept"):
            body: dict[str, Any] = {
                "apiVersion": operator.API_VERSION,
                "kind": "Cache",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"size": 1},
            }
            kube.create(body, kind)
        for name in ("gone", "kept"):
            waiting.wait_for(functools.partial(kube.get_or_none, DEPLOYMENT, name, namespace), timeout=30)
            read_statistics(namespace, name)

        kube.delete(kind, "gone", namespace)
        waiting.wait_for(
            lambda: not any(series(namespace, "gone").values()),
            timeout=30,
            message="the deleted Cache's series removed",
        )

        assert series(namespace, "gone") == dict.fromkeys(SERIES)
        assert all(value is not None for value in series(namespace, "kept").values())
