"""The testbed: a local control plane with the Memcached CRD, and the operator processes run on it.

Why this exists: the scenarios share one control plane (starting one takes seconds) and run the operator as users
do — ``okt run samples/memcached/main.py``, a child process (:class:`okt.testing.OperatorProcess`) that a
scenario can ``kill -9``. Each operator role has a token user of its own, so that the API server's audit log says who
wrote; every process started here dies with the harness (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import itertools
import pathlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, process
from samples.memcached.tests import harness
from tests.reliability import checks

LAB_CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would stay Pending anyway (no kubelet) and would only add load."""


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
        self._operators: list[process.OperatorProcess] = []
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
    ) -> process.OperatorProcess:
        """Start ``okt run`` for the sample (with its finalizer) in ``namespace``; does not wait until it is ready."""
        operator = harness.okt_run(
            self.kubeconfig(role, server),
            namespaces=[namespace],
            log_path=self.workdir / f"{label}.log",
            args=args,
            name=label,
        )
        self._operators.append(operator)
        return operator.start()

    def snapshot(self, namespace: str) -> checks.Snapshot:
        return checks.Snapshot.take(self.client, self.kind, namespace)
