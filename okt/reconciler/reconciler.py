"""``okt.Reconciler`` — the class an operator author subclasses: a declaration and a few hooks.

Why this exists: it is OKT's reconciler in Python. The author declares the primary kind, the spec model, the children
it owns and whether deletion needs cleanup; okt does the rest. The built-in work of each state lives in modules by
concept — :mod:`.children` (ObjectsGetter, Mutator, Updater), :mod:`.report` (SuccessManager, ErrorManager) and
:mod:`.finalize` (CRChecker, CRFinalizer) — and runs from ``enter_in_state``; an author who overrides it calls
``super().enter_in_state(state, ctx)`` where the built-in work should happen:

==============  =======================================================================================
state           built-in work
==============  =======================================================================================
CRChecker       add the finalizer (when ``finalizer`` is set), first-visit conditions, ``check(ctx)``
ObjectsGetter   register ``resources(ctx)``, read each child's live state (from the informer store)
Mutator         ``mutate_with_cr``, normalise, hash, decide create / update / unchanged per child
Updater         send the creates and updates decided, prune owned children no longer registered
SuccessManager  Ready/Available/Progressing/Degraded/ReconciliationSuccess from the hooks, status write if changed
ErrorManager    Ready=False with the error's reason and message, status write if changed, warning event
CRFinalizer     ``cleanup(ctx)``; okt's finalizers are removed only if cleanup recorded no error
==============  =======================================================================================

A hook may return an outcome — ``okt.requeue_after(60)``, ``okt.give_up("why")`` — or ``None`` to carry on. A hook
may be ``async def`` (Kopf's handlers usually are): okt awaits it on the worker's own event loop, and what the
coroutine returns or raises counts as a ``def`` hook's (:mod:`okt.coroutines`). The filters ``when`` and ``selects``
are plain functions: an ``async def`` one is refused where the class is written.

Guarantees: hooks never crash a worker (exceptions become results entries); a reconcile that changes nothing sends no
request; the status is written only when it changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import pydantic
import pydantic_core
import structlog

from okt import errors
from okt import names as names_mod
from okt.engines import freestyle, states, stepper
from okt.engines import results as results_mod
from okt.kube import kinds, objects
from okt.reconciler import children, cluster_operator, declaration, finalize, findings, report, spec_names, timers
from okt.reconciler import context as context_mod
from okt.reconciler import watches as watches_mod
from okt.resources import helpers, resource, writing
from okt.status import bookkeeping, writer

Operation = results_mod.Operation
Outcome = results_mod.Outcome
_log = structlog.get_logger("okt.reconciler")
State = states.State


class Reconciler:
    """Subclass me. Class attributes declare what is reconciled; methods are the hooks.

    Both are read by name: a method or attribute whose name is one slip from a hook's or a declaration's (``def
    on_delete``, ``finaliser = ...``, ``Kind = ...``) is warned of when the class is defined, naming the one meant
    (a ``DeclarationWarning``; a helper of the author's own that only looks like one takes a leading ``_``).
    """

    api_version: ClassVar[str] = ""
    """The primary resource's apiVersion, e.g. ``"cache.example.com/v1alpha1"``."""
    kind: ClassVar[str] = ""
    """The primary resource's kind, e.g. ``"Memcached"``. Without ``api_version``, any name ``kubectl`` takes for a
    kind — ``"deploy"``, ``"deployments.apps"``, ``"Memcached"``, ``"memcacheds.cache.example.com"`` — resolved by
    discovery when the controller starts, or at the first ``okt.reconcile`` of an instance (an unknown or ambiguous
    name stops the start with one line, ``okt.ConfigurationError``)."""
    plural: ClassVar[str | None] = None
    """Its plural (default: discovery, or ``okt.kube.kinds.plural_of(kind)`` where no server is at hand)."""
    namespaced: ClassVar[bool] = True
    """Whether the primary kind is namespaced (``False``: cluster-scoped): the ``scope`` ``okt gen crd`` writes
    (``okt gen rbac`` wants ``--cluster-wide`` for a cluster-scoped one), and how the kind is addressed when ``plural``
    is declared too (otherwise discovery tells, as it does for a ``kind`` named as kubectl takes it). A built-in kind
    okt knows keeps its own scope: a reconciler of Namespaces, Nodes or ClusterRoles need not declare it."""
    spec_model: ClassVar[type[pydantic.BaseModel] | None] = None
    """A pydantic model of ``spec``: ``ctx.spec`` is typed, and a spec it refuses ends ``Ready=False, InvalidSpec``."""
    status_model: ClassVar[type[pydantic.BaseModel] | None] = None
    """A pydantic model of what the reconciler puts in ``ctx.status_fields`` (and of the CRD's status schema)."""
    spec_models: ClassVar[Mapping[str, type[pydantic.BaseModel]]] = {}
    """The other served versions of the primary and their spec models, e.g. ``{"v1alpha1": SpecV1Alpha1}``: ``okt gen
    crd`` serves each; the version of ``api_version`` (with ``spec_model``) is the one stored and reconciled."""
    converters: ClassVar[Mapping[tuple[str, str], Callable[[Any], Any]]] = {}
    """``(from_version, to_version) -> function`` taking the spec (a model of ``from_version``) and returning the spec
    of ``to_version`` (its model, or a mapping): okt serves the CRD's conversion webhook with them, chaining them when
    no direct one is declared. A spec its model refuses is converted too (built without validation): conversion moves
    fields, admission and the reconcile judge them. See the webhooks guide."""
    owns: ClassVar[Sequence[type[resource.Resource]]] = ()
    """The resource classes of the children: the kinds okt watches, may create, and asks RBAC for. By default every
    object gets one child of each class; override ``resources(ctx)`` to choose."""
    legacy_owns: ClassVar[Sequence[tuple[str, str] | kinds.Kind]] = ()
    """Kinds of children an earlier version of this operator owned and this one no longer does, as ``(api_version,
    kind)`` pairs, e.g. ``(("v1", "ConfigMap"),)`` once the settings moved to a Secret (or as an ``okt.Kind``, for a
    kind okt's kind dictionary lacks: ``okt gen rbac`` reads its plural and scope there). The children of those kinds
    okt made for an object (:func:`okt.resources.apply.prunable`) are pruned by its next reconcile, as Helm removes
    what a new chart no longer has; ``okt run`` watches those kinds too (the prune reads them from its cache), and
    ``okt gen rbac`` grants get, list, watch and delete on them, nothing more. Kinds rather than resource classes: a
    class kept only to name its kind would keep a template nobody renders, and the kind is all the prune needs (each
    version of its group serves the same objects). A kind still in ``owns`` is refused: it is pruned as owned already.
    Nothing is pruned with ``prune = False``; a kind the server does not serve fails the start of ``okt run``, as an
    owned kind does (drop it once no cluster the operator runs on serves it)."""
    finalizer: ClassVar[str | None] = None
    """Set to a finalizer name (e.g. ``"cache.example.com/cleanup"``) to get ``cleanup(ctx)`` on deletion."""
    legacy_finalizers: ClassVar[Sequence[str]] = ()
    """Finalizers this operator used to add (renamed, or ``finalizer`` switched off): an object still carrying one
    gets ``cleanup(ctx)`` on deletion and is released, never left stuck."""
    engine: ClassVar[stepper.Stepper | freestyle.FreeStyle] = stepper.Stepper()
    """How a reconcile is walked: the Stepper's states, or ``okt.FreeStyle()`` — one hook, ``reconcile_with_cr``."""
    lifecycle: ClassVar[declaration.Drawn | None] = None
    """The ``okt.Lifecycle`` the hooks advance, declared for ``okt graph`` to draw its phases beside the Stepper's
    states. Declaring it changes no reconcile: the hooks call ``advance`` where the phase should move."""
    params: ClassVar[Mapping[str, Any]] = {}
    """Free parameters of the operator, read by hooks and resource templates as ``ctx.params``."""
    prune: ClassVar[bool] = True
    """Delete the children okt created for an object and no longer registers (only those: see okt's ownership)."""
    versions: ClassVar[Mapping[str, str]] = {}
    """Versions to report in ``status.versions`` (OpenShift's ``[{name, version}]``), e.g. ``{"operator": "1.4.0",
    "memcached": "1.6"}``: written once nothing rolls out; while a rollout toward them is under way Progressing is
    True, reason ``Upgrading``. Versions chosen by each object (its spec) come from ``target_versions(ctx)``."""
    permissions: ClassVar[Mapping[tuple[str, str], Sequence[str]]] = {}
    """What the hooks reach beyond the children, for ``okt gen rbac``: ``{(group, resource): verbs}``, e.g.
    ``{("", "pods"): ("get", "list"), ("", "pods/exec"): ("create", "get")}`` for ``ctx.exec``. Never read at run
    time: the API server's RBAC is what enforces it."""
    cluster_operator: ClassVar[str | None] = None
    """The name of a cluster-scoped ``ClusterOperator`` (``config.openshift.io/v1``) to mirror this operator's
    Available/Progressing/Degraded, versions and related objects onto, when the server serves that kind (OpenShift);
    nothing happens where it does not. See :mod:`okt.reconciler.cluster_operator`."""
    related_objects: ClassVar[bool] = True
    """Write ``status.relatedObjects`` (group, resource, namespace, name of every child), as OpenShift operators do."""
    degraded_after: ClassVar[int] = 3
    """Consecutive failed reconciles before Degraded turns True (an int >= 1: 1 is at the first failure): a transient
    error (a conflict, an API hiccup) is not a degradation. A permanent error (``okt.InvalidSpec``) is Degraded at
    once."""
    max_creates: ClassVar[int | None] = None
    """At most this many children created per reconcile (OKT's ``maxCreation``): the rest wait for the next
    reconcile, which is requeued at once, and Ready stays False until they exist. None: no limit."""
    prefix: ClassVar[str] = names_mod.DEFAULT_PREFIX
    """The prefix of okt's labels and annotations (``<prefix>/okt-hash``, ``<prefix>/owner-uid``, ...). Changing it in
    a new version of an operator: list the old one in ``legacy_prefixes``, or what the old version wrote is left
    behind (okt cannot tell it from another operator's); see docs/concepts/index.md."""
    legacy_prefixes: ClassVar[Sequence[str]] = ()
    """Prefixes an earlier version of this operator used (``prefix`` changed): okt takes over what it wrote under them
    — the lifecycle phase, error count and conditions kept there are read where the current prefix keeps none, and
    removed by okt's next write of the object; a child carrying the old owner label of its owner is okt's (pruned
    once no longer registered), and the old label and checksum leave it when okt next writes it."""
    apply_strategy: ClassVar[str] = "apply"
    """How children are written: ``"apply"`` (server-side apply: fields the template drops leave the object, fields
    of other managers stay) or ``"merge"`` (merge patches, for servers or kinds where apply misbehaves)."""
    field_manager: ClassVar[str] = writing.DEFAULT_FIELD_MANAGER
    """The field manager okt applies children as (``kubectl get -o yaml --show-managed-fields`` shows it)."""
    legacy_field_managers: ClassVar[Sequence[str]] = ()
    """Field managers an earlier version of this operator wrote its children as: a former ``field_manager``, or
    ``"okt"`` when it wrote them through the merge path (``apply_strategy = "merge"``, whose writes the server records
    as ``okt``) under a ``field_manager`` of its own. The server keeps a field as long as any manager owns it, so
    without this a field the new template drops stays on the child for good. The first apply that writes a child
    moves those managers' fields into ``field_manager``'s (see docs/concepts/ownership.md); a converged child is not
    written for it. The same holds for the status of the custom resource, at its first status apply."""
    status: ClassVar[writer.Target | str | bool | None] = None
    """Where the conditions and observedGeneration go: ``"status"`` (the status subresource), ``"annotations"``
    (JSON in ``<prefix>/conditions`` and ``<prefix>/observed-generation`` on the object), ``"off"`` (nowhere but
    logs and Events); ``True``/``False`` read as ``"status"``/``"off"``. Default (``None``): ``"status"`` for a custom
    resource, ``"off"`` for a built-in kind (a Deployment, a Service, a Namespace), whose status another controller
    owns. Moving from ``"annotations"`` to ``"status"`` carries the conditions over (their transition times kept) and
    removes the annotations that kept them; the other way round leaves the status subresource as it was."""
    persistence: ClassVar[bookkeeping.Persistence] = bookkeeping.Persistence.STATUS
    """Where okt keeps its bookkeeping (error count, lifecycle phase); always the annotations when ``status`` does
    not go to the status subresource. Changing it keeps the lifecycle phases: each is carried over from the other
    place. With ``ANNOTATIONS`` and a status subresource, a phase move is patched first and alone, the status written
    only once it landed; a refused move writes nothing else (see :mod:`okt.status.bookkeeping`)."""
    max_concurrent: ClassVar[int | None] = None
    """Reconciles of this kind at once (default: ``okt run --max-concurrent``)."""
    name: ClassVar[str | None] = None
    """The controller's name in logs, metrics, Events and webhook paths (default: the kind, lowercased). Each
    reconciler run in one process needs its own: two of one kind are refused at start until one sets it."""
    record_events: ClassVar[bool] = True
    """Record Kubernetes Events (what ``kubectl describe`` shows)."""
    printer_columns: ClassVar[Sequence[Mapping[str, Any]]] = ()
    """Extra ``kubectl get`` columns for ``okt gen crd`` (``additionalPrinterColumns`` entries)."""
    annotation_selector: ClassVar[Mapping[str, str | None]] = {}
    """Only objects carrying these annotations are watched and reconciled (a value of None: any value). With the
    label selector (``okt run -l``, filtered by the server) and ``when(obj)``, what okt sees of the primaries."""
    watches: ClassVar[Sequence[watches_mod.Watch]] = ()
    """Related kinds whose changes reconcile the primaries a mapping function names: ``(okt.watch("configmaps",
    map=fn),)``, controller-runtime's ``EnqueueRequestsFromMapFunc`` (see :mod:`okt.reconciler.watches`); and whose
    indexes the cache keeps, read whole with ``ctx.indexed(name)``: ``okt.watch("pods", indexes={name: fn})``, Kopf's
    ``@kopf.index("pods")`` (see :mod:`okt.reconciler.indexes`). A tuple, even of one: a lone ``okt.watch(...)``
    (its comma forgotten) is refused when the class is defined."""
    indexes: ClassVar[Mapping[str, watches_mod.IndexFunction]] = {}
    """Indexes over the primaries in the cache, ``name -> fn(obj) -> values`` (Kopf's indexes): ``ctx.index(name,
    value)`` in a reconcile or a mapping function is then a lookup, not a scan. Values are kept as themselves, and
    looked up as a dict looks up its keys (:func:`okt.reconciler.watches.index_key`): ``1``, ``1.0`` and ``True`` are
    one value, ``"1"`` another; a tuple returned is one value of several parts, a list several values."""
    child_change_delay: ClassVar[float] = 0.5
    """Seconds a modified child waits before its owner is reconciled, so that a burst of changes (a Deployment's
    status during a rollout) costs one reconcile; a child added or deleted is acted on at once. 0 disables it; capped at
    6 hours (:data:`okt.delays.MAX_DELAY`) as every requeue is."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declaration.check(cls)

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
        return cls.apply_strategy == writing.Strategy.APPLY.value and cls.status_target() is writer.Target.STATUS

    @classmethod
    def bookkeeping_persistence(cls) -> bookkeeping.Persistence:
        """Where the bookkeeping goes: ``persistence``, unless there is no status to keep it in."""
        if cls.status_target() is not writer.Target.STATUS:
            return bookkeeping.Persistence.ANNOTATIONS
        return bookkeeping.Persistence(cls.persistence)

    @property
    def timer_clock(self) -> timers.Clock:
        """When this reconciler's timers last ran, per object (one clock per reconciler instance)."""
        clock = self.__dict__.get("_okt_timer_clock")
        if clock is None:
            clock = self.__dict__.setdefault("_okt_timer_clock", timers.Clock())
        return clock  # type: ignore[no-any-return]

    @property
    def daemon_findings(self) -> findings.Findings:
        """What this reconciler's daemons stated of each object, until its reconciles write it (one per instance)."""
        held = self.__dict__.get("_okt_daemon_findings")
        if held is None:
            nowhere = None
            if self.status_target() is writer.Target.OFF:
                nowhere = (
                    f'{type(self).__name__}\'s status is "off" (the default of a built-in kind): no reconcile writes '
                    "a daemon's conditions or status fields; write them from the daemon through ctx.client, or set "
                    'status = "annotations"'
                )
            held = self.__dict__.setdefault(
                "_okt_daemon_findings", findings.Findings(self.status_model, nowhere=nowhere)
            )
        return held  # type: ignore[no-any-return]

    def settings(self) -> context_mod.Settings:
        """What a reconcile needs of this declaration: the :class:`~okt.reconciler.context.Settings` its context
        holds (the context keeps no pointer back to the reconciler)."""
        return context_mod.Settings(
            controller=self.controller_name(),
            owns=tuple(self.owns),
            legacy_owns=declaration.legacy_pairs(self.legacy_owns),
            params=self.params,
            prefix=self.prefix,
            legacy_prefixes=tuple(self.legacy_prefixes),
            finalizer=self.finalizer,
            legacy_finalizers=tuple(self.legacy_finalizers),
            prune=self.prune,
            max_creates=self.max_creates,
            degraded_after=self.degraded_after,
            related_objects=self.related_objects,
            versions=dict(self.versions),
            status_target=self.status_target(),
            persistence=self.bookkeeping_persistence(),
            apply_strategy=writing.Strategy(self.apply_strategy),
            field_manager=self.field_manager,
            legacy_field_managers=tuple(self.legacy_field_managers),
            status_model=self.status_model,
            indexes=dict(self.indexes),
            watch_indexes={name: (w.kind, fn) for w in self.watches for name, fn in w.indexes.items()},
            selects=self.selects,
        )

    # -- the author's hooks --------------------------------------------------------------------------------------

    def enter_in_state(self, state: states.State, ctx: context_mod.Context) -> Outcome | None:
        """Called on entering every state but GiveupManager and End. Default: the built-in work of the state.

        Override it and call ``super().enter_in_state(state, ctx)`` where the built-in work should happen; return
        ``okt.requeue_after(seconds)`` or ``okt.give_up(reason)`` to ask for that outcome, ``None`` to carry on.
        """
        builtin_work(self, state, ctx)
        return None

    def reconcile_with_cr(self, ctx: context_mod.Context) -> Outcome | None:
        """The FreeStyle engine's single hook. Default: the Stepper's main course in one go."""
        for state in (State.ObjectsGetter, State.Mutator, State.Updater):
            builtin_work(self, state, ctx)
            if ctx.results.has_error or ctx.results.gave_up is not None:  # a give-up's reason may be ""
                break
        return None

    def resources(self, ctx: context_mod.Context) -> Iterable[resource.Resource]:
        """The children this object should have. Default: one of each class in ``owns``, built for this object with
        the reconciler's ``params``. Override it when children depend on the spec (an Ingress only when a host is
        set) or when a class has several instances; only classes in ``owns`` may be returned."""
        return [cls(ctx.cr, params=ctx.params) for cls in self.owns]

    def when(self, obj: Mapping[str, Any]) -> bool:
        """Whether okt watches and reconciles this object (the raw primary, as the API has it). Default: True.

        Objects it refuses are not kept in the cache and never reconciled; one that stops passing is forgotten, one
        that starts passing is reconciled at once. An object being deleted with okt's finalizer still on it is always
        kept, so that its cleanup runs and the finalizer goes. Keep it quick and pure: it runs on every event. One
        that raises leaves the object out (logged), never stops the watch; at admission it refuses the object
        (``internal error in when: KeyError``, the exception's class, never its text), as a ``check`` that raises.
        """
        return True

    def selects(self, obj: Mapping[str, Any]) -> bool:
        """The whole client-side filter: ``annotation_selector``, then ``when(obj)`` — or okt's finalizer on an object
        being deleted. A ``when`` that raises leaves the object out (logged); at admission it refuses the object
        instead (see :func:`selects_or_raises`)."""
        try:
            return _filters_pass(self, obj)
        except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
            raise
        # Any exception, one that is no Exception too (it ended the informer's thread, and Python printed its text).
        except BaseException as exc:
            meta = obj.get("metadata") or {}
            # A bug of when() must not stop the watch (the informer would relist forever): the object is left out.
            # Said as an index function's failure is: the object it was given may be a Secret (a reconciler of
            # Secrets), whose values are left out (okt.secret_values).
            _log.warning(
                "when() raised: the object is left out",
                reconciler=type(self).__name__,
                name=meta.get("name"),
                namespace=meta.get("namespace"),
                error=watches_mod.said_of(exc, obj),
            )
            return False

    def check(self, ctx: context_mod.Context) -> Outcome | None:
        """Semantic checks of the CR beyond its schema; raise ``okt.InvalidSpec`` (or any error) to refuse it.

        It runs in each reconcile and at the validating webhook, where ``ctx.admission`` is the request
        (:class:`okt.Admission`: ``dry_run``, ``username``, ``groups``, and ``warn(message)`` to warn whoever writes
        the object, admitted or refused); in a reconcile ``ctx.admission`` is None."""
        return None

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        """Admission defaulting (a mutating webhook is served when overridden): return the object with its defaults
        filled in (``obj`` is a copy: change it and return it, or build another; None keeps ``obj`` with the changes
        made to it). okt sends the API server the JSON patch between the object and what it returns.

        It runs on every CREATE and UPDATE of the objects okt serves, one changing only the labels or annotations
        too (okt's own write of its finalizer included): keep it idempotent. okt's finalizers and annotations stay as
        the request has them, whatever it returns; on an UPDATE leaving the spec as it was, a ``default`` that raises
        leaves the object untouched, with a warning, rather than refusing the edit.

        An override that declares a parameter ``admission`` (``def default(self, obj, admission: okt.Admission |
        None = None)``) is given the request there, as ``check(ctx)`` is in ``ctx.admission``: its dry run, its
        user, and ``admission.warn(message)``."""
        return None

    def cleanup(self, ctx: context_mod.Context) -> Outcome | None:
        """What deletion must undo before the finalizer goes (only called when ``finalizer`` is set).

        Return None (or ``okt.Outcome.done()``) when it is done: the finalizer goes. Raise (or record an error) when
        it failed: retried with backoff. Return ``okt.requeue_after(seconds)`` when it is under way but not finished
        (an external deletion to wait for), or ``okt.give_up(reason)`` when it needs a human: the finalizer stays
        either way. A give-up here is reported on the object as an alarming one is (Ready=False, reason ``GiveUp``,
        the reason as message, a Warning Event), since the object stays in deletion until someone acts.
        """
        return None

    def on_deleted(self, cr: objects.CustomResource) -> None:
        """Called once an object is deleted, to drop what the operator keeps of it outside Kubernetes (a metric
        series, a cache entry, a connection). Default: nothing. It needs no ``finalizer`` and never holds a deletion.

        Args:
            cr: the object's last state, as the watch told it (``cr.spec`` is the raw mapping: the spec is not
                validated again).

        Guarantees: called once per deleted object (per uid), on the replica that leads, by a worker, after the
        deletion was seen and before any later reconcile of its name, so an object deleted and created again has
        this called for the old one before the new one is reconciled. Only for the operator's objects: not called
        for an object that merely leaves the operator's selection (a label selector, ``annotation_selector``,
        ``when``): it is still there; nor for one deleted after it left the selection: it was no longer the
        operator's when it went (as Kopf's deletion handlers, called only for the objects it watches) — but for one
        relabelled out of a label selector and deleted before a worker read it, which the API server's events do
        not tell apart from a deletion.

        Caveats: best effort. It is not called for an object deleted while no operator ran, or seen deleted by a
        replica that did not lead yet, or by a process that stopped before the call, or deleted after it left the
        selection (what the operator kept of an object that may leave it is dropped by a pass of your own, as
        below); what must always be undone
        needs a ``finalizer`` and ``cleanup(ctx)``, or a pass of your own at start (``@okt.on_startup``, given
        the client) that drops the state of the objects no longer there. Keep it quick: it runs on a worker.

        Errors: an exception is logged (with where it was raised; a pydantic ``ValidationError`` by its fields, never
        the values it was given) and counted (``okt_on_deleted_errors_total``), and the call is made again after
        the key's backoff, at most 10 times in all; then the deletion is dropped. An API server that does not answer
        the read before the call (whether the object is gone: down, a 5xx, a 429) spends none of them: the read is made
        again after a backoff, as long as the outage lasts.
        """
        return None

    def ready(self, ctx: context_mod.Context) -> tuple[bool, str, str] | bool:
        """Ready after a successful reconcile: a bool, or (status, reason, message). Default: True once every child
        is in its desired state — override it when readiness means more (a lifecycle phase, availability)."""
        waiting = ctx.results.count(Operation.THROTTLED)
        if waiting:
            return False, "Creating", f"{waiting} children wait for their creation (max_creates={self.max_creates})"
        return True, "Reconciled", "every child is in its desired state"

    def available(self, ctx: context_mod.Context) -> tuple[bool, str, str] | bool | None:
        """Whether the application is available. Default: every Deployment/StatefulSet child has its replicas
        available; None (no workload to wait for) when there is none."""
        readiness = [
            r.readiness()
            for r in ctx.registry
            if isinstance(r, helpers.DeploymentResource | helpers.StatefulSetResource)
        ]
        if not readiness:
            return None
        return all(r.available_all for r in readiness)

    def progressing(self, ctx: context_mod.Context) -> tuple[bool, str, str] | bool:
        """Whether a rollout is under way. Default: a workload child has not rolled out its latest spec; False,
        reason ``ProgressDeadlineExceeded``, when the only ones that have not are stuck (their controller gave up
        on them, as the Deployment's own ``Progressing=False`` says: nothing is rolling out any more)."""
        stuck: tuple[bool, str, str] | bool = False
        for child in ctx.registry:
            if isinstance(child, helpers.DeploymentResource | helpers.StatefulSetResource):
                readiness = child.readiness()
                if readiness.progressing:
                    return True
                if readiness.stalled and stuck is False:
                    stuck = False, helpers.PROGRESS_DEADLINE_EXCEEDED, f"{child.kind} {child.name}: {readiness.stalled}"
        return stuck

    def target_versions(self, ctx: context_mod.Context) -> Mapping[str, str]:
        """The versions this object's reconcile rolls toward, reported in ``status.versions`` once reached (see
        ``versions``). Default: the ``versions`` declaration. Override it when a version is the object's choice — an
        operand version read from the spec — so that each object reports its own."""
        return ctx.settings.versions

    def degraded(self, ctx: context_mod.Context) -> tuple[bool, str, str] | bool:
        """Whether the application is degraded although the reconcile succeeded (an error is Degraded anyway).
        Default: True, reason ``ProgressDeadlineExceeded``, while a workload child's rollout is stuck (its controller
        saw no progress within ``progressDeadlineSeconds``: an image that cannot start, a crash loop); else False.
        Only the controller's verdict on the child's latest spec counts (its ``status.observedGeneration``): a
        template just fixed is rolling out, not Degraded for the spec it replaced."""
        for child in ctx.registry:
            if isinstance(child, helpers.DeploymentResource | helpers.StatefulSetResource):
                stalled = child.readiness().stalled
                if stalled:
                    return True, helpers.PROGRESS_DEADLINE_EXCEEDED, f"{child.kind} {child.name}: {stalled}"
        return False


BuiltinWork = Callable[[Reconciler, context_mod.Context], None]


def _succeed(reconciler: Reconciler, ctx: context_mod.Context) -> None:
    report.on_success(reconciler, ctx)
    timers.run_due(reconciler, ctx, reconciler.timer_clock)  # before the status write: a timer may report in it
    _mirror(reconciler, ctx)


def _fail(reconciler: Reconciler, ctx: context_mod.Context) -> None:
    report.on_error(ctx)
    _mirror(reconciler, ctx)


def _mirror(reconciler: Reconciler, ctx: context_mod.Context) -> None:
    """Mirror onto the ClusterOperator once the status is written (it sums up the written status)."""
    name = reconciler.cluster_operator
    if name and ctx.exists:
        ctx.status_due.append(lambda: cluster_operator.mirror(name, ctx))


BUILTIN_WORK: Mapping[State, BuiltinWork] = {
    State.CRChecker: finalize.check_in,
    State.ObjectsGetter: children.register,
    State.Mutator: lambda reconciler, ctx: children.mutate(ctx),
    State.Updater: lambda reconciler, ctx: children.write(ctx),
    State.SuccessManager: _succeed,
    State.ErrorManager: _fail,
    State.CRFinalizer: finalize.finalize,
}
"""The built-in work of each state (:mod:`.children`, :mod:`.report`, :mod:`.finalize`)."""


ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)


def builtin_work(reconciler: Reconciler, state: states.State, ctx: context_mod.Context) -> None:
    """Do okt's built-in work of ``state`` (nothing for GiveupManager and End)."""
    work = BUILTIN_WORK.get(state)
    if work is not None:
        work(reconciler, ctx)


def selects_or_raises(reconciler: Reconciler, obj: Mapping[str, Any]) -> bool:
    """What :meth:`Reconciler.selects` says of ``obj``, raising what ``when(obj)`` raises rather than leaving the object
    out: admission tells the writer of a filter that cannot judge the object, where the watch can only log it (an
    override of ``selects`` is called as it is, raising what it raises)."""
    if type(reconciler).selects is not Reconciler.selects:
        return bool(reconciler.selects(obj))
    return _filters_pass(reconciler, obj)


def _filters_pass(reconciler: Reconciler, obj: Mapping[str, Any]) -> bool:
    """The filters of :meth:`Reconciler.selects`, raising what ``when(obj)`` raises."""
    meta = obj.get("metadata") or {}
    finalizers = meta.get("finalizers") or ()
    if meta.get("deletionTimestamp") and any(
        f in finalizers for f in (reconciler.finalizer, *reconciler.legacy_finalizers) if f
    ):
        return True
    annotations = meta.get("annotations") or {}
    for key, value in reconciler.annotation_selector.items():
        if key not in annotations or (value is not None and annotations[key] != value):
            return False
    return bool(reconciler.when(obj))


def validate_spec(reconciler: Reconciler, raw_spec: Mapping[str, Any]) -> Any:
    """The typed spec (or the raw mapping when no model is declared); InvalidSpec names every bad field.

    A spec that is not a JSON object at all (a CRD that preserves unknown fields lets a string or a list through) is
    an ``InvalidSpec`` too, never a crash of the reconcile.

    The spec is read as the JSON data it is (see :func:`spec_from_data`).
    """
    if reconciler.spec_model is None:
        return None
    if not isinstance(raw_spec, Mapping):
        raise errors.InvalidSpec(f"spec: must be an object, got {type(raw_spec).__name__}", field="spec")
    return spec_from_data(reconciler.spec_model, dict(raw_spec))


def spec_from_data(model: type[ModelT], data: Any) -> ModelT:
    """``data``, a spec as the API server holds it, read as ``model``; InvalidSpec names every bad field.

    It is read as the JSON data it is (pydantic's JSON mode), as the CRD's schema describes it: a model in strict
    mode takes a datetime, a UUID or an enum member by its JSON form, where Python's strict mode would want the
    object itself, which no custom resource can hold. A field given under two of the names the model reads it by
    (``populate_by_name``, ``AliasChoices``), with different values, is refused too, both keys named
    (:func:`okt.reconciler.spec_names.given_twice`): pydantic would keep one and drop the other without a word.
    """
    twice = spec_names.given_twice(model, data)
    try:
        value = model.model_validate_json(pydantic_core.to_json(data))
    except pydantic.ValidationError as exc:
        refused = errors.InvalidSpec.from_validation_error(exc, model=model)
        if not twice:
            raise refused from exc
        raise _invalid((*twice, *refused.causes)) from exc
    if twice:
        raise _invalid(twice)
    return value


def _invalid(causes: Sequence[errors.StatusCause]) -> errors.InvalidSpec:
    """The InvalidSpec of ``causes``, said as :meth:`okt.InvalidSpec.from_validation_error` says its own."""
    message = "; ".join(f"{cause.field}: {cause.message}" for cause in causes)
    return errors.InvalidSpec(message, field=causes[0].field, causes=causes)
