"""Start-up hooks: one raising okt.TemporaryError is called again after its delay (or the backoff), said each time, up
to the limits of its ``@okt.on_startup(retries=, timeout=, backoff=)``; any other exception stops the start; a stop
asked while a retry waits ends the start."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
import structlog

import okt
from okt import hooks
from okt.runtime import backoff as backoff_mod
from okt.runtime import startup
from okt.testing import FakeClient

STEADY = backoff_mod.Backoff(jitter=0.0)


class Clock:
    """Seconds that pass only when a :class:`Stop` waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Stop(threading.Event):
    """A stop that remembers each wait instead of sleeping it (moving ``clock`` on by it), and is asked for at the
    ``stop_at``-th wait."""

    def __init__(self, stop_at: int | None = None, clock: Clock | None = None) -> None:
        super().__init__()
        self.waited: list[float | None] = []
        self.stop_at = stop_at
        self.clock = clock or Clock()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout)
        self.clock.now += timeout or 0.0
        if len(self.waited) == self.stop_at:
            self.set()
        return self.is_set()


def failing(times: int, error: Callable[[], Exception]) -> tuple[Callable[[Any], None], list[Any]]:
    """A hook that raises ``error()`` at its first ``times`` calls and returns at the next; and its calls' clients."""
    calls: list[Any] = []

    def backend_up(client: Any) -> None:
        calls.append(client)
        if len(calls) <= times:
            raise error()

    return backend_up, calls


def test_a_hook_raising_a_temporary_error_is_called_again_after_its_delay_and_each_retry_is_said() -> None:
    hook, calls = failing(2, lambda: okt.TemporaryError("the backend is not up yet", delay=2))
    client, stop, waits = FakeClient(), Stop(), []

    with structlog.testing.capture_logs() as logs:
        done = startup.run([hook], client, stopping=stop, backoff=STEADY, retrying=waits.append)

    assert done
    assert calls == [client, client, client]
    assert stop.waited == [2.0, 2.0]
    said = [(log["event"], log["log_level"], log["attempt"], log["retry_in"], log["error"]) for log in logs]
    error = "TemporaryError: the backend is not up yet"
    assert said == [("start-up hook failed, retried", "warning", n, 2.0, error) for n in (1, 2)]
    assert all(log["hook"].endswith("backend_up") for log in logs)
    named = "the start-up hook failing.<locals>.backend_up failed (TemporaryError), retried in 2 s"
    assert waits == [named, named, None]


def test_a_temporary_error_without_a_delay_is_retried_after_the_backoff_of_the_hooks_failures() -> None:
    hook, calls = failing(4, lambda: okt.TemporaryError("the backend is not up yet"))
    stop = Stop()

    assert startup.run([hook], FakeClient(), stopping=stop, backoff=STEADY)

    assert len(calls) == 5
    assert stop.waited == [0.25, 0.5, 1.0, 2.0]


def test_a_subclass_of_temporary_error_is_retried_too() -> None:
    hook, calls = failing(1, lambda: okt.RemoteTimeout("the backend did not answer", delay=1))
    stop = Stop()

    assert startup.run([hook], FakeClient(), stopping=stop, backoff=STEADY)

    assert (len(calls), stop.waited) == (2, [1.0])


@pytest.mark.parametrize(
    "error",
    [lambda: RuntimeError("no database"), lambda: okt.PermanentError("no database"), lambda: okt.GiveUp("no database")],
    ids=["RuntimeError", "PermanentError", "GiveUp"],
)
def test_any_other_exception_stops_the_start_naming_the_hook_and_no_later_hook_runs(
    error: Callable[[], Exception],
) -> None:
    hook, calls = failing(1, error)
    later, later_calls = failing(0, RuntimeError)
    stop = Stop()

    with pytest.raises(okt.ConfigurationError, match=r"^the start-up hook failing\.<locals>\.backend_up failed: ") as e:
        startup.run([hook, later], FakeClient(), stopping=stop, backoff=STEADY)

    assert type(e.value.__cause__) is type(error())
    assert (len(calls), later_calls, stop.waited) == (1, [], [])


def test_a_stop_asked_while_a_retry_waits_ends_the_start_and_no_hook_runs_any_more() -> None:
    hook, calls = failing(5, lambda: okt.TemporaryError("the backend is not up yet", delay=30))
    later, later_calls = failing(0, RuntimeError)
    stop = Stop(stop_at=2)

    done = startup.run([hook, later], FakeClient(), stopping=stop, backoff=STEADY)

    assert not done
    assert (len(calls), later_calls, stop.waited) == (2, [], [30.0, 30.0])


def test_the_hooks_before_the_one_retried_are_not_run_again() -> None:
    first, first_calls = failing(0, RuntimeError)
    second, second_calls = failing(2, lambda: okt.TemporaryError("the backend is not up yet", delay=0))
    third, third_calls = failing(0, RuntimeError)

    assert startup.run([first, second, third], FakeClient(), stopping=Stop(), backoff=STEADY)

    assert (len(first_calls), len(second_calls), len(third_calls)) == (1, 3, 1)


class Credentials(pydantic.BaseModel):
    port: int


def test_a_hook_failing_on_a_validation_error_is_said_by_its_fields_never_the_values_it_was_given() -> None:
    """okt run prints the error: a hook checking a Secret's data printed the Secret's value."""

    def read_the_credentials(client: Any) -> None:
        Credentials.model_validate({"port": "s3cr3t-t0ken"})

    with pytest.raises(okt.ConfigurationError, match=r"read_the_credentials failed: ValidationError: .*port") as e:
        startup.run([read_the_credentials], FakeClient(), stopping=Stop(), backoff=STEADY)

    assert "s3cr3t" not in str(e.value)
    assert type(e.value.__cause__) is pydantic.ValidationError


def test_a_stop_asked_while_a_hook_runs_calls_no_later_hook_nor_the_retry() -> None:
    stop = Stop()
    later, later_calls = failing(0, RuntimeError)

    def stopped_meanwhile(client: Any) -> None:
        stop.set()  # SIGTERM while the hook runs

    retried, retried_calls = failing(1, lambda: okt.TemporaryError("the backend is not up yet", delay=0))

    assert not startup.run([stopped_meanwhile, later], FakeClient(), stopping=stop, backoff=STEADY)
    assert later_calls == []

    stop = Stop(stop_at=1)  # asked during the retry's wait of no time: the retry is not called
    assert not startup.run([retried], FakeClient(), stopping=stop, backoff=STEADY)
    assert len(retried_calls) == 1


def limited(hook: Callable[[Any], None], **limits: Any) -> Callable[[Any], None]:
    return hooks.on_startup(**limits)(hook)


def temporary(delay: float | None = None) -> Callable[[], Exception]:
    """An ``okt.TemporaryError`` that says which call raised it."""
    raised = 0

    def error() -> Exception:
        nonlocal raised
        raised += 1
        return okt.TemporaryError(f"the backend is not up yet (call {raised})", delay=delay)

    return error


def test_a_hook_that_reaches_its_retries_stops_the_start_naming_its_calls_and_its_last_error() -> None:
    hook, calls = failing(100, temporary(delay=1))
    later, later_calls = failing(0, RuntimeError)
    stop = Stop()

    with pytest.raises(okt.ConfigurationError) as e:
        startup.run([limited(hook, retries=3), later], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)

    assert str(e.value) == (
        "the start-up hook failing.<locals>.backend_up failed 3 times in 2.0 s, and retries=3 allows no more calls: "
        "TemporaryError: the backend is not up yet (call 3)"
    )
    assert type(e.value.__cause__) is okt.TemporaryError and "(call 3)" in str(e.value.__cause__)
    assert (len(calls), later_calls, stop.waited) == (3, [], [1.0, 1.0])


def test_a_hook_of_one_retry_is_called_once_as_kopf_counts_its_retries() -> None:
    hook, calls = failing(100, temporary(delay=1))
    stop = Stop()

    with pytest.raises(okt.ConfigurationError, match=r"backend_up failed once in 0\.0 s, and retries=1 allows no more"):
        startup.run([limited(hook, retries=1)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)

    assert (len(calls), stop.waited) == (1, [])


def test_a_hook_that_succeeds_at_its_last_call_allowed_goes_on_with_the_start() -> None:
    hook, calls = failing(2, temporary(delay=1))
    later, later_calls = failing(0, RuntimeError)
    stop = Stop()

    assert startup.run([limited(hook, retries=3), later], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)

    assert (len(calls), len(later_calls)) == (3, 1)


def test_a_retry_that_would_pass_the_timeout_is_not_waited_for_and_stops_the_start() -> None:
    """Kopf's look-ahead: the call at 9 s fails, the next would be at 12 s, past 10 s: the start stops at 9 s."""
    hook, calls = failing(100, temporary(delay=3))
    stop = Stop()

    with pytest.raises(okt.ConfigurationError) as e:
        startup.run([limited(hook, timeout=10)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)

    assert str(e.value) == (
        "the start-up hook failing.<locals>.backend_up failed 4 times in 9.0 s, and a retry in 3 s would pass its "
        "timeout=10 s: TemporaryError: the backend is not up yet (call 4)"
    )
    assert type(e.value.__cause__) is okt.TemporaryError
    assert (len(calls), stop.waited) == (4, [3.0, 3.0, 3.0])


def test_the_timeout_counts_the_time_of_the_calls_from_the_first_calls_start() -> None:
    clock = Clock()
    stop = Stop(clock=clock)
    calls: list[Any] = []

    def slow_backend(client: Any) -> None:
        calls.append(client)
        clock.now += 4  # the call itself took 4 s
        raise okt.TemporaryError("the backend is not up yet", delay=1)

    with pytest.raises(okt.ConfigurationError, match=r"slow_backend failed 2 times in 9\.0 s, and a retry in 1 s"):
        startup.run([limited(slow_backend, timeout=10)], FakeClient(), stopping=stop, backoff=STEADY, clock=clock)

    assert (len(calls), stop.waited) == (2, [1.0])


def test_the_hooks_backoff_spaces_its_retries_when_the_error_names_no_delay_and_the_errors_delay_wins() -> None:
    hook, calls = failing(3, temporary())
    stop = Stop()

    assert startup.run([limited(hook, backoff=2.0)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)
    assert (len(calls), stop.waited) == (4, [2.0, 2.0, 2.0])

    named, _ = failing(1, temporary(delay=7))
    stop = Stop()
    assert startup.run([limited(named, backoff=2.0)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)
    assert stop.waited == [7.0]


def test_the_hooks_backoff_counts_in_its_timeout() -> None:
    hook, calls = failing(100, temporary())
    stop = Stop()

    with pytest.raises(okt.ConfigurationError, match=r"failed 3 times in 10\.0 s, and a retry in 5 s would pass its "):
        startup.run(
            [limited(hook, backoff=5, timeout=15)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock
        )

    assert (len(calls), stop.waited) == (3, [5.0, 5.0])


def test_a_stop_asked_while_a_limited_retry_waits_ends_the_start_without_an_error() -> None:
    hook, calls = failing(100, temporary(delay=30))
    stop = Stop(stop_at=1)

    hook = limited(hook, retries=5, timeout=600)
    assert not startup.run([hook], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)
    assert (len(calls), stop.waited) == (1, [30.0])


@pytest.mark.parametrize("decorate", [hooks.on_startup, hooks.on_startup()], ids=["bare", "no limits"])
def test_a_hook_declared_without_limits_is_retried_for_as_long_as_it_fails(decorate: Any) -> None:
    hook, calls = failing(1000, temporary())
    stop = Stop()

    assert startup.run([decorate(hook)], FakeClient(), stopping=stop, backoff=STEADY, clock=stop.clock)

    assert len(calls) == 1001
    assert stop.waited[:3] == [0.25, 0.5, 1.0] and max(w or 0 for w in stop.waited) == 300.0


def test_an_async_hook_raising_a_temporary_error_is_awaited_and_called_again_as_a_def_one_is() -> None:
    calls: list[Any] = []

    async def backend_up(client: Any) -> None:
        await asyncio.sleep(0)
        calls.append(client)
        if len(calls) == 1:
            raise okt.TemporaryError("the backend is not up yet", delay=2)

    client, stop = FakeClient(), Stop()

    assert startup.run([backend_up], client, stopping=stop, backoff=STEADY)
    assert calls == [client, client]
    assert stop.waited == [2.0]
