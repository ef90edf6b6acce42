"""The controller's pure rules: which events enqueue what, and how an outcome drives the queue."""

from __future__ import annotations

import io
import itertools
import json
import pathlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

import pydantic
import pytest
import structlog
import structlog.testing
import yaml

import okt
from okt import errors, names
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.reconciler import refused_reports
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import changes, deletions, logs, workqueue
from okt.runtime import controller as controller_mod
from okt.status import writer as status_writer
from okt.testing import FakeClient, wait_for

WIDGET = kinds.Kind("example.io/v1", "Widget", "widgets")
CLUSTER_WIDGET = kinds.Kind("example.io/v1", "ClusterWidget", "clusterwidgets", namespaced=False)
NO_JITTER = backoff_mod.Backoff(base=1.0, factor=2.0, cap=100.0, jitter=0.0)
Outcome = results_mod.Outcome


def primary(**meta: Any) -> dict[str, Any]:
    base = {"name": "w", "namespace": "ns", "generation": 1, "resourceVersion": "10"}
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {**base, **meta}, "status": {"phase": "A"}}


@pytest.mark.parametrize(
    ("change", "matters"),
    [
        ({"metadata": {"resourceVersion": "11"}}, False),
        ({"status": {"phase": "B"}}, False),
        ({"metadata": {"generation": 2}}, True),
        ({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}, True),
        ({"metadata": {"finalizers": ["x.io/cleanup"]}}, True),
        ({"metadata": {"labels": {"tier": "gold"}}}, True),
        ({"metadata": {"annotations": {"note": "hi"}}}, True),
        ({"metadata": {"labels": {}}}, False),
        ({"metadata": {"managedFields": [{"manager": "x"}]}}, False),
    ],
)
def test_a_modified_primary_matters_only_for_spec_deletion_finalizer_label_or_annotation_changes(
    change: dict[str, Any], matters: bool
) -> None:
    old = primary()
    new = {**old, **{k: v for k, v in change.items() if k != "metadata"}}
    new["metadata"] = {**old["metadata"], **change.get("metadata", {})}
    assert changes.primary_change_matters("MODIFIED", new, old) is matters


@pytest.mark.parametrize(
    ("change", "matters"),
    [
        ({"data": {"level": "debug"}}, True),
        ({"binaryData": {"blob": "AA=="}}, True),
        ({"immutable": True}, True),
        ({"status": {"loadBalancer": {}}}, False),
        ({"metadata": {"resourceVersion": "11"}}, False),
    ],
)
def test_a_modified_primary_of_a_kind_without_a_generation_matters_for_a_change_outside_metadata_and_status(
    change: dict[str, Any], matters: bool
) -> None:
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "10"}, "data": {}}
    new = {**old, **{k: v for k, v in change.items() if k != "metadata"}}
    new["metadata"] = {**old["metadata"], **change.get("metadata", {})}
    assert changes.primary_change_matters("MODIFIED", new, old) is matters


@pytest.mark.parametrize(("event_type", "old"), [("ADDED", None), ("RESYNC", primary()), ("MODIFIED", None)])
def test_added_resync_and_modified_without_the_old_object_always_matter(
    event_type: str, old: dict[str, Any] | None
) -> None:
    assert changes.primary_change_matters(event_type, primary(), old)


@pytest.mark.parametrize(
    ("kind", "obj", "expected"),
    [
        (WIDGET, primary(), ("ns", "w")),
        (CLUSTER_WIDGET, {"metadata": {"name": "c"}}, (None, "c")),
        (CLUSTER_WIDGET, {"metadata": {"name": "c", "namespace": "ignored"}}, (None, "c")),
    ],
)
def test_the_key_of_a_primary_is_its_namespace_and_name(
    kind: kinds.Kind, obj: dict[str, Any], expected: controller_mod.QueueKey
) -> None:
    assert controller_mod.key_of(obj, kind.namespaced) == expected


def owner_w() -> dict[str, Any]:
    """The Widget ``ns/w`` (uid ``u``) that :func:`child` points at, as the API server has it."""
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns", "uid": "u"}}


@pytest.mark.parametrize(
    ("stored", "enqueued"),
    [
        (None, False),
        ({"name": "w", "namespace": "ns", "uid": "another"}, False),
        ({"name": "w", "namespace": "ns", "uid": "u"}, True),
    ],
    ids=["owner gone", "owner recreated", "owner there"],
)
def test_a_child_event_wakes_only_an_owner_the_cache_holds_with_that_uid(
    offline_client: Any, api: Any, stored: dict[str, Any] | None, enqueued: bool
) -> None:
    if stored is not None:
        api.put(WIDGET, {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": stored})
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)

    controller.on_child_event("DELETED", child(), None)

    assert len(controller.queue) == (1 if enqueued else 0)


def child(namespace: str = "ns", **ref: Any) -> dict[str, Any]:
    reference = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True, **ref}
    return {"metadata": {"name": "c", "namespace": namespace, "ownerReferences": [reference]}}


@pytest.mark.parametrize(
    ("kind", "obj", "expected"),
    [
        (WIDGET, child(), ("ns", "w")),
        (WIDGET, child(apiVersion="example.io/v2beta1"), ("ns", "w")),
        (WIDGET, child(apiVersion="other.io/v1"), None),
        (WIDGET, child(kind="Gadget"), None),
        (WIDGET, child(controller=False), None),
        (WIDGET, {"metadata": {"name": "orphan", "namespace": "ns"}}, None),
        (CLUSTER_WIDGET, child(kind="ClusterWidget", name="cw"), (None, "cw")),
    ],
)
def test_a_child_maps_to_its_controller_owner_of_the_primary_kind(
    kind: kinds.Kind, obj: dict[str, Any], expected: controller_mod.QueueKey | None
) -> None:
    assert controller_mod.owner_key(obj, kind) == expected


def throttled(retry_after: float | None) -> Exception:
    error = errors.ApiError.from_status(429, "TooManyRequests", "slow down")
    assert isinstance(error, errors.TooManyRequests)
    error.retry_after = retry_after
    return error


def test_a_persistent_conflict_backs_off_instead_of_retrying_five_times_a_second() -> None:
    clock = Clock()
    queue: workqueue.WorkQueue[Any] = workqueue.WorkQueue(NO_JITTER, clock=clock)
    waits = []
    for _ in range(5):
        controller_mod.apply_outcome(queue, ("ns", "w"), Outcome.retry(RuntimeError("409"), delay=0.2))
        waits.append(ready_at(queue, clock))
        queue.get(timeout=0)
        queue.done(("ns", "w"))
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def queue_after(outcome: Outcome, failures_before: int = 0) -> tuple[workqueue.WorkQueue[Any], Clock]:
    clock = Clock()
    queue: workqueue.WorkQueue[Any] = workqueue.WorkQueue(NO_JITTER, clock=clock)
    for _ in range(failures_before):
        queue.add_rate_limited(("ns", "w"))
    clock.now += 1000
    queue.get(timeout=0)
    queue.done(("ns", "w"))
    controller_mod.apply_outcome(queue, ("ns", "w"), outcome)
    return queue, clock


def ready_at(queue: workqueue.WorkQueue[Any], clock: Clock) -> float | None:
    """How many seconds from now the key becomes ready (None if it never does within an hour)."""
    start = clock.now
    for tenths in range(0, 36000):
        clock.now = start + tenths / 10
        if len(queue):
            return tenths / 10
    return None


@pytest.mark.parametrize(
    ("outcome", "failures_after", "delay"),
    [
        (Outcome.done(), 0, None),
        (Outcome.requeue_after(30), 0, 30.0),
        (Outcome.retry(RuntimeError("x")), 3, 4.0),
        (Outcome.retry(RuntimeError("x"), delay=7), 3, 7.0),
        (Outcome.retry(RuntimeError("x"), delay=0.2), 3, 4.0),
        (Outcome.retry(throttled(retry_after=9)), 3, 9.0),
        (Outcome.retry(throttled(retry_after=None)), 3, 4.0),
        (Outcome.give_up("no"), 0, None),
    ],
)
def test_the_outcome_drives_the_queue(outcome: Outcome, failures_after: int, delay: float | None) -> None:
    queue, clock = queue_after(outcome, failures_before=2)
    assert queue.failures(("ns", "w")) == failures_after
    assert ready_at(queue, clock) == delay


def test_a_retry_the_api_server_asks_to_wait_for_longer_than_six_hours_waits_six_hours() -> None:
    """Every requeue delay is capped at ``MAX_DELAY``; a ``Retry-After`` of a day (a proxy in front of the API
    server says what it likes) must not keep the key out of the queue for that day."""
    queue, clock = queue_after(Outcome.retry(throttled(retry_after=86400)))
    clock.now += results_mod.MAX_DELAY
    assert len(queue) == 1


# -- a controller without a cluster ----------------------------------------------------------------------------


class Widgets(okt.Reconciler):
    api_version = "example.io/v1"
    kind = "Widget"
    plural = "widgets"


@pytest.fixture
def offline_client(tmp_path: pathlib.Path) -> kube_client.Client:
    """A client whose server does not exist: nothing in these tests may reach it."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return kube_client.Client.from_kubeconfig(path)


def fake_run(outcome: Outcome) -> stepper.Run:
    return stepper.Run(path=(okt.State.End,), outcome=outcome, results=results_mod.Results())


def make_controller(
    client: kube_client.Client, reconcile: Callable[..., stepper.Run], reads: Any = None
) -> controller_mod.Controller:
    """A controller whose cache reads through ``reads`` (the scripted API) or the offline client."""
    cache = cache_mod.Cache(reads if reads is not None else client)
    return controller_mod.Controller(Widgets, client, cache, reconcile=reconcile, backoff=NO_JITTER)


def test_a_reconcile_that_raises_is_retried_with_backoff_and_counted_as_an_error(
    offline_client: kube_client.Client,
) -> None:
    def explode(*args: Any, **kwargs: Any) -> stepper.Run:
        raise RuntimeError("bug in the reconcile")

    controller = make_controller(offline_client, explode)
    outcome = controller.process(("ns", "w"))
    assert outcome.kind is results_mod.OutcomeKind.RETRY
    assert isinstance(outcome.error, RuntimeError)
    assert controller.queue.failures(("ns", "w")) == 1
    metric = controller.metrics.registry.get_sample_value
    assert metric("okt_reconcile_total", {"controller": "widget", "result": "error"}) == 1
    assert metric("okt_reconcile_errors_total", {"controller": "widget"}) == 1
    assert metric("okt_active_workers", {"controller": "widget"}) == 0


def test_the_reconcile_gets_the_key_the_cache_and_the_primary_kind(
    offline_client: kube_client.Client, api: Any, obj: Any
) -> None:
    api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "c"))
    calls: list[tuple[Any, ...]] = []

    def record(reconciler: Any, client: Any, reader: Any, namespace: Any, name: Any, **kwargs: Any) -> stepper.Run:
        read = reader.get(kinds.CONFIG_MAP, "c", "ns")
        calls.append((type(reconciler), client, read["metadata"]["name"], namespace, name, kwargs["kind"]))
        return fake_run(Outcome.done())

    controller = make_controller(offline_client, record, reads=api)
    controller.process(("ns", "w"))
    assert calls == [(Widgets, offline_client, "c", "ns", "w", controller.kind)]  # the reader reads the cache
    assert (
        controller.metrics.registry.get_sample_value("okt_reconcile_total", {"controller": "widget", "result": "done"})
        == 1
    )


@pytest.mark.parametrize(
    ("event_type", "old", "still_stored", "enqueued"),
    [
        ("ADDED", None, False, True),
        ("MODIFIED", primary(), False, False),
        ("MODIFIED", primary(generation=0), False, True),
        ("DELETED", None, False, False),
        ("DELETED", None, True, True),
    ],
)
def test_primary_events_enqueue_by_the_rules(
    offline_client: kube_client.Client,
    api: Any,
    event_type: str,
    old: dict[str, Any] | None,
    still_stored: bool,
    enqueued: bool,
) -> None:
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)
    if still_stored:
        api.put(WIDGET, primary())
    controller.on_primary_event(event_type, primary(), old)
    assert len(controller.queue) == (1 if enqueued else 0)


@pytest.mark.parametrize("event_type", ["ADDED", "DELETED"])
def test_a_child_added_or_deleted_enqueues_its_owner_at_once(
    offline_client: kube_client.Client, api: Any, event_type: str
) -> None:
    api.put(WIDGET, owner_w())
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)
    controller.on_child_event(event_type, child(), None)
    controller.on_child_event(event_type, child(kind="Gadget"), None)
    assert controller.queue.get(timeout=0) == ("ns", "w")
    assert controller.queue.get(timeout=0) is None


@pytest.mark.parametrize(
    "now",
    [
        {"metadata": {"name": "c", "namespace": "ns"}},
        child(name="other", uid="u2"),
    ],
    ids=["owner reference removed", "controller owner changed"],
)
def test_a_child_that_stopped_pointing_at_its_owner_wakes_that_owner(
    offline_client: kube_client.Client, api: Any, now: dict[str, Any]
) -> None:
    """The owner a child named before a change has lost it (drift its reconcile repairs): it is reconciled, as the
    owner the child names now would be."""
    api.put(WIDGET, owner_w())
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)
    controller.on_child_event("MODIFIED", now, child())
    assert controller.queue.get(timeout=5) == ("ns", "w")


def test_a_primary_deleted_and_created_again_while_the_watch_was_down_is_reconciled(
    offline_client: kube_client.Client, api: Any
) -> None:
    """The new object has the spec, labels and generation of the old: it is another object all the same, with none
    of the children the garbage collector took with the old one."""
    api.put(WIDGET, primary(uid="u1"))
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)
    controller.watch()
    try:
        assert controller.queue.get(timeout=5) == ("ns", "w")
        controller.queue.done(("ns", "w"))
        api.remove(WIDGET, "ns", "w")
        api.put(WIDGET, primary(uid="u2"))
        api.emit(WIDGET, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired"}, namespace=None)
        assert controller.queue.get(timeout=5) == ("ns", "w")
    finally:
        controller.cache.stop()


def test_a_primary_deleted_and_created_again_while_the_watch_was_down_starts_without_the_old_ones_backoff(
    offline_client: kube_client.Client, api: Any
) -> None:
    """The relist tells the old object's deletion with the new one already stored: the failures counted for the old
    object, and its retry due after them, are not the new object's (kept, its first failure waited out the backoff
    the old one had climbed, up to minutes)."""
    api.put(WIDGET, primary(uid="u1"))
    key = ("ns", "w")
    controller = make_controller(
        offline_client, lambda *a, **k: fake_run(Outcome.retry(RuntimeError("broken"))), reads=api
    )
    controller.watch()
    try:
        assert controller.queue.get(timeout=5) == key
        for _ in range(5):
            controller.process(key)
        controller.queue.done(key)
        assert controller.queue.failures(key) == 5  # the old object's next retry is 16 s away

        api.remove(WIDGET, "ns", "w")
        api.put(WIDGET, primary(uid="u2"))
        api.emit(WIDGET, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired"}, namespace=None)
        assert controller.queue.get(timeout=5) == key  # the new object, at once
        assert controller.queue.failures(key) == 0
        assert controller.process(key).kind is results_mod.OutcomeKind.RETRY
        controller.queue.done(key)
        assert (controller.queue.failures(key), controller.queue.delayed_count) == (1, 1)
        assert controller.queue.get(timeout=5) == key  # retried after the first failure's second, not 32 s
    finally:
        controller.cache.stop()


def test_a_spec_change_the_watch_missed_before_okts_status_write_is_reconciled_after_the_relist(
    offline_client: kube_client.Client, api: Any
) -> None:
    """The watch is down; someone changes the spec, a reconcile of the old read writes the status (its answer goes
    to the store), someone else writes the status: the relist's change holds the spec change, seen from the watch's
    last word rather than from okt's answer (which already carries the new generation)."""
    first = api.put(WIDGET, primary(uid="u1"))
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()), reads=api)
    controller.watch()
    try:
        assert controller.queue.get(timeout=5) == ("ns", "w")
        controller.queue.done(("ns", "w"))
        theirs = api.put(WIDGET, {**first, "metadata": {**first["metadata"], "generation": 2}})
        ours = api.put(WIDGET, {**theirs, "status": {"phase": "B"}})
        controller.cache.observe(ours)
        api.put(WIDGET, {**ours, "status": {"phase": "C"}})
        api.emit(WIDGET, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired"}, namespace=None)
        assert controller.queue.get(timeout=5) == ("ns", "w")
    finally:
        controller.cache.stop()


def test_a_burst_of_child_modifications_is_one_reconcile_after_the_delay(
    offline_client: kube_client.Client, api: Any
) -> None:
    class Patient(Widgets):
        child_change_delay = 0.3

    api.put(WIDGET, owner_w())
    cache = cache_mod.Cache(api)
    controller = controller_mod.Controller(Patient, offline_client, cache, reconcile=lambda *a, **k: None)
    for _ in range(3):
        controller.on_child_event("MODIFIED", child(), None)
    assert controller.queue.get(timeout=0) is None  # not yet: more changes may follow
    assert controller.queue.get(timeout=5) == ("ns", "w")
    controller.queue.done(("ns", "w"))
    assert controller.queue.get(timeout=0.5) is None  # the three changes were one entry


def deployment(**changes: Any) -> dict[str, Any]:
    """A Deployment as its controller leaves it after creation: revision annotation, status with no pod ready."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "namespace": "ns",
            "generation": 1,
            "resourceVersion": "10",
            "annotations": {"deployment.kubernetes.io/revision": "1", "okt.io/okt-hash": "abc"},
        },
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2},
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = obj
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value
    return obj


class Workload(okt.DeploymentResource):
    pass


class PlainDeployment(okt.MutableResource):
    api_version = "apps/v1"
    kind = "Deployment"


@pytest.mark.parametrize(
    ("change", "matters"),
    [
        ({"metadata__resourceVersion": "11"}, False),
        ({"status__conditions": [{"type": "Progressing", "reason": "NewReplicaSetAvailable"}]}, False),
        ({"status__unavailableReplicas": 1, "metadata__resourceVersion": "11"}, False),
        ({"status__observedGeneration": 0}, False),  # progressing either way: updated 2 of 2, none ready
        ({"metadata__annotations": {"deployment.kubernetes.io/revision": "2", "okt.io/okt-hash": "abc"}}, False),
        ({"status__readyReplicas": 1}, True),
        ({"status__availableReplicas": 2, "status__readyReplicas": 2}, True),
        ({"status__updatedReplicas": 1}, True),
        ({"spec__replicas": 3, "metadata__generation": 2}, True),
        ({"metadata__annotations": {"deployment.kubernetes.io/revision": "1", "okt.io/okt-hash": "edited"}}, True),
        ({"metadata__labels": {"team": "b"}}, True),
        ({"metadata__deletionTimestamp": "2024-01-01T00:00:00Z"}, True),
    ],
)
def test_a_workload_child_wakes_its_owner_only_when_its_readiness_or_its_desired_state_changed(
    change: dict[str, Any], matters: bool
) -> None:
    assert changes.child_change_matters("MODIFIED", deployment(**change), deployment(), [Workload]) is matters


@pytest.mark.parametrize(
    ("classes", "matters"),
    [([PlainDeployment], True), ([Workload, PlainDeployment], True), ([Workload], False), ([], True)],
)
def test_a_child_status_change_matters_to_a_resource_class_that_reads_the_whole_status(
    classes: list[type[okt.Resource]], matters: bool
) -> None:
    changed = deployment(status__unavailableReplicas=1)
    assert changes.child_change_matters("MODIFIED", changed, deployment(), classes) is matters


@pytest.mark.parametrize(("event_type", "old"), [("ADDED", None), ("DELETED", None), ("MODIFIED", None)])
def test_a_child_added_deleted_or_modified_without_the_old_object_always_matters(
    event_type: str, old: dict[str, Any] | None
) -> None:
    assert changes.child_change_matters(event_type, deployment(), old, [Workload])


def test_a_workloads_status_rewrite_enqueues_nothing_and_a_readiness_change_its_owner(
    offline_client: kube_client.Client, api: Any
) -> None:
    class Owner(Widgets):
        owns: ClassVar = [Workload]
        child_change_delay = 0.0

    ref = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
    before = deployment(metadata__ownerReferences=[ref])
    rewritten = deployment(metadata__ownerReferences=[ref], status__conditions=[{"type": "Available"}])
    ready = deployment(metadata__ownerReferences=[ref], status__readyReplicas=1)
    api.put(WIDGET, owner_w())
    controller = controller_mod.Controller(Owner, offline_client, cache_mod.Cache(api), reconcile=lambda *a, **k: None)
    controller.on_child_event("MODIFIED", rewritten, before)
    assert controller.queue.get(timeout=0.2) is None
    controller.on_child_event("MODIFIED", ready, rewritten)
    assert controller.queue.get(timeout=2) == ("ns", "w")


def test_a_child_whose_status_view_raises_wakes_its_owner_and_is_logged_once_by_kind_and_name(
    offline_client: kube_client.Client, api: Any
) -> None:
    # A view that cannot read a child cannot tell the change is harmless: a reconcile (idempotent) is the safe answer.
    class Fragile(okt.DeploymentResource):
        @classmethod
        def status_view(cls, live: Any) -> Any:
            return live["status"]["readyReplicas"]

    class Owner(Widgets):
        owns: ClassVar = [Fragile]
        child_change_delay = 0.0

    ref = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
    before = deployment(metadata__ownerReferences=[ref], metadata__name="web")
    rewritten = deployment(metadata__ownerReferences=[ref], metadata__name="web", status__unavailableReplicas=7)
    api.put(WIDGET, owner_w())
    controller = controller_mod.Controller(Owner, offline_client, cache_mod.Cache(api), reconcile=lambda *a, **k: None)
    with structlog.testing.capture_logs() as logged:
        controller.on_child_event("MODIFIED", rewritten, before)
    assert controller.queue.get(timeout=2) == ("ns", "w")
    (line,) = [entry for entry in logged if "status_view" in entry["event"]]
    assert (line["kind"], line["namespace"], line["name"]) == ("Deployment.apps/v1", "ns", "web")
    assert line["resource"] == "Fragile"
    assert line["log_level"] == "error"
    assert "7" not in json.dumps(line, default=str)  # nothing of the object's content


def test_a_change_to_okt_bookkeeping_annotations_alone_does_not_requeue() -> None:
    old = {"metadata": {"generation": 1, "annotations": {"okt.io/error-count": "1", "team": "a"}}}
    new = {"metadata": {"generation": 1, "annotations": {"okt.io/error-count": "2", "team": "a"}}}
    ignored = frozenset({"okt.io/error-count", "okt.io/phase"})
    assert changes.primary_change_matters("MODIFIED", new, old, ignored) is False
    edited = {"metadata": {"generation": 1, "annotations": {"okt.io/error-count": "2", "team": "b"}}}
    assert changes.primary_change_matters("MODIFIED", edited, old, ignored) is True


@pytest.mark.parametrize(
    ("annotation", "matters"),
    [
        pytest.param("b.example.com/error-count", False, id="another okt's error count"),
        pytest.param("b.example.com/conditions", False, id="another okt's conditions"),
        pytest.param("b.example.com/observed-generation", False, id="another okt's generation seen"),
        pytest.param("b.example.com/phase", True, id="a phase someone sets"),
        pytest.param("error-count", True, id="no prefix"),
    ],
)
def test_a_change_to_the_reports_of_another_operator_built_on_okt_does_not_requeue(
    annotation: str, matters: bool
) -> None:
    old = {"metadata": {"generation": 1, "annotations": {annotation: "1"}}}
    new = {"metadata": {"generation": 1, "annotations": {annotation: "2"}}}
    ignored = names.Names("a.example.com").primary_annotations()
    assert changes.primary_change_matters("MODIFIED", new, old, ignored) is matters


class ConfigChild(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class WidgetsWithConfig(Widgets):
    owns: ClassVar = [ConfigChild]


@pytest.mark.parametrize(("observed", "reconciles"), [(True, 1), (False, 2)])
def test_an_event_during_a_reconcile_requeues_it_unless_it_echoes_that_reconciles_own_write(
    offline_client: kube_client.Client, api: Any, recorder: Any, obj: Any, observed: bool, reconciles: int
) -> None:
    """The watch often announces a write before its answer reaches the writer: that event is held until the reconcile
    ends, and dropped once the reconcile observed exactly that version; a version it never saw requeues the key."""
    api.put(WIDGET, owner_w())
    cache = cache_mod.Cache(api)
    calls: list[str] = []

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: str, **kwargs: Any) -> stepper.Run:
        calls.append(name)
        if len(calls) == 1:
            ref = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
            written = api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "c", ownerReferences=[ref]))
            # The watch (of all namespaces) delivers it to the controller, then to the recorder.
            api.emit(kinds.CONFIG_MAP, "ADDED", written, namespace=None)
            wait_for(recorder.snapshot, timeout=5)
            if observed:
                cache.observe(written)
        return fake_run(Outcome.done())

    controller = controller_mod.Controller(WidgetsWithConfig, offline_client, cache, reconcile=reconcile, workers=2)
    controller.watch()
    cache.start(kinds.CONFIG_MAP, recorder)
    assert cache.wait_for_sync(5)
    controller.start_workers()
    try:  # the Widget's ADDED event enqueues it
        wait_for(lambda: len(calls) >= reconciles and not controller.in_flight and not len(controller.queue), timeout=5)
        time.sleep(0.2)  # room for a wrong extra reconcile to show up
        assert calls == ["w"] * reconciles
    finally:
        controller.shutdown(grace=5)
        cache.stop()


def test_a_write_of_one_controller_reaches_the_watch_of_another_and_stays_quiet_for_the_writer(
    offline_client: kube_client.Client, api: Any, obj: Any
) -> None:
    """A reconcile writes its answer through to the store before the watch tells it (the usual order when the API
    server answers first): the echo is nothing new to the writer, but it is news to another controller of the
    process watching that kind."""
    api.put(WIDGET, owner_w())
    cache = cache_mod.Cache(api)
    calls: list[str] = []
    mapped: list[str] = []

    def record(cm: Any, ctx: Any) -> list[Any]:
        mapped.append(cm["metadata"]["name"])
        return []

    class Watching(okt.Reconciler):
        api_version = "example.io/v1"
        kind = "Gadget"
        plural = "gadgets"
        watches = (okt.watch(kinds.CONFIG_MAP, map=record),)

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: str, **kwargs: Any) -> stepper.Run:
        calls.append(name)
        ref = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
        written = api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "c", ownerReferences=[ref]))
        reader.observe(written)  # as every write of a reconcile does
        api.emit(kinds.CONFIG_MAP, "ADDED", written, namespace=None)
        return fake_run(Outcome.done())

    writer = controller_mod.Controller(WidgetsWithConfig, offline_client, cache, reconcile=reconcile)
    watcher = controller_mod.Controller(Watching, offline_client, cache, reconcile=lambda *a, **k: None)
    writer.watch()
    watcher.watch()
    assert cache.wait_for_sync(5)
    writer.start_workers()
    try:
        wait_for(lambda: "c" in mapped, timeout=5, message="the watch of the other controller mapped the ConfigMap")
        wait_for(lambda: not writer.in_flight and not len(writer.queue), timeout=5)
        assert calls == ["w"]  # the writer's own echo woke nothing
    finally:
        writer.shutdown(grace=5)
        cache.stop()


def test_a_write_of_a_controller_reaches_its_own_watch_of_that_kind_and_reconciles_the_other_primaries_it_names(
    offline_client: kube_client.Client, api: Any, obj: Any
) -> None:
    """A controller that owns ConfigMaps and watches them too (a primary naming another's child in its spec): the
    reconcile of the owner wrote its child through to the store before the watch told it, and the echo is nothing
    new to that reconcile — but it is news to the primaries the mapping names, which read the child."""
    api.put(WIDGET, owner_w())
    api.put(WIDGET, {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "v", "namespace": "ns"}})
    cache = cache_mod.Cache(api)
    calls: list[str] = []
    mapped: list[str] = []

    def reader_of(cm: Any, ctx: Any) -> list[Any]:
        mapped.append(cm["metadata"]["name"])
        return [("ns", "v")]  # v reads the ConfigMap w owns

    class OwningAndWatching(WidgetsWithConfig):
        watches = (okt.watch(kinds.CONFIG_MAP, map=reader_of),)

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: str, **kwargs: Any) -> stepper.Run:
        calls.append(name)
        if name == "w" and calls.count("w") == 1:
            ref = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
            written = api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "c", ownerReferences=[ref]))
            reader.observe(written)  # as every write of a reconcile does, before the watch tells it
            api.emit(kinds.CONFIG_MAP, "ADDED", written, namespace=None)
        return fake_run(Outcome.done())

    controller = controller_mod.Controller(OwningAndWatching, offline_client, cache, reconcile=reconcile)
    controller.watch()
    assert cache.wait_for_sync(5)
    controller.start_workers()
    try:
        wait_for(lambda: "c" in mapped, timeout=5, message="the controller's own watch mapped the ConfigMap it wrote")
        wait_for(lambda: calls.count("v") == 2 and not controller.in_flight and not len(controller.queue), timeout=5)
        time.sleep(0.2)  # room for a wrong extra reconcile to show up
        assert sorted(calls) == ["v", "v", "w"]  # the writer's own echo woke the writer's child handler nothing
    finally:
        controller.shutdown(grace=5)
        cache.stop()


@pytest.mark.parametrize(
    ("finalizers", "deleting", "cleanup_due"),
    [
        (["example.com/cleanup"], False, True),  # gone at once, the finalizer on: the API server's race
        (["other.io/keep", "example.com/old"], False, True),  # a legacy finalizer of okt's counts too
        # A deletion that waited: the watch tells the last state stored, okt's finalizer still listed (its removal
        # was the deletion itself), the object marked as being deleted: its cleanup ran.
        (["example.com/cleanup"], True, False),
        (["other.io/keep"], True, False),  # someone else's finalizer is not okt's
        ([], False, False),
    ],
)
def test_an_object_deleted_with_okts_finalizer_on_is_due_a_cleanup_as_being_deleted(
    finalizers: list[str], deleting: bool, cleanup_due: bool
) -> None:
    meta: dict[str, Any] = {"name": "g", "namespace": "ns", "finalizers": finalizers}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    obj = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": meta, "spec": {"size": 1}}

    last = controller_mod.gone_past_finalizers(obj, {"example.com/cleanup", "example.com/old"})

    assert (last is not None) is cleanup_due
    if last is not None:
        assert last["metadata"]["deletionTimestamp"]  # a reconcile of it takes the finalizer's path
        assert last["metadata"]["finalizers"] == finalizers
        assert last["spec"] == {"size": 1}
    assert ("deletionTimestamp" in meta) is deleting  # the event's object is left as it was


class CleanedWidgets(Widgets):
    finalizer = "example.io/cleanup"


def test_an_object_deleted_with_okts_finalizer_on_is_reconciled_as_being_deleted_once_the_api_says_it_is_gone() -> None:
    kind = okt.Kind("example.io/v1", "Widget", "widgets")
    client = FakeClient(kinds=[kind])
    seen: list[dict[str, Any] | None] = []

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: Any, **kwargs: Any) -> stepper.Run:
        seen.append(reader.get(kind, name, namespace))
        run = fake_run(Outcome.done())
        if seen[-1] is not None:  # the cleanup succeeded, and the finalizer's removal found the object gone
            run.results.add(okt.Operation.FINALIZER_REMOVED, "example.io/cleanup")
        return run

    controller = controller_mod.Controller(
        CleanedWidgets, client, cache_mod.Cache(client), reconcile=reconcile, backoff=NO_JITTER
    )
    controller.watch()  # the store is what the controller asks whether the object is still there
    try:
        assert controller.cache.wait_for_sync(5)
        last = {
            "apiVersion": "example.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "finalizers": ["example.io/cleanup"]},
        }
        controller.on_primary_event("DELETED", last, None)
        assert len(controller.queue) == 1

        client.fail("get", "widgets", errors.ApiError.from_status(503, "ServiceUnavailable", "the API is down"))
        with structlog.testing.capture_logs() as logged:
            # the API cannot say whether it is gone: retried, nothing reconciled
            first = controller.process(("ns", "w"))
        assert first.kind is results_mod.OutcomeKind.RETRY
        assert controller.queue.failures(("ns", "w")) == 1  # its retry is kept: the cleanup is still due
        assert seen == []
        assert [entry["log_level"] for entry in logged] == ["warning"]  # an outage, not a reconcile that raised

        second = controller.process(("ns", "w"))  # gone: reconciled on its last state, marked as being deleted
        assert second.kind is results_mod.OutcomeKind.DONE
        assert len(seen) == 1 and seen[0] is not None
        assert seen[0]["metadata"]["uid"] == "u1"
        assert seen[0]["metadata"]["deletionTimestamp"]

        controller.process(("ns", "w"))  # its cleanup succeeded: the next reconcile of the key finds nothing
        assert seen[-1] is None
    finally:
        controller.cache.stop()  # its informer, left running, would try to watch the fake for ever


def test_the_queue_depth_by_priority_is_never_negative_while_a_sweep_comes_and_goes(
    offline_client: kube_client.Client,
) -> None:
    """Read while keys are added to the sweep and taken from it, the live depth is never below zero: the live and
    sweep depths are one reading of the queue, not two."""
    controller = make_controller(offline_client, lambda *a, **k: fake_run(Outcome.done()))
    queue = controller.queue
    stop = threading.Event()

    def sweeps() -> None:
        for number in itertools.count():
            if stop.is_set():
                return
            for name in range(50):
                queue.add((f"ns-{number}", str(name)), low=True)
            while (key := queue.get(timeout=0)) is not None:
                queue.done(key)

    def live_depth() -> float:
        (family,) = controller.metrics.workqueue_depth_by_priority.collect()
        return next(s.value for s in family.samples if s.labels == {"controller": "widget", "priority": "live"})

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often: a reading between two looks at the queue is likely
    sweeper = threading.Thread(target=sweeps)
    sweeper.start()
    try:
        deadline = time.monotonic() + 3
        readings = []
        while time.monotonic() < deadline and min(readings, default=0.0) >= 0:
            readings.append(live_depth())
    finally:
        stop.set()
        sweeper.join(10)
        sys.setswitchinterval(switching)
    assert min(readings) >= 0


class TalkativeWidgets(Widgets):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Mutator:
            structlog.get_logger("my_operator").info("mutating")


def test_every_line_of_one_reconcile_carries_the_same_reconcile_id() -> None:
    """The author's lines (``structlog.get_logger()``) and okt's own (``reconciled``) of one reconcile are found
    together by its ``reconcile_id``, whatever reconciles ran in the process before."""
    kind = okt.Kind("example.io/v1", "Widget", "widgets")
    client = FakeClient(kinds=[kind], objects=[{**primary(), "spec": {}}])
    stream = io.StringIO()
    logs.configure("json", verbosity=1, stream=stream)
    try:
        okt.reconcile(TalkativeWidgets(), client, None, "ns", "w", kind=kind)  # a reconcile outside any controller
        controller = controller_mod.Controller(TalkativeWidgets, client, cache_mod.Cache(client), record_events=False)
        before = len(stream.getvalue().splitlines())
        controller.process(("ns", "w"))
    finally:
        structlog.reset_defaults()
    records = [json.loads(line) for line in stream.getvalue().splitlines()[before:]]
    said = {record["event"]: record["reconcile_id"] for record in records if "reconcile_id" in record}
    assert {"mutating", "reconciled"} <= said.keys()
    assert said["mutating"] == said["reconciled"]


class WidgetsReadingConfigMaps(Widgets):
    watches = (okt.watch(kinds.CONFIG_MAP, map=lambda obj, ctx: []),)


def test_the_sync_of_every_kind_the_cache_waits_for_is_exported_watched_kinds_too(api: Any) -> None:
    """Readiness waits for the informers of the watched kinds too: ``okt_cache_synced`` and ``okt_cache_objects``
    show theirs, or a replica stuck on one reads as fully synced on the dashboard."""
    api.stats = kube_client.RequestStats()
    controller = controller_mod.Controller(
        WidgetsReadingConfigMaps, api, cache_mod.Cache(api), reconcile=lambda *a, **k: fake_run(Outcome.done())
    )
    controller.watch()
    try:
        assert controller.cache.wait_for_sync(5)
        sample = controller.metrics.registry.get_sample_value
        synced = {str(kind): sample("okt_cache_synced", {"kind": str(kind)}) for kind in (WIDGET, kinds.CONFIG_MAP)}
    finally:
        controller.cache.stop()
    assert synced == {str(WIDGET): 1.0, str(kinds.CONFIG_MAP): 1.0}


class TickingWidgets(Widgets):
    ticks: ClassVar[list[str]] = []

    @okt.every(hours=1)
    def backup(self, ctx: okt.Context) -> None:
        self.ticks.append(ctx.cr.uid)


def test_a_deleted_primary_leaves_nothing_of_its_timers_behind() -> None:
    """When each timer last ran is kept per object uid: a deleted object's entries were kept until a sweep, which
    runs every 256 timer runs and drops only entries older than twice the longest interval — with few objects left,
    a daily timer's entries of deleted objects stayed for months, and once no timer runs, for ever."""
    kind = okt.Kind("example.io/v1", "Widget", "widgets")
    client = FakeClient(kinds=[kind])
    client.put({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}})
    client.put({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "v", "namespace": "ns"}})
    controller = controller_mod.Controller(TickingWidgets, client, cache_mod.Cache(client), backoff=NO_JITTER)
    TickingWidgets.ticks.clear()
    controller.process(("ns", "w"))
    controller.process(("ns", "v"))
    assert len(TickingWidgets.ticks) == 2
    clock = controller.reconciler.timer_clock
    assert len(clock) == 2

    gone = client.stored(kind, "w", "ns")
    assert gone is not None
    client.delete(kind, "w", "ns")
    controller.on_primary_event("DELETED", gone, None)

    assert len(clock) == 1
    assert clock.due(gone["metadata"]["uid"], "backup") == 0.0


def recording(reconciled: list[str]) -> Callable[..., stepper.Run]:
    """A reconcile that appends the name it is given to ``reconciled`` (from any worker) and is done."""
    lock = threading.Lock()

    def record(reconciler: Any, client: Any, reader: Any, namespace: Any, name: Any, **kwargs: Any) -> stepper.Run:
        with lock:
            reconciled.append(name)
        return fake_run(Outcome.done())

    return record


def test_a_standby_queues_nothing_and_once_it_leads_queues_its_cached_primaries_and_those_deleted_meanwhile(
    api: Any,
) -> None:
    """A standby's queue stays empty (its depth alerts on nothing); leading, it reconciles what its cache holds and
    what was deleted past okt's finalizer while it stood by (that cleanup is still due, and no cached object names
    it)."""
    api.stats = kube_client.RequestStats()
    reconciled: list[str] = []
    record = recording(reconciled)
    controller = controller_mod.Controller(
        CleanedWidgets, api, cache_mod.Cache(api), reconcile=record, workers=1, standby=True
    )
    api.put(WIDGET, primary(name="listed"))
    controller.watch()
    try:
        assert controller.cache.wait_for_sync(5)
        held = api.put(WIDGET, primary(name="deleted", uid="u1", finalizers=["example.io/cleanup"]))
        api.emit(WIDGET, "ADDED", held, None)
        api.emit(WIDGET, "DELETED", api.remove(WIDGET, "ns", "deleted"), None)
        api.emit(WIDGET, "ADDED", api.put(WIDGET, primary(name="live")), None)
        wait_for(lambda: controller.cache.get(WIDGET, "live", "ns") is not None, timeout=5)
        assert len(controller.queue) == 0
        assert controller.metrics.registry.get_sample_value("okt_workqueue_depth", {"controller": "widget"}) == 0

        controller.start_workers()
        wait_for(lambda: len(reconciled) == 3, timeout=5)
        assert sorted(reconciled) == ["deleted", "listed", "live"]
    finally:
        controller.shutdown(5)
        controller.cache.stop()


def test_a_standby_that_leads_reconciles_what_changed_while_it_stood_by_before_its_sweep(api: Any) -> None:
    """A change the standby saw arrive live (a spec edited at the failover) is reconciled first once it leads, not
    behind every object of its warm cache: the failover's first reconcile is the object someone is waiting for."""
    api.stats = kube_client.RequestStats()
    reconciled: list[str] = []
    record = recording(reconciled)
    controller = controller_mod.Controller(
        Widgets, api, cache_mod.Cache(api), reconcile=record, workers=1, standby=True
    )
    for i in range(40):
        api.put(WIDGET, primary(name=f"w{i:02}"))
    controller.watch()
    try:
        assert controller.cache.wait_for_sync(5)
        edited = primary(name="w33", generation=2, resourceVersion="11")
        api.emit(WIDGET, "MODIFIED", api.put(WIDGET, edited), None)
        wait_for(lambda: (controller.cache.get(WIDGET, "w33", "ns") or {}).get("metadata", {}).get("generation") == 2)

        controller.start_workers()
        wait_for(lambda: len(reconciled) == 40, timeout=5)
        assert reconciled[0] == "w33"
    finally:
        controller.shutdown(5)
        controller.cache.stop()


class WidgetsMappedFromConfigMaps(Widgets):
    watches = (okt.watch(kinds.CONFIG_MAP, map=lambda cm, ctx: [("ns", "w")]),)


def test_what_a_watched_kinds_list_maps_to_waits_in_the_sweep_lane_behind_live_events(
    offline_client: kube_client.Client, api: Any, obj: Any
) -> None:
    """The list of a kind the reconciler ``okt.watch``-es, at a start or a relist, is part of the sweep: the keys it
    maps to wait behind what the watches say now, as its primaries' own list does (in the live lane, a list of 10,000
    ConfigMaps put every object ahead of a fresh change)."""
    api.put(WIDGET, owner_w())
    api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "settings"))
    controller = controller_mod.Controller(
        WidgetsMappedFromConfigMaps, offline_client, cache_mod.Cache(api), reconcile=lambda *a, **k: None
    )
    controller.watch()
    try:
        assert controller.cache.wait_for_sync(5)
        assert controller.queue.depths() == (0, 1)
    finally:
        controller.cache.stop()


def test_what_a_controller_joining_kinds_watched_already_is_replayed_waits_in_the_sweep_lane_behind_live_events(
    offline_client: kube_client.Client, api: Any, obj: Any
) -> None:
    """A controller whose primary kind and watched kind another controller watches already learns of their objects by
    the cache's replay, not by a list: that is its sweep all the same (in the live lane, every object it was replayed
    went ahead of a fresh change, and a standby took each for a change made at the failover)."""
    api.put(WIDGET, owner_w())
    api.put(kinds.CONFIG_MAP, obj(kinds.CONFIG_MAP, "settings"))
    cache = cache_mod.Cache(api)
    cache.start(WIDGET, lambda *_: None, status_owners=True)  # another controller's, and a ConfigMap it owns
    cache.start(kinds.CONFIG_MAP, lambda *_: None)
    assert cache.wait_for_sync(5)
    controller = controller_mod.Controller(
        WidgetsMappedFromConfigMaps, offline_client, cache, reconcile=lambda *a, **k: None
    )
    controller.watch()
    try:  # no worker started: the queue holds what the replay filled it with
        wait_for(lambda: sum(controller.queue.depths()) == 1, timeout=5)
        time.sleep(0.1)  # the mapping thread maps the replayed ConfigMap
        assert controller.queue.depths() == (0, 1)
    finally:
        cache.stop()


def test_a_standby_forgets_the_changes_it_saw_of_objects_deleted_while_it_stood_by(api: Any) -> None:
    """A standby runs for months over objects created and deleted all the time: what it remembers of a live change
    goes with the object, or it would grow for ever, and once it leads it would reconcile every object long gone."""
    api.stats = kube_client.RequestStats()
    reconciled: list[str] = []
    record = recording(reconciled)
    controller = controller_mod.Controller(
        Widgets, api, cache_mod.Cache(api), reconcile=record, workers=1, standby=True
    )
    api.put(WIDGET, primary(name="listed"))
    controller.watch()
    try:
        assert controller.cache.wait_for_sync(5)
        for i in range(50):
            api.emit(WIDGET, "ADDED", api.put(WIDGET, primary(name=f"gone{i:02}", uid=f"u{i}")), None)
            api.emit(WIDGET, "DELETED", api.put(WIDGET, primary(name=f"gone{i:02}", uid=f"u{i}")), None)
        api.emit(WIDGET, "ADDED", api.put(WIDGET, primary(name="last")), None)
        wait_for(lambda: controller.cache.get(WIDGET, "last", "ns") is not None, timeout=5)
        assert sorted(key[1] for key in controller.cache.keys(WIDGET)) == ["last", "listed"]

        controller.start_workers()
        # One worker, and the keys a standby remembers go before the sweep: whatever else it queued is done by then.
        wait_for(lambda: "listed" in reconciled, timeout=5)
        assert sorted(reconciled) == ["last", "listed"]
    finally:
        controller.shutdown(5)
        controller.cache.stop()


def test_a_deleted_primary_leaves_nothing_scheduled_nor_counted_in_the_queue() -> None:
    """An object requeued for later (a timer's hour, a backoff after failures) and then deleted: its due time and its
    failure count go with it, not hours later, after one more reconcile of an object long gone."""
    client = FakeClient(kinds=[WIDGET])
    outcomes = {"slow": Outcome.requeue_after(3600), "bad": Outcome.retry(RuntimeError("broken"))}
    controller = controller_mod.Controller(
        Widgets,
        client,
        cache_mod.Cache(client),
        reconcile=lambda reconciler, client, reader, namespace, name, **kwargs: fake_run(outcomes[name]),
        backoff=NO_JITTER,
    )
    for name in outcomes:
        client.put(primary(name=name))
        controller.process(("ns", name))
    assert controller.queue.delayed_count == 2
    assert controller.queue.failures(("ns", "bad")) == 1

    for name in outcomes:
        gone = client.stored(WIDGET, name, "ns")
        assert gone is not None
        client.delete(WIDGET, name, "ns")
        controller.on_primary_event("DELETED", gone, None)

    assert controller.queue.delayed_count == 0
    assert controller.queue.failures(("ns", "bad")) == 0


def test_the_last_state_of_an_object_gone_past_okts_finalizer_goes_once_its_cleanup_gave_up() -> None:
    """A give-up waits for the object to change, and a gone object never will: its last state, kept for its cleanup,
    goes with the give-up (kept, every such object stayed in memory for the life of the process, and a later
    reconcile of its key ran the cleanup that gave up once more)."""
    kind = okt.Kind("example.io/v1", "Widget", "widgets")
    client = FakeClient(kinds=[kind])
    seen: list[dict[str, Any] | None] = []

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: Any, **kwargs: Any) -> stepper.Run:
        seen.append(reader.get(kind, name, namespace))
        if seen[-1] is None:
            return fake_run(Outcome.give_up("cr not found"))
        return fake_run(Outcome.give_up("the bucket is locked: a human must empty it"))

    controller = controller_mod.Controller(
        CleanedWidgets, client, cache_mod.Cache(client), reconcile=reconcile, backoff=NO_JITTER
    )
    for i in range(20):
        last = {
            "apiVersion": "example.io/v1",
            "kind": "Widget",
            "metadata": {"name": f"w{i}", "namespace": "ns", "uid": f"u{i}", "finalizers": ["example.io/cleanup"]},
        }
        controller.on_primary_event("DELETED", last, None)
        assert controller.process(("ns", f"w{i}")).kind is results_mod.OutcomeKind.GIVE_UP
    assert all(obj is not None for obj in seen)

    for i in range(20):
        controller.process(("ns", f"w{i}"))
    assert seen[20:] == [None] * 20


class ForgettingWidgets(Widgets):
    """Widgets whose per-object state goes with each deleted one (``on_deleted``)."""

    def __init__(self) -> None:
        self.told: list[str] = []

    def on_deleted(self, cr: okt.CustomResource) -> None:
        self.told.append(cr.uid)


@pytest.mark.parametrize(
    "unanswered",
    [
        errors.Unavailable(0, "Unavailable", "connection refused"),
        errors.ApiError.from_status(503, "ServiceUnavailable", "the API server is restarting"),
        errors.ApiError.from_status(504, "Timeout", "etcd did not answer"),
        errors.ApiError.from_status(429, "TooManyRequests", "the API server is overloaded"),
    ],
    ids=["no-answer", "503", "504", "429"],
)
def test_an_api_server_unanswered_longer_than_on_deleteds_attempts_still_tells_the_deletion_once_it_answers(
    unanswered: errors.ApiError,
) -> None:
    """The read that says whether the object is gone before ``on_deleted`` is called is no call of the hook: an API
    server that does not answer it spends none of the hook's bounded attempts (spent, an outage of a few minutes
    dropped every deletion seen before it, its hook never called), and the wait still backs off."""
    client = FakeClient(kinds=[WIDGET])
    controller = controller_mod.Controller(
        ForgettingWidgets,
        client,
        cache_mod.Cache(client),
        reconcile=lambda *args, **kwargs: fake_run(Outcome.done()),
        backoff=NO_JITTER,
    )
    reconciler = controller.reconciler
    assert isinstance(reconciler, ForgettingWidgets)
    controller.watch()  # the store is what the controller asks whether a reconcile is due besides the hook
    assert controller.cache.wait_for_sync(5)
    controller.on_primary_event("DELETED", primary(uid="u1"), None)
    outage = deletions.ATTEMPTS + 2
    client.fail("get", "widgets", unanswered, times=outage)

    for _ in range(outage):
        controller.process(("ns", "w"))
    assert reconciler.told == []
    assert controller.queue.delayed_count == 1  # asked again later, not dropped
    metric = controller.metrics.registry.get_sample_value
    errors_counted = metric("okt_on_deleted_errors_total", {"controller": "widget"})
    assert errors_counted in (None, 0)  # the hook never raised

    controller.process(("ns", "w"))  # the API server answers again: the object is gone
    assert reconciler.told == ["u1"]


class _Backend(pydantic.BaseModel):
    port: int


class WidgetsLoggingOutOfTheirBackend(Widgets):
    """Widgets whose ``on_deleted`` reads the deleted object's spec with a model of its own, which it does not fit."""

    def on_deleted(self, cr: okt.CustomResource) -> None:
        _Backend.model_validate(cr.spec)


def test_an_on_deleted_failing_on_a_validation_error_is_logged_by_its_fields_never_the_values_it_was_given() -> None:
    """A pydantic ``ValidationError``'s text repeats every input it was given (the spec's password the hook read):
    the ``on_deleted raised`` line says it by its fields, with where it was raised, as a hook's or a timer's is."""
    password = "-".join(("hunter2", "s3cret"))  # no literal of a traceback's line
    client = FakeClient(kinds=[WIDGET])
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    controller = controller_mod.Controller(
        WidgetsLoggingOutOfTheirBackend,
        client,
        cache_mod.Cache(client),
        reconcile=lambda *args, **kwargs: fake_run(Outcome.done()),
        backoff=NO_JITTER,
    )
    try:
        controller.watch()
        assert controller.cache.wait_for_sync(5)
        controller.on_primary_event("DELETED", {**primary(uid="u1"), "spec": {"port": password}}, None)
        controller.process(("ns", "w"))
    finally:
        controller.cache.stop()
        structlog.reset_defaults()

    assert "hunter2" not in stream.getvalue()
    [line] = [json.loads(text) for text in stream.getvalue().splitlines() if '"on_deleted raised"' in text]
    assert line["error"].startswith("ValidationError: _Backend: port: Input should be a valid integer")
    assert "_Backend.model_validate(cr.spec)" in line["stack"]  # where the operator's bug is


class MirroredWidgets(Widgets):
    cluster_operator = "widgets"


@pytest.mark.parametrize("reconciler_cls", [CleanedWidgets, MirroredWidgets], ids=["past the finalizer", "mirrored"])
def test_a_deleted_primary_reconciled_once_more_keeps_no_earlier_due_time_nor_failure_count(
    reconciler_cls: type[okt.Reconciler],
) -> None:
    """An object whose deletion is reconciled (its cleanup on its last state, a ClusterOperator's mirror forgetting
    it) is queued now: its due time of before stays no longer than the object, nor its failures' backoff."""
    client = FakeClient(kinds=[WIDGET])
    outcomes = {"slow": Outcome.requeue_after(3600), "bad": Outcome.retry(RuntimeError("broken"))}
    controller = controller_mod.Controller(
        reconciler_cls,
        client,
        cache_mod.Cache(client),
        reconcile=lambda reconciler, client, reader, namespace, name, **kwargs: fake_run(outcomes[name]),
        backoff=NO_JITTER,
    )
    for name in outcomes:
        client.put(primary(name=name))
        controller.process(("ns", name))
    for name in outcomes:
        gone = client.stored(WIDGET, name, "ns")
        assert gone is not None
        client.delete(WIDGET, name, "ns")
        # As the watch tells it of an object deleted with okt's finalizer still on it.
        gone["metadata"]["finalizers"] = ["example.io/cleanup"]
        controller.on_primary_event("DELETED", gone, None)

    assert controller.queue.delayed_count == 0
    assert controller.queue.failures(("ns", "bad")) == 0
    assert sorted(name for _, name in drain_keys(controller.queue)) == ["bad", "slow"]


def drain_keys(queue: workqueue.WorkQueue[controller_mod.QueueKey]) -> list[controller_mod.QueueKey]:
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_a_deleted_primary_leaves_no_status_residue_to_crowd_out_those_of_live_objects() -> None:
    """What okt's status write of an object left (a field a hand-written CRD prunes) is remembered per uid, a bounded
    number of them: the residues of objects long deleted pushed out those of live ones, whose status was then written
    again, for nothing, at every reconcile."""
    client = FakeClient(kinds=[WIDGET])
    controller = controller_mod.Controller(
        Widgets, client, cache_mod.Cache(client), reconcile=lambda *a, **k: fake_run(Outcome.done())
    )
    wanted = {"relatedObjects": [{"resource": "widgets", "name": "w"}], "phase": "Ready"}
    pruned = {"status": {"phase": "Ready"}}  # the server kept no relatedObjects
    status_writer.RESIDUES.remember("live-uid", wanted, pruned)
    for i in range(status_writer.Residues.LIMIT):
        obj = client.put(primary(name=f"gone{i}"))
        status_writer.RESIDUES.remember(obj["metadata"]["uid"], wanted, pruned)
        client.delete(WIDGET, f"gone{i}", "ns")
        controller.on_primary_event("DELETED", obj, None)
    assert status_writer.RESIDUES.explain("live-uid", wanted, pruned["status"])


def test_a_deleted_primary_leaves_no_refused_report_behind() -> None:
    """A report the API server refused is remembered per uid, so that it is not sent again while the object stays as
    it was; a deleted object's goes with it, or the memory kept entries of objects long gone until its bound."""
    client = FakeClient(kinds=[WIDGET])
    controller = controller_mod.Controller(
        Widgets, client, cache_mod.Cache(client), reconcile=lambda *a, **k: fake_run(Outcome.done())
    )
    refusal = errors.ApiError.from_status(422, "Invalid", "spec.size in body should be less than or equal to 10")
    report = refused_reports.digest("InvalidSpec", "spec.size: too large")
    gone, live = client.put(primary(name="gone")), client.put(primary(name="live"))
    for obj in (gone, live):
        refused_reports.REFUSED.remember(obj["metadata"]["uid"], obj["metadata"]["resourceVersion"], report, refusal)
    client.delete(WIDGET, "gone", "ns")

    controller.on_primary_event("DELETED", gone, None)

    assert refused_reports.REFUSED.recall(gone["metadata"]["uid"], gone["metadata"]["resourceVersion"], report) is None
    live_meta = live["metadata"]
    assert refused_reports.REFUSED.recall(live_meta["uid"], live_meta["resourceVersion"], report) is refusal
    refused_reports.REFUSED.forget(live_meta["uid"])


def test_a_deleted_primary_leaves_no_event_to_crowd_out_the_repeats_of_live_objects() -> None:
    """An Event said again of an object bumps its count; what was said is remembered per object, a bounded number of
    them: the Events of objects long deleted pushed out those of live ones, whose next repeat was a new Event."""
    client, primaries = FakeClient(kinds=[WIDGET]), FakeClient(kinds=[WIDGET])  # the Events, the cache's reads

    def reconcile(reconciler: Any, client: Any, reader: Any, namespace: Any, name: Any, **kwargs: Any) -> stepper.Run:
        cr = objects.CustomResource(reader.get(WIDGET, name, namespace))
        kwargs["recorder"].record(cr, "Warning", "BackupFailed", "the bucket is locked")
        return fake_run(Outcome.done())

    controller = controller_mod.Controller(Widgets, client, cache_mod.Cache(primaries), reconcile=reconcile)
    primaries.put(primary(name="live"))
    controller.process(("ns", "live"))
    for i in range(5000):
        gone = primaries.put(primary(name=f"gone{i}"))
        controller.process(("ns", f"gone{i}"))
        primaries.delete(WIDGET, f"gone{i}", "ns")
        controller.on_primary_event("DELETED", gone, None)
    controller.process(("ns", "live"))

    said = [event for event in client.objects(kinds.EVENT) if event["involvedObject"]["name"] == "live"]
    assert [event["count"] for event in said] == [2]


class WidgetsWithAFailingTimer(Widgets):
    @okt.every(minutes=10)
    def backup(self, ctx: okt.Context) -> None:
        raise RuntimeError("the backup target is gone")

    @okt.every(minutes=10)
    def check(self, ctx: okt.Context) -> None:
        pass


def test_a_timer_call_that_fails_is_counted_by_controller_and_timer() -> None:
    """A timer failing at every call for months said so in its log lines and Warning Events only (these are
    deduplicated into one): nothing a dashboard or an alert could read."""
    client = FakeClient(kinds=[WIDGET], objects=[{**primary(), "spec": {}}])
    controller = controller_mod.Controller(
        WidgetsWithAFailingTimer, client, cache_mod.Cache(client), record_events=False
    )
    sample = controller.metrics.registry.get_sample_value
    before = {
        timer: sample("okt_timer_errors_total", {"controller": "widget", "timer": timer})
        for timer in ("backup", "check")
    }

    controller.process(("ns", "w"))

    after = {
        timer: sample("okt_timer_errors_total", {"controller": "widget", "timer": timer})
        for timer in ("backup", "check")
    }
    assert before == {"backup": 0.0, "check": 0.0}
    assert after == {"backup": 1.0, "check": 0.0}


class SlowToForgetWidgets(Widgets):
    """Widgets whose ``on_deleted`` takes a while (a remote clean-up)."""

    def on_deleted(self, cr: okt.CustomResource) -> None:
        time.sleep(0.5)


def test_the_reconcile_duration_measures_the_reconcile_alone_not_an_on_deleted_called_in_the_same_turn() -> None:
    """A key whose old object was deleted and whose new one (same name) is due calls ``on_deleted`` then reconciles,
    in one turn of a worker: ``okt_reconcile_duration_seconds`` counted the hook's time too, a slow clean-up seen as
    slow reconciles (and ``controller_runtime_reconcile_time_seconds`` with it)."""
    client = FakeClient(kinds=[WIDGET], objects=[primary(uid="u2")])  # the object recreated under the same name
    controller = controller_mod.Controller(
        SlowToForgetWidgets,
        client,
        cache_mod.Cache(client),
        reconcile=lambda *args, **kwargs: fake_run(Outcome.done()),
        backoff=NO_JITTER,
    )
    try:
        controller.watch()
        assert controller.cache.wait_for_sync(5)
        controller.on_primary_event("DELETED", primary(uid="u1"), None)  # the old one's deletion, still to be told
        began = time.monotonic()
        controller.process(("ns", "w"))
        assert time.monotonic() - began >= 0.5  # on_deleted was called in this turn
    finally:
        controller.cache.stop()

    metric = controller.metrics.registry.get_sample_value
    labels = {"controller": "widget"}
    assert metric("okt_reconcile_duration_seconds_count", labels) == 1  # the reconcile of the new object
    assert metric("okt_reconcile_duration_seconds_sum", labels) < 0.25
    assert metric("controller_runtime_reconcile_time_seconds_sum", labels) < 0.25
