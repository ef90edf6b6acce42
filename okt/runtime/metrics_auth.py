"""Who may read ``/metrics``: a bearer token the API server authenticates and authorizes, as controller-runtime asks.

Why this exists: an operator's pod serves its metrics on every interface so that Prometheus can scrape it, and so can
anyone else who reaches the pod. The metrics name the objects, namespaces and controllers it works on, and their
timings; controller-runtime serves them only to a caller the API server vouches for, and okt does the same, with the
same RBAC: the scraper's ServiceAccount is bound to a ClusterRole granting ``get`` on the non-resource URL
``/metrics`` (``okt gen deploy`` ships it as ``<name>-metrics-reader``), and the operator may ``create``
``tokenreviews`` and ``subjectaccessreviews`` (``<name>-metrics-auth``).

Expected flow, for each scrape: the ``Authorization: Bearer <token>`` header is read; a TokenReview asks the API server
who holds the token; a SubjectAccessReview asks whether that user (with its groups, uid and extra) may ``get``
``/metrics``; the verdict is served (``200``), or answered ``401`` (no token, a token the API server does not
authenticate) or ``403`` (a user not allowed), with one line.

Guarantees:

* the answer of both reviews is kept :data:`ALLOWED_TTL` seconds for a token let in and :data:`REFUSED_TTL` for a token
  refused (controller-runtime caches its authorizer's answers the same way), so a scrape every 15 s costs two API
  requests a minute, not two a scrape; at most :data:`CACHE_SIZE` tokens are remembered (a client sending a new token
  at each request cannot grow the process), by their SHA-256 digest, never the token itself;
* requests bringing the same token while it is reviewed share that review: one TokenReview and one
  SubjectAccessReview, whose verdict the others wait for, however many scrapes come at once; a review the API server
  failed is their verdict too (``503``), and is not kept;
* the token is never logged, nor said in an answer; the reviews go through the operator's own client, whose TLS is
  verified against the kubeconfig's or the pod's CA;
* a review the API server fails to answer (unreachable, a missing permission) is answered ``503`` with one line and
  logged as a warning (at debug level while the same error repeats); it is not remembered, the next scrape asks again.

Caveats: a token revoked, or a binding removed, still reads the metrics for up to :data:`ALLOWED_TTL` seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from okt import errors
from okt.kube import client as kube_client

ALLOWED_TTL = 60.0
"""Seconds the verdict on a token let in is kept."""
REFUSED_TTL = 10.0
"""Seconds the verdict on a token refused is kept (a binding just made lets the scraper in soon)."""
CACHE_SIZE = 1024
"""Tokens whose verdict is kept at most."""
REVIEW_TIMEOUT = 5.0
"""Seconds each review may take (a scrape must be answered before Prometheus gives up on it, 10 s by default)."""

_log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The answer to one request for ``/metrics``: ``status`` 200 lets it in, else ``message`` is the one line."""

    status: int
    message: str

    @property
    def allowed(self) -> bool:
        return self.status == 200


MISSING = Verdict(401, "unauthorized: /metrics needs a bearer token (Authorization: Bearer <token>)")
UNAUTHENTICATED = Verdict(401, "unauthorized: the API server does not authenticate this token")
UNFINISHED = Verdict(503, "the review of this token did not finish")
"""The verdict of the requests that waited for a review that raised, or did not end in time (not kept)."""

_FLIGHT_WAIT = 2 * REVIEW_TIMEOUT + 1.0
"""Seconds a request waits for the review of its token that another request asks: both reviews', and a little more."""


class _Flight:
    """One review in flight, whose verdict the requests bringing the same token meanwhile wait for."""

    def __init__(self) -> None:
        self._landed = threading.Event()
        self._verdict = UNFINISHED

    def land(self, verdict: Verdict) -> None:
        self._verdict = verdict
        self._landed.set()

    def wait(self, timeout: float) -> Verdict:
        return self._verdict if self._landed.wait(timeout) else UNFINISHED


class Reviewer:
    """Reviews the bearer tokens of ``/metrics`` requests with the API server, remembering its verdicts a short time.

    Args:
        client: the operator's client (it needs ``create`` on ``tokenreviews`` and ``subjectaccessreviews``).
        path: the non-resource URL the caller must be allowed to ``get``.
        allowed_ttl: seconds a verdict letting a token in is kept.
        refused_ttl: seconds a verdict refusing a token is kept.
        clock: a monotonic clock (tests drive it).
    """

    def __init__(
        self,
        client: kube_client.Client,
        *,
        path: str = "/metrics",
        allowed_ttl: float = ALLOWED_TTL,
        refused_ttl: float = REFUSED_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._path = path
        self._ttl = {True: allowed_ttl, False: refused_ttl}
        self._clock = clock
        self._lock = threading.Lock()
        self._verdicts: dict[str, tuple[float, Verdict]] = {}
        self._flights: dict[str, _Flight] = {}
        # The error the last review failed with (None: it was answered), for a repeat to be logged at debug level.
        self._failed: str | None = None

    def review(self, authorization: str | None) -> Verdict:
        """The verdict on a request whose ``Authorization`` header is ``authorization`` (``None``: it had none).

        Requests bringing the same token while no verdict on it is kept share one review: the first asks the API
        server, the others wait for its verdict (two Prometheus replicas scraping at once, a burst of retries), for
        as long as both reviews may take (:data:`REVIEW_TIMEOUT` each), then answer :data:`UNFINISHED`.
        """
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return MISSING
        digest = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            kept = self._verdicts.get(digest)
            if kept is not None and kept[0] > self._clock():
                return kept[1]
            flight = self._flights.get(digest)
            asks = flight is None
            if flight is None:
                flight = self._flights[digest] = _Flight()
        if not asks:
            return flight.wait(_FLIGHT_WAIT)
        verdict = UNFINISHED
        try:
            verdict = self._settle(digest, token)
        finally:
            with self._lock:
                del self._flights[digest]
            flight.land(verdict)
        return verdict

    def _settle(self, digest: str, token: str) -> Verdict:
        """Ask the API server about ``token`` and keep its verdict (never a review it failed)."""
        now = self._clock()
        try:
            verdict = self._ask(token)
        except errors.ApiError as exc:
            return self._unanswered(exc)
        with self._lock:
            self._failed = None
        self._keep(digest, verdict, now + self._ttl[verdict.allowed])
        return verdict

    def _ask(self, token: str) -> Verdict:
        review = self._create(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            "tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        status = review.get("status") or {}
        user = status.get("user") or {}
        if not status.get("authenticated") or not user.get("username"):
            return UNAUTHENTICATED
        username = str(user["username"])
        spec: dict[str, Any] = {
            "user": username,
            "groups": list(user.get("groups") or ()),
            "nonResourceAttributes": {"path": self._path, "verb": "get"},
        }
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        access = self._create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "subjectaccessreviews",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        if (access.get("status") or {}).get("allowed"):
            return Verdict(200, "ok")
        return Verdict(403, f"forbidden: {' '.join(username.split())} may not get {self._path}")

    def _create(self, path: str, resource: str, body: dict[str, Any]) -> dict[str, Any]:
        # A review changes nothing: it is asked even while a standby's write fence is closed.
        answer: Any = self._client.request(
            "POST", path, verb="create", resource=resource, body=body, write=False, timeout=REVIEW_TIMEOUT
        ).json()
        return answer if isinstance(answer, dict) else {}

    def _keep(self, digest: str, verdict: Verdict, until: float) -> None:
        with self._lock:
            if len(self._verdicts) >= CACHE_SIZE:
                now = self._clock()
                for key in [key for key, (expires, _) in self._verdicts.items() if expires <= now]:
                    del self._verdicts[key]
                while len(self._verdicts) >= CACHE_SIZE:  # the oldest kept goes first
                    del self._verdicts[next(iter(self._verdicts))]
            self._verdicts.pop(digest, None)
            self._verdicts[digest] = (until, verdict)

    def _unanswered(self, exc: errors.ApiError) -> Verdict:
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        # Under the lock: the reviews of several tokens fail at once, each on its server thread, and only one of
        # them finds the error new.
        with self._lock:
            said, self._failed = self._failed, error
        (_log.debug if said == error else _log.warning)("a /metrics token could not be reviewed", error=error)
        return Verdict(503, f"the API server did not review the token: {error}")
