"""okt installed as users install it, away from the checkout: a copy of the sources, a fresh venv, pip offline.

Why a copy: an install from the checkout itself would leave ``build/`` and ``*.egg-info`` there, and a command run
from inside it could import ``okt`` from the current directory instead of from what was installed. Why borrow the
dev venv's site-packages (a ``.pth`` file) instead of installing the dependencies: the machines have no network, and
the point is how okt itself is packaged, not pip's resolver.
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEP_TIMEOUT = 180
SOURCES = ("pyproject.toml", "README.md", "CHANGELOG.md", "MANIFEST.in", "okt", "codegen")
"""What a build reads: what the container image copies, with the changelog and the manifest the sdist reads."""
PIP = (sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet")


@dataclasses.dataclass(frozen=True)
class Venv:
    python: pathlib.Path
    bin_dir: pathlib.Path
    site_packages: pathlib.Path


def run(
    command: Sequence[str | os.PathLike[str]], cwd: pathlib.Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run with none of the caller's PYTHONPATH, so only what is installed can be imported."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        check=False,
    )


def succeed(command: Sequence[str | os.PathLike[str]], cwd: pathlib.Path, env: dict[str, str] | None = None) -> str:
    completed = run(command, cwd, env)
    assert completed.returncode == 0, f"{command} failed:\n{completed.stderr[-4000:]}\n{completed.stdout[-2000:]}"
    return completed.stdout


def copy_sources(destination: pathlib.Path) -> pathlib.Path:
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(source, destination / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    return destination


def fresh_venv(directory: pathlib.Path, workdir: pathlib.Path) -> Venv:
    """A venv without okt whose interpreter still finds okt's dependencies (and setuptools) in the dev venv."""
    venv.create(directory, with_pip=False, symlinks=True)
    python = directory / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site_packages = pathlib.Path(succeed([python, "-c", purelib], workdir).strip())
    borrowed = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site_packages / "dev_dependencies.pth").write_text("".join(f"{path}\n" for path in borrowed))
    return Venv(python, directory / "bin", site_packages)


def pip_install(target: Venv, *arguments: str | os.PathLike[str], cwd: pathlib.Path) -> None:
    succeed([*PIP, "--python", target.python, "install", "--no-deps", "--no-index", *arguments], cwd)


def mypy_strict(target: Venv, module: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """The dev venv's mypy checking a user's module against what ``target`` has installed."""
    arguments = ["--strict", "--no-incremental", "--cache-dir", os.devnull, "--python-executable", target.python]
    return run([sys.executable, "-m", "mypy", *arguments, module], module.parent)
