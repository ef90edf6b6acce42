"""What a daemon finds reaches its object's status through the reconcile's one status write, on a real
kube-apiserver: one write for a change, none for a repeat, its condition gone with the daemon, and only the leader's
daemon states anything."""

from __future__ import annotations

import collections
import json
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import condition, envtest, wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration

HEALTHY = "OperandHealthy"


class Probe:
    """What the probing daemons see, and how many rounds each made; shared with the test."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.go = threading.Event()
        self.healthy: dict[str, bool] = {}
        self.finish: set[str] = set()
        self.rounds: collections.Counter[str] = collections.Counter()
        self.identities: collections.Counter[str] = collections.Counter()

    def more_rounds(self, name: str, count: int = 20) -> None:
        """Wait until ``name``'s daemon has made ``count`` more rounds (each states its findings again)."""
        rounds = self.rounds[name]
        wait_for(lambda: self.rounds[name] >= rounds + count, timeout=10)


class Probing(shared.GadgetReconciler):
    """A daemon per Gadget states what its probe sees; Ready follows the daemon's condition."""

    owns = ()
    probe: ClassVar[Probe] = Probe()

    @okt.daemon(backoff=0.2, max_backoff=0.4)
    def watch_operand(self, ctx: okt.DaemonContext) -> None:
        probe = self.probe
        with probe.lock:
            probe.identities[ctx.name] += 1
        probe.go.wait(60)
        while not ctx.stop.wait(0.05):
            with probe.lock:
                healthy = probe.healthy.get(ctx.name, True)
                finish = ctx.name in probe.finish
            if finish:
                return
            message = "answers on port 11211" if healthy else "no answer on port 11211"
            ctx.set_condition(HEALTHY, healthy, "Answers" if healthy else "Unreachable", message)
            ctx.set_status_fields({"probe": {"healthy": healthy}})
            with probe.lock:
                probe.rounds[ctx.name] += 1

    def ready(self, ctx: okt.Context) -> bool | tuple[bool, str, str]:
        if ctx.conditions.is_false(HEALTHY):
            return False, "OperandUnhealthy", ctx.conditions[HEALTHY].message
        return True


@pytest.fixture
def probe() -> Probe:
    Probing.probe = Probe()
    return Probing.probe


@pytest.fixture
def operator_client(control_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    """The operator's own client: its requests are counted apart from the test's."""
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    yield client
    client.close()


class AnnotatedProbing(Probing):
    """Probing, its status kept in okt's annotations (as for a kind without a status subresource)."""

    status = "annotations"


class Unprobed(shared.GadgetReconciler):
    """The operator's next version: its daemon is gone from the code."""

    owns = ()


@pytest.fixture
def managers(
    control_plane: envtest.ControlPlane, operator_client: kube_client.Client, namespace: str
) -> Iterator[Callable[..., manager_mod.Manager]]:
    made: list[manager_mod.Manager] = []

    def make(
        reconcilers: Any = (Probing,), client: kube_client.Client | None = None, **kwargs: Any
    ) -> manager_mod.Manager:
        options: dict[str, Any] = {
            "namespaces": [namespace],
            "metrics_bind": "0",
            "lease_namespace": namespace,
            "lease_duration": 3.0,
            "renew_deadline": 2.0,
            "retry_period": 0.5,
            "grace_period": 10.0,
            **kwargs,
        }
        manager = manager_mod.Manager(client or operator_client, list(reconcilers), **options)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.stop()
    for manager in made:
        manager.join(15)


def idle(manager: manager_mod.Manager) -> bool:
    queue = manager.controllers[0].queue
    return queue.processing_count == 0 and len(queue) == 0


def reconciled_again(manager: manager_mod.Manager, namespace: str, name: str) -> None:
    """Reconcile the object once more, and wait until the manager is idle again."""
    controller = manager.controllers[0]
    processed = controller.processed
    controller.queue.add((namespace, name))
    wait_for(lambda: controller.processed > processed and idle(manager), timeout=10)


def status_writes(client: kube_client.Client) -> int:
    return sum(
        n
        for (verb, resource), n in client.stats.snapshot().items()
        if verb in kube_client.WRITE_VERBS and resource.endswith("/status")
    )


def test_a_daemon_s_finding_reaches_the_status_in_the_reconcile_s_one_write_and_a_repeat_writes_nothing(
    kube: kube_client.Client,
    operator_client: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    manager = managers()
    manager.start()

    def ready() -> dict[str, Any] | None:
        return condition(kube.get(gadget_kind, "g", namespace), "Ready")

    wait_for(lambda: (ready() or {}).get("status") == "True", timeout=20, message="the first reconcile's report")
    wait_for(lambda: manager.controllers[0].queue.processing_count == 0 and len(manager.controllers[0].queue) == 0)
    before = status_writes(operator_client)

    probe.go.set()  # the daemon states OperandHealthy=True and status.probe
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=10)
    obj = kube.get(gadget_kind, "g", namespace)
    assert condition(obj, HEALTHY) == {
        "type": HEALTHY,
        "status": "True",
        "reason": "Answers",
        "message": "answers on port 11211",
        "lastTransitionTime": condition(obj, HEALTHY)["lastTransitionTime"],  # type: ignore[index]
    }
    assert obj["status"]["probe"] == {"healthy": True}
    assert (ready() or {}).get("status") == "True"

    # The same finding, round after round: no reconcile asked, nothing written.
    probe.more_rounds("g")
    assert status_writes(operator_client) == before + 1
    assert kube.get(gadget_kind, "g", namespace)["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]

    # A change: the daemon's condition, its field and Ready (its hook reads the condition) in one write.
    with probe.lock:
        probe.healthy["g"] = False
    wait_for(lambda: (ready() or {}).get("status") == "False", timeout=10)
    probe.more_rounds("g")
    obj = kube.get(gadget_kind, "g", namespace)
    assert condition(obj, HEALTHY)["status"] == "False"  # type: ignore[index]
    assert condition(obj, "Ready")["reason"] == "OperandUnhealthy"  # type: ignore[index]
    assert obj["status"]["probe"] == {"healthy": False}
    assert status_writes(operator_client) == before + 2


def test_a_daemon_that_returns_on_its_own_leaves_the_status_with_its_condition_and_fields(
    kube: kube_client.Client,
    operator_client: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    manager = managers()
    probe.go.set()
    manager.start()
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=20)
    wait_for(lambda: probe.rounds["g"] >= 5, timeout=10)
    before = status_writes(operator_client)

    with probe.lock:
        probe.finish.add("g")  # the daemon is done for this object
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None, timeout=10)
    obj = kube.get(gadget_kind, "g", namespace)
    assert "probe" not in obj["status"]
    assert (condition(obj, "Ready") or {}).get("status") == "True"
    assert status_writes(operator_client) == before + 1
    held = manager.controllers[0].reconciler.daemon_findings
    wait_for(lambda: not held.holds(obj["metadata"]["uid"]), timeout=5, message="the findings forgotten once written")


class Selective(Probing):
    """Probing, its daemon only for the Gadgets labelled ``probe=yes``."""

    @okt.daemon(backoff=0.2, max_backoff=0.4, labels={"probe": "yes"})
    def watch_operand(self, ctx: okt.DaemonContext) -> None:
        Probing.watch_operand(self, ctx)


def test_a_daemon_its_object_no_longer_passes_the_filter_of_leaves_the_status_and_states_again_once_it_passes(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "yes"}}}, namespace)
    probe.go.set()
    manager = managers([Selective])
    manager.start()
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=20)
    wait_for(lambda: "probe" in kube.get(gadget_kind, "g", namespace)["status"], timeout=10)

    # Relabelled: the object is still reconciled, its daemon stopped; what it stated would say what nothing probes.
    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "no"}}}, namespace)
    wait_for(
        lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
        timeout=10,
        message="the stopped daemon's condition removed from the status",
    )
    obj = kube.get(gadget_kind, "g", namespace)
    assert "probe" not in obj["status"]
    assert (condition(obj, "Ready") or {}).get("status") == "True"
    assert manager.controllers[0].daemons.running() == []
    held = manager.controllers[0].reconciler.daemon_findings
    wait_for(lambda: not held.holds(obj["metadata"]["uid"]), timeout=5, message="the findings forgotten once written")

    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "yes"}}}, namespace)
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=10)
    assert kube.get(gadget_kind, "g", namespace)["status"]["probe"] == {"healthy": True}
    assert probe.identities["g"] == 2


def test_only_the_leader_s_daemon_states_findings_and_a_failover_keeps_them_without_a_write(
    kube: kube_client.Client,
    operator_client: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    probe.go.set()
    leader = managers(leader_elect=True, identity="leader")
    leader.start()
    wait_for(lambda: leader.working, timeout=15)
    standby = managers(leader_elect=True, identity="standby")
    standby.start()
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=20)
    wait_for(lambda: standby.cache is not None and standby.cache.synced, timeout=10)
    wait_for(lambda: standby.elector is not None and standby.elector.holder == "leader", timeout=10)
    uid = kube.get(gadget_kind, "g", namespace)["metadata"]["uid"]

    assert probe.identities["g"] == 1  # the standby's daemon never ran
    assert standby.controllers[0].daemons.running() == []
    assert not standby.controllers[0].reconciler.daemon_findings.holds(uid)

    # The leader goes: its daemon stops, the condition stays; the new leader's daemon states the same (no write).
    stated = condition(kube.get(gadget_kind, "g", namespace), HEALTHY)
    leader.stop()
    assert leader.join(15)
    assert condition(kube.get(gadget_kind, "g", namespace), HEALTHY) == stated
    wait_for(lambda: standby.working and probe.identities["g"] == 2, timeout=15, message="the standby taking over")
    probe.more_rounds("g", 10)
    before = status_writes(operator_client)
    probe.more_rounds("g", 10)
    assert status_writes(operator_client) == before
    assert condition(kube.get(gadget_kind, "g", namespace), HEALTHY) == stated


def converged(managers: Callable[..., manager_mod.Manager], read: Callable[[], dict[str, Any]]) -> manager_mod.Manager:
    """A started manager once its daemon's field and condition are on the object read by ``read``, and it is idle."""
    first = managers()
    first.start()
    wait_for(lambda: "probe" in (read().get("status") or {}), timeout=20)
    wait_for(lambda: condition(read(), HEALTHY) is not None, timeout=10)
    wait_for(lambda: idle(first), timeout=10)
    return first


def restarted(
    control_plane: envtest.ControlPlane,
    managers: Callable[..., manager_mod.Manager],
    first: manager_mod.Manager,
    reconciler: type[okt.Reconciler],
) -> tuple[manager_mod.Manager, kube_client.Client]:
    """``first`` stopped, and a new manager of ``reconciler`` started with a client of its own (a new process)."""
    first.stop()
    assert first.join(15)
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = managers([reconciler], client=client)
    manager.start()
    return manager, client


def test_a_restart_over_findings_kept_in_annotations_writes_nothing_while_the_daemon_states_the_same(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    probe.go.set()
    first = managers([AnnotatedProbing])
    first.start()
    prefix = AnnotatedProbing.prefix

    def annotations() -> dict[str, str]:
        return dict(kube.get(gadget_kind, "g", namespace)["metadata"].get("annotations") or {})

    wait_for(lambda: '"probe"' in annotations().get(f"{prefix}/status", ""), timeout=20, message="the finding")
    wait_for(lambda: HEALTHY in annotations().get(f"{prefix}/conditions", ""), timeout=10)
    wait_for(lambda: idle(first), timeout=10)
    converged = kube.get(gadget_kind, "g", namespace)

    second, client = restarted(control_plane, managers, first, AnnotatedProbing)
    try:
        wait_for(lambda: probe.identities["g"] == 2, timeout=20, message="the new process's daemon")
        probe.more_rounds("g")
        wait_for(lambda: idle(second), timeout=10)
        assert client.stats.writes() == 0
        assert kube.get(gadget_kind, "g", namespace)["metadata"] == converged["metadata"]
    finally:
        client.close()


def test_what_a_daemon_gone_from_the_code_stated_leaves_the_status_once_after_a_restart(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    probe.go.set()
    first = converged(managers, lambda: kube.get(gadget_kind, "g", namespace))

    second, client = restarted(control_plane, managers, first, Unprobed)
    try:
        wait_for(
            lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
            timeout=20,
            message="the condition of the daemon gone from the code removed",
        )
        wait_for(lambda: idle(second), timeout=10)
        obj = kube.get(gadget_kind, "g", namespace)
        assert "probe" not in obj["status"]
        assert (condition(obj, "Ready") or {}).get("status") == "True"
        assert client.stats.writes() == 1
        # Once: the reconciles after it find nothing to remove.
        reconciled_again(second, namespace, "g")
        assert client.stats.writes() == 1
    finally:
        client.close()


def test_what_a_daemon_stated_before_a_restart_leaves_the_status_when_it_returns_without_stating_anything(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    probe.go.set()
    first = converged(managers, lambda: kube.get(gadget_kind, "g", namespace))

    with probe.lock:
        probe.finish.add("g")  # the new process's daemon finds itself done at once, and states nothing
    second, client = restarted(control_plane, managers, first, Probing)
    try:
        wait_for(
            lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
            timeout=20,
            message="the condition of the daemon done for its object removed",
        )
        obj = kube.get(gadget_kind, "g", namespace)
        assert "probe" not in obj["status"]
        assert "daemons" not in obj["status"]["okt"]
        wait_for(lambda: idle(second) and second.controllers[0].daemons.running() == [], timeout=10)
        assert client.stats.writes() == 1
    finally:
        client.close()


def test_what_a_daemon_stated_leaves_the_status_once_when_its_object_left_its_filter_while_no_operator_ran(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "yes"}}}, namespace)
    probe.go.set()
    first = managers([Selective])
    first.start()
    wait_for(lambda: "probe" in kube.get(gadget_kind, "g", namespace)["status"], timeout=20, message="the finding")
    wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=10)
    wait_for(lambda: idle(first), timeout=10)
    first.stop()
    assert first.join(15)

    # Relabelled while no operator runs: the next process never starts the daemon, which is to state nothing again.
    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "no"}}}, namespace)
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        second = managers([Selective], client=client)
        second.start()
        wait_for(
            lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
            timeout=20,
            message="the condition of the daemon its object no longer passes the filter of removed",
        )
        wait_for(lambda: idle(second), timeout=10)
        obj = kube.get(gadget_kind, "g", namespace)
        assert "probe" not in obj["status"]
        assert "daemons" not in obj["status"]["okt"]
        assert (condition(obj, "Ready") or {}).get("status") == "True"
        assert probe.identities["g"] == 1
        assert status_writes(client) == 1
        # Once: the reconciles after it find nothing to remove.
        reconciled_again(second, namespace, "g")
        assert client.stats.writes() == 1
    finally:
        client.close()


def test_what_a_daemon_stated_leaves_the_status_once_when_the_next_version_gives_it_a_filter_its_object_fails(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    make_gadget("kept")
    kube.patch(gadget_kind, "kept", {"metadata": {"labels": {"probe": "yes"}}}, namespace)
    probe.go.set()
    first = converged(managers, lambda: kube.get(gadget_kind, "g", namespace))
    wait_for(lambda: condition(kube.get(gadget_kind, "kept", namespace), HEALTHY) is not None, timeout=10)
    stated = condition(kube.get(gadget_kind, "kept", namespace), HEALTHY)

    second, client = restarted(control_plane, managers, first, Selective)  # N+1: the daemon for probe=yes only
    try:
        wait_for(
            lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
            timeout=20,
            message="the condition of the daemon the object does not pass the new filter of removed",
        )
        wait_for(lambda: probe.identities["kept"] == 2, timeout=10, message="the daemon of the object that passes")
        probe.more_rounds("kept")
        wait_for(lambda: idle(second), timeout=10)
        obj = kube.get(gadget_kind, "g", namespace)
        assert "probe" not in obj["status"]
        assert "daemons" not in obj["status"]["okt"]
        assert probe.identities["g"] == 1
        # The object that passes keeps what its daemon states, unwritten: one status write in all, g's.
        assert condition(kube.get(gadget_kind, "kept", namespace), HEALTHY) == stated
        assert status_writes(client) == 1
    finally:
        client.close()


class Gated(Selective):
    """Selective, whose reconcile of the Gadget ``h`` waits, once :attr:`hold` is set, until :attr:`release` is."""

    hold: ClassVar[threading.Event] = threading.Event()
    held: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()

    def ready(self, ctx: okt.Context) -> bool | tuple[bool, str, str]:
        if ctx.cr.name == "h" and self.hold.is_set():
            self.held.set()
            self.release.wait(30)
        return super().ready(ctx)


def test_what_a_daemon_stated_leaves_the_status_when_the_lease_was_lost_before_the_reconcile_removing_it_ran(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
    tmp_path: pathlib.Path,
) -> None:
    Gated.hold, Gated.held, Gated.release = threading.Event(), threading.Event(), threading.Event()
    make_gadget("g")
    make_gadget("h")
    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "yes"}}}, namespace)
    probe.go.set()
    proxy = shared.LeaseHangingProxy(control_plane.url, str(control_plane.ca_file))
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        try:
            first = managers([Gated], client=through, leader_elect=True, identity="first", max_concurrent=1)
            first.start()
            wait_for(lambda: "probe" in kube.get(gadget_kind, "g", namespace)["status"], timeout=20)
            wait_for(lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None, timeout=10)
            wait_for(lambda: idle(first), timeout=10)

            # The one worker busy with h: the reconcile asked to remove what g's stopped daemon stated waits.
            Gated.hold.set()
            first.controllers[0].queue.add((namespace, "h"))
            wait_for(Gated.held.is_set, timeout=10, message="the worker held by h's reconcile")
            kube.patch(gadget_kind, "g", {"metadata": {"labels": {"probe": "no"}}}, namespace)
            wait_for(lambda: first.controllers[0].daemons.running() == [], timeout=10, message="the daemon stopped")
            proxy.hang.set()
            wait_for(lambda: first.lost_leadership, timeout=15, message="the lease lost")
            Gated.release.set()
            assert first.join(15)
            assert condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is not None  # the reconcile never ran

            second = managers([Gated], client=client, leader_elect=True, identity="second")
            second.start()
            wait_for(
                lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
                timeout=20,
                message="the condition of the daemon its object no longer passes the filter of removed",
            )
            wait_for(lambda: idle(second), timeout=10)
            obj = kube.get(gadget_kind, "g", namespace)
            assert "probe" not in obj["status"]
            assert "daemons" not in obj["status"]["okt"]
            assert probe.identities["g"] == 1
            assert status_writes(client) == 1
        finally:
            proxy.done.set()
            Gated.release.set()
            through.close()
            client.close()


REACHABLE = "OperandReachable"


class RenamedProbing(shared.GadgetReconciler):
    """The operator's next version: the same daemon states its condition and its field under new names."""

    owns = ()

    @okt.daemon(backoff=0.2, max_backoff=0.4)
    def watch_operand(self, ctx: okt.DaemonContext) -> None:
        probe = Probing.probe
        with probe.lock:
            probe.identities[ctx.name] += 1
        while not ctx.stop.wait(0.05):
            ctx.set_condition(REACHABLE, True, "Answers", "answers on port 11211")
            ctx.set_status_fields({"reach": {"port": 11211}})
            with probe.lock:
                probe.rounds[ctx.name] += 1


def test_what_a_daemon_no_longer_states_after_a_restart_with_new_names_leaves_the_status_and_a_restart_writes_nothing(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    probe: Probe,
) -> None:
    make_gadget("g")
    probe.go.set()
    first = converged(managers, lambda: kube.get(gadget_kind, "g", namespace))

    second, client = restarted(control_plane, managers, first, RenamedProbing)
    try:
        wait_for(
            lambda: condition(kube.get(gadget_kind, "g", namespace), HEALTHY) is None,
            timeout=20,
            message="the condition the daemon no longer states removed",
        )
        wait_for(lambda: "probe" not in kube.get(gadget_kind, "g", namespace)["status"], timeout=10)
        wait_for(lambda: idle(second), timeout=10)
        obj = kube.get(gadget_kind, "g", namespace)
        assert (condition(obj, REACHABLE) or {}).get("status") == "True"
        assert obj["status"]["reach"] == {"port": 11211}
        assert obj["status"]["okt"]["daemons"] == {"watch_operand": {"conditions": [REACHABLE], "fields": ["reach"]}}
    finally:
        client.close()

    # Converged under the new names: a restart of the same version writes nothing.
    identities = probe.identities["g"]
    third, client = restarted(control_plane, managers, second, RenamedProbing)
    try:
        wait_for(lambda: probe.identities["g"] > identities, timeout=20, message="the new process's daemon")
        probe.more_rounds("g")
        wait_for(lambda: idle(third), timeout=10)
        assert client.stats.writes() == 0
        assert kube.get(gadget_kind, "g", namespace)["status"] == obj["status"]
    finally:
        client.close()


class Detailing(shared.GadgetReconciler):
    """A daemon stating a field whose value holds a None inside (a detail it has not learned)."""

    owns = ()

    @okt.daemon(backoff=0.2, max_backoff=0.4)
    def watch_operand(self, ctx: okt.DaemonContext) -> None:
        ctx.set_status_fields({"probe": {"healthy": True, "detail": None, "ports": [{"port": 11211, "name": None}]}})
        ctx.stop.wait()


class AnnotatedDetailing(Detailing):
    status = "annotations"


@pytest.mark.parametrize("reconciler", [Detailing, AnnotatedDetailing])
def test_a_none_inside_a_daemon_s_field_is_left_out_wherever_the_status_is_kept(
    kube: kube_client.Client,
    operator_client: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    gadget_kind: kinds.Kind,
    managers: Callable[..., manager_mod.Manager],
    reconciler: type[Detailing],
) -> None:
    make_gadget("g")
    manager = managers([reconciler])
    manager.start()

    def probe() -> Any:
        obj = kube.get(gadget_kind, "g", namespace)
        if reconciler.status == "annotations":
            kept = (obj["metadata"].get("annotations") or {}).get(f"{reconciler.prefix}/status")
            return json.loads(kept)["probe"] if kept else None
        return (obj.get("status") or {}).get("probe")

    wait_for(probe, timeout=20, message="the daemon's field written")
    wait_for(lambda: idle(manager), timeout=10)
    assert probe() == {"healthy": True, "ports": [{"port": 11211}]}
    # Nothing is written again: what is kept is what is wanted.
    before = operator_client.stats.writes()
    processed = manager.controllers[0].processed
    manager.controllers[0].queue.add((namespace, "g"))
    wait_for(lambda: manager.controllers[0].processed > processed and idle(manager), timeout=10)
    assert operator_client.stats.writes() == before
