"""``okt init`` and ``okt create api``: the command-line face of :mod:`okt.codegen.scaffold`.

Like ``okt gen``, every mistake is ``Error: <one line>`` on stderr with exit status 2, and success prints one line per
file (``created``/``written`` and its path), then what to run next.
"""

from __future__ import annotations

from pathlib import Path

import click

from okt.codegen import cli, errors, options, resource, scaffold


def _report(results: list[resource.FileResult], base: Path) -> None:
    for result in results:
        path = result.path.relative_to(base) if result.path.is_relative_to(base) else result.path
        click.echo(f"{result.action.value:<8} {path.as_posix()}")


@click.command("init", cls=options.OneValueCommand)
@click.argument("name")
@click.option("--group", required=True, metavar="G", help="The API group of the first kind, e.g. example.com.")
@click.option("--version", required=True, metavar="V", help="Its API version, e.g. v1alpha1.")
@click.option("--kind", required=True, metavar="KIND", help="The first kind, e.g. Widget.")
@click.option(
    "--dir",
    "directory",
    type=options.OutPath(file_okay=False),
    help="Where to create the project [default: ./NAME].",
)
def init_command(name: str, group: str, version: str, kind: str, directory: Path | None) -> None:
    """Create the operator project NAME: code, child template, CRD, RBAC, Deployment, Dockerfile, tests, Makefile."""
    target = directory or Path(name)
    try:
        project = scaffold.Project.new(name, group=group, version=version)
        results = scaffold.init(target, project, scaffold.Api.new(kind, group=group, version=version))
    except errors.CodegenError as exc:
        raise cli.GenError(str(exc)) from exc
    _report(results, target)
    click.echo(f"\nNext: cd {target.as_posix()} && make test", err=True)


@click.group("create")
def create_group() -> None:
    """Add to a project made by okt init."""


@create_group.command("api", cls=options.OneValueCommand)
@click.option("--kind", required=True, metavar="KIND", help="The new kind, e.g. Gadget.")
@click.option("--group", metavar="G", help="Its API group [default: the project's].")
@click.option("--version", metavar="V", help="Its API version [default: the project's].")
@click.option(
    "--dir",
    "directory",
    type=options.OutPath(file_okay=False),
    default=Path(),
    help="The project folder [default: .].",
)
def create_api_command(kind: str, group: str | None, version: str | None, directory: Path) -> None:
    """Add a kind: its models, reconciler, child, sample and test; main.py runs it; deploy/ is regenerated."""
    try:
        project = scaffold.Project.read(directory)
        api = scaffold.Api.new(kind, group=group or project.group, version=version or project.version)
        results = scaffold.create_api(directory, api)
    except errors.CodegenError as exc:
        raise cli.GenError(str(exc)) from exc
    _report(results, directory)
