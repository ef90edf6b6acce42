"""Status conditions, written the way Kubernetes API conventions ask for them.

Why this exists: conditions are the part of an operator that users, ``kubectl wait --for=condition=Ready`` and kstatus
readers actually look at. The conventions are precise and easy to get subtly wrong: ``lastTransitionTime`` must move
only when the status flips (not when the message changes), a reason is a CamelCase token, a message is bounded, other
controllers may write conditions into the same list and must not be disturbed, and a status write that changes nothing
is a wasted request that can even re-trigger a watch. This module owns those rules so no caller has to remember them.

Two values live here:

* :class:`Condition` -- one immutable condition (a frozen pydantic model). It validates the API rules on construction
  and serialises to the exact wire shape (``lastTransitionTime`` as ``2026-11-21T10:00:00Z``).
* :class:`Conditions` -- a working copy of one object's ``status.conditions`` for the length of one reconcile. It is
  the only mutable thing in this module, on purpose: a reconcile updates several conditions, then writes once if
  :attr:`Conditions.changed`.

Guarantees:

* ``lastTransitionTime`` changes only when a condition's status changes (or when the condition first appears);
  changing reason, message or observedGeneration keeps it, so a recurring identical error never looks new. A change
  is counted from what the object stores (as loaded, or as :meth:`Conditions.written` last took it), not from what
  the working copy said since: a status set back to the stored one within a reconcile (a success whose write the API
  server refused, then the error's report) keeps the stored time, and a condition removed and set back keeps its
  place too.
* :meth:`Conditions.set` reports whether anything changed; setting what is already there is a no-op.
* Conditions this process never touched -- whoever wrote them -- come out of :meth:`Conditions.to_list` exactly as they
  went in, unknown keys included. Existing conditions keep their position; new ones are appended in the order set.
* Times are aware UTC datetimes truncated to whole seconds. A naive datetime is rejected rather than guessed: a naive
  value in Python is usually local time, and silently calling it UTC would shift transitions by hours.

Caveats:

* A condition we do touch is rewritten from its :class:`Condition` value: keys that :class:`Condition` does not model
  (``lastUpdateTime``, ``lastProbeTime`` from older condition styles) are dropped for that condition only.
* When a list holds the same type twice (possible only in CRDs that do not declare ``listType: map``), the first entry
  is the condition; later duplicates are kept untouched until that type is set or removed, which drops them.
* Message length is counted in UTF-8 bytes, as the API server's Go validation does; that is stricter than characters.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Self

import pydantic

from okt.kube import objects

READY = "Ready"
"""The summary condition type (what ``kubectl wait --for=condition=Ready`` waits on): the reconcile succeeded and
``ready(ctx)`` holds, or False with the error's kind as reason."""
AVAILABLE = "Available"
"""The condition type saying the workload children are up (``available(ctx)``; by default: replicas available)."""
PROGRESSING = "Progressing"
"""The condition type saying a rollout is under way (``progressing(ctx)``; by default a workload child rolls out)."""
DEGRADED = "Degraded"
"""The condition type saying a persistent problem: True after an error that is not a transient one being retried."""
RECONCILIATION_SUCCESS = "ReconciliationSuccess"
"""OKT's condition type: True after a successful reconcile, False after an error (its kind as reason)."""
STANDARD_TYPES = (READY, AVAILABLE, PROGRESSING, DEGRADED, RECONCILIATION_SUCCESS)
RECONCILING = "Reconciling"
STALLED = "Stalled"
KSTATUS_TYPES = (RECONCILING, STALLED)
"""kstatus's abnormal-true conditions (see :mod:`okt.status.kstatus`): present only while something is unusual."""

TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"  # optional DNS-subdomain prefix
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
TYPE_MAX_LENGTH = 316
REASON_MAX_LENGTH = 1024
MESSAGE_MAX_BYTES = 32768
TRUNCATION_MARK = "\u2026"
REPLACEMENT_CHARACTER = "\ufffd"
UNSPECIFIED_REASON = "Unspecified"

_TYPE_RE = re.compile(TYPE_PATTERN)
_REASON_RE = re.compile(REASON_PATTERN)
_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_WIRE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utcnow() -> datetime.datetime:
    """The current time as an aware UTC datetime truncated to whole seconds (the precision conditions carry)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def to_reason(text: str, *, fallback: str = UNSPECIFIED_REASON) -> str:
    """Turn arbitrary text into a valid condition reason.

    The rule: split ``text`` into runs of ASCII letters and digits (everything else -- spaces, punctuation, accents --
    separates words), upper-case the first character of each word, keep the rest of the word as written, and join.
    A result that would start with a digit is prefixed with ``Reason``; a result longer than 1024 characters is cut;
    text with no letters or digits at all gives ``fallback``.

    >>> to_reason("api error: 500")
    'ApiError500'
    >>> to_reason("InvalidSpec")
    'InvalidSpec'
    >>> to_reason("404 not found")
    'Reason404NotFound'
    """
    reason = "".join(word[0].upper() + word[1:] for word in _WORD_RE.findall(text))
    if not reason:
        return fallback
    if reason[0].isdigit():
        reason = "Reason" + reason
    return reason[:REASON_MAX_LENGTH]


def as_reason(text: str) -> str:
    """``text`` itself when it is a valid condition reason, else :func:`to_reason` of it: for a reason that should be
    one already (an error class's ``reason``) but is not always spelled as the API wants it.

    >>> as_reason("InvalidSpec")
    'InvalidSpec'
    >>> as_reason("quota exceeded")
    'QuotaExceeded'
    """
    return text if _valid_reason(text) else to_reason(text)


class ConditionStatus(enum.StrEnum):
    """The three values a condition's status may take (the strings the API uses)."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"

    @classmethod
    def from_bool(cls, value: bool) -> ConditionStatus:
        """``True`` -> ``TRUE``, ``False`` -> ``FALSE``."""
        return cls.TRUE if value else cls.FALSE

    @classmethod
    def parse(cls, value: object) -> ConditionStatus:
        """Read a status as other writers spell it: booleans, any letter case; anything else is UNKNOWN."""
        if isinstance(value, bool):
            return cls.from_bool(value)
        if isinstance(value, str):
            exact = _STATUS_BY_WIRE.get(value)
            if exact is not None:
                return exact
            for member in cls:
                if member.value.lower() == value.strip().lower():
                    return member
        return cls.UNKNOWN


_STATUS_BY_WIRE = {member.value: member for member in ConditionStatus}
"""The spellings the API uses, read without a loop: every reconcile reads every condition of its object."""


class Condition(pydantic.BaseModel, frozen=True, populate_by_name=True, extra="forbid"):
    """One status condition; immutable, validated against the API rules on construction.

    Python names are snake_case, wire names camelCase (:meth:`to_dict` / :meth:`from_dict`). Direct construction is
    strict: a reason outside the API pattern, a message over 32768 UTF-8 bytes or a naive datetime raise
    :class:`pydantic.ValidationError`. Use :meth:`build` to have an over-long message truncated instead, and
    :meth:`from_dict` to read what other writers put in a status.
    """

    type: str = pydantic.Field(pattern=TYPE_PATTERN, max_length=TYPE_MAX_LENGTH)
    status: ConditionStatus
    observed_generation: int | None = pydantic.Field(default=None, ge=0, alias="observedGeneration")
    last_transition_time: datetime.datetime = pydantic.Field(alias="lastTransitionTime")
    reason: str = pydantic.Field(pattern=REASON_PATTERN, min_length=1, max_length=REASON_MAX_LENGTH)
    message: str = ""

    @pydantic.field_validator("last_transition_time")
    @classmethod
    def _aware_utc_seconds(cls, value: datetime.datetime) -> datetime.datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("lastTransitionTime must be timezone-aware (a naive datetime is ambiguous)")
        return value.astimezone(datetime.UTC).replace(microsecond=0)

    @pydantic.field_validator("message")
    @classmethod
    def _bounded_message(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > MESSAGE_MAX_BYTES:
            raise ValueError(f"message is {size} UTF-8 bytes, the limit is {MESSAGE_MAX_BYTES}")
        return value

    @pydantic.field_serializer("last_transition_time", when_used="json")
    def _wire_time(self, value: datetime.datetime) -> str:
        return value.strftime(_WIRE_TIME_FORMAT)

    @classmethod
    def truncate_message(cls, message: str) -> str:
        """Return ``message`` cut to fit the API limit, ending with an ellipsis when it was cut.

        Lone surrogates (what Python keeps of bytes that were not UTF-8, such as a file name read with
        ``surrogateescape``) become U+FFFD: they have no UTF-8 form, and a message holding one could not be sent.
        """
        if len(message) <= MESSAGE_MAX_BYTES and message.isascii():
            return message  # one byte per character: within the limit without encoding it
        try:
            encoded = message.encode("utf-8")
        except UnicodeEncodeError:
            message = _SURROGATE_RE.sub(REPLACEMENT_CHARACTER, message)
            encoded = message.encode("utf-8")
        if len(encoded) <= MESSAGE_MAX_BYTES:
            return message
        room = MESSAGE_MAX_BYTES - len(TRUNCATION_MARK.encode("utf-8"))
        # "ignore" drops a multi-byte character split by the cut instead of leaving half of it behind.
        return encoded[:room].decode("utf-8", errors="ignore") + TRUNCATION_MARK

    @classmethod
    def build(
        cls,
        type: str,
        status: ConditionStatus | bool,
        reason: str,
        message: str = "",
        *,
        observed_generation: int | None = None,
        last_transition_time: datetime.datetime | None = None,
    ) -> Condition:
        """Construct a condition, truncating an over-long message; the time defaults to :func:`utcnow`."""
        return cls(
            type=type,
            status=ConditionStatus.from_bool(status) if isinstance(status, bool) else ConditionStatus(status),
            reason=reason,
            message=cls.truncate_message(message),
            observed_generation=observed_generation,
            last_transition_time=last_transition_time or utcnow(),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, now: Callable[[], datetime.datetime] = utcnow) -> Condition:
        """Read a condition as found in a live object, tolerating what other writers put there.

        Only ``type`` must be valid (a condition without a usable type cannot be addressed; :class:`ValueError`).
        Everything else is repaired rather than rejected: the status is read by :meth:`ConditionStatus.parse`; a
        missing reason becomes ``Unspecified`` and an invalid one goes through :func:`to_reason`; a missing message is
        empty and a long one is truncated; ``lastTransitionTime`` accepts any RFC 3339 / ISO 8601 form (fractions,
        offsets; a value without offset is taken as UTC, which is what the API serialises) and falls back to ``now()``
        when missing or unreadable; an ``observedGeneration`` that is not a non-negative integer is dropped. Unknown
        keys are ignored.
        """
        type_ = data.get("type")
        if not isinstance(type_, str) or not _valid_type(type_):
            raise ValueError(f"not a valid condition type: {type_!r}")
        raw_reason = data.get("reason")
        if isinstance(raw_reason, str) and _valid_reason(raw_reason):
            reason = raw_reason
        else:
            reason = to_reason(raw_reason) if isinstance(raw_reason, str) else UNSPECIFIED_REASON
        raw_message = data.get("message")
        fields: dict[str, Any] = {
            "type": type_,
            "status": ConditionStatus.parse(data.get("status")),
            "reason": reason,
            "message": cls.truncate_message("" if raw_message is None else str(raw_message)),
            "observed_generation": _lenient_generation(data.get("observedGeneration")),
        }
        when = _lenient_time(data.get("lastTransitionTime"))
        if when is None:
            return cls(last_transition_time=now(), **fields)  # the caller's clock is validated
        # Every field was checked or repaired above, and every reconcile reads every condition: not validated twice.
        return cls.model_construct(last_transition_time=when, **fields)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, ``observedGeneration`` omitted when unknown, the time as RFC 3339 UTC."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def with_status(self, status: ConditionStatus | bool, *, at: datetime.datetime | None = None) -> Condition:
        """This condition with ``status``; ``lastTransitionTime`` moves to ``at`` (default now) only if it changed."""
        new_status = ConditionStatus.from_bool(status) if isinstance(status, bool) else ConditionStatus(status)
        if new_status == self.status:
            return self
        return self._replace(status=new_status, last_transition_time=at or utcnow())

    def with_reason(self, reason: str) -> Condition:
        """This condition with another reason (validated); the transition time is kept."""
        return self._replace(reason=reason)

    def with_message(self, message: str) -> Condition:
        """This condition with another message (truncated to the limit); the transition time is kept."""
        return self._replace(message=self.truncate_message(message))

    def with_observed_generation(self, observed_generation: int | None) -> Condition:
        """This condition with another observedGeneration; the transition time is kept."""
        return self._replace(observed_generation=observed_generation)

    def _replace(self, **changes: Any) -> Self:
        # model_copy(update=...) skips validation; rebuilding keeps every rule enforced on every value.
        return self.model_validate({**self.model_dump(), **changes})


def _lenient_generation(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


# The checks below are pure and see few distinct values (a handful of types and reasons; transition times shared by
# every object converged in the same second): each is remembered, within bounds (and only for values of a length the
# API allows, so other writers' oversized values are never kept), instead of redone for every condition of every
# reconcile.


def _valid_type(value: str) -> bool:
    return len(value) <= TYPE_MAX_LENGTH and _type_matches(value)


@functools.lru_cache(maxsize=256)
def _type_matches(value: str) -> bool:
    return _TYPE_RE.fullmatch(value) is not None


def _valid_reason(value: str) -> bool:
    return len(value) <= REASON_MAX_LENGTH and _reason_matches(value)


@functools.lru_cache(maxsize=1024)
def _reason_matches(value: str) -> bool:
    return _REASON_RE.fullmatch(value) is not None


_TIME_MAX_LENGTH = 64
"""Longer than any RFC 3339 time with a fraction and an offset: a longer value is parsed but not remembered."""


def _lenient_time(value: object) -> datetime.datetime | None:
    if isinstance(value, str):
        return _parsed_time(value) if len(value) <= _TIME_MAX_LENGTH else _parsed_time.__wrapped__(value)
    if isinstance(value, datetime.datetime):
        return _utc_seconds(value)
    return None


@functools.lru_cache(maxsize=4096)
def _parsed_time(text: str) -> datetime.datetime | None:
    try:
        return _utc_seconds(datetime.datetime.fromisoformat(text.strip()))
    except ValueError:
        return None


def _utc_seconds(parsed: datetime.datetime) -> datetime.datetime:
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.astimezone(datetime.UTC).replace(microsecond=0)


@dataclasses.dataclass
class _Slot:
    """One entry of the conditions list: the entry as loaded, its type when it is addressable (a valid type, the
    first entry of that type), and its parsed value — read from the entry the first time it is asked for."""

    raw: Mapping[str, Any] | None
    key: str | None
    """The entry's type (a duplicate keeps it: :meth:`Conditions._drop_duplicates` finds it by it)."""
    addressable: bool
    now: Callable[[], datetime.datetime]
    parsed: Condition | None = None
    touched: bool = False
    removed: bool = False
    """Removed from the working copy, kept for its stored value until a write stores the removal."""

    @property
    def condition(self) -> Condition | None:
        if self.parsed is None and self.addressable and self.raw is not None:
            self.parsed = Condition.from_dict(self.raw, now=self.now)
        return self.parsed if self.addressable else None

    @property
    def stored(self) -> Condition | None:
        """The condition as the object stores it (``raw``), whatever this reconcile set since."""
        if not self.touched:
            return self.condition
        return Condition.from_dict(self.raw, now=self.now) if self.addressable and self.raw is not None else None

    @property
    def status(self) -> ConditionStatus | None:
        """The condition's status, read from the entry as loaded when it was not parsed yet (as
        :meth:`Condition.from_dict` reads it): asking whether a condition is true parses nothing else."""
        if not self.addressable:
            return None
        if self.parsed is None and self.raw is not None:
            return ConditionStatus.parse(self.raw.get("status"))
        return self.parsed.status if self.parsed is not None else None

    def holds(self, status: ConditionStatus, reason: str, message: str, observed_generation: int | None) -> bool:
        """Whether the entry as loaded already says exactly this — decided on the entry itself, without parsing it
        (every reconcile sets every condition, and they mostly hold already)."""
        raw = self.raw
        if self.parsed is not None or self.touched or raw is None:
            current = self.condition
            return current is not None and (
                current.status is status
                and current.reason == reason
                and current.observed_generation == observed_generation
                and current.message == Condition.truncate_message(message)
            )
        raw_message = raw.get("message")
        stored_message = "" if raw_message is None else str(raw_message)
        return (
            raw.get("status") == status  # a StrEnum member equals its wire text
            and isinstance(reason, str)
            and raw.get("reason") == reason
            and _valid_reason(reason)
            and _lenient_generation(raw.get("observedGeneration")) == observed_generation
            # The same message truncates the same (most reconciles set the message stored): truncated only if not.
            and (
                stored_message == message
                or Condition.truncate_message(stored_message) == Condition.truncate_message(message)
            )
        )

    def to_wire(self) -> dict[str, Any]:
        if self.touched and self.condition is not None:
            return self.condition.to_dict()
        copied: dict[str, Any] = objects.json_copy(dict(self.raw or {}))
        return copied


@dataclasses.dataclass(frozen=True)
class Mark:
    """A working copy's conditions as they were at one point (:meth:`Conditions.mark`): the entries as held then,
    parsed only when one is asked for — taking a mark at every success parses nothing (most are never read)."""

    entries: tuple[tuple[str | None, Mapping[str, Any] | None, Condition | None], ...]
    now: Callable[[], datetime.datetime]

    def get(self, type: str) -> Condition | None:
        """The condition of ``type`` the copy held at the mark; None when it held none."""
        for key, raw, parsed in self.entries:
            if key == type:
                if parsed is not None or raw is None:
                    return parsed
                return Condition.from_dict(raw, now=self.now)
        return None


class Conditions(Mapping[str, Condition]):
    """A working copy of one object's ``status.conditions``, addressed by condition type.

    Read it with :meth:`from_status`, change it with :meth:`set` / :meth:`remove` / :meth:`set_unknown_if_missing`,
    and write :meth:`to_list` back to the status subresource when :attr:`changed`. ``now`` is the clock used for new
    transition times; tests pass a fixed one. Iteration yields condition types in list order.
    """

    def __init__(
        self, items: Iterable[Mapping[str, Any]] = (), *, now: Callable[[], datetime.datetime] = utcnow
    ) -> None:
        self._now = now
        self._slots: list[_Slot] = []
        self._changed = False
        self._asserted: set[str] = set()
        seen: set[str] = set()
        for item in items:
            if type(item) is not dict and not isinstance(item, Mapping):  # a decoded dict, without the ABC check
                # Not a condition at all: nothing can address or render it, so it is not carried over.
                continue
            raw = objects.json_copy(dict(item))
            type_ = raw.get("type")
            key = type_ if isinstance(type_, str) and _valid_type(type_) else None
            addressable = key is not None and key not in seen
            if key is not None:
                seen.add(key)
            self._slots.append(_Slot(raw=raw, key=key, addressable=addressable, now=now))

    @classmethod
    def from_status(
        cls, status: Mapping[str, Any] | None, *, now: Callable[[], datetime.datetime] = utcnow
    ) -> Conditions:
        """Load ``status["conditions"]``; a missing status, a missing list or a list of another shape reads as empty."""
        items = (status or {}).get("conditions")
        return cls(items if isinstance(items, list) else (), now=now)

    @property
    def asserted(self) -> frozenset[str]:
        """The types :meth:`set` was called for on this copy, changed or not: the conditions its writer states."""
        return frozenset(self._asserted)

    @property
    def changed(self) -> bool:
        """Whether any :meth:`set` or :meth:`remove` changed something since this copy was loaded."""
        return self._changed

    def __getitem__(self, type: str) -> Condition:
        slot = self._find(type)
        if slot is None or slot.condition is None:
            raise KeyError(type)
        return slot.condition

    def __contains__(self, type: object) -> bool:
        return isinstance(type, str) and self._find(type) is not None

    def __iter__(self) -> Iterator[str]:
        return (slot.key for slot in self._slots if slot.addressable and not slot.removed and slot.key is not None)

    def __len__(self) -> int:
        return sum(1 for slot in self._slots if slot.addressable and not slot.removed)

    def __repr__(self) -> str:
        return f"Conditions({self.summary()})"

    def stored(self, type: str) -> Condition | None:
        """The condition as the object stores it (as loaded, or as :meth:`written` took it), whatever this copy set
        or removed since; None when the object stores none of that type."""
        for slot in self._slots:
            if slot.addressable and slot.key == type:
                return slot.stored
        return None

    def mark(self) -> Mark:
        """The conditions as this copy holds them now, to read later as they were (a give-up taking a success's
        report back): an entry is held by reference (:meth:`set` replaces a parsed value, :meth:`written` a raw
        entry, neither changes one in place), so a mark copies and parses nothing."""
        return Mark(
            tuple((slot.key, slot.raw, slot.parsed) for slot in self._slots if slot.addressable and not slot.removed),
            self._now,
        )

    def is_true(self, type: str) -> bool:
        """Whether the condition is present with status True."""
        return self._status(type) is ConditionStatus.TRUE

    def is_false(self, type: str) -> bool:
        """Whether the condition is present with status False."""
        return self._status(type) is ConditionStatus.FALSE

    def is_unknown(self, type: str) -> bool:
        """Whether the condition is Unknown; an absent condition is unknown too."""
        status = self._status(type)
        return status is None or status is ConditionStatus.UNKNOWN

    def _status(self, type: str) -> ConditionStatus | None:
        slot = self._find(type)
        return None if slot is None else slot.status

    def set(
        self,
        type: str,
        status: ConditionStatus | bool,
        reason: str,
        message: str = "",
        observed_generation: int | None = None,
    ) -> bool:
        """Set one condition; return whether anything changed.

        ``lastTransitionTime`` is kept when the object stores the condition with this status, or when this copy set
        it to this status already; it is ``now()`` otherwise (a new condition, a status change). The message is
        truncated to the API limit; an invalid type or reason raises :class:`pydantic.ValidationError` (use
        :func:`to_reason` for free text). Setting exactly what is there changes nothing and returns False.
        """
        slot = self._find(type)
        self._asserted.add(type)
        new_status = ConditionStatus.from_bool(status) if isinstance(status, bool) else ConditionStatus(status)
        if slot is not None and slot.holds(new_status, reason, message, observed_generation):
            return False  # exactly what is there (the steady state of every reconcile): nothing to build
        current = slot.condition if slot is not None else None
        if slot is None:
            slot = self._find(type, removed=True)  # stored, removed by this copy: set back in its place
        stored = slot.stored if slot is not None else None
        if stored is not None and stored.status is new_status:
            # What the object says since then: a status set back (a success whose write was refused, then the
            # error) is no transition.
            since = stored.last_transition_time
        elif current is not None and current.status is new_status:
            since = current.last_transition_time
        else:
            since = self._now()
        wanted = Condition.build(
            type, new_status, reason, message, observed_generation=observed_generation, last_transition_time=since
        )
        if current is not None and wanted == current:
            return False
        if slot is None:
            self._slots.append(_Slot(raw=None, key=type, addressable=True, now=self._now, parsed=wanted, touched=True))
        else:
            slot.parsed = wanted
            slot.touched = True
            slot.removed = False
            self._drop_duplicates(slot)
        self._changed = True
        return True

    def set_unknown_if_missing(
        self, types: Iterable[str], reason: str, message: str = "", observed_generation: int | None = None
    ) -> bool:
        """Add each of ``types`` that is absent with status Unknown (the conventions ask for conditions on first visit).

        Present conditions are left alone whatever their status. Returns whether anything was added.
        """
        added = False
        for type_ in types:
            if type_ not in self:
                added = self.set(type_, ConditionStatus.UNKNOWN, reason, message, observed_generation) or added
        return added

    def remove(self, type: str) -> bool:
        """Remove a condition (and any duplicate of its type); return whether it was there."""
        slot = self._find(type)
        if slot is None:
            return False
        self._drop_duplicates(slot)
        if slot.raw is None:
            self._slots.remove(slot)  # set by this copy only: nothing stored to come back to
        else:
            slot.removed = True
        self._asserted.discard(type)
        self._changed = True
        return True

    def apply(self, updates: Iterable[ConditionUpdate], observed_generation: int | None = None) -> bool:
        """:meth:`set` each update; return whether anything changed."""
        changed = False
        for update in updates:
            changed = (
                self.set(update.type, update.status, update.reason, update.message, observed_generation) or changed
            )
        return changed

    def to_list(self) -> list[dict[str, Any]]:
        """The list to write as ``status.conditions`` (fresh copies; mutating them does not affect this object)."""
        return [slot.to_wire() for slot in self._slots if not slot.removed]

    def written(self) -> None:
        """Take the working copy as what the object stores, once a write stored it: a later :meth:`set` of this copy
        (the report after a ``flush_status()``) counts its transitions from what was written."""
        self._slots = [slot for slot in self._slots if not slot.removed]
        for slot in self._slots:
            if slot.touched and slot.parsed is not None:
                slot.raw = slot.parsed.to_dict()

    def summary(self) -> str:
        """One line for logs, in list order: ``Ready=True (Reconciled), Degraded=False (Reconciled)``."""
        parts = [
            f"{slot.condition.type}={slot.condition.status.value} ({slot.condition.reason})"
            for slot in self._slots
            if slot.condition is not None and not slot.removed
        ]
        return ", ".join(parts) if parts else "no conditions"

    def _find(self, type: str, *, removed: bool = False) -> _Slot | None:
        """The slot of ``type`` in the working copy, or (``removed``) one this copy removed of the stored ones."""
        for slot in self._slots:
            if slot.addressable and slot.key == type and slot.removed is removed:
                return slot
        return None

    def _drop_duplicates(self, primary: _Slot) -> None:
        self._slots = [slot for slot in self._slots if slot is primary or slot.key != primary.key]


class ConditionUpdate(NamedTuple):
    """What one condition should become: the arguments of :meth:`Conditions.set` without the generation."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
