"""``okt run --selector`` that the API server cannot read stops at start, before asking it anything, in one line."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from okt.testing import OperatorProcess, envtest

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"


@pytest.mark.parametrize("selector", ["app:web", "app in (web"])
def test_a_selector_the_api_server_refuses_stops_okt_run_with_one_line(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path, selector: str
) -> None:
    operator = tmp_path / "selector_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, "--selector", selector, "--metrics-bind-address", "0", "--log-format", "json"]

    # A guard, not a measure: before the fix the operator ran on, its informer asking again and again.
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    assert done.returncode == 2  # a usage error
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"Error: Invalid value for '--selector': label selector {selector!r}:")
    assert "Traceback" not in done.stderr


def test_a_selector_the_api_server_reads_starts_the_operator(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    operator = tmp_path / "selector_operator.py"
    operator.write_text(OPERATOR)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=["--selector", "app in (web, api),tier!=cache"],
        log_path=tmp_path / "operator.log",
    )

    with running as started:
        assert started.ready()  # its caches synced: every list with the selector answered
