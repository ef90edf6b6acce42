import concurrent.futures
import dataclasses
from collections.abc import Callable

import pytest

from okt import errors
from okt.engines.results import Operation, Outcome, OutcomeKind, Results
from okt.engines.states import State
from okt.engines.stepper import RUNAWAY_REASON, Engine, Run, Stepper

SUCCESS = ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"
CHAIN = [State.CRChecker, State.ObjectsGetter, State.Mutator, State.Updater, State.SuccessManager]

Action = Callable[[Results], object]


@dataclasses.dataclass
class Script:
    """A fake reconciler: what to do on entering each state, and the states it was called in."""

    results: Results
    actions: dict[State, Action] = dataclasses.field(default_factory=dict)
    called: list[State] = dataclasses.field(default_factory=list)
    is_finalizing: Callable[[], bool] = lambda: False

    def enter(self, state: State) -> None:
        self.called.append(state)
        action = self.actions.get(state)
        if action is not None:
            action(self.results)

    def builtin(self, state: State) -> None:
        raise AssertionError("the Stepper enters states, it never asks for the built-in work alone")

    def reconcile(self) -> None:
        raise AssertionError("the Stepper has no single hook")

    def finalizing(self) -> bool:
        return self.is_finalizing()


def _raise(exc: BaseException) -> Action:
    def action(_: Results) -> None:
        raise exc

    return action


def _run(
    actions: dict[State, Action] | None = None,
    finalizing: bool = False,
    stepper: Stepper | None = None,
) -> tuple[Run, Script]:
    results = Results()
    script = Script(results, actions or {}, is_finalizing=lambda: finalizing)
    run = (stepper or Stepper()).run(script, results)
    return run, script


def _path_through(state: State) -> str:
    """The success chain up to and including ``state``."""
    return "".join(f">{s}" for s in CHAIN[: CHAIN.index(state) + 1])


def test_success_walks_every_working_state_and_is_done() -> None:
    run, script = _run()
    assert run.path_str == SUCCESS
    assert run.path == (*CHAIN, State.End)
    assert run.outcome == Outcome.done()
    assert script.called == CHAIN
    assert run.engine is Engine.STEPPER


@pytest.mark.parametrize("state", CHAIN, ids=str)
def test_an_error_raised_in_a_working_state_routes_to_the_error_manager(state: State) -> None:
    error = ValueError("broken")
    run, script = _run({state: _raise(error)})
    assert run.path_str == f"{_path_through(state)}>ErrorManager>End"
    assert run.outcome == Outcome.retry(error)
    assert script.called[-1] is State.ErrorManager


@pytest.mark.parametrize("state", CHAIN, ids=str)
def test_an_error_recorded_in_a_working_state_routes_like_a_raised_one(state: State) -> None:
    error = errors.ApiError.from_status(409, "Conflict", "stale")

    def record(results: Results) -> None:
        results.add(Operation.CRUD_ERROR, "v1/ConfigMap ns/a", error=error)

    run, _ = _run({state: record})
    assert run.path_str == f"{_path_through(state)}>ErrorManager>End"
    assert run.outcome == Outcome.retry(error)


@pytest.mark.parametrize("state", CHAIN, ids=str)
def test_a_quiet_give_up_goes_straight_to_the_giveup_manager(state: State) -> None:
    run, script = _run({state: _raise(errors.GiveUp("not mine"))})
    assert run.path_str == f"{_path_through(state)}>GiveupManager>End"
    assert run.outcome == Outcome.give_up("not mine")
    assert State.ErrorManager not in script.called


@pytest.mark.parametrize("state", CHAIN, ids=str)
def test_an_alarming_give_up_runs_the_error_manager_first(state: State) -> None:
    run, script = _run({state: _raise(errors.GiveUp("quota exceeded", alarming=True))})
    assert run.path_str == f"{_path_through(state)}>ErrorManager>GiveupManager>End"
    assert run.outcome == Outcome.give_up("quota exceeded")
    assert script.called[-1] is State.ErrorManager


def test_a_give_up_recorded_without_raising_routes_the_same() -> None:
    run, _ = _run({State.CRChecker: lambda results: results.give_up("custom resource deleted")})
    assert run.path_str == ">CRChecker>GiveupManager>End"


def test_the_giveup_manager_and_end_never_run_the_step() -> None:
    _, script = _run({State.Mutator: _raise(errors.GiveUp("stop", alarming=True))})
    assert State.GiveupManager not in script.called
    assert State.End not in script.called


def test_finalizing_goes_from_cr_checker_to_the_finalizer() -> None:
    run, script = _run(finalizing=True)
    assert run.path_str == ">CRChecker>CRFinalizer>End"
    assert script.called == [State.CRChecker, State.CRFinalizer]
    assert run.outcome == Outcome.done()


def test_an_error_during_finalizing_routes_to_the_error_manager() -> None:
    error = RuntimeError("cleanup failed")

    def cleanup(results: Results) -> None:
        results.add(Operation.CLEANUP_ERROR, "external bucket", error=error)

    run, _ = _run({State.CRFinalizer: cleanup}, finalizing=True)
    assert run.path_str == ">CRChecker>CRFinalizer>ErrorManager>End"
    assert run.outcome == Outcome.retry(error)


@pytest.mark.parametrize("record", ["error", "give-up"])
def test_finalizing_is_not_asked_when_cr_checker_already_failed_or_gave_up(record: str) -> None:
    asked: list[bool] = []

    def finalizing() -> bool:
        asked.append(True)
        return True

    def check(results: Results) -> None:
        if record == "error":
            results.add(Operation.HOOK_ERROR, error=ValueError("x"))
        else:
            results.give_up("custom resource deleted")

    results = Results()
    run = Stepper().run(Script(results, {State.CRChecker: check}, is_finalizing=finalizing), results)
    assert asked == []
    assert State.CRFinalizer not in run.path


def test_a_failing_finalizing_question_is_recorded_and_routes_to_the_error_manager() -> None:
    def finalizing() -> bool:
        raise KeyError("metadata")

    results = Results()
    run = Stepper().run(Script(results, is_finalizing=finalizing), results)
    assert run.path_str == ">CRChecker>ErrorManager>End"
    assert isinstance(run.outcome.error, KeyError)


def test_an_error_raised_inside_the_success_manager_routes_to_the_error_manager() -> None:
    error = errors.ApiError.from_status(422, "Invalid", "status.conditions")
    run, _ = _run({State.SuccessManager: _raise(error)})
    assert run.path_str == f"{SUCCESS.removesuffix('>End')}>ErrorManager>End"
    assert run.outcome == Outcome.retry(error)


def test_an_error_inside_the_error_manager_does_not_loop() -> None:
    first, second = ValueError("first"), RuntimeError("in the error manager")
    run, script = _run({State.Updater: _raise(first), State.ErrorManager: _raise(second)})
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>ErrorManager>End"
    assert script.called.count(State.ErrorManager) == 1
    assert run.outcome == Outcome.retry(first)
    assert [entry.error for entry in run.results.entries] == [first, second]


def test_a_give_up_raised_inside_the_error_manager_still_reaches_the_giveup_manager() -> None:
    run, _ = _run({State.Mutator: _raise(ValueError("x")), State.ErrorManager: _raise(errors.GiveUp("enough"))})
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>ErrorManager>GiveupManager>End"
    assert run.outcome == Outcome.give_up("enough")


def test_a_temporary_error_retries_after_its_delay() -> None:
    error = errors.TemporaryError("dependency not ready", delay=15)
    run, _ = _run({State.ObjectsGetter: _raise(error)})
    assert run.outcome == Outcome.retry(error, delay=15)


def test_a_requested_requeue_without_error_is_a_requeue_after() -> None:
    run, _ = _run({State.Updater: lambda results: results.add(Operation.REQUEUE, delay=30)})
    assert run.path_str == SUCCESS
    assert run.outcome == Outcome.requeue_after(30)


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(2)], ids=lambda exc: type(exc).__name__)
def test_base_exceptions_propagate_out_of_the_engine(exc: BaseException) -> None:
    with pytest.raises(type(exc)):
        _run({State.Mutator: _raise(exc)})


def test_the_runaway_guard_gives_up_alarmingly_and_reports_it_through_the_error_manager() -> None:
    run, script = _run(stepper=Stepper(max_steps=3))
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>ErrorManager>GiveupManager>End"
    assert run.outcome == Outcome.give_up(RUNAWAY_REASON)
    assert run.results.give_up_alarming
    assert script.called == [State.CRChecker, State.ObjectsGetter, State.Mutator, State.Updater, State.ErrorManager]


def test_the_runaway_guard_stopping_in_the_error_manager_does_not_run_it_twice() -> None:
    run, script = _run({State.ObjectsGetter: _raise(ValueError("broken"))}, stepper=Stepper(max_steps=2))
    assert run.path_str == ">CRChecker>ObjectsGetter>ErrorManager>GiveupManager>End"
    assert run.outcome == Outcome.give_up(RUNAWAY_REASON)
    assert script.called == [State.CRChecker, State.ObjectsGetter, State.ErrorManager]


def test_exactly_max_steps_transitions_are_allowed() -> None:
    run, _ = _run(stepper=Stepper(max_steps=5))
    assert run.path_str == SUCCESS
    assert run.outcome == Outcome.done()


def test_the_default_step_limit_lets_the_longest_path_finish() -> None:
    run, _ = _run({State.SuccessManager: _raise(errors.GiveUp("late", alarming=True))})
    assert run.path_str == f"{SUCCESS.removesuffix('>End')}>ErrorManager>GiveupManager>End"
    assert run.outcome == Outcome.give_up("late")


@pytest.mark.parametrize("max_steps", [0, -1])
def test_a_step_limit_below_one_is_refused(max_steps: int) -> None:
    with pytest.raises(ValueError, match="max_steps"):
        Stepper(max_steps=max_steps)


def test_parallel_reconciles_never_share_give_up_or_results() -> None:
    stepper = Stepper()

    def reconcile(index: int) -> tuple[int, Run]:
        actions: dict[State, Action] = {}
        if index % 2:
            actions[State.Mutator] = lambda results: results.give_up(f"reason {index}")
        else:
            actions[State.Updater] = lambda results: results.add(Operation.REQUEUE, delay=index + 1)
        results = Results()
        return index, stepper.run(Script(results, actions), results)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(reconcile, range(200)))

    for index, run in runs:
        assert len(run.results.entries) == 1
        if index % 2:
            assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>GiveupManager>End"
            assert run.outcome == Outcome.give_up(f"reason {index}")
        else:
            assert run.path_str == SUCCESS
            assert run.outcome.kind is OutcomeKind.REQUEUE_AFTER
            assert run.outcome.delay == index + 1
    assert len({id(run.results) for _, run in runs}) == 200
