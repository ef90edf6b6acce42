"""The dependencies pyproject.toml declares are exactly the ones okt (and its generators, okt.codegen) import."""

from __future__ import annotations

import ast
import importlib.metadata
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def imported_top_level_modules() -> set[str]:
    found: set[str] = set()
    for package in ("okt", "codegen"):
        for path in (ROOT / package).rglob("*.py"):
            if "testing" in path.relative_to(ROOT).parts:
                continue  # okt.testing is for operator authors' test suites: it may use pytest
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "okt"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalized(re.split(r"[<>=!~ \[;]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}


def test_every_imported_distribution_is_declared_and_every_declared_one_is_imported() -> None:
    by_module = importlib.metadata.packages_distributions()
    imported = {normalized(dist) for module in imported_top_level_modules() for dist in by_module.get(module, [module])}

    assert imported - declared() == set(), "imported but not declared in pyproject.toml"
    assert declared() - imported == set(), "declared in pyproject.toml but never imported"
