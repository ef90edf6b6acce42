"""Clean-up hooks: each runs in its order, on a thread of its own, within the time the shutdown has left; one still
running when that runs out is left running, its writes refused from then on, and the hooks after it are not started."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import structlog

import okt
from okt.kube import fence as fence_mod
from okt.runtime import cleanup, daemons
from okt.testing import wait_for


def open_fence() -> fence_mod.Fence:
    return fence_mod.Fence(lambda verb, resource: None)


def test_the_hooks_run_in_their_order_and_one_that_raises_is_logged_and_the_next_still_runs() -> None:
    order: list[str] = []

    def flush() -> None:
        order.append("flush")
        raise RuntimeError("the backend said no")

    def close() -> None:
        order.append("close")

    with structlog.testing.capture_logs() as logs:
        left = cleanup.run([flush, close], left=daemons.fixed(5), fence=open_fence())

    assert left == []
    assert order == ["flush", "close"]
    assert [(log["event"], log["hook"].rsplit(".", 1)[-1], log["error"]) for log in logs] == [
        ("a clean-up hook failed", "flush", "RuntimeError: the backend said no")
    ]


def test_a_hook_that_raises_is_told_to_the_caller_by_name_and_error_and_one_that_returns_is_not() -> None:
    """okt run exits non-zero then: what the hook was to undo (a registration, a flush) may not be undone."""

    def deregister() -> None:
        raise RuntimeError("the registry did not answer")

    failed: list[str] = []
    with structlog.testing.capture_logs():
        assert (
            cleanup.run([lambda: None, deregister], left=daemons.fixed(5), fence=open_fence(), failed=failed.append)
            == []
        )

    name = deregister.__qualname__
    assert failed == [f"the clean-up hook {name} failed: RuntimeError: the registry did not answer"]


def test_a_hook_still_running_when_the_time_runs_out_is_left_running_and_the_later_hooks_are_not_started() -> None:
    """A backend that does not answer: the hook held the whole shutdown, and with it the lease."""
    never, later = threading.Event(), []

    def deregister() -> None:
        never.wait()

    def close() -> None:
        later.append("close")

    began = time.monotonic()
    with structlog.testing.capture_logs() as logs:
        left = cleanup.run([deregister, close], left=daemons.fixed(0.3), fence=open_fence())

    assert time.monotonic() - began < 2
    assert left == [
        "the clean-up hook test_a_hook_still_running_when_the_time_runs_out_is_left_running_and_the_later_"
        "hooks_are_not_started.<locals>.deregister"
    ]
    assert later == []
    [line] = logs
    assert line["log_level"] == "error"
    assert line["event"] == (
        "a clean-up hook still runs after the grace period: it is left running, its writes refused, and the clean-up "
        "hooks after it are not run"
    )
    assert line["hook"].endswith(".deregister")
    assert [name.rsplit(".", 1)[-1] for name in line["not_run"]] == ["close"]
    never.set()


def test_a_hook_left_running_that_raises_later_is_told_to_the_caller_and_logged_once() -> None:
    """Its failure came after the wait: it was logged, and lost to the caller (okt run's exit status, a program's
    ``Manager.failed_cleanups``)."""
    released, failed = threading.Event(), []

    def deregister() -> None:
        released.wait(15)
        raise RuntimeError("the registry did not answer")

    with structlog.testing.capture_logs() as logs:
        assert cleanup.run([deregister], left=daemons.fixed(0.3), fence=open_fence(), failed=failed.append)
        told_by_the_wait = list(failed)
        released.set()
        wait_for(lambda: bool(failed), timeout=5, message="the failure of the hook left running")

    assert told_by_the_wait == []
    assert failed == [f"the clean-up hook {deregister.__qualname__} failed: RuntimeError: the registry did not answer"]
    assert [(log["event"], log.get("error")) for log in logs] == [
        ("a clean-up hook still runs after the grace period: it is left running, its writes refused", None),
        ("a clean-up hook failed", "RuntimeError: the registry did not answer"),
    ]


def test_a_hook_left_running_writes_nothing_more_and_its_write_on_the_wire_is_waited_for() -> None:
    """Its fence counts the write it sends (so the manager does not release the lease before its answer) and, once it
    is left running, refuses the next one: the next leader never has it writing beside it."""
    on_the_wire, answered, refused = threading.Event(), threading.Event(), []

    def deregister() -> None:
        with fence_mod.sending("delete", "configmaps") as write:
            on_the_wire.set()
            answered.wait()
            write.answered = True
        try:
            with fence_mod.sending("delete", "configmaps"):
                pass
        except okt.WriteRefused as exc:
            refused.append(exc)

    fence = open_fence()
    assert cleanup.run([deregister], left=daemons.fixed(0.3), fence=fence)
    assert on_the_wire.is_set()
    assert fence.in_flight == 1
    assert not fence.settle(0.1)

    answered.set()
    assert fence.settle(5)
    wait = time.monotonic() + 5
    while not refused and time.monotonic() < wait:
        time.sleep(0.01)
    assert [str(exc) for exc in refused] == [f"delete configmaps not sent: {cleanup.LEFT_RUNNING}"]
    assert type(refused[0]) is okt.WriteRefused


def test_writes_of_hooks_that_return_go_through_the_fence_on_a_standby_too() -> None:
    """Clean-up hooks are about the process: the leader fence (a standby refuses) is not theirs."""
    sent: list[str] = []

    def deregister() -> None:
        with fence_mod.sending("delete", "configmaps") as write:
            sent.append("delete")
            write.answered = True

    fence = open_fence()
    assert cleanup.run([deregister], left=daemons.fixed(5), fence=fence) == []
    assert sent == ["delete"]
    assert fence.settle(0)


@pytest.mark.parametrize("left", [lambda: 0.0, lambda: -1.0], ids=["none", "past"])
def test_no_hook_is_started_once_no_time_is_left_and_the_line_names_them(left: Callable[[], float]) -> None:
    called: list[str] = []

    with structlog.testing.capture_logs() as logs:
        assert (
            cleanup.run([lambda: called.append("a"), lambda: called.append("b")], left=left, fence=open_fence()) == []
        )

    assert called == []
    assert [(log["event"], len(log["not_run"])) for log in logs] == [
        ("the grace period is over: the clean-up hooks are not run", 2)
    ]


def test_the_wait_for_a_hook_ends_as_soon_as_its_time_is_cut_short() -> None:
    """The lease lost while a hook runs: the shutdown's grace shrinks to half the time before another replica may
    take the lease, and the wait for the hook with it."""
    never = threading.Event()
    deadline = [time.monotonic() + 60]
    threading.Timer(0.3, lambda: deadline.__setitem__(0, time.monotonic())).start()

    began = time.monotonic()
    assert cleanup.run([never.wait], left=lambda: deadline[0] - time.monotonic(), fence=open_fence())

    assert time.monotonic() - began < 2
    never.set()


def test_an_async_hook_is_awaited_on_its_own_thread() -> None:
    ran: list[str] = []

    async def flush() -> None:
        ran.append(threading.current_thread().name)

    left = cleanup.run([flush], left=daemons.fixed(5), fence=open_fence())

    assert left == []
    assert len(ran) == 1 and ran[0] != threading.current_thread().name
