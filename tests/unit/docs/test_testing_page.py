"""``docs/guide/testing.md``: its examples import what exists, and its ``FakeClient`` example passes.

The page's examples test the memcached sample (``samples/memcached``): each ``import`` of a python block is run with
the sample's folder on ``sys.path``, as a test in ``samples/memcached/tests/`` runs, and the first test of the
``FakeClient`` example is run against the sample's reconciler.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
import sys
import types
from collections.abc import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "guide" / "testing.md"
SAMPLE = ROOT / "samples" / "memcached"

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

BLOCKS = [
    (f"{PAGE.name}:{PAGE.read_text(encoding='utf-8')[: match.start()].count(chr(10)) + 2}", match.group(1))
    for match in _BLOCK.finditer(PAGE.read_text(encoding="utf-8"))
]
"""``(where, code)`` of each python block, ``where`` the line of its first line of code."""


def _imports() -> list[tuple[str, str, str | None]]:
    """``(where, module, name)`` for each name a block imports (``name`` None for ``import module``)."""
    found: list[tuple[str, str, str | None]] = []
    for where, code in BLOCKS:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found += [(where, alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                found += [(where, node.module, alias.name) for alias in node.names]
    return found


IMPORTS = _imports()


@pytest.fixture
def sample_on_path() -> Iterator[None]:
    """The sample's folder first on ``sys.path``; its package forgotten afterwards, as before."""
    saved_path = list(sys.path)
    saved = {n: m for n, m in sys.modules.items() if n == "memcached_operator" or n.startswith("memcached_operator.")}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(SAMPLE))
    try:
        yield
    finally:
        for name in [n for n in sys.modules if n == "memcached_operator" or n.startswith("memcached_operator.")]:
            del sys.modules[name]
        sys.modules.update(saved)
        sys.path[:] = saved_path


def test_the_page_imports_the_sample() -> None:
    assert any(module.startswith("memcached_operator") for _, module, _ in IMPORTS)


@pytest.mark.parametrize(
    ("where", "module", "name"), IMPORTS, ids=[f"{where} {module} {name or ''}" for where, module, name in IMPORTS]
)
def test_each_import_of_the_page_resolves(sample_on_path: None, where: str, module: str, name: str | None) -> None:
    imported = importlib.import_module(module)
    if name is not None and not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # a submodule: ``from okt.testing import crds``


def test_the_fake_client_example_passes_against_the_sample(sample_on_path: None) -> None:
    ((where, code),) = [(where, code) for where, code in BLOCKS if "FakeClient(kinds=" in code]
    example = types.ModuleType("testing_page_example")
    exec(compile(code, where, "exec"), example.__dict__)

    example.test_a_memcached_gets_its_config_map_and_is_ready()


def _operator_files() -> list[tuple[str, ast.expr, str]]:
    """``(where, expression, code)`` of the operator file each ``OperatorProcess.okt_run(...)`` of the page runs."""
    found = []
    for where, code in BLOCKS:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "okt_run":
                found.append((where, node.args[0], code))
    return found


@pytest.mark.parametrize(("where", "expression", "code"), _operator_files(), ids=lambda value: str(value)[:40])
def test_the_operator_file_an_okt_run_example_names_is_the_samples_wherever_pytest_runs(
    where: str, expression: ast.expr, code: str
) -> None:
    # The example is a test file in the sample's tests/: a relative path is read from pytest's working directory (the
    # repository's root, a CI checkout), where there is no main.py — okt run exited with "no such operator file".
    example = types.ModuleType("testing_page_example")
    example.__file__ = str(SAMPLE / "tests" / "test_example.py")
    tree = ast.parse(code)
    tree.body = [node for node in tree.body if not isinstance(node, ast.FunctionDef)]
    exec(compile(tree, where, "exec"), example.__dict__)

    operator = pathlib.Path(eval(compile(ast.Expression(expression), where, "eval"), example.__dict__))

    assert operator.is_absolute() and operator == SAMPLE / "main.py", operator
