import asyncio
import builtins
import concurrent.futures
import copy
import dataclasses
import enum
import json
import math
import pickle
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar, cast

import pytest
import structlog

from okt import errors
from okt.engines import results as results_mod
from okt.engines import states, stepper
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.lifecycle import lifecycle as lifecycle_mod
from okt.lifecycle import transition as transition_mod
from okt.lifecycle.lifecycle import Lifecycle, Progress
from okt.lifecycle.transition import IllegalTransition, Move, Transition, UnknownPhase
from okt.reconciler import context as context_mod
from okt.reconciler import core
from okt.reconciler import reconciler as reconciler_mod
from okt.status import bookkeeping, writer
from okt.status.conditions import ConditionStatus
from okt.testing import FakeClient, condition

Persistence = bookkeeping.Persistence
KIND = kinds.Kind("test.okt.io/v1", "App", "apps")


class Phase(enum.StrEnum):
    Pending = "Pending"
    Provisioning = "Provisioning"
    Running = "Running"
    Upgrading = "Upgrading"
    Failed = "Failed"


class Other(enum.StrEnum):
    Pending = "Pending"


@dataclasses.dataclass
class Facts:
    """What the guards of the test lifecycle read; a test flips them."""

    job_succeeded: bool = False
    job_failed: bool = False
    version_changed: bool = False


FACTS_KEY = "facts"


def facts(ctx: context_mod.Context) -> Facts:
    return cast(Facts, ctx.params[FACTS_KEY])


TABLE = [
    Transition(Phase.Pending, Phase.Provisioning, reason="Provisioning"),
    Transition(Phase.Provisioning, Phase.Running, when=lambda ctx: facts(ctx).job_succeeded, reason="JobSucceeded"),
    Transition(Phase.Provisioning, Phase.Failed, when=lambda ctx: facts(ctx).job_failed, reason="JobFailed"),
    Transition(Phase.Running, Phase.Upgrading, when=lambda ctx: facts(ctx).version_changed, reason="UpgradeRequested"),
    Transition(Phase.Upgrading, Phase.Running, when=lambda ctx: facts(ctx).job_succeeded, reason="UpgradeSucceeded"),
    Transition(
        Phase.Upgrading,
        Phase.Failed,
        when=lambda ctx: facts(ctx).job_failed,
        reason="UpgradeFailed",
        message="the upgrade Job failed",
    ),
]

#: Facts under which exactly the guard of each edge of TABLE holds.
ENABLING = {
    "Provisioning": Facts(),
    "JobSucceeded": Facts(job_succeeded=True),
    "JobFailed": Facts(job_failed=True),
    "UpgradeRequested": Facts(version_changed=True),
    "UpgradeSucceeded": Facts(job_succeeded=True),
    "UpgradeFailed": Facts(job_failed=True),
}

LIFECYCLE = Lifecycle(Phase, initial=Phase.Pending, transitions=TABLE, failed={Phase.Failed})

DECLARED = {(edge.source, edge.dest) for edge in TABLE}
UNDECLARED = [(s, d) for s in Phase for d in Phase if (s, d) not in DECLARED]


class Recorder:
    """A shipped-fake-style event recorder: remembers what would have been sent."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, cr: objects.CustomResource, type_: str, reason: str, message: str, *, once: bool = False) -> None:
        self.events.append((type_, reason, message))


def said(ctx: Any, recorder: Recorder) -> list[tuple[str, str, str]]:
    """The Events recorded, then those of the phase moves, recorded once a write stores the move (none here)."""
    return [*recorder.events, *(("Normal", move.reason, move.message) for move in ctx.bookkeeping.moves_to_announce)]


class NoReader:
    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        return None

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        return []

    def owned(
        self, kind: kinds.Kind, namespace: str | None, owner_uid: str, labels: Mapping[str, str]
    ) -> builtins.list[dict[str, Any]]:
        return []

    def observe(self, obj: Mapping[str, Any]) -> None:
        return None


def _reconciler(persistence: Persistence) -> reconciler_mod.Reconciler:
    cls = type("AppReconciler", (reconciler_mod.Reconciler,), {"persistence": persistence, "kind": "App"})
    return cast(reconciler_mod.Reconciler, cls())


def app(phase: str | None = None, persistence: Persistence = Persistence.STATUS, generation: int = 3) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": KIND.api_version,
        "kind": KIND.kind,
        "metadata": {"name": "demo", "namespace": "ns", "uid": "u-1", "generation": generation},
        "spec": {},
    }
    if phase is not None and persistence is Persistence.STATUS:
        raw["status"] = {"okt": {"phase": phase}}
    elif phase is not None:
        raw["metadata"]["annotations"] = {"okt.io/phase": phase}
    return raw


def make_ctx(
    raw: dict[str, Any] | None = None,
    *,
    persistence: Persistence = Persistence.STATUS,
    state: Facts | None = None,
) -> tuple[context_mod.Context, Recorder]:
    recorder = Recorder()
    settings = dataclasses.replace(_reconciler(persistence).settings(), params={FACTS_KEY: state or Facts()})
    ctx = context_mod.Context(
        settings=settings,
        client=cast(kube_client.Client, None),
        reader=NoReader(),
        kind=KIND,
        cr=objects.CustomResource(raw if raw is not None else app(persistence=persistence)),
        exists=True,
        logger=structlog.get_logger("test"),
        recorder=cast(Any, recorder),
    )
    return ctx, recorder


def persisted(ctx: context_mod.Context) -> dict[str, Any]:
    """The object as it would read after the reconciler's status (and annotation) write."""
    raw = copy.deepcopy(dict(ctx.cr.raw))
    extra = {**ctx.status_fields, **ctx.bookkeeping.status_fields()}
    raw["status"] = writer.desired_status(ctx.cr.status, ctx.conditions, ctx.cr.generation, extra)
    patch = ctx.bookkeeping.annotation_patch()
    if patch is not None:
        annotations = raw["metadata"].setdefault("annotations", {})
        for key, value in patch["metadata"]["annotations"].items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
    return raw


def requeues(ctx: context_mod.Context) -> list[float | None]:
    return [e.delay for e in ctx.results.entries if e.operation is results_mod.Operation.REQUEUE]


# -- the declared edges ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("edge", TABLE, ids=lambda e: e.describe())
def test_each_declared_edge_is_taken_when_its_guard_holds(edge: Transition[Phase]) -> None:
    ctx, recorder = make_ctx(app(edge.source.value), state=ENABLING[edge.reason])

    progress = LIFECYCLE.advance(ctx)

    assert progress == Progress(edge.source, (Move(edge.source, edge.dest, edge.reason, edge.message),))
    assert LIFECYCLE.current(ctx) is edge.dest
    assert ctx.bookkeeping.phase == edge.dest.value
    condition = ctx.conditions["Phase"]
    assert condition.reason == edge.reason
    assert condition.status is (ConditionStatus.FALSE if edge.dest is Phase.Failed else ConditionStatus.TRUE)
    assert condition.observed_generation == 3
    assert condition.message.startswith(f"phase {edge.dest} (from {edge.source})")
    assert said(ctx, recorder) == [("Normal", edge.reason, f"phase {edge.source} -> {edge.dest}" + _detail(edge))]


def _detail(edge: Transition[Phase]) -> str:
    return f": {edge.message}" if edge.message else ""


@pytest.mark.parametrize("phase", [Phase.Provisioning, Phase.Running, Phase.Upgrading, Phase.Failed], ids=str)
def test_no_move_no_event_and_no_requeue_when_no_guard_holds(phase: Phase) -> None:
    ctx, recorder = make_ctx(app(phase.value))

    progress = LIFECYCLE.advance(ctx)

    assert not progress.moved
    assert progress.phase is phase
    assert LIFECYCLE.current(ctx) is phase
    assert recorder.events == []
    assert requeues(ctx) == []


@pytest.mark.parametrize(
    ("first", "second"),
    [("JobSucceeded", "JobFailed"), ("JobFailed", "JobSucceeded")],
)
def test_the_first_declared_edge_whose_guard_holds_wins(first: str, second: str) -> None:
    by_reason = {edge.reason: edge for edge in TABLE}
    table = [by_reason[first], by_reason[second]]
    lifecycle = Lifecycle(Phase, initial=Phase.Provisioning, transitions=table)
    ctx, _ = make_ctx(app("Provisioning"), state=Facts(job_succeeded=True, job_failed=True))

    progress = lifecycle.advance(ctx)

    assert [move.reason for move in progress.moves] == [first]
    assert progress.phase is by_reason[first].dest


def test_guards_after_the_winning_one_are_not_asked() -> None:
    asked: list[str] = []

    def guard(name: str, answer: bool) -> Callable[[context_mod.Context], bool]:
        def ask(ctx: context_mod.Context) -> bool:
            asked.append(name)
            return answer

        return ask

    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Provisioning,
        transitions=[
            Transition(Phase.Provisioning, Phase.Upgrading, when=guard("a", False)),
            Transition(Phase.Provisioning, Phase.Running, when=guard("b", True)),
            Transition(Phase.Provisioning, Phase.Failed, when=guard("c", True)),
        ],
    )
    ctx, _ = make_ctx(app("Provisioning"))

    assert lifecycle.advance(ctx).phase is Phase.Running
    assert asked == ["a", "b"]


# -- max steps ---------------------------------------------------------------------------------------------------------

CHAIN = Lifecycle(
    Phase,
    initial=Phase.Pending,
    transitions=[
        Transition(Phase.Pending, Phase.Provisioning),
        Transition(Phase.Provisioning, Phase.Running),
        Transition(Phase.Running, Phase.Upgrading),
    ],
)


@pytest.mark.parametrize(
    ("budget", "expected", "requeued"),
    [
        (1, [Phase.Provisioning], True),
        (2, [Phase.Provisioning, Phase.Running], True),
        (3, [Phase.Provisioning, Phase.Running, Phase.Upgrading], True),
        (4, [Phase.Provisioning, Phase.Running, Phase.Upgrading], False),
        (50, [Phase.Provisioning, Phase.Running, Phase.Upgrading], False),
    ],
)
def test_at_most_max_steps_moves_per_call_and_a_requeue_when_the_budget_is_used_up(
    budget: int, expected: list[Phase], requeued: bool
) -> None:
    lifecycle = Lifecycle(Phase, initial=Phase.Pending, transitions=CHAIN.transitions, max_steps=budget)
    ctx, recorder = make_ctx()

    progress = lifecycle.advance(ctx)

    assert [move.dest for move in progress.moves] == expected
    assert ctx.bookkeeping.phase == expected[-1].value
    assert [reason for _, reason, _ in said(ctx, recorder)] == [phase.value for phase in expected]
    assert requeues(ctx) == ([1.0] if requeued else [])
    assert ctx.results.outcome() == (results_mod.Outcome.requeue_after(1.0) if requeued else results_mod.Outcome.done())


def test_the_default_budget_is_one_move_so_every_phase_is_observable() -> None:
    ctx, _ = make_ctx()
    assert [move.dest for move in CHAIN.advance(ctx).moves] == [Phase.Provisioning]
    assert [move.dest for move in CHAIN.advance(ctx).moves] == [Phase.Running]


def test_a_call_may_override_the_budget() -> None:
    ctx, _ = make_ctx()
    assert CHAIN.advance(ctx, max_steps=2).phase is Phase.Running


@pytest.mark.parametrize("requeue_after", [None, 0.25])
def test_requeue_after_sets_or_disables_the_lifecycle_requeue(requeue_after: float | None) -> None:
    lifecycle = Lifecycle(Phase, initial=Phase.Pending, transitions=CHAIN.transitions, requeue_after=requeue_after)
    ctx, _ = make_ctx()
    lifecycle.advance(ctx)
    assert requeues(ctx) == ([] if requeue_after is None else [requeue_after])


# -- persistence -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_the_phase_survives_the_round_trip_through_the_persisted_object(persistence: Persistence) -> None:
    ctx, _ = make_ctx(app(persistence=persistence), persistence=persistence)
    LIFECYCLE.advance(ctx)
    stored = persisted(ctx)

    if persistence is Persistence.STATUS:
        assert stored["status"]["okt"]["phase"] == "Provisioning"
        assert "annotations" not in stored["metadata"]
    else:
        assert stored["metadata"]["annotations"]["okt.io/phase"] == "Provisioning"
        assert "okt" not in stored["status"]

    again, recorder = make_ctx(stored, persistence=persistence, state=Facts(job_succeeded=True))
    assert LIFECYCLE.current(again) is Phase.Provisioning
    assert again.conditions["Phase"].reason == "Provisioning"

    progress = LIFECYCLE.advance(again)

    assert progress.moves == (Move(Phase.Provisioning, Phase.Running, "JobSucceeded"),)
    assert LIFECYCLE.current(make_ctx(persisted(again), persistence=persistence)[0]) is Phase.Running
    assert [reason for _, reason, _ in said(again, recorder)] == ["JobSucceeded"]


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_a_new_object_starts_in_the_initial_phase_and_records_it(persistence: Persistence) -> None:
    lifecycle = Lifecycle(Phase, initial=Phase.Pending, transitions=TABLE[1:])
    ctx, recorder = make_ctx(app(persistence=persistence), persistence=persistence)
    assert ctx.bookkeeping.phase is None

    progress = lifecycle.advance(ctx)

    assert progress == Progress(Phase.Pending)
    assert ctx.bookkeeping.phase == "Pending"
    assert ctx.conditions["Phase"].reason == lifecycle_mod.INITIAL_REASON
    assert ctx.conditions["Phase"].message == "phase Pending (initial)"
    assert recorder.events == []
    assert LIFECYCLE.current(make_ctx(persisted(ctx), persistence=persistence)[0]) is Phase.Pending


def test_a_steady_phase_keeps_its_condition_and_follows_the_generation() -> None:
    ctx, _ = make_ctx(app("Provisioning", generation=1), state=Facts(job_succeeded=True))
    LIFECYCLE.advance(ctx)
    moved = ctx.conditions["Phase"]
    stored = persisted(ctx)
    stored["metadata"]["generation"] = 2

    again, _ = make_ctx(stored)
    LIFECYCLE.advance(again)

    steady = again.conditions["Phase"]
    assert (steady.reason, steady.message, steady.status) == (moved.reason, moved.message, moved.status)
    assert steady.last_transition_time == moved.last_transition_time
    assert steady.observed_generation == 2


def test_a_condition_describing_another_phase_is_corrected_from_the_persisted_phase() -> None:
    ctx, _ = make_ctx(app("Provisioning"), state=Facts(job_succeeded=True))
    LIFECYCLE.advance(ctx)
    stored = persisted(ctx)
    stored["status"]["okt"]["phase"] = "Upgrading"  # edited by hand to another (known) phase

    again, _ = make_ctx(stored)
    LIFECYCLE.advance(again)

    assert again.conditions["Phase"].reason == lifecycle_mod.OBSERVED_REASON
    assert again.conditions["Phase"].message == "phase Upgrading"


# -- refusals ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "dest"), UNDECLARED, ids=str)
def test_force_along_an_undeclared_edge_is_refused_and_changes_nothing(source: Phase, dest: Phase) -> None:
    ctx, recorder = make_ctx(app(source.value))
    before = (ctx.bookkeeping.phase, ctx.conditions.to_list())

    with pytest.raises(IllegalTransition) as raised:
        LIFECYCLE.force(ctx, dest)

    assert (raised.value.source, raised.value.dest) == (source.value, dest.value)
    assert raised.value.allowed == tuple(p.value for p in LIFECYCLE.targets(source))
    assert (ctx.bookkeeping.phase, ctx.conditions.to_list()) == (before[0], before[1])
    assert recorder.events == []
    assert requeues(ctx) == []


@pytest.mark.parametrize("edge", TABLE, ids=lambda e: e.describe())
def test_force_along_a_declared_edge_moves_without_asking_the_guard(edge: Transition[Phase]) -> None:
    ctx, recorder = make_ctx(app(edge.source.value))  # no guard holds: every fact is False but Pending's

    move = LIFECYCLE.force(ctx, edge.dest, reason="OperatorDecision", message="asked for")

    assert move == Move(edge.source, edge.dest, "OperatorDecision", "asked for", forced=True)
    assert LIFECYCLE.current(ctx) is edge.dest
    assert ctx.conditions["Phase"].message == f"phase {edge.dest} (from {edge.source}, forced): asked for"
    assert said(ctx, recorder) == [
        ("Normal", "OperatorDecision", f"phase {edge.source} -> {edge.dest} (forced): asked for")
    ]
    assert requeues(ctx) == [1.0]


def test_force_reports_the_edge_reason_by_default() -> None:
    ctx, _ = make_ctx(app("Upgrading"))
    assert LIFECYCLE.force(ctx, Phase.Failed) == Move(
        Phase.Upgrading, Phase.Failed, "UpgradeFailed", "the upgrade Job failed", forced=True
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (Phase.Running, "illegal transition Running -> Pending: from Running the lifecycle may only move to Upgrading"),
        (Phase.Failed, "illegal transition Failed -> Pending: Failed is a final phase, no transition leaves it"),
    ],
)
def test_an_illegal_transition_says_what_would_be_legal(source: Phase, message: str) -> None:
    ctx, _ = make_ctx(app(source.value))
    with pytest.raises(IllegalTransition, match=f"^{message}$"):
        LIFECYCLE.force(ctx, Phase.Pending)


@pytest.mark.parametrize("error", [IllegalTransition, UnknownPhase])
def test_refusals_are_permanent_errors_with_their_own_reason(error: type[errors.OktError]) -> None:
    assert issubclass(error, errors.PermanentError)
    assert error.reason == error.__name__


@pytest.mark.parametrize(
    ("persistence", "where"),
    [(Persistence.STATUS, "status.okt.phase"), (Persistence.ANNOTATIONS, "annotation okt.io/phase")],
    ids=str,
)
def test_an_unknown_persisted_phase_is_refused_with_a_clear_message(persistence: Persistence, where: str) -> None:
    ctx, recorder = make_ctx(app("Exploded", persistence=persistence), persistence=persistence)

    with pytest.raises(UnknownPhase) as raised:
        LIFECYCLE.advance(ctx)

    assert str(raised.value) == (
        f"{where} is 'Exploded', which is not a phase of this lifecycle; set it to one of Pending, Provisioning, "
        "Running, Upgrading, Failed (Pending starts the lifecycle again)"
    )
    assert raised.value.reason == "UnknownPhase"
    assert ctx.bookkeeping.phase == "Exploded"
    assert not ctx.conditions.changed
    assert recorder.events == []


@pytest.mark.parametrize(
    "error",
    [IllegalTransition("Running", "Pending", ["Upgrading"]), UnknownPhase("x", "annotation a/b", ["A"], "A")],
    ids=lambda e: type(e).__name__,
)
def test_refusals_survive_pickling_with_their_attributes(error: errors.OktError) -> None:
    copied = pickle.loads(pickle.dumps(error))
    assert type(copied) is type(error)
    assert str(copied) == str(error)
    assert copied.__dict__ == error.__dict__


def test_an_unknown_phase_raised_in_a_hook_becomes_an_error_outcome_not_a_crash() -> None:
    ctx, _ = make_ctx(app("Exploded"))

    class Steps:
        def enter(self, state: states.State) -> None:
            if state is states.State.ObjectsGetter:
                LIFECYCLE.advance(ctx)

        def builtin(self, state: states.State) -> None:
            return None

        def reconcile(self) -> None:
            return None

        def finalizing(self) -> bool:
            return False

    run = stepper.Stepper().run(Steps(), ctx.results)

    assert run.path_str == ">CRChecker>ObjectsGetter>ErrorManager>End"
    assert isinstance(run.outcome.error, UnknownPhase)


class Advancing(reconciler_mod.Reconciler):
    """Advances LIFECYCLE on entering ObjectsGetter, as the sample does."""

    api_version = KIND.api_version
    kind = KIND.kind
    plural = KIND.plural
    params: ClassVar[dict[str, Any]] = {FACTS_KEY: Facts()}
    flush: ClassVar[bool] = False
    """Write a move at once, before the children follow it (as the lifecycle sample does)."""

    def enter_in_state(self, state: states.State, ctx: context_mod.Context) -> None:
        if state is states.State.ObjectsGetter and LIFECYCLE.advance(ctx).moved and self.flush:
            ctx.flush_status()
        super().enter_in_state(state, ctx)


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_an_unknown_phase_is_reported_once_then_retried_without_a_write_or_an_event(persistence: Persistence) -> None:
    fake = FakeClient(kinds=[KIND], objects=[app("Exploded", persistence=persistence)])
    reconciler = cast(reconciler_mod.Reconciler, type("Apps", (Advancing,), {"persistence": persistence})())
    recorder = Recorder()
    first = core.reconcile(reconciler, fake, None, "ns", "demo", recorder=cast(Any, recorder))
    assert isinstance(first.outcome.error, UnknownPhase)
    writes = fake.stats.writes()

    later = [core.reconcile(reconciler, fake, None, "ns", "demo", recorder=cast(Any, recorder)) for _ in range(3)]

    # Still retried (the fix, an edit of the phase, wakes no reconcile), but saying nothing new: no write, no event.
    assert [isinstance(run.outcome.error, UnknownPhase) for run in later] == [True, True, True]
    assert fake.stats.writes() == writes
    assert [reason for _, reason, _ in recorder.events] == ["UnknownPhase"]


@pytest.mark.parametrize(
    ("before", "after"),
    [(Persistence.STATUS, Persistence.ANNOTATIONS), (Persistence.ANNOTATIONS, Persistence.STATUS)],
    ids=str,
)
def test_a_phase_kept_where_an_earlier_operator_version_kept_it_carries_over(
    before: Persistence, after: Persistence
) -> None:
    fake = FakeClient(kinds=[KIND], objects=[app()])
    earlier, upgraded = (
        cast(reconciler_mod.Reconciler, type("Apps", (Advancing,), {"persistence": persistence})())
        for persistence in (before, after)
    )
    core.reconcile(earlier, fake, None, "ns", "demo")  # Pending -> Provisioning, kept where `before` says

    run = core.reconcile(upgraded, fake, None, "ns", "demo")

    stored = fake.stored(KIND, "demo", "ns") or {}
    in_status = (stored.get("status") or {}).get("okt")
    in_annotation = (stored["metadata"].get("annotations") or {}).get("okt.io/phase")
    assert run.outcome == results_mod.Outcome.done()  # still Provisioning: not read as a new object's Pending
    assert (condition(stored, "Phase") or {}).get("message") == "phase Provisioning (from Pending)"
    if after is Persistence.STATUS:
        assert (in_status, in_annotation) == ({"errorCount": 0, "phase": "Provisioning"}, None)
    else:
        assert (in_status, in_annotation) == (None, "Provisioning")


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_a_move_written_by_a_flush_is_not_written_again_by_the_report(persistence: Persistence) -> None:
    fake = FakeClient(kinds=[KIND], objects=[app()])
    reconciler = type("Apps", (Advancing,), {"persistence": persistence, "flush": True})()

    core.reconcile(cast(reconciler_mod.Reconciler, reconciler), fake, None, "ns", "demo")

    # The flush writes the move (Pending -> Provisioning); the report writes Ready and the rest, not the phase again.
    writes = fake.stats.snapshot()
    assert (writes[("apply", "apps/status")], writes[("patch", "apps")]) == (
        (2, 0) if persistence is Persistence.STATUS else (2, 1)
    )
    stored = fake.stored(KIND, "demo", "ns") or {}
    kept = stored["status"].get("okt", {}).get("phase") or stored["metadata"]["annotations"]["okt.io/phase"]
    assert kept == "Provisioning"


class GivingUp(Advancing):
    """Advances LIFECYCLE, then gives up quietly (waiting for something no event announces)."""

    def enter_in_state(self, state: states.State, ctx: context_mod.Context) -> results_mod.Outcome | None:
        super().enter_in_state(state, ctx)
        return results_mod.Outcome.give_up("waiting") if state is states.State.ObjectsGetter else None


def test_a_move_whose_write_failed_before_a_quiet_give_up_is_retried_until_it_is_written() -> None:
    fake = FakeClient(kinds=[KIND], objects=[app()])
    reconciler = cast(reconciler_mod.Reconciler, GivingUp())
    fake.fail("apply", "apps/status", errors.ApiError.from_status(500, "InternalError", "etcd is away"))

    failed = core.reconcile(reconciler, fake, None, "ns", "demo")

    assert failed.outcome.kind is results_mod.OutcomeKind.RETRY  # not a give-up: nothing would wake it
    assert ((fake.stored(KIND, "demo", "ns") or {}).get("status") or {}).get("okt") is None

    again = core.reconcile(reconciler, fake, None, "ns", "demo")

    assert again.outcome == results_mod.Outcome.give_up("waiting")
    assert (fake.stored(KIND, "demo", "ns") or {})["status"]["okt"]["phase"] == "Provisioning"


def test_a_move_is_logged_once_it_is_written_not_at_each_refused_try() -> None:
    fake = FakeClient(kinds=[KIND], objects=[app()])
    reconciler = cast(reconciler_mod.Reconciler, GivingUp())
    fake.fail("apply", "apps/status", errors.ApiError.from_status(500, "InternalError", "etcd is away"))

    with structlog.testing.capture_logs() as refused:
        core.reconcile(reconciler, fake, None, "ns", "demo")
    with structlog.testing.capture_logs() as written:
        core.reconcile(reconciler, fake, None, "ns", "demo")

    assert [line for line in refused if line["event"] == "lifecycle moved"] == []
    (moved,) = [line for line in written if line["event"] == "lifecycle moved"]
    assert (moved["phase"], moved["previous"], moved["reason"], moved["forced"]) == (
        "Provisioning",
        "Pending",
        "Provisioning",
        False,
    )


def test_an_exception_in_a_guard_propagates_and_keeps_earlier_moves() -> None:
    def broken(ctx: context_mod.Context) -> bool:
        raise errors.TemporaryError("job status not readable yet")

    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Pending,
        transitions=[
            Transition(Phase.Pending, Phase.Provisioning),
            Transition(Phase.Provisioning, Phase.Running, when=broken),
        ],
        max_steps=2,
    )
    ctx, recorder = make_ctx()

    with pytest.raises(errors.TemporaryError):
        lifecycle.advance(ctx)

    assert ctx.bookkeeping.phase == "Provisioning"
    assert [reason for _, reason, _ in said(ctx, recorder)] == ["Provisioning"]


@pytest.mark.parametrize(
    "returned", [results_mod.Outcome.requeue_after(5), results_mod.Outcome.give_up("not yet")], ids=str
)
def test_a_guard_returning_an_outcome_is_refused_and_the_edge_not_taken(returned: results_mod.Outcome) -> None:
    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Provisioning,
        transitions=[Transition(Phase.Provisioning, Phase.Running, when=lambda ctx: cast(bool, returned))],
    )
    ctx, recorder = make_ctx(app("Provisioning"))

    with pytest.raises(TypeError, match=r"Provisioning -> Running: its guard returned .*a guard returns True or False"):
        lifecycle.advance(ctx)

    assert ctx.bookkeeping.phase == "Provisioning"
    assert recorder.events == []


class Truthy:
    """Not a bool, though it answers one (as a numpy bool does)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Truthy()"


@pytest.mark.parametrize(
    ("returned", "shown"),
    [(None, "None"), (1, "1"), (0, "0"), ("yes", "'yes'"), ("", "''"), ([], "[]"), (Truthy(), "Truthy()")],
    ids=repr,
)
def test_a_guard_returning_anything_but_a_bool_is_refused_naming_the_edge_and_what_it_returned(
    returned: object, shown: str
) -> None:
    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Provisioning,
        transitions=[
            Transition(Phase.Provisioning, Phase.Running, when=lambda ctx: cast(bool, returned)),
            Transition(Phase.Provisioning, Phase.Failed),
        ],
    )
    ctx, recorder = make_ctx(app("Provisioning"))

    with pytest.raises(TypeError) as refused:
        lifecycle.advance(ctx)

    assert str(refused.value).startswith(f"Provisioning -> Running: its guard returned {shown}; a guard returns True")
    assert ctx.bookkeeping.phase == "Provisioning"  # neither this edge nor the next one was taken
    assert said(ctx, recorder) == []


def test_a_guard_without_a_return_is_told_so() -> None:
    def forgot(ctx: context_mod.Context) -> bool:
        facts(ctx).job_succeeded  # noqa: B018  (the return this test is about is missing)

    lifecycle = Lifecycle(
        Phase, initial=Phase.Provisioning, transitions=[Transition(Phase.Provisioning, Phase.Running, when=forgot)]
    )
    ctx, _ = make_ctx(app("Provisioning"), state=Facts(job_succeeded=True))

    with pytest.raises(TypeError, match=r"returned None; .* \(a function without a return statement returns None\)"):
        lifecycle.advance(ctx)


@pytest.mark.parametrize(("holds", "expected"), [(True, Phase.Running), (False, Phase.Provisioning)])
def test_an_async_guard_is_awaited_as_every_async_def_hook_is(holds: bool, expected: Phase) -> None:
    async def setup_succeeded(ctx: context_mod.Context) -> bool:
        await asyncio.sleep(0)
        return holds

    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Provisioning,
        transitions=[
            Transition(Phase.Provisioning, Phase.Running, when=setup_succeeded),
        ],
    )
    ctx, _ = make_ctx(app("Provisioning"))

    assert lifecycle.advance(ctx).phase is expected


def test_an_async_guard_is_awaited_inside_an_async_hook() -> None:
    """As an ``async def enter_in_state`` calls ``advance``: the guard's coroutine runs beside the hook's loop."""

    async def setup_succeeded(ctx: context_mod.Context) -> bool:
        return True

    lifecycle = Lifecycle(
        Phase,
        initial=Phase.Provisioning,
        transitions=[Transition(Phase.Provisioning, Phase.Running, when=setup_succeeded)],
    )
    ctx, _ = make_ctx(app("Provisioning"))

    async def hook() -> Progress[Phase]:
        return lifecycle.advance(ctx)

    assert asyncio.run(hook()).phase is Phase.Running


def test_an_async_generator_guard_is_refused_where_the_transition_is_declared() -> None:
    async def setup_succeeded(ctx: context_mod.Context) -> AsyncIterator[bool]:
        yield True

    with pytest.raises(TypeError, match=r"the guard of Provisioning -> Running is an async generator"):
        Transition(Phase.Provisioning, Phase.Running, when=cast(transition_mod.Guard, setup_succeeded))


# -- declaration -------------------------------------------------------------------------------------------------------


class Numbered(enum.Enum):
    One = 1
    Two = 2


def _declare(**overrides: Any) -> Lifecycle[Any]:
    kwargs: dict[str, Any] = {"initial": Phase.Pending, "transitions": TABLE}
    kwargs.update(overrides)
    phases = kwargs.pop("phases", Phase)
    return Lifecycle(phases, **kwargs)


@pytest.mark.parametrize(
    ("declare", "error", "match"),
    [
        (lambda: Transition(Phase.Running, Phase.Running), ValueError, "must change the phase"),
        (lambda: Transition(Phase.Running, Other.Pending), ValueError, "same Enum"),
        (lambda: Transition(Numbered.One, Numbered.Two), TypeError, "non-empty strings"),
        (lambda: Transition("Running", Phase.Pending), TypeError, "member of the phase Enum"),  # type: ignore[type-var]
        (lambda: Transition(Phase.Running, Phase.Failed, reason="job failed"), ValueError, "not a valid condition"),
        (lambda: Transition(Phase.Running, Phase.Failed, when=True), TypeError, "callable"),  # type: ignore[arg-type]
        (lambda: _declare(phases=Numbered, initial=Numbered.One, transitions=[]), TypeError, "non-empty strings"),
        (lambda: _declare(phases=dict), TypeError, "Enum class"),
        (lambda: _declare(initial=Other.Pending), ValueError, "not a phase of Phase"),
        (lambda: _declare(transitions=[Transition(Other.Pending, Other.Pending)]), ValueError, "change the phase"),
        (lambda: _declare(transitions=[("Pending", "Running")]), TypeError, "okt.Transition"),
        (lambda: _declare(failed={Other.Pending}), ValueError, "not a phase of Phase"),
        (lambda: _declare(condition_type="Ready"), ValueError, "built-in managers"),
        (lambda: _declare(condition_type="not a type!"), ValueError, "not a valid condition type"),
        (lambda: _declare(max_steps=0), ValueError, "max_steps"),
        (lambda: _declare(max_steps=True), ValueError, "max_steps"),
        (lambda: _declare(requeue_after=0), ValueError, "requeue_after"),
        (lambda: _declare(requeue_after=math.nan), ValueError, "requeue_after"),
        (lambda: _declare(legacy_phases={"Running": Phase.Upgrading}), ValueError, "is the name of a phase"),
        (lambda: _declare(legacy_phases={"": Phase.Running}), ValueError, "non-empty string"),
        (lambda: _declare(legacy_phases={"Started": Other.Pending}), ValueError, "not a phase of Phase"),
        (lambda: _declare(legacy_phases=[("Started", Phase.Running)]), TypeError, "map old phase names"),
        (lambda: _declare(ready={Other.Pending}), ValueError, "ready phase .* not a phase of Phase"),
        (lambda: _declare(ready=Phase.Running), TypeError, "collection of phases"),
        (lambda: _declare(ready=set()), ValueError, "could ever be Ready"),
    ],
)
def test_a_malformed_declaration_is_refused_up_front(
    declare: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        declare()


@pytest.mark.parametrize(
    ("facts", "phase", "not_ready"),
    [
        (Facts(), "Provisioning", ("Provisioning", "phase Provisioning (from Pending)")),
        (Facts(job_succeeded=True), "Running", None),
    ],
    ids=["outside", "inside"],
)
def test_outside_its_ready_phases_a_lifecycle_holds_ready_false_with_its_condition(
    facts: Facts, phase: str, not_ready: tuple[str, str] | None
) -> None:
    lifecycle = _declare(ready={Phase.Running}, max_steps=2)
    ctx, _ = make_ctx(state=facts)

    assert lifecycle.advance(ctx).phase is Phase[phase]

    assert ctx.not_ready == not_ready
    assert [lifecycle.may_be_ready(p) for p in Phase] == [p is Phase.Running for p in Phase]


def test_without_ready_every_phase_may_be_ready_and_ready_is_left_to_the_reconciler() -> None:
    ctx, _ = make_ctx()

    LIFECYCLE.advance(ctx)

    assert LIFECYCLE.ready is None
    assert all(LIFECYCLE.may_be_ready(p) for p in Phase)
    assert ctx.not_ready is None


def test_an_edge_from_another_enum_is_refused() -> None:
    class Mirror(enum.StrEnum):
        Pending = "Pending"
        Running = "Running"

    with pytest.raises(ValueError, match="not a phase of Phase"):
        _declare(transitions=[Transition(Mirror.Pending, Mirror.Running)])


def test_a_transition_without_a_reason_reports_its_destination() -> None:
    assert Transition(Phase.Pending, Phase.Provisioning).reason == "Provisioning"


def test_a_transition_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TABLE[0].reason = "Other"  # type: ignore[misc]


def test_the_table_reads_back_from_the_machine_in_declaration_order() -> None:
    assert LIFECYCLE.transitions == tuple(TABLE)
    assert LIFECYCLE.targets(Phase.Provisioning) == (Phase.Running, Phase.Failed)
    assert LIFECYCLE.targets(Phase.Failed) == ()
    assert LIFECYCLE.allows(Phase.Running, Phase.Upgrading)
    assert not LIFECYCLE.allows(Phase.Running, Phase.Pending)


def test_one_lifecycle_serves_many_objects_in_parallel() -> None:
    def walk(index: int) -> list[Phase]:
        ctx, _ = make_ctx()
        seen = [LIFECYCLE.advance(ctx).phase]
        facts(ctx).job_succeeded = index % 2 == 0
        facts(ctx).job_failed = index % 2 == 1
        seen.append(LIFECYCLE.advance(ctx).phase)
        return seen

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        walks = list(pool.map(walk, range(200)))

    for index, seen in enumerate(walks):
        assert seen == [Phase.Provisioning, Phase.Running if index % 2 == 0 else Phase.Failed]


# -- mermaid -----------------------------------------------------------------------------------------------------------


def test_the_diagram_shows_every_edge_with_its_reason() -> None:
    assert LIFECYCLE.mermaid() == "\n".join(
        [
            "stateDiagram-v2",
            "    [*] --> Pending",
            "    Pending --> Provisioning : Provisioning",
            "    Provisioning --> Running : JobSucceeded",
            "    Provisioning --> Failed : JobFailed",
            "    Running --> Upgrading : UpgradeRequested",
            "    Upgrading --> Running : UpgradeSucceeded",
            "    Upgrading --> Failed : UpgradeFailed",
            "    Failed --> [*]",
            "    classDef failed fill:#fde0e0,stroke:#c62828",
            "    class Failed failed",
        ]
    )


def test_the_diagram_labels_phases_whose_value_is_not_an_identifier() -> None:
    class Stage(enum.StrEnum):
        warm_up = "warming up"
        serving = "serving"

    lifecycle = Lifecycle(Stage, initial=Stage.warm_up, transitions=[Transition(Stage.warm_up, Stage.serving)])

    assert lifecycle.mermaid() == "\n".join(
        [
            "stateDiagram-v2",
            '    state "warming up" as warm_up',
            "    [*] --> warm_up",
            "    warm_up --> serving : Serving",
            "    serving --> [*]",
        ]
    )


def test_the_phase_of_a_persisted_value_is_read_by_value() -> None:
    assert LIFECYCLE.phase_of(None) is Phase.Pending
    assert LIFECYCLE.phase_of("Upgrading") is Phase.Upgrading
    with pytest.raises(UnknownPhase, match="'upgrading'"):
        LIFECYCLE.phase_of("upgrading")
    assert transition_mod.always(cast(context_mod.Context, None)) is True


RENAMED = _declare(legacy_phases={"Installing": Phase.Provisioning, "Broken": Phase.Failed})


def test_an_old_phase_name_reads_as_the_phase_it_was_renamed_to() -> None:
    assert RENAMED.phase_of("Installing") is Phase.Provisioning
    assert RENAMED.legacy_phases == {"Installing": Phase.Provisioning, "Broken": Phase.Failed}
    with pytest.raises(UnknownPhase, match="set it to one of Pending, Provisioning, Running, Upgrading, Failed "):
        LIFECYCLE.phase_of("Installing")  # without the mapping


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_an_object_in_an_old_phase_name_moves_on_and_is_written_under_the_new_name(persistence: Persistence) -> None:
    ctx, recorder = make_ctx(app("Installing", persistence), persistence=persistence, state=Facts(job_succeeded=True))

    progress = RENAMED.advance(ctx)

    assert (progress.start, progress.phase) == (Phase.Provisioning, Phase.Running)
    again, _ = make_ctx(persisted(ctx), persistence=persistence)
    assert RENAMED.current(again) is Phase.Running
    assert said(ctx, recorder) == [("Normal", "JobSucceeded", "phase Provisioning -> Running")]


@pytest.mark.parametrize("persistence", list(Persistence), ids=str)
def test_an_old_phase_name_is_rewritten_even_when_nothing_moves_and_its_condition_keeps_its_reason(
    persistence: Persistence,
) -> None:
    raw = app("Installing", persistence)
    raw.setdefault("status", {})["conditions"] = [
        {
            "type": "Phase",
            "status": "True",
            "reason": "Provisioning",
            "message": "phase Installing (from Pending): the setup Job runs",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 3,
        }
    ]
    ctx, recorder = make_ctx(raw, persistence=persistence)

    progress = RENAMED.advance(ctx)

    assert (progress.start, progress.moved) == (Phase.Provisioning, False)
    assert ctx.bookkeeping.changed and ctx.bookkeeping.phase == "Provisioning"
    phase = ctx.conditions["Phase"]
    assert (phase.reason, phase.message) == ("Provisioning", "phase Provisioning (from Pending): the setup Job runs")
    assert recorder.events == []


def lost(message: str, persistence: Persistence = Persistence.STATUS) -> dict[str, Any]:
    """An object whose persisted phase is gone while its lifecycle condition says ``message``."""
    raw = app(None, persistence)
    raw["status"] = {
        "conditions": [
            {
                "type": "Phase",
                "status": "True",
                "reason": "JobSucceeded",
                "message": message,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 3,
            }
        ]
    }
    return raw


@pytest.mark.parametrize(
    ("persistence", "where"),
    [(Persistence.STATUS, "status.okt.phase"), (Persistence.ANNOTATIONS, "annotation okt.io/phase")],
    ids=str,
)
def test_a_lost_phase_is_restored_from_the_condition_that_describes_it_and_said_once(
    persistence: Persistence, where: str
) -> None:
    ctx, recorder = make_ctx(lost("phase Running (from Provisioning)", persistence), persistence=persistence)
    assert LIFECYCLE.current(ctx) is Phase.Running

    progress = LIFECYCLE.advance(ctx)

    assert (progress.start, progress.moves) == (Phase.Running, ())
    assert ctx.bookkeeping.phase == "Running"
    phase = ctx.conditions["Phase"]
    assert (phase.status, phase.reason) == (ConditionStatus.TRUE, "PhaseRestored")
    assert phase.message == (
        f"phase Running (restored from this condition: {where} was missing; the lifecycle goes on from here)"
    )
    assert recorder.events == [
        ("Warning", "PhaseRestored", f"{where} was missing: phase Running restored from the Phase condition")
    ]
    again, recorder = make_ctx(persisted(ctx), persistence=persistence)
    LIFECYCLE.advance(again)
    assert (again.conditions["Phase"].reason, recorder.events) == ("PhaseRestored", [])


@pytest.mark.parametrize(
    ("message", "phase"),
    [("phase Failed: the upgrade Job failed", Phase.Failed), ("phase Installing (from Pending)", Phase.Provisioning)],
)
def test_a_lost_phase_is_restored_from_a_condition_naming_it_or_its_old_name(message: str, phase: Phase) -> None:
    ctx, _ = make_ctx(lost(message))
    assert RENAMED.advance(ctx).start is phase
    assert ctx.bookkeeping.phase == phase.value


def test_a_lost_phase_the_condition_does_not_name_starts_again_from_the_initial_one_and_says_so() -> None:
    ctx, recorder = make_ctx(lost("someone wrote this"))

    progress = LIFECYCLE.advance(ctx)

    assert progress.start is Phase.Pending
    assert progress.phase is Phase.Provisioning  # the lifecycle goes on from the initial phase
    assert recorder.events[0] == (
        "Warning",
        "PhaseLost",
        "status.okt.phase was missing and the Phase condition named no phase: started again from Pending",
    )


# -- what an object's own metadata cannot say under status persistence --------------------------------------------


def annotated(annotations: dict[str, str], status: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object created with ``annotations`` (anyone who may create it sets them), its status as given."""
    raw = app(None)
    raw["metadata"]["annotations"] = annotations
    if status is not None:
        raw["status"] = status
    return raw


@pytest.mark.parametrize("annotation", ["okt.io/phase", "old.example.com/phase"])
def test_a_phase_annotation_on_an_object_whose_status_never_held_the_lifecycle_is_not_its_phase(
    annotation: str,
) -> None:
    raw = annotated({annotation: "Running"})
    recorder = Recorder()
    settings = dataclasses.replace(
        _reconciler(Persistence.STATUS).settings(), params={FACTS_KEY: Facts()}, legacy_prefixes=("old.example.com",)
    )
    ctx = context_mod.Context(
        settings=settings,
        client=cast(kube_client.Client, None),
        reader=NoReader(),
        kind=KIND,
        cr=objects.CustomResource(raw),
        exists=True,
        logger=structlog.get_logger("test"),
        recorder=cast(Any, recorder),
    )

    assert LIFECYCLE.current(ctx) is Phase.Pending  # a new object: the annotation skips no phase
    progress = LIFECYCLE.advance(ctx)

    assert (progress.start, progress.phase) == (Phase.Pending, Phase.Provisioning)
    stored = persisted(ctx)
    assert stored["status"]["okt"]["phase"] == "Provisioning"
    assert annotation not in stored["metadata"]["annotations"]  # removed by the write that stores the phase


def test_a_lifecycle_condition_kept_only_in_annotations_restores_no_phase_under_status_persistence() -> None:
    said_running = json.dumps([{"type": "Phase", "status": "True", "reason": "Started", "message": "phase Running"}])
    ctx, recorder = make_ctx(annotated({"okt.io/conditions": said_running}))

    assert LIFECYCLE.current(ctx) is Phase.Pending
    assert LIFECYCLE.advance(ctx).start is Phase.Pending
    assert [reason for _, reason, _ in recorder.events] == []  # a new object: nothing lost, nothing restored


def test_a_phase_annotation_is_carried_over_when_the_status_holds_the_lifecycle_condition() -> None:
    # An operator version with annotation persistence reconciled the object: its status says the phase too.
    raw = lost("phase Running (from Provisioning)")
    raw["metadata"]["annotations"] = {"okt.io/phase": "Running"}
    ctx, recorder = make_ctx(raw)

    assert LIFECYCLE.current(ctx) is Phase.Running
    assert LIFECYCLE.advance(ctx).start is Phase.Running
    assert recorder.events == []
