"""Daemons under the Manager on a real kube-apiserver: one thread per object and daemon, started where reconciles run,
stopped with the object (deletion, a filter), the shutdown or the lease; a failing daemon is restarted."""

from __future__ import annotations

import asyncio
import collections
import datetime
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core
from okt.runtime import manager as manager_mod
from okt.testing import wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration


class Journal:
    """What the daemons did, by object name: starts, stops seen, failures; and how many run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: collections.Counter[str] = collections.Counter()
        self.stops: collections.Counter[str] = collections.Counter()
        self.running: collections.Counter[str] = collections.Counter()
        self.most_at_once: collections.Counter[str] = collections.Counter()
        self.attempts: list[int] = []

    def enter(self, name: str, attempt: int) -> None:
        with self.lock:
            self.starts[name] += 1
            self.running[name] += 1
            self.most_at_once[name] = max(self.most_at_once[name], self.running[name])
            self.attempts.append(attempt)

    def leave(self, name: str, stopped: bool) -> None:
        with self.lock:
            self.running[name] -= 1
            self.stops[name] += stopped


class Watching(shared.GadgetReconciler):
    """Gadgets labelled ``watched=no`` are filtered out; each other one has a ``monitor`` daemon."""

    journal: ClassVar[Journal] = Journal()
    failures_left: ClassVar[dict[str, int]] = {}

    def when(self, obj: Mapping[str, Any]) -> bool:
        return ((obj.get("metadata") or {}).get("labels") or {}).get("watched") != "no"

    @okt.daemon(backoff=0.2, max_backoff=0.4)
    def monitor(self, ctx: okt.DaemonContext) -> None:
        self.journal.enter(ctx.name, ctx.attempt)
        try:
            if self.failures_left.get(ctx.name, 0) > 0:
                self.failures_left[ctx.name] -= 1
                raise RuntimeError("the monitored system is down")
            assert ctx.obj is not None and ctx.obj["metadata"]["uid"] == ctx.uid
            ctx.stop.wait(120)
        finally:
            self.journal.leave(ctx.name, ctx.stop.is_set())


@pytest.fixture
def watching() -> type[Watching]:
    Watching.journal = Journal()
    Watching.failures_left = {}
    return Watching


@pytest.fixture
def managers(
    kube: kube_client.Client, namespace: str, watching: type[Watching]
) -> Iterator[Callable[..., manager_mod.Manager]]:
    made: list[manager_mod.Manager] = []

    def make(reconcilers: list[type[okt.Reconciler]] | None = None, **kwargs: Any) -> manager_mod.Manager:
        options: dict[str, Any] = {
            "namespaces": [namespace],
            "metrics_bind": "0",
            "lease_namespace": namespace,
            "lease_duration": 3.0,
            "renew_deadline": 2.0,
            "retry_period": 0.5,
            "grace_period": 10.0,
            "reconcile": shared.FakeReconcile(),
            **kwargs,
        }
        manager = manager_mod.Manager(kube, reconcilers or [watching], **options)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.stop()
    for manager in made:
        manager.join(15)


def test_one_daemon_runs_per_object_and_stops_when_its_object_is_deleted_or_filtered_out(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    watching: type[Watching],
) -> None:
    journal = watching.journal
    make_gadget("before")  # exists before the manager starts
    make_gadget("skipped")
    kube.patch(gadget_kind, "skipped", {"metadata": {"labels": {"watched": "no"}}}, namespace)
    manager = managers()
    manager.start()
    wait_for(lambda: journal.running["before"] == 1, timeout=20, message="the daemon of an existing object")
    make_gadget("after")
    make_gadget("filtered")
    wait_for(lambda: journal.running["after"] == 1 and journal.running["filtered"] == 1, timeout=10)

    # Events of a running object (metadata changes) never start a second daemon.
    for i in range(3):
        kube.patch(gadget_kind, "after", {"metadata": {"labels": {"round": str(i)}}}, namespace)
    wait_for(lambda: manager.controllers[0].daemons.running().count((namespace, "after", "monitor")) == 1)

    kube.delete(gadget_kind, "after", namespace)
    wait_for(lambda: journal.stops["after"] == 1, timeout=10, message="the daemon to stop after the deletion")
    kube.patch(gadget_kind, "filtered", {"metadata": {"labels": {"watched": "no"}}}, namespace)
    wait_for(lambda: journal.stops["filtered"] == 1, timeout=10, message="the daemon to stop once filtered out")
    wait_for(lambda: manager.controllers[0].daemons.running() == [(namespace, "before", "monitor")], timeout=10)

    # Back in the filter: a new daemon, only once the previous one returned.
    kube.patch(gadget_kind, "filtered", {"metadata": {"labels": {"watched": "yes"}}}, namespace)
    wait_for(lambda: journal.running["filtered"] == 1, timeout=10)

    assert journal.starts == {"before": 1, "after": 1, "filtered": 2}
    assert journal.starts["skipped"] == 0
    assert max(journal.most_at_once.values()) == 1
    assert journal.stops["before"] == 0


class Caching(shared.GadgetReconciler):
    """Every Gadget is reconciled; those labelled ``tier=cache`` have a ``monitor`` daemon."""

    journal: ClassVar[Journal] = Journal()

    @okt.daemon(labels={"tier": "cache"})
    def monitor(self, ctx: okt.DaemonContext) -> None:
        self.journal.enter(ctx.name, ctx.attempt)
        try:
            ctx.stop.wait(120)
        finally:
            self.journal.leave(ctx.name, ctx.stop.is_set())


def test_a_label_change_stops_a_daemon_filtered_by_its_labels_and_another_starts_it_again_the_object_reconciled(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
) -> None:
    journal = Caching.journal = Journal()
    reconcile = shared.FakeReconcile()
    manager = managers(reconcilers=[Caching], reconcile=reconcile)
    manager.start()
    make_gadget("cache")
    kube.patch(gadget_kind, "cache", {"metadata": {"labels": {"tier": "cache"}}}, namespace)
    make_gadget("web")
    kube.patch(gadget_kind, "web", {"metadata": {"labels": {"tier": "web"}}}, namespace)
    wait_for(lambda: journal.running["cache"] == 1, timeout=20, message="the daemon of the Gadget labelled tier=cache")
    wait_for(lambda: reconcile.count("web") >= 1, timeout=10, message="the other Gadget reconciled")

    reconciles = reconcile.count("cache")
    kube.patch(gadget_kind, "cache", {"metadata": {"labels": {"tier": "web"}}}, namespace)
    wait_for(lambda: journal.stops["cache"] == 1, timeout=10, message="the daemon to stop once its label changed")
    wait_for(lambda: reconcile.count("cache") > reconciles, timeout=10, message="the object still reconciled")
    assert manager.controllers[0].daemons.running() == []

    kube.patch(gadget_kind, "cache", {"metadata": {"labels": {"tier": "cache"}}}, namespace)
    wait_for(lambda: journal.running["cache"] == 1 and journal.starts["cache"] == 2, timeout=10)
    wait_for(lambda: manager.controllers[0].daemons.running() == [(namespace, "cache", "monitor")])

    assert journal.starts["web"] == 0
    assert journal.most_at_once["cache"] == 1
    assert journal.attempts == [1, 1]  # a new lifetime, not a restart after a failure


def test_the_shutdown_stops_every_daemon(
    make_gadget: Callable[..., dict[str, Any]],
    managers: Callable[..., manager_mod.Manager],
    watching: type[Watching],
) -> None:
    journal = watching.journal
    manager = managers()
    manager.start()
    for name in ("a", "b", "c"):
        make_gadget(name)
    wait_for(lambda: sum(journal.running.values()) == 3, timeout=20)

    manager.stop()
    assert manager.join(15)

    assert journal.stops == {"a": 1, "b": 1, "c": 1}
    assert sum(journal.running.values()) == 0
    assert manager.controllers[0].daemons.running() == []


def test_a_daemon_that_raises_is_restarted_after_a_backoff_and_the_operator_keeps_working(
    make_gadget: Callable[..., dict[str, Any]],
    managers: Callable[..., manager_mod.Manager],
    watching: type[Watching],
) -> None:
    journal = watching.journal
    watching.failures_left = {"flaky": 2}
    reconcile = shared.FakeReconcile()
    manager = managers(reconcile=reconcile)
    manager.start()
    make_gadget("flaky")
    wait_for(lambda: journal.running["flaky"] == 1 and journal.starts["flaky"] == 3, timeout=20)
    make_gadget("other")
    wait_for(lambda: reconcile.count("other") == 1 and journal.running["other"] == 1, timeout=10)

    assert journal.attempts[:3] == [1, 2, 3]
    assert journal.most_at_once["flaky"] == 1
    assert manager.working


def test_a_standby_runs_no_daemon_until_it_leads(
    make_gadget: Callable[..., dict[str, Any]],
    managers: Callable[..., manager_mod.Manager],
    watching: type[Watching],
) -> None:
    journal = watching.journal
    leader = managers(leader_elect=True, identity="leader")
    leader.start()
    wait_for(lambda: leader.working, timeout=15)
    standby = managers(leader_elect=True, identity="standby")
    standby.start()
    make_gadget("g")
    wait_for(lambda: journal.running["g"] == 1, timeout=10)
    wait_for(lambda: standby.cache is not None and standby.cache.synced, timeout=10)
    wait_for(lambda: standby.elector is not None and standby.elector.holder == "leader", timeout=10)

    assert standby.controllers[0].daemons.running() == []
    assert leader.controllers[0].daemons.running() == [(leader.namespaces[0], "g", "monitor")]  # type: ignore[index]

    leader.stop()
    assert leader.join(15)
    wait_for(lambda: standby.working and journal.running["g"] == 1, timeout=15, message="the standby taking over")
    assert journal.stops["g"] == 1
    assert journal.starts["g"] == 2
    assert standby.controllers[0].daemons.running() == [(standby.namespaces[0], "g", "monitor")]  # type: ignore[index]


def test_a_leader_that_loses_its_lease_stops_its_daemons(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    managers: Callable[..., manager_mod.Manager],
    watching: type[Watching],
) -> None:
    journal = watching.journal
    leader = managers(leader_elect=True, identity="leader")
    leader.start()
    make_gadget("g")
    wait_for(lambda: journal.running["g"] == 1, timeout=20)

    # Someone else takes the lease: the leader's renewals fail, it is deposed and stops.
    lease = kube.get(kinds.LEASE, leader.lease_name, namespace)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease["spec"].update(holderIdentity="nobody", renewTime=now)
    kube.replace(kinds.LEASE, lease)
    assert leader.join(30)

    assert leader.lost_leadership
    # Asked to stop at once; the lease held by another, the manager does not wait for it (see test_run_daemon_handover).
    wait_for(lambda: journal.running["g"] == 0, timeout=10, message="the daemon to return")
    assert journal.stops["g"] == 1


class Lingering(Watching):
    """A daemon that, once asked to stop, returns only when the test lets it go (cleaning up after itself)."""

    let_go: ClassVar[threading.Event] = threading.Event()
    stop_seen: ClassVar[threading.Event] = threading.Event()

    @okt.daemon(backoff=0.2, max_backoff=0.4)
    def monitor(self, ctx: okt.DaemonContext) -> None:
        self.journal.enter(ctx.name, ctx.attempt)
        try:
            ctx.stop.wait(120)
            self.stop_seen.set()
            self.let_go.wait(30)
        finally:
            self.journal.leave(ctx.name, ctx.stop.is_set())


def test_a_deleted_object_is_finalized_only_once_its_daemons_returned(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
) -> None:
    """okt's finalizer keeps the object (and its children) while a daemon may still use them: no reconcile of the
    deleted object — where the finalizer would be released — runs before its daemons have returned."""
    Lingering.journal, Lingering.let_go, Lingering.stop_seen = Journal(), threading.Event(), threading.Event()
    journal = Lingering.journal
    seen: list[tuple[bool, int]] = []  # (deleting, daemons running) at each reconcile of "held"

    def record(ns: str | None, name: str) -> None:
        if name == "held":
            obj = kube.get(gadget_kind, name, ns)
            with journal.lock:
                seen.append((bool(obj["metadata"].get("deletionTimestamp")), journal.running[name]))

    manager = manager_mod.Manager(
        kube,
        [Lingering],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=10.0,
        reconcile=shared.FakeReconcile(action=record),
    )
    make_gadget("held")
    kube.patch(gadget_kind, "held", {"metadata": {"finalizers": ["test.okt.io/hold"]}}, namespace)
    try:
        manager.start()
        wait_for(lambda: journal.running["held"] == 1, timeout=20, message="the daemon of held")
        kube.delete(gadget_kind, "held", namespace)
        assert Lingering.stop_seen.wait(10), "the daemon was not asked to stop after the deletion"
        wait_for(lambda: manager.controllers[0].cache.get(gadget_kind, "held", namespace) is not None)
        time.sleep(1.0)  # a window in which a reconcile of the deleted object would run (none may)
        assert not [s for s in seen if s[0]], f"the deleted object was reconciled while its daemon ran: {seen}"
        Lingering.let_go.set()
        wait_for(lambda: any(deleting for deleting, _ in seen), timeout=10, message="a reconcile once it returned")
        assert all(running == 0 for deleting, running in seen if deleting), seen
    finally:
        Lingering.let_go.set()
        kube.patch(gadget_kind, "held", {"metadata": {"finalizers": None}}, namespace)
        manager.stop()
        manager.join(15)


class SlowToStop(shared.GadgetReconciler):
    """A Gadget daemon that, once asked to stop, returns only when the test lets it go."""

    let_go: ClassVar[threading.Event] = threading.Event()
    running: ClassVar[threading.Event] = threading.Event()

    @okt.daemon
    def drain(self, ctx: okt.DaemonContext) -> None:
        self.running.set()
        ctx.stop.wait(120)
        self.let_go.wait(60)


class Settings(okt.Reconciler):
    """Secrets labelled ``role=settings``, another controller of the same manager, with a daemon of its own."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"
    running: ClassVar[threading.Event] = threading.Event()
    stopped: ClassVar[threading.Event] = threading.Event()

    def when(self, obj: Mapping[str, Any]) -> bool:
        return ((obj.get("metadata") or {}).get("labels") or {}).get("role") == "settings"

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        self.running.set()
        ctx.stop.wait(120)
        self.stopped.set()


def test_the_shutdown_asks_the_daemons_of_every_controller_to_stop_at_once(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]]
) -> None:
    """A controller whose daemon is slow to return does not keep another controller's daemons running: a replica
    that stops (or lost its lease) asks all of them to stop together, before it waits for any."""
    SlowToStop.let_go, SlowToStop.running = threading.Event(), threading.Event()
    Settings.running, Settings.stopped = threading.Event(), threading.Event()
    make_gadget("g")
    meta = {"name": "s", "namespace": namespace, "labels": {"role": "settings"}}
    secret = kinds.BUILTIN[("v1", "Secret")]
    kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"k": "v"}}, secret)
    manager = manager_mod.Manager(
        kube,
        [SlowToStop, Settings],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=60.0,
        reconcile=shared.FakeReconcile(),
    )
    try:
        manager.start()
        assert SlowToStop.running.wait(20) and Settings.running.wait(20), "both daemons running"
        manager.stop()
        assert Settings.stopped.wait(10), "the second controller's daemon was not asked to stop while the first's ran"
        assert not manager.join(0)  # the first controller's daemon still holds the shutdown
    finally:
        SlowToStop.let_go.set()
        manager.stop()
        assert manager.join(15)


class Writing(shared.GadgetReconciler):
    """A daemon that, once asked to stop, tries one last write to its object and records what became of it."""

    outcomes: ClassVar[list[BaseException | None]] = []
    running: ClassVar[threading.Event] = threading.Event()
    done: ClassVar[threading.Event] = threading.Event()

    @okt.daemon
    def flush(self, ctx: okt.DaemonContext) -> None:
        self.running.set()
        ctx.stop.wait(120)
        try:
            ctx.client.patch(ctx.kind, ctx.name, {"metadata": {"labels": {"flushed": "yes"}}}, ctx.namespace)
        except Exception as exc:
            self.outcomes.append(exc)
        else:
            self.outcomes.append(None)
        finally:
            self.done.set()


def test_a_daemon_of_a_leader_that_lost_its_lease_writes_nothing(
    kube: kube_client.Client, namespace: str, make_gadget: Callable[..., dict[str, Any]], gadget_kind: kinds.Kind
) -> None:
    Writing.outcomes, Writing.running, Writing.done = [], threading.Event(), threading.Event()
    make_gadget("g")
    leader = manager_mod.Manager(
        kube,
        [Writing],
        namespaces=[namespace],
        metrics_bind="0",
        leader_elect=True,
        identity="leader",
        lease_namespace=namespace,
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
        grace_period=10.0,
        reconcile=shared.FakeReconcile(),
    )
    try:
        leader.start()
        assert Writing.running.wait(20), "the daemon of g"
        lease = kube.get(kinds.LEASE, leader.lease_name, namespace)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"].update(holderIdentity="nobody", renewTime=now)
        kube.replace(kinds.LEASE, lease)
        assert leader.join(30)
        assert Writing.done.wait(10)
    finally:
        leader.stop()
        leader.join(15)

    assert leader.lost_leadership
    assert len(Writing.outcomes) == 1 and isinstance(Writing.outcomes[0], okt.NotLeader), Writing.outcomes
    assert "flushed" not in (kube.get(gadget_kind, "g", namespace)["metadata"].get("labels") or {})


class Awaiting(shared.GadgetReconciler):
    """Kopf's way: an ``async def`` daemon that never looks at its stop event, and an ``async def`` timer."""

    journal: ClassVar[Journal] = Journal()
    cancelled: ClassVar[collections.Counter[str]] = collections.Counter()
    ticks: ClassVar[list[tuple[str, int]]] = []

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []  # no child: the reconciles succeed, and the timer runs within them

    @okt.daemon(cancel_after=0.5)
    async def monitor(self, ctx: okt.DaemonContext) -> None:
        self.journal.enter(ctx.name, ctx.attempt)
        try:
            while True:
                await asyncio.sleep(3600)  # cancelled once its object goes away
        except asyncio.CancelledError:
            with self.journal.lock:
                self.cancelled[ctx.name] += 1
            raise
        finally:
            self.journal.leave(ctx.name, ctx.stop.is_set())

    @okt.every(seconds=0.5)
    async def tick(self, ctx: okt.Context) -> None:
        await asyncio.sleep(0)
        with self.journal.lock:
            self.ticks.append((ctx.cr.name, id(asyncio.get_running_loop())))


def test_an_async_daemon_is_cancelled_when_its_object_is_deleted_and_an_async_timer_ticks_on_its_workers_loop(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
) -> None:
    Awaiting.journal, Awaiting.cancelled, Awaiting.ticks = Journal(), collections.Counter(), []
    journal = Awaiting.journal
    manager = managers([Awaiting], reconcile=core.reconcile, max_concurrent=1)
    manager.start()
    make_gadget("kept")
    make_gadget("gone")
    wait_for(lambda: journal.running["kept"] == 1 and journal.running["gone"] == 1, timeout=20)
    wait_for(lambda: [name for name, _ in Awaiting.ticks].count("kept") >= 3, timeout=20, message="the timer's ticks")

    kube.delete(gadget_kind, "gone", namespace)
    wait_for(lambda: journal.stops["gone"] == 1, timeout=10, message="the async daemon to end after the deletion")

    assert Awaiting.cancelled == {"gone": 1}
    assert journal.running["kept"] == 1 and journal.most_at_once == {"kept": 1, "gone": 1}
    wait_for(lambda: manager.controllers[0].daemons.running() == [(namespace, "kept", "monitor")], timeout=10)
    assert len({loop for _, loop in Awaiting.ticks}) == 1  # one worker: its one loop, tick after tick
    manager.stop()
    assert manager.join(15)
    assert Awaiting.cancelled == {"gone": 1, "kept": 1}  # the shutdown cancels it too
