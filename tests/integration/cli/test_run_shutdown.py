"""``okt run`` stopped by SIGTERM: its exit status says whether the stop was clean, a daemon that ignores its stop
past the grace period included."""

from __future__ import annotations

import pathlib
import signal
import time

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, envtest, wait_for

pytestmark = pytest.mark.integration

OPERATOR = """\
import threading

import okt


class Maps(okt.Reconciler):
    api_version = "v1"
    kind = "ConfigMap"

    @okt.daemon
    def watch(self, ctx):
        if ctx.name == "deaf":
            threading.Event().wait()  # never looks at ctx.stop
        ctx.stop.wait()
"""


@pytest.mark.parametrize(("name", "status"), [("deaf", 1), ("listening", 0)])
def test_a_sigterm_that_leaves_a_daemon_running_past_the_grace_period_exits_non_zero_naming_it(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    tmp_path: pathlib.Path,
    name: str,
    status: int,
) -> None:
    """A supervisor must know a stop was not clean: the daemon still running was ended half-way with the process.
    One that returns when asked to stop leaves a clean stop, status 0."""
    operator = tmp_path / "shutdown_operator.py"
    operator.write_text(OPERATOR)
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}, kinds.CONFIG_MAP
    )
    log = tmp_path / "operator.log"
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=["--grace-period", "1"],
        log_path=log,
    )

    with running as started:
        wait_for(lambda: started.logged_at("daemon started") is not None, timeout=30, message="the daemon to start")
        exit_status = started.stop(signum=signal.SIGTERM)

    assert not started.hung
    assert exit_status == status
    errors = [line for line in log.read_text().splitlines() if line.startswith("Error:")]
    if status:
        assert errors == [
            f"Error: stopped with {namespace}/deaf: watch still running after the 1 s grace period (--grace-period): "
            "they end with the process, wherever they were"
        ]
    else:
        assert errors == []


HOOKS_OPERATOR = """\
import time

import okt


@okt.on_startup
def backend_up(client):
    if "{hang}" == "startup":
        print("waiting for the backend", flush=True)
        time.sleep(20)  # a backend that does not answer, and a call without a timeout


@okt.on_cleanup
def deregister():
    if "{hang}" == "cleanup":
        raise RuntimeError("the registry did not answer")


class Maps(okt.Reconciler):
    api_version = "v1"
    kind = "ConfigMap"
"""


def test_a_sigterm_while_a_start_up_hook_runs_past_the_grace_period_exits_at_once_non_zero_naming_it(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The hook ran on the main thread: okt run waited for it however long it took (the kubelet's SIGKILL, in a pod),
    and then exited 0, although the stop was no cleaner than a clean-up hook's left running."""
    operator = tmp_path / "hooks_operator.py"
    operator.write_text(HOOKS_OPERATOR.replace("{hang}", "startup"))
    log = tmp_path / "operator.log"
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=["--grace-period", "1"],
        log_path=log,
    )

    started = running.start()  # not ready while the hook runs
    try:
        wait_for(lambda: started.logged("waiting for the backend"), timeout=30, message="the start-up hook to run")
        signalled = time.monotonic()
        exit_status = started.stop(signum=signal.SIGTERM)
        stopped_in = time.monotonic() - signalled
    finally:
        started.stop()

    assert exit_status == 1
    assert stopped_in < 10, stopped_in  # the hook sleeps 20 s
    errors = [line for line in log.read_text().splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: stopped with the start-up hook backend_up still running after the 1 s grace period (--grace-period): "
        "they end with the process, wherever they were"
    ]


def test_a_clean_up_hook_that_raises_makes_the_exit_status_1_naming_it(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """A supervisor (a systemd unit, a Job) must know the clean-up did not happen: the hook was logged, the exit 0."""
    operator = tmp_path / "hooks_operator.py"
    operator.write_text(HOOKS_OPERATOR.replace("{hang}", "cleanup"))
    log = tmp_path / "operator.log"
    running = OperatorProcess.okt_run(
        operator, kubeconfig=control_plane.kubeconfig, namespaces=[namespace], log_path=log
    )

    with running as started:
        exit_status = started.stop(signum=signal.SIGTERM)

    assert exit_status == 1
    errors = [line for line in log.read_text().splitlines() if line.startswith("Error:")]
    assert errors == ["Error: the clean-up hook deregister failed: RuntimeError: the registry did not answer"]
