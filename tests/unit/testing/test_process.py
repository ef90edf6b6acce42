"""okt.testing.OperatorProcess: started in a session of its own, ready on /readyz, stopped with SIGTERM, its log kept.

The operator here is a small Python program standing in for ``okt run``: it serves ``/readyz`` and ``/metrics``,
logs JSON lines, and behaves as the test asks (``exit`` at once, ``stubborn``: ignore SIGTERM, ``converting``: ready
before its caches sync, which it does once a file ``synced`` is beside it); in any mode it exits with status 4 once a
file ``crash`` is beside it.
"""

from __future__ import annotations

import json
import pathlib
import signal
import socket
import sys
import textwrap
import urllib.request

import pytest

from okt.testing import OperatorProcess, WaitTimeout, audit, envtest, process, wait_for

STAND_IN = textwrap.dedent(
    """
    import http.server, json, os, pathlib, signal, sys, threading, time

    mode, port = sys.argv[1], int(sys.argv[2])
    print(json.dumps({"event": "starting", "mode": mode}), flush=True)
    print("not json", flush=True)
    if mode == "exit":
        sys.exit(3)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    class Probe(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"okt_reconcile_total 1\\n" if self.path == "/metrics" else b"ok"
            if mode == "converting" and not (pathlib.Path(__file__).parent / "synced").exists():
                body = b"ok (caches not synced yet)"
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def crash_when_told():
        while not (pathlib.Path(__file__).parent / "crash").exists():
            time.sleep(0.05)
        print("fatal: the watch of widgets failed for good", flush=True)
        os._exit(4)

    threading.Thread(target=crash_when_told, daemon=True).start()
    server = http.server.HTTPServer(("127.0.0.1", port), Probe)
    print(json.dumps({"event": "caches synced, reconciling"}), flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()
    """
)


def stand_in(tmp_path: pathlib.Path, mode: str = "serve") -> OperatorProcess:
    script = tmp_path / "main.py"
    script.write_text(STAND_IN)
    port = envtest.free_port()
    return OperatorProcess(
        [sys.executable, str(script), mode, str(port)],
        name=f"stand-in ({mode})",
        log_path=tmp_path / "operator.log",
        probe_url=f"http://127.0.0.1:{port}",
        sample_cpu=True,
    )


def test_as_a_context_manager_it_is_ready_inside_and_stopped_by_sigterm_after(tmp_path: pathlib.Path) -> None:
    operator = stand_in(tmp_path)

    with operator:
        assert operator.ready()
        assert "okt_reconcile_total 1" in operator.metrics()
        assert operator.memory_kib()[0] > 0

    assert operator.returncode == 0
    assert not operator.hung and not operator.killed
    assert operator.final_memory_kib is not None


def test_its_log_is_kept_and_read_as_records(tmp_path: pathlib.Path) -> None:
    with stand_in(tmp_path) as operator:
        pass

    assert operator.logged("caches synced")
    assert operator.records()[:2] == [{"event": "starting", "mode": "serve"}, {"raw": "not json"}]
    assert operator.tail(1) == '{"event": "caches synced, reconciling"}'


def test_when_it_first_logged_an_event_is_the_records_own_timestamp(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "operator.log"
    lines = [
        {"event": "caches synced, competing for the lease", "timestamp": "2026-01-01T00:00:01Z"},
        {"event": "became leader", "timestamp": "2026-01-01T00:00:05.250Z"},
        {"event": "became leader", "timestamp": "2026-01-01T00:00:09Z"},
    ]
    log.write_text("not json\n" + "\n".join(json.dumps(line) for line in lines))
    operator = OperatorProcess(["true"], log_path=log)

    assert operator.logged_at("became leader") == audit.parse_time("2026-01-01T00:00:05.250Z")
    assert operator.logged_at("stopped") is None


def test_waiting_for_an_operator_that_exits_fails_at_once_with_its_log(tmp_path: pathlib.Path) -> None:
    operator = stand_in(tmp_path, "exit").start()

    with pytest.raises(WaitTimeout, match="exited with status 3") as failed:
        operator.wait_ready(timeout=60)

    assert "not json" in str(failed.value)
    assert operator.exit_status == 3


def test_a_failure_in_the_block_after_it_exited_by_itself_carries_its_exit_status_and_its_log(
    tmp_path: pathlib.Path,
) -> None:
    """The test waited for a child the dead operator would never make: its timeout said what was awaited, and
    nothing of the operator's exit, which was the reason."""
    with pytest.raises(WaitTimeout) as failed, stand_in(tmp_path) as operator:
        (tmp_path / "crash").touch()
        wait_for(lambda: not operator.alive, timeout=10)
        wait_for(lambda: False, timeout=0.1, message="the operator to create cache-config")

    notes = "\n".join(getattr(failed.value, "__notes__", ()))
    assert "stand-in (serve) had exited by itself, with status 4" in notes, notes
    assert "fatal: the watch of widgets failed for good" in notes, notes


def test_a_failure_in_the_block_after_the_test_stopped_it_carries_no_note(tmp_path: pathlib.Path) -> None:
    with pytest.raises(WaitTimeout) as failed, stand_in(tmp_path) as operator:
        operator.stop()
        wait_for(lambda: False, timeout=0.1)

    assert not getattr(failed.value, "__notes__", ())


def test_an_operator_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path: pathlib.Path) -> None:
    with stand_in(tmp_path, "stubborn") as operator:
        status = operator.stop(timeout=0.5)

    assert status == -signal.SIGKILL
    assert operator.hung and operator.killed
    assert operator.exit_status is None  # killed here: not the process's own failure


def test_an_operator_serving_a_conversion_webhook_is_ready_for_a_test_once_its_caches_synced(
    tmp_path: pathlib.Path,
) -> None:
    """Its ``/readyz`` answers 200 before the sync (the sync may wait for its conversion webhook): a test acting on it
    then would race its caches."""
    operator = stand_in(tmp_path, "converting").start()
    try:
        assert operator.probe_url is not None
        wait_for(operator.metrics, message="the stand-in serving")
        with urllib.request.urlopen(f"{operator.probe_url}/readyz", timeout=5) as response:
            assert (response.status, response.read()) == (200, b"ok (caches not synced yet)")
        assert not operator.ready()

        (tmp_path / "synced").touch()
        operator.wait_ready()
        assert operator.ready()
    finally:
        operator.stop()


def test_kill_is_kill_9_and_says_whether_it_was_running(tmp_path: pathlib.Path) -> None:
    operator = stand_in(tmp_path).start()
    operator.wait_ready()

    assert operator.kill() is True
    assert operator.kill() is False
    assert operator.returncode == -signal.SIGKILL


def test_okt_run_builds_the_command_users_type_with_probes_on_a_free_port(tmp_path: pathlib.Path) -> None:
    operator = process.OperatorProcess.okt_run(
        "main.py",
        kubeconfig=tmp_path / "kubeconfig",
        namespaces=["a", "b"],
        args=["--leader-elect"],
        command="okt",
    )

    assert operator.probe_url is not None
    bind = operator.probe_url.removeprefix("http://")
    assert operator.argv == [
        "okt", "run", "main.py", "--kubeconfig", str(tmp_path / "kubeconfig"),
        "--namespace", "a", "--namespace", "b",
        "--metrics-bind-address", bind, "--webhook-port", "0", "--log-format", "json", "--leader-elect",
    ]  # fmt: skip
    assert operator.env["KUBECONFIG"] == str(tmp_path / "kubeconfig")  # for a client the operator builds itself


def test_okt_run_leaves_a_kubeconfig_the_test_sets_in_its_env_alone(tmp_path: pathlib.Path) -> None:
    operator = process.OperatorProcess.okt_run(
        "main.py", kubeconfig=tmp_path / "a", env={"KUBECONFIG": str(tmp_path / "b")}, command="okt"
    )
    assert operator.env["KUBECONFIG"] == str(tmp_path / "b")


def test_okt_run_puts_its_probes_on_the_port_it_is_given(tmp_path: pathlib.Path) -> None:
    operator = process.OperatorProcess.okt_run(
        "main.py", kubeconfig=tmp_path / "a", command="okt", pick_port=lambda: 4321
    )
    assert operator.probe_url == "http://127.0.0.1:4321"
    assert "127.0.0.1:4321" in operator.argv


LEAVES_A_CHILD = textwrap.dedent(
    """
    import pathlib, subprocess, sys, threading

    mode, pid_file = sys.argv[1], pathlib.Path(sys.argv[2])
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    child = subprocess.Popen([sys.executable, "-c", code])
    pid_file.write_text(str(child.pid))
    if mode == "serve":
        threading.Event().wait()
    """
)


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet has ended)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.parametrize("mode", ["crash", "serve"])
def test_stop_ends_the_processes_the_operator_started_in_its_group(tmp_path: pathlib.Path, mode: str) -> None:
    script, pid_file = tmp_path / "main.py", tmp_path / "child.pid"
    script.write_text(LEAVES_A_CHILD)
    operator = OperatorProcess([sys.executable, str(script), mode, str(pid_file)], log_path=tmp_path / "log").start()
    child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), message="the child's pid"))
    if mode == "crash":
        wait_for(lambda: not operator.alive, message="the operator to exit, its child left running")

    operator.stop(timeout=5)

    wait_for(lambda: not running(child), timeout=10, message=f"the operator's child {child} to end")


BINDS_ITS_PROBE_PORT = textwrap.dedent(
    """
    import http.server, signal, sys

    # As okt run does: its probes on --metrics-bind-address, or its error on stderr and status 1.
    host, _, port = sys.argv[sys.argv.index("--metrics-bind-address") + 1].rpartition(":")

    class Probe(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    try:
        server = http.server.HTTPServer((host, int(port)), Probe)
    except OSError as exc:
        print(f"Error: cannot serve metrics and probes on {host}:{port}: {exc.strerror}", file=sys.stderr)
        sys.exit(1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()
    """
)


@pytest.mark.parametrize("logged", [True, False], ids=["with-a-log-file", "without"])
def test_okt_run_is_started_again_on_a_fresh_port_when_the_one_picked_is_taken_with_a_log_file_or_without(
    tmp_path: pathlib.Path, capfd: pytest.CaptureFixture[str], logged: bool
) -> None:
    command = tmp_path / "okt"
    command.write_text(f"#!{sys.executable}\n{BINDS_ITS_PROBE_PORT}")
    command.chmod(0o755)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1], envtest.free_port()])
        picked: list[int] = []

        def pick_port() -> int:
            picked.append(next(ports))
            return picked[-1]

        operator = OperatorProcess.okt_run(
            "main.py",
            kubeconfig=tmp_path / "kubeconfig",
            command=str(command),
            log_path=tmp_path / "log" if logged else None,
            pick_port=pick_port,
        )
        with operator:
            assert operator.probe_url == f"http://127.0.0.1:{picked[1]}"
    refusal = f"cannot serve metrics and probes on 127.0.0.1:{picked[0]}: Address already in use"
    # Without a log file its stderr still reaches this process's own, as it did before it was read.
    assert refusal in (operator.log_text() if logged else capfd.readouterr().err)
    assert operator.returncode == 0
