"""The memory of reports the API server refused for what the object is: not sent again while the object and the
report stay the same, bounded whatever the churn."""

from __future__ import annotations

import pytest

from okt import errors
from okt.reconciler import refused_reports

REFUSAL = errors.ApiError.from_status(422, "Invalid", "spec.size in body should be less than or equal to 10")
REPORT = refused_reports.digest("InvalidSpec", "spec.size: Input should be less than or equal to 10 (got 100)")


def test_the_same_report_of_the_unchanged_object_is_recalled_with_its_refusal() -> None:
    memory = refused_reports.RefusedReports()

    memory.remember("uid-1", "7", REPORT, REFUSAL)

    assert memory.recall("uid-1", "7", REPORT) is REFUSAL


@pytest.mark.parametrize(
    ("uid", "resource_version", "report"),
    [
        pytest.param("uid-1", "8", REPORT, id="the object changed"),
        pytest.param("uid-2", "7", REPORT, id="another object"),
        pytest.param("uid-1", "7", refused_reports.digest("InvalidSpec", "spec.size: another value"), id="another"),
        pytest.param("uid-1", "7", refused_reports.digest("GiveUp", "spec.size: Input should be"), id="another reason"),
    ],
)
def test_another_report_or_the_object_changed_is_sent(uid: str, resource_version: str, report: str) -> None:
    memory = refused_reports.RefusedReports()
    memory.remember("uid-1", "7", REPORT, REFUSAL)

    assert memory.recall(uid, resource_version, report) is None


def test_a_report_is_remembered_by_its_digest_not_its_message() -> None:
    message = "the spec holds hunter2"

    said = refused_reports.digest("InvalidSpec", message)

    assert message not in said and len(said) == 64


def test_each_object_keeps_its_last_refusal_only_however_often_it_is_refused() -> None:
    memory = refused_reports.RefusedReports()

    for version in range(100):
        memory.remember("uid-1", str(version), REPORT, REFUSAL)

    assert len(memory) == 1
    assert memory.recall("uid-1", "99", REPORT) is REFUSAL
    assert memory.recall("uid-1", "98", REPORT) is None


def test_the_oldest_refusal_is_forgotten_past_the_limit() -> None:
    memory = refused_reports.RefusedReports(limit=2)

    for uid in ("uid-1", "uid-2", "uid-3"):
        memory.remember(uid, "7", REPORT, REFUSAL)

    assert len(memory) == 2
    assert memory.recall("uid-1", "7", REPORT) is None
    assert memory.recall("uid-3", "7", REPORT) is REFUSAL


def test_a_forgotten_object_has_its_report_sent_again() -> None:
    memory = refused_reports.RefusedReports()
    memory.remember("uid-1", "7", REPORT, REFUSAL)

    memory.forget("uid-1")

    assert memory.recall("uid-1", "7", REPORT) is None
    assert len(memory) == 0


def test_an_object_without_a_uid_is_never_remembered() -> None:
    memory = refused_reports.RefusedReports()

    memory.remember("", "7", REPORT, REFUSAL)

    assert len(memory) == 0
    assert memory.recall("", "7", REPORT) is None


def test_a_message_of_undecodable_bytes_has_a_digest_of_its_own() -> None:
    """An exception of the operator's code may carry a file name of undecodable bytes (a lone surrogate)."""
    said = refused_reports.digest("ReconcileError", "cannot read config-\udcff.yaml")

    assert said != refused_reports.digest("ReconcileError", "cannot read config-\udcfe.yaml")
