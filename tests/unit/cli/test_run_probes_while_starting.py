"""``okt run`` answers its probes from the moment their port is bound: alive and not ready while its first request to
the API server is retried, the manager's answers once it starts; a start that fails closes the port, its one line
alone."""

from __future__ import annotations

import pathlib
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest
from click.testing import CliRunner, Result

from okt.cli import main as cli_main
from tests.unit.cli.conftest import JsonAnswers, served_kubeconfig

OPERATOR = """
import os
import okt

class R(okt.Reconciler):
    api_version = 'x.io/v1'
    kind = 'X'

@okt.on_startup()
def wait(client):
    if not os.path.exists({stop!r}):
        raise okt.TemporaryError('not yet', delay=0.05)
    raise RuntimeError('stop here')
"""


class _Restarting(JsonAnswers):
    """An API server being restarted: its version answered 503 until :attr:`answering` is set."""

    answering = threading.Event()
    asked = threading.Event()
    """Set once a version request was failed: the first request is being retried."""

    def do_GET(self) -> None:
        if self.path == "/version" and not _Restarting.answering.is_set():
            _Restarting.asked.set()
            status, answer = 503, {"kind": "Status", "status": "Failure", "message": "starting", "code": 503}
        elif self.path == "/version":
            status, answer = 200, {"major": "1", "minor": "20", "gitVersion": "v1.20.2"}
        else:
            status, answer = 404, {}
        self.answer(status, answer)


@pytest.fixture(autouse=True)
def restarting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's server fails its own version requests."""
    monkeypatch.setattr(_Restarting, "answering", threading.Event())
    monkeypatch.setattr(_Restarting, "asked", threading.Event())


@pytest.fixture
def port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as free:
        return int(free.getsockname()[1])


def _get(url: str) -> tuple[int | None, str]:
    """The status and body of ``url``; ``None`` and why when no answer came."""
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (TimeoutError, urllib.error.URLError) as exc:
        return None, f"no answer: {exc}"


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "never came"
        time.sleep(0.05)


def _start(tmp_path: pathlib.Path, kubeconfig: pathlib.Path, port: int) -> tuple[threading.Thread, list[Result]]:
    """``okt run`` on a thread, its probes on ``port``, once its first request was failed (and is being retried); its
    result once the thread ended. Its start-up hook retries until ``tmp_path / "stop"`` exists, then stops the start."""
    operator = tmp_path / "starting_operator.py"
    operator.write_text(OPERATOR.format(stop=str(tmp_path / "stop")))
    args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check"]
    args += ["--metrics-bind-address", f"127.0.0.1:{port}"]
    results: list[Result] = []
    thread = threading.Thread(target=lambda: results.append(CliRunner().invoke(cli_main.cli, args)), daemon=True)
    thread.start()
    _wait_for(_Restarting.asked.is_set)
    return thread, results


def _closed(port: int) -> None:
    """The probes' port is released, and no thread serves it."""
    socket.create_server(("127.0.0.1", port)).close()
    assert not [t.name for t in threading.enumerate() if t.name == "okt-probes"]


def test_the_probes_are_answered_while_the_first_request_is_retried_then_the_managers(
    tmp_path: pathlib.Path, port: int
) -> None:
    # The port was bound and nothing served it until the manager started: the kubelet's probes were accepted by the
    # kernel and timed out, for up to 15 s of retries (and the checks after them).
    base = f"http://127.0.0.1:{port}"
    with served_kubeconfig(tmp_path, _Restarting) as kubeconfig:
        thread, results = _start(tmp_path, kubeconfig, port)
        try:
            assert _get(base + "/healthz") == (200, "ok")
            assert _get(base + "/readyz") == (503, "not ready: waiting for the API server")
            # Nothing to scrape yet, and no token reviewed by a server that does not answer.
            assert _get(base + "/metrics") == (503, "the operator is starting: /metrics is served once it started")
            _Restarting.answering.set()
            # From the manager's start on, the manager's answers: its start-up hook's retry.
            _wait_for(lambda: "start-up hook wait" in _get(base + "/readyz")[1])
            assert _get(base + "/healthz") == (200, "ok")
            assert _get(base + "/metrics")[0] == 200
        finally:
            (tmp_path / "stop").touch()
            _Restarting.answering.set()
            thread.join()
    [result] = results
    assert result.exit_code == 1
    version_line = "okt: R on Kubernetes v1.20.2"
    assert result.output.index(version_line) < result.output.index("serving metrics and probes")
    assert result.output.endswith("Error: the start-up hook wait failed: RuntimeError: stop here\n")
    _closed(port)


def test_a_start_whose_api_server_never_answers_closes_the_probes_and_says_its_one_line(
    tmp_path: pathlib.Path, port: int
) -> None:
    base = f"http://127.0.0.1:{port}"
    with served_kubeconfig(tmp_path, _Restarting) as kubeconfig:
        thread, results = _start(tmp_path, kubeconfig, port)
        assert _get(base + "/healthz") == (200, "ok")
        assert _get(base + "/readyz") == (503, "not ready: waiting for the API server")
    # The API server is gone: nobody answers the retries, and the start fails.
    thread.join()
    [result] = results
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith("Error: cannot reach the Kubernetes API server: ")
    _closed(port)
