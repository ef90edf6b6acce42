"""``okt run`` whose start-up hook reached the limit of its retries stops at start, in one line, with status 1."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from okt.testing import envtest, process

pytestmark = pytest.mark.integration

OPERATOR = """\
import okt


@okt.on_startup(retries=2, backoff=0.2)
def backend_up(client):
    raise okt.TemporaryError("the backend is not up yet")


class Maps(okt.Reconciler):
    api_version = "v1"
    kind = "ConfigMap"
"""


def test_a_start_up_hook_that_reaches_its_retries_stops_okt_run_with_one_line_and_status_1(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    # Without a limit the hook was called again and again, for ever: the operator never started, nor exited.
    operator = tmp_path / "startup_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, "--metrics-bind-address", "0", "--webhook-port", "0", "--log-format", "json"]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])}

    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, env=env
    )

    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    assert re.fullmatch(
        r"Error: the start-up hook backend_up failed 2 times in 0\.\d s, and retries=2 allows no more calls: "
        r"TemporaryError: the backend is not up yet",
        errors[0],
    ), errors
    retried = [r for r in process.log_records(done.stderr) if r.get("event") == "start-up hook failed, retried"]
    assert [(r["hook"], r["attempt"], r["retry_in"]) for r in retried] == [("backend_up", 1, 0.2)]
