"""What the ErrorManager writes for an error, reconciled with the in-memory client: Ready=False with the error's
reason and message, whatever the error class names its reason, and back to True once the error is gone; and nothing
written about a primary the API failed to read (the reconcile ends in a retry, never raises)."""

from __future__ import annotations

from typing import ClassVar

import pydantic
import pytest
import structlog.testing

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import FakeClient, condition
from tests.unit.reconciler.webapps import WEBAPP, webapp


class QuotaExceeded(okt.TemporaryError):
    """An operator's own error kind, its reason spelled as free text rather than the API's CamelCase."""

    reason: ClassVar[str] = "quota exceeded"


class WebAppReconciler(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    failing: ClassVar[bool] = False

    def check(self, ctx: okt.Context) -> None:
        if self.failing:
            raise QuotaExceeded("the namespace quota is used up")


class Failing(WebAppReconciler):
    failing: ClassVar[bool] = True


def ready_after(reconciler: okt.Reconciler, fake: FakeClient) -> tuple[str, str, str]:
    okt.reconcile(reconciler, fake, None, "shop", "web")
    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None
    return ready["status"], ready["reason"], ready["message"]


def test_an_error_whose_reason_is_not_camel_case_still_turns_ready_false_then_recovery_turns_it_true() -> None:
    fake = webapp()
    assert ready_after(WebAppReconciler(), fake)[0] == "True"

    assert ready_after(Failing(), fake) == ("False", "QuotaExceeded", "the namespace quota is used up")
    assert ready_after(WebAppReconciler(), fake)[:2] == ("True", "Reconciled")


class Bare(WebAppReconciler):
    def check(self, ctx: okt.Context) -> None:
        raise RuntimeError  # no text at all: a bare raise, an assert without message


def test_an_exception_without_text_still_says_what_was_raised() -> None:
    fake = webapp()

    assert ready_after(Bare(), fake) == ("False", "ReconcileError", "RuntimeError")


class _Replicas(pydantic.BaseModel):
    replicas: int = 0


class Counting(WebAppReconciler):
    """Reports a replica count in its status, through a status model."""

    status_model = _Replicas
    replicas: ClassVar[object] = 2

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["replicas"] = self.replicas


class Miscounting(Counting):
    replicas: ClassVar[object] = "many"  # a bug of the operator: not what its status model declares


def test_status_fields_the_status_model_refuses_turn_ready_false_naming_the_field() -> None:
    fake = webapp()
    assert ready_after(Counting(), fake)[0] == "True"

    status, reason, message = ready_after(Miscounting(), fake)

    assert (status, reason) == ("False", "ReconcileError")
    assert message.startswith("status.replicas: Input should be a valid integer")
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None and stored["status"]["replicas"] == 2  # the refused value is not written


class Impatient(WebAppReconciler):
    def ready(self, ctx: okt.Context) -> bool:
        return okt.requeue_after(5)  # type: ignore[return-value]  # an outcome, where a bool is expected


def test_a_ready_hook_returning_an_outcome_is_the_operators_bug_not_a_ready_object() -> None:
    fake = webapp()

    status, reason, message = ready_after(Impatient(), fake)

    assert (status, reason) == ("False", "ReconcileError")
    assert message == (
        "ready returned requeue_after(5.0): it returns a bool or (status, reason, message); an outcome is returned "
        "by enter_in_state, check or cleanup"
    )


class Hostless(WebAppReconciler):
    def check(self, ctx: okt.Context) -> None:
        raise okt.InvalidSpec("must name a host", field="spec.host")


class Unpayable(WebAppReconciler):
    def check(self, ctx: okt.Context) -> None:
        raise okt.GiveUp("the payment provider refused the account", alarming=True)


@pytest.mark.parametrize(
    ("reconciler", "ready"),
    [
        (Hostless(), ("False", "InvalidSpec", "spec.host: must name a host")),
        (Unpayable(), ("False", "GiveUp", "the payment provider refused the account")),
    ],
    ids=["permanent error", "alarming give-up"],
)
def test_a_give_up_whose_report_failed_is_retried_until_ready_says_false(
    reconciler: okt.Reconciler, ready: tuple[str, str, str]
) -> None:
    fake = webapp()
    assert ready_after(WebAppReconciler(), fake)[0] == "True"
    fake.fail("patch", "webapps/status", okt.ApiError.from_status(409, "Conflict", "the object has been modified"))

    run = okt.reconcile(reconciler, fake, None, "shop", "web")

    assert run.outcome.kind is okt.OutcomeKind.RETRY  # a give-up would wait for a change that may never come
    assert ready_after(reconciler, fake) == ready
    assert okt.reconcile(reconciler, fake, None, "shop", "web").outcome.kind is okt.OutcomeKind.GIVE_UP


def test_an_alarming_give_up_is_reported_once_while_the_object_does_not_change() -> None:
    fake = webapp()
    fake.serve(kinds.EVENT)
    recorder = events.EventRecorder(fake, "webapp-controller")
    okt.reconcile(Unpayable(), fake, None, "shop", "web", recorder=recorder)
    assert [(e["type"], e["reason"]) for e in fake.objects(kinds.EVENT)] == [("Warning", "GiveUp")]
    before = fake.stats.snapshot()

    run = okt.reconcile(Unpayable(), fake, None, "shop", "web", recorder=recorder)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert {key: n for key, n in fake.stats.delta(before).items() if key[0] in kube_client.WRITE_VERBS} == {}
    assert [e.get("count", 1) for e in fake.objects(kinds.EVENT)] == [1]


class UnsupportedPlan(WebAppReconciler):
    """Finds the spec unusable only after the SuccessManager's work, which set Ready True in the working copy."""

    error: ClassVar[Exception] = okt.PermanentError("the plan is not supported")

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            raise self.error


class UnpayablePlan(UnsupportedPlan):
    error: ClassVar[Exception] = okt.GiveUp("the payment provider refused the account", alarming=True)


@pytest.mark.parametrize(
    "reconciler", [UnsupportedPlan(), UnpayablePlan()], ids=["permanent error", "alarming give-up"]
)
def test_an_error_raised_after_the_success_is_set_is_reported_once_while_the_object_does_not_change(
    reconciler: okt.Reconciler,
) -> None:
    fake = webapp()
    recorder = events.EventRecorder(fake, "webapp-controller")
    okt.reconcile(reconciler, fake, None, "shop", "web", recorder=recorder)
    before = fake.stats.snapshot()

    run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=recorder)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert {key: n for key, n in fake.stats.delta(before).items() if key[0] in kube_client.WRITE_VERBS} == {}
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None and stored["status"]["okt"] == {"errorCount": 1}
    assert [e.get("count", 1) for e in fake.objects(kinds.EVENT)] == [1]


def test_a_primary_the_api_fails_to_read_is_retried_and_never_taken_for_gone() -> None:
    fake = webapp()
    fake.fail("get", "webapps", okt.ApiError.from_status(500, "InternalError", "etcdserver: request timed out"))

    run = okt.reconcile(WebAppReconciler(), fake, None, "shop", "web")

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(run.outcome.error, okt.ServerError)
    assert run.path_str == ">CRChecker>ErrorManager>End"
    assert run.results.count(okt.Operation.CR_NOT_FOUND) == 0
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None and "status" not in stored  # nothing written about an object okt could not read

    assert okt.reconcile(WebAppReconciler(), fake, None, "shop", "web").outcome.kind is okt.OutcomeKind.DONE


class Runaway(WebAppReconciler):
    engine = okt.Stepper(max_steps=3)  # stopped in the Updater, before the SuccessManager


def test_a_reconcile_the_step_limit_stops_turns_ready_false() -> None:
    fake = webapp()
    assert ready_after(WebAppReconciler(), fake)[0] == "True"

    run = okt.reconcile(Runaway(), fake, None, "shop", "web")

    assert run.outcome == okt.give_up("infinite loop")
    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "GiveUp", "infinite loop")


class Undecodable(WebAppReconciler):
    def check(self, ctx: okt.Context) -> None:
        # A name read from bytes that are not UTF-8 (a file name, a process's output) keeps them as lone surrogates.
        name = b"config-\xff.yaml".decode("utf-8", errors="surrogateescape")
        raise RuntimeError(f"cannot read {name}")


def test_an_error_message_that_is_not_valid_utf8_still_turns_ready_false_with_a_readable_message() -> None:
    fake = webapp()
    assert ready_after(WebAppReconciler(), fake)[0] == "True"

    assert ready_after(Undecodable(), fake) == ("False", "ReconcileError", "cannot read config-\ufffd.yaml")


class _Credentials(pydantic.BaseModel, extra="forbid"):
    user: str


SECRET_DATA = {"user": "shop", "password": "hunter2"}
"""What a hook read from a Secret (the source lines in a logged stack name it, never its values)."""


class ReadsCredentials(WebAppReconciler):
    """A hook's bug: the Secret's data it read is validated with a model it does not fit."""

    def check(self, ctx: okt.Context) -> None:
        _Credentials.model_validate(SECRET_DATA)


def test_a_validation_error_of_a_hooks_own_model_is_reported_in_one_line_without_the_values_it_was_given() -> None:
    fake = webapp()
    fake.serve(kinds.EVENT)
    recorder = events.EventRecorder(fake, "webapp-controller")

    with structlog.testing.capture_logs() as logged:
        okt.reconcile(ReadsCredentials(), fake, None, "shop", "web", recorder=recorder)

    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "ReconcileError")
    assert ready["message"] == "_Credentials: password: Extra inputs are not permitted"
    assert [e["message"] for e in fake.objects(kinds.EVENT)] == [ready["message"]]
    assert "hunter2" not in repr(logged)
    bug = [line for line in logged if line["log_level"] == "error"]
    assert len(bug) == 1 and "_Credentials.model_validate(SECRET_DATA)" in bug[0]["stack"]  # the bug, by its line
