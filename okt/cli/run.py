"""`okt run` — run an operator's reconcilers against a cluster (locally with a kubeconfig, or in-cluster)."""

from __future__ import annotations

import dataclasses
import functools
import gc
import math
import os
import pathlib
import re
import shlex
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click
import structlog

from okt import errors, hooks
from okt.cli import permissions
from okt.codegen import crd, options, rbac
from okt.codegen import errors as codegen_errors
from okt.codegen import webhooks as codegen_webhooks
from okt.kube import client as kube_client
from okt.kube import kinds, selectors
from okt.reconciler import loader
from okt.reconciler import webhooks as webhooks_mod
from okt.runtime import backoff

if TYPE_CHECKING:
    from okt.reconciler import reconciler
    from okt.runtime import manager, probe_server, webhook_server

SERVICE_ACCOUNT_NAMESPACE = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")

STARTUP_BACKOFF = backoff.Backoff(base=0.5, factor=2.0, cap=4.0)
STARTUP_PATIENCE = 15.0
"""Seconds of 5xx/429 answers to the first request before ``okt run`` gives up (a control plane being restarted)."""
UNREACHABLE_ATTEMPTS = 3
"""Tries of the first request when no answer comes at all (refused or reset): a wrong address fails in seconds."""
STARTUP_RETRIED = "the API server answered the first request after failing it"
"""The event of the warning ``okt run`` logs when the API server answered its first request only when asked again."""
STARTUP_RETRYING = "the API server failed the first request, retrying"
"""The event of the debug line ``okt run`` logs at each failure of its first request it retries (``-v``)."""
WEBHOOK_PORT_HELD = (
    "another process holds it, another operator's webhook server perhaps: --webhook-port 0 serves them on a free "
    "port, --no-webhooks serves none"
)
"""What ``okt run`` says of a webhook port another process holds: every operator with a ``check`` or a ``spec_model``
serves on 9443 by default, so two run on one host collide there."""


def _failed_tls(exc: BaseException) -> bool:
    """Whether ``exc`` comes of TLS failing: a server certificate the CA does not verify, a CA that is no certificate.

    The transport's own exception is the cause of okt's (or, through requests, the reason of what it wrapped).
    """
    pending: list[object] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        pending += [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
    return False


def _server_version(client: kube_client.Client) -> str:
    """The API server's version, asked again with backoff while the failure is transient.

    One 503 or one reset connection at start-up must not stop an operator that would run fine a second later; a
    server that keeps failing, or that nobody answers for, is still reported as one line, which says how often it was
    tried. The failures are warned of only once the server answers (one warning line, how many and what they were):
    warned of as they came, a wrong address or proxy, failed in seconds, printed its own words twice above that line.
    Each is a debug line as it comes, for whoever asks (``-v``) what the start waits for.
    """
    started = time.monotonic()
    failures = unreachable = 0
    failed: list[str] = []
    while True:
        try:
            version = client.server_version()
        except (errors.ServerError, errors.TooManyRequests, errors.Unavailable) as exc:
            if _failed_tls(exc):  # the same certificate fails the same way at every try
                raise errors.ConfigurationError(
                    f"cannot reach the Kubernetes API server: {exc}: TLS failed: check the certificate authority the "
                    "kubeconfig (or the in-cluster ca.crt) gives for this server"
                ) from exc
            failures += 1
            unreachable += isinstance(exc, errors.Unavailable)
            delay = STARTUP_BACKOFF.delay(failures)
            if unreachable >= UNREACHABLE_ATTEMPTS or time.monotonic() - started + delay > STARTUP_PATIENCE:
                tried = f"tried {failures} times in {time.monotonic() - started:.1f} s"
                raise errors.ConfigurationError(f"cannot reach the Kubernetes API server: {exc} ({tried})") from exc
            failed.append(str(exc))
            # Up to STARTUP_PATIENCE seconds of retries: said as they come at debug level, the warning waits for the
            # answer.
            structlog.get_logger("okt.run").debug(
                STARTUP_RETRYING, error=str(exc), attempt=failures, retry_in=round(delay, 2)
            )
            time.sleep(delay)
        except errors.Unauthorized as exc:  # it answered: what failed is who okt says it is
            raise errors.ConfigurationError(
                f"the Kubernetes API server refused okt's credentials: {exc}: check the token or client certificate "
                "the kubeconfig (or the in-cluster service account) gives, which may have expired"
            ) from exc
        except errors.ApiError as exc:
            raise errors.ConfigurationError(f"cannot reach the Kubernetes API server: {exc}") from exc
        else:
            if failed:
                structlog.get_logger("okt.run").warning(
                    STARTUP_RETRIED,
                    failures=len(failed),
                    errors=list(dict.fromkeys(failed)),  # each once, in the order they came
                    seconds=round(time.monotonic() - started, 2),
                )
            return version


def _discovery(connect: Callable[[], kube_client.Client]) -> Callable[[str], kinds.Kind]:
    """``--reconciler``'s lookup of a kind as kubectl names it, through the client ``connect`` makes, once the API
    server answered (:func:`_server_version`).

    Why: a kubeconfig that does not load or a server that does not answer is the start's failure, said as at any
    start; reported by the loader, it read as a name the operator lacks ("has no reconciler named 'xs': cannot load
    kubeconfig ..."), or as one refused discovery request, never retried.
    """

    def resolve(name: str) -> kinds.Kind:
        try:
            _server_version(connect())
        except errors.OktError as exc:
            raise click.ClickException(str(exc)) from exc
        return connect().resolve_name(name)

    return resolve


def _refuse_unserved_kinds(client: kube_client.Client, reconcilers: Sequence[type[reconciler.Reconciler]]) -> None:
    """Refuse, before the operator starts serving, a kind of ``reconcilers`` the API server does not serve (a CRD not
    installed, or not of that version): the manager would refuse it too, but once its probes were served, and its
    start and its stop were logged around the one line that says what to do.

    A kind whose CRD the API server is still loading (it has just started) is left to the manager, which waits for it
    up to a minute while ``/healthz`` answers; so is every kind of an operator with start-up hooks, which may install
    the CRDs themselves.

    Raises:
        okt.errors.ApiError: as :meth:`okt.kube.client.Client.require_served` (a 404 naming the kind).
    """
    from okt.reconciler import core

    loading = threading.Event()  # set by the first wait for a CRD being loaded, which ends the check at once
    client.require_served(
        (kind for cls in reconcilers for kind in core.every_kind(cls, client)),
        waiting=lambda _line: loading.set(),
        stopping=loading,
    )


def _with_remedy(exc: errors.OktError, reconcilers: Sequence[type[reconciler.Reconciler]], operator: str) -> str:
    """``exc`` as ``okt run`` says it: the primary kind of one of ``reconcilers`` served in no version (its CRD not
    installed) with how to install it from ``operator`` (the file or module run)."""
    unserved = exc.unserved if isinstance(exc, errors.NotFound) else None
    if unserved is None or kinds.is_builtin_group(unserved[0]):
        return str(exc)
    if not any((cls.api_version, cls.kind) == unserved for cls in reconcilers):
        return str(exc)  # a kind the operator only watches or owns: another's CRD
    return f"{exc}: install its CRD first: okt gen crd {shlex.quote(operator)} | kubectl apply -f -"


def _default_lease_namespace(namespaces: tuple[str, ...]) -> str:
    """In a pod: its own namespace ($POD_NAMESPACE, else the service account's); else the first watched one.

    Raises:
        click.UsageError: $POD_NAMESPACE is no namespace name. Why: it is the Lease's (and the webhook Service's)
            namespace when no option names one, and the elector asked the API server for a Lease there for ever,
            never leading, each refusal a log line.
    """
    if os.environ.get("POD_NAMESPACE"):
        try:
            return _namespace_name(os.environ["POD_NAMESPACE"])
        except click.BadParameter as exc:
            raise click.UsageError(
                f"$POD_NAMESPACE {exc.message}; set it to the pod's namespace (fieldRef metadata.namespace), "
                "or unset it"
            ) from None
    if SERVICE_ACCOUNT_NAMESPACE.is_file():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return namespaces[0] if namespaces else "default"


def _lease_name(value: str | None) -> str | None:
    """``--lease-name`` as the API server would store it, or one line saying why not (the elector would otherwise
    retry its refused create for ever, never leading)."""
    if value is not None and (len(value) > 253 or not crd.DNS_SUBDOMAIN.fullmatch(value)):
        raise click.BadParameter(
            f"{value!r} is not a Lease name: lowercase letters, digits, '-' and '.', starting and ending with a letter "
            "or digit, at most 253 characters"
        )
    return value


def _stuck_after(value: float) -> float | None:
    """A watchdog's seconds (:func:`_watchdog_option`) as the manager takes them: ``None`` for 0 (never), and one
    line for NaN, which every range check lets through and which would compare false with every stall (a watchdog of
    nothing)."""
    if math.isnan(value):
        raise click.BadParameter("a number of seconds >= 0 (0: never), got nan")
    return value or None


def _watchdog_option(name: str, default: float, stalled: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The option of one of the manager's ``/healthz`` watchdogs, ``name``: the seconds after which a piece of work
    still running (``stalled``: what has run "this long") fails the probe, 0 for never, as :func:`_stuck_after` reads
    them. Every watchdog is one shape, so each reads, checks and says its seconds alike."""
    return click.option(
        name,
        type=click.FloatRange(min=0),
        default=default,
        show_default=True,
        callback=lambda _ctx, _param, value: _stuck_after(value),
        metavar="SECONDS",
        help=f"/healthz fails once {stalled} this long (0: never).",
    )


def _grace_period(value: float) -> float:
    """``--grace-period``, a finite number of seconds: NaN passes every range check, and infinity would wait for ever
    for a daemon that ignores its stop."""
    if not math.isfinite(value):
        raise click.BadParameter(f"a finite number of seconds >= 0, got {value}")
    return value


def _qps(value: float | None) -> float | None:
    """``--qps``, a finite number of requests a second: NaN passes every range check, and neither it nor infinity
    makes a rate (their default burst, 2 x qps, was a traceback)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"a finite number of requests a second > 0, got {value}")
    return value


def _namespace_name(value: str) -> str:
    """A ``--namespace`` or ``--lease-namespace`` as the API server would take it, or one line saying why not.

    Why: the API server refuses every list, watch and Lease of a namespace it cannot name (``Team_A``), and the
    informers and the elector asked again for ever, the operator serving nothing.
    """
    if not crd.DNS_LABEL.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is not a namespace name: lowercase letters, digits and '-', starting and ending with a letter "
            "or digit, at most 63 characters"
        )
    return value


def _check_permissions(
    client: kube_client.Client,
    reconcilers: Sequence[type[Any]],
    namespaces: tuple[str, ...],
    leader_elect: bool,
    lease_namespace: str,
    lease_name: str,
    extra: Sequence[tuple[str | None, Sequence[dict[str, Any]]]] = (),
) -> None:
    """Print one line per permission the API server refuses, then stop (see :mod:`okt.cli.permissions`)."""
    refused = permissions.missing(
        client,
        reconcilers,
        namespaces,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        lease_name=lease_name,
        warn=lambda line: click.echo(f"okt: {line}", err=True),
        extra=extra,
    )
    for permission in refused:
        click.echo(f"okt: {permission}", err=True)
    if refused:
        raise click.ClickException(
            f"{len(refused)} permission(s) missing (above): grant them (okt gen rbac writes every rule the operator "
            "needs), or start anyway with --skip-permission-check"
        )


def _warn_unreviewable_metrics(client: kube_client.Client, metrics_bind_address: str, metrics_secure: bool) -> None:
    """One warning line when ``/metrics`` is served to reviewed bearer tokens only and the API server refuses the
    operator the reviews, naming the rules to grant.

    Why a warning: the operator works and its probes answer without them; only every scrape is answered ``503``,
    which nobody reads until a dashboard stays empty. A review the API server does not answer says nothing: the
    permission check said so before.
    """
    from okt.runtime import probe_server

    address = probe_server.parse_bind(metrics_bind_address)
    if address is None or not probe_server.reviews_tokens(address, secure=metrics_secure):
        return
    try:
        refused = permissions.refused(client, rbac.METRICS_AUTH_RULES)
    except errors.ApiError:
        return
    if refused:
        click.echo(
            f"okt: warning: /metrics on {metrics_bind_address} is served to bearer tokens the API server reviews, and "
            "this operator may not ask for the reviews: every scrape will be answered 503; grant, cluster-wide (a "
            "ClusterRole like <account>-metrics-auth, which okt gen rbac writes), "
            + " and ".join(p.rule() for p in refused),
            err=True,
        )


def _warn_missing_namespaces(client: kube_client.Client, namespaces: Sequence[str]) -> None:
    """One warning line per ``--namespace`` that does not exist.

    Why: a misspelt ``-n`` started an operator that served nothing, without a word. It is no error: a namespace may be
    created after its operator starts, and is served from then on. An identity that may not read namespaces (``okt
    gen rbac`` grants no such right) is told nothing, not knowing either way.
    """
    for namespace in namespaces:
        try:
            client.get(kinds.NAMESPACE, namespace)
        except errors.NotFound:
            click.echo(
                f"okt: warning: namespace {namespace!r} does not exist (yet): okt run serves its objects once it is "
                "created",
                err=True,
            )
        except errors.ApiError:
            continue


def _check_combinations(ctx: click.Context) -> None:
    """Refuse the options of ``okt run`` that exclude each other or need another (the webhook ones aside).

    Raises:
        click.UsageError: naming the options.
    """
    options = ctx.params
    if bool(options["target"]) == bool(options["module"]):
        raise click.UsageError("give exactly one of TARGET (a file) or -m MODULE")
    if options["all_namespaces"] and options["namespaces"]:
        raise click.UsageError("--all-namespaces and --namespace exclude each other")
    if options["burst"] is not None and options["qps"] is None:
        raise click.UsageError("--burst needs --qps")
    if not options["leader_elect"] and (options["lease_name"] or options["lease_namespace"]):
        option = "--lease-name" if options["lease_name"] else "--lease-namespace"
        raise click.UsageError(f"{option} needs --leader-elect (without it no Lease is taken)")


def _warn_shadowing(target: str | None, module: str | None) -> None:
    """Warn of an operator file or module named like a module of Python's standard library, which it hides."""
    shadowed = loader.shadowed_stdlib_module(module or target or "", as_module=bool(module))
    if shadowed:
        click.echo(
            f"okt: warning: {module or target} shadows Python's standard module {shadowed!r} wherever its folder is "
            "on sys.path (PYTHONPATH=/app in an image): rename it" + ("" if module else ", e.g. main.py"),
            err=True,
        )


def _refuse_unclean_stop(mgr: manager.Manager, grace_period: float) -> None:
    """Exit non-zero when the stop was not clean, so that a supervisor knows: the lease was lost, work still ran
    past the grace period (half-way through, maybe), or a clean-up hook raised (what it was to undo may not be).

    Raises:
        click.ClickException: saying which.
    """
    if mgr.lost_leadership:
        raise click.ClickException("lost the leader lease; exiting so the operator restarts cleanly")
    if mgr.left_running:
        raise click.ClickException(
            f"stopped with {'; '.join(mgr.left_running)} still running after the {grace_period:g} s grace period "
            "(--grace-period): they end with the process, wherever they were"
        )
    if mgr.failed_cleanups:
        raise click.ClickException("; ".join(mgr.failed_cleanups))


def _check_webhook_options(ctx: click.Context) -> None:
    """Refuse the webhook options that exclude each other, need another, or are no Secret's name; and any
    ``--webhook-*`` option given beside ``--no-webhooks``, which would be taken and unused without a word (no
    ``--webhook-ca-file`` written for whoever reads it next, no certificate Secret made).

    Raises:
        click.UsageError: naming the options.
    """
    options = ctx.params
    if options["webhook_cert_dir"] and options["webhook_secret"]:
        raise click.UsageError("--webhook-cert-dir and --webhook-secret exclude each other")
    if options["no_webhooks"]:
        for param in ctx.command.params:
            given = ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.COMMANDLINE
            if given and isinstance(param, click.Option) and param.opts[0].startswith("--webhook-"):
                raise click.UsageError(f"--no-webhooks and {param.opts[0]} exclude each other")
    if options["webhook_configuration"] and not options["webhook_service"]:
        raise click.UsageError("--webhook-configuration needs --webhook-service (the Service its webhooks call)")
    # One slash, two non-empty parts: "ns/a/b" would be asked of the API server as the Secret "b" of namespace "ns/a".
    secret = options["webhook_secret"]
    if secret and (secret.count("/") != 1 or not all(secret.partition("/")[::2])):
        raise click.UsageError(f"--webhook-secret is NAMESPACE/NAME, got {secret!r}")


def _refuse_unserved_webhook_options(
    ctx: click.Context, reconcilers: Sequence[type[reconciler.Reconciler]], operator: str
) -> None:
    """Refuse a ``--webhook-*`` option given for reconcilers that declare no webhook, before anything connects: the
    server would not start, and the option be taken and unused without a word — a Service's certificate Secret not
    made, a caBundle or ``--webhook-ca-file`` not written, a port not listened on — where whoever gave it expects the
    webhooks served (a ``check`` or ``spec_model`` forgotten, or ``--reconciler`` chose another reconciler).

    ``--webhook-port 0`` is left alone: it asks for no port, only a free one if any webhook is served, what a harness
    passes to every operator it starts (:class:`okt.testing.OperatorProcess`).

    Raises:
        click.UsageError: naming the first such option and ``operator`` (the file or module, or the ``--reconciler``
            of it).
    """
    if webhooks_mod.all_endpoints(reconcilers):
        return
    for param in ctx.command.params:
        given = ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.COMMANDLINE
        if not (given and isinstance(param, click.Option) and param.opts[0].startswith("--webhook-")):
            continue
        if param.name == "webhook_port" and ctx.params["webhook_port"] == 0:
            continue
        raise click.UsageError(
            f"{param.opts[0]}: {operator} declares no webhook (no reconciler with a check, a default, a spec_model or "
            "converters)"
        )


def _check_spelling(metrics_bind_address: str, selector: str | None) -> None:
    """Refuse, before the operator is loaded and the API server asked, a ``--metrics-bind-address`` that is no
    address (the manager would only raise it once everything else had started) and a ``--selector`` the API server
    cannot read (every list and watch would be refused, and retried for ever).

    Raises:
        click.BadParameter: naming the option and what is wrong with it.
    """
    from okt.runtime import probe_server

    try:
        probe_server.parse_bind(metrics_bind_address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--metrics-bind-address'") from None
    try:
        selectors.matcher(selector)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--selector'") from None


def _check_metrics_certificate(metrics_bind_address: str, metrics_secure: bool, metrics_cert_dir: str | None) -> None:
    """Refuse ``--metrics-cert-dir`` where ``/metrics`` is not served over https: disabled, on a loopback address, or
    with ``--no-metrics-secure``. The folder was taken and never read, without a word: a run meant to serve its
    metrics over https (``--no-metrics-secure --metrics-cert-dir``) served them over plain http, to anyone.

    Raises:
        click.UsageError: saying why ``/metrics`` is served without it.
    """
    from okt.runtime import probe_server

    if metrics_cert_dir is None:
        return
    address = probe_server.parse_bind(metrics_bind_address)
    if address is None:
        why = f"--metrics-bind-address {metrics_bind_address} serves no /metrics"
    elif not metrics_secure:
        why = "--no-metrics-secure serves /metrics over plain http"
    elif probe_server.is_loopback(address[0]):
        why = f"/metrics on the loopback address {metrics_bind_address} is served over plain http"
    else:
        return
    raise click.UsageError(f"--metrics-cert-dir is the certificate of /metrics over https, and {why}")


def _configuration_kinds(reconcilers: Sequence[type[Any]]) -> list[str]:
    """The webhook configuration kinds the reconcilers need (validating, mutating): the ones ``okt gen`` writes."""
    purposes = {endpoint.purpose for endpoint in webhooks_mod.all_endpoints(reconcilers)}
    chosen = (
        ("ValidatingWebhookConfiguration", webhooks_mod.Purpose.VALIDATING),
        ("MutatingWebhookConfiguration", webhooks_mod.Purpose.MUTATING),
    )
    return [kind for kind, purpose in chosen if purpose in purposes]


def _webhook_ca_permissions(
    reconcilers: Sequence[type[Any]],
    service: tuple[str, str] | None,
    configuration: str | None,
    own_certificate: bool,
) -> list[tuple[str | None, Sequence[dict[str, Any]]]]:
    """What ``--webhook-service`` (``service``: namespace and name) and ``--webhook-configuration`` add to the
    permission check: the rules ``okt gen deploy`` grants for them (``own_certificate``: the Service's certificate is
    kept in its Secret, no --webhook-cert-dir or --webhook-secret)."""
    if service is None:
        return []
    namespaced, cluster = rbac.webhook_ca_rules(
        secret=f"{service[1]}-tls" if own_certificate else None,
        configuration=configuration,
        configurations=[f"{kind.lower()}s" for kind in _configuration_kinds(reconcilers)],
        crds=_conversion_crds(reconcilers),
    )
    return [(service[0], namespaced), (None, cluster)]


def _scope_fields(
    reconcilers: Sequence[type[Any]], namespaces: Sequence[str], selector: str | None, server_version: str
) -> dict[str, dict[str, Any]]:
    """The ``namespaceSelector`` and ``objectSelector`` of each admission webhook (by its path) that make the API
    server call it for the objects this run serves only (``-n``, ``-l``), for ``--webhook-configuration`` — those of a
    built-in kind without the operator's own workload, as ``okt gen deploy`` writes them (:func:`selectors_of`).

    An API server before Kubernetes 1.21 does not label namespaces with their name: a namespaceSelector naming them
    would match none, and the webhook would never be called; there the one written is left as it is (admission still
    admits the other namespaces' objects untouched)."""
    from okt.reconciler import admission

    scope = admission.Scope(frozenset(namespaces), selector)
    labelled = _names_namespaces(server_version)
    fields: dict[str, dict[str, Any]] = {}
    for endpoint in webhooks_mod.all_endpoints(reconcilers):
        if endpoint.purpose is not webhooks_mod.Purpose.CONVERSION:
            chosen = webhooks_mod.selectors_of(
                scope, namespaced=endpoint.reconciler.namespaced, api_version=endpoint.reconciler.api_version
            )
            fields[endpoint.path] = chosen if labelled else {"objectSelector": chosen["objectSelector"]}
    return fields


def _names_namespaces(server_version: str) -> bool:
    """Whether an API server of this version labels every namespace ``kubernetes.io/metadata.name`` (1.21 on)."""
    found = re.match(r"v?(\d+)\.(\d+)", server_version)
    return found is not None and (int(found[1]), int(found[2])) >= (1, 21)


def _conversion_crds(reconcilers: Sequence[type[Any]]) -> list[str]:
    """The CRDs of the reconcilers with a conversion webhook (``<plural>.<group>``; none for a built-in kind)."""
    try:
        return codegen_webhooks.conversion_crds(reconcilers)
    except codegen_errors.CodegenError:
        return []


@dataclasses.dataclass
class _Starting:
    """What the probes answer while ``okt run`` starts, before the manager answers them: alive (a liveness probe
    restarts no operator waiting for its API server), not ready, saying what the start waits for; nothing that names
    a kind, which the API server may not have been asked about yet."""

    version: str | None = None
    """The API server's version, once it answered."""

    def health(self) -> tuple[bool, str]:
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        return False, "starting" if self.version else "waiting for the API server"


def _listen(
    metrics_bind_address: str, webhook_host: str | None, webhook_port: int, starting: _Starting
) -> tuple[probe_server.ProbeServer | None, socket.socket | None]:
    """The metrics port bound and answering the probes as ``starting`` says (``/metrics`` not served yet), and the
    webhook port (``webhook_host`` None: none served) bound, for the manager to serve: it answers its own probes and
    metrics on the same server once it starts.

    Bound before ``okt run`` says or serves anything, and handed over bound: a port another process holds is one
    line, where the metrics port bound by the manager's start was found once the version line was printed, and the
    webhook port once the probes were served and said so (see :mod:`okt.runtime.ports`). The probes answered from
    then on, saying nothing: bound and not served, the port took the kubelet's probes and answered none, for as long
    as the first request was retried (up to :data:`STARTUP_PATIENCE` seconds) and the checks took.

    Raises:
        okt.errors.ConfigurationError: a port cannot be bound (another process holds it, an address not of this host).
    """
    from okt.runtime import probe_server

    address = probe_server.parse_bind(metrics_bind_address)
    metrics = probe_server.listen(address) if address is not None else None
    webhooks = None
    try:
        if webhook_host is not None:
            from okt.runtime import webhook_server

            webhooks = webhook_server.listen(webhook_host, webhook_port, WEBHOOK_PORT_HELD)
        if metrics is None:
            return None, webhooks
        probes = probe_server.ProbeServer(metrics, None, starting.health, starting.readiness)
    except BaseException:
        for bound in (metrics, webhooks):
            if bound is not None:
                bound.close()
        raise
    probes.start()
    return probes, webhooks


def _close(probes: probe_server.ProbeServer | None, webhooks: socket.socket | None) -> None:
    """Stop the probes and close the webhook port :func:`_listen` served and bound: stopped and closed already by the
    manager that took them over, not yet when a check refused to start before it did."""
    if probes is not None:
        probes.stop()
    if webhooks is not None:
        webhooks.close()


def _webhook_options(
    client: kube_client.Client,
    host: str,
    port: int,
    cert_dir: str | None,
    secret: str | None,
    ca_file: str | None,
    service: tuple[str, str] | None = None,
    configuration: str | None = None,
    configuration_kinds: Sequence[str] = (),
    conversion_crds: Sequence[str] = (),
    scope_fields: Mapping[str, Mapping[str, Any]] | None = None,
    listener: socket.socket | None = None,
) -> webhook_server.Options:
    """Where and with which certificate the webhooks are served: the directory, the Secret, the Service's shared
    certificate (``service``: namespace and name), else a new CA; on ``listener``, ``host:port`` bound already, when
    given (:func:`_listen`). The CA's PEM is written to ``ca_file`` when given.
    With ``configuration``, the CA goes into the caBundle of the webhook configurations of that name that call
    ``service`` (with ``scope_fields``, their selectors: :func:`_scope_fields`), and of the conversion webhooks of the
    CRDs ``conversion_crds`` that call it. Both are written again, with the CA served until then, before a renewal
    under another CA is served, and wherever the webhook server's reload loop finds its CAs missing."""
    from okt.runtime import certs, webhook_server

    if cert_dir:
        bundle = certs.from_directory(cert_dir)
    elif secret:
        namespace, _, name = secret.rpartition("/")
        bundle = certs.from_secret(client, namespace, name)
    elif service:
        bundle = certs.for_service(client, service[0], service[1], f"{service[1]}-tls")
    else:
        bundle = certs.self_signed(webhook_server.generated_hosts(host))
    # Where the CA goes, at start and again before a renewal under another CA is served: the configurations (their
    # caBundle) and the CA file (what okt gen webhooks --ca-bundle reads).
    trusts: list[Callable[[bytes], None]] = []
    # Where the CAs are checked again every 10 s: written again where they went missing, and a CA that has ended
    # dropped, whether or not the CAs served change meanwhile.
    restores: list[Callable[[bytes], None]] = []
    if service and configuration:
        webhook_service, webhook_configuration = service, configuration

        def write_configurations(ca_pem: bytes, missing_only: bool = False) -> None:
            ca_bundle = dataclasses.replace(bundle, ca_pem=ca_pem).ca_bundle()
            namespace, name = webhook_service
            changed = certs.inject_ca_bundle(
                client,
                webhook_configuration,
                name,
                namespace,
                ca_bundle,
                configuration_kinds,
                scope_fields,
                missing_only=missing_only,
            )
            crds = certs.inject_conversion_ca_bundle(
                client, conversion_crds, name, namespace, ca_bundle, missing_only=missing_only
            )
            if not missing_only:
                structlog.get_logger("okt.run").info(
                    "webhook CA written", configuration=webhook_configuration, kinds=changed, crds=crds
                )
            elif changed or crds:
                # Replaced without it (kubectl replace, a Helm upgrade: every call failed meanwhile), or a CA in it
                # has ended (routine, once per CA): the line says both, the check cannot tell which it was.
                structlog.get_logger("okt.run").warning(
                    "webhook CA written again where it was missing or held a CA that has ended",
                    configuration=webhook_configuration,
                    kinds=changed,
                    crds=crds,
                )

        trusts.append(write_configurations)
        restores.append(functools.partial(write_configurations, missing_only=True))
    for trust in trusts:
        trust(bundle.ca_pem)
    on_serving = None
    if ca_file:
        # Written once the server listens, not before: a run that cannot bind its port (another run holds it) would
        # leave a CA for the configurations to trust that no one serves, and the run holding the port refused.
        on_serving = functools.partial(_write_unexpired_ca_file, pathlib.Path(ca_file))
        trusts.append(functools.partial(_rewrite_ca_file, pathlib.Path(ca_file)))
        restores.append(functools.partial(_restore_ca_file, pathlib.Path(ca_file)))

    def trust_ca(ca_pem: bytes) -> None:
        for trust in trusts:
            trust(ca_pem)

    def restore_ca(ca_pem: bytes) -> None:
        # Each place is checked, whatever another's check raised (the API server away leaves the file checked).
        failures: list[Exception] = []
        for restore in restores:
            try:
                restore(ca_pem)
            except Exception as exc:
                failures.append(exc)
        if failures:
            raise failures[0]

    # A directory is served as a directory, a Secret as a Secret: the server reads them again for their renewals.
    # The Service's own certificate is read again from its Secret too: renewed there when it nears its end (by
    # whichever replica reads it first), it is served without a restart.
    served: certs.Bundle | pathlib.Path | certs.SecretSource | certs.ServiceSource = bundle
    if cert_dir:
        served = pathlib.Path(cert_dir)
    elif secret:
        namespace, _, name = secret.rpartition("/")
        served = certs.SecretSource(client, namespace, name)
    elif service:
        served = certs.ServiceSource(client, service[0], service[1], f"{service[1]}-tls")
    # A renewal under another CA (cert-manager's selfSigned issuer) is written into the configurations before it is
    # served, or the API server would refuse it; a configuration replaced without the CA gets it again.
    return webhook_server.Options(
        host=host,
        port=port,
        certificates=served,
        trust_ca=trust_ca if trusts else None,
        restore_ca=restore_ca if restores else None,
        on_serving=on_serving,
        port_held=WEBHOOK_PORT_HELD,
        listener=listener,
    )


def _write_unexpired_ca_file(path: pathlib.Path, ca_pem: bytes) -> None:
    """Write the CAs of ``ca_pem`` that have not ended to ``path``, as the webhook server starts serving."""
    from okt.runtime import certs

    _write_ca_file(path, certs.unexpired(ca_pem))


def _write_ca_file(path: pathlib.Path, ca_pem: bytes) -> None:
    """Write ``ca_pem`` to ``path`` (``--webhook-ca-file``).

    Raises:
        okt.errors.ConfigurationError: it could not be written (naming the file and why).
    """
    try:
        path.write_bytes(ca_pem)
    except OSError as exc:
        raise errors.ConfigurationError(f"cannot write {path}: {exc.strerror or exc}") from None


def _restore_ca_file(path: pathlib.Path, ca_pem: bytes) -> None:
    """Keep ``ca_pem`` in ``path``, the check of every reload interval: written again where the file lacks one of its
    CAs (removed, overwritten), and the file's CAs that have ended dropped (see :func:`okt.runtime.certs.restored`),
    so a CA that has ended leaves it, and the caBundle written from it, without waiting for the next renewal.

    Raises:
        okt.errors.ConfigurationError: it could not be read or written (the reload loop says so once, and tries
            again at the next interval).
    """
    from okt.runtime import certs

    try:
        held: bytes | None = path.read_bytes()
    except FileNotFoundError:
        held = None
    except OSError as exc:
        raise errors.ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
    written = certs.restored(held, ca_pem)
    if written is not None:
        _write_ca_file(path, written)


def _rewrite_ca_file(path: pathlib.Path, ca_pem: bytes) -> None:
    """Write ``ca_pem`` to ``path`` again, for a renewal under another CA: a file that cannot be written is logged and
    the renewal served all the same (the file is read by whoever writes configurations next, and the pair served
    until then nears its end)."""
    try:
        _write_ca_file(path, ca_pem)
    except errors.ConfigurationError as exc:
        structlog.get_logger("okt.run").warning("the webhook CA file was not written again", error=str(exc))


@click.command("run", cls=options.OneValueCommand)
@click.argument("target", required=False)
@click.option("-m", "--module", "module", help="Import the operator as a module instead of a file.")
@click.option(
    "--reconciler",
    "reconciler_name",
    default=None,
    help="Run only this reconciler of the file or module: its class name, or its kind as kubectl names it "
    "(Memcached, deploy, memcacheds.cache.example.com).",
)
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    callback=lambda _ctx, _param, value: tuple(map(_namespace_name, value)),
    help="Watch this namespace (repeatable).",
)
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
    callback=lambda _ctx, _param, value: None if value is None else _namespace_name(value),
    help="Namespace of the Lease (default: the pod's own namespace, else the first watched one, else default).",
)
@click.option(
    "--lease-name",
    default=None,
    callback=lambda _ctx, _param, value: _lease_name(value),
    help="Name of the Lease (default: okt- and the controllers' names). Releases of one operator that serve different "
    "namespaces or labels from one namespace each need their own.",
)
@click.option(
    "--metrics-bind-address",
    default="127.0.0.1:8080",
    show_default=True,
    help='Address for /metrics, /healthz, /readyz ("0" disables). On an address other than loopback, /metrics is '
    "served over https to a bearer token allowed to get /metrics; the probes stay open over http.",
)
@click.option(
    "--metrics-secure/--no-metrics-secure",
    default=True,
    show_default=True,
    help="Serve /metrics on an address other than loopback over https to an authorized bearer token only "
    "(--no-metrics-secure: plain http to anyone).",
)
@click.option(
    "--metrics-cert-dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Folder holding tls.crt and tls.key for /metrics over https, read again when rotated (default: a "
    "self-signed certificate).",
)
@_watchdog_option("--stuck-after", 600.0, "every worker of a controller has been on one reconcile")
@_watchdog_option("--mapping-stuck-after", 120.0, "a controller's mapping of one watched object's event has run")
@click.option(
    "--grace-period",
    type=click.FloatRange(min=0),
    default=30.0,  # the manager's DEFAULT_GRACE_PERIOD (not imported here: okt --help stays quick)
    show_default=True,
    callback=lambda _ctx, _param, value: _grace_period(value),
    metavar="SECONDS",
    help="How long SIGTERM waits for reconciles and daemons to end; one still running then makes the exit status 1.",
)
@click.option(
    "--log-format", type=click.Choice(["console", "json"]), default=None, help="Console on a terminal, JSON otherwise."
)
@click.option(
    "--qps",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    callback=lambda _ctx, _param, value: _qps(value),
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
@click.option(
    "--webhook-port",
    type=click.IntRange(0, 65535),
    default=9443,
    show_default=True,
    help="Port of the admission and conversion webhooks (HTTPS; 0: a free one), served when a reconciler has some.",
)
@click.option("--webhook-host", default="0.0.0.0", show_default=True, help="Address the webhook server binds.")
@click.option(
    "--webhook-cert-dir",
    type=click.Path(file_okay=False),
    help="Serve the certificate in DIR (tls.crt, tls.key, ca.crt: a mounted Secret) [default: self-signed].",
)
@click.option(
    "--webhook-secret",
    metavar="NAMESPACE/NAME",
    help="Serve the certificate of this TLS Secret, read again every 10 s (a rotation is served without a restart).",
)
@click.option(
    "--webhook-ca-file",
    type=click.Path(dir_okay=False),
    help="Write the webhook CA's PEM here once the webhooks are served (what `okt gen webhooks --ca-bundle` reads).",
)
@click.option(
    "--webhook-service",
    metavar="NAME",
    help="In a cluster: the Service in front of the webhooks, in the pod's namespace. Serve a self-signed "
    "certificate for it, kept in the Secret NAME-tls (the first replica makes it), unless --webhook-cert-dir or "
    "--webhook-secret give one.",
)
@click.option(
    "--webhook-configuration",
    metavar="NAME",
    help="With --webhook-service: write the served certificate's CA into the caBundle of the Validating/"
    "MutatingWebhookConfiguration NAME (its webhooks that call that Service, whose namespaceSelector and "
    "objectSelector it sets from --namespace and --selector), and of the conversion webhook of the CRDs of "
    "reconcilers with converters that call that Service.",
)
@click.option("--no-webhooks", is_flag=True, help="Serve no webhooks.")
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
    lease_name: str | None,
    metrics_bind_address: str,
    metrics_secure: bool,
    metrics_cert_dir: str | None,
    stuck_after: float | None,
    mapping_stuck_after: float | None,
    grace_period: float,
    log_format: str | None,
    qps: float | None,
    burst: int | None,
    skip_permission_check: bool,
    webhook_port: int,
    webhook_host: str,
    webhook_cert_dir: str | None,
    webhook_secret: str | None,
    webhook_ca_file: str | None,
    webhook_service: str | None,
    webhook_configuration: str | None,
    no_webhooks: bool,
    verbose: int,
) -> None:
    """Run the reconcilers defined in TARGET (a .py file) or in -m MODULE."""
    from okt.runtime import logs, manager

    _check_combinations(click.get_current_context())
    _check_webhook_options(click.get_current_context())
    _check_spelling(metrics_bind_address, selector)
    _check_metrics_certificate(metrics_bind_address, metrics_secure, metrics_cert_dir)
    if (leader_elect and not lease_namespace) or webhook_service:
        _default_lease_namespace(namespaces)  # $POD_NAMESPACE, checked before anything is loaded or asked
    limit = kube_client.RateLimit(qps, burst or max(1, round(2 * qps))) if qps is not None else None
    logs.configure("json" if log_format == "json" else "console" if log_format else None, verbose)
    _warn_shadowing(target, module)
    reconcilers: list[type[reconciler.Reconciler]] = []
    starting, serving_probes, webhook_listener = _Starting(), None, None
    try:
        loaded = loader.load_module(module or target or "", as_module=bool(module))
        connect = functools.cache(
            lambda: kube_client.Client.from_kubeconfig(
                kubeconfig, context=kube_context, pool_size=max(16, max_concurrent * 4), rate_limit=limit
            )
        )
        # --reconciler also takes the kind as kubectl names it (deploy, memcacheds.cache.example.com): discovery.
        reconcilers = loader.reconcilers_of(
            loaded, module or target or "", only=reconciler_name, resolve=_discovery(connect)
        )
        if not no_webhooks:
            served = f"{reconciler_name} of {module or target}" if reconciler_name else module or target or ""
            _refuse_unserved_webhook_options(click.get_current_context(), reconcilers, served)
        startups, cleanups = hooks.collect(loaded)
        probes = hooks.probes_of(loaded)
        serves_webhooks = not no_webhooks and bool(webhooks_mod.all_endpoints(reconcilers))
        client = connect()  # a kubeconfig that does not load is said before a port another program holds
        serving_probes, webhook_listener = _listen(
            metrics_bind_address, webhook_host if serves_webhooks else None, webhook_port, starting
        )
        version = starting.version = _server_version(client)
        _warn_missing_namespaces(client, namespaces)
        lease_namespace = lease_namespace or _default_lease_namespace(namespaces)
        # Named here, as the manager would name it: the permission check asks for this Lease, which a role of okt gen
        # rbac --lease-name grants alone.
        lease_name = lease_name or manager.default_lease_name([r.controller_name() for r in reconcilers])
        service = (_default_lease_namespace(namespaces), webhook_service) if webhook_service else None
        if not skip_permission_check:
            own_certificate = not (webhook_cert_dir or webhook_secret)
            extra = (
                _webhook_ca_permissions(reconcilers, service, webhook_configuration, own_certificate)
                if serves_webhooks
                else []
            )
            _check_permissions(client, reconcilers, namespaces, leader_elect, lease_namespace, lease_name, extra)
            _warn_unreviewable_metrics(client, metrics_bind_address, metrics_secure)
        if not startups:
            _refuse_unserved_kinds(client, reconcilers)
        webhooks = None
        if serves_webhooks:
            webhooks = _webhook_options(
                client,
                webhook_host,
                webhook_port,
                webhook_cert_dir,
                webhook_secret,
                webhook_ca_file,
                service,
                webhook_configuration,
                _configuration_kinds(reconcilers),
                _conversion_crds(reconcilers),
                _scope_fields(reconcilers, namespaces, selector, version),
                webhook_listener,
            )
        # Said once every check passed: above a mistake's one line, it was a line more to read past.
        click.echo(f"okt: {', '.join(r.__name__ for r in reconcilers)} on Kubernetes {version}", err=True)
        mgr = manager.Manager(
            client,
            reconcilers,
            namespaces=list(namespaces) or None,
            label_selector=selector,
            max_concurrent=max_concurrent,
            leader_elect=leader_elect,
            lease_namespace=lease_namespace,
            lease_name=lease_name,
            metrics_bind=metrics_bind_address,
            metrics_listener=serving_probes,
            metrics_secure=metrics_secure,
            metrics_cert_dir=metrics_cert_dir,
            stuck_after=stuck_after,
            mapping_stuck_after=mapping_stuck_after,
            grace_period=grace_period,
            on_startup=startups,
            on_cleanup=cleanups,
            probes=probes,
            webhooks=webhooks,
        )
        # What exists now (modules, classes, the operator's code and settings: some 60,000 objects) lives as long as
        # the process. Out of the collector's reach, a full collection, which the garbage of decoding lists and of
        # reconciles triggers again and again, no longer walks it each time: on a restart over 3000 objects the
        # collector's full collections took 0.13-0.23 s instead of 0.62 s.
        gc.freeze()
        mgr.run()
        _refuse_unclean_stop(mgr, grace_period)
    except errors.OktError as exc:
        raise click.ClickException(_with_remedy(exc, reconcilers, module or target or "")) from exc
    finally:
        _close(serving_probes, webhook_listener)
