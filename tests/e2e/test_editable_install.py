"""The editable install the getting-started page documents type-checks: mypy finds ``okt`` and reads its types.

setuptools' default editable install of okt's layout is an import hook (``__editable___okt_*_finder.py``): Python
imports through it, but mypy only reads paths, so a user's ``mypy --strict`` stops at "Cannot find implementation or
library stub for module named okt". ``editable_mode=strict`` installs a tree of links on a plain ``.pth`` path
instead. The command run here is the one the page shows, read from the page.
"""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest

from tests.e2e import installs

PAGE = installs.ROOT / "docs" / "getting-started.md"
DOCUMENTED = re.compile(r"`pip install -e '<checkout>\[dev\]'(?P<options>[^`]*)`")

USER_MODULE = """\
import okt
from okt.codegen import errors


class WidgetReconciler(okt.Reconciler):
    api_version = "example.com/v1alpha1"
    kind = "Widget"


wrong: int = errors.CodegenError("boom")
"""


def documented_options() -> list[str]:
    match = DOCUMENTED.search(PAGE.read_text())
    assert match, f"{PAGE.name} no longer shows `pip install -e '<checkout>[dev]' ...`"
    return shlex.split(match["options"])


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> installs.Venv:
    source = installs.copy_sources(tmp_path_factory.mktemp("checkout"))
    workdir = tmp_path_factory.mktemp("work")
    target = installs.fresh_venv(tmp_path_factory.mktemp("venv"), workdir)
    installs.pip_install(target, "--no-build-isolation", "-e", source, *documented_options(), cwd=workdir)
    return target


def test_users_mypy_reads_okt_types_after_the_documented_editable_install(
    editable: installs.Venv, tmp_path: pathlib.Path
) -> None:
    module = tmp_path / "user_operator.py"
    module.write_text(USER_MODULE)
    completed = installs.mypy_strict(editable, module)
    assert "Cannot find implementation" not in completed.stdout, completed.stdout
    assert 'expression has type "CodegenError", variable has type "int"' in completed.stdout, completed.stdout
    assert "Found 1 error in 1 file" in completed.stdout, completed.stdout


def test_the_editable_install_runs_the_okt_command(editable: installs.Venv, tmp_path: pathlib.Path) -> None:
    out = installs.succeed([editable.bin_dir / "okt", "gen", "crd", "--help"], tmp_path)
    assert "Usage: okt gen crd" in out
