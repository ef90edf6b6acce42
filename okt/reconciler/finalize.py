"""The built-in work at both ends of an object's life: the check-in of every reconcile, and the finalizer on deletion.

Why this exists: it is OKT's CRChecker and CRFinalizer. On every reconcile of a live object okt adds its finalizer
(when the reconciler declares one), sets the first-visit conditions and runs ``check(ctx)``; on deletion it runs
``cleanup(ctx)`` and removes its finalizer only when cleanup returned ``None`` (or ``Outcome.done()``) and recorded no
error; until then, what the ErrorManager says of an error starts with the deletion it blocks (:func:`blocked`). A
cleanup that gives up holds the object in deletion until a human acts: its give-up is always alarming, so the
ErrorManager says why on the object (Ready=False, reason ``GiveUp``, a Warning Event), once — and so does a give-up of
the CRFinalizer state's hook that leaves the finalizer on (:func:`alarm_if_held`).

Guarantees: a finalizer patch is guarded (a concurrent change of the object ends in a quick retry, never in a lost
finalizer of someone else); a finalizer the operator used to add (``legacy_finalizers``) is cleaned up and released
like its current one, so renaming or dropping a finalizer never leaves an object stuck in deletion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from okt import coroutines, errors
from okt.engines import results as results_mod
from okt.reconciler import children
from okt.status import conditions as cond
from okt.status import finalizers

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod
    from okt.reconciler import reconciler as reconciler_mod

Operation = results_mod.Operation
CONFLICT_DELAY = children.CONFLICT_DELAY


def check_in(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context) -> None:
    """CRChecker: add the finalizer, set the first-visit conditions, run ``check(ctx)``."""
    if ctx.finalizing:
        return
    finalizer = ctx.settings.finalizer
    if finalizer:
        try:
            added = finalizers.add(ctx.client, ctx.kind, ctx.cr, finalizer, ctx.observe)
        except (errors.Conflict, errors.Invalid) as exc:
            refused(ctx, exc)
            return
        if added is not None:
            ctx.results.add(Operation.FINALIZER_ADDED, finalizer)
    ctx.conditions.set_unknown_if_missing(
        (cond.READY, cond.AVAILABLE, cond.PROGRESSING, cond.DEGRADED),
        "Reconciling",
        "okt has started reconciling this object",
        ctx.cr.generation,
    )
    ctx.results.follow(coroutines.call(reconciler.check, ctx), "check")


def finalize(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context) -> None:
    """CRFinalizer: ``cleanup(ctx)``, then remove okt's finalizers (current and legacy) if cleanup returned ``None``
    (or ``Outcome.done()``) and recorded no error (an outcome it asks for — ``requeue_after``, ``give_up``, returned,
    through ``ctx`` or as a raised ``okt.GiveUp`` — keeps them)."""
    ctx.results.add(Operation.FINALIZING, ctx.cr.name)
    mine = holding(ctx)
    if not mine:
        return
    answer = None
    requeues = ctx.results.count(Operation.REQUEUE)
    try:
        answer = coroutines.call(reconciler.cleanup, ctx)
        ctx.results.follow(answer, "cleanup")
    except errors.GiveUp as exc:
        ctx.results.record_exception(exc)  # a give-up, as raised from any other hook
    except Exception as exc:
        # A TemporaryError's delay is honoured here as it is for every other hook.
        delay = exc.delay if isinstance(exc, errors.TemporaryError) else None
        ctx.results.add(Operation.CLEANUP_ERROR, ctx.cr.name, exc, delay=delay)
    if (
        ctx.results.has_error
        or ctx.results.gave_up is not None
        or ctx.results.count(Operation.REQUEUE) > requeues
        or (isinstance(answer, results_mod.Outcome) and answer.kind is not results_mod.OutcomeKind.DONE)
    ):
        # The cleanup saying it is not finished — by returning an outcome, through ``ctx.requeue_after()`` /
        # ``ctx.give_up()``, or raising ``okt.GiveUp``: ``requeue_after`` (an external deletion under way, look again
        # later) or ``give_up`` (it needs a human). ``Outcome.done()`` says it is finished, as ``None`` does: kept, the
        # finalizer would hold the object for ever, with nothing requeued and nothing reported.
        alarm_if_held(ctx)
        return
    for finalizer in mine:
        try:
            finalizers.remove(ctx.client, ctx.kind, ctx.cr, finalizer, ctx.observe)
            ctx.results.add(Operation.FINALIZER_REMOVED, finalizer)
        except errors.NotServed:
            raise  # the object may still hold the finalizer: retried
        except errors.NotFound:
            ctx.results.add(Operation.FINALIZER_REMOVED, finalizer)
            return
        except (errors.Conflict, errors.Invalid) as exc:
            refused(ctx, exc)
            return


def alarm_if_held(ctx: context_mod.Context) -> None:
    """Make a quiet give-up alarming when okt's finalizer still holds the object in deletion: whether the cleanup gave
    up or the hook of the CRFinalizer state did (before or instead of the built-in work), the object and its namespace
    stay held until a human acts, so the ErrorManager says why on the object (Ready=False, a Warning Event), once. A
    give-up once the finalizer went holds nothing, and stays quiet."""
    if ctx.results.gave_up is not None and not ctx.results.give_up_alarming and holding(ctx):
        ctx.results.give_up(ctx.results.gave_up, alarming=True)


def holding(ctx: context_mod.Context) -> list[str]:
    """okt's finalizers (current and legacy) that hold the object in deletion: none while it lives."""
    if not ctx.finalizing:
        return []
    return [f for f in (ctx.settings.finalizer, *ctx.settings.legacy_finalizers) if f and f in ctx.cr.finalizers]


def blocked(ctx: context_mod.Context, message: str) -> str:
    """What an error says on an object okt's finalizer holds in deletion: that the deletion is blocked, by which
    finalizer, and why (``message``) — a Terminating object's Ready=False and Warning Event otherwise read as any failed
    reconcile, and the one waiting for the deletion cannot tell what holds it. ``message`` as it is otherwise."""
    mine = holding(ctx)
    if not mine:
        return message
    return f"deletion blocked by finalizer {', '.join(dict.fromkeys(mine))}: {message}"


def refused(ctx: context_mod.Context, exc: errors.Conflict | errors.Invalid) -> None:
    """Record a refused finalizer patch: a lost race retries soon; an object the API server finds invalid (its stored
    spec fails a schema made stricter since, a webhook refuses it, the finalizer's name is refused) is that error,
    retried with backoff, so the report names the field to fix instead of a race that never happened — no finalizer
    patch can pass until the object is fixed.

    The two 422s are told apart by the Status's causes: a validation failure names its invalid fields
    (``spec.size``, ``metadata.finalizers``), a JSON patch whose ``test`` failed (someone wrote first) names none. A
    webhook may refuse without causes, in words of its own: then the object is read again, and one still at the
    resourceVersion the patch tested was refused, not raced (its ``test`` could not fail)."""
    if isinstance(exc, errors.Invalid) and (exc.causes or not _changed_since(ctx)):
        ctx.results.add(Operation.CRUD_ERROR, ctx.cr.name, exc)
    else:
        ctx.results.add(Operation.CRUD_ERROR, ctx.cr.name, lost_race(exc), delay=CONFLICT_DELAY)


def _changed_since(ctx: context_mod.Context) -> bool:
    """Whether the object is gone or at another resourceVersion than the one okt's finalizer patch tested (a read
    that fails counts as changed: the quick retry reads it again)."""
    try:
        live = ctx.client.get(ctx.kind, ctx.cr.name, ctx.cr.namespace)
    except errors.ApiError:
        return True
    return str(live.get("metadata", {}).get("resourceVersion") or "") != ctx.cr.resource_version


def lost_race(exc: errors.ApiError) -> errors.TemporaryError:
    """A finalizer patch whose resourceVersion test failed (422) or that conflicted (409): someone wrote first."""
    error = errors.TemporaryError("the object changed while okt updated its finalizers; retrying", CONFLICT_DELAY)
    error.__cause__ = exc
    return error
