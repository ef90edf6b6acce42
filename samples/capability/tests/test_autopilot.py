"""The auto-pilot's decision (Level 5): one Pod added when the busiest Pod crosses the threshold, never a second one
within the cool-down, during a rollout, past the ceiling — and its state read back from the status as it was written."""

from __future__ import annotations

import datetime

import pytest

from samples.capability import autopilot

NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
POLICY = autopilot.AutopilotSpec.model_validate({"itemsThreshold": 100, "maxSize": 3, "coolDownSeconds": 600})


def decide(
    state: autopilot.State, busiest: int = 150, *, rolling: bool = False, minutes: float = 0
) -> autopilot.Decision:
    return autopilot.decide(
        POLICY, state, size=1, busiest_items=busiest, rolling=rolling, now=NOW + datetime.timedelta(minutes=minutes)
    )


def test_a_busy_pod_adds_one_pod_and_starts_the_cool_down() -> None:
    decision = decide(autopilot.State())

    assert decision.acted
    assert decision.state == autopilot.State(added=1, last_action=NOW)
    assert autopilot.replicas(1, POLICY, decision.state) == 2


@pytest.mark.parametrize(
    ("state", "busiest", "rolling", "minutes", "reason"),
    [
        pytest.param(autopilot.State(), 99, False, 0, "busiest Pod holds 99 items (< 100)", id="below-threshold"),
        pytest.param(autopilot.State(), 150, True, 0, "a rollout is under way", id="rolling"),
        pytest.param(
            autopilot.State(added=1, last_action=NOW),
            150,
            False,
            9,
            "cooling down until 2026-01-01T12:10:00+00:00",
            id="cooling-down",
        ),
        pytest.param(autopilot.State(added=2, last_action=NOW), 150, False, 60, "at maxSize (3 Pods)", id="ceiling"),
    ],
)
def test_no_action_while_a_guard_holds(
    state: autopilot.State, busiest: int, rolling: bool, minutes: float, reason: str
) -> None:
    decision = decide(state, busiest, rolling=rolling, minutes=minutes)

    assert (decision.acted, decision.state, decision.reason) == (False, state, reason)


def test_a_second_pod_is_added_once_the_cool_down_is_over_if_the_signal_stays_high() -> None:
    first = decide(autopilot.State())

    second = decide(first.state, minutes=10)

    assert second.acted
    assert second.state == autopilot.State(added=2, last_action=NOW + datetime.timedelta(minutes=10))


def test_the_state_survives_its_trip_through_the_status() -> None:
    state = decide(autopilot.State()).state

    written = state.to_status("scaled out")

    assert written == {"added": 1, "reason": "scaled out", "lastScaleOut": "2026-01-01T12:00:00+00:00"}
    assert autopilot.State.from_status(written) == state


def test_a_scale_out_time_written_without_an_offset_is_read_as_utc_and_keeps_the_cool_down() -> None:
    state = autopilot.State.from_status({"added": 1, "lastScaleOut": "2026-01-01T12:00:00"})

    decision = decide(state, minutes=9)

    assert (decision.acted, decision.reason) == (False, "cooling down until 2026-01-01T12:10:00+00:00")


@pytest.mark.parametrize(
    "raw",
    [None, {}, {"added": -1}, {"added": "2"}, {"lastScaleOut": "yesterday"}, {"lastScaleOut": 5}],
)
def test_an_absent_or_unreadable_status_means_nothing_done_yet(raw: dict[str, object] | None) -> None:
    assert autopilot.State.from_status(raw) == autopilot.State()


def test_the_pods_to_run_never_drop_below_the_spec_nor_pass_the_ceiling() -> None:
    assert autopilot.replicas(2, None, autopilot.State(added=5)) == 2
    assert autopilot.replicas(2, POLICY, autopilot.State(added=5)) == 3
    assert autopilot.replicas(4, POLICY, autopilot.State(added=1)) == 4
