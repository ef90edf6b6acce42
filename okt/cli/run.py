"""`okt run` — run an operator's reconcilers against a cluster (locally with a kubeconfig, or in-cluster)."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Sequence
from typing import Any

import click
import structlog

from okt import errors, hooks
from okt.cli import permissions
from okt.kube import client as kube_client
from okt.reconciler import loader
from okt.runtime import backoff

SERVICE_ACCOUNT_NAMESPACE = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")

STARTUP_BACKOFF = backoff.Backoff(base=0.5, factor=2.0, cap=4.0)
STARTUP_PATIENCE = 15.0
"""Seconds of 5xx/429 answers to the first request before ``okt run`` gives up (a control plane being restarted)."""
UNREACHABLE_ATTEMPTS = 3
"""Tries of the first request when no answer comes at all (refused or reset): a wrong address fails in seconds."""


def _server_version(client: kube_client.Client) -> str:
    """The API server's version, asked again with backoff while the failure is transient.

    One 503 or one reset connection at start-up must not stop an operator that would run fine a second later; a
    server that keeps failing, or that nobody answers for, is still reported as one line.
    """
    started = time.monotonic()
    failures = unreachable = 0
    while True:
        try:
            return client.server_version()
        except (errors.ServerError, errors.TooManyRequests, errors.Unavailable) as exc:
            failures += 1
            unreachable += isinstance(exc, errors.Unavailable)
            delay = STARTUP_BACKOFF.delay(failures)
            if unreachable >= UNREACHABLE_ATTEMPTS or time.monotonic() - started + delay > STARTUP_PATIENCE:
                raise errors.ConfigurationError(f"cannot reach the Kubernetes API server: {exc}") from exc
            structlog.get_logger("okt.run").warning(
                "the API server failed the first request, retrying", error=str(exc), retry_in=round(delay, 2)
            )
            time.sleep(delay)
        except errors.ApiError as exc:
            raise errors.ConfigurationError(f"cannot reach the Kubernetes API server: {exc}") from exc


def _default_lease_namespace(namespaces: tuple[str, ...]) -> str:
    """In a pod: its own namespace ($POD_NAMESPACE, else the service account's); else the first watched one."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    if SERVICE_ACCOUNT_NAMESPACE.is_file():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return namespaces[0] if namespaces else "default"


def _check_permissions(
    client: kube_client.Client,
    reconcilers: Sequence[type[Any]],
    namespaces: tuple[str, ...],
    leader_elect: bool,
    lease_namespace: str,
) -> None:
    """Print one line per permission the API server refuses, then stop (see :mod:`okt.cli.permissions`)."""
    refused = permissions.missing(
        client,
        reconcilers,
        namespaces,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        warn=lambda line: click.echo(f"okt: {line}", err=True),
    )
    for permission in refused:
        click.echo(f"okt: {permission}", err=True)
    if refused:
        raise click.ClickException(
            f"{len(refused)} permission(s) missing (above): grant them (okt gen rbac writes every rule the operator "
            "needs), or start anyway with --skip-permission-check"
        )


@click.command("run")
@click.argument("target", required=False)
@click.option("-m", "--module", "module", help="Import the operator as a module instead of a file.")
@click.option(
    "--reconciler",
    "reconciler_name",
    default=None,
    help="Run only this reconciler (class name or kind) of the file or module.",
)
@click.option("-n", "--namespace", "namespaces", multiple=True, help="Watch this namespace (repeatable).")
@click.option("-A", "--all-namespaces", is_flag=True, help="Watch every namespace (the default without -n).")
@click.option("-l", "--selector", help="Only reconcile primary objects matching this label selector.")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account).",
)
@click.option("--context", "kube_context", help="Kubeconfig context to use.")
@click.option(
    "--max-concurrent",
    type=click.IntRange(1, 256),
    default=4,
    show_default=True,
    help="Reconciles running at once, per controller.",
)
@click.option("--leader-elect", is_flag=True, help="Run only while holding a coordination.k8s.io Lease.")
@click.option(
    "--lease-namespace",
    default=None,
    help="Namespace of the Lease (default: the pod's own namespace, else the first watched one).",
)
@click.option(
    "--metrics-bind-address",
    default="127.0.0.1:8080",
    show_default=True,
    help='Address for /metrics, /healthz, /readyz ("0" disables).',
)
@click.option(
    "--log-format", type=click.Choice(["console", "json"]), default=None, help="Console on a terminal, JSON otherwise."
)
@click.option(
    "--qps",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Client-side limit of API requests per second (default: none, as controller-runtime).",
)
@click.option(
    "--burst", type=click.IntRange(min=1), default=None, help="Requests allowed at once above --qps (default: 2 x qps)."
)
@click.option(
    "--skip-permission-check",
    is_flag=True,
    help="Start even if the API server refuses a permission okt gen rbac would grant (checked by default).",
)
@click.option("-v", "--verbose", count=True, help="More logs (-v: debug).")
def run_command(
    target: str | None,
    module: str | None,
    reconciler_name: str | None,
    namespaces: tuple[str, ...],
    all_namespaces: bool,
    selector: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
    max_concurrent: int,
    leader_elect: bool,
    lease_namespace: str | None,
    metrics_bind_address: str,
    log_format: str | None,
    qps: float | None,
    burst: int | None,
    skip_permission_check: bool,
    verbose: int,
) -> None:
    """Run the reconcilers defined in TARGET (a .py file) or in -m MODULE."""
    from okt.runtime import logs, manager

    if bool(target) == bool(module):
        raise click.UsageError("give exactly one of TARGET (a file) or -m MODULE")
    if all_namespaces and namespaces:
        raise click.UsageError("--all-namespaces and --namespace exclude each other")
    if burst is not None and qps is None:
        raise click.UsageError("--burst needs --qps")
    limit = kube_client.RateLimit(qps, burst or max(1, round(2 * qps))) if qps is not None else None
    logs.configure("json" if log_format == "json" else "console" if log_format else None, verbose)
    try:
        loaded = loader.load_module(module or target or "", as_module=bool(module))
        reconcilers = loader.reconcilers_of(loaded, module or target or "", only=reconciler_name)
        startups, cleanups = hooks.collect(loaded)
        client = kube_client.Client.from_kubeconfig(
            kubeconfig, context=kube_context, pool_size=max(16, max_concurrent * 4), rate_limit=limit
        )
        version = _server_version(client)
        click.echo(f"okt: {', '.join(r.__name__ for r in reconcilers)} on Kubernetes {version}", err=True)
        lease_namespace = lease_namespace or _default_lease_namespace(namespaces)
        if not skip_permission_check:
            _check_permissions(client, reconcilers, namespaces, leader_elect, lease_namespace)
        mgr = manager.Manager(
            client,
            reconcilers,
            namespaces=list(namespaces) or None,
            label_selector=selector,
            max_concurrent=max_concurrent,
            leader_elect=leader_elect,
            lease_namespace=lease_namespace,
            metrics_bind=metrics_bind_address,
            on_startup=startups,
            on_cleanup=cleanups,
        )
        mgr.run()
        if mgr.lost_leadership:
            raise click.ClickException("lost the leader lease; exiting so the operator restarts cleanly")
    except errors.OktError as exc:
        raise click.ClickException(str(exc)) from exc
