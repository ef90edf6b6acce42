import dataclasses
from collections.abc import Callable

import pytest

import okt
from okt import errors
from okt.engines.freestyle import FreeStyle
from okt.engines.results import Operation, Outcome, OutcomeKind, Results
from okt.engines.states import State
from okt.engines.stepper import Engine, Run
from okt.kube import kinds
from okt.testing import FakeClient, condition


@dataclasses.dataclass
class Framing:
    """The work FreeStyle drives: the single hook, and the built-in work it frames the hook with."""

    results: Results
    hook: Callable[[], object] = lambda: None
    deleting: bool = False
    builtins: list[State] = dataclasses.field(default_factory=list)
    hooked: int = 0
    raises: dict[State, Exception] = dataclasses.field(default_factory=dict)

    def enter(self, state: State) -> None:
        raise AssertionError("FreeStyle enters no state")

    def builtin(self, state: State) -> None:
        self.builtins.append(state)
        if state in self.raises:
            raise self.raises[state]

    def reconcile(self) -> None:
        self.hooked += 1
        self.hook()

    def finalizing(self) -> bool:
        return self.deleting


def run_with(hook: Callable[[], object], results: Results | None = None, deleting: bool = False) -> tuple[Run, Framing]:
    framing = Framing(results or Results(), hook, deleting)
    return FreeStyle().run(framing, framing.results), framing


def test_a_successful_hook_is_done_with_its_own_path_and_reports_success() -> None:
    run, framing = run_with(lambda: None)

    assert framing.hooked == 1
    assert framing.builtins == [State.CRChecker, State.SuccessManager]
    assert run.path == (State.End,)
    assert run.path_str == ">reconcile>End"
    assert run.engine is Engine.FREESTYLE
    assert run.outcome == Outcome.done()


def test_a_deletion_runs_the_finalizer_work_instead_of_the_hook_and_reports_nothing() -> None:
    run, framing = run_with(lambda: None, deleting=True)

    assert framing.hooked == 0
    assert framing.builtins == [State.CRChecker, State.CRFinalizer]
    assert run.outcome == Outcome.done()


def test_what_the_hook_records_is_consolidated_like_the_stepper() -> None:
    results = Results()

    def hook() -> None:
        results.add(Operation.CREATED, "v1/ConfigMap ns/a")
        results.add(Operation.REQUEUE, delay=20)
        results.add(Operation.UNCHANGED, "v1/Service ns/a", delay=45)

    run, _ = run_with(hook, results)
    assert run.outcome == Outcome.requeue_after(20)
    assert run.results is results


@pytest.mark.parametrize(
    ("exc", "kind", "delay", "reason", "report"),
    [
        (ValueError("bad"), OutcomeKind.RETRY, None, None, [State.ErrorManager]),
        (errors.TemporaryError("soon", delay=4), OutcomeKind.RETRY, 4.0, None, [State.ErrorManager]),
        (errors.GiveUp("not mine"), OutcomeKind.GIVE_UP, None, "not mine", []),
        (errors.GiveUp("broken", alarming=True), OutcomeKind.GIVE_UP, None, "broken", [State.ErrorManager]),
    ],
    ids=["error", "temporary", "give-up", "alarming-give-up"],
)
def test_a_raised_exception_is_recorded_exactly_as_the_stepper_does(
    exc: Exception, kind: OutcomeKind, delay: float | None, reason: str | None, report: list[State]
) -> None:
    def hook() -> None:
        raise exc

    run, framing = run_with(hook)
    assert (run.outcome.kind, run.outcome.delay, run.outcome.reason) == (kind, delay, reason)
    assert run.outcome.error is (exc if kind is OutcomeKind.RETRY else None)
    assert framing.builtins == [State.CRChecker, *report]
    assert run.path_str == ">reconcile>End"


def test_base_exceptions_propagate_out_of_freestyle() -> None:
    def hook() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_with(hook)


@pytest.mark.parametrize(
    ("exc", "kind", "report"),
    [
        (ValueError("ready() failed"), OutcomeKind.RETRY, [State.ErrorManager]),
        (errors.TemporaryError("the status write conflicted", delay=1), OutcomeKind.RETRY, [State.ErrorManager]),
        (errors.GiveUp("broken", alarming=True), OutcomeKind.GIVE_UP, [State.ErrorManager]),
        (errors.GiveUp("not mine"), OutcomeKind.GIVE_UP, []),
    ],
    ids=["error", "temporary", "alarming-give-up", "give-up"],
)
def test_an_error_in_the_success_report_is_reported_by_the_error_manager_as_the_stepper_does(
    exc: Exception, kind: OutcomeKind, report: list[State]
) -> None:
    """The Stepper routes an error of the SuccessManager (a ``ready()`` that raises, a status write that fails) to
    the ErrorManager, which sets Ready=False; FreeStyle's report follows the same rule."""
    framing = Framing(Results(), raises={State.SuccessManager: exc})
    run = FreeStyle().run(framing, framing.results)

    assert framing.builtins == [State.CRChecker, State.SuccessManager, *report]
    assert run.outcome.kind is kind


def test_an_error_the_success_report_records_is_reported_by_the_error_manager() -> None:
    results = Results()
    framing = Framing(results)

    def builtin(state: State) -> None:
        framing.builtins.append(state)
        if state is State.SuccessManager:
            results.add(Operation.STATUS_UPDATE_ERROR, "ns/a", errors.ApiError.from_status(409, "Conflict", "stale"))

    framing.builtin = builtin  # type: ignore[method-assign]
    run = FreeStyle().run(framing, results)

    assert framing.builtins == [State.CRChecker, State.SuccessManager, State.ErrorManager]
    assert run.outcome.kind is OutcomeKind.RETRY


def test_an_error_in_the_error_report_is_recorded_and_the_report_runs_once() -> None:
    def hook() -> None:
        raise ValueError("bad")

    framing = Framing(Results(), hook, raises={State.ErrorManager: RuntimeError("status write failed")})
    run = FreeStyle().run(framing, framing.results)

    assert framing.builtins == [State.CRChecker, State.ErrorManager]
    assert isinstance(run.outcome.error, ValueError)  # the first error wins


THING = kinds.Kind("example.com/v1", "Thing", "things", True)


class Probed(okt.Reconciler):
    """A FreeStyle reconciler whose ``ready()`` can be made to raise."""

    api_version = "example.com/v1"
    kind = "Thing"
    plural = "things"
    engine = okt.FreeStyle()

    def __init__(self) -> None:
        self.failing = False

    def ready(self, ctx: okt.Context) -> tuple[bool, str, str] | bool:
        if self.failing:
            raise ValueError("the readiness probe failed")
        return super().ready(ctx)


def test_a_freestyle_reconcile_whose_success_report_fails_is_not_left_ready() -> None:
    fake = FakeClient(kinds=[THING])
    fake.put({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a", "namespace": "ns"}})
    reconciler = Probed()
    okt.reconcile(reconciler, fake, None, "ns", "a")
    assert condition(fake.stored(THING, "a", "ns"), "Ready")["status"] == "True"

    reconciler.failing = True
    run = okt.reconcile(reconciler, fake, None, "ns", "a")

    assert run.outcome.kind is OutcomeKind.RETRY
    ready = condition(fake.stored(THING, "a", "ns"), "Ready")
    assert (ready["status"], ready["message"]) == ("False", "the readiness probe failed")
