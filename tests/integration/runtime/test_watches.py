"""Watches of related kinds on a real kube-apiserver: a shared ConfigMap's change reconciles exactly the Gadgets that
name it, found through an index over the cached Gadgets."""

from __future__ import annotations

import pathlib
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import manager as manager_mod
from okt.testing import OperatorProcess, envtest, wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration


def config_of(obj: Mapping[str, Any]) -> list[str]:
    """A Gadget's index value: the ConfigMap its spec names, as ``namespace/name``."""
    name = (obj.get("spec") or {}).get("configMap")
    return [f"{obj['metadata']['namespace']}/{name}"] if name else []


class Configured(shared.GadgetReconciler):
    """Gadgets reconciled when the ConfigMap named in their ``spec.configMap`` changes."""

    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"config": config_of}
    watches = (okt.watch("configmaps", map=lambda cm, ctx: ctx.index("config", okt.ref_of(cm))),)
    lock: ClassVar[threading.Lock] = threading.Lock()


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def config_map(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def test_a_shared_config_maps_change_reconciles_every_gadget_naming_it_and_no_other(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    kube.create(config_map(namespace, "shared", level="info"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "other", level="info"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "unused", level="info"), kinds.CONFIG_MAP)
    for name, config in (("a", "shared"), ("b", "shared"), ("c", "other")):
        make_gadget(name, configMap=config)
    make_gadget("d")  # names no ConfigMap
    reconcile = shared.FakeReconcile()
    manager = start_manager(Configured, reconcile=reconcile)
    wait_for(lambda: manager.working and all(reconcile.count(n) == 1 for n in "abcd"), timeout=20)
    controller = manager.controllers[0]
    indexed = controller.cache.by_index(controller.kind, "gadget/config", f"{namespace}/shared")
    assert sorted(o["metadata"]["name"] for o in indexed or ()) == ["a", "b"]

    kube.patch(kinds.CONFIG_MAP, "shared", {"data": {"level": "debug"}}, namespace)
    kube.patch(kinds.CONFIG_MAP, "unused", {"data": {"level": "debug"}}, namespace)
    # The same informer delivers the ConfigMaps' events in order: once the change of "other" reconciled c, those of
    # "shared" and "unused" have been mapped too.
    kube.patch(kinds.CONFIG_MAP, "other", {"data": {"level": "debug"}}, namespace)
    wait_for(lambda: reconcile.count("c") == 2 and reconcile.count("a") == 2 and reconcile.count("b") == 2, timeout=10)
    manager.stop()
    assert manager.join(15)

    assert {n: reconcile.count(n) for n in "abcd"} == {"a": 2, "b": 2, "c": 2, "d": 1}


def test_a_gadget_that_stops_naming_a_config_map_is_no_longer_reconciled_by_its_changes(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    kube.create(config_map(namespace, "shared"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "other"), kinds.CONFIG_MAP)
    make_gadget("a", configMap="shared")
    make_gadget("b", configMap="other")
    reconcile = shared.FakeReconcile()
    manager = start_manager(Configured, reconcile=reconcile)
    wait_for(lambda: manager.working and reconcile.count("a") == 1 and reconcile.count("b") == 1, timeout=20)

    kube.patch(gadget_kind, "a", {"spec": {"configMap": "other"}}, namespace)  # the index follows the spec
    wait_for(lambda: reconcile.count("a") == 2, timeout=10)
    kube.patch(kinds.CONFIG_MAP, "shared", {"data": {"x": "1"}}, namespace)
    kube.patch(kinds.CONFIG_MAP, "other", {"data": {"x": "1"}}, namespace)
    wait_for(lambda: reconcile.count("b") == 2 and reconcile.count("a") == 3, timeout=10)
    manager.stop()
    assert manager.join(15)

    assert (reconcile.count("a"), reconcile.count("b")) == (3, 2)


def test_a_reconcile_looks_its_index_up_through_the_context(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    make_gadget("a", configMap="shared")
    make_gadget("b", configMap="shared")
    make_gadget("c", configMap="other")
    siblings: dict[str, list[str]] = {}

    class Looking(Configured):
        def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
            if state is okt.State.ObjectsGetter:
                names = sorted(o["metadata"]["name"] for o in ctx.index("config", f"{namespace}/shared"))
                with self.lock:
                    siblings[ctx.cr.name] = names

    manager = manager_mod.Manager(kube, [Looking], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: len(siblings) == 3, timeout=20)
    finally:
        manager.stop()
        manager.join(15)

    assert siblings == {"a": ["a", "b"], "b": ["a", "b"], "c": ["a", "b"]}


def test_a_primary_a_mapping_names_outside_the_watched_namespaces_is_not_reconciled(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Callable[..., dict[str, Any]],
) -> None:
    other = f"{namespace}-other"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, kinds.NAMESPACE)
    try:
        far = {"apiVersion": gadget_kind.api_version, "kind": gadget_kind.kind, "metadata": {"name": "far"}}
        kube.create({**far, "metadata": {"name": "far", "namespace": other}, "spec": {"size": 1}}, gadget_kind)
        kube.create(config_map(namespace, "shared"), kinds.CONFIG_MAP)
        make_gadget("a", configMap="shared")

        class Reaching(Configured):
            # The primary of the other namespace first: once a is reconciled again, far's key was mapped too.
            watches = (
                okt.watch("configmaps", map=lambda cm, ctx: [(other, "far"), *ctx.index("config", okt.ref_of(cm))]),
            )

        reconcile = shared.FakeReconcile()
        manager = manager_mod.Manager(
            kube, [Reaching], namespaces=[namespace], metrics_bind="0", grace_period=5, reconcile=reconcile
        )
        manager.start()
        try:
            wait_for(lambda: manager.working and reconcile.count("a") >= 1, timeout=20)
            count = reconcile.count("a")
            kube.patch(kinds.CONFIG_MAP, "shared", {"data": {"level": "debug"}}, namespace)
            wait_for(lambda: reconcile.count("a") > count, timeout=10)
            controller = manager.controllers[0]
            wait_for(lambda: controller.in_flight == 0 and len(controller.queue) == 0, timeout=10)
        finally:
            manager.stop()
            manager.join(15)
    finally:
        kube.delete(kinds.NAMESPACE, other)

    assert reconcile.count("far") == 0


def test_an_index_or_mapping_function_that_raises_is_counted_and_the_other_objects_are_served(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
) -> None:
    def picky_config_of(obj: Mapping[str, Any]) -> list[str]:
        if obj["metadata"]["name"] == "odd":
            raise ValueError("odd gadget")
        return config_of(obj)

    def picky_map(cm: Mapping[str, Any], ctx: watches.MapContext) -> list[dict[str, Any]]:
        if cm["metadata"]["name"] == "broken":
            raise ValueError("broken config")
        return ctx.index("config", okt.ref_of(cm))

    class Picky(Configured):
        indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"config": picky_config_of}
        watches = (okt.watch("configmaps", map=picky_map),)

    kube.create(config_map(namespace, "shared"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "broken"), kinds.CONFIG_MAP)
    make_gadget("odd", configMap="shared")
    make_gadget("even", configMap="shared")
    reconcile = shared.FakeReconcile()
    manager = manager_mod.Manager(
        kube, [Picky], namespaces=[namespace], metrics_bind="0", grace_period=5, reconcile=reconcile
    )
    manager.start()
    try:
        wait_for(lambda: manager.working and reconcile.count("odd") >= 1 and reconcile.count("even") >= 1, timeout=20)
        controller = manager.controllers[0]
        count = reconcile.count("even")
        kube.patch(kinds.CONFIG_MAP, "broken", {"data": {"x": "1"}}, namespace)
        kube.patch(kinds.CONFIG_MAP, "shared", {"data": {"x": "1"}}, namespace)
        wait_for(lambda: reconcile.count("even") > count, timeout=10)
        sample = controller.metrics.registry.get_sample_value
        index_errors = sample("okt_index_errors_total", {"controller": controller.name, "index": "config"})
        map_errors = sample(
            "okt_watch_map_errors_total", {"controller": controller.name, "kind": str(kinds.CONFIG_MAP)}
        )
    finally:
        manager.stop()
        manager.join(15)

    assert index_errors is not None and index_errors >= 1  # odd's, at each of its changes
    assert map_errors is not None and map_errors >= 2  # broken's listing and its change


class SlowlyMapped(shared.GadgetReconciler):
    """Gadgets whose ConfigMap's mapping waits, for the ConfigMap ``slow``, until the test lets it go on."""

    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"config": config_of}
    release: ClassVar[threading.Event] = threading.Event()
    mapping_threads: ClassVar[list[str]] = []

    @staticmethod
    def map_config(cm: Mapping[str, Any], ctx: watches.MapContext) -> list[dict[str, Any]]:
        SlowlyMapped.mapping_threads.append(threading.current_thread().name)
        if cm["metadata"]["name"] == "slow":
            SlowlyMapped.release.wait(30)
        return ctx.index("config", okt.ref_of(cm))

    watches = (okt.watch("configmaps", map=map_config),)


def test_a_mapping_that_takes_its_time_keeps_the_informer_from_nothing_and_its_primaries_are_reconciled(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]]
) -> None:
    """A mapping runs beside the informer of the kind it watches, not on its thread: the informer stores what the watch
    tells meanwhile (its thread must keep up with the watch, and a mapping's lookups decode each primary they find).
    """
    kube.create(config_map(namespace, "slow"), kinds.CONFIG_MAP)
    make_gadget("a", configMap="slow")
    reconcile = shared.FakeReconcile()
    manager = manager_mod.Manager(
        kube, [SlowlyMapped], namespaces=[namespace], metrics_bind="0", grace_period=5, reconcile=reconcile
    )
    SlowlyMapped.release.set()  # the first list's mappings go on at once
    manager.start()
    try:
        wait_for(lambda: manager.working and reconcile.count("a") >= 1, timeout=30)
        SlowlyMapped.release.clear()
        count = reconcile.count("a")
        kube.patch(kinds.CONFIG_MAP, "slow", {"data": {"x": "1"}}, namespace)  # its mapping waits
        kube.create(config_map(namespace, "fast"), kinds.CONFIG_MAP)
        controller = manager.controllers[0]

        wait_for(lambda: controller.cache.get(kinds.CONFIG_MAP, "fast", namespace) is not None, timeout=10)
        assert reconcile.count("a") == count  # the mapping still waits
        SlowlyMapped.release.set()
        wait_for(lambda: reconcile.count("a") == count + 1, timeout=10)
    finally:
        SlowlyMapped.release.set()
        manager.stop()
        manager.join(15)
    assert not [name for name in SlowlyMapped.mapping_threads if name.startswith("okt-informer-")]


class ExitingMap(shared.GadgetReconciler):
    """Gadgets whose ConfigMap mapping raises SystemExit for the ConfigMap ``exit``."""

    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"config": config_of}

    @staticmethod
    def map_config(cm: Mapping[str, Any], ctx: watches.MapContext) -> list[dict[str, Any]]:
        if cm["metadata"]["name"] == "exit":
            raise SystemExit(3)
        return ctx.index("config", okt.ref_of(cm))

    watches = (okt.watch("configmaps", map=map_config),)


def test_a_mapping_that_raises_system_exit_leaves_the_workers_to_start_and_later_events_mapped(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]]
) -> None:
    kube.create(config_map(namespace, "exit"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "cfg"), kinds.CONFIG_MAP)
    make_gadget("a", configMap="cfg")
    reconcile = shared.FakeReconcile()
    manager = manager_mod.Manager(
        kube, [ExitingMap], namespaces=[namespace], metrics_bind="0", grace_period=5, reconcile=reconcile
    )
    manager.start()
    try:
        wait_for(lambda: manager.working and reconcile.count("a") >= 1, timeout=30)
        count = reconcile.count("a")
        kube.patch(kinds.CONFIG_MAP, "cfg", {"data": {"x": "1"}}, namespace)
        wait_for(lambda: reconcile.count("a") > count, timeout=10, message="the change after the exit mapped")
    finally:
        manager.stop()
        manager.join(15)


class LabelMapped(shared.GadgetReconciler):
    """Gadgets reconciled when a ConfigMap labelled ``for: <gadget>`` changes; the mapping of ConfigMap ``moving``
    waits while ``release`` is clear, once it said so in ``entered``."""

    release: ClassVar[threading.Event] = threading.Event()
    entered: ClassVar[threading.Event] = threading.Event()

    @staticmethod
    def map_owner(cm: Mapping[str, Any], ctx: watches.MapContext) -> list[tuple[str, str]]:
        if cm["metadata"]["name"] == "moving" and not LabelMapped.release.is_set():
            LabelMapped.entered.set()
            LabelMapped.release.wait(30)
        owner = (cm["metadata"].get("labels") or {}).get("for")
        return [(cm["metadata"]["namespace"], owner)] if owner else []

    watches = (okt.watch("configmaps", map=map_owner),)


def test_the_changes_of_one_object_waiting_for_a_slow_mapping_wait_as_one_and_reconcile_its_first_and_last_owners(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]]
) -> None:
    """The informer does not wait for the mapping: what a slow one leaves behind is held for it, one event per object
    (held one by one, a relist or a busy shared object grew it without limit). The event that waits maps the state the
    object was in before the first of its changes and the state after the last."""
    owners = "abcdefgh"
    moving = config_map(namespace, "moving")
    moving["metadata"]["labels"] = {"for": "a"}
    kube.create(moving, kinds.CONFIG_MAP)
    for name in owners:
        make_gadget(name)
    reconcile = shared.FakeReconcile()
    manager = manager_mod.Manager(
        kube, [LabelMapped], namespaces=[namespace], metrics_bind="0", grace_period=5, reconcile=reconcile
    )
    LabelMapped.release.set()  # the first list's mappings go on at once
    LabelMapped.entered.clear()
    manager.start()
    try:
        wait_for(lambda: manager.working and all(reconcile.count(n) >= 1 for n in owners), timeout=30)
        controller = manager.controllers[0]
        before = {name: reconcile.count(name) for name in owners}
        LabelMapped.release.clear()
        kube.patch(kinds.CONFIG_MAP, "moving", {"metadata": {"labels": {"for": "b"}}}, namespace)
        assert LabelMapped.entered.wait(10), "the mapping of a→b waits"
        for owner in owners[2:]:
            kube.patch(kinds.CONFIG_MAP, "moving", {"data": {"owner": owner}}, namespace)
            kube.patch(kinds.CONFIG_MAP, "moving", {"metadata": {"labels": {"for": owner}}}, namespace)

        def labelled_last() -> bool:
            cached = controller.cache.get(kinds.CONFIG_MAP, "moving", namespace) or {}
            return (cached.get("metadata") or {}).get("labels") == {"for": owners[-1]}

        wait_for(labelled_last, timeout=10, message="the cache holds the last change")
        pending = controller.metrics.registry.get_sample_value(
            "okt_watch_events_pending", {"controller": controller.name}
        )
        assert pending == 1  # the twelve changes after a→b, while its mapping waits
        LabelMapped.release.set()
        # a→b (mapped when the burst began) reconciles a and b; the burst after it, b and h.
        wait_for(
            lambda: all(reconcile.count(name) > before[name] for name in ("a", "b", owners[-1])),
            timeout=10,
            message="the owners of the first and the last state reconciled",
        )
        wait_for(
            lambda: (
                controller.metrics.registry.get_sample_value(
                    "okt_watch_events_pending", {"controller": controller.name}
                )
                == 0
            ),
            timeout=10,
        )
    finally:
        LabelMapped.release.set()
        manager.stop()
        manager.join(15)


HANGING_MAPPING = """
import time

import okt
from tests.integration.runtime.conftest import GadgetReconciler

def slow(cm, ctx):
    time.sleep(30)  # a call without a timeout, as far as the watchdog can tell
    return []

class Slow(GadgetReconciler):
    watches = (okt.watch("configmaps", map=slow),)
"""


def test_okt_run_fails_healthz_on_a_mapping_stuck_past_its_own_watchdog_not_the_workers(
    tmp_path: pathlib.Path,
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
) -> None:
    """``--mapping-stuck-after`` watches the mapping thread apart from the workers' ``--stuck-after``: a mapping is
    quick where a reconcile may rightly take minutes, and ten minutes of no watched change reaching any primary was a
    long outage for a stall plain after one."""
    kube.create(config_map(namespace, "shared"), kinds.CONFIG_MAP)
    operator = tmp_path / "slow_mapping.py"
    operator.write_text(HANGING_MAPPING)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=("--stuck-after", "600", "--mapping-stuck-after", "1"),
        env={"PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])},
        cwd=tmp_path,
        log_path=tmp_path / "operator.log",
    )
    running.start()  # never ready: the mapping of the first list holds the workers
    try:
        assert running.probe_url is not None
        url = running.probe_url
        wait_for(lambda: fetch(url + "/healthz")[0] == 503, timeout=30, message=running.log_text)
        status, body = fetch(url + "/healthz")
    finally:
        running.stop()
    assert status == 503
    assert body.startswith("not ready: the controller gadget has been mapping one event for ")
    assert body.endswith(f" s (more than 1 s): ConfigMap {namespace}/shared")
    assert "mapping stuck" in running.log_text()


def test_healthz_fails_while_a_mapping_never_returns_and_names_the_watched_object(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]]
) -> None:
    """A watch's mapping that never returns (a call without a timeout, a deadlock) held the controller's one mapping
    thread: no change of a watched object reached a primary any more, and, during the start, the workers waiting for
    the first lists' mappings never started — while ``/healthz`` and ``/readyz`` both answered ``200 ok``. Its own
    watchdog, not the workers': a reconcile may rightly run for as long as they allow, a mapping is quick."""
    release = threading.Event()

    def hangs(cm: Mapping[str, Any], ctx: Any) -> list[tuple[str | None, str]]:
        release.wait(60)
        return [(namespace, "g")]

    class Hanging(shared.GadgetReconciler):
        watches = (okt.watch("configmaps", map=hangs),)

    kube.create(config_map(namespace, "shared"), kinds.CONFIG_MAP)
    make_gadget("g")
    reconcile = shared.FakeReconcile()
    manager = manager_mod.Manager(
        kube,
        [Hanging],
        reconcile=reconcile,
        namespaces=[namespace],
        metrics_bind="127.0.0.1:0",
        stuck_after=600,
        mapping_stuck_after=1.0,
    )
    try:
        manager.start()
        assert manager.probes is not None
        url = manager.probes.url
        wait_for(lambda: fetch(url + "/healthz")[0] == 503, timeout=15)
        status, body = fetch(url + "/healthz")
        assert status == 503
        assert body.startswith("not ready: the controller gadget has been mapping one event for ")
        assert body.endswith(f" s (more than 1 s): ConfigMap {namespace}/shared")
        assert fetch(url + "/readyz")[0] == 503
        assert reconcile.count("g") == 0

        release.set()
        wait_for(lambda: fetch(url + "/healthz") == (200, "ok"), timeout=10)
        wait_for(lambda: reconcile.count("g") >= 1, timeout=10)
    finally:
        release.set()
        manager.stop()
        manager.join(15)
