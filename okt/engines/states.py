"""The states of the Stepper engine.

Why this exists: OKT operators are written as "what to do on entering each state", so the state names are part of the
public vocabulary. They live here, once, as an Enum whose values are OKT's names; nothing else in okt spells a state as
a string.

Guarantees: member names equal their values (``State.Mutator.value == "Mutator"``), and a ``State`` compares equal to
its name as a ``str`` (handy in logs and metrics labels).
"""

from __future__ import annotations

import enum


class State(enum.StrEnum):
    """A state of the Stepper engine, in OKT's names."""

    CRChecker = "CRChecker"
    ObjectsGetter = "ObjectsGetter"
    Mutator = "Mutator"
    Updater = "Updater"
    SuccessManager = "SuccessManager"
    ErrorManager = "ErrorManager"
    GiveupManager = "GiveupManager"
    CRFinalizer = "CRFinalizer"
    End = "End"


#: States that do the reconcile's work; after each one the engine routes on errors and give-ups first.
WORKING_STATES: frozenset[State] = frozenset(
    {State.CRChecker, State.ObjectsGetter, State.Mutator, State.Updater, State.CRFinalizer, State.SuccessManager}
)

#: States on whose entry the user hook (and the built-in work) runs: all but GiveupManager and End.
HOOKED_STATES: frozenset[State] = frozenset(set(State) - {State.GiveupManager, State.End})
