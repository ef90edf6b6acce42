"""okt.testing.kubectl.find: which kubectl binary a test runs."""

from __future__ import annotations

import pathlib

import pytest

from okt.testing import kubectl


def executable(path: pathlib.Path) -> pathlib.Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_newest_versioned_kubectl_on_the_path_is_found(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("kubectl.1.9", "kubectl.1.33", "kubectl.1.28"):
        executable(tmp_path / name)
    (tmp_path / "kubectl.1.33.sha256").write_text("0" * 64)
    monkeypatch.delenv("OKT_KUBECTL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    assert kubectl.find() == str(tmp_path / "kubectl.1.33")
