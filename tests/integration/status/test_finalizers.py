"""Finalizers on a real API server: added on the first reconcile, removed only after a successful cleanup, never
someone else's, and a deletion that happened while no reconcile ran is still cleaned up."""

from __future__ import annotations

import http.server
import json
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import children
from okt.runtime import certs
from okt.status import events
from okt.testing import condition, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "demo"
FINALIZER = "test.okt.io/cleanup"
FOREIGN = "example.com/keep-until-archived"
VALIDATING = kinds.Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)


class CleanupWidgetReconciler(shared.WidgetReconciler):
    """A Widget reconciler whose deletion needs a cleanup that fails until ``cleanup_works`` flips."""

    finalizer = FINALIZER

    def __init__(self, *, cleanup_works: bool = True, retry_after: float | None = None) -> None:
        self.cleanup_works = cleanup_works
        self.retry_after = retry_after
        self.cleanups = 0

    def cleanup(self, ctx: okt.Context) -> None:
        self.cleanups += 1
        if not self.cleanup_works:
            raise okt.TemporaryError("the external bucket is not empty yet", delay=self.retry_after)


def create_widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, *finalizers: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {"size": 1},
    }
    if finalizers:
        body["metadata"]["finalizers"] = list(finalizers)
    return kube.create(body, kind)


def finalizers_of(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> list[str] | None:
    """The Widget's finalizers, or None once it is gone."""
    live = kube.get_or_none(kind, NAME, namespace)
    return None if live is None else list(live["metadata"].get("finalizers") or [])


def wait_until_gone(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> None:
    waiting.wait_for(lambda: kube.get_or_none(kind, NAME, namespace) is None, message=f"{kind.kind}/{NAME} gone")


def test_the_first_reconcile_adds_the_finalizer(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    create_widget(kube, widget_kind, namespace)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(CleanupWidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert run.results.counts()[okt.Operation.FINALIZER_ADDED] == 1
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]
    assert shared.write_requests(kube, before)[("patch", "widgets")] == 1
    steady = kube.stats.snapshot()
    shared.reconcile_widget(CleanupWidgetReconciler(), kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, steady) == {}


@pytest.mark.parametrize("retry_after", [None, 7.0])
def test_a_failing_cleanup_keeps_the_finalizer_and_retries_until_it_succeeds(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, retry_after: float | None
) -> None:
    reconciler = CleanupWidgetReconciler(cleanup_works=False, retry_after=retry_after)
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    kube.delete(widget_kind, NAME, namespace)

    failed = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert failed.path_str == ">CRChecker>CRFinalizer>ErrorManager>End"
    assert failed.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(failed.outcome.error, okt.TemporaryError)
    assert failed.outcome.delay == retry_after, "None: the work queue's backoff decides"
    assert reconciler.cleanups == 1
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "TemporaryError",
        f"deletion blocked by finalizer {FINALIZER}: the external bucket is not empty yet",
    )

    reconciler.cleanup_works = True
    done = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert done.path_str == ">CRChecker>CRFinalizer>End"
    assert done.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 2
    assert done.results.counts()[okt.Operation.FINALIZER_REMOVED] == 1
    wait_until_gone(kube, widget_kind, namespace)


def test_a_failing_cleanup_says_on_the_object_and_in_a_warning_event_that_the_deletion_is_blocked_and_why(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler = CleanupWidgetReconciler(cleanup_works=False)
    recorder = events.EventRecorder(kube, "widget-controller")
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)
    kube.delete(widget_kind, NAME, namespace)

    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)

    # A Terminating object whose Ready says only "the external bucket is not empty yet" reads as any failed
    # reconcile: what holds it, and why, is what the person waiting for the deletion needs.
    said = f"deletion blocked by finalizer {FINALIZER}: the external bucket is not empty yet"
    live = shared.get_widget(kube, widget_kind, namespace, NAME)
    ready = condition(live, "Ready")
    assert ready is not None
    assert (ready["status"], ready["message"]) == ("False", said)
    items, _ = kube.list(kinds.EVENT, namespace)
    warnings = [
        e["message"]
        for e in items
        if e["involvedObject"].get("uid") == live["metadata"]["uid"] and e["type"] == "Warning"
    ]
    assert warnings == [said]

    reconciler.cleanup_works = True
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)
    wait_until_gone(kube, widget_kind, namespace)


def test_a_finalizer_added_by_another_controller_is_never_removed(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler = CleanupWidgetReconciler()
    create_widget(kube, widget_kind, namespace, FOREIGN)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert finalizers_of(kube, widget_kind, namespace) == [FOREIGN, FINALIZER]
    kube.delete(widget_kind, NAME, namespace)

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 1
    assert finalizers_of(kube, widget_kind, namespace) == [FOREIGN]
    before = kube.stats.snapshot()
    again = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert again.path_str == ">CRChecker>CRFinalizer>End"
    assert reconciler.cleanups == 1, "our finalizer is gone: nothing left for us to clean up"
    assert shared.write_requests(kube, before) == {}
    assert finalizers_of(kube, widget_kind, namespace) == [FOREIGN]

    # The other controller finishes its own work; only then does the object go.
    live = shared.get_widget(other_client, widget_kind, namespace, NAME)
    other_client.patch(
        widget_kind,
        NAME,
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ],
        namespace,
        patch_type="json",
    )
    wait_until_gone(kube, widget_kind, namespace)


def test_a_finalizer_list_changed_during_cleanup_makes_the_removal_retry_instead_of_clobbering_it(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    class RacedReconciler(CleanupWidgetReconciler):
        """While okt cleans up, the other controller finishes and removes its own finalizer (index 0)."""

        def cleanup(self, ctx: okt.Context) -> None:
            super().cleanup(ctx)
            if self.cleanups == 1:
                other_client.patch(
                    widget_kind,
                    NAME,
                    [
                        {"op": "test", "path": "/metadata/finalizers/0", "value": FOREIGN},
                        {"op": "remove", "path": "/metadata/finalizers/0"},
                    ],
                    namespace,
                    patch_type="json",
                )

    reconciler = RacedReconciler()
    create_widget(kube, widget_kind, namespace, FOREIGN)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert finalizers_of(kube, widget_kind, namespace) == [FOREIGN, FINALIZER]
    kube.delete(widget_kind, NAME, namespace)

    raced = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    # okt read [FOREIGN, FINALIZER] and would remove index 1; the list is now [FINALIZER]. The JSON patch tests the
    # resourceVersion first, so the server refuses it instead of applying it to a list okt never saw (a failed
    # "test" operation is answered 422 Invalid), and okt asks for the same fast retry as after a 409.
    assert raced.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(raced.outcome.error, errors.TemporaryError)
    assert isinstance(raced.outcome.error.__cause__, errors.Invalid)
    assert raced.outcome.delay == children.CONFLICT_DELAY
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]

    settled = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert settled.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 2, "cleanup runs again: it must be idempotent"
    wait_until_gone(kube, widget_kind, namespace)


def test_a_cr_deleted_while_okt_was_down_is_cleaned_up_at_the_next_reconcile(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler = CleanupWidgetReconciler()
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    kube.delete(widget_kind, NAME, namespace)  # no reconcile runs: okt is down

    waiting.wait_for(
        lambda: shared.get_widget(kube, widget_kind, namespace, NAME)["metadata"].get("deletionTimestamp"),
        message="the deletion to be recorded",
    )
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER], "the finalizer holds the object for us"
    assert reconciler.cleanups == 0

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.path_str == ">CRChecker>CRFinalizer>End"
    assert run.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 1
    wait_until_gone(kube, widget_kind, namespace)
    gone = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert gone.outcome == okt.Outcome.give_up("cr not found")
    assert reconciler.cleanups == 1


CHILDREN = {"configmaps", "services", "deployments"}


@pytest.mark.parametrize("finalizer", [FINALIZER, None], ids=["held-by-the-finalizer", "gone-at-once"])
def test_a_cr_deleted_during_its_reconcile_gets_no_child_created_after_its_deletion_began(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    finalizer: str | None,
) -> None:
    class DeletedMidway(CleanupWidgetReconciler):
        """Someone deletes the Widget while okt works out its children, after the CRChecker read it."""

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            other_client.delete(widget_kind, NAME, namespace)
            if finalizer is None:
                waiting.wait_for(
                    lambda: other_client.get_or_none(widget_kind, NAME, namespace) is None, message="the Widget gone"
                )
            return super().resources(ctx)

    DeletedMidway.finalizer = finalizer
    reconciler = DeletedMidway()
    create_widget(kube, widget_kind, namespace, *([finalizer] if finalizer else []))
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    written = {resource for _, resource in shared.write_requests(kube, before)}
    assert CHILDREN.isdisjoint(written), "children written for an object being deleted"
    assert okt.Operation.CREATED not in run.results.counts()
    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, "quiet: the deletion's own reconcile follows"
    if finalizer is None:
        return
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is None or ready["status"] != "True", "no Ready=True said of an object being deleted"

    cleaned = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert cleaned.path_str == ">CRChecker>CRFinalizer>End"
    assert reconciler.cleanups == 1
    wait_until_gone(kube, widget_kind, namespace)


class TieredSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1, le=10)
    replicas: int = 1

    @pydantic.field_validator("replicas")
    @classmethod
    def within_size(cls, replicas: int, info: pydantic.ValidationInfo) -> int:
        # The usual pitfall: when ``size`` failed, info.data has no "size" and this raises KeyError, which pydantic
        # lets through instead of reporting a validation error.
        if replicas > info.data["size"]:
            raise ValueError("more replicas than size")
        return replicas


def test_a_spec_whose_validation_crashes_still_lets_the_cleanup_run_on_deletion(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    class TieredReconciler(CleanupWidgetReconciler):
        spec_model = TieredSpec

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return []

    reconciler = TieredReconciler()
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]
    other_client.patch(widget_kind, NAME, {"spec": {"size": 0, "replicas": 2}}, namespace)
    kube.delete(widget_kind, NAME, namespace)

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.path_str == ">CRChecker>CRFinalizer>End"
    assert run.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 1
    wait_until_gone(kube, widget_kind, namespace)


def test_a_finalizer_listed_twice_is_released_by_the_one_cleanup(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler = CleanupWidgetReconciler()
    create_widget(kube, widget_kind, namespace, FINALIZER, FOREIGN, FINALIZER)  # the API server keeps both entries
    kube.delete(widget_kind, NAME, namespace)

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 1
    assert finalizers_of(kube, widget_kind, namespace) == [FOREIGN]
    again = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert again.outcome == okt.Outcome.done()
    assert reconciler.cleanups == 1
    live = kube.get(widget_kind, NAME, namespace)
    kube.patch(
        widget_kind,
        NAME,
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ],
        namespace,
        patch_type="json",
    )
    wait_until_gone(kube, widget_kind, namespace)


class WaitingCleanupWidgetReconciler(shared.WidgetReconciler):
    """A Widget reconciler whose cleanup answers with an outcome until ``finished`` flips (an external deletion that
    takes a while, or one that needs a human)."""

    finalizer = FINALIZER

    def __init__(self, answer: okt.Outcome) -> None:
        self.answer = answer
        self.finished = False
        self.cleanups = 0

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        self.cleanups += 1
        return None if self.finished else self.answer


@pytest.mark.parametrize(
    ("answer", "path", "kind"),
    [
        (okt.requeue_after(30), ">CRChecker>CRFinalizer>End", okt.OutcomeKind.REQUEUE_AFTER),
        (
            okt.give_up("the bucket holds objects under legal hold"),
            ">CRChecker>CRFinalizer>ErrorManager>GiveupManager>End",
            None,
        ),
    ],
    ids=["requeue_after", "give_up"],
)
def test_a_cleanup_that_answers_requeue_after_or_give_up_keeps_the_finalizer_until_it_returns_none(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, answer: okt.Outcome, path: str, kind: Any
) -> None:
    reconciler = WaitingCleanupWidgetReconciler(answer)
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    kube.delete(widget_kind, NAME, namespace)

    waiting_run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert waiting_run.path_str == path
    assert waiting_run.outcome.kind is (kind or okt.OutcomeKind.GIVE_UP)
    assert okt.Operation.FINALIZER_REMOVED not in waiting_run.results.counts()
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]

    reconciler.finished = True
    done = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert done.path_str == ">CRChecker>CRFinalizer>End"
    assert done.results.counts()[okt.Operation.FINALIZER_REMOVED] == 1
    assert reconciler.cleanups == 2
    wait_until_gone(kube, widget_kind, namespace)


class GaugeReconciler(okt.Reconciler):
    api_version = f"{shared.GROUP}/v1"
    kind = "Gauge"
    plural = "gauges"
    finalizer = FINALIZER


def test_a_finalizer_patch_the_api_server_finds_invalid_reports_why_instead_of_a_lost_race(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    gauge_kind: kinds.Kind = apply_crd(shared.sized_crd(shared.GROUP, "Gauge", "gauges", None))
    kube.create(
        {
            "apiVersion": gauge_kind.api_version,
            "kind": "Gauge",
            "metadata": {"name": NAME, "namespace": namespace},
            "spec": {"size": 100},
        },
        gauge_kind,
    )
    try:
        # The schema got stricter: every write of the stored object is now refused.
        apply_crd(shared.sized_crd(shared.GROUP, "Gauge", "gauges", 10))

        def refused() -> bool:
            try:
                other_client.patch(gauge_kind, NAME, {"metadata": {"labels": {"probe": "x"}}}, namespace)
            except errors.Invalid:
                return True
            return False

        waiting.wait_for(refused, message="the stricter schema to be enforced")

        recorder = events.EventRecorder(kube, "gauge-controller")
        run = okt.reconcile(GaugeReconciler(), kube, None, namespace, NAME, kind=gauge_kind, recorder=recorder)

        assert run.outcome.kind is okt.OutcomeKind.RETRY
        assert isinstance(run.outcome.error, errors.Invalid), "the server's reason, not a race that never happened"
        assert run.outcome.delay is None, "backed off, not the fast retry of a lost race"
        assert "spec.size" in str(run.outcome.error)
        # The status write is refused too (the object fails its schema): the Warning event is what says why.
        uid = kube.get(gauge_kind, NAME, namespace)["metadata"]["uid"]
        items, _ = kube.list(kinds.EVENT, namespace)
        warnings = [e["message"] for e in items if e["involvedObject"].get("uid") == uid and e["type"] == "Warning"]
        assert warnings and all("spec.size" in message for message in warnings)
    finally:
        apply_crd(shared.sized_crd(shared.GROUP, "Gauge", "gauges", None))
        kube.delete(gauge_kind, NAME, namespace)


class GivingUpCleanupWidgetReconciler(shared.WidgetReconciler):
    """A Widget reconciler whose cleanup gives up, in one of the ways a hook can, until ``finished`` flips."""

    finalizer = FINALIZER

    def __init__(self, how: str) -> None:
        self.how = how
        self.finished = False

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        if self.finished:
            return None
        if self.how == "returned":
            return okt.give_up(LEGAL_HOLD)
        if self.how == "ctx":
            ctx.give_up(LEGAL_HOLD)
            return None
        if self.how == "raised":
            raise okt.GiveUp(LEGAL_HOLD)
        if self.how == "alarming":
            raise okt.GiveUp(LEGAL_HOLD, alarming=True)
        raise errors.PermanentError(LEGAL_HOLD)


class GivingUpOnEnteringCRFinalizer(GivingUpCleanupWidgetReconciler):
    """OKT's way: the cleanup written on entering CRFinalizer, giving up before okt's built-in work (``hook-returned``,
    ``hook-raised``), until ``finished`` flips."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.CRFinalizer and not self.finished:
            if self.how == "hook-raised":
                raise okt.GiveUp(LEGAL_HOLD)
            return okt.give_up(LEGAL_HOLD)
        return super().enter_in_state(state, ctx)


LEGAL_HOLD = "the bucket holds objects under legal hold"
BLOCKED = f"deletion blocked by finalizer {FINALIZER}: "


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("returned", "GiveUp"),
        ("ctx", "GiveUp"),
        ("raised", "GiveUp"),
        ("alarming", "GiveUp"),
        ("permanent", "PermanentError"),
        ("hook-returned", "GiveUp"),
        ("hook-raised", "GiveUp"),
    ],
)
def test_a_cleanup_that_gives_up_says_why_on_the_object_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, how: str, reason: str
) -> None:
    hooked = how.startswith("hook-")
    reconciler = (GivingUpOnEnteringCRFinalizer if hooked else GivingUpCleanupWidgetReconciler)(how)
    recorder = events.EventRecorder(kube, "widget-controller")
    create_widget(kube, widget_kind, namespace)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)
    kube.delete(widget_kind, NAME, namespace)

    stuck = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)

    assert stuck.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert finalizers_of(kube, widget_kind, namespace) == [FINALIZER]
    live = shared.get_widget(kube, widget_kind, namespace, NAME)
    ready = condition(live, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", reason, f"{BLOCKED}{LEGAL_HOLD}")
    items, _ = kube.list(kinds.EVENT, namespace)
    warnings = [
        (e["reason"], e["message"])
        for e in items
        if e["involvedObject"].get("uid") == live["metadata"]["uid"] and e["type"] == "Warning"
    ]
    assert warnings == [(reason, f"{BLOCKED}{LEGAL_HOLD}")]

    # Left alone, the object is not written again: a restart or a resync finds the give-up reported.
    before = kube.stats.snapshot()
    again = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)
    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.write_requests(kube, before) == {}

    reconciler.finished = True
    done = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)
    assert done.results.counts()[okt.Operation.FINALIZER_REMOVED] == 1
    wait_until_gone(kube, widget_kind, namespace)


WITH_CAUSES: dict[str, Any] = {
    "status": "Failure",
    "code": 422,
    "reason": "Invalid",
    "message": "spec.size: must be at most 10",
    "details": {"causes": [{"reason": "FieldValueInvalid", "message": "must be at most 10", "field": "spec.size"}]},
}
"""A refusal whose cause names the field, with a message that says nothing of an object that "is invalid" (the words
are the webhook's own)."""
WITHOUT_CAUSES: dict[str, Any] = {
    "status": "Failure",
    "code": 422,
    "reason": "Invalid",
    "message": "widgets of size 1 are no longer sold",
}
"""A refusal that names no field and says nothing of an object that "is invalid": only its own words."""


class _Refusing(http.server.BaseHTTPRequestHandler):
    """A validating webhook that refuses every request with its server's ``status`` (one of the two above)."""

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = self.server.status  # type: ignore[attr-defined]
        answer = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": False, "status": status},
        }
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(params=[WITH_CAUSES])
def refusing_webhook(request: pytest.FixtureRequest, kube: kube_client.Client) -> Iterator[str]:
    """A webhook refusing every update of the Widgets labelled with the label this yields (its value: ``yes``) with
    the Status it is given as its parameter (a refusal with causes unless told otherwise)."""
    bundle = certs.self_signed()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    server.status = request.param  # type: ignore[attr-defined]
    context = bundle.server_context()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    name = f"refuse-{secrets.token_hex(3)}"
    label = f"test.okt.io/{name}"
    webhook = {
        "name": f"{name}.test.okt.io",
        "clientConfig": {"url": f"https://127.0.0.1:{server.server_address[1]}/", "caBundle": bundle.ca_bundle()},
        "rules": [
            {"operations": ["UPDATE"], "apiGroups": [shared.GROUP], "apiVersions": ["v1"], "resources": ["widgets"]}
        ],
        "objectSelector": {"matchLabels": {label: "yes"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    }
    configuration = {
        "apiVersion": VALIDATING.api_version,
        "kind": VALIDATING.kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    }
    kube.create(configuration, VALIDATING)
    try:
        yield label
    finally:
        kube.delete(VALIDATING, name)
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("refusing_webhook", "causes", "words"),
    [(WITH_CAUSES, ["spec.size"], "must be at most 10"), (WITHOUT_CAUSES, [], "no longer sold")],
    indirect=["refusing_webhook"],
    ids=["with-causes", "without-causes"],
)
def test_a_finalizer_patch_a_webhook_refuses_is_reported_and_backed_off_not_retried_as_a_race(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    refusing_webhook: str,
    causes: list[str],
    words: str,
) -> None:
    """Whatever its message says: with causes, the fields they name; without, in words of its own (the object read
    again is at the resourceVersion the refused patch tested, so no one raced it)."""
    body: dict[str, Any] = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        "metadata": {"name": NAME, "namespace": namespace, "labels": {refusing_webhook: "yes"}},
        "spec": {"size": 1},
    }
    kube.create(body, widget_kind)

    def refused() -> bool:
        try:
            kube.patch(widget_kind, NAME, {"metadata": {"annotations": {"probe": secrets.token_hex(3)}}}, namespace)
        except errors.Invalid:
            return True
        return False

    waiting.wait_for(refused, message="the webhook to be called")

    run = shared.reconcile_widget(CleanupWidgetReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(run.outcome.error, errors.Invalid), "the webhook's refusal, not a race that never happened"
    assert run.outcome.delay is None, "backed off, not the fast retry of a lost race"
    assert [cause.field for cause in run.outcome.error.causes] == causes
    assert words in str(run.outcome.error)
    assert finalizers_of(kube, widget_kind, namespace) == []
