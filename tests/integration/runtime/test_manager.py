"""The manager against a real kube-apiserver: probes and metrics, a standby that never reconciles, graceful exits."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pytest
import structlog.testing

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import envtest, faults, wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def managers(
    kube: kube_client.Client, namespace: str, gadget_reconciler: Any
) -> Iterator[Callable[..., manager_mod.Manager]]:
    made: list[manager_mod.Manager] = []

    def make(reconcile: Any, client: kube_client.Client | None = None, **kwargs: Any) -> manager_mod.Manager:
        options: dict[str, Any] = {
            "namespaces": [namespace],
            "metrics_bind": "127.0.0.1:0",
            "lease_namespace": namespace,
            "lease_duration": 3.0,
            "renew_deadline": 2.0,
            "retry_period": 0.5,
            "grace_period": 10.0,
            **kwargs,
        }
        manager = manager_mod.Manager(client or kube, [gadget_reconciler], reconcile=reconcile, **options)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.stop()
    for manager in made:
        manager.join(15)


def test_probes_and_metrics_follow_the_managers_life_and_shutdown_waits_for_in_flight_reconciles(
    kube: kube_client.Client, namespace: str, make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    reconcile = fake_reconcile()
    manager = managers(reconcile, leader_elect=True, identity="only")
    manager.start()
    assert manager.probes is not None
    url = manager.probes.url
    assert fetch(url + "/healthz") == (200, "ok")
    wait_for(lambda: fetch(url + "/readyz") == (200, "ok"), timeout=15)
    wait_for(lambda: manager.working, timeout=10)

    make_gadget("g")
    wait_for(lambda: reconcile.count("g") == 1, timeout=10)
    # The reconcile is counted once it has returned, a moment after the call the line above saw.
    done = 'okt_reconcile_total{controller="gadget",result="done"} 1.0'
    wait_for(lambda: done in fetch(url + "/metrics")[1], timeout=10)
    status, body = fetch(url + "/metrics")
    assert status == 200
    assert done in body
    assert 'okt_api_requests_total{resource="gadgets",verb="list"}' in body
    assert 'okt_workqueue_depth{controller="gadget"} 0.0' in body
    assert 'okt_active_workers{controller="gadget"} 0.0' in body

    # A reconcile still running when the shutdown begins is allowed to finish.
    reconcile.release.clear()
    kube.patch(manager.controllers[0].kind, "g", {"metadata": {"labels": {"x": "1"}}}, namespace)
    wait_for(lambda: manager.controllers[0].in_flight == 1, timeout=10)
    manager.stop()
    wait_for(lambda: fetch(url + "/healthz")[0] == 503, timeout=5)
    assert fetch(url + "/healthz") == (503, "not ready: shutting down")
    assert fetch(url + "/readyz")[0] == 503
    assert not manager.join(0.3)
    reconcile.release.set()
    assert manager.join(10)
    assert reconcile.count("g") == 2
    assert kube.get(kinds.LEASE, manager.lease_name, namespace)["spec"]["holderIdentity"] == ""
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)


def test_healthz_fails_once_a_worker_ended_and_names_its_controller(make_gadget: Any, managers: Any) -> None:
    """A worker that ended (an exception past the reconcile, in okt's own work around it) never comes back: the
    liveness probe has the pod restarted, instead of answering ok for a controller with a worker fewer, or none."""

    def not_a_run(reconciler: Any, client: Any, reader: Any, namespace: str | None, name: str, **kwargs: Any) -> Any:
        return None  # the worker fails on it after the reconcile returned

    manager = managers(not_a_run, max_concurrent=1)
    manager.start()
    assert manager.probes is not None
    url = manager.probes.url
    wait_for(lambda: fetch(url + "/readyz") == (200, "ok"), timeout=15)

    make_gadget("g")
    wait_for(lambda: fetch(url + "/healthz")[0] == 503, timeout=10)
    assert fetch(url + "/healthz") == (503, "not ready: 1 of 1 workers of the controller gadget ended")
    assert fetch(url + "/readyz")[0] == 503


def test_healthz_fails_while_every_worker_of_a_controller_is_stuck_on_one_reconcile(
    make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    """A reconcile that never returns (a call without a timeout, a deadlock) on every worker: nothing is reconciled
    any more, and only a restart frees the workers."""
    reconcile = fake_reconcile()
    manager = managers(reconcile, max_concurrent=1, stuck_after=0.5)
    manager.start()
    assert manager.probes is not None
    url = manager.probes.url
    wait_for(lambda: fetch(url + "/readyz") == (200, "ok"), timeout=15)
    wait_for(lambda: manager.working, timeout=10)

    reconcile.release.clear()
    gadget = make_gadget("g")
    with structlog.testing.capture_logs() as logged:
        wait_for(lambda: fetch(url + "/healthz")[0] == 503, timeout=10)
        status, body = fetch(url + "/healthz")
        assert fetch(url + "/readyz")[0] == 503
    assert status == 503
    assert body.startswith("not ready: every worker of the controller gadget has been on one reconcile for ")
    where = f"{gadget['metadata']['namespace']}/g"
    assert body.endswith(f" s): {where}")  # what an on-call engineer needs first: which object
    # The log says it too, once however often the probes ask (the kubelet restarts the pod: its log is what stays).
    stuck = [line for line in logged if line["event"] == "workers stuck"]
    assert [(line["controller"], line["detail"].endswith(where)) for line in stuck] == [("gadget", True)]

    reconcile.release.set()
    wait_for(lambda: fetch(url + "/healthz") == (200, "ok"), timeout=10)


def test_a_standby_is_ready_but_never_reconciles_until_the_leader_goes(
    make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    on_leader, on_standby = fake_reconcile(), fake_reconcile()
    leader = managers(on_leader, leader_elect=True, identity="leader")
    leader.start()
    wait_for(lambda: leader.working, timeout=15)
    standby = managers(on_standby, leader_elect=True, identity="standby")
    standby.start()
    assert standby.probes is not None
    wait_for(lambda: fetch(standby.probes.url + "/readyz") == (200, "ok"), timeout=15)

    make_gadget("g")
    wait_for(lambda: on_leader.count("g") == 1, timeout=10)
    time.sleep(0.5)
    assert on_standby.count() == 0
    assert not standby.working

    leader.stop()
    assert leader.join(10)
    wait_for(lambda: on_standby.count("g") == 1, timeout=10)
    assert not leader.lost_leadership


def test_a_standby_queues_nothing_until_it_leads_and_then_reconciles_every_object_of_its_warm_cache(
    kube: kube_client.Client, namespace: str, make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    """A standby's queue depth is 0, so an alert on ``okt_workqueue_depth`` does not fire on every standby; once it
    leads, every object it holds in its cache is reconciled."""
    on_leader, on_standby = fake_reconcile(), fake_reconcile()
    for name in ("a", "b"):
        make_gadget(name)
    leader = managers(on_leader, leader_elect=True, identity="leader")
    leader.start()
    wait_for(lambda: leader.working, timeout=15)
    standby = managers(on_standby, leader_elect=True, identity="standby")
    standby.start()
    assert standby.probes is not None
    url = standby.probes.url
    wait_for(lambda: fetch(url + "/readyz") == (200, "ok"), timeout=15)
    wait_for(lambda: standby.elector is not None and standby.elector.holder == "leader", timeout=10)
    make_gadget("c")  # a live event, seen by the standby's watch
    wait_for(lambda: on_leader.count("c") == 1, timeout=10)
    kind = standby.controllers[0].kind
    wait_for(lambda: standby.cache is not None and standby.cache.get(kind, "c", namespace) is not None, timeout=10)

    body = fetch(url + "/metrics")[1]
    assert 'leader_election_master_status{name="' + standby.lease_name + '"} 0.0' in body
    for series in (
        'okt_workqueue_depth{controller="gadget"} 0.0',
        'workqueue_depth{name="gadget"} 0.0',
        'okt_workqueue_depth_by_priority{controller="gadget",priority="live"} 0.0',
        'okt_workqueue_depth_by_priority{controller="gadget",priority="sweep"} 0.0',
    ):
        assert series in body
    assert on_standby.count() == 0

    leader.stop()
    assert leader.join(10)
    wait_for(lambda: all(on_standby.count(name) == 1 for name in ("a", "b", "c")), timeout=10)


def test_sigterm_stops_run_gracefully(fake_reconcile: Any, managers: Any) -> None:
    manager = managers(fake_reconcile(), metrics_bind="0")

    def terminate_once_working() -> None:
        wait_for(lambda: manager.working, timeout=15)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_working, daemon=True).start()
    previous = signal.getsignal(signal.SIGTERM)
    started = time.monotonic()
    manager.run()
    assert time.monotonic() - started < 20
    assert manager.join(0)
    assert not manager.running
    assert signal.getsignal(signal.SIGTERM) is previous


def test_a_second_sigterm_during_the_graceful_shutdown_exits_at_once_with_status_1(
    make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    reconcile = fake_reconcile()
    reconcile.release.clear()  # the reconcile hangs: the graceful shutdown would wait the whole grace period
    manager = managers(reconcile, metrics_bind="0", grace_period=120.0)

    def terminate_twice_once_reconciling() -> None:
        make_gadget("g")
        wait_for(lambda: manager.working and manager.controllers[0].in_flight == 1, timeout=15)
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(lambda: not manager.running, timeout=5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_twice_once_reconciling, daemon=True).start()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exited:
            manager.run()
    finally:
        reconcile.release.set()

    assert exited.value.code == 1
    assert not manager.join(0)  # the in-flight reconcile was not waited for
    assert signal.getsignal(signal.SIGTERM) is previous


def test_start_up_hooks_run_before_the_first_watch_and_clean_up_hooks_after_the_last_reconcile(
    kube: kube_client.Client, make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    order: list[str] = []
    watched_at_start_up: list[bool] = []
    before: list[Any] = []

    def warm_up(client: kube_client.Client) -> None:
        watched_at_start_up.append(any(key[1] == "gadgets" for key in client.stats.delta(before[0])))
        order.append("startup")

    def flush() -> None:
        order.append("cleanup")

    reconcile = fake_reconcile(action=lambda namespace, name: order.append("reconcile"))
    make_gadget("h")
    before.append(kube.stats.snapshot())
    manager = managers(reconcile, on_startup=[warm_up], on_cleanup=[flush])
    manager.start()
    wait_for(lambda: reconcile.count("h") >= 1, timeout=15)
    manager.stop()
    assert manager.join(15)

    assert watched_at_start_up == [False]
    assert order[0] == "startup"
    assert order[-1] == "cleanup"
    assert order.count("reconcile") >= 1 and order.count("startup") == order.count("cleanup") == 1


class _Credentials(pydantic.BaseModel):
    port: int


def test_a_clean_up_hook_failing_on_a_validation_error_is_logged_by_its_fields_never_the_values_it_was_given(
    kube: kube_client.Client, make_gadget: Any, fake_reconcile: Any, managers: Any
) -> None:
    """pydantic's text repeats each input: a clean-up hook checking a Secret's data logged the Secret's value."""

    def deregister() -> None:
        _Credentials.model_validate({"port": "s3cr3t-t0ken"})

    reconcile = fake_reconcile()
    make_gadget("c")
    manager = managers(reconcile, on_cleanup=[deregister])
    with structlog.testing.capture_logs() as logs:
        manager.start()
        wait_for(lambda: reconcile.count("c") >= 1, timeout=15)
        manager.stop()
        assert manager.join(15)

    failed = [log for log in logs if log["event"] == "a clean-up hook failed"]
    assert [log["hook"].rsplit(".", 1)[-1] for log in failed] == ["deregister"]
    assert "port" in failed[0]["error"]
    assert "s3cr3t" not in repr(logs)


def test_a_clean_up_hook_that_hangs_is_left_running_and_the_leader_exits_in_its_grace_period_releasing_the_lease(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, fake_reconcile: Any, managers: Any
) -> None:
    """A backend that does not answer: the hook held the shutdown for ever, the elector renewing the lease meanwhile, so
    no standby took over. Left running, it writes nothing more: released at once, the lease has no second writer."""
    backend, refused, later = threading.Event(), [], []
    marker = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deregistered", "namespace": namespace}}

    def deregister() -> None:
        backend.wait()  # never answers while the shutdown waits
        try:
            kube.create(marker, kinds.CONFIG_MAP)
        except okt.WriteRefused as exc:
            refused.append(exc)

    manager = managers(
        fake_reconcile(),
        leader_elect=True,
        identity="hanging",
        grace_period=2.0,
        on_cleanup=[deregister, lambda: later.append("closed")],
    )
    manager.start()
    wait_for(lambda: manager.working, timeout=15)
    began = time.monotonic()
    with structlog.testing.capture_logs() as logs:
        manager.stop()
        assert manager.join(manager.grace_period + 3)
    took = time.monotonic() - began

    assert manager.grace_period <= took < manager.grace_period + 3
    assert [name.rsplit(".", 1)[-1] for name in manager.left_running] == ["deregister"]
    assert manager.left_running[0].startswith("the clean-up hook ")
    assert later == []
    assert [line["hook"].rsplit(".", 1)[-1] for line in logs if line["event"].startswith("a clean-up hook still")] == [
        "deregister"
    ]
    lease = kube.get(kinds.LEASE, manager.lease_name, namespace)
    assert lease["spec"]["holderIdentity"] == ""  # released: a standby takes over at once

    backend.set()  # the backend answers at last: the hook's write is refused, nothing sent
    wait_for(lambda: len(refused) == 1, timeout=10)
    assert kube.get_or_none(kinds.CONFIG_MAP, "deregistered", namespace) is None


def test_a_failing_start_up_hook_stops_the_start_with_its_name_and_nothing_is_watched(
    kube: kube_client.Client, fake_reconcile: Any, managers: Any
) -> None:
    cleaned: list[str] = []

    def needs_the_database(client: kube_client.Client) -> None:
        raise RuntimeError("database unreachable")

    manager = managers(fake_reconcile(), on_startup=[needs_the_database], on_cleanup=[lambda: cleaned.append("x")])
    before = kube.stats.snapshot()

    with pytest.raises(okt.ConfigurationError, match=r"start-up hook .*needs_the_database failed: RuntimeError: "):
        manager.start()

    assert manager.join(15)
    assert not any(key[1] == "gadgets" for key in kube.stats.delta(before))
    assert cleaned == []


def _start_stopped_while_a_hook_runs(
    kube: kube_client.Client, manager: manager_mod.Manager, released: threading.Event, running: threading.Event
) -> dict[tuple[str, str], int]:
    """Start ``manager`` on a thread, stop it once its hook runs, let the hook return; the requests sent meanwhile."""
    before = kube.stats.snapshot()
    starting = threading.Thread(target=manager.start, name="test-start", daemon=True)
    starting.start()
    assert running.wait(15)
    manager.stop()
    released.set()
    starting.join(15)
    assert not starting.is_alive()
    assert manager.join(15)
    return {key: count for key, count in kube.stats.delta(before).items() if count}


def test_a_stop_asked_while_a_start_up_hook_runs_calls_no_later_hook_and_watches_nothing(
    kube: kube_client.Client, fake_reconcile: Any, managers: Any
) -> None:
    """SIGTERM during a hook that waits for its backend: the hooks after it were called, and every kind watched."""
    running, released, order = threading.Event(), threading.Event(), []

    def wait_for_the_backend(client: kube_client.Client) -> None:
        order.append("waited")
        running.set()
        released.wait(15)

    manager = managers(
        fake_reconcile(),
        on_startup=[wait_for_the_backend, lambda client: order.append("later")],
        on_cleanup=[lambda: order.append("cleanup")],
    )
    sent = _start_stopped_while_a_hook_runs(kube, manager, released, running)

    assert order == ["waited"]  # the start-up did not end: nothing to clean up
    assert not any(key[1] == "gadgets" for key in sent)
    assert manager.cache is None and manager.controllers == []


def test_a_stop_asked_while_the_last_start_up_hook_runs_waits_for_it_and_runs_the_clean_up_hooks(
    kube: kube_client.Client, fake_reconcile: Any, managers: Any
) -> None:
    """The hook registered the operator somewhere: the shutdown was over before it returned, its clean-up skipped."""
    running, released, order = threading.Event(), threading.Event(), []

    def register(client: kube_client.Client) -> None:
        running.set()
        released.wait(15)
        order.append("registered")

    manager = managers(fake_reconcile(), on_startup=[register], on_cleanup=[lambda: order.append("deregistered")])
    sent = _start_stopped_while_a_hook_runs(kube, manager, released, running)

    assert order == ["registered", "deregistered"]
    assert not any(key[1] == "gadgets" for key in sent)
    assert manager.cache is None and manager.controllers == []


def _okt_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("okt-") and t.name != "okt-fault-proxy")


def _stopped_while_held(proxy: shared.HoldingProxy, client: kube_client.Client, manager: manager_mod.Manager) -> Any:
    """Start ``manager`` on a thread, stop it once the proxy holds its request, then let the request through; what the
    start raised (None), the okt threads alive once join() returned, the requests sent after the stop and after join."""
    raised: list[BaseException] = []

    def start() -> None:
        try:
            manager.start()
        except BaseException as exc:
            raised.append(exc)

    before = _okt_threads()
    starting = threading.Thread(target=start, name="test-start", daemon=True)
    starting.start()
    assert proxy.held.wait(30)
    at_stop = client.stats.snapshot()
    manager.stop()
    # Once told, an informer whose list is held must open no watch when the list is answered.
    informers = manager.cache.informers(manager.controllers[0].kind) if manager.cache is not None else []
    wait_for(lambda: all(informer.stopped for informer in informers), timeout=15)
    proxy.release.set()
    assert manager.join(manager.grace_period + 5)
    at_join = client.stats.snapshot()
    alive = [name for name in _okt_threads() if name not in before]
    starting.join(30)
    assert not starting.is_alive()
    after_stop = {key: count for key, count in client.stats.delta(at_stop).items() if count}
    after_join = {key: count for key, count in client.stats.delta(at_join).items() if count}
    return (raised[0] if raised else None), alive, after_stop, after_join


def _gadgets_path(method: str, path: str) -> bool:
    return method == "GET" and "/gadgets" in path and "watch=" not in path


@pytest.mark.parametrize(
    ("step", "holds", "leader_elect"),
    [
        ("discovery", lambda method, path: path.split("?")[0] == "/apis/runtime.okt.io/v1", False),
        ("first list", _gadgets_path, False),
        ("first list, electing", _gadgets_path, True),
    ],
)
def test_a_stop_asked_while_the_start_discovers_or_lists_leaves_nothing_running_and_cleans_up_once(
    control_plane: envtest.ControlPlane,
    gadget_kind: kinds.Kind,
    fake_reconcile: Any,
    managers: Any,
    tmp_path: pathlib.Path,
    step: str,
    holds: Callable[[str, str], bool],
    leader_elect: bool,
) -> None:
    """SIGTERM past the start-up hooks, while the start discovers its kinds or lists the first: the shutdown was over
    while the start went on (it raised "the cache is stopped"), and an informer whose list was answered after the
    stop opened its watch, its thread alive after join() returned."""
    cleaned: list[str] = []
    with shared.HoldingProxy(control_plane.url, str(control_plane.ca_file), holds) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig"))
        manager = managers(
            fake_reconcile(),
            client=client,
            leader_elect=leader_elect,
            identity="stopped",
            on_startup=[lambda client: None],
            on_cleanup=[lambda: cleaned.append("cleaned")],
        )
        raised, alive, after_stop, after_join = _stopped_while_held(proxy, client, manager)

    assert raised is None
    assert alive == []
    assert after_join == {}
    # The request held was sent before the stop: a list is counted as it leaves, discovery's GET when it ends (let
    # through after the stop). The other kind's informer may have been opening its watch as it came.
    sent = {key: count for key, count in after_stop.items() if key[1] != "configmaps"}
    if step == "discovery":
        sent[("get", "discovery")] = sent.get(("get", "discovery"), 0) - 1
    assert not {key: count for key, count in sent.items() if count}
    assert cleaned == ["cleaned"]


def test_a_stop_asked_while_the_start_waits_for_a_crd_being_loaded_ends_the_wait_at_once(
    control_plane: envtest.ControlPlane,
    gadget_kind: kinds.Kind,
    fake_reconcile: Any,
    managers: Any,
    tmp_path: pathlib.Path,
) -> None:
    """SIGTERM while the start waited (up to a minute) for the kind of a CRD Established but not served yet, as an API
    server that has just started answers: the wait went on to its end, and the shutdown waited for it the whole grace
    period, the kind still not served."""
    cleaned: list[str] = []
    raised: list[BaseException] = []
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig"))
        manager = managers(
            fake_reconcile(), client=client, grace_period=30.0, on_cleanup=[lambda: cleaned.append("cleaned")]
        )

        def start() -> None:
            try:
                manager.start()
            except BaseException as exc:
                raised.append(exc)

        waits = f"the API server does not serve Gadget in {gadget_kind.api_version} yet"
        with proxy.restarting(not_served=[gadget_kind.group]), structlog.testing.capture_logs() as logged:
            starting = threading.Thread(target=start, name="test-start", daemon=True)
            starting.start()
            wait_for(lambda: any(str(line["event"]).startswith(waits) for line in logged), timeout=30)
            at_stop = client.stats.snapshot()
            manager.stop()
            # Still not served: only the stop can end the wait, 60 s long, while the shutdown waits 30 s for it.
            assert manager.join(10)
            starting.join(10)
            assert not starting.is_alive()
        after_stop = {key: count for key, count in client.stats.delta(at_stop).items() if count}

    assert raised == []
    assert not any(key[1] == "gadgets" for key in after_stop)  # nothing listed nor watched after the stop
    assert cleaned == ["cleaned"]
    assert manager.cache is not None and manager.controllers[0].kind == gadget_kind
