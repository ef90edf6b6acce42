"""The values of a lifecycle: declared transitions, the moves taken along them, and the two ways a move is refused.

Why this exists: an application's lifecycle is a table the author writes once — "from Provisioning to Running when the
setup Job succeeded, reason ``JobSucceeded``" — and okt must be able to read, draw and enforce that table without
running any of it. A :class:`Transition` is that table's row: immutable, validated on construction (phases of one
Enum, a real change of phase, a reason Kubernetes accepts), with its guard kept as an opaque callable. A :class:`Move`
is what happened when an edge was taken, the value events, conditions and logs are made from.

The refusals belong to okt's one error tree (both are :class:`okt.errors.PermanentError`: retrying unchanged input will
not help)::

    PermanentError
    ├── IllegalTransition     "IllegalTransition"   a move along an edge the lifecycle does not declare
    └── UnknownPhase          "UnknownPhase"        the persisted phase names no phase of the lifecycle

Guarantees: a ``Transition`` that exists is well formed (``ValueError``/``TypeError`` otherwise, at import time of the
operator, not during a reconcile); an error's ``str()`` names the phases involved and what would be legal.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from okt import coroutines, errors
from okt.status import conditions

if TYPE_CHECKING:
    from okt.reconciler import context

P = TypeVar("P", bound=enum.Enum)
"""The author's phase Enum (its values must be strings: they are persisted and shown)."""

Guard = Callable[["context.Context"], bool | Coroutine[Any, Any, bool]]
"""Whether an edge may be taken now (``True`` or ``False``, nothing else), asked with the reconcile's context; must not
change anything. An ``async def`` guard is awaited (on the calling thread's loop, as every ``async def`` hook is)."""

_REASON_RE = re.compile(conditions.REASON_PATTERN)


def always(ctx: context.Context) -> bool:
    """The guard of an unconditional edge."""
    return True


def check_phase(value: object, what: str) -> enum.Enum:
    """Return ``value`` when it is a member of a string-valued Enum; raise ``TypeError`` naming ``what`` otherwise."""
    if not isinstance(value, enum.Enum):
        raise TypeError(f"{what} must be a member of the phase Enum, got {value!r}")
    if not isinstance(value.value, str) or not value.value:
        raise TypeError(f"{what} {value!r}: phase values must be non-empty strings (they are persisted)")
    return value


def check_reason(reason: str, what: str) -> str:
    """Return ``reason`` when it is a valid condition reason (CamelCase); raise ``ValueError`` otherwise."""
    if len(reason) > conditions.REASON_MAX_LENGTH or not _REASON_RE.fullmatch(reason):
        raise ValueError(
            f"{what}: reason {reason!r} is not a valid condition reason (CamelCase letters and digits, like "
            f"JobSucceeded)"
        )
    return reason


@dataclasses.dataclass(frozen=True)
class Transition(Generic[P]):
    """One declared edge: the lifecycle may move from ``source`` to ``dest`` when ``when(ctx)`` holds.

    Args:
        source: the phase the edge leaves.
        dest: the phase it enters (another phase of the same Enum).
        when: the guard; default: always. Guards are asked in declaration order and the first that holds wins, so
            put the more specific edge first. A guard must only read (the live children, the spec, the status): it
            may be asked and then not taken. It may be ``async def`` (okt awaits it). It returns a bool: anything
            else (``None`` from a function that forgot its ``return``, an outcome such as ``okt.requeue_after(5)``, a
            number, a string) raises ``TypeError`` naming the edge and what was returned when it is asked.
        reason: the condition reason and event reason of the move (CamelCase); default: the destination's name
            made into a reason (``"Running"``).
        message: a sentence explaining the move, added to the condition message and the event.

    Raises:
        TypeError: a phase is not a member of a string-valued Enum, or ``when`` is not callable or is an async
            generator.
        ValueError: the phases belong to different Enums, the edge does not change the phase, or the reason is not a
            valid condition reason.
    """

    source: P
    dest: P
    _: dataclasses.KW_ONLY
    when: Guard = always
    reason: str = ""
    message: str = ""

    def __post_init__(self) -> None:
        check_phase(self.source, "source")
        check_phase(self.dest, "dest")
        if type(self.source) is not type(self.dest):
            raise ValueError(
                f"{self.source!r} -> {self.dest!r}: both phases must belong to the same Enum "
                f"({type(self.source).__name__} vs {type(self.dest).__name__})"
            )
        if self.source is self.dest:
            raise ValueError(f"{self.source.value} -> {self.dest.value}: a transition must change the phase")
        if not callable(self.when):
            raise TypeError(f"{self.describe()}: when must be a callable taking the context, got {self.when!r}")
        coroutines.refuse_async_generator(self.when, f"the guard of {self.describe()}")
        reason = self.reason or conditions.to_reason(str(self.dest.value))
        object.__setattr__(self, "reason", check_reason(reason, self.describe()))

    def describe(self) -> str:
        """``"Provisioning -> Running"``."""
        return f"{self.source.value} -> {self.dest.value}"

    @property
    def guard_name(self) -> str | None:
        """The guard's name as a diagram shows it (``"setup_succeeded"``; ``"lambda"`` for a lambda, the class's name
        for a callable object); ``None`` for an unconditional edge."""
        if self.when is always:
            return None
        name = getattr(self.when, "__name__", None)
        if not isinstance(name, str):
            return type(self.when).__name__
        return "lambda" if name == "<lambda>" else name


@dataclasses.dataclass(frozen=True)
class Move(Generic[P]):
    """What happened when the lifecycle took an edge.

    Attributes:
        source: the phase left.
        dest: the phase entered.
        reason: the reason reported (the transition's, or the one given to ``force``).
        message: the explanation reported (may be empty).
        forced: the move was asked for with ``Lifecycle.force`` (its guard was not asked).
    """

    source: P
    dest: P
    reason: str
    message: str = ""
    forced: bool = False

    @classmethod
    def along(cls, transition: Transition[P], *, forced: bool = False) -> Move[P]:
        """The move that taking ``transition`` makes."""
        return cls(transition.source, transition.dest, transition.reason, transition.message, forced)

    def describe(self) -> str:
        """``"Provisioning -> Running (JobSucceeded)"``."""
        return f"{self.source.value} -> {self.dest.value} ({self.reason})"


class IllegalTransition(errors.PermanentError):
    """A move along an edge the lifecycle does not declare (``Lifecycle.force`` to a phase not reachable in one step).

    Attributes:
        source: the current phase's value.
        dest: the requested phase's value.
        allowed: the phases the lifecycle may move to from ``source``, in declaration order.
    """

    reason: ClassVar[str] = "IllegalTransition"

    def __init__(self, source: str, dest: str, allowed: Sequence[str] = ()) -> None:
        self.source = source
        self.dest = dest
        self.allowed = tuple(allowed)
        if self.allowed:
            hint = f"from {source} the lifecycle may only move to {', '.join(self.allowed)}"
        else:
            hint = f"{source} is a final phase, no transition leaves it"
        super().__init__(f"illegal transition {source} -> {dest}: {hint}")


class UnknownPhase(errors.PermanentError):
    """The persisted phase (status field or annotation, possibly edited by hand) is not a phase of the lifecycle.

    Attributes:
        value: what was found.
        where: where it was found (``"annotation okt.io/phase"``, ``"status.okt.phase"``).
        expected: the lifecycle's phases.
    """

    reason: ClassVar[str] = "UnknownPhase"
    waits_for_change: ClassVar[bool] = False  # the fix may be an edit of status.okt.phase, which wakes nothing

    def __init__(self, value: str, where: str, expected: Sequence[str], initial: str) -> None:
        self.value = value
        self.where = where
        self.expected = tuple(expected)
        super().__init__(
            f"{where} is {value!r}, which is not a phase of this lifecycle; set it to one of "
            f"{', '.join(self.expected)} ({initial} starts the lifecycle again)"
        )
