"""The testbed: a local control plane with the Memcached CRD, the operator processes run on it, and what a user does.

The scenarios share it (a control plane takes seconds to start); each operator role is a token user of its own, so
that the audit log says who wrote.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import pathlib
import random
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.testing import envtest, faults, process, waiting
from samples.memcached.memcached_operator import api
from samples.memcached.tests import harness
from tests.reliability import checks

LAB_CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would stay Pending anyway (no kubelet) and would only add load."""
POLL = 0.5
"""How often a wait polls, in seconds."""


def until(predicate: Callable[[], bool], timeout: float, interval: float = POLL) -> bool:
    """Whether ``predicate`` became true within ``timeout`` seconds."""
    try:
        waiting.wait_for(predicate, timeout=timeout, interval=interval)
    except waiting.WaitTimeout:
        return False
    return True


def names(prefix: str, count: int) -> list[str]:
    """``count`` names of custom resources: ``<prefix>0000``, ``<prefix>0001``..."""
    return [f"{prefix}{i:04d}" for i in range(count)]


def random_sizes(rng: random.Random, names: Iterable[str]) -> dict[str, int]:
    """A random ``spec.size``, 1 to 5, for each of ``names``."""
    return {name: rng.randint(1, 5) for name in names}


class Lab:
    """A control plane with the Memcached CRD (or ``crd``), one token user per operator role, the API server's audit
    log (unless ``audit_log`` is False) and the kube-controller-manager's ``controllers``."""

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
        self.client: kube_client.Client
        self.kind: okt.Kind
        self._operators: list[process.OperatorProcess] = []
        self._counter = itertools.count()

    def __enter__(self) -> Lab:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.plane.start()
        try:
            self.client = kube_client.Client.from_kubeconfig(self.plane.kubeconfig, pool_size=32)
            self.kind = harness.apply_crd(self.client, self._crd, timeout=60)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for operator in self._operators:
            with contextlib.suppress(Exception):
                operator.stop(10)
        if hasattr(self, "client"):
            self.client.close()
        self.plane.stop()

    def namespace(self, prefix: str) -> str:
        name = f"chaos-{prefix}-{next(self._counter)}-{secrets.token_hex(2)}"
        self.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def kubeconfig(self, role: str) -> pathlib.Path:
        """A kubeconfig for ``role``'s token user."""
        return self.plane.kubeconfig_for(self.users[role], self.workdir / f"kubeconfig-{role}")

    def operator(
        self,
        label: str,
        namespace: str,
        *,
        role: str = "operator",
        proxy: faults.FaultProxy | None = None,
        args: Sequence[str] = (),
    ) -> process.OperatorProcess:
        """Start ``okt run`` for the sample (with its finalizer) in ``namespace``, through ``proxy`` if given; does not
        wait until it is ready."""
        kubeconfig = self.kubeconfig(role)
        if proxy is not None:
            kubeconfig = proxy.kubeconfig(kubeconfig, self.workdir / f"kubeconfig-{label}-proxy")
        log = self.workdir / f"{label}.log"
        operator = harness.okt_run(kubeconfig, namespaces=[namespace], log_path=log, args=args, name=label)
        self._operators.append(operator)
        return operator.start()

    def snapshot(self, namespace: str) -> checks.Snapshot:
        return checks.Snapshot.take(self.client, self.kind, namespace)

    # -- what a user does ----------------------------------------------------------------------------------------

    def create_all(self, namespace: str, specs: Mapping[str, Any], workers: int = 8) -> dict[str, dict[str, Any]]:
        """Create custom resources from a thread pool; returns what the API server stored (a refused one is left
        out)."""

        def create(item: tuple[str, Any]) -> tuple[str, dict[str, Any] | None]:
            name, spec = item
            body = {"apiVersion": api.API_VERSION, "kind": api.KIND, "spec": spec}
            try:
                return name, self.client.create({**body, "metadata": {"name": name, "namespace": namespace}}, self.kind)
            except (errors.Invalid, errors.BadRequest):
                return name, None

        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            stored = dict(pool.map(create, specs.items()))
        return {name: obj for name, obj in stored.items() if obj is not None}

    def create_sized(self, namespace: str, names: Sequence[str], sizes: Mapping[str, int]) -> None:
        """Create the named custom resources, each with its ``spec.size`` from ``sizes``."""
        self.create_all(namespace, {name: {"size": sizes[name]} for name in names})

    def resize(self, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]) -> int:
        """Change ``spec.size`` of about a tenth of ``names`` (at least one), recording the new sizes; returns how
        many."""
        if not names:
            return 0
        chosen = rng.sample(list(names), max(1, len(names) // 10))
        for name in chosen:
            size = rng.choice([s for s in range(1, 6) if s != sizes.get(name)])
            self.client.patch(self.kind, name, {"spec": {"size": size}}, namespace)
            sizes[name] = size
        return len(chosen)

    def delete_some(self, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]) -> list[str]:
        """Delete about one in fifty of ``names`` (at least one), forgetting their sizes; returns them."""
        chosen = rng.sample(list(names), min(len(names), max(1, len(names) // 50)))
        for name in chosen:
            self.client.delete(self.kind, name, namespace)
            sizes.pop(name, None)
        return chosen

    def settle(
        self, namespace: str, names: Sequence[str], timeout: float, gone: Sequence[str] = ()
    ) -> tuple[checks.Snapshot, float]:
        """Poll until the named custom resources converged with exactly their children and the ``gone`` ones are gone;
        the last snapshot and the seconds it took (``timeout`` when it did not settle: the checks say why)."""
        started = time.monotonic()
        last = [self.snapshot(namespace)]

        def done() -> bool:
            last[0] = self.snapshot(namespace)
            return (
                checks.converged(last[0], names).ok
                and checks.children_exact(last[0], names=names).ok
                and not set(gone) & set(last[0].by_name)
            )

        converged = until(done, timeout)
        return last[0], (time.monotonic() - started) if converged else timeout
