import pytest

from okt.engines.states import HOOKED_STATES, WORKING_STATES, State

OKT_NAMES = [
    "CRChecker",
    "ObjectsGetter",
    "Mutator",
    "Updater",
    "SuccessManager",
    "ErrorManager",
    "GiveupManager",
    "CRFinalizer",
    "End",
]


def test_the_states_are_exactly_okts_nine_in_order() -> None:
    assert [state.value for state in State] == OKT_NAMES


@pytest.mark.parametrize("state", list(State), ids=str)
def test_each_state_is_named_as_its_value_and_compares_as_a_string(state: State) -> None:
    assert state.name == state.value
    assert state == state.value
    assert str(state) == state.value
    assert f"{state}" == state.value


def test_working_states_are_the_states_that_do_the_work() -> None:
    assert (
        frozenset(
            {
                State.CRChecker,
                State.ObjectsGetter,
                State.Mutator,
                State.Updater,
                State.CRFinalizer,
                State.SuccessManager,
            }
        )
        == WORKING_STATES
    )


@pytest.mark.parametrize("state", list(State), ids=str)
def test_every_state_but_giveup_manager_and_end_runs_the_hook(state: State) -> None:
    assert (state in HOOKED_STATES) is (state not in (State.GiveupManager, State.End))


def test_the_error_manager_runs_the_hook_without_being_a_working_state() -> None:
    assert State.ErrorManager in HOOKED_STATES
    assert State.ErrorManager not in WORKING_STATES
