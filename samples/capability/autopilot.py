"""Level 5, auto-pilot: scale a Cache out by one Pod when its busiest Pod holds too many items (pure functions).

Why this exists: an operator at Level 5 acts on what it measures, without a person. The action here is the simplest
useful one for memcached — one more Pod when a Pod holds at least ``spec.autopilot.itemsThreshold`` items — and the
hard part is not to act twice for one cause. memcached's clients shard keys over the Pods, so a new Pod takes new keys
but the busy Pod keeps its items: the signal stays high after the action, by design of the operand.

Guards against flapping, each a rule of :func:`decide`:

* **cool-down** — no action within ``coolDownSeconds`` of the last one, so a new Pod has time to take load before
  the signal is judged again;
* **one direction** — the auto-pilot only adds Pods; it never removes one (scale-in is a person's decision), so it
  cannot oscillate between two sizes;
* **no action while a rollout is under way** — a Pod still starting says nothing yet;
* **a ceiling** — never past ``maxSize`` Pods.

The state (Pods added, time of the last action) lives in the Cache's ``status.autopilot``: an operator restarted,
or another replica taking the lead, reads it back and keeps the cool-down.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

import pydantic


class AutopilotSpec(pydantic.BaseModel):
    """When to add a Pod, and the limits of the auto-pilot."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    items_threshold: int = pydantic.Field(
        ge=1, alias="itemsThreshold", description="Add a Pod when a Pod holds at least this many items."
    )
    max_size: int = pydantic.Field(default=3, ge=1, le=10, alias="maxSize", description="Never more Pods than this.")
    cool_down_seconds: int = pydantic.Field(
        default=600, ge=0, alias="coolDownSeconds", description="No second action within this many seconds."
    )


@dataclasses.dataclass(frozen=True)
class State:
    """What the auto-pilot did so far: Pods added beyond ``spec.size``, and when it last acted."""

    added: int = 0
    last_action: datetime.datetime | None = None

    @classmethod
    def from_status(cls, raw: Mapping[str, Any] | None) -> State:
        """Read ``status.autopilot`` back (absent or unreadable fields: nothing done yet). A time without an offset
        (set by hand) is UTC, as the auto-pilot writes it: compared as it is, it would fail every decision."""
        raw = raw or {}
        stamp = raw.get("lastScaleOut")
        try:
            last = datetime.datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
        except ValueError:
            last = None
        if last is not None and last.tzinfo is None:
            last = last.replace(tzinfo=datetime.UTC)
        added = raw.get("added")
        return cls(added=added if isinstance(added, int) and added >= 0 else 0, last_action=last)

    def to_status(self, reason: str) -> dict[str, Any]:
        status: dict[str, Any] = {"added": self.added, "reason": reason}
        if self.last_action is not None:
            status["lastScaleOut"] = self.last_action.isoformat()
        return status


@dataclasses.dataclass(frozen=True)
class Decision:
    """The state after a look at the signal, whether it acted, and why (``status.autopilot.reason``)."""

    state: State
    acted: bool
    reason: str


def replicas(size: int, policy: AutopilotSpec | None, state: State) -> int:
    """The Pods to run: ``spec.size`` plus what the auto-pilot added, within its ceiling (never below ``size``)."""
    if policy is None:
        return size
    return max(size, min(policy.max_size, size + state.added))


def decide(
    policy: AutopilotSpec | None,
    state: State,
    *,
    size: int,
    busiest_items: int,
    rolling: bool,
    now: datetime.datetime,
) -> Decision:
    """Whether to add one Pod now, by the rules of the module's docstring (checked in this order)."""
    if policy is None:
        return Decision(state, False, "off")
    if busiest_items < policy.items_threshold:
        return Decision(state, False, f"busiest Pod holds {busiest_items} items (< {policy.items_threshold})")
    current = replicas(size, policy, state)
    if current >= policy.max_size:
        return Decision(state, False, f"at maxSize ({policy.max_size} Pods)")
    if rolling:
        return Decision(state, False, "a rollout is under way")
    if state.last_action is not None:
        until = state.last_action + datetime.timedelta(seconds=policy.cool_down_seconds)
        if now < until:
            return Decision(state, False, f"cooling down until {until.isoformat()}")
    scaled = State(added=current + 1 - size, last_action=now)
    return Decision(scaled, True, f"busiest Pod holds {busiest_items} items: scaled out to {current + 1} Pods")
