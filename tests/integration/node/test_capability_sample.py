"""The capability sample on real Pods: data written into memcached is backed up, lost with its Pod, and restored
(Level 3, through ``ctx.exec``); memcached's statistics become the operator's Prometheus gauges (Level 4)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Self

import prometheus_client
import pytest

from okt import errors
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


class Recorder:
    """Every object a watch of one kind in one namespace delivers, in order, until the ``with`` block ends."""

    def __init__(self, kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> None:
        _, version = kube.list(kind, namespace)
        self.objects: list[dict[str, Any]] = []
        self._stream: Any = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(kube, kind, namespace, version), daemon=True)

    def _opened(self, response: Any) -> None:
        self._stream = response

    def _watch(self, kube: kube_client.Client, kind: kinds.Kind, namespace: str, version: str) -> None:
        try:
            for event in kube.watch(kind, namespace, resource_version=version, on_open=self._opened):
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.objects.append(event["object"])
        except errors.ApiError:
            if not self._stopped.is_set():
                raise

    def __enter__(self) -> Self:
        self._thread.start()
        waiting.wait_for(lambda: self._stream is not None, timeout=10, message="the watch to open")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._stream.close()
        self._thread.join(timeout=10)


def revision(obj: dict[str, Any]) -> int:
    """The object's resourceVersion: one etcd's revision, so it orders events of different kinds (one server)."""
    return int(obj["metadata"]["resourceVersion"])


def reported_version(obj: dict[str, Any]) -> str:
    versions = (obj.get("status") or {}).get("versions") or ()
    return next((v["version"] for v in versions if v["name"] == "memcached"), "")


def progressing(obj: dict[str, Any]) -> tuple[str, str]:
    generation = obj["metadata"]["generation"]
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c["type"] == "Progressing" and c.get("observedGeneration") == generation:
            return c["status"], c["reason"]
    return "", ""


def pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def test_an_upgrade_is_progressing_and_reports_the_new_version_only_once_its_pods_are_ready(
    node_kube: kube_client.Client, node_namespace: str, caches: kinds.Kind
) -> None:
    kube, namespace = node_kube, node_namespace
    body = {"apiVersion": operator.API_VERSION, "kind": "Cache", "metadata": {"name": "c", "namespace": namespace}}
    kube.create({**body, "spec": {"size": 1, "version": "1.6.0"}}, caches)
    waiting.wait_for(
        lambda: (reported_version(c := cache(kube, caches, namespace)), progressing(c)[0]) == ("1.6.0", "False"),
        timeout=TIMEOUT,
    )

    with Recorder(kube, caches, namespace) as caches_seen, Recorder(kube, POD, namespace) as pods_seen:
        kube.patch(caches, "c", {"spec": {"version": "1.6.1"}}, namespace)
        waiting.wait_for(
            lambda: (reported_version(c := cache(kube, caches, namespace)), progressing(c)[0]) == ("1.6.1", "False"),
            timeout=TIMEOUT,
        )

    steps = [(revision(c), *progressing(c), reported_version(c)) for c in caches_seen.objects]
    new_pod_ready = min(
        (
            revision(p)
            for p in pods_seen.objects
            if p["metadata"]["labels"].get("app.kubernetes.io/version") == "1.6.1" and pod_ready(p)
        ),
        default=None,
    )
    print(f"\nupgrade 1.6.0 -> 1.6.1: the first 1.6.1 Pod is Ready at revision {new_pod_ready}")
    for step in steps:
        print("  revision {} Progressing={:<5} reason={:<12} versions.memcached={}".format(*step))
    assert new_pod_ready is not None, "1.6.1 was reported before any 1.6.1 Pod was ready"
    assert all(version == "1.6.0" for rv, _, _, version in steps if rv < new_pod_ready)
    assert all(rv > new_pod_ready for rv, _, _, version in steps if version == "1.6.1")
    assert ("True", "Upgrading", "1.6.0") in [step[1:] for step in steps]
    assert steps[-1][1:] == ("False", "Settled", "1.6.1")
