"""The capability sample on real Pods: data written into memcached is backed up, lost with its Pod, and restored
(Level 3, through ``ctx.exec``); memcached's statistics become the operator's Prometheus gauges (Level 4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import prometheus_client
import pytest

from okt.kube import client as kube_client
from okt.kube import kinds, podexec
from okt.testing import crds, running, waiting
from samples.capability import main as operator
from samples.capability import memcache_protocol as proto

pytestmark = pytest.mark.integration

POD = kinds.BUILTIN[("v1", "Pod")]
TIMEOUT = 90.0


@pytest.fixture
def caches(node_kube: kube_client.Client, node_namespace: str) -> Iterator[kinds.Kind]:
    kind = crds.ensure_crd(node_kube, crds.schemaless_crd(operator.GROUP, "Cache", "caches", "v1alpha1"))
    with running.RunningOperator.start(node_kube, operator.CacheReconciler, namespaces=[node_namespace]):
        yield kind


def cache(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[str, Any]:
    return kube.get(kind, "c", namespace)


def condition(obj: dict[str, Any], type_: str) -> str:
    generation = obj["metadata"]["generation"]
    found = [
        c["status"]
        for c in (obj.get("status") or {}).get("conditions") or ()
        if c["type"] == type_ and c.get("observedGeneration") == generation
    ]
    return found[0] if found else ""


def the_pod(kube: kube_client.Client, namespace: str) -> str:
    pods, _ = kube.list(POD, namespace, label_selector="app.kubernetes.io/instance=c")
    alive = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert len(alive) == 1, alive
    return alive[0]


def memcached(kube: kube_client.Client, namespace: str, pod: str, payload: str) -> str:
    result = podexec.run(kube, namespace, pod, operator.TOOLS, proto.command(payload), timeout=20)
    assert result.ok, result
    return result.stdout


DATA = {"greeting": "hello world", "answer": "42"}


def test_data_written_is_backed_up_lost_with_its_pod_and_restored_and_stats_become_metrics(
    node_kube: kube_client.Client, node_namespace: str, caches: kinds.Kind
) -> None:
    kube, namespace = node_kube, node_namespace
    body = {"apiVersion": operator.API_VERSION, "kind": "Cache", "metadata": {"name": "c"}, "spec": {"size": 1}}
    kube.create({**body, "metadata": {"name": "c", "namespace": namespace}}, caches)
    waiting.wait_for(lambda: condition(cache(kube, caches, namespace), "Available") == "True", timeout=TIMEOUT)
    first = the_pod(kube, namespace)
    # the kubelet may not know the sidecar by name for a moment after the Pod turned Ready
    waiting.wait_for(lambda: memcached(kube, namespace, first, proto.set_request(DATA)), timeout=30, interval=0.5)

    kube.patch(caches, "c", {"spec": {"backup": "b1"}}, namespace)
    waiting.wait_for(lambda: "b1" in (cache(kube, caches, namespace).get("status") or {}).get("backups", []), TIMEOUT)
    stored = kube.get(operator.CONFIG_MAP, "c-backup-b1", namespace)
    assert stored["data"] == {"values.json": '{"answer": "42", "greeting": "hello world"}'}

    kube.delete(POD, first, namespace)  # memcached keeps nothing on disk: the data goes with the Pod
    waiting.wait_for(
        lambda: the_pod(kube, namespace) != first and condition(cache(kube, caches, namespace), "Available") == "True",
        timeout=TIMEOUT,
    )
    second = the_pod(kube, namespace)
    lost = waiting.wait_for(lambda: memcached(kube, namespace, second, proto.get_request(sorted(DATA))), timeout=30)
    assert proto.parse_values(lost) == {}

    kube.patch(caches, "c", {"spec": {"restore": "b1"}}, namespace)
    waiting.wait_for(lambda: (cache(kube, caches, namespace).get("status") or {}).get("restored") == "b1", TIMEOUT)

    assert proto.parse_values(memcached(kube, namespace, second, proto.get_request(sorted(DATA)))) == DATA
    labels = {"namespace": namespace, "name": "c"}
    assert prometheus_client.REGISTRY.get_sample_value("capability_cache_items", labels) == 2
    assert (cache(kube, caches, namespace)["status"]["stats"]["items"]) == 2
