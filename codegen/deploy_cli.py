"""``okt gen deploy`` and ``okt gen bundle``: the command-line face of :mod:`okt.codegen.deploy`.

Mounted into ``okt gen`` by :func:`okt.codegen.cli.make_gen_group`, which passes how to load an OPERATOR argument and
its command class (one-line errors, exit status 2). Success prints one ``written  PATH`` line per file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from okt.codegen import deploy, options, webhooks

Load = Callable[[str, str | None], Sequence[type[Any]]]
"""Loads OPERATOR's reconcilers, or the one named by ``--reconciler``."""

_SELECTOR_HELP = (
    "The operator serves only the objects of this label selector: okt run -l, and the webhooks' objectSelector."
)


def _report(paths: list[Path]) -> None:
    for path in paths:
        click.echo(f"written  {path.as_posix()}")


def commands(load: Load, command_class: type[click.Command]) -> list[click.Command]:
    """The two commands, reading OPERATOR with ``load``."""

    @click.command("deploy", cls=command_class)
    @click.argument("operator")
    @click.option("--reconciler", "reconciler_name", metavar="NAME", help="The reconciler class (default: all).")
    @click.option("--name", required=True, help="The operator's name: Deployment, ServiceAccount, roles.")
    @click.option("--namespace", required=True, help="The namespace the default overlay installs into.")
    @click.option("--image", required=True, help="The operator's image, e.g. registry.example.com/my-operator:0.1.0.")
    @click.option(
        "--watch-namespace",
        "watch_namespaces",
        multiple=True,
        metavar="NS",
        help="The operator serves only this namespace (repeatable): okt run -n, the webhooks' namespaceSelector, "
        "and its ClusterRole bound in these namespaces only [default: every namespace].",
    )
    @click.option("-l", "--selector", help=_SELECTOR_HELP)
    @click.option("--out", "out_dir", default="config", show_default=True, type=options.OutPath(file_okay=False))
    def deploy_command(
        operator: str,
        reconciler_name: str | None,
        name: str,
        namespace: str,
        image: str,
        watch_namespaces: tuple[str, ...],
        selector: str | None,
        out_dir: Path,
    ) -> None:
        """Write OPERATOR's kustomize tree: base (CRDs, RBAC, manager) and overlays/default (namespace, image)."""
        scope = webhooks.scope_of(watch_namespaces, selector)
        classes = load(operator, reconciler_name)
        operator_facts = deploy.Operator(classes, name, namespace, image, scope, reconciler_name)
        _report(deploy.write(deploy.kustomize_tree(operator_facts), out_dir))

    @click.command("bundle", cls=command_class)
    @click.argument("operator")
    @click.option("--reconciler", "reconciler_name", metavar="NAME", help="The reconciler class (default: all).")
    @click.option("--name", required=True, help="The operator's name: package, Deployment, ServiceAccount.")
    @click.option("--version", "bundle_version", required=True, help="The bundle's semantic version, e.g. 0.1.0.")
    @click.option("--image", required=True, help="The operator's image, e.g. registry.example.com/my-operator:0.1.0.")
    @click.option("--channel", default="alpha", show_default=True, help="The OLM channel.")
    @click.option("-l", "--selector", help=_SELECTOR_HELP)
    @click.option("--out", "out_dir", default="bundle", show_default=True, type=options.OutPath(file_okay=False))
    def bundle_command(
        operator: str,
        reconciler_name: str | None,
        name: str,
        bundle_version: str,
        image: str,
        channel: str,
        selector: str | None,
        out_dir: Path,
    ) -> None:
        """Write OPERATOR's OLM bundle: a ClusterServiceVersion, its CRDs and metadata/annotations.yaml."""
        scope = webhooks.scope_of((), selector)
        classes = load(operator, reconciler_name)
        operator_facts = deploy.Operator(classes, name, deploy.BUNDLE_NAMESPACE, image, scope, reconciler_name)
        _report(deploy.write(deploy.bundle(operator_facts, version=bundle_version, channel=channel), out_dir))

    return [deploy_command, bundle_command]
