"""The results stack of one reconcile and the single outcome it consolidates into.

Why this exists: a reconcile does many things (reads, creates, updates, prunes, status writes, user hooks) and any of
them can fail, ask for a requeue or give up. Each appends an immutable :class:`Entry` to the reconcile's own
:class:`Results`; the engine routes on it after every state, and at the end :meth:`Results.outcome` folds it into one
:class:`Outcome` the work queue acts on.

Guarantees (the consolidation rules):

* the **first** error wins: later errors are recorded but do not replace it;
* a give-up overrides any error and is sticky: once given up, the reconcile stays given up (the first reason is kept);
  an *alarming* give-up also counts as an error;
* an error always requeues (``retry``; with the error entry's delay when it has one, otherwise the queue's per-key
  exponential backoff);
* a non-error entry requeues only with a delay > 0, the smallest such delay wins;
* every delay is capped at :data:`MAX_DELAY` (6 h);
* give-up never requeues: the object is reconciled again when it changes — but for a give-up whose status write
  failed (an alarming one's report by the ErrorManager, a lifecycle move made before a quiet one), which is retried
  like an error until it is written.

Caveats: a ``Results`` belongs to one reconcile on one thread. It is never global and never shared; it is mutable
(an append-only stack) and not thread-safe. Entries and outcomes are immutable values.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from typing import Self

from okt import delays, errors, secret_values
from okt.resources import resource as resource_mod

#: The longest requeue or retry delay, in seconds (6 hours): :data:`okt.delays.MAX_DELAY`.
MAX_DELAY = delays.MAX_DELAY


class Operation(enum.StrEnum):
    """What one entry of the results stack records."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    PRUNED = "pruned"
    CRUD_ERROR = "crud error"
    MUTATE_ERROR = "mutate error"
    STATUS_UPDATED = "status updated"
    STATUS_UNCHANGED = "status unchanged"
    STATUS_UPDATE_ERROR = "status update error"
    REGISTRATION_ABORTED = "registration aborted"
    CR_NOT_FOUND = "cr not found"
    FINALIZER_ADDED = "finalizer added"
    FINALIZER_REMOVED = "finalizer removed"
    FINALIZING = "finalizing"
    CLEANUP_ERROR = "cleanup error"
    HOOK_ERROR = "hook error"
    GIVE_UP = "give up"
    REQUEUE = "requeue"
    THROTTLED = "throttled"
    """A child's creation put off to the next reconcile (the reconciler's ``max_creates``)."""

    @property
    def is_error(self) -> bool:
        """Whether an entry with this operation is a failure (it must carry the exception)."""
        return self in _ERROR_OPERATIONS


_ERROR_OPERATIONS = frozenset(
    {
        Operation.CRUD_ERROR,
        Operation.MUTATE_ERROR,
        Operation.STATUS_UPDATE_ERROR,
        Operation.REGISTRATION_ABORTED,
        Operation.CLEANUP_ERROR,
        Operation.HOOK_ERROR,
    }
)

_STATUS_WRITES = frozenset({Operation.STATUS_UPDATED, Operation.STATUS_UNCHANGED, Operation.STATUS_UPDATE_ERROR})
_CHANGES = frozenset(
    {Operation.CREATED, Operation.UPDATED, Operation.DELETED, Operation.PRUNED, Operation.STATUS_UPDATED}
)

# Always shown by ``Results.summary``, even at zero: what happened to the children.
_SUMMARY_ALWAYS = (Operation.CREATED, Operation.UPDATED, Operation.UNCHANGED, Operation.DELETED, Operation.PRUNED)


def _check_delay(delay: float | None, what: str) -> None:
    if delay is not None and not delays.is_seconds(delay, zero=True):
        raise ValueError(f"{what} must be a finite number of seconds >= 0, got {delays.said(delay)}")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One thing that happened during a reconcile.

    Attributes:
        operation: what happened.
        resource: the resource it concerns (a readable key such as ``"v1/ConfigMap ns/name"``), if any.
        error: the exception; required for error operations, allowed on a give-up, refused otherwise.
        delay: a requeue delay in seconds; required (> 0) for ``REQUEUE``.

    Raises:
        ValueError: the fields contradict each other.
    """

    operation: Operation
    resource: str | None = None
    error: BaseException | None = None
    delay: float | None = None

    def __post_init__(self) -> None:
        if self.resource is not None and not isinstance(self.resource, str):
            raise TypeError(
                f"an entry's resource must be a str (its key) or an okt.Resource, not {type(self.resource).__name__}"
            )
        _check_delay(self.delay, "delay")
        if self.operation.is_error and self.error is None:
            raise ValueError(f"a {self.operation.value!r} entry needs the error")
        if not self.operation.is_error and self.operation is not Operation.GIVE_UP and self.error is not None:
            raise ValueError(f"a {self.operation.value!r} entry cannot carry an error")
        if self.operation is Operation.REQUEUE and not self.delay:
            raise ValueError("a 'requeue' entry needs a delay > 0")


class OutcomeKind(enum.Enum):
    """How a reconcile ended, as far as the work queue is concerned."""

    DONE = "done"
    REQUEUE_AFTER = "requeue_after"
    RETRY = "retry"
    GIVE_UP = "give_up"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The one result of a reconcile: ``done``, ``requeue_after(s)``, ``retry(error)`` or ``give_up(reason)``.

    Build it with the constructors; direct construction is validated so the fields can never contradict the kind:
    only ``REQUEUE_AFTER`` (delay > 0) and ``RETRY`` (optional delay) have a delay, only ``RETRY`` has an error, only
    ``GIVE_UP`` has a reason.
    """

    kind: OutcomeKind
    delay: float | None = None
    error: BaseException | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        _check_delay(self.delay, "delay")
        if self.delay is not None and self.delay > MAX_DELAY:
            raise ValueError(f"delay is capped at {MAX_DELAY} s, got {self.delay!r}")
        kind = self.kind
        if (self.error is not None) != (kind is OutcomeKind.RETRY):
            raise ValueError(f"{kind.value} {'cannot carry' if self.error is not None else 'needs'} an error")
        if (self.reason is not None) != (kind is OutcomeKind.GIVE_UP):
            raise ValueError(f"{kind.value} {'cannot carry' if self.reason is not None else 'needs'} a reason")
        if kind is OutcomeKind.REQUEUE_AFTER and not self.delay:
            raise ValueError("requeue_after needs a delay > 0")
        if kind in (OutcomeKind.DONE, OutcomeKind.GIVE_UP) and self.delay is not None:
            raise ValueError(f"{kind.value} cannot carry a delay")

    @classmethod
    def done(cls) -> Self:
        """Nothing more to do until the object or one of its children changes."""
        return cls(OutcomeKind.DONE)

    @classmethod
    def requeue_after(cls, seconds: float) -> Self:
        """Reconcile again after ``seconds`` (> 0; capped at :data:`MAX_DELAY`, an int past a float's range too:
        ``requeue_after(2 ** ctx.attempt)`` after a thousand attempts waits 6 hours as ``10 ** 20`` does).

        Raises:
            ValueError: ``seconds`` is not finite or not > 0; ``TypeError``: it is not a number (a ``timedelta`` is
                told to pass its ``total_seconds()``), or it is a bool (Python counts ``True`` as 1:
                ``requeue_after(True)`` would requeue after one second). One message for all, saying what is needed
                and naming the value (an int too long to print by its number of digits): the hook's author reads it
                where the call is, not deep in the queue.
        """
        if not delays.is_seconds(seconds):
            wrong = ValueError if delays.is_number(seconds) else TypeError
            raise wrong(f"requeue_after needs a finite number of seconds > 0, got {delays.said(seconds)}")
        return cls(OutcomeKind.REQUEUE_AFTER, delay=delays.capped(seconds))

    @classmethod
    def retry(cls, error: BaseException, delay: float | None = None) -> Self:
        """Reconcile again because of ``error``: after ``delay`` (capped) if given, else after the queue's backoff."""
        _check_delay(delay, "delay")
        return cls(OutcomeKind.RETRY, delay=None if delay is None else delays.capped(delay), error=error)

    @classmethod
    def give_up(cls, reason: str) -> Self:
        """Stop until the object changes, because of ``reason``."""
        return cls(OutcomeKind.GIVE_UP, reason=reason)

    @property
    def requeue(self) -> bool:
        """Whether the work queue must schedule this key again by itself."""
        return self.kind in (OutcomeKind.REQUEUE_AFTER, OutcomeKind.RETRY)

    def __str__(self) -> str:
        if self.kind is OutcomeKind.REQUEUE_AFTER:
            return f"requeue_after({self.delay})"
        if self.kind is OutcomeKind.RETRY:
            name = type(self.error).__name__
            return f"retry({name})" if self.delay is None else f"retry({name}, {self.delay})"
        if self.kind is OutcomeKind.GIVE_UP:
            return f"give_up({self.reason})"
        return "done"


class Results:
    """The append-only results stack of one reconcile (see the module docstring for the rules)."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._counts: dict[Operation, int] = {}
        self._first_error: Entry | None = None
        self._gave_up: str | None = None
        self._alarming = False

    def add(
        self,
        operation: Operation,
        resource: str | resource_mod.Resource | None = None,
        error: BaseException | None = None,
        delay: float | None = None,
    ) -> Entry:
        """Record one operation and return its entry.

        ``resource`` is what it concerns: its key (``"ConfigMap/default/cache"``), or the :class:`okt.Resource`
        itself, recorded by its key (OKT's ``AddOp(res, ...)``).

        Raises:
            TypeError: ``resource`` is neither a str nor an :class:`okt.Resource`.
            ValueError: the arguments contradict each other (see :class:`Entry`), or ``operation`` is ``GIVE_UP``
                (use :meth:`give_up`, which keeps the give-up sticky).
        """
        if operation is Operation.GIVE_UP:
            raise ValueError("record a give-up with Results.give_up()")
        if isinstance(resource, resource_mod.Resource):
            resource = resource.describe()
        return self._append(Entry(operation, resource, error, delay))

    def give_up(self, reason: str, alarming: bool = False, error: BaseException | None = None) -> Entry:
        """Give up the reconcile; sticky, the first reason is kept.

        Args:
            reason: why (the condition message).
            alarming: giving up is also an error (the ErrorManager runs first); when no ``error`` is given a
                :class:`okt.errors.GiveUp` carrying ``reason`` stands for it.
            error: the exception behind the give-up, if any.
        """
        if alarming and error is None:
            error = errors.GiveUp(reason, alarming=True)
        entry = Entry(Operation.GIVE_UP, error=error)
        if self._gave_up is None:
            # Said as an error's message is (Ready's message, the outcome in the log): without the values of the
            # Secrets the reconcile read, which an author's reason may quote.
            self._gave_up = secret_values.left_out(reason)
        self._alarming = self._alarming or alarming
        self._entries.append(entry)
        self._counts[Operation.GIVE_UP] = self._counts.get(Operation.GIVE_UP, 0) + 1
        if alarming and self._first_error is None:
            self._first_error = entry
        return entry

    def record_exception(self, exc: BaseException) -> Entry:
        """Record what a hook raised: a give-up for :class:`~okt.errors.GiveUp`, otherwise a ``HOOK_ERROR``
        (with the requeue delay of a :class:`~okt.errors.TemporaryError`)."""
        if isinstance(exc, errors.GiveUp):
            return self.give_up(exc.reason_text, alarming=exc.alarming, error=exc)
        if isinstance(exc, errors.TemporaryError):
            return self.add(Operation.HOOK_ERROR, error=exc, delay=exc.delay)
        return self.add(Operation.HOOK_ERROR, error=exc)

    def follow(self, returned: object, hook: str) -> None:
        """Record what a hook returned: ``None`` carries on; an :class:`Outcome` (``okt.requeue_after(60)``,
        ``okt.give_up("why")``, ``okt.Outcome.retry(error)``) asks for that outcome. Anything else is recorded as the
        hook's error (a ``TypeError`` that says what a hook may return): it is a bug of the operator, never silent.
        """
        if returned is None:
            return
        if not isinstance(returned, Outcome):
            self.add(
                Operation.HOOK_ERROR,
                hook,
                TypeError(
                    f"{hook} returned {returned!r}: a hook returns None (carry on), okt.requeue_after(seconds) or "
                    "okt.give_up(reason)"
                ),
            )
        elif returned.kind is OutcomeKind.REQUEUE_AFTER:
            self.add(Operation.REQUEUE, hook, delay=returned.delay)
        elif returned.kind is OutcomeKind.GIVE_UP:
            self.give_up(returned.reason or hook)
        elif returned.kind is OutcomeKind.RETRY and returned.error is not None:
            self.add(Operation.HOOK_ERROR, hook, returned.error, delay=returned.delay)

    def take(self, other: Results) -> None:
        """Record the entries of ``other``, in their order, as if they had been recorded here: part of this
        reconcile's work done on a stack of its own (a timer's call run in a thread of its own), the consolidation
        rules applying to the whole."""
        for entry in other._entries:
            self._append(entry)
            if entry is other._first_error and self._first_error is None:
                self._first_error = entry  # an alarming give-up
        if self._gave_up is None:
            self._gave_up = other._gave_up
        self._alarming = self._alarming or other._alarming

    def _append(self, entry: Entry) -> Entry:
        self._entries.append(entry)
        self._counts[entry.operation] = self._counts.get(entry.operation, 0) + 1
        if entry.operation.is_error and self._first_error is None:
            self._first_error = entry
        return entry

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry, oldest first."""
        return tuple(self._entries)

    def counts(self) -> collections.Counter[Operation]:
        """How many entries of each operation were recorded."""
        return collections.Counter(self._counts)

    def count(self, operation: Operation) -> int:
        """How many entries of ``operation`` were recorded (kept as they are added: read on every reconcile)."""
        return self._counts.get(operation, 0)

    @property
    def first_error(self) -> BaseException | None:
        """The exception of the first error (an alarming give-up counts), or ``None``."""
        return None if self._first_error is None else self._first_error.error

    @property
    def has_error(self) -> bool:
        """Whether any error, or an alarming give-up, was recorded."""
        return self._first_error is not None

    @property
    def gave_up(self) -> str | None:
        """The reason of the (first) give-up, or ``None`` when the reconcile did not give up."""
        return self._gave_up

    @property
    def give_up_alarming(self) -> bool:
        """Whether any give-up was alarming."""
        return self._alarming

    @property
    def min_delay(self) -> float | None:
        """The smallest delay > 0 among non-error entries, capped at :data:`MAX_DELAY`; ``None`` if there is none."""
        asked = [
            entry.delay
            for entry in self._entries
            if not entry.operation.is_error and entry.delay is not None and entry.delay > 0
        ]
        return delays.capped(min(asked)) if asked else None

    @property
    def changed_anything(self) -> bool:
        """Whether the reconcile wrote something: a child created, updated, deleted or pruned, or the status."""
        return any(entry.operation in _CHANGES for entry in self._entries)

    def outcome(self) -> Outcome:
        """Fold the stack into the reconcile's one outcome (give-up > first error > smallest delay > done).

        A first error that is an :class:`okt.errors.PermanentError` (``InvalidSpec``...) gives up: it was reported
        (ErrorManager ran), and nothing is retried until the object changes — unless the last status write failed:
        the report did not reach the object (Ready may still say True), so it is retried until it does. So is a
        give-up whose last status write failed: an *alarming* one's report (the ErrorManager reports it as it
        reports an error), or the bookkeeping a quiet one left to write (a lifecycle move, made again otherwise once
        the object changes). A report that landed after a refused write (the status fields left out) counts as
        reported, and so does one not sent because the API server refused the same of the unchanged object already
        (``status unchanged``: the retry would send nothing either).
        """
        reported = self.status_refusal is None
        if self._gave_up is not None:
            if not reported and self._first_error is not None and self._first_error.error is not None:
                # What the give-up left to write (the report of an alarming one, a lifecycle move before a quiet one)
                # did not land, and a give-up waits for a change that need never come.
                return Outcome.retry(self._first_error.error, delay=self._first_error.delay)
            return Outcome.give_up(self._gave_up)
        if self._first_error is not None and self._first_error.error is not None:
            error = self._first_error.error
            if isinstance(error, errors.PermanentError) and error.waits_for_change and reported:
                # Retrying the same input cannot help (Kopf's PermanentError): reported, then left alone until the
                # object changes, which enqueues it again.
                return Outcome.give_up(f"{errors.reason_for(error)}: {error}")
            return Outcome.retry(error, delay=self._first_error.delay)
        delay = self.min_delay
        if delay is not None:
            return Outcome.requeue_after(delay)
        return Outcome.done()

    @property
    def status_refusal(self) -> BaseException | None:
        """The error of the reconcile's last status write when it failed (its report did not reach the object: a
        permanent error is then retried, see :meth:`outcome`); ``None`` when it landed, had nothing to write, or
        there was none."""
        for entry in reversed(self._entries):
            if entry.operation in _STATUS_WRITES:
                return entry.error if entry.operation is Operation.STATUS_UPDATE_ERROR else None
        return None

    def summary(self) -> str:
        """A short line for logs: the children counts always, other operations when they occurred.

        Example: ``"created=3 updated=0 unchanged=0 deleted=0 pruned=0 hook_error=1"``.
        """
        counts = self._counts
        shown = [op for op in Operation if op in _SUMMARY_ALWAYS or op in counts]
        return " ".join(f"{op.value.replace(' ', '_')}={counts.get(op, 0)}" for op in shown)
