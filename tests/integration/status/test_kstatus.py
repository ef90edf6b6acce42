"""kstatus, ``kubectl wait`` and okt agree on a custom resource in progress, current, and failed (an invalid spec).

kstatus is not in Python: :func:`kstatus_compute` below re-implements its generic computation for custom resources
(cli-utils ``pkg/kstatus/status``: ``checkGenericProperties``, ``checkGeneration``, then ``checkReadyCondition``,
else Current), rule by rule, and the real ``kubectl wait`` runs against the real API server.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import conditions
from okt.testing import condition, envtest, kubectl
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

IN_PROGRESS, CURRENT, FAILED, TERMINATING = "InProgress", "Current", "Failed", "Terminating"


def kstatus_compute(obj: dict[str, Any]) -> str:
    """kstatus's status of a custom resource (no type-specific rule applies to one)."""
    meta, status = obj["metadata"], obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return TERMINATING
    if "generation" in meta and "observedGeneration" in status and status["observedGeneration"] != meta["generation"]:
        return IN_PROGRESS  # LatestGenerationNotObserved
    found = status.get("conditions") or []
    for item in found:
        if item.get("type") == "Reconciling" and item.get("status") == "True":
            return IN_PROGRESS
        if item.get("type") == "Stalled" and item.get("status") == "True":
            return FAILED
    for item in found:
        if item.get("type") == "Ready":
            if item.get("status") == "True":
                return CURRENT
            if item.get("status") in ("False", "Unknown"):
                return IN_PROGRESS
    return CURRENT  # no condition kstatus knows: assumed reconciled


def kubectl_wait(
    control_plane: envtest.ControlPlane, namespace: str, name: str, condition_type: str, timeout: int = 30
) -> bool:
    """Whether ``kubectl wait`` sees the condition True within ``timeout`` seconds: a wait expected to succeed returns
    as soon as it does (a loaded machine may take more than a second to answer at all), one expected to fail is given
    a second (nothing changes the object meanwhile)."""
    target = f"{shared.WidgetReconciler.plural}.{shared.GROUP}/{name}"
    args = ("wait", "-n", namespace, f"--for=condition={condition_type}", f"--timeout={timeout}s", target)
    return kubectl.kubectl(control_plane.kubeconfig, *args).returncode == 0


class OneCreationAtATime(shared.WidgetReconciler):
    """Creates one child per reconcile: the reconciles before the last one leave work in flight."""

    max_creates: ClassVar[int | None] = 1


def kstatus_conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, int]]:
    """Reconciling and Stalled as written: type -> (status, reason, observedGeneration)."""
    return {
        item["type"]: (item["status"], item["reason"], item["observedGeneration"])
        for item in (obj.get("status") or {}).get("conditions") or []
        if item["type"] in ("Reconciling", "Stalled")
    }


def test_in_progress_then_current_read_the_same_in_kstatus_kubectl_wait_and_okt(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, control_plane: envtest.ControlPlane
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "stepwise", size=1)
    reconciler = OneCreationAtATime()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "stepwise")

    live = shared.get_widget(kube, widget_kind, namespace, "stepwise")
    generation = live["metadata"]["generation"]
    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER  # the other children come next
    assert (condition(live, conditions.READY) or {}).get("status") == "False"
    assert kstatus_conditions(live) == {"Reconciling": ("True", "Creating", generation)}
    assert live["status"]["observedGeneration"] == generation
    assert kstatus_compute(live) == IN_PROGRESS
    assert not kubectl_wait(control_plane, namespace, "stepwise", "Ready", timeout=1)

    for _ in range(2):
        shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "stepwise")

    live = shared.get_widget(kube, widget_kind, namespace, "stepwise")
    assert (condition(live, conditions.READY) or {}).get("status") == "True"
    assert kstatus_conditions(live) == {}
    assert kstatus_compute(live) == CURRENT
    assert kubectl_wait(control_plane, namespace, "stepwise", "Ready")


def test_an_invalid_spec_is_failed_for_kstatus_and_never_ready_for_kubectl_wait_until_it_is_fixed(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, control_plane: envtest.ControlPlane
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "broken", size=0)

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "broken")

    live = shared.get_widget(kube, widget_kind, namespace, "broken")
    generation = live["metadata"]["generation"]
    assert (condition(live, conditions.READY) or {}).get("reason") == "InvalidSpec"
    assert kstatus_conditions(live) == {"Stalled": ("True", "InvalidSpec", generation)}
    assert (condition(live, "Stalled") or {})["message"].startswith("spec.size: ")
    assert kstatus_compute(live) == FAILED
    assert not kubectl_wait(control_plane, namespace, "broken", "Ready", timeout=1)
    assert kubectl_wait(control_plane, namespace, "broken", "Stalled")

    shared.patch_widget_spec(kube, widget_kind, namespace, "broken", size=1)
    assert kstatus_compute(shared.get_widget(kube, widget_kind, namespace, "broken")) == IN_PROGRESS  # not observed
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "broken")

    fixed = shared.get_widget(kube, widget_kind, namespace, "broken")
    assert kstatus_conditions(fixed) == {}
    assert kstatus_compute(fixed) == CURRENT
    assert kubectl_wait(control_plane, namespace, "broken", "Ready")


def test_the_kstatus_conditions_cost_no_write_first_pass_is_children_plus_one_then_nothing(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "counted", size=1)
    reconciler = shared.WidgetReconciler()

    before = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "counted")
    first = shared.write_requests(kube, before)
    shared.settle_deployment(kube, namespace, "counted")
    before = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "counted")
    second = shared.write_requests(kube, before)

    assert sum(first.values()) == len(shared.WidgetReconciler.owns) + 1
    assert second == {}


def test_a_failing_spec_stays_written_once_stalled_costs_no_write_on_the_next_reconcile(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "stuck", size=0)
    reconciler = shared.WidgetReconciler()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "stuck")

    before = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, "stuck")

    assert shared.write_requests(kube, before) == {}
