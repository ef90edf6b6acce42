"""Leader election's pure rules: timestamps in the API's MicroTime format, the safety ordering of durations, and when
a candidate tries again."""

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


@pytest.mark.parametrize(
    ("until_expiry", "expected"),
    [
        (0.5, 0.5 + leader.EXPIRY_MARGIN),  # the holder's lease runs out before the next try: just after it does
        (0.0, leader.EXPIRY_MARGIN),
        (3.0, 2.2),  # it runs out later: the usual retry
        (None, 2.2),  # nobody else holds it (free, ours, or not seen yet)
        (-1.0, 2.2),  # it had run out and another candidate won the race since: the usual retry
    ],
)
def test_a_candidate_tries_again_when_the_holders_lease_runs_out_or_after_the_retry_period(
    until_expiry: float | None, expected: float
) -> None:
    assert leader.candidate_wait(2.2, until_expiry) == pytest.approx(expected)
