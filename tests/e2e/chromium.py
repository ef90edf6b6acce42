"""Headless Chromium driven over the DevTools protocol, with nothing but the standard library.

Why not ``--dump-dom``: the theme draws each diagram inside a *closed* shadow root, which a DOM dump (and any script in
the page) cannot see, and a dump says nothing about the requests that failed. The DevTools protocol sees both: the
document with its shadow roots (``DOM.getDocument(pierce=true)``) and every response and failure of the page's
requests. ``--remote-debugging-pipe`` carries it over two pipes (Chromium reads fd 3 and writes fd 4, one JSON
message per NUL-terminated frame), so no websocket client is needed.

Name resolution is limited to loopback (``--host-resolver-rules``): a page that reaches for anything off the machine
(a CDN, a web font) gets a failed request the caller sees, as an offline reader would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find() -> str | None:
    """The path of a Chromium-like browser on this machine, or None."""
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


PENDING = "no response (yet)"


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or did not answer in time."""


@dataclasses.dataclass(frozen=True)
class Request:
    url: str
    status: int | None
    """The HTTP status; None when the request failed without a response (``error`` says why)."""
    error: str = ""


@dataclasses.dataclass
class Visit:
    """What one page load showed: its requests and uncaught script errors."""

    url: str
    requests: list[Request] = dataclasses.field(default_factory=list)
    exceptions: list[str] = dataclasses.field(default_factory=list)

    @property
    def failed(self) -> list[Request]:
        return [r for r in self.requests if (r.status or 0) >= 400 or (r.status is None and r.error != PENDING)]


class Browser:
    """One headless Chromium and one tab; :meth:`open` loads a page, :meth:`evaluate` and :meth:`document` read it."""

    def __init__(self, executable: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="okt-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: the protocol's fixed descriptors 3 and 4
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",  # containers and root; the pages are our own site
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire_pipes,  # noqa: PLW1509 (the child only duplicates two descriptors)
            pass_fds=(3, 4),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime", "DOM"):
            self.call(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_browser, 1 << 16):
            buffer += chunk
            *frames, buffer = buffer.split(b"\0")
            for frame in frames:
                message = json.loads(frame)
                if "id" in message:
                    with self._lock:
                        waiter = self._replies.pop(message["id"], None)
                    if waiter is not None:
                        waiter.put(message)
                else:
                    self._events.put(message)

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (raises :class:`ProtocolError` on an error reply)."""
        waiter: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            self._replies[ident] = waiter
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            reply = waiter.get(timeout=self.timeout)
        except queue.Empty:
            raise ProtocolError(f"{method}: no answer in {self.timeout} s") from None
        if "error" in reply:
            raise ProtocolError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _drain(self) -> Iterator[dict[str, Any]]:
        while True:
            try:
                yield self._events.get_nowait()
            except queue.Empty:
                return

    def open(self, url: str, settle: float = 0.5) -> Visit:
        """Load ``url``, wait for its load event and then ``settle`` seconds of quiet; returns what happened.

        A request still without a response then (a worker's script, whose own events go to the worker) is listed with
        status None but not counted in :attr:`Visit.failed`; the server's side of it is the caller's to check.
        """
        for _ in self._drain():  # events of the previous page
            pass
        visit = Visit(url)
        statuses: dict[str, Request] = {}
        loaded = False
        self.call("Page.navigate", url=url, session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                event = self._events.get(timeout=settle)
            except queue.Empty:
                if loaded:  # the load event, then ``settle`` seconds without any event
                    break
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent":
                statuses[params["requestId"]] = Request(params["request"]["url"], None, PENDING)
            elif method == "Network.responseReceived":
                response = params["response"]
                statuses[params["requestId"]] = Request(response["url"], int(response["status"]))
            elif method == "Network.loadingFailed":
                known = statuses.get(params["requestId"])
                statuses[params["requestId"]] = Request(known.url if known else "?", None, params.get("errorText", ""))
            elif method == "Page.loadEventFired":
                loaded = True
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                visit.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        else:
            raise ProtocolError(f"{url}: no load event within {self.timeout} s")
        visit.requests = [r for r in statuses.values() if not r.url.startswith("data:")]
        return visit

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the current page (an exception in it is a :class:`ProtocolError`)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, session=True)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def document(self) -> dict[str, Any]:
        """The whole DOM tree, shadow roots (closed ones too) and frames included."""
        root: dict[str, Any] = self.call("DOM.getDocument", depth=-1, pierce=True, session=True)["root"]
        return root

    def close(self) -> None:
        with contextlib.suppress(ProtocolError, OSError):  # already gone
            self.call("Browser.close")
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a :meth:`Browser.document` tree, shadow roots and content documents included."""
    yield node
    for key in ("children", "shadowRoots", "pseudoElements"):
        for child in node.get(key, ()):
            yield from walk(child)
    if "contentDocument" in node:
        yield from walk(node["contentDocument"])
