"""The lifecycle on a real kube-apiserver: a move is persisted by the reconcile that made it, whatever the reconcile
did next, so the next reconcile starts from the new phase and never makes the same move twice."""

from __future__ import annotations

import enum
from typing import Any

import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import RunningOperator, condition, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Phase(enum.StrEnum):
    Pending = "Pending"
    Running = "Running"


LIFECYCLE = okt.Lifecycle(
    Phase, initial=Phase.Pending, transitions=[okt.Transition(Phase.Pending, Phase.Running, reason="Started")]
)


class Waiting(shared.WidgetReconciler):
    """Advances the lifecycle on entering ObjectsGetter, then gives up quietly (waiting for something outside)."""

    owns = ()

    def __init__(self) -> None:
        self.progress: list[okt.Progress[Phase]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            self.progress.append(LIFECYCLE.advance(ctx))
            return okt.give_up("waiting for the license server")
        return super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


@pytest.mark.parametrize("persistence", [okt.Persistence.STATUS, okt.Persistence.ANNOTATIONS], ids=str)
def test_a_move_is_persisted_when_the_reconcile_then_gives_up_quietly(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, persistence: okt.Persistence
) -> None:
    reconciler_cls = type("WaitingWidget", (Waiting,), {"persistence": persistence})
    reconciler = reconciler_cls()
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)

    first = okt.reconcile(reconciler, kube, None, namespace, "w")
    assert first.path_str == ">CRChecker>ObjectsGetter>GiveupManager>End"
    assert reconciler.progress[0].moves and reconciler.progress[0].phase is Phase.Running

    stored = kube.get(widget_kind, "w", namespace)
    assert condition(stored, "Phase")["reason"] == "Started"
    writes_before = writes(kube)
    second = okt.reconcile(reconciler, kube, None, namespace, "w")

    assert writes(kube) == writes_before  # nothing moved: a quiet give-up writes nothing
    assert second.path_str == ">CRChecker>ObjectsGetter>GiveupManager>End"
    assert reconciler.progress[1].start is Phase.Running  # not Pending again
    assert not reconciler.progress[1].moves  # the move was made once


def writes(client: kube_client.Client) -> int:
    return sum(n for (verb, _), n in client.stats.snapshot().items() if verb in kube_client.WRITE_VERBS)


STARTED = okt.Lifecycle(
    Phase,
    initial=Phase.Pending,
    transitions=[okt.Transition(Phase.Pending, Phase.Running, reason="Started")],
    requeue_after=None,  # nothing but an event wakes the operator once the Widget runs
)


class Starting(shared.WidgetReconciler):
    """Moves a Widget from Pending to Running at once, the phase in the ``okt.io/phase`` annotation."""

    owns = ()
    persistence = okt.Persistence.ANNOTATIONS

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            STARTED.advance(ctx)
        return super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


def test_a_phase_annotation_edited_by_hand_wakes_the_operator(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)

    def phase() -> str | None:
        annotations = kube.get(widget_kind, "w", namespace)["metadata"].get("annotations") or {}
        return annotations.get("okt.io/phase")

    with RunningOperator.start(kube, Starting, namespaces=[namespace]):
        wait_for(lambda: phase() == "Running", timeout=30)
        # What `kubectl annotate --overwrite widget w okt.io/phase=Pending` does: a person sends the Widget back.
        other_client.patch(widget_kind, "w", {"metadata": {"annotations": {"okt.io/phase": "Pending"}}}, namespace)

        wait_for(lambda: phase() == "Running", timeout=30)  # taken from Pending again, not left there

    stored = kube.get(widget_kind, "w", namespace)
    assert condition(stored, "Phase")["message"] == "phase Running (from Pending)"


class Before(enum.StrEnum):
    """An earlier operator version's phases."""

    Pending = "Pending"
    Installing = "Installing"


class After(enum.StrEnum):
    """The next version's: ``Installing`` is now ``Provisioning``."""

    Pending = "Pending"
    Provisioning = "Provisioning"
    Running = "Running"


BEFORE = okt.Lifecycle(
    Before,
    initial=Before.Pending,
    transitions=[okt.Transition(Before.Pending, Before.Installing, reason="Installing", message="installing")],
    requeue_after=None,
)
AFTER = okt.Lifecycle(
    After,
    initial=After.Pending,
    transitions=[
        okt.Transition(After.Pending, After.Provisioning, reason="Installing"),
        okt.Transition(After.Provisioning, After.Running, when=lambda ctx: False, reason="Installed"),
    ],
    legacy_phases={"Installing": After.Provisioning},
    requeue_after=None,
)


def advancing(lifecycle: okt.Lifecycle[Any], persistence: okt.Persistence) -> type[shared.WidgetReconciler]:
    """A Widget reconciler of one operator version: it advances ``lifecycle`` on entering ObjectsGetter."""

    def enter_in_state(self: shared.WidgetReconciler, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            lifecycle.advance(ctx)
        return shared.WidgetReconciler.enter_in_state(self, state, ctx)

    namespace = {"owns": (), "persistence": persistence, "enter_in_state": enter_in_state, "resources": no_children}
    return type("AdvancingWidget", (shared.WidgetReconciler,), namespace)


def no_children(self: shared.WidgetReconciler, ctx: okt.Context) -> list[okt.Resource]:
    return []


def stored_phase(obj: dict[str, Any], persistence: okt.Persistence) -> str | None:
    if persistence is okt.Persistence.ANNOTATIONS:
        return (obj["metadata"].get("annotations") or {}).get("okt.io/phase")
    return ((obj.get("status") or {}).get("okt") or {}).get("phase")


@pytest.mark.parametrize("persistence", [okt.Persistence.STATUS, okt.Persistence.ANNOTATIONS], ids=str)
def test_a_phase_renamed_by_a_new_operator_version_is_taken_under_its_new_name(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, persistence: okt.Persistence
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    okt.reconcile(advancing(BEFORE, persistence)(), kube, None, namespace, "w")
    assert stored_phase(kube.get(widget_kind, "w", namespace), persistence) == "Installing"

    before = kube.stats.snapshot()

    run = okt.reconcile(advancing(AFTER, persistence)(), kube, None, namespace, "w")  # the operator upgraded

    assert run.outcome == okt.Outcome.done()
    # The phase's new name and the condition that describes it, once: the status apply, and with annotations a
    # metadata patch of the phase annotation.
    moved = {("apply", "widgets/status"): 1}
    if persistence is okt.Persistence.ANNOTATIONS:
        moved[("patch", "widgets")] = 1
    assert shared.write_requests(kube, before) == moved
    stored = kube.get(widget_kind, "w", namespace)
    assert stored_phase(stored, persistence) == "Provisioning"  # written under the new name
    assert condition(stored, "Ready")["status"] == "True"
    phase = condition(stored, "Phase")
    assert (phase["status"], phase["reason"], phase["message"]) == (
        "True",
        "Installing",
        "phase Provisioning (from Pending): installing",
    )
    before = kube.stats.snapshot()
    assert okt.reconcile(advancing(AFTER, persistence)(), kube, None, namespace, "w").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


class Launching(shared.WidgetReconciler):
    """Takes a Widget from Pending to Running in its first reconcile (what entering Running does, it does once)."""

    owns = ()

    def __init__(self) -> None:
        self.progress: list[okt.Progress[Phase]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            self.progress.append(STARTED.advance(ctx))
        return super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


def test_a_phase_removed_from_the_status_is_restored_from_the_phase_condition_and_said(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    reconciler = Launching()
    okt.reconcile(reconciler, kube, None, namespace, "w")
    assert stored_phase(kube.get(widget_kind, "w", namespace), okt.Persistence.STATUS) == "Running"
    # Someone removes okt's bookkeeping from the status (the conditions stay).
    kube.patch(widget_kind, "w", {"status": {"okt": None}}, namespace, subresource="status")
    recorder = events.EventRecorder(kube, "widget")

    with structlog.testing.capture_logs() as logs:
        okt.reconcile(reconciler, kube, None, namespace, "w", recorder=recorder)

    assert (reconciler.progress[1].start, reconciler.progress[1].moves) == (Phase.Running, ())  # not started again
    stored = kube.get(widget_kind, "w", namespace)
    assert stored_phase(stored, okt.Persistence.STATUS) == "Running"
    phase = condition(stored, "Phase")
    assert (phase["status"], phase["reason"]) == ("True", "PhaseRestored")
    assert phase["message"] == (
        "phase Running (restored from this condition: status.okt.phase was missing; the lifecycle goes on from here)"
    )
    warnings = [(e["reason"], e["message"]) for e in kube.list(kube.resolve("v1", "Event"), namespace)[0]]
    told = "status.okt.phase was missing: phase Running restored from the Phase condition"
    assert warnings == [("PhaseRestored", told)]
    assert [e["phase"] for e in logs if e["event"] == "lifecycle phase restored"] == ["Running"]


class Stage(enum.StrEnum):
    Pending = "Pending"
    Provisioning = "Provisioning"
    Running = "Running"


PROVISIONED = okt.Lifecycle(
    Stage,
    initial=Stage.Pending,
    transitions=[
        okt.Transition(Stage.Pending, Stage.Provisioning, reason="Provisioning", message="installing"),
        okt.Transition(Stage.Provisioning, Stage.Running, when=lambda ctx: ctx.spec.size >= 2, reason="Installed"),
    ],
    ready={Stage.Running},
    requeue_after=None,
)


@pytest.mark.parametrize("persistence", [okt.Persistence.STATUS, okt.Persistence.ANNOTATIONS], ids=str)
def test_ready_is_false_with_the_phase_outside_the_ready_phases_and_the_reconcilers_in_them(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, persistence: okt.Persistence
) -> None:
    reconciler = advancing(PROVISIONED, persistence)()
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)

    okt.reconcile(reconciler, kube, None, namespace, "w")

    stored = kube.get(widget_kind, "w", namespace)
    assert stored_phase(stored, persistence) == "Provisioning"
    ready = condition(stored, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "Provisioning",
        "phase Provisioning (from Pending): installing",
    )
    before = kube.stats.snapshot()
    okt.reconcile(reconciler, kube, None, namespace, "w")  # still Provisioning: the same report, not written again
    assert shared.write_requests(kube, before) == {}

    shared.patch_widget_spec(kube, widget_kind, namespace, "w", size=2)
    okt.reconcile(reconciler, kube, None, namespace, "w")

    stored = kube.get(widget_kind, "w", namespace)
    assert stored_phase(stored, persistence) == "Running"
    ready = condition(stored, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True",
        "Reconciled",
        "every child is in its desired state",
    )
    before = kube.stats.snapshot()
    okt.reconcile(reconciler, kube, None, namespace, "w")
    assert shared.write_requests(kube, before) == {}


GATED = okt.Lifecycle(
    Phase,
    initial=Phase.Pending,
    transitions=[okt.Transition(Phase.Pending, Phase.Running, when=lambda ctx: False, reason="Approved")],
)


class Gated(shared.WidgetReconciler):
    """Keeps the phase in the status, so that only what may write the status moves it; nothing approves the move."""

    owns = ()
    persistence = okt.Persistence.STATUS

    def __init__(self) -> None:
        self.progress: list[okt.Progress[Phase]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            self.progress.append(GATED.advance(ctx))
        return super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


def test_a_phase_annotation_a_new_object_is_created_with_is_not_its_phase_under_status_persistence(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    body = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        # What anyone who may create a Widget (and not write its status) can send.
        "metadata": {"name": "w", "namespace": namespace, "annotations": {"okt.io/phase": "Running"}},
        "spec": {"size": 1},
    }
    kube.create(body, widget_kind)
    reconciler = Gated()

    okt.reconcile(reconciler, kube, None, namespace, "w")

    assert reconciler.progress[0].start is Phase.Pending
    stored = kube.get(widget_kind, "w", namespace)
    assert stored["status"]["okt"]["phase"] == "Pending"
    assert "okt.io/phase" not in (stored["metadata"].get("annotations") or {})
    assert condition(stored, "Phase")["message"] == "phase Pending (initial)"
