"""``okt run --leader-elect`` handing its daemons over: a leader stopped by SIGTERM lets its daemons return before it
releases the lease, and one that could not renew its lease — before or while a SIGTERM's shutdown waits for them —
ends them with the process before another replica may take it; either way they never run beside the daemons the next
leader starts. One still running after the grace period is not handed over by a release: the lease runs out after the
process ended."""

from __future__ import annotations

import os
import pathlib
import signal
from collections.abc import Callable

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, envtest, wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration

OPERATOR = """\
import os
import time

import okt

JOURNAL = {journal!r}


def say(what):
    with open(JOURNAL, "a") as journal:
        journal.write(f"{{os.getpid()}} {{what}}\\n")


class Maps(okt.Reconciler):
    api_version = "v1"
    kind = "ConfigMap"

    @okt.daemon
    def watch(self, ctx):
        say("started")
        ctx.stop.wait()
        say("asked to stop")
        time.sleep({linger})  # what it does before it returns: more than the lease leaves a deposed leader
        say("returned")
"""


class Journal:
    """What the daemons of every replica said, in the order they said it: ``(pid, what)``."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[str, str]]:
        text = self.path.read_text() if self.path.exists() else ""
        return [(pid, what) for pid, what in (line.split(" ", 1) for line in text.splitlines())]

    def said(self, replica: OperatorProcess, what: str) -> bool:
        return (str(replica.pid), what) in self.lines()

    def after(self, replica: OperatorProcess, what: str) -> list[tuple[str, str]]:
        """What was said after ``replica`` said ``what``."""
        lines = self.lines()
        return lines[lines.index((str(replica.pid), what)) + 1 :]


def setup(
    kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path, linger: float = 12
) -> tuple[Journal, Callable[..., OperatorProcess]]:
    """The journal and a maker of replicas whose daemon takes ``linger`` seconds to return once asked to stop."""
    journal = Journal(tmp_path / "journal.txt")
    operator = tmp_path / "handover_operator.py"
    operator.write_text(OPERATOR.format(journal=str(journal.path), linger=linger))
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}}, kinds.CONFIG_MAP
    )

    def replica(name: str, kubeconfig: str | pathlib.Path, *args: str) -> OperatorProcess:
        return OperatorProcess.okt_run(
            operator,
            kubeconfig=kubeconfig,
            namespaces=[namespace],
            args=["--leader-elect", "--lease-namespace", namespace, *args],
            log_path=tmp_path / f"{name}.log",
        )

    return journal, replica


def test_a_leader_stopped_by_sigterm_lets_its_daemons_return_before_the_next_leader_starts_them(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Its daemon, 12 s returning once asked to stop, is waited for (the grace period is 30 s) before the lease is
    released: the next leader starts its own afterwards, and the stop is clean."""
    journal, replica = setup(kube, namespace, tmp_path)
    with replica("first", control_plane.kubeconfig) as first:
        wait_for(lambda: journal.said(first, "started"), timeout=60, message="the leader's daemon")
        with replica("next", control_plane.kubeconfig) as following:
            status = first.stop(signum=signal.SIGTERM)
            wait_for(lambda: journal.said(following, "started"), timeout=60, message="the next leader's daemon")

    assert status == 0
    assert journal.lines()[:3] == [(str(first.pid), what) for what in ("started", "asked to stop", "returned")]
    assert [line for line in journal.after(following, "started") if line[0] == str(first.pid)] == []


def test_a_deposed_leader_ends_its_daemons_before_another_replica_may_start_them(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The deposed leader waited up to its grace period (30 s) for its daemons, one running 12 s after its stop was
    asked, while the replica that took the lease 5 s after the deposition ran its own daemon of the same object."""
    journal, replica = setup(kube, namespace, tmp_path)
    proxy = shared.LeaseHangingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied")
        with replica("deposed", through) as deposed:
            wait_for(lambda: journal.said(deposed, "started"), timeout=60, message="the leader's daemon")
            with replica("next", control_plane.kubeconfig) as following:
                proxy.hang.set()  # the leader's renewals go unanswered: it is deposed at its renew deadline
                wait_for(lambda: journal.said(following, "started"), timeout=60, message="the next leader's daemon")
                wait_for(lambda: not deposed.alive, timeout=60, message="the deposed leader to exit")
                status = deposed.returncode
            proxy.done.set()

    assert status == 1
    assert journal.lines()[:2] == [(str(deposed.pid), what) for what in ("started", "asked to stop")]
    assert [line for line in journal.after(following, "started") if line[0] == str(deposed.pid)] == []


def test_a_leader_that_loses_its_lease_while_sigterm_waits_for_its_daemons_ends_them_before_another_may_start_them(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Stopped by SIGTERM, the leader waits for its daemon (25 s returning, within the 30 s grace period); its renewals
    go unanswered meanwhile: deposed at its renew deadline, it waits no longer than the lost-lease path does and exits
    with its status. It waited its whole grace period, and its daemon returned after the next leader's had started."""
    journal, replica = setup(kube, namespace, tmp_path, linger=25)
    proxy = shared.LeaseHangingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied")
        with replica("stopping", through) as stopping:
            wait_for(lambda: journal.said(stopping, "started"), timeout=60, message="the leader's daemon")
            with replica("next", control_plane.kubeconfig) as following:
                os.kill(stopping.pid, signal.SIGTERM)
                wait_for(lambda: journal.said(stopping, "asked to stop"), timeout=30, message="the shutdown")
                proxy.hang.set()  # the shutdown waits for the daemon, and the leader's renewals go unanswered
                wait_for(lambda: journal.said(following, "started"), timeout=60, message="the next leader's daemon")
                wait_for(lambda: not stopping.alive, timeout=60, message="the stopping leader to exit")
                status = stopping.returncode
            proxy.done.set()

    assert status == 1
    assert journal.lines()[:2] == [(str(stopping.pid), what) for what in ("started", "asked to stop")]
    assert [line for line in journal.after(following, "started") if line[0] == str(stopping.pid)] == []
