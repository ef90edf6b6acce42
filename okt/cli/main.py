"""The `okt` command: run an operator, draw the Stepper, generate code, drive the local control plane.

Every user mistake ends in one clear line on stderr and exit status 2 (usage) or 1 (runtime), never a traceback.
"""

from __future__ import annotations

import sys

import click

from okt.cli import envtest as envtest_cli
from okt.cli import run as run_cli
from okt.codegen import cli as codegen_cli
from okt.codegen import scaffold_cli


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="okt")
def cli() -> None:
    """okt — Kubernetes operators as state machines."""


@cli.command("graph")
def graph_command() -> None:
    """Print the Stepper state machine as a mermaid diagram (generated from the machine itself)."""
    from okt.engines import graph

    click.echo(graph.mermaid())


cli.add_command(run_cli.run_command)
cli.add_command(codegen_cli.gen)
cli.add_command(envtest_cli.envtest_group)
cli.add_command(scaffold_cli.init_command)
cli.add_command(scaffold_cli.create_group)


def main() -> None:
    try:
        cli.main(prog_name="okt", standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
