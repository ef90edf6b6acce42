"""Timers keep their period; daemons stop soon after their object is deleted. (Targets: ±20 %, 2 s.)

``python -m benchmarks.timers_daemons --seconds 60 --period 5``: one reconciler with an ``@okt.every`` timer and an
``@okt.daemon`` under an in-process Manager; the intervals between one object's ticks against the period, then the
time from each deletion to its daemon's stop event. A measurement, not a test: writes ``results/timers_daemons.json``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import pathlib
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import okt
from benchmarks import cluster, report
from okt.kube import client as kube_client
from okt.testing import crds, envtest, running, waiting

NAMESPACE = "clockwork"
GROUP = "bench.okt.io"
TOLERANCE = 0.20
STOP_BOUND = 2.0
RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "timers_daemons.json"


class Record:
    """When each object's timer ticked and when its daemon saw its stop event (monotonic seconds)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ticks: dict[str, list[float]] = collections.defaultdict(list)
        self.running: set[str] = set()
        self.stopped: dict[str, float] = {}


def clockwork(period: float, record: Record) -> type[okt.Reconciler]:
    """A reconciler whose timer (every ``period`` seconds) and daemon note what they do in ``record``."""

    class Clockwork(okt.Reconciler):
        api_version = f"{GROUP}/v1"
        kind = "Clockwork"
        plural = "clockworks"

        @okt.every(seconds=period)
        def tick(self, ctx: okt.Context) -> None:
            with record.lock:
                record.ticks[ctx.cr.name].append(time.monotonic())

        @okt.daemon
        def watch_over(self, ctx: okt.DaemonContext) -> None:
            with record.lock:
                record.running.add(ctx.name)
            ctx.stop.wait()
            with record.lock:
                record.stopped[ctx.name] = time.monotonic()
                record.running.discard(ctx.name)

    return Clockwork


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "mean": round(statistics.fmean(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def spread(figures: dict[str, float]) -> str:
    return f"mean {figures['mean']} s  min {figures['min']} s  max {figures['max']} s"


def measure(seconds: float, period: float, objects: int) -> dict[str, Any]:
    record = Record()
    names = [f"c{i}" for i in range(objects)]
    with envtest.ControlPlane() as plane:
        admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
        kind = crds.ensure_crd(admin, crds.schemaless_crd(GROUP, "Clockwork", "clockworks"), timeout=60.0)
        cluster.create_namespace(admin, NAMESPACE)
        operator = kube_client.Client.from_kubeconfig(plane.kubeconfig)
        with running.RunningOperator.start(operator, clockwork(period, record), namespaces=[NAMESPACE]):
            for name in names:
                body = {"apiVersion": kind.api_version, "kind": kind.kind, "spec": {}}
                admin.create({**body, "metadata": {"name": name, "namespace": NAMESPACE}}, kind)
            waiting.wait_for(lambda: all(record.ticks[n] for n in names), timeout=60, message="the first ticks")
            started = time.monotonic()
            time.sleep(seconds)
            with record.lock:
                ticks = {n: [t for t in record.ticks[n] if t >= started] for n in names}
            intervals = [b - a for n in names for a, b in zip(ticks[n], ticks[n][1:], strict=False)]
            waiting.wait_for(lambda: record.running >= set(names), timeout=30, message="every daemon running")
            latencies = []
            for name in names:
                asked = time.monotonic()
                admin.delete(kind, name, NAMESPACE)
                waiting.wait_for(functools.partial(record.stopped.__contains__, name), timeout=30, message=name)
                latencies.append(record.stopped[name] - asked)
        operator.close()
    return {
        "period": period,
        "seconds": seconds,
        "objects": objects,
        "tick_intervals": summary(intervals),
        "ticks_within_20_percent": all(abs(i - period) <= TOLERANCE * period for i in intervals),
        "daemon_stop_latency": summary(latencies),
        "daemons_stopped_within_2_s": max(latencies) <= STOP_BOUND,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long ticks are recorded")
    parser.add_argument("--period", type=float, default=5.0, help="the timer's period, in seconds")
    parser.add_argument("--objects", type=int, default=3, help="objects ticking (and daemons stopped)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    args = parser.parse_args(argv)
    result = measure(args.seconds, args.period, args.objects)
    ticks, stops = result["tick_intervals"], result["daemon_stop_latency"]
    print(f"timer period {args.period} s, {ticks['count']} intervals over {args.seconds:.0f} s")
    print(f"  {spread(ticks)}  within ±20 %: {result['ticks_within_20_percent']}")
    print(f"daemon stop after deletion, {stops['count']} objects")
    print(f"  {spread(stops)}  within 2 s: {result['daemons_stopped_within_2_s']}")
    report.write_json(args.out, result)
    return 0 if result["ticks_within_20_percent"] and result["daemons_stopped_within_2_s"] else 1


if __name__ == "__main__":
    sys.exit(main())
