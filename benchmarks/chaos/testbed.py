"""The testbed: a local control plane with the Memcached CRD, and the operator processes run on it.

Why this exists: the scenarios share one control plane (starting one takes seconds) and run the operator as users
do — ``okt run samples/memcached/operator.py``, a child process that a scenario can ``kill -9``. Each operator role
has a token user of its own, so that the API server's audit log says who wrote; every process started here dies with
the harness (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pathlib
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

import okt
from benchmarks.chaos import checks, operator_log
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, waiting
from okt.testing import process as okt_process
from samples.memcached.tests import harness

LAB_CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would stay Pending anyway (no kubelet) and would only add load."""


class OperatorProcess:
    """``okt run samples/memcached/operator.py`` as a child process in its own process group.

    It dies with the harness; :meth:`kill9` is the crash under test, :meth:`stop` the graceful end (SIGTERM).
    """

    def __init__(self, label: str, process: subprocess.Popen[bytes], probe_url: str, log_path: pathlib.Path) -> None:
        self.label = label
        self.process = process
        self.probe_url = probe_url
        self.log_path = log_path
        self.killed = False
        self.hung = False
        self.started_at = time.time()

    @classmethod
    def start(
        cls,
        label: str,
        kubeconfig: pathlib.Path,
        namespace: str,
        log_path: pathlib.Path,
        args: Sequence[str] = (),
    ) -> OperatorProcess:
        port = envtest.free_port()
        argv = [okt_process.okt_command(), "run", str(harness.OPERATOR_PATH), "--kubeconfig", str(kubeconfig)]
        argv += ["--namespace", namespace, "--metrics-bind-address", f"127.0.0.1:{port}", "--log-format", "json"]
        argv += list(args)
        env = {**os.environ, "MEMCACHED_FINALIZER": "on", "PYTHONUNBUFFERED": "1"}
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=envtest.die_with_parent,  # noqa: PLW1509 - the operator must die with the harness
            )
        return cls(label, process, f"http://127.0.0.1:{port}", log_path)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def ready(self) -> bool:
        """``/readyz`` answers 200 (caches synced; with leader election, leading or a healthy standby)."""
        if not self.alive:
            raise RuntimeError(f"{self.label} exited with status {self.process.returncode}: {self.log_tail()}")
        return okt_process.answers_ready(self.probe_url)

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait until ready; returns the seconds since the start."""
        waiting.wait_for(self.ready, timeout=timeout, interval=0.1, message=f"{self.label} to be ready")
        return time.time() - self.started_at

    def kill9(self) -> bool:
        """SIGKILL the process group; returns whether the process was still running (it did not die by itself)."""
        was_alive = self.alive
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        return was_alive

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (graceful shutdown), SIGKILL after ``timeout`` seconds (:attr:`hung`); returns the exit status."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.hung = True
                self.kill9()
        return self.process.returncode

    @property
    def exit_status(self) -> int | None:
        """The exit status when it ended by itself or by SIGTERM; None while running or when killed here."""
        code = self.process.poll()
        return None if code is None or self.killed else code

    def records(self) -> list[dict[str, Any]]:
        try:
            return operator_log.parse_log(self.log_path.read_text(errors="replace"))
        except OSError:
            return []

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""


class Lab:
    """A control plane with the Memcached CRD and one token user per operator role, shared by the scenarios.

    Args:
        workdir: where kubeconfigs and operator logs go.
        crd: the CRD to install (the sample's ``deploy/crd.yaml`` by default).
        audit_log: keep the API server's audit log (the failover scenario reads it).
        controllers: the kube-controller-manager's controllers (none: no controller manager).
    """

    ROLES = ("operator", "replica-a", "replica-b")

    def __init__(
        self,
        workdir: pathlib.Path,
        *,
        crd: Mapping[str, Any] | None = None,
        audit_log: bool = True,
        controllers: Sequence[str] = LAB_CONTROLLERS,
    ) -> None:
        self.workdir = workdir
        self.users = {
            role: envtest.TokenUser(f"chaos-{role}", secrets.token_hex(16), ("system:masters",)) for role in self.ROLES
        }
        self._crd = dict(crd) if crd is not None else harness.load_crd()
        # Installed before the controller manager starts, so that its garbage collector knows the kind at once.
        self.plane = envtest.ControlPlane(
            controllers=controllers, users=list(self.users.values()), audit_log=audit_log, crds=[self._crd]
        )
        self._client: kube_client.Client | None = None
        self._kind: okt.Kind | None = None
        self._operators: list[OperatorProcess] = []
        self._counter = itertools.count()

    def start(self) -> Lab:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.plane.start()
        try:
            self._client = kube_client.Client.from_kubeconfig(self.plane.kubeconfig, pool_size=32)
            self._kind = harness.apply_crd(self._client, self._crd, timeout=60)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for operator in self._operators:
            with contextlib.suppress(Exception):
                operator.stop(10)
        if self._client is not None:
            self._client.close()
        self.plane.stop()

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def client(self) -> kube_client.Client:
        if self._client is None:
            raise RuntimeError("the lab is not started")
        return self._client

    @property
    def kind(self) -> okt.Kind:
        if self._kind is None:
            raise RuntimeError("the lab is not started")
        return self._kind

    def namespace(self, prefix: str) -> str:
        name = f"chaos-{prefix}-{next(self._counter)}-{secrets.token_hex(2)}"
        self.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
        return name

    def kubeconfig(self, role: str, server: str | None = None) -> pathlib.Path:
        """A kubeconfig for ``role``'s token user; with ``server``, pointing there (a proxy) instead."""
        path = self.plane.kubeconfig_for(self.users[role], self.workdir / f"kubeconfig-{role}")
        if server is not None:
            config = yaml.safe_load(path.read_text())
            config["clusters"][0]["cluster"] = {"server": server}
            path = self.workdir / f"kubeconfig-{role}-{server.rsplit(':', 1)[-1]}"
            path.write_text(yaml.safe_dump(config))
        return path

    def operator(
        self,
        label: str,
        namespace: str,
        *,
        role: str = "operator",
        server: str | None = None,
        args: Sequence[str] = (),
    ) -> OperatorProcess:
        """Start ``okt run`` for the sample (with its finalizer) in ``namespace``; does not wait until it is ready."""
        operator = OperatorProcess.start(
            label, self.kubeconfig(role, server), namespace, self.workdir / f"{label}.log", args
        )
        self._operators.append(operator)
        return operator

    def snapshot(self, namespace: str) -> checks.Snapshot:
        return checks.Snapshot.take(self.client, self.kind, namespace)
