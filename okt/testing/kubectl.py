"""The real ``kubectl``, for tests that check okt's promises the way users check them (``kubectl wait``...).

:func:`kubectl` finds the binary (``$OKT_KUBECTL``, then ``kubectl`` on the PATH, then a versioned one beside it,
``kubectl.1.33`` ...) and skips the calling test with one clear line when there is none.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Sequence

import pytest

_VERSIONED = re.compile(r"kubectl\.1\.(\d+)")
"""A versioned kubectl's name (``kubectl.1.33``); its minor version orders them as numbers, not as text."""


def find() -> str | None:
    """The kubectl binary to use, or None; of versioned ones in a ``PATH`` directory, the newest."""
    explicit = os.environ.get("OKT_KUBECTL")
    if explicit:
        return explicit if pathlib.Path(explicit).is_file() else None
    found = shutil.which("kubectl")
    if found:
        return found
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidates = pathlib.Path(directory).glob("kubectl.1.*") if directory else ()
        versioned = {
            int(match.group(1)): path
            for path in candidates
            if (match := _VERSIONED.fullmatch(path.name)) and os.access(path, os.X_OK)
        }
        if versioned:
            return str(versioned[max(versioned)])
    return None


def kubectl(
    kubeconfig: pathlib.Path, *args: str, timeout: float = 60.0, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``kubectl --kubeconfig KUBECONFIG ARGS``; skip the test when no kubectl is installed."""
    binary = find()
    if binary is None:
        pytest.skip("no kubectl found (PATH, or $OKT_KUBECTL): this test runs the real command")
    argv: Sequence[str] = [binary, "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check)
