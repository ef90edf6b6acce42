"""``okt run`` with credentials the API server does not accept stops at once in one line that says so."""

from __future__ import annotations

import pathlib
import secrets
import subprocess
import sys

import pytest

from okt.testing import envtest

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"


def test_a_token_the_api_server_does_not_accept_stops_okt_run_with_one_line_naming_the_credentials(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    # An expired or revoked token: the API server answered, and the line said it could not be reached.
    stranger = envtest.TokenUser(name="stranger", token=secrets.token_hex(16))
    kubeconfig = control_plane.kubeconfig_for(stranger, tmp_path / "kubeconfig")
    operator = tmp_path / "credentials_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(kubeconfig)]
    argv += ["--metrics-bind-address", "0", "--log-format", "json"]

    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: the Kubernetes API server refused okt's credentials: GET /version -> 401 Unauthorized: Unauthorized: "
        "check the token or client certificate the kubeconfig (or the in-cluster service account) gives, which may "
        "have expired"
    ]
    assert stranger.token not in done.stderr + done.stdout
