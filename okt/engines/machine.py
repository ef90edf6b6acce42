"""The Stepper's transition table and a small typed facade over the ``transitions`` library.

Why this exists: the routing of a reconcile (which state follows which, and when errors, give-ups and finalization
take over) must be readable in one place and impossible to bypass. It is :data:`TABLE`, one literal tuple of
:class:`Edge` values. :class:`Machine` builds a ``transitions.Machine`` from it and exposes only typed operations, so
callers never touch the library's string names or its runtime-attached ``to_x()`` / ``is_x()`` methods.

Guarantees:

* edges leaving a state are tried in table order and the first whose guard holds is taken (``transitions``'
  first-match semantics over the conditions of one trigger, over the edges read back from it), which gives the
  priority error > give-up > finalizing > default child;
* from every state but ``End`` some edge always matches (each has an ``ALWAYS`` edge last), so :meth:`Machine.advance`
  raising ``RuntimeError`` means a broken table, never a broken reconcile;
* :meth:`Machine.edges` reads the edges back from the ``transitions`` object, so anything generated from it (the
  diagram) shows what really runs.

Caveats: build one :class:`Machine` per reconcile (it holds that reconcile's state). The ``transitions.Machine`` is
built once, at import, without a model, and its edges are read back once into a per-state route list that
:meth:`Machine.advance` walks: the same first-match over the same edges, with no per-step work of the library's
(event data, callback lists, debug logging — 90 µs for the five steps of a reconcile, 7 % of a reconcile that
changes nothing, against a few µs). Nothing changes the routes after import, so concurrent reconciles share them.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import transitions

from okt.engines.states import State

_TRIGGER = "step"


class Guard(enum.Enum):
    """The condition an edge needs, evaluated on the :class:`Facts` after a state ran."""

    ERROR = "error"
    GIVE_UP = "give-up"
    FINALIZING = "finalizing"
    ALWAYS = "always"


@dataclasses.dataclass(frozen=True)
class Edge:
    """One transition of the machine: from ``source`` to ``dest`` when ``guard`` holds."""

    source: State
    dest: State
    guard: Guard


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the engine knows after a state ran; the only input of routing.

    Attributes:
        error: an error was recorded that should route to the ErrorManager.
        give_up: a give-up was recorded.
        finalizing: the custom resource is being deleted and its finalizer must run.
    """

    error: bool
    give_up: bool
    finalizing: bool


_S = State
_G = Guard

#: The whole machine, edges in priority order per source state.
TABLE: tuple[Edge, ...] = (
    Edge(_S.CRChecker, _S.ErrorManager, _G.ERROR),
    Edge(_S.CRChecker, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.CRChecker, _S.CRFinalizer, _G.FINALIZING),
    Edge(_S.CRChecker, _S.ObjectsGetter, _G.ALWAYS),
    Edge(_S.ObjectsGetter, _S.ErrorManager, _G.ERROR),
    Edge(_S.ObjectsGetter, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.ObjectsGetter, _S.Mutator, _G.ALWAYS),
    Edge(_S.Mutator, _S.ErrorManager, _G.ERROR),
    Edge(_S.Mutator, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.Mutator, _S.Updater, _G.ALWAYS),
    Edge(_S.Updater, _S.ErrorManager, _G.ERROR),
    Edge(_S.Updater, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.Updater, _S.SuccessManager, _G.ALWAYS),
    Edge(_S.SuccessManager, _S.ErrorManager, _G.ERROR),
    Edge(_S.SuccessManager, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.SuccessManager, _S.End, _G.ALWAYS),
    Edge(_S.CRFinalizer, _S.ErrorManager, _G.ERROR),
    Edge(_S.CRFinalizer, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.CRFinalizer, _S.End, _G.ALWAYS),
    Edge(_S.ErrorManager, _S.GiveupManager, _G.GIVE_UP),
    Edge(_S.ErrorManager, _S.End, _G.ALWAYS),
    Edge(_S.GiveupManager, _S.End, _G.ALWAYS),
)


@dataclasses.dataclass(frozen=True)
class _Check:
    """A ``transitions`` condition that remembers which :class:`Guard` it evaluates (so edges can be read back)."""

    guard: Guard

    def __call__(self, facts: Facts) -> bool:
        if self.guard is Guard.ERROR:
            return facts.error
        if self.guard is Guard.GIVE_UP:
            return facts.give_up
        if self.guard is Guard.FINALIZING:
            return facts.finalizing
        return True


_CHECKS = {guard: _Check(guard) for guard in Guard}

# The keyword arguments of ``transitions.Machine.add_transition`` for each edge of TABLE.
_TRANSITIONS: tuple[dict[str, Any], ...] = tuple(
    {"trigger": _TRIGGER, "source": edge.source, "dest": edge.dest, "conditions": [_CHECKS[edge.guard]]}
    for edge in TABLE
)


def _build() -> transitions.Machine:
    machine = transitions.Machine(
        model=None,
        states=list(State),
        initial=State.CRChecker,
        auto_transitions=False,
        send_event=False,
        queued=False,
    )
    for kwargs in _TRANSITIONS:
        machine.add_transition(**kwargs)
    return machine


def _edges_of(machine: transitions.Machine) -> tuple[Edge, ...]:
    """Every edge ``machine`` holds, in priority order per source."""
    result: list[Edge] = []
    for source_name, library_transitions in machine.events[_TRIGGER].transitions.items():
        source = _as_state(machine.get_state(source_name).value)
        for transition in library_transitions:
            checks = [condition.func for condition in transition.conditions]
            if transition.dest is None or len(checks) != 1 or not isinstance(checks[0], _Check):
                raise RuntimeError(f"edge from {source.value} was not built from TABLE: {transition!r}")
            dest = _as_state(machine.get_state(transition.dest).value)
            result.append(Edge(source, dest, checks[0].guard))
    return tuple(result)


def _routes(edges: tuple[Edge, ...]) -> dict[State, tuple[tuple[_Check, State], ...]]:
    routes: dict[State, list[tuple[_Check, State]]] = {}
    for edge in edges:
        routes.setdefault(edge.source, []).append((_CHECKS[edge.guard], edge.dest))
    return {source: tuple(leaving) for source, leaving in routes.items()}


class Machine:
    """The Stepper's state machine for one reconcile.

    Args:
        initial: the state to start in.

    Not thread-safe: one instance per reconcile.
    """

    def __init__(self, initial: State = State.CRChecker) -> None:
        self._state = initial

    @property
    def state(self) -> State:
        """The current state."""
        return self._state

    def advance(self, facts: Facts) -> State:
        """Take the first edge leaving the current state whose guard holds on ``facts``; return the new state.

        Raises:
            RuntimeError: no edge leaves the current state (it is ``End``) or none matches.
        """
        leaving = _ROUTES.get(self._state)
        if not leaving:
            raise RuntimeError(f"no edge leaves {self._state.value}")
        for check, dest in leaving:
            if check(facts):
                self._state = dest
                return dest
        raise RuntimeError(f"no edge leaving {self._state.value} matches {facts}")

    def edges(self) -> tuple[Edge, ...]:
        """Every edge, in priority order per source, as the ``transitions`` machine holds them."""
        return _edges_of(_SHARED)


def _as_state(value: object) -> State:
    """Narrow a state value read back from ``transitions`` (it holds the Enum members it was given)."""
    if not isinstance(value, State):
        raise RuntimeError(f"the machine holds a state that is not a State: {value!r}")
    return value


_SHARED = _build()
_ROUTES = _routes(_edges_of(_SHARED))
