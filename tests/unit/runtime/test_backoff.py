import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okt import delays
from okt.runtime.backoff import Backoff


@pytest.mark.parametrize(("failures", "delay"), [(1, 0.25), (2, 0.5), (3, 1.0), (4, 2.0), (5, 4.0), (11, 256.0)])
def test_the_delay_doubles_per_failure_from_the_base(failures: int, delay: float) -> None:
    assert Backoff().delay(failures, rand=0.5) == pytest.approx(delay)


@pytest.mark.parametrize("failures", [12, 13, 100, 10_000, 10**9])
def test_the_delay_never_exceeds_the_cap_even_for_huge_failure_counts(failures: int) -> None:
    assert Backoff().delay(failures, rand=1.0) == 300.0


@pytest.mark.parametrize(("rand", "delay"), [(0.0, 0.9), (0.5, 1.0), (1.0, 1.1)])
def test_jitter_spreads_the_delay_by_at_most_its_share(rand: float, delay: float) -> None:
    assert Backoff(base=1.0).delay(1, rand=rand) == pytest.approx(delay)


def test_with_rand_given_the_delay_is_a_pure_function() -> None:
    backoff = Backoff()
    assert {backoff.delay(6, rand=0.3) for _ in range(20)} == {backoff.delay(6, rand=0.3)}


def test_a_factor_of_one_keeps_the_delay_constant() -> None:
    assert [Backoff(base=2.0, factor=1.0, jitter=0.0).delay(n) for n in (1, 5, 50)] == [2.0, 2.0, 2.0]


@settings(max_examples=200, database=None, deadline=None)
@given(failures=st.integers(min_value=1, max_value=10_000), rand=st.floats(min_value=0.0, max_value=1.0))
def test_random_or_not_the_delay_stays_between_the_jittered_base_and_the_cap(failures: int, rand: float) -> None:
    backoff = Backoff()
    for value in (backoff.delay(failures, rand=rand), backoff.delay(failures)):
        assert backoff.base * (1 - backoff.jitter) <= value <= backoff.cap


@settings(max_examples=100, database=None, deadline=None)
@given(failures=st.integers(min_value=1, max_value=200), rand=st.floats(min_value=0.0, max_value=1.0))
def test_for_the_same_jitter_more_failures_never_wait_less(failures: int, rand: float) -> None:
    backoff = Backoff()
    assert backoff.delay(failures + 1, rand=rand) >= backoff.delay(failures, rand=rand)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": 0},
        {"base": -1},
        {"factor": 0.5},
        {"cap": 0.1},
        {"jitter": 1.0},
        {"jitter": -0.1},
        {"cap": float("inf")},
    ],
)
def test_out_of_range_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


@pytest.mark.parametrize(("failures", "rand"), [(0, 0.5), (-3, 0.5), (1, -0.1), (1, 1.5)])
def test_out_of_range_arguments_are_refused(failures: int, rand: float) -> None:
    with pytest.raises(ValueError):
        Backoff().delay(failures, rand=rand)


def test_its_jitter_leaves_the_module_level_random_generator_as_it_was() -> None:
    # Drawn from the module-level generator, the jitter of a background thread (an informer's reconnect, a lease
    # retry) moved every other user's state: a property-based test running beside it failed as using random.
    random.seed(7)
    before = random.getstate()

    delays = {Backoff().delay(3) for _ in range(20)}

    assert random.getstate() == before
    assert len(delays) > 1  # jittered all the same


@pytest.mark.parametrize("seconds", [10**400, 1e300], ids=["10**400", "1e300"])
def test_a_base_and_cap_too_long_for_a_float_or_a_wait_are_the_longest_delay(seconds: float) -> None:
    """``math.isfinite(10 ** 400)`` raised a bare ``OverflowError`` out of the check: a delay past a float's range is
    capped at ``MAX_DELAY`` as every retry is (okt.delays)."""
    backoff = Backoff(base=seconds, cap=seconds, factor=10**400)
    assert (backoff.base, backoff.cap) == (delays.MAX_DELAY, delays.MAX_DELAY)
    assert backoff.delay(10**6, rand=0.5) == delays.MAX_DELAY


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base": -(10**400)}, r"^base must be .*, got a negative int of about 401 digits$"),
        ({"base": True}, r"^base must be .*, got True$"),
        ({"base": 10**401, "cap": 10**400}, r"^cap must be .* >= base, got an int of about 401 digits$"),
        ({"factor": float("nan")}, r"^factor must be a finite number >= 1, got nan$"),
    ],
)
def test_out_of_range_parameters_are_refused_in_one_line(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(**kwargs)
