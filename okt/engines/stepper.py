"""The Stepper engine: drive one reconcile through the state machine.

Why this exists: OKT's operators are written as "what to do on entering each state". The Stepper owns the loop that
makes this safe: it enters each state, lets the caller's ``step`` do the work (the user hook plus the built-in work of
that state), records whatever the step raised, and routes on the consolidated results — never on what the hook
returned — with :mod:`okt.engines.machine`'s one table.

Guarantees:

* a reconcile always ends at ``End`` with a :class:`Run` (the path taken, the outcome, the results);
* an ``Exception`` raised by ``step`` never propagates: it is recorded (:meth:`Results.record_exception`) and routes
  to the ErrorManager (or, for a :class:`~okt.errors.GiveUp`, to the GiveupManager); only ``BaseException``\\ s such
  as ``KeyboardInterrupt`` and ``SystemExit`` pass through;
* the ErrorManager runs at most once per reconcile: once it has been entered, later errors no longer route to it;
* GiveupManager and End run no step but appear in the path;
* a runaway machine is stopped after ``max_steps`` transitions with an alarming give-up ("infinite loop"), reported
  as any alarming give-up is (the ErrorManager, unless it already ran, then the GiveupManager), and its path still
  ends with ``End``;
* a ``Stepper`` holds no per-reconcile state, so one instance serves every worker thread.

Caveats: ``finalizing`` is asked at most once, after the CRChecker state ran (that is when the custom resource has
been read), and only when CRChecker recorded neither an error nor a give-up (those route first anyway, and the
custom resource may be gone).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable
from typing import Protocol

import structlog

from okt.engines import machine as machine_mod
from okt.engines import results as results_mod
from okt.engines.states import HOOKED_STATES, State

_log = structlog.get_logger(__name__)

#: The give-up reason recorded when a reconcile exceeds ``Stepper.max_steps`` transitions.
RUNAWAY_REASON = "infinite loop"

#: How a FreeStyle run shows its single hook in ``Run.path_str``.
FREESTYLE_MARKER = "reconcile"


class Steps(Protocol):
    """What an engine drives: the work of one reconcile, state by state. Both engines take one (one protocol)."""

    def enter(self, state: State) -> None:
        """Enter ``state``: the author's hook and, through it, the built-in work (the Stepper)."""

    def builtin(self, state: State) -> None:
        """Only okt's built-in work of ``state`` (FreeStyle frames its single hook with it)."""

    def reconcile(self) -> None:
        """FreeStyle's single hook."""

    def finalizing(self) -> bool:
        """Whether the object is being deleted (asked once its CRChecker work ran)."""


class Engine(enum.Enum):
    """Which engine produced a :class:`Run`."""

    STEPPER = "stepper"
    FREESTYLE = "freestyle"


@dataclasses.dataclass(frozen=True)
class Run:
    """What one reconcile did.

    Attributes:
        path: the states entered, in order; a Stepper path starts at ``CRChecker``, every path ends with ``End``.
            A FreeStyle run has no states before its end, so its path is ``(End,)``.
        outcome: the consolidated outcome (``results.outcome()`` when the run ended).
        results: the reconcile's results stack.
        engine: which engine ran.
    """

    path: tuple[State, ...]
    outcome: results_mod.Outcome
    results: results_mod.Results
    engine: Engine = Engine.STEPPER

    @property
    def path_str(self) -> str:
        """The path as logged: ``">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"``.

        A FreeStyle run shows its hook as ``reconcile``: ``">reconcile>End"``.
        """
        return _path_text(self.path, self.engine)


@functools.lru_cache(maxsize=256)
def _path_text(path: tuple[State, ...], engine: Engine) -> str:
    """:attr:`Run.path_str` of a path: made once per distinct path (a metric's label and a log field of every
    reconcile, and nearly every reconcile takes one of a few paths)."""
    steps = [state.value for state in path]
    if engine is Engine.FREESTYLE:
        steps.insert(0, FREESTYLE_MARKER)
    return "".join(f">{step}" for step in steps)


@dataclasses.dataclass(frozen=True)
class Stepper:
    """Runs reconciles through the Stepper state machine.

    Attributes:
        max_steps: the most transitions one reconcile may take before it is stopped (the table's longest path takes
            7); the report of the stop takes up to three more (ErrorManager, GiveupManager, End).

    Raises:
        ValueError: ``max_steps`` < 1.
    """

    max_steps: int = 32

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps!r}")

    def run(self, steps: Steps, results: results_mod.Results) -> Run:
        """Run one reconcile.

        Args:
            steps: ``steps.enter(state)`` is called on entering each hooked state (every state but GiveupManager and
                End); it does the state's work and records into ``results``; it may raise. ``steps.finalizing()``
                says whether the custom resource is being deleted; asked after CRChecker ran, an exception it raises
                is recorded like a step's and counts as "not finalizing".
            results: this reconcile's results stack (fresh per reconcile).

        Returns:
            the path taken, the outcome and the results.
        """
        step = steps.enter
        finalizing = steps.finalizing
        machine = machine_mod.Machine()
        state = machine.state
        path = [state]
        error_handled = False
        stopped = False
        transitions = 0
        while state is not State.End:
            if state in HOOKED_STATES:
                _call_recorded(functools.partial(step, state), results)
            if state is State.ErrorManager:
                error_handled = True
            if transitions >= self.max_steps and not stopped:
                # Routed by the table like any alarming give-up: the ErrorManager reports it (Ready=False) unless it
                # already ran, then the GiveupManager; at most three more transitions, since a give-up is sticky.
                results.give_up(RUNAWAY_REASON, alarming=True)
                _log.warning("reconcile stopped", reason=RUNAWAY_REASON, max_steps=self.max_steps, state=state.value)
                stopped = True
            # Errors and give-ups outrank finalization, and the custom resource may be gone: only ask when it matters.
            finalizing_now = (
                state is State.CRChecker
                and not results.has_error
                and results.gave_up is None
                and _ask_recorded(finalizing, results)
            )
            facts = machine_mod.Facts(
                error=results.has_error and not error_handled,
                give_up=results.gave_up is not None,
                finalizing=finalizing_now,
            )
            state = machine.advance(facts)
            transitions += 1
            path.append(state)
        return Run(tuple(path), results.outcome(), results)


def _call_recorded(call: Callable[[], None], results: results_mod.Results) -> None:
    """Call ``call``; record an ``Exception`` it raises instead of propagating it."""
    try:
        call()
    except Exception as exc:
        results.record_exception(exc)


def _ask_recorded(question: Callable[[], bool], results: results_mod.Results) -> bool:
    """Ask ``question``; an ``Exception`` it raises is recorded and answers ``False``."""
    try:
        return bool(question())
    except Exception as exc:
        results.record_exception(exc)
        return False
