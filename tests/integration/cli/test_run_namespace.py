"""``okt run --namespace`` (and ``--lease-namespace``) that the API server cannot take stops at start, in one line."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from okt.testing import OperatorProcess, envtest

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


def test_a_namespace_that_does_not_exist_is_said_in_one_warning_and_the_operator_starts(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    # A misspelt -n started an operator that served nothing, without a word.
    operator = tmp_path / "namespace_operator.py"
    operator.write_text(OPERATOR)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace, "nosuch-team"],
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])},
        log_path=tmp_path / "operator.log",
    )

    with running as started:
        assert started.ready()  # a namespace may still be created: the operator serves it from then on
        warnings = [line for line in started.log_text().splitlines() if line.startswith("okt: warning:")]

    assert warnings == [
        "okt: warning: namespace 'nosuch-team' does not exist (yet): okt run serves its objects once it is created"
    ]
