"""Timers' bookkeeping: when each is due per object, and the sweep of objects that are gone."""

from __future__ import annotations

import pytest

import okt
from okt.reconciler import timers


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_timer_is_due_at_once_then_after_its_interval() -> None:
    time = FakeTime()
    clock = timers.Clock(time)

    assert clock.due("u1", "backup", 60) == 0.0
    clock.ran("u1", "backup", 60)
    time.now += 45
    assert clock.due("u1", "backup", 60) == pytest.approx(15)
    assert clock.due("u2", "backup", 60) == 0.0  # per object
    time.now += 15
    assert clock.due("u1", "backup", 60) <= 0


def test_objects_that_are_gone_are_swept() -> None:
    time = FakeTime()
    clock = timers.Clock(time)
    clock.ran("gone", "backup", 60)
    time.now += 121
    for i in range(timers.Clock.SWEEP_EVERY - 1):
        clock.ran(f"live-{i % 3}", "backup", 60)

    assert len(clock) == 3


def test_timers_are_declared_on_methods_and_inherited() -> None:
    class Base(okt.Reconciler):
        @okt.every(minutes=5)
        def backup(self, ctx: okt.Context) -> None: ...

    class Child(Base):
        @okt.every(seconds=30)
        def probe(self, ctx: okt.Context) -> None: ...

    assert timers.declared(Child) == {"backup": 300.0, "probe": 30.0}


def test_a_timer_needs_a_positive_interval() -> None:
    with pytest.raises(ValueError, match="a timer needs a positive interval"):
        okt.every()
