"""What a user does during a scenario: create, resize and delete custom resources, then wait for the end state.

Why this exists: every scenario drives the operator the way a user would — through the API server, never through the
operator — and waits for the same end state (converged, exactly the expected children, the deleted ones gone); these
helpers do it one way for all of them, and every wait is bounded.
"""

from __future__ import annotations

import concurrent.futures
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from okt import errors
from okt.testing import waiting
from samples.memcached.memcached_operator import api
from tests.reliability import checks, testbed

POLL = 0.5
"""How often a wait polls, in seconds."""


def body(namespace: str, name: str, spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def create_all(
    lab: testbed.Lab, namespace: str, specs: Mapping[str, Any], workers: int = 8
) -> dict[str, dict[str, Any]]:
    """Create custom resources from a thread pool; returns what the API server stored (a refused one is left out)."""

    def create(item: tuple[str, Any]) -> tuple[str, dict[str, Any] | None]:
        name, spec = item
        try:
            return name, lab.client.create(body(namespace, name, spec), lab.kind)
        except (errors.Invalid, errors.BadRequest):
            return name, None

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        stored = dict(pool.map(create, specs.items()))
    return {name: obj for name, obj in stored.items() if obj is not None}


def resize(lab: testbed.Lab, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]) -> int:
    """Change ``spec.size`` of about a tenth of ``names`` (at least one), recording the new sizes; returns how many."""
    if not names:
        return 0
    chosen = rng.sample(list(names), max(1, len(names) // 10))
    for name in chosen:
        size = rng.choice([s for s in range(1, 6) if s != sizes.get(name)])
        lab.client.patch(lab.kind, name, {"spec": {"size": size}}, namespace)
        sizes[name] = size
    return len(chosen)


def settle(
    lab: testbed.Lab, namespace: str, names: Sequence[str], timeout: float, gone: Sequence[str] = ()
) -> tuple[checks.Snapshot, float]:
    """Poll until every named custom resource converged with exactly its children and the ``gone`` ones no longer
    exist (their children collected: no orphan); returns the last snapshot and the time it took (``timeout`` when it
    did not settle — the checks then say what is wrong)."""
    started = time.monotonic()
    last: list[checks.Snapshot] = []

    def done() -> bool:
        snapshot = lab.snapshot(namespace)
        last[:] = [snapshot]
        return (
            checks.converged(snapshot, names).ok
            and checks.children_exact(snapshot, names=names).ok
            and not set(gone) & set(snapshot.by_name)
        )

    converged = until(done, timeout)
    if not last:
        last.append(lab.snapshot(namespace))
    return last[0], (time.monotonic() - started) if converged else timeout


def delete_some(
    lab: testbed.Lab, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]
) -> list[str]:
    """Delete about one in fifty of ``names`` (at least one), forgetting their sizes; returns them."""
    chosen = rng.sample(list(names), min(len(names), max(1, len(names) // 50)))
    for name in chosen:
        lab.client.delete(lab.kind, name, namespace)
        sizes.pop(name, None)
    return chosen


def until(predicate: Callable[[], bool], timeout: float, interval: float = POLL) -> bool:
    try:
        waiting.wait_for(predicate, timeout=timeout, interval=interval)
    except waiting.WaitTimeout:
        return False
    return True
