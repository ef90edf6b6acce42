"""okt.testing.AuditLog: requests per user from the kube-apiserver's audit log, read incrementally, counted once."""

from __future__ import annotations

import json
import pathlib
import threading
import time
from typing import Any

import pytest

from okt.testing import audit


def event(
    audit_id: str, stage: str, user: str, verb: str, code: int | None, at: str, sub: str = "", received: str = ""
) -> bytes:
    """One audit event as the API server writes it (one JSON line)."""
    body: dict[str, Any] = {
        "auditID": audit_id,
        "stage": stage,
        "verb": verb,
        "user": {"username": user, "groups": ["system:masters"]},
        "objectRef": {
            "resource": "memcacheds",
            "namespace": "ns",
            "name": audit_id,
            **({"subresource": sub} if sub else {}),
        },
        "requestReceivedTimestamp": received or at,
        "stageTimestamp": at,
    }
    if code is not None:
        body["responseStatus"] = {"code": code}
    return (json.dumps(body, separators=(",", ":")) + "\n").encode()


def at(second: float) -> str:
    return f"2026-01-01T00:00:{second:09.6f}Z"


def test_each_request_is_counted_once_for_its_own_user(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(
        event("a", "RequestReceived", "okt", "patch", None, at(1), "status")
        + event("a", "ResponseComplete", "okt", "patch", 200, at(1), "status")
        + event("b", "RequestReceived", "okt", "get", None, at(2))
        + event("b", "ResponseComplete", "okt", "get", 404, at(2))
        + event("c", "ResponseComplete", "kopf", "create", 201, at(3))
        + event("d", "ResponseComplete", "someone-else", "create", 201, at(4))
    )
    reader = audit.AuditLog(log, ["okt", "kopf"])
    reader.refresh()

    counts = reader.counts("okt")
    assert counts.by_verb == {"get": 1, "patch": 1}
    assert (counts.writes, counts.reads, counts.failed) == (1, 1, 1)
    assert counts.writes_by_resource == {"patch memcacheds/status": 1}
    assert reader.counts("kopf").writes == 1
    assert [r.user for r in reader.requests()] == ["okt", "okt", "kopf"]  # someone-else's is not kept


def test_the_stages_of_a_request_merge_into_its_times_and_last_code(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(
        event("1", "RequestReceived", "a", "create", None, at(0), received=at(0))
        + event("1", "ResponseComplete", "a", "create", 201, at(1), received=at(0))
        + event("2", "ResponseComplete", "b", "patch", 409, at(2))
    )
    reader = audit.AuditLog(log, ["a", "b"])
    reader.refresh()

    first, second = reader.requests()
    assert (first.user, first.verb, first.code, first.is_write, first.succeeded) == ("a", "create", 201, True, True)
    assert first.completed - first.received == pytest.approx(1.0)
    assert (second.code, second.succeeded) == (409, False)


def test_settling_waits_until_the_log_was_written_past_the_moment_asked(tmp_path: pathlib.Path) -> None:
    """A lagging audit log is waited for: settle returns once an event (anyone's) staged after ``until`` is in the
    file, and gives up after its timeout when none comes."""
    log = tmp_path / "audit.log"
    log.write_bytes(event("a", "ResponseComplete", "someone-else", "get", 200, at(1)))
    reader = audit.AuditLog(log, ["okt"])
    until = audit.parse_time("2026-01-01T00:00:05Z")
    assert until is not None
    started = time.monotonic()
    reader.settle(until, timeout=0.5)
    assert time.monotonic() - started >= 0.5  # nothing after ``until`` yet: waited the whole timeout
    assert reader.written_up_to == audit.parse_time("2026-01-01T00:00:01Z")

    late = event("b", "ResponseComplete", "okt", "create", 201, at(4))
    later = event("c", "ResponseComplete", "someone-else", "get", 200, at(6))
    threading.Timer(0.3, lambda: log.write_bytes(log.read_bytes() + late + later)).start()
    reader.settle(until, timeout=30)
    assert reader.written_up_to == audit.parse_time("2026-01-01T00:00:06Z")
    assert reader.counts("okt").writes == 1


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(0.0, float("inf"), 2), (audit.parse_time("2026-01-01T00:00:02Z"), float("inf"), 1), (0.0, 1.0, 0)],
)
def test_counts_are_taken_in_a_time_window(tmp_path: pathlib.Path, start: float, end: float, expected: int) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(
        event("a", "ResponseComplete", "u", "create", 201, at(1))
        + event("b", "ResponseComplete", "u", "create", 201, at(3))
    )
    reader = audit.AuditLog(log, ["u"])
    reader.refresh()
    assert reader.counts("u", start, end).writes == expected


def test_a_partial_last_line_waits_for_the_next_read(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "audit.log"
    line = event("a", "ResponseComplete", "u", "create", 201, at(1))
    log.write_bytes(line[:40])
    reader = audit.AuditLog(log, ["u"])
    reader.refresh()
    assert reader.requests("u") == []
    log.write_bytes(line)
    reader.refresh()
    assert len(reader.requests("u")) == 1


def test_a_reader_from_the_end_sees_only_what_comes_after_and_skips_a_cut_first_line(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(event("old", "ResponseComplete", "u", "create", 201, at(1)))
    reader = audit.AuditLog.from_end(log, ["u"])
    cut = audit.AuditLog(log, ["u"], offset=10)
    log.write_bytes(log.read_bytes() + event("new", "ResponseComplete", "u", "patch", 200, at(2)))

    reader.refresh()
    cut.refresh()

    assert [r.name for r in reader.requests()] == ["new"]
    assert [r.name for r in cut.requests()] == ["new"]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2026-01-01T00:00:00Z", 1767225600.0),
        ("2026-01-01T00:00:00.5Z", 1767225600.5),
        ("2026-01-01T00:00:00.123456789Z", 1767225600.123456),
        ("2026-01-01T02:00:00.5+02:00", 1767225600.5),
        ("2025-12-31T23:00:00.123456789-01:00", 1767225600.123456),
        ("not a time", None),
        (None, None),
    ],
)
def test_timestamps_are_read_to_the_microsecond(value: Any, seconds: float | None) -> None:
    parsed = audit.parse_time(value)
    assert parsed == pytest.approx(seconds) if seconds is not None else parsed is None


def test_an_access_review_is_counted_as_a_question_not_a_write() -> None:
    def request(verb: str, resource: str) -> audit.Request:
        return audit.Request("op", verb, resource, "", "", 201, 0.0, 0.0)

    counts = audit.Counts.of(
        [request("create", "selfsubjectaccessreviews"), request("create", "memcacheds"), request("get", "pods")]
    )
    assert (counts.writes, counts.reads) == (1, 2)
    assert counts.writes_by_resource == {"create memcacheds": 1}
    assert counts.by_verb == {"create": 1, "get": 1, "review": 1}


def test_a_dry_run_is_counted_as_a_question_not_a_write(tmp_path: pathlib.Path) -> None:
    """A write sent with ``dryRun=All`` is validated and stored nowhere: the log tells it only by its URI."""
    log = tmp_path / "audit.log"
    dry = json.loads(event("a", "ResponseComplete", "okt", "create", 201, at(1)))
    dry["requestURI"] = "/apis/cache.example.com/v1/namespaces/ns/memcacheds?dryRun=All&fieldManager=okt"
    real = json.loads(event("b", "ResponseComplete", "okt", "patch", 200, at(2)))
    real["requestURI"] = "/apis/cache.example.com/v1/namespaces/ns/memcacheds/b?fieldManager=okt"
    log.write_text(json.dumps(dry) + "\n" + json.dumps(real) + "\n")
    reader = audit.AuditLog(log, ["okt"])
    reader.refresh()

    counts = reader.counts("okt")
    assert counts.writes == 1
    assert counts.writes_by_resource == {"patch memcacheds": 1}
    assert counts.by_verb == {"dry-run": 1, "patch": 1}
    assert [r.is_write for r in reader.requests("okt")] == [False, True]


def test_settling_a_log_the_api_server_never_wrote_is_an_error_not_zero_requests(tmp_path: pathlib.Path) -> None:
    """No file at the path (a control plane started without ``audit_log=True``): counting would find no request."""
    reader = audit.AuditLog(tmp_path / "audit.log", ["okt"])

    with pytest.raises(RuntimeError, match="audit_log=True"):
        reader.settle(time.time() - 10, timeout=0.2)


def test_asking_for_a_user_the_reader_does_not_keep_is_an_error_not_zero_requests(tmp_path: pathlib.Path) -> None:
    """Only the users named up front are kept: another name (a typo, the ServiceAccount's short name) never has
    requests here, whatever it sent."""
    log = tmp_path / "audit.log"
    log.write_bytes(event("a", "ResponseComplete", "system:serviceaccount:ns:op", "create", 201, at(1)))
    reader = audit.AuditLog(log, ["system:serviceaccount:ns:op"])
    reader.refresh()

    assert reader.counts("system:serviceaccount:ns:op").writes == 1
    for ask in (reader.counts, reader.requests, reader.last_request_at):
        with pytest.raises(ValueError, match="op"):
            ask("op")
