"""A custom resource deleted and created again under its name (another uid) while a reconcile of the old one runs:
nothing that reconcile still writes lands on the new object — neither its status (applied server-side, which tests no
resourceVersion) nor children naming the old uid as their owner — and the new object is reconciled by a reconcile of
its own."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.reconciler import core
from okt.testing import RunningOperator, condition, crds, envtest, wait_for

pytestmark = pytest.mark.integration

GROUP = "replaced.okt.io"


class PartConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
data:
  size: "1"
"""


class Parts(okt.Reconciler):
    """Parts owning a ConfigMap; the reconcile of the uid in ``stalled`` waits on entering ``stall_in``, before its
    built-in work, until ``proceed`` is set; the one of the uid in ``held`` waits in the CRChecker until ``release``
    is."""

    api_version = f"{GROUP}/v1"
    kind = "Part"
    plural = "parts"
    owns = (PartConfig,)

    stall_in: ClassVar[okt.State] = okt.State.Updater
    stalled: ClassVar[set[str]] = set()
    held: ClassVar[set[str]] = set()
    reached: ClassVar[threading.Event] = threading.Event()
    proceed: ClassVar[threading.Event] = threading.Event()
    reached_held: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PartConfig(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.CRChecker and ctx.cr.uid in self.held:
            Parts.reached_held.set()
            Parts.release.wait(60)
        if state is self.stall_in and ctx.cr.uid in self.stalled:
            Parts.reached.set()
            Parts.proceed.wait(60)
        super().enter_in_state(state, ctx)


class MergedParts(Parts):
    """Children created and patched, the status merge-patched."""

    apply_strategy = "merge"


class FinalizedParts(Parts):
    """Parts with a finalizer, stalled before the CRChecker adds it: its patch, refused, is reported as an error."""

    finalizer = f"{GROUP}/cleanup"
    stall_in = okt.State.CRChecker

    def cleanup(self, ctx: okt.Context) -> None:
        return None


@pytest.fixture(scope="module")
def part_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(GROUP, "Part", "parts"))
    return kind


@pytest.fixture
def operator_client(control_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    """The operator's own client: its requests are counted apart from the test's."""
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    yield client
    client.close()


def _create(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> str:
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name, "namespace": namespace}}
    return str(kube.create(body, kind)["metadata"]["uid"])


def _uid(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


@pytest.mark.parametrize("reconciler", [Parts, MergedParts, FinalizedParts])
def test_nothing_a_reconcile_of_a_deleted_object_still_writes_lands_on_the_one_created_again_under_its_name(
    kube: kube_client.Client,
    operator_client: kube_client.Client,
    namespace: str,
    part_kind: kinds.Kind,
    reconciler: type[Parts],
) -> None:
    for event in (Parts.reached, Parts.proceed, Parts.reached_held, Parts.release):
        event.clear()
    old = _create(kube, part_kind, namespace, "part")
    Parts.stalled = {old}
    try:
        with RunningOperator.start(operator_client, reconciler, namespaces=[namespace], tune_memory=False) as running:
            assert Parts.reached.wait(30), "the old object's reconcile did not stall"
            kube.delete(part_kind, "part", namespace)
            new = _create(kube, part_kind, namespace, "part")
            Parts.held = {new}
            cache = running.manager.cache
            assert cache is not None
            wait_for(
                lambda: _uid(cache.get(part_kind, "part", namespace)) == new,
                message="the operator's cache to hold the new object",
            )
            before = operator_client.stats.snapshot()
            Parts.proceed.set()  # the old reconcile goes on
            assert Parts.reached_held.wait(30), "the new object's reconcile did not start"
            # The new object's own reconcile waits: what is on the API server now is what the old one wrote.
            children_written = {
                key: n
                for key, n in operator_client.stats.delta(before).items()
                if key[0] in kube_client.WRITE_VERBS and key[1] == "configmaps"
            }
            live = kube.get(part_kind, "part", namespace)
            child = kube.get_or_none(kinds.CONFIG_MAP, "part-config", namespace)

            Parts.release.set()
            wait_for(
                lambda: (condition(kube.get(part_kind, "part", namespace), "Ready") or {}).get("status") == "True",
                message="the new object Ready",
            )
            wait_for(
                lambda: (
                    objects.controller_uid(kube.get_or_none(kinds.CONFIG_MAP, "part-config", namespace) or {}) == new
                ),
                message="the new object's ConfigMap",
            )
            kube.delete(part_kind, "part", namespace)  # its finalizer goes while the operator runs
            wait_for(lambda: kube.get_or_none(part_kind, "part", namespace) is None, message="the new object gone")
    finally:
        Parts.proceed.set()
        Parts.release.set()
        Parts.stalled, Parts.held = set(), set()

    assert live["metadata"]["uid"] == new
    assert (live.get("status") or {}).get("conditions") is None, live.get("status")
    assert not live["metadata"].get("finalizers")
    assert child is None or objects.controller_uid(child) != old, child["metadata"]
    assert children_written == {}


class DeletionSeen(core.ApiReader):
    """A reader that has seen the deletion of the object named ``gone`` and not yet its creation again, as the
    informer's cache has until the watch brings the ADDED event."""

    gone: str | None = None

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        return None if name == self.gone else super().get(kind, name, namespace)


class Replacing(Parts):
    """Parts whose object is deleted and created again on entering SuccessManager (once), before the status write."""

    def __init__(self, kube: kube_client.Client, kind: kinds.Kind, reader: DeletionSeen) -> None:
        self.kube, self.part_kind, self.reader = kube, kind, reader
        self.new_uid: str | None = None

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.SuccessManager and self.new_uid is None:
            self.kube.delete(self.part_kind, ctx.cr.name, ctx.cr.namespace)
            self.new_uid = _create(self.kube, self.part_kind, str(ctx.cr.namespace), ctx.cr.name)
            self.reader.gone = ctx.cr.name
        super().enter_in_state(state, ctx)


def test_a_status_is_not_applied_once_the_cache_saw_the_object_deleted_though_not_yet_created_again(
    kube: kube_client.Client, operator_client: kube_client.Client, namespace: str, part_kind: kinds.Kind
) -> None:
    """The status apply is no write the API server refuses on an object of another uid (the status subresource
    keeps the stored metadata): an object the cache no longer holds is not written, whatever is on the server."""
    _create(kube, part_kind, namespace, "gone")
    assert (
        okt.reconcile(Parts(), operator_client, None, namespace, "gone", kind=part_kind).outcome == okt.Outcome.done()
    )
    kube.patch(part_kind, "gone", {"spec": {"size": 2}}, namespace)  # a status write is due: observedGeneration 2
    reader = DeletionSeen(operator_client)
    reconciler = Replacing(kube, part_kind, reader)
    before = operator_client.stats.snapshot()

    run = okt.reconcile(reconciler, operator_client, reader, namespace, "gone", kind=part_kind)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.results.summary()
    live = kube.get(part_kind, "gone", namespace)
    assert _uid(live) == reconciler.new_uid
    assert (live.get("status") or {}).get("conditions") is None, live.get("status")
    writes = {k: n for k, n in operator_client.stats.delta(before).items() if k[0] in kube_client.WRITE_VERBS}
    assert writes == {}


class DeletionUnseen(core.ApiReader):
    """A reader that has not seen the deletion of the object named ``behind``, nor its creation again: it answers
    with the object as it first read it, as the informer's cache does until the watch brings the DELETED event."""

    behind: str | None = None

    def __init__(self, client: kube_client.Client) -> None:
        super().__init__(client)
        self.seen: dict[str, dict[str, Any]] = {}

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        if name == self.behind and name in self.seen:
            return copy.deepcopy(self.seen[name])
        obj = super().get(kind, name, namespace)
        if obj is not None and kind.kind == "Part":
            self.seen[name] = copy.deepcopy(obj)
        return obj


class ReplacingUnseen(Parts):
    """Parts whose object is deleted and created again on entering SuccessManager (once), before the status write,
    while the reader goes on answering with the old one."""

    def __init__(self, kube: kube_client.Client, kind: kinds.Kind, reader: DeletionUnseen) -> None:
        self.kube, self.part_kind, self.reader = kube, kind, reader
        self.new_uid: str | None = None

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.SuccessManager and self.new_uid is None:
            self.kube.delete(self.part_kind, ctx.cr.name, ctx.cr.namespace)
            self.new_uid = _create(self.kube, self.part_kind, str(ctx.cr.namespace), ctx.cr.name)
            self.reader.behind = ctx.cr.name
        super().enter_in_state(state, ctx)


def test_a_status_is_not_applied_to_an_object_created_again_under_its_name_while_the_cache_still_holds_the_old_one(
    kube: kube_client.Client, operator_client: kube_client.Client, namespace: str, part_kind: kinds.Kind
) -> None:
    """The status subresource keeps the stored metadata (a uid in the apply is not compared), and the cache says the
    old object is still there: the apply is refused all the same, and the reconcile gives up quietly."""
    _create(kube, part_kind, namespace, "unseen")
    assert (
        okt.reconcile(Parts(), operator_client, None, namespace, "unseen", kind=part_kind).outcome == okt.Outcome.done()
    )
    kube.patch(part_kind, "unseen", {"spec": {"size": 2}}, namespace)  # a status write is due: observedGeneration 2
    reader = DeletionUnseen(operator_client)
    reconciler = ReplacingUnseen(kube, part_kind, reader)

    run = okt.reconcile(reconciler, operator_client, reader, namespace, "unseen", kind=part_kind)

    live = kube.get(part_kind, "unseen", namespace)
    assert _uid(live) == reconciler.new_uid
    assert (live.get("status") or {}).get("conditions") is None, live.get("status")
    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.results.summary()
