"""The daemon supervisor's bookkeeping, driven by events without a cluster: one thread per object and daemon, a
daemon that returned is not restarted by the next event, one that comes back waits for the old thread."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from typing import Any, ClassVar, cast

import pydantic
import pytest
import structlog

import okt
from okt.kube import kinds
from okt.runtime import daemons, informer
from okt.testing import FakeClient, wait_for

KIND = kinds.Kind("example.com/v1", "Thing", "things", True)


def thing(name: str, uid: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, **meta}}


class Store:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {o["metadata"]["name"]: o for o in objs}

    def read(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objs.get(name)


class Gate(okt.Reconciler):
    """A daemon that waits for its stop event, then for ``release`` (a slow stop); or returns when ``quit`` is set."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.quit = threading.Event()
        self.lock = threading.Lock()
        self.starts = 0

    @okt.daemon
    def run(self, ctx: okt.DaemonContext) -> None:
        with self.lock:
            self.starts += 1
        while not ctx.stop.wait(0.01):
            if self.quit.is_set():
                return
        self.release.wait(10)


def supervisor(reconciler: Gate, store: Store) -> daemons.Supervisor:
    return daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)


def test_nothing_starts_before_the_supervisor_does_and_the_stored_objects_start_with_it() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    sup = supervisor(reconciler, store)
    sup.observe(informer.ADDED, store.objs["a"])
    assert sup.running() == []

    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 1)
    sup.observe(informer.MODIFIED, store.objs["a"])
    assert sup.running() == [("ns", "a", "run")]
    sup.halt()
    assert sup.join(5)
    assert reconciler.starts == 1


def test_an_object_listed_but_deleted_since_gets_no_daemon() -> None:
    reconciler, store = Gate(), Store()
    sup = supervisor(reconciler, store)
    sup.start([thing("gone", "u1")])
    assert sup.running() == []
    assert sup.started_total == 0


def test_a_daemon_that_returned_on_its_own_is_not_restarted_by_later_events() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    reconciler.quit.set()
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: sup.running() == [] and reconciler.starts == 1)
    sup.observe(informer.MODIFIED, store.objs["a"])
    assert reconciler.starts == 1

    sup.observe(informer.DELETED, store.objs["a"])
    sup.observe(informer.ADDED, store.objs["a"])  # came back (filtered out and in again): a new lifetime
    wait_for(lambda: reconciler.starts == 2)
    sup.halt()


def test_an_object_back_while_its_daemon_still_stops_gets_a_new_one_only_after_the_old_returned() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 1)
    reconciler.release.clear()  # the daemon will be slow to stop

    sup.observe(informer.MODIFIED, thing("a", "u1", deletionTimestamp="2024-01-01T00:00:00Z"))
    sup.observe(informer.MODIFIED, store.objs["a"])
    assert reconciler.starts == 1
    assert sup.running() == [("ns", "a", "run")]

    reconciler.release.set()
    wait_for(lambda: reconciler.starts == 2)
    assert sup.running() == [("ns", "a", "run")]
    sup.halt()
    assert sup.join(5)


def test_a_recreated_object_of_the_same_name_gets_its_own_daemon() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 1)
    sup.observe(informer.DELETED, thing("a", "u1"))
    store.objs["a"] = thing("a", "u2")
    sup.observe(informer.ADDED, store.objs["a"])
    wait_for(lambda: reconciler.starts == 2 and sup.running() == [("ns", "a", "run")])
    sup.halt()
    assert sup.join(5)


class Deaf(okt.Reconciler):
    """A daemon that never looks at its stop event: it returns only when the test lets it go."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.let_go = threading.Event()
        self.started = threading.Event()

    @okt.daemon(stop_timeout=0.2)
    def deaf(self, ctx: okt.DaemonContext) -> None:
        self.started.set()
        self.let_go.wait(30)


def test_a_daemon_that_ignores_its_stop_is_logged_as_stuck_once_its_stop_timeout_passed() -> None:
    """The deletion of its object asks the daemon to stop; one still running ``stop_timeout`` seconds later holds the
    object's finalization, and says so in the log (once), naming the daemon and the object."""
    reconciler, store = Deaf(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    assert reconciler.started.wait(5)

    def stuck() -> list[dict[str, Any]]:
        return [entry for entry in logged if entry["event"] == "daemon ignores its stop event"]

    try:
        with structlog.testing.capture_logs() as logged:
            sup.observe(informer.DELETED, store.objs["a"])
            wait_for(stuck, timeout=10, message="the stuck daemon to be logged")
            time.sleep(0.5)  # several stop timeouts: still logged once
        assert len(stuck()) == 1
        entry = stuck()[0]
        assert entry["log_level"] == "warning"
        assert (entry["daemon"], entry["namespace"], entry["name"]) == ("deaf", "ns", "a")
        assert sup.stopping("u1")
    finally:
        reconciler.let_go.set()
    assert sup.join(5)
    assert not sup.stopping("u1")


def test_a_shutdown_that_leaves_a_daemon_running_names_it() -> None:
    """A shutdown waits a bounded time for the daemons; the one it leaves behind is named (the stuck-daemon warning
    comes only after its ``stop_timeout``, which a shorter grace period never reaches)."""
    reconciler, store = Deaf(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    assert reconciler.started.wait(5)
    try:
        with structlog.testing.capture_logs() as logged:
            sup.halt()
            assert not sup.join(0.05)
        [entry] = [entry for entry in logged if entry["event"] == "daemons still running after their stop was asked"]
        assert entry["log_level"] == "warning"
        assert entry["daemons"] == ["ns/a: deaf"]
    finally:
        reconciler.let_go.set()
    assert sup.join(5)


def test_a_shutdown_whose_wait_is_cut_short_while_it_waits_stops_waiting_and_names_the_daemon_left() -> None:
    """A wait that says how long it has left, asked again as it goes, ends once it says none (the lease lost while a
    shutdown of 60 s waited), not when its first answer would have."""
    reconciler, store = Deaf(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    assert reconciler.started.wait(5)
    answers = iter([60.0, 60.0])
    try:
        with structlog.testing.capture_logs() as logged:
            sup.halt()
            assert not sup.join(lambda: next(answers, 0.0))
        [entry] = [entry for entry in logged if entry["event"] == "daemons still running after their stop was asked"]
        assert entry["daemons"] == ["ns/a: deaf"]
        assert next(answers, None) is None  # asked again while it waited
    finally:
        reconciler.let_go.set()
    assert sup.join(5)


class Tagging(okt.Reconciler):
    """A daemon that puts its object's name in ``ctx.params`` after remembering what it found there first."""

    api_version = "example.com/v1"
    kind = "Thing"
    params: ClassVar[dict[str, Any]] = {"tier": "web"}

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.found: list[dict[str, Any]] = []

    @okt.daemon
    def tag(self, ctx: okt.DaemonContext) -> None:
        with self.lock:
            self.found.append(dict(ctx.params))
            ctx.params["owner"] = ctx.name  # type: ignore[index]


def test_a_daemon_that_changes_params_changes_them_for_its_own_run_only() -> None:
    reconciler, store = Tagging(), Store(thing("a", "u1"), thing("b", "u2"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    wait_for(lambda: sup.started_total == 2 and sup.running() == [])
    sup.halt()

    assert reconciler.found == [{"tier": "web"}, {"tier": "web"}]
    assert Tagging.params == {"tier": "web"}


class Flaky(okt.Reconciler):
    """A daemon that fails at once three times, then runs a while before it fails again, then returns."""

    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon(backoff=0.01, max_backoff=0.08)
    def flaky(self, ctx: okt.DaemonContext) -> None:
        if ctx.attempt == 4:
            ctx.stop.wait(0.3)  # a healthy run, longer than max_backoff
        if ctx.attempt <= 4:
            raise RuntimeError(f"failure {ctx.attempt}")


def test_a_daemon_that_ran_longer_than_its_max_backoff_before_failing_restarts_after_the_first_backoff() -> None:
    """The backoff doubles per *consecutive* failure: a failure after a run that outlived the longest pause is a new
    streak (a daemon failing once a day kept the pause of its whole life's failures, up to ``max_backoff``)."""
    reconciler, store = Flaky(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: any(entry["event"] == "daemon returned" for entry in logged), timeout=10)
    sup.halt()
    assert sup.join(5)

    failed = [entry for entry in logged if entry["event"] == "daemon failed, restarting after a backoff"]
    assert [(entry["failures"], entry["delay"]) for entry in failed] == [(1, 0.01), (2, 0.02), (3, 0.04), (1, 0.01)]
    assert [entry["attempt"] for entry in logged if entry["event"] == "daemon started"] == [1, 2, 3, 4, 5]


class NotYet(okt.Reconciler):
    """A daemon whose backend is not there for its first three starts: it says so with okt.TemporaryError and the
    delay to wait, once without one; then it returns."""

    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon(backoff=0.04, max_backoff=0.32)
    def waiting(self, ctx: okt.DaemonContext) -> None:
        if ctx.attempt <= 2:
            raise okt.TemporaryError("the backend is not up yet", delay=0.01)
        if ctx.attempt == 3:
            raise okt.TemporaryError("the backend is not up yet")


def test_a_daemon_raising_temporary_error_with_a_delay_is_started_again_after_that_delay() -> None:
    """``okt.TemporaryError(msg, delay=s)`` says when to try again, in a daemon as in a reconcile (Kopf's daemons
    honour it too): the daemon starts again after ``s`` seconds, not after its backoff; the failures still count, and
    a TemporaryError without a delay, or any other exception, waits out the backoff they reached."""
    reconciler, store = NotYet(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: any(entry["event"] == "daemon returned" for entry in logged), timeout=10)
    sup.halt()
    assert sup.join(5)

    failed = [entry for entry in logged if entry["event"] == "daemon failed, restarting after a backoff"]
    assert [(entry["failures"], entry["delay"]) for entry in failed] == [(1, 0.01), (2, 0.01), (3, 0.16)]
    assert [entry["error"] for entry in failed] == 3 * ["TemporaryError: the backend is not up yet"]
    # Raised on purpose, an error of okt's says what happened: a warning, no traceback (a bug's is an error, with it).
    assert [(entry["log_level"], "exc_info" in entry or "stack" in entry) for entry in failed] == 3 * [
        ("warning", False)
    ]


class Exiting(okt.Reconciler):
    """A daemon that raises ``ending`` on its first run (``sys.exit()`` by default), then runs until it is asked to
    stop."""

    api_version = "example.com/v1"
    kind = "Thing"
    ending: BaseException = SystemExit("the tunnel closed")

    @okt.daemon(backoff=0.01)
    def exiting(self, ctx: okt.DaemonContext) -> None:
        if ctx.attempt == 1:
            raise self.ending
        ctx.stop.wait()


@pytest.mark.parametrize(
    ("ending", "said"),
    [
        (SystemExit("the tunnel closed"), "SystemExit: the tunnel closed"),
        (asyncio.CancelledError("the task was cancelled"), "CancelledError: the task was cancelled"),
        (KeyboardInterrupt("raised by hand"), "KeyboardInterrupt: raised by hand"),
    ],
)
def test_a_daemon_that_calls_sys_exit_is_logged_and_restarted_as_one_that_raises(
    ending: BaseException, said: str
) -> None:
    """``sys.exit()`` in a daemon thread ends that thread only, and threading ignores it without a word: the daemon
    was gone for its object (kept as finished, never started again), nothing logged, the operator running on. So did
    any other exception that is not an ``Exception`` (``asyncio.run()`` of a cancelled task, a KeyboardInterrupt
    raised by hand), with a traceback printed outside okt's logs."""
    reconciler, store = Exiting(), Store(thing("a", "u1"))
    reconciler.ending = ending
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: [e["attempt"] for e in logged if e["event"] == "daemon started"] == [1, 2], timeout=10)
    assert sup.running() == [("ns", "a", "exiting")]
    sup.halt()
    assert sup.join(5)

    [failed] = [entry for entry in logged if entry["event"] == "daemon failed, restarting after a backoff"]
    assert failed["error"] == said


class Credentials(pydantic.BaseModel):
    user: str
    port: int


class Failing(okt.Reconciler):
    """A daemon that fails four times the same way, then validating a Secret's data, then runs until stopped."""

    api_version = "example.com/v1"
    kind = "Thing"
    secret_data: ClassVar[dict[str, str]] = {"user": "admin", "port": "hunter2-s3cret"}

    @okt.daemon(backoff=0.01, max_backoff=0.02)
    def failing(self, ctx: okt.DaemonContext) -> None:
        if ctx.attempt <= 4:
            raise ConnectionError("the backend refused the connection")
        if ctx.attempt <= 6:
            Credentials.model_validate(self.secret_data)
        ctx.stop.wait()


def test_a_daemon_failing_again_and_again_logs_each_restart_and_each_distinct_error_s_traceback_once() -> None:
    """Every restart is logged with its backoff, but the traceback only at the first failure of each distinct error
    (a daemon failing for good logged it at every restart of every object, for ever); a pydantic ``ValidationError``
    is said by its fields and its stack, never by the values it was given (a Secret's)."""
    reconciler, store = Failing(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: [e["attempt"] for e in logged if e["event"] == "daemon started"][-1:] == [7], timeout=10)
    sup.halt()
    assert sup.join(5)

    failed = [entry for entry in logged if entry["event"] == "daemon failed, restarting after a backoff"]
    assert [entry["error"].split(":")[0] for entry in failed] == 4 * ["ConnectionError"] + 2 * ["ValidationError"]
    with_traceback = [i for i, entry in enumerate(failed) if entry.get("exc_info") or entry.get("stack")]
    assert with_traceback == [0, 4]
    assert failed[4]["error"].startswith("ValidationError: Credentials: port: ")
    assert "Credentials.model_validate" in failed[4]["stack"]
    assert "hunter2" not in repr(logged)


class ReadingSecret(okt.Reconciler):
    """A daemon that reads a Secret through its client, then fails on its value (``int()`` quotes it)."""

    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon(backoff=0.01, max_backoff=0.02)
    def reading(self, ctx: okt.DaemonContext) -> None:
        read = ctx.client.get(ctx.client.resolve("v1", "Secret"), "login", "ns")
        int(base64.b64decode(read["data"]["port"]).decode())


def test_a_daemon_failing_on_a_secret_s_value_it_read_logs_its_failure_and_traceback_without_the_value() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": "ns"}}
    fake = FakeClient(objects=[{**secret, "stringData": {"port": "hunter2-s3cret"}}])
    reconciler, store = ReadingSecret(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, fake, KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: [e for e in logged if e["event"] == "daemon failed, restarting after a backoff"], timeout=10)
    sup.halt()
    assert sup.join(5)

    failed = next(entry for entry in logged if entry["event"] == "daemon failed, restarting after a backoff")
    assert failed["error"] == "ValueError: invalid literal for int() with base 10: '(a Secret's value, left out)'"
    assert "int(base64.b64decode" in failed["stack"], failed  # where it was raised, said without the value
    assert "hunter2" not in repr(logged)


class Reporting(okt.Reconciler):
    """A daemon that states a condition, then returns when ``quit`` is set, or waits for its stop and states one more
    (dropped: it was asked to stop)."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.quit = threading.Event()
        self.late: list[bool] = []
        self.stated = threading.Event()

    @okt.daemon
    def probe(self, ctx: okt.DaemonContext) -> None:
        ctx.set_condition("OperandHealthy", True, "Answers")
        self.stated.set()
        while not ctx.stop.wait(0.01):
            if self.quit.is_set():
                return
        self.late.append(ctx.set_condition("OperandHealthy", False, "Stopping"))


def reporting_supervisor(reconciler: Reporting, store: Store, asked: list[str]) -> daemons.Supervisor:
    return daemons.Supervisor(
        reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: asked.append(name)
    )


def test_a_daemon_s_finding_asks_for_a_reconcile_and_a_daemon_done_for_its_object_asks_for_one_to_remove_it() -> None:
    reconciler, store, asked = Reporting(), Store(thing("a", "u1")), []
    sup = reporting_supervisor(reconciler, store, asked)
    sup.start(store.objs.values())
    assert reconciler.stated.wait(5)
    assert asked == ["a"]
    assert reconciler.daemon_findings.holds("u1")

    reconciler.quit.set()
    wait_for(lambda: sup.running() == [])
    assert asked == ["a", "a"]
    conditions = okt.Conditions.from_status({"conditions": [{"type": "OperandHealthy", "status": "True"}]})
    applied = reconciler.daemon_findings.apply("u1", conditions, {}, {})
    assert "OperandHealthy" not in conditions
    reconciler.daemon_findings.settle("u1", applied)
    assert not reconciler.daemon_findings.holds("u1")


@pytest.mark.parametrize(
    "gone",
    [
        (informer.DELETED, thing("a", "u1")),
        (informer.MODIFIED, thing("a", "u1", deletionTimestamp="2026-11-29T18:00:00Z")),
    ],
)
def test_the_findings_of_a_deleted_object_go_with_it_and_its_stopping_daemon_adds_none(
    gone: tuple[str, dict[str, Any]],
) -> None:
    reconciler, store, asked = Reporting(), Store(thing("a", "u1")), []
    sup = reporting_supervisor(reconciler, store, asked)
    sup.start(store.objs.values())
    assert reconciler.stated.wait(5)

    sup.observe(*gone)
    assert not reconciler.daemon_findings.holds("u1")
    wait_for(lambda: sup.running() == [])
    assert reconciler.late == [False]
    assert not reconciler.daemon_findings.holds("u1")
    assert asked == ["a"]


def test_a_shutdown_forgets_the_findings_and_asks_for_no_reconcile() -> None:
    reconciler, store, asked = Reporting(), Store(thing("a", "u1")), []
    sup = reporting_supervisor(reconciler, store, asked)
    sup.start(store.objs.values())
    assert reconciler.stated.wait(5)
    sup.halt()
    assert sup.join(5)
    assert reconciler.late == [False]
    assert not reconciler.daemon_findings.holds("u1")
    assert asked == ["a"]


class ConfigMapProbe(okt.Reconciler):
    """A daemon of a built-in kind: okt leaves its status alone (``status`` is "off"), so what the daemon hands over
    for the status has nowhere to go."""

    api_version = "v1"
    kind = "ConfigMap"

    def __init__(self) -> None:
        self.refused: list[str] = []
        self.accepted: list[bool] = []
        self.done = threading.Event()

    @okt.daemon
    def probe(self, ctx: okt.DaemonContext) -> None:
        for hand_over in (
            lambda: ctx.set_condition("OperandHealthy", True, "Answers"),
            lambda: ctx.set_status_fields({"lastSeen": "now"}),
        ):
            try:
                self.accepted.append(hand_over())
            except ValueError as exc:
                self.refused.append(str(exc))
        self.done.set()
        ctx.stop.wait(10)


class ThingWithoutStatus(ConfigMapProbe):
    api_version = "example.com/v1"
    kind = "Thing"
    status = "off"


@pytest.mark.parametrize("reconciler_cls", [ConfigMapProbe, ThingWithoutStatus])
def test_a_daemon_whose_reconciler_writes_no_status_is_refused_its_conditions_and_fields_not_ignored(
    reconciler_cls: type[ConfigMapProbe],
) -> None:
    reconciler = reconciler_cls()
    kind = reconciler_cls.primary_kind()
    store, asked = Store(thing("a", "u1")), []
    sup = daemons.Supervisor(
        reconciler, cast(Any, None), kind, read=store.read, enqueue=lambda namespace, name: asked.append(name)
    )
    sup.start(store.objs.values())
    try:
        wait_for(reconciler.done.is_set)
    finally:
        sup.halt()
        sup.join(5)
    assert reconciler.accepted == []
    assert len(reconciler.refused) == 2
    assert all('status is "off"' in said for said in reconciler.refused)
    assert asked == []  # no reconcile asked for what no reconcile would write


class RaisingOnStop(okt.Reconciler):
    """A daemon whose blocking call fails once it is asked to stop (its connection closed under it)."""

    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        ctx.stop.wait(10)
        raise ConnectionError("the stream was closed")


def test_a_daemon_that_raises_once_asked_to_stop_is_not_said_to_restart() -> None:
    reconciler, store = RaisingOnStop(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: sup.running() != [])
        sup.observe(informer.DELETED, store.objs["a"])
        assert sup.join(5)
    events = [entry["event"] for entry in logged]
    assert "daemon failed, restarting after a backoff" not in events
    [raised] = [entry for entry in logged if entry["event"] == "daemon raised once asked to stop"]
    assert raised["error"] == "ConnectionError: the stream was closed"
    assert events.count("daemon started") == 1


NOT_SERVED = okt.errors.NotFound(404, "NotFound", "the API server does not serve Thing (example.com/v1) any more")
REFUSED = okt.errors.Forbidden(403, "Forbidden", "okt may no longer list and watch Thing (example.com/v1)")


def test_a_suspended_kind_stops_its_daemons_starts_none_and_resume_starts_those_that_had_not_returned() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"), thing("b", "u2"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 2)
    reconciler.quit.set()  # both return on their own: done for their objects
    wait_for(lambda: sup.running() == [])
    reconciler.quit.clear()
    store.objs["c"] = thing("c", "u3")
    sup.observe(informer.ADDED, store.objs["c"])
    wait_for(lambda: reconciler.starts == 3)

    assert sup.suspend(NOT_SERVED) is True
    assert sup.suspend(NOT_SERVED) is False
    assert sup.join(5)
    sup.observe(informer.MODIFIED, store.objs["c"])
    store.objs["d"] = thing("d", "u4")
    sup.observe(informer.ADDED, store.objs["d"])
    stopped = (sup.running(), reconciler.starts)

    assert sup.resume(store.objs.values()) is True
    wait_for(lambda: reconciler.starts == 5)
    assert stopped == ([], 3)
    assert sup.running() == [("ns", "c", "run"), ("ns", "d", "run")]
    sup.halt()
    assert sup.join(5)


def test_a_daemon_still_stopping_when_its_kind_is_served_again_starts_once_it_returned() -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    reconciler.release.clear()  # its stop takes until released
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 1)
    sup.suspend(NOT_SERVED)
    sup.resume(store.objs.values())
    assert reconciler.starts == 1  # never two at once
    reconciler.release.set()
    wait_for(lambda: reconciler.starts == 2)
    assert sup.running() == [("ns", "a", "run")]
    sup.halt()
    assert sup.join(5)


def test_a_daemon_still_stopping_when_its_kind_is_listed_again_without_its_object_is_not_started_again() -> None:
    """The list that ends a refusal lacks the object (deleted meanwhile): its daemon, still returning from the
    suspension, is not started again, and nothing else is."""
    reconciler, store = Gate(), Store(thing("a", "u1"), thing("b", "u2"))
    reconciler.release.clear()  # their stops take until released
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 2)
    sup.suspend(REFUSED)
    gone = store.objs.pop("a")
    sup.resume(store.objs.values())
    sup.observe(informer.DELETED, gone)  # the list's changes are told after the resume
    reconciler.release.set()
    wait_for(lambda: reconciler.starts == 3)
    wait_for(lambda: sup.running() == [("ns", "b", "run")])
    time.sleep(0.2)
    assert reconciler.starts == 3  # b's daemon again, never a's
    sup.halt()
    assert sup.join(5)


@pytest.mark.parametrize(
    ("refusal", "stopped", "started"),
    [
        (
            NOT_SERVED,
            "the API server does not serve the kind any more: its daemons are asked to stop",
            "the API server serves the kind again: its daemons start again",
        ),
        (
            REFUSED,
            "the API server refuses okt the list or watch of the kind: its daemons are asked to stop",
            "the API server lets okt list and watch the kind again: its daemons start again",
        ),
    ],
    ids=["not-served", "refused"],
)
def test_a_suspension_and_its_end_are_logged_as_what_suspended_the_kind(
    refusal: okt.errors.ApiError, stopped: str, started: str
) -> None:
    reconciler, store = Gate(), Store(thing("a", "u1"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 1)
    with structlog.testing.capture_logs() as logged:
        sup.suspend(refusal)
        assert sup.join(5)
        sup.resume(store.objs.values())
        wait_for(lambda: reconciler.starts == 2)
    said = [(entry["event"], entry["daemons"]) for entry in logged if "daemons" in entry]
    assert said == [(stopped, 1), (started, 1)]
    sup.halt()
    assert sup.join(5)


def test_a_suspension_in_one_namespace_stops_and_holds_the_daemons_there_only() -> None:
    """Each watched namespace is listed and watched on its own: a refusal in ``a`` says nothing of ``b``."""
    reconciler = Gate()
    store = Store(thing("a1", "u1", namespace="a"), thing("b1", "u2", namespace="b"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 2)

    assert sup.suspend(REFUSED, "a") is True
    wait_for(lambda: sup.running() == [("b", "b1", "run")])
    store.objs["a2"] = thing("a2", "u3", namespace="a")
    sup.observe(informer.ADDED, store.objs["a2"])
    store.objs["b2"] = thing("b2", "u4", namespace="b")
    sup.observe(informer.ADDED, store.objs["b2"])
    wait_for(lambda: reconciler.starts == 3)
    during = sup.running()

    assert sup.resume(in_namespace(store, "b"), "b") is False  # never suspended there
    assert sup.resume(in_namespace(store, "a"), "a") is True
    wait_for(lambda: reconciler.starts == 5)
    assert during == [("b", "b1", "run"), ("b", "b2", "run")]
    assert sup.running() == [("a", "a1", "run"), ("a", "a2", "run"), ("b", "b1", "run"), ("b", "b2", "run")]
    sup.halt()
    assert sup.join(5)


def test_a_suspension_of_every_namespace_holds_the_daemons_of_each() -> None:
    reconciler = Gate()
    store = Store(thing("a1", "u1", namespace="a"), thing("b1", "u2", namespace="b"))
    sup = supervisor(reconciler, store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == 2)

    assert sup.suspend(NOT_SERVED) is True
    wait_for(lambda: sup.running() == [])
    assert sup.resume(in_namespace(store, "a"), "a") is False  # the kind is still held everywhere
    sup.observe(informer.MODIFIED, store.objs["a1"])
    assert sup.running() == []
    assert sup.resume(store.objs.values()) is True
    wait_for(lambda: reconciler.starts == 4)
    sup.halt()
    assert sup.join(5)


@pytest.mark.parametrize("scope", [None, "ns"], ids=["every-namespace", "its-namespace"])
def test_a_suspension_keeps_what_a_daemon_done_for_its_object_stated_for_the_reconcile_that_removes_it(
    scope: str | None,
) -> None:
    """The reconcile asked to remove it fails while the kind cannot be read: dropped, the object's record would keep
    the condition on the status for good (its daemon, done, states nothing again)."""
    reconciler, store, asked = Reporting(), Store(thing("a", "u1"), thing("b", "u2")), []
    sup = reporting_supervisor(reconciler, store, asked)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.daemon_findings.holds("u1") and reconciler.daemon_findings.holds("u2"))
    reconciler.quit.set()
    wait_for(lambda: sup.running() == [])

    assert sup.suspend(REFUSED, scope) is True
    assert sup.resume(store.objs.values(), scope) is True

    assert sup.running() == []  # done for their objects: not started again
    conditions = okt.Conditions.from_status({"conditions": [{"type": "OperandHealthy", "status": "True"}]})
    applied = reconciler.daemon_findings.apply("u1", conditions, {}, {}, concerned=("probe",))
    assert "OperandHealthy" not in conditions
    assert applied.changed


def in_namespace(store: Store, namespace: str) -> list[dict[str, Any]]:
    """The objects of ``store`` in ``namespace``: what the cache lists there."""
    return [obj for obj in store.objs.values() if obj["metadata"]["namespace"] == namespace]


class Tiered(okt.Reconciler):
    """A daemon of the Things labelled ``tier=cache`` whose ``when`` reads ``spec.size`` (raising without one)."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: list[str] = []
        self.stops: list[str] = []

    @okt.daemon(labels={"tier": "cache"}, when=lambda obj: obj["spec"]["size"] > 0)
    def follow(self, ctx: okt.DaemonContext) -> None:
        with self.lock:
            self.starts.append(ctx.name)
        ctx.stop.wait(30)
        with self.lock:
            self.stops.append(ctx.name)


def tiered(name: str, tier: str, **spec: Any) -> dict[str, Any]:
    return {**thing(name, "u-" + name, labels={"tier": tier}), "spec": spec}


def test_a_daemon_runs_only_for_the_objects_that_pass_its_filter_and_stops_and_starts_again_as_they_change() -> None:
    reconciler = Tiered()
    store = Store(tiered("cache", "cache", size=1), tiered("web", "web", size=1))
    sup = supervisor(cast(Any, reconciler), store)
    with structlog.testing.capture_logs() as logged:
        sup.start(store.objs.values())
        wait_for(lambda: reconciler.starts == ["cache"])
        assert sup.running() == [("ns", "cache", "follow")]

        sup.observe(informer.MODIFIED, tiered("cache", "web", size=1))  # relabelled: stopped, as if gone
        wait_for(lambda: reconciler.stops == ["cache"] and sup.running() == [])
        sup.observe(informer.MODIFIED, tiered("cache", "cache", size=0))  # labels pass, when() does not
        sup.observe(informer.MODIFIED, tiered("web", "cache", size=2))
        wait_for(lambda: reconciler.starts == ["cache", "web"])
        sup.observe(informer.MODIFIED, tiered("cache", "cache", size=3))
        wait_for(lambda: sorted(reconciler.starts) == ["cache", "cache", "web"])
    sup.halt()
    assert sup.join(5)

    asked = [entry for entry in logged if entry["event"].startswith("the object no longer passes the daemon's filter")]
    assert [(entry["name"], entry["daemon"]) for entry in asked] == [("cache", "follow")]


def test_a_daemons_when_that_raises_keeps_it_stopped_and_is_logged_once_per_object() -> None:
    reconciler = Tiered()
    store = Store(tiered("a", "cache", size=1))
    sup = supervisor(cast(Any, reconciler), store)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.starts == ["a"])
    with structlog.testing.capture_logs() as logged:
        for _ in range(3):
            sup.observe(informer.MODIFIED, tiered("a", "cache"))  # no size: when() raises KeyError
        wait_for(lambda: reconciler.stops == ["a"] and sup.running() == [])
        sup.observe(informer.MODIFIED, tiered("b", "cache"))  # another object: said for it too
    assert reconciler.starts == ["a"]
    said = [
        entry for entry in logged if entry["event"] == "when() of a daemon raised: the object does not pass its filter"
    ]
    assert [(entry["name"], entry["daemon"], entry["error"]) for entry in said] == [
        ("a", "follow", "KeyError: 'size'"),
        ("b", "follow", "KeyError: 'size'"),
    ]
    assert all(entry["log_level"] == "error" for entry in said)

    sup.observe(informer.MODIFIED, tiered("a", "cache", size=1))  # fixed: passes, and runs again
    wait_for(lambda: reconciler.starts == ["a", "a"])
    sup.halt()
    assert sup.join(5)


class Awaiting(okt.Reconciler):
    """An ``async def`` daemon, Kopf's way: it never looks at its stop event, and is cancelled once asked to stop."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.cancelled = 0
        self.running = 0
        self.most_at_once = 0
        self.failures_left = 0

    @okt.daemon(backoff=0.05, max_backoff=0.1, cancel_after=0.2)
    async def watch(self, ctx: okt.DaemonContext) -> None:
        with self.lock:
            self.loops.append(asyncio.get_running_loop())
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            if self.failures_left:
                self.failures_left -= 1
                raise RuntimeError("down")
            while True:
                await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            with self.lock:
                self.running -= 1


def test_an_async_daemon_asked_to_stop_is_cancelled_after_its_cancel_after_and_not_restarted() -> None:
    reconciler, store = Awaiting(), Store(thing("a", "u1"))
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    wait_for(lambda: reconciler.running == 1)

    with structlog.testing.capture_logs() as logs:
        asked = time.monotonic()
        sup.observe(informer.DELETED, store.objs["a"])
        assert sup.join(5)
        took = time.monotonic() - asked

    assert 0.2 <= took < 2
    assert reconciler.cancelled == 1 and reconciler.running == 0
    said = [log["event"] for log in logs if log.get("daemon") == "watch"]
    assert "async daemon still running after its cancel_after: cancelled" in said
    assert "daemon cancelled once asked to stop" in said
    assert not [log for log in logs if log["log_level"] in ("warning", "error")]
    assert reconciler.loops[0].is_closed()  # the daemon's thread ended, its loop with it


def test_an_async_daemon_that_raises_is_restarted_on_its_threads_loop_and_never_runs_twice() -> None:
    reconciler, store = Awaiting(), Store(thing("a", "u1"))
    reconciler.failures_left = 2
    sup = daemons.Supervisor(reconciler, cast(Any, None), KIND, read=store.read, enqueue=lambda namespace, name: None)
    sup.start(store.objs.values())
    wait_for(lambda: len(reconciler.loops) == 3 and reconciler.running == 1)

    sup.observe(informer.DELETED, store.objs["a"])
    sup.observe(informer.ADDED, store.objs["a"])  # back while the old one stops: a new one only once it returned
    wait_for(lambda: len(reconciler.loops) == 4 and reconciler.running == 1)
    sup.halt()
    assert sup.join(5)

    first, second, third, fourth = reconciler.loops
    assert first is second is third  # the restarts: the same thread, its same loop
    assert fourth is not first  # a new thread for the new lifetime
    assert reconciler.most_at_once == 1


def test_a_cancel_after_that_is_no_number_of_seconds_is_refused() -> None:
    with pytest.raises(ValueError, match="cancel_after >= 0"):
        okt.daemon(cancel_after=-1)
