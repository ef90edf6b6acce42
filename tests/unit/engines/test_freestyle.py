import dataclasses
from collections.abc import Callable

import pytest

from okt import errors
from okt.engines.freestyle import FreeStyle
from okt.engines.results import Operation, Outcome, OutcomeKind, Results
from okt.engines.states import State
from okt.engines.stepper import Engine, Run


@dataclasses.dataclass
class Framing:
    """The work FreeStyle drives: the single hook, and the built-in work it frames the hook with."""

    results: Results
    hook: Callable[[], object] = lambda: None
    deleting: bool = False
    builtins: list[State] = dataclasses.field(default_factory=list)
    hooked: int = 0

    def enter(self, state: State) -> None:
        raise AssertionError("FreeStyle enters no state")

    def builtin(self, state: State) -> None:
        self.builtins.append(state)

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
