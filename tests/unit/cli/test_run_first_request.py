"""``okt run`` asks the API server's version again while its failure may pass, and says the failures once it answers."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from okt.cli import main as cli_main
from okt.cli import run as run_mod
from tests.unit.cli.conftest import JsonAnswers, served_kubeconfig

OPERATOR = "import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n"
VERSION = {"major": "1", "minor": "20", "gitVersion": "v1.20.2"}
DISCOVERY = {
    "kind": "APIResourceList",
    "groupVersion": "x.io/v1",
    "resources": [{"name": "xs", "namespaced": True, "kind": "X", "verbs": ["get", "list", "watch"]}],
}


class _StartingServer(JsonAnswers):
    """An API server that answers its first two version requests 503 (being restarted), then answers."""

    refused = 2

    def do_GET(self) -> None:
        status, answer = 404, {}
        if self.path == "/version" and _StartingServer.refused:
            _StartingServer.refused -= 1
            status, answer = 503, {"kind": "Status", "status": "Failure", "message": "starting", "code": 503}
        elif self.path == "/version":
            status, answer = 200, VERSION
        elif self.path == "/apis/x.io/v1":
            status, answer = 200, DISCOVERY
        self.answer(status, answer)


@pytest.fixture
def kubeconfig(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    monkeypatch.setattr(_StartingServer, "refused", 2)  # each test's server refuses its own first two
    with served_kubeconfig(tmp_path, _StartingServer) as path:
        yield path


def _run(tmp_path: pathlib.Path, kubeconfig: pathlib.Path, *options: str) -> tuple[str, list[dict[str, Any]]]:
    """``okt run`` against the starting server, its JSON log records: the start stops once past the first request."""
    operator = tmp_path / "retried_operator.py"
    # The start stops in its start-up hook, once past the first request and the version line.
    operator.write_text(f"{OPERATOR}\n@okt.on_startup()\ndef stop(client):\n    raise RuntimeError('stop here')\n")
    args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check", *options]
    result = CliRunner().invoke(cli_main.cli, [*args, "--log-format", "json", "--metrics-bind-address", "0"])
    return result.output, [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def test_the_failures_of_the_first_request_are_one_warning_once_the_server_answers(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path
) -> None:
    # Each failure was its own warning as it came: a wrong address printed them above its one Error line too.
    output, records = _run(tmp_path, kubeconfig)
    [retried] = [r for r in records if r["event"] == run_mod.STARTUP_RETRIED]
    assert retried["level"] == "warning"
    assert retried["failures"] == 2
    assert retried["errors"] == ["GET /version -> 503 Service Unavailable: starting"]
    assert output.index(run_mod.STARTUP_RETRIED) < output.index("okt: R on Kubernetes v1.20.2")


def test_each_retry_of_the_first_request_is_a_debug_line_as_it_comes(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path
) -> None:
    # Up to 15 s of retries said nothing at all until the server answered, even with -v.
    _, records = _run(tmp_path, kubeconfig, "-v")
    retries = [r for r in records if r["event"] == run_mod.STARTUP_RETRYING]
    assert [(r["level"], r["attempt"], r["error"]) for r in retries] == [
        ("debug", 1, "GET /version -> 503 Service Unavailable: starting"),
        ("debug", 2, "GET /version -> 503 Service Unavailable: starting"),
    ]
