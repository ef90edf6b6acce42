"""Timers' bookkeeping: when each is due per object, and the sweep of objects that are gone."""

from __future__ import annotations

import asyncio
import math
import re
import threading
from typing import Any, cast

import pydantic
import pytest
import structlog

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.reconciler import context as context_mod
from okt.reconciler import timers
from okt.status import events
from okt.testing import FakeClient, wait_for
from tests.unit.reconciler.webapps import WEBAPP, webapp


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_timer_is_due_at_once_then_after_its_interval() -> None:
    time = FakeTime()
    clock = timers.Clock(time)

    assert clock.due("u1", "backup") == 0.0
    clock.ran("u1", "backup", 60)
    time.now += 45
    assert clock.due("u1", "backup") == pytest.approx(15)
    assert clock.due("u2", "backup") == 0.0  # per object
    time.now += 15
    assert clock.due("u1", "backup") <= 0


def test_objects_that_are_gone_are_swept() -> None:
    time = FakeTime()
    clock = timers.Clock(time)
    clock.ran("gone", "backup", 60)
    time.now += 60 + timers.Clock.STALE_AFTER + 1  # due for longer than any reconcile is late
    for i in range(timers.Clock.SWEEP_EVERY - 1):
        clock.ran(f"live-{i % 3}", "backup", 60)

    assert len(clock) == 3


def test_a_live_objects_schedule_outlives_a_sweep_that_finds_its_reconcile_late() -> None:
    """A sweep drops the entries of objects that are gone, not those of a live object whose reconcile a busy queue
    delays past the longest interval: its failing timer's backoff would start over (called again after its interval,
    not after twice its last wait), its initial_delay be waited again."""
    time = FakeTime()
    clock = timers.Clock(time)
    clock.start("u1", "probe")
    for _ in range(5):  # five failed calls in a row: the next one after 160 s
        clock.ran("u1", "probe", 10)
        clock.again_in("u1", "probe", timers.retry_delay(10, clock.failed("u1", "probe")))
    time.now += 160 + 11  # its reconcile comes 11 s late, while other objects' timers run
    for i in range(timers.Clock.SWEEP_EVERY):
        clock.start(f"other-{i}", "probe")
        clock.ran(f"other-{i}", "probe", 10)

    clock.start("u1", "probe", initial_delay=60)

    assert clock.due("u1", "probe") <= 0  # due, as it was: no initial delay again
    assert clock.failed("u1", "probe") == 6  # and its backoff goes on


def test_timers_are_declared_on_methods_and_inherited() -> None:
    class Base(okt.Reconciler):
        @okt.every(minutes=5)
        def backup(self, ctx: okt.Context) -> None: ...

    class Child(Base):
        @okt.every(seconds=30)
        def probe(self, ctx: okt.Context) -> None: ...

    assert timers.declared(Child) == {"backup": timers.Options(300.0), "probe": timers.Options(30.0)}


def test_a_timer_needs_a_positive_interval() -> None:
    with pytest.raises(ValueError, match="a timer needs a positive interval"):
        okt.every()


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True, "5"])
def test_a_timer_needs_a_positive_finite_timeout_or_none(timeout: Any) -> None:
    with pytest.raises(ValueError, match="a timer's timeout is None or a positive number of seconds"):
        okt.every(seconds=10, timeout=timeout)


@pytest.mark.parametrize("interval", [{"seconds": math.nan}, {"seconds": math.inf}, {"hours": math.inf, "minutes": 1}])
def test_a_timer_needs_a_finite_interval(interval: dict[str, float]) -> None:
    """Accepted, an interval that is not finite failed every reconcile of every object after the timer's first run:
    the next run's requeue delay (not finite either) is refused by ``ctx.requeue_after``."""
    with pytest.raises(ValueError, match="a timer needs a positive interval"):
        okt.every(**interval)


@pytest.mark.parametrize(
    "interval",
    [
        {"seconds": "30"},
        {"minutes": True},
        {"seconds": None},
        {"seconds": -30, "minutes": 1},
        {"hours": -1, "minutes": 90},
    ],
    ids=["a string", "a bool", "None", "a negative part", "a negative hour"],
)
def test_a_timer_interval_that_is_not_numbers_of_seconds_is_refused_in_one_line_naming_it(
    interval: dict[str, Any],
) -> None:
    """Each part is a number >= 0: ``"30"`` failed deep in an addition (``can only concatenate str``), ``True`` was
    one second, and a negative part was taken off the others (``seconds=-30, minutes=1`` ran every 30 s)."""
    [(part, value)] = [(k, v) for k, v in interval.items() if type(v) not in (int, float) or v < 0]
    with pytest.raises(ValueError, match=f"a timer's {part} is a number >= 0, got {value!r}") as refused:
        okt.every(**interval)
    assert "\n" not in str(refused.value)


def test_a_timer_used_without_its_interval_says_how_to_give_it() -> None:
    """``@okt.every`` bare handed the method to ``every()`` as an argument: Python's own TypeError said nothing of the
    interval it needs."""
    with pytest.raises(TypeError, match=r"@okt.every needs its interval: @okt.every\(seconds=..., minutes=..."):

        class Bare(okt.Reconciler):
            @okt.every
            def probe(self, ctx: okt.Context) -> None: ...


class Ticking(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.ticks = 0

    @okt.every(minutes=1)
    def tick(self, ctx: okt.Context) -> None:
        self.ticks += 1


def context_of(reconciler: okt.Reconciler, raw: dict[str, Any] | None = None) -> context_mod.Context:
    """A context of the Thing ``raw`` (by default :func:`thing`: ns/a, uid u1)."""
    return context_mod.Context(
        settings=reconciler.settings(),
        client=cast(kube_client.Client, None),
        reader=cast(Any, None),
        kind=kinds.Kind("example.com/v1", "Thing", "things", True),
        cr=objects.CustomResource(thing() if raw is None else raw),
        exists=True,
        logger=structlog.get_logger("test"),
        recorder=None,
    )


def test_a_timer_runs_only_within_a_successful_reconcile() -> None:
    """The SuccessManager's own report can fail (a status write refused): that reconcile ends in the ErrorManager
    and is retried, and its timers wait for a reconcile that succeeds."""
    reconciler = Ticking()
    clock = timers.Clock(FakeTime())
    failed = context_of(reconciler)
    failed.results.add(okt.Operation.STATUS_UPDATE_ERROR, "a", errors.ApiError.from_status(409, "Conflict", "stale"))

    timers.run_due(reconciler, failed, clock)

    assert reconciler.ticks == 0
    assert clock.due("u1", "tick") <= 0  # still due: the retry runs it

    timers.run_due(reconciler, context_of(reconciler), clock)
    assert reconciler.ticks == 1


class Answering(okt.Reconciler):
    """A timer every 10 minutes that returns what it is given."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    def __init__(self, answer: object) -> None:
        self.answer = answer

    @okt.every(minutes=10)
    def probe(self, ctx: okt.Context) -> object:
        return self.answer


def reconciled(answer: object) -> tuple[okt.Reconciler, FakeClient, okt.Run]:
    reconciler, fake = Answering(answer), webapp()
    run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))
    return reconciler, fake, run


def test_a_timer_that_returns_requeue_after_runs_again_after_that_delay() -> None:
    """As from any other hook, ``okt.requeue_after(30)`` asks for this hook to run again in 30 s (the backup target
    is busy, try again soon): the object is requeued for then, and the timer is due then, not after its interval."""
    reconciler, fake, run = reconciled(okt.requeue_after(30))

    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
    assert run.outcome.delay == pytest.approx(30, abs=1)
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    assert 0 < reconciler.timer_clock.due(stored["metadata"]["uid"], "probe") <= 30


def test_a_timer_that_returns_give_up_gives_the_reconcile_up() -> None:
    """As ``ctx.give_up()`` from the timer does: no requeue (so no next run) until the object changes."""
    _, _, run = reconciled(okt.give_up("the backup target is gone"))

    assert run.outcome == okt.Outcome.give_up("the backup target is gone")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (okt.Outcome.retry(RuntimeError("the disk is full")), "timer probe failed: RuntimeError: the disk is full"),
        (True, "timer probe failed: TypeError: timer probe returned True: a timer returns None"),
    ],
    ids=["retry", "not an outcome"],
)
def test_a_timer_that_returns_an_error_or_no_outcome_fails_as_one_that_raises(answer: object, message: str) -> None:
    """``okt.Outcome.retry(error)`` is the timer failing with ``error``, and a value okt cannot use is a bug of the
    operator: both logged with a Warning Event naming the timer (never dropped), the reconcile untouched (Ready says
    what the reconcile did), the timer due again after its interval."""
    _, fake, run = reconciled(answer)

    assert not run.results.has_error
    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
    assert run.outcome.delay == pytest.approx(600, abs=1)
    [event] = fake.objects(kinds.EVENT)
    assert (event["type"], event["reason"]) == ("Warning", "TimerFailed")
    assert event["message"].startswith(message)


class Raising(Answering):
    """A timer every 10 minutes that raises what it is given."""

    @okt.every(minutes=10)
    def probe(self, ctx: okt.Context) -> object:
        raise self.answer  # type: ignore[misc]


def raised(error: BaseException) -> tuple[okt.Reconciler, FakeClient, okt.Run]:
    reconciler, fake = Raising(error), webapp()
    run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))
    return reconciler, fake, run


def test_a_timer_that_raises_give_up_gives_the_reconcile_up_as_one_that_returns_it() -> None:
    """``raise okt.GiveUp(...)`` is ``return okt.give_up(...)``, in a timer as in any other hook."""
    _, fake, run = raised(okt.GiveUp("the backup target is gone"))

    assert run.outcome == okt.Outcome.give_up("the backup target is gone")
    assert fake.objects(kinds.EVENT) == []


def test_a_timer_that_raises_a_temporary_error_with_a_delay_runs_again_after_that_delay() -> None:
    """A ``TemporaryError(delay=30)`` asks to try again in 30 s, in a timer as in any other hook: the failure is
    reported, and the timer is due again then, not after its interval."""
    reconciler, fake, run = raised(okt.TemporaryError("the backup target is busy", delay=30))

    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
    assert run.outcome.delay == pytest.approx(30, abs=1)
    [event] = fake.objects(kinds.EVENT)
    assert (event["type"], event["reason"]) == ("Warning", "TimerFailed")
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    assert 0 < reconciler.timer_clock.due(stored["metadata"]["uid"], "probe") <= 30


class Credentials(pydantic.BaseModel):
    user: str
    port: int


def test_a_timer_that_fails_validating_a_secret_says_which_field_is_wrong_never_the_value() -> None:
    """A pydantic ``ValidationError``'s text repeats every input it was given (a Secret's password, decoded by the
    timer): the failure's log line and Warning Event name the model and each bad field, as a hook's error does."""
    try:
        Credentials.model_validate({"user": "admin", "port": "hunter2-s3cret"})
    except pydantic.ValidationError as exc:
        invalid = exc
    with structlog.testing.capture_logs() as logged:
        _, fake, run = raised(invalid)

    assert not run.results.has_error
    [event] = fake.objects(kinds.EVENT)
    assert (event["type"], event["reason"]) == ("Warning", "TimerFailed")
    assert event["message"].startswith("timer probe failed: ValidationError: Credentials: port: ")
    [line] = [entry for entry in logged if entry["event"] == "timer failed"]
    assert line["error"].startswith("ValidationError: Credentials: port: ")
    assert "hunter2" not in repr([event, *logged])


class Hanging(okt.Reconciler):
    """A timer every 10 minutes with a 0.05 s timeout whose call blocks until ``release`` is set (a request made with
    no timeout of its own), after setting a status field; every call is counted."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.calls = 0

    @okt.every(minutes=10, timeout=0.05)
    def probe(self, ctx: okt.Context) -> None:
        self.calls += 1
        self.entered.set()
        ctx.status_fields["probed"] = "late"
        self.release.wait()
        self.returned.set()


def test_a_timer_past_its_timeout_fails_and_the_reconcile_goes_on_without_it() -> None:
    """Without a timeout the call holds the reconcile's worker for as long as it blocks (for good, with no timeout of
    its own): with one, the reconcile ends as if the timer had failed, and what the call sets afterwards is not
    written."""
    reconciler, fake = Hanging(), webapp()
    try:
        run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

        assert not run.results.has_error, run.results.summary()
        assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
        [event] = fake.objects(kinds.EVENT)
        assert (event["type"], event["reason"]) == ("Warning", "TimerFailed")
        assert event["message"].startswith(
            "timer probe failed: TimeoutError: it did not return within its timeout of 0.05 s"
        )
        stored = fake.stored(WEBAPP, "web", "shop")
        assert stored is not None and "probed" not in (stored.get("status") or {})
        assert reconciler.timer_clock.overdue() == 1
    finally:
        reconciler.release.set()
    assert reconciler.returned.wait(10)
    wait_for(lambda: reconciler.timer_clock.overdue() == 0, timeout=10, message="the late call to be counted back")


def test_a_timer_does_not_run_again_for_an_object_while_its_call_past_the_timeout_runs() -> None:
    """Each call past its timeout holds a thread: the timer waits for it rather than stacking another one at each
    interval. Once it returned, the timer runs on its schedule again: an interval after the call returned."""
    reconciler, time = Hanging(), FakeTime()
    clock = timers.Clock(time)
    try:
        timers.run_due(reconciler, context_of(reconciler), clock)
        assert reconciler.entered.wait(10)
        assert (reconciler.calls, clock.overdue()) == (1, 1)
        time.now += 3600  # six intervals

        again = context_of(reconciler)
        timers.run_due(reconciler, again, clock)

        assert reconciler.calls == 1
        assert again.results.min_delay == pytest.approx(600)  # looked at again after an interval, not at once
    finally:
        reconciler.release.set()
    wait_for(lambda: clock.overdue() == 0, timeout=10, message="the late call to be counted back")
    assert clock.due("u1", "probe") == pytest.approx(600)
    time.now += 600
    timers.run_due(reconciler, context_of(reconciler), clock)
    wait_for(lambda: reconciler.calls == 2, timeout=10, message="the timer to run again")


class HangingEveryMinute(Hanging):
    """:class:`Hanging`, every minute: short enough for its backoff to outgrow the interval."""

    @okt.every(minutes=1, timeout=0.05)
    def probe(self, ctx: okt.Context) -> None:
        super().probe(ctx)


def test_a_call_back_after_its_timeout_waits_out_the_backoff_its_timeout_started() -> None:
    """The timeout is a failure, counted, backing off and logged with when the timer runs next: the call's return
    later (here a success) does not bring that call earlier — one more call into what hung, an interval after it
    came back — and it is not taken as the timer succeeding: the next call's own result is."""
    reconciler, time = HangingEveryMinute(), FakeTime()
    clock = timers.Clock(time)
    clock.start("u1", "probe")
    clock.failed("u1", "probe")  # an earlier call failed: this one's timeout is the second failure in a row
    try:
        with structlog.testing.capture_logs() as logged:
            timers.run_due(reconciler, context_of(reconciler), clock)
            assert reconciler.entered.wait(10)
            assert clock.due("u1", "probe") == pytest.approx(120)  # twice the interval
            time.now += 30
            reconciler.release.set()
            wait_for(lambda: clock.overdue() == 0, timeout=10, message="the late call to be counted back")
    finally:
        reconciler.release.set()

    assert clock.due("u1", "probe") == pytest.approx(90)  # not 60 (an interval from its return): the backoff stands
    [failed] = [entry for entry in logged if entry["event"] == "timer failed"]
    [back] = [entry for entry in logged if entry["event"] == "timer call returned after its timeout"]
    assert (failed["again_in"], back["again_in"]) == (120, 90)  # the same moment, said from each
    assert clock.failed("u1", "probe") == 3  # the timeout stays counted


def test_a_call_back_after_its_timeout_and_its_backoff_rests_an_interval() -> None:
    """Back later than its backoff, the call is followed by an interval of rest, as any call is."""
    time = FakeTime()
    clock = timers.Clock(time)
    clock.start("u1", "probe")
    clock.went_overdue("u1", "probe", time.now)
    clock.ran("u1", "probe", 60)
    clock.again_in("u1", "probe", timers.retry_delay(60, clock.failed("u1", "probe")))
    time.now += 3600

    assert clock.returned("u1", "probe", 60) == pytest.approx(60)
    assert clock.due("u1", "probe") == pytest.approx(60)


class Prompt(okt.Reconciler):
    """A timer with a timeout that returns at once, setting a status field, asking for a requeue of the object in
    45 s and to run again in 30 s."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    @okt.every(minutes=10, timeout=5)
    def probe(self, ctx: okt.Context) -> object:
        ctx.status_fields["probed"] = "yes"
        ctx.requeue_after(45)
        return okt.requeue_after(30)


def test_a_timer_with_a_timeout_that_returns_in_time_reports_as_one_without() -> None:
    reconciler, fake = Prompt(), webapp()

    run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
    assert run.outcome.delay == pytest.approx(30, abs=1)
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None and stored["status"]["probed"] == "yes"
    assert 45 in [e.delay for e in run.results.entries if e.operation is okt.Operation.REQUEUE]
    assert fake.objects(kinds.EVENT) == []
    assert reconciler.timer_clock.overdue() == 0


class Late(okt.Reconciler):
    """A timer with a 0.05 s timeout whose call, once ``release`` is set, asks for a requeue, sets a status field,
    writes the status (``flushed``: whether a request went out) and raises."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = threading.Event()
        self.flushed: bool | None = None

    @okt.every(minutes=10, timeout=0.05)
    def probe(self, ctx: okt.Context) -> None:
        self.release.wait()
        try:
            ctx.requeue_after(5)
            ctx.status_fields["probed"] = "late"
            self.flushed = ctx.flush_status()
            raise RuntimeError("the backup failed")
        finally:
            self.returned.set()


def test_a_call_back_after_its_timeout_changes_neither_its_reconcile_nor_a_later_one_and_is_logged() -> None:
    """The call holds its reconcile's context: what it records there comes too late for that reconcile, which ended
    (or is ending on another thread), and its status write would put what that reconcile saw over what a later one
    wrote. So it records on a stack of its own, its status write is refused, and all it did is logged when it
    returns."""
    reconciler, fake = Late(), webapp()
    recorder = events.EventRecorder(fake, "webapp")
    try:
        with structlog.testing.capture_logs() as logged:
            first = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=recorder)
            recorded = first.results.entries
            okt.reconcile(reconciler, fake, None, "shop", "web", recorder=recorder)  # skips the timer
            stored = fake.stored(WEBAPP, "web", "shop")
            reconciler.release.set()
            assert reconciler.returned.wait(10)
            wait_for(lambda: reconciler.timer_clock.overdue() == 0, timeout=10, message="the late call to return")
    finally:
        reconciler.release.set()

    assert first.results.entries == recorded
    assert fake.stored(WEBAPP, "web", "shop") == stored
    assert reconciler.flushed is False
    [line] = [entry for entry in logged if entry["event"] == "timer call returned after its timeout"]
    assert line["log_level"] == "warning"
    assert line["outcome"] == "raised RuntimeError: the backup failed"
    assert line["requeue_after"] == 5
    assert line["error"].startswith("OktError: status not written")


class Slow(okt.Reconciler):
    """A timer every minute whose call takes 90 s (on the fake clock it is given)."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self, time: FakeTime) -> None:
        self.time = time
        self.calls = 0

    @okt.every(minutes=1)
    def tick(self, ctx: okt.Context) -> None:
        self.calls += 1
        self.time.now += 90


def test_a_timer_slower_than_its_interval_rests_a_whole_interval_after_each_call() -> None:
    """The interval runs from the end of one call to the start of the next (Kopf's timers, too): measured between
    starts, a call longer than its interval was due again as it returned, and the object was requeued at once, the
    timer holding a worker and the API server without rest."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = Slow(time)

    first = context_of(reconciler)
    timers.run_due(reconciler, first, clock)

    assert reconciler.calls == 1
    assert first.results.min_delay == pytest.approx(60)
    assert clock.due("u1", "tick") == pytest.approx(60)
    time.now += 30
    timers.run_due(reconciler, context_of(reconciler), clock)
    assert reconciler.calls == 1


def test_ticks_missed_while_no_reconcile_ran_make_one_catch_up_call_not_a_burst() -> None:
    """Ten intervals without a reconcile (the operator down, a standby, the object in error): one call, then the next
    an interval later."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = Ticking()
    timers.run_due(reconciler, context_of(reconciler), clock)
    time.now += 600

    late = context_of(reconciler)
    timers.run_due(reconciler, late, clock)
    timers.run_due(reconciler, context_of(reconciler), clock)

    assert reconciler.ticks == 2
    assert late.results.min_delay == pytest.approx(60)


def flaky(interval: float, error: Exception) -> type[okt.Reconciler]:
    """A reconciler whose timer every ``interval`` seconds raises ``error`` while ``failing`` is set."""

    class Flaky(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Thing"

        def __init__(self) -> None:
            self.failing = True
            self.calls = 0

        @okt.every(seconds=interval)
        def probe(self, ctx: okt.Context) -> None:
            self.calls += 1
            if self.failing:
                raise error

    return Flaky


@pytest.mark.parametrize(
    ("interval", "error", "delays"),
    [
        (1, RuntimeError("the backup target is down"), [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]),
        (60, RuntimeError("the backup target is down"), [60, 120, 240, 300, 300]),
        (3600, RuntimeError("the backup target is down"), [3600, 3600, 3600]),
        (3600, okt.TemporaryError("the backup target is busy", delay=5), [5, 10, 20, 40, 80, 160, 300, 300]),
        (1, okt.TemporaryError("the backup target is busy", delay=0), [0.25, 0.5, 1, 2, 4]),
    ],
    ids=["every second", "every minute", "every hour", "temporary error", "temporary error at once"],
)
def test_a_failing_timer_backs_off_from_its_interval_up_to_a_cap_and_after_a_success_runs_at_its_interval(
    interval: float, error: Exception, delays: list[float]
) -> None:
    """A timer failing every second called what fails every second, for as long as it failed: its calls back off
    instead, doubling from its interval (or from the delay its error asked for) up to five minutes (or that start,
    when longer: an hourly timer is never called more often than hourly), each failure logged with when it runs next.
    A call that succeeds puts it back on its interval, and a failure after it starts the backoff over."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = cast(Any, flaky(interval, error)())

    def tick() -> tuple[float | None, list[dict[str, Any]]]:
        """Run what is due, then move the clock to when the object was requeued for."""
        ctx = context_of(reconciler)
        with structlog.testing.capture_logs() as logged:
            timers.run_due(reconciler, ctx, clock)
        delay = ctx.results.min_delay
        assert delay is not None
        time.now += delay
        return delay, logged

    failed = [tick() for _ in delays]

    assert [delay for delay, _ in failed] == pytest.approx(delays)
    assert [[line.get("again_in") for line in logged if line["event"] == "timer failed"] for _, logged in failed] == [
        [pytest.approx(delay)] for delay in delays
    ]
    assert reconciler.calls == len(delays)
    reconciler.failing = False
    assert tick()[0] == pytest.approx(interval)
    reconciler.failing = True
    assert [tick()[0], tick()[0]] == pytest.approx(delays[:2])
    assert reconciler.calls == len(delays) + 3


def test_a_failing_timers_backoff_is_per_object() -> None:
    """One object's timer failing again and again does not slow the same timer of another object."""
    time = FakeTime()
    clock = timers.Clock(time)
    for _ in range(3):
        assert timers.retry_delay(60, clock.failed("u1", "probe")) in (60, 120, 240)

    assert clock.failed("u2", "probe") == 1
    clock.succeeded("u1", "probe")
    assert clock.failed("u1", "probe") == 1


@pytest.mark.parametrize("option", ["initial_delay", "idle"])
@pytest.mark.parametrize("value", [-1, -0.5, math.nan, math.inf, True, "30", [30]])
def test_a_timers_initial_delay_and_idle_are_none_or_seconds_refused_in_one_line_naming_them(
    option: str, value: Any
) -> None:
    """Refused where the timer is declared: a negative or NaN wait is none (every comparison with NaN is false), an
    infinite one a requeue delay no reconcile accepts, and a string failed in the first reconcile's addition."""
    with pytest.raises(ValueError, match=f"a timer's {option} is None or a number of seconds >= 0, got ") as refused:
        okt.every(minutes=1, **{option: value})
    assert str(refused.value).endswith(repr(value))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("sharp", ["yes", "no", 1, None])
def test_a_timers_sharp_is_true_or_false(sharp: Any) -> None:
    """``sharp="no"`` is true in Python: a timer meant to be unsharp would have been sharp."""
    with pytest.raises(ValueError, match=f"a timer's sharp is True or False, got {re.escape(repr(sharp))}$"):
        okt.every(minutes=1, sharp=sharp)


def test_a_timers_options_are_declared_with_it_and_none_is_no_wait() -> None:
    class Options(okt.Reconciler):
        @okt.every(minutes=1, initial_delay=30, idle=600, sharp=True)
        def probe(self, ctx: okt.Context) -> None: ...

        @okt.every(hours=1, initial_delay=None, idle=None)
        def backup(self, ctx: okt.Context) -> None: ...

    assert timers.declared(Options) == {
        "probe": timers.Options(60.0, initial_delay=30.0, idle=600.0, sharp=True),
        "backup": timers.Options(3600.0),
    }


def thing(**metadata: Any) -> dict[str, Any]:
    """A Thing with ``metadata`` over its name, namespace, uid and generation 1."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "generation": 1, **metadata},
        "spec": {"size": 1},
    }


def timed(**options: Any) -> Any:
    """A reconciler whose timer ``probe``, every minute with ``options``, records the clock's time of each call; it
    raises while ``failing`` is set."""

    class Timed(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Thing"

        def __init__(self, time: FakeTime) -> None:
            self.time = time
            self.calls: list[float] = []
            self.failing = False
            self.takes = 0.0

        @okt.every(minutes=1, **options)
        def probe(self, ctx: okt.Context) -> None:
            self.calls.append(self.time.now)
            self.time.now += self.takes
            if self.failing:
                raise RuntimeError("the backup target is down")

    return Timed


def reconcile(reconciler: okt.Reconciler, clock: timers.Clock, raw: dict[str, Any] | None = None) -> float:
    """Run the reconciler's timers as a successful reconcile of ``raw`` (the plain Thing by default) does; returns the
    delay the object is requeued for."""
    ctx = context_of(reconciler, raw)
    timers.run_due(reconciler, ctx, clock)
    delay = ctx.results.min_delay
    assert delay is not None
    return delay


def test_a_timer_with_an_initial_delay_first_runs_that_long_after_the_first_successful_reconcile() -> None:
    """Kopf's ``initial_delay``: the first call waits, counted from the first reconcile that succeeds in this process
    (a reconcile that fails runs no timer, and starts no wait); then the interval as usual."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(initial_delay=300)(time)
    failed = context_of(reconciler)
    failed.results.add(okt.Operation.STATUS_UPDATE_ERROR, "a", errors.ApiError.from_status(409, "Conflict", "stale"))
    timers.run_due(reconciler, failed, clock)
    time.now += 100

    assert reconcile(reconciler, clock) == pytest.approx(300)
    time.now += 299
    assert reconcile(reconciler, clock) == pytest.approx(1)
    assert reconciler.calls == []
    time.now += 1
    assert reconcile(reconciler, clock) == pytest.approx(60)
    time.now += 60
    reconcile(reconciler, clock)

    assert reconciler.calls == [1400, 1460]


def test_an_initial_delay_is_waited_once_per_object_and_process() -> None:
    """Once per object (another object starts its own wait) and once per process: a restart (a new clock) waits it
    again — spreading the calls of every object a restart would otherwise make due at once."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(initial_delay=300)(time)
    reconcile(reconciler, clock)
    time.now += 300
    reconcile(reconciler, clock)
    time.now += 60

    assert reconcile(reconciler, clock, thing(uid="u2")) == pytest.approx(300)
    assert reconcile(reconciler, timers.Clock(time)) == pytest.approx(300)
    assert reconciler.calls == [1300]


def test_an_idle_timer_waits_until_the_object_was_left_alone_that_long_counting_its_first_sighting() -> None:
    """Kopf's ``idle``: no call until the object has gone unchanged for that long — its first sighting in this
    process counts as a change — then one every interval for as long as it stays so; a change puts the next call off
    until the object has been left alone that long again."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(idle=300)(time)

    assert reconcile(reconciler, clock) == pytest.approx(300)
    time.now += 300
    assert reconcile(reconciler, clock) == pytest.approx(60)
    time.now += 30
    assert reconcile(reconciler, clock, thing(labels={"tier": "gold"})) == pytest.approx(300)
    time.now += 60
    assert reconcile(reconciler, clock, thing(labels={"tier": "gold"})) == pytest.approx(240)
    time.now += 240
    reconcile(reconciler, clock, thing(labels={"tier": "gold"}))

    assert reconciler.calls == [1300, 1630]


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        (thing(), thing(generation=2), True),
        (thing(), thing(labels={"tier": "gold"}), True),
        (thing(), thing(annotations={"example.com/owner": "team-a"}), True),
        (thing(), {**thing(), "status": {"phase": "Ready"}}, False),
        (thing(), thing(resourceVersion="42"), False),
        (thing(), thing(finalizers=["example.com/cleanup"]), False),
        (thing(), thing(annotations={"okt.io/phase": "Upgrading", "okt.io/error-count": "3"}), False),
        (thing(), thing(annotations={"other.example.com/conditions": "[]"}), False),
        ({**thing(generation=None), "data": {"a": "1"}}, {**thing(generation=None), "data": {"a": "2"}}, True),
    ],
    ids=[
        "its spec (generation)",
        "a label",
        "an annotation",
        "its status",
        "its resourceVersion alone",
        "a finalizer okt adds",
        "okt's own annotations",
        "another okt operator's report",
        "the data of a kind without generation",
    ],
)
def test_an_idle_wait_starts_over_at_the_changes_that_reconcile_an_object_never_at_okts_own_writes(
    before: dict[str, Any], after: dict[str, Any], changed: bool
) -> None:
    """What the controller reconciles an object for is what restarts an idle wait: its spec, labels and annotations
    (a kind without generation: what it holds outside metadata and status). okt's own writes — the status, its
    bookkeeping and reports, its finalizer — are not the object changing: counted, a timer writing the status would
    wait for ever."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(idle=300)(time)
    reconcile(reconciler, clock, before)
    time.now += 300
    reconcile(reconciler, clock, before)
    time.now += 60

    delay = reconcile(reconciler, clock, after)

    assert delay == pytest.approx(300 if changed else 60)
    assert reconciler.calls == ([1300] if changed else [1300, 1360])


def test_a_sharp_timer_keeps_to_the_grid_of_its_interval_however_long_each_call_takes() -> None:
    """Kopf's ``sharp``: due at the first call + n intervals; a call of 20 s is followed by 40 s of rest, not 60 s."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(sharp=True)(time)
    reconciler.takes = 20

    assert reconcile(reconciler, clock) == pytest.approx(40)
    time.now += 40
    assert reconcile(reconciler, clock) == pytest.approx(40)

    assert reconciler.calls == [1000, 1060]


def test_a_sharp_timer_skips_the_slots_it_missed_rather_than_making_them_up() -> None:
    """A call longer than the interval, or reconciles that did not come (the operator busy, the object in error):
    the next call is at the first slot of the grid still ahead, one call, never a burst of the missed ones."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(sharp=True)(time)
    reconciler.takes = 90

    assert reconcile(reconciler, clock) == pytest.approx(30)  # ended at 1090: 1060 missed, 1120 next
    reconciler.takes = 0
    time.now += 30 + 605  # 1725: slots up to 1720 missed

    assert reconcile(reconciler, clock) == pytest.approx(55)
    assert reconcile(reconciler, clock) == pytest.approx(55)
    assert reconciler.calls == [1000, 1725]


def test_a_failing_sharp_timer_backs_off_off_its_grid_and_is_back_on_it_after_a_success() -> None:
    """The failure backoff wins over the grid: after a failed call the next one is the backoff's delay away, wherever
    that falls; the first call that succeeds is followed by the next slot of the grid of the first call."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(sharp=True)(time)
    reconciler.takes = 10
    reconciler.failing = True

    assert reconcile(reconciler, clock) == pytest.approx(60)  # 1010 + 60
    time.now += 60
    assert reconcile(reconciler, clock) == pytest.approx(120)  # 1080 + 120
    time.now += 120
    reconciler.failing = False

    assert reconcile(reconciler, clock) == pytest.approx(30)  # ended at 1210: the grid's 1240
    assert reconciler.calls == [1000, 1070, 1200]


def test_a_failing_idle_timer_waits_for_both_its_backoff_and_the_object_to_be_left_alone() -> None:
    """Neither wins: a call is due once its backoff has passed and the object has gone unchanged for ``idle``."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(idle=100)(time)
    reconciler.failing = True
    reconcile(reconciler, clock)
    time.now += 100
    assert reconcile(reconciler, clock) == pytest.approx(60)  # the first failure: its interval
    time.now += 60
    assert reconcile(reconciler, clock) == pytest.approx(120)  # the second: twice that
    time.now += 50

    assert reconcile(reconciler, clock, thing(labels={"tier": "gold"})) == pytest.approx(100)  # idle's end is later
    time.now += 100
    assert reconcile(reconciler, clock, thing(labels={"tier": "gold"})) == pytest.approx(240)  # called; backs off
    time.now += 10
    assert reconcile(reconciler, clock, thing(labels={"tier": "blue"})) == pytest.approx(230)  # the backoff is later
    assert reconciler.calls == [1100, 1160, 1310]


def test_an_objects_change_record_goes_with_its_timers() -> None:
    """Deleted (or swept), the object's last change is forgotten with its schedule: kept, each object ever seen would
    leave one behind."""
    time = FakeTime()
    clock = timers.Clock(time)
    assert clock.seen("u1", "a") == 1000
    time.now += 10
    assert clock.seen("u1", "a") == 1000
    clock.start("u1", "probe")

    clock.forget("u1", ["probe"])

    assert clock.seen("u1", "a") == 1010
    assert len(clock) == 0


class Caching(okt.Reconciler):
    """A backup every minute of the Things labelled ``tier=cache`` whose spec has a size; a probe of every Thing."""

    api_version = "example.com/v1"
    kind = "Thing"

    def __init__(self) -> None:
        self.backups = 0
        self.probes = 0

    @okt.every(minutes=1, labels={"tier": "cache"}, when=lambda obj: obj["spec"]["size"] > 0)
    def backup(self, ctx: okt.Context) -> None:
        self.backups += 1

    @okt.every(minutes=1)
    def probe(self, ctx: okt.Context) -> None:
        self.probes += 1


def test_a_filtered_timer_is_not_called_while_its_object_does_not_pass_and_is_called_once_it_passes() -> None:
    time = FakeTime()
    reconciler, clock = Caching(), timers.Clock(time)
    web = context_of(reconciler, thing(labels={"tier": "web"}))

    timers.run_due(reconciler, web, clock)

    assert (reconciler.backups, reconciler.probes) == (0, 1)  # the other timer runs for every object
    # Looked at again an interval later at the latest (a when() may read what reconciles nothing).
    assert web.results.min_delay == pytest.approx(60)

    time.now += 5  # relabelled: the change reconciles it
    timers.run_due(reconciler, context_of(reconciler, thing(labels={"tier": "cache"})), clock)
    assert (reconciler.backups, reconciler.probes) == (1, 1)

    time.now += 60
    relabelled = context_of(reconciler, thing(labels={"tier": "web"}))
    timers.run_due(reconciler, relabelled, clock)
    assert (reconciler.backups, reconciler.probes) == (1, 2)
    time.now += 30  # back in the filter, its call came due meanwhile: called at once
    timers.run_due(reconciler, context_of(reconciler, thing(labels={"tier": "cache"})), clock)
    assert (reconciler.backups, reconciler.probes) == (2, 2)


def test_a_timers_when_that_raises_is_logged_once_per_object_and_its_object_does_not_pass() -> None:
    time = FakeTime()
    reconciler, clock = Caching(), timers.Clock(time)
    sizeless = thing(labels={"tier": "cache"})
    del sizeless["spec"]

    with structlog.testing.capture_logs() as logged:
        for _ in range(3):
            timers.run_due(reconciler, context_of(reconciler, sizeless), clock)
            time.now += 60

    assert (reconciler.backups, reconciler.probes) == (0, 3)  # not a failure of the reconcile, nor of its other timer
    said = [entry for entry in logged if entry["event"].startswith("when() of a timer raised")]
    assert len(said) == 1
    assert said[0]["timer"] == "backup"
    assert said[0]["error"] == "KeyError: 'spec'"
    assert len(clock.filter_errors) == 1
    clock.forget("u1", timers.declared(Caching))
    assert len(clock.filter_errors) == 0


@pytest.mark.parametrize(
    ("filter_", "asked"),
    [
        ({"labels": {"tier": "cache"}}, None),
        ({"annotations": {"example.com/backup": None}}, None),
        ({"when": lambda obj: obj["metadata"].get("labels", {}).get("tier") == "cache"}, 60),
        ({"labels": {"tier": "cache"}, "when": lambda obj: obj["spec"]["size"] > 0}, None),
        ({"when": lambda obj: obj["metadata"].get("annotations", {}).get("example.com/backup") == "daily"}, 60),
    ],
    ids=["labels", "annotations", "when", "labels unmatched, and when", "when of annotations"],
)
def test_a_timer_whose_object_does_not_match_its_labels_or_annotations_asks_for_no_requeue_while_it_does_not(
    filter_: dict[str, Any], asked: float | None
) -> None:
    """A change of labels or annotations reconciles the object, which looks at the filter again: labels or annotations
    that do not match ask for nothing, with a ``when`` too (a requeue every interval reconciled each object out of the
    filter for nothing). A ``when`` that says no, which may read what reconciles nothing (the status), has the object
    looked at again an interval later."""
    time = FakeTime()
    clock = timers.Clock(time)
    reconciler = timed(**filter_)(time)
    out = context_of(reconciler, thing())

    timers.run_due(reconciler, out, clock)

    assert reconciler.calls == []
    assert out.results.min_delay == (None if asked is None else pytest.approx(asked))

    time.now += 5  # labelled and annotated into the filter: the change reconciles it
    into = context_of(reconciler, thing(labels={"tier": "cache"}, annotations={"example.com/backup": "daily"}))
    timers.run_due(reconciler, into, clock)

    assert reconciler.calls == [1005]
    assert into.results.min_delay == pytest.approx(60)


class AsyncAnswering(Answering):
    """The same timer ``async def``, with and without a timeout (its own thread then)."""

    @okt.every(minutes=10)
    async def probe(self, ctx: okt.Context) -> object:  # type: ignore[override]
        await asyncio.sleep(0)
        return self.answer

    @okt.every(minutes=10, timeout=5)
    async def bounded(self, ctx: okt.Context) -> object:
        await asyncio.sleep(0)
        return self.answer


def test_an_async_timer_is_awaited_and_its_outcome_is_the_reconciles_as_a_def_timers_is() -> None:
    reconciler, fake = AsyncAnswering(okt.requeue_after(30)), webapp()

    run = okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.REQUEUE_AFTER
    assert run.outcome.delay == pytest.approx(30, abs=1)
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    uid = stored["metadata"]["uid"]
    assert 0 < reconciler.timer_clock.due(uid, "probe") <= 30
    assert 0 < reconciler.timer_clock.due(uid, "bounded") <= 30
