"""``docs/guide/upgrading.md``: its example test passes on the real API server, as the page gives it.

The block after ``<!-- example: test_upgrade.py -->`` is a pytest module of the reader's; its test is called with this
session's ``kube``, ``namespace`` and ``apply_crd``, the plugin's fixtures it asks for. The costs of the page's table
are pinned where the behaviour is tested (``tests/integration/reconciler/test_upgrades.py`` and the tests it names).
"""

from __future__ import annotations

import inspect
import pathlib
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import okt

pytestmark = pytest.mark.integration

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "upgrading.md"


@pytest.fixture
def example() -> Iterator[types.ModuleType]:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: test_upgrade\.py -->\n```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert match, "the page lost its example block"
    line = text[: match.start(1)].count("\n")
    module = types.ModuleType("test_upgrade")
    sys.modules[module.__name__] = module  # pydantic resolves the models' annotations through sys.modules
    try:
        exec(compile("\n" * line + match.group(1), str(PAGE), "exec"), module.__dict__)  # the page's own line numbers
        yield module
    finally:
        del sys.modules[module.__name__]


def test_the_pages_example_passes_with_the_plugins_fixtures(
    example: types.ModuleType, kube: okt.Client, namespace: str, apply_crd: Callable[[dict[str, Any]], okt.Kind]
) -> None:
    tests = [value for name, value in vars(example).items() if name.startswith("test_") and callable(value)]
    assert len(tests) == 1, "the example holds one test"
    (test,) = tests
    fixtures = {"kube": kube, "namespace": namespace, "apply_crd": apply_crd}
    assert set(inspect.signature(test).parameters) <= set(fixtures)

    test(**{name: fixtures[name] for name in inspect.signature(test).parameters})
