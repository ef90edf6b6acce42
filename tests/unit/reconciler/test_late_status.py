"""What a hook sets on the status after okt's built-in work of SuccessManager or ErrorManager — its code after
``super().enter_in_state(state, ctx)``, as the README's example is written, or a timer's — is written with it, in the
one status write of the reconcile; and a reconcile after it that finds everything in place writes nothing."""

from __future__ import annotations

from typing import ClassVar

import okt
from okt.testing import FakeClient, condition
from tests.unit.reconciler.webapps import WEBAPP, webapp


class LateReporter(okt.Reconciler):
    """Sets a status field and a condition of its own after the built-in work of the state it reports in."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    failing: ClassVar[bool] = False

    def check(self, ctx: okt.Context) -> None:
        if self.failing:
            raise okt.TemporaryError("the backend is away")

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state in (okt.State.SuccessManager, okt.State.ErrorManager):
            ctx.status_fields["reportedIn"] = state.value
            ctx.conditions.set("BackupReady", not self.failing, "Checked", f"checked in {state.value}")


class FailingLateReporter(LateReporter):
    failing: ClassVar[bool] = True


class TimedReporter(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    @okt.every(hours=1)
    def census(self, ctx: okt.Context) -> None:
        ctx.status_fields["census"] = 3


def writes(fake: FakeClient) -> int:
    return sum(count for (verb, _), count in fake.stats.snapshot().items() if verb in ("patch", "apply", "update"))


def test_a_status_field_and_a_condition_set_after_the_built_in_success_work_are_written_in_its_one_write() -> None:
    fake = webapp()

    okt.reconcile(LateReporter(), fake, None, "shop", "web")

    status = fake.stored(WEBAPP, "web", "shop")["status"]
    assert status["reportedIn"] == "SuccessManager"
    backup = condition(fake.stored(WEBAPP, "web", "shop"), "BackupReady")
    assert backup is not None and backup["status"] == "True"
    assert writes(fake) == 1
    okt.reconcile(LateReporter(), fake, None, "shop", "web")
    assert writes(fake) == 1, "a reconcile that finds everything in place writes nothing"


def test_a_status_field_and_a_condition_set_after_the_built_in_error_work_are_written_in_its_one_write() -> None:
    fake = webapp()

    okt.reconcile(FailingLateReporter(), fake, None, "shop", "web")

    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored["status"]["reportedIn"] == "ErrorManager"
    backup = condition(stored, "BackupReady")
    assert backup is not None and backup["status"] == "False"
    ready = condition(stored, "Ready")
    assert ready is not None and ready["status"] == "False"
    assert writes(fake) == 1


def test_a_status_field_a_timer_sets_is_written() -> None:
    fake = webapp()

    okt.reconcile(TimedReporter(), fake, None, "shop", "web")

    assert fake.stored(WEBAPP, "web", "shop")["status"]["census"] == 3


class RaisingAfterSuccess(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.SuccessManager:
            raise okt.TemporaryError("the report could not be sent")


def test_a_success_whose_hook_then_fails_is_written_once_as_the_error() -> None:
    fake = webapp()

    okt.reconcile(RaisingAfterSuccess(), fake, None, "shop", "web")

    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None and (ready["status"], ready["message"]) == ("False", "the report could not be sent")
    assert writes(fake) == 1, "not Ready=True first, then Ready=False"
