"""``okt.Reconciler`` — the class an operator author subclasses.

Why this exists: it is OKT's reconciler in Python. The author declares the primary kind, the spec model, the children
it owns and whether deletion needs cleanup, then implements ``enter_in_state(state, ctx)`` (or only ``resources(ctx)``
and let the built-in work do the rest). Every built-in state's work is a public method the author can call, extend or
replace:

==============  =======================================================================================
state           built-in work (``default_work``)
==============  =======================================================================================
CRChecker       add the finalizer (when ``finalizer`` is set), first-visit conditions, ``check(ctx)``
ObjectsGetter   register ``resources(ctx)``, read each child's live state (from the informer store)
Mutator         ``mutate_with_cr``, normalise, hash, decide create / update / unchanged per child
Updater         send the creates and updates decided, prune owned children no longer registered
SuccessManager  Ready/Available/Progressing/Degraded/ReconciliationSuccess, status write if changed, events
ErrorManager    Ready=False with the error's reason and message, status write if changed, warning event
CRFinalizer     ``cleanup(ctx)``; the finalizer is removed only if cleanup recorded no error
==============  =======================================================================================

Guarantees: hooks never crash a worker (exceptions become results entries); a reconcile that changes nothing sends no
request; the status is written only when it changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import pydantic

from okt import errors
from okt.engines import freestyle, states, stepper
from okt.engines import results as results_mod
from okt.kube import kinds
from okt.reconciler import context as context_mod
from okt.resources import apply, helpers, resource
from okt.status import bookkeeping, events, finalizers, writer
from okt.status import conditions as cond

Operation = results_mod.Operation
State = states.State
CONFLICT_DELAY = 0.2


class Reconciler:
    """Subclass me. Class attributes declare what is reconciled; methods are the hooks."""

    api_version: ClassVar[str] = ""
    """The primary resource's apiVersion, e.g. ``"cache.example.com/v1alpha1"``."""
    kind: ClassVar[str] = ""
    plural: ClassVar[str | None] = None
    namespaced: ClassVar[bool] = True
    spec_model: ClassVar[type[pydantic.BaseModel] | None] = None
    status_model: ClassVar[type[pydantic.BaseModel] | None] = None
    owns: ClassVar[Sequence[type[resource.Resource]]] = ()
    finalizer: ClassVar[str | None] = None
    """Set to a finalizer name (e.g. ``"cache.example.com/cleanup"``) to get ``cleanup(ctx)`` on deletion."""
    engine: ClassVar[stepper.Stepper | freestyle.FreeStyle] = stepper.Stepper()
    params: ClassVar[Mapping[str, Any]] = {}
    prune: ClassVar[bool] = True
    prefix: ClassVar[str] = apply.DEFAULT_PREFIX
    apply_strategy: ClassVar[str] = "apply"
    """How children are written: ``"apply"`` (server-side apply: fields the template drops leave the object, fields
    of other managers stay) or ``"merge"`` (merge patches, for servers or kinds where apply misbehaves)."""
    field_manager: ClassVar[str] = apply.DEFAULT_FIELD_MANAGER
    """The field manager okt applies children as (``kubectl get -o yaml --show-managed-fields`` shows it)."""
    status: ClassVar[writer.Target | str | bool | None] = None
    """Where the conditions and observedGeneration go: ``"status"`` (the status subresource), ``"annotations"``
    (JSON in ``<prefix>/conditions`` and ``<prefix>/observed-generation`` on the object), ``"off"`` (nowhere but
    logs and Events); ``True``/``False`` read as ``"status"``/``"off"``. Default (``None``): ``"status"`` for a custom
    resource, ``"off"`` for a built-in kind (a Deployment, a Service, a Namespace), whose status another controller
    owns."""
    persistence: ClassVar[bookkeeping.Persistence] = bookkeeping.Persistence.STATUS
    """Where okt keeps its bookkeeping (error count, lifecycle phase); always the annotations when ``status`` does
    not go to the status subresource."""
    max_concurrent: ClassVar[int | None] = None
    name: ClassVar[str | None] = None
    events: ClassVar[bool] = True
    printer_columns: ClassVar[Sequence[Mapping[str, Any]]] = ()
    child_change_delay: ClassVar[float] = 0.5
    """Seconds a modified child waits before its owner is reconciled, so that a burst of changes (a Deployment's
    status during a rollout) costs one reconcile; a child added or deleted is acted on at once. 0 disables it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        resource.check_synchronous(cls)  # an "async def" hook would silently never run
        try:
            cls.status_target()
        except ValueError as exc:
            raise TypeError(f"{cls.__name__}.{exc}") from None

    # -- naming --------------------------------------------------------------------------------------------------

    @classmethod
    def controller_name(cls) -> str:
        return cls.name or cls.kind.lower() or cls.__name__.lower()

    @classmethod
    def primary_kind(cls) -> kinds.Kind:
        return kinds.Kind(cls.api_version, cls.kind, cls.plural or kinds.plural_of(cls.kind), cls.namespaced)

    @classmethod
    def status_target(cls) -> writer.Target:
        """Where this reconciler's conditions go (``status`` resolved for its kind)."""
        return writer.Target.resolve(cls.status, cls.api_version)

    @classmethod
    def applies_status(cls) -> bool:
        """Whether the status is written by server-side apply (children applied, status on the subresource)."""
        return cls.apply_strategy == apply.Strategy.APPLY.value and cls.status_target() is writer.Target.STATUS

    @classmethod
    def bookkeeping_persistence(cls) -> bookkeeping.Persistence:
        """Where the bookkeeping goes: ``persistence``, unless there is no status to keep it in."""
        if cls.status_target() is not writer.Target.STATUS:
            return bookkeeping.Persistence.ANNOTATIONS
        return bookkeeping.Persistence(cls.persistence)

    # -- the author's hooks --------------------------------------------------------------------------------------

    def enter_in_state(self, state: states.State, ctx: context_mod.Context) -> None:
        """Called on entering every state but GiveupManager and End. Default: the built-in work of the state.

        Override it and call ``super().enter_in_state(state, ctx)`` (or one built-in method) where you want the
        built-in work to happen.
        """
        self.default_work(state, ctx)

    def reconcile_with_cr(self, ctx: context_mod.Context) -> None:
        """The FreeStyle engine's single hook. Default: the Stepper's main course in one go."""
        for state in (State.ObjectsGetter, State.Mutator, State.Updater):
            self.default_work(state, ctx)
            if ctx.results.has_error or ctx.results.gave_up:
                return

    def resources(self, ctx: context_mod.Context) -> Iterable[resource.Resource]:
        """The children this CR should have; registered by the built-in ObjectsGetter. Default: none."""
        return ()

    def check(self, ctx: context_mod.Context) -> None:
        """Semantic checks of the CR beyond its schema; raise ``okt.InvalidSpec`` (or any error) to refuse it."""
        return None

    def cleanup(self, ctx: context_mod.Context) -> None:
        """What deletion must undo before the finalizer goes (only called when ``finalizer`` is set)."""
        return None

    def available(self, ctx: context_mod.Context) -> bool | None:
        """Whether the application is available. Default: every Deployment/StatefulSet child has its replicas
        available; None (Unknown) when there is no workload child."""
        readiness = [
            r.readiness()
            for r in ctx.registry
            if isinstance(r, helpers.DeploymentResource | helpers.StatefulSetResource)
        ]
        if not readiness:
            return None
        return all(r.available_all for r in readiness)

    def ready(self, ctx: context_mod.Context) -> tuple[bool, str, str]:
        """Ready after a successful reconcile: (status, reason, message). Default: True once every child is in its
        desired state — override it when readiness means more (a lifecycle phase, a workload's availability)."""
        return True, "Reconciled", "every child is in its desired state"

    def progressing(self, ctx: context_mod.Context) -> bool:
        """Whether a rollout is under way. Default: a workload child has not rolled out its latest spec."""
        return any(
            r.readiness().progressing
            for r in ctx.registry
            if isinstance(r, helpers.DeploymentResource | helpers.StatefulSetResource)
        )

    # -- dispatch ------------------------------------------------------------------------------------------------

    def default_work(self, state: states.State, ctx: context_mod.Context) -> None:
        work: dict[State, Callable[[context_mod.Context], None]] = {
            State.CRChecker: self.cr_checker,
            State.ObjectsGetter: self.objects_getter,
            State.Mutator: self.mutator,
            State.Updater: self.updater,
            State.SuccessManager: self.success_manager,
            State.ErrorManager: self.error_manager,
            State.CRFinalizer: self.cr_finalizer,
        }
        action = work.get(state)
        if action is not None:
            action(ctx)

    # -- built-in work -------------------------------------------------------------------------------------------

    def cr_checker(self, ctx: context_mod.Context) -> None:
        if ctx.finalizing:
            return
        if self.finalizer:
            try:
                added = finalizers.add(ctx.client, ctx.kind, ctx.cr, self.finalizer, ctx.observe)
            except (errors.Conflict, errors.Invalid) as exc:
                ctx.results.add(Operation.CRUD_ERROR, ctx.cr.name, _lost_race(exc), delay=CONFLICT_DELAY)
                return
            if added is not None:
                ctx.results.add(Operation.FINALIZER_ADDED, self.finalizer)
        generation = ctx.cr.generation
        ctx.conditions.set_unknown_if_missing(
            (cond.READY, cond.AVAILABLE, cond.PROGRESSING, cond.DEGRADED),
            "Reconciling",
            "okt has started reconciling this object",
            generation,
        )
        self.check(ctx)

    def objects_getter(self, ctx: context_mod.Context) -> None:
        for res in self.resources(ctx):
            if ctx.registry.get(res.key) is res:
                # Built with ctx.resource(), which registers: the same object again is not a duplicate.
                continue
            try:
                ctx.register(res)
            except errors.RegistrationError as exc:
                ctx.results.add(Operation.REGISTRATION_ABORTED, res.describe(), exc)
                return
        for res in ctx.registry:
            kind = ctx.client.kind_of(res.desired)
            res.live = ctx.reader.get(kind, res.name, res.namespace)

    def mutator(self, ctx: context_mod.Context) -> None:
        for res in ctx.registry:
            try:
                res.mutate_with_cr(ctx.cr)
                apply.prepare(res, ctx.cr, ctx.labels)
                ctx.decisions[res.key] = apply.decide(res, res.live, ctx.cr, ctx.labels)
            except errors.MutationError as exc:
                # A mutation that renames a child is a bug of the operator, not of the object: retrying cannot help
                # (OKT gives up too). Alarming: Ready=False, a Warning Event, no requeue until the object changes.
                ctx.results.give_up(str(exc), alarming=True, error=exc)
            except Exception as exc:
                delay = exc.delay if isinstance(exc, errors.TemporaryError) else None
                ctx.results.add(Operation.MUTATE_ERROR, res.describe(), exc, delay=delay)

    def updater(self, ctx: context_mod.Context) -> None:
        for res in ctx.registry:
            decision = ctx.decisions.get(res.key)
            if decision is None:
                continue
            self._apply_one(ctx, res, decision)
        if self.prune and not ctx.results.has_error:
            self.prune_unregistered(ctx)

    def _apply_one(self, ctx: context_mod.Context, res: resource.Resource, decision: apply.Decision) -> None:
        what = res.describe()
        try:
            if decision.action is apply.Action.CREATE:
                try:
                    apply.create(ctx.client, res, ctx.observe, ctx.writes)
                except errors.Invalid as exc:
                    # An apply that met an object of another controller: the server refuses a second controller
                    # reference. Name that controller rather than pass on the server's validation message.
                    live = ctx.client.get_or_none(ctx.client.kind_of(res.desired), res.name, res.namespace)
                    other = apply.foreign_controller(live, ctx.cr) if live is not None else None
                    if other is None:
                        raise
                    res.live = live
                    refused = apply.Decision(
                        apply.Action.REFUSE, f"controlled by {other.get('kind')}/{other.get('name')}"
                    )
                    raise errors.OwnedByAnother(
                        f"{what} exists and is {refused.reason}; okt does not adopt it"
                    ) from exc
                except errors.Conflict as exc:
                    if not exc.already_exists:
                        raise
                    # Our cache had not seen it yet: read it and decide again (never a blind second create).
                    live = ctx.client.get(ctx.client.kind_of(res.desired), res.name, res.namespace)
                    ctx.observe(live)
                    res.live = live
                    again = apply.decide(res, live, ctx.cr, ctx.labels)
                    if again.action is apply.Action.REFUSE:
                        raise errors.OwnedByAnother(
                            f"{what} exists and is {again.reason}; okt does not adopt it"
                        ) from exc
                    if again.action is apply.Action.UPDATE:
                        apply.update(ctx.client, res, live, ctx.cr, ctx.observe, ctx.writes)
                        ctx.results.add(Operation.UPDATED, what)
                    else:
                        ctx.results.add(Operation.UNCHANGED, what)
                    return
                ctx.results.add(Operation.CREATED, what)
            elif decision.action is apply.Action.REFUSE:
                raise errors.OwnedByAnother(f"{what} exists and is {decision.reason}; okt does not adopt it")
            elif decision.action is apply.Action.UPDATE and res.live is not None:
                ctx.log.debug("updating child", resource=what, reason=decision.reason, drift=list(decision.drift))
                apply.update(ctx.client, res, res.live, ctx.cr, ctx.observe, ctx.writes)
                ctx.results.add(Operation.UPDATED, what)
            else:
                ctx.results.add(Operation.UNCHANGED, what)
        except errors.Conflict as exc:
            ctx.results.add(Operation.CRUD_ERROR, what, exc, delay=CONFLICT_DELAY)
        except errors.OktError as exc:
            ctx.results.add(Operation.CRUD_ERROR, what, exc)

    def prune_unregistered(self, ctx: context_mod.Context) -> None:
        """Delete children okt created for this CR (:func:`okt.resources.apply.prunable`) that are no longer
        registered.

        Under ``okt run`` the reader answers from the informers' owner index: no request, no scan of the store.
        """
        wanted = ctx.registry.keys()
        owned = {(c.api_version, c.kind) for c in self.owns} | {(k[0], k[1]) for k in wanted}
        selector = {ctx.labels.owner_label: ctx.cr.uid}
        for api_version, kind_name in sorted(owned):
            kind = ctx.client.resolve(api_version, kind_name)
            namespace = ctx.cr.namespace if kind.namespaced else None
            for obj in ctx.reader.owned(kind, namespace, ctx.cr.uid, selector):
                key = kinds.key_of({**obj, "apiVersion": api_version, "kind": kind_name})
                if key in wanted or (obj.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                if not apply.prunable(obj, ctx.cr.uid, ctx.labels):  # the readers only narrow; the rule is here
                    continue
                try:
                    apply.delete(ctx.client, obj)
                    ctx.results.add(Operation.PRUNED, f"{kind_name}/{key[3]}")
                except errors.OktError as exc:
                    ctx.results.add(Operation.CRUD_ERROR, f"{kind_name}/{key[3]}", exc)

    def success_manager(self, ctx: context_mod.Context) -> None:
        generation = ctx.cr.generation
        was_failing = ctx.conditions.is_false(cond.READY)
        available = self.available(ctx)
        progressing = self.progressing(ctx)
        message = f"generation {generation} reconciled: {ctx.results.summary()}"
        c = ctx.conditions
        ready, ready_reason, ready_message = self.ready(ctx)
        c.set(cond.READY, ready, ready_reason, ready_message, generation)
        c.set(cond.RECONCILIATION_SUCCESS, True, "Reconciled", f"generation {generation} reconciled", generation)
        c.set(
            cond.PROGRESSING,
            progressing,
            "RollingOut" if progressing else "Settled",
            "a rollout is under way" if progressing else "nothing to roll out",
            generation,
        )
        c.set(cond.DEGRADED, False, "AsExpected", "no error", generation)
        if available is None:
            c.set(cond.AVAILABLE, True, "Reconciled", "no workload to wait for", generation)
        else:
            c.set(
                cond.AVAILABLE,
                available,
                "ReplicasAvailable" if available else "ReplicasUnavailable",
                "all replicas are available" if available else "waiting for replicas",
                generation,
            )
        ctx.bookkeeping.error_count = 0
        self.write_status(ctx)
        if ready and was_failing:
            # A recovery is worth an Event; a first success is not (it is in the conditions, and costs a write).
            ctx.event(events.NORMAL, "Reconciled", message)

    def error_manager(self, ctx: context_mod.Context) -> None:
        if not ctx.exists:
            return
        error = ctx.results.first_error
        if error is None and ctx.results.gave_up:
            reason, message = "GiveUp", ctx.results.gave_up
        else:
            reason, message = errors.reason_for(error) if error else "ReconcileError", str(error)
        generation = ctx.cr.generation
        c = ctx.conditions
        news = c.set(cond.READY, False, reason, message, generation)
        c.set(cond.RECONCILIATION_SUCCESS, False, reason, message, generation)
        c.set(cond.DEGRADED, True, reason, message, generation)
        c.set_unknown_if_missing((cond.AVAILABLE, cond.PROGRESSING), reason, message, generation)
        # A permanent error already reported for this generation (a restart, a child's event) is reported once:
        # no error count, no Event, so nothing is written while the object does not change.
        reported = isinstance(error, errors.PermanentError) and error.waits_for_change and not news
        if not reported:
            ctx.bookkeeping.error_count = ctx.bookkeeping.error_count + 1
        try:
            self.write_status(ctx)
        finally:
            if not reported:
                ctx.event(events.WARNING, reason, message)

    def cr_finalizer(self, ctx: context_mod.Context) -> None:
        ctx.results.add(Operation.FINALIZING, ctx.cr.name)
        if not self.finalizer or self.finalizer not in ctx.cr.finalizers:
            return
        try:
            self.cleanup(ctx)
        except Exception as exc:
            # A TemporaryError's delay is honoured here as it is for every other hook.
            delay = exc.delay if isinstance(exc, errors.TemporaryError) else None
            ctx.results.add(Operation.CLEANUP_ERROR, ctx.cr.name, exc, delay=delay)
        if ctx.results.has_error:
            return
        try:
            finalizers.remove(ctx.client, ctx.kind, ctx.cr, self.finalizer, ctx.observe)
            ctx.results.add(Operation.FINALIZER_REMOVED, self.finalizer)
        except errors.NotFound:
            ctx.results.add(Operation.FINALIZER_REMOVED, self.finalizer)
        except (errors.Conflict, errors.Invalid) as exc:
            ctx.results.add(Operation.CRUD_ERROR, ctx.cr.name, _lost_race(exc), delay=CONFLICT_DELAY)

    # -- status --------------------------------------------------------------------------------------------------

    def write_status(self, ctx: context_mod.Context) -> bool:
        """Write conditions, observedGeneration, ``ctx.status`` and bookkeeping where ``status`` says — only if
        something changed (one status patch and/or one guarded metadata patch; nothing at all when ``off`` and the
        bookkeeping is unchanged)."""
        extra = {**ctx.status, **ctx.bookkeeping.status_fields()}
        if self.status_model is not None and ctx.status:
            extra.update(
                self.status_model.model_validate(ctx.status).model_dump(mode="json", by_alias=True, exclude_none=True)
            )
        target = self.status_target()
        try:
            written = None
            annotations: dict[str, str | None] = {}
            if target is writer.Target.STATUS:
                wanted = writer.desired_status(ctx.cr.status, ctx.conditions, ctx.cr.generation, extra)
                written = writer.write(
                    ctx.client,
                    ctx.kind,
                    ctx.cr,
                    wanted,
                    ctx.observe,
                    conditions=ctx.conditions,
                    given=extra,
                    apply_as=self.field_manager if self.applies_status() else None,
                )
            elif target is writer.Target.ANNOTATIONS:
                annotations = writer.annotations_patch(
                    ctx.cr.annotations, ctx.conditions, ctx.cr.generation, extra, self.prefix
                )
            annotations.update(ctx.bookkeeping.changed_annotations())
            if annotations:
                patch = {"metadata": {"annotations": annotations, "resourceVersion": ctx.cr.resource_version}}
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
        except errors.OktError as exc:
            ctx.results.add(Operation.STATUS_UPDATE_ERROR, ctx.cr.name, exc)
            return False
        ctx.results.add(Operation.STATUS_UPDATED if written is not None else Operation.STATUS_UNCHANGED, ctx.cr.name)
        return written is not None


def _lost_race(exc: errors.ApiError) -> errors.TemporaryError:
    """A finalizer patch whose resourceVersion test failed (422) or that conflicted (409): someone wrote first."""
    error = errors.TemporaryError("the object changed while okt updated its finalizers; retrying", CONFLICT_DELAY)
    error.__cause__ = exc
    return error


def validate_spec(reconciler: Reconciler, raw_spec: Mapping[str, Any]) -> Any:
    """The typed spec (or the raw mapping when no model is declared); InvalidSpec names every bad field.

    A spec that is not a JSON object at all (a CRD that preserves unknown fields lets a string or a list through) is
    an ``InvalidSpec`` too, never a crash of the reconcile.
    """
    if reconciler.spec_model is None:
        return None
    if not isinstance(raw_spec, Mapping):
        raise errors.InvalidSpec(f"spec: must be an object, got {type(raw_spec).__name__}", field="spec")
    try:
        return reconciler.spec_model.model_validate(dict(raw_spec))
    except pydantic.ValidationError as exc:
        raise errors.InvalidSpec.from_validation_error(exc) from exc
