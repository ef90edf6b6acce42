import concurrent.futures
import threading

import pytest

from okt.engines.machine import TABLE, Edge, Facts, Guard, Machine
from okt.engines.states import WORKING_STATES, State

DEFAULT_CHILD = {
    State.CRChecker: State.ObjectsGetter,
    State.ObjectsGetter: State.Mutator,
    State.Mutator: State.Updater,
    State.Updater: State.SuccessManager,
    State.SuccessManager: State.End,
    State.CRFinalizer: State.End,
    State.ErrorManager: State.End,
    State.GiveupManager: State.End,
}

NOTHING = Facts(error=False, give_up=False, finalizing=False)
EVERYTHING = Facts(error=True, give_up=True, finalizing=True)


def _facts_for(guard: Guard) -> Facts:
    """Facts under which ``guard`` holds and every guard of higher priority fails."""
    return Facts(error=guard is Guard.ERROR, give_up=guard is Guard.GIVE_UP, finalizing=guard is Guard.FINALIZING)


def _expected_table() -> list[Edge]:
    expected: list[Edge] = []
    for source in State:
        if source in WORKING_STATES:
            expected.append(Edge(source, State.ErrorManager, Guard.ERROR))
            expected.append(Edge(source, State.GiveupManager, Guard.GIVE_UP))
            if source is State.CRChecker:
                expected.append(Edge(source, State.CRFinalizer, Guard.FINALIZING))
            expected.append(Edge(source, DEFAULT_CHILD[source], Guard.ALWAYS))
        elif source is State.ErrorManager:
            expected.append(Edge(source, State.GiveupManager, Guard.GIVE_UP))
            expected.append(Edge(source, State.End, Guard.ALWAYS))
        elif source is State.GiveupManager:
            expected.append(Edge(source, State.End, Guard.ALWAYS))
    return expected


def test_the_table_is_the_designed_machine_in_priority_order() -> None:
    assert sorted(TABLE, key=lambda e: list(State).index(e.source)) == _expected_table()


@pytest.mark.parametrize("edge", TABLE, ids=lambda e: f"{e.source}-{e.guard.name}-{e.dest}")
def test_each_edge_is_taken_when_its_guard_is_the_first_that_holds(edge: Edge) -> None:
    m = Machine(initial=edge.source)
    assert m.advance(_facts_for(edge.guard)) is edge.dest
    assert m.state is edge.dest


@pytest.mark.parametrize(
    ("source", "dest"),
    [(source, State.ErrorManager) for source in sorted(WORKING_STATES)]
    + [(State.ErrorManager, State.GiveupManager), (State.GiveupManager, State.End)],
    ids=str,
)
def test_when_every_fact_holds_the_highest_priority_edge_wins(source: State, dest: State) -> None:
    assert Machine(initial=source).advance(EVERYTHING) is dest


@pytest.mark.parametrize("source", sorted(WORKING_STATES), ids=str)
def test_an_error_outranks_a_give_up_in_every_working_state(source: State) -> None:
    assert Machine(initial=source).advance(Facts(error=True, give_up=True, finalizing=False)) is State.ErrorManager


@pytest.mark.parametrize("source", sorted(WORKING_STATES - {State.CRChecker}), ids=str)
def test_finalizing_is_only_noticed_from_cr_checker(source: State) -> None:
    assert Machine(initial=source).advance(Facts(error=False, give_up=False, finalizing=True)) is DEFAULT_CHILD[source]


def test_error_manager_ignores_errors_and_routes_give_up_or_end() -> None:
    assert Machine(State.ErrorManager).advance(Facts(error=True, give_up=False, finalizing=True)) is State.End
    assert Machine(State.ErrorManager).advance(Facts(error=True, give_up=True, finalizing=False)) is State.GiveupManager


def test_with_no_facts_the_machine_walks_the_success_chain() -> None:
    m = Machine()
    walked = [m.state]
    while m.state is not State.End:
        walked.append(m.advance(NOTHING))
    assert walked == [
        State.CRChecker,
        State.ObjectsGetter,
        State.Mutator,
        State.Updater,
        State.SuccessManager,
        State.End,
    ]


@pytest.mark.parametrize("facts", [NOTHING, EVERYTHING], ids=["nothing", "everything"])
def test_advancing_from_end_is_a_runtime_error(facts: Facts) -> None:
    m = Machine(initial=State.End)
    with pytest.raises(RuntimeError, match="no edge leaves End"):
        m.advance(facts)
    assert m.state is State.End


def test_edges_are_read_back_from_the_machine_and_equal_the_table() -> None:
    assert Machine().edges() == TABLE


def test_machines_are_independent_of_each_other() -> None:
    first, second = Machine(), Machine()
    first.advance(Facts(error=True, give_up=False, finalizing=False))
    assert (first.state, second.state) == (State.ErrorManager, State.CRChecker)


def test_the_state_is_always_a_state_member() -> None:
    m = Machine()
    m.advance(NOTHING)
    assert type(m.state) is State


def test_facts_and_edges_are_immutable_values() -> None:
    with pytest.raises(AttributeError):
        NOTHING.error = True  # type: ignore[misc]
    with pytest.raises(AttributeError):
        TABLE[0].dest = State.End  # type: ignore[misc]


def test_concurrent_reconciles_share_the_library_machine_without_sharing_state() -> None:
    """Every facade walks the routes read back from the one ``transitions`` machine with a state of its own: threads
    walking different paths at once each end where their own facts lead."""
    routes = {
        "success": (NOTHING, [State.ObjectsGetter, State.Mutator, State.Updater, State.SuccessManager, State.End]),
        "error": (Facts(error=True, give_up=False, finalizing=False), [State.ErrorManager]),
        "finalizing": (Facts(error=False, give_up=False, finalizing=True), [State.CRFinalizer]),
    }
    barrier = threading.Barrier(len(routes) * 4)

    def walk(route: str) -> list[State]:
        facts, expected = routes[route]
        m = Machine()
        barrier.wait()
        return [m.advance(facts) for _ in expected]

    with concurrent.futures.ThreadPoolExecutor(len(routes) * 4) as pool:
        walks = {route: [pool.submit(walk, route) for _ in range(4)] for route in routes}
    for route, futures in walks.items():
        assert all(future.result() == routes[route][1] for future in futures)
