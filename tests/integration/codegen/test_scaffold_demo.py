"""``make demo`` of a project made by ``okt init`` installs its CRD on okt's local control plane with kubectl.

The demo target starts the control plane itself (``okt envtest start``, a singleton this test leaves alone), so its
command that installs the CRDs is read from ``make -n demo`` and run as written, with ``KUBECONFIG`` naming this
session's control plane. The project's spec gains a ``dict[Literal[...], str]`` field, whose CEL rule
(``x-kubernetes-validations``) Kubernetes 1.20's OpenAPI does not know.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import subprocess
import sys

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[3]
CRDS = kinds.CRD


def run(command: list[str], cwd: pathlib.Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_make_demo_installs_a_crd_with_a_cel_rule_on_the_local_control_plane(
    tmp_path: pathlib.Path, control_plane: envtest.ControlPlane, kube: kube_client.Client
) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not installed"
    group = f"demo{secrets.token_hex(3)}.example.com"
    okt = [sys.executable, "-m", "okt"]
    made = run([*okt, "init", "demo-op", "--group", group, "--version", "v1alpha1", "--kind", "Widget"], tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "demo-op"
    api = project / "demo_op" / "widget" / "api.py"
    api.write_text(
        api.read_text()
        .replace("import pydantic\n", "from typing import Literal\n\nimport pydantic\n")
        .replace("    message: str = ", '    limits: dict[Literal["cpu", "memory"], str] = {}\n    message: str = ')
    )
    manifests = run(["make", "manifests", f"PYTHON={sys.executable}"], project)
    assert manifests.returncode == 0, manifests.stdout + manifests.stderr
    assert "x-kubernetes-validations" in (project / "deploy" / "crd.yaml").read_text()

    planned = run(["make", "-n", "demo", f"KUBECTL={kubectl}"], project)
    assert planned.returncode == 0, planned.stderr
    (install,) = [line.removesuffix(" && \\") for line in planned.stdout.splitlines() if "deploy/crd.yaml" in line]
    installed = run(["bash", "-e", "-c", install], project, KUBECONFIG=str(control_plane.kubeconfig))

    name = f"widgets.{group}"
    try:
        assert installed.returncode == 0, installed.stdout + installed.stderr
        stored = kube.get(CRDS, name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        assert stored["properties"]["limits"] == {  # the API server dropped the rule it does not know
            "type": "object",
            "default": {},
            "maxProperties": 2,
            "additionalProperties": {"type": "string"},
        }
    finally:
        kube.delete(CRDS, name)
