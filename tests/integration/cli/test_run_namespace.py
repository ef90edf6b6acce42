"""``okt run --namespace`` (and ``--lease-namespace``) that the API server cannot take stops at start, in one line."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from okt.testing import envtest

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"


@pytest.mark.parametrize(
    ("option", "value", "shown"),
    [
        ("-n", "Team_A", "'-n' / '--namespace'"),
        ("--namespace", "team-a.", "'-n' / '--namespace'"),
        ("--lease-namespace", "Ops Team", "'--lease-namespace'"),
    ],
)
def test_a_namespace_the_api_server_refuses_stops_okt_run_with_one_line(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path, option: str, value: str, shown: str
) -> None:
    operator = tmp_path / "namespace_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, option, value, "--leader-elect", "--metrics-bind-address", "0", "--log-format", "json"]

    # A guard, not a measure: before the fix the operator ran on, its informer and elector refused again and again.
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    assert done.returncode == 2, done.stderr  # a usage error
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        f"Error: Invalid value for {shown}: {value!r} is not a namespace name: "
        "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
    ]
