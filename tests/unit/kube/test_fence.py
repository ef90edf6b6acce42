"""The counting write fence a leader closes, and waits on, before it releases its lease."""

from __future__ import annotations

import concurrent.futures
import contextvars
import time

import pytest

from okt import errors
from okt.kube import fence as fence_mod


def open_fence() -> fence_mod.Fence:
    return fence_mod.Fence(lambda verb, resource: None)


def test_a_closed_fence_refuses_every_write_with_its_reason() -> None:
    fence = open_fence()
    fence.close("shutting down")
    with pytest.raises(errors.NotLeader, match="shutting down"), fence_mod.fenced(fence):
        fence_mod.check_fence("create", "configmaps")
    assert fence.enter("create", "configmaps") == "shutting down"
    assert fence.in_flight == 0


def test_an_open_fence_asks_what_it_wraps() -> None:
    fence = fence_mod.Fence(lambda verb, resource: f"no {verb} of {resource}")
    assert fence.enter("delete", "pods") == "no delete of pods"
    assert fence.in_flight == 0


def test_writes_let_through_are_unsettled_until_each_has_ended() -> None:
    fence = open_fence()
    assert fence.enter("create", "configmaps") is None
    assert fence.enter("patch", "configmaps") is None
    fence.close("shutting down")
    assert fence.in_flight == 2
    fence.leave(answered=True)
    assert not fence.settle(0.0)
    fence.leave(answered=True)
    assert fence.settle(0.0)


def test_a_write_ended_without_an_answer_lately_leaves_the_fence_unsettled() -> None:
    fence = open_fence()
    assert fence.enter("create", "configmaps") is None
    fence.leave(answered=False)
    assert fence.in_flight == 0
    assert not fence.settle(60.0)


def refused_in_a_pool(submit: str) -> BaseException | None:
    """What a write fence check raises in a pool thread a fenced block submits it to (None: it passed)."""
    with (
        concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool,
        fence_mod.fenced(lambda verb, resource: "not the leader"),
    ):
        if submit == "plain":
            future = pool.submit(fence_mod.check_fence, "create", "configmaps")
        else:
            future = pool.submit(contextvars.copy_context().run, fence_mod.check_fence, "create", "configmaps")
        return future.exception(timeout=10)


def test_a_thread_of_a_pool_does_not_inherit_the_fence_of_the_block_that_submits_to_it() -> None:
    assert refused_in_a_pool("plain") is None


def test_a_function_submitted_in_a_copy_of_the_context_is_fenced() -> None:
    assert isinstance(refused_in_a_pool("copied"), errors.NotLeader)


def test_a_write_sent_in_a_sending_block_is_counted_until_the_block_ends() -> None:
    fence = open_fence()
    with fence_mod.fenced(fence), fence_mod.sending("create", "pods/exec") as sent:
        fence.close("shutting down")
        assert fence.in_flight == 1
        assert not fence.settle(0.0)
        sent.answered = True
    assert fence.in_flight == 0
    assert fence.settle(60.0)


def test_a_sending_block_that_raises_before_its_answer_leaves_the_fence_unsettled() -> None:
    fence = open_fence()
    with pytest.raises(TimeoutError), fence_mod.fenced(fence), fence_mod.sending("create", "pods/proxy"):
        raise TimeoutError
    assert fence.in_flight == 0
    assert not fence.settle(60.0)


def test_a_sending_block_refused_once_connected_sent_nothing() -> None:
    fence = open_fence()
    with pytest.raises(errors.NotLeader), fence_mod.fenced(fence), fence_mod.sending("create", "pods/exec"):
        raise errors.NotLeader("refused once connected")
    assert fence.settle(60.0)


def test_a_sending_block_the_fence_refuses_does_not_run() -> None:
    fence = open_fence()
    fence.close("shutting down")
    ran: list[bool] = []
    with (
        pytest.raises(errors.NotLeader, match="shutting down"),
        fence_mod.fenced(fence),
        fence_mod.sending("create", "pods/exec"),
    ):
        ran.append(True)
    assert ran == []
    assert fence.in_flight == 0


def test_a_read_in_a_sending_block_is_neither_asked_nor_counted() -> None:
    fence = open_fence()
    fence.close("shutting down")
    with fence_mod.fenced(fence), fence_mod.sending("get", "pods/proxy", fenced=False) as sent:
        assert fence.in_flight == 0
    assert not sent.answered


@pytest.mark.parametrize(("left", "timeout", "bounded"), [(None, 30.0, 30.0), (5.0, 30.0, 5.0), (50.0, 30.0, 30.0)])
def test_a_write_waits_for_its_answer_no_longer_than_its_fence_allows(
    left: float | None, timeout: float, bounded: float
) -> None:
    fence = fence_mod.Fence(lambda verb, resource: None, lambda: left)
    with fence_mod.fenced(fence), fence_mod.sending("create", "configmaps") as sent:
        assert bounded - 1.0 < sent.within(timeout) <= bounded
        assert bounded - 1.0 < sent.by(time.monotonic() + timeout) - time.monotonic() <= bounded
        sent.answered = True


def test_a_write_its_fence_allows_no_time_is_not_sent() -> None:
    fence = fence_mod.Fence(lambda verb, resource: None, lambda: 0.0)
    with pytest.raises(errors.NotLeader), fence_mod.fenced(fence), fence_mod.sending("create", "pods/exec") as sent:
        sent.within(30.0)
    assert fence.in_flight == 0
    assert fence.settle(60.0)  # nothing was sent


def test_a_read_keeps_its_timeout_whatever_the_fence_allows() -> None:
    fence = fence_mod.Fence(lambda verb, resource: None, lambda: 1.0)
    with fence_mod.fenced(fence), fence_mod.sending("get", "pods/proxy", fenced=False) as sent:
        assert sent.within(30.0) == 30.0
