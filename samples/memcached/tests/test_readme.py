"""The operator the README shows runs as written: its code block, executed, converges a Memcached on the real
control plane, and it uses nothing of okt but the public surface."""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt.testing import RunningOperator
from samples.memcached.tests import harness

pytestmark = pytest.mark.integration

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"
SAMPLE = pathlib.Path(__file__).resolve().parents[1]


def readme_operator() -> str:
    """The first Python block of the README."""
    match = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None, "the README shows no Python block"
    return match.group(1)


def test_the_readme_operator_uses_only_okts_public_names() -> None:
    tree = ast.parse(readme_operator())
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "okt"
    }
    imports = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (node.module or "").startswith("okt")
    }

    assert used <= set(okt.__all__), used - set(okt.__all__)
    assert imports == set()


def test_the_readme_operator_converges_a_memcached(
    run_operator: Callable[..., RunningOperator], memcacheds: harness.Memcacheds, monkeypatch: Any
) -> None:
    monkeypatch.syspath_prepend(str(SAMPLE))  # ``from memcached_operator...`` as the README's project has it
    namespace: dict[str, Any] = {"__name__": "readme_operator"}
    exec(compile(readme_operator(), str(README), "exec"), namespace)  # noqa: S102 - the README's own code
    reconciler = namespace["MemcachedReconciler"]
    run_operator(reconciler)

    memcacheds.create("readme", size=1)
    [summary] = memcacheds.wait_converged(["readme"])

    assert summary.children == harness.CHILDREN
    assert memcacheds.config("readme") is not None
