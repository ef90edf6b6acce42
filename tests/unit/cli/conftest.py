"""Each test here leaves the process's logging as it found it.

``okt run`` configures logging for the whole process (okt.runtime.logs): structlog's level filter and output stream,
and a handler on the root logger. Invoked in-process, as these tests do, that configuration outlived the test, and the
tests after it in the same session saw its INFO filter (their debug lines never reached ``capture_logs``) and wrote to
the stream of an invocation long over.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from okt.runtime import logs


@pytest.fixture(autouse=True)
def logging_as_it_was() -> Iterator[None]:
    before = structlog.get_config()
    processors = list(before["processors"])  # capture_logs changes the list in place
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    structlog.configure(**{**before, "processors": processors})
    for handler in [h for h in root.handlers if isinstance(h, logs._StandardHandler) and h not in handlers]:
        root.removeHandler(handler)
        handler.close()


class JsonAnswers(http.server.BaseHTTPRequestHandler):
    """A small API server's handler: ``answer`` writes a JSON answer; nothing is logged."""

    def answer(self, status: int, answer: Any) -> None:
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@contextlib.contextmanager
def served_kubeconfig(
    tmp_path: pathlib.Path, handler: type[http.server.BaseHTTPRequestHandler]
) -> Iterator[pathlib.Path]:
    """A kubeconfig naming an API server of ``handler``'s answers, served on a free local port for the block."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.server_address[1]}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
