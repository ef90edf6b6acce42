"""The package as users get it: an sdist, the wheel built from it, installed in a fresh venv and run from there.

``python -m build`` without network: the sdist comes from setuptools' PEP 517 backend (the dev venv's setuptools, no
isolation), the wheel is built from the unpacked sdist — so a file the sdist forgets is missing from the wheel too.
The repository keeps the generators in a top-level ``codegen/`` folder (``okt/codegen`` links to it); a wheel that
installed them as ``codegen`` would overwrite, or be overwritten by, the PyPI project of that name. The installed
``okt`` then runs from an empty directory, so no part of the checkout can stand in for what was installed.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import tarfile
import tomllib

import pytest
import yaml

from tests.e2e import installs

VERSION = tomllib.loads((installs.ROOT / "pyproject.toml").read_text())["project"]["version"]


@dataclasses.dataclass(frozen=True)
class Installed:
    venv: installs.Venv
    sdist: pathlib.Path
    record: frozenset[str]
    """Every path the wheel's RECORD lists, relative to site-packages."""
    workdir: pathlib.Path
    """An empty directory outside the checkout: the current directory of every command run here."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    source = installs.copy_sources(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    build_sdist = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    sdist = dist / installs.succeed([sys.executable, "-c", build_sdist], source).strip().splitlines()[-1]
    unpacked = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (sdist_root,) = unpacked.iterdir()

    wheels = tmp_path_factory.mktemp("wheels")
    wheel_command = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", wheels, sdist_root]
    installs.succeed([*installs.PIP, *wheel_command], sdist_root)
    (wheel,) = wheels.glob(f"okt-{VERSION}-*.whl")

    workdir = tmp_path_factory.mktemp("work")
    venv = installs.fresh_venv(tmp_path_factory.mktemp("venv"), workdir)
    installs.pip_install(venv, wheel, cwd=workdir)
    (dist_info,) = venv.site_packages.glob("okt-*.dist-info")
    record = frozenset(line.split(",", 1)[0] for line in (dist_info / "RECORD").read_text().splitlines() if line)
    return Installed(venv, sdist, record, workdir)


def okt(installed: Installed, *arguments: str, cwd: pathlib.Path | None = None) -> str:
    return installs.succeed([installed.venv.bin_dir / "okt", *arguments], cwd or installed.workdir)


def test_the_sdist_carries_the_sources_the_changelog_and_no_tests(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "PKG-INFO", "okt/codegen/scaffold.py"} <= names
    assert "okt/codegen/templates/scaffold/project/Makefile.jinja" in names
    assert not {name for name in names if name.startswith(("tests/", "samples/", "benchmarks/"))}


def test_the_wheel_installs_okt_as_its_only_top_level_package(installed: Installed) -> None:
    top_level = {path.split("/", 1)[0] for path in installed.record if not path.startswith("../")}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"okt"}
    assert not (installed.venv.site_packages / "codegen").exists()
    assert "okt/codegen/__init__.py" in installed.record


def test_every_file_of_okt_and_of_the_generators_ships_in_the_wheel(installed: Installed) -> None:
    def files(folder: pathlib.Path, installed_as: str) -> set[str]:
        return {
            f"{installed_as}/{path.relative_to(folder).as_posix()}"
            for path in folder.rglob("*")
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts
        }

    expected = files(installs.ROOT / "okt", "okt") | files(installs.ROOT / "codegen", "okt/codegen")
    assert {"okt/py.typed", "okt/codegen/py.typed", "okt/codegen/kinds.yaml"} <= expected
    assert expected - installed.record == set()


def test_okt_codegen_imports_and_no_codegen_module_exists(installed: Installed) -> None:
    script = (
        "import importlib.util, okt.codegen.crd\n"
        "print(okt.codegen.crd.__file__)\n"
        "print(importlib.util.find_spec('codegen'))\n"
    )
    out = installs.succeed([installed.venv.python, "-c", script], installed.workdir)
    crd_file, codegen_spec = out.splitlines()
    assert pathlib.Path(crd_file).is_relative_to(installed.venv.site_packages)
    assert codegen_spec == "None"


def test_okt_version_is_the_one_in_pyproject(installed: Installed) -> None:
    assert okt(installed, "--version").strip() == f"okt, version {VERSION}"


def test_the_installed_okt_scaffolds_a_project_and_generates_its_crd(installed: Installed) -> None:
    okt(installed, "init", "wheel-operator", "--group", "example.com", "--version", "v1", "--kind", "Widget")
    project = installed.workdir / "wheel-operator"

    crd = yaml.safe_load(okt(installed, "gen", "crd", "main.py", cwd=project))

    assert crd["metadata"]["name"] == "widgets.example.com"
    assert f'"okt>={VERSION}"' in (project / "pyproject.toml").read_text()
    assert "stateDiagram-v2" in okt(installed, "graph")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param(["okt", "gen", "crd", "--help"], "Usage: okt gen crd", id="okt-gen-crd"),
        pytest.param(["okt", "--help"], "gen ", id="okt-lists-gen"),
        pytest.param(["okt-gen-resource", "-list"], "ConfigMap", id="okt-gen-resource"),
    ],
)
def test_the_installed_commands_run(installed: Installed, command: list[str], expected: str) -> None:
    out = installs.succeed([installed.venv.bin_dir / command[0], *command[1:]], installed.workdir)
    assert expected in out


def test_users_mypy_reads_the_types_of_okt_codegen(installed: Installed) -> None:
    user_module = installed.workdir / "user_module.py"
    user_module.write_text("from okt.codegen import errors\n\nwrong: int = errors.CodegenError('boom')\n")
    completed = installs.mypy_strict(installed.venv, user_module)
    assert 'expression has type "CodegenError", variable has type "int"' in completed.stdout, completed.stdout
    assert completed.returncode == 1
