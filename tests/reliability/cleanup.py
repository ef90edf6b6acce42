"""The ``deletions`` scenario: each cleanup behind the sample's finalizer takes effect exactly once.

A finalizer's promise is about counts, which a child process cannot report: the sample's reconciler runs in this
process, its cleanup wrapped in a :class:`CleanupLedger` that counts the calls and fails chosen ones on purpose.
"""

from __future__ import annotations

import collections
import concurrent.futures
import random
import threading
import time
from collections.abc import Sequence

import okt
from okt import testing
from okt.kube import client as kube_client
from samples.memcached.memcached_operator import FINALIZER, MemcachedReconciler, inventory
from tests.reliability import checks, logs, outcome, profiles, testbed


class CleanupLedger:
    """Counts, per custom resource, the cleanups run and those that took effect; makes chosen ones fail."""

    def __init__(self, failing: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self.calls: collections.Counter[str] = collections.Counter()
        self.effective: collections.Counter[str] = collections.Counter()
        self._failing = set(failing)

    def heal(self) -> None:
        with self._lock:
            self._failing.clear()

    def cleanup(self, ctx: okt.Context) -> None:
        """The sample's cleanup (remove the inventory entry), counted; raises for a custom resource set to fail."""
        name = ctx.cr.name
        with self._lock:
            self.calls[name] += 1
            failing = name in self._failing
        if failing:
            raise okt.TemporaryError(f"injected cleanup failure for {name}")
        operation = inventory.forget(ctx)
        if operation is okt.Operation.UPDATED:
            with self._lock:
                self.effective[name] += 1
        ctx.results.add(operation, inventory.describe(ctx.cr.namespace))


@outcome.scenario("deletions", "deletions clean up exactly once")
def deletions(lab: testbed.Lab, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """Delete custom resources; count cleanups; a failing cleanup keeps the finalizer until it succeeds."""
    namespace = lab.namespace("delete")
    names, failing = testbed.names("d", sizes.deletions), testbed.names("fail", sizes.failing_deletions)
    ledger = CleanupLedger(failing)

    class LedgerMemcachedReconciler(MemcachedReconciler):
        """The sample's reconciler whose cleanup goes through ``ledger``."""

        def cleanup(self, ctx: okt.Context) -> None:
            ledger.cleanup(ctx)

    client = kube_client.Client.from_kubeconfig(lab.kubeconfig("operator"))
    running = testing.RunningOperator.start(client, LedgerMemcachedReconciler, namespaces=[namespace])
    try:
        everyone = names + failing
        lab.create_all(namespace, {n: {"size": rng.randint(1, 3)} for n in everyone})
        before, _ = lab.settle(namespace, everyone, sizes.timeout(len(everyone)))
        recorded = checks.inventory_matches(before).labelled("before the deletions")
        started = time.monotonic()
        deleted_at = time.time()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: lab.client.delete(lab.kind, n, namespace), everyone))
        gone = testbed.until(lambda: not set(names) & set(lab.snapshot(namespace).by_name), sizes.timeout(len(names)))
        took = time.monotonic() - started
        time.sleep(max(deleted_at + sizes.failing_window - time.time(), 0.0))
        held = lab.snapshot(namespace)
        attempts = {name: ledger.calls[name] for name in failing}
        window = time.time() - deleted_at
        ledger.heal()
        released = testbed.until(lambda: not lab.snapshot(namespace).crs, sizes.timeout(len(failing)))
        after = lab.snapshot(namespace)
    finally:
        running.stop()
        client.close()
    found = [
        recorded,
        checks.Check("deletions complete", () if gone else tuple(sorted(set(names) & set(held.by_name)))),
        checks.finalizer_kept(held, failing, FINALIZER),
        checks.Check(
            "failing cleanups are retried", tuple(f"{n}: {c} attempt(s)" for n, c in attempts.items() if c < 2)
        ),
        # Exponential backoff front-loads its attempts: a shorter window keeps the same bound.
        logs.backoff_bounded(attempts, profiles.BACKOFF_LIMIT, window),
        checks.Check("released once cleanup works", () if released else tuple(sorted(after.by_name))),
        checks.cleanup_exactly_once(ledger.effective, everyone),
        checks.inventory_matches(after, everyone).labelled("after the deletions"),
    ]
    figures = {
        "deletions": len(names),
        "failing_cleanups": len(failing),
        "delete_seconds": round(took, 1),
        "cleanup_calls": sum(ledger.calls.values()),
        "cleanups_effective": sum(ledger.effective.values()),
        "failing_attempts_max": max(attempts.values(), default=0),
        "failing_window_seconds": round(window, 1),
    }
    return found, figures
