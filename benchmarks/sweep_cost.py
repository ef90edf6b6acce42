"""The CPU one converged reconcile costs: the memcached sample's restart sweep, in process, with no API server.

``N`` Memcached objects in a :class:`okt.testing.FakeClient`, converged once, listed into a cache, then reconciled
again through the controller's ``process`` (a sweep's path), timed with ``time.process_time``; the second pass must
write nothing. ``--first-pass`` times the pass before it instead, which creates every child (the fake's own work of
each write counted: ``--profile`` shows it apart). Run: ``python -m benchmarks.sweep_cost --n 2000`` (``--profile``:
cProfile's top entries).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time

import okt
from benchmarks import cluster, contenders, manifests
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import logs
from okt.testing import FakeClient

sys.path.insert(0, str(contenders.ROOT / "samples" / "memcached"))

import memcached_operator

MEMCACHED = cluster.MEMCACHED
NAMESPACE = "sweep"


def converged(n: int, finalizer: bool) -> tuple[FakeClient, type[okt.Reconciler]]:
    """A fake API server holding ``n`` Memcached objects and their children, every one reconciled once."""
    cls = memcached_operator.reconciler_class(finalizer=finalizer)
    client = FakeClient(kinds=[MEMCACHED])
    for i in range(n):
        client.put(manifests.custom_resource(f"m{i:05}", NAMESPACE, size=1 + i % 3))
    reconciler = cls()
    for i in range(n):
        run = okt.reconcile(reconciler, client, None, NAMESPACE, f"m{i:05}", kind=MEMCACHED)
        if run.outcome.kind is not okt.OutcomeKind.DONE:
            raise SystemExit(f"m{i:05} did not converge: {run.outcome}")
    return client, cls


def unreconciled(n: int, finalizer: bool) -> tuple[FakeClient, type[okt.Reconciler]]:
    """A fake API server holding ``n`` Memcached objects no reconcile has seen: no child, no status."""
    cls = memcached_operator.reconciler_class(finalizer=finalizer)
    client = FakeClient(kinds=[MEMCACHED])
    for i in range(n):
        client.put(manifests.custom_resource(f"m{i:05}", NAMESPACE, size=1 + i % 3))
    return client, cls


def sweep(
    client: FakeClient, cls: type[okt.Reconciler], n: int, profile: cProfile.Profile | None, *, first: bool = False
) -> float:
    """Reconcile every object once more through a controller over a freshly listed cache: CPU seconds taken.
    ``first``: the objects were never reconciled, and the pass creates their children (it must write)."""
    cache = cache_mod.Cache(client)
    controller = controller_mod.Controller(cls, client, cache, record_events=True)
    controller.watch()
    if not cache.wait_for_sync(30):
        raise SystemExit("the cache did not sync")
    # The fake has no watch: the informers would list again and again, on threads whose CPU the process's counts.
    # Stopped, their stores stay readable, as full as a restart's first lists left them.
    cache.stop()
    before = client.stats.snapshot()
    keys = [(NAMESPACE, f"m{i:05}") for i in range(n)]
    if profile is not None:
        profile.enable()
    started = time.process_time()
    for key in keys:
        outcome = controller.process(key)
        if outcome.kind is not okt.OutcomeKind.DONE:
            raise SystemExit(f"{key} was not converged: {outcome}")
    spent = time.process_time() - started
    if profile is not None:
        profile.disable()
    writes = client.stats.writes(before)
    if first:
        if not writes:
            raise SystemExit("the first pass wrote nothing")
    elif writes:
        raise SystemExit(f"the sweep of converged objects wrote {writes} times: {client.stats.by_verb(before)}")
    return spent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="Memcached objects (default 2000)")
    parser.add_argument("--runs", type=int, default=3, help="timed sweeps, median reported (default 3)")
    parser.add_argument("--finalizer", action="store_true", help="the sample with its finalizer and inventory")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top entries of one sweep")
    parser.add_argument(
        "--first-pass", action="store_true", help="time the pass that creates every child (each run a fresh server)"
    )
    args = parser.parse_args(argv)
    logs.configure("json", stream=io.StringIO())  # as ``okt run`` logs by default (info), into memory

    if args.first_pass:
        first_pass(args)
        return

    client, cls = converged(args.n, args.finalizer)
    sweep(client, cls, args.n, None)  # warm: the first sweep's one-off costs (imports, compiled templates)
    if args.profile:
        profile = cProfile.Profile()
        sweep(client, cls, args.n, profile)
        stats = pstats.Stats(profile).sort_stats("cumulative")
        stats.print_stats(40)
        stats.sort_stats("tottime").print_stats(30)
        return
    spent = [sweep(client, cls, args.n, None) for _ in range(args.runs)]
    per = [s / args.n * 1e6 for s in spent]
    print(
        f"{args.n} converged reconciles, 0 writes: {statistics.median(per):.0f} µs of CPU each "
        f"(median of {args.runs}: {', '.join(f'{p:.0f}' for p in per)})"
    )


def first_pass(args: argparse.Namespace) -> None:
    """The first pass over ``n`` objects, each run over a fresh fake server (after one run to warm)."""
    client, cls = unreconciled(min(args.n, 50), args.finalizer)
    sweep(client, cls, min(args.n, 50), None, first=True)  # warm: imports, compiled templates
    if args.profile:
        profile = cProfile.Profile()
        client, cls = unreconciled(args.n, args.finalizer)
        sweep(client, cls, args.n, profile, first=True)
        stats = pstats.Stats(profile).sort_stats("cumulative")
        stats.print_stats(40)
        stats.sort_stats("tottime").print_stats(30)
        return
    per = []
    for _ in range(args.runs):
        client, cls = unreconciled(args.n, args.finalizer)
        per.append(sweep(client, cls, args.n, None, first=True) / args.n * 1e6)
    print(
        f"{args.n} first reconciles, creating their children: {statistics.median(per):.0f} µs of CPU each "
        f"(median of {args.runs}: {', '.join(f'{p:.0f}' for p in per)})"
    )


if __name__ == "__main__":
    main()
