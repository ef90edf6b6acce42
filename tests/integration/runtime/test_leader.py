"""Leader election against a real kube-apiserver: one leader per Lease, and a standby that takes over."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import leader
from okt.testing import wait_for

pytestmark = pytest.mark.integration

LEASE_DURATION = 3.0


class Candidate:
    """A LeaderElector plus the record of its callbacks."""

    def __init__(self, client: kube_client.Client, namespace: str, identity: str) -> None:
        self.transitions: list[str] = []
        self._lock = threading.Lock()
        self.elector = leader.LeaderElector(
            client,
            namespace,
            "runtime-test",
            identity,
            lease_duration=LEASE_DURATION,
            renew_deadline=2.0,
            retry_period=0.5,
            on_started_leading=lambda: self._note("started"),
            on_stopped_leading=lambda: self._note("stopped"),
        )

    def _note(self, what: str) -> None:
        with self._lock:
            self.transitions.append(what)


@pytest.fixture
def candidates(kube: kube_client.Client, namespace: str) -> Iterator[Callable[[str], Candidate]]:
    made: list[Candidate] = []

    def make(identity: str) -> Candidate:
        candidate = Candidate(kube, namespace, identity)
        made.append(candidate)
        candidate.elector.start()
        return candidate

    yield make
    for candidate in made:
        candidate.elector.stop(release=True)


@pytest.mark.parametrize("release", [True, False], ids=["released", "crashed"])
def test_only_one_candidate_leads_and_the_other_takes_over_within_the_lease_duration(
    kube: kube_client.Client, namespace: str, candidates: Callable[[str], Candidate], release: bool
) -> None:
    first = candidates("first")
    wait_for(lambda: first.elector.is_leader, timeout=10)
    second = candidates("second")
    wait_for(lambda: second.elector.holder == "first", timeout=10)
    time.sleep(LEASE_DURATION)  # longer than the lease: the leader's renewals must keep it
    assert first.elector.is_leader
    assert not second.elector.is_leader
    assert second.elector.healthy
    assert second.transitions == []

    stopped_at = time.monotonic()
    first.elector.stop(release=release)
    wait_for(lambda: second.elector.is_leader, timeout=LEASE_DURATION + 2)
    takeover = time.monotonic() - stopped_at
    assert takeover < (1.5 if release else LEASE_DURATION + 1.5)
    assert first.transitions == (["started", "stopped"] if release else ["started"])
    wait_for(lambda: second.transitions != [], timeout=2)  # the flag is set before the callback runs
    assert second.transitions == ["started"]
    lease = kube.get(kinds.LEASE, "runtime-test", namespace)
    assert lease["spec"]["holderIdentity"] == "second"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_leader_that_cannot_renew_steps_down_before_the_lease_expires(
    kube: kube_client.Client, namespace: str, candidates: Callable[[str], Candidate]
) -> None:
    first = candidates("first")
    wait_for(lambda: first.elector.is_leader, timeout=10)
    # Someone else takes the lease by force: the leader's next renewal finds it held and must step down.
    lease = kube.get(kinds.LEASE, "runtime-test", namespace)
    kube.patch(kinds.LEASE, "runtime-test", {"spec": {"holderIdentity": "usurper"}}, namespace)
    wait_for(lambda: not first.elector.is_leader, timeout=LEASE_DURATION)
    assert first.elector.lost
    # The flag drops first (writes stop at once), then the callback runs on the elector's thread.
    wait_for(lambda: len(first.transitions) == 2, timeout=2)
    assert first.transitions == ["started", "stopped"]
    assert lease["spec"]["holderIdentity"] == "first"


def test_a_leader_that_finds_the_lease_held_by_another_stops_writing_at_once(
    kube: kube_client.Client, namespace: str
) -> None:
    """The other holder may already be writing: the leader's writes stop when it sees it, not when its own renew
    deadline (long here) runs out."""
    stopped = threading.Event()
    elector = leader.LeaderElector(
        kube,
        namespace,
        "usurped",
        "first",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=0.5,
        on_stopped_leading=stopped.set,
    )
    elector.start()
    try:
        wait_for(elector.may_write, timeout=10)
        lease = kube.get(kinds.LEASE, "usurped", namespace)
        now = leader.micro_time()
        lease["spec"].update(holderIdentity="usurper", acquireTime=now, renewTime=now)
        kube.replace(kinds.LEASE, lease)
        wait_for(lambda: elector.holder == "usurper", timeout=10)
        wait_for(lambda: not elector.may_write(), timeout=5, message="the leader stops writing")
        assert not elector.is_leader
        assert elector.lost
        assert stopped.wait(5)
        assert kube.get(kinds.LEASE, "usurped", namespace)["spec"]["holderIdentity"] == "usurper"
    finally:
        elector.stop(release=True)
