"""``docs/guide/validation.md`` against the real API server: its example, its CRD, and every row of its outcome table.

The page's example (the block after ``<!-- example: webapp.py -->``) is written to a project folder, its CRD generated
with ``okt gen crd webapp.py`` as the page says and applied, and the page's last table is read row by row: each
``spec`` is created as written; a row starting ``422`` must be refused with that message, a ``Ready=False`` row stored
and then reported ``InvalidSpec`` with that message by the example's reconciler, the last row stored as described and
``Ready=True``. A row this test cannot read fails it, so the page and the test cannot drift apart.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import secrets
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import okt
from okt.cli import main as cli_main
from okt.testing import RunningOperator, condition, wait_for

pytestmark = pytest.mark.integration

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "validation.md"
API_VERSION = "apps.example.com/v1alpha1"


def _example(page: str) -> str:
    match = re.search(r"<!-- example: webapp\.py -->\n```python\n(.*?)\n```", page, re.DOTALL)
    assert match, "the page lost its example block"
    return match.group(1) + "\n"


def _rows(page: str) -> list[tuple[dict[str, Any], str]]:
    """The outcome table: each row's spec (the YAML flow mapping) and its result cell."""
    table = page.split("| `spec` applied | result |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        spec_cell, result = (cell.strip() for cell in line.strip("|").split("|", 1))
        rows.append((yaml.safe_load(spec_cell.strip("`")), result))
    assert len(rows) == 6, f"expected the page's six rows, read {len(rows)}"
    return rows


def _expected(result: str) -> list[str]:
    """The pieces of the message the result cell quotes (its last code span, split at the page's ellipses)."""
    message = re.findall(r"`([^`]*)`", result)[-1]
    return [piece for piece in message.split("…") if piece]


def _load(path: pathlib.Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"webapp_{secrets.token_hex(4)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the model's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_the_validation_page_example_behaves_as_its_table_says(
    kube: okt.Client,
    namespace: str,
    apply_crd: Callable[[dict[str, Any]], okt.Kind],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = PAGE.read_text()
    (tmp_path / "webapp.py").write_text(_example(page))
    monkeypatch.chdir(tmp_path)
    generated = CliRunner().invoke(cli_main.cli, ["gen", "crd", "webapp.py"], catch_exceptions=False)
    assert generated.exit_code == 0, generated.output
    crd = yaml.safe_load(generated.output)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec_schema["properties"]["replicas"] == {"type": "integer", "default": 1, "minimum": 1, "maximum": 20}
    assert spec_schema["required"] == ["image"]
    kind = apply_crd(crd)
    reconciler = _load(tmp_path / "webapp.py").WebAppReconciler

    stored: dict[str, tuple[str, dict[str, Any]]] = {}
    for index, (spec, result) in enumerate(_rows(page)):
        name = f"web-{index}"
        obj = {"apiVersion": API_VERSION, "kind": "WebApp", "metadata": {"name": name, "namespace": namespace}}
        if result.startswith("`422`"):
            with pytest.raises(okt.Invalid) as refused:
                kube.create({**obj, "spec": spec}, kind)
            for piece in _expected(result):  # the API server's answer, as the page shows it (kubectl prints it whole)
                said = refused.value.api_message
                assert piece in said, f"{spec}: {said} lacks {piece!r}"
        else:
            assert result.startswith("stored"), f"a row this test cannot read: {result}"
            stored[name] = (result, kube.create({**obj, "spec": spec}, kind))
    assert len(stored) == 3

    with RunningOperator.start(kube, reconciler, namespaces=[namespace]):
        for name, (result, created) in stored.items():

            def ready(name: str = name) -> dict[str, Any] | None:
                found = condition(kube.get(kind, name, namespace), "Ready")
                return found if found and found["status"] in ("True", "False") else None

            found = wait_for(ready, timeout=60, message=f"{name}'s Ready condition")
            if "`Ready=False`" in result:
                assert (found["status"], found["reason"]) == ("False", "InvalidSpec")
                for piece in _expected(result):
                    assert piece in found["message"], f"{name}: {found['message']!r} lacks {piece!r}"
            else:
                assert "`Ready=True`" in result
                assert found["status"] == "True", found
                assert created["spec"] == {"image": "registry.example.com/web:1.0", "replicas": 1, "tier": "free"}
