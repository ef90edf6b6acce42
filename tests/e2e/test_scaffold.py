"""A project made by ``okt init`` (and grown by ``okt create api``) passes its own ``make test`` at once.

The scaffold's tests run as its author runs them — ``make test`` in the project folder, a pytest session of its own with
okt's plugin starting a real local control plane — with this checkout's okt (``PYTHONPATH``) and the dev venv's
Python; nothing is downloaded.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT = 280


def run(command: list[str], cwd: pathlib.Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"{command} failed:\n{output[-6000:]}"
    return output


def test_a_scaffolded_project_with_two_kinds_passes_make_test(tmp_path: pathlib.Path) -> None:
    okt = [sys.executable, "-m", "okt"]
    run([*okt, "init", "my-operator", "--group", "example.com", "--version", "v1alpha1", "--kind", "Widget"], tmp_path)
    project = tmp_path / "my-operator"
    run([*okt, "create", "api", "--kind", "Gadget"], project)

    output = run(["make", "test", f"PYTHON={sys.executable}"], project)

    assert re.search(r"\b8 passed\b", output), output[-3000:]
    assert "failed" not in output, output[-3000:]


def test_make_manifests_regenerates_the_deployment_and_the_whole_kustomize_tree(tmp_path: pathlib.Path) -> None:
    okt = [sys.executable, "-m", "okt"]
    run([*okt, "init", "my-operator", "--group", "example.com", "--version", "v1alpha1", "--kind", "Widget"], tmp_path)
    project = tmp_path / "my-operator"
    written = {path: path.read_text() for path in sorted((project / "config").rglob("*.yaml"))}
    for path in written:
        path.unlink()

    run(["make", "manifests", f"PYTHON={sys.executable}"], project)

    assert {path: path.read_text() for path in written} == written  # the same generators as `okt init`
    assert project / "config" / "base" / "manager.yaml" in written
