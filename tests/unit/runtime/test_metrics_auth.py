"""Who may read ``/metrics``, without a cluster: the verdicts on a request's token, how long they are kept, and when
``/metrics`` is protected at all."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.kube import transport
from okt.runtime import certs, metrics_auth, probe_server
from okt.runtime import metrics as metrics_mod
from okt.testing import wait_for

SCRAPER = "system:serviceaccount:monitoring:prometheus"


class ReviewingApi:
    """What the reviewer asks of a client: it answers TokenReviews and SubjectAccessReviews from two tables, and counts
    them as the client does."""

    def __init__(self, users: dict[str, str], allowed: set[str]) -> None:
        self.users = users
        self.allowed = allowed
        self.stats = kube_client.RequestStats()
        self.failing: errors.ApiError | None = None
        self.asked: list[dict[str, Any]] = []
        self.held: threading.Event | None = None
        self.called: list[str] = []

    def request(self, method: str, path: str, *, verb: str, resource: str, body: Any, **_options: Any) -> Any:
        self.called.append(resource)
        if self.held is not None:  # an API server slow to answer: until the test lets it
            self.held.wait(10)
        if self.failing is not None:
            raise self.failing
        self.stats.record(verb, resource)
        self.asked.append(body)
        if resource == "tokenreviews":
            user = self.users.get(body["spec"]["token"])
            status: dict[str, Any] = {"authenticated": user is not None}
            if user is not None:
                status["user"] = {"username": user, "uid": "u-1", "groups": ["system:serviceaccounts"]}
        else:
            status = {"allowed": body["spec"]["user"] in self.allowed}
        return transport.Response(201, "Created", json.dumps({**body, "status": status}).encode(), path)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reviewer_of(api: ReviewingApi, clock: Clock | None = None) -> metrics_auth.Reviewer:
    client: Any = api
    return metrics_auth.Reviewer(client, clock=clock or Clock())


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "token-without-scheme"])
def test_a_request_without_a_bearer_token_is_401_and_asks_nothing(header: str | None) -> None:
    api = ReviewingApi({}, set())
    verdict = reviewer_of(api).review(header)
    assert (verdict.status, verdict.message) == (401, metrics_auth.MISSING.message)
    assert api.asked == []


def test_an_allowed_token_is_let_in_after_asking_who_it_is_and_whether_it_may_get_metrics() -> None:
    api = ReviewingApi({"t0ken": SCRAPER}, {SCRAPER})
    assert reviewer_of(api).review("Bearer t0ken").allowed
    token_review, access_review = api.asked
    assert token_review["spec"] == {"token": "t0ken"}
    assert access_review["spec"] == {
        "user": SCRAPER,
        "uid": "u-1",
        "groups": ["system:serviceaccounts"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


def test_a_token_not_authenticated_is_401_and_a_user_not_allowed_is_403_naming_the_user_never_the_token() -> None:
    api = ReviewingApi({"st4nger": "stranger"}, set())
    reviewer = reviewer_of(api)
    assert reviewer.review("Bearer n0body") == metrics_auth.UNAUTHENTICATED
    refused = reviewer.review("bearer st4nger")
    assert (refused.status, refused.message) == (403, "forbidden: stranger may not get /metrics")


@pytest.mark.parametrize(("allowed", "kept"), [(True, metrics_auth.ALLOWED_TTL), (False, metrics_auth.REFUSED_TTL)])
def test_a_verdict_is_kept_for_its_time_and_asked_again_after_it(allowed: bool, kept: float) -> None:
    api = ReviewingApi({"t0ken": SCRAPER}, {SCRAPER} if allowed else set())
    clock = Clock()
    reviewer = reviewer_of(api, clock)
    for _ in range(3):
        assert reviewer.review("Bearer t0ken").allowed is allowed
        clock.now += kept / 4
    assert api.stats.snapshot() == {("create", "tokenreviews"): 1, ("create", "subjectaccessreviews"): 1}
    clock.now += kept
    assert reviewer.review("Bearer t0ken").allowed is allowed
    assert api.stats.snapshot()[("create", "tokenreviews")] == 2


def test_the_verdicts_kept_are_bounded_however_many_tokens_are_sent() -> None:
    api = ReviewingApi({}, set())
    reviewer = reviewer_of(api)
    for number in range(metrics_auth.CACHE_SIZE + 50):
        reviewer.review(f"Bearer random-{number}")
    assert len(reviewer._verdicts) == metrics_auth.CACHE_SIZE
    assert all("random" not in key for key in reviewer._verdicts)  # digests, never the tokens


def test_a_review_the_api_server_fails_is_503_in_one_line_warned_once_and_not_kept() -> None:
    api = ReviewingApi({"t0ken": SCRAPER}, {SCRAPER})
    api.failing = errors.ApiError(0, "Unavailable", "connection refused", method="POST", url="/apis")
    reviewer = reviewer_of(api)
    with structlog.testing.capture_logs() as logged:
        first, second = reviewer.review("Bearer t0ken"), reviewer.review("Bearer t0ken")
    assert first == second and first.status == 503
    assert len(first.message.splitlines()) == 1 and "t0ken" not in first.message
    assert [entry["log_level"] for entry in logged] == ["warning", "debug"]
    api.failing = None
    assert reviewer.review("Bearer t0ken").allowed


def waiting_for_a_review(threads: list[threading.Thread]) -> int:
    """How many of ``threads`` wait for the verdict of a review another request asked for."""
    frames = sys._current_frames()
    waiting = 0
    for thread in threads:
        frame = frames.get(thread.ident or -1)
        while frame is not None and not isinstance(frame.f_locals.get("self"), metrics_auth._Flight):
            frame = frame.f_back
        waiting += frame is not None
    return waiting


@pytest.mark.parametrize("failing", [False, True])
def test_requests_bringing_one_new_token_at_once_share_one_review_and_a_failed_one_is_not_kept(failing: bool) -> None:
    """Each request not answered from what was kept asked the API server itself: as many TokenReviews and
    SubjectAccessReviews as scrapes came at once with a new token."""
    api = ReviewingApi({"t0ken": SCRAPER}, {SCRAPER})
    api.held = threading.Event()
    if failing:
        api.failing = errors.ApiError(0, "Unavailable", "connection refused", method="POST", url="/apis")
    reviewer = reviewer_of(api)
    verdicts: list[metrics_auth.Verdict] = []
    scrapes = [threading.Thread(target=lambda: verdicts.append(reviewer.review("Bearer t0ken"))) for _ in range(8)]
    for scrape in scrapes:
        scrape.start()
    wait_for(lambda: api.called, timeout=10)
    # Every other scrape waits for the first one's review before it lands (else a late one would ask on its own).
    wait_for(lambda: waiting_for_a_review(scrapes) == 7, timeout=10)
    api.held.set()
    for scrape in scrapes:
        scrape.join(10)
    assert len(verdicts) == 8
    if failing:
        assert {verdict.status for verdict in verdicts} == {503}
        assert api.called == ["tokenreviews"]
        api.failing = None
        assert reviewer.review("Bearer t0ken").allowed  # asked again: the failure was not kept
        assert api.called == ["tokenreviews", "tokenreviews", "subjectaccessreviews"]
    else:
        assert all(verdict.allowed for verdict in verdicts)
        assert api.called == ["tokenreviews", "subjectaccessreviews"]


@pytest.mark.parametrize(
    ("host", "secure", "protected"),
    [
        ("127.0.0.1", True, False),
        ("localhost", True, False),
        ("::1", True, False),
        ("0.0.0.0", True, True),
        ("::", True, True),
        ("10.0.0.7", True, True),
        ("0.0.0.0", False, False),
    ],
)
def test_metrics_are_protected_beyond_loopback_unless_asked_not_to(host: str, secure: bool, protected: bool) -> None:
    client: Any = ReviewingApi({}, set())
    tls, reviewer = probe_server.protection((host, 0), client, secure=secure)
    assert (tls is not None, reviewer is not None) == (protected, protected)


def test_a_metrics_certificate_folder_without_its_files_is_a_configuration_error(tmp_path: pathlib.Path) -> None:
    client: Any = ReviewingApi({}, set())
    with pytest.raises(errors.ConfigurationError, match=r"cannot serve /metrics with the certificate in .*tls\.crt"):
        probe_server.protection(("0.0.0.0", 8080), client, cert_dir=str(tmp_path))


def test_a_reviewer_without_tls_is_refused() -> None:
    client: Any = ReviewingApi({}, set())
    with pytest.raises(ValueError, match="needs TLS"):
        probe_server.ProbeServer(
            ("127.0.0.1", 0),
            metrics_mod.Metrics(),
            lambda: (True, "ok"),
            lambda: (True, "ok"),
            reviewer=metrics_auth.Reviewer(client),
        )


def test_metrics_given_to_a_server_answering_a_start_are_protected_from_the_first_scrape() -> None:
    """okt run's server answers the probes while it starts, /metrics unserved (no token can be reviewed by an API
    server that does not answer yet); given the manager's metrics beyond loopback, it serves them to a token only."""
    client: Any = ReviewingApi({}, set())
    server = probe_server.ProbeServer(("127.0.0.1", 0), None, lambda: (True, "ok"), lambda: (False, "waiting"))
    server.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as starting:
            urllib.request.urlopen(server.url + "/metrics", timeout=5)
        server.serve(
            metrics_mod.Metrics(),
            lambda: (True, "ok"),
            lambda: (True, "ok"),
            tls=certs.self_signed().server_context(),
            reviewer=metrics_auth.Reviewer(client),
        )
        with pytest.raises(urllib.error.HTTPError) as plain:
            urllib.request.urlopen(server.url + "/metrics", timeout=5)
        with urllib.request.urlopen(server.url + "/healthz", timeout=5) as answer:
            probe = answer.status, answer.read()
    finally:
        server.stop()
    assert (starting.value.code, starting.value.read().decode()) == (503, probe_server.STARTING)
    assert plain.value.code == 403
    assert probe == (200, b"ok")


def test_a_tls_server_answers_plain_probes_and_closes_a_handshake_that_never_ends() -> None:
    """The kubelet's probes are plain HTTP on the port that serves /metrics over TLS; a client that opens a handshake
    and sends nothing more is held to the request's one deadline, as a plain one is."""
    client: Any = ReviewingApi({}, set())
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0),
        metrics_mod.Metrics(),
        lambda: (True, "ok"),
        lambda: (True, "ok"),
        read_timeout=0.5,
        tls=certs.self_signed().server_context(),
        reviewer=metrics_auth.Reviewer(client),
    )
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as stalled:
            stalled.sendall(b"\x16\x03\x01")  # the start of a TLS record, and nothing more
            with urllib.request.urlopen(server.url + "/healthz", timeout=5) as answer:
                probe = answer.status, answer.read()
            closed = stalled.recv(1) == b""  # closed by the server, not by this timeout
    finally:
        server.stop()
    assert probe == (200, b"ok")
    assert closed


def test_a_handshake_that_never_ends_gives_its_slot_to_a_probe_when_every_slot_is_held() -> None:
    """A connection still in its TLS handshake is still waiting for its request: a probe past the cap takes its slot,
    and it is closed at once rather than at the end of its deadline."""
    client: Any = ReviewingApi({}, set())
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0),
        metrics_mod.Metrics(),
        lambda: (True, "ok"),
        lambda: (True, "ok"),
        read_timeout=60,
        tls=certs.self_signed().server_context(),
        reviewer=metrics_auth.Reviewer(client),
    )
    server.start()
    held: list[socket.socket] = []
    per_address = probe_server.MAX_CONNECTIONS_PER_ADDRESS
    try:
        for i in range(probe_server.MAX_CONNECTIONS):
            source = (f"127.0.0.{2 + i // per_address}", 0)
            held.append(socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=source))
            held[-1].sendall(b"\x16\x03\x01")  # the start of a TLS record, and nothing more
        with urllib.request.urlopen(server.url + "/healthz", timeout=5) as answer:
            probe = answer.status, answer.read()
        closed = held[0].recv(1) == b""  # closed by the server, long before its deadline or this timeout
    finally:
        for connection in held:
            connection.close()
        server.stop()
    assert probe == (200, b"ok")
    assert closed


def mount(root: pathlib.Path, bundle: certs.Bundle, generation: str) -> None:
    """Write ``bundle`` as the kubelet updates a mounted Secret (cert-manager's rotation): a new folder, then ``..data``
    pointed at it at once."""
    folder = root / f"..{generation}"
    folder.mkdir()
    files = {"tls.crt": bundle.cert_pem, "tls.key": bundle.key_pem, "ca.crt": bundle.ca_pem}
    for name, pem in files.items():
        (folder / name).write_bytes(pem)
    (root / "..data_tmp").symlink_to(folder.name)
    os.replace(root / "..data_tmp", root / "..data")
    for name in files:
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")


def served_certificate(port: int, ca_pem: bytes) -> bool:
    """Whether the metrics server on ``port`` serves, over TLS, a certificate the CA ``ca_pem`` verifies."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="localhost"),
        ):
            return True
    except ssl.SSLCertVerificationError:
        return False


def test_a_metrics_certificate_folder_rotated_while_serving_is_served_from_the_next_connection(
    tmp_path: pathlib.Path,
) -> None:
    """The folder was read once at start: a rotated certificate was served only after a restart, and the old one
    until then, even past its end."""
    first, rotated = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    client: Any = ReviewingApi({}, set())
    tls, reviewer = probe_server.protection(("0.0.0.0", 0), client, cert_dir=str(tmp_path))
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0), metrics_mod.Metrics(), lambda: (True, "ok"), lambda: (True, "ok"), tls=tls, reviewer=reviewer
    )
    server.start()
    try:
        before = served_certificate(server.port, first.ca_pem)
        mount(tmp_path, dataclasses.replace(rotated, key_pem=first.key_pem), "2")  # its key not written yet
        half_written = served_certificate(server.port, first.ca_pem)
        mount(tmp_path, rotated, "3")
        after = served_certificate(server.port, rotated.ca_pem), served_certificate(server.port, first.ca_pem)
    finally:
        server.stop()

    assert before
    assert half_written  # a pair that does not load is never served: the previous one is
    assert after == (True, False)
