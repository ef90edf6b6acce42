"""The capability sample on real Pods of the local node, one test per level above the first: an upgrade watched
through its rollout (Level 2, ``status.versions`` and ``Progressing``); data written into memcached backed up, lost
with its Pod and restored (Level 3, through ``ctx.exec``); memcached's statistics as the operator's Prometheus gauges
(Level 4); one Pod added by the auto-pilot, and no other while the signal stays high (Level 5)."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Callable
from typing import Any, Self

import prometheus_client
import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, podexec
from okt.testing import running, waiting
from samples.capability import main as operator
from samples.capability import memcache_protocol as proto

pytestmark = pytest.mark.integration

POD = kinds.BUILTIN[("v1", "Pod")]
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
TIMEOUT = 90.0


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
    return str(alive[0])


def memcached(kube: kube_client.Client, namespace: str, pod: str, payload: str) -> str:
    result = podexec.run(kube, namespace, pod, operator.TOOLS, proto.command(payload), timeout=20)
    assert result.ok, result
    return result.stdout


DATA = {"greeting": "hello world", "answer": "42"}


def test_data_written_is_backed_up_lost_with_its_pod_and_restored_and_stats_become_metrics(
    node_kube: kube_client.Client, node_namespace: str, caches: kinds.Kind, capability_operator: running.RunningOperator
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
    print(f"\nbackup: {DATA} written into {first}; spec.backup=b1 -> ConfigMap c-backup-b1 {stored['data']}")
    assert stored["data"] == {"values.json": '{"answer": "42", "greeting": "hello world"}'}

    kube.delete(POD, first, namespace)  # memcached keeps nothing on disk: the data goes with the Pod
    waiting.wait_for(
        lambda: the_pod(kube, namespace) != first and condition(cache(kube, caches, namespace), "Available") == "True",
        timeout=TIMEOUT,
    )
    second = the_pod(kube, namespace)
    lost = waiting.wait_for(lambda: memcached(kube, namespace, second, proto.get_request(sorted(DATA))), timeout=30)
    print(f"  Pod {first} deleted; its replacement {second} holds {proto.parse_values(lost)}")
    assert proto.parse_values(lost) == {}

    kube.patch(caches, "c", {"spec": {"restore": "b1"}}, namespace)
    waiting.wait_for(lambda: (cache(kube, caches, namespace).get("status") or {}).get("restored") == "b1", TIMEOUT)

    restored = proto.parse_values(memcached(kube, namespace, second, proto.get_request(sorted(DATA))))
    labels = {"namespace": namespace, "name": "c"}
    print(f"  spec.restore=b1 -> status.restored=b1; {second} now holds {restored}")
    print(
        f"metric: capability_cache_items{labels} = "
        f"{prometheus_client.REGISTRY.get_sample_value('capability_cache_items', labels)};"
        f" status.stats = {cache(kube, caches, namespace)['status']['stats']}"
    )
    assert restored == DATA
    assert prometheus_client.REGISTRY.get_sample_value("capability_cache_items", labels) == 2
    probes = capability_operator.manager.probes
    assert probes is not None
    with urllib.request.urlopen(probes.url + "/metrics", timeout=10) as answer:  # noqa: S310 (our http://127.0.0.1)
        scraped = answer.read().decode()
    line = f'capability_cache_items{{name="c",namespace="{namespace}"}} 2.0'
    print(f"  scraped from {probes.url}/metrics: {line in scraped and line}")
    assert line in scraped
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
    node_kube: kube_client.Client, node_namespace: str, caches: kinds.Kind, capability_operator: running.RunningOperator
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
    final = cache(kube, caches, namespace)["status"]
    print(f"  status.versions: {final['versions']}")
    print("  conditions: " + ", ".join(f"{c['type']}={c['status']} ({c['reason']})" for c in final["conditions"]))
    assert new_pod_ready is not None, "1.6.1 was reported before any 1.6.1 Pod was ready"
    assert all(version == "1.6.0" for rv, _, _, version in steps if rv < new_pod_ready)
    assert all(rv > new_pod_ready for rv, _, _, version in steps if version == "1.6.1")
    assert ("True", "Upgrading", "1.6.0") in [step[1:] for step in steps]
    assert steps[-1][1:] == ("False", "Settled", "1.6.1")


def metric(name: str, namespace: str) -> float:
    return prometheus_client.REGISTRY.get_sample_value(name, {"namespace": namespace, "name": "c"}) or 0.0


def wait_for_reads(namespace: str, more: int) -> None:
    """Until the operator has read the statistics ``more`` times again (each read is a decision of the auto-pilot)."""
    reads = metric("capability_stats_reads_total", namespace)
    waiting.wait_for(lambda: metric("capability_stats_reads_total", namespace) >= reads + more, timeout=TIMEOUT)


def test_the_autopilot_adds_one_pod_for_a_busy_pod_and_no_other_while_the_signal_stays_high_even_after_a_restart(
    node_kube: kube_client.Client,
    node_namespace: str,
    caches: kinds.Kind,
    capability_operator: running.RunningOperator,
    run_operator: Callable[[], running.RunningOperator],
) -> None:
    kube, namespace = node_kube, node_namespace
    policy = {"itemsThreshold": 50, "maxSize": 3, "coolDownSeconds": 3600}
    spec = {"size": 1, "statsIntervalSeconds": 1, "autopilot": policy}
    kube.create(
        {
            "apiVersion": operator.API_VERSION,
            "kind": "Cache",
            "metadata": {"name": "c", "namespace": namespace},
            "spec": spec,
        },
        caches,
    )
    waiting.wait_for(lambda: condition(cache(kube, caches, namespace), "Available") == "True", timeout=TIMEOUT)
    before = kube.get(DEPLOYMENT, "c", namespace)
    pod = the_pod(kube, namespace)

    filled = {f"key-{i}": f"value-{i}" for i in range(60)}
    waiting.wait_for(lambda: memcached(kube, namespace, pod, proto.set_request(filled)), timeout=30, interval=0.5)
    waiting.wait_for(
        lambda: (
            (d := kube.get(DEPLOYMENT, "c", namespace))["spec"]["replicas"] == 2
            and (d.get("status") or {}).get("availableReplicas") == 2
        ),
        timeout=TIMEOUT,
    )
    scaled = kube.get(DEPLOYMENT, "c", namespace)
    print(
        f"\nauto-pilot: 60 items in {pod} (threshold 50): Deployment generation {before['metadata']['generation']}"
        f" -> {scaled['metadata']['generation']}, replicas 1 -> 2"
    )
    print(f"  status.autopilot: {cache(kube, caches, namespace)['status']['autopilot']}")

    for restart in (False, True):
        if restart:
            capability_operator.stop()
            run_operator()
        wait_for_reads(namespace, 5)
        now = cache(kube, caches, namespace)["status"]
        print(
            f"  {'after a restart, ' if restart else ''}5 more reads: busiest={now['stats']['busiest']},"
            f" autopilot={now['autopilot']['reason']!r}"
        )
        assert now["stats"]["busiest"] >= 50  # the signal stays high: the busy Pod keeps its items
        assert kube.get(DEPLOYMENT, "c", namespace)["metadata"]["generation"] == scaled["metadata"]["generation"]

    assert scaled["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert metric("capability_autopilot_scale_outs_total", namespace) == 1
    assert now["autopilot"]["added"] == 1
    assert now["autopilot"]["reason"].startswith("cooling down until")
