"""What the harness itself does on the cluster: namespaces, the N custom resources, and the polls.

Why this exists: the harness's own requests must be the same for every contender and must never be counted for one.
They go through an admin :class:`okt.kube.client.Client` (the control plane's admin token user, which no contender
uses), from a thread pool of the same size for every contender.

Guarantees:

* every wait is bounded and raises :class:`BenchTimeout` with what was last seen (how many objects were ready, which
  children were missing);
* :class:`Convergence` judges from list calls (one list of the custom resources, plus one list per child kind once
  they are all ready); the harness asks it only to confirm what :mod:`benchmarks.watched` saw, since lists of
  N objects every :data:`POLL_INTERVAL` seconds would load the API server being measured;
* a child "exists" when an object of that kind carries a controller ownerReference to the custom resource's uid —
  the judgement does not depend on how a contender names its children.
"""

from __future__ import annotations

import concurrent.futures
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks import manifests
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds

POLL_INTERVAL = 0.2
MEMCACHED = kinds.Kind(manifests.API_VERSION, manifests.KIND, manifests.PLURAL)
CHILD_KINDS = (
    kinds.BUILTIN[("v1", "ConfigMap")],
    kinds.BUILTIN[("v1", "Service")],
    kinds.BUILTIN[("apps/v1", "Deployment")],
)


class BenchError(RuntimeError):
    """A benchmark step failed; the message says which contender, which phase and what was seen."""


class BenchTimeout(BenchError):
    """A bounded wait ran out."""


def poll(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    interval: float = POLL_INTERVAL,
    detail: Callable[[], str] | None = None,
) -> float:
    """Call ``predicate`` every ``interval`` seconds until it is true; returns the wall-clock time it first was."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        started = time.monotonic()
        try:
            if predicate():
                return time.time()
        except errors.OktError as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            seen = detail() if detail is not None else ""
            error = f" (last error: {last_error})" if last_error is not None else ""
            raise BenchTimeout(f"timed out after {timeout:.0f}s waiting for {what}{'; ' + seen if seen else ''}{error}")
        time.sleep(max(0.0, interval - (time.monotonic() - started)))


def create_namespace(client: kube_client.Client, name: str) -> None:
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)


def cr_names(n: int) -> list[str]:
    return [f"memcached-{i:05d}" for i in range(n)]


def run_all(workers: int, calls: Sequence[Callable[[], Any]]) -> None:
    """Run ``calls`` on a pool of ``workers`` threads; the first failure is raised once all are done."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="harness") as pool:
        futures = [pool.submit(call) for call in calls]
        for future in futures:
            future.result()


def sizes_of(n: int, size: int | Sequence[int]) -> list[int]:
    """The ``spec.size`` of each of the ``n`` objects: one size for all, or one per object."""
    return [size] * n if isinstance(size, int) else list(size)


def mixed_sizes(n: int, smallest: int = 1, largest: int = 3, shift: int = 0) -> list[int]:
    """A realistic mix: sizes from ``smallest`` to ``largest`` in turn (``shift`` adds to every size)."""
    span = largest - smallest + 1
    return [smallest + i % span + shift for i in range(n)]


def create_custom_resources(
    client: kube_client.Client, namespace: str, n: int, size: int | Sequence[int], workers: int
) -> float:
    """Create ``n`` Memcached objects from a thread pool; returns the wall-clock time just before the first create."""
    pairs = zip(cr_names(n), sizes_of(n, size), strict=True)
    bodies = [manifests.custom_resource(name, namespace, s) for name, s in pairs]
    started = time.time()
    run_all(workers, [functools.partial(client.create, body, MEMCACHED) for body in bodies])
    return started


def patch_sizes(client: kube_client.Client, namespace: str, n: int, size: int | Sequence[int], workers: int) -> float:
    """Set ``spec.size`` on every Memcached; returns the wall-clock time just before the first patch."""
    started = time.time()
    run_all(
        workers,
        [
            functools.partial(client.patch, MEMCACHED, name, {"spec": {"size": s}}, namespace)
            for name, s in zip(cr_names(n), sizes_of(n, size), strict=True)
        ],
    )
    return started


def expected_sizes(n: int, size: int | Sequence[int]) -> dict[str, int]:
    """The replicas each custom resource's Deployment must ask for, by name."""
    return dict(zip(cr_names(n), sizes_of(n, size), strict=True))


def describe_sizes(size: int | Sequence[int]) -> str:
    return str(size) if isinstance(size, int) else f"{min(size, default=0)}-{max(size, default=0)}"


class Convergence:
    """The harness's view of one namespace: how many custom resources are ready, and whose children exist."""

    def __init__(self, client: kube_client.Client, namespace: str, n: int) -> None:
        self.client = client
        self.namespace = namespace
        self.n = n
        self.last = "nothing polled yet"

    def _owned_by(self, kind: kinds.Kind) -> dict[str, dict[str, Any]]:
        items, _ = self.client.list(kind, self.namespace)
        owned: dict[str, dict[str, Any]] = {}
        for item in items:
            for ref in item["metadata"].get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == manifests.KIND:
                    owned[str(ref["uid"])] = item
        return owned

    def converged(self) -> bool:
        """Every custom resource is Ready=True and has its ConfigMap, Service and Deployment."""
        crs, _ = self.client.list(MEMCACHED, self.namespace)
        ready = [cr for cr in crs if manifests.is_ready(cr)]
        self.last = f"{len(ready)}/{self.n} Ready"
        if len(crs) < self.n or len(ready) < len(crs):
            return False
        uids = {str(cr["metadata"]["uid"]) for cr in crs}
        missing = {kind.kind: len(uids - set(self._owned_by(kind))) for kind in CHILD_KINDS}
        self.last += ", children missing: " + ", ".join(f"{k} {v}" for k, v in missing.items())
        return not any(missing.values())

    def replicas_are(self, size: int | Sequence[int]) -> bool:
        """Every custom resource's Deployment asks for ``size`` replicas (or its own size of the list, by name)."""
        crs, _ = self.client.list(MEMCACHED, self.namespace)
        deployments = self._owned_by(CHILD_KINDS[2])
        # One size for all holds whatever the objects are named; a list of sizes goes by the harness's names.
        wanted = None if isinstance(size, int) else expected_sizes(self.n, size)
        done = sum(
            1
            for cr in crs
            if (deployments.get(str(cr["metadata"]["uid"])) or {}).get("spec", {}).get("replicas")
            == (size if wanted is None else wanted.get(cr["metadata"]["name"]))
        )
        self.last = f"{done}/{self.n} Deployments at {describe_sizes(size)} replicas"
        return len(crs) >= self.n and done == len(crs)
