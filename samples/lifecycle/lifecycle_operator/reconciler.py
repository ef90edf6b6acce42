"""The WebApp reconciler: the Stepper runs each reconcile, the lifecycle machine decides what the WebApp is doing.

Why this exists: it shows ``okt.Lifecycle`` used the intended way. The lifecycle moves on entering ObjectsGetter —
before the children are registered — so the phase just entered decides which children exist in the same reconcile,
and a move is written at once, before the Updater makes the children follow it:

* Pending — nothing (a new WebApp leaves it in its first reconcile);
* Provisioning — the Job ``<name>-setup``; Ready=False (``Provisioning``);
* Running — the Deployment ``<name>`` at the installed version; Ready=True once okt's usual checks pass;
* Upgrading — the Deployment, still at the installed version, and the Job ``<name>-upgrade-<version>`` of the
  version the upgrade began for (``status.targetVersion``: a later ``spec.version`` waits for it to end);
  Ready=False (``UpgradeRequested``);
* Failed — the Deployment if a version is installed, and the Job that failed (kept for its logs, never created
  again once deleted); Ready=False (``SetupFailed`` or ``UpgradeFailed``).

Children no longer registered are pruned by okt (a finished Job goes when its phase ends). Outside Running the
SuccessManager reports the phase instead of okt's "every child is in its desired state": Ready is False with the
reason of the transition that led there (the lifecycle's ``ready={Phase.Running}``, no code here), Progressing is
True on the way, Degraded is True in Failed.

The phase is persisted in the ``okt.io/phase`` annotation (``persistence = ANNOTATIONS``), which ``kubectl get`` shows
as a column. okt writes a move's annotation first and the status once it landed, so a refused move writes nothing;
an Upgrading WebApp whose status holds no target (its status refused after the annotation moved) has it recorded
before its Job exists. A value that names no phase is refused: the reconcile ends in the ErrorManager with
Ready=False, reason ``UnknownPhase`` and a message that says what is accepted.

A ``spec.version`` whose upgrade Job would need a name longer than Kubernetes accepts is refused in the CRChecker
(Ready=False, reason ``InvalidSpec``), before the lifecycle moves: the CRD bounds the version and the WebApp's name
apart, not together, and an upgrade begun for such a version would wait for a Job that can never be created — with
every later version waiting behind it. As any refused spec, it holds the whole reconcile (an upgrade under way
included) until the version is changed.
"""

from __future__ import annotations

import okt
from okt.lifecycle import Move

from . import api, phases
from .phases import LIFECYCLE, Phase
from .resources import DeploymentWebApp, JobWebApp, job_version, upgrade_job_name

State = okt.State
TARGET = phases.TARGET_VERSION

JOB_NAME_MAX_LENGTH = 63
"""The longest Job name Kubernetes accepts: the name labels the Job's pods (``job-name``), and a label value is 63
characters at most."""


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
    lifecycle = LIFECYCLE  # what `okt graph samples/lifecycle/main.py` draws beside the Stepper

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is State.ObjectsGetter:
            progress = LIFECYCLE.advance(ctx)
            for move in progress.moves:
                remember(ctx, move)
            untargeted = LIFECYCLE.current(ctx) is Phase.Upgrading and phases.status_value(ctx, TARGET) is None
            if untargeted:
                # An upgrade whose target the status does not hold (the move's status write failed after the phase
                # annotation landed, or an operator version that did not record it): recorded before its Job exists,
                # or a later spec.version would take the upgrade over and prune that Job half-run.
                ctx.status_fields[TARGET] = str(ctx.spec.version)
            if progress.moved or untargeted:
                # Written before the children follow the new phase: okt writes the phase annotation first and the
                # status once it landed, and either refusal is an error that ends the reconcile in the ErrorManager
                # before the Updater touches anything. A move lost after its Job was pruned would be made again
                # from a phase whose Job is gone, and run it twice.
                ctx.flush_status()
        super().enter_in_state(state, ctx)

    def check(self, ctx: okt.Context) -> None:
        """Refuse a ``spec.version`` whose upgrade Job could not be named (``okt.InvalidSpec``); the installed version,
        and a WebApp not installed yet (its setup Job's name holds no version), need no upgrade."""
        installed = phases.installed_version(ctx)
        version = str(ctx.spec.version)
        if installed is None or version == installed:
            return
        job = upgrade_job_name(ctx.cr.name, version)
        if len(job) <= JOB_NAME_MAX_LENGTH:
            return
        room = JOB_NAME_MAX_LENGTH - len(upgrade_job_name(ctx.cr.name, ""))
        fix = (
            f"use a version of at most {room} characters"
            if room > 0
            else "no version fits beside this WebApp's name: recreate it under a shorter name"
        )
        raise okt.InvalidSpec(
            f"spec.version {version!r} would name the upgrade Job {job!r}, {len(job)} characters long, and Kubernetes "
            f"accepts {JOB_NAME_MAX_LENGTH} at most: {fix} (or go back to the installed version {installed})",
            field="spec.version",
        )

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
            children.append(JobWebApp.upgrade(ctx.cr, phases.target_version(ctx)))
        elif phase is Phase.Failed:
            failed = phases.failed_version(ctx)
            if failed is not None:
                # Kept for inspection (its Pods' logs) while it exists; pruned once the WebApp leaves Failed. Never
                # created again once someone deleted it: it would run again and change the application behind Failed.
                job = (JobWebApp.upgrade if installed is not None else JobWebApp.setup)(ctx.cr, failed)
                if phases.live_job(ctx, job.name) is not None:
                    children.append(job)
        return children

    # -- what the conditions say outside Running: the phase, explained by the lifecycle condition --------------
    # (Ready is the lifecycle's: ``ready={Phase.Running}`` holds it False with that condition outside Running.)

    def progressing(self, ctx: okt.Context) -> tuple[bool, str, str] | bool:
        phase = LIFECYCLE.current(ctx)
        if phase is Phase.Running:
            return super().progressing(ctx)
        return not LIFECYCLE.is_failed(phase), *explained(ctx)

    def degraded(self, ctx: okt.Context) -> tuple[bool, str, str] | bool:
        phase = LIFECYCLE.current(ctx)
        if not LIFECYCLE.is_failed(phase):
            return super().degraded(ctx)
        return True, *explained(ctx)

    def available(self, ctx: okt.Context) -> tuple[bool, str, str] | bool | None:
        phase = LIFECYCLE.current(ctx)
        available = super().available(ctx)
        if phase is Phase.Running or available:
            return available
        return False, "NotAvailable", f"phase {phase}: the application is not serving"


def explained(ctx: okt.Context) -> tuple[str, str]:
    """The reason and message of the lifecycle condition: why the WebApp is in its phase."""
    condition = ctx.conditions[LIFECYCLE.condition_type]
    return condition.reason, condition.message


def remember(ctx: okt.Context, move: Move[Phase]) -> None:
    """Record in the status what entering a phase established: the installed version, the one that failed, or the
    one an upgrade installs."""
    if move.source is Phase.Provisioning:
        # The setup Job says which version it installed (the spec may have changed while it ran).
        version = job_version(phases.setup_job(ctx)) or ctx.spec.version
    elif move.reason == phases.UPGRADE_CANCELLED:
        version = phases.installed_version(ctx) or ctx.spec.version
    elif move.source is Phase.Upgrading:
        # What the upgrade's Job installed or failed to: the spec may ask for another version since it began.
        version = phases.target_version(ctx)
    else:
        version = ctx.spec.version
    if move.dest is Phase.Running:
        ctx.status_fields[phases.INSTALLED_VERSION] = version
        ctx.status_fields[phases.FAILED_VERSION] = None
    elif move.dest is Phase.Failed:
        ctx.status_fields[phases.FAILED_VERSION] = version
    if move.dest is Phase.Upgrading:
        ctx.status_fields[phases.TARGET_VERSION] = ctx.spec.version
    elif move.source is Phase.Upgrading:
        ctx.status_fields[phases.TARGET_VERSION] = None
