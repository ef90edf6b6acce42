"""The WebApp reconciler: the Stepper runs each reconcile, the lifecycle machine decides what the WebApp is doing.

Why this exists: it shows ``okt.Lifecycle`` used the intended way. The lifecycle moves on entering ObjectsGetter —
before the children are registered — so the phase just entered decides which children exist in the same reconcile:

* Pending — nothing (a new WebApp leaves it in its first reconcile);
* Provisioning — the Job ``<name>-setup``; Ready=False (``Provisioning``);
* Running — the Deployment ``<name>`` at the installed version; Ready=True once okt's usual checks pass;
* Upgrading — the Deployment, still at the installed version, and the Job ``<name>-upgrade-<version>``;
  Ready=False (``UpgradeRequested``);
* Failed — the Deployment if a version is installed, and the Job that failed (kept for its logs); Ready=False
  (``SetupFailed`` or ``UpgradeFailed``).

Children no longer registered are pruned by okt (a finished Job goes when its phase ends). Outside Running the
SuccessManager reports the phase instead of okt's "every child is in its desired state": Ready is False with the
reason of the transition that led there, Progressing is True on the way, Degraded is True in Failed.

The phase is persisted in the ``okt.io/phase`` annotation (``persistence = ANNOTATIONS``), which ``kubectl get`` shows
as a column. A value that names no phase is refused: the reconcile ends in the ErrorManager with Ready=False, reason
``UnknownPhase`` and a message that says what is accepted.
"""

from __future__ import annotations

import okt
from okt.lifecycle import Move
from okt.status import conditions

from . import api, phases
from .phases import LIFECYCLE, Phase
from .resources import DeploymentWebApp, JobWebApp, job_version

State = okt.State


class WebAppReconciler(okt.Reconciler):
    """Reconciles ``WebApp`` objects (lifecycle.example.com/v1alpha1)."""

    api_version = api.API_VERSION
    kind = api.KIND
    plural = api.PLURAL
    spec_model = api.WebAppSpec
    status_model = api.WebAppStatus
    owns = (JobWebApp, DeploymentWebApp)
    persistence = okt.Persistence.ANNOTATIONS
    printer_columns = api.PRINTER_COLUMNS

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is State.ObjectsGetter:
            progress = LIFECYCLE.advance(ctx)
            for move in progress.moves:
                remember(ctx, move)
        super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        """The children of the current phase (see the module docstring)."""
        phase = LIFECYCLE.current(ctx)
        installed = phases.installed_version(ctx)
        children: list[okt.Resource] = []
        if installed is not None and phase in (Phase.Running, Phase.Upgrading, Phase.Failed):
            children.append(DeploymentWebApp.at(ctx.cr, installed))
        if phase is Phase.Provisioning:
            children.append(JobWebApp.setup(ctx.cr, ctx.spec.version))
        elif phase is Phase.Upgrading:
            children.append(JobWebApp.upgrade(ctx.cr, ctx.spec.version))
        elif phase is Phase.Failed:
            failed = phases.failed_version(ctx)
            if failed is not None:
                # Kept for inspection (its Pods' logs); pruned once the WebApp leaves Failed.
                job = JobWebApp.upgrade if installed is not None else JobWebApp.setup
                children.append(job(ctx.cr, failed))
        return children

    def success_manager(self, ctx: okt.Context) -> None:
        phase = LIFECYCLE.current(ctx)
        if phase is Phase.Running:
            super().success_manager(ctx)
        else:
            self.report_phase(ctx, phase)

    def report_phase(self, ctx: okt.Context, phase: Phase) -> None:
        """Ready=False outside Running, explained by the lifecycle condition; then write the status."""
        lifecycle_condition = ctx.conditions[LIFECYCLE.condition_type]
        reason, message = lifecycle_condition.reason, lifecycle_condition.message
        generation = ctx.cr.generation
        failed = LIFECYCLE.is_failed(phase)
        available = self.available(ctx)
        c = ctx.conditions
        c.set(conditions.READY, False, reason, message, generation)
        c.set(conditions.RECONCILIATION_SUCCESS, True, "Reconciled", f"generation {generation} reconciled", generation)
        c.set(conditions.PROGRESSING, not failed, reason, message, generation)
        c.set(conditions.DEGRADED, failed, reason if failed else "AsExpected", message, generation)
        c.set(
            conditions.AVAILABLE,
            bool(available),
            "ReplicasAvailable" if available else "NotAvailable",
            "all replicas are available" if available else f"phase {phase}: the application is not serving",
            generation,
        )
        ctx.bookkeeping.error_count = 0
        self.write_status(ctx)


def remember(ctx: okt.Context, move: Move[Phase]) -> None:
    """Record in the status what entering a phase established: the installed version, or the one that failed."""
    if move.source is Phase.Provisioning:
        # The setup Job says which version it installed (the spec may have changed while it ran).
        version = job_version(phases.setup_job(ctx)) or ctx.spec.version
    else:
        version = ctx.spec.version
    if move.dest is Phase.Running:
        ctx.status[phases.INSTALLED_VERSION] = version
        ctx.status[phases.FAILED_VERSION] = None
    elif move.dest is Phase.Failed:
        ctx.status[phases.FAILED_VERSION] = version
