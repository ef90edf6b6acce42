"""What the harness itself does on the cluster: the namespace, the N custom resources and their spec changes, as the
admin user (never counted for a contender), from a thread pool of the same size for every contender."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks import manifests
from okt.kube import client as kube_client
from okt.kube import kinds

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


def create_namespace(client: kube_client.Client, name: str) -> None:
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)


def cr_names(n: int) -> list[str]:
    return [f"memcached-{i:05d}" for i in range(n)]


def mixed_sizes(n: int, smallest: int = 1, largest: int = 3, shift: int = 0) -> list[int]:
    """A realistic mix: sizes from ``smallest`` to ``largest`` in turn (``shift`` adds to every size)."""
    span = largest - smallest + 1
    return [smallest + i % span + shift for i in range(n)]


def expected_sizes(n: int, size: int | Sequence[int]) -> dict[str, int]:
    """The replicas each custom resource's Deployment must ask for, by name (``size``: one for all, or one each)."""
    return dict(zip(cr_names(n), [size] * n if isinstance(size, int) else size, strict=True))


def describe_sizes(size: int | Sequence[int]) -> str:
    return str(size) if isinstance(size, int) else f"{min(size, default=0)}-{max(size, default=0)}"


def create_custom_resources(
    client: kube_client.Client, namespace: str, n: int, size: int | Sequence[int], workers: int
) -> float:
    """Create ``n`` Memcached objects; returns the wall-clock time just before the first create."""
    return _each(
        n, size, workers, lambda name, s: client.create(manifests.custom_resource(name, namespace, s), MEMCACHED)
    )


def patch_sizes(client: kube_client.Client, namespace: str, n: int, size: int | Sequence[int], workers: int) -> float:
    """Set ``spec.size`` on every Memcached; returns the wall-clock time just before the first patch."""
    return _each(n, size, workers, lambda name, s: client.patch(MEMCACHED, name, {"spec": {"size": s}}, namespace))


def _each(n: int, size: int | Sequence[int], workers: int, call: Callable[[str, int], Any]) -> float:
    """``call(name, size)`` for every object on a pool of ``workers`` threads; the first failure is raised once all
    are done. Returns the wall-clock time just before the first call."""
    pairs = list(expected_sizes(n, size).items())
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="harness") as pool:
        futures = [pool.submit(call, name, s) for name, s in pairs]
        for future in futures:
            future.result()
    return started
