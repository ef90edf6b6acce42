"""``Reconciler.on_deleted`` against a real kube-apiserver: told once per deleted object, without a finalizer, before
the reconcile of an object recreated under its name, retried a bounded number of times, and neither for an object that
merely left the selection, nor for one deleted after it left it, nor on a standby."""

from __future__ import annotations

import base64
import io
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pytest
import structlog

import okt
from okt import errors
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import deletions, logs
from okt.testing import wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration

SETTLE = 0.5
QUICK = backoff_mod.Backoff(base=0.01, cap=0.05)
"""A backoff short enough to see a hook's every retry."""


class ToldGadget(okt.Reconciler):
    """A Gadget whose deletions are recorded: (uid, name, spec)."""

    api_version = "runtime.okt.io/v1"
    kind = "Gadget"
    plural = "gadgets"
    told: ClassVar[list[tuple[str, str, Any]]] = []

    def on_deleted(self, cr: okt.CustomResource) -> None:
        self.told.append((cr.uid, cr.name, cr.spec))


class FailingGadget(ToldGadget):
    """A Gadget whose on_deleted raises its first ``failures`` calls (an external system briefly down)."""

    told: ClassVar[list[tuple[str, str, Any]]] = []
    failures: ClassVar[int] = 2

    def on_deleted(self, cr: okt.CustomResource) -> None:
        self.told.append((cr.uid, cr.name, cr.spec))
        if len(self.told) <= self.failures:
            raise ConnectionError("the metrics backend is down")


class SelectedGadget(ToldGadget):
    """Only Gadgets labelled ``selected=yes`` are the operator's."""

    told: ClassVar[list[tuple[str, str, Any]]] = []

    def when(self, obj: Mapping[str, Any]) -> bool:
        return ((obj.get("metadata") or {}).get("labels") or {}).get("selected") == "yes"


@pytest.fixture
def start(kube: kube_client.Client, namespace: str) -> Iterator[Callable[..., controller_mod.Controller]]:
    """Start a controller of a reconciler class (its recorded deletions forgotten); each is stopped after the test."""
    running: list[tuple[controller_mod.Controller, cache_mod.Cache]] = []

    def run(
        reconciler: type[ToldGadget],
        reconcile: Any = core.reconcile,
        *,
        workers: int = 2,
        standby: bool = False,
        label_selector: str | None = None,
        watched_through: Any = None,
    ) -> controller_mod.Controller:
        reconciler.told.clear()
        cache = cache_mod.Cache(watched_through or kube, [namespace], label_selector=label_selector)
        controller = controller_mod.Controller(
            reconciler, kube, cache, workers=workers, reconcile=reconcile, backoff=QUICK, standby=standby
        )
        running.append((controller, cache))
        controller.watch()
        assert cache.wait_for_sync(30)
        if not standby:
            controller.start_workers()
        return controller

    yield run
    for controller, cache in running:
        controller.shutdown(5)
        cache.stop()


class ExpiringWatches:
    """The real client, but that :meth:`expire` breaks the open watch and answers the next one ``410 Gone`` once the
    test opens ``gate``: what changed meanwhile is told by a relist."""

    def __init__(self, client: kube_client.Client) -> None:
        self._client = client
        self.gate = threading.Event()
        self.waiting = threading.Event()
        self._expired = False
        self._open: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def watch(self, *args: Any, on_open: Callable[[Any], None] | None = None, **kwargs: Any) -> Iterator[Any]:
        if self._expired:
            self.waiting.set()
            self.gate.wait(30)
            self._expired = False
            raise errors.ApiError.from_status(410, "Expired", "too old resource version")

        def opened(response: Any) -> None:
            self._open = response
            if on_open is not None:
                on_open(response)

        return self._client.watch(*args, on_open=opened, **kwargs)

    def expire(self) -> None:
        self._expired = True
        kube_client.interrupt(self._open)
        wait_for(self.waiting.is_set, timeout=15, message="the informer to watch again")


def settle(controller: controller_mod.Controller) -> None:
    time.sleep(SETTLE)
    wait_for(lambda: shared.idle(controller), timeout=15)


def errors_counted(controller: controller_mod.Controller) -> float | None:
    return controller.metrics.registry.get_sample_value("okt_on_deleted_errors_total", {"controller": controller.name})


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


def create_gadget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, selected: str = "yes") -> str:
    """Create the gadget ``name`` labelled ``selected=<selected>``; its uid."""
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {"selected": selected}},
        "spec": {},
    }
    return uid_of(kube.create(body, kind))


def delete_a_selected_one(
    kube: kube_client.Client,
    controller: controller_mod.Controller,
    kind: kinds.Kind,
    namespace: str,
    told: Sequence[Any],
) -> str:
    """Create a selected gadget, delete it once cached, and wait until its deletion is ``told`` and the controller
    settled: whatever was told or queued before it has been too. Its uid."""
    kept = create_gadget(kube, kind, namespace, "kept")
    wait_for(lambda: controller.cache.uid(kind, "kept", namespace) == kept, timeout=10)
    kube.delete(kind, "kept", namespace)
    wait_for(lambda: told, timeout=15, message="on_deleted called for the selected object")
    settle(controller)
    return kept


def test_a_deleted_primary_is_told_once_with_its_last_state_and_its_deletion_is_not_held(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    uid = uid_of(make_gadget("g", size=3))
    controller = start(ToldGadget)
    wait_for(lambda: controller.processed >= 1, timeout=10)

    kube.delete(gadget_kind, "g", namespace)
    # No finalizer of okt's holds it: the object is gone at once.
    assert kube.get_or_none(gadget_kind, "g", namespace) is None
    wait_for(lambda: ToldGadget.told, timeout=15, message="on_deleted called")
    settle(controller)

    assert ToldGadget.told == [(uid, "g", {"size": 3})]
    assert errors_counted(controller) == 0


def test_an_object_deleted_and_created_again_is_told_before_the_new_one_is_reconciled(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    seen: list[tuple[str, str]] = []
    gate = threading.Event()

    def reconcile(reconciler: Any, client: Any, reader: Any, ns: str | None, name: str, **kwargs: Any) -> stepper.Run:
        obj = reader.get(gadget_kind, name, ns)
        seen.append(("reconciled", uid_of(obj) if obj else ""))
        gate.wait(30)  # the one worker is busy while the object is deleted and created again
        return stepper.Run((okt.State.End,), results_mod.Outcome.done(), results_mod.Results())

    class OrderedGadget(ToldGadget):
        told: ClassVar[list[tuple[str, str, Any]]] = []

        def on_deleted(self, cr: okt.CustomResource) -> None:
            seen.append(("told", cr.uid))

    old = uid_of(make_gadget("g"))
    controller = start(OrderedGadget, reconcile, workers=1)
    wait_for(lambda: seen, timeout=10)

    kube.delete(gadget_kind, "g", namespace)
    new = uid_of(make_gadget("g"))
    wait_for(lambda: controller.cache.uid(gadget_kind, "g", namespace) == new, timeout=10)
    gate.set()
    wait_for(lambda: ("reconciled", new) in seen, timeout=15)
    settle(controller)

    assert seen == [("reconciled", old), ("told", old), ("reconciled", new)]


def test_a_raising_on_deleted_is_logged_counted_and_called_again_until_it_succeeds(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    uid = uid_of(make_gadget("g"))
    controller = start(FailingGadget)
    wait_for(lambda: controller.processed >= 1, timeout=10)

    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: len(FailingGadget.told) == 3, timeout=15, message="two failures, then a success")
    settle(controller)

    assert [told[0] for told in FailingGadget.told] == [uid] * 3
    assert errors_counted(controller) == 2


def test_an_on_deleted_that_always_raises_is_dropped_after_its_attempts(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    class BrokenGadget(FailingGadget):
        told: ClassVar[list[tuple[str, str, Any]]] = []
        failures: ClassVar[int] = 1_000

    make_gadget("g")
    controller = start(BrokenGadget)
    wait_for(lambda: controller.processed >= 1, timeout=10)

    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: len(BrokenGadget.told) == deletions.ATTEMPTS, timeout=30)
    settle(controller)

    assert len(BrokenGadget.told) == deletions.ATTEMPTS
    assert errors_counted(controller) == deletions.ATTEMPTS


def test_an_object_that_leaves_the_selection_is_not_told_and_is_told_once_deleted_after_it_comes_back(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    start: Callable[..., controller_mod.Controller],
) -> None:
    uid = create_gadget(kube, gadget_kind, namespace, "g")
    controller = start(SelectedGadget)
    wait_for(lambda: controller.cache.uid(gadget_kind, "g", namespace) == uid, timeout=10)

    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"selected": "no"}}}, namespace)
    wait_for(lambda: controller.cache.uid(gadget_kind, "g", namespace) is None, timeout=10)
    settle(controller)
    assert SelectedGadget.told == []

    kube.patch(gadget_kind, "g", {"metadata": {"labels": {"selected": "yes"}}}, namespace)
    wait_for(lambda: controller.cache.uid(gadget_kind, "g", namespace) == uid, timeout=10)
    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: SelectedGadget.told, timeout=15)
    settle(controller)
    assert [told[0] for told in SelectedGadget.told] == [uid]


@pytest.mark.parametrize("selection", ["label selector", "when"])
def test_an_object_deleted_after_it_left_the_selection_is_not_told(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    start: Callable[..., controller_mod.Controller],
    selection: str,
) -> None:
    """It was no longer the operator's when it went: told only of the deletions of objects in its selection (as
    Kopf's deletion handlers are), whether the API server selects (``okt run -l``) or okt does (``when``)."""

    if selection == "when":
        reconciler: type[ToldGadget] = SelectedGadget
        controller = start(reconciler)
    else:
        reconciler = ToldGadget
        controller = start(reconciler, label_selector="selected=yes")
    left = create_gadget(kube, gadget_kind, namespace, "left")
    wait_for(lambda: controller.cache.uid(gadget_kind, "left", namespace) == left, timeout=10)
    kube.patch(gadget_kind, "left", {"metadata": {"labels": {"selected": "no"}}}, namespace)
    wait_for(lambda: controller.cache.uid(gadget_kind, "left", namespace) is None, timeout=10)
    # A label-selected watch tells the leave as a DELETED of the object as it was before (still selected): the
    # worker's read finds it there. Deleted before that read, it could not be told from a deletion (documented).
    settle(controller)
    kube.delete(gadget_kind, "left", namespace)
    never = create_gadget(kube, gadget_kind, namespace, "never", "no")
    kube.delete(gadget_kind, "never", namespace)

    # An object of the selection deleted after them: once it is told, theirs would have been too.
    kept = delete_a_selected_one(kube, controller, gadget_kind, namespace, reconciler.told)
    assert [told[0] for told in reconciler.told] == [kept], (left, never)


def test_the_deletion_of_an_object_the_filters_never_let_in_reaches_neither_on_deleted_nor_the_queue(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    start: Callable[..., controller_mod.Controller],
) -> None:
    """A ClusterOperator's mirror forgets a deleted object in a reconcile: the deletion of one the operator never held
    queued one for nothing."""

    class MirroredGadget(SelectedGadget):
        told: ClassVar[list[tuple[str, str, Any]]] = []
        cluster_operator = "gadgets"

    reconciled: list[str] = []

    def reconcile(reconciler: Any, client: Any, reader: Any, ns: str | None, name: str, **kwargs: Any) -> stepper.Run:
        reconciled.append(name)
        return stepper.Run((okt.State.End,), results_mod.Outcome.done(), results_mod.Results())

    controller = start(MirroredGadget, reconcile, workers=1)
    never = create_gadget(kube, gadget_kind, namespace, "never", "no")
    kube.delete(gadget_kind, "never", namespace)
    # An object of the selection deleted after it: once it is told, the first would have been queued too.
    kept = delete_a_selected_one(kube, controller, gadget_kind, namespace, MirroredGadget.told)

    assert [told[0] for told in MirroredGadget.told] == [kept], never
    assert "never" not in reconciled
    assert "kept" in reconciled


@pytest.mark.parametrize("selection", ["label selector", "when"])
def test_an_object_that_left_the_selection_while_the_watch_was_broken_is_not_told_once_deleted(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    start: Callable[..., controller_mod.Controller],
    selection: str,
) -> None:
    """The relist that follows finds it missing (a label selector) or refused (``when``): a leave, told with its
    state after it left, as the watch would have told it — not a deletion told with its state from before, which
    ``on_deleted`` got once the object was deleted before a worker read it. One deleted meanwhile is told."""
    reconciled: list[str] = []
    release = threading.Event()

    def reconcile(reconciler: Any, client: Any, reader: Any, ns: str | None, name: str, **kwargs: Any) -> stepper.Run:
        reconciled.append(name)
        if name == "blocker":
            release.wait(30)  # the one worker is busy until the test lets it read what the relist told
        return stepper.Run((okt.State.End,), results_mod.Outcome.done(), results_mod.Results())

    client = ExpiringWatches(kube)
    reconciler: type[ToldGadget] = SelectedGadget if selection == "when" else ToldGadget
    label_selector = "selected=yes" if selection == "label selector" else None
    uids = {name: create_gadget(kube, gadget_kind, namespace, name) for name in ("left", "gone")}
    controller = start(reconciler, reconcile, workers=1, label_selector=label_selector, watched_through=client)
    create_gadget(kube, gadget_kind, namespace, "blocker")
    wait_for(lambda: "blocker" in reconciled, timeout=15, message=lambda: str(reconciled))

    try:
        client.expire()
        kube.patch(gadget_kind, "left", {"metadata": {"labels": {"selected": "no"}}}, namespace)
        kube.delete(gadget_kind, "gone", namespace)
        client.gate.set()
        wait_for(lambda: controller.cache.uid(gadget_kind, "left", namespace) is None, timeout=15)
        wait_for(lambda: controller.cache.uid(gadget_kind, "gone", namespace) is None, timeout=15)
        kube.delete(gadget_kind, "left", namespace)  # after the relist, before a worker read it
    finally:
        release.set()
    wait_for(lambda: reconciler.told, timeout=15, message="on_deleted called for the deleted object")
    settle(controller)

    assert [told[0] for told in reconciler.told] == [uids["gone"]], uids


def test_a_standby_tells_no_deletion_seen_before_it_leads(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    make_gadget("g")
    controller = start(ToldGadget, standby=True)
    wait_for(lambda: controller.cache.get(gadget_kind, "g", namespace) is not None, timeout=10)

    kube.delete(gadget_kind, "g", namespace)
    wait_for(lambda: controller.cache.get(gadget_kind, "g", namespace) is None, timeout=10)
    controller.start_workers()
    settle(controller)
    assert ToldGadget.told == []

    uid = uid_of(make_gadget("h"))
    wait_for(lambda: controller.cache.uid(gadget_kind, "h", namespace) == uid, timeout=10)
    kube.delete(gadget_kind, "h", namespace)
    wait_for(lambda: ToldGadget.told, timeout=15)
    settle(controller)
    assert [told[0] for told in ToldGadget.told] == [uid]


class GadgetOfABackend(ToldGadget):
    """A Gadget whose ``on_deleted`` reads its backend's port from a Secret, through its own client, and fails on it:
    ``int()`` of a value that is no number quotes it."""

    told: ClassVar[list[tuple[str, str, Any]]] = []
    client: ClassVar[kube_client.Client]

    def on_deleted(self, cr: okt.CustomResource) -> None:
        self.told.append((cr.uid, cr.name, cr.spec))
        secret = self.client.get(self.client.resolve("v1", "Secret"), "backend", cr.namespace)
        int(base64.b64decode(secret["data"]["port"]).decode())


def test_an_on_deleted_failing_on_a_secret_s_value_it_read_logs_its_error_without_the_value(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    start: Callable[..., controller_mod.Controller],
) -> None:
    """The hook runs outside a reconcile: its call is a block of its own (:mod:`okt.secret_values`), and the value of
    the Secret it read is left out of the ``on_deleted raised`` line, where it was raised included."""
    port = "hunter2-" + secrets.token_hex(4)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "backend", "namespace": namespace}}
    kube.create({**secret, "stringData": {"port": port}})
    GadgetOfABackend.client = kube
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    try:
        make_gadget("g")
        controller = start(GadgetOfABackend)
        wait_for(lambda: controller.processed >= 1, timeout=10)
        kube.delete(gadget_kind, "g", namespace)
        wait_for(lambda: '"on_deleted raised"' in stream.getvalue(), timeout=15, message="the hook's failure logged")
    finally:
        structlog.reset_defaults()

    log = stream.getvalue()
    assert port not in log, log
    line = next(json.loads(text) for text in log.splitlines() if '"on_deleted raised"' in text)
    assert line["error"] == "ValueError: invalid literal for int() with base 10: '(a Secret's value, left out)'", line
    assert "int(base64.b64decode" in line["stack"]  # where it was raised, still said


class Login(okt.Reconciler):
    """Secrets, a built-in primary, whose ``on_deleted`` fails on the value of the Secret it is given."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"
    told: ClassVar[list[tuple[str, str, Any]]] = []

    def on_deleted(self, cr: okt.CustomResource) -> None:
        self.told.append((cr.uid, cr.name, None))
        raise ValueError(f"no login {base64.b64decode(cr.raw['data']['password']).decode()}")


def test_an_on_deleted_failing_on_the_value_of_the_secret_it_is_given_logs_its_error_without_the_value(
    kube: kube_client.Client, namespace: str, start: Callable[..., controller_mod.Controller]
) -> None:
    """The hook's block holds the Secret it is given (its last state), not only those it reads: a reconciler of
    Secrets has its ``on_deleted`` fail on the value of the deleted one, said without it."""
    password = "hunter2-" + secrets.token_hex(4)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": password}})
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    try:
        controller = start(Login)
        wait_for(lambda: controller.processed >= 1, timeout=10)
        kube.delete(kinds.BUILTIN[("v1", "Secret")], "login", namespace)
        wait_for(lambda: '"on_deleted raised"' in stream.getvalue(), timeout=15, message="the hook's failure logged")
    finally:
        structlog.reset_defaults()

    log = stream.getvalue()
    assert password not in log, log
    line = next(json.loads(text) for text in log.splitlines() if '"on_deleted raised"' in text)
    assert line["error"] == "ValueError: no login (a Secret's value, left out)", line
