import dataclasses
import datetime
import fractions

import pytest

import okt
from okt import errors
from okt.engines.results import MAX_DELAY, Entry, Operation, Outcome, OutcomeKind, Results

ERROR_OPERATIONS = {
    Operation.CRUD_ERROR,
    Operation.MUTATE_ERROR,
    Operation.STATUS_UPDATE_ERROR,
    Operation.REGISTRATION_ABORTED,
    Operation.CLEANUP_ERROR,
    Operation.HOOK_ERROR,
}


def _boom(text: str = "boom") -> RuntimeError:
    return RuntimeError(text)


# --- Operation and Entry -------------------------------------------------------------------------------------------


def test_operations_are_okts_names() -> None:
    assert [op.value for op in Operation] == [
        "created",
        "updated",
        "unchanged",
        "deleted",
        "pruned",
        "crud error",
        "mutate error",
        "status updated",
        "status unchanged",
        "status update error",
        "registration aborted",
        "cr not found",
        "finalizer added",
        "finalizer removed",
        "finalizing",
        "cleanup error",
        "hook error",
        "give up",
        "requeue",
        "throttled",
    ]


@pytest.mark.parametrize("operation", list(Operation), ids=str)
def test_operation_names_are_upper_snake_spellings_of_their_values(operation: Operation) -> None:
    assert operation.name == operation.value.upper().replace(" ", "_")


@pytest.mark.parametrize("operation", list(Operation), ids=str)
def test_only_failure_operations_are_errors(operation: Operation) -> None:
    assert operation.is_error is (operation in ERROR_OPERATIONS)


@pytest.mark.parametrize(
    ("operation", "error", "delay", "message"),
    [
        (Operation.CRUD_ERROR, None, None, "needs the error"),
        (Operation.HOOK_ERROR, None, 1.0, "needs the error"),
        (Operation.CREATED, _boom(), None, "cannot carry an error"),
        (Operation.REQUEUE, None, None, "needs a delay"),
        (Operation.REQUEUE, None, 0.0, "needs a delay"),
        (Operation.UNCHANGED, None, -1.0, "delay must be"),
        (Operation.UNCHANGED, None, float("nan"), "delay must be"),
    ],
)
def test_an_entry_refuses_contradicting_fields(
    operation: Operation, error: BaseException | None, delay: float | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Entry(operation, error=error, delay=delay)


def test_an_entry_is_immutable() -> None:
    entry = Entry(Operation.CREATED, "v1/ConfigMap ns/a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.operation = Operation.UPDATED  # type: ignore[misc]


def test_add_returns_the_recorded_entry_in_order() -> None:
    results = Results()
    first = results.add(Operation.CREATED, "v1/ConfigMap ns/a")
    second = results.add(Operation.UNCHANGED, "v1/Service ns/a", delay=10)
    assert results.entries == (first, second)
    assert second == Entry(Operation.UNCHANGED, "v1/Service ns/a", None, 10)


def test_add_takes_the_resource_itself_as_okt_s_addop_does_and_records_its_key() -> None:
    # OKT's engine.Results.AddOp(res, ...) is ctx.results.add(op, res, ...): the wrapper was stored as it was, where
    # every other entry holds its key, and mypy refused the call the migration guide gives.
    cr = okt.CustomResource({"apiVersion": "demo.example.com/v1", "kind": "MyKind", "metadata": {"name": "a"}})
    res = okt.MutableResource(cr, name="a-data1", namespace="ns", body={"apiVersion": "v1", "kind": "ConfigMap"})
    entry = Results().add(Operation.REGISTRATION_ABORTED, res, _boom())
    assert entry.resource == "ConfigMap/ns/a-data1"


@pytest.mark.parametrize("resource", [42, b"v1/ConfigMap ns/a", ("ConfigMap", "a")])
def test_an_entry_refuses_a_resource_that_is_not_its_key(resource: object) -> None:
    with pytest.raises(TypeError, match=r"resource must be a str \(its key\) or an okt.Resource, not "):
        Results().add(Operation.CREATED, resource)  # type: ignore[arg-type]


def test_a_give_up_cannot_be_added_as_a_plain_entry() -> None:
    with pytest.raises(ValueError, match="give_up"):
        Results().add(Operation.GIVE_UP)


# --- consolidation rules -------------------------------------------------------------------------------------------


def test_an_empty_stack_is_done() -> None:
    assert Results().outcome() == Outcome.done()


def test_first_error_wins() -> None:
    results = Results()
    first, second = _boom("first"), _boom("second")
    results.add(Operation.CREATED, "a")
    results.add(Operation.CRUD_ERROR, "b", error=first)
    results.add(Operation.HOOK_ERROR, error=second, delay=1)
    assert results.first_error is first
    assert results.outcome() == Outcome.retry(first)


def test_give_up_overrides_earlier_error() -> None:
    results = Results()
    results.add(Operation.CRUD_ERROR, "a", error=_boom())
    results.give_up("not my business")
    assert results.outcome() == Outcome.give_up("not my business")


def test_give_up_is_sticky_and_keeps_the_first_reason() -> None:
    results = Results()
    results.give_up("first reason")
    results.add(Operation.CREATED, "a")
    results.add(Operation.HOOK_ERROR, error=_boom())
    results.give_up("second reason")
    assert results.gave_up == "first reason"
    assert results.outcome() == Outcome.give_up("first reason")


@pytest.mark.parametrize(("first_alarming", "second_alarming"), [(False, True), (True, False), (True, True)])
def test_any_alarming_give_up_makes_the_give_up_alarming(first_alarming: bool, second_alarming: bool) -> None:
    results = Results()
    results.give_up("one", alarming=first_alarming)
    results.give_up("two", alarming=second_alarming)
    assert results.give_up_alarming
    assert results.has_error


def test_an_alarming_give_up_counts_as_an_error_with_a_give_up_exception() -> None:
    results = Results()
    results.give_up("quota exceeded", alarming=True)
    assert results.has_error
    assert isinstance(results.first_error, errors.GiveUp)
    assert str(results.first_error) == "quota exceeded"


def test_a_quiet_give_up_is_not_an_error() -> None:
    results = Results()
    results.give_up("custom resource deleted")
    assert not results.has_error
    assert results.first_error is None
    assert not results.give_up_alarming


def test_an_alarming_give_up_keeps_the_error_it_was_given() -> None:
    results = Results()
    cause = _boom()
    results.give_up("cannot continue", alarming=True, error=cause)
    assert results.first_error is cause


def test_smallest_delay_wins() -> None:
    results = Results()
    results.add(Operation.UNCHANGED, "a", delay=30)
    results.add(Operation.REQUEUE, delay=5)
    results.add(Operation.UPDATED, "b", delay=12)
    assert results.min_delay == 5
    assert results.outcome() == Outcome.requeue_after(5)


@pytest.mark.parametrize("delay", [MAX_DELAY + 1, 10 * MAX_DELAY])
def test_requeue_delays_are_capped_at_six_hours(delay: float) -> None:
    results = Results()
    results.add(Operation.REQUEUE, delay=delay)
    assert results.min_delay == 6 * 3600
    assert results.outcome().delay == 6 * 3600


def test_retry_delays_are_capped_at_six_hours() -> None:
    results = Results()
    results.add(Operation.HOOK_ERROR, error=_boom(), delay=MAX_DELAY * 2)
    assert results.outcome().delay == MAX_DELAY


@pytest.mark.parametrize("delay", [None, 0.0])
def test_a_non_error_entry_requeues_only_with_a_delay_above_zero(delay: float | None) -> None:
    results = Results()
    results.add(Operation.UNCHANGED, "a", delay=delay)
    assert results.min_delay is None
    assert results.outcome() == Outcome.done()


@pytest.mark.parametrize("delay", [None, 0.0, 3.0])
def test_an_error_always_requeues_as_a_retry_with_its_own_delay(delay: float | None) -> None:
    results = Results()
    error = _boom()
    results.add(Operation.UNCHANGED, "a", delay=60)
    results.add(Operation.CRUD_ERROR, "b", error=error, delay=delay)
    outcome = results.outcome()
    assert outcome == Outcome.retry(error, delay=delay)
    assert outcome.requeue


def test_error_entry_delays_are_not_requeue_delays() -> None:
    results = Results()
    results.add(Operation.HOOK_ERROR, error=_boom(), delay=1)
    results.add(Operation.UNCHANGED, "a", delay=40)
    assert results.min_delay == 40


@pytest.mark.parametrize(
    ("error", "give_up", "alarming", "delay", "kind"),
    [
        (False, False, False, None, OutcomeKind.DONE),
        (False, False, False, 7.0, OutcomeKind.REQUEUE_AFTER),
        (True, False, False, None, OutcomeKind.RETRY),
        (True, False, False, 7.0, OutcomeKind.RETRY),
        (False, True, False, None, OutcomeKind.GIVE_UP),
        (False, True, False, 7.0, OutcomeKind.GIVE_UP),
        (False, True, True, None, OutcomeKind.GIVE_UP),
        (True, True, False, None, OutcomeKind.GIVE_UP),
        (True, True, True, 7.0, OutcomeKind.GIVE_UP),
    ],
)
def test_outcome_for_each_combination(
    error: bool, give_up: bool, alarming: bool, delay: float | None, kind: OutcomeKind
) -> None:
    results = Results()
    if delay is not None:
        results.add(Operation.REQUEUE, delay=delay)
    if error:
        results.add(Operation.CRUD_ERROR, "a", error=_boom())
    if give_up:
        results.give_up("stop", alarming=alarming)
    outcome = results.outcome()
    assert outcome.kind is kind
    assert outcome.requeue is (kind in (OutcomeKind.RETRY, OutcomeKind.REQUEUE_AFTER))
    if kind is OutcomeKind.REQUEUE_AFTER:
        assert outcome.delay == delay


# --- record_exception ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alarming", [False, True])
def test_a_raised_give_up_is_recorded_as_a_give_up(alarming: bool) -> None:
    results = Results()
    exc = errors.GiveUp("nothing to do", alarming=alarming)
    entry = results.record_exception(exc)
    assert entry == Entry(Operation.GIVE_UP, error=exc)
    assert (results.gave_up, results.give_up_alarming, results.has_error) == ("nothing to do", alarming, alarming)


def test_a_raised_temporary_error_is_a_hook_error_with_its_delay() -> None:
    results = Results()
    exc = errors.TemporaryError("not ready", delay=8)
    assert results.record_exception(exc) == Entry(Operation.HOOK_ERROR, error=exc, delay=8)
    assert results.outcome() == Outcome.retry(exc, delay=8)


@pytest.mark.parametrize("exc", [ValueError("bad"), errors.ApiError(500, "X", "y")])
def test_any_other_raised_exception_is_a_hook_error(exc: Exception) -> None:
    results = Results()
    assert results.record_exception(exc) == Entry(Operation.HOOK_ERROR, error=exc)
    assert results.outcome() == Outcome.retry(exc)


@pytest.mark.parametrize(
    "exc", [errors.PermanentError("never"), errors.InvalidSpec("spec.size: must be positive", field="spec.size")]
)
def test_a_permanent_error_is_reported_then_given_up_until_the_object_changes(exc: Exception) -> None:
    results = Results()
    assert results.record_exception(exc) == Entry(Operation.HOOK_ERROR, error=exc)
    assert results.has_error
    outcome = results.outcome()
    assert outcome.kind is OutcomeKind.GIVE_UP
    assert outcome.reason == f"{errors.reason_for(exc)}: {exc}"


@pytest.mark.parametrize(
    ("status_writes", "kind"),
    [
        pytest.param([Operation.STATUS_UPDATE_ERROR], OutcomeKind.RETRY, id="report-refused"),
        pytest.param([Operation.STATUS_UPDATED, Operation.STATUS_UPDATE_ERROR], OutcomeKind.RETRY, id="last-refused"),
        pytest.param([Operation.STATUS_UPDATE_ERROR, Operation.STATUS_UPDATED], OutcomeKind.GIVE_UP, id="then-landed"),
        pytest.param([Operation.STATUS_UPDATE_ERROR, Operation.STATUS_UNCHANGED], OutcomeKind.GIVE_UP, id="then-held"),
    ],
)
def test_a_permanent_error_gives_up_once_the_last_status_write_landed(
    status_writes: list[Operation], kind: OutcomeKind
) -> None:
    results = Results()
    exc = errors.PermanentError("the status is too large")
    for operation in status_writes:
        results.add(operation, "web", exc if operation is Operation.STATUS_UPDATE_ERROR else None)
    assert results.outcome().kind is kind


def test_a_permanent_error_whose_fix_wakes_nothing_is_retried() -> None:
    class Stuck(errors.PermanentError):
        waits_for_change = False

    results = Results()
    exc = Stuck("fix the annotation")
    results.record_exception(exc)
    assert results.outcome() == Outcome.retry(exc)


# --- views ---------------------------------------------------------------------------------------------------------


def test_counts_group_entries_by_operation() -> None:
    results = Results()
    for name in ("a", "b", "c"):
        results.add(Operation.CREATED, name)
    results.add(Operation.UNCHANGED, "d")
    results.give_up("enough")
    assert results.counts() == {Operation.CREATED: 3, Operation.UNCHANGED: 1, Operation.GIVE_UP: 1}
    assert [results.count(op) for op in (Operation.CREATED, Operation.UNCHANGED, Operation.GIVE_UP)] == [3, 1, 1]
    assert results.count(Operation.DELETED) == 0
    results.counts()[Operation.DELETED] += 1  # a copy: the results stay as recorded
    assert results.count(Operation.DELETED) == 0


@pytest.mark.parametrize("operation", list(Operation), ids=str)
def test_changed_anything_only_for_writes(operation: Operation) -> None:
    results = Results()
    if operation is Operation.GIVE_UP:
        results.give_up("x")
    else:
        error = _boom() if operation.is_error else None
        results.add(operation, "a", error=error, delay=1 if operation is Operation.REQUEUE else None)
    writes = {
        Operation.CREATED,
        Operation.UPDATED,
        Operation.DELETED,
        Operation.PRUNED,
        Operation.STATUS_UPDATED,
    }
    assert results.changed_anything is (operation in writes)


def test_summary_always_counts_the_children_and_adds_what_else_happened() -> None:
    results = Results()
    for name in ("a", "b", "c"):
        results.add(Operation.CREATED, name)
    results.add(Operation.HOOK_ERROR, error=_boom())
    results.add(Operation.STATUS_UPDATED)
    assert results.summary() == "created=3 updated=0 unchanged=0 deleted=0 pruned=0 status_updated=1 hook_error=1"


def test_entries_are_a_snapshot() -> None:
    results = Results()
    before = results.entries
    results.add(Operation.CREATED, "a")
    assert before == ()
    assert len(results.entries) == 1


# --- Outcome -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (Outcome.done(), "done"),
        (Outcome.requeue_after(5), "requeue_after(5.0)"),
        (Outcome.retry(ValueError("x")), "retry(ValueError)"),
        (Outcome.retry(errors.TemporaryError("x"), delay=2), "retry(TemporaryError, 2.0)"),
        (Outcome.give_up("custom resource deleted"), "give_up(custom resource deleted)"),
    ],
)
def test_outcomes_read_as_their_constructor(outcome: Outcome, text: str) -> None:
    assert str(outcome) == text


def test_outcome_constructors_fill_only_their_own_fields() -> None:
    error = _boom()
    assert (Outcome.done().kind, Outcome.done().delay, Outcome.done().error, Outcome.done().reason) == (
        OutcomeKind.DONE,
        None,
        None,
        None,
    )
    requeue = Outcome.requeue_after(5)
    assert (requeue.kind, requeue.delay, requeue.error, requeue.reason) == (OutcomeKind.REQUEUE_AFTER, 5.0, None, None)
    retry = Outcome.retry(error, delay=1)
    assert (retry.kind, retry.delay, retry.error, retry.reason) == (OutcomeKind.RETRY, 1.0, error, None)
    give_up = Outcome.give_up("why")
    assert (give_up.kind, give_up.delay, give_up.error, give_up.reason) == (OutcomeKind.GIVE_UP, None, None, "why")


@pytest.mark.parametrize(
    ("outcome", "requeue"),
    [
        (Outcome.done(), False),
        (Outcome.requeue_after(1), True),
        (Outcome.retry(ValueError()), True),
        (Outcome.give_up("x"), False),
    ],
    ids=str,
)
def test_only_requeue_after_and_retry_requeue(outcome: Outcome, requeue: bool) -> None:
    assert outcome.requeue is requeue


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": OutcomeKind.DONE, "delay": 1.0},
        {"kind": OutcomeKind.DONE, "reason": "x"},
        {"kind": OutcomeKind.REQUEUE_AFTER},
        {"kind": OutcomeKind.REQUEUE_AFTER, "delay": 0.0},
        {"kind": OutcomeKind.REQUEUE_AFTER, "delay": MAX_DELAY + 1.0},
        {"kind": OutcomeKind.REQUEUE_AFTER, "delay": 1.0, "error": ValueError()},
        {"kind": OutcomeKind.RETRY},
        {"kind": OutcomeKind.RETRY, "error": ValueError(), "reason": "x"},
        {"kind": OutcomeKind.GIVE_UP},
        {"kind": OutcomeKind.GIVE_UP, "reason": "x", "delay": 1.0},
        {"kind": OutcomeKind.GIVE_UP, "reason": "x", "error": ValueError()},
    ],
)
def test_an_outcome_cannot_contradict_itself(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Outcome(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [0, -1, float("inf")])
def test_requeue_after_needs_a_positive_finite_delay(seconds: float) -> None:
    with pytest.raises(ValueError):
        Outcome.requeue_after(seconds)


@pytest.mark.parametrize(
    ("seconds", "error"),
    [
        (0, ValueError),
        (-1, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        (None, TypeError),
        ("30", TypeError),
        (True, TypeError),
        (False, TypeError),
    ],
)
def test_a_wrong_requeue_delay_is_refused_with_one_message_saying_what_is_needed(
    seconds: object, error: type[Exception]
) -> None:
    with pytest.raises(error) as refused:
        Outcome.requeue_after(seconds)  # type: ignore[arg-type]
    assert str(refused.value) == f"requeue_after needs a finite number of seconds > 0, got {seconds!r}"


@pytest.mark.parametrize("delay", [-1.0, float("nan"), True])
def test_a_retry_refuses_a_delay_that_is_not_a_duration(delay: float) -> None:
    with pytest.raises(ValueError, match="delay must be a finite number of seconds"):
        Outcome.retry(_boom(), delay=delay)


def test_requeue_after_caps_its_delay() -> None:
    assert Outcome.requeue_after(MAX_DELAY * 3).delay == MAX_DELAY


@pytest.mark.parametrize(
    "seconds",
    [10**20, 10**400, 2**5000, fractions.Fraction(10**400), 1e308],
    ids=["10**20", "10**400", "2**5000", "fraction-10**400", "1e308"],
)
def test_a_delay_past_a_float_s_range_is_a_long_delay_capped_as_any_other(seconds: float) -> None:
    """``okt.requeue_after(2 ** ctx.attempt)`` after a thousand attempts is an int no float holds: finite, so capped
    as ``10 ** 20`` is — never an OverflowError out of the check, reported as the hook's error."""
    assert Outcome.requeue_after(seconds).delay == MAX_DELAY
    assert Outcome.retry(_boom(), delay=seconds).delay == MAX_DELAY
    results = Results()
    results.add(Operation.REQUEUE, delay=seconds)
    assert results.outcome() == Outcome.requeue_after(MAX_DELAY)


@pytest.mark.parametrize(
    ("seconds", "error", "said"),
    [
        (-(10**400), ValueError, "a negative int of about 401 digits"),
        (-(10**5000), ValueError, "a negative int of about 5001 digits"),  # past what Python prints of an int
        (datetime.timedelta(seconds=30), TypeError, "datetime.timedelta(seconds=30) (pass its .total_seconds())"),
    ],
    ids=["-10**400", "-10**5000", "timedelta"],
)
def test_a_wrong_requeue_delay_python_cannot_print_or_that_is_a_timedelta_is_named_readably(
    seconds: object, error: type[Exception], said: str
) -> None:
    with pytest.raises(error) as refused:
        Outcome.requeue_after(seconds)  # type: ignore[arg-type]
    assert str(refused.value) == f"requeue_after needs a finite number of seconds > 0, got {said}"


def test_an_outcome_is_immutable() -> None:
    outcome = Outcome.requeue_after(5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.delay = 1.0  # type: ignore[misc]


# -- what a hook returns -----------------------------------------------------------------------------------------


def test_a_hook_returning_none_carries_on() -> None:
    results = Results()
    results.follow(None, "enter_in_state")
    assert results.entries == ()
    assert results.outcome() == Outcome.done()


def test_a_hook_returning_requeue_after_asks_for_it() -> None:
    results = Results()
    results.follow(Outcome.requeue_after(60), "enter_in_state")
    assert results.outcome() == Outcome.requeue_after(60)


def test_a_hook_returning_give_up_gives_up_quietly() -> None:
    results = Results()
    results.follow(Outcome.give_up("waiting for the database"), "check")
    assert results.outcome() == Outcome.give_up("waiting for the database")
    assert not results.has_error


def test_a_hook_returning_anything_else_is_a_bug_reported_as_its_error() -> None:
    results = Results()
    results.follow(42, "enter_in_state")
    error = results.first_error
    assert isinstance(error, TypeError)
    assert str(error) == (
        "enter_in_state returned 42: a hook returns None (carry on), okt.requeue_after(seconds) or okt.give_up(reason)"
    )
    assert results.outcome().kind is OutcomeKind.RETRY
