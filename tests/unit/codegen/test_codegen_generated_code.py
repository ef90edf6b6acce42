"""The generated resource wrappers are real code: ruff-clean, mypy-strict-clean, importable, and they work with okt.

The golden modules (see ``test_codegen_resource.py``) are copied into a throw-away package, then linted and
type-checked with this repository's configuration by the virtual environment's own ruff and mypy, and imported: each
wrapper renders its template for a custom resource through okt's real ``Resource`` machinery.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import okt
from okt.codegen import dictionary, resource

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).parent / "golden"
BIN = Path(sys.executable).parent
KINDS = [spec.kind for spec in dictionary.builtin()]
CR = okt.CustomResource(
    {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": "cache-one", "namespace": "team-a", "uid": "0000"},
        "spec": {"size": 3},
    }
)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The goldens as the package ``okt_golden_wrappers`` (in a fresh directory)."""
    root = tmp_path_factory.mktemp("generated")
    target = root / "okt_golden_wrappers"
    target.mkdir()
    for path in GOLDEN.glob("*.py"):
        shutil.copyfile(path, target / path.name)
    (target / "__init__.py").write_text('"""The golden wrappers."""\n')
    return target


def run_tool(*arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(REPO)}
    return subprocess.run(
        [str(BIN / arguments[0]), *arguments[1:]], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )


def test_every_dictionary_kind_has_both_golden_modules() -> None:
    expected = {f"{name}.py" for kind in KINDS for name in resource.module_names(kind, "Memcached")}
    assert {path.name for path in GOLDEN.glob("*.py")} == expected


def test_generated_code_passes_ruff_check_with_the_repository_configuration(package: Path) -> None:
    result = run_tool("ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(package))
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_code_is_ruff_formatted(package: Path) -> None:
    result = run_tool("ruff", "format", "--check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(package))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(600)
def test_generated_code_passes_mypy_strict(package: Path) -> None:
    result = run_tool("mypy", "--strict", "--config-file", str(REPO / "pyproject.toml"), str(package))
    assert result.returncode == 0, result.stdout + result.stderr


def wrapper_class(package: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> type[Any]:
    monkeypatch.syspath_prepend(str(package.parent))
    _, user_module = resource.module_names(kind, "Memcached")
    module = importlib.import_module(f"{package.name}.{user_module}")
    cls: type[Any] = getattr(module, f"{kind}Memcached")
    return cls


@pytest.mark.parametrize("kind", KINDS)
def test_generated_wrapper_extends_the_okt_class_the_dictionary_names(
    kind: str, package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = dictionary.builtin().lookup(kind)
    cls = wrapper_class(package, monkeypatch, kind)
    assert issubclass(cls, getattr(okt, spec.base))
    assert (cls.api_version, cls.kind) == (spec.api_version, spec.kind)
    assert issubclass(cls, okt.MutableResource) is spec.mutable


@pytest.mark.parametrize("kind", KINDS)
def test_generated_wrapper_renders_its_child_for_a_custom_resource(
    kind: str, package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = dictionary.builtin().lookup(kind)
    child = wrapper_class(package, monkeypatch, kind)(CR, name="cache-one-child", params={"password": "s3cret"})
    before = child.desired
    child.mutate_with_cr(CR)
    assert child.desired == before, "the default mutate_with_cr changes nothing"
    assert (child.desired["apiVersion"], child.desired["kind"]) == (spec.api_version, kind)
    assert child.desired["metadata"]["name"] == "cache-one-child"
    if spec.namespaced:
        assert child.desired["metadata"]["namespace"] == "team-a"
    meta = child.desired["metadata"]
    expected = {field: child.desired[field] for field in spec.hashed if field in child.desired}
    expected["labels"] = meta.get("labels") or {}
    if meta.get("annotations"):
        expected["annotations"] = meta["annotations"]
    assert child.hashable_ref() == expected
    assert set(child.hashable_ref()) - {"labels", "annotations"}, "every sample manifest sets a hashed field"


def test_template_expressions_render_from_the_custom_resource_and_params(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = wrapper_class(package, monkeypatch, "Deployment")(CR, name="cache-one")
    secret = wrapper_class(package, monkeypatch, "Secret")(CR, name="cache-one", params={"password": "s3cret"})
    assert deployment.desired["spec"]["replicas"] == 3
    assert secret.desired["stringData"]["password"] == "s3cret"
