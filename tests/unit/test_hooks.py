"""``@okt.on_startup``/``@okt.on_cleanup`` mark functions; ``okt run`` finds them in the operator's file."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from okt import hooks
from okt.reconciler import loader

OPERATOR = """
import okt

calls = []

@okt.on_startup
def first(client):
    calls.append("first")

@okt.on_startup
def second(client):
    calls.append("second")

@okt.on_cleanup
def bye():
    calls.append("bye")

def helper():
    pass

class Things(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"
"""


def test_the_hooks_of_an_operator_file_are_found_in_definition_order(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(OPERATOR)
    module = loader.load_module(str(path))

    startups, cleanups = hooks.collect(module)

    assert [hooks.name_of(h) for h in startups] == ["first", "second"]
    assert [hooks.name_of(h) for h in cleanups] == ["bye"]
    assert [cls.__name__ for cls in loader.reconcilers_of(module, str(path))] == ["Things"]


async def _warm(client: object) -> None:
    return None


async def _flush() -> None:
    return None


@pytest.mark.parametrize(("decorate", "fn"), [(hooks.on_startup, _warm), (hooks.on_cleanup, _flush)])
def test_an_async_operator_hook_is_refused_where_it_is_declared(decorate: Any, fn: Any) -> None:
    with pytest.raises(TypeError, match=rf"^{fn.__name__} is 'async def', but okt's operator hooks are synchronous"):
        decorate(fn)
