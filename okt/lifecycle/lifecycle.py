"""``okt.Lifecycle``: an application's phases across reconciles, moved only along declared, guarded transitions.

Why this exists: a reconcile is a short pass; an application's life is long (Pending, Provisioning, Running,
Upgrading, Failed, ...). OKT promised a machine for that and never shipped it, so operators grew ad-hoc ``if`` chains
over a status string that anything could set to anything. Here the author declares the phases (a string Enum of their
own) and one table of :class:`~okt.lifecycle.transition.Transition` values; the operator calls :meth:`Lifecycle.advance`
from its ``enter_in_state`` hook (typically on entering ObjectsGetter, before the children are registered, so the new
phase decides which children exist) and okt does the rest::

    lifecycle = okt.Lifecycle(Phase, initial=Phase.Pending, transitions=[
        okt.Transition(Phase.Pending, Phase.Provisioning, reason="Provisioning"),
        okt.Transition(Phase.Provisioning, Phase.Running, when=setup_succeeded, reason="JobSucceeded"),
        okt.Transition(Phase.Provisioning, Phase.Failed, when=setup_failed, reason="JobFailed"),
    ], failed={Phase.Failed})

Guarantees:

* **Only declared edges.** The edges leaving the current phase are tried in declaration order and the first whose
  guard holds is taken; :meth:`Lifecycle.force` moves along a declared edge without asking its guard, and any other
  move raises :class:`~okt.lifecycle.transition.IllegalTransition`. There is no API that sets a phase directly.
* **Bounded.** At most ``max_steps`` moves per :meth:`~Lifecycle.advance` (default 1, so every phase is seen in the
  status and the events). When the budget was used up a requeue after ``requeue_after`` seconds is recorded, because
  a status write does not trigger a reconcile (okt filters it out) and the next edge may hold at once.
* **Persisted where okt keeps its bookkeeping.** The phase is ``ctx.bookkeeping.phase``: ``status.okt.phase`` or the
  ``<prefix>/phase`` annotation, as ``Reconciler.persistence`` says, written with the status by the Success/Error
  managers — or at the end of a reconcile that gave up quietly after a move. A missing phase is the initial one (and
  is recorded) on an object without the lifecycle condition (a new one); with it, the phase was lost (``status.okt``
  removed, the status replaced) and is restored from the condition's message (reason ``PhaseRestored``), or starts
  again from the initial one when the message names no phase (``PhaseLost``), with a Warning event and a log line
  either way. One kept in the other place, by an operator version with the other persistence, is carried over —
  with ``status`` persistence, only to an object whose status holds the lifecycle condition: whoever may edit an
  object sets its annotations, so on a new one a phase annotation (or a lifecycle condition in ``<prefix>/conditions``)
  says nothing, and is ignored with a warning line;
  one kept under a name an earlier version gave it (``legacy_phases``) is read as its phase and written under the
  new name.
* **Reported.** Every move sets the lifecycle condition (type ``condition_type``, default ``Phase``; status False in
  ``failed`` phases, True otherwise; reason = the transition's reason; message ``phase Running (from Provisioning):
  ...``) with the CR's generation, records a Normal event with the same reason, and logs the move. With ``ready``,
  the SuccessManager's Ready is False outside those phases, with the lifecycle condition's reason and message.
* **Refusing, not crashing.** A persisted phase that names no phase (someone edited the annotation) raises
  :class:`~okt.lifecycle.transition.UnknownPhase`, whose message says what was found where and what is accepted.
  Raised in a hook, it is recorded like any error: the ErrorManager sets Ready=False with reason ``UnknownPhase``.

Caveats:

* A persisted value that *is* a phase is trusted: a hand edit from Running to Pending is taken as the current phase.
  Use :meth:`Lifecycle.force` for a checked manual move.
* Guards run inside the reconcile, so they read what the reconcile reads (the informer cache under ``okt run``); an
  exception a guard raises propagates to the hook (the Stepper records it as an error); moves already taken in the
  same call stay recorded.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

from okt import delays
from okt.engines import results
from okt.lifecycle import machine as machine_mod
from okt.lifecycle import transition as transition_mod
from okt.reconciler import context as context_mod
from okt.status import bookkeeping, conditions, events

P = TypeVar("P", bound=enum.Enum)

DEFAULT_CONDITION_TYPE = "Phase"
DEFAULT_REQUEUE_AFTER = 1.0
INITIAL_REASON = "Initialized"
"""The condition reason when an object enters its initial phase (no transition led there)."""
OBSERVED_REASON = "PhaseObserved"
"""The condition reason when the condition was missing or described another phase than the persisted one."""
RESTORED_REASON = "PhaseRestored"
"""The condition and Warning event reason when the persisted phase was missing and the condition said which it was."""
LOST_REASON = "PhaseLost"
"""The condition and Warning event reason when the persisted phase was missing and the condition named no phase."""


@dataclasses.dataclass(frozen=True)
class Progress(Generic[P]):
    """What one :meth:`Lifecycle.advance` did.

    Attributes:
        start: the phase before the call.
        moves: the moves taken, in order (empty when no guard held).
    """

    start: P
    moves: tuple[transition_mod.Move[P], ...] = ()

    @property
    def phase(self) -> P:
        """The phase after the call."""
        return self.moves[-1].dest if self.moves else self.start

    @property
    def moved(self) -> bool:
        """Whether any edge was taken."""
        return bool(self.moves)

    def entered(self, phase: P) -> bool:
        """Whether ``phase`` was entered during the call (to run what entering it must do, once)."""
        return any(move.dest is phase for move in self.moves)


class Lifecycle(Generic[P]):
    """An application's lifecycle: the phases, the initial one, and the only transitions allowed between them.

    Args:
        phases: the author's phase Enum (string values; ``enum.StrEnum`` is the natural choice).
        initial: the phase of an object that has none persisted yet.
        transitions: the edges, in priority order: from one phase, the first edge whose guard holds is taken.
        condition_type: the condition that reports the phase; not one okt's built-in managers write (``Ready``...).
        failed: phases in which the application has failed: the lifecycle condition is False there.
        ready: the phases in which the object may be Ready (``{Phase.Running}``): in any other, the SuccessManager's
            report says Ready=False with the lifecycle condition's reason and message, whatever the reconciler's
            ``ready(ctx)`` says; in these, ``ready(ctx)`` decides. Default (``None``): every phase, Ready is the
            reconciler's choice alone.
        max_steps: the most moves one :meth:`advance` takes (>= 1).
        requeue_after: seconds after which to reconcile again when :meth:`advance` used its whole budget or
            :meth:`force` moved (``None``: never requeue for the lifecycle's sake); capped at 6 hours
            (:data:`okt.delays.MAX_DELAY`) as every requeue is, an int past a float's range too.
        legacy_phases: the names an earlier version of the operator gave phases that now have another name
            (``{"Installing": Phase.Provisioning}``): an object persisted under an old name is in the phase it maps
            to, and is written under the new name by the next write of its bookkeeping.

    Raises:
        TypeError: ``phases`` is not a string-valued Enum, a phase or transition is of the wrong type, or ``ready``
            is no collection of phases.
        ValueError: a transition, ``failed`` or ``ready`` names a phase of another Enum, ``ready`` names none, the
            condition type is invalid or reserved, ``max_steps`` < 1, ``requeue_after`` is not a finite number of
            seconds > 0 (a bool and a ``timedelta`` are none), or a legacy name is empty or still the name of a phase.

    A ``Lifecycle`` holds no per-object state: declare it once at module level and share it between worker threads.
    """

    def __init__(
        self,
        phases: type[P],
        *,
        initial: P,
        transitions: Iterable[transition_mod.Transition[P]],
        condition_type: str = DEFAULT_CONDITION_TYPE,
        failed: Iterable[P] = (),
        ready: Iterable[P] | None = None,
        max_steps: int = 1,
        requeue_after: float | None = DEFAULT_REQUEUE_AFTER,
        legacy_phases: Mapping[str, P] | None = None,
    ) -> None:
        if not (isinstance(phases, type) and issubclass(phases, enum.Enum)) or not list(phases):
            raise TypeError(f"phases must be an Enum class with at least one member, got {phases!r}")
        for member in phases:
            transition_mod.check_phase(member, f"{phases.__name__}.{member.name}")
        self._phases = phases
        self._by_value: dict[str, P] = {str(member.value): member for member in phases}
        self._initial = self._own(initial, "initial")
        table = tuple(transitions)
        for edge in table:
            if not isinstance(edge, transition_mod.Transition):
                raise TypeError(f"transitions must be okt.Transition values, got {edge!r}")
            self._own(edge.source, f"transition {edge.describe()}: source")
        self._table = table
        self._failed = frozenset(self._own(phase, "failed phase") for phase in failed)
        self._ready = None if ready is None else self._check_ready(ready)
        self._condition_type = _check_condition_type(condition_type)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        self._max_steps = max_steps
        if requeue_after is not None and not delays.is_seconds(requeue_after):
            raise ValueError(
                f"requeue_after must be a finite number of seconds > 0 or None, got {delays.said(requeue_after)}"
            )
        self._requeue_after = None if requeue_after is None else delays.capped(requeue_after)
        self._legacy = self._check_legacy(legacy_phases or {})
        self._edges = self._machine(self._initial).edges()

    # -- the declaration ----------------------------------------------------------------------------------------------

    @property
    def phases(self) -> tuple[P, ...]:
        """Every phase, in the Enum's order."""
        return tuple(self._phases)

    @property
    def initial(self) -> P:
        return self._initial

    @property
    def transitions(self) -> tuple[transition_mod.Transition[P], ...]:
        """The declared edges in priority order, read back from the ``transitions`` machine."""
        return self._edges

    @property
    def condition_type(self) -> str:
        return self._condition_type

    @property
    def legacy_phases(self) -> Mapping[str, P]:
        """The old phase names still read, and the phase each now names."""
        return dict(self._legacy)

    @property
    def failed(self) -> frozenset[P]:
        return self._failed

    @property
    def ready(self) -> frozenset[P] | None:
        """The phases in which the object may be Ready (``None``: every phase)."""
        return self._ready

    @property
    def max_steps(self) -> int:
        return self._max_steps

    @property
    def requeue_after(self) -> float | None:
        return self._requeue_after

    def targets(self, source: P) -> tuple[P, ...]:
        """The phases one declared edge leads to from ``source``, in declaration order."""
        return self._machine(self._own(source, "source")).targets(source)

    def allows(self, source: P, dest: P) -> bool:
        """Whether a declared edge leads from ``source`` to ``dest``."""
        return self._own(dest, "dest") in self.targets(source)

    def is_failed(self, phase: P) -> bool:
        return phase in self._failed

    def may_be_ready(self, phase: P) -> bool:
        """Whether an object in ``phase`` may be Ready (every phase may, without ``ready``)."""
        return self._ready is None or self._own(phase, "phase") in self._ready

    # -- reading the persisted phase ----------------------------------------------------------------------------------

    def phase_of(self, value: str | None, where: str = "the persisted phase") -> P:
        """The phase a persisted value names (an old name in ``legacy_phases`` too); ``None`` (nothing persisted yet)
        is the initial phase.

        Raises:
            UnknownPhase: ``value`` names no phase (``where`` says where it was read, for the message).
        """
        if value is None:
            return self._initial
        phase = self._by_value.get(value) or self._legacy.get(value)
        if phase is None:
            raise transition_mod.UnknownPhase(value, where, list(self._by_value), str(self._initial.value))
        return phase

    def current(self, ctx: context_mod.Context) -> P:
        """The object's current phase, from ``ctx.bookkeeping``.

        When none is persisted: the phase the lifecycle condition describes, if the object has one (the persisted
        phase was lost, e.g. ``status.okt`` removed), else the initial phase (a new object). With ``status``
        persistence only the status counts: a phase annotation on an object whose status holds no lifecycle
        condition (a new object, created with it), and a condition kept in annotations alone, are no phase of it.

        Raises:
            UnknownPhase: the persisted value names no phase.
        """
        if ctx.bookkeeping.phase is None or self._unfounded(ctx):
            return self._described(ctx) or self._initial
        return self.phase_of(ctx.bookkeeping.phase, _where(ctx))

    # -- moving -------------------------------------------------------------------------------------------------------

    def advance(self, ctx: context_mod.Context, *, max_steps: int | None = None) -> Progress[P]:
        """Take up to ``max_steps`` (default: the lifecycle's) edges whose guards hold, recording each move.

        Also records the initial phase of a new object, and keeps the lifecycle condition describing the current
        phase with the current generation even when nothing moves.

        Raises:
            UnknownPhase: the persisted phase names no phase (nothing is changed).
            ValueError: ``max_steps`` < 1.
            Exception: whatever a guard raised (earlier moves of this call stay recorded).
        """
        budget = self._max_steps if max_steps is None else max_steps
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"max_steps must be an integer >= 1, got {budget!r}")
        start = self._enter(ctx)
        machine = self._machine(start)
        moves: list[transition_mod.Move[P]] = []
        while len(moves) < budget:
            edge = machine.step(ctx)
            if edge is None:
                break
            move = transition_mod.Move.along(edge)
            self._record(ctx, move)
            moves.append(move)
        if len(moves) == budget:
            self._requeue(ctx)
        return Progress(start, tuple(moves))

    def force(
        self, ctx: context_mod.Context, phase: P, *, reason: str | None = None, message: str | None = None
    ) -> transition_mod.Move[P]:
        """Move to ``phase`` along a declared edge from the current phase, without asking its guard.

        For the author's own decisions (an operator-level timeout, a manual "retry" field): the table still decides
        what is legal. The move is recorded like any other (persisted, condition, event) and marked ``forced``.

        Args:
            phase: where to go.
            reason: the reason to report; default: the edge's.
            message: the explanation to report; default: the edge's.

        Raises:
            IllegalTransition: no declared edge leads from the current phase to ``phase`` (nothing is changed).
            UnknownPhase: the persisted phase names no phase.
            TypeError, ValueError: ``phase`` is not one of this lifecycle's phases, or ``reason`` is invalid.
        """
        target = self._own(phase, "phase")
        if reason is not None:
            transition_mod.check_reason(reason, f"force to {target.value}")
        edge = self._machine(self.current(ctx)).force(target)
        self._enter(ctx)
        move = transition_mod.Move(
            edge.source,
            edge.dest,
            reason or edge.reason,
            edge.message if message is None else message,
            forced=True,
        )
        self._record(ctx, move)
        self._requeue(ctx)
        return move

    # -- documentation ------------------------------------------------------------------------------------------------

    def mermaid(self, *, guards: bool = False, title: str | None = None) -> str:
        """The lifecycle as a mermaid ``stateDiagram-v2`` (no trailing newline), generated from the machine.

        Every edge is shown once, in priority order, labelled with its reason (and with ``guards``, the name of its
        guard: ``SetupSucceeded when setup_succeeded``; an unconditional edge has none); the initial phase comes from
        ``[*]``; phases no edge leaves go to ``[*]``; failed phases get the ``failed`` class. ``title`` is written as
        a mermaid comment (``%%``) under the first line.
        """
        lines = ["stateDiagram-v2"]
        if title is not None:
            lines.append(f"    %% {' '.join(title.split())}")
        lines += [f'    state "{p.value}" as {p.name}' for p in self._phases if p.name != p.value]
        lines.append(f"    [*] --> {self._initial.name}")
        for edge in self._edges:
            guard = edge.guard_name if guards else None
            label = f"{edge.reason} when {guard}" if guard else edge.reason
            lines.append(f"    {edge.source.name} --> {edge.dest.name} : {label}")
        sources = {edge.source for edge in self._edges}
        lines += [f"    {phase.name} --> [*]" for phase in self._phases if phase not in sources]
        if self._failed:
            lines.append("    classDef failed fill:#fde0e0,stroke:#c62828")
            lines += [f"    class {phase.name} failed" for phase in self._phases if phase in self._failed]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Lifecycle {self._phases.__name__}: {len(self._edges)} transitions from {self._initial.value}>"

    # -- internals ----------------------------------------------------------------------------------------------------

    def _own(self, phase: object, what: str) -> P:
        """``phase`` narrowed to this lifecycle's Enum."""
        if not isinstance(phase, self._phases):
            transition_mod.check_phase(phase, what)
            raise ValueError(f"{what} {phase!r} is not a phase of {self._phases.__name__}")
        return phase

    def _check_ready(self, ready: Iterable[P]) -> frozenset[P]:
        if isinstance(ready, str | enum.Enum) or not isinstance(ready, Iterable):
            raise TypeError(f"ready must be a collection of phases (like {{Phase.Running}}), got {ready!r}")
        phases = frozenset(self._own(phase, "ready phase") for phase in ready)
        if not phases:
            raise ValueError("ready names no phase: no object of this lifecycle could ever be Ready")
        return phases

    def _check_legacy(self, legacy: Mapping[str, P]) -> dict[str, P]:
        if not isinstance(legacy, Mapping):
            raise TypeError(f"legacy_phases must map old phase names to phases, got {legacy!r}")
        checked: dict[str, P] = {}
        for old, phase in legacy.items():
            if not isinstance(old, str) or not old:
                raise ValueError(f"legacy_phases: an old phase name must be a non-empty string, got {old!r}")
            if old in self._by_value:
                raise ValueError(
                    f"legacy_phases: {old!r} is the name of a phase of {self._phases.__name__}; an old name that is "
                    "still a phase's would be read as that phase"
                )
            checked[old] = self._own(phase, f"legacy_phases[{old!r}]")
        return checked

    def _machine(self, current: P) -> machine_mod.PhaseMachine[P]:
        return machine_mod.PhaseMachine(self._phases, self._table, current)

    def _enter(self, ctx: context_mod.Context) -> P:
        """Read the current phase; record it when new or kept under an old name, and keep the condition describing
        it."""
        phase = self.current(ctx)
        unfounded = self._unfounded(ctx)
        if ctx.bookkeeping.phase is None or unfounded:
            if unfounded:
                ctx.log.warning(
                    "lifecycle phase annotation ignored",
                    annotation=ctx.bookkeeping.phase_annotation,
                    value=ctx.bookkeeping.phase,
                    reason=f"the status holds no {self._condition_type} condition: a new object starts in "
                    f"{phase.value}",
                )
            ctx.bookkeeping.phase = str(phase.value)
            if self._recorded(ctx) is None:
                self._report(ctx, phase, INITIAL_REASON, f"{_head(phase)} (initial)")
            else:
                self._lost(ctx, phase)
            return phase
        condition = ctx.conditions.get(self._condition_type)
        old = ctx.bookkeeping.phase
        if old in self._legacy:
            ctx.bookkeeping.phase = str(phase.value)
            ctx.log.info("lifecycle phase renamed", phase=str(phase.value), previous=old)
            if condition is not None and _describes(condition.message, old):
                # The same phase under its new name: the reason and the explanation still hold.
                message = _head(phase) + condition.message[len(_head(old)) :]
                self._report(ctx, phase, condition.reason, message)
                return phase
        if condition is None or not _describes(condition.message, phase):
            self._report(ctx, phase, OBSERVED_REASON, _head(phase))
        else:
            self._report(ctx, phase, condition.reason, condition.message)
        return phase

    def _recorded(self, ctx: context_mod.Context) -> conditions.Condition | None:
        """The lifecycle condition as a record of the object's past: with status persistence, only the one its status
        stores. One the reconcile carried from an annotation (``<prefix>/conditions``, kept by an operator version
        whose status went there) is no such record then: whoever may edit the object sets its annotations, not its
        status, and the reconciler's author chose the status so that they could not set the phase."""
        if ctx.bookkeeping.persistence is bookkeeping.Persistence.STATUS:
            return conditions.Conditions.from_status(ctx.cr.status).get(self._condition_type)
        return ctx.conditions.get(self._condition_type)

    def _unfounded(self, ctx: context_mod.Context) -> bool:
        """Whether the phase is one read from an annotation though it is kept in the status, on an object whose status
        holds no lifecycle condition: never reconciled under this lifecycle (a new object, created with the annotation
        by whoever may create it), so the annotation is no phase an operator version kept, and not its phase."""
        return ctx.bookkeeping.phase_from_annotations and self._recorded(ctx) is None

    def _described(self, ctx: context_mod.Context) -> P | None:
        """The phase the lifecycle condition describes (an old name in ``legacy_phases`` too), if any."""
        condition = self._recorded(ctx)
        if condition is None:
            return None
        # The longest name that fits, should one phase's value begin with another's ("Up" and "Up to date").
        names = sorted((*self._by_value.items(), *self._legacy.items()), key=lambda item: -len(item[0]))
        return next((phase for name, phase in names if _describes(condition.message, name)), None)

    def _lost(self, ctx: context_mod.Context, phase: P) -> None:
        """The object had a lifecycle condition but no persisted phase: someone removed it, or a replaced status took
        it away. Taken from the condition when it says which phase; said, either way."""
        where = _where(ctx)
        if self._described(ctx) is phase:
            detail = f"restored from this condition: {where} was missing; the lifecycle goes on from here"
            self._report(ctx, phase, RESTORED_REASON, f"{_head(phase)} ({detail})")
            told = f"{where} was missing: phase {phase.value} restored from the {self._condition_type} condition"
            ctx.event(events.WARNING, RESTORED_REASON, told)
            ctx.log.warning("lifecycle phase restored", phase=str(phase.value), missing=where)
            return
        detail = f"initial: {where} was missing and the {self._condition_type} condition named no phase"
        self._report(ctx, phase, LOST_REASON, f"{_head(phase)} ({detail})")
        told = f"{where} was missing and the {self._condition_type} condition named no phase: started again from "
        ctx.event(events.WARNING, LOST_REASON, f"{told}{phase.value}")
        ctx.log.warning("lifecycle phase lost", phase=str(phase.value), missing=where)

    def _record(self, ctx: context_mod.Context, move: transition_mod.Move[P]) -> None:
        ctx.bookkeeping.phase = str(move.dest.value)
        origin = f"from {move.source.value}, forced" if move.forced else f"from {move.source.value}"
        detail = f": {move.message}" if move.message else ""
        self._report(ctx, move.dest, move.reason, f"{_head(move.dest)} ({origin}){detail}")
        forced = " (forced)" if move.forced else ""
        # Announced once a write stored the move (okt.reconciler.report.write_status), not before: a move the API
        # server refuses, or one lost to another writer, is neither an Event nor a log line.
        told = f"phase {move.source.value} -> {move.dest.value}{forced}{detail}"
        ctx.bookkeeping.moves_to_announce.append(
            bookkeeping.MoveAnnouncement(
                move.reason, told, str(move.dest.value), str(move.source.value), forced=move.forced
            )
        )

    def _report(self, ctx: context_mod.Context, phase: P, reason: str, message: str) -> None:
        ctx.conditions.set(self._condition_type, phase not in self._failed, reason, message, ctx.cr.generation)
        if self._ready is not None:
            # Said at every report of the phase, a steady one's too: the SuccessManager's Ready follows the phase the
            # reconcile ends in, with the same reason and message while it stays (no write for it).
            ctx.not_ready = None if phase in self._ready else (reason, message)

    def _requeue(self, ctx: context_mod.Context) -> None:
        if self._requeue_after is not None:
            ctx.results.add(results.Operation.REQUEUE, f"{ctx.cr.kind}/{ctx.cr.name}", delay=self._requeue_after)


def _head(phase: enum.Enum | str) -> str:
    """How every lifecycle condition message starts, so the condition can be checked against the persisted phase."""
    return f"phase {phase.value if isinstance(phase, enum.Enum) else phase}"


def _describes(message: str, phase: enum.Enum | str) -> bool:
    head = _head(phase)
    return message == head or message.startswith((f"{head} (", f"{head}:"))


def _where(ctx: context_mod.Context) -> str:
    """Where the phase of ``ctx`` is persisted, for error messages."""
    if ctx.bookkeeping.persistence is bookkeeping.Persistence.ANNOTATIONS:
        return f"annotation {ctx.bookkeeping.phase_annotation}"
    return f"status.{bookkeeping.STATUS_FIELD}.phase"


def _check_condition_type(condition_type: str) -> str:
    if not isinstance(condition_type, str):
        raise TypeError(f"condition_type must be a string, got {condition_type!r}")
    if condition_type in (*conditions.STANDARD_TYPES, *conditions.KSTATUS_TYPES):
        raise ValueError(
            f"condition_type {condition_type!r} is written by okt's built-in managers; choose another, like 'Phase'"
        )
    if len(condition_type) > conditions.TYPE_MAX_LENGTH or not re.fullmatch(conditions.TYPE_PATTERN, condition_type):
        raise ValueError(f"condition_type {condition_type!r} is not a valid condition type (CamelCase, like 'Phase')")
    return condition_type
