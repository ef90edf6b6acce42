"""The operators run from a runtime-only virtualenv, as they would ship in a container: the project's venv also holds
the dev tools, whose memory no operator should be charged for. It holds okt (from this checkout) and kopf only."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tomllib

from benchmarks.contenders import ROOT
from okt.testing import build


def venv_dir() -> pathlib.Path:
    configured = os.environ.get("OKT_BENCH_VENV")
    return pathlib.Path(configured) if configured else build.cache_root().parent / "bench-venv"


def prepare() -> pathlib.Path:
    """Create (once) and refresh the runtime venv; return its bin directory."""
    venv = venv_dir()
    python = venv / "bin" / "python"
    quiet = ["-q", "--disable-pip-version-check"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", *quiet, str(ROOT), "kopf"], check=True)
    else:
        subprocess.run(
            [str(python), "-m", "pip", "install", *quiet, "--no-deps", "--force-reinstall", str(ROOT)], check=True
        )
        # okt's dependencies as the checkout declares them now (a venv made before a new one was added lacks it).
        subprocess.run([str(python), "-m", "pip", "install", *quiet, *dependencies()], check=True)
    return venv / "bin"


def dependencies() -> list[str]:
    """okt's runtime requirements, as ``pyproject.toml`` declares them."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        return [str(requirement) for requirement in tomllib.load(file)["project"]["dependencies"]]
