"""What daemons found, held per object until a reconcile writes it: the status keeps one writer.

Why this exists: a daemon (:mod:`okt.reconciler.daemons`) learns what the object's status should say — an operand's
health, a backup's progress. Written by a patch of its own, it would be a second writer of one status: its write and
the reconcile's overwrite each other's conditions, and each costs a write of its own. So a daemon hands its findings
over (``ctx.set_condition(...)``, ``ctx.set_status_fields(...)`` on its :class:`~okt.reconciler.daemons.DaemonContext`);
okt holds them in memory, per object and daemon, and asks for a reconcile when they changed. The reconcile sets them in
its working copy before any hook runs (``ctx.conditions``, ``ctx.status_fields``: the hooks read them there, ``ready``
among them), and its one status write carries them with Ready.

Guarantees:

* a finding that says what the daemon said before changes nothing: no reconcile is asked, nothing is written;
* a daemon's condition types are its own: okt's (``Ready``, ``Available``, ``Progressing``, ``Degraded``,
  ``ReconciliationSuccess``, ``Reconciling``, ``Stalled``) and one another daemon of the object states are refused,
  as are okt's own status fields (``conditions``, ``observedGeneration``), a field another daemon of the object
  states, and fields the ``status_model`` refuses;
* findings are held only while their daemon runs: dropped when the object is deleted, begins to be deleted or is
  filtered out by the reconciler's filters, and when the supervisor stops (a shutdown, a lost lease: what was written
  stays on the object, and the next leader's daemon states it again); what a daemon hands over once it was asked to
  stop is dropped;
* a daemon that **returns on its own** (done for its object), or is stopped as its object no longer passes the
  daemon's own filter (``@okt.daemon(labels=..., when=...)``: the object is still reconciled), has its conditions and
  fields removed from the status by the next reconcile's write, those a daemon of its name stated before a restart
  too (it may return without stating anything); they are forgotten once that write went through.

* which condition types and status fields each daemon stated is recorded in the object's bookkeeping
  (:data:`Record`), in the same write: a new process keeps what a daemon it still declares stated until that daemon
  states otherwise (a restart over converged objects writes nothing, the status annotation written whole included),
  and removes, once, what a daemon that never runs for the object again stated: one it no longer declares (removed
  from the code, renamed), or one whose own filter the object does not pass (filtered out of it while no process
  ran, or before the reconcile that was to remove what it stated ran: a lost lease, a shutdown). Each reconcile of
  an object holding such a record looks at the daemons' filters (``when(obj)`` called once more);
* a still-declared daemon that states a condition type the record does not list for it (its new version renamed
  one) has the types the record lists for it and it has not stated since it started removed, in the write carrying
  the new one; its status fields likewise. While it states only names the record lists, the others are kept: it may
  state them later in its round.

Caveats: the findings themselves are the process's memory; the record says only whose they are. Names are compared,
not rounds: after a restart, a daemon that states a type it never stated before the restart (a condition it sets only
on a failure) before one it stated then has that one removed, and written again once it states it (its
``lastTransitionTime`` anew). A daemon's condition carries no ``observedGeneration``: it says what the daemon saw of
the world, not what it made of a generation of the spec.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pydantic

from okt.kube import objects
from okt.reconciler import report
from okt.status import conditions as cond

OKT_TYPES = frozenset((*cond.STANDARD_TYPES, *cond.KSTATUS_TYPES))
"""The condition types okt's report states: never a daemon's."""
OKT_FIELDS = frozenset(("conditions", "observedGeneration"))
"""The status fields okt writes itself: never a daemon's."""

Record = dict[str, dict[str, list[str]]]
"""Which condition types and status fields each daemon stated on an object: ``{daemon: {"conditions": [...],
"fields": [...]}}``, kept in the object's bookkeeping (:mod:`okt.status.bookkeeping`) with what they stated."""


@dataclasses.dataclass
class _Held:
    """What one daemon of one object handed over: its conditions by type, its status fields (None: remove it)."""

    conditions: dict[str, tuple[cond.ConditionStatus, str, str]] = dataclasses.field(default_factory=dict)
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    retired: bool = False
    """The daemon returned on its own: the next reconcile removes what it stated."""


@dataclasses.dataclass(frozen=True)
class Applied:
    """What :meth:`Findings.apply` set in one reconcile's working copy."""

    changed: bool
    """Whether the working copy says something the object does not store yet."""
    retired: tuple[tuple[str, _Held], ...] = ()
    """The findings of daemons gone for good it removed, forgotten once the reconcile's status write went through."""
    record: Record = dataclasses.field(default_factory=dict)
    """What the daemons state now, to be kept in the object's bookkeeping with the write."""


class Findings:
    """The findings of one reconciler's daemons, by object uid and daemon name; safe across threads.

    Args:
        status_model: the reconciler's ``status_model``: status fields it refuses are refused when handed over.
        nowhere: why no reconcile writes what the daemons hand over (the reconciler's ``status`` is "off"), or None;
            given, every condition and status field handed over is refused with it (held, it would be dropped
            silently, the hooks not seeing it either).
    """

    def __init__(self, status_model: type[pydantic.BaseModel] | None = None, *, nowhere: str | None = None) -> None:
        self._status_model = status_model
        self._nowhere = nowhere
        self._lock = threading.Lock()
        self._held: dict[str, dict[str, _Held]] = {}

    # -- the daemon's lifetime (the supervisor) ------------------------------------------------------------------

    def open(self, uid: str, daemon: str) -> None:
        """A daemon starts for the object ``uid``: from now on, what it hands over is held (nothing yet)."""
        with self._lock:
            self._held.setdefault(uid, {})[daemon] = _Held()

    def close(self, uid: str, daemon: str | None = None, *, keep_retired: bool = False) -> None:
        """Forget what ``daemon`` (every daemon, when None) of the object ``uid`` handed over: it was asked to stop.
        With ``keep_retired``, what a daemon done for the object stated (:meth:`retire`) is kept for the reconcile
        that removes it."""
        with self._lock:
            held = self._held.get(uid)
            if held is None:
                return
            for name in list(held) if daemon is None else [daemon]:
                found = held.get(name)
                if found is not None and not (keep_retired and found.retired):
                    del held[name]
            if not held:
                del self._held[uid]

    def clear(self, *, keep_retired: bool = False) -> None:
        """Forget everything (the supervisor stops); with ``keep_retired``, all but what daemons done for their
        object stated (:meth:`retire`), kept for the reconciles that remove it (the kind's daemons suspended)."""
        with self._lock:
            if not keep_retired:
                self._held.clear()
                return
            for uid in list(self._held):
                self._held[uid] = {name: held for name, held in self._held[uid].items() if held.retired}
                if not self._held[uid]:
                    del self._held[uid]

    def retire(self, uid: str, daemon: str) -> bool:
        """``daemon`` returned on its own, or was stopped as its object no longer passes its own filter (the object
        still reconciled): what it stated is to be removed by the next reconcile, with what the
        object's record says a daemon of that name stated before (an earlier process's: a daemon done at once after a
        restart states nothing). Returns whether a reconcile is needed (False once it was asked to stop)."""
        with self._lock:
            held = (self._held.get(uid) or {}).get(daemon)
            if held is None:
                return False
            held.retired = True
            return True

    # -- what a daemon hands over --------------------------------------------------------------------------------

    def set_condition(
        self,
        uid: str,
        daemon: str,
        type: str,
        status: cond.ConditionStatus | bool,
        reason: str,
        message: str = "",
    ) -> bool:
        """Hold the condition ``type`` as ``daemon`` states it; returns whether that changed what it stated (False
        too once the daemon was asked to stop: nothing is held for it any more).

        Raises:
            ValueError: ``type`` is okt's or another daemon's of the object; ``type`` or ``reason`` is not one the API
                accepts (a :class:`pydantic.ValidationError`); the reconciler writes no status (``nowhere``).
        """
        self._refuse_if_nowhere()
        if type in OKT_TYPES:
            raise ValueError(
                f"condition {type!r} is okt's own (it states {', '.join(sorted(OKT_TYPES))}): a daemon "
                "states conditions of its own types"
            )
        # Validated as a condition is (type, reason, message cut to the API's limit), before anything is held.
        condition = cond.Condition.build(type, status, reason, message)
        stated = (condition.status, condition.reason, condition.message)
        with self._lock:
            daemons = self._held.get(uid) or {}
            held = daemons.get(daemon)
            if held is None or held.retired:
                return False
            # A daemon done for the object is not: what it stated leaves with the next reconcile (this one's stays).
            other = next(
                (name for name, h in daemons.items() if name != daemon and not h.retired and type in h.conditions),
                None,
            )
            if other is not None:
                raise ValueError(f"condition {type!r} is stated by daemon {other!r} of this object already")
            if held.conditions.get(type) == stated:
                return False
            held.conditions[type] = stated
            return True

    def set_fields(self, uid: str, daemon: str, fields: Mapping[str, Any]) -> bool:
        """Hold ``fields`` (API names; None removes a field) over what ``daemon`` stated before; returns whether that
        changed it (False too once the daemon was asked to stop).

        Raises:
            ValueError: a field is okt's own or another daemon's of the object, is not JSON, or the ``status_model``
                refuses it; the reconciler writes no status (``nowhere``).
        """
        self._refuse_if_nowhere()
        taken = sorted(OKT_FIELDS.intersection(fields))
        if taken:
            raise ValueError(f"status.{taken[0]} is okt's own: a daemon states fields of its own")
        view = report.status_fields_view(objects.json_copy(dict(fields)), self._status_model)
        with self._lock:
            daemons = self._held.get(uid) or {}
            held = daemons.get(daemon)
            if held is None or held.retired:
                return False
            # One writer per field, as per condition type: two daemons stating one field would each undo the other's
            # value at every reconcile, or one would be shadowed for good, silently.
            for key in sorted(view):
                other = next(
                    (
                        name
                        for name, h in daemons.items()
                        if name != daemon and not h.retired and h.fields.get(key) is not None
                    ),
                    None,
                )
                if other is not None:
                    raise ValueError(f"status.{key} is stated by daemon {other!r} of this object already")
            merged = {**held.fields, **view}
            if merged == held.fields:
                return False
            held.fields = merged
            return True

    def _refuse_if_nowhere(self) -> None:
        if self._nowhere is not None:
            raise ValueError(self._nowhere)

    # -- the reconcile -------------------------------------------------------------------------------------------

    def apply(
        self,
        uid: str,
        conditions: cond.Conditions,
        status_fields: dict[str, Any],
        stored: Mapping[str, Any],
        *,
        record: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        concerned: Collection[str] = (),
        carry: bool = False,
        live: bool = True,
    ) -> Applied:
        """Set what the daemons of the object ``uid`` stated in one reconcile's working copy (``conditions``,
        ``status_fields``; ``stored`` is the status fields the object stores), and remove what the daemons gone for
        good stated.

        Args:
            record: what the object's bookkeeping says daemons stated (:data:`Record`), by a process before this one
                too: what a daemon not ``concerned`` stated there is removed; what a concerned one stated is kept
                until it states otherwise or is done.
            concerned: the names of the reconciler's daemons that run for the object: declared, and passed by the
                object (their own filter). Another never runs for it again while it stays as it is (gone from the
                code, renamed, or the object filtered out of it while no process ran, or before the reconcile asked to
                remove what it stated did).
            carry: the status fields are written whole (``status = "annotations"``): the fields the record's kept
                daemons stated are carried from ``stored`` into ``status_fields``, so that the write keeps them.
            live: False while the object is being deleted: nothing is set nor removed, the record is kept as it is.
        """
        record = record or {}
        with self._lock:
            daemons = list((self._held.get(uid) or {}).items()) if live else []
            # Copies, taken under the lock: the daemon may hand over more while the reconcile runs.
            taken = [(name, held, dict(held.conditions), objects.json_copy(held.fields)) for name, held in daemons]
        changed = False
        retired: list[tuple[str, _Held]] = []
        kept: dict[str, tuple[set[str], set[str]]] = {}
        gone_types: set[str] = set()
        gone_fields: set[str] = set()
        for name, entry in record.items():
            types, keys = set(entry.get("conditions") or ()), set(entry.get("fields") or ())
            if live and name not in concerned:
                # Its daemon is gone from the code (removed, renamed), or does not run for the object as it is: what
                # it stated goes (a daemon of that name running still states its own again, below).
                gone_types |= types
                gone_fields |= keys
            else:
                kept[name] = (types, keys)
        for name, held, stated, fields in taken:
            types, keys = kept.pop(name, (set(), set()))
            if held.retired:
                retired.append((name, held))
                gone_types |= types | set(stated)
                gone_fields |= keys | set(fields)
                continue
            stated_keys = {key for key, value in fields.items() if value is not None}
            # The record lists what this daemon stated in this process, and what a daemon of its name stated before
            # (an earlier process): all of it while it states nothing the record does not list (it states the same
            # names again, perhaps not yet all of them). One it states under a name the record does not list
            # replaces the names it has not stated since it started: its code states them under new ones now.
            if not set(stated) <= types:
                gone_types |= types - set(stated)
                types = set()
            if not stated_keys <= keys:
                gone_fields |= keys - set(fields)
                keys = set()
            kept[name] = (types | set(stated), (keys - set(fields)) | stated_keys)
        # What is gone first: a daemon that still runs may state the same condition or field (it wins).
        for type_ in sorted(gone_types):
            changed = conditions.remove(type_) or changed
        for key in sorted(gone_fields):
            status_fields.setdefault(key, None)
            changed = changed or key in stored
        if carry:
            for _, keys in kept.values():
                for key in keys:
                    if key in stored and status_fields.get(key) is None:
                        status_fields[key] = objects.json_copy(stored[key])
        for _, held, stated, fields in taken:
            if held.retired:
                continue
            for type_, (status, reason, message) in stated.items():
                changed = conditions.set(type_, status, reason, message) or changed
            for key, value in fields.items():
                if value is not None or status_fields.get(key) is None:
                    status_fields[key] = value
                changed = changed or (stored.get(key) != value if value is not None else key in stored)
        now = {
            name: {
                **({"conditions": sorted(types)} if types else {}),
                **({"fields": sorted(keys)} if keys else {}),
            }
            for name, (types, keys) in sorted(kept.items())
            if types or keys
        }
        return Applied(changed, tuple(retired), now)

    def settle(self, uid: str, applied: Applied) -> None:
        """The reconcile that applied ``applied`` wrote its status: forget the findings of the daemons gone for good
        it removed (unless a daemon of that name started again since: its findings are its own)."""
        with self._lock:
            for daemon, held in applied.retired:
                self._drop_locked(uid, daemon, held)

    def holds(self, uid: str) -> bool:
        """Whether anything is held for the object ``uid``."""
        with self._lock:
            return uid in self._held

    def _drop_locked(self, uid: str, daemon: str, held: _Held) -> None:
        daemons = self._held.get(uid)
        if daemons is not None and daemons.get(daemon) is held:
            del daemons[daemon]
            if not daemons:
                del self._held[uid]
