"""The write fence: writes a thread sends in a block are asked of a fence first, and counted until answered.

Why this exists: with leader election, a replica that lost its lease must write nothing more — not the reconcile it is
in the middle of, not a write waiting at the rate limit — and the replica stepping down must know when the writes it let
through are answered before it releases the lease; admission runs an operator's ``check(ctx)`` under a fence that
refuses every write. :func:`fenced` sets the fence of the block on the thread, :func:`sending` asks it as each write
leaves (:class:`okt.kube.client.Client` wraps every write in it) and counts the write on a :class:`Fence` until its
answer, and :class:`Sending` bounds the write by the time the fence still allows.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator

from okt import errors

WriteFence = Callable[[str, str], "str | None"]
"""Asked ``fence(verb, resource)`` before a write: a reason string refuses it, ``None`` lets it through."""

_write_fence: contextvars.ContextVar[tuple[WriteFence, type[errors.WriteRefused]] | None] = contextvars.ContextVar(
    "okt_write_fence", default=None
)


@contextlib.contextmanager
def fenced(fence: WriteFence | None, refusal: type[errors.WriteRefused] = errors.NotLeader) -> Iterator[None]:
    """Ask ``fence`` before every write this thread sends in the block (``refusal`` when it refuses: ``okt.NotLeader``
    unless told; nothing is sent). The leader-elected manager runs its reconciles in one, so a replica that lost its
    lease writes nothing more; admission runs ``check(ctx)`` in one refusing every write (``okt.WriteRefused``);
    writes outside the block (the elector's own lease updates, other code sharing the client) are not concerned. It
    is asked as the write leaves: after its wait at the rate limit and for its token (a credential plugin run again),
    and again once its connection is made, whichever way it leaves (the direct path, the session, a websocket; see
    :func:`okt.kube.transport.asked_once_connected`)."""
    token = _write_fence.set(None if fence is None else (fence, refusal))
    try:
        yield
    finally:
        _write_fence.reset(token)


class Fence:
    """A write fence (see :func:`fenced`) that can be closed for good and knows which writes it let through are still
    on their way: a leader about to release its lease closes it, then waits for those writes to end (:meth:`settle`),
    so that none reaches the API server after a standby took the lease over.

    ``allows`` is asked as any fence once the fence is open (``None`` lets a write through). A write is counted from
    the moment :meth:`Client.request <okt.kube.Client.request>` passes the fence until the request ends; a counting
    fence costs a lock taken twice a write.

    Every way a write leaves is counted, by :func:`sending`: a request to the API server (:meth:`Client.request`), an
    exec's websocket (:mod:`okt.kube.podexec`: counted until the command's exit status came), a call straight to an
    operand's Pod (:mod:`okt.kube.operand_http`: until its answer came).

    ``time_left``, when given, says how many seconds a write let through now may take, at most (None: no bound): the
    leader's, the time until its renew deadline, so that no write it let through still waits for its answer once
    another replica could hold the lease (:meth:`Sending.within`).

    Caveats: a write ended without an answer (a timeout, a connection cut) may still reach the server, or its command
    still run, so :meth:`settle` does not count as settled one that ended so within the last ``timeout`` seconds.
    """

    def __init__(self, allows: WriteFence, time_left: Callable[[], float | None] | None = None) -> None:
        self._allows = allows
        self._time_left = time_left
        self._closed: str | None = None
        self._ended = threading.Condition(threading.Lock())
        self._in_flight = 0
        self._unanswered_at = -math.inf

    def __call__(self, verb: str, resource: str) -> str | None:
        closed = self._closed
        return closed if closed is not None else self._allows(verb, resource)

    def time_left(self) -> float | None:
        """The seconds a write let through now may take, at most; None: no bound."""
        return self._time_left() if self._time_left is not None else None

    @property
    def in_flight(self) -> int:
        """How many writes it let through have not ended yet."""
        with self._ended:
            return self._in_flight

    def close(self, reason: str) -> None:
        """Refuse every write from now on, with ``reason``; writes already through go on."""
        with self._ended:
            self._closed = reason

    def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the writes let through to end; whether none may reach the server any
        more: all ended, and none without an answer within the last ``timeout`` seconds (close it first, or more may
        come)."""
        deadline = time.monotonic() + timeout
        with self._ended:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._ended.wait(left)
            return time.monotonic() - self._unanswered_at >= timeout

    def enter(self, verb: str, resource: str) -> str | None:
        """Ask the fence for one write and, when it lets it through, count it until :meth:`leave` (under one lock: a
        :meth:`close` cannot fall between the answer and the count)."""
        with self._ended:
            refused = self(verb, resource)
            if refused is None:
                self._in_flight += 1
            return refused

    def leave(self, answered: bool) -> None:
        """A write :meth:`enter` let through ended; ``answered`` False when it may have left without an answer."""
        with self._ended:
            self._in_flight -= 1
            if not answered:
                self._unanswered_at = time.monotonic()
            if not self._in_flight:
                self._ended.notify_all()


class Sending:
    """One write :func:`sending` let through; whoever sends it sets :attr:`answered` once nothing of it can reach its
    target any more: its answer came, or it was certainly never sent. :attr:`deadline` (a :func:`time.monotonic`
    time, or None) is when its fence stops waiting for it (:meth:`Fence.time_left`): whoever sends it bounds by it
    (:meth:`within`, :meth:`by`) its wait for the API server's answer, or what comes before its request has left (an
    exec's upgrade, a direct call to the operand: the operand's answer is not bounded by it)."""

    __slots__ = ("answered", "deadline")

    def __init__(self, deadline: float | None = None) -> None:
        self.answered = False
        self.deadline = deadline

    def within(self, timeout: float) -> float:
        """``timeout`` (seconds from now), cut to what is left before :attr:`deadline`.

        Raises:
            okt.errors.NotLeader: nothing is left; the write is not to be sent.
        """
        return timeout if self.deadline is None else min(timeout, self._left())

    def by(self, deadline: float) -> float:
        """``deadline`` (a :func:`time.monotonic` time), or :attr:`deadline` when it comes first.

        Raises:
            okt.errors.NotLeader: nothing is left; the write is not to be sent.
        """
        return deadline if self.deadline is None else min(deadline, time.monotonic() + self._left())

    def _left(self) -> float:
        assert self.deadline is not None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise errors.NotLeader("not sent: the time its fence allows a write ran out before it left")
        return left


@contextlib.contextmanager
def sending(verb: str, resource: str, *, fenced: bool = True) -> Iterator[Sending]:
    """Send one write in the block: the thread's fence (see :func:`fenced`) is asked first (``okt.NotLeader`` when it
    refuses; the block does not run) and, when it is a :class:`Fence`, counts the write until the block ends, so that
    a stopping leader's :meth:`Fence.settle` waits for it. ``fenced`` False: neither asked nor counted (a read).

    The block bounds by the :class:`Sending`'s :attr:`~Sending.deadline` (the fence's :meth:`Fence.time_left` as it
    let the write through) what :class:`Sending` says, and sets ``answered`` on it once the answer came; one that
    ends otherwise (raises) may have left something the server or the operand has yet to act upon, and the fence
    stays unsettled for a while (see :meth:`Fence.settle`) — except for ``okt.NotLeader`` (the fence asked again once
    connected, or no time left): nothing was sent.
    """
    counted = _enter_fence(verb, resource) if fenced else None
    sent = Sending()
    try:
        left = counted.time_left() if counted is not None else None
        if left is not None:
            sent.deadline = time.monotonic() + left
        yield sent
    except errors.WriteRefused:
        sent.answered = True  # refused once connected (or before a second try): nothing of it was sent
        raise
    finally:
        if counted is not None:
            counted.leave(sent.answered)


def check_fence(verb: str, resource: str) -> None:
    """Raise the refusal of the thread's fence (see :func:`fenced`; ``okt.NotLeader`` unless told) when it refuses
    ``verb`` on ``resource``."""
    fenced_by = _write_fence.get()
    if fenced_by is not None:
        fence, refusal = fenced_by
        refused = fence(verb, resource)
        if refused is not None:
            raise refusal(f"{verb} {resource} not sent: {refused}")


def _enter_fence(verb: str, resource: str) -> Fence | None:
    """:func:`check_fence` for a write about to leave; the thread's fence when it is a :class:`Fence`, which counts
    the write until it is given back with :meth:`Fence.leave`."""
    fenced_by = _write_fence.get()
    if fenced_by is None:
        return None
    fence, refusal = fenced_by
    counting = fence if isinstance(fence, Fence) else None
    refused = counting.enter(verb, resource) if counting is not None else fence(verb, resource)
    if refused is not None:
        raise refusal(f"{verb} {resource} not sent: {refused}")
    return counting
