"""The memcached operator end to end, on the real local control plane, run by okt's Manager."""

from __future__ import annotations

import copy
import json
import pathlib
from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt import errors
from okt.kube import kinds
from okt.reconciler import core
from okt.testing import RunningOperator, condition, envtest, wait_for
from samples.memcached.memcached_operator import (
    FINALIZER,
    MemcachedReconciler,
    MemcachedReconcilerWithoutFinalizer,
    inventory,
    settings,
)
from samples.memcached.memcached_operator.resources import deployment_memcached
from samples.memcached.tests import harness

pytestmark = pytest.mark.integration


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment_memcached.memcached_container(deployment["spec"]["template"]["spec"])


def test_twenty_memcacheds_converge_to_ready_with_current_observed_generation(
    operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    names = [f"cache-{i:02d}" for i in range(20)]
    for i, name in enumerate(names):
        memcacheds.create(name, size=i % 5 + 1)

    summaries = memcacheds.wait_converged(names, timeout=90)

    assert [s.replicas for s in summaries] == [i % 5 + 1 for i in range(20)]
    assert sorted(memcacheds.inventory()) == names
    for name in names:
        obj = memcacheds.get(name)
        assert obj is not None
        assert obj["metadata"]["finalizers"] == [FINALIZER]
        types = {c["type"]: c for c in obj["status"]["conditions"]}
        assert {"Ready", "Available", "Progressing", "Degraded"} <= set(types)
        assert types["Degraded"]["status"] == "False"
        assert all(c["observedGeneration"] == obj["metadata"]["generation"] for c in types.values())


def test_children_carry_the_spec_the_settings_and_a_controller_owner(
    operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    created = memcacheds.create("shaped", size=3, image="memcached:1.6.21")
    memcacheds.wait_converged(["shaped"])

    children = memcacheds.children("shaped")
    deployment, service, config = children["Deployment"], children["Service"], children["ConfigMap"]
    assert deployment is not None and service is not None and config is not None
    tuned = settings.for_size(3)
    assert deployment["spec"]["replicas"] == 3
    assert container(deployment)["image"] == "memcached:1.6.21"
    assert container(deployment)["ports"][0]["containerPort"] == 11211
    assert container(deployment)["envFrom"][0]["configMapRef"]["name"] == "shaped-config"
    assert [p["port"] for p in service["spec"]["ports"]] == [11211]
    assert config["data"] == tuned.to_config_data()
    for child in children.values():
        assert child is not None
        owners = child["metadata"]["ownerReferences"]
        assert [(o["kind"], o["uid"], o["controller"]) for o in owners] == [
            ("Memcached", created["metadata"]["uid"], True)
        ]


@pytest.mark.parametrize(
    ("change", "expected_replicas", "expected_image"),
    [
        ({"size": 4}, 4, "memcached:1.6"),
        ({"size": 12}, 12, "memcached:1.6"),
        ({"image": "memcached:1.6.21"}, 2, "memcached:1.6.21"),
        ({"size": 1, "image": "memcached:1.5"}, 1, "memcached:1.5"),
    ],
)
def test_a_spec_change_propagates_to_the_deployment_and_the_inventory(
    operator: RunningOperator,
    memcacheds: harness.Memcacheds,
    change: dict[str, Any],
    expected_replicas: int,
    expected_image: str,
) -> None:
    memcacheds.create("scaled", size=2)
    memcacheds.wait_converged(["scaled"])

    memcacheds.update_spec("scaled", **change)
    (summary,) = memcacheds.wait_converged(["scaled"])

    deployment = memcacheds.deployment("scaled")
    config = memcacheds.config("scaled")
    assert deployment is not None and config is not None
    assert summary.generation == 2
    assert deployment["spec"]["replicas"] == expected_replicas
    assert container(deployment)["image"] == expected_image
    assert config["data"] == settings.for_size(expected_replicas).to_config_data()
    entry = memcacheds.inventory()["scaled"]
    assert (entry["size"], entry["image"]) == (expected_replicas, expected_image)


def scale_deployment(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    client.patch(harness.DEPLOYMENT, name, {"spec": {"replicas": 9}}, memcacheds.namespace)


def swap_image(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    deployment = memcacheds.deployment(name)
    assert deployment is not None
    containers = deployment["spec"]["template"]["spec"]["containers"]
    containers[0]["image"] = "memcached:1.4"
    client.patch(
        harness.DEPLOYMENT, name, {"spec": {"template": {"spec": {"containers": containers}}}}, memcacheds.namespace
    )


def edit_settings(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    client.patch(harness.CONFIG_MAP, f"{name}-config", {"data": {"MEMCACHED_THREADS": "64"}}, memcacheds.namespace)


def delete_service(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    client.delete(harness.SERVICE, name, memcacheds.namespace)


def delete_deployment(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    client.delete(harness.DEPLOYMENT, name, memcacheds.namespace, propagation="Foreground")


def renumber_service_port(client: okt.Client, memcacheds: harness.Memcacheds, name: str) -> None:
    renumbered = [{"op": "replace", "path": "/spec/ports/0/port", "value": 11212}]
    client.patch(
        harness.SERVICE, name, renumbered, memcacheds.namespace, patch_type="json", field_manager="kubectl-edit"
    )


@pytest.mark.parametrize(
    "edit",
    [scale_deployment, swap_image, edit_settings, delete_service, delete_deployment, renumber_service_port],
    ids=lambda f: f.__name__,
)
def test_an_out_of_band_edit_of_a_child_is_repaired(
    kube: okt.Client,
    operator: RunningOperator,
    memcacheds: harness.Memcacheds,
    edit: Callable[[okt.Client, harness.Memcacheds, str], None],
) -> None:
    memcacheds.create("tampered", size=3)
    memcacheds.wait_converged(["tampered"])

    edit(kube, memcacheds, "tampered")

    def repaired() -> bool:
        deployment, config, service = (
            memcacheds.deployment("tampered"),
            memcacheds.config("tampered"),
            memcacheds.service("tampered"),
        )
        return (
            deployment is not None
            and deployment["metadata"].get("deletionTimestamp") is None
            and deployment["spec"]["replicas"] == 3
            and container(deployment)["image"] == "memcached:1.6"
            and config is not None
            and config["data"] == settings.for_size(3).to_config_data()
            and service is not None
            and [port["port"] for port in service["spec"]["ports"]] == [11211]
        )

    wait_for(repaired, timeout=30, interval=0.1, message="the children to be repaired")


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"size": 0}, "spec.size"),
        ({"size": 101}, "spec.size"),
        ({"size": "three"}, "spec.size"),
        ({}, "spec.size"),
        ({"size": 2, "image": ""}, "spec.image"),
        ({"size": 2, "image": "memcached:" + "1" * 600}, "spec.image"),
    ],
)
def test_an_invalid_memcached_is_refused_by_the_generated_crd_schema(
    memcacheds: harness.Memcacheds, spec: dict[str, Any], complaint: str
) -> None:
    body = {**memcacheds.body("invalid", None), "spec": spec}

    with pytest.raises(okt.ApiError) as refused:
        memcacheds.client.create(body, memcacheds.kind)

    assert isinstance(refused.value, errors.Invalid)
    assert complaint in str(refused.value)
    assert memcacheds.get("invalid") is None


@pytest.mark.parametrize(
    ("size", "image", "message"),
    [
        (2, "memcached", "spec.image 'memcached' has no tag"),
        (2, "registry.example.com:5000/memcached", "has no tag"),
        (2, "memcached:latest", "uses the floating tag 'latest'"),
        (60, "memcached:1.6", "spec.size 60 exceeds the maximum of 50 replicas configured for memcached images"),
    ],
)
def test_a_semantically_bad_memcached_gets_ready_false_with_the_reason(
    operator: RunningOperator, memcacheds: harness.Memcacheds, size: int, image: str, message: str
) -> None:
    memcacheds.create("dubious", size=size, image=image)

    ready = memcacheds.wait_ready_false("dubious")

    assert ready["reason"] == "InvalidSpec"
    assert message in ready["message"]
    obj = memcacheds.get("dubious")
    assert obj is not None
    degraded = condition(obj, "Degraded")
    assert degraded is not None and degraded["status"] == "True"
    assert memcacheds.deployment("dubious") is None
    assert "dubious" not in memcacheds.inventory()


def test_fixing_a_semantically_bad_memcached_makes_it_ready(
    operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    memcacheds.create("fixed", size=2, image="memcached")
    memcacheds.wait_ready_false("fixed")

    memcacheds.update_spec("fixed", image="memcached:1.6.21")

    (summary,) = memcacheds.wait_converged(["fixed"])
    assert summary.replicas == 2
    assert summary.observed_generation == 2


def test_deleting_a_memcached_removes_its_inventory_entry_then_the_object_and_its_children(
    operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    for name in ("doomed", "survivor"):
        memcacheds.create(name, size=2)
    memcacheds.wait_converged(["doomed", "survivor"])
    assert set(memcacheds.inventory()) == {"doomed", "survivor"}

    memcacheds.delete("doomed")
    memcacheds.wait_gone("doomed")

    # The finalizer held the object until its entry was gone, so once the object is gone the entry is too.
    assert set(memcacheds.inventory()) == {"survivor"}
    memcacheds.wait_children_gone("doomed")
    assert memcacheds.summary("survivor").converged


def test_a_record_read_before_the_deletion_cannot_bring_the_entry_back(
    kube: okt.Client, operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    memcacheds.create("late", size=1)
    memcacheds.wait_converged(["late"])
    kind = inventory.configmap_kind(kube)
    read_before = kube.get(kind, inventory.NAME, memcacheds.namespace)
    entry = read_before["data"]["late"]

    memcacheds.delete("late")
    memcacheds.wait_gone("late")

    # What an operator killed in mid-request would have sent, applied by the API server only now.
    with pytest.raises(errors.Invalid):
        late = inventory.fenced_set(read_before, "late", entry)
        kube.patch(kind, inventory.NAME, late, memcacheds.namespace, patch_type="json")
    assert "late" not in memcacheds.inventory()
    after = kube.get(kind, inventory.NAME, memcacheds.namespace)
    assert after["metadata"]["annotations"][inventory.FORGOTTEN] == json.loads(entry)["uid"]


ONE_MIB = 1024 * 1024


def test_only_a_failed_resource_version_test_is_a_lost_fence(kube: okt.Client, namespace: str) -> None:
    # Every 422 was taken for a lost race: a refused inventory was patched four times in a row, then again 0.2 s on.
    kind = inventory.configmap_kind(kube)
    read_before = kube.create(inventory.created_with(namespace, {"first": "1"}), kind)
    kube.patch(kind, inventory.NAME, inventory.fenced_set(read_before, "second", "2"), namespace, patch_type="json")
    live = kube.get(kind, inventory.NAME, namespace)

    refusals = {}
    for case, (read, key, value) in {
        "stale": (read_before, "third", "3"),
        "too-large": (live, "big", "x" * ONE_MIB),
        "bad-key": (live, "bad key", "4"),
    }.items():
        with pytest.raises(errors.Invalid) as refused:
            kube.patch(kind, inventory.NAME, inventory.fenced_set(read, key, value), namespace, patch_type="json")
        refusals[case] = refused.value

    assert {case: inventory.lost_the_fence(exc) for case, exc in refusals.items()} == {
        "stale": True,
        "too-large": False,
        "bad-key": False,
    }
    assert isinstance(inventory.refusal(refusals["too-large"], namespace), inventory.InventoryTooLarge)
    assert inventory.refusal(refusals["bad-key"], namespace) is refusals["bad-key"]
    assert sorted(inventory.entries(kube.get(kind, inventory.NAME, namespace))) == ["first", "second"]


def test_a_memcached_a_full_inventory_cannot_take_is_ready_false_as_such_and_recorded_once_there_is_room(
    kube: okt.Client, operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    # It was a lost race retried four patches at a time every 0.2 s, Ready=False saying ApiError.
    kind = inventory.configmap_kind(kube)
    namespace = memcacheds.namespace
    # What thousands of Memcacheds leave in the inventory: one entry more passes the API server's 1 MiB.
    kube.create(inventory.created_with(namespace, {"others": "x" * (ONE_MIB - 64)}), kind)

    memcacheds.create("overflow", size=1)
    ready = memcacheds.wait_ready_false("overflow")

    assert ready["reason"] == "InventoryTooLarge"
    assert (
        f"the inventory ConfigMap/{namespace}/{inventory.NAME} is too large to write: it is refused, past the API "
        "server's limit of 1.0 MiB (1048576 bytes) for its data; retried with backoff; deleting Memcacheds of the "
        "namespace makes room"
    ) in ready["message"]
    assert "overflow" not in memcacheds.inventory()

    kube.patch(kind, inventory.NAME, {"data": {"others": None}}, namespace)

    memcacheds.wait_converged(["overflow"])
    assert set(memcacheds.inventory()) == {"overflow"}


class BeforeItsDeletion(core.ApiReader):
    """A cache that still holds one Memcached as it was before its deletion: a new operator's first list served by
    an API server's watch cache that trails etcd. Everything else is read from the API."""

    def __init__(self, client: okt.Client, memcached: dict[str, Any]) -> None:
        super().__init__(client)
        self.memcached = memcached

    def get(self, kind: okt.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        meta = self.memcached["metadata"]
        if kind.kind == self.memcached["kind"] and (namespace, name) == (meta["namespace"], meta["name"]):
            return copy.deepcopy(self.memcached)
        return super().get(kind, name, namespace)


def test_a_reconcile_that_read_the_memcached_before_its_deletion_does_not_record_it_after_its_forget(
    kube: okt.Client, operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    memcacheds.create("stale", size=1)
    memcacheds.wait_converged(["stale"])
    before = kube.get(memcacheds.kind, "stale", memcacheds.namespace)
    before.setdefault("kind", memcacheds.kind.kind)
    memcacheds.delete("stale")
    memcacheds.wait_gone("stale")
    assert "stale" not in memcacheds.inventory()

    stale_cache = BeforeItsDeletion(kube, before)
    core.reconcile(MemcachedReconciler(), kube, stale_cache, memcacheds.namespace, "stale", kind=memcacheds.kind)

    assert "stale" not in memcacheds.inventory()


def test_a_memcached_deleted_past_its_finalizer_still_leaves_the_inventory(
    control_plane: envtest.ControlPlane, operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    memcacheds.create("bypassed", size=1)
    memcacheds.wait_converged(["bypassed"])
    assert "bypassed" in memcacheds.inventory()

    # What the API server does to a deletion racing the finalizer's addition (Kubernetes issue 77988): the object
    # is gone at once, the finalizer still on it.
    assert control_plane.delete_from_etcd(memcacheds.kind, "bypassed", memcacheds.namespace)

    wait_for(lambda: "bypassed" not in memcacheds.inventory(), timeout=30)


def test_a_memcached_whose_namespace_is_deleted_is_released_once_the_namespace_lost_its_inventory(
    kube: okt.Client, run_operator: Callable[..., RunningOperator], memcacheds: harness.Memcacheds
) -> None:
    operator = run_operator()
    memcacheds.create("orphaned", size=1)
    memcacheds.wait_converged(["orphaned"])
    assert operator.stop()

    # Deleting the namespace: its controller deletes the inventory at once, the finalizer holds the Memcached.
    kube.delete(kinds.NAMESPACE, memcacheds.namespace)
    wait_for(lambda: kube.get_or_none(harness.CONFIG_MAP, inventory.NAME, memcacheds.namespace) is None, timeout=30)
    assert memcacheds.get("orphaned") is not None
    run_operator()

    memcacheds.wait_gone("orphaned")


def test_a_converged_memcached_is_reconciled_again_without_any_write(
    kube: okt.Client, operator: RunningOperator, memcacheds: harness.Memcacheds
) -> None:
    memcacheds.create("steady", size=2)
    memcacheds.wait_converged(["steady"])
    operator.stop()
    before = kube.stats.snapshot()

    run = core.reconcile(MemcachedReconciler(), kube, None, memcacheds.namespace, "steady", kind=memcacheds.kind)

    assert run.outcome.kind is okt.OutcomeKind.DONE
    assert kube.stats.writes(before) == 0
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"


def test_without_the_finalizer_there_is_no_inventory_and_deletion_is_left_to_the_garbage_collector(
    run_operator: Callable[..., RunningOperator], memcacheds: harness.Memcacheds
) -> None:
    run_operator(MemcachedReconcilerWithoutFinalizer)
    memcacheds.create("plain", size=2)
    memcacheds.wait_converged(["plain"])
    obj = memcacheds.get("plain")
    assert obj is not None
    assert not obj["metadata"].get("finalizers")
    assert memcacheds.inventory() == {}

    memcacheds.delete("plain")

    memcacheds.wait_gone("plain", timeout=5)
    memcacheds.wait_children_gone("plain")


def test_switching_the_finalizer_off_still_releases_objects_that_carry_it(
    run_operator: Callable[..., RunningOperator], memcacheds: harness.Memcacheds
) -> None:
    with_finalizer = run_operator(MemcachedReconciler)
    memcacheds.create("legacy", size=1)
    memcacheds.wait_converged(["legacy"])
    assert with_finalizer.stop()
    run_operator(MemcachedReconcilerWithoutFinalizer)

    memcacheds.delete("legacy")

    memcacheds.wait_gone("legacy")
    assert "legacy" not in memcacheds.inventory()


def test_okt_run_main_py_reconciles_and_exits_cleanly_on_sigterm(
    control_plane: envtest.ControlPlane, memcacheds: harness.Memcacheds, tmp_path: pathlib.Path
) -> None:
    process = harness.okt_run(control_plane.kubeconfig, namespaces=[memcacheds.namespace], log_path=tmp_path / "op.log")
    with process:
        memcacheds.create("served", size=2)
        (summary,) = memcacheds.wait_converged(["served"])
        assert summary.replicas == 2
        # The reconcile is counted once it has returned, a moment after the status it wrote.
        done = 'okt_reconcile_total{controller="memcached",result="done"}'
        wait_for(lambda: done in process.metrics(), timeout=10, message="the reconcile counted")

    assert process.returncode == 0, process.tail(20)
    assert process.logged("served")


def test_available_follows_the_deployments_available_replicas(bare_plane: envtest.ControlPlane) -> None:
    # No deployment controller runs on this control plane: the test writes the Deployment's status, as the
    # kubelet and the deployment controller would on a real cluster.
    admin = okt.Client.from_kubeconfig(bare_plane.kubeconfig)
    kind = harness.apply_crd(admin)
    memcacheds = harness.Memcacheds(admin, kind, "default")
    with RunningOperator.start(admin, MemcachedReconciler, namespaces=["default"]):
        memcacheds.create("warming", size=2)
        memcacheds.wait_converged(["warming"])
        obj = memcacheds.get("warming")
        assert obj is not None
        available = condition(obj, "Available")
        assert available is not None and available["status"] == "False"
        deployment = memcacheds.deployment("warming")
        assert deployment is not None

        counts = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}
        status = {**counts, "observedGeneration": deployment["metadata"]["generation"]}
        admin.patch(harness.DEPLOYMENT, "warming", {"status": status}, "default", subresource="status")

        def available_now() -> bool:
            obj = memcacheds.get("warming") or {}
            available = condition(obj, "Available") or {}
            return (obj.get("status") or {}).get("availableReplicas") == 2 and available.get("status") == "True"

        wait_for(available_now, timeout=30, interval=0.1, message="Available=True with availableReplicas=2")
        obj = memcacheds.get("warming")
        assert obj is not None
        progressing = condition(obj, "Progressing")
        assert progressing is not None and progressing["status"] == "False"
    admin.close()
