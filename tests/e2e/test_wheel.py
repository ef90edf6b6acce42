"""The wheel as users install it: the generators arrive as ``okt.codegen``, and ``okt`` is the only top-level name.

The repository keeps the generators in a top-level ``codegen/`` folder (``okt/codegen`` links to it). A wheel that
installed them as ``codegen`` would overwrite, or be overwritten by, the PyPI project of that name. Here the wheel is
built offline from the files the container image copies (``pyproject.toml``, ``README.md``, ``okt/``, ``codegen/``;
``--no-build-isolation``: the dev venv's setuptools), installed into a fresh venv that borrows the dev venv's
dependencies through a ``.pth`` file, and run from an empty directory, so no part of the checkout can stand in for
what was installed.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Sequence

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEP_TIMEOUT = 120


@dataclasses.dataclass(frozen=True)
class Installed:
    python: pathlib.Path
    bin_dir: pathlib.Path
    site_packages: pathlib.Path
    record: frozenset[str]
    """Every path the wheel's RECORD lists, relative to site-packages."""
    workdir: pathlib.Path
    """An empty directory outside the checkout: the current directory of every command run here."""


def run(command: Sequence[str | os.PathLike[str]], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        check=False,
    )


def succeed(command: Sequence[str | os.PathLike[str]], cwd: pathlib.Path) -> str:
    completed = run(command, cwd)
    assert completed.returncode == 0, f"{command} failed:\n{completed.stderr[-4000:]}\n{completed.stdout[-2000:]}"
    return completed.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("okt", "codegen"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))

    wheels = tmp_path_factory.mktemp("wheels")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    succeed([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", wheels, source], source)
    (wheel,) = wheels.glob("okt-*.whl")

    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False, symlinks=True)
    bin_dir = env_dir / "bin"
    python = bin_dir / "python"
    workdir = tmp_path_factory.mktemp("work")
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site_packages = pathlib.Path(succeed([python, "-c", purelib], workdir).strip())
    borrowed = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site_packages / "dev_dependencies.pth").write_text("".join(f"{path}\n" for path in borrowed))

    succeed([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], workdir)
    (dist_info,) = site_packages.glob("okt-*.dist-info")
    record = frozenset(line.split(",", 1)[0] for line in (dist_info / "RECORD").read_text().splitlines() if line)
    return Installed(python, bin_dir, site_packages, record, workdir)


def test_the_wheel_installs_okt_as_its_only_top_level_package(installed: Installed) -> None:
    top_level = {path.split("/", 1)[0] for path in installed.record if not path.startswith("../")}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"okt"}
    assert not (installed.site_packages / "codegen").exists()
    assert "okt/codegen/__init__.py" in installed.record


def test_every_file_of_okt_and_of_the_generators_ships_in_the_wheel(installed: Installed) -> None:
    def files(folder: pathlib.Path, installed_as: str) -> set[str]:
        return {
            f"{installed_as}/{path.relative_to(folder).as_posix()}"
            for path in folder.rglob("*")
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts
        }

    expected = files(ROOT / "okt", "okt") | files(ROOT / "codegen", "okt/codegen")
    assert {"okt/py.typed", "okt/codegen/py.typed", "okt/codegen/kinds.yaml"} <= expected
    assert expected - installed.record == set()


def test_okt_codegen_imports_and_no_codegen_module_exists(installed: Installed) -> None:
    script = (
        "import importlib.util, okt.codegen.crd\n"
        "print(okt.codegen.crd.__file__)\n"
        "print(importlib.util.find_spec('codegen'))\n"
    )
    out = succeed([installed.python, "-c", script], installed.workdir)
    crd_file, codegen_spec = out.splitlines()
    assert pathlib.Path(crd_file).is_relative_to(installed.site_packages)
    assert codegen_spec == "None"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param(["okt", "gen", "crd", "--help"], "Usage: okt gen crd", id="okt-gen-crd"),
        pytest.param(["okt", "--help"], "gen ", id="okt-lists-gen"),
        pytest.param(["okt-gen-resource", "-list"], "ConfigMap", id="okt-gen-resource"),
    ],
)
def test_the_installed_commands_run(installed: Installed, command: list[str], expected: str) -> None:
    out = succeed([installed.bin_dir / command[0], *command[1:]], installed.workdir)
    assert expected in out


def test_users_mypy_reads_the_types_of_okt_codegen(installed: Installed) -> None:
    user_module = installed.workdir / "user_module.py"
    user_module.write_text("from okt.codegen import errors\n\nwrong: int = errors.CodegenError('boom')\n")
    completed = run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            "--python-executable",
            installed.python,
            user_module,
        ],
        installed.workdir,
    )
    assert 'expression has type "CodegenError", variable has type "int"' in completed.stdout, completed.stdout
    assert completed.returncode == 1
