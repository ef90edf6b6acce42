"""``okt run --leader-elect`` deposed: a replica that could not renew its lease ends its daemons with the process before
another replica may take the lease, never beside the daemons that replica starts."""

from __future__ import annotations

import http.server
import pathlib
import threading

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, envtest, faults, wait_for

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
        time.sleep(12)  # what it does before it returns: more than the lease leaves a deposed leader
        say("returned")
"""


class LeaseHangingProxy(faults.FaultProxy):
    """Forwards every request; while :attr:`hang` is set, requests for a lease get no answer (the API server out of
    reach for the lease's renewals only)."""

    def __init__(self, upstream: str, ca_file: str) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.hang = threading.Event()
        self.done = threading.Event()

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                if not ("/leases/" in self.path and proxy.hang.is_set()):
                    super()._relay()
                    return
                proxy.done.wait(60)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler


def test_a_deposed_leader_ends_its_daemons_before_another_replica_may_start_them(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The deposed leader waited up to its grace period (30 s) for its daemons, one running 12 s after its stop was
    asked, while the replica that took the lease 5 s after the deposition ran its own daemon of the same object."""
    journal = tmp_path / "journal.txt"
    operator = tmp_path / "lease_operator.py"
    operator.write_text(OPERATOR.format(journal=str(journal)))
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}}, kinds.CONFIG_MAP
    )

    def lines() -> list[tuple[str, str]]:
        text = journal.read_text() if journal.exists() else ""
        return [(pid, what) for pid, what in (line.split(" ", 1) for line in text.splitlines())]

    def replica(name: str, kubeconfig: pathlib.Path) -> OperatorProcess:
        return OperatorProcess.okt_run(
            operator,
            kubeconfig=kubeconfig,
            namespaces=[namespace],
            args=["--leader-elect", "--lease-namespace", namespace],
            log_path=tmp_path / f"{name}.log",
        )

    proxy = LeaseHangingProxy(control_plane.url, str(control_plane.ca_file))
    with proxy:
        through = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "proxied")
        with replica("deposed", through) as deposed:
            wait_for(lambda: "started" in dict(lines()).values(), timeout=60, message="the leader's daemon")
            with replica("next", pathlib.Path(control_plane.kubeconfig)) as following:
                proxy.hang.set()  # the leader's renewals go unanswered: it is deposed at its renew deadline
                wait_for(
                    lambda: (str(following.pid), "started") in lines(),
                    timeout=60,
                    message="the next leader's daemon",
                )
                wait_for(lambda: not deposed.alive, timeout=60, message="the deposed leader to exit")
                status = deposed.returncode
            proxy.done.set()

    said = lines()
    taken = said.index((str(following.pid), "started"))
    assert said[0] == (str(deposed.pid), "started")
    assert (str(deposed.pid), "asked to stop") in said
    assert [line for line in said[taken:] if line[0] == str(deposed.pid)] == []
    assert status == 1
