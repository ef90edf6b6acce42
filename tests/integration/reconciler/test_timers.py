"""Timers under the Manager: ``@okt.every`` runs per object on its interval, writes nothing by itself, skips an
object in error, and stops when the object is deleted."""

from __future__ import annotations

import collections
import re
import threading
import time
import urllib.request
from typing import Any, ClassVar

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import condition, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Ticking(shared.WidgetReconciler):
    owns = (shared.WidgetConfig,)
    ticks: ClassVar[collections.Counter[str]] = collections.Counter()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    @okt.every(seconds=1)
    def tick(self, ctx: okt.Context) -> None:
        with self.lock:
            self.ticks[ctx.cr.name] += 1


def test_a_timer_ticks_per_object_writes_nothing_and_stops_with_the_object(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    Ticking.ticks.clear()
    shared.make_widget(kube, widget_kind, namespace, "t", size=1)
    shared.make_widget(kube, widget_kind, namespace, "broken", size=99)  # InvalidSpec: never ticks
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [Ticking], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: Ticking.ticks["t"] >= 1, timeout=30, message="the first tick")
        time.sleep(1.5)  # let the first reconcile's writes settle
        writes_before = sum(n for (verb, _), n in operator.stats.snapshot().items() if verb in kube_client.WRITE_VERBS)
        ticks_before = Ticking.ticks["t"]
        time.sleep(3.2)
        ticked = Ticking.ticks["t"] - ticks_before
        writes = sum(n for (verb, _), n in operator.stats.snapshot().items() if verb in kube_client.WRITE_VERBS)

        kube.delete(widget_kind, "t", namespace)
        wait_for(lambda: manager.cache is not None and manager.cache.get(widget_kind, "t", namespace) is None)
        after_delete = Ticking.ticks["t"]
        time.sleep(2.2)
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert 2 <= ticked <= 4
    assert writes == writes_before
    assert Ticking.ticks["broken"] == 0
    assert Ticking.ticks["t"] == after_delete


class Stuck(shared.WidgetReconciler):
    """A timer whose call for the Widget "stuck" blocks until ``release`` is set (a request made with no timeout of
    its own)."""

    owns = (shared.WidgetConfig,)
    entered: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    @okt.every(seconds=60, timeout=1)
    def probe(self, ctx: okt.Context) -> None:
        if ctx.cr.name == "stuck":
            self.entered.set()
            self.release.wait()


def test_a_timer_that_hangs_past_its_timeout_leaves_the_worker_to_other_objects(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """One worker: held by the hanging call, no other object would ever be reconciled (nor that one again)."""
    Stuck.entered.clear()
    Stuck.release.clear()
    shared.make_widget(kube, widget_kind, namespace, "stuck", size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(
        operator, [Stuck], namespaces=[namespace], metrics_bind="127.0.0.1:0", grace_period=5, max_concurrent=1
    )
    manager.start()
    try:
        assert Stuck.entered.wait(30), "the timer's call for stuck never started"
        shared.make_widget(kube, widget_kind, namespace, "other", size=1)

        wait_for(
            lambda: shared.get_child(kube, "v1", "ConfigMap", namespace, "other-config") is not None,
            timeout=30,
            message="the other Widget to be reconciled",
        )
        failed = [
            e
            for e in kube.list(kube.resolve("v1", "Event"), namespace)[0]
            if e["reason"] == "TimerFailed" and e["involvedObject"]["name"] == "stuck"
        ]
        overdue_while_stuck = overdue(manager)
        Stuck.release.set()
        wait_for(lambda: overdue(manager) == 0.0, timeout=30, message="okt_timer_calls_overdue back to 0 on /metrics")
    finally:
        Stuck.release.set()
        manager.stop()
        manager.join(15)
        operator.close()

    assert [e["type"] for e in failed] == ["Warning"]
    assert "did not return within its timeout of 1 s" in failed[0]["message"]
    assert overdue_while_stuck == 1.0


def overdue(manager: manager_mod.Manager) -> float:
    """``okt_timer_calls_overdue`` as the manager's ``/metrics`` serves it."""
    assert manager.probes is not None
    with urllib.request.urlopen(manager.probes.url + "/metrics", timeout=5) as response:
        body = response.read().decode()
    found = re.search(r'^okt_timer_calls_overdue\{controller="[^"]+"\} (\S+)$', body, re.MULTILINE)
    assert found is not None, body
    return float(found.group(1))


class BackupStatus(pydantic.BaseModel):
    phase: str = "Pending"
    last_backup: str = pydantic.Field(default="", alias="lastBackup")


class BackingUp(shared.WidgetReconciler):
    """Every reconcile says in ``status.phase`` which ``poke`` annotation it saw; an hourly timer sets
    ``status.lastBackup``."""

    owns = (shared.WidgetConfig,)
    status_model = BackupStatus

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.Mutator:
            ctx.status_fields["phase"] = f"saw-{ctx.cr.annotations.get('poke', 'nothing')}"
        return super().enter_in_state(state, ctx)

    @okt.every(hours=1)
    def backup(self, ctx: okt.Context) -> None:
        ctx.status_fields["lastBackup"] = "2026-01-01T00:00:00Z"


def test_a_status_field_a_timer_set_stays_through_the_reconciles_that_do_not_run_it(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """A reconcile writes the status fields it set, never the status model's defaults of the others: a field set by
    a timer (or a daemon, or another writer) went back to its default at each reconcile that did not set it, and
    came back at the timer's next run — two writes per interval, and a status that said no backup was ever made."""
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [BackingUp], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(
            lambda: shared.get_widget(kube, widget_kind, namespace, "w").get("status", {}).get("lastBackup"),
            timeout=30,
            message="the timer's first run",
        )
        kube.patch(widget_kind, "w", {"metadata": {"annotations": {"poke": "1"}}}, namespace)

        def poked() -> dict[str, Any] | None:
            status: dict[str, Any] = shared.get_widget(kube, widget_kind, namespace, "w").get("status", {})
            return status if status.get("phase") == "saw-1" else None

        status = wait_for(poked, timeout=30, message="the reconcile of the annotation's change")
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert status["lastBackup"] == "2026-01-01T00:00:00Z"


class Idling(shared.WidgetReconciler):
    """A timer every second that waits for its Widget to be left alone 3 s, recording when each call started and the
    ``poke`` label it saw; the status goes to annotations, okt's own writes on the Widget itself."""

    owns = (shared.WidgetConfig,)
    status = "annotations"
    calls: ClassVar[list[tuple[float, str | None]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    @okt.every(seconds=1, idle=3)
    def probe(self, ctx: okt.Context) -> None:
        with self.lock:
            self.calls.append((time.monotonic(), ctx.cr.labels.get("poke")))


def test_an_idle_timer_waits_for_a_real_change_to_settle_and_not_for_okts_own_writes(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The timer is called once the Widget has gone unchanged for 3 s, though okt writes its conditions into the
    Widget's annotations (its own writes are not the object changing); a label set by someone else holds it back: the
    first call that sees the label starts no sooner than 3 s after it was set (without ``idle``, the reconcile of the
    change runs the timer, due every second, at once)."""
    Idling.calls.clear()
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [Idling], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: len(Idling.calls) >= 2, timeout=60, message="the timer to be called, then once more")
        annotations = shared.get_widget(kube, widget_kind, namespace, "w")["metadata"].get("annotations") or {}
        poked_at = time.monotonic()
        kube.patch(widget_kind, "w", {"metadata": {"labels": {"poke": "1"}}}, namespace)

        def first_poked() -> float | None:
            with Idling.lock:
                return next((started for started, poke in Idling.calls if poke == "1"), None)

        first = wait_for(first_poked, timeout=60, message="a call that sees the label")
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert any(name.startswith("okt.io/") for name in annotations), annotations
    assert first >= poked_at + 3


class Counted(pydantic.BaseModel):
    count: int = 0


class Counting(shared.WidgetReconciler):
    """A timer every second that waits for its Widget to be left alone 2 s and writes into its status: for "counting"
    how many calls it made, for "same" the same number at every call. Each reconcile is counted."""

    owns = ()
    status_model = Counted
    calls: ClassVar[collections.Counter[str]] = collections.Counter()
    reconciles: ClassVar[collections.Counter[str]] = collections.Counter()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.Mutator:
            with self.lock:
                self.reconciles[ctx.cr.name] += 1
        return super().enter_in_state(state, ctx)

    @okt.every(seconds=1, idle=2)
    def count(self, ctx: okt.Context) -> None:
        with self.lock:
            self.calls[ctx.cr.name] += 1
            calls = self.calls[ctx.cr.name]
        ctx.status_fields["count"] = calls if ctx.cr.name == "counting" else 7


def test_a_timer_writing_the_status_neither_holds_itself_back_nor_brings_more_reconciles_than_its_calls(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Its status writes are not changes: its ``idle`` wait is not started over by them (it would never be called
    again, its interval shorter than the wait), and they reconcile nothing (one reconcile per call, the one that
    requeued the object for it). A timer stating what the status says already writes nothing."""
    Counting.calls.clear()
    Counting.reconciles.clear()
    for name in ("counting", "same"):
        shared.make_widget(kube, widget_kind, namespace, name, size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [Counting], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: min(Counting.calls["counting"], Counting.calls["same"]) >= 2, timeout=60, message="2 calls")
        before = operator.stats.snapshot()
        with Counting.lock:
            calls, reconciles = dict(Counting.calls), dict(Counting.reconciles)
        wait_for(lambda: Counting.calls["counting"] >= calls["counting"] + 4, timeout=30, message="4 more calls")
        with Counting.lock:
            calls = {name: Counting.calls[name] - calls[name] for name in calls}
            reconciles = {name: Counting.reconciles[name] - reconciles[name] for name in reconciles}
        writes = shared.write_requests(operator, before)
        # The sixth call is counted in the hook, before its reconcile writes the status: waited for, not read once.
        status = wait_for(
            lambda: (
                (found := shared.get_widget(kube, widget_kind, namespace, "counting")["status"]).get("count", 0) >= 6
                and found
            ),
            timeout=10,
            message="the status holding the sixth call's count",
        )
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    # Read between a reconcile's start and its timer's call at most: one reconcile more than calls, never two.
    assert 0 <= reconciles["counting"] - calls["counting"] <= 1
    assert 0 <= reconciles["same"] - calls["same"] <= 1
    assert calls["same"] >= 3
    assert writes == {("apply", "widgets/status"): writes[("apply", "widgets/status")]}
    assert calls["counting"] - 1 <= writes[("apply", "widgets/status")] <= calls["counting"] + 1
    assert status["count"] >= 6


class Lingering(shared.WidgetReconciler):
    """A timer every half second and a daemon, each saying what it does in a journal."""

    owns = ()
    journal: ClassVar[list[tuple[str, str]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []

    def say(self, name: str, what: str) -> None:
        with self.lock:
            self.journal.append((name, what))

    @okt.every(seconds=0.5)
    def tick(self, ctx: okt.Context) -> None:
        self.say(ctx.cr.name, "tick")

    @okt.daemon
    def watch(self, ctx: okt.DaemonContext) -> None:
        self.say(ctx.name, "started")
        try:
            ctx.stop.wait()
        finally:
            self.say(ctx.name, "cleaned up")


def test_an_object_another_finalizer_holds_has_its_timer_and_daemon_stopped_at_its_deletion(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Being deleted (a deletionTimestamp, another controller's finalizer keeping it), the Widget is reconciled
    without its timer, and its daemon is asked to stop and cleans up once, as for a Widget that goes at once."""
    Lingering.journal.clear()
    held = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        "metadata": {"name": "held", "namespace": namespace, "finalizers": ["example.com/hold"]},
        "spec": {"size": 1},
    }
    kube.create(held, widget_kind)
    shared.make_widget(kube, widget_kind, namespace, "plain", size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [Lingering], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()

    def said(name: str, what: str) -> int:
        with Lingering.lock:
            return Lingering.journal.count((name, what))

    try:
        wait_for(lambda: min(said("held", "tick"), said("plain", "tick")) >= 2, timeout=60, message="2 ticks each")
        kube.delete(widget_kind, "held", namespace)
        kube.delete(widget_kind, "plain", namespace)
        wait_for(
            lambda: min(said("held", "cleaned up"), said("plain", "cleaned up")) >= 1, timeout=30, message="cleanups"
        )
        ticks = said("held", "tick")
        kube.patch(widget_kind, "held", {"metadata": {"annotations": {"poke": "1"}}}, namespace)  # reconciled again
        time.sleep(2)  # four intervals of the timer
        still_held = kube.get(widget_kind, "held", namespace)["metadata"]
        after = said("held", "tick")
        kube.patch(widget_kind, "held", {"metadata": {"finalizers": []}}, namespace)
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert still_held["finalizers"] == ["example.com/hold"] and still_held.get("deletionTimestamp")
    assert after == ticks
    for name in ("held", "plain"):
        assert (said(name, "started"), said(name, "cleaned up")) == (1, 1)


class Many(shared.WidgetReconciler):
    """A sharp timer every second; each call counted by Widget, the threads it ran on named."""

    owns = ()
    calls: ClassVar[collections.Counter[str]] = collections.Counter()
    threads: ClassVar[set[str]] = set()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []

    @okt.every(seconds=1, sharp=True)
    def tick(self, ctx: okt.Context) -> None:
        with self.lock:
            self.calls[ctx.cr.name] += 1
            self.threads.add(threading.current_thread().name)


def test_two_hundred_objects_share_the_workers_each_called_once_per_interval(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """A timer holds no thread per object: its calls run on the reconcile workers, each object requeued for its next
    slot, and none falls behind the others (a slot missed would be skipped, not made up) nor writes anything."""
    Many.calls.clear()
    Many.threads.clear()
    names = [f"w{i}" for i in range(200)]
    for name in names:
        shared.make_widget(kube, widget_kind, namespace, name, size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    threads_before = threading.active_count()
    manager = manager_mod.Manager(operator, [Many], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        wait_for(lambda: all(Many.calls[name] >= 2 for name in names), timeout=120, message="2 calls each")
        before = operator.stats.snapshot()
        with Many.lock:
            calls = dict(Many.calls)
        time.sleep(5)
        with Many.lock:
            calls = {name: Many.calls[name] - calls[name] for name in names}
        threads = threading.active_count() - threads_before
        writes = shared.write_requests(operator, before)
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert min(calls.values()) >= 4 and max(calls.values()) <= 6, sorted(calls.values())
    assert writes == {}
    assert all(name.startswith("okt-widget-worker-") for name in Many.threads), Many.threads
    assert len(Many.threads) <= 4, Many.threads  # the Manager's default workers
    assert threads < 20, threads


class GivingUp(shared.WidgetReconciler):
    """Gives the reconcile up quietly in SuccessManager, after its built-in work set Ready: from a timer or from the
    state's hook, raised or returned; ``failing`` makes the Updater fail first (Ready=False, one failure counted)."""

    owns = (shared.WidgetConfig,)

    def __init__(self, where: str, failing: bool = False) -> None:
        self.where = where
        self.failing = failing

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.Updater and self.failing:
            raise okt.TemporaryError("the backup target is unreachable")
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager and self.where == "hook raises":
            raise okt.GiveUp("the backup target is gone")
        if state is okt.State.SuccessManager and self.where == "hook returns":
            return okt.give_up("the backup target is gone")
        return None

    @okt.every(hours=1)
    def backup(self, ctx: okt.Context) -> okt.Outcome | None:
        if self.where == "timer raises":
            raise okt.GiveUp("the backup target is gone")
        if self.where == "timer returns":
            return okt.give_up("the backup target is gone")
        return None


@pytest.mark.parametrize("where", ["timer raises", "timer returns", "hook raises", "hook returns"])
def test_a_quiet_give_up_in_success_manager_writes_nothing_from_a_timer_as_from_its_hook(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, where: str
) -> None:
    """A quiet give-up writes nothing, wherever it comes from: a timer's (or the hook's ``return okt.give_up``) wrote
    Ready=True in its reconcile, the success's report, where the hook's ``raise okt.GiveUp`` wrote nothing. A Widget
    whose last reconcile failed keeps its Ready=False and its failure count: no write of the Widget at all."""
    shared.make_widget(kube, widget_kind, namespace, "g", size=1)
    failed = shared.reconcile_widget(GivingUp(where, failing=True), kube, widget_kind, namespace, "g")
    assert failed.outcome.kind is okt.OutcomeKind.RETRY
    before = kube.stats.snapshot()
    stored_before = shared.get_widget(kube, widget_kind, namespace, "g")

    run = shared.reconcile_widget(GivingUp(where), kube, widget_kind, namespace, "g")

    assert run.outcome == okt.Outcome.give_up("the backup target is gone")
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>GiveupManager>End"
    assert {key for key in shared.write_requests(kube, before) if key[1].startswith("widgets")} == set()
    stored = shared.get_widget(kube, widget_kind, namespace, "g")
    assert stored["status"] == stored_before["status"]
    assert condition(stored, "Ready")["status"] == "False"


def test_a_quiet_give_up_in_a_first_success_manager_writes_no_status(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The first reconcile of a Widget whose timer gives up writes its children, and nothing of a success it did
    not end with: no Ready=True, no status write at all."""
    shared.make_widget(kube, widget_kind, namespace, "f", size=1)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(GivingUp("timer returns"), kube, widget_kind, namespace, "f")

    assert run.outcome == okt.Outcome.give_up("the backup target is gone")
    assert shared.write_requests(kube, before) == {("apply", "configmaps"): 1}
    assert condition(shared.get_widget(kube, widget_kind, namespace, "f"), "Ready") is None
