"""A resource's methods shape its desired object and okt never awaits them: an ``async def`` one is refused when its
class is defined, instead of returning a coroutine nobody awaits (its body would silently never run). A reconciler's
hooks may be ``async def``: see tests/unit/reconciler/test_async_hooks.py."""

from __future__ import annotations

from typing import Any

import pytest

import okt


@pytest.mark.parametrize("method", ["mutate_with_cr", "mutate_with_initial_data", "hashable_ref"])
def test_an_async_method_of_a_resource_is_refused(method: str) -> None:
    async def coroutine(self: Any, *args: Any) -> None:
        return None

    with pytest.raises(TypeError, match=rf"^Config\.{method} is 'async def', but a resource's methods are synchronous"):
        type("Config", (okt.MutableResource,), {method: coroutine})


def test_synchronous_methods_of_a_resource_are_accepted() -> None:
    class Config(okt.MutableResource):
        api_version = "v1"
        kind = "ConfigMap"

        def mutate_with_cr(self, cr: Any) -> None:
            return None

    assert Config.kind == "ConfigMap"
