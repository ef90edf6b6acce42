"""``okt envtest stop`` stops the control plane it started, and nothing else."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
from click.testing import CliRunner

from okt.cli import main as cli_main


def test_stop_leaves_alone_a_process_that_now_has_a_recorded_pid(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a reboot (or a kill -9 of the plane), the state file's pids may name someone else's processes.
    monkeypatch.setenv("OKT_ENVTEST_CACHE", str(tmp_path / "cache"))
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        directory = tmp_path / "okt-envtest-gone"
        state = {
            "pids": {"etcd": stranger.pid, "kube-apiserver": stranger.pid},
            "directory": str(directory),
            "kubeconfig": str(directory / "kubeconfig"),
            "url": "https://127.0.0.1:6443",
        }
        (tmp_path / "cache" / "run").mkdir(parents=True)
        (tmp_path / "cache" / "run" / "state.json").write_text(json.dumps(state))

        result = CliRunner().invoke(cli_main.cli, ["envtest", "stop"])

        assert result.exit_code == 0
        assert stranger.poll() is None
        assert not (tmp_path / "cache" / "run" / "state.json").exists()
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("command", [["envtest", "kubeconfig"], ["envtest", "start"]])
def test_a_state_left_by_a_plane_that_is_gone_is_not_taken_for_a_running_one(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.setenv("OKT_ENVTEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OKT_ENVTEST_ASSETS", str(tmp_path))  # no binaries there: start fails fast, builds nothing
    gone = subprocess.Popen(["true"])
    gone.wait()
    directory = tmp_path / "okt-envtest-gone"
    state = {"pids": {"etcd": gone.pid}, "directory": str(directory), "kubeconfig": str(directory / "kubeconfig")}
    (tmp_path / "cache" / "run").mkdir(parents=True)
    (tmp_path / "cache" / "run" / "state.json").write_text(json.dumps(state))

    result = CliRunner().invoke(cli_main.cli, command)

    assert str(directory / "kubeconfig") not in result.output
    assert "already running" not in result.output
    assert "no control plane is running" in result.output or command[1] == "start"
    assert not (tmp_path / "cache" / "run" / "state.json").exists()


@pytest.mark.parametrize("command", [["envtest", "kubeconfig"], ["envtest", "start"], ["envtest", "stop"]])
@pytest.mark.parametrize(
    "text",
    ["", '{"pids": {"etcd": 1', "[]", '{"pids": {"etcd": "one"}, "directory": "/nowhere"}', '{"pids": {"etcd": 1}}'],
    ids=["empty", "cut-short", "not-a-mapping", "pid-not-a-number", "no-kubeconfig"],
)
def test_a_state_file_that_cannot_be_read_is_forgotten_in_one_line(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, command: list[str], text: str
) -> None:
    # A state file cut short (the start killed while writing it, a full disk) was a traceback at every command after.
    monkeypatch.setenv("OKT_ENVTEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OKT_ENVTEST_ASSETS", str(tmp_path))  # no binaries there: start fails fast, builds nothing
    state_file = tmp_path / "cache" / "run" / "state.json"
    state_file.parent.mkdir(parents=True)
    state_file.write_text(text)

    result = CliRunner().invoke(cli_main.cli, command)

    assert not isinstance(result.exception, Exception), result.exception
    assert result.output.splitlines()[0] == (
        f"okt: the state of the background control plane, {state_file}, cannot be read: forgotten (a plane it "
        "described may still run: stop its etcd and kube-apiserver by hand)"
    )
    assert "no control plane is running" in result.output or command[1] == "start"
    assert not state_file.exists()
