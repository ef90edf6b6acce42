"""Start-up hooks: one raising okt.TemporaryError is called again after its delay (or the backoff), said each time; any
other exception stops the start; a stop asked while a retry waits ends the start."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
import structlog

import okt
from okt.runtime import backoff as backoff_mod
from okt.runtime import startup
from okt.testing import FakeClient

STEADY = backoff_mod.Backoff(jitter=0.0)


class Stop(threading.Event):
    """A stop that remembers each wait instead of sleeping it, and is asked for at the ``stop_at``-th wait."""

    def __init__(self, stop_at: int | None = None) -> None:
        super().__init__()
        self.waited: list[float | None] = []
        self.stop_at = stop_at

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout)
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
