"""okt's pytest plugin, as a project that installs okt gets it: through its ``pytest11`` entry point."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]

MARKED = """
import pytest

pytestmark = pytest.mark.integration


def test_marked():
    assert True
"""


def test_a_project_of_its_own_can_mark_its_tests_integration_under_strict_markers(tmp_path: pathlib.Path) -> None:
    # The testing guide has every integration test marked @pytest.mark.integration, selected with -m integration: in a
    # project whose configuration does not declare the marker, pytest warned of an unknown mark (an error under
    # --strict-markers) unless the plugin declares it.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_marked.py").write_text(MARKED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}

    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--strict-markers", "-p", "no:cacheprovider", "-m", "integration"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout, ran.stdout
