"""The `okt` command: run an operator, draw the Stepper, generate code, drive the local control plane.

Every user mistake ends in one clear line on stderr and exit status 2 (usage) or 1 (runtime), never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

SUBCOMMANDS = {
    "run": ("okt.cli.run", "run_command"),
    "gen": ("okt.codegen.cli", "gen"),
    "envtest": ("okt.cli.envtest", "envtest_group"),
    "init": ("okt.codegen.scaffold_cli", "init_command"),
    "create": ("okt.codegen.scaffold_cli", "create_group"),
}
"""Subcommand name → (module, attribute) of the command, imported when it is asked for."""


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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="okt")
def cli() -> None:
    """okt — Kubernetes operators as state machines."""


@cli.command("graph")
def graph_command() -> None:
    """Print the Stepper state machine as a mermaid diagram (generated from the machine itself)."""
    from okt.engines import graph

    click.echo(graph.mermaid())


def main() -> None:
    try:
        cli.main(prog_name="okt", standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
