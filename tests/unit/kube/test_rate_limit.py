"""The client-side rate limit is a token bucket: bursts up to ``burst``, then ``qps`` requests a second."""

from __future__ import annotations

import pytest

from okt.kube import client as kube_client


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_free_then_requests_wait_one_qps_interval_each() -> None:
    clock = Clock()
    limit = kube_client.RateLimit(qps=10, burst=3, clock=clock)

    waits = [limit.reserve() for _ in range(5)]

    assert waits == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])


def test_tokens_come_back_with_time_but_never_beyond_the_burst() -> None:
    clock = Clock()
    limit = kube_client.RateLimit(qps=2, burst=2, clock=clock)
    limit.reserve()
    limit.reserve()
    clock.now += 60

    assert [limit.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_a_rate_limit_needs_positive_figures(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
        kube_client.RateLimit(qps, burst)
