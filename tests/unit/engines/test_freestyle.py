import pytest

from okt import errors
from okt.engines.freestyle import FreeStyle
from okt.engines.results import Operation, Outcome, OutcomeKind, Results
from okt.engines.states import State
from okt.engines.stepper import Engine


def test_a_successful_hook_is_done_with_its_own_path() -> None:
    calls: list[str] = []
    run = FreeStyle().run(lambda: calls.append("hook"), Results())
    assert calls == ["hook"]
    assert run.path == (State.End,)
    assert run.path_str == ">reconcile>End"
    assert run.engine is Engine.FREESTYLE
    assert run.outcome == Outcome.done()


def test_what_the_hook_records_is_consolidated_like_the_stepper() -> None:
    results = Results()

    def hook() -> None:
        results.add(Operation.CREATED, "v1/ConfigMap ns/a")
        results.add(Operation.REQUEUE, delay=20)
        results.add(Operation.UNCHANGED, "v1/Service ns/a", delay=45)

    run = FreeStyle().run(hook, results)
    assert run.outcome == Outcome.requeue_after(20)
    assert run.results is results


@pytest.mark.parametrize(
    ("exc", "kind", "delay", "reason"),
    [
        (ValueError("bad"), OutcomeKind.RETRY, None, None),
        (errors.TemporaryError("soon", delay=4), OutcomeKind.RETRY, 4.0, None),
        (errors.GiveUp("not mine"), OutcomeKind.GIVE_UP, None, "not mine"),
        (errors.GiveUp("broken", alarming=True), OutcomeKind.GIVE_UP, None, "broken"),
    ],
    ids=["error", "temporary", "give-up", "alarming-give-up"],
)
def test_a_raised_exception_is_recorded_exactly_as_the_stepper_does(
    exc: Exception, kind: OutcomeKind, delay: float | None, reason: str | None
) -> None:
    def hook() -> None:
        raise exc

    run = FreeStyle().run(hook, Results())
    assert (run.outcome.kind, run.outcome.delay, run.outcome.reason) == (kind, delay, reason)
    assert run.outcome.error is (exc if kind is OutcomeKind.RETRY else None)
    assert run.path_str == ">reconcile>End"


def test_base_exceptions_propagate_out_of_freestyle() -> None:
    def hook() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        FreeStyle().run(hook, Results())
