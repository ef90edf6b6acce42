"""A typed facade over ``transitions`` for one lifecycle evaluation.

Why this exists: the lifecycle's table is the author's list of :class:`~okt.lifecycle.transition.Transition` values;
``transitions`` runs it. Like :mod:`okt.engines.machine` for the Stepper, this module is the only place that speaks the
library's language (trigger names, condition callables, its state objects), so the rest of okt sees Enum phases and
``Transition`` values only, never a ``to_x()``/``is_x()`` method the library attaches to its model.

Two triggers are built from the same edges:

* ``advance`` — each edge's condition is its guard; the library tries the edges leaving the current phase in
  declaration order and takes the first whose guard holds (its own first-match semantics);
* ``force`` — each edge's condition is "the requested phase is my destination"; the guard is not asked. No matching
  edge means the move is illegal.

Guarantees: a phase moves only along a declared edge; :meth:`PhaseMachine.edges` reads the edges back from the library
object (in declaration order), so what is drawn is what runs; an exception raised by a guard propagates unchanged and
leaves the phase where it was; an ``async def`` guard is awaited (:func:`okt.coroutines.call`), as every hook of the
operator's is; a guard that returns anything but a bool (``None`` from a function that forgot its
``return``, an outcome such as ``okt.requeue_after(5)``, a number, a string, a numpy bool) raises ``TypeError`` naming
the edge and what it returned, instead of reading its truth: neither that edge nor a later one is taken.

Caveats: a ``transitions.Machine`` holds its current state and is not thread-safe. A ``PhaseMachine`` is built per
evaluation (tens of microseconds for a dozen edges); the ``Lifecycle`` that owns the table is shared freely.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import transitions

from okt import coroutines
from okt.engines import results
from okt.lifecycle import transition as transition_mod

P = TypeVar("P", bound=enum.Enum)

_ADVANCE = "advance"
_FORCE = "force"


@dataclasses.dataclass
class _Taken(Generic[P]):
    """Which edge the library took during the last trigger (its triggers only answer True/False)."""

    edge: transition_mod.Transition[P] | None = None


@dataclasses.dataclass(frozen=True)
class _When(Generic[P]):
    """The ``advance`` condition of one edge: ask its guard; remember the edge when it holds."""

    index: int
    edge: transition_mod.Transition[P]
    taken: _Taken[P]

    def __call__(self, subject: Any) -> bool:
        held = coroutines.call(self.edge.when, subject)  # an ``async def`` guard is awaited, as every hook is
        if not isinstance(held, bool):  # bool has no subclasses: True and False alone pass
            raise TypeError(_refusal(self.edge, held))
        if not held:
            return False
        self.taken.edge = self.edge
        return True


@dataclasses.dataclass(frozen=True)
class _Leads(Generic[P]):
    """The ``force`` condition of one edge: does it lead to the requested phase?"""

    edge: transition_mod.Transition[P]
    taken: _Taken[P]

    def __call__(self, target: object) -> bool:
        if target is not self.edge.dest:
            return False
        self.taken.edge = self.edge
        return True


def _refusal(edge: transition_mod.Transition[Any], returned: object) -> str:
    """Why a guard that returned ``returned`` instead of a bool is refused, and the likely mistake.

    Truthiness is not asked for: ``None`` is a guard that forgot its ``return`` (read as "does not hold", the edge
    would never be taken and nothing would say why), an outcome such as ``okt.requeue_after(5)`` is true as a bool
    (meant as "not yet", the edge would be taken), a number or a string is a guard that returned what it read.
    """
    if returned is None:
        shown, hint = "None", "a function without a return statement returns None"
    elif isinstance(returned, results.Outcome):
        shown, hint = str(returned), "an outcome is returned by enter_in_state, check or cleanup"
    else:
        shown, hint = repr(returned), f"a {type(returned).__name__}: return bool(...) if its truth is meant"
    return f"{edge.describe()}: its guard returned {shown}; a guard returns True or False ({hint})"


class _Model:
    """The object ``transitions`` keeps the current phase on; private so its attached helpers stay unused."""

    state: enum.Enum


class PhaseMachine(Generic[P]):
    """The lifecycle's table loaded into ``transitions``, standing on ``current``.

    Args:
        phases: the phase Enum.
        table: the declared edges, in declaration (priority) order.
        current: the phase to start from.

    Not thread-safe: one instance per evaluation.
    """

    def __init__(self, phases: type[P], table: Sequence[transition_mod.Transition[P]], current: P) -> None:
        self._phases = phases
        self._taken: _Taken[P] = _Taken()
        self._model = _Model()
        self._machine = transitions.Machine(
            model=self._model,
            states=list(phases),
            initial=current,
            auto_transitions=False,
            send_event=False,
        )
        for index, edge in enumerate(table):
            self._machine.add_transition(_ADVANCE, edge.source, edge.dest, conditions=[_When(index, edge, self._taken)])
            self._machine.add_transition(_FORCE, edge.source, edge.dest, conditions=[_Leads(edge, self._taken)])

    @property
    def phase(self) -> P:
        """The current phase."""
        return self._narrow(self._model.state)

    def step(self, subject: Any) -> transition_mod.Transition[P] | None:
        """Take the first edge leaving the current phase whose guard holds on ``subject``; None when none does.

        Raises:
            Exception: whatever a guard raised (the phase is unchanged).
        """
        if not self._leaving(_ADVANCE):
            return None
        self._taken.edge = None
        if not self._machine.events[_ADVANCE].trigger(self._model, subject):
            return None
        return self._taken.edge

    def force(self, target: P) -> transition_mod.Transition[P]:
        """Move to ``target`` along the first declared edge leading there, without asking its guard.

        Raises:
            IllegalTransition: no declared edge leads from the current phase to ``target``.
        """
        source = self.phase
        self._taken.edge = None
        if self._leaving(_FORCE) and self._machine.events[_FORCE].trigger(self._model, target):
            taken = self._taken.edge
            if taken is not None:
                return taken
        allowed = [str(phase.value) for phase in self.targets(source)]
        raise transition_mod.IllegalTransition(str(source.value), str(target.value), allowed)

    def targets(self, source: P) -> tuple[P, ...]:
        """The phases one declared edge leads to from ``source``, in declaration order, without repeats."""
        seen: dict[P, None] = {}
        for edge in self.edges():
            if edge.source is source:
                seen.setdefault(edge.dest, None)
        return tuple(seen)

    def edges(self) -> tuple[transition_mod.Transition[P], ...]:
        """Every declared edge, in declaration order, as the ``transitions`` machine holds them."""
        found: list[tuple[int, transition_mod.Transition[P]]] = []
        event = self._machine.events.get(_ADVANCE)
        if event is None:
            return ()
        for source_name, library_transitions in event.transitions.items():
            source = self._narrow(self._machine.get_state(source_name).value)
            for library_transition in library_transitions:
                checks = [condition.func for condition in library_transition.conditions]
                if len(checks) != 1 or not isinstance(checks[0], _When) or checks[0].edge.source is not source:
                    raise RuntimeError(f"an edge leaving {source.value} was not built from the lifecycle's table")
                found.append((checks[0].index, checks[0].edge))
        return tuple(edge for _, edge in sorted(found, key=lambda item: item[0]))

    def _leaving(self, trigger: str) -> bool:
        """Whether any edge of ``trigger`` leaves the current phase (the library raises rather than answer False)."""
        event = self._machine.events.get(trigger)
        return event is not None and bool(event.transitions.get(self._model.state.name))

    def _narrow(self, value: object) -> P:
        if not isinstance(value, self._phases):
            raise RuntimeError(f"the machine holds a phase that is not a {self._phases.__name__}: {value!r}")
        return value
