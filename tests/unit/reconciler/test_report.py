"""What the conditions say after a success or an error: pure functions over a working copy, no cluster."""

from __future__ import annotations

import datetime

import okt
from okt.reconciler import report
from okt.status import conditions

T0 = datetime.datetime(2026, 11, 25, 8, 0, 0, tzinfo=datetime.UTC)


def fresh() -> conditions.Conditions:
    return conditions.Conditions(now=lambda: T0)


def test_a_success_sets_the_five_conditions_from_the_hooks_signals() -> None:
    c = fresh()
    report.success_conditions(
        c,
        3,
        ready=report.Signal(True, "Reconciled", "fine"),
        available=report.Signal(False, "ReplicasUnavailable", "waiting for replicas"),
        progressing=report.Signal(True, "RollingOut", "a rollout is under way"),
        degraded=report.Signal(False, "AsExpected", "no error"),
    )

    assert {t: (c[t].status.value, c[t].reason) for t in c} == {
        okt.READY: ("True", "Reconciled"),
        okt.RECONCILIATION_SUCCESS: ("True", "Reconciled"),
        okt.PROGRESSING: ("True", "RollingOut"),
        okt.DEGRADED: ("False", "AsExpected"),
        okt.AVAILABLE: ("False", "ReplicasUnavailable"),
    }
    assert {c[t].observed_generation for t in c} == {3}


def test_no_workload_to_wait_for_reads_as_available() -> None:
    c = fresh()
    signal = report.Signal(False, "Settled", "nothing to roll out")
    report.success_conditions(c, 1, ready=signal, available=None, progressing=signal, degraded=signal)

    assert c.is_true(okt.AVAILABLE)


def test_a_hook_may_answer_with_a_bool_or_a_triple() -> None:
    defaults = (("Up", "it is up"), ("Down", "it is down"))

    assert report.Signal.of(True, *defaults) == report.Signal(True, "Up", "it is up")
    assert report.Signal.of(False, *defaults) == report.Signal(False, "Down", "it is down")
    assert report.Signal.of((False, "Phase", "provisioning"), *defaults) == report.Signal(
        False, "Phase", "provisioning"
    )


def test_an_error_is_news_once_then_the_same_error_is_not() -> None:
    c = fresh()

    assert report.error_conditions(c, 2, "InvalidSpec", "spec.size: too big") is True
    assert report.error_conditions(c, 2, "InvalidSpec", "spec.size: too big") is False
    assert c.is_false(okt.READY)
    assert c.is_true(okt.DEGRADED)
    assert c.is_unknown(okt.AVAILABLE) and c.is_unknown(okt.PROGRESSING)
