"""``okt run`` finds its cluster in ``$KUBECONFIG`` as kubectl does: its files merged."""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

import pytest
import yaml

from okt.testing import OperatorProcess, envtest

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"


def test_okt_run_uses_a_context_the_second_file_of_kubeconfig_defines(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    # Only the first file was read: okt run stopped at start, "it has no context 'okt-envtest'".
    plane = yaml.safe_load(control_plane.kubeconfig.read_text())
    second = tmp_path / "b" / "config"
    second.parent.mkdir()
    shutil.copy(control_plane.ca_file, second.parent / "ca.crt")
    plane["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"  # read from the folder of the file saying it
    del plane["current-context"]
    envtest.write_private(second, yaml.safe_dump(plane))
    first = tmp_path / "a" / "config"
    first.parent.mkdir()
    first.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": "elsewhere", "context": {"cluster": "elsewhere"}}],
                "current-context": plane["contexts"][0]["name"],
            }
        )
    )
    operator = tmp_path / "kubeconfig_operator.py"
    operator.write_text(OPERATOR)
    probe = f"127.0.0.1:{envtest.free_port()}"
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "-n", namespace]
    argv += ["--metrics-bind-address", probe, "--webhook-port", "0", "--log-format", "json"]
    running = OperatorProcess(
        argv,
        env={
            "KUBECONFIG": os.pathsep.join([str(first), str(second)]),
            "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3]),
        },
        cwd=tmp_path,
        log_path=tmp_path / "operator.log",
        probe_url=f"http://{probe}",
    )

    with running as started:
        assert started.ready(), started.log_text()
