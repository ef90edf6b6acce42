"""``okt gen``: the command-line face of the generators (resource wrappers, CRD, RBAC, webhooks).

Why it exists: generators are run by people at a shell and by Makefiles, so they must fail the way tools do — one line
on stderr that says what is wrong, exit status 2, no traceback — and print nothing else on success than what was
asked (the YAML, or the list of files written). ``okt`` mounts :data:`gen` lazily; ``okt-gen-resource`` (see
:mod:`okt.codegen.okt_compat`) reaches the same ``resource`` command with OKT's spelling.

Guarantees: every error — a bad option, an unknown kind, an invalid manifest or model, an operator that does not
load — is ``Error: <one line>`` on stderr with exit status 2; ``--help`` works everywhere; YAML goes to stdout unless
``--out FILE`` is given.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

import okt
from okt.codegen import crd, deploy_cli, dictionary, errors, options, rbac, resource, webhooks, yamlout
from okt.runtime import manager as runtime_manager

ReconcilerLoader = Callable[[str], Sequence[type[Any]]]
"""Loads the reconciler classes of an operator (a ``.py`` path or a module name)."""

_OUT_FILE = options.OutPath(dir_okay=False, allow_dash=True)
"""The file ``--out`` names; ``-`` is stdout, as ``kubectl apply -f -`` reads it (it wrote a file named ``-``)."""

_NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", type("_Never", (Exception,), {}))


class GenError(click.ClickException):
    """A generator error as the CLI reports it: ``Error: <one line>`` and exit status 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class _Command(options.OneValueCommand):
    """A command whose usage errors and generator errors are one line each (no usage block), that takes one value
    per option (:mod:`okt.codegen.options`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise GenError(exc.format_message()) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except errors.CodegenError as exc:
            raise GenError(str(exc)) from exc


class _Group(click.Group):
    """A group whose usage errors are one line, like its commands' (running it bare still shows its help)."""

    command_class = _Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if isinstance(exc, _NO_ARGS_IS_HELP):
                raise
            raise GenError(exc.format_message()) from exc

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            raise GenError(exc.format_message()) from exc


def load_with_okt(target: str) -> Sequence[type[Any]]:
    """Load the reconcilers of ``target`` (a ``.py`` path or a module name) with okt's loader, as ``okt run`` does."""
    from okt.reconciler import loader

    return loader.load_reconcilers(target)


def make_gen_group(load_reconcilers: ReconcilerLoader = load_with_okt) -> click.Group:
    """Build the ``gen`` command group; ``load_reconcilers`` reads an OPERATOR argument (tests pass their own)."""

    @click.group("gen", cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
    def gen() -> None:
        """Generate resource wrappers, CRDs and RBAC for okt operators."""

    gen.add_command(resource_command)

    @gen.command("crd", cls=_Command)
    @click.argument("operator")
    @click.option("--reconciler", "reconciler_name", metavar="NAME", help="The reconciler class (default: all).")
    @click.option("--out", "out_file", type=_OUT_FILE, help="Write here, not stdout (- is stdout).")
    @_name_option
    @_client_config_options
    def crd_command(
        operator: str,
        reconciler_name: str | None,
        out_file: Path | None,
        name: str | None,
        namespace: str,
        url: str | None,
        ca_bundle: Path | None,
    ) -> None:
        """Print the CustomResourceDefinition(s) of OPERATOR's reconcilers (a .py file or a module).

        A reconciler with converters gets its conversion webhook (--url, else the Service okt gen webhooks writes).
        """
        classes = _select(_load(load_reconcilers, operator), reconciler_name, operator)
        # Every conversion webhook calls the one Service okt gen webhooks writes for the same reconcilers and --name
        # (the first reconciler's <kind>-operator-webhooks by default, whichever reconciler has the converters). A
        # default name is checked only where a CRD names that Service: a long kind without converters has none.
        names_service = url is None and bool(webhooks.conversion_crds(classes))
        name = _operator_name(classes, name) if name is not None or names_service else webhooks.default_name(classes[0])
        config = _client_config(classes[0], namespace, url, ca_bundle, name)
        documents = [crd.crd_for_reconciler(cls, webhooks.conversion_client_config(cls, config)) for cls in classes]
        _emit(crd.one_per_name(classes, documents), out_file)

    @gen.command("webhooks", cls=_Command)
    @click.argument("operator")
    @click.option("--reconciler", "reconciler_name", metavar="NAME", help="The reconciler class (default: all).")
    @_name_option
    @click.option(
        "--failure-policy",
        type=click.Choice(["Fail", "Ignore"]),
        default="Fail",
        show_default=True,
        help="What the API server does when the operator does not answer.",
    )
    @click.option("--timeout", type=int, default=webhooks.DEFAULT_TIMEOUT, show_default=True, help="Seconds (1-30).")
    @click.option(
        "--webhook-port",
        type=click.IntRange(1, 65535),
        default=webhooks.DEFAULT_TARGET_PORT,
        show_default=True,
        help="The pods' webhook port (okt run --webhook-port), the Service's target.",
    )
    @click.option(
        "--watch-namespace",
        "watch_namespaces",
        multiple=True,
        metavar="NS",
        help="The operator serves only this namespace (okt run -n; repeatable): the API server calls the webhooks "
        "for its objects only [default: every namespace].",
    )
    @click.option(
        "-l",
        "--selector",
        help="The operator serves only the objects of this label selector (okt run -l): the API server calls the "
        "webhooks for those only.",
    )
    @click.option("--out", "out_file", type=_OUT_FILE, help="Write here, not stdout (- is stdout).")
    @_client_config_options
    def webhooks_command(
        operator: str,
        reconciler_name: str | None,
        name: str | None,
        failure_policy: webhooks.FailurePolicy,
        timeout: int,
        webhook_port: int,
        watch_namespaces: tuple[str, ...],
        selector: str | None,
        out_file: Path | None,
        namespace: str,
        url: str | None,
        ca_bundle: Path | None,
    ) -> None:
        """Print the Validating/MutatingWebhookConfiguration (and the Service) of OPERATOR's admission webhooks."""
        scope = webhooks.scope_of(watch_namespaces, selector)
        classes = _select(_load(load_reconcilers, operator), reconciler_name, operator)
        name = _operator_name(classes, name)
        config = _client_config(classes[0], namespace, url, ca_bundle, name)
        documents = webhooks.webhooks_for_reconcilers(
            classes,
            name=name,
            client_config=config,
            failure_policy=failure_policy,
            timeout=timeout,
            target_port=webhook_port,
            scope=scope,
        )
        _emit(documents, out_file)

    @gen.command("rbac", cls=_Command)
    @click.argument("operator")
    @click.option("--reconciler", "reconciler_name", metavar="NAME", help="The reconciler class (default: all).")
    @click.option("--namespace", default="default", show_default=True, help="The operator's namespace.")
    @click.option("--cluster-wide", is_flag=True, help="ClusterRole/ClusterRoleBinding: watch every namespace.")
    @click.option("--leader-elect", is_flag=True, help="Grant the Lease permissions of leader election.")
    @click.option(
        "--lease-name",
        metavar="NAME",
        help="With --leader-elect: the Lease okt run leads on (its --lease-name); get and update are granted on it "
        "alone [default: the okt-<controllers> name okt run derives from the reconcilers given here, as without "
        "--lease-name].",
    )
    @click.option("--service-account", metavar="NAME", help="ServiceAccount name [default: <kind>-operator].")
    @click.option(
        "--metrics-auth/--no-metrics-auth",
        default=True,
        show_default=True,
        help="Grant create on tokenreviews and subjectaccessreviews (the ClusterRole <account>-metrics-auth): what "
        "okt run needs to serve /metrics beyond loopback to authorized tokens. --no-metrics-auth for an operator run "
        "with --no-metrics-secure or its metrics on loopback.",
    )
    @click.option("--out", "out_file", type=_OUT_FILE, help="Write here, not stdout (- is stdout).")
    def rbac_command(
        operator: str,
        reconciler_name: str | None,
        namespace: str,
        cluster_wide: bool,
        leader_elect: bool,
        lease_name: str | None,
        service_account: str | None,
        metrics_auth: bool,
        out_file: Path | None,
    ) -> None:
        """Print the least-privilege ServiceAccount, role and binding OPERATOR needs (a .py file or a module)."""
        if lease_name is not None and not leader_elect:
            raise click.UsageError("--lease-name names the Lease of leader election: give --leader-elect too")
        classes = _select(_load(load_reconcilers, operator), reconciler_name, operator)
        documents = rbac.rbac_for_reconcilers(
            classes,
            namespace=namespace,
            cluster_wide=cluster_wide,
            leader_elect=leader_elect,
            service_account=service_account,
            metrics_auth=metrics_auth,
            # Named as okt run names it when not told (the same function): get and update of that Lease alone.
            lease_name=lease_name or runtime_manager.default_lease_name([cls.controller_name() for cls in classes]),
        )
        _emit(documents, out_file)

    def load_selected(operator: str, name: str | None) -> list[type[Any]]:
        return _select(_load(load_reconcilers, operator), name, operator)

    for command in deploy_cli.commands(load_selected, _Command):
        gen.add_command(command)
    return gen


@click.command("resource", cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--type", "resource_type", metavar="KIND", help="The child's Kubernetes kind (see --list).")
@click.option("--kind", "cr_kind", metavar="CRKIND", help="The custom resource's kind, e.g. Memcached.")
@click.option("--group", metavar="G", help="The custom resource's API group, e.g. cache.")
@click.option("--version", metavar="V", help="The custom resource's API version, e.g. v1alpha1.")
@click.option(
    "--out",
    "out_dir",
    default="resources",
    show_default=True,
    type=options.OutPath(file_okay=False),
    help="The package directory to write into.",
)
@click.option(
    "--dictionary",
    "dictionary_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A kind dictionary that adds or overrides kinds (repeatable).",
)
@click.option(
    "--crd",
    "crd_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A child of a custom kind: its CRD, whose map lists the wrapper carries (compared by key).",
)
@click.option(
    "--list", "list_kinds", is_flag=True, help="Print the kind dictionary (with --dictionary FILE's kinds) and exit."
)
@click.argument("manifest", required=False, type=click.Path(dir_okay=False, path_type=Path))
def resource_command(
    resource_type: str | None,
    cr_kind: str | None,
    group: str | None,
    version: str | None,
    out_dir: Path,
    dictionary_files: tuple[Path, ...],
    crd_path: Path | None,
    list_kinds: bool,
    manifest: Path | None,
) -> None:
    """Generate the okt resource wrapper of MANIFEST's kind, owned by the custom resource CRKIND.

    Writes OUT/<type>_<crkind>_gen.py (rewritten from the manifest it was generated from) and OUT/<type>_<crkind>.py
    (yours: written only when missing, never touched again). A further manifest of the same kind gets modules named
    after its file: OUT/<type>_<crkind>_<file>_gen.py and OUT/<type>_<crkind>_<file>.py.
    """
    if list_kinds:
        # Only --dictionary shapes the table: with the options of a generation, --list printed it, generated nothing
        # and exited 0, as if the wrapper had been written.
        ctx = click.get_current_context()
        generating = [
            option
            for option, value in (
                ("MANIFEST", manifest),
                ("--type", resource_type),
                ("--kind", cr_kind),
                ("--group", group),
                ("--version", version),
                ("--crd", crd_path),
            )
            if value is not None
        ]
        if ctx.get_parameter_source("out_dir") is click.core.ParameterSource.COMMANDLINE:
            generating.append("--out")
        if generating:
            raise GenError(
                f"--list prints the kind dictionary and generates nothing: give {', '.join(generating)} without --list"
            )
        click.echo(kind_table(dictionary.load(dictionary_files)), nl=False)
        return
    if not (resource_type and cr_kind and group and version):
        given = (("--type", resource_type), ("--kind", cr_kind), ("--group", group), ("--version", version))
        missing = [option for option, value in given if not value]
        raise GenError(f"missing option{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    if manifest is None:
        raise GenError("missing argument MANIFEST (the child's YAML manifest)")
    results = resource.generate(
        resource_type=resource_type,
        cr_kind=cr_kind,
        group=group,
        version=version,
        manifest_path=manifest,
        out_dir=out_dir,
        dictionary_files=dictionary_files,
        crd_path=crd_path,
    )
    for result in results:
        note = " (yours: not touched)" if result.action is resource.Action.KEPT else ""
        click.echo(f"{result.action.value:<8} {result.path.as_posix()}{note}")


def _name_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--name``, the operator's name (shared by ``crd`` and ``webhooks``: the Service both point at)."""
    return click.option(
        "--name",
        metavar="NAME",
        help="The operator's name: its pods' app.kubernetes.io/name label, the configurations' name, the Service's "
        "prefix [default: <kind>-operator, of the first reconciler].",
    )(command)


def _operator_name(classes: Sequence[type[Any]], name: str | None) -> str:
    """``--name``, or the first reconciler's ``<kind>-operator``, checked as its Service's prefix (a default too long
    for it, from a long kind, is refused naming ``--name``: the user gave none)."""
    if not name:
        name = webhooks.default_name(classes[0])
        if not crd.DNS_1035_LABEL.match(f"{name}-webhooks"):
            raise errors.CodegenError(
                f"the default name {name} (<kind>-operator, of the first reconciler) is too long for its webhooks' "
                f"Service, {name}-webhooks: {len(name) + len('-webhooks')} characters, more than the 63 of a DNS "
                "label; give a name of at most 54 characters with --name"
            )
    crd.require_service_prefix("--name", name, f"{name}-webhooks")
    return name


def _client_config_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options saying how the API server reaches the webhooks (shared by ``crd`` and ``webhooks``)."""
    command = click.option(
        "--ca-bundle",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help="PEM of the CA of the webhook certificate, for caBundle (okt run --webhook-ca-file writes it).",
    )(command)
    command = click.option(
        "--url", metavar="URL", help="Call the webhooks at https://HOST:PORT (a local okt run) instead of a Service."
    )(command)
    return click.option(
        "--namespace", default="default", show_default=True, help="The operator's namespace (its Service's)."
    )(command)


def _client_config(
    cls: type[Any], namespace: str, url: str | None, ca_bundle: Path | None, name: str | None = None
) -> webhooks.ClientConfig:
    bundle = None
    if ca_bundle is not None:
        try:
            pem = ca_bundle.read_bytes()
        except OSError as exc:
            raise errors.CodegenError(f"cannot read {ca_bundle}: {exc.strerror or exc}") from exc
        # The API server reads the caBundle only when it calls the webhook: anything but a PEM certificate (a DER
        # file, the serving key) would fail every call then — and a key would sit in a configuration anyone may read.
        if b"-----BEGIN CERTIFICATE-----" not in pem:
            raise errors.CodegenError(f"{ca_bundle} is not a PEM certificate (-----BEGIN CERTIFICATE-----)")
        bundle = base64.b64encode(pem).decode()
    crd.require_dns_label("--namespace", namespace, "operators")
    service = f"{name or webhooks.default_name(cls)}-webhooks"
    return webhooks.ClientConfig(url=url, service=service, namespace=namespace, ca_bundle=bundle)


def kind_table(kinds: dictionary.KindDictionary) -> str:
    """The dictionary as an aligned text table, one kind a line, sorted by kind."""
    header = ("KIND", "API VERSION", "PLURAL", "SCOPE", "BASE", "HASHED")
    rows = [header] + [
        (
            spec.kind,
            spec.api_version,
            spec.plural,
            "Namespaced" if spec.namespaced else "Cluster",
            spec.base,
            ", ".join(spec.hashed) or "-",
        )
        for spec in kinds
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"


def _load(load_reconcilers: ReconcilerLoader, operator: str) -> list[type[Any]]:
    try:
        classes = list(load_reconcilers(operator))
    except errors.CodegenError:
        raise
    except okt.OktError as exc:  # okt's loader already says what failed, in one line
        raise errors.CodegenError(str(exc)) from exc
    except Exception as exc:  # the author's module may raise anything while importing
        raise errors.CodegenError(f"cannot load {operator}: {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:  # a script's unguarded sys.exit(): left alone, the command "succeeds" generating nothing
        raise errors.CodegenError(f"cannot load {operator}: it exited (SystemExit {exc.code}) while importing") from exc
    if not classes:
        raise errors.CodegenError(f"{operator} defines no reconciler")
    return classes


def _select(classes: list[type[Any]], name: str | None, operator: str) -> list[type[Any]]:
    if name is None:
        return classes
    chosen = [cls for cls in classes if cls.__name__ == name]
    if not chosen:
        known = ", ".join(sorted(cls.__name__ for cls in classes))
        raise errors.CodegenError(f"{operator} has no reconciler named {name!r} (it has: {known})")
    return chosen


def _emit(documents: Sequence[dict[str, Any]], out_file: Path | None) -> None:
    text = yamlout.dump_all(documents)
    if out_file is None or out_file == Path("-"):
        click.echo(text, nl=False)
        return
    try:
        # Whole or not at all: a write cut short (a full disk) left the last run's file half overwritten.
        resource.replace_whole(out_file, text)
    except OSError as exc:
        raise errors.CodegenError(f"cannot write {out_file}: {exc.strerror or exc}") from exc
    click.echo(f"written  {out_file.as_posix()}", err=True)


gen = make_gen_group()
"""The ``okt gen`` group, mounted by ``okt``'s CLI."""
