"""okt.testing.wait_for: what it returns, and what its timeout says of the last attempt."""

from __future__ import annotations

import pytest

from okt import errors
from okt.testing import WaitTimeout, wait_for


def test_the_first_truthy_value_is_returned() -> None:
    answers = iter([None, 0, {"name": "cache"}])
    assert wait_for(lambda: next(answers), timeout=5, interval=0) == {"name": "cache"}


def test_a_timeout_names_what_was_awaited_and_the_error_the_last_call_raised() -> None:
    def missing() -> bool:
        raise errors.NotFound(404, "NotFound", 'memcacheds "cache" not found')

    with pytest.raises(WaitTimeout, match=r"timed out after 0\.1s waiting for Ready=True \(last error: NotFound"):
        wait_for(missing, timeout=0.1, interval=0.01, message="Ready=True")


def test_an_error_of_an_earlier_call_is_not_reported_once_a_later_call_returned() -> None:
    """The object was missing at first, then there and not Ready for the whole timeout: the message said it was not
    found, sending whoever read it after a create that had worked."""
    calls = iter(range(1_000_000))

    def ready() -> bool:
        if next(calls) == 0:
            raise errors.NotFound(404, "NotFound", 'memcacheds "cache" not found')
        return False

    with pytest.raises(WaitTimeout) as raised:
        wait_for(ready, timeout=0.1, interval=0.01, message="Ready=True")
    assert str(raised.value) == "timed out after 0.1s waiting for Ready=True"


def test_a_message_given_as_a_callable_is_evaluated_on_timeout_only() -> None:
    asked: list[str] = []

    def message() -> str:
        asked.append("asked")
        return "three replicas"

    assert wait_for(lambda: True, timeout=1, message=message) is True
    assert asked == []
    with pytest.raises(WaitTimeout, match=r"waiting for three replicas$"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, message=message)
    assert asked == ["asked"]
