"""`okt run` starts an operator without importing what only the other subcommands use."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from okt.cli import main as cli_main

ONLY_FOR_OTHER_COMMANDS = ("okt.testing", "okt.cli.envtest", "okt.codegen.cli", "okt.codegen.scaffold")

PROBE = f"""
import sys
from okt.cli import main
try:
    main.cli.main(["run", "--help"], prog_name="okt")
except SystemExit:
    pass
print(sorted(name for name in sys.modules if name.startswith({ONLY_FOR_OTHER_COMMANDS!r})))
"""


def test_okt_run_starts_without_the_code_generators_or_the_control_plane_tooling() -> None:
    # A fresh interpreter: this test process has imported everything already.
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    assert "--max-concurrent" in done.stdout  # the run command's own help was printed
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_help_still_lists_every_subcommand_with_its_summary() -> None:
    result = CliRunner().invoke(cli_main.cli, ["--help"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].strip().splitlines()]
    assert listed == ["create", "envtest", "gen", "graph", "init", "run"]
    summaries = dict(line.split(None, 1) for line in result.output.split("Commands:")[1].strip().splitlines())
    assert summaries["run"].startswith("Run the reconcilers defined in TARGET")


def test_an_unknown_subcommand_is_one_clear_line() -> None:
    result = CliRunner().invoke(cli_main.cli, ["rnu"])
    assert result.exit_code == 2
    assert "No such command 'rnu'" in result.output
