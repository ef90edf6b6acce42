"""Leader election's pure rules: timestamps in the API's MicroTime format and the safety ordering of durations."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from okt.runtime import leader


def test_micro_time_is_rfc3339_utc_with_microseconds() -> None:
    moment = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert leader.micro_time(moment) == "2024-05-06T05:08:09.123456Z"


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10, 10, 2), (15, 16, 2), (15, 10, 10), (15, 10, 0), (15, 10, -1)],
)
def test_durations_must_leave_the_leader_time_to_step_down_before_expiry(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    client: Any = object()
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        leader.LeaderElector(client, "default", "lease", "me", lease_duration, renew_deadline, retry_period)


def test_an_empty_identity_is_refused() -> None:
    client: Any = object()
    with pytest.raises(ValueError, match="identity"):
        leader.LeaderElector(client, "default", "lease", "")


def test_a_new_elector_neither_leads_nor_has_reached_the_api() -> None:
    client: Any = object()
    elector = leader.LeaderElector(client, "default", "lease", "me")
    assert not elector.is_leader
    assert not elector.healthy
    assert not elector.lost
    assert elector.holder == ""
    assert elector.release() is False
