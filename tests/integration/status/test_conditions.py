"""Conditions and observedGeneration as kubectl, kstatus and other controllers read them from a real API server.

The status is written through the ``/status`` subresource, only when it changes; ``lastTransitionTime`` moves only
when a condition's status flips; conditions other writers put in the list survive okt's writes.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import conditions
from okt.testing import condition, envtest, kubectl, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "demo"


def widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[str, Any]:
    return shared.get_widget(kube, kind, namespace, NAME)


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    found = condition(obj, conditions.READY)
    assert found is not None, f"no Ready condition in {obj.get('status')}"
    return found


def transition_time(condition: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.strptime(condition["lastTransitionTime"], "%Y-%m-%dT%H:%M:%S%z")


def wait_for_the_next_second(after: datetime.datetime) -> None:
    """Condition times have one-second precision: let the clock pass ``after`` so a new time would differ."""
    waiting.wait_for(lambda: conditions.utcnow() > after, timeout=3, message=f"the clock to pass {after}")


def kubectl_wait_ready(obj: dict[str, Any]) -> bool:
    """What ``kubectl wait --for=condition=Ready`` checks: a Ready condition with status True, observed at the
    object's current generation when the condition says which generation it observed."""
    generation = obj["metadata"].get("generation")
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type", "").lower() == "ready" and item.get("status", "").lower() == "true":
            observed = item.get("observedGeneration")
            return observed is None or observed == generation
    return False


def kstatus_current(obj: dict[str, Any]) -> bool:
    """kstatus' first rule for custom resources: the status describes the current generation."""
    return (obj.get("status") or {}).get("observedGeneration") == obj["metadata"].get("generation")


@pytest.mark.parametrize(
    ("type_", "status", "reason"),
    [
        (conditions.READY, "True", "Reconciled"),
        (conditions.RECONCILIATION_SUCCESS, "True", "Reconciled"),
        (conditions.DEGRADED, "False", "AsExpected"),
    ],
)
def test_a_successful_reconcile_writes_the_conditions_with_the_observed_generation(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, type_: str, status: str, reason: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    live = widget(kube, widget_kind, namespace)
    found = condition(live, type_)
    assert found is not None
    assert (found["status"], found["reason"]) == (status, reason)
    assert found["observedGeneration"] == live["metadata"]["generation"]
    assert live["status"]["observedGeneration"] == live["metadata"]["generation"]
    assert transition_time(found) <= conditions.utcnow()


def test_a_reconcile_with_nothing_new_writes_no_status(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    written = widget(kube, widget_kind, namespace)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert ("apply", "widgets/status") not in shared.write_requests(kube, before)
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1
    assert widget(kube, widget_kind, namespace)["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]


def test_observed_generation_follows_a_spec_edit_and_ready_keeps_its_transition_time(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    first = widget(kube, widget_kind, namespace)
    wait_for_the_next_second(transition_time(ready(first)))
    shared.settle_deployment(kube, namespace, NAME)
    edited = shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    assert edited["metadata"]["generation"] == first["metadata"]["generation"] + 1
    before = kube.stats.snapshot()

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before)[("apply", "widgets/status")] == 1
    live = widget(kube, widget_kind, namespace)
    assert live["status"]["observedGeneration"] == edited["metadata"]["generation"]
    assert ready(live)["observedGeneration"] == edited["metadata"]["generation"]
    assert ready(live)["status"] == "True"
    assert ready(live)["lastTransitionTime"] == ready(first)["lastTransitionTime"]


@pytest.mark.parametrize("bad_size", [0, 11, "many"])
def test_an_invalid_spec_sets_ready_false_with_invalid_spec_naming_the_field(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, bad_size: object
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=bad_size)

    run = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP  # permanent: reported, then left until the spec changes
    assert run.outcome.reason is not None and run.outcome.reason.startswith("InvalidSpec: spec.size: ")
    assert run.path_str == ">CRChecker>ErrorManager>End"
    live = widget(kube, widget_kind, namespace)
    found = ready(live)
    assert (found["status"], found["reason"]) == ("False", "InvalidSpec")
    assert found["message"].startswith("spec.size: ")
    assert found["observedGeneration"] == live["metadata"]["generation"]
    degraded = condition(live, conditions.DEGRADED)
    assert degraded is not None
    assert (degraded["status"], degraded["reason"]) == ("True", "InvalidSpec")
    for child in ("ConfigMap", "Service"):
        assert shared.get_child(kube, "v1", child, namespace, NAME) is None


def test_the_same_error_twice_keeps_the_last_transition_time(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    first = ready(widget(kube, widget_kind, namespace))
    wait_for_the_next_second(transition_time(first))

    run = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert ready(widget(kube, widget_kind, namespace)) == first


def test_fixing_the_spec_turns_ready_true_with_a_new_transition_time(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    failed = ready(widget(kube, widget_kind, namespace))
    wait_for_the_next_second(transition_time(failed))
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    fixed = ready(widget(kube, widget_kind, namespace))
    assert (fixed["status"], fixed["reason"]) == ("True", "Reconciled")
    assert transition_time(fixed) > transition_time(failed)


def test_a_condition_written_by_another_client_survives_okts_status_writes(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    live = widget(kube, widget_kind, namespace)
    foreign = {
        "type": "example.com/BackedUp",
        "status": "True",
        "reason": "SnapshotTaken",
        "message": "snapshot 42 taken by the backup controller",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    # Another controller does what controllers do: read, append its condition, write the list back (guarded).
    other_client.patch(
        widget_kind,
        NAME,
        {
            "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
            "status": {"conditions": [*live["status"]["conditions"], foreign]},
        },
        namespace,
        subresource="status",
    )
    shared.settle_deployment(kube, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    before = kube.stats.snapshot()

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    # The Widget CRD keeps the list atomic (no list-map schema): a guarded merge patch, which writes it whole.
    assert shared.write_requests(kube, before)[("patch", "widgets/status")] == 1
    after = widget(kube, widget_kind, namespace)
    assert condition(after, "example.com/BackedUp") == foreign
    assert ready(after)["observedGeneration"] == after["metadata"]["generation"]
    types = [item["type"] for item in after["status"]["conditions"]]
    assert types == [item["type"] for item in live["status"]["conditions"]] + ["example.com/BackedUp"]


def test_kubectl_wait_for_condition_ready_succeeds_only_once_the_new_generation_is_reconciled(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert not kubectl_wait_ready(widget(kube, widget_kind, namespace))
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    waiting.wait_for(lambda: kubectl_wait_ready(widget(kube, widget_kind, namespace)), message="Ready")
    shared.settle_deployment(kube, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    stale = widget(kube, widget_kind, namespace)
    assert not kubectl_wait_ready(stale), "a Ready of the previous generation must not satisfy the wait"
    assert not kstatus_current(stale)

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    def ready_now() -> dict[str, Any] | None:
        obj = widget(kube, widget_kind, namespace)
        return obj if kubectl_wait_ready(obj) else None

    current = waiting.wait_for(ready_now, message="Ready at the new generation")
    assert kstatus_current(current)


def test_the_real_kubectl_wait_for_condition_ready_returns_only_for_the_reconciled_generation(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, control_plane: envtest.ControlPlane
) -> None:
    def wait(seconds: int) -> int:
        target = f"{widget_kind.plural}.{shared.GROUP}/{NAME}"
        args = ("wait", "-n", namespace, "--for=condition=Ready", f"--timeout={seconds}s", target)
        return kubectl.kubectl(control_plane.kubeconfig, *args).returncode

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert wait(2) != 0, "no Ready yet"
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    assert wait(20) == 0
    shared.settle_deployment(kube, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    assert wait(2) != 0, "a Ready of the previous generation must not satisfy kubectl wait"

    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert wait(20) == 0
