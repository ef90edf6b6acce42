"""The Memcached reconciler: three owned children, a semantic check, status, and a finalizer with real cleanup.

Why this exists: it is okt's canonical operator — the one the README, the demo, the end-to-end tests and the
benchmarks run. It shows the Stepper used the way OKT intended: the built-in work of every state does almost
everything, and the author adds behaviour on entering a state.

What one reconcile does (``>CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End`` when all is well):

==============  =======================================================================================
CRChecker       add the finalizer; :func:`.policy.check` — a semantically bad spec ends in ErrorManager
                with ``Ready=False``, reason ``InvalidSpec``
ObjectsGetter   register one child of each owned class: ``<name>-config`` (ConfigMap), ``<name>`` (Service),
                ``<name>`` (Deployment) — in creation order, settings first (the pods read them)
Mutator         derive replicas, image and settings from the spec (the resources' ``mutate_with_cr``)
Updater         create or update the children that differ; then record the Memcached in the namespace's
                inventory (only when the entry is missing or different)
SuccessManager  ``status.availableReplicas`` from the Deployment, then okt's conditions (Ready, Available,
                Progressing, Degraded) and ``observedGeneration``
CRFinalizer     (deletion) remove the inventory entry; okt removes the finalizer only if that succeeded, and
                the garbage collector deletes the children (they carry a controller ownerReference)
==============  =======================================================================================

The finalizer is configurable because it costs two API writes per object (add, remove) and a cleanup read: the
benchmarks compare both. ``MEMCACHED_FINALIZER=off`` (or ``false``, ``no``, ``0``) makes :func:`reconciler_class`
return :class:`MemcachedReconcilerWithoutFinalizer`, which keeps no inventory — an inventory nobody cleans on
deletion would list Memcacheds that no longer exist.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import okt

from . import api, inventory, policy
from .resources import ConfigMapMemcached, DeploymentMemcached, ServiceMemcached

State = okt.State
Operation = okt.Operation

FINALIZER = f"{api.GROUP}/inventory"
"""The finalizer that keeps a Memcached until its inventory entry is removed."""

FINALIZER_ENV = "MEMCACHED_FINALIZER"
"""Environment variable: ``off``/``false``/``no``/``0``/``disabled`` runs the operator without its finalizer (and
inventory); ``on``/``true``/``yes``/``1``/``enabled`` or empty (the default) with it, in any case; any other value is
refused."""

APPLY_STRATEGY_ENV = "MEMCACHED_APPLY_STRATEGY"
"""Environment variable: ``merge`` writes the children with merge patches instead of server-side apply."""

_OFF = frozenset({"off", "false", "no", "0", "disabled"})
_ON = frozenset({"on", "true", "yes", "1", "enabled", ""})
_CONFLICT_DELAY = 0.2


def finalizer_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``MEMCACHED_FINALIZER`` (in ``environ``, default ``os.environ``) leaves the finalizer on.

    Raises:
        ValueError: the variable says neither on nor off (``disable``, ``of``): read as on, a typo meant to turn the
            finalizer off would silently keep it, and the inventory, on.
    """
    value = (os.environ if environ is None else environ).get(FINALIZER_ENV, "on")
    switch = value.strip().lower()
    if switch not in _ON | _OFF:
        raise ValueError(f"{FINALIZER_ENV}={value!r}: expected on (or true, yes, 1) or off (or false, no, 0)")
    return switch not in _OFF


class MemcachedReconciler(okt.Reconciler):
    """Reconciles ``Memcached`` (``cache.example.com/v1alpha1``) into a ConfigMap, a Service and a Deployment.

    Parameters (``params``, override in a subclass): ``max_sizes`` maps an image repository (full, or its last path
    element) to the largest ``spec.size`` allowed for it; see :mod:`.policy`. ``progress_deadline_seconds`` (unset:
    Kubernetes' 600) is the Deployment's ``progressDeadlineSeconds``: a rollout without progress for that long (an
    image that cannot start) turns the Memcached ``Degraded=True``, reason ``ProgressDeadlineExceeded``.
    """

    api_version = api.API_VERSION
    kind = api.KIND
    plural = api.PLURAL
    spec_model = api.MemcachedSpec
    status_model = api.MemcachedStatus
    owns = (ConfigMapMemcached, ServiceMemcached, DeploymentMemcached)
    finalizer: ClassVar[str | None] = FINALIZER
    params: ClassVar[Mapping[str, Any]] = {"max_sizes": policy.DEFAULT_MAX_SIZES}
    printer_columns: ClassVar[Sequence[Mapping[str, Any]]] = (
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "Desired replicas."},
        {
            "name": "Available",
            "type": "integer",
            "jsonPath": ".status.availableReplicas",
            "description": "Replicas available to clients.",
        },
        {"name": "Image", "type": "string", "jsonPath": ".spec.image", "priority": 1},
    )

    @property
    def keeps_inventory(self) -> bool:
        """The inventory is kept only by a reconciler whose finalizer can clean it on deletion."""
        return self.finalizer is not None

    # -- the Stepper's hook --------------------------------------------------------------------------------------

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        """The built-in work of every state, plus the status field before SuccessManager and the inventory
        after a successful Updater."""
        if state is State.SuccessManager:
            ctx.status_fields["availableReplicas"] = self.available_replicas(ctx)
        super().enter_in_state(state, ctx)
        if state is State.Updater and self.keeps_inventory and not ctx.results.has_error:
            self.record_in_inventory(ctx)

    # -- okt.Reconciler hooks ------------------------------------------------------------------------------------

    def check(self, ctx: okt.Context) -> None:
        """Refuse semantically bad specs (floating image, size above the image's maximum): ``okt.InvalidSpec``."""
        policy.check(api.spec_of(ctx.spec), ctx.params.get("max_sizes", policy.DEFAULT_MAX_SIZES))

    def cleanup(self, ctx: okt.Context) -> None:
        """Remove the Memcached from its namespace's inventory (an API error keeps the finalizer: retried)."""
        ctx.results.add(inventory.forget(ctx), inventory.describe(ctx.cr.namespace))

    # -- helpers -------------------------------------------------------------------------------------------------

    def available_replicas(self, ctx: okt.Context) -> int:
        """The Deployment's available replicas, as last read (0 before the Deployment exists)."""
        for res in ctx.registry:
            if isinstance(res, DeploymentMemcached):
                return res.readiness().available
        return 0

    def record_in_inventory(self, ctx: okt.Context) -> None:
        """Record the Memcached in its namespace's inventory; failures are results entries (retried)."""
        what = inventory.describe(ctx.cr.namespace)
        try:
            operation = inventory.record(ctx)
        except okt.Invalid as exc:
            if inventory.lost_the_fence(exc):  # lost the inventory to other writers ATTEMPTS times in a row
                ctx.results.add(Operation.CRUD_ERROR, what, exc, delay=_CONFLICT_DELAY)
            else:  # refused, and refused again however soon: said as what it is, retried with backoff
                ctx.results.add(Operation.CRUD_ERROR, what, inventory.refusal(exc, ctx.cr.namespace))
        except okt.Conflict as exc:  # created by other writers ATTEMPTS times in a row
            ctx.results.add(Operation.CRUD_ERROR, what, exc, delay=_CONFLICT_DELAY)
        except okt.OktError as exc:
            ctx.results.add(Operation.CRUD_ERROR, what, exc)
        else:
            ctx.results.add(operation, what)


class MemcachedReconcilerWithoutFinalizer(MemcachedReconciler):
    """The same operator without its finalizer (``MEMCACHED_FINALIZER=off``): no inventory, no deletion hook.

    Deletion is then left to Kubernetes alone: the children are garbage-collected through their ownerReferences.
    An object that still carries :data:`FINALIZER` — created while the operator ran with it — is cleaned up and
    released as the finalizer-enabled operator would have done (okt's ``legacy_finalizers``), so switching the
    finalizer off never leaves an object stuck in deletion.
    """

    finalizer = None
    legacy_finalizers = (FINALIZER,)


def reconciler_class(finalizer: bool | None = None, apply_strategy: str | None = None) -> type[MemcachedReconciler]:
    """The reconciler to run: with the finalizer (default), or without it when ``finalizer`` is False — or, when
    ``finalizer`` is None, when ``MEMCACHED_FINALIZER`` says ``off``. ``apply_strategy`` (default: the variable
    ``MEMCACHED_APPLY_STRATEGY``, else okt's default, server-side apply) is how the children are written; the
    benchmarks compare ``apply`` and ``merge``."""
    enabled = finalizer_enabled() if finalizer is None else finalizer
    base = MemcachedReconciler if enabled else MemcachedReconcilerWithoutFinalizer
    strategy = apply_strategy or os.environ.get(APPLY_STRATEGY_ENV, "").strip().lower() or base.apply_strategy
    if strategy == base.apply_strategy:
        return base
    return type(base.__name__, (base,), {"apply_strategy": strategy, "__module__": base.__module__})
