"""Leader election against a real kube-apiserver: one leader per Lease, and a standby that takes over."""

from __future__ import annotations

import http.server
import pathlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import leader
from okt.testing import envtest, faults, wait_for
from tests.integration.runtime import conftest as shared

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
    # A release says 1 s: the second takes it a second after its next try sees it.
    assert takeover < (2.5 if release else LEASE_DURATION + 1.5)
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


class HeldAnswerProxy(faults.FaultProxy):
    """Forwards every request; while :attr:`hold` is set, the next lease update is applied by the API server but its
    answer reaches the client only ``HELD`` seconds later, a header line at a time (each read of the client's gets
    something within its timeout) — as when the process is paused (SIGSTOP) between the write and its answer."""

    HELD = 6.0

    def __init__(self, upstream: str, ca_file: str) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.hold = threading.Event()
        self.answered = threading.Event()

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                if not (self.command == "PUT" and "/leases/" in self.path and proxy.hold.is_set()):
                    super()._relay()
                    return
                proxy.hold.clear()
                length = int(self.headers.get("Content-Length") or 0)
                upstream = proxy._connect()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in faults._HOP_HEADERS}
                upstream.request(self.command, self.path, body=self.rfile.read(length), headers=headers)
                response = upstream.getresponse()
                payload = response.read()
                upstream.close()
                self.wfile.write(f"HTTP/1.1 {response.status} {response.reason}\r\n".encode())
                held_until = time.monotonic() + proxy.HELD
                while time.monotonic() < held_until:
                    self.wfile.write(b"X-Held: yes\r\n")
                    self.wfile.flush()
                    time.sleep(0.25)
                self.wfile.write(f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode())
                self.wfile.write(payload)
                self.wfile.flush()
                proxy.answered.set()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler


class Overlaps:
    """The moments two electors could write at once (``both()`` true), looked at every 10 ms from :meth:`start` to
    :meth:`stop`."""

    def __init__(self, both: Callable[[], bool]) -> None:
        self.seen: list[float] = []
        self._both = both
        self._watching = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._watching.set()
        self._thread.start()

    def stop(self) -> None:
        self._watching.clear()

    def span(self) -> float:
        """Seconds from the first moment seen to the last."""
        return self.seen[-1] - self.seen[0]

    def _watch(self) -> None:
        while self._watching.is_set():
            if self._both():
                self.seen.append(time.monotonic())
            time.sleep(0.01)


def test_a_leader_whose_renewal_is_answered_late_does_not_write_beside_the_next_leader(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A renewal counts from when it was sent, not from when its answer came: the others judge the lease from the
    moment they saw it renewed, which may be long before the answer reaches the leader."""
    timing = (3.0, 2.0, 0.5)  # lease duration, renew deadline, retry period
    proxy = HeldAnswerProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        first = leader.LeaderElector(through, namespace, "held", "first", *timing)
        second = leader.LeaderElector(kube, namespace, "held", "second", *timing)
        both = Overlaps(lambda: first.may_write() and second.is_leader)
        try:
            first.start()
            wait_for(first.may_write, timeout=10)
            second.start()
            wait_for(lambda: second.holder == "first", timeout=10)
            both.start()
            proxy.hold.set()
            wait_for(lambda: second.is_leader, timeout=2 * proxy.HELD, message="the second takes the expired lease")
            assert not proxy.answered.is_set(), "the second took the lease while the first's renewal was held"
            assert proxy.answered.wait(proxy.HELD + 5)
            wait_for(lambda: first.lost, timeout=5, message="the first finds the second holding the lease")
        finally:
            both.stop()
            first.stop(release=False)
            second.stop(release=True)
            through.close()
        assert not both.seen, f"the first could write for {both.span():.2f} s while the second led"


def test_a_leader_whose_renewals_hang_stops_leading_before_another_candidate_leads(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A renewal whose request hangs ends at the renew deadline, as client-go's, whose renewals run in a context that
    ends there: the leader stops leading then, before the lease can run out for the others. Waiting out each hung
    request's own timeout and the retry period, it led on past the lease's end, beside the candidate that took it."""
    proxy = shared.LeaseHangingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        # A hung request is given up after lease_duration - renew_deadline (1 s): its retry (0.9 s later) would end
        # past the lease (3 s) but for the renew deadline (2 s). The second looks often, so it sees each renewal.
        first = leader.LeaderElector(through, namespace, "hung", "first", 3.0, 2.0, 0.9)
        second = leader.LeaderElector(kube, namespace, "hung", "second", 3.0, 2.0, 0.1)
        both = Overlaps(lambda: first.is_leader and second.is_leader)
        try:
            first.start()
            wait_for(first.may_write, timeout=10)
            second.start()
            wait_for(lambda: second.holder == "first", timeout=10)
            both.start()
            proxy.hang.set()
            wait_for(lambda: second.is_leader, timeout=10, message="the second takes the lease the first cannot renew")
            wait_for(lambda: first.lost, timeout=5, message="the first stops leading")
        finally:
            both.stop()
            proxy.done.set()
            first.stop(release=False)
            second.stop(release=True)
            through.close()
        assert not both.seen, f"the first led for {both.span():.2f} s beside the second"


class GarblingProxy(faults.FaultProxy):
    """Forwards every request; while :attr:`garble` is set, reads of the lease are answered 200 with a body that is
    not JSON (as a misbehaving proxy or load balancer in front of the API server may answer)."""

    def __init__(self, upstream: str, ca_file: str) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.garble = threading.Event()

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                if not (self.command == "GET" and "/leases/" in self.path and proxy.garble.is_set()):
                    super()._relay()
                    return
                payload = b"<html><body>502 Bad Gateway</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler


def test_a_leader_whose_renewals_get_answers_that_are_not_json_loses_leadership_and_says_so(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """An answer that cannot be read is a failed renewal like any other: past the renew deadline the leader stops
    leading and tells its owner (which exits to be restarted), rather than staying a silent leader that writes
    nothing."""
    stopped = threading.Event()
    proxy = GarblingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        elector = leader.LeaderElector(
            through,
            namespace,
            "garbled",
            "first",
            lease_duration=LEASE_DURATION,
            renew_deadline=2.0,
            retry_period=0.5,
            on_stopped_leading=stopped.set,
        )
        try:
            elector.start()
            wait_for(elector.may_write, timeout=10)
            proxy.garble.set()
            assert stopped.wait(LEASE_DURATION + 5), "the leader tells it stopped leading"
            assert elector.lost
            assert not elector.is_leader
        finally:
            elector.stop(release=False)
            through.close()


def test_a_release_that_gets_an_answer_that_is_not_json_still_ends_leadership(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The release is best effort (the others wait for the lease to expire): an unreadable answer does not make
    :meth:`LeaderElector.stop` fail half-way through a shutdown."""
    stopped = threading.Event()
    proxy = GarblingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        elector = leader.LeaderElector(
            through, namespace, "garbled", "first", on_stopped_leading=stopped.set, retry_period=0.5
        )
        try:
            elector.start()
            wait_for(elector.may_write, timeout=10)
            proxy.garble.set()
            assert elector.release() is False
            assert stopped.is_set()
            assert not elector.may_write()
        finally:
            elector.stop(release=False)
            through.close()


def test_a_released_lease_is_not_taken_again_by_the_elector_that_released_it(
    kube: kube_client.Client, namespace: str, candidates: Callable[[str], Candidate]
) -> None:
    """:meth:`LeaderElector.release` hands the lease over: the elector's thread, still renewing, must not take the
    free lease back (the standby would then wait for a lease that never runs out)."""
    first = candidates("first")
    wait_for(lambda: first.elector.is_leader, timeout=10)
    assert first.elector.release()
    time.sleep(LEASE_DURATION)  # six retry periods
    lease = kube.get(kinds.LEASE, "runtime-test", namespace)
    assert lease["spec"]["holderIdentity"] == ""
    assert not first.elector.is_leader
    assert first.transitions == ["started", "stopped"]


def test_a_lease_deleted_by_hand_is_not_taken_by_a_standby_while_the_leader_may_still_write(
    kube: kube_client.Client, namespace: str
) -> None:
    """A standby that finds the lease gone counts it held, as it last saw it, until that record would have run out:
    the leader does not know yet (it looks at its next renewal, which recreates the lease) and may still be writing."""
    first = leader.LeaderElector(kube, namespace, "deleted", "first", 20.0, 15.0, 5.0)
    second = leader.LeaderElector(kube, namespace, "deleted", "second", 3.0, 2.0, 0.2)
    both = Overlaps(lambda: first.may_write() and second.is_leader)

    def holder() -> str | None:
        lease = kube.get_or_none(kinds.LEASE, "deleted", namespace)
        return None if lease is None else lease["spec"].get("holderIdentity")

    try:
        first.start()
        wait_for(first.may_write, timeout=10)
        second.start()
        wait_for(lambda: second.holder == "first", timeout=10)
        both.start()
        kube.delete(kinds.LEASE, "deleted", namespace)
        wait_for(lambda: second.is_leader or holder() == "first", timeout=10, message="the lease is taken again")
        time.sleep(1.0)  # five of the second's retry periods: it sees the recreated lease
        assert not both.seen, f"the first could write for {both.span():.2f} s while the second led"
        assert holder() == "first"
        assert first.may_write()
        assert not second.is_leader
    finally:
        both.stop()
        second.stop(release=True)
        first.stop(release=True)


def test_two_candidates_given_the_same_identity_never_lead_at_once(kube: kube_client.Client, namespace: str) -> None:
    """Identities are unique per process: a lease held under this identity by a record this elector did not write is
    another process's, waited out as any other holder's (taking it as one's own made two leaders)."""
    first = leader.LeaderElector(kube, namespace, "twins", "twin", LEASE_DURATION, 2.0, 0.5)
    second = leader.LeaderElector(kube, namespace, "twins", "twin", LEASE_DURATION, 2.0, 0.5)
    both = Overlaps(lambda: first.may_write() and second.may_write())
    try:
        first.start()
        wait_for(first.may_write, timeout=10)
        both.start()
        second.start()
        wait_for(lambda: second.holder == "twin", timeout=10)
        time.sleep(LEASE_DURATION)  # six retry periods of the second, and longer than the lease
        assert not both.seen, f"both could write for {both.span():.2f} s"
        assert first.may_write()
        assert not second.is_leader
    finally:
        both.stop()
        second.stop(release=False)
        first.stop(release=True)


def test_a_stopped_leader_does_not_release_the_lease_another_process_of_its_identity_took_since(
    kube: kube_client.Client, namespace: str
) -> None:
    """The first leader's thread is held (in its ``on_started_leading``, as a process paused) past its lease; another
    process given the same identity takes the lease meanwhile. Stopped then, the first still counts itself the leader
    it was: its release must leave the other's record alone (it emptied it: the holder's identity was its own)."""
    resume = threading.Event()
    first = leader.LeaderElector(
        kube, namespace, "twins", "twin", LEASE_DURATION, 2.0, 0.5, on_started_leading=resume.wait
    )
    second = leader.LeaderElector(kube, namespace, "twins", "twin", LEASE_DURATION, 2.0, 0.5)
    try:
        first.start()
        wait_for(lambda: first.holder == "twin", timeout=10)
        second.start()
        wait_for(second.may_write, timeout=LEASE_DURATION + 5, message="the second takes the expired lease")
        taken = kube.get(kinds.LEASE, "twins", namespace)["spec"]
        assert not first.may_write()
        first.stop(release=True, timeout=0.1)
        spec = kube.get(kinds.LEASE, "twins", namespace)["spec"]
        assert (spec["holderIdentity"], spec["acquireTime"]) == ("twin", taken["acquireTime"])
        assert second.may_write()
    finally:
        resume.set()
        second.stop(release=True)
        first.stop(release=False)


def test_a_leader_keeps_its_lease_while_its_client_waits_at_its_rate_limit(
    control_plane: envtest.ControlPlane, namespace: str
) -> None:
    """The workers' requests queue at the client's rate limit (``okt run --qps``); the lease's renewals, a few a
    retry period, must not wait behind them, or a leader under load loses its lease to a healthy API server."""
    limited = kube_client.Client.from_kubeconfig(control_plane.kubeconfig, rate_limit=kube_client.RateLimit(2.0, 1))
    stopped = threading.Event()
    elector = leader.LeaderElector(
        limited, namespace, "busy", "first", LEASE_DURATION, 2.0, 0.5, on_stopped_leading=stopped.set
    )
    busy = threading.Event()

    def work() -> None:
        while busy.is_set():
            limited.get_or_none(kinds.CONFIG_MAP, "anything", namespace)

    workers = [threading.Thread(target=work, daemon=True) for _ in range(8)]
    try:
        elector.start()
        wait_for(elector.may_write, timeout=10)
        busy.set()
        for worker in workers:
            worker.start()
        assert not stopped.wait(2 * LEASE_DURATION), "the leader lost its lease"
        assert elector.may_write()
    finally:
        busy.clear()
        elector.stop(release=True)
        for worker in workers:
            worker.join(10)
        limited.close()


@pytest.mark.parametrize(
    "edit",
    [{"holderIdentity": ""}, {"leaseDurationSeconds": 1, "renewTime": "now"}],
    ids=["holder-emptied", "duration-shortened"],
)
def test_a_lease_edited_by_hand_is_not_taken_by_a_standby_while_the_leader_may_still_write(
    kube: kube_client.Client, namespace: str, edit: dict[str, object]
) -> None:
    """The leader does not know of the edit until its next renewal, and may write until then: a standby that sees
    the lease emptied, or its duration shortened, waits as long as for the record it saw before."""
    first = leader.LeaderElector(kube, namespace, "edited", "first", 20.0, 15.0, 5.0)
    second = leader.LeaderElector(kube, namespace, "edited", "second", 3.0, 2.0, 0.2)
    both = Overlaps(lambda: first.may_write() and second.is_leader)

    def renew_time() -> str:
        return str(kube.get(kinds.LEASE, "edited", namespace)["spec"]["renewTime"])

    try:
        first.start()
        wait_for(first.may_write, timeout=10)
        second.start()
        wait_for(lambda: second.holder == "first", timeout=10)
        renewed = renew_time()
        wait_for(lambda: renew_time() != renewed, timeout=10, message="the leader renews")  # the next: 5 s away
        both.start()
        spec = {key: leader.micro_time() if value == "now" else value for key, value in edit.items()}
        edited = kube.patch(kinds.LEASE, "edited", {"spec": spec}, namespace)["spec"]["renewTime"]
        wait_for(
            lambda: first.lost or second.is_leader or renew_time() != edited,
            timeout=10,
            message="the leader looks at the lease again",
        )
        time.sleep(1.0)  # five of the second's retry periods: it sees the lease as it is now
        assert not both.seen, f"the first could write for {both.span():.2f} s while the second led"
        assert not second.is_leader
    finally:
        both.stop()
        second.stop(release=False)
        first.stop(release=False)


class UsurpingProxy(faults.FaultProxy):
    """Forwards every request; while :attr:`usurp` is set, the next lease update is preceded by ``admin`` writing the
    lease as held by ``usurper`` (so the update is answered 409), and the next lease request after that notes
    whether the elector of :attr:`watched` could still write as it was sent."""

    def __init__(self, upstream: str, ca_file: str, admin: kube_client.Client, namespace: str, name: str) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.usurp = threading.Event()
        self.conflicted = threading.Event()
        self.writable_at_next_request: list[bool] = []
        self.watched: leader.LeaderElector | None = None
        self._admin, self._namespace, self._name = admin, namespace, name

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                if "/leases/" in self.path and proxy.conflicted.is_set() and not proxy.writable_at_next_request:
                    assert proxy.watched is not None
                    proxy.writable_at_next_request.append(proxy.watched.may_write())
                elif self.command == "PUT" and "/leases/" in self.path and proxy.usurp.is_set():
                    proxy.usurp.clear()
                    lease = proxy._admin.get(kinds.LEASE, proxy._name, proxy._namespace)
                    now = leader.micro_time()
                    lease["spec"].update(holderIdentity="usurper", acquireTime=now, renewTime=now)
                    proxy._admin.replace(kinds.LEASE, lease)
                    super()._relay()
                    proxy.conflicted.set()
                    return
                super()._relay()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler


def test_a_leader_whose_renewal_is_refused_as_a_conflict_stops_writing_until_it_has_read_the_lease_again(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A 409 says someone else wrote the lease since the leader read it: it may hold it now, and be writing."""
    proxy = UsurpingProxy(control_plane.url, str(control_plane.ca_file), kube, namespace, "conflicted")
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        elector = leader.LeaderElector(through, namespace, "conflicted", "first", 20.0, 15.0, 2.0)
        proxy.watched = elector
        try:
            elector.start()
            wait_for(elector.may_write, timeout=10)
            proxy.usurp.set()
            assert proxy.conflicted.wait(10), "the leader's renewal meets the other write"
            wait_for(lambda: elector.lost, timeout=10, message="the leader finds the lease held by another")
            assert proxy.writable_at_next_request == [False]
            assert not elector.may_write()
        finally:
            elector.stop(release=False)
            through.close()


def _first_lease(method: str) -> Callable[[str, str], bool]:
    return lambda command, path: command == method and "/leases" in path


def _lease_writes_since(proxy: shared.HoldingProxy, at: float) -> list[str]:
    return [
        method
        for method, path, when in proxy.requests
        if "/leases" in path and method in ("POST", "PUT") and when >= at
    ]


def _elector_thread_ended(name: str) -> bool:
    return not any(thread.name == f"okt-leader-{name}" for thread in threading.enumerate())


def test_a_candidate_stopped_while_it_reads_the_lease_does_not_write_it_afterwards(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A stop that comes between the elector's read of the lease and its write ends the attempt: the Lease it read as
    missing is not created once the stop has returned, and nobody is told it leads. It was created after the stop,
    held under the stopped elector's identity, and released only if its thread ended within the stop's wait."""
    started = threading.Event()
    proxy = shared.HoldingProxy(control_plane.url, str(control_plane.ca_file), _first_lease("GET"))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        elector = leader.LeaderElector(through, namespace, "read-then-stopped", "first", on_started_leading=started.set)
        try:
            elector.start()
            assert proxy.held.wait(10), "the elector reads the lease"
            elector.stop(release=True, timeout=0.1)
            stopped_at = time.monotonic()
            proxy.release.set()
            assert proxy.answered.wait(10)
            wait_for(lambda: _elector_thread_ended("read-then-stopped"), timeout=10, message="the thread ends")
        finally:
            proxy.release.set()
            through.close()
        assert _lease_writes_since(proxy, stopped_at) == []
        holders = [lease["spec"].get("holderIdentity") for lease in kube.list(kinds.LEASE, namespace)[0]]
        assert "first" not in holders
        assert not started.is_set()
        assert not elector.is_leader


@pytest.mark.parametrize("release", [True, False], ids=["released", "left-to-expire"])
def test_a_lease_created_by_a_write_on_the_wire_when_the_stop_came_is_not_left_held(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    tmp_path: pathlib.Path,
    release: bool,
) -> None:
    """A create already sent when the stop came may be applied after the stop returned: the lease it took is released
    (``stop(release=True)``) once its answer comes, or left to run out; the elector does not lead on it either way."""
    started = threading.Event()
    proxy = shared.HoldingProxy(control_plane.url, str(control_plane.ca_file), _first_lease("POST"))
    with proxy:
        through = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied"))
        elector = leader.LeaderElector(through, namespace, "sent-then-stopped", "first", on_started_leading=started.set)
        try:
            elector.start()
            assert proxy.held.wait(10), "the elector creates the lease"
            elector.stop(release=release, timeout=0.1)
            proxy.release.set()
            assert proxy.answered.wait(10)
            wait_for(lambda: _elector_thread_ended("sent-then-stopped"), timeout=10, message="the thread ends")
        finally:
            proxy.release.set()
            through.close()
        spec = kube.get(kinds.LEASE, "sent-then-stopped", namespace)["spec"]
        if release:
            assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)
        else:
            assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("first", 15)
        assert not started.is_set()
        assert not elector.is_leader
