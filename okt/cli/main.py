"""The `okt` command: run an operator, draw the Stepper, generate code, drive the local control plane.

Every user mistake ends in one clear line on stderr and exit status 2 (usage) or 1 (runtime), never a traceback. A
usage mistake of any command (an unknown option or command, a missing argument, options that exclude each other) is
``Error: <what is wrong>`` alone, without click's usage block and ``--help`` hint above it; a group run bare still
shows its help.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import Any

import click

SUBCOMMANDS = {
    "run": ("okt.cli.run", "run_command"),
    "gen": ("okt.codegen.cli", "gen"),
    "envtest": ("okt.cli.envtest", "envtest_group"),
    "init": ("okt.codegen.scaffold_cli", "init_command"),
    "create": ("okt.codegen.scaffold_cli", "create_group"),
}
"""Subcommand name → (module, attribute) of the command, imported when it is asked for."""

_NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", type("_Never", (Exception,), {}))
"""What click raises for a group run without a command: its help, which stays as it is."""


class _UsageMistake(click.ClickException):
    """A usage error as okt reports it: ``Error: <one line>`` and exit status 2, as click's own but without the usage
    block and the ``--help`` hint it prints above the message."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class _LazyGroup(click.Group):
    """Imports a subcommand's module only when that subcommand runs (or the help lists it).

    Why: an operator starts with ``okt run``, and every restart pays the start-up; the code generators and the local
    control plane's tooling have no business in that process.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SUBCOMMANDS:
            module, attribute = SUBCOMMANDS[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, cmd_name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with _usage_mistakes_in_one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        # A subcommand is parsed, and its callback run, within the group's invoke: one place catches them all.
        with _usage_mistakes_in_one_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_mistakes_in_one_line() -> Iterator[None]:
    try:
        yield
    except click.UsageError as exc:
        if isinstance(exc, _NO_ARGS_IS_HELP):
            raise
        raise _UsageMistake(exc.format_message()) from exc


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="okt")
def cli() -> None:
    """okt — Kubernetes operators as state machines."""


@cli.command("graph")
@click.argument("target", required=False)
@click.option("-m", "--module", "module", help="Import the operator as a module instead of a file.")
def graph_command(target: str | None, module: str | None) -> None:
    """Print the Stepper state machine as a mermaid diagram (generated from the machine itself); given an operator
    (TARGET, a .py file, or -m MODULE), then the lifecycle each of its reconcilers declares, one diagram each."""
    from okt import errors
    from okt.engines import graph
    from okt.reconciler import loader

    if target and module:
        raise click.UsageError("give at most one of TARGET (a file) or -m MODULE")
    if target == "" or module == "":  # an unset variable in a Makefile: the Stepper alone was printed, exit status 0
        raise click.UsageError("TARGET or -m MODULE is empty: name the operator file or module, or give neither")
    diagrams = [graph.mermaid()]
    where = module or target
    if where:
        try:
            reconcilers = loader.reconcilers_of(loader.load_module(where, as_module=bool(module)), where)
        except errors.ConfigurationError as exc:
            raise click.ClickException(str(exc)) from exc
        for cls in reconcilers:
            if cls.lifecycle is not None:
                title = f"the lifecycle of {cls.kind} ({cls.__name__}.lifecycle)"
                diagrams.append(cls.lifecycle.mermaid(guards=True, title=title))
    click.echo("\n\n".join(diagrams))


def main() -> None:
    try:
        cli.main(prog_name="okt", standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
