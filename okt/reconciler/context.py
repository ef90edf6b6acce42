"""The context of one reconcile: everything a hook needs, and nothing shared with another reconcile.

Why this exists: OKT hangs the results, the registry and the give-up flag on the reconciler (and had a global give-up
singleton); two reconciles in parallel could see each other's state. okt builds one ``Context`` per reconcile and
hands it to every hook: the custom resource, its typed spec, the results stack, the registry, a working copy of the
conditions, the bookkeeping, a bound logger, the API client and the reader (the informer store under ``okt run``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import structlog

from okt import errors
from okt.engines import results as results_mod
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.resources import apply, registry, resource
from okt.status import bookkeeping, conditions, events, writer

if TYPE_CHECKING:
    from okt.reconciler import reconciler as reconciler_mod

R = TypeVar("R", bound=resource.Resource)


class Reader(Protocol):
    """What a reconcile reads through: the informer cache under ``okt run``, the API in a plain call."""

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None: ...

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]: ...

    def owned(
        self, kind: kinds.Kind, namespace: str | None, owner_uid: str, labels: Mapping[str, str]
    ) -> builtins.list[dict[str, Any]]: ...

    def observe(self, obj: Mapping[str, Any]) -> None: ...


class LiveConditions(conditions.Conditions):
    """The conditions of the reconciled object, with :meth:`flush` to write them mid-reconcile."""

    flusher: Callable[[], bool] | None = None

    def flush(self) -> bool:
        """Write the status now (only if something changed); returns whether a request was sent."""
        return self.flusher() if self.flusher is not None else False


class Context:
    """Everything one reconcile knows. Built by :func:`okt.reconciler.core.reconcile`."""

    def __init__(
        self,
        *,
        reconciler: reconciler_mod.Reconciler,
        client: kube_client.Client,
        reader: Reader,
        kind: kinds.Kind,
        cr: objects.CustomResource,
        exists: bool,
        logger: structlog.typing.FilteringBoundLogger,
        recorder: events.EventRecorder | None,
    ) -> None:
        self.reconciler = reconciler
        self.client = client
        self.reader = reader
        self.kind = kind
        self.cr = cr
        self.exists = exists
        self.log = logger
        self.recorder = recorder
        self.results = results_mod.Results()
        self.registry = registry.Registry()
        self.labels = apply.Labels(reconciler.prefix)
        self.writes = apply.WriteOptions(apply.Strategy(reconciler.apply_strategy), reconciler.field_manager)
        stored: Mapping[str, Any]
        if reconciler.status_target() is writer.Target.ANNOTATIONS:
            stored = {"conditions": writer.conditions_from_annotations(cr.annotations, reconciler.prefix)}
        else:
            stored = cr.status if reconciler.status_target() is writer.Target.STATUS else {}
        self.conditions = cast(LiveConditions, LiveConditions.from_status(stored))
        self.bookkeeping = bookkeeping.Bookkeeping(cr.raw, reconciler.bookkeeping_persistence(), reconciler.prefix)
        self.status: dict[str, Any] = {}
        """Extra status fields to write with the conditions (merged into ``status``)."""
        self.decisions: dict[kinds.ObjectKey, apply.Decision] = {}
        self.params: Mapping[str, Any] = reconciler.params

    # -- conveniences for hooks ----------------------------------------------------------------------------------

    @property
    def spec(self) -> Any:
        return self.cr.spec

    @property
    def finalizing(self) -> bool:
        return self.exists and self.cr.deleting

    def register(self, res: R) -> R:
        """Register a child resource.

        Raises:
            okt.RegistrationError: the key is registered twice, or the reconciler does not own the child's kind —
                okt watches and generates RBAC only for the kinds in ``owns``, so such a child would never be
                seen changing nor be allowed.
        """
        owns = self.reconciler.owns
        kind = (str(res.desired.get("apiVersion")), str(res.desired.get("kind")))
        if not isinstance(res, tuple(owns)) and kind not in {(c.api_version, c.kind) for c in owns}:
            raise errors.RegistrationError(
                f"{res.describe()} is a {kind[1]} ({kind[0]}), which {type(self.reconciler).__name__} does not own: "
                f"add its resource class {type(res).__name__} to the reconciler's owns"
            )
        self.registry.register(res)
        return res

    def resource(self, cls: type[R], **kwargs: Any) -> R:
        """Build a resource of ``cls`` for this CR with the reconciler's parameters, and register it."""
        kwargs.setdefault("params", self.params)
        return self.register(cls(self.cr, **kwargs))

    def event(self, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None and self.exists:
            self.recorder.record(self.cr, type_, reason, message)

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Feed an object our own write returned into the reader (and the CR view when it is the primary)."""
        self.reader.observe(obj)
        if kinds.key_of(obj) == self.cr.key:
            self.cr = self.cr.with_raw(obj)
