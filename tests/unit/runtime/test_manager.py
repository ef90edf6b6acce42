"""The manager's pure parts: lease names, identities and argument checks."""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import structlog

import okt
from okt import delays
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds
from okt.runtime import manager, probe_server, startup, webhook_server
from okt.status import writer
from okt.testing import wait_for

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Widgets(okt.Reconciler):
    api_version = "example.io/v1"
    kind = "Widget"
    plural = "widgets"


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["memcached"], "okt-memcached"),
        (["b", "a"], "okt-a-b"),
        (["Weird_Name.v2"], "okt-weird-name-v2"),
    ],
)
def test_the_default_lease_name_is_derived_from_the_controller_names(names: list[str], expected: str) -> None:
    assert manager.default_lease_name(names) == expected


def test_a_long_default_lease_name_is_shortened_with_a_hash_and_stays_valid() -> None:
    names = [f"controller-number-{i}" for i in range(10)]
    name = manager.default_lease_name(names)
    assert len(name) <= 63
    assert DNS_LABEL.match(name)
    assert name != manager.default_lease_name(names[:-1])


def test_default_identities_are_unique_per_call() -> None:
    assert manager.default_identity() != manager.default_identity()


@pytest.mark.parametrize(
    ("reconcilers", "kwargs", "message"),
    [
        ([], {}, "at least one reconciler"),
        ([Widgets], {"max_concurrent": 0}, "max_concurrent"),
        ([Widgets], {"metrics_bind": "nonsense"}, "HOST:PORT"),
        # Each of these was a TypeError naming no argument, taken as a count, or refused only once start() had run
        # the start-up hooks and bound the probes (the lease's timing, resync), or never (a grace period):
        ([Widgets], {"max_concurrent": "4"}, r"^max_concurrent must be an int >= 1, got '4'$"),
        ([Widgets], {"max_concurrent": True}, r"^max_concurrent must be an int >= 1, got True$"),
        ([Widgets], {"max_concurrent": 2.5}, r"^max_concurrent must be an int >= 1, got 2\.5$"),
        ([Widgets], {"stuck_after": "600"}, r"^stuck_after must be a number of seconds > 0, or None, got '600'$"),
        ([Widgets], {"stuck_after": float("nan")}, r"^stuck_after must be .*, got nan$"),
        (
            [Widgets],
            {"mapping_stuck_after": 0},
            r"^mapping_stuck_after must be a number of seconds > 0, or None, got 0$",
        ),
        ([Widgets], {"grace_period": -1}, r"^grace_period must be a finite number of seconds >= 0, got -1$"),
        ([Widgets], {"grace_period": float("nan")}, r"^grace_period must be .*, got nan$"),
        ([Widgets], {"grace_period": float("inf")}, r"^grace_period must be .*, got inf$"),
        ([Widgets], {"resync": 0}, r"^resync must be a finite number of seconds > 0, or None, got 0$"),
        ([Widgets], {"resync": float("nan")}, r"^resync must be .*, got nan$"),
        (
            [Widgets],
            {"lease_duration": 5.0},
            r"lease_duration > renew_deadline > retry_period > 0, got 5\.0, 10\.0, 2\.0$",
        ),
        ([Widgets], {"retry_period": 0}, r"got 15\.0, 10\.0, 0$"),
        ([Widgets], {"lease_duration": float("inf")}, r"^need finite numbers of seconds.*, got inf, 10\.0, 2\.0$"),
        ([Widgets], {"renew_deadline": float("nan")}, r"got 15\.0, nan, 2\.0$"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(
    reconcilers: list[type[okt.Reconciler]], kwargs: dict[str, Any], message: str
) -> None:
    client: Any = object()
    with pytest.raises(ValueError, match=message):
        manager.Manager(client, reconcilers, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stuck_after": float("inf")},  # okt run's --stuck-after inf: a watchdog that never fires
        {"stuck_after": None, "grace_period": 0, "resync": 0.5, "max_concurrent": 1},
        {"stuck_after": 3600, "mapping_stuck_after": None},  # a long reconcile allowed, a mapping never watched
        {"lease_duration": 3, "renew_deadline": 2, "retry_period": 1},
    ],
)
def test_sound_counts_and_seconds_are_taken(kwargs: dict[str, Any]) -> None:
    client: Any = StatsOnly()
    mgr = manager.Manager(client, [Widgets], **kwargs)
    assert mgr.max_concurrent == kwargs.get("max_concurrent", 4)
    assert mgr.stuck_after == kwargs.get("stuck_after", manager.DEFAULT_STUCK_AFTER)
    assert mgr.mapping_stuck_after == kwargs.get("mapping_stuck_after", manager.DEFAULT_MAPPING_STUCK_AFTER)


@pytest.mark.parametrize("seconds", [10**400, 10**20, 1e20], ids=["10**400", "10**20", "1e20"])
def test_a_grace_period_or_resync_too_long_for_a_wait_is_the_longest_wait_not_an_overflow_error(
    seconds: float,
) -> None:
    """``math.isfinite(10 ** 400)`` raised a bare ``OverflowError`` out of the check, and a wait of ``1e20`` s ends
    the thread given it: both are checked and capped as every delay is (okt.delays)."""
    client: Any = StatsOnly()
    mgr = manager.Manager(client, [Widgets], grace_period=seconds, resync=seconds)
    assert mgr.grace_period == delays.LONGEST_WAIT
    assert mgr._resync == delays.LONGEST_WAIT  # what the cache's informers are given


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grace_period": -(10**5000)}, r"^grace_period must be .*, got a negative int of about 5001 digits$"),
        ({"resync": -(10**400)}, r"^resync must be .*, got a negative int of about 401 digits$"),
        ({"stuck_after": True}, r"^stuck_after must be .*, got True$"),
        (
            {"lease_duration": 10**400, "renew_deadline": 10, "retry_period": 2},
            r"^lease_duration must be at most 2147483647 seconds .*, got an int of about 401 digits$",
        ),
        ({"lease_duration": 2**31, "renew_deadline": 10}, r"^lease_duration must be at most 2147483647 seconds"),
        (
            {"lease_duration": 15, "renew_deadline": 10**400},
            r"^need finite numbers of seconds.*, got 15, an int of about 401 digits, 2\.0$",
        ),
    ],
)
def test_seconds_past_a_floats_range_are_refused_in_one_line_when_out_of_bounds(
    kwargs: dict[str, Any], message: str
) -> None:
    client: Any = object()
    with pytest.raises(ValueError, match=message):
        manager.Manager(client, [Widgets], **kwargs)


def test_a_stuck_after_past_a_floats_range_is_a_watchdog_that_never_fires() -> None:
    client: Any = StatsOnly()
    assert manager.Manager(client, [Widgets], stuck_after=10**400).stuck_after == 10**400


def test_a_label_selector_the_api_server_cannot_read_is_refused_before_anything_starts() -> None:
    client: Any = object()
    with pytest.raises(okt.ConfigurationError, match=re.escape("label selector 'app:web'")):
        manager.Manager(client, [Widgets], label_selector="app:web")


@pytest.mark.parametrize("which", ["on_startup", "on_cleanup"])
def test_an_async_generator_hook_given_to_the_manager_is_refused_before_anything_starts(which: str) -> None:
    async def warm_up(*args: Any) -> Any:
        yield None

    client: Any = object()
    with pytest.raises(TypeError, match="is an async generator"):
        manager.Manager(client, [Widgets], **{which: [warm_up]})


class StatsOnly:
    """All a manager touches of its client before it starts: the request counters it exports."""

    def __init__(self) -> None:
        self.stats = kube_client.RequestStats()


def test_the_manager_stopped_line_is_logged_before_join_returns() -> None:
    """okt run prints its one-line error once ``join()`` returned: a "manager stopped" line still being written by the
    shutdown thread then ran into it (``{...}Error: ...`` on one line). A slow log write shows the order."""

    def slow(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
        if event["event"] == "manager stopped":
            time.sleep(0.3)
        return event

    client: Any = StatsOnly()
    stopped = manager.Manager(client, [Widgets], metrics_bind="0")
    with structlog.testing.capture_logs(processors=[slow]) as logged:
        stopped.stop()
        assert stopped.join(5)
        assert "manager stopped" in [event["event"] for event in logged]


def test_a_stop_asked_by_a_signal_handler_while_its_thread_holds_the_managers_lock_returns() -> None:
    """SIGTERM's handler calls stop() on the main thread, between any two of its bytecodes: start() holding the
    manager's lock there (its check that it was not started nor stopped) would have the handler wait for itself."""
    client: Any = StatsOnly()
    mgr = manager.Manager(client, [Widgets], metrics_bind="0")
    returned = threading.Event()

    def interrupted_while_locked() -> None:
        with mgr._lock:  # where start() is when the signal comes
            mgr.stop()
        returned.set()

    threading.Thread(target=interrupted_while_locked, daemon=True).start()
    assert returned.wait(5)
    assert mgr.join(5)


def test_a_start_up_hook_still_running_past_the_grace_period_is_left_running_named_and_its_writes_refused() -> None:
    """On okt run's main thread, the hook held the exit until it returned, however long, and the exit status was 0:
    the stop was no cleaner than one leaving a clean-up hook running."""
    running, released, refused, cleaned = threading.Event(), threading.Event(), [], []

    def backend_up(client: Any) -> None:
        running.set()
        released.wait(15)
        try:
            with fence_mod.sending("create", "configmaps"):
                pass
        except okt.WriteRefused as exc:
            refused.append(exc)

    client: Any = StatsOnly()
    mgr = manager.Manager(
        client,
        [Widgets],
        metrics_bind="0",
        tune_memory=False,
        grace_period=0.3,
        on_startup=[backend_up],
        on_cleanup=[lambda: cleaned.append("cleaned")],
    )
    starting = threading.Thread(target=mgr.start, name="test-start", daemon=True)
    starting.start()
    assert running.wait(5)
    mgr.stop()
    starting.join(3)

    assert not starting.is_alive()
    assert mgr.join(3)
    assert mgr.left_running == (f"the start-up hook {backend_up.__qualname__}",)
    released.set()
    wait_for(lambda: bool(refused), timeout=5, message="the hook's write")
    assert [str(exc) for exc in refused] == [f"create configmaps not sent: {startup.LEFT_RUNNING}"]
    assert cleaned == []  # the hook did not return: nothing of it to undo
    assert mgr.cache is None and mgr.controllers == []


def test_a_clean_up_hook_left_running_that_raises_later_is_in_failed_cleanups(api: Any) -> None:
    """Left running, then failing: the stop was not clean for both reasons, and a program running the manager reads
    the failure where it reads the others' (it was only logged)."""
    running, released = threading.Event(), threading.Event()

    def deregister() -> None:
        running.set()
        released.wait(15)
        raise RuntimeError("the registry did not answer")

    api.stats = kube_client.RequestStats()
    api.resolve = lambda api_version, kind: kinds.Kind(api_version, kind, "widgets")
    mgr = manager.Manager(
        api, [Widgets], metrics_bind="0", tune_memory=False, grace_period=0.3, on_cleanup=[deregister]
    )
    mgr.start()
    mgr.stop()
    assert mgr.join(5)
    assert running.is_set()
    left_running, failed_at_stop = mgr.left_running, mgr.failed_cleanups

    released.set()
    wait_for(lambda: bool(mgr.failed_cleanups), timeout=5, message="the failure of the hook left running")

    assert left_running == (f"the clean-up hook {deregister.__qualname__}",)
    assert failed_at_stop == ()
    assert mgr.failed_cleanups == (
        f"the clean-up hook {deregister.__qualname__} failed: RuntimeError: the registry did not answer",
    )


def test_a_stopped_manager_cannot_be_started() -> None:
    client: Any = StatsOnly()
    stopped = manager.Manager(client, [Widgets], metrics_bind="0")
    stopped.stop()
    assert stopped.join(5)
    assert not stopped.running
    with pytest.raises(RuntimeError, match="never after stop"):
        stopped.start()


class ChildGadget(okt.MutableResource):
    api_version = "example.io/v1"
    kind = "Gadget"


class Parents(okt.Reconciler):
    """Owns Gadgets, which another reconciler of the same process has as its primary."""

    api_version = "example.io/v1"
    kind = "Parent"
    plural = "parents"
    owns = (ChildGadget,)


class Gadgets(okt.Reconciler):
    api_version = "example.io/v1"
    kind = "Gadget"
    plural = "gadgets"


def test_a_primary_whose_status_okt_applies_keeps_its_status_owners_when_another_reconciler_owns_its_kind(
    api: Any, obj: Any
) -> None:
    """Applying the status needs who owns which status field (what okt applied before and no longer states would be
    dropped by the server otherwise): the store keeps that of a status-applying primary's kind, whichever of the
    reconcilers watching the kind starts it."""
    gadget = kinds.Kind("example.io/v1", "Gadget", "gadgets")
    by_type = {(k.api_version, k.kind): k for k in (gadget, kinds.Kind("example.io/v1", "Parent", "parents"))}
    api.stats = kube_client.RequestStats()
    api.resolve = lambda api_version, kind: by_type[(api_version, kind)]
    owners = [{"manager": "okt", "operation": "Apply", "fieldsV1": {"f:status": {"f:phase": {}}}}]
    api.put(gadget, obj(gadget, "g", managedFields=owners))
    assert Gadgets.applies_status()

    def reconcile(*args: Any, **kwargs: Any) -> stepper.Run:
        return stepper.Run(path=(okt.State.End,), outcome=results_mod.Outcome.done(), results=results_mod.Results())

    runner = manager.Manager(api, [Parents, Gadgets], metrics_bind="0", reconcile=reconcile, tune_memory=False)
    runner.start()
    try:
        assert runner.cache is not None
        assert runner.cache.wait_for_sync(5)
        stored = runner.cache.get(gadget, "g", "ns")
    finally:
        runner.stop()
        runner.join(5)
    assert stored is not None
    assert writer.status_ownership(stored, "okt").fields == {"phase"}


class MirroredWidgets(Widgets):
    cluster_operator = "toys"


class MirroredGadgets(Gadgets):
    cluster_operator = "toys"


def test_two_kinds_mirrored_onto_one_cluster_operator_are_refused_when_the_manager_starts() -> None:
    """Each kind's mirror sums up its own custom resources only: the last reconcile of one kind would overwrite the
    other's conditions and related objects (a Degraded kind would no longer show)."""
    client: Any = StatsOnly()
    runner = manager.Manager(client, [MirroredWidgets, MirroredGadgets], metrics_bind="0", tune_memory=False)
    message = (
        r"^MirroredWidgets \(example\.io/v1 Widget\) and MirroredGadgets \(example\.io/v1 Gadget\) both declare "
        r"cluster_operator = 'toys': .*$"
    )
    try:
        with pytest.raises(okt.ConfigurationError, match=message):
            runner.start()
    finally:
        runner.stop()
        runner.join(5)


RECORDS_APART = {"status": "annotations", "persistence": okt.Persistence.ANNOTATIONS}


class NewerWidgets(okt.Reconciler):
    """Widgets too, through another version of their CRD: the same objects."""

    api_version = "example.io/v2"
    kind = "Widget"
    plural = "widgets"


@pytest.mark.parametrize(
    ("first", "second", "place"),
    [
        pytest.param(Widgets, NewerWidgets, "prefix 'okt.io'", id="same prefix"),
        pytest.param(
            type("Annotated", (Widgets,), {"status": "annotations"}),
            type("AlsoAnnotated", (NewerWidgets,), {"status": "annotations"}),
            "prefix 'okt.io'",
            id="same prefix, annotations",
        ),
        pytest.param(
            Widgets, type("Prefixed", (NewerWidgets,), {"prefix": "b.example.com"}), "status.conditions", id="status"
        ),
        pytest.param(
            type("Old", (Widgets,), {**RECORDS_APART, "prefix": "a.example.com"}),
            type(
                "Taking",
                (NewerWidgets,),
                {**RECORDS_APART, "prefix": "b.example.com", "legacy_prefixes": ("a.example.com",)},
            ),
            "prefix 'a.example.com'",
            id="a legacy prefix of one is the prefix of the other",
        ),
    ],
)
def test_two_reconcilers_of_one_kind_keeping_records_in_one_place_are_refused_when_the_manager_starts(
    first: type[okt.Reconciler], second: type[okt.Reconciler], place: str
) -> None:
    """Each would overwrite the other's error count, lifecycle phase and conditions on every object both select."""
    client: Any = StatsOnly()
    runner = manager.Manager(client, [first, second], metrics_bind="0", tune_memory=False)
    message = (
        rf"^{first.__name__} and {second.__name__} both reconcile Widget \(example\.io\) and keep their records in "
        rf"the same place \({re.escape(place)}\): .*$"
    )
    try:
        with pytest.raises(okt.ConfigurationError, match=message):
            runner.start()
    finally:
        runner.stop()
        runner.join(5)


def test_two_reconcilers_of_one_kind_each_with_its_own_records_and_name_start(api: Any) -> None:
    widget = kinds.Kind("example.io/v1", "Widget", "widgets")
    api.stats = kube_client.RequestStats()
    api.resolve = lambda api_version, kind: widget
    first = type("First", (Widgets,), {**RECORDS_APART, "prefix": "a.example.com"})
    second = type("Second", (Widgets,), {**RECORDS_APART, "prefix": "b.example.com", "name": "widget-b"})
    runner = manager.Manager(api, [first, second], metrics_bind="0", tune_memory=False)
    try:
        runner.start()
        assert [controller.name for controller in runner.controllers] == ["widget", "widget-b"]
    finally:
        runner.stop()
        runner.join(5)


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        pytest.param(
            type("First", (Widgets,), {**RECORDS_APART, "prefix": "a.example.com"}),
            type("Second", (NewerWidgets,), {**RECORDS_APART, "prefix": "b.example.com"}),
            "'widget' (by default: the kind, lowercased)",
            id="one kind, default names",
        ),
        pytest.param(
            type("First", (Widgets,), {"name": "toys"}),
            type("Second", (Gadgets,), {"name": "toys"}),
            "'toys'",
            id="two kinds, one name set",
        ),
    ],
)
def test_two_reconcilers_under_one_controller_name_are_refused_when_the_manager_starts(
    first: type[okt.Reconciler], second: type[okt.Reconciler], named: str
) -> None:
    """The controller's name labels its metrics, logs and Events, and names its webhooks' paths and its cache indexes:
    under one name, each would be counted and logged as the other, and one's webhooks and indexes would be lost."""
    client: Any = StatsOnly()
    runner = manager.Manager(client, [first, second], metrics_bind="0", tune_memory=False)
    message = rf"^First and Second are both named {re.escape(named)}: .* set name on one of them.*$"
    try:
        with pytest.raises(okt.ConfigurationError, match=message):
            runner.start()
    finally:
        runner.stop()
        runner.join(5)


def test_a_start_that_fails_has_shut_down_when_it_raises() -> None:
    """okt run prints the error of a start that failed (an unserved kind, a refused declaration) at once: the shutdown
    the failure began, in another thread, is over by then, its "manager stopped" line written before that one."""

    def slow(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
        if event["event"] == "manager stopped":
            time.sleep(0.3)
        return event

    client: Any = StatsOnly()
    runner = manager.Manager(client, [MirroredWidgets, MirroredGadgets], metrics_bind="0", tune_memory=False)
    with structlog.testing.capture_logs(processors=[slow]) as logged:
        with pytest.raises(okt.ConfigurationError):
            runner.start()
        assert runner.join(0)
        assert "manager stopped" in [event["event"] for event in logged]


def test_a_webhook_port_another_process_holds_stops_the_start_before_the_probes_are_served() -> None:
    """Both ports are bound before either is served: the probes were served first, and "serving metrics and probes"
    logged above okt run's one line of the port in use."""
    client: Any = StatsOnly()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        runner = manager.Manager(
            client,
            [JudgedGadgets],
            metrics_bind="127.0.0.1:0",
            tune_memory=False,
            webhooks=webhook_server.Options(host="127.0.0.1", port=port),
        )
        refused = pytest.raises(okt.ConfigurationError, match=f"cannot serve webhooks on 127.0.0.1:{port}: ")
        with structlog.testing.capture_logs() as logged, refused:
            runner.start()
    assert runner.join(0)
    assert [event["event"] for event in logged if event["log_level"] != "debug"] == []


def test_a_probe_server_given_serving_is_closed_by_a_start_that_fails() -> None:
    """okt run answers the probes while its API server does not answer yet and hands that server to the manager: a
    start that fails (here its webhook port, held by another process) closes it, port and thread, and says nothing
    above okt run's one line."""
    client: Any = StatsOnly()
    serving = probe_server.ProbeServer(
        probe_server.listen(("127.0.0.1", 0)), None, lambda: (True, "ok"), lambda: (False, "starting")
    )
    serving.start()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        runner = manager.Manager(
            client,
            [JudgedGadgets],
            metrics_bind=f"127.0.0.1:{serving.port}",
            metrics_listener=serving,
            tune_memory=False,
            webhooks=webhook_server.Options(host="127.0.0.1", port=port),
        )
        with structlog.testing.capture_logs() as logged, pytest.raises(okt.ConfigurationError):
            runner.start()
    assert runner.join(0)
    assert runner.probes is serving
    assert [event["event"] for event in logged if event["log_level"] != "debug"] == []
    socket.create_server(("127.0.0.1", serving.port)).close()  # released
    assert not [t for t in threading.enumerate() if t.name == "okt-probes"]


def test_readyz_is_not_ready_before_the_watches_are_started(api: Any) -> None:
    """Between the cache's creation and the start of the first informer, no informer exists to be unsynced: the
    controllers are still being built (discovery may take seconds), and ``/readyz`` must not say ready then."""
    by_type = {
        (k.api_version, k.kind): k
        for k in (kinds.Kind("example.io/v1", "Gadget", "gadgets"), kinds.Kind("example.io/v1", "Parent", "parents"))
    }
    api.stats = kube_client.RequestStats()
    answers: list[tuple[int, str]] = []

    def resolve(api_version: str, kind: str) -> kinds.Kind:
        # Discovery, while the manager builds its controllers: what does the readiness probe say now?
        if runner.probes is not None and runner.cache is not None:
            try:
                with urllib.request.urlopen(runner.probes.url + "/readyz", timeout=5) as response:
                    answers.append((response.status, response.read().decode()))
            except urllib.error.HTTPError as exc:
                answers.append((exc.code, exc.read().decode()))
        return by_type[(api_version, kind)]

    api.resolve = resolve

    def reconcile(*args: Any, **kwargs: Any) -> stepper.Run:
        return stepper.Run(path=(okt.State.End,), outcome=results_mod.Outcome.done(), results=results_mod.Results())

    runner = manager.Manager(api, [Parents], metrics_bind="127.0.0.1:0", reconcile=reconcile, tune_memory=False)
    runner.start()
    try:
        assert runner.cache is not None and runner.cache.wait_for_sync(5)
    finally:
        runner.stop()
        runner.join(5)
    assert answers
    assert all(status == 503 for status, _ in answers), answers


class ConvertedGadgets(Gadgets):
    converters = {("v1", "v2"): lambda spec: spec, ("v2", "v1"): lambda spec: spec}


class JudgedGadgets(Gadgets):
    def check(self, ctx: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("reconciler", "expected"),
    [
        pytest.param(ConvertedGadgets, (200, "ok (caches not synced yet)"), id="conversion"),
        pytest.param(JudgedGadgets, (503, "not ready: caches not synced"), id="admission only"),
    ],
)
def test_readyz_waits_for_the_caches_unless_the_operator_serves_a_conversion_webhook(
    api: Any, reconciler: type[okt.Reconciler], expected: tuple[int, str]
) -> None:
    """Listing a kind whose stored objects are in another version waits for the API server to call the conversion
    webhook: a pod out of its Service's endpoints until its caches sync would never be called, nor sync. Admission
    is never needed for a list: without a conversion webhook, ready still means synced."""
    gadget = kinds.Kind("example.io/v1", "Gadget", "gadgets")
    api.stats = kube_client.RequestStats()
    api.resolve = lambda api_version, kind: gadget
    # What the list answers while the conversion it needs cannot be made.
    api.refusal = okt.ApiError.from_status(500, "InternalError", "conversion webhook for example.io/v1 failed")
    runner = manager.Manager(
        api,
        [reconciler],
        metrics_bind="127.0.0.1:0",
        tune_memory=False,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    runner.start()
    try:
        assert runner.probes is not None and runner.cache is not None
        deadline = time.monotonic() + 10
        while api.refused < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert api.refused >= 2 and not runner.cache.synced
        try:
            with urllib.request.urlopen(runner.probes.url + "/readyz", timeout=5) as response:
                answer = (response.status, response.read().decode())
        except urllib.error.HTTPError as exc:
            answer = (exc.code, exc.read().decode())
    finally:
        runner.stop()
        runner.join(5)
    assert answer == expected


class HangingGadgets(Gadgets):
    returning = threading.Event()

    def check(self, ctx: Any) -> None:
        assert self.returning.wait(60), "the test never let the check return"


def test_healthz_fails_naming_the_webhook_server_while_every_connection_is_held_by_a_hook_that_does_not_return(
    api: Any,
) -> None:
    gadget = kinds.Kind("example.io/v1", "Gadget", "gadgets")
    api.stats = kube_client.RequestStats()
    api.resolve = lambda api_version, kind: gadget
    api.refusal = okt.ApiError.from_status(500, "InternalError", "not served")  # no cache needed for /healthz
    HangingGadgets.returning.clear()
    runner = manager.Manager(
        api,
        [HangingGadgets],
        metrics_bind="127.0.0.1:0",
        tune_memory=False,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0, max_connections=1, request_timeout=1.0),
    )
    runner.start()
    try:
        assert runner.probes is not None and runner.webhook_server is not None
        hung = send_review(runner.webhook_server, "/validate/gadget")
        try:
            hung.settimeout(30)
            assert hung.recv(1) == b""  # cut at the request timeout; its hook goes on
            status, body = probe(runner.probes.url + "/healthz")
            assert status == 503
            assert body.startswith("not ready: the webhook server accepts no connection: ")
            HangingGadgets.returning.set()
            wait_for(lambda: probe(runner.probes.url + "/healthz") == (200, "ok"), timeout=30, message="healthy again")
        finally:
            hung.close()
    finally:
        HangingGadgets.returning.set()
        runner.stop()
        runner.join(5)


def probe(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def send_review(server: webhook_server.WebhookServer, path: str) -> ssl.SSLSocket:
    """A connection that sent a review of a Gadget to ``path`` and reads no answer."""
    context = ssl.create_default_context(cadata=server.certificates.ca_pem.decode())
    sent = context.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1")
    obj = {"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "ns"}, "spec": {}}
    request = {"uid": "hung", "operation": "CREATE", "object": obj}
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sent.sendall(head.encode() + body)
    return sent
