"""okt calls hooks from worker threads and never awaits them: an ``async def`` hook is refused when its class is
defined, instead of returning a coroutine nobody awaits (the hook would silently never run)."""

from __future__ import annotations

from typing import Any

import pytest

import okt


def test_an_async_enter_in_state_is_refused_when_the_reconciler_is_defined() -> None:
    with pytest.raises(
        TypeError, match=r"AsyncReconciler\.enter_in_state is 'async def', but okt hooks are synchronous"
    ):

        class AsyncReconciler(okt.Reconciler):
            async def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:  # type: ignore[override]
                return None


@pytest.mark.parametrize("hook", ["check", "cleanup", "resources", "reconcile_with_cr"])
def test_every_async_hook_of_a_reconciler_is_refused(hook: str) -> None:
    async def coroutine(self: Any, ctx: Any) -> None:
        return None

    with pytest.raises(TypeError, match=f"{hook} is 'async def'"):
        type("Hooked", (okt.Reconciler,), {hook: coroutine})


def test_an_async_generator_hook_is_refused_too() -> None:
    async def resources(self: Any, ctx: Any) -> Any:
        yield None

    with pytest.raises(TypeError, match="resources is 'async def'"):
        type("Generating", (okt.Reconciler,), {"resources": resources})


def test_an_async_mutate_with_cr_of_a_resource_is_refused() -> None:
    async def mutate_with_cr(self: Any, cr: Any) -> None:
        return None

    with pytest.raises(TypeError, match=r"Config\.mutate_with_cr is 'async def'"):
        type("Config", (okt.MutableResource,), {"mutate_with_cr": mutate_with_cr})


def test_synchronous_hooks_and_plain_attributes_are_accepted() -> None:
    class Fine(okt.Reconciler):
        kind = "Fine"

        def check(self, ctx: okt.Context) -> None:
            return None

    assert Fine.kind == "Fine"
