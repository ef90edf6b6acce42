"""The built-in work on children: register them, read them, mutate and decide, write what differs, prune the rest.

Why this exists: it is OKT's ObjectsGetter, Mutator and Updater, as functions of one reconcile's context. The
reconciler says which children exist (``resources(ctx)``, by default one of each class in ``owns``); everything else
— hashing, the create-or-apply decision, the write, pruning what okt created and no longer wants — happens here.

Guarantees: a child whose kind is not in ``owns`` is refused at registration (okt neither watches nor has RBAC for
it); a child that exists and is controlled by another owner is an error (``OwnedByAnother``), never adopted; nothing
is written for a child whose hash and fields match; a child being deleted is not ready (a retried error) until
it is gone and created again; a change the API server refuses for an immutable field (a Deployment's selector) is
reported once (``ImmutableField``) and the child left as it is — deleted, it is created again; so is any other
refusal of a child as invalid that the same custom resource meets again (``InvalidChild``), and such a child is not
sent again while its desired object is the one refused (:mod:`okt.resources.refusals`); only what okt created is
pruned (:func:`okt.resources.apply.prunable`), and nothing is pruned when this reconcile recorded an error.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from okt import coroutines, errors, secret_values
from okt import names as names_mod
from okt.engines import results as results_mod
from okt.kube import kinds
from okt.resources import apply, refusals, registry, resource, writing

if TYPE_CHECKING:
    from okt.reconciler import context as context_mod
    from okt.reconciler import reconciler as reconciler_mod

Operation = results_mod.Operation
CONFLICT_DELAY = 0.2
"""The delay of a retry after a conflict: someone wrote first, the next read sees it."""


def register(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context) -> None:
    """ObjectsGetter: register the reconciler's children and read each one's live state (from the informer store)."""
    resolved: dict[int, kinds.Kind] = {}  # by the id of a child the registry holds (each one's kind resolved once)
    for res in coroutines.call(reconciler.resources, ctx):
        try:
            check_owned(res, ctx.settings.owns, type(reconciler).__name__)
            kind = ctx.client.kind_of(res.desired)
            check_scope(res, kind)
            ctx.registry.register(res)
        except errors.RegistrationError as exc:
            ctx.results.add(Operation.REGISTRATION_ABORTED, res.describe(), exc)
            return
        resolved[id(res)] = kind
    for res in ctx.registry:
        kind = resolved.get(id(res)) or ctx.client.kind_of(res.desired)
        res.live = ctx.reader.get(kind, res.name, res.namespace)


def check_owned(res: resource.Resource, owns: tuple[type[resource.Resource], ...], reconciler: str) -> None:
    """Refuse a child of a kind the reconciler does not own (okt watches and generates RBAC only for ``owns``).

    Raises:
        okt.RegistrationError: naming the kind and the fix.
    """
    kind = (str(res.desired.get("apiVersion")), str(res.desired.get("kind")))
    if isinstance(res, owns) or kind in {(c.api_version, c.kind) for c in owns}:
        return
    raise errors.RegistrationError(
        f"{res.describe()} is a {kind[1]} ({kind[0]}), which {reconciler} does not own: "
        f"add its resource class {type(res).__name__} to the reconciler's owns"
    )


def check_scope(res: resource.Resource, kind: kinds.Kind) -> None:
    """Refuse a child that carries a namespace while the server serves its kind cluster-scoped.

    A resource class of a kind okt's table does not know counts it namespaced unless it sets ``namespaced = False``,
    and is given its owner's namespace. The server writes such an object without one, so it never matches its
    registration: the prune of the very reconcile that created it would delete it, every time, with Ready=True.

    Raises:
        okt.RegistrationError: naming the kind and the fix.
    """
    if res.namespace is not None and not kind.namespaced:
        raise errors.RegistrationError(
            f"{res.describe()}: {kind.kind} ({kind.api_version}) is cluster-scoped, but {type(res).__name__} gives it "
            f"a namespace: set namespaced = False on {type(res).__name__}"
        )


def check_watched(res: resource.Resource, ctx: context_mod.Context) -> None:
    """Refuse a child in a namespace the operator does not watch (``okt run -n``; a cluster-scoped owner's child).

    Written there, it would never be heard of again: deleted or changed by someone, it is not repaired until the owner
    changes, and once the owner stops asking for it, the prune (which lists the watched namespaces) never finds it.

    Raises:
        okt.errors.PermanentError: naming the child and its namespace; retrying cannot help.
    """
    if ctx.cr.namespace or res.namespace is None:
        # A namespaced owner's children are in its own namespace, which is watched (another one is refused before
        # anything is written); a cluster-scoped child is watched everywhere. Nothing to resolve on that path.
        return
    unwatched = getattr(ctx.reader, "unwatched", None)  # the informer cache only: a plain call reads the API
    if unwatched is None or not unwatched(ctx.client.kind_of(res.desired), res.namespace):
        return
    raise errors.PermanentError(
        f"{res.describe()} is in namespace {res.namespace}, which this operator does not watch (okt run -n): "
        "written there, its changes and deletion would go unseen and it would never be pruned; watch that namespace "
        "too, or place the child in a watched one"
    )


def _keyed(ctx: context_mod.Context) -> bool:
    """Whether the children are written by server-side apply (their keyed lists compared by key, see ``decide``)."""
    return ctx.settings.apply_strategy is writing.Strategy.APPLY


def mutate(ctx: context_mod.Context) -> None:
    """Mutator: ``mutate_with_cr``, normalise, hash and decide create / update / unchanged for every child."""
    names, keyed = ctx.settings.names, _keyed(ctx)
    for res in ctx.registry:
        try:
            res.mutate_with_cr(ctx.cr)
            check_watched(res, ctx)
            apply.prepare(res, ctx.cr, names)
            # A Secret child's values (made by the operator: generated, read from elsewhere) are left out of what is
            # said of the reconcile's errors, as those of a Secret it reads are; its live values as well.
            if res.desired.get("kind") == "Secret":
                read = (res.desired, res.live) if res.live is not None else (res.desired,)
                secret_values.hold(str(res.desired.get("apiVersion")), "Secret", read)
            ctx.decisions[res.key] = apply.decide(res, res.live, ctx.cr, names, keyed=keyed)
        except errors.MutationError as exc:
            # A mutation that renames a child is a bug of the operator, not of the object: retrying cannot help
            # (OKT gives up too). Alarming: Ready=False, a Warning Event, no requeue until the object changes.
            ctx.results.give_up(str(exc), alarming=True, error=exc)
        except errors.GiveUp as exc:
            ctx.results.record_exception(exc)  # a give-up, as raised from any other hook
        except Exception as exc:
            delay = exc.delay if isinstance(exc, errors.TemporaryError) else None
            ctx.results.add(Operation.MUTATE_ERROR, res.describe(), exc, delay=delay)


THROTTLE_DELAY = 0.001
"""The requeue of a reconcile whose creations were throttled: at once (a delay must be > 0)."""


def write(ctx: context_mod.Context) -> None:
    """Updater: send the creates and updates decided — at most ``max_creates`` creates, the rest put off to a
    reconcile requeued at once — then prune (unless an error was recorded); nothing when the object went, began to
    be deleted, or was deleted and created again meanwhile (a quiet give-up: see
    :meth:`okt.reconciler.context.Context.deleted_meanwhile`)."""
    creates, throttled = 0, 0
    limit = ctx.settings.max_creates
    writing = any(d.action in (apply.Action.CREATE, apply.Action.UPDATE) for d in ctx.decisions.values())
    if writing and ctx.deleted_meanwhile():
        # Children written now would name as their owner an object being deleted (written after the garbage collector
        # orphaned or deleted its children) or gone, or the old uid of a replaced one: the new object's reconcile
        # would find them under another controller.
        return
    for res in ctx.registry:
        decision = ctx.decisions.get(res.key)
        if decision is None:
            continue
        if decision.action is apply.Action.CREATE:
            if limit is not None and creates >= limit:
                ctx.results.add(Operation.THROTTLED, res.describe())
                throttled += 1
                continue
            creates += 1
        write_one(ctx, res, decision)
    if throttled:
        ctx.results.add(Operation.REQUEUE, f"{throttled} creations", delay=THROTTLE_DELAY)
    if ctx.settings.prune and not ctx.results.has_error:
        prune(ctx)


def write_one(ctx: context_mod.Context, res: resource.Resource, decision: apply.Decision) -> None:
    """Carry out one decision; every failure is a results entry (a conflict with a quick retry). A create or an update
    of a desired object the API server refused for good over the same object (:mod:`okt.resources.refusals`) is not
    sent again: its refusal is the entry, the one the object already reports."""
    what = res.describe()
    writes = decision.action in (apply.Action.CREATE, apply.Action.UPDATE)
    memory = refusals.of(ctx.client) if writes else None
    digest: str | None = None
    if memory is not None and (res.key in memory or _adds_initial_data(res)):
        # Taken as decided, before the initial data a write adds (a generated password would change it); otherwise
        # only once refused, as the object is then the same: a write that is not refused costs no checksum more.
        digest = refusals.digest(res.desired)
        known = memory.recall(res.key, digest, res.live)
        if known is not None:
            ctx.log.debug("child refused before, not sent again", resource=what, reason=known.reason)
            ctx.results.add(Operation.CRUD_ERROR, what, known)
            return
    try:
        if decision.action is apply.Action.CREATE:
            _create(ctx, res)
        elif decision.action is apply.Action.REFUSE:
            raise errors.OwnedByAnother(f"{what} exists and is {decision.reason}; okt does not adopt it")
        elif decision.action is apply.Action.WAIT:
            raise terminating(what, decision)
        elif decision.action is apply.Action.UPDATE and res.live is not None:
            ctx.log.debug("updating child", resource=what, reason=decision.reason, drift=list(decision.drift))
            apply.update(
                ctx.client, res, res.live, ctx.cr, ctx.observe, ctx.settings.writes, drift_only=decision.drift_only
            )
            ctx.results.add(Operation.UPDATED, what)
        else:
            ctx.results.add(Operation.UNCHANGED, what)
    except errors.Conflict as exc:
        ctx.results.add(Operation.CRUD_ERROR, what, exc, delay=CONFLICT_DELAY)
    except errors.RequestTooLarge as exc:
        _refused_for_good(ctx, res, digest, too_large(what, exc))
    except errors.Invalid as exc:
        size = len(json.dumps(res.desired, separators=(",", ":")).encode())
        too_long = errors.ObjectTooLarge.from_invalid(what, exc, AGAIN, size=size)
        refused = too_long or errors.ImmutableField.from_invalid(what, exc, AGAIN) or _owned_by_another(ctx, res, exc)
        if isinstance(refused, errors.OwnedByAnother):
            ctx.results.add(Operation.CRUD_ERROR, what, refused)  # retried: the other owner may let the child go
            return
        # Anything else is what the custom resource and the template make of the child, refused again at every retry
        # (a label value, a number out of range), but for a value another object holds (a node port): retried.
        for_good = refused or errors.InvalidChild.from_invalid(what, exc, AGAIN)
        if for_good is None:
            ctx.results.add(Operation.CRUD_ERROR, what, exc)
        else:
            _refused_for_good(ctx, res, digest, for_good)
    except errors.OktError as exc:
        ctx.results.add(Operation.CRUD_ERROR, what, exc)
    else:
        if memory is not None:
            memory.forget(res.key)


def _adds_initial_data(res: resource.Resource) -> bool:
    """Whether a write of ``res`` changes its desired object (``mutate_with_initial_data()``)."""
    return type(res).mutate_with_initial_data is not resource.Resource.mutate_with_initial_data


def _refused_for_good(
    ctx: context_mod.Context, res: resource.Resource, digest: str | None, error: errors.PermanentError
) -> None:
    """Record a refusal the same desired object meets again, and remember it by that object (``digest``, taken now
    when the write did not change it) and the one it was written over (the live object okt read, or found on its
    create), so that it is not sent again."""
    digest = digest if digest is not None else refusals.digest(res.desired)
    refusals.of(ctx.client).remember(res.key, digest, res.live, error)
    ctx.results.add(Operation.CRUD_ERROR, res.describe(), error)


def _owned_by_another(
    ctx: context_mod.Context, res: resource.Resource, exc: errors.Invalid
) -> errors.OwnedByAnother | None:
    """The error of a write refused (422) because the object on the server is controlled by another owner, or None
    when it is not: okt's apply states okt's controller reference, and the server refuses a second one — on a create
    that met an object made since okt read, as on an update of one another controller adopted since. Named as that
    controller rather than passed on as the server's validation message; a read that fails leaves the refusal as
    it is."""
    try:
        live = ctx.client.get_or_none(ctx.client.kind_of(res.desired), res.name, res.namespace)
    except errors.ApiError:
        return None
    other = apply.foreign_controller(live, ctx.cr) if live is not None else None
    if other is None:
        return None
    res.live = live
    error = errors.OwnedByAnother(
        f"{res.describe()} exists and is controlled by {other.get('kind')}/{other.get('name')}; okt does not adopt it"
    )
    error.__cause__ = exc
    return error


AGAIN = "reconciled again once the custom resource changes"


def too_large(what: str, exc: errors.RequestTooLarge) -> errors.ObjectTooLarge:
    """The error of a child the API server refused for its size: permanent, since the same custom resource renders
    the same child — reported once (Ready=False, one Event), then nothing is written until the object changes: retried,
    each try would be one more failing write, error count and Event."""
    return errors.ObjectTooLarge.from_refusal(what, exc, AGAIN)


def terminating(what: str, decision: apply.Decision) -> errors.TemporaryError:
    """The error of a child that is being deleted: its owner is not ready while the child goes (a finalizer may hold
    it for long: a PersistentVolumeClaim in use, another controller's cleanup). Retried with backoff — the child's
    deletion wakes the owner too — and the reconcile after it is gone creates it again."""
    return errors.TemporaryError(f"{what} is {decision.reason}; okt creates it again once it is gone")


def _create(ctx: context_mod.Context, res: resource.Resource) -> None:
    what = res.describe()
    try:
        apply.create(ctx.client, res, ctx.observe, ctx.settings.writes)
    except errors.Forbidden as exc:
        if not exc.namespace_terminating:
            raise
        # Said as what it is, a wait: the API server's 403 reads as a permissions problem, and as a generic error each
        # retry was counted (Degraded turned True) and written (the error count, an Event) until the namespace went.
        namespace = res.namespace or ""
        raise errors.NamespaceTerminating(
            f"namespace {namespace} is being deleted: the API server refuses new objects in it, {what} among them; "
            "retried with backoff until the namespace is gone",
            namespace=namespace,
        ) from exc
    except errors.Conflict as exc:
        if not exc.already_exists:
            raise
        # Our cache had not seen it yet: read it and decide again (never a blind second create).
        live = ctx.client.get(ctx.client.kind_of(res.desired), res.name, res.namespace)
        ctx.observe(live)
        res.live = live
        again = apply.decide(res, live, ctx.cr, ctx.settings.names, keyed=_keyed(ctx))
        if again.action is apply.Action.REFUSE:
            raise errors.OwnedByAnother(f"{what} exists and is {again.reason}; okt does not adopt it") from exc
        if again.action is apply.Action.WAIT:
            raise terminating(what, again) from exc
        if again.action is apply.Action.UPDATE:
            apply.update(ctx.client, res, live, ctx.cr, ctx.observe, ctx.settings.writes, drift_only=again.drift_only)
            ctx.results.add(Operation.UPDATED, what)
        else:
            ctx.results.add(Operation.UNCHANGED, what)
        return
    ctx.results.add(Operation.CREATED, what)


def prune(ctx: context_mod.Context) -> None:
    """Delete children okt created for this CR (:func:`okt.resources.apply.prunable`) that are no longer
    registered, of the kinds the reconciler owns, registers, or owned in an earlier version (``legacy_owns``). Under
    ``okt run`` the reader answers from the informers' owner index: no request, no scan.

    An object is one object in every version of its group that serves its kind: a reconciler that owns a kind in two
    served versions (``autoscaling/v1`` and ``autoscaling/v2``, declaring each child in one of them) lists each child
    under both, so a registered child is recognised by group, kind, namespace and name, whatever the version."""
    wanted = ctx.registry.objects()
    owned = {(c.api_version, c.kind) for c in ctx.settings.owns} | {res.key[:2] for res in ctx.registry}
    owned |= set(ctx.settings.legacy_owns)  # what an earlier version owned: nothing of it is registered any more
    names = ctx.settings.names
    for api_version, kind_name in sorted(owned):
        kind = ctx.client.resolve(api_version, kind_name)
        namespace = ctx.cr.namespace if kind.namespaced else None
        held = {(key[2], key[3]) for key in wanted if key[:2] == (kind.group, kind_name)}  # never decoded again
        for obj in _owned(ctx, kind, namespace, names, held):
            key = kinds.key_of({**obj, "apiVersion": api_version, "kind": kind_name})
            if registry.object_of(key) in wanted or (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if not apply.prunable(obj, ctx.cr.uid, names):  # the readers only narrow; the rule is here
                continue
            try:
                if apply.delete(ctx.client, obj, ctx.cr.uid, names):
                    ctx.results.add(Operation.PRUNED, f"{kind_name}/{key[3]}")
            except errors.Conflict as exc:
                ctx.results.add(Operation.CRUD_ERROR, f"{kind_name}/{key[3]}", exc, delay=CONFLICT_DELAY)
            except errors.OktError as exc:
                ctx.results.add(Operation.CRUD_ERROR, f"{kind_name}/{key[3]}", exc)


def _owned(
    ctx: context_mod.Context,
    kind: kinds.Kind,
    namespace: str | None,
    names: names_mod.Names,
    held: set[tuple[str, str]],
) -> list[dict[str, Any]]:
    """The children of ``kind`` the reader finds controlled by this CR, but for those ``held``: asked once per owner
    label — okt's, then one per legacy prefix (a reader that lists from the API narrows by label; the cache's owner
    index answers every one, and what one answer held is skipped by the next)."""
    found: list[dict[str, Any]] = []
    uid = ctx.cr.uid
    for label in names.owner_labels:
        more = ctx.reader.owned(kind, namespace, uid, {label: uid}, held)
        if len(names.owner_labels) > 1:
            held = held | {kinds.key_of(obj)[2:] for obj in more}
        found.extend(more)
    return found
