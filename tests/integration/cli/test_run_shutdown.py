"""``okt run`` stopped by SIGTERM: its exit status says whether the stop was clean, a daemon that ignores its stop
past the grace period included."""

from __future__ import annotations

import pathlib
import signal

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
