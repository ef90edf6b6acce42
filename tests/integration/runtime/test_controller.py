"""Controllers against a real kube-apiserver: one worker per key, the event filter, children mapped to owners."""

from __future__ import annotations

import asyncio
import pathlib
import threading
import time
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.testing import envtest, faults, wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration

#: How long a negative check waits for an event that must not cause a reconcile.
SETTLE = 0.5


def controller_reference(kind: kinds.Kind, owner: dict[str, Any]) -> dict[str, Any]:
    """A controller ownerReference pointing at ``owner``."""
    meta = owner["metadata"]
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def settle(controller: controller_mod.Controller) -> None:
    """Give pending events time to arrive, then wait until nothing is queued, waiting for its delay, or running."""
    time.sleep(SETTLE)
    wait_for(lambda: shared.idle(controller), timeout=10)


def test_one_key_is_never_reconciled_by_two_workers_at_once(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
    run_controller: Any,
) -> None:
    names = ["g0", "g1", "g2"]
    for name in names:
        make_gadget(name)
    reconcile = fake_reconcile(delay=0.02)
    controller = run_controller(reconcile, workers=8)
    wait_for(lambda: all(reconcile.count(n) for n in names), timeout=10)
    for i in range(300):
        controller.queue.add((namespace, names[i % 3]))
        if i % 30 == 0:
            kube.patch(gadget_kind, names[i % 3], {"metadata": {"labels": {"round": str(i)}}}, namespace)
    settle(controller)
    assert reconcile.max_running_per_key == 1
    assert reconcile.max_running >= 2
    assert all(reconcile.count(n) >= 2 for n in names)


@pytest.mark.parametrize(
    "raised",
    [
        SystemExit,  # what a hook's sys.exit() raises: in a worker thread it ended the thread, silently
        asyncio.CancelledError,  # a hook's asyncio.run() of a task cancelled: a BaseException too
        KeyboardInterrupt,
    ],
    ids=lambda raised: raised.__name__,
)
def test_a_reconcile_that_raises_a_base_exception_is_retried_and_its_worker_goes_on(
    raised: type[BaseException], make_gadget: Any, fake_reconcile: Any, run_controller: Any
) -> None:
    def exit_on_bad(namespace: str | None, name: str) -> None:
        if name == "bad":
            raise raised()

    reconcile = fake_reconcile(action=exit_on_bad)
    controller = run_controller(reconcile, workers=1)
    make_gadget("bad")
    wait_for(lambda: reconcile.count("bad") >= 2, timeout=15, message="the failed key retried")

    make_gadget("good")
    wait_for(lambda: reconcile.count("good") == 1, timeout=15, message="the one worker still at work")
    assert controller.queue.failures(next(k for k in reconcile.calls if k[1] == "bad")) >= 1


def test_a_status_only_change_is_dropped_and_a_label_change_is_not(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
    run_controller: Any,
) -> None:
    make_gadget("g")

    def write_status(ns: str | None, name: str) -> None:
        # Every reconcile writes a new status: without the filter this would loop forever.
        kube.patch(gadget_kind, name, {"status": {"stamp": time.monotonic()}}, ns, subresource="status")

    reconcile = fake_reconcile(action=write_status)
    controller = run_controller(reconcile)
    wait_for(lambda: reconcile.count("g") == 1, timeout=10)
    wait_for(lambda: (controller.cache.get(gadget_kind, "g", namespace) or {}).get("status"), timeout=10)
    settle(controller)
    assert reconcile.count("g") == 1

    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"tier": "gold"}}}, namespace)
    wait_for(lambda: reconcile.count("g") == 2, timeout=10)
    settle(controller)
    assert reconcile.count("g") == 2


def test_a_childs_change_reconciles_its_owner_and_a_deleted_primary_is_left_alone(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
    run_controller: Any,
) -> None:
    owner = make_gadget("g")
    reconcile = fake_reconcile()
    controller = run_controller(reconcile)
    wait_for(lambda: reconcile.count("g") == 1, timeout=10)
    reference = controller_reference(gadget_kind, owner)
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"v": "1"},
        "metadata": {"name": "g-config", "namespace": namespace, "ownerReferences": [reference]},
    }
    stranger = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stranger", "namespace": namespace}}
    kube.create(child, kinds.CONFIG_MAP)
    kube.create(stranger, kinds.CONFIG_MAP)
    wait_for(lambda: reconcile.count("g") == 2, timeout=10)
    wait_for(lambda: controller.cache.owned_by(kinds.CONFIG_MAP, owner["metadata"]["uid"]), timeout=10)
    settle(controller)
    assert reconcile.count("g") == 2
    assert reconcile.count("stranger") == 0

    kube.delete(kinds.CONFIG_MAP, "g-config", namespace)
    wait_for(lambda: reconcile.count("g") == 3, timeout=10)
    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: controller.cache.get(gadget_kind, "g", namespace) is None, timeout=10)
    settle(controller)
    assert reconcile.count("g") == 3


def test_a_primary_deleted_while_its_reconcile_fails_leaves_no_retry_behind(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
    run_controller: Any,
) -> None:
    """The object goes while its reconcile runs, and the reconcile then fails: the deletion already dropped the key's
    backoff and due time, and the failure must not bring them back (a reconcile of nothing, after the backoff)."""
    started: list[controller_mod.Controller] = []

    def delete_then_fail(namespace: str | None, name: str) -> None:
        kube.delete(gadget_kind, name, namespace)
        wait_for(lambda: started[0].cache.get(gadget_kind, name, namespace) is None, timeout=10)
        raise RuntimeError("the reconcile failed as its object went")

    reconcile = fake_reconcile(action=delete_then_fail)
    reconcile.release.clear()  # the first reconcile waits until the controller is known
    make_gadget("g")
    controller = run_controller(reconcile, workers=1)
    started.append(controller)
    reconcile.release.set()
    key = (namespace, "g")
    wait_for(
        lambda: controller.processed == 1 and not controller.queue.processing(key),
        timeout=20,
        message="the failing reconcile",
    )
    assert controller.queue.failures(key) == 0
    assert controller.queue.delayed_count == 0
    settle(controller)
    assert reconcile.count("g") == 1


def test_the_children_of_a_deleted_owner_wake_nothing_while_the_garbage_collector_removes_them(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
    run_controller: Any,
) -> None:
    owner = make_gadget("doomed")
    reconcile = fake_reconcile()
    controller = run_controller(reconcile)
    wait_for(lambda: reconcile.count("doomed") == 1, timeout=10)
    reference = controller_reference(gadget_kind, owner)
    for i in range(3):
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"doomed-{i}", "namespace": namespace}}
        child["metadata"]["ownerReferences"] = [reference]  # type: ignore[index]
        kube.create(child, kinds.CONFIG_MAP)
    wait_for(lambda: len(controller.cache.owned_by(kinds.CONFIG_MAP, owner["metadata"]["uid"])) == 3, timeout=10)
    settle(controller)
    before = reconcile.count("doomed")

    kube.delete(gadget_kind, "doomed", namespace)
    wait_for(lambda: not controller.cache.owned_by(kinds.CONFIG_MAP, owner["metadata"]["uid"]), timeout=60)
    settle(controller)

    assert reconcile.count("doomed") == before


def test_a_key_that_failed_while_the_api_server_was_away_is_retried_when_it_answers_again(
    control_plane: Any,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    gadget_reconciler: Any,
    make_gadget: Any,
    fake_reconcile: Any,
    tmp_path: pathlib.Path,
) -> None:
    """The backoff a key climbed during an outage is not waited out once the API server is back (here it is an hour:
    without the recovery the key would not be retried within the test)."""
    make_gadget("outage")
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0.0, kinds=("reset",)) as proxy:
        path = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig-proxy")
        client = kube_client.Client.from_kubeconfig(path)

        def read_it(ns: str | None, name: str) -> None:
            client.get(gadget_kind, name, ns)  # through the proxy: no answer while it resets every connection

        reconcile = fake_reconcile(action=read_it)
        cache = cache_mod.Cache(client, [namespace], watch_timeout=2)  # the informers reconnect every 1-2 s
        controller = controller_mod.Controller(
            gadget_reconciler,
            client,
            cache,
            workers=1,
            reconcile=reconcile,
            backoff=backoff_mod.Backoff(base=3600, cap=3600),
            record_events=False,
        )
        try:
            controller.watch()
            assert cache.wait_for_sync(30)
            controller.start_workers()
            wait_for(lambda: reconcile.count("outage") == 1, timeout=15, message="the first reconcile")
            settle(controller)

            informers = cache.informers(gadget_kind)
            before = [informer.reconnects for informer in informers]
            proxy.rate = 1.0  # the API server is away
            controller.queue.add((namespace, "outage"))
            key = (namespace, "outage")
            wait_for(lambda: controller.queue.failures(key) == 1, timeout=30, message="the reconcile to fail")
            wait_for(
                lambda: all(i.reconnects > n for i, n in zip(informers, before, strict=True)),
                timeout=30,
                message="the informers to fail",
            )
            assert reconcile.count("outage") == 2

            proxy.rate = 0.0  # back
            wait_for(lambda: reconcile.count("outage") == 3, timeout=30, message="the retry once the API answers")
            wait_for(lambda: controller.queue.failures(key) == 0, timeout=10, message="the backoff to be forgotten")
        finally:
            controller.shutdown(5)
            cache.stop()
            client.close()


class CleanedGadget(okt.Reconciler):
    """A Gadget whose cleanup fails on its first call (an external system briefly down), then succeeds."""

    api_version = "runtime.okt.io/v1"
    kind = "Gadget"
    plural = "gadgets"
    finalizer = "test.okt.io/release"
    cleanups: ClassVar[list[tuple[str, bool]]] = []

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        failing = not self.cleanups
        self.cleanups.append((ctx.cr.uid, not failing))
        if failing:
            raise okt.TemporaryError("the external system is down", delay=0.2)
        return None


def gadget_with_finalizer(
    reconciler: type[CleanedGadget],
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    run_controller: Any,
) -> tuple[str, Any]:
    """A Gadget ``g`` under a running controller of ``reconciler`` (its cleanups forgotten), once okt's finalizer is
    on it: its uid and the controller."""
    reconciler.cleanups.clear()
    uid = make_gadget("g")["metadata"]["uid"]
    controller = run_controller(core.reconcile)
    finalizer = reconciler.finalizer
    wait_for(lambda: finalizer in okt.CustomResource(kube.get(gadget_kind, "g", namespace)).finalizers, timeout=10)
    return uid, controller


class PatientGadget(CleanedGadget):
    """A Gadget whose cleanup first answers that it is under way (``requeue_after``), then that it is done."""

    cleanups: ClassVar[list[tuple[str, bool]]] = []

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        finished = bool(self.cleanups)
        self.cleanups.append((ctx.cr.uid, finished))
        return None if finished else okt.requeue_after(0.2)


@pytest.mark.parametrize("gadget_reconciler", [CleanedGadget, PatientGadget], ids=["raises-first", "requeues-first"])
def test_a_primary_deleted_with_okts_finalizer_on_is_cleaned_up_until_the_cleanup_succeeds(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    run_controller: Any,
    gadget_reconciler: type[CleanedGadget],
) -> None:
    """The cleanup runs on the last state again until it says it is done: after it raised, and after it answered
    ``requeue_after`` (not finished yet) — neither lets the last state go."""
    uid, controller = gadget_with_finalizer(
        gadget_reconciler, kube, namespace, gadget_kind, make_gadget, run_controller
    )

    # Gone at once with the finalizer on, as a deletion racing the finalizer's addition can make it.
    assert control_plane.delete_from_etcd(gadget_kind, "g", namespace)

    wait_for(lambda: any(done for _, done in gadget_reconciler.cleanups), timeout=15)
    settle(controller)
    assert gadget_reconciler.cleanups == [(uid, False), (uid, True)]
    assert kube.get_or_none(gadget_kind, "g", namespace) is None


class CountedGadget(CleanedGadget):
    """A Gadget whose cleanup always succeeds, counted."""

    cleanups: ClassVar[list[tuple[str, bool]]] = []

    def cleanup(self, ctx: okt.Context) -> None:
        self.cleanups.append((ctx.cr.uid, True))


@pytest.mark.parametrize("gadget_reconciler", [CountedGadget])
def test_a_deletion_that_waits_for_okts_finalizer_runs_the_cleanup_once(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, make_gadget: Any, run_controller: Any
) -> None:
    uid, controller = gadget_with_finalizer(CountedGadget, kube, namespace, gadget_kind, make_gadget, run_controller)

    # The watch's DELETED tells the last state stored, okt's finalizer still listed: not a deletion past it.
    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: kube.get_or_none(gadget_kind, "g", namespace) is None, timeout=15)
    wait_for(lambda: controller.cache.get(gadget_kind, "g", namespace) is None, timeout=15)
    settle(controller)
    assert CountedGadget.cleanups == [(uid, True)]


class HeldWatches:
    """The real client, except that while ``held`` a watch or a list waits until ``release`` is set (an informer
    whose watch broke lists before it watches again: a list answered by an API server that has not loaded its CRDs
    yet would take the kind for unserved, and its relist would announce every object, as a sweep)."""

    def __init__(self, client: kube_client.Client) -> None:
        self._client = client
        self.held = False
        self.release = threading.Event()
        self.waiting = 0

    def _wait(self) -> None:
        if self.held:
            self.waiting += 1
            self.release.wait(60)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        self._wait()
        return self._client.watch(*args, **kwargs)

    def list_pages(self, *args: Any, **kwargs: Any) -> Any:
        self._wait()
        return self._client.list_pages(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_child_deleted_and_a_primary_created_while_the_watches_were_down_are_reconciled_after_the_relist(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    gadget_reconciler: Any,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    """The API server restarts; its watch cache starts after the informers' resourceVersion, so their watches are
    answered 410 Gone: the deletion of a child and the creation of a primary are known from the relist only, and the
    child's owner must be woken to create it again."""
    owner = make_gadget("g")
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "g-config",
            "namespace": namespace,
            "ownerReferences": [controller_reference(gadget_kind, owner)],
        },
    }
    kube.create(child, kinds.CONFIG_MAP)
    reconcile = fake_reconcile()
    client = HeldWatches(kube)
    cache = cache_mod.Cache(client, [namespace])  # type: ignore[arg-type]
    controller = controller_mod.Controller(gadget_reconciler, kube, cache, workers=1, reconcile=reconcile)
    try:
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        wait_for(lambda: reconcile.count("g") == 1, timeout=10, message="the first reconcile")
        settle(controller)

        client.held = True
        elsewhere = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "default"}}
        kube.create(elsewhere, kinds.CONFIG_MAP)  # the cluster's resourceVersion moves past the informers'
        kube.delete(kinds.CONFIG_MAP, "elsewhere", "default")
        control_plane.restart_apiserver()
        wait_for(lambda: client.waiting >= 2, timeout=30, message="both informers to try reconnecting")
        wait_for(lambda: kube.get_or_none(kinds.CONFIG_MAP, "g-config", namespace) is not None, timeout=30)
        # The restarted API server serves the CRD a moment after the built-in kinds.
        wait_for(lambda: kube.get_or_none(gadget_kind, "g", namespace) is not None, timeout=30)
        kube.delete(kinds.CONFIG_MAP, "g-config", namespace)
        make_gadget("h")
        client.release.set()

        wait_for(lambda: reconcile.count("h") == 1, timeout=30, message="the new primary's reconcile")
        wait_for(
            lambda: reconcile.count("g") == 2,
            timeout=30,
            message=lambda: f"the owner of the deleted child (reconciled {reconcile.count('g')} times)",
        )
        assert cache.get(kinds.CONFIG_MAP, "g-config", namespace) is None
        assert all(informer.relists == 2 for informer in cache.informers(kinds.CONFIG_MAP))
    finally:
        client.release.set()
        controller.shutdown(5)
        cache.stop()


def test_a_primary_deleted_and_created_again_while_the_watches_were_down_starts_without_the_old_ones_backoff(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    gadget_reconciler: Any,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    """The reconcile of ``g`` always fails; while the watches are down (the API server restarts: they are answered
    410 Gone), ``g`` is deleted and created again. The relist tells both at once: the new object's first failure is
    its first, retried after the backoff of one failure, not of the old object's six."""

    def fail(namespace: str | None, name: str) -> None:
        raise RuntimeError("the reconcile of g fails")

    reconcile = fake_reconcile(action=fail)
    make_gadget("g")
    key = (namespace, "g")
    client = HeldWatches(kube)
    cache = cache_mod.Cache(client, [namespace])  # type: ignore[arg-type]
    backoff = backoff_mod.Backoff(base=0.25, factor=2.0, cap=60.0, jitter=0.0)
    controller = controller_mod.Controller(
        gadget_reconciler, kube, cache, workers=1, reconcile=reconcile, backoff=backoff
    )
    try:
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        wait_for(lambda: controller.queue.failures(key) >= 6, timeout=30, message="six failures of the old g")

        client.held = True
        elsewhere = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "default"}}
        kube.create(elsewhere, kinds.CONFIG_MAP)  # the cluster's resourceVersion moves past the informers'
        kube.delete(kinds.CONFIG_MAP, "elsewhere", "default")
        control_plane.restart_apiserver()
        wait_for(lambda: client.waiting >= 2, timeout=30, message="both informers to try reconnecting")
        # The restarted API server serves the CRD a moment after the built-in kinds.
        wait_for(lambda: kube.get_or_none(gadget_kind, "g", namespace) is not None, timeout=30)
        old_uid = kube.get(gadget_kind, "g", namespace)["metadata"]["uid"]
        kube.delete(gadget_kind, "g", namespace)
        wait_for(lambda: kube.get_or_none(gadget_kind, "g", namespace) is None, timeout=30)
        new_uid = make_gadget("g")["metadata"]["uid"]
        assert new_uid != old_uid
        calls = reconcile.count("g")
        client.release.set()

        wait_for(lambda: cache.uid(gadget_kind, "g", namespace) == new_uid, timeout=30, message="the relist")
        wait_for(lambda: reconcile.count("g") > calls, timeout=30, message="the new g's reconcile")
        wait_for(lambda: not controller.queue.processing(key), timeout=10)
        # The new g's own failures (its backoff took 7.75 s to reach six), not the old g's six and more.
        assert 1 <= controller.queue.failures(key) < 6
        assert all(informer.relists == 2 for informer in cache.informers(gadget_kind))
    finally:
        client.release.set()
        controller.shutdown(5)
        cache.stop()
