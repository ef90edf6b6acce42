"""The built-in report: the conditions after a success or an error (pure functions), then one status write.

Why this exists: it is OKT's SuccessManager and ErrorManager. What the conditions say is decided by pure functions
over a working copy of the conditions, so it is tested without a cluster; the write happens once, at the end, and only
when something changed — to the status subresource, to annotations or nowhere, as the reconciler's ``status`` says.

Guarantees: nothing is written when nothing changed; a permanent error or a give-up already reported for this
generation is not reported again (no error count, no Event: 0 writes while the object does not change, a restart of
the operator included — where no stored condition tells it, by the digest of the report kept beside the error count,
:func:`reported_error`: with ``status = "off"``, and with ``status = "annotations"`` on a kind without a generation,
whose Ready says the same of every value refused alike), nor is a wait that says the same
(``TemporaryError.waiting``: a child's namespace being deleted), which is never counted; such a report the API server
refused for what the object holds (a spec stored before its CRD got stricter) is not sent again while the object does
not change (:mod:`okt.reconciler.refused_reports`); a recovery (Ready going from False to True) is worth a Normal
Event once its status write landed, a first success is not.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from okt import coroutines, errors
from okt.engines import results as results_mod
from okt.kube import objects
from okt.reconciler import children, finalize, refused_reports
from okt.resources import checksum, helpers
from okt.status import conditions as cond
from okt.status import events, kstatus, writer

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod
    from okt.reconciler import reconciler as reconciler_mod

Operation = results_mod.Operation
CONFLICT_DELAY = children.CONFLICT_DELAY


@dataclasses.dataclass(frozen=True)
class Signal:
    """One condition's value as a hook states it: status, reason, message."""

    status: bool
    reason: str
    message: str

    @classmethod
    def of(
        cls,
        value: bool | tuple[bool, str, str] | Signal,
        if_true: tuple[str, str],
        if_false: tuple[str, str],
        hook: str = "a condition hook",
    ) -> Signal:
        """Read what a hook returned: a bool takes the default reason and message of that value.

        Raises:
            TypeError: ``hook`` returned an outcome (``okt.requeue_after(5)``): true as a bool, it would turn the
                condition True when the hook meant "not yet".
        """
        if isinstance(value, Signal):
            return value
        if isinstance(value, results_mod.Outcome):
            raise TypeError(
                f"{hook} returned {value}: it returns a bool or (status, reason, message); an outcome is returned by "
                "enter_in_state, check or cleanup"
            )
        if isinstance(value, tuple):
            return cls(bool(value[0]), value[1], value[2])
        return cls(bool(value), *(if_true if value else if_false))


def success_conditions(
    conditions: cond.Conditions,
    generation: int,
    *,
    ready: Signal,
    available: Signal | None,
    progressing: Signal,
    degraded: Signal,
) -> None:
    """Set the five conditions of a successful reconcile (``available`` None: no workload to wait for)."""
    conditions.set(cond.READY, ready.status, ready.reason, ready.message, generation)
    kstatus.follow_ready(conditions, generation, ready.status, ready.reason, ready.message)
    conditions.set(cond.RECONCILIATION_SUCCESS, True, "Reconciled", f"generation {generation} reconciled", generation)
    conditions.set(cond.PROGRESSING, progressing.status, progressing.reason, progressing.message, generation)
    conditions.set(cond.DEGRADED, degraded.status, degraded.reason, degraded.message, generation)
    if available is None:
        conditions.set(cond.AVAILABLE, True, "Reconciled", "no workload to wait for", generation)
    else:
        conditions.set(cond.AVAILABLE, available.status, available.reason, available.message, generation)


def error_conditions(
    conditions: cond.Conditions,
    generation: int,
    reason: str,
    message: str,
    *,
    degraded: bool = True,
    stalled: bool = False,
) -> bool:
    """Set the conditions of a failed reconcile; returns whether Ready changed, and differs from what the object
    stores (the error is news: not when a success set Ready True in the working copy only, then a hook raised the
    error the object already says).

    ``degraded`` False (a transient error, not yet persistent) leaves Degraded False, explained: OpenShift's rule,
    Degraded is a persistent problem, never a hiccup. ``stalled`` (retrying cannot fix it) sets kstatus's
    ``Stalled=True``, otherwise ``Reconciling=True`` says the error is being retried.
    """
    news = conditions.set(cond.READY, False, reason, message, generation)
    news = news and conditions.stored(cond.READY) != conditions[cond.READY]
    (kstatus.stalled if stalled else kstatus.reconciling)(conditions, generation, reason, message)
    conditions.set(cond.RECONCILIATION_SUCCESS, False, reason, message, generation)
    if degraded:
        conditions.set(cond.DEGRADED, True, reason, message, generation)
    else:
        conditions.set(cond.DEGRADED, False, "Retrying", f"a transient error is being retried: {message}", generation)
    conditions.set_unknown_if_missing((cond.AVAILABLE, cond.PROGRESSING), reason, message, generation)
    return news


def on_success(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context) -> None:
    """SuccessManager: the conditions from the reconciler's ``ready``/``available``/``progressing``/``degraded``
    hooks (Ready False with ``ctx.not_ready``'s reason and message when a lifecycle phase holds it), the bookkeeping
    reset; then, left due in ``ctx.status_due`` until the state's hook has returned, one
    status write if anything changed and an Event on recovery."""
    # Status fields the status model refuses (or that are no JSON) fail the reconcile here, before Ready=True is set:
    # the ErrorManager then reports them, and the refused values are never written.
    status_fields_view(ctx.status_fields, ctx.settings.status_model)
    was_failing = ctx.conditions.is_false(cond.READY)
    # What a recovery's Event says, as things stand before the conditions are written (read only then).
    recovered = f"generation {ctx.cr.generation} reconciled: {ctx.results.summary()}" if was_failing else ""
    available = coroutines.call(reconciler.available, ctx)
    ready = Signal.of(coroutines.call(reconciler.ready, ctx), ("Reconciled", ""), ("NotReady", ""), "ready")
    if ctx.not_ready is not None:
        # A lifecycle phase in which the object may not be Ready (``Lifecycle(ready=...)``): the phase says why.
        ready = Signal(False, *ctx.not_ready)
    progressing = Signal.of(
        coroutines.call(reconciler.progressing, ctx),
        ("RollingOut", "a rollout is under way"),
        ("Settled", "nothing to roll out"),
        "progressing",
    )
    in_status = ctx.settings.status_target is writer.Target.STATUS  # not in a built-in kind's annotations
    if in_status and ctx.settings.related_objects:
        ctx.status_fields.setdefault("relatedObjects", related_objects(ctx))
    versions = coroutines.call(reconciler.target_versions, ctx)
    if in_status and versions:
        progressing = _versions(ctx, versions, progressing)
    success_conditions(
        ctx.conditions,
        ctx.cr.generation,
        ready=ready,
        available=None
        if available is None
        else Signal.of(
            available,
            ("ReplicasAvailable", "all replicas are available"),
            ("ReplicasUnavailable", "waiting for replicas"),
            "available",
        ),
        progressing=progressing,
        degraded=Signal.of(
            coroutines.call(reconciler.degraded, ctx), ("Degraded", "degraded"), ("AsExpected", "no error"), "degraded"
        ),
    )
    ctx.bookkeeping.error_count = 0
    ctx.bookkeeping.reported_error = None

    def write() -> None:
        # What the hook set after the built-in work fails the success as what it set before does (above), before
        # Ready=True is written; the view is the one written.
        write_status(ctx, status_fields_view(ctx.status_fields, ctx.settings.status_model))
        if ready.status and was_failing and not ctx.results.has_error:
            # A recovery is worth an Event; a first success is not (it is in the conditions, and costs a write). One
            # whose write the API server refused is no recovery: Ready stays False, the ErrorManager reports the
            # refusal, and each retry would say "reconciled" again beside its Warning.
            ctx.event(events.NORMAL, "Reconciled", recovered)

    ctx.status_due.append(write)


#: The conditions a success sets (:func:`success_conditions`): those a give-up after it puts back (:func:`withdraw`).
SUCCESS_TYPES = (*cond.STANDARD_TYPES, *cond.KSTATUS_TYPES)


@dataclasses.dataclass(frozen=True)
class BeforeSuccess:
    """What the SuccessManager's work changes of the report, as it was before it: what :func:`withdraw` puts back."""

    conditions: cond.Mark
    error_count: int
    reported_error: str | None

    @classmethod
    def of(cls, ctx: context_mod.Context) -> BeforeSuccess:
        # Taken at every success, read only when one is given up: the mark parses nothing.
        return cls(ctx.conditions.mark(), ctx.bookkeeping.error_count, ctx.bookkeeping.reported_error)


def withdraw(ctx: context_mod.Context, before: BeforeSuccess) -> None:
    """Take the SuccessManager's report back: its hook, or a timer, gave the reconcile up (quietly) after the built-in
    work had set Ready. A give-up writes nothing, wherever it comes from (``raise okt.GiveUp`` from the hook did not
    write, ``return okt.give_up(...)`` and a timer's give-up wrote Ready=True): its status write is dropped, and the
    conditions and the bookkeeping the success set are put back, so that the write a quiet give-up still makes (a
    lifecycle move made before it, the daemons' findings: :mod:`okt.reconciler.core`) says nothing of a success
    either — the object keeps saying what it said, Ready=False of an earlier error included, until it changes."""
    ctx.status_due.clear()
    conditions = ctx.conditions
    for type_ in SUCCESS_TYPES:
        was = before.conditions.get(type_)
        if conditions.get(type_) == was:
            continue
        if was is None:
            conditions.remove(type_)
        else:
            conditions.set(type_, was.status, was.reason, was.message, was.observed_generation)
    ctx.bookkeeping.error_count = before.error_count
    ctx.bookkeeping.reported_error = before.reported_error


def related_objects(ctx: context_mod.Context) -> list[dict[str, str]]:
    """``status.relatedObjects`` (OpenShift's shape: group, resource, namespace, name) from the registered children,
    in registration order: what ``oc adm inspect``/must-gather style tools and people look at next."""
    related = []
    for res in ctx.registry:
        kind = ctx.client.kind_of(res.desired)
        entry = {"group": kind.group, "resource": kind.plural, "name": res.name}
        if res.namespace:
            entry["namespace"] = res.namespace
        related.append(entry)
    return related


def _versions(ctx: context_mod.Context, versions: Mapping[str, str], progressing: Signal) -> Signal:
    """``status.versions`` reports what is running: the target versions once nothing is rolling out. While a
    rollout toward versions not reported yet is under way, Progressing says so, and the old versions stay; a rollout
    stuck past its deadline (not progressing, but not there either) keeps them too."""
    declared = [{"name": name, "version": version} for name, version in sorted(versions.items())]
    reported = ctx.cr.status.get("versions")
    if not progressing.status and progressing.reason == helpers.PROGRESS_DEADLINE_EXCEEDED:
        return progressing
    if not progressing.status:
        ctx.status_fields["versions"] = declared
        return progressing
    if reported == declared:
        return progressing
    target = ", ".join(f"{v['name']} {v['version']}" for v in declared)
    return Signal(True, "Upgrading", f"rolling out {target}")


def on_error(ctx: context_mod.Context) -> None:
    """ErrorManager: Ready=False with the error's reason and message; then, left due in ``ctx.status_due`` until the
    state's hook has returned (or raised: the report lands all the same), one status write and a Warning Event."""
    if not ctx.exists:
        return
    error = ctx.results.first_error
    if error is None and ctx.results.gave_up is not None:
        reason, message = "GiveUp", ctx.results.gave_up or "gave up"
    else:
        # An exception without text (a bare ``raise RuntimeError``) is named instead: an empty message says nothing
        # of what failed; a pydantic ValidationError of a hook's own model is said by its fields, never its inputs.
        reason = errors.reason_for(error) if error else "ReconcileError"
        message = errors.message_of(error) if error is not None else "the reconcile failed"
    # An operator's own error class may spell its reason as free text: the conditions would refuse it, and Ready
    # would keep saying True while every reconcile fails.
    reason = cond.as_reason(reason)
    message = finalize.blocked(ctx, message)
    permanent = isinstance(error, errors.PermanentError) or ctx.results.give_up_alarming
    # A move lost to a conflict (another writer between the read and the move) is a race the quick retry wins, not a
    # failure to report: Ready would flap to False and back, two writes for nothing. Nothing is written, as for any
    # write of a reconcile after a refused move, and no Warning Event is recorded (the log line says it).
    refused = ctx.bookkeeping.phase_refused
    lost_race = isinstance(refused, errors.Conflict) and error is refused
    refused_move = refused is not None and not isinstance(refused, errors.Conflict)
    if refused_move:
        # Nothing of the refused phase is reported: the conditions start again from what the object stores (the
        # lifecycle condition of the phase the annotation still holds), the error's alone set on them.
        ctx.conditions = cond.Conditions.from_status(ctx.cr.status)
    # Counted from what the object carried: a success whose report the API server refused has reset the working
    # count already, and every such reconcile would count as the first failure (Degraded never turning True).
    failures = ctx.bookkeeping.stored_error_count + 1
    # A wait for something that ends by itself (a namespace being deleted) is no failure of the operator: not
    # counted, never Degraded, and reported once while it says the same.
    waiting = isinstance(error, errors.TemporaryError) and error.waiting and ctx.results.gave_up is None
    degraded = permanent or (failures >= ctx.settings.degraded_after and not waiting)
    stalled = permanent or ctx.results.gave_up is not None
    news = error_conditions(ctx.conditions, ctx.cr.generation, reason, message, degraded=degraded, stalled=stalled)
    if news and writer.RESIDUES.sent_as_stored(ctx.cr.uid, ctx.cr.status, ctx.conditions[cond.READY].to_dict()):
        # Ready stored as the object's schema keeps the one okt wrote (a hand-written CRD that prunes its
        # observedGeneration or cuts its message): the same report, no news.
        news = False
    if _reported_by_digest(ctx):
        # No stored condition says what was reported — none is stored ("off"), or Ready's observedGeneration is 0
        # whatever the object holds (a kind without a generation, its conditions in annotations: a change refused
        # with the same message would say the same Ready, and go unreported). The digest of the last report kept
        # beside the error count does (written in the same patch), or every reconcile of the unchanged object — a
        # restart, a resync, a child's event — would report it again, one Warning Event and one more failure counted
        # each time.
        ctx.bookkeeping.reported_error = reported_error(ctx.cr, reason, message)
        news = ctx.bookkeeping.reported_error != ctx.bookkeeping.stored_reported_error
    # A permanent error or a give-up already reported for this generation (a restart, a resync, a child's event) is
    # reported once: no error count, no Event, so nothing is written while the object does not change. A permanent
    # error whose fix wakes no reconcile (an unknown persisted phase) is retried only to notice that fix: each of its
    # reports would be one more write and one more Event saying the same thing too.
    said_once = ctx.results.gave_up is not None or isinstance(error, errors.PermanentError) or waiting
    reported = said_once and not news
    ctx.bookkeeping.error_count = ctx.bookkeeping.stored_error_count if reported or waiting else failures
    report = refused_reports.digest(reason, message) if said_once else None

    def write() -> None:
        try:
            if refused_move:
                write_status(ctx, {}, refused_move=True)
                return
            if _refused_before(ctx, report):
                return
            # Status fields the API server refused (a CRD stricter than the status model, or none) are left out of
            # the report, as those the status model refuses are: written with them, the conditions would be refused
            # too, and Ready would go on saying what an earlier reconcile wrote while every reconcile fails.
            if _status_refused(ctx.results):
                ctx.status_fields.clear()
            write_status(ctx)
            if ctx.status_fields and _status_refused(ctx.results):
                ctx.status_fields.clear()
                write_status(ctx)
            _remember_refusal(ctx, report)
        finally:
            if not reported and not lost_race:
                # Said once too when its report is refused (an object stored before its CRD got stricter: every
                # write of it is), which has the reconcile retried: each retry says the same of the unchanged object,
                # and would count one more repeat on the Event, a write each time.
                ctx.event(events.WARNING, reason, message, once=said_once)

    ctx.status_due.append(write)


def _refused_before(ctx: context_mod.Context, report: str | None) -> bool:
    """Whether the report of digest ``report`` (None: not one okt makes once) was refused already for what the object
    holds, the object unchanged since (a spec stored before its CRD got stricter): sent again, it would be refused the
    same way, one write per retry. Then nothing is sent (recorded as the status unchanged), and the reconcile waits
    for a change of the object, as a report that landed does: no retry could send anything else."""
    if report is None or refused_reports.REFUSED.recall(ctx.cr.uid, ctx.cr.resource_version, report) is None:
        return False
    ctx.log.debug("status report not sent: refused already for the object as it is")
    ctx.results.add(Operation.STATUS_UNCHANGED, ctx.cr.name)
    return True


def _remember_refusal(ctx: context_mod.Context, report: str | None) -> None:
    """Remember a report (of digest ``report``, None when it is not one okt makes once) whose status write the API
    server refused for what the object holds (422, or too large), so that it is not sent again while the object does
    not change (:mod:`okt.reconciler.refused_reports`); forget the object's once a report of it landed."""
    refusal = ctx.results.status_refusal
    if refusal is None:
        refused_reports.REFUSED.forget(ctx.cr.uid)
    elif report is not None and isinstance(refusal, errors.Invalid | errors.ObjectTooLarge):
        refused_reports.REFUSED.remember(ctx.cr.uid, ctx.cr.resource_version, report, refusal)


def _reported_by_digest(ctx: context_mod.Context) -> bool:
    """Whether what was reported on the object is told by the digest of :func:`reported_error` rather than by its
    stored Ready: with ``status = "off"`` (nothing stored), and with ``status = "annotations"`` on a kind the API
    server keeps no generation for (a ConfigMap, a Secret: Ready's observedGeneration is always 0). A kind with a
    generation under "annotations", or one whose status okt writes, has Ready say it."""
    target = ctx.settings.status_target
    return target is writer.Target.OFF or (target is writer.Target.ANNOTATIONS and "generation" not in ctx.cr.metadata)


def reported_error(cr: objects.CustomResource, reason: str, message: str) -> str:
    """The digest of an error reported on ``cr`` and of ``cr`` as it was: its generation, or for a kind the API server
    keeps none for (a ConfigMap, a Secret), what it holds outside its metadata and status — what a generation counts.
    The same error on the unchanged object is the report already made; a change of the object is reported anew.

    A digest, not the values: a Secret's data never lands in an annotation, and the record stays 64 characters."""
    seen: dict[str, Any] = {"reason": reason, "message": message}
    if "generation" in cr.metadata:
        seen["generation"] = cr.generation
    else:
        seen["content"] = {key: value for key, value in cr.raw.items() if key not in ("metadata", "status")}
    return checksum.checksum(seen)


def _move_phase(ctx: context_mod.Context, annotations: dict[str, str | None]) -> dict[str, Any] | None:
    """Write the bookkeeping's annotations, a phase move among them, alone and before anything that reports the move:
    the metadata patch guarded by the resourceVersion read, whose answer guards the status write that follows. Returns
    the object the patch wrote; None when it was refused (the error recorded).

    A refusal (RBAC that lets the status be written but not the object patched, an admission policy, a conflict with
    another writer) is recorded as an error that says which move was refused; a later write of the same reconcile
    sends nothing, and is refused alike — but for the ErrorManager's report of a refusal other than a conflict, which
    writes the error's conditions and count alone (:func:`write_status` with ``refused_move``). The retry reads the
    object again and makes the move again, from the phase the annotation holds. A 404 is raised: the caller tells a
    deleted object apart."""
    keeping = ctx.bookkeeping
    if keeping.phase_refused is not None:
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, keeping.phase_refused)
        return None
    patch = {"metadata": {"annotations": annotations, "resourceVersion": ctx.cr.resource_version}}
    try:
        written = ctx.client.patch(ctx.kind, ctx.cr.name, patch, ctx.cr.namespace)
    except errors.NotFound:
        raise
    except errors.ApiError as exc:
        stored = keeping.stored_phase
        move = f"move from {stored} to {keeping.phase}" if stored else f"be set to {keeping.phase}"
        said = exc.api_message or exc.api_reason or "no answer"
        refused = errors.ApiError.from_status(
            exc.status,
            exc.api_reason,
            f"the phase annotation {keeping.phase_annotation} cannot {move}: its patch was refused ({said}); "
            "nothing of the move is written, and the retry makes it again",
            causes=exc.causes,
        )
        refused.__cause__ = exc
        keeping.phase_refused = refused
        ctx.log.error("lifecycle phase not written", error=str(refused))
        delay = CONFLICT_DELAY if isinstance(exc, errors.Conflict) else None
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, refused, delay=delay)
        return None
    ctx.observe(written)
    keeping.annotations_written()
    return written


def _status_too_large(
    ctx: context_mod.Context,
    fields: Mapping[str, Any],
    exc: errors.RequestTooLarge | errors.Invalid,
    in_status: bool,
) -> errors.ObjectTooLarge | None:
    """The error of a status refused for its size (None when ``exc`` refused it for something else), measured by its
    fields (the largest named), not by the request: the request carries the conditions too, which change from one
    reconcile to the next, and a report whose message changed would be written again, with one more Event."""
    where = f"{ctx.cr.namespace}/{ctx.cr.name}" if ctx.cr.namespace else ctx.cr.name
    what = f"the status of {ctx.kind.kind} {where}" + ("" if in_status else " (kept in its annotations)")
    then = "the status is written without them until the custom resource changes"
    sizes = {key: len(json.dumps(value, separators=(",", ":")).encode()) for key, value in fields.items()}
    size = sum(sizes.values()) if sizes else None
    measured = f"its fields ({max(sizes, key=sizes.__getitem__)} the largest) are" if sizes else ""
    if isinstance(exc, errors.Invalid):
        return errors.ObjectTooLarge.from_invalid(what, exc, then, size=size, measured=measured or "it is")
    return errors.ObjectTooLarge.from_refusal(what, exc, then, size=size, measured=measured)


def _status_refused(results: results_mod.Results) -> bool:
    """Whether the API server refused a status this reconcile wrote as invalid (422) or too large."""
    return any(
        entry.operation is Operation.STATUS_UPDATE_ERROR
        and isinstance(entry.error, errors.Invalid | errors.ObjectTooLarge)
        for entry in results.entries
    )


def fields_nowhere(ctx: context_mod.Context) -> errors.PermanentError | None:
    """The refusal of the ``ctx.status_fields`` a hook or timer set on an object whose reconciler writes no status
    (``status`` is "off", a built-in kind's default), or None: nothing would carry them, and a daemon's are refused
    alike (:class:`okt.reconciler.findings.Findings`).

    Permanent: a mistake of the operator's code, which the same code makes on every retry. Reported once, it waits
    for a change of the object (or a restart, the code fixed) instead of being retried with backoff for ever."""
    if ctx.settings.status_target is not writer.Target.OFF or not ctx.status_fields:
        return None
    names = ", ".join(sorted(map(str, ctx.status_fields)))
    return errors.PermanentError(
        f'the status of controller {ctx.settings.controller}\'s reconciler is "off" (the default of a built-in kind): '
        f"no reconcile writes ctx.status_fields ({names}); write them through ctx.client, or set status = "
        '"annotations" (a mistake of the code that no retry fixes: none is made until the object changes)'
    )


def status_fields_view(fields: Mapping[str, Any], model: type[pydantic.BaseModel] | None) -> dict[str, Any]:
    """The status fields as written: through ``model`` (validated, API names) when there is one.

    A key the model knows — by its Python name or its API alias — is written once, under the API name (the keys not
    given are not written: their defaults would overwrite another writer's values); keys the model
    does not declare pass through unchanged (a status field another part of the operator sets, okt's own
    ``relatedObjects`` and ``versions``), so only the declared keys are validated: a model that forbids extra fields
    refuses none of them.

    Raises:
        ValueError: ``model`` refuses the fields; one line naming each bad field (``status.replicas: ...``). Or a
            field is not a JSON value (a ``datetime``, a set, a NaN): the API server could not store it as it is.
    """
    if model is None or not fields:
        return _json_fields(dict(fields))
    api_name, aliases = _api_names(model)
    # Given to the model under their API names: a model without populate_by_name ignores a Python name, and the field
    # set by it was dropped unvalidated (its default, None, then left out of the write). An API name given too wins.
    declared = sorted((k for k in fields if k in api_name), key=lambda k: api_name[k] == k)
    try:
        validated = _piecewise(model).model_validate({api_name[k]: fields[k] for k in declared})
    except pydantic.ValidationError as exc:
        readable = errors.InvalidSpec.from_validation_error(exc, "status", model=model)  # for its message only
        raise ValueError(str(readable)) from exc
    # The fields given only: the model's defaults of the others would put back what another writer set (a timer's
    # field, at every reconcile that does not run it; a daemon's), and it would set it again: writes for ever.
    given = {name for name, alias in aliases if name in fields or alias in fields}
    dumped = validated.model_dump(mode="json", by_alias=True, exclude_none=True, include=given)
    removed = {api_name[k]: None for k, v in fields.items() if v is None and k in api_name}  # None removes a field
    return _json_fields({**{k: v for k, v in fields.items() if k not in api_name}, **dumped, **removed})


@functools.cache
def _api_names(model: type[pydantic.BaseModel]) -> tuple[Mapping[str, str], tuple[tuple[str, str | None], ...]]:
    """The API name of each name a status field of ``model`` is given by (its Python name, its alias), and each
    field's (Python name, alias): read from the model's fields once per model, not at every status write (as
    :func:`_piecewise`, a model's fields are taken as they were when it was first written)."""
    api_name = {name: field.alias or name for name, field in model.model_fields.items()}
    api_name.update({alias: alias for alias in api_name.values()})
    aliases = tuple((name, field.alias) for name, field in model.model_fields.items())
    return types.MappingProxyType(api_name), aliases


@functools.cache
def _piecewise(model: type[pydantic.BaseModel]) -> type[pydantic.BaseModel]:
    """``model`` with its required fields given a default that is never written (only the fields given are dumped):
    the status is written piecewise, and a field set alone — by a daemon, a timer, one hook — is validated alone, not
    refused for a required field another writer sets (the CRD does not require it either). The model itself when it
    requires nothing; its validators and aliases are kept (a subclass)."""
    required = {name: field for name, field in model.model_fields.items() if field.is_required()}
    if not required:
        return model
    overridden: dict[str, Any] = {}
    for name, field in required.items():
        optional = copy.copy(field)
        optional.default = None  # never validated nor dumped: only what was given is
        overridden[name] = (field.annotation, optional)
    partial: type[pydantic.BaseModel] = pydantic.create_model(
        model.__name__, __base__=model, __module__=model.__module__, **overridden
    )
    return partial


_SCALARS = (str, int, bool, type(None))


def _json_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields``, each a JSON value (refused otherwise: the client cannot send it, or — a NaN through server-side
    apply — it would be stored as the string ``"NaN"``), a key holding None inside a mapping left out at every depth.

    None is no value wherever it is: a field holding None is removed, and a key holding None inside a field's value
    is not written either — whether the status subresource (a merge patch drops it, an apply would store ``null``) or
    okt's annotation (``status = "annotations"``, written whole) keeps the status, each stores the same.

    Raises:
        ValueError: naming the first field that is not.
    """
    for key, value in fields.items():
        if type(value) in _SCALARS:  # nearly every field: no encoding to pay for
            continue
        try:
            # Plain JSON (relatedObjects, versions: the usual case) is told so by the walk that drops its None keys,
            # without encoding it; anything else is judged by the encoder, as the client will send it.
            fields[key] = _plain_json(value)
            continue
        except _NotPlain:
            pass
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"status.{key}: {exc} (a status field is JSON: a string, a number, true or false, null, a list or a "
                "mapping of them)"
            ) from None
        fields[key] = _without_none(value)
    return fields


_LEAVES = frozenset({str, int, float, bool, type(None)})


class _NotPlain(Exception):
    """A value :func:`_plain_json` leaves to the JSON encoder to judge."""


def _plain_json(value: Any, depth: int = 0) -> Any:
    """:func:`_without_none` of ``value`` when it is plain JSON — dicts with string keys, lists, tuples, strings,
    integers, booleans, None and finite floats, of exactly those types, nested less than 64 deep — which the encoder
    takes as it is; raises :class:`_NotPlain` for anything else (a subclass, another type, a NaN, a key of another
    type, a deeper or circular value), whose verdict is the encoder's."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise _NotPlain
    if depth >= 64:
        raise _NotPlain
    if kind is dict:
        plain = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            if item is not None:
                plain[key] = _plain_json(item, depth + 1)
        return plain
    if kind is list or kind is tuple:
        return [_plain_json(item, depth + 1) for item in value]
    raise _NotPlain


def _without_none(value: Any) -> Any:
    """``value`` with the keys holding None of its mappings left out, at every depth (lists keep their items)."""
    kind = type(value)
    if kind in _LEAVES:  # most of a status field's values: told apart before the ABC checks, several times slower
        return value
    if kind is dict or isinstance(value, Mapping):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if kind is list or isinstance(value, list | tuple):
        return [_without_none(item) for item in value]
    return value


def _fields_to_write(ctx: context_mod.Context, fields: dict[str, Any] | None) -> dict[str, Any]:
    """The status fields a status write sends: ``fields`` when the caller worked them out, else ``ctx.status_fields``
    as the status model says them; none (the refusal recorded) when nothing would carry them or the model refuses
    them."""
    refused = fields_nowhere(ctx)
    if refused is not None:
        # Said, not dropped: the hook's author finds out here, not by looking for a field that never appears.
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, refused)
        return {}
    if fields is not None:
        return fields
    try:
        return status_fields_view(ctx.status_fields, ctx.settings.status_model)
    except ValueError as exc:
        # Fields the status model refuses (a bug of the operator) are left out, the rest is written: the conditions
        # above all, or Ready would go on saying what an earlier reconcile wrote while every reconcile fails.
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, exc)
        return {}


def _fields_and_bookkeeping(
    ctx: context_mod.Context, fields: dict[str, Any] | None, *, in_status: bool, refused_move: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The status fields a write sends (:func:`_fields_to_write`), and those with the bookkeeping's part: the report of
    a refused phase move sends the error count alone (see :func:`write_status`)."""
    if refused_move:
        return {}, ctx.bookkeeping.status_fields_while_refused()
    fields = _fields_to_write(ctx, fields)
    if not in_status:
        return fields, fields
    # The fields an operator version with ``status = "annotations"`` kept in ``<prefix>/status`` (a timer's, set at its
    # interval) that the status does not hold are carried into it, as the conditions are (see okt.reconciler.context):
    # the same write removes that annotation, and they were lost with it until the next call that set them.
    left = {key: value for key, value in _kept_in_annotations(ctx).items() if key not in ctx.cr.status}
    # The bookkeeping's part goes to a status okt writes only: elsewhere the bookkeeping is kept in annotations, and all
    # it could say of the status is to remove the copy an operator version that wrote the status left in it.
    return fields, {**left, **fields, **ctx.bookkeeping.status_fields()}


def _kept_in_annotations(ctx: context_mod.Context) -> dict[str, Any]:
    """The status fields okt's annotation ``<prefix>/status`` keeps (under a legacy prefix, where the current one keeps
    none)."""
    settings = ctx.settings
    return writer.status_fields_from_annotations(ctx.cr.annotations, settings.prefix, settings.legacy_prefixes)


def write_status(ctx: context_mod.Context, fields: dict[str, Any] | None = None, *, refused_move: bool = False) -> bool:
    """Write conditions, observedGeneration, ``ctx.status_fields`` (as ``fields`` says them, when the caller worked
    out their :func:`status_fields_view` already) and bookkeeping where the reconciler's ``status`` says — only if
    something changed (one status write and/or one guarded metadata patch). Returns whether it wrote.

    A move of the phase kept in annotations is patched first, alone, and the status written only once it landed: a
    refused move writes nothing else, in this call or a later one of the reconcile (:func:`_move_phase`) — but for
    the ErrorManager's report of it (``refused_move``): the status alone, with the conditions (the error's, set on
    those the object stores) and the error count (``Bookkeeping.status_fields_while_refused``), neither ``fields``
    nor any annotation, so Ready and Degraded say the refusal while nothing of the refused phase is written."""
    settings = ctx.settings
    keeping = ctx.bookkeeping
    in_status = settings.status_target is writer.Target.STATUS
    refused_move = refused_move and in_status and keeping.phase_refused is not None and keeping.moves_phase_annotation
    fields, extra = _fields_and_bookkeeping(ctx, fields, in_status=in_status, refused_move=refused_move)
    try:
        written = None
        annotations: dict[str, str | None] = {}
        bookkeeping = {} if refused_move else keeping.changed_annotations()
        if in_status and keeping.moves_phase_annotation and not refused_move:
            # The phase's move first, on its own: the status reports it (the lifecycle condition, what the hooks
            # recorded of the move) and must never claim a phase the annotation does not hold. A move refused here
            # ends the write with nothing else written (see _move_phase).
            written = _move_phase(ctx, bookkeeping)
            if written is None:
                return False
            bookkeeping = {}
        if in_status:
            wanted = writer.desired_status(ctx.cr.status, ctx.conditions, ctx.cr.generation, extra)
            status_written = writer.write(
                ctx.client,
                ctx.kind,
                ctx.cr,
                wanted,
                ctx.observe,
                conditions=ctx.conditions,
                given=extra,
                apply_as=settings.field_manager if settings.applies_status else None,
                legacy_managers=settings.legacy_field_managers,
                current=lambda: ctx.reader.get(ctx.kind, ctx.cr.name, ctx.cr.namespace),
                replaced_by=ctx.replaced_by,
            )
            if status_written is None and ctx.gave_up_replaced:
                ctx.results.add(Operation.STATUS_UNCHANGED, ctx.cr.name)
                return False
            written = status_written or written
        elif settings.status_target is writer.Target.ANNOTATIONS:
            # The annotation is written whole: the fields it keeps that this write does not state (a timer's, set at
            # its interval; a hook's, set at some reconciles) are carried, as the status subresource keeps them, and
            # only a field stated as None is removed. Left out, each went at the next reconcile, and came back at the
            # next call that set it: a field missing in between, and two writes for nothing.
            annotations = writer.annotations_patch(
                ctx.cr.annotations,
                ctx.conditions,
                ctx.cr.generation,
                {**_kept_in_annotations(ctx), **extra},
                settings.prefix,
                alongside=bookkeeping,
            )
        annotations.update(bookkeeping)
        if annotations:
            # Guarded by the version the status write made, when there was one (the view of the object keeps the
            # version read when that write landed on a spec changed since).
            since = ((written or {}).get("metadata") or {}).get("resourceVersion") or ctx.cr.resource_version
            patch = {"metadata": {"annotations": annotations, "resourceVersion": since}}
            written = ctx.client.patch(ctx.kind, ctx.cr.name, patch, ctx.cr.namespace)
            ctx.observe(written)
    except errors.NotFound as exc:
        if ctx.client.get_or_none(ctx.kind, ctx.cr.name, ctx.cr.namespace) is None:
            ctx.results.add(Operation.STATUS_UNCHANGED, ctx.cr.name)  # deleted meanwhile: nothing to report on
            return False
        # The object is there but its status is not: a CRD without the status subresource, or a wrong plural.
        failed = errors.ApiError.from_status(
            404,
            "NotFound",
            f"cannot write the status of {ctx.kind.kind} {ctx.cr.name}: the API answered 404 for "
            f"{ctx.kind.plural}/status although the object exists — does the CRD declare the status "
            "subresource (subresources: {status: {}}), and is the plural right?",
        )
        failed.__cause__ = exc
        ctx.log.error("status write failed", error=str(failed))
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, failed)
        return False
    except errors.Conflict as exc:
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, exc, delay=CONFLICT_DELAY)
        return False
    except (errors.RequestTooLarge, errors.Invalid) as exc:
        # Status fields the custom resource sizes: the same ones are refused on every retry. A permanent error, so
        # the report leaves them out and writes the conditions alone, once (see on_error).
        too_large = _status_too_large(ctx, fields, exc, in_status)
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, exc if too_large is None else too_large)
        return False
    except errors.OktError as exc:
        ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, exc)
        return False
    if not refused_move:  # the annotations are still to be written: the move, the count
        keeping.written()  # a later write of this reconcile (the report after a flush) sends none of it again
        # A phase move is announced once it is stored: one refused or lost to a conflict never happened.
        for move in keeping.moves_to_announce:
            ctx.event(events.NORMAL, move.reason, move.message)
            ctx.log.info(
                "lifecycle moved", phase=move.phase, previous=move.previous, reason=move.reason, forced=move.forced
            )
        keeping.moves_to_announce.clear()
    ctx.conditions.written()  # and counts its conditions' transitions from what this one stored
    ctx.results.add(Operation.STATUS_UPDATED if written is not None else Operation.STATUS_UNCHANGED, ctx.cr.name)
    return written is not None
