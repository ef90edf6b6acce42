"""Where okt keeps its own per-object bookkeeping (consecutive error count, lifecycle phase; with ``status = "off"``,
or ``"annotations"`` on a kind without a generation, the digest of the last error reported, in
``<prefix>/reported-error``).

Why this exists: Kopf learned that built-in kinds and strict schemas prune unknown status fields, so a single hard-coded
place does not fit every resource. okt lets the reconciler choose: ``status`` (``status.okt``, written with the
conditions in the same status patch) or ``annotations`` (``<prefix>/error-count``, ``<prefix>/phase`` on the object;
okt's event filter ignores changes to its own annotations, so writing them never triggers a reconcile — but for a
person's edit of the phase annotation, which is acted upon at once; okt's own writes of it are echoes, which wake
nothing — and to the error count of another operator built on okt, under its prefix: see
:func:`okt.names.is_report`). A phase found only in the other place was kept there by an operator version with the
other persistence: it is carried over and moved by the next write (the copy left behind removed), so an object's
lifecycle never starts again because its operator changed where it keeps it. So it goes for a new prefix: okt's
annotations under a ``legacy_prefixes`` entry are read where the current names are missing, and the next write
removes them (see :class:`Bookkeeping`).

With annotation persistence and a status subresource, one reconcile's report is two requests (a status and a metadata
patch; the API server takes no write of both), so their order is part of the guarantee: a write that moves the phase
patches the annotations first, alone, and writes the status only once that patch landed
(:func:`okt.reconciler.report.write_status`). A move the API server refuses (an RBAC role that may write the status but
not patch the object, an admission policy, a conflict) is an error that names it, and nothing of the move is written —
not the status that would report it, not, once a ``ctx.flush_status()`` made before the children failed, the children
of the new phase — so the status never runs ahead of the phase. The ErrorManager's report of the refusal (but of a
conflict, a race its quick retry wins) writes the status alone: the error's conditions over those the object stores
(the lifecycle condition of the phase the annotation holds), and the error count in ``status.okt``
(:meth:`Bookkeeping.status_fields_while_refused`), so that Ready says the refusal and Degraded turns True while it goes
on. The other way round, a status write refused after the move landed
leaves the status behind the annotation (the reconcile ends in the same error, its report tries the status once more,
and the retry goes on from the phase the annotation holds).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping, Sequence
from typing import Any

from okt import names as names_mod
from okt.kube import objects

STATUS_FIELD = "okt"


class Persistence(enum.StrEnum):
    """Where okt's bookkeeping is kept: in ``status.okt`` (``STATUS``) or in annotations on the object."""

    STATUS = "status"
    ANNOTATIONS = "annotations"


@dataclasses.dataclass(frozen=True)
class MoveAnnouncement:
    """A phase move of a reconcile, as it is announced once stored: the Normal Event (``reason``, ``message``) and
    the ``lifecycle moved`` log line (``phase``, ``previous``, ``reason``, ``forced``)."""

    reason: str
    message: str
    phase: str
    previous: str
    forced: bool


class Bookkeeping:
    """A working copy of the bookkeeping of one object for one reconcile. ``status_written``: whether okt writes the
    object's status (its reconciler's ``status`` is "status"), where a refused phase move's report keeps the count."""

    def __init__(
        self,
        raw: Mapping[str, Any],
        persistence: Persistence,
        prefix: str,
        legacy_prefixes: Sequence[str] = (),
        *,
        status_written: bool = True,
    ) -> None:
        self.persistence = Persistence(persistence)
        self._count_in_status = 0
        # The API server's refusal of this reconcile's phase move, once refused: the later writes of the reconcile
        # send nothing but the ErrorManager's report of it (see okt.reconciler.report.write_status).
        self.phase_refused: Exception | None = None
        # This reconcile's phase moves, announced (a Normal Event, a log line) once a write stored the move (see
        # okt.reconciler.report.write_status): a move refused or lost is not announced.
        self.moves_to_announce: list[MoveAnnouncement] = []
        self._names = names_mod.of(prefix, tuple(legacy_prefixes))  # shared: read for every object
        in_status = (raw.get("status") or {}).get(STATUS_FIELD)
        kept = in_status if isinstance(in_status, Mapping) else {}  # a hand edit of the status: read as nothing kept
        self._kept_in_status = objects.json_copy(dict(kept))
        annotations = (raw.get("metadata") or {}).get("annotations") or {}
        from_status: dict[str, Any] = {
            "errorCount": _count(kept.get("errorCount")),
            "phase": kept.get("phase"),
            "daemons": _record(kept.get("daemons")),
            "reportedError": None,  # kept in annotations only: the status keeps the conditions that say it
        }
        from_annotations: dict[str, Any] = {
            "errorCount": _count(annotations.get(self.error_annotation)),
            "phase": annotations.get(self.phase_annotation),
            "daemons": _record(_json(annotations.get(self.daemons_annotation))),
            "reportedError": _digest(annotations.get(self.reported_error_annotation)),
        }
        # okt's records under an earlier prefix of the operator: removed by the next write, and read until then where
        # the current name is missing (see :meth:`_taken_over`).
        self._legacy_left = (
            sorted(name for name in self._names.legacy_primary_annotations() if name in annotations)
            if legacy_prefixes
            else []
        )
        self._taken = self._taken_over(annotations) if self._legacy_left else {}
        # The conditions, generation and status fields an operator version with ``status = "annotations"`` kept on
        # the object, where okt now writes the status subresource: carried into it (see okt.reconciler.context), and
        # removed by the next write, or they would go on saying what that version last said.
        self._report_left = (
            sorted(name for name in self._names.status_annotations() if name in annotations) if status_written else []
        )
        if self.persistence is Persistence.STATUS:
            self._loaded, elsewhere = from_status, from_annotations
            left = (
                self.error_annotation,
                self.phase_annotation,
                self.daemons_annotation,
                self.reported_error_annotation,
            )
            self._left_elsewhere = [name for name in left if name in annotations]
            if elsewhere["phase"] is None:
                elsewhere = {**elsewhere, "phase": self._taken.get("phase")}
            if elsewhere["daemons"] is None:
                elsewhere = {**elsewhere, "daemons": self._taken.get("daemons")}
            self._taken = {}  # a count in annotations is not carried into the status, under any prefix
        else:
            self._loaded, elsewhere = from_annotations, from_status
            self._left_elsewhere = [STATUS_FIELD] if in_status is not None else []
            # The count a refused phase move's report kept in the status, the object's annotations refused to it (see
            # status_fields_while_refused); an operator version with status persistence left one there too. Only
            # where okt writes the status (``status_written``): elsewhere no write of its removes that copy, which
            # would be counted on for ever.
            self._count_in_status = from_status["errorCount"] if status_written else 0
        self._values = {**self._loaded, **self._taken}
        # Whether the phase was read from an annotation (current or legacy prefix) though this persistence keeps it in
        # the status: whoever may edit the object sets an annotation, so a lifecycle trusts it only on an object whose
        # status says it was reconciled before (see okt.lifecycle.lifecycle.Lifecycle.current).
        self._phase_from_annotations = False
        if self._values["phase"] is None:
            # Kept in the other place by an operator version with the other persistence: carried over (and moved by the
            # next write), not read as a new object's — which would start its lifecycle again.
            self._values["phase"] = elsewhere["phase"]
            self._phase_from_annotations = self.persistence is Persistence.STATUS and elsewhere["phase"] is not None
        if self._values["daemons"] is None:
            self._values["daemons"] = elsewhere["daemons"]  # what daemons stated, removed once gone: carried too

    def _taken_over(self, annotations: Mapping[str, str]) -> dict[str, Any]:
        """The records kept under a legacy prefix (the first one listed that has each) where the current prefix keeps
        none: the phase so that the lifecycle goes on where the earlier version left it, the count so that failures
        that go on still turn Degraded True after ``degraded_after`` of them, as they would have, what the daemons
        stated so that what a daemon no longer declared stated is still removed, and the digest of the error reported
        so that it is not reported again. The next write removes them all from the legacy prefix: one not read here
        would be lost."""
        taken: dict[str, Any] = {}
        for field, current, read in (
            ("errorCount", self.error_annotation, _count),
            ("phase", self.phase_annotation, lambda value: value),
            ("daemons", self.daemons_annotation, lambda value: _record(_json(value))),
            ("reportedError", self.reported_error_annotation, _digest),
        ):
            if current in annotations:
                continue
            for legacy in self._names.legacy():
                name = {
                    "errorCount": legacy.error_count_annotation,
                    "phase": legacy.phase_annotation,
                    "daemons": legacy.daemons_annotation,
                    "reportedError": legacy.reported_error_annotation,
                }[field]
                if name in annotations:
                    taken[field] = read(annotations[name])
                    break
        return taken

    @property
    def error_annotation(self) -> str:
        return self._names.error_count_annotation

    @property
    def phase_annotation(self) -> str:
        return self._names.phase_annotation

    @property
    def daemons_annotation(self) -> str:
        return self._names.daemons_annotation

    @property
    def reported_error_annotation(self) -> str:
        return self._names.reported_error_annotation

    @property
    def daemons(self) -> dict[str, dict[str, list[str]]]:
        """Which condition types and status fields each daemon stated on the object (``{daemon: {"conditions":
        [...], "fields": [...]}}``): what okt removes once no daemon of that name is declared any more."""
        return objects.json_copy(self._values["daemons"] or {})  # type: ignore[no-any-return]

    @daemons.setter
    def daemons(self, value: Mapping[str, Mapping[str, Sequence[str]]]) -> None:
        self._values["daemons"] = _record(value)

    @property
    def error_count(self) -> int:
        return int(self._values["errorCount"] or 0)

    @error_count.setter
    def error_count(self, value: int) -> None:
        self._values["errorCount"] = max(0, int(value))

    @property
    def stored_error_count(self) -> int:
        """The error count the object carried when the reconcile began: what one more failure adds to. With annotation
        persistence, a count the status keeps is read too, the larger one counting: the failures of a phase move whose
        annotation was refused were counted there."""
        stored = int(self._loaded["errorCount"] or self._taken.get("errorCount") or 0)
        return max(stored, self._count_in_status)

    @property
    def reported_error(self) -> str | None:
        """The digest of the last error reported on the object and of the object as it was then (annotation
        persistence, for a reconciler whose ``status`` is "off", or "annotations" on a kind without a generation: no
        stored condition says what was reported), or None. See :func:`okt.reconciler.report.on_error`."""
        digest: str | None = self._values["reportedError"]
        return digest

    @reported_error.setter
    def reported_error(self, value: str | None) -> None:
        self._values["reportedError"] = value

    @property
    def stored_reported_error(self) -> str | None:
        """:attr:`reported_error` as the object carried it when the reconcile began (under a legacy prefix too)."""
        digest: str | None = self._loaded["reportedError"] or self._taken.get("reportedError")
        return digest

    @property
    def phase(self) -> str | None:
        phase = self._values["phase"]
        return str(phase) if phase is not None else None

    @phase.setter
    def phase(self, value: str | None) -> None:
        self._values["phase"] = value
        self._phase_from_annotations = False

    @property
    def phase_from_annotations(self) -> bool:
        """Whether :attr:`phase` was read from an annotation although this persistence (``status``) keeps it in
        ``status.okt``: left there by an operator version with annotation persistence — or set by whoever may edit
        the object, who may not write its status. False once the reconcile set the phase or a write stored it."""
        return self._phase_from_annotations

    @property
    def stored_phase(self) -> str | None:
        """The phase the object carried where this persistence keeps it (under a legacy prefix too) when the
        reconcile began; None for a new object, or one whose phase was kept in the other place."""
        phase = self._loaded["phase"] if self._loaded["phase"] is not None else self._taken.get("phase")
        return str(phase) if phase is not None else None

    @property
    def moves_phase_annotation(self) -> bool:
        """Whether the next write changes the phase annotation (annotation persistence): okt writes that change alone
        and first, before the status that reports it (:func:`okt.reconciler.report.write_status`)."""
        return self.persistence is Persistence.ANNOTATIONS and self._values["phase"] != self._loaded["phase"]

    @property
    def changed(self) -> bool:
        return self._values != self._loaded

    def written(self) -> None:
        """Take the working copy as what the object keeps, once a write stored it."""
        self._loaded = dict(self._values)
        self._phase_from_annotations = False
        self._left_elsewhere = []
        self._count_in_status = 0
        self._legacy_left = []
        self._report_left = []
        self._taken = {}

    def annotations_written(self) -> None:
        """Take the working copy as what the object's annotations keep, once a metadata patch stored them; what the
        status still has to say (the removal of a copy kept there) is left for the status write."""
        self._loaded = dict(self._values)
        self._legacy_left = []
        self._report_left = []
        self._taken = {}

    def status_fields(self) -> dict[str, Any]:
        """What to merge into the desired status: the bookkeeping (status persistence), or the removal of what an
        operator version with status persistence left there (annotation persistence)."""
        if self.persistence is not Persistence.STATUS:
            return {STATUS_FIELD: None} if self._left_elsewhere else {}
        # Nothing to keep and nothing kept: no field. A phase kept and now cleared is stated as gone (the status patch
        # removes the key the nested map lost; leaving the field out would keep the old phase).
        if (
            not self.error_count
            and self.phase is None
            and self._values["daemons"] is None
            and not self._loaded["errorCount"]
            and self._loaded["phase"] is None
            and self._loaded["daemons"] is None
        ):
            return {}
        return {STATUS_FIELD: {k: v for k, v in self._values.items() if v is not None and k != "reportedError"}}

    def status_fields_while_refused(self) -> dict[str, Any]:
        """What the report of a reconcile whose phase move was refused merges into the status (annotation persistence):
        the error count, in ``status.okt`` beside what the status keeps there, since the object's annotations are
        what the API server refused — an RBAC role that may write the status but not patch the object, an admission
        policy (a conflict is retried at once, and not reported) —, and without it Degraded would never turn True
        while the move is refused. Nothing of the phase: what the status keeps of one (a copy an operator version with
        status persistence left) stays as it is, and the phase annotation keeps the one the refused move left. The
        next write that lands removes the field, the count going to the annotation (:attr:`stored_error_count` reads
        both)."""
        kept = {**self._kept_in_status, "errorCount": self.error_count or None}
        return {STATUS_FIELD: {key: value for key, value in kept.items() if value is not None} or None}

    def changed_annotations(self) -> dict[str, str | None]:
        """The annotations that changed (annotation persistence; ``None`` removes one), empty when none did; with
        status persistence, the removal of those an operator version with annotation persistence left. Either way,
        the removal of okt's records under the legacy prefixes (the conditions there too), and, where okt writes the
        status subresource, of the conditions, generation and status fields an operator version with ``status =
        "annotations"`` kept in annotations."""
        annotations: dict[str, str | None] = dict.fromkeys([*self._legacy_left, *self._report_left])
        if self.persistence is not Persistence.ANNOTATIONS:
            return {**dict.fromkeys(self._left_elsewhere), **annotations}
        if not self.changed:
            return annotations
        if self._values["errorCount"] != self._loaded["errorCount"]:
            annotations[self.error_annotation] = str(self.error_count) if self.error_count else None
        if self._values["phase"] != self._loaded["phase"]:
            annotations[self.phase_annotation] = self.phase
        if self._values["daemons"] != self._loaded["daemons"]:
            record = self._values["daemons"]
            annotations[self.daemons_annotation] = _compact(record) if record is not None else None
        if self._values["reportedError"] != self._loaded["reportedError"]:
            annotations[self.reported_error_annotation] = self._values["reportedError"]
        return annotations

    def annotation_patch(self, resource_version: str | None = None) -> dict[str, Any] | None:
        """A metadata merge patch with only the annotations that changed (annotation persistence only), or None.

        With ``resource_version`` the patch is guarded by it, so a concurrent hand edit is never overwritten.
        """
        annotations = self.changed_annotations()
        if not annotations:
            return None
        metadata: dict[str, Any] = {"annotations": annotations}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"metadata": metadata}


def _record(stored: Any) -> dict[str, dict[str, list[str]]] | None:
    """A record of what daemons stated, as stored (sorted, empty entries left out); None for nothing, or for what is
    not one (a hand edit, read as nothing kept: it must not fail every reconcile)."""
    if not isinstance(stored, Mapping):
        return None
    record: dict[str, dict[str, list[str]]] = {}
    for daemon, entry in stored.items():
        if not isinstance(daemon, str) or not isinstance(entry, Mapping):
            continue
        listed = {
            part: sorted({item for item in entry.get(part) or () if isinstance(item, str)})
            for part in ("conditions", "fields")
            if isinstance(entry.get(part), list | tuple | set | frozenset)
        }
        listed = {part: items for part, items in listed.items() if items}
        if listed:
            record[daemon] = listed
    return dict(sorted(record.items())) or None


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _digest(stored: Any) -> str | None:
    """A digest as stored; None for what is not one (a hand edit, read as nothing reported: reported again once)."""
    text = str(stored) if stored is not None else ""
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None


def _count(stored: Any) -> int:
    """An error count as stored; 0 for what is not one (a hand edit), which must not fail every reconcile."""
    text = str(stored)
    return int(text) if text.isascii() and text.isdigit() else 0  # "²" is a digit int() refuses
