"""A mistake in ``--metrics-bind-address`` stops ``okt run`` at start with one line, never a traceback; so does a port
in use, and a run that cannot bind its ports writes no ``--webhook-ca-file``."""

from __future__ import annotations

import pathlib
import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from okt.cli import main as cli_main
from tests.unit.cli.conftest import JsonAnswers, served_kubeconfig

OPERATOR = "import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n"


_ANSWERS = {
    "/version": {"major": "1", "minor": "20", "gitVersion": "v1.20.2"},
    "/apis/x.io/v1": {
        "kind": "APIResourceList",
        "groupVersion": "x.io/v1",
        "resources": [{"name": "xs", "namespaced": True, "kind": "X", "verbs": ["get", "list", "watch"]}],
    },
}


class _VersionOnly(JsonAnswers):
    """An API server as far as ``okt run`` asks before it starts the manager: its version, and the discovery of the
    operator's kind."""

    def do_GET(self) -> None:
        self.answer(200 if self.path in _ANSWERS else 404, _ANSWERS.get(self.path, {}))


@pytest.fixture
def kubeconfig(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    with served_kubeconfig(tmp_path, _VersionOnly) as path:
        yield path


def run(tmp_path: pathlib.Path, kubeconfig: pathlib.Path, address: str, *more: str) -> tuple[int, str]:
    operator = tmp_path / "probes_operator.py"
    operator.write_text(OPERATOR)
    args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check"]
    result = CliRunner().invoke(cli_main.cli, [*args, "--metrics-bind-address", address, *more])
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # click's exit, not an exception raised
    return result.exit_code, result.output


@pytest.mark.parametrize("address", ["8080", "localhost:http", "127.0.0.1:70000"])
def test_a_malformed_metrics_address_is_one_line(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path, address: str
) -> None:
    code, out = run(tmp_path, kubeconfig, address)

    assert code == 2
    assert (
        f"Invalid value for '--metrics-bind-address': a bind address is HOST:PORT (or '0' to disable), got {address!r}"
        in out
    )
    assert "Traceback" not in out


def test_a_metrics_address_in_use_is_one_line(tmp_path: pathlib.Path, kubeconfig: pathlib.Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, out = run(tmp_path, kubeconfig, f"127.0.0.1:{port}")

    assert code == 1
    # "manager stopped" was logged above the line, of a manager that never started; then the version line, printed
    # before the manager bound the port.
    assert out == f"Error: cannot serve metrics and probes on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize("option", ["--stuck-after", "--mapping-stuck-after"])
@pytest.mark.parametrize(("value", "said"), [("-1", "-1.0 is not in the range x>=0"), ("nan", "got nan")])
def test_a_stuck_after_that_is_no_number_of_seconds_is_one_line(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path, option: str, value: str, said: str
) -> None:
    code, out = run(tmp_path, kubeconfig, "0", option, value)

    assert code == 2
    assert f"Invalid value for '{option}'" in out and said in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("value", "said"), [("-1", "-1.0 is not in the range x>=0"), ("nan", "got nan"), ("inf", "got inf")]
)
def test_a_grace_period_that_is_no_finite_number_of_seconds_is_one_line(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path, value: str, said: str
) -> None:
    """Infinity would wait for ever for a daemon that ignores its stop; NaN passes every range check."""
    code, out = run(tmp_path, kubeconfig, "0", "--grace-period", value)

    assert code == 2
    assert "Invalid value for '--grace-period'" in out and said in out
    assert "Traceback" not in out


WEBHOOK_OPERATOR = """
import pydantic
import okt

class Spec(pydantic.BaseModel):
    size: int

class R(okt.Reconciler):
    api_version = 'x.io/v1'
    kind = 'X'
    spec_model = Spec
"""


@pytest.mark.parametrize("taken_by", ["--metrics-bind-address", "--webhook-port"])
def test_a_run_that_cannot_bind_its_ports_writes_no_webhook_ca_file(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path, taken_by: str
) -> None:
    # Another okt run still serving on the port: a CA written by this one, which serves nothing, would be put into
    # the configurations by the next commands, and the running operator's certificate refused by the API server.
    operator = tmp_path / "webhook_operator.py"
    operator.write_text(WEBHOOK_OPERATOR)
    ca_file = tmp_path / "ca.crt"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        metrics = f"127.0.0.1:{port}" if taken_by == "--metrics-bind-address" else "0"
        webhook_port = str(port) if taken_by == "--webhook-port" else "0"
        args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check"]
        args += ["--metrics-bind-address", metrics, "--webhook-host", "127.0.0.1", "--webhook-port", webhook_port]
        result = CliRunner().invoke(cli_main.cli, [*args, "--webhook-ca-file", str(ca_file)])

    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    assert f"127.0.0.1:{port}: Address already in use" in result.output
    assert not ca_file.exists()


def test_a_webhook_port_another_process_holds_is_one_line_naming_the_port_and_the_ways_out(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path
) -> None:
    # Another operator on the host serving its webhooks on the port: each with a check or a spec_model takes 9443.
    operator = tmp_path / "webhook_operator.py"
    operator.write_text(WEBHOOK_OPERATOR)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check"]
        args += ["--metrics-bind-address", "0", "--webhook-host", "127.0.0.1", "--webhook-port", str(port)]
        result = CliRunner().invoke(cli_main.cli, args)

    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert line == (
        f"Error: cannot serve webhooks on 127.0.0.1:{port}: Address already in use (another process holds it, another "
        "operator's webhook server perhaps: --webhook-port 0 serves them on a free port, --no-webhooks serves none)"
    )
    assert "Traceback" not in result.output


def test_a_webhook_port_another_process_holds_is_the_one_line_where_metrics_are_served(
    tmp_path: pathlib.Path, kubeconfig: pathlib.Path
) -> None:
    # The probes were served before the webhook port was bound: "serving metrics and probes" above the line, and the
    # version line above it.
    operator = tmp_path / "webhook_operator.py"
    operator.write_text(WEBHOOK_OPERATOR)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        args = ["run", str(operator), "--kubeconfig", str(kubeconfig), "--skip-permission-check"]
        args += ["--metrics-bind-address", "127.0.0.1:0", "--webhook-host", "127.0.0.1", "--webhook-port", str(port)]
        result = CliRunner().invoke(cli_main.cli, args)

    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: cannot serve webhooks on 127.0.0.1:{port}: Address already in use (another process holds it, another "
        "operator's webhook server perhaps: --webhook-port 0 serves them on a free port, --no-webhooks serves none)\n"
    )
