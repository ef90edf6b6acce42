"""Leader election's pure rules: timestamps in the API's MicroTime format, the safety ordering of durations, and when
a candidate tries again."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest
import structlog

from okt.runtime import leader, metrics
from okt.testing import waiting
from tests.unit.kube import loopback
from tests.unit.kube import test_client_answers as answers


def test_micro_time_is_rfc3339_utc_with_microseconds() -> None:
    moment = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert leader.micro_time(moment) == "2024-05-06T05:08:09.123456Z"


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10, 10, 2), (15, 16, 2), (15, 10, 10), (15, 10, 0), (15, 10, -1)],
)
def test_durations_must_leave_the_leader_time_to_step_down_before_expiry(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    client: Any = object()
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        leader.LeaderElector(client, "default", "lease", "me", lease_duration, renew_deadline, retry_period)


def test_an_empty_identity_is_refused() -> None:
    client: Any = object()
    with pytest.raises(ValueError, match="identity"):
        leader.LeaderElector(client, "default", "lease", "")


def test_a_new_elector_neither_leads_nor_has_reached_the_api() -> None:
    client: Any = object()
    elector = leader.LeaderElector(client, "default", "lease", "me")
    assert not elector.is_leader
    assert not elector.healthy
    assert not elector.lost
    assert elector.holder == ""
    assert elector.write_time_left() == 0.0
    assert elector.others_wait() == 0.0  # it never held the lease: nobody waits for it
    assert elector.release() is False


@pytest.mark.parametrize(
    ("until_expiry", "expected"),
    [
        (0.5, 0.5 + leader.EXPIRY_MARGIN),  # the holder's lease runs out before the next try: just after it does
        (0.0, leader.EXPIRY_MARGIN),
        (3.0, 2.2),  # it runs out later: the usual retry
        (None, 2.2),  # nobody else holds it (free, ours, or not seen yet)
        (-1.0, 2.2),  # it had run out and another candidate won the race since: the usual retry
    ],
)
def test_a_candidate_tries_again_when_the_holders_lease_runs_out_or_after_the_retry_period(
    until_expiry: float | None, expected: float
) -> None:
    assert leader.candidate_wait(2.2, until_expiry) == pytest.approx(expected)


NOT_FOUND = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"leases.coordination.k8s.io \\"lease\\" not '
    b'found","reason":"NotFound","code":404}'
)


def test_an_answer_of_an_unexpected_shape_is_a_failed_attempt_and_the_elector_goes_on(tmp_path: Any) -> None:
    """A lease answer that is JSON but not an object (a proxy's, a broken server's) fails that attempt as an
    unreadable one does; it ended the elector's thread, which then never led, nor said it would not."""
    lease = b'{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lease","resourceVersion":"1"}}'
    server = answers.ScriptedServer(
        [
            answers.answer("200 OK", b"[]", "Content-Type: application/json"),
            answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json"),
            answers.answer("201 Created", lease, "Content-Type: application/json"),
            # Its renewals, until it is stopped: read, then written.
            *[answers.answer("200 OK", lease, "Content-Type: application/json")] * 400,
        ]
    )
    client = loopback.client_for(server.port)
    elector = leader.LeaderElector(client, "default", "lease", "me", 3.0, 2.0, 0.1)
    try:
        elector.start()
        waiting.wait_for(lambda: elector.is_leader, timeout=10, message="the elector to lead after a bad answer")
    finally:
        elector.stop(release=False)
        client.close()
        server.close()


FORBIDDEN = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"leases.coordination.k8s.io \\"lease\\" is '
    b'forbidden","reason":"Forbidden","code":403}'
)


def test_a_lease_request_failing_again_the_same_way_is_said_once_then_its_end_with_the_count() -> None:
    """A candidate asks every retry period (2 s): a standby whose requests fail, for as long as an outage or a
    missing permission lasts, wrote the same warning every 2 s."""
    lease = b'{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lease","resourceVersion":"1"}}'
    server = answers.ScriptedServer(
        [
            *[answers.answer("403 Forbidden", FORBIDDEN, "Content-Type: application/json")] * 12,
            answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json"),
            answers.answer("201 Created", lease, "Content-Type: application/json"),
            *[answers.answer("200 OK", lease, "Content-Type: application/json")] * 400,
        ]
    )
    client = loopback.client_for(server.port)
    elector = leader.LeaderElector(client, "default", "lease", "me", 3.0, 2.0, 0.05)
    with structlog.testing.capture_logs() as logged:
        try:
            elector.start()
            waiting.wait_for(lambda: elector.is_leader, timeout=20, message="the elector to lead once answered")
        finally:
            elector.stop(release=False)
            client.close()
            server.close()
    failed = [entry for entry in logged if entry["event"] == "lease request failed"]
    assert [entry["log_level"] for entry in failed] == ["warning"] + ["debug"] * 11
    assert [entry["failures"] for entry in failed] == list(range(1, 13))
    [answered] = [entry for entry in logged if entry["event"] == "lease requests answered again"]
    assert answered["log_level"] == "info"
    assert answered["failures"] == 12


CREATED = (
    b'{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lease","resourceVersion":"1"},'
    b'"spec":{"holderIdentity":"me"}}'
)


def test_a_leader_past_its_renew_deadline_is_said_not_to_lead_as_its_writes_are_refused() -> None:
    """The elector's thread notices a renew deadline passed only when it next looks — here it is held in
    ``on_started_leading``: ``is_leader`` and the ``leader_election_master_status`` gauge said 1 while
    ``may_write()`` refused the writes. All three read one judgment of the elector's clock."""
    server = answers.ScriptedServer(
        [
            answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json"),
            answers.answer("201 Created", CREATED, "Content-Type: application/json"),
        ]
    )
    client = loopback.client_for(server.port)
    now = [1000.0]
    started, resume = threading.Event(), threading.Event()

    def held() -> None:
        started.set()
        resume.wait()

    elector = leader.LeaderElector(
        client, "default", "lease", "me", 15.0, 10.0, 2.0, on_started_leading=held, clock=lambda: now[0]
    )
    exported = metrics.Metrics()
    exported.track_leader("lease", lambda: elector.is_leader)

    def said() -> tuple[bool, bool, float | None, bool]:
        gauge = exported.registry.get_sample_value("leader_election_master_status", {"name": "lease"})
        return elector.is_leader, elector.may_write(), gauge, elector.write_time_left() > 0

    try:
        elector.start()
        assert started.wait(10), "the elector leads"
        now[0] = 1010.0 - 2**-10  # its renewal was sent at 1000.0: just before its renew deadline
        assert said() == (True, True, 1.0, True)
        now[0] = 1010.0  # at it
        assert said() == (False, False, 0.0, False)
        now[0] = 1010.03
        assert said() == (False, False, 0.0, False)
    finally:
        resume.set()
        elector.stop(release=False)
        client.close()
        server.close()


CONFLICT = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"leases.coordination.k8s.io \\"lease\\" already '
    b'exists","reason":"AlreadyExists","code":409}'
)


def test_a_leader_whose_renewal_was_refused_as_a_conflict_is_said_not_to_lead_as_its_writes_are_refused() -> None:
    """A renewal refused as a conflict stops the writes until the lease is read again: ``is_leader`` and the
    ``leader_election_master_status`` gauge said 1 meanwhile, ``may_write()`` refused every write. The lease here is
    deleted by hand under its leader, and created by someone else before its renewal creates it again."""
    reread, answer_reread = threading.Event(), threading.Event()

    def held_reading() -> bytes:
        reread.set()
        answer_reread.wait(10)
        return answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json")

    server = answers.ScriptedServer(
        [
            answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json"),
            answers.answer("201 Created", CREATED, "Content-Type: application/json"),
            # The renewal: the lease is gone, and creating it again is refused as a conflict.
            answers.answer("404 Not Found", NOT_FOUND, "Content-Type: application/json"),
            answers.answer("409 Conflict", CONFLICT, "Content-Type: application/json"),
            # Read again at once: held until the test has looked; then the renewal succeeds.
            held_reading,
            answers.answer("201 Created", CREATED, "Content-Type: application/json"),
            *[answers.answer("200 OK", CREATED, "Content-Type: application/json")] * 400,
        ]
    )
    client = loopback.client_for(server.port)
    now = [1000.0]  # the renew deadline never passes: only the conflict stops the writes
    elector = leader.LeaderElector(client, "default", "lease", "me", 15.0, 10.0, 0.05, clock=lambda: now[0])
    exported = metrics.Metrics()
    exported.track_leader("lease", lambda: elector.is_leader)

    def said() -> tuple[bool, bool, float | None, bool]:
        gauge = exported.registry.get_sample_value("leader_election_master_status", {"name": "lease"})
        return elector.is_leader, elector.may_write(), gauge, elector.write_time_left() > 0

    try:
        elector.start()
        assert reread.wait(10), "the leader reads the lease again after the conflict"
        assert said() == (False, False, 0.0, False)
        assert not elector.lost
        answer_reread.set()
        waiting.wait_for(lambda: said() == (True, True, 1.0, True), timeout=10, message=lambda: str(said()))
    finally:
        answer_reread.set()
        elector.stop(release=False)
        client.close()
        server.close()
