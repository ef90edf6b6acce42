"""Call the operand over HTTP: through the API server's proxy (the default), or straight to a Pod's IP.

Why this exists: an operator reads its operand's health and statistics, or triggers its admin endpoints, over HTTP.
Where the operator runs decides what it can reach: out of the cluster (``okt run`` on a laptop, the tests) it reaches
only the API server; in the cluster it reaches Pod IPs, and Service ClusterIPs only where kube-proxy (or a CNI doing
its work) runs. Two routes, chosen per call:

``route="proxy"`` (default)
    ``/api/v1/namespaces/NS/{pods|services}/[SCHEME:]NAME[:PORT]/proxy/PATH`` on the API server: works in and out of
    the cluster, through the client's verified TLS and credentials (RBAC: ``get``/``create``/... on ``pods/proxy`` or
    ``services/proxy``). A Service is resolved by the API server to one of its ready endpoints (not its ClusterIP),
    so it works without kube-proxy. Caveat: the API server does not verify an ``https`` operand's certificate on its
    hop; use the direct route where that matters.
``route="direct"``
    to the Pod's IP (a Service: the first ready address of its Endpoints that serves the port) and the port, from this
    process. For an in-cluster operator; ``https`` is verified (``verify=True``: the system's CAs; a CA file path;
    ``False`` only by explicit choice) against the address called, or against ``server_name`` (sent as SNI too) when
    the operand's certificate names a host — ``NAME.NAMESPACE.svc`` for most in-cluster certificates — rather than its
    Pod's IP.

Guarantees: every call has a ``timeout``, a deadline for the whole answer (not for each read: an operand trickling
its answer does not hold the caller past it); a non-2xx answer raises :class:`okt.errors.HttpError`
(its ``status`` and the first :data:`EXCERPT` characters of the body); no answer raises
:class:`okt.errors.RemoteTimeout` (the timeout) or :class:`okt.errors.RemoteError` (refused, unreachable); the
connection of a failed call is dropped, never left waiting. A call that is not a ``GET``/``HEAD`` may change the
operand: it is refused (``okt.NotLeader``) when the thread's leadership fence refuses writes, asked again as it
leaves (after the rate limit, once its connection is made), and counted as a write on its way until its answer came
(see :func:`okt.kube.fence.sending`): a stopping leader does not release its lease while the operand runs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.client
import json as json_mod
import re
import socket
import threading
import time
import urllib.parse
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import requests
import urllib3

from okt import errors
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, transport

DEFAULT_TIMEOUT = 10.0
EXCERPT = 200
"""Characters of a failed answer's body kept in the error (enough to read it, never a whole page in a condition)."""

Route = Literal["proxy", "direct"]
_KINDS = {"pod": "pods", "pods": "pods", "po": "pods", "service": "services", "services": "services", "svc": "services"}
_READS = kube_client.READ_METHODS
"""Methods that do not change the operand: not fenced."""
_PODS = kinds.BUILTIN[("v1", "Pod")]
_SERVICES = kinds.BUILTIN[("v1", "Service")]
_ENDPOINTS = kinds.Kind("v1", "Endpoints", "endpoints", True)
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
"""A Pod's or a Service's name (a DNS subdomain, which a Service's DNS label also is): no ':', '/' or '%'."""


@dataclasses.dataclass(frozen=True)
class HttpResponse:
    """A 2xx answer of the operand, read whole."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json_mod.loads(self.body)


@dataclasses.dataclass(frozen=True)
class Target:
    """What to call: a Pod or a Service by name, in a namespace."""

    resource: Literal["pods", "services"]
    name: str
    namespace: str

    @classmethod
    def parse(cls, target: str, namespace: str) -> Target:
        """``"pod/NAME"``, ``"service/NAME"`` (``po``, ``svc`` too), or a bare ``"NAME"``: a Service."""
        kind, _, name = target.rpartition("/")
        resource = _KINDS.get(kind.lower() or "service")
        if resource is None or not name:
            raise ValueError(f"target {target!r}: expected 'pod/NAME', 'service/NAME' or a Service's NAME")
        if not _OBJECT_NAME.fullmatch(name):
            # The name goes into the proxy path as ``scheme:name:port``: one holding a ':' (from the custom resource)
            # would pick another port or scheme of that Service than the call's own.
            raise errors.InvalidSpec(
                f"target {target!r}: {name!r} is not a Pod's or a Service's name (lowercase letters, digits, '-' and "
                "'.', starting and ending with a letter or digit)"
            )
        return cls(resource, name, namespace)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.resource[:-1]}/{self.namespace}/{self.name}"


def proxy_path(target: Target, path: str, port: int | str | None, scheme: str) -> str:
    """The API server's proxy path for ``path`` on ``target``'s ``port`` (``scheme:name:port``)."""
    spec = target.name if port is None else f"{target.name}:{port}"
    if scheme != "http":
        spec = f"{scheme}:{spec}"
    collection = (_PODS if target.resource == "pods" else _SERVICES).collection_path(target.namespace)
    return f"{collection}/{urllib.parse.quote(spec, safe=':')}/proxy/{_from_root(path)}"


def _from_root(path: str) -> str:
    """``path`` (with its query) without its leading ``/``, dot segments resolved at the operand's root.

    Why: the URL is resolved as a whole on its way (by ``requests``, by a proxy in front of the API server), and a
    ``..`` left in ``path`` would climb out of the ``proxy`` subresource into the API (``../../../secrets/NAME``
    reads a Secret, and answers it as the operand's). Resolved here, against the operand's root, ``..`` stops there,
    as it does on the direct route; ``%2e`` counts as ``.``, as RFC 3986 reads it.
    """
    path, mark, query = path.partition("?")
    segments = path.lstrip("/").split("/")
    kept: list[str] = []
    for segment in segments:
        dots = urllib.parse.unquote(segment)
        if dots == "..":
            if kept:
                kept.pop()
        elif dots != ".":
            kept.append(segment)
    if urllib.parse.unquote(segments[-1]) in (".", ".."):
        kept.append("")  # a path ending in a dot segment names a directory: it keeps its trailing slash
    return "/".join(kept) + mark + query


def call(
    client: kube_client.Client,
    target: Target,
    path: str,
    *,
    method: str = "GET",
    json: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    port: int | str | None = None,
    scheme: Literal["http", "https"] = "http",
    route: Route = "proxy",
    verify: bool | str = True,
    server_name: str | None = None,
) -> HttpResponse:
    """Call ``method path`` on ``target`` and return its 2xx answer.

    Args:
        path: the path (with its query) on the operand, e.g. ``"/stats?format=json"``.
        json: a body, sent as JSON.
        port: the port (number, or a named port of the Pod/Service); default: the Service's first port, a Pod's 80.
        route: ``"proxy"`` (through the API server) or ``"direct"`` (to the Pod IP; in-cluster operators).
        verify: for ``https`` on the direct route: ``True`` (system CAs), a CA file, or ``False``. A CA file on the
            proxy route raises ``ValueError``: the API server's hop does not verify.
        server_name: for ``https`` on the direct route, the host name the operand's certificate must name (and the
            SNI sent), instead of the address called; ``ValueError`` on the proxy route or for ``http``.

    Raises:
        okt.errors.HttpError: the operand (or the API server's proxy) answered non-2xx.
        okt.errors.RemoteTimeout: no complete answer within ``timeout`` seconds.
        okt.errors.RemoteError: no answer at all (refused, unreachable, no ready endpoint, no endpoints yet).
        okt.errors.Unavailable: the API server was not reached (down, refused, unreachable), as for any request.
        okt.errors.NotLeader: a call other than GET/HEAD while the thread's leadership fence refuses writes.
    """
    method = method.upper()
    if route == "proxy" and isinstance(verify, str):  # ignored, it would read as an operand checked against that CA
        raise ValueError(
            f"verify={verify!r}: a CA file checks the operand's certificate on the direct route only; the API "
            "server's proxy does not check it (route='direct' to have it checked)"
        )
    if server_name is not None and (route == "proxy" or scheme != "https" or not server_name):
        raise ValueError(
            f"server_name={server_name!r}: the host name an operand's certificate must name, for https on the direct "
            "route only (the API server's proxy does not check the certificate; http has none)"
        )
    if method not in _READS:
        fence_mod.check_fence("create", f"{target.resource}/proxy")
    data = None if json is None else json_mod.dumps(json, separators=(",", ":")).encode()
    at = "" if port is None else f":{port}"
    where, mark, query = path.partition("?")
    shown = f"{method} {scheme}://{target}{at}/{where.lstrip('/')}{mark}{_elided(query)}"
    if route == "proxy":
        status, body = _through_proxy(client, target, path, method, data, timeout, port, scheme, shown)
    elif route == "direct":
        tls = _Tls(verify, server_name)
        status, body = _direct(client, target, path, method, data, timeout, port, scheme, tls, shown)
    else:
        raise ValueError(f"route {route!r}: expected 'proxy' or 'direct'")
    if not 200 <= status <= 299:
        excerpt = " ".join(body.decode("utf-8", errors="replace").split())[:EXCERPT]
        told = _without_query_values(excerpt, path)  # an operand's error page may quote the path it was asked
        raise errors.HttpError(f"{shown} -> {status}: {told}".rstrip(": "), status=status, body=excerpt)
    return HttpResponse(status, body)


def _through_proxy(
    client: kube_client.Client,
    target: Target,
    path: str,
    method: str,
    data: bytes | None,
    timeout: float,
    port: int | str | None,
    scheme: str,
    shown: str,
) -> tuple[int, bytes]:
    if target.resource == "pods" and isinstance(port, str) and not port.isdigit():  # pods/proxy takes numbers only
        port = _port_number(port, _pod_ports(client.get(_PODS, target.name, target.namespace)), None, target)
    elif target.resource == "services" and port is None:  # services/proxy needs a named port's name
        ports = (client.get(_SERVICES, target.name, target.namespace).get("spec") or {}).get("ports") or ()
        port = (ports[0].get("name") or ports[0].get("port")) if ports else None
    try:
        answer = client.request(
            method,
            proxy_path(target, path, port, scheme),
            verb="proxy",
            resource=f"{target.resource}/proxy",
            data=data,
            content_type="application/json",
            check=False,
            write=method not in _READS,  # fenced again as it leaves: a rate limit may have held it
            deadline=time.monotonic() + timeout,
        )
    except errors.Unavailable as exc:
        # Raised ``from None``: the transport's errors in the chain quote the URL whole, the query's values too, and
        # the traceback of a hook that lets the error through is logged with every cause; the message says it all.
        if _api_server_unreached(exc):
            # Nothing reached the operand: the error of any request to an API server that is down or unreachable
            # (ctx.exec's too), the call named with its query's values elided.
            told = _without_query_values(exc.api_message, path)
            raise errors.ApiError.from_status(
                0, "Unavailable", f"the API server was not reached: {told}", method=method, url=shown.partition(" ")[2]
            ) from None
        raise _no_answer(exc, shown, timeout, path) from None
    if answer.status_code >= 400:
        failed = _proxy_failure(answer.status_code, answer.content, target, method, shown, path)
        if isinstance(failed, errors.NotFound) and target.resource == "services" and _service_is_there(client, target):
            # The proxy answers a Service without an Endpoints object (one just created, before the endpoint
            # controller wrote it) as the Service not found: it is there, with no endpoint yet, as the direct route
            # says it.
            failed = errors.RemoteError(f"{shown}: no answer: {target} has no endpoints yet")
        if failed is not None:
            raise failed
    return answer.status_code, answer.content


def _service_is_there(client: kube_client.Client, target: Target) -> bool:
    """Whether the Service ``target`` exists; ``False`` when this operator may not read Services (a 404 naming it, or
    its Endpoints, is then said as the API server said it)."""
    try:
        return client.get_or_none(_SERVICES, target.name, target.namespace) is not None
    except errors.Forbidden:
        return False


def _api_server_unreached(exc: errors.Unavailable) -> bool:
    """Whether ``exc`` says no connection to the API server was made, or it closed one before answering (refused,
    unreachable, its TLS handshake failed, the client's proxy failed): not that an answer took too long or was cut
    short, which may be the operand's doing, its answer relayed as it comes."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, requests.ConnectionError):  # ConnectTimeout too; a ReadTimeout is none
            return True
        cause = cause.__cause__ or cause.__context__
    return False


_UNREACHED = ("error trying to reach service", "no endpoints available for service", "no service port")
"""How the API server's proxy starts the message of a 5xx it answers itself: it did not reach the operand (no
connection, no ready endpoint, no such port of the Service)."""


def _proxy_failure(
    code: int, body: bytes, target: Target, method: str, shown: str, path: str
) -> errors.RemoteError | errors.ApiError | None:
    """The error of an answer the API server's proxy wrote itself instead of the operand's (a ``Status`` naming the
    target missing, or saying it could not reach it); ``None`` for the operand's own answer.

    Why: the operand did not answer these, and they are not what :class:`okt.errors.HttpError` reports (an operand's
    404 or 503): a Pod that does not exist is the API's ``NotFound``, as on the direct route; a Service without a
    ready endpoint is a :class:`okt.errors.RemoteError`, as on the direct route.
    """
    try:
        status = json_mod.loads(body)
    except ValueError:
        return None
    if not (isinstance(status, dict) and status.get("kind") == "Status" and status.get("apiVersion") == "v1"):
        return None
    message = _without_query_values(str(status.get("message") or ""), path)
    details = status.get("details") or {}
    if (
        code == 404
        and status.get("reason") == "NotFound"
        and isinstance(details, dict)
        and (details.get("kind"), details.get("name")) == (target.resource, target.name)
    ):
        return errors.ApiError.from_status(code, "NotFound", message, method=method, url=shown.partition(" ")[2])
    if code >= 500 and message.startswith(_UNREACHED):
        return errors.RemoteError(f"{shown}: no answer: {message}")
    return None


@dataclasses.dataclass(frozen=True)
class _Tls:
    """How an ``https`` operand is checked on the direct route: ``verify`` as :func:`call` takes it, and the host name
    its certificate must name (``None``: the address called)."""

    verify: bool | str
    server_name: str | None


def _direct(
    client: kube_client.Client,
    target: Target,
    path: str,
    method: str,
    data: bytes | None,
    timeout: float,
    port: int | str | None,
    scheme: str,
    tls: _Tls,
    shown: str,
) -> tuple[int, bytes]:
    address, number = _address(client, target, port)
    # Fenced again as it leaves (reading the address may have waited at the rate limit), and counted as a write on its
    # way until its answer came: a stopping leader releases its lease only once the operand answered.
    with fence_mod.sending("create", f"{target.resource}/proxy", fenced=method not in _READS) as sent:
        return _direct_call(sent, address, number, path, method, data, timeout, scheme, tls, shown, target)


def _direct_call(
    sent: fence_mod.Sending,
    address: str,
    number: int,
    path: str,
    method: str,
    data: bytes | None,
    timeout: float,
    scheme: str,
    tls: _Tls,
    shown: str,
    target: Target,
) -> tuple[int, bytes]:
    """One call to ``address``:``number``; ``sent.answered`` once the answer came, or once it is certain that nothing
    was sent (no connection). The whole call takes no longer than ``timeout``.

    The request leaves (connection, TLS handshake, the request sent whole) no later than its fence allows a write (a
    leader: until its renew deadline, :meth:`~okt.kube.fence.Sending.by`), or it is cut off unsent. Its answer is
    waited for the rest of ``timeout``, however long the operand works on it (a backup): cutting the connection then
    would not stop what the operand already received, and the fence counts the call until it ends (a stopping leader
    releases its lease only then)."""
    started = time.monotonic()
    deadline = started + timeout
    leave_by = sent.by(deadline)
    host = f"[{address}]" if ":" in address else address
    url = urllib3.util.parse_url(f"{scheme}://{host}:{number}/{path.lstrip('/')}")  # what must be, percent-encoded
    options: dict[str, Any] = {}
    if scheme == "https":
        options["cert_reqs"] = "CERT_REQUIRED" if tls.verify is not False else "CERT_NONE"
        if isinstance(tls.verify, str):
            options["ca_certs"] = tls.verify
        if tls.server_name is not None:
            options["server_hostname"] = tls.server_name
        connection: urllib3.connection.HTTPConnection = transport.HTTPSConnection(
            address, number, timeout=leave_by - started, **options
        )
    else:
        connection = transport.HTTPConnection(address, number, timeout=leave_by - started)
    # One call, one connection, closed when the call ends. A socket's timeout bounds each read, not the answer: an
    # operand sending its head or its body a byte at a time would hold the caller as long as it sends; past the
    # deadline the watchdog shuts the socket down, which ends any read or write under way.
    watchdog = None
    try:
        # Asked again once the connection is made (TCP, TLS: up to the time left to leave): leadership may have been
        # lost meanwhile, and the next leader be calling the operand.
        fence = functools.partial(fence_mod.check_fence, "create", f"{target.resource}/proxy")
        try:
            with transport.asked_once_connected(None if method in _READS else fence):
                connection.connect()
        except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError):
            sent.answered = True  # no connection: nothing was sent
            raise
        if scheme == "https" and not connection.is_verified:  # verify=False: warned of, as urllib3's pools do
            warnings.warn(
                f"Unverified HTTPS request is being made to host '{address}'. Adding certificate verification is "
                "strongly advised.",
                urllib3.exceptions.InsecureRequestWarning,
                stacklevel=4,
            )
        # the socket itself: the connection lets go of it once an answer says it will close, and reads on
        watchdog = _Watchdog(connection.sock, leave_by)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        connection.request(method, url.request_uri, body=data, headers=headers)
        # Sent whole: the answer is waited for until the call's own deadline.
        if not watchdog.move(deadline):
            raise TimeoutError
        connection.timeout = max(deadline - time.monotonic(), _LEAST)  # each read's, as urllib3 sets it
        answer = connection.getresponse()
        if watchdog.cut:  # cut as the answer ended: what came after the cut is not an answer
            raise TimeoutError
        body = answer.data
        sent.answered = True
        return answer.status, body
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
        failed: errors.RemoteError = (
            errors.RemoteTimeout(f"{shown}: no complete answer within {timeout:g}s")
            if watchdog is not None and watchdog.cut
            else _no_answer(exc, shown, timeout, path)
        )
        left = watchdog is not None and watchdog.moved
        if isinstance(failed, errors.RemoteTimeout) and not left and leave_by < deadline:
            # Connecting or sending outlasted what the fence allowed, not the call's timeout.
            failed = errors.RemoteTimeout(
                f"{shown}: not sent within the {leave_by - started:.2g}s its write fence allowed (the time the leader "
                "may still write)"
            )
        raise failed from exc
    finally:
        if watchdog is not None:
            watchdog.stop()
        connection.close()


_LEAST = 0.001
"""The shortest socket timeout set (0 would make the socket non-blocking)."""


class _Watchdog:
    """Shuts a call's socket down at a deadline (ending any read or write under way), which may be moved later until
    it passed: the time its request has to leave, then the time its answer has to come."""

    def __init__(self, sock: socket.socket | None, deadline: float) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._armed = 0
        self._stopped = False
        self.cut = False
        """Whether the deadline passed and the socket was shut down."""
        self.moved = False
        """Whether the deadline was moved (the request had left by the first)."""
        self._timer = self._arm(deadline)

    def _arm(self, deadline: float) -> threading.Timer:
        self._armed += 1
        timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._fire, (self._armed,))
        timer.daemon = True
        timer.start()
        return timer

    def move(self, deadline: float) -> bool:
        """Move the deadline to ``deadline``; False when it passed already (the socket is shut down)."""
        with self._lock:
            if self.cut:
                return False
            self.moved = True
            self._timer.cancel()
            self._timer = self._arm(deadline)
            return True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._timer.cancel()

    def _fire(self, armed: int) -> None:
        with self._lock:
            if self._stopped or armed != self._armed:
                return  # stopped, or moved since: a timer cancelled as it fired
            self.cut = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)


def _address(client: kube_client.Client, target: Target, port: int | str | None) -> tuple[str, int]:
    """The IP and port number to call ``target`` at directly (a Service: its first ready endpoint serving the port)."""
    if target.resource == "pods":
        pod = client.get(_PODS, target.name, target.namespace)
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            raise errors.RemoteError(f"{target} has no IP yet (phase {(pod.get('status') or {}).get('phase')})")
        return str(ip), _port_number(port, _pod_ports(pod), 80, target)
    if port is None or isinstance(port, int):
        # The Service's port (its first by default, as on the proxy route): its Endpoints list the target port under
        # the same name, in an order of their own (the endpoint controller sorts a subset's ports by their hash).
        port = _service_port_name(client, target, port)
    try:
        endpoints = client.get(_ENDPOINTS, target.name, target.namespace)
    except errors.NotFound as exc:
        if _service_is_there(client, target):  # just created: the endpoint controller has not written them yet
            raise errors.RemoteError(f"{target} has no endpoints yet") from exc
        raise
    # One subset per set of ports its Pods serve (a rollout adding a port: the old Pods serve fewer): the first with a
    # ready address and the port, as the API server's proxy looks for one.
    serving = [
        subset
        for subset in endpoints.get("subsets") or ()
        if subset.get("addresses")
        and (port is None or any(entry.get("name") == port for entry in subset.get("ports") or ()))
    ]
    if serving:
        return str(serving[0]["addresses"][0]["ip"]), _port_number(port, serving[0].get("ports") or [], None, target)
    if port is not None and any(subset.get("addresses") for subset in endpoints.get("subsets") or ()):
        raise errors.RemoteError(f"{target} has no ready endpoint serving port {port!r}")
    raise errors.RemoteError(f"{target} has no ready endpoint")


def _service_port_name(client: kube_client.Client, target: Target, number: int | None) -> str | None:
    """The name of ``target``'s port ``number``, or of its first port when ``number`` is None (``None`` for a Service's
    one unnamed port, or for one without ports), as the API server's proxy resolves it: the number is the Service's,
    not the one its endpoints listen on."""
    ports = (client.get(_SERVICES, target.name, target.namespace).get("spec") or {}).get("ports") or ()
    if number is None:
        return (ports[0].get("name") or None) if ports else None
    for entry in ports:
        if entry.get("port") == number:
            return entry.get("name") or None
    raise errors.RemoteError(f"{target} has no port {number}")


def _pod_ports(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [port for c in (pod.get("spec") or {}).get("containers") or () for port in c.get("ports") or ()]


def _port_number(port: int | str | None, ports: list[Mapping[str, Any]], default: int | None, target: Target) -> int:
    if isinstance(port, int):
        return port
    for entry in ports:
        if port is None or entry.get("name") == port:
            return int(entry.get("containerPort") or entry["port"])
    if port is None and default is not None:
        return default
    raise errors.RemoteError(f"{target} has no port {port!r}" if port else f"{target} declares no port")


def _no_answer(exc: BaseException, shown: str, timeout: float, path: str) -> errors.RemoteError:
    """No answer: a refusal, or a timeout (found anywhere in the exception's chain). ``path``: the call's, whose
    query's values are left out of the exception's text."""
    cause: BaseException | None = exc
    while cause is not None:
        # urllib3 2's NewConnectionError is a ConnectTimeoutError too (for compatibility): a refusal, not a timeout
        if isinstance(cause, urllib3.exceptions.NewConnectionError | ConnectionError):
            break
        if isinstance(cause, TimeoutError | urllib3.exceptions.TimeoutError):
            return errors.RemoteTimeout(f"{shown}: no complete answer within {timeout:g}s")
        cause = cause.__cause__ or cause.__context__
    return errors.RemoteError(f"{shown}: no answer: {_without_query_values(str(exc), path)}")


def _elided(query: str) -> str:
    """``query``'s keys with their values elided (``token=…&user=…``; a part without ``=`` may be a value alone: it is
    elided whole).

    Why: an operand's admin endpoint may take a token or a password in its query, and the message of a failed call
    goes to the custom resource's conditions, its Events and the log; the keys say which call it was.
    """
    return "&".join(
        f"{key}=…" if sep else "…" if key else "" for key, sep, _ in (p.partition("=") for p in query.split("&"))
    )


_QUERY = re.compile(r"\?([^\s'\"()<>]*)")
"""A URL's query as a transport's error quotes it (``requests`` quotes the URL it could not reach)."""


def _without_query_values(text: str, path: str) -> str:
    """``text`` with the query of ``path`` (as it was given, as a transport may quote it) and of any URL in it
    elided (see :func:`_elided`)."""
    query = path.partition("?")[2]
    if query:
        text = text.replace(query, _elided(query))
    return _QUERY.sub(lambda found: "?" + _elided(found.group(1)), text)
