"""``okt run`` of a reconciler whose CRD is not installed stops before serving anything, in one line, with status 1."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from okt.testing import envtest

pytestmark = pytest.mark.integration

OPERATOR = """\
import okt


class Widgets(okt.Reconciler):
    api_version = "unserved.okt.io/v1"
    kind = "Widget"
"""


def _run(
    control_plane: envtest.ControlPlane, operator: pathlib.Path, namespace: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, "--metrics-bind-address", f"127.0.0.1:{envtest.free_port()}", "--webhook-port", "0"]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])}
    return subprocess.run(
        [*argv, "--log-format", "json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def test_a_reconciler_whose_crd_is_not_installed_stops_okt_run_with_one_line(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    # The probes were served first, and "serving metrics and probes" and "manager stopped" were logged around the line.
    operator = tmp_path / "unserved_operator.py"
    operator.write_text(OPERATOR)

    done = _run(control_plane, operator, namespace)

    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        "Error: 404 NotFound: the server does not serve Widget in unserved.okt.io/v1: install its CRD first: "
        f"okt gen crd {operator} | kubectl apply -f -\n"
    )


def test_an_operator_with_start_up_hooks_runs_them_before_its_kinds_are_checked(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    # A start-up hook may install the CRDs: the kinds are checked once it has run, by the manager.
    operator = tmp_path / "hooked_operator.py"
    operator.write_text(
        f"import sys\n{OPERATOR}\n\n@okt.on_startup()\ndef install(client):\n    print('hook ran', file=sys.stderr)\n"
    )

    done = _run(control_plane, operator, namespace)

    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert "hook ran" in lines, done.stderr
    assert lines[-1].startswith("Error: 404 NotFound: the server does not serve Widget in unserved.okt.io/v1: ")
