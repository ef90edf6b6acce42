"""The kube edge: the only place okt talks HTTP to the Kubernetes API.

Why this exists: okt needs a handful of verbs (get, list, watch, create, patch, delete) on arbitrary kinds, with
errors mapped onto okt's own tree and every request counted. pykube brings the kubeconfig handling, the auth plugins
and a tuned ``requests`` session; okt keeps its object model out of the way and speaks plain dicts. Requests answered
whole go through :class:`okt.kube.transport.DirectTransport` when the credentials are static (most of okt's CPU was
``requests``' and urllib3's per-request bookkeeping); watches, lists and requests whose whole answer has a deadline
(all read as they stream), refreshing credentials and proxies use the session.

Guarantees:

* every non-2xx answer or transport failure raises a subclass of :class:`okt.errors.ApiError` (``from_status``), with
  the original exception as ``__cause__``;
* every request is counted in :attr:`Client.stats` by verb and resource (``create configmaps``,
  ``patch memcacheds/status``): benchmarks and tests assert "0 writes" against these counters; every answer is
  counted by status code and method too (client-go's ``rest_client_requests_total``). A request is counted once it
  can no longer be refused — when it ends (one answered 401 and sent again with another token: when the 401 came,
  then when it ends) — and never taken back: the counts are Prometheus counters (``okt_api_requests_total``), which a
  decrease would reset for every reader;
* the session's connection pool is large enough for the configured number of workers (no connection churn).

Caveats: one ``Client`` is shared by all workers; ``requests.Session``, urllib3's pool and the direct path's pool are
safe for concurrent requests as long as their configuration is not changed after start-up, which okt never does.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import json
import os
import pathlib
import re
import socket
import ssl
import threading
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pykube
import pykube.http
import requests
import urllib3
import yaml

from okt import errors, secret_values
from okt.kube import discovery, fence, jsonstream, kinds, kubeconfig, proxies, tokens, transport

WRITE_VERBS = frozenset({"create", "update", "patch", "apply", "delete"})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""HTTP methods that change nothing on the server: a request sent with any other is a write (the fence is asked),
whatever verb its caller names it."""
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_TIMEOUT = 30.0
SERVICE_ACCOUNT = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a Pod finds its ServiceAccount's token, the cluster's CA and its namespace."""
_LIST_CHUNK = 256 * 1024
"""Bytes of a list answer read at once: what is held undecoded besides the object being decoded."""
_DISCOVERY_GRACE = 3.0
"""Seconds :meth:`Client.require_served` reads discovery again before it refuses a kind: the API server lists a new
CRD's kind a moment after the CRD is Established (tens of milliseconds, one time in four against Kubernetes 1.20),
and an operator is often started right after its CRD is installed."""
_DISCOVERY_POLL = 0.1
_LOADING_GRACE = 60.0
"""Seconds :meth:`Client.require_served` waits for a kind discovery does not list though its CRD is Established and
serves its version, or a custom kind while the API server is not ready: a kube-apiserver that has just started answers
before it has loaded its CRDs (the built-in kinds at once, the custom ones a moment later), and an operator started
with it — a cluster coming back — would be refused, exit, and be restarted by its Deployment with a growing back-off."""
_LOADING_POLL = 0.5


# Surrogate escapes of JSON (``\ud83d\ude00``), not preceded by an escaped backslash: a pair, or one alone.
_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)
_LONE_SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89a-f][0-9a-f]{2})", re.IGNORECASE)


def _astral(match: re.Match[str]) -> str:
    high, low = int(match.group(2), 16), int(match.group(3), 16)
    return f"{match.group(1)}\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}"


_LONG_KEY = 1000
"""Characters of a key written as JSON beyond which YAML may not read it as a key: YAML looks for the ``:`` of a key
written without the ``?`` indicator only within 1024 characters of its start."""


def _has_long_key(value: Any) -> bool:
    """Whether a mapping in ``value`` has a key of more than :data:`_LONG_KEY` characters once written as JSON (a
    character is at most twelve: one beyond the BMP is a surrogate pair of ``\\u`` escapes)."""
    if isinstance(value, dict):
        return any(
            (isinstance(key, str) and len(key) * 12 + 2 > _LONG_KEY and len(json.dumps(key)) > _LONG_KEY)
            or _has_long_key(item)
            for key, item in value.items()
        )
    if isinstance(value, list | tuple):
        return any(_has_long_key(item) for item in value)
    return False


def _may_hold_long_key(text: str) -> bool:
    """Whether the JSON ``text`` may hold a key of more than :data:`_LONG_KEY` characters, read from the text alone
    (every write of every child is checked; a long key is the rare case, and the walk of :func:`_has_long_key` costs
    as much as writing the text): only where some string of it is that long. Without an escaped quote in the text,
    every other part between its quotes is one string whole; with one (or a backslash ending a string), a string may
    span several parts, and only the walk tells."""
    if '\\"' in text:
        return True
    return max(map(len, text.split('"')[1::2]), default=0) + 2 > _LONG_KEY


def _with_key_indicators(value: Any) -> str:
    """``value`` as compact JSON, but each long key written after YAML's ``? `` (an explicit key, of any length)."""
    if isinstance(value, dict):
        members = []
        for key, item in value.items():
            name = json.dumps({key: 0}, separators=(",", ":"))[1:-3]  # the key as JSON writes it (1 -> "1")
            members.append(f"{'? ' if len(name) > _LONG_KEY else ''}{name}:{_with_key_indicators(item)}")
        return "{" + ",".join(members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_with_key_indicators(item) for item in value) + "]"
    return json.dumps(value, separators=(",", ":"))


def yaml_safe_json(body: Any) -> str:
    """``body`` as JSON that the API server's YAML decoder (server-side apply) accepts as it is.

    JSON writes a character beyond the BMP (an emoji, a CJK extension) as a surrogate pair of ``\\u`` escapes, which
    YAML refuses ("found invalid Unicode character escape code"): the pair becomes YAML's ``\\UXXXXXXXX``. A lone
    surrogate (not a character at all; Python strings can hold one) becomes U+FFFD, as the JSON decoders of
    Kubernetes read it. A key longer than YAML reads as JSON writes it (a custom resource's free-form map may hold
    one) is written after YAML's ``? `` key indicator. Everything else stays JSON, a subset of YAML, with non-ASCII
    escaped.
    """
    text = json.dumps(body, separators=(",", ":"), allow_nan=False)
    if len(text) > _LONG_KEY and _may_hold_long_key(text) and _has_long_key(body):
        text = _with_key_indicators(body)
    if "\\ud" not in text:  # json.dumps writes lowercase hex: no surrogate escape at all (nearly every body)
        return text
    text = _SURROGATE_PAIR.sub(_astral, text)
    return _LONE_SURROGATE.sub(lambda m: f"{m.group(1)}\\uFFFD", text)


def encode_body(body: Any, content_type: str = "application/json") -> str:
    """``body`` as :meth:`Client.request` sends it with ``content_type``: compact JSON, made YAML-safe by
    :func:`yaml_safe_json` for server-side apply. ``okt.testing.FakeClient`` encodes every write body with it too, so
    a body the client cannot send fails a unit test as it fails on a cluster.

    Raises:
        TypeError: a value of a type JSON does not have (a ``datetime``, a set, bytes, a plain ``Enum`` member).
        ValueError: a NaN or an infinity, which JSON cannot write.
    """
    if content_type == PATCH_TYPES["apply"]:
        return yaml_safe_json(body)
    return json.dumps(body, separators=(",", ":"), allow_nan=False)


def _not_served(api_version: str, kind: str) -> errors.NotFound:
    """The 404 of a kind served in no version known, the kind in its ``unserved``."""
    error = errors.NotFound(404, "NotFound", f"the server does not serve {kind} in {api_version}")
    error.unserved = (api_version, kind)
    return error


class InsecureTLSWarning(UserWarning):
    """The kubeconfig turns TLS verification off (``insecure-skip-tls-verify``): said once, when the client starts."""


_quieted: set[str] = set()
_quieted_lock = threading.Lock()


def _say_insecure_once(cluster: str, server: str) -> None:
    """One warning naming the cluster, then silence for its requests.

    urllib3 warns on *every* unverified request (thousands while converging a thousand objects, seconds of CPU);
    the fact is the same each time. The filter is narrowed to this server's host, so other unverified requests of the
    process still warn.
    """
    host = urllib.parse.urlsplit(server).hostname or ""
    with _quieted_lock:
        if host in _quieted:
            return
        _quieted.add(host)
    warnings.warn(
        f"TLS verification is off for cluster {cluster!r} ({server}): the kubeconfig sets insecure-skip-tls-verify; "
        "the API server's identity is not checked (said once, not for every request)",
        InsecureTLSWarning,
        stacklevel=3,
    )
    warnings.filterwarnings(
        "ignore",
        message=f"Unverified HTTPS request is being made to host '{re.escape(host)}'",
        category=urllib3.exceptions.InsecureRequestWarning,
    )


class RateLimit:
    """A token bucket: ``qps`` requests a second on average, bursts of up to ``burst`` (client-go's client limit).

    ``acquire()`` blocks until a token is free. Thread-safe; the waiting is done outside the lock.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if not qps > 0 or burst < 1:
            raise ValueError(f"a rate limit needs qps > 0 and burst >= 1, got qps={qps}, burst={burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; the seconds to wait before using it (0 when one was free)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            time.sleep(wait)


class RequestStats:
    """Thread-safe counters of the requests a client sent, keyed by ``(verb, resource)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._answers: collections.Counter[tuple[str, str]] = collections.Counter()

    def record(self, verb: str, resource: str) -> None:
        with self._lock:
            self._counts[(verb, resource)] += 1

    def answered(self, code: int, method: str) -> None:
        """Count one answer by HTTP status code and method (client-go's ``rest_client_requests_total``); code 0 (no
        answer at all) is counted as client-go's ``<error>``."""
        with self._lock:
            self._answers[(str(code) if code else "<error>", method)] += 1

    def snapshot(self) -> collections.Counter[tuple[str, str]]:
        with self._lock:
            return collections.Counter(self._counts)

    def responses(self) -> collections.Counter[tuple[str, str]]:
        """The answers counted so far, by ``(code, method)``."""
        with self._lock:
            return collections.Counter(self._answers)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._answers.clear()

    def writes(self, since: collections.Counter[tuple[str, str]] | None = None) -> int:
        return sum(n for (verb, _), n in self.delta(since).items() if verb in WRITE_VERBS)

    def by_verb(self, since: collections.Counter[tuple[str, str]] | None = None) -> dict[str, int]:
        totals: collections.Counter[str] = collections.Counter()
        for (verb, _), n in self.delta(since).items():
            totals[verb] += n
        return dict(totals)

    def delta(self, since: collections.Counter[tuple[str, str]] | None = None) -> collections.Counter[tuple[str, str]]:
        now = self.snapshot()
        if since is not None:
            now.subtract(since)
        return collections.Counter({k: v for k, v in now.items() if v})


def interrupt(stream: Any) -> None:
    """Wake the thread reading a watch stream (as handed to ``on_open``): its socket is shut down, so the read ends at
    once and the reader closes the stream. Closing it from another thread instead would block until the server sends
    something."""
    connection = getattr(getattr(stream, "raw", None), "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


_DEADLINE_READ = 64 * 1024
"""Bytes asked of the connection at once by :func:`_read_by` (a read returns what has arrived)."""


def _pair_by(deadline: float) -> tuple[float, float]:
    """The connect and read timeouts of a request sent again whose answer is due by ``deadline``.

    Raises:
        TimeoutError: the deadline passed.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed before the request was sent again")
    return left, left


def _read_by(raw: urllib3.BaseHTTPResponse, deadline: float) -> bytes:
    """The whole body of a streamed answer (``preload_content=False``), decoded, read by ``deadline`` (a
    :func:`time.monotonic` time).

    Why: a socket's timeout bounds each read, not the answer; a server sending a byte now and then keeps a read
    that waits ``timeout`` at a time going for as long as it likes. Here each read returns what has arrived and
    waits no longer than what remains.

    Raises:
        TimeoutError: the body was not whole by ``deadline``; the caller closes the answer.
        urllib3.exceptions.HTTPError: the body was cut short (a read's own timeout: ``ReadTimeoutError``).
    """
    parts: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer was not whole by its deadline")
        sock = getattr(raw.connection, "sock", None)  # none once the whole body is in and the connection released
        if sock is not None:
            sock.settimeout(left)
        chunk = raw.read1(_DEADLINE_READ, decode_content=True)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


_BODY_QUOTE = re.compile(r"(, error found in #\d+ byte) of \.\.\.\|.*\|\.\.\.", re.DOTALL)
"""What the JSON decoder of older API servers (json-iterator; 1.20's does) adds to a decoding error: the request's
text around the error (``error found in #10 byte of ...|..."password":"hunter2"}}|..., bigger context ...|...|...``).
It may be a Secret's data (clear text given as ``data``, which is base64): an error message goes to the log, a
condition and an Event, so the quote is left out; what went wrong stays."""
_APPLY_VALUE = re.compile(r"&value\.value\w*\{|(?<=got )&\{")
"""Where server-side apply's typed patch quotes a value it could not take, as Go prints it: ``.data.pin: expected
string, got &value.valueUnstructured{Value:987654}``, ``.stringData: expected map, got &{the text placed there}``.
The request's own value, perhaps a Secret's, is left out like the quote above."""


def _without_quoted_values(message: str) -> str:
    """``message`` without the first value server-side apply quotes (see :data:`_APPLY_VALUE`) and all that follows it.

    Go prints the value as it is, its braces and line breaks unescaped: where it ends cannot be told from the text (a
    value with a ``}`` in it would end early and the rest of it be kept), so the rest of the message goes with it. What
    is lost is the next errors of the same refusal, if any: the first names its field, enough to act on."""
    found = _APPLY_VALUE.search(message)
    return message if found is None else message[: found.start()] + "a value (left out)"


def _safe_message(message: object) -> str:
    """An error message of the API server with the request's own text and values left out (see :data:`_BODY_QUOTE`
    and :data:`_APPLY_VALUE`)."""
    return _without_quoted_values(_BODY_QUOTE.sub(r"\1 of the request (its text left out)", str(message)))


def _causes(status: Mapping[str, Any]) -> list[errors.StatusCause]:
    """The ``details.causes`` of a Status object, each message made safe as the Status's own is."""
    details = status.get("details")
    found = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(found, list):
        return []
    return [
        errors.StatusCause(str(c.get("reason") or ""), _safe_message(c.get("message") or ""), str(c.get("field") or ""))
        for c in found
        if isinstance(c, dict)
    ]


_WATCH_READ = 64 * 1024
"""Bytes asked of the connection at once by a watch answer that is not chunked (a read returns what has arrived)."""


def _watch_lines(response: requests.Response) -> Iterator[bytes]:
    """The lines of a watch answer (one event each) as they arrive, blank ones left out.

    The API server's answer is chunked: requests hands it out chunk by chunk. One without chunks, ended by the end
    of the connection (a proxy may stream so), requests would read to its end before handing out anything — a watch's
    events only once the watch is over; it is read as each read of the connection returns instead.
    """
    raw = response.raw
    if raw.chunked:
        yield from (line for line in response.iter_lines(chunk_size=None) if line)
        return
    pending = b""
    while chunk := raw.read1(_WATCH_READ, decode_content=True):
        *lines, pending = (pending + chunk).split(b"\n")
        yield from (line for line in lines if line.strip())
    if pending.strip():
        yield pending


def _seconds(retry_after: str | None) -> float | None:
    """A ``Retry-After`` header's delay in seconds: a whole number, as the API server gives it (and as client-go reads
    it: a date is not read)."""
    text = (retry_after or "").strip()
    return float(text) if text.isascii() and text.isdigit() else None


def _resource_label(kind: kinds.Kind, subresource: str | None) -> str:
    return f"{kind.plural}/{subresource}" if subresource else kind.plural


def _listed_where() -> str | None:
    """What a kubeconfig read from ``$KUBECONFIG`` is said to come from: its files, else the variable itself (set to
    separators or blanks only, which name none: said as they are, the path would be blank); None when unset."""
    listed = os.environ.get("KUBECONFIG")
    if not listed:
        return None
    return listed if kubeconfig.listed_files(listed) else "$KUBECONFIG"


def _refuse_tls_environment() -> None:
    """Refuse, before any connection, the variables of the environment that TLS reads and that would not do what
    they say: an empty ``$PYKUBE_SSL_CERTIFICATE_AUTHORITY`` (requests reads an empty CA as "verify nothing"), and a
    ``$SSLKEYLOGFILE`` that cannot be appended to (a folder, a file in a folder that does not exist or is not
    writable).

    Why the second: every TLS context made for a connection opens it, and raises where it cannot; the request was
    retried as if the API server could not be reached, and ended saying so, without naming the variable.

    Raises:
        okt.errors.ConfigurationError: naming the variable (and the file, and why).
    """
    if os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY") == "":
        raise errors.ConfigurationError(
            "PYKUBE_SSL_CERTIFICATE_AUTHORITY is set but empty, which would turn TLS verification off: "
            "unset it, or name a CA file"
        )
    keylog = transport.keylog_file()
    if keylog is None:
        return
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).keylog_filename = keylog  # opens it to append, as each connection does
    except OSError as exc:
        raise errors.ConfigurationError(
            f"$SSLKEYLOGFILE names {keylog}, where TLS keys cannot be written: {exc.strerror or exc} (unset it, or "
            "name a file that can be)"
        ) from None


class Client:
    """A counted, error-mapped REST client over pykube's configured HTTP session."""

    def __init__(
        self,
        config: pykube.KubeConfig,
        *,
        pool_size: int = 64,
        timeout: float = DEFAULT_TIMEOUT,
        rate_limit: RateLimit | None = None,
        token_file: str | os.PathLike[str] | None = None,
        compression: bool | None = None,
    ) -> None:
        """``token_file`` (else the kubeconfig user's ``tokenFile``) holds the bearer token, read again now and then
        and whenever the API server refuses the one sent (:class:`okt.kube.tokens.TokenFile`); a kubeconfig user's
        credential plugin is run now, and again when its token expires or is refused (:class:`~okt.kube.tokens.
        ExecToken`).

        ``compression``: whether answers may come gzipped; ``None`` (the default) asks the kubeconfig's cluster, as
        kubectl does: gzipped unless it sets ``disable-compression: true``. Without it, the API server sends a large
        list as it is instead of compressing it, and okt does not decompress it: on a local network, CPU saved on
        both sides for bytes that cost little (the control plane's own controllers run so).

        The cluster's ``proxy-url`` carries every request, watch and exec, in place of ``HTTPS_PROXY``
        (:func:`okt.kube.kubeconfig.proxy_url`); the user's ``as``, ``as-uid``, ``as-groups`` and ``as-user-extra``
        make every one act as that user (:func:`okt.kube.kubeconfig.impersonation`).

        Raises:
            okt.errors.ConfigurationError: the token file cannot be read, the credential plugin gives no token, or
                ``insecure-skip-tls-verify`` or ``disable-compression`` is not a boolean (kubectl refuses them too), or
                ``PYKUBE_SSL_CERTIFICATE_AUTHORITY`` is set but empty; the ``proxy-url`` or the impersonation cannot be
                used, or the kubeconfig says something okt would not do as kubectl does
                (:func:`okt.kube.kubeconfig.refuse_unhonoured`), or its CA or client certificate cannot be loaded
                (:func:`okt.kube.kubeconfig.refuse_unloadable_certificates`).
        """
        for field in ("insecure-skip-tls-verify", "disable-compression"):
            value = config.cluster.get(field, False)
            if not isinstance(value, bool):  # pykube would read any text, "false" too, as true
                raise errors.ConfigurationError(f"the kubeconfig's {field} must be true or false, got {value!r}")
        _refuse_tls_environment()
        kubeconfig.refuse_unhonoured(config)
        proxy = kubeconfig.proxy_url(config)
        self.impersonation = kubeconfig.impersonation(config)
        """The header fields that make every request act as the kubeconfig user's ``as`` (empty: as itself)."""
        compression = not config.cluster.get("disable-compression", False) if compression is None else compression
        transport.keep_inline_files_private(config)
        kubeconfig.refuse_unloadable_certificates(config)
        adapter = transport.SessionAdapter(
            config, impersonation=self.impersonation, pool_connections=4, pool_maxsize=pool_size
        )
        self._http = pykube.HTTPClient(config, timeout=timeout, http_adapter=adapter)
        self._base = self._http.url.rstrip("/")
        self.host: str = urllib.parse.urlsplit(self._base).netloc
        """The API server's ``host:port``, as client-go labels its request metrics."""
        self._session: requests.Session = self._http.session
        self._session.headers["User-Agent"] = "okt"
        if not compression:
            self._session.headers["Accept-Encoding"] = "identity"
        self.compression = compression
        """Whether the API server may gzip its answers (see ``compression`` above)."""
        # The cluster's proxy-url, in place of the environment's, as kubectl has it; requests re-reads the proxy
        # environment on every request (about half a millisecond each): it is read once.
        self._proxies = {"http": proxy, "https": proxy} if proxy else requests.utils.get_environ_proxies(self._base)
        self._proxy = proxies.chosen(self._base, self._proxies, from_kubeconfig=bool(proxy))
        self._verify = self._session.verify
        insecure = config.cluster.get("insecure-skip-tls-verify") and "certificate-authority" not in config.cluster
        if insecure and not os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY") and self._base.startswith("https:"):
            cluster = (config.contexts.get(config.current_context) or {}).get("cluster", config.current_context)
            _say_insecure_once(str(cluster), self._base)
        self._session.trust_env = False
        self._token = kubeconfig.token_source(config, token_file)
        # a credential plugin's client certificate of the moment, for the session, the direct path and websockets
        adapter.certificate = certificate = (
            self._token.certificate if isinstance(self._token, tokens.ExecToken) else None
        )
        self._direct = transport.DirectTransport.for_config(
            config,
            self._base,
            self._proxies,
            "okt",
            pool_size=pool_size,
            changing_token=self._token is not None,
            impersonation=self.impersonation,
            certificate=certificate,
        )
        self._timeout = timeout
        self._config = config
        self._adapter = adapter
        self.tls = transport.TLS.of(config)
        """The TLS settings of every connection to the API server (the session's, the direct path's, streams')."""
        self._kinds: dict[tuple[str, str], kinds.Kind] = dict(kinds.BUILTIN)
        self._confirmed: set[tuple[str, str]] = set()
        """The (apiVersion, kind) pairs discovery listed: served, where those of the built-in table may not be."""
        self._verbs: dict[tuple[str, str], tuple[str, ...]] = {}
        """The verbs discovery listed for each of :attr:`_confirmed`."""
        self._kinds_lock = threading.Lock()
        self._discovered: list[discovery.Served] | None = None
        self.stats = RequestStats()
        self.default_namespace: str = config.namespace or "default"
        self.rate_limit = rate_limit
        """Client-side rate limit of the requests answered whole (watches are long-lived: not limited); off by
        default, as in controller-runtime: the API server's priority and fairness is the first line."""

    # -- construction --------------------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        pool_size: int = 64,
        rate_limit: RateLimit | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Client:
        """Load a kubeconfig (``path``, else ``$KUBECONFIG``, its files merged as kubectl merges them, else
        ``~/.kube/config``) or the in-cluster config; ``timeout`` bounds each request (see :attr:`timeout`).

        Raises:
            okt.errors.ConfigurationError: the file cannot be read or parsed, or its context cannot be used (none
                chosen, or one that names a cluster or user the file does not define); a ``context`` asked for when
                there is no kubeconfig to choose it from (the in-cluster configuration has none).
        """
        try:
            if path is not None:
                config = kubeconfig.read_file(str(path))
            elif os.environ.get("KUBECONFIG"):
                config = kubeconfig.read_listed(os.environ["KUBECONFIG"])
            elif pathlib.Path("~/.kube/config").expanduser().exists():
                config = kubeconfig.read_file(str(pathlib.Path("~/.kube/config").expanduser()))
            elif context:
                # kubectl refuses it too: the in-cluster service account has no contexts, and the one asked for would
                # be dropped without a word, the pod's own identity used instead.
                raise errors.ConfigurationError(
                    f"cannot use the context {context!r}: no kubeconfig found ($KUBECONFIG unset, no ~/.kube/config), "
                    "and the in-cluster service account has no contexts"
                )
            else:
                return cls.in_cluster(pool_size=pool_size, rate_limit=rate_limit, timeout=timeout)
            if context:
                config.set_current_context(context)
            unusable = kubeconfig.unusable_context(config)
            if unusable is None:
                return cls(config, pool_size=pool_size, rate_limit=rate_limit, timeout=timeout)
        except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError, pykube.exceptions.PyKubeError) as exc:
            where = path or _listed_where() or "~/.kube/config or the in-cluster service account"
            raise errors.ConfigurationError(f"cannot load kubeconfig from {where}: {exc}") from exc
        where = path or _listed_where() or "~/.kube/config"
        raise errors.ConfigurationError(f"cannot load kubeconfig from {where}: {unusable}")

    @classmethod
    def in_cluster(
        cls,
        directory: str | os.PathLike[str] = SERVICE_ACCOUNT,
        *,
        pool_size: int = 64,
        rate_limit: RateLimit | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        compression: bool = False,
    ) -> Client:
        """The in-cluster configuration: the Pod's ServiceAccount ``directory`` (token, CA, namespace) and the API
        server of ``$KUBERNETES_SERVICE_HOST`` and ``$KUBERNETES_SERVICE_PORT``. The token is read again as the
        kubelet rotates it (:class:`okt.kube.tokens.TokenFile`).

        Answers come uncompressed unless ``compression``: the API server is on the cluster's network, where gzipping
        a list costs its CPU and okt's more than the bytes it saves cost (kube-controller-manager and the scheduler
        turn it off for the same reason; a kubeconfig has ``disable-compression`` for it).

        Raises:
            okt.errors.ConfigurationError: a file or a variable is missing.
        """
        folder = pathlib.Path(directory)
        try:
            config = pykube.KubeConfig.from_service_account(str(folder))
        except (OSError, KeyError) as exc:
            raise errors.ConfigurationError(f"cannot load the in-cluster configuration from {folder}: {exc}") from exc
        return cls(
            config,
            pool_size=pool_size,
            rate_limit=rate_limit,
            timeout=timeout,
            token_file=folder / "token",
            compression=compression,
        )

    # -- the one request function --------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        check: bool = True,
        data: bytes | str | None = None,
        write: bool | None = None,
        deadline: float | None = None,
        limited: bool = True,
    ) -> transport.Response:
        """One request answered whole (the direct path when the credentials allow it, else the session).

        ``check`` False returns a non-2xx answer instead of raising (a proxied answer is the operand's, not the API's);
        ``data`` is a body sent as it is (``body`` is serialised as JSON); ``write`` says whether the write fence is
        asked (default: for the write verbs, and for every method but those of :data:`READ_METHODS` whatever ``verb``
        says — a ``DELETE`` of a collection named ``deletecollection`` is a write) — a call proxied to an operand that
        may change it is one, though not counted as a write of the API. ``deadline`` (a :func:`time.monotonic` time, in
        place of ``timeout``) bounds the whole answer, not each read: the request is streamed through the session and
        read by :func:`_read_by` (an operand answering through the API server's proxy may trickle its answer); past it
        the connection is closed and ``Unavailable`` raised, a timeout in its cause. ``limited`` False sends it without
        waiting its turn at the rate limit: the leader's lease, renewed a few times a retry period, must not wait
        behind the workers' requests past its renew deadline.

        Raises:
            okt.errors.ApiError: a non-2xx answer (its subclass by status) or no answer at all (``Unavailable``).
            okt.errors.WriteRefused: a write the fence refused (see :func:`okt.kube.fence.fenced`); nothing was sent.
                :class:`okt.errors.NotLeader`, its child, when the process no longer leads; ``WriteRefused`` itself
                for a write sent from an admission hook.
            TypeError, ValueError: ``body`` is not JSON (a value of a type JSON does not have, a NaN or an infinity,
                which JSON cannot write); nothing was sent.
        """
        if write is None:
            # By the method too: ``verb`` is the caller's name for the request (a hook's own, through ctx.client), and
            # a deposed leader's deletecollection went out unfenced, named as Kubernetes names it.
            write = verb in WRITE_VERBS or method.upper() not in READ_METHODS
        if data is None and body is not None:  # an encoded ``data`` is sent as it is
            # Encoded first: a body that is not JSON raises before anything is counted or sent.
            data = encode_body(body, content_type)
        if limited and self.rate_limit is not None:
            self.rate_limit.acquire()
        # The token before the fence: a credential plugin run again for a token about to expire may take long, and
        # the request may then leave at once on a kept-alive connection.
        used = self._token.token() if self._token is not None else None
        # After the rate limit's wait and the token: leadership may have been lost during them.
        with fence.sending(verb, resource, fenced=write) as sent:
            # A write waits for its answer no longer than its fence allows (a leader: until its renew deadline): held
            # on the wire longer, it could reach the server once another replica may hold the lease.
            base = timeout if timeout is not None else self._timeout
            timeout = sent.within(base)
            deadline = sent.by(deadline) if deadline is not None else None
            # Asked again once a connection is made, whichever way the request leaves (making one may take up to the
            # timeout): leadership may have been lost meanwhile, and the next leader be writing.
            try:
                with transport.asked_once_connected(
                    functools.partial(fence.check_fence, verb, resource) if write else None
                ):
                    response = self._sent(
                        method,
                        path,
                        verb=verb,
                        resource=resource,
                        params=params,
                        data=data,
                        content_type=content_type,
                        timeout=timeout,
                        again=functools.partial(sent.within, base),
                        write=write,
                        deadline=deadline,
                        limited=limited,
                        token=used,
                    )
            except errors.WriteRefused:
                # Refused once connected, or before it was sent once more after a 401: this send never left, and is
                # not counted. Counted before its connection and taken back here, a scrape between the two saw
                # okt_api_requests_total go down by one, which Prometheus reads as a restart of the process.
                raise
            except BaseException:
                self.stats.record(verb, resource)  # sent, or tried (no connection, no answer in time)
                raise
            self.stats.record(verb, resource)
            sent.answered = True
        self.stats.answered(response.status_code, method)
        if check and response.status_code >= 400:
            raise self._error(response, method, path, sent=data)
        return response

    def _sent(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        timeout: float,
        again: Callable[[], float],
        write: bool,
        deadline: float | None,
        limited: bool,
        token: str | None,
    ) -> transport.Response:
        """The answer to a request (which :meth:`request` counts when it ends), sent with ``token`` (the token
        source's, if any): through the direct path, else the session. Sent once more with a renewed token, it waits
        ``again()`` seconds: what is left of the time its fence allowed it."""
        through_session = functools.partial(
            self._send,
            method,
            path,
            verb=verb,
            resource=resource,
            params=params,
            data=data,
            content_type=content_type,
            write=write,
            limited=limited,
            token=token,
            again=again,
        )
        if deadline is not None:
            response = self._whole_by(through_session, method, path, deadline)
        elif self._direct is not None:
            sent = functools.partial(
                self._send_direct,
                method,
                path,
                params=params,
                data=data,
                content_type=content_type,
            )
            response = sent(token=token, timeout=timeout)
            if response.status_code == 401:
                renewed = self._renewed_token(method, verb, resource, token, write, limited=limited)
                if renewed is not None:  # another token came (a rotated file, a plugin run again): once more with it
                    response = sent(token=renewed[0], timeout=again())
        else:
            answer = through_session(timeout=timeout)
            response = transport.Response(
                answer.status_code, answer.reason or "", answer.content, answer.url, answer.headers
            )
        return response

    def _whole_by(
        self, through_session: Callable[..., requests.Response], method: str, path: str, deadline: float
    ) -> transport.Response:
        """One request through the session (``through_session``, :meth:`_send` with the request's own arguments),
        streamed, its answer read whole by ``deadline`` (see :meth:`request`)."""
        try:
            left = deadline - time.monotonic()
            if left <= 0:  # the rate limit held it past its deadline: not sent
                raise TimeoutError("the deadline passed before the request was sent")
            answer = through_session(stream=True, timeout=(left, left), again=functools.partial(_pair_by, deadline))
        except TimeoutError as exc:
            self.stats.answered(0, method)
            raise errors.ApiError.from_status(0, "Unavailable", str(exc), method=method, url=path) from exc
        try:
            content = _read_by(answer.raw, deadline)
        except (urllib3.exceptions.HTTPError, OSError) as exc:  # OSError: TimeoutError, the deadline
            self.stats.answered(0, method)
            raise errors.ApiError.from_status(0, "Unavailable", str(exc), method=method, url=path) from exc
        finally:
            answer.close()  # whole or not: a connection left mid-answer is closed, not kept
        return transport.Response(answer.status_code, answer.reason or "", content, answer.url, answer.headers)

    def _send_direct(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        timeout: float,
        token: str | None,
    ) -> transport.Response:
        assert self._direct is not None  # the caller checked
        try:
            return self._direct.send(
                method,
                path,
                params=params,
                data=data,
                content_type=content_type,
                timeout=timeout,
                token=token,
            )
        except OSError as exc:
            self.stats.answered(0, method)
            raise errors.ApiError.from_status(0, "Unavailable", str(exc), method=method, url=path) from exc

    def _renewed_token(
        self, method: str, verb: str, resource: str, refused: str | None, write: bool, *, limited: bool
    ) -> tuple[str | None] | None:
        """After a 401 to a request sent with ``refused`` (None: a credential plugin's client certificate alone): the
        other credential the token source now gives, as the token to send once more with (None in it: the plugin's
        new certificate alone) — the file read again, the plugin run again, once for requests refused together — or
        None when none came. If one came, the refused answer and its request are counted (it was sent), and the
        caller sends it once more with that token (:meth:`request` counts that one when it ends). A ``limited``
        request first waits its turn in the rate limit again: sent once more, it is one more request (requests
        refused together would otherwise all go again at once, past the limit's burst).

        Raises:
            okt.errors.NotLeader: a write the fence refuses now (leadership may have been lost while the token was
                renewed); it is not sent again.
        """
        if self._token is None or not self._token.renew(refused):
            return None
        self.stats.answered(401, method)
        self.stats.record(verb, resource)
        if limited and self.rate_limit is not None:
            self.rate_limit.acquire()
        token = self._token.token()  # before the fence: a token expiring as it came runs the plugin again
        if write:  # after the rate limit's wait and the token: leadership may have been lost during them
            fence.check_fence(verb, resource)
        return (token,)

    def _send(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, Any] | None = None,
        data: bytes | str | None = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float | tuple[float, float],
        write: bool = False,
        limited: bool = True,
        token: str | None = None,
        again: Callable[[], float | tuple[float, float]] | None = None,
    ) -> requests.Response:
        """Through the ``requests`` session and pykube's adapter (refreshing credentials, proxies, streams), with
        ``token`` (else the token source's of the moment, if any); a 401 is sent once more when the token source gives
        another token (counted as ``verb`` on ``resource``; a ``limited`` request waits its turn in the rate limit
        again and a ``write`` asks the fence again first), waiting ``again()`` when given (else ``timeout`` again).
        The refused answer is closed before it is sent again, and when the renewal raises."""
        sent = functools.partial(self._through_session, method, path, params, data, content_type, stream=stream)
        used = token if token is not None or self._token is None else self._token.token()
        answer = sent(used, timeout=timeout)
        if answer.status_code == 401:
            try:
                renewed = self._renewed_token(method, verb, resource, used, write, limited=limited)
            except BaseException:
                # The renewal raised (the plugin failed, the fence refuses): the refused answer is nobody's to close.
                # Streamed and left open, its connection would never go back to the session's pool.
                answer.close()
                raise
            if renewed is not None:
                answer.close()
                answer = sent(renewed[0], timeout=again() if again is not None else timeout)
        return answer

    def _through_session(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        token: str | None,
        *,
        stream: bool,
        timeout: float | tuple[float, float],
    ) -> requests.Response:
        headers = {"Content-Type": content_type} if data is not None else {}
        if token is not None:  # a token source's: pykube's adapter keeps an Authorization it is given
            headers["Authorization"] = f"Bearer {token}"
        try:
            return self._session.request(
                method,
                self._base + path,
                params=params,
                data=data,
                headers=headers or None,
                stream=stream,
                timeout=timeout,
                proxies=self._proxies,
                verify=self._verify,
                # as on the direct path: a redirect is the answer (one an operand gives through the API server's
                # proxy would take this request, and pykube's adapter would add the credentials, to any host it names)
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            self.stats.answered(0, method)
            # A proxy that cannot be reached is named, with the setting that chose it: urllib3's words blamed no one.
            said = (proxies.unreached(self._proxy, exc) if self._proxy is not None else None) or str(exc)
            raise errors.ApiError.from_status(0, "Unavailable", said, method=method, url=path) from exc

    @property
    def timeout(self) -> float:
        """The seconds a request waits for its answer when it names no timeout of its own."""
        return self._timeout

    @property
    def base_url(self) -> str:
        """The API server's URL (with the path prefix a proxy in front of it may add), without a trailing slash."""
        return str(self._base)

    def open_socket(self, timeout: float) -> transport.Socket:
        """A connection to the API server for a stream the session does not carry (a websocket): TLS as every other
        connection (:attr:`tls`, with the client certificate a credential plugin last gave, offered to the API server
        and to an ``https://`` proxy as the session's requests offer it), through the proxy the session would use, and
        the thread's ``ready`` asked once it is made (see :func:`okt.kube.transport.asked_once_connected`).

        Raises:
            OSError: it could not be made.
            ValueError: the session's proxy for the API server is none :func:`okt.kube.transport.open_socket` can
                tunnel through (a SOCKS one without PySocks).
        """
        parts = urllib.parse.urlsplit(self._base)
        host = parts.hostname or ""
        https = parts.scheme == "https"
        tls = self._adapter.tls()  # a credential plugin's client certificate of the moment, as the session's
        context = tls.context() if https else None
        proxy = requests.utils.select_proxy(self._base, self._proxies)
        proxy_context = tls.proxy_context() if proxy and proxy.lower().startswith("https:") else None
        port = parts.port or (443 if https else 80)
        return transport.open_socket(
            host, port, context, tls.server_name or host, timeout, proxy=proxy, proxy_context=proxy_context
        )

    def credential_headers(self) -> dict[str, str]:
        """The headers proving who we are, for a connection the session does not make (a websocket).

        A token that can change (a token file's, a credential plugin's) is the one of the moment; other static
        credentials give the headers the direct path sends; those pykube refreshes (auth providers) are asked to
        pykube's adapter afresh, as the session would for a request.
        """
        if self._token is not None:
            token = self._token.token()  # None: a credential plugin's client certificate alone (see open_socket)
            return {"User-Agent": "okt", **({"Authorization": f"Bearer {token}"} if token is not None else {})}
        if self._direct is not None:
            return {k: v for k, v in self._direct.headers.items() if k in ("Authorization", "User-Agent")}
        probe = requests.Request("GET", self._base).prepare()
        self._adapter._setup_request_auth(self._config, probe, {})  # pykube's per-request authentication
        headers = {"User-Agent": "okt"}
        if probe.headers.get("Authorization"):
            headers["Authorization"] = str(probe.headers["Authorization"])
        return headers

    def renewed_credential_headers(self, refused: Mapping[str, str]) -> dict[str, str] | None:
        """After the API server answered 401 to a connection the session does not make (a websocket's upgrade), made
        with the headers ``refused`` (:meth:`credential_headers` then): the headers with the other token the token
        source now gives (the file read again, the plugin run again — once for connections refused together, as for
        every other request), or None when no other comes (credentials that cannot change, the same token again):
        the refusal stands. The caller connects once more with them; its new connection is counted and asks the
        thread's fence once made, as the first did.

        Raises:
            okt.errors.Unauthorized: the credential plugin, run again, gave no token.
        """
        sent = refused.get("Authorization", "")
        if self._token is None or not sent.startswith("Bearer "):
            return None
        if not self._token.renew(sent.removeprefix("Bearer ")):
            return None
        return self.credential_headers()

    @staticmethod
    def _error(
        response: transport.Response, method: str, path: str, *, sent: bytes | str | None = None
    ) -> errors.ApiError:
        reason, message = response.reason, response.text[:2000]
        try:
            payload = response.json()
        except ValueError:
            payload = None
        causes: list[errors.StatusCause] = []
        status = isinstance(payload, dict) and payload.get("kind") == "Status"
        if status:
            reason = payload.get("reason") or reason
            message = payload.get("message") or message
            causes = _causes(payload)
        error = errors.ApiError.from_status(
            response.status_code, reason, _safe_message(message), method=method, url=path, causes=causes
        )
        if response.status_code == 404 and not status:  # the API server's mux: no handler for the path
            error = errors.NotServed(404, reason, _safe_message(message), method=method, url=path)
        if isinstance(error, errors.TooManyRequests):
            # A Status says it in its details; the API server's priority and fairness (and max-in-flight) refuse with
            # a text body and say it only in the Retry-After header.
            retry_after = (payload.get("details") or {}).get("retryAfterSeconds") if isinstance(payload, dict) else None
            if not isinstance(retry_after, int | float):
                retry_after = _seconds(response.headers.get("retry-after"))
            if retry_after is not None and retry_after > 0:
                error.retry_after = float(retry_after)
        if isinstance(error, errors.RequestTooLarge) and sent is not None:
            error.size = len(sent.encode() if isinstance(sent, str) else sent)  # the size a report names
        error.__cause__ = requests.HTTPError(f"{response.status_code} {response.reason} for {method} {response.url}")
        return error

    # -- kinds ---------------------------------------------------------------------------------------------------

    def resolve(self, api_version: str, kind: str) -> kinds.Kind:
        """The REST addressing of a kind: the built-in table first, then discovery (cached per process).

        Raises:
            okt.errors.NotFound: the server does not serve it (see :meth:`require_served`).
        """
        known = self._kinds.get((api_version, kind))
        if known is not None:
            return known
        for found in self._group_version(api_version):
            if found.kind == kind:
                return found
        # Not asked which other versions serve it (a kind looked up in vain now and then, ClusterOperator on a server
        # without it, would cost requests more each time): named as served in no version known.
        raise _not_served(api_version, kind)

    def require_served(
        self,
        wanted: Iterable[kinds.Kind],
        waiting: Callable[[str], object] | None = None,
        stopping: threading.Event | None = None,
    ) -> None:
        """Check that the server serves every kind of ``wanted`` as declared and lets it be listed and watched, each
        group version's discovery read once when it does.

        The built-in table addresses Kubernetes' own kinds as current servers serve them, without asking: an older
        server serves some under an earlier version only (Kubernetes 1.20: CronJob in batch/v1beta1). A custom kind
        declared with its plural is addressed without asking too, and its CRD may not be installed, not serve that
        version, or name another plural or scope. An informer of such a kind would list it in vain for ever (or, a
        namespaced kind declared cluster-scoped, address its objects where they are not). Some kinds discovery lists
        cannot be watched (TokenReview is only created, ComponentStatus only read): their informer would fail for
        ever too. A kind discovery already listed costs no request.

        Caveats:
            A kind discovery does not list is read again for a few seconds before it is refused (a CRD Established
            a moment ago may not be listed yet): an unserved kind is reported that much later. One whose CRD exists,
            is Established and serves its version, or a custom kind while the API server says it is not ready
            (``/readyz`` fails), is waited for up to a minute (an API server that has just started loads its CRDs
            after it answers), ``waiting`` told so once with a line that says why; a CRD okt may not read is as one
            that does not exist. ``stopping`` set (the manager's stop, SIGTERM) ends either wait at once: the check
            returns, the kind neither refused nor known to be served, and no later kind is checked; the caller, which
            stops, must look at ``stopping`` before it goes on.

        Raises:
            okt.errors.NotFound: one line naming the first kind not served, its apiVersion and the versions of its
                group that serve it, if any (the apiVersion to declare instead; when none, the kind is its
                ``unserved``); or the first kind served under another plural or scope than declared, with both.
            okt.errors.ApiError: 405 MethodNotAllowed, one line naming the first kind the server serves but does not
                let be listed or watched (TokenReview, ComponentStatus), with the verbs it allows.
        """
        for kind in wanted:
            if stopping is not None and stopping.is_set():
                return
            key = (kind.api_version, kind.kind)
            with self._kinds_lock:
                served = self._kinds[key] if key in self._confirmed else None
            deadline, poll, loading, crd = time.monotonic() + _DISCOVERY_GRACE, _DISCOVERY_POLL, "", ""
            while served is None:
                served = next(
                    (found for found in self._group_version(kind.api_version) if found.kind == kind.kind), None
                )
                if served is not None:
                    break
                if time.monotonic() >= deadline:
                    if loading:  # waited for it already
                        break
                    loading, crd = self._coming(kind)
                    if not loading:
                        break
                    deadline, poll = time.monotonic() + _LOADING_GRACE, _LOADING_POLL
                    if waiting is not None:
                        waiting(
                            f"the API server does not serve {kind.kind} in {kind.api_version} yet, {loading}: "
                            f"waiting up to {_LOADING_GRACE:g} s for it to be loaded"
                        )
                if stopping is None:
                    time.sleep(poll)
                elif stopping.wait(poll):
                    return  # stopped while waiting: the caller starts nothing more
            if served is None and crd:
                raise errors.ApiError.from_status(
                    404,
                    "NotFound",
                    f"the server does not serve {kind.kind} in {kind.api_version}, though its CRD {crd} is "
                    f"Established and serves that version: not loaded after {_LOADING_GRACE:g} s",
                )
            if served is None:
                elsewhere = self.versions_serving(kind)
                if not elsewhere:
                    raise _not_served(kind.api_version, kind.kind)
                raise errors.ApiError.from_status(
                    404,
                    "NotFound",
                    f"the server does not serve {kind.kind} in {kind.api_version} "
                    f"(it serves it in {', '.join(elsewhere)})",
                )
            mismatch = kinds.addressing_mismatch(kind, served)
            if mismatch:
                raise errors.ApiError.from_status(404, "NotFound", mismatch)
            with self._kinds_lock:
                verbs = self._verbs.get(key, ())
            # An informer lists and watches its kind; discovery that names no verbs at all is taken at its word.
            missing = [verb for verb in ("list", "watch") if verbs and verb not in verbs]
            if missing:
                raise errors.ApiError.from_status(
                    405,
                    "MethodNotAllowed",
                    f"the server serves {kind.kind} in {kind.api_version} without {' and '.join(missing)} "
                    f"(its verbs: {', '.join(verbs)}): okt cannot watch it",
                )

    def _group_version(self, api_version: str) -> list[kinds.Kind]:
        """The kinds the server serves in ``api_version`` (none when it does not serve the group version: a CRD not
        installed yet, a version newer than the server, or a misspelling its discovery answers as another group
        version, such as ``g/v1/``, whose objects' paths do not exist), remembered as served."""
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            listing = self.request("GET", path, verb="get", resource="discovery").json()
        except errors.NotFound:
            return []
        if listing.get("groupVersion") != api_version:
            return []
        served = discovery.served_from(api_version, listing, preferred=True)
        self._remember(served)
        return [item.kind for item in served]

    def _remember(self, served: Iterable[discovery.Served]) -> None:
        """Keep what discovery listed: each kind's addressing, that it is served, and its verbs."""
        with self._kinds_lock:
            for item in served:
                key = (item.kind.api_version, item.kind.kind)
                self._kinds.setdefault(key, item.kind)
                self._confirmed.add(key)
                self._verbs[key] = item.verbs

    def _coming(self, kind: kinds.Kind) -> tuple[str, str]:
        """Why the API server may yet serve ``kind``, which discovery does not list, and the name of its CRD when that
        is why; ``("", "")`` when nothing says so.

        Its CRD exists, is Established and serves ``kind``'s version (read only if okt may: its role needs no rule for
        CRDs); or, a custom kind (the built-in ones are served at once), the API server's ``/readyz`` fails, as it
        does until the kinds of its CRDs are registered (``/readyz`` is open to every authenticated user)."""
        if kind.group:
            name = f"{kind.plural}.{kind.group}"
            try:
                crd = self.get_or_none(kinds.CRD, name)
            except (errors.ApiError, errors.InvalidSpec):  # InvalidSpec: a group no CRD's name holds ("v1/")
                crd = None
            spec = (crd or {}).get("spec") or {}
            version = kind.api_version.rpartition("/")[2]
            serves = (spec.get("names") or {}).get("kind") == kind.kind and any(
                isinstance(v, dict) and v.get("name") == version and v.get("served") for v in spec.get("versions") or ()
            )
            if serves and kinds.is_established(crd):
                return f"though its CRD {name} is Established", name
        if kinds.is_builtin_group(kind.api_version):
            return "", ""
        try:
            answer = self.request("GET", "/readyz", verb="get", resource="readyz", check=False)
        except errors.ApiError:
            return "", ""
        return ("and it is not ready (its /readyz fails)", "") if answer.status_code >= 500 else ("", "")

    def versions_serving(self, kind: kinds.Kind) -> list[str]:
        """The other versions of ``kind``'s group that serve it, in the order the group lists them (none for a kind
        of the core group, or of a group the server does not serve), asked of discovery each time.

        Raises:
            okt.errors.ApiError: discovery could not be read (but for a ``404``: the group is not served).
        """
        if not kind.group:
            return []
        try:
            group = self.request("GET", f"/apis/{kind.group}", verb="get", resource="discovery").json()
        except errors.NotFound:
            return []
        versions = [str(v.get("groupVersion") or "") for v in group.get("versions") or ()]
        return [
            version
            for version in versions
            if version
            and version != kind.api_version
            and any(found.kind == kind.kind for found in self._group_version(version))
        ]

    def resolve_name(self, name: str) -> kinds.Kind:
        """The kind ``name`` designates as ``kubectl`` reads it (``deploy``, ``deployments.apps``, ``Memcached``,
        ``memcacheds.cache.example.com``), by discovery (see :mod:`okt.kube.discovery`).

        Discovery is read once per client and read again once when a name is not found (a CRD created since).

        Raises:
            okt.ConfigurationError: the name is unknown or ambiguous.
        """
        with self._kinds_lock:
            served = self._discovered
        if served is not None:
            try:
                return discovery.match(name, served)
            except errors.ConfigurationError:
                pass  # perhaps served since discovery was read: read it again, once
        served = self._discover()
        with self._kinds_lock:
            self._discovered = served
        return discovery.match(name, served)

    def _discover(self) -> list[discovery.Served]:
        """Every resource the server serves, in every version of every group (kubectl's discovery)."""
        served: list[discovery.Served] = []
        core = self.request("GET", "/api", verb="get", resource="discovery").json()
        for version in core.get("versions") or ():
            listing = self.request("GET", f"/api/{version}", verb="get", resource="discovery").json()
            served += discovery.served_from(version, listing, preferred=True)
        groups = self.request("GET", "/apis", verb="get", resource="discovery").json()
        for group in groups.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            for version in group.get("versions") or ():
                group_version = str(version.get("groupVersion") or "")
                try:
                    listing = self.request("GET", f"/apis/{group_version}", verb="get", resource="discovery").json()
                except (errors.ServerError, errors.NotFound):
                    # An aggregated API that is down (metrics-server: 503) or still registering (404), a group gone
                    # since /apis was read (404): kubectl skips it too, and it must not hide the others.
                    continue
                served += discovery.served_from(group_version, listing, preferred=group_version == preferred)
        self._remember(served)
        return served

    def kind_of(self, obj: Mapping[str, Any]) -> kinds.Kind:
        return self.resolve(str(obj["apiVersion"]), str(obj["kind"]))

    # -- verbs ---------------------------------------------------------------------------------------------------

    def get(
        self, kind: kinds.Kind, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        path = kind.path(name, namespace, subresource)
        result: dict[str, Any] = self.request(
            "GET", path, verb="get", resource=_resource_label(kind, subresource)
        ).json()
        secret_values.hold(kind.api_version, kind.kind, (result,))
        return result

    def get_or_none(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None`` when the API server says it does not exist.

        Raises:
            okt.errors.NotServed: the API server serves no such path (the kind's CRD not installed or not loaded
                yet): nothing was said of the object.
        """
        try:
            return self.get(kind, name, namespace)
        except errors.NotServed:
            raise
        except errors.NotFound:
            return None

    def list(
        self, kind: kinds.Kind, namespace: str | None = None, *, label_selector: str | None = None, page_size: int = 500
    ) -> tuple[list[dict[str, Any]], str]:
        """All objects of a kind (paginated), and the list's resourceVersion to start a watch from.

        A list whose continue token expires before its last page (``410``: etcd compacted its history past the
        snapshot the pages come from) is listed again from the start, in one answer that cannot expire, as
        client-go's pager does: the objects returned always come from one snapshot, never from two.
        """
        items: list[dict[str, Any]] = []
        version = ""
        answered = False  # a page came: a 410 after it answers a continue token
        pages = self.list_pages(kind, namespace, label_selector=label_selector, page_size=page_size)
        try:
            for page, page_version in pages:
                answered = True
                items.extend(page)
                version = page_version
        except errors.Gone:
            if not answered:
                raise
            items, version = [], ""
            whole = self.list_pages(kind, namespace, label_selector=label_selector, page_size=page_size, paged=False)
            for page, page_version in whole:
                items.extend(page)
                version = page_version
        return items, version

    def list_pages(
        self,
        kind: kinds.Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
        resource_version: str | None = None,
        paged: bool = True,
    ) -> Iterator[tuple[builtins.list[dict[str, Any]], str]]:
        """The objects of a kind ``page_size`` at a time, so a caller can pack a page before the next is decoded.

        Each page comes with the list's resourceVersion, except a page handed out before the answer's metadata was
        read (a custom resource's list carries it after the items): that one has "". The last page of a list always
        has it.

        ``resource_version="0"`` lets the API server answer from its watch cache, as an informer's first list does
        (client-go's reflector too): no read of etcd, and far less of the server's CPU, at the price of an answer that
        may be a moment behind. Such an answer is not paged by the server; every answer is read as it streams and
        handed out a page at a time, so no more than a page of objects is ever decoded at once.

        ``paged=False`` asks the API server for one answer (no ``limit``): it comes from one snapshot whatever etcd
        compacts meanwhile, where a continue token of a paged list is answered 410 once etcd compacted past it.
        """
        params: dict[str, Any] = {"limit": page_size} if paged else {}
        if label_selector:
            params["labelSelector"] = label_selector
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        while True:
            meta: dict[str, Any] = {}
            page: builtins.list[dict[str, Any]] = []
            version = None  # of the last page handed out
            for name, value in self._list_members(kind, namespace, params):
                if name == "metadata":
                    meta = value if isinstance(value, dict) else {}
                if name is not None or not isinstance(value, dict):
                    continue
                value.setdefault("apiVersion", kind.api_version)
                value.setdefault("kind", kind.kind)
                secret_values.hold(kind.api_version, kind.kind, (value,))
                page.append(value)
                if len(page) >= page_size:
                    version = str(meta.get("resourceVersion", ""))
                    yield page, version
                    page = []
            if page or not version:
                yield page, str(meta.get("resourceVersion", ""))
            if not meta.get("continue"):
                return
            params["continue"] = meta["continue"]
            params.pop("resourceVersion", None)  # a continuation carries its own

    def _list_members(
        self, kind: kinds.Kind, namespace: str | None, params: Mapping[str, Any]
    ) -> Iterator[tuple[str | None, Any]]:
        """One list request, its answer decoded as it streams (see :func:`okt.kube.jsonstream.list_members`)."""
        if self.rate_limit is not None:
            self.rate_limit.acquire()
        self.stats.record("list", kind.plural)
        path = kind.collection_path(namespace)
        response = self._send(
            "GET", path, verb="list", resource=kind.plural, params=params, stream=True, timeout=(10.0, self._timeout)
        )
        self.stats.answered(response.status_code, "GET")
        try:
            if response.status_code >= 400:
                raise self._error(
                    transport.Response(
                        response.status_code, response.reason or "", response.content, response.url, response.headers
                    ),
                    "GET",
                    path,
                )
            yield from jsonstream.list_members(response.iter_content(chunk_size=_LIST_CHUNK))
        except requests.RequestException as exc:
            raise errors.ApiError.from_status(0, "Unavailable", f"list {kind.plural}: {exc}", url=path) from exc
        except ValueError as exc:  # cut short or malformed: as a connection dropped mid-answer
            raise errors.ApiError.from_status(0, "Unavailable", f"list {kind.plural}: {exc}", url=path) from exc
        finally:
            response.close()

    def watch(
        self,
        kind: kinds.Kind,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 330.0,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events (``{"type": ..., "object": ...}``) until the server ends the stream.

        A stream silent for ``inactivity_timeout`` seconds raises :class:`okt.errors.Unavailable` (a frozen watch is
        never waited on forever). Bookmarks are requested and yielded, so callers keep their resourceVersion fresh.
        ``on_open`` receives the streaming response, so another thread can close it to stop the watch at once.
        """
        params: dict[str, Any] = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        if label_selector:
            params["labelSelector"] = label_selector
        self.stats.record("watch", kind.plural)
        path = kind.collection_path(namespace)
        response = self._send(
            "GET",
            path,
            verb="watch",
            resource=kind.plural,
            params=params,
            stream=True,
            timeout=(10.0, inactivity_timeout),
            limited=False,  # watches are long-lived: not rate limited
        )
        self.stats.answered(response.status_code, "GET")
        if response.status_code >= 400:
            try:
                answer = transport.Response(
                    response.status_code, response.reason or "", response.content, response.url, response.headers
                )
            except requests.RequestException as exc:  # the refusal itself cut short: as a connection dropped
                raise errors.ApiError.from_status(0, "Unavailable", f"watch {kind.plural}: {exc}", url=path) from exc
            finally:
                response.close()
            raise self._error(answer, "GET", path)
        if on_open is not None:
            on_open(response)
        try:
            for line in _watch_lines(response):
                yield json.loads(line)
        except (requests.RequestException, urllib3.exceptions.HTTPError, AttributeError, ValueError) as exc:
            # AttributeError/ValueError: the stream was closed under us by another thread (a stop).
            raise errors.ApiError.from_status(0, "Unavailable", f"watch {kind.plural}: {exc}") from exc
        finally:
            response.close()

    def create(self, obj: Mapping[str, Any], kind: kinds.Kind | None = None) -> dict[str, Any]:
        kind = kind or self.kind_of(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        result: dict[str, Any] = self.request(
            "POST", kind.collection_path(namespace), verb="create", resource=kind.plural, body=obj
        ).json()
        return result

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch; the server records the fields it sets as ``field_manager``'s (default: the User-Agent's, okt)."""
        result: dict[str, Any] = self.request(
            "PATCH",
            kind.path(name, namespace, subresource),
            verb="patch",
            resource=_resource_label(kind, subresource),
            params={"fieldManager": field_manager} if field_manager else None,
            body=patch,
            content_type=PATCH_TYPES[patch_type],
        ).json()
        return result

    def apply(
        self,
        obj: Mapping[str, Any],
        kind: kinds.Kind | None = None,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply ``obj`` (the whole intent of ``field_manager``): creates it when missing.

        The server merges field by field: what ``field_manager`` applied before and ``obj`` no longer holds is
        removed, fields other managers own stay, and ``force`` takes back fields another manager changed (drift
        repair) instead of answering 409. Counted as verb ``apply``.
        """
        kind = kind or self.kind_of(obj)
        meta = obj.get("metadata") or {}
        params = {"fieldManager": field_manager, **({"force": "true"} if force else {})}
        result: dict[str, Any] = self.request(
            "PATCH",
            kind.path(str(meta.get("name") or ""), meta.get("namespace"), subresource),
            verb="apply",
            resource=_resource_label(kind, subresource),
            params=params,
            body=obj,
            content_type=PATCH_TYPES["apply"],
        ).json()
        return result

    def replace(self, kind: kinds.Kind, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        result: dict[str, Any] = self.request(
            "PUT",
            kind.path(str(meta.get("name") or ""), meta.get("namespace"), subresource),
            verb="update",
            resource=_resource_label(kind, subresource),
            body=obj,
        ).json()
        return result

    def delete(
        self,
        kind: kinds.Kind,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> bool:
        """Delete; returns False when the object was already gone.

        ``uid`` and ``resource_version`` are preconditions: the server deletes only the object that has them, and
        answers 409 (:class:`okt.errors.Conflict`) when it has others.

        Raises:
            okt.errors.NotServed: the API server serves no such path (the kind's CRD not installed or not loaded
                yet): the object may well exist.
        """
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        preconditions = {"uid": uid, "resourceVersion": resource_version}
        if any(preconditions.values()):
            body["preconditions"] = {key: value for key, value in preconditions.items() if value}
        try:
            self.request("DELETE", kind.path(name, namespace), verb="delete", resource=kind.plural, body=body)
        except errors.NotServed:
            raise  # not "already gone": the API server said nothing of the object
        except errors.NotFound:
            return False
        return True

    def server_version(self) -> str:
        info = self.request("GET", "/version", verb="get", resource="version").json()
        return str(info.get("gitVersion", f"v{info.get('major')}.{info.get('minor')}"))

    def close(self) -> None:
        self._session.close()
        if self._direct is not None:
            self._direct.close()
