"""One reconcile, start to end: fetch the CR, validate its spec, walk the engine, log the path, return the Run.

Why this exists: the runtime (informers, queue, workers) and the tests both need "reconcile this key once" with no
hidden state. Everything a reconcile touches lives in its :class:`okt.reconciler.context.Context`; the return value is
the engine's :class:`okt.engines.stepper.Run` whose ``outcome`` drives the work queue.

Guarantees: never raises for a problem of the object or the API (those become results entries and an outcome: a read
of the CR that fails is retried, ``>CRChecker>ErrorManager>End`` with nothing written); a CR that no longer exists
ends as a quiet give-up (``>CRChecker>GiveupManager>End``) with no request but the read (and, for a reconciler with a
``cluster_operator``, the mirror's, so the ClusterOperator forgets it); a quiet give-up writes nothing either, unless
a lifecycle moved before it (the new phase is persisted then); an invalid spec is an ``InvalidSpec`` error (a spec
model whose validation raises, that exception) — except while the CR is being deleted, when cleanup must still run.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import logging
import threading
import types
from collections.abc import Callable, Container, Mapping
from typing import Any

import structlog

from okt import coroutines, errors, secret_values
from okt.engines import results as results_mod
from okt.engines import states, stepper
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.reconciler import cluster_operator, daemons, declaration, finalize, findings, report, watches
from okt.reconciler import context as context_mod
from okt.reconciler import reconciler as reconciler_mod
from okt.status import events, writer

State = states.State
Reader = context_mod.Reader
_ids = itertools.count(1)
_ids_lock = threading.Lock()


class ApiReader:
    """A Reader that asks the API server every time (plain calls and tests; ``okt run`` uses the informer cache)."""

    def __init__(self, client: kube_client.Client) -> None:
        self._client = client

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        obj = self._client.get_or_none(kind, name, namespace)
        if obj is not None:
            obj.setdefault("apiVersion", kind.api_version)
            obj.setdefault("kind", kind.kind)
        return obj

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        selector = kinds.label_selector(labels)
        items, _ = self._client.list(kind, namespace, label_selector=selector)
        return items

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        owner_uid: str,
        labels: Mapping[str, str],
        skip: Container[tuple[str, str]] = (),
    ) -> builtins.list[dict[str, Any]]:
        """Objects controlled by ``owner_uid`` but for the ``(namespace, name)`` pairs in ``skip``; ``labels`` (okt's
        owner label) narrow the list on the server."""
        return [
            obj
            for obj in self.list(kind, namespace, labels)
            if objects.controller_uid(obj) == owner_uid and kinds.key_of(obj)[2:] not in skip
        ]

    def observe(self, obj: Mapping[str, Any]) -> None:
        return None


def primary_kind(reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client) -> kinds.Kind:
    """The REST addressing of the reconciler's primary kind (discovered when ``plural`` is not declared, or when
    ``kind`` is a name as kubectl takes it, without ``api_version``)."""
    if not reconciler_cls.api_version:
        return client.resolve_name(reconciler_cls.kind)
    if reconciler_cls.plural:
        return reconciler_cls.primary_kind()
    return client.resolve(reconciler_cls.api_version, reconciler_cls.kind)


def resolved(
    reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client, kind: kinds.Kind | None = None
) -> type[reconciler_mod.Reconciler]:
    """``reconciler_cls`` with its primary kind spelled out: itself when it declares ``api_version``; else, for a
    ``kind`` named as kubectl names it (``"deploy"``, ``"memcacheds.cache.example.com"``), a subclass of the same
    name declaring the discovered ``api_version``, ``kind``, ``plural`` and ``namespaced`` — so everything derived
    from the declaration (the status target of a built-in kind, the controller's name) sees the real kind. A ``kind``
    given is that kind, with no discovery.

    Raises:
        okt.ConfigurationError: the name is unknown or ambiguous.
    """
    if reconciler_cls.api_version:
        return reconciler_cls
    kind = kind or client.resolve_name(reconciler_cls.kind)
    attributes = {
        "api_version": kind.api_version,
        "kind": kind.kind,
        "plural": kind.plural,
        "namespaced": kind.namespaced,
        "__module__": reconciler_cls.__module__,
        "__qualname__": reconciler_cls.__qualname__,
        "__doc__": reconciler_cls.__doc__,
    }
    subclass: type[reconciler_mod.Reconciler] = types.new_class(
        reconciler_cls.__name__, (reconciler_cls,), exec_body=lambda namespace: namespace.update(attributes)
    )
    return subclass


def owned_kinds(reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client) -> list[kinds.Kind]:
    seen: dict[tuple[str, str], kinds.Kind] = {}
    for owned in reconciler_cls.owns:
        seen.setdefault((owned.api_version, owned.kind), client.resolve(owned.api_version, owned.kind))
    return list(seen.values())


def legacy_kinds(reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client) -> list[kinds.Kind]:
    """The kinds of ``legacy_owns``, resolved (none of them is in ``owns``: the declaration refuses it)."""
    seen: dict[tuple[str, str], kinds.Kind] = {}
    for api_version, kind_name in declaration.legacy_pairs(reconciler_cls.legacy_owns):
        seen.setdefault((api_version, kind_name), client.resolve(api_version, kind_name))
    return list(seen.values())


def watched_kinds(
    reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client
) -> list[tuple[kinds.Kind, watches.Watch]]:
    """The related kinds of ``reconciler_cls.watches``, resolved (a kind named as kubectl does, by discovery)."""
    return [(watches.resolve(client, w.kind), w) for w in reconciler_cls.watches]


def every_kind(reconciler_cls: type[reconciler_mod.Reconciler], client: kube_client.Client) -> list[kinds.Kind]:
    """Every kind a controller of ``reconciler_cls`` watches, resolved: its primary kind, the kinds it owns (its
    ``legacy_owns`` too) and those it watches, each once."""
    reconciler_cls = resolved(reconciler_cls, client)
    found = [
        primary_kind(reconciler_cls, client),
        *owned_kinds(reconciler_cls, client),
        *legacy_kinds(reconciler_cls, client),
        *(kind for kind, _ in watched_kinds(reconciler_cls, client)),
    ]
    return list({(kind.api_version, kind.kind): kind for kind in found}.values())


def _next_id() -> int:
    with _ids_lock:
        return next(_ids)


def reconcile(
    reconciler: reconciler_mod.Reconciler,
    client: kube_client.Client,
    reader: Reader | None,
    namespace: str | None,
    name: str,
    *,
    kind: kinds.Kind | None = None,
    logger: structlog.typing.FilteringBoundLogger | None = None,
    recorder: events.EventRecorder | None = None,
) -> stepper.Run:
    """Reconcile one object once and return the run (path, outcome, results).

    Args:
        reconciler: the reconciler. One whose ``kind`` is a name as kubectl takes it (no ``api_version``) is made,
            at its first reconcile, an instance of the subclass :func:`resolved` declares for the kind discovery
            finds (``kind`` when given), as ``okt run`` builds it: its status target, its controller's name are
            the real kind's (a built-in kind's status stays its own controller's).
        client: the API client (:class:`okt.testing.FakeClient` in a unit test).
        reader: where the object and its children are read; ``None`` reads them from the API each time.
        namespace: the object's namespace, ``None`` for a cluster-scoped kind.
        name: the object's name.
        kind: the primary kind's REST addressing; ``None`` resolves it (discovery, when ``plural`` or
            ``api_version`` is not declared).
        logger: the logger of the reconcile's lines (default: ``okt``'s).
        recorder: where Events go (none are recorded without one, nor with ``record_events = False``).

    Raises:
        okt.ApiError, okt.ConfigurationError: only while ``kind`` is resolved (not given): a kind the server does not
            serve (:class:`okt.NotFound`), a name it knows no kind by. The reconcile itself raises nothing for a
            problem of the object or the API (see the module's guarantees).
    """
    # The values of the Secrets it reads are left out of what is said of its errors: the log, Ready, an Event.
    with secret_values.held():
        return _reconcile(reconciler, client, reader, namespace, name, kind=kind, logger=logger, recorder=recorder)


def _reconcile(
    reconciler: reconciler_mod.Reconciler,
    client: kube_client.Client,
    reader: Reader | None,
    namespace: str | None,
    name: str,
    *,
    kind: kinds.Kind | None,
    logger: structlog.typing.FilteringBoundLogger | None,
    recorder: events.EventRecorder | None,
) -> stepper.Run:
    reader = reader or ApiReader(client)
    if not type(reconciler).api_version:
        # Resolved once: the instance keeps what it holds (its timers' clock), and the next reconcile asks nothing.
        reconciler.__class__ = resolved(type(reconciler), client, kind)
    kind = kind or primary_kind(type(reconciler), client)
    # A reconcile the runtime runs has its id bound to the logging context already (the author's lines carry it):
    # okt's own lines of the same reconcile must carry that one, not a number of another count.
    bound_id = structlog.contextvars.get_contextvars().get("reconcile_id")
    log = (logger or structlog.get_logger("okt")).bind(
        controller=type(reconciler).controller_name(),
        namespace=namespace,
        name=name,
        reconcile_id=bound_id if bound_id is not None else _next_id(),
    )
    unread: errors.ApiError | None = None
    try:
        raw = reader.get(kind, name, namespace)
    except errors.ApiError as exc:
        # Reading from the API (a plain call): a failed read is the API's problem, retried — never a gone object.
        raw, unread = None, exc
    exists = raw is not None
    if raw is not None and kind.kind == "Secret":
        # Held however it was read: a reader may answer it from memory (the last state of one deleted past okt's
        # finalizer), not through a read that holds it.
        secret_values.hold(kind.api_version, kind.kind, (raw,))
    placeholder = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace},
    }
    cr = objects.CustomResource(raw if raw is not None else placeholder)
    ctx = context_mod.Context(
        settings=reconciler.settings(),
        client=client,
        reader=reader,
        kind=kind,
        cr=cr,
        exists=exists,
        logger=log,
        recorder=recorder if reconciler.record_events else None,
    )
    applied = _apply_findings(reconciler, ctx) if exists else None
    run = reconciler.engine.run(_Steps(reconciler, ctx, unread), ctx.results)
    if not ctx.exists and unread is None and reconciler.cluster_operator:
        # No manager runs for a gone object, and the ClusterOperator would go on summing it up (listed, and
        # Degraded for ever when it was the degraded one).
        cluster_operator.mirror(reconciler.cluster_operator, ctx)
    found = applied is not None and applied.changed
    if (
        ctx.exists
        and ctx.results.gave_up is not None
        and not ctx.results.has_error
        and (ctx.bookkeeping.changed or found)
    ):
        # A quiet give-up runs neither manager, which write the bookkeeping: a lifecycle move made before it is
        # persisted here, or the next reconcile would start from the old phase and make the same move again. And
        # what the daemons stated: a paused object still says what its daemons found. A write that failed makes the
        # outcome a retry (a give-up would wait for a change of the object).
        report.write_status(ctx)
        if ctx.results.has_error:
            run = dataclasses.replace(run, outcome=ctx.results.outcome())
    if applied is not None and applied.retired and _status_written(ctx.results):
        reconciler.daemon_findings.settle(cr.uid, applied)
    error = ctx.results.first_error
    if error is None and not ctx.exists and unread is None:
        # Deleted, or out of the operator's reach (relabelled out of its label selector): there is
        # nothing to reconcile and nothing is written. Its give-up is how the engine ends ("cr not found"), not a
        # failure, which an info line saying outcome=give_up(...) read as.
        log.debug("forgotten: the object is deleted or out of the operator's selection", path=run.path_str)
        return run
    if error is None:
        # A reconcile that wrote nothing and did not give up found everything in place: at 10,000 objects a restart
        # or a resync is 10,000 of them, which say nothing an operator's log reader needs (metrics count them).
        quiet = all(entry.operation in _IN_PLACE for entry in ctx.results.entries)
        # Asked of the class: structlog's plain BoundLogger has no such method and hands any name to its logger.
        filtering = getattr(type(log), "is_enabled_for", None) is not None
        if quiet and filtering and not log.is_enabled_for(logging.DEBUG):
            return run  # not even the line's fields are worth building
        (log.debug if quiet else log.info)(
            "reconciled", path=run.path_str, outcome=str(run.outcome), results=ctx.results.summary()
        )
        return run
    refusal = ctx.results.status_refusal
    log.warning(
        "reconciled",
        path=run.path_str,
        outcome=str(run.outcome),
        results=ctx.results.summary(),
        error=_said(error),
        # Why an error okt reports once is retried: its report was refused (a spec stored before its CRD got stricter
        # has the API server refuse every write of the object, a conflict...), said nowhere else.
        **({} if refusal is None or refusal is error else {"status_error": _said(refusal)}),
    )
    if not isinstance(error, errors.OktError) and _first_sighting(error):
        # A bug of the operator (a KeyError in a hook...): its traceback, once per distinct error, not per retry. A
        # pydantic ValidationError's text repeats every input it was given (a Secret's password): its stack only.
        log.error(
            "a hook raised an exception that is not okt's", error=errors.said(error), **errors.where_raised(error)
        )
    return run


def _said(error: BaseException) -> str:
    """An error as the line of a reconcile says it: its reason, then its message."""
    return f"{errors.reason_for(error)}: {errors.message_of(error)}"


def _apply_findings(reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context) -> findings.Applied | None:
    """Set what the daemons stated in the reconcile's working copy, so that its status write carries it (and its
    hooks see it), with the record of it in the bookkeeping; None when no daemon stated anything on the object."""
    held, cr, target = reconciler.daemon_findings, ctx.cr, ctx.settings.status_target
    record = ctx.bookkeeping.daemons
    if target is writer.Target.OFF or not (record or held.holds(cr.uid)):
        return None
    in_annotations = target is writer.Target.ANNOTATIONS
    stored = writer.status_fields_from_annotations(cr.annotations, ctx.settings.prefix) if in_annotations else cr.status
    applied = held.apply(
        cr.uid,
        ctx.conditions,
        ctx.status_fields,
        stored,
        record=record,
        # A daemon its object no longer passes the filter of never runs for it (filtered out while no process ran,
        # or its retirement's reconcile never ran: a lost lease): what the record says it stated goes.
        concerned=daemons.concerning(type(reconciler), cr.raw),
        carry=in_annotations,  # the annotation is written whole: what the daemons stated is carried into it
        live=not cr.deleting,
    )
    ctx.bookkeeping.daemons = applied.record
    return applied


def _status_written(results: results_mod.Results) -> bool:
    """Whether this reconcile's status writes went through (one wrote, or found nothing to write), none refused."""
    operations = {entry.operation for entry in results.entries}
    return bool(operations & {results_mod.Operation.STATUS_UPDATED, results_mod.Operation.STATUS_UNCHANGED}) and (
        results_mod.Operation.STATUS_UPDATE_ERROR not in operations
    )


_IN_PLACE = frozenset(
    {results_mod.Operation.UNCHANGED, results_mod.Operation.STATUS_UNCHANGED, results_mod.Operation.REQUEUE}
)
"""What a reconcile that found everything in place records (logged at debug level)."""

_sightings: set[tuple[str, str]] = set()
_sightings_lock = threading.Lock()
_MAX_SIGHTINGS = 1024


def _first_sighting(error: BaseException) -> bool:
    """Whether this process logs this error (type and message) for the first time."""
    key = (type(error).__qualname__, str(error))
    with _sightings_lock:
        if key in _sightings:
            return False
        if len(_sightings) >= _MAX_SIGHTINGS:
            _sightings.clear()
        _sightings.add(key)
        return True


class _Steps:
    """The work of one reconcile as the engines drive it (:class:`okt.engines.stepper.Steps`)."""

    def __init__(
        self, reconciler: reconciler_mod.Reconciler, ctx: context_mod.Context, unread: errors.ApiError | None = None
    ) -> None:
        self.reconciler = reconciler
        self.ctx = ctx
        self.unread = unread

    def _prologue(self) -> bool:
        """Fetch and validate; False when the object could not be read (an error) or is gone (a quiet give-up) and no
        CRChecker work should run."""
        ctx = self.ctx
        if self.unread is not None:
            ctx.results.add(results_mod.Operation.CRUD_ERROR, ctx.cr.name, self.unread)
            return False
        if not ctx.exists:
            ctx.results.add(results_mod.Operation.CR_NOT_FOUND, ctx.cr.name)
            ctx.results.give_up("cr not found")
            return False
        try:
            typed = reconciler_mod.validate_spec(self.reconciler, ctx.cr.raw_spec)
        except Exception:
            # Not only InvalidSpec: pydantic lets a validator's KeyError or TypeError through (``info.data["size"]``
            # once ``size`` failed), and that spec must not hold the deletion either.
            if ctx.cr.deleting:
                return True  # cleanup must still run
            raise
        if typed is not None:
            ctx.cr = ctx.cr.with_spec(typed)
        return True

    def enter(self, state: states.State) -> None:
        if state is State.CRChecker and not self._prologue():
            return

        def work() -> None:
            self.ctx.results.follow(coroutines.call(self.reconciler.enter_in_state, state, self.ctx), "enter_in_state")

        if state is not State.CRFinalizer:
            self._then_due(state, work)
            return
        try:
            self._then_due(state, work)
        except errors.GiveUp as exc:
            self.ctx.results.record_exception(exc)  # recorded here, as the engine would, to be judged below
        # The hook of CRFinalizer is OKT's place for the cleanup: its give-up holds the object in deletion as the
        # ``cleanup`` hook's does, and is said on the object as that one is.
        finalize.alarm_if_held(self.ctx)

    def builtin(self, state: states.State) -> None:
        if state is State.CRChecker and not self._prologue():
            return
        self._then_due(state, lambda: reconciler_mod.builtin_work(self.reconciler, state, self.ctx))

    def _then_due(self, state: states.State, work: Callable[[], None]) -> None:
        """Do a state's work, then what its built-in work left due (``ctx.status_due``: the status write and what
        reads it), so that a hook's code after ``super().enter_in_state(state, ctx)`` reports in that one write.

        A success whose hook then raised or recorded an error is not written: the ErrorManager follows, and reports.
        Nor is one its hook or a timer gave up after, quietly (raised, returned or recorded alike): a quiet give-up
        writes nothing (:func:`okt.reconciler.report.withdraw`). An error is reported whatever its hook did after the
        built-in work."""
        ctx = self.ctx
        before = report.BeforeSuccess.of(ctx) if state is State.SuccessManager else None
        try:
            work()
        except BaseException as exc:
            if state is not State.ErrorManager:
                ctx.status_due.clear()
            if before is not None and isinstance(exc, errors.GiveUp) and not exc.alarming:
                report.withdraw(ctx, before)
            self._run_due()
            raise
        if before is not None and ctx.results.has_error:
            ctx.status_due.clear()
        elif before is not None and ctx.results.gave_up is not None:
            report.withdraw(ctx, before)
        self._run_due()

    def _run_due(self) -> None:
        due, self.ctx.status_due = self.ctx.status_due, []
        for step in due:
            step()

    def reconcile(self) -> None:
        self.ctx.results.follow(coroutines.call(self.reconciler.reconcile_with_cr, self.ctx), "reconcile_with_cr")

    def finalizing(self) -> bool:
        return self.ctx.finalizing
