"""The status of a kind whose CRD was written by hand, as users bring them: a kubebuilder-style status schema that
declares ``conditions`` (``metav1.Condition``) and ``observedGeneration`` only, and so none of the other fields okt
writes (``relatedObjects``, its bookkeeping); or one that bounds condition messages tighter than ``metav1.Condition``.
okt's conditions land, and a reconcile with nothing new writes nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import condition, crds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

other_client = shared.other_client

GROUP = "handwritten.okt.io"

CONDITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    "properties": {
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "message": {"type": "string", "maxLength": 32768},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "reason": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1024,
            "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        },
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "type": {"type": "string", "maxLength": 316},
    },
}
"""``metav1.Condition`` as controller-gen writes it."""


def hand_written_crd(
    kind: str = "Gadget", plural: str = "gadgets", message_max: int = 32768, condition_generation: bool = True
) -> dict[str, Any]:
    """``condition_generation`` False: a condition type of the operator's own, older than ``metav1.Condition``, that
    has no ``observedGeneration`` (the server prunes okt's)."""
    crd = crds.schemaless_crd(GROUP, kind, plural)
    items = copy.deepcopy(CONDITION_SCHEMA)
    items["properties"]["message"]["maxLength"] = message_max
    if not condition_generation:
        del items["properties"]["observedGeneration"]
    conditions = {
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    }
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {
                "type": "object",
                "properties": {
                    "conditions": conditions,
                    "observedGeneration": {"type": "integer", "format": "int64"},
                },
            },
        },
    }
    return crd


class Gadget(okt.Reconciler):
    """No children; states ``status.replicas`` too, which the hand-written schema does not declare either."""

    api_version = f"{GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["replicas"] = 3


@pytest.fixture(scope="module")
def gadget_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(hand_written_crd())
    return kind


def make_gadget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> None:
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"size": 1}}, kind)


def reconciler(strategy: str) -> okt.Reconciler:
    made: okt.Reconciler = type("Gadget", (Gadget,), {"apply_strategy": strategy})()
    return made


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_status_fields_a_hand_written_schema_does_not_declare_are_pruned_once_and_then_cost_no_write(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, strategy: str
) -> None:
    make_gadget(kube, gadget_kind, namespace, "g")
    first = okt.reconcile(reconciler(strategy), kube, None, namespace, "g", kind=gadget_kind)
    assert first.outcome == okt.Outcome.done()
    before = kube.stats.snapshot()

    run = okt.reconcile(reconciler(strategy), kube, None, namespace, "g", kind=gadget_kind)

    assert shared.write_requests(kube, before) == {}
    assert run.outcome == okt.Outcome.done()
    live = kube.get(gadget_kind, "g", namespace)
    ready = condition(live, "Ready")
    assert ready is not None and ready["status"] == "True", live.get("status")
    assert live["status"]["observedGeneration"] == live["metadata"]["generation"]
    assert "relatedObjects" not in live["status"] and "replicas" not in live["status"]


class Gizmo(okt.Reconciler):
    """Fails with a message longer than its hand-written CRD allows a condition's."""

    api_version = f"{GROUP}/v1"
    kind = "Gizmo"
    plural = "gizmos"

    def check(self, ctx: okt.Context) -> None:
        raise okt.PermanentError("the spec is broken: " + "é" * 300)


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_condition_messages_longer_than_a_hand_written_schema_allows_are_cut_to_fit_and_then_cost_no_write(
    kube: kube_client.Client, namespace: str, apply_crd: Any, strategy: str
) -> None:
    kind: kinds.Kind = apply_crd(hand_written_crd("Gizmo", "gizmos", message_max=100))
    make_gadget(kube, kind, namespace, "z")
    gizmo: okt.Reconciler = type("Gizmo", (Gizmo,), {"apply_strategy": strategy})()
    first = okt.reconcile(gizmo, kube, None, namespace, "z", kind=kind)
    assert first.outcome.kind is okt.OutcomeKind.GIVE_UP, first.outcome  # reported: no 422 of the report to retry
    before = kube.stats.snapshot()

    okt.reconcile(gizmo, kube, None, namespace, "z", kind=kind)

    assert shared.write_requests(kube, before) == {}
    ready = condition(kube.get(kind, "z", namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "PermanentError"), ready
    assert ready["message"].startswith("the spec is broken: é") and ready["message"].endswith("\u2026")
    assert len(ready["message"].encode("utf-8")) <= 100


class Broken(okt.Reconciler):
    """Fails for good, with a message its hand-written CRD keeps whole, or one longer than it allows."""

    api_version = f"{GROUP}/v1"
    message = "the spec is broken"

    def check(self, ctx: okt.Context) -> None:
        raise okt.PermanentError(self.message)


@pytest.mark.parametrize("strategy", ["apply", "merge"])
@pytest.mark.parametrize(
    ("kind_name", "message_max", "condition_generation", "message"),
    [
        ("Doodad", 32768, True, "the spec is broken"),
        ("Gimcrack", 100, True, "the spec is broken: " + "é" * 300),
        ("Thingamajig", 32768, False, "the spec is broken"),
    ],
    ids=["pruned fields", "cut message", "pruned condition generation"],
)
def test_a_permanent_error_on_a_hand_written_schema_is_reported_once_its_retries_write_no_event(
    kube: kube_client.Client,
    namespace: str,
    apply_crd: Any,
    strategy: str,
    kind_name: str,
    message_max: int,
    condition_generation: bool,
    message: str,
) -> None:
    """The report stored is what the schema kept of it (okt's bookkeeping and relatedObjects pruned, a message cut):
    a retry that would say the same is judged the same, at zero writes — no status write, no Event count bumped."""
    plural = kind_name.lower() + "s"
    kind: kinds.Kind = apply_crd(hand_written_crd(kind_name, plural, message_max, condition_generation))
    make_gadget(kube, kind, namespace, "b")
    broken: okt.Reconciler = type(
        kind_name, (Broken,), {"kind": kind_name, "plural": plural, "apply_strategy": strategy, "message": message}
    )()
    recorder = events.EventRecorder(kube, "broken")
    first = okt.reconcile(broken, kube, None, namespace, "b", kind=kind, recorder=recorder)
    assert first.outcome.kind is okt.OutcomeKind.GIVE_UP, first.outcome
    before = kube.stats.snapshot()

    for _ in range(2):
        okt.reconcile(broken, kube, None, namespace, "b", kind=kind, recorder=recorder)

    assert shared.write_requests(kube, before) == {}
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == "b"]
    assert (event["reason"], event["count"]) == ("PermanentError", 1)


@pytest.fixture(scope="module")
def pruned_generation_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(hand_written_crd("Gewgaw", "gewgaws", condition_generation=False))
    return kind


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_an_edit_of_okts_condition_after_a_write_the_schema_pruned_is_put_back_by_the_next_reconcile(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    pruned_generation_kind: kinds.Kind,
    strategy: str,
) -> None:
    """The difference okt's write left (each condition's observedGeneration, pruned) is the one a reconcile with the
    same status finds after someone edited okt's Ready too: that edit is put back all the same."""
    kind = pruned_generation_kind
    gewgaw: okt.Reconciler = type(
        "Gewgaw", (Gadget,), {"kind": "Gewgaw", "plural": "gewgaws", "apply_strategy": strategy}
    )()
    make_gadget(kube, kind, namespace, "e")
    assert okt.reconcile(gewgaw, kube, None, namespace, "e", kind=kind).outcome == okt.Outcome.done()
    written = condition(kube.get(kind, "e", namespace), "Ready")
    assert written is not None and "observedGeneration" not in written
    index = [c["type"] for c in kube.get(kind, "e", namespace)["status"]["conditions"]].index("Ready")
    edit = [{"op": "replace", "path": f"/status/conditions/{index}/message", "value": "edited by hand"}]
    other_client.patch(kind, "e", edit, namespace, patch_type="json", subresource="status", field_manager="editor")

    okt.reconcile(gewgaw, kube, None, namespace, "e", kind=kind)

    assert condition(kube.get(kind, "e", namespace), "Ready") == written
    before = kube.stats.snapshot()
    okt.reconcile(gewgaw, kube, None, namespace, "e", kind=kind)
    assert shared.write_requests(kube, before) == {}
