"""okt.coroutines: an ``async def`` hook's coroutine run to its end on the calling thread's own, persistent loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt import coroutines


async def _loop_of_the_call() -> asyncio.AbstractEventLoop:
    await asyncio.sleep(0)
    return asyncio.get_running_loop()


def _in_a_thread(work: Callable[[], Any]) -> Any:
    """What ``work()`` returns, called on a thread of its own (its loop closed when it ends)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(work()))
    thread.start()
    thread.join()
    return box[0]


def test_a_coroutine_function_is_run_to_its_end_and_its_value_returned() -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0.01)
        return a + b

    assert _in_a_thread(lambda: coroutines.call(add, 2, 3)) == 5


def test_a_plain_function_is_called_as_it_is_and_creates_no_loop() -> None:
    seen: list[Any] = []

    def plain(value: int) -> int:
        seen.append(getattr(threading.current_thread(), "name", None))
        return value * 2

    def work() -> tuple[int, Any]:
        return coroutines.call(plain, 21), getattr(coroutines._local, "owner", None)

    assert _in_a_thread(work) == (42, None)
    assert len(seen) == 1


def test_the_calls_on_one_thread_share_its_loop_which_stays_open_between_them() -> None:
    def work() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop, bool]:
        first = coroutines.call(_loop_of_the_call)
        second = coroutines.call(_loop_of_the_call)
        return first, second, first.is_closed()

    first, second, closed_between = _in_a_thread(work)

    assert first is second
    assert not closed_between
    assert first.is_closed()  # the thread ended: its loop with it


def test_an_object_bound_to_the_loop_in_one_call_is_usable_in_the_next_on_that_thread() -> None:
    kept: dict[str, asyncio.Queue[int]] = {}

    async def make() -> None:
        kept["queue"] = asyncio.Queue()
        await kept["queue"].put(7)

    async def use() -> int:
        return await asyncio.wait_for(kept["queue"].get(), 1)

    assert _in_a_thread(lambda: (coroutines.call(make), coroutines.call(use))[1]) == 7


def test_two_threads_run_their_coroutines_on_two_loops() -> None:
    barrier = threading.Barrier(2)
    loops: list[asyncio.AbstractEventLoop] = []

    def work() -> None:
        barrier.wait(5)
        loops.append(coroutines.call(_loop_of_the_call))
        barrier.wait(5)  # both still alive: neither loop closed nor reused

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(loops) == 2 and loops[0] is not loops[1]


@pytest.mark.parametrize(
    "error", [okt.TemporaryError("later", delay=5), okt.GiveUp("never"), ValueError("bug"), asyncio.CancelledError()]
)
def test_what_a_coroutine_raises_is_raised_to_the_caller(error: BaseException) -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise error

    def work() -> BaseException | None:
        try:
            coroutines.call(fails)
        except BaseException as exc:
            return exc
        return None

    assert _in_a_thread(work) is error


def test_an_outcome_a_coroutine_returns_is_returned_as_it_is() -> None:
    async def later() -> okt.Outcome:
        return okt.requeue_after(30)

    assert _in_a_thread(lambda: coroutines.call(later)) == okt.requeue_after(30)


def test_the_callers_context_variables_reach_the_coroutine() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def read() -> str:
        return var.get()

    def work() -> str:
        var.set("the worker's")
        return coroutines.call(read)

    assert _in_a_thread(work) == "the worker's"


def test_a_coroutine_reached_while_the_loop_runs_another_runs_aside_with_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def inner() -> tuple[str, asyncio.AbstractEventLoop]:
        return var.get(), asyncio.get_running_loop()

    async def outer() -> tuple[str, bool]:
        var.set("outer's")
        seen, loop = coroutines.call(inner)  # a plain call from a coroutine: super().enter_in_state() reaching a hook
        return seen, loop is asyncio.get_running_loop()

    assert _in_a_thread(lambda: coroutines.call(outer)) == ("outer's", False)


def test_close_cancels_what_a_coroutine_left_running_and_the_next_call_gets_a_new_loop() -> None:
    left: list[asyncio.Task[None]] = []

    async def leaves_a_task() -> asyncio.AbstractEventLoop:
        left.append(asyncio.get_running_loop().create_task(asyncio.sleep(3600)))
        return asyncio.get_running_loop()

    def work() -> tuple[asyncio.AbstractEventLoop, bool, asyncio.AbstractEventLoop]:
        first = coroutines.call(leaves_a_task)
        coroutines.close()
        return first, left[0].cancelled(), coroutines.call(_loop_of_the_call)

    first, cancelled, second = _in_a_thread(work)

    assert cancelled and first.is_closed() and second is not first


def test_an_async_generator_is_refused_with_its_name() -> None:
    async def values() -> Any:
        yield 1

    with pytest.raises(TypeError, match=r"^Thing\.values is an async generator \('async def' with 'yield'\)"):
        coroutines.refuse_async_generator(values, "Thing.values")
    coroutines.refuse_async_generator(_loop_of_the_call, "fine")  # a coroutine function passes
