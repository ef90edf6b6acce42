"""Run a command in a Pod's container through the API server's ``pods/exec`` subresource.

Why this exists: an operator beyond "install" (backup, restore, a health check the operand does not serve over the
network) needs to run a command inside the operand's container and read what it printed and how it exited — what
``kubectl exec`` does. pykube has no exec, so okt speaks the streaming protocol itself, over a websocket to the API
server, with the client's own TLS settings and credentials (verified by default, as every other request).

The protocol (Kubernetes' ``channel.k8s.io`` family; 1.20 speaks ``v4.channel.k8s.io``): after the upgrade, every
binary frame starts with one byte naming its channel — 1 stdout, 2 stderr, 3 the error channel — followed by data.
The error channel carries, once the command ended, a ``Status`` object: ``Success``, or ``Failure`` with reason
``NonZeroExitCode`` and the exit code in ``details.causes[reason=ExitCode]``; any other failure means the command
could not run at all. The older ``channel.k8s.io`` sends the error as plain text instead.

Guarantees:

* a command that runs returns an :class:`ExecResult` whatever its exit code (non-zero is data, not an exception);
* a command still running after ``timeout`` seconds raises :class:`okt.errors.RemoteTimeout`; the websocket is
  closed before the call returns or raises, so no thread or connection is left waiting;
* a missing Pod or container raises the API's answer (:class:`okt.errors.NotFound`, :class:`okt.errors.BadRequest`)
  with a message naming both; a command that cannot start raises :class:`okt.errors.RemoteError`, and so does a
  stream that ends before the command's Status came (``v4.channel.k8s.io``);
* an upgrade refused with 401 is tried once more, on a new connection, when the client's token source gives another
  token (a token file read again, a credential plugin run again), as every other request of the client is; nothing
  ran on the refused connection;
* an exec is refused (``okt.NotLeader``) when the thread's leadership fence refuses writes: a command may change the
  operand. It is asked again once the websocket's connection is made (through the client's proxy, if any:
  ``http://``, ``https://`` — the API server's TLS inside the proxy's — or ``socks5://``, see
  :func:`okt.kube.transport.open_socket`),
  before the upgrade request is written; the exec is counted as a write on its way until the command's exit status
  came (see :func:`okt.kube.fence.sending`): a stopping leader does not release its lease while it runs.

Caveats: closing the stream on a timeout does not kill the command in the container (Kubernetes has no way to); no
stdin is sent (``v4.channel.k8s.io`` cannot close it, so a command reading it would never end) — pass data as
arguments; the output is held in memory.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import websocket

from okt import errors
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, transport

PROTOCOLS = ("v4.channel.k8s.io", "channel.k8s.io")
"""Offered in order of preference: v4 reports the exit code as a structured Status."""

STDOUT, STDERR, ERROR = 1, 2, 3
DEFAULT_TIMEOUT = 30.0
_LEGACY_EXIT = re.compile(r"exit code:?\s*(\d+)|:\s*(\d+)\s*$")


@dataclasses.dataclass(frozen=True)
class ExecResult:
    """What a command left: its output (decoded as UTF-8, undecodable bytes replaced) and its exit code."""

    stdout: str
    stderr: str
    exit_code: int

    @property
    def ok(self) -> bool:
        """Whether the command exited 0."""
        return self.exit_code == 0


def exit_code_of(status: str, protocol: str) -> int:
    """The exit code the error channel's message says (``status`` is its text; empty when nothing came).

    Raises:
        okt.errors.RemoteError: the command did not run (the Status is a failure without an exit code).
    """
    if not status.strip():
        return 0
    if protocol != PROTOCOLS[0]:
        match = _LEGACY_EXIT.search(status)
        if match:
            return int(match.group(1) or match.group(2))
        raise errors.RemoteError(f"the command could not run: {status}")
    try:
        answer: dict[str, Any] = json.loads(status)
    except ValueError:
        raise errors.RemoteError(f"the command could not run: {status}") from None
    if answer.get("status") == "Success":
        return 0
    if answer.get("reason") == "NonZeroExitCode":
        for cause in (answer.get("details") or {}).get("causes") or ():
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message", ""))
                except ValueError:
                    break
    raise errors.RemoteError(f"the command could not run: {answer.get('message') or status}")


def exec_path(namespace: str, pod: str, container: str | None, command: Sequence[str]) -> str:
    """The ``pods/exec`` request path and query for ``command`` (stdout and stderr attached, no stdin, no tty)."""
    query: list[tuple[str, str]] = [("command", part) for part in command]
    if container:
        query.append(("container", container))
    query += [("stdout", "true"), ("stderr", "true")]
    return f"{kinds.BUILTIN[('v1', 'Pod')].path(pod, namespace, 'exec')}?{urllib.parse.urlencode(query)}"


def run(
    client: kube_client.Client,
    namespace: str,
    pod: str,
    container: str | None,
    command: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> ExecResult:
    """Run ``command`` (an argument list, no shell unless you call one) in ``container`` of Pod ``namespace/pod``.

    Args:
        container: the container's name; ``None`` for a Pod with one container.
        timeout: seconds for the whole call (connect, run, read); must be > 0.

    Raises:
        okt.errors.RemoteTimeout: the command had not ended after ``timeout`` seconds.
        okt.errors.RemoteError: the command could not start, or the stream broke before it ended.
        okt.errors.ApiError: the API server refused the exec (no such Pod or container, RBAC, Pod not running).
        okt.errors.NotLeader: the thread's leadership fence refuses writes.
        TypeError: ``command`` is one string, not an argument list; nothing was sent.
    """
    if isinstance(command, str | bytes):  # each character would be an argument: "ls -l" would run "l"
        # The string is not quoted: a command line often holds a password (redis-cli -a ...), and the error's text
        # goes to the log, the Ready condition and an Event.
        raise TypeError(
            f"command given as one {type(command).__name__} of {len(command)} characters (its text left out): an "
            "exec takes an argument list (['redis-cli', 'BGSAVE']), not one string; for a shell's command line, "
            "['sh', '-c', ...]"
        )
    if not command:
        raise ValueError("an exec needs a command (a non-empty list of arguments)")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    where = f"pod {namespace}/{pod}" + (f" container {container}" if container else "")
    # Counted as a write on its way until the command's exit status came: a stopping leader releases its lease only
    # once the command ended (or leaves it to expire).
    with fence_mod.sending("create", "pods/exec") as sent:
        deadline = time.monotonic() + timeout
        # Asked again once the connection is made (making it may take up to the timeout): leadership may have been
        # lost meanwhile, and the next leader be running its own command.
        try:
            with transport.asked_once_connected(lambda: fence_mod.check_fence("create", "pods/exec")):
                # Its command starts once the API server has the request: it waits for the upgrade no longer than
                # the fence allows a write (the command itself then runs for ``timeout``).
                path = exec_path(namespace, pod, container, command)
                socket = _connect(client, path, where, lambda: sent.within(deadline - time.monotonic()))
        except errors.ApiError as exc:
            sent.answered = exc.status > 0  # the API server refused the upgrade: nothing ran
            raise
        try:
            out, err, status, protocol = _read(socket, where, deadline, timeout)
        finally:
            socket.shutdown()  # type: ignore[no-untyped-call]  # closes the TCP connection at once, whatever its state
        if not status and protocol == PROTOCOLS[0]:
            # v4 ends every exec with a Status, Success too: without one the stream was cut while the command ran,
            # and what came so far is no result (an exit code 0 read from nothing would make a cut backup a success)
            raise errors.RemoteError(f"exec in {where}: the stream ended before the command's exit status came")
        sent.answered = True
    code = exit_code_of(status.decode("utf-8", errors="replace"), protocol)
    return ExecResult(out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"), code)


def _connect(client: kube_client.Client, path: str, where: str, timeout: Callable[[], float]) -> websocket.WebSocket:
    """The websocket of the exec at ``path``, upgraded; ``timeout()`` says how long each connection may take to be
    made and upgraded. An upgrade refused with 401 is tried once more when the client's token source gives another
    token (a token file rotated, a credential plugin's token expired early), as every other request is."""
    url = _websocket_url(client.base_url) + path
    # The credentials first: a credential plugin run again for a token about to expire may take long, and the
    # connection's ready (the write fence) is asked once it is made, just before the upgrade request is written.
    credentials = client.credential_headers()
    try:
        return _upgraded(client, url, credentials, where, timeout())
    except errors.Unauthorized:
        renewed = client.renewed_credential_headers(credentials)
        if renewed is None:
            raise
    # Nothing ran on the refused connection: the command is sent once, on this one (its fence asked once it is made).
    return _upgraded(client, url, renewed, where, timeout())


def _websocket_url(base: str) -> str:
    return "wss" + base[len("https") :] if base.startswith("https") else "ws" + base[len("http") :]


def _upgraded(
    client: kube_client.Client, url: str, credentials: dict[str, str], where: str, timeout: float
) -> websocket.WebSocket:
    """One connection to the API server, upgraded to the exec's websocket with ``credentials`` and the client's
    impersonation (one line per value, as every other request carries it) within ``timeout``."""
    headers = [f"{name}: {value}" for name, value in (*credentials.items(), *client.impersonation)]
    if timeout <= 0:
        raise errors.RemoteTimeout(f"exec in {where}: the time for the whole call ran out before it was sent")
    try:
        sock = client.open_socket(timeout)  # the client's TLS settings and proxy; the thread's ready asked once made
    except TimeoutError as exc:
        raise errors.RemoteTimeout(f"exec in {where}: no connection to the API server within {timeout:g}s") from exc
    except (OSError, ValueError) as exc:
        raise errors.ApiError.from_status(0, "Unavailable", f"exec in {where}: {exc}", method="GET") from exc
    client.stats.record("connect", "pods/exec")
    opened = websocket.WebSocket(enable_multithread=False)
    opened.settimeout(timeout)
    try:
        opened.connect(  # type: ignore[no-untyped-call]
            url,
            socket=sock,
            header=headers,
            subprotocols=list(PROTOCOLS),
            suppress_origin=True,
            # A redirect is the answer: followed, the exec would go wherever it points, with our credentials, over a
            # connection this module never made (neither the client's TLS settings nor the write fence asked).
            redirect_limit=0,
        )
    except websocket.WebSocketBadStatusException as exc:
        sock.close()
        raise _refused(exc, where) from exc
    except websocket.WebSocketTimeoutException as exc:
        sock.close()
        raise errors.RemoteTimeout(f"exec in {where}: no answer from the API server within {timeout:g}s") from exc
    except (websocket.WebSocketException, OSError) as exc:
        sock.close()
        answer = opened.handshake_response
        if answer is not None and 300 <= answer.status <= 399:
            location = (answer.headers or {}).get("location", "")
            raise errors.ApiError.from_status(
                answer.status, "Redirect", f"exec in {where}: the upgrade was answered {answer.status} to {location!r}"
            ) from exc
        raise errors.ApiError.from_status(0, "Unavailable", f"exec in {where}: {exc}", method="GET") from exc
    return opened


def _refused(exc: websocket.WebSocketBadStatusException, where: str) -> errors.ApiError:
    """The API server's refusal of the upgrade, as the okt error of its status, naming the Pod and container."""
    reason, message = exc.status_message or "", ""
    body = exc.resp_body or b""
    try:
        status = json.loads(body)
    except ValueError:
        message = body.decode("utf-8", errors="replace")[:500]
    else:
        if isinstance(status, dict):
            reason = status.get("reason") or reason
            message = status.get("message") or ""
    return errors.ApiError.from_status(exc.status_code, reason, f"exec in {where}: {message}".rstrip(": "))


def _read(
    socket: websocket.WebSocket, where: str, deadline: float, timeout: float
) -> tuple[bytearray, bytearray, bytearray, str]:
    """What the stream carried until it ended: stdout, stderr, the error channel, and the protocol spoken."""
    out, err, status = bytearray(), bytearray(), bytearray()
    protocol = socket.getsubprotocol() or PROTOCOLS[1]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise errors.RemoteTimeout(f"exec in {where}: the command had not ended after {timeout:g}s")
        socket.settimeout(remaining)
        try:
            opcode, data = socket.recv_data()
        except websocket.WebSocketTimeoutException:
            continue  # the deadline check above raises
        except websocket.WebSocketConnectionClosedException:
            break
        except (websocket.WebSocketException, OSError) as exc:
            raise errors.RemoteError(f"exec in {where}: the stream broke: {exc}") from exc
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            break
        if opcode not in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT) or not data:
            continue
        payload = data if isinstance(data, bytes) else data.encode()
        channel, chunk = payload[0], payload[1:]
        if channel == STDOUT:
            out += chunk
        elif channel == STDERR:
            err += chunk
        elif channel == ERROR:
            status += chunk
    return out, err, status, protocol
