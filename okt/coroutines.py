"""``async def`` hooks: a coroutine of the operator's, run to its end on the calling thread's own event loop.

Why this exists: okt calls the operator's code from its threads — a controller's workers, a daemon's thread, a
probe's, a webhook request's — and an ``async def`` hook called there returns a coroutine that nobody awaits: its
body never runs. Kopf's handlers are usually ``async def``; an operator ported from Kopf keeps them. Every place okt
calls the operator's code goes through :func:`call`, which awaits what an ``async def`` returns, on the thread that
called it.

Guarantees:

* a plain function is called as it always was: :func:`call` adds one type check of what it returned;
* a coroutine runs to its end (``loop.run_until_complete``) on the **calling thread's own event loop**: created at
  the thread's first coroutine, reused by every later one on that thread (a client the operator keeps between calls,
  bound to the loop it was made on, still works in the next call on that thread), closed when the thread ends;
* what the coroutine returns is returned (an ``okt.requeue_after(...)``, ``okt.give_up(...)``), what it raises is
  raised (an ``okt.TemporaryError``, an ``okt.GiveUp``): an ``async def`` hook behaves as its ``def`` twin;
* the thread's context variables go with the coroutine (okt's write fence among them).

Caveats:

* the calling thread waits for the coroutine: a hook that awaits for a minute holds its worker for a minute, as a
  ``def`` hook that sleeps does. okt's own calls made inside it (``ctx.client``, ``ctx.registry``...) are plain
  calls: they block the loop while they run, which is harmless — nothing else runs on it;
* one loop per thread: an object bound to a loop (an ``aiohttp.ClientSession``, an ``asyncio.Lock``) made on one
  worker cannot be used from another. Keep such objects per thread (``threading.local``) or make them in the call;
* what a coroutine leaves running (a task it created and did not await) advances only while a later coroutine runs
  on that thread's loop, and is cancelled when the thread ends: await what you start;
* a coroutine reached while the thread's loop already runs one (an ``async def enter_in_state`` whose
  ``super().enter_in_state(state, ctx)`` calls an ``async def resources``) cannot run on that loop: it runs on a
  thread of its own, with a loop of its own closed when it returns, the caller waiting for it;
* an ``async def`` with ``yield`` (an async generator) is refused where it is declared (:func:`refuse_async_generator`):
  okt takes what a hook returns, and a generator returns nothing until iterated.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import types
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, TypeVarTuple, overload

Ts = TypeVarTuple("Ts")
T = TypeVar("T")
_COROUTINE = types.CoroutineType  # what an "async def" returns (no subclass of it can be made)
Started = Callable[[asyncio.AbstractEventLoop, "asyncio.Task[Any]"], None]
"""``started(loop, task)``: told of the task a coroutine runs as, before it runs (to cancel it from another thread)."""


class _Owner:
    """Holds one thread's loop; closes it when the thread ends (its thread-local storage released then)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        # Released with its thread's storage, in no particular thread: the loop is not running then, and closing it
        # only releases its selector and its wake-up pipe. The clean shutdown (tasks cancelled, async generators
        # closed) is close()'s, on the thread itself.
        if not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()


_local = threading.local()


@overload
def call(fn: Callable[[*Ts], Coroutine[Any, Any, T]], /, *args: *Ts) -> T: ...


@overload
def call(fn: Callable[[*Ts], T], /, *args: *Ts) -> T: ...


def call(fn: Callable[[*Ts], Any], /, *args: *Ts) -> Any:
    """``fn(*args)``; a coroutine it returns (``fn`` is ``async def``) is run to its end (:func:`run`).

    Positional arguments only, and one identity check of what ``fn`` returned: this is on the path of every hook of
    every reconcile (bind keywords with :func:`functools.partial`).

    Returns:
        what ``fn`` returned, or what its coroutine returned.

    Raises:
        whatever ``fn`` or its coroutine raised.
    """
    result = fn(*args)
    if type(result) is _COROUTINE:
        return run(result)
    return result


def run(coroutine: Coroutine[Any, Any, T], started: Started | None = None) -> T:
    """Run ``coroutine`` to its end on this thread's own loop and return what it returns (raise what it raises).

    Args:
        coroutine: the coroutine to run.
        started: told of the loop and the task before the task runs (a daemon's stop cancels it through them).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return _run_aside(coroutine, started)
    loop = thread_loop()
    task = loop.create_task(coroutine)  # copies the thread's context variables, as a call would see them
    if started is not None:
        started(loop, task)
    return loop.run_until_complete(task)


def thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's own event loop, created at its first use."""
    owner: _Owner | None = getattr(_local, "owner", None)
    if owner is None or owner.loop.is_closed():
        owner = _local.owner = _Owner()
    return owner.loop


def close() -> None:
    """Close this thread's loop now, as ``asyncio.run`` closes its own: the tasks left on it cancelled and awaited,
    async generators and the default executor shut down. A thread that ends without calling it has its loop closed
    all the same, without that clean-up. The next coroutine on the thread gets a new loop."""
    owner: _Owner | None = getattr(_local, "owner", None)
    if owner is None:
        return
    _local.owner = None
    loop = owner.loop
    if loop.is_closed() or loop.is_running():
        return
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def _run_aside(coroutine: Coroutine[Any, Any, T], started: Started | None) -> T:
    """Run ``coroutine`` on a thread of its own (this thread's loop is busy running another), and wait for it."""
    context = contextvars.copy_context()
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(context.run(run, coroutine, started))
        except BaseException as exc:  # handed to the caller, which raises it
            failure.append(exc)
        finally:
            close()

    thread = threading.Thread(target=target, name=f"{threading.current_thread().name}-coroutine", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]  # type: ignore[no-any-return]


def refuse_async_generator(fn: object, name: str) -> None:
    """Refuse an ``async def`` with ``yield``, named ``name`` (a TypeError): okt runs a coroutine to its end and takes
    what it returns, and an async generator returns nothing until something iterates it."""
    function = fn.__func__ if isinstance(fn, classmethod | staticmethod) else fn
    if inspect.isasyncgenfunction(function):
        raise TypeError(
            f"{name} is an async generator ('async def' with 'yield'): okt awaits an 'async def' hook and takes what "
            "it returns, it never iterates one. Return the values (a list) instead of yielding them."
        )
