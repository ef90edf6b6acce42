"""The context of one reconcile: everything a hook needs, and nothing shared with another reconcile.

Why this exists: OKT hangs the results, the registry and the give-up flag on the reconciler (and had a global give-up
singleton); two reconciles in parallel could see each other's state. okt builds one ``Context`` per reconcile and
hands it to every hook: the custom resource, its typed spec, the results stack, the registry, a working copy of the
conditions, the bookkeeping, a bound logger, the API client and the reader (the informer store under ``okt run``).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, Literal, Protocol

import pydantic
import structlog

from okt import names as names_mod
from okt.engines import results as results_mod
from okt.kube import client as kube_client
from okt.kube import kinds, objects, operand_http, podexec
from okt.reconciler import admission_request, indexes, watches
from okt.resources import apply, registry, resource, writing
from okt.status import bookkeeping, conditions, events, writer

REPLACED = "deleted and created again (another uid) during the reconcile"
"""The reason of the quiet give-up of a reconcile whose object was replaced meanwhile (see :meth:`Context.replaced`)."""
DELETED = "deleted during the reconcile"
"""The reason of the quiet give-up of a reconcile whose object went, or began to be deleted, before its children were
written (see :meth:`Context.deleted_meanwhile`)."""

Subject = resource.Resource | objects.CustomResource | Mapping[str, Any]
"""What :meth:`Context.event` takes as ``about``: a child's resource (its live object), an object, or its view."""


class Reader(Protocol):
    """What a reconcile reads through: the informer cache under ``okt run``, the API in a plain call."""

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None: ...

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]: ...

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        owner_uid: str,
        labels: Mapping[str, str],
        skip: Container[tuple[str, str]] = (),
    ) -> builtins.list[dict[str, Any]]: ...

    def observe(self, obj: Mapping[str, Any]) -> None: ...


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a reconcile needs to know of its reconciler's declaration (see :class:`okt.Reconciler`'s attributes)."""

    controller: str
    owns: tuple[type[resource.Resource], ...] = ()
    legacy_owns: tuple[tuple[str, str], ...] = ()
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    prefix: str = names_mod.DEFAULT_PREFIX
    legacy_prefixes: tuple[str, ...] = ()
    finalizer: str | None = None
    legacy_finalizers: tuple[str, ...] = ()
    prune: bool = True
    max_creates: int | None = None
    degraded_after: int = 3
    related_objects: bool = True
    versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    status_target: writer.Target = writer.Target.STATUS
    persistence: bookkeeping.Persistence = bookkeeping.Persistence.STATUS
    apply_strategy: writing.Strategy = writing.Strategy.APPLY
    field_manager: str = writing.DEFAULT_FIELD_MANAGER
    legacy_field_managers: tuple[str, ...] = ()
    status_model: type[pydantic.BaseModel] | None = None
    indexes: Mapping[str, watches.IndexFunction] = dataclasses.field(default_factory=dict)
    watch_indexes: Mapping[str, tuple[kinds.Kind | str, watches.IndexFunction]] = dataclasses.field(
        default_factory=dict
    )
    """The indexes of the watched kinds (``okt.watch(kind, indexes=...)``), by name: the kind and the function."""
    selects: Callable[[Mapping[str, Any]], bool] | None = None
    """The reconciler's client-side filter (``annotation_selector``, ``when(obj)``): a lookup without the cache's
    index keeps only what it selects, as the cache does."""

    @functools.cached_property
    def names(self) -> names_mod.Names:
        """okt's label and annotation names, from the prefix (made once: read several times for every child of every
        reconcile, and the fields it is made of never change)."""
        return names_mod.of(self.prefix, tuple(self.legacy_prefixes))

    @property
    def writes(self) -> writing.WriteOptions:
        names = self.names
        return writing.WriteOptions(
            self.apply_strategy,
            self.field_manager,
            names.hash_annotation,
            *names.legacy_child_keys(),
            legacy_field_managers=frozenset(self.legacy_field_managers),
        )

    @property
    def applies_status(self) -> bool:
        """Whether the status is written by server-side apply (children applied, status on the subresource)."""
        return self.apply_strategy is writing.Strategy.APPLY and self.status_target is writer.Target.STATUS


class Context:
    """Everything one reconcile knows. Built by :func:`okt.reconciler.core.reconcile`."""

    def __init__(
        self,
        *,
        settings: Settings,
        client: kube_client.Client,
        reader: Reader,
        kind: kinds.Kind,
        cr: objects.CustomResource,
        exists: bool,
        logger: structlog.typing.FilteringBoundLogger,
        recorder: events.EventRecorder | None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.reader = reader
        self.kind = kind
        self.cr = cr
        self.exists = exists
        self.log = logger
        self.recorder = recorder
        self.results = results_mod.Results()
        self.gave_up_replaced = False
        """Whether :meth:`replaced` found the object replaced, and the reconcile gave up."""
        self.gave_up_deleted = False
        """Whether :meth:`deleted_meanwhile` found the object gone or being deleted, and the reconcile gave up."""
        self.registry = registry.Registry()
        stored: Mapping[str, Any]
        if settings.status_target is writer.Target.ANNOTATIONS:
            stored = {
                "conditions": writer.conditions_from_annotations(
                    cr.annotations, settings.prefix, settings.legacy_prefixes
                )
            }
        elif settings.status_target is writer.Target.STATUS:
            stored = cr.status
            if not stored.get("conditions"):
                # Kept in annotations by an operator version whose status went there (its CRD had no status
                # subresource yet): carried over, their transition times kept; the next write removes that copy.
                moved = writer.conditions_from_annotations(cr.annotations, settings.prefix, settings.legacy_prefixes)
                stored = {**stored, "conditions": moved} if moved else stored
        else:
            stored = {}
        self.conditions = conditions.Conditions.from_status(stored)
        self.bookkeeping = bookkeeping.Bookkeeping(
            cr.raw,
            settings.persistence,
            settings.prefix,
            settings.legacy_prefixes,
            status_written=settings.status_target is writer.Target.STATUS,
        )
        self.status_fields: dict[str, Any] = {}
        """Extra status fields to write with the conditions (merged into ``status``)."""
        self.status_due: list[Callable[[], object]] = []
        """What the built-in work of SuccessManager or ErrorManager leaves until the state's hook has returned: the
        status write, so that what the hook sets after ``super().enter_in_state(state, ctx)`` is in it, then what
        reads the written status (the ClusterOperator's mirror)."""
        self.decisions: dict[kinds.ObjectKey, apply.Decision] = {}
        self.not_ready: tuple[str, str] | None = None
        """(reason, message) that hold Ready False in the SuccessManager's report whatever ``ready(ctx)`` says: set by
        an ``okt.Lifecycle`` declared with ``ready=`` while the object is in a phase outside it (its condition's
        reason and message), cleared in one of them."""
        self.admission: admission_request.Admission | None = None
        """The admission request ``check(ctx)`` runs for at the validating webhook (whether it is a dry run, who sends
        it, ``ctx.admission.warn(message)`` to warn them), None in a reconcile."""
        # This reconcile's own mapping: a key a hook sets or removes must not reach later reconciles, nor those other
        # workers run at the same time, through the reconciler's class attribute.
        self._params = dict(settings.params)

    # -- conveniences for hooks ----------------------------------------------------------------------------------

    @property
    def params(self) -> Mapping[str, Any]:
        """The reconciler's ``params``, as a mapping of this reconcile's own: a key a hook sets or removes is seen by
        this reconcile only. The values are the reconciler's (one shared object stays one), not copies."""
        return self._params

    @property
    def spec(self) -> Any:
        return self.cr.spec

    @property
    def finalizing(self) -> bool:
        return self.exists and self.cr.deleting

    @property
    def attempt(self) -> int:
        """Which consecutive attempt this reconcile is: 1 at the first and after a success, one more after each failed
        reconcile of the object since (the count okt keeps on the object, so it survives a restart), as a daemon's
        ``ctx.attempt``. A limit of retries is ``if ctx.attempt > 3: raise okt.PermanentError(...) from exc``."""
        return self.bookkeeping.stored_error_count + 1

    def requeue_after(self, seconds: float) -> None:
        """Reconcile this object again after ``seconds`` (the shortest requested delay of a reconcile wins)."""
        self.results.follow(results_mod.Outcome.requeue_after(seconds), "requeue_after")

    def give_up(self, reason: str) -> None:
        """Stop here: no more work this reconcile, no requeue until the object (or a child) changes."""
        self.results.give_up(reason)

    def flush_status(self) -> bool:
        """Write the status now (only if something changed); returns whether a request was sent."""
        from okt.reconciler import report  # report builds on this module

        return report.write_status(self)

    def index(self, name: str, value: object) -> builtins.list[dict[str, Any]]:
        """The primaries whose index ``name`` (the reconciler's ``indexes``) holds ``value``, looked up as a dict
        looks a key up (:func:`okt.reconciler.watches.index_key`: ``1`` finds ``1.0``, never ``"1"``):
        a lookup in the cache, not a scan (a plain ``okt.reconcile`` reading from the API filters a list instead)."""
        return watches.lookup(
            self.reader,
            self.kind,
            self.settings.controller,
            self.settings.indexes,
            name,
            value,
            selects=self.settings.selects,
        )

    def indexed(self, name: str) -> indexes.Index:
        """The index ``name`` of a watched kind (``okt.watch(kind, indexes={name: fn})``, Kopf's ``@kopf.index``),
        read whole as a mapping of key -> the objects, or the values ``fn`` returned, under it: ``len(index)``,
        ``index.items()``, ``index[key]``. Kept by the cache on every change of the kind; a lookup of one key reads it
        as it stands then, the first whole read takes one snapshot read from then on (see
        :mod:`okt.reconciler.indexes`).

        Raises:
            okt.ConfigurationError: no watch of the reconciler declares an index of that name.
            okt.ApiError: the API server no longer lets okt list and watch the kind, or no longer serves it (a
                ``Forbidden``, a ``NotFound``): the index is as old as its last answer.
        """
        return indexes.read(self.reader, self.client, self.settings.controller, self.settings.watch_indexes, name)

    def event(self, type_: str, reason: str, message: str, *, once: bool = False, about: Subject | None = None) -> None:
        """Record a Kubernetes Event about the object, or about ``about`` (none when the reconciler records no
        events). A repeat of the same type, reason and message about the same object counts one more on the Event;
        with ``once``, a repeat said of the object unchanged since (its resourceVersion) is not even counted: no
        request.

        Args:
            about: another object the Event is about, as ``kubectl describe`` of it shows (Kopf's
                ``kopf.event(child, ...)``): a child's ``okt.Resource`` once it was read or written (its ``live``
                object: in the Updater's hook after ``super()``, in the SuccessManager's), an object as a mapping
                (what ``ctx.reader`` and ``ctx.client`` answer) or an ``okt.CustomResource``. The Event's
                ``involvedObject`` is its apiVersion, kind, name, namespace and uid, and it lives in its namespace
                (``default`` for a cluster-scoped one); the spam filter counts its Events apart from the primary's.

        Raises:
            ValueError: ``about`` names no apiVersion, kind, name or uid (a desired body never written, a
                resource not read yet): it says which of them it lacks, whether or not the reconciler records events.
            TypeError: ``about`` is none of the above.
        """
        subject = self.cr if about is None else _subject(about)
        if self.recorder is not None and (about is not None or self.exists):
            self.recorder.record(subject, type_, reason, message, once=once)

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Feed an object our own write returned into the reader (and the CR view when it is the primary: this
        object, not another created under its name since it was read — the later writes of this reconcile would
        take its uid and resourceVersion, and land on it — and at the generation read: a status apply lands on a
        spec changed since, and the reports this reconcile still writes would say that spec reconciled, their
        observedGeneration its generation, though the children were made of the spec read; the next reconcile
        follows the change)."""
        self.reader.observe(obj)
        if kinds.key_of(obj) != self.cr.key or _uid(obj) not in ("", self.cr.uid):
            return
        generation = (obj.get("metadata") or {}).get("generation")
        if generation in (None, self.cr.generation) or not self.cr.generation:
            self.cr = self.cr.with_raw(obj)

    def replaced(self) -> bool:
        """Whether another object (another uid) now has the name of the one this reconcile read: it was deleted and
        created again meanwhile. What this reconcile would still write — its status, children owned by the old uid —
        belongs to the old object and must not land on the new one, which a reconcile of its own follows.

        Asked of the reader (``okt run``'s cache: no request), as the status write asks :meth:`replaced_by` with what
        the reader holds before its apply. An object the reader no longer holds (it held it when this reconcile read
        it) counts as replaced too: it went, and a status apply could only fail, or land on an object created again
        under its name — the status subresource keeps the stored metadata, so no uid in the apply makes the API
        server refuse it; its resourceVersion does, when the reader has not seen the deletion yet. Once it says so,
        the reconcile gives up quietly (:attr:`gave_up_replaced`)."""
        return self._superseded(deletion=False)

    def deleted_meanwhile(self) -> bool:
        """Whether the object is gone, being deleted or replaced (:meth:`replaced`), though it was live when this
        reconcile read it. Children created or updated now would be written after its deletion began: for an object
        deleted with ``propagationPolicy=Orphan`` they would name it their owner after the garbage collector orphaned
        the others, and go with it; for any other, they are written only to be collected, the object reported Ready.

        Asked of the reader (``okt run``'s cache: no request) before the children are written. Once it says so, the
        reconcile gives up quietly (:attr:`gave_up_deleted`): the deletion's own reconcile follows (the cleanup, when
        the object has okt's finalizer)."""
        return self._superseded(deletion=True)

    def replaced_by(self, now: Mapping[str, Any] | None) -> bool:
        """Whether ``now``, what the API server holds under this object's name (None: nothing), is another object than
        the one this reconcile read, or none: :meth:`replaced`, answered by the server where the reader may be behind
        (``okt run``'s cache, which may not have seen the deletion yet). Asked once the server refused a write guarded
        by the resourceVersion read. Once it says so, the reconcile gives up quietly (:attr:`gave_up_replaced`)."""
        if self.gave_up_replaced:
            return True
        if not self.exists or not self.cr.uid:
            return False
        return self._gone_or_replaced(now)

    def _gone_or_replaced(self, now: Mapping[str, Any] | None) -> bool:
        """Whether ``now`` is none, or another object (another uid); the reconcile gives up quietly then."""
        if now is None:
            self.log.info("deleted during this reconcile: its status is not written")
            self.results.give_up(DELETED)
        elif _uid(now) not in ("", self.cr.uid):
            self.log.info(
                "deleted and created again under its name (another uid) during this reconcile: its writes stop"
            )
            self.results.give_up(REPLACED)
        else:
            return False
        self.gave_up_replaced = True
        return True

    def _superseded(self, *, deletion: bool) -> bool:
        """:meth:`replaced`, and with ``deletion`` :meth:`deleted_meanwhile`, from one read of the reader."""
        if self.gave_up_replaced or (deletion and self.gave_up_deleted):
            return True
        if not self.exists or not self.cr.uid or (deletion and self.cr.deleting):
            return False
        now = self.reader.get(self.kind, self.cr.name, self.cr.namespace)
        if (now is not None or not deletion) and self._gone_or_replaced(now):
            return True
        if not deletion or (now is not None and not (now.get("metadata") or {}).get("deletionTimestamp")):
            return False
        self.log.info("deleted during this reconcile: its children are not written")
        self.results.give_up(DELETED)
        self.gave_up_deleted = True
        return True

    # -- calling the operand (see docs/guide/remote.md) ----------------------------------------------------------

    def exec(
        self,
        pod: str,
        container: str | None,
        command: Sequence[str],
        *,
        timeout: float = podexec.DEFAULT_TIMEOUT,
        namespace: str | None = None,
    ) -> podexec.ExecResult:
        """Run ``command`` in ``container`` of Pod ``pod`` (in the custom resource's namespace unless given) through
        the ``pods/exec`` subresource: stdout, stderr and the exit code (non-zero is a result, not an error).

        Raises ``okt.RemoteTimeout`` after ``timeout`` seconds, ``okt.RemoteError`` when the command cannot start,
        an ``okt.ApiError`` when the Pod or container does not exist; see :mod:`okt.kube.podexec`.
        """
        where = namespace or self.cr.namespace or self.client.default_namespace
        return podexec.run(self.client, where, pod, container, command, timeout=timeout)

    def http(
        self,
        target: str,
        path: str,
        *,
        method: str = "GET",
        json: Any = None,
        timeout: float = operand_http.DEFAULT_TIMEOUT,
        port: int | str | None = None,
        scheme: Literal["http", "https"] = "http",
        route: operand_http.Route = "proxy",
        verify: bool | str = True,
        server_name: str | None = None,
        namespace: str | None = None,
    ) -> operand_http.HttpResponse:
        """Call the operand: ``target`` is ``"service/NAME"`` (or a bare name) or ``"pod/NAME"``, by default through
        the API server's proxy. A non-2xx answer raises ``okt.HttpError``, no answer ``okt.RemoteTimeout`` or
        ``okt.RemoteError``, an API server not reached ``okt.Unavailable``, a ``NAME`` or ``namespace`` that is no
        object's or namespace's name ``okt.InvalidSpec`` (before any request); see :mod:`okt.kube.operand_http` for
        the routes (``verify`` and ``server_name``: how an ``https`` operand's certificate is checked on the direct
        route)."""
        where = operand_http.Target.parse(target, namespace or self.cr.namespace or self.client.default_namespace)
        return operand_http.call(
            self.client,
            where,
            path,
            method=method,
            json=json,
            timeout=timeout,
            port=port,
            scheme=scheme,
            route=route,
            verify=verify,
            server_name=server_name,
        )


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _subject(about: object) -> objects.CustomResource:
    """The object ``about`` names, as an Event's ``involvedObject`` needs it: refused without an apiVersion, a kind,
    a name or a uid (an Event about nothing the API server stores is one ``kubectl describe`` never shows)."""
    if isinstance(about, resource.Resource):
        if about.live is None:
            raise ValueError(
                f"ctx.event(about={about.describe()}): not read nor written yet in this reconcile (its live object is "
                "None): record the Event once the Updater wrote it (after super().enter_in_state) or later"
            )
        subject = objects.CustomResource(about.live)
    elif isinstance(about, objects.CustomResource):
        subject = about
    elif isinstance(about, Mapping):
        subject = objects.CustomResource(about)
    else:
        raise TypeError(
            f"ctx.event(about=...) takes an okt.Resource, an object as a mapping or an okt.CustomResource, "
            f"not {type(about).__name__}"
        )
    lacks = [
        field
        for field, value in (
            ("apiVersion", subject.api_version),
            ("kind", subject.kind),
            ("metadata.name", subject.name),
            ("metadata.uid", subject.uid),
        )
        if not value
    ]
    if lacks:
        named = f"{subject.kind or 'object'} {subject.name}".rstrip()
        raise ValueError(
            f"ctx.event(about={named}): no {', no '.join(lacks)}; an Event is about an object the API server "
            "stores: one read or written (a resource's live object), not a desired body"
        )
    return subject
