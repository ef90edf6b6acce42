"""Two phases of the scale benchmark that only okt has: fresh events first, and the warm standby's failover.

Both are claims about time at scale, measured on a fresh control plane after the contender's usual measurement, with
the targets beside the figures; what each phase does is in "The scale run" of ``benchmarks/README.md``.
"""

from __future__ import annotations

import dataclasses
import inspect
import secrets
import time
from typing import Any

from prometheus_client import parser as prom_parser

from benchmarks import cluster, contenders, manifests, run
from okt.runtime import manager
from okt.testing import audit, conditions, envtest, process

FRESH_DELAY = 1.0
"""Seconds after the restarted operator started reconciling that the fresh object is created."""
FRESH_TARGET = 3.0
"""Seconds within which the fresh object must be Ready."""
FAILOVER_SLACK = 2.0
"""Seconds above the lease duration within which the standby must have reconciled a change made at the kill."""
LEASE_DURATION = float(inspect.signature(manager.Manager).parameters["lease_duration"].default)
"""The lease duration okt runs with (``okt run`` keeps the Manager's default)."""
RETRY_PERIOD = float(inspect.signature(manager.Manager).parameters["retry_period"].default)
READY_LINE = contenders.OKT_READY
STANDBY_LINE = "caches synced, competing for the lease"
LEADER_LINE = "became leader"
METRICS_FLAG = "--metrics-bind-address"
FRESH_NAME = "memcached-fresh"
LEASES = "leases"
APPLICABLE = frozenset({contenders.OKT.key, contenders.OKT_MERGE.key, contenders.OKT_FINAL.key})
NOT_APPLICABLE = {
    "fresh_first": "not applicable: no priority lanes (every event waits in one queue)",
    "failover": "not applicable: no leader election",
}


def launch_elected(bench: run.Bench, m: run.Measurement, tag: str) -> process.OperatorProcess:
    """``m``'s okt contender as a replica: ``--leader-elect``, and ``/metrics`` on a free local port (its probe URL,
    so that it can be scraped)."""
    address = f"127.0.0.1:{envtest.free_port()}"
    command = m.contender.command.replace(f"{METRICS_FLAG} 0", f"{METRICS_FLAG} {address}") + " --leader-elect"
    proc = bench.launch(dataclasses.replace(m, contender=dataclasses.replace(m.contender, command=command)), tag)
    proc.probe_url = f"http://{address}"
    return proc


def scrape(proc: process.OperatorProcess) -> dict[str, Any]:
    """The operator's queue and sync progress now, from its ``/metrics``: sweep and live keys waiting, workers busy,
    reconciles done since it started, objects cached by kind."""
    sums = {"sweep": 0.0, "live": 0.0, "active_workers": 0.0, "reconciles": 0.0}
    cached: dict[str, float] = {}
    summed = {"okt_active_workers": "active_workers", "okt_reconcile_total": "reconciles"}
    for family in prom_parser.text_string_to_metric_families(proc.metrics()):
        for sample in family.samples:
            if sample.name == "okt_workqueue_depth_by_priority" and sample.labels.get("priority") in sums:
                sums[sample.labels["priority"]] += sample.value
            elif sample.name in summed:
                sums[summed[sample.name]] += sample.value
            elif sample.name == "okt_cache_objects":
                cached[sample.labels.get("kind", "")] = sample.value
    return {
        "at": round(time.time(), 3),
        "sweep_keys_waiting": int(sums["sweep"]),
        "live_keys_waiting": int(sums["live"]),
        "active_workers": int(sums["active_workers"]),
        "reconciles": int(sums["reconciles"]),
        "cached_objects": {kind: int(n) for kind, n in sorted(cached.items())},
    }


def wait_logged(proc: process.OperatorProcess, event: str, timeout: float) -> float:
    """Wait until ``proc`` logged ``event``; returns the record's time."""

    def logged_at() -> float | None:
        return proc.logged_at(event) if proc.logged(event) else None

    return run.until(logged_at, timeout, f"{proc.name} to log {event!r}", interval=0.1, detail=proc.tail, alive=proc)


def wait_settled(proc: process.OperatorProcess, timeout: float) -> dict[str, Any]:
    """Wait until ``proc``'s queue is empty and no worker is busy, on two scrapes a second apart (not
    :meth:`benchmarks.run.Bench.wait_idle`: a leader renews its Lease every couple of seconds, never quiet for long)."""
    last: list[dict[str, Any]] = []

    def settled() -> bool:
        now = scrape(proc)
        idle = now["sweep_keys_waiting"] == now["live_keys_waiting"] == now["active_workers"] == 0
        calm = idle and bool(last) and last[-1]["reconciles"] == now["reconciles"]
        last.append(now)
        return calm

    what = f"{proc.name} to finish its sweep"
    run.until(settled, timeout, what, interval=1.0, detail=lambda: str(last[-1:]), alive=proc)
    return last[-1]


def ready_at(bench: run.Bench, namespace: str, name: str, generation: int) -> bool:
    """Whether the Memcached ``name`` is ``Ready=True`` having observed ``generation``."""
    cr = bench.client.get(cluster.MEMCACHED, name, namespace)
    ready = conditions.condition(cr, "Ready") or {}
    observed = ready.get("observedGeneration", (cr.get("status") or {}).get("observedGeneration")) or 0
    return ready.get("status") == "True" and int(observed) >= generation


def judged(seconds: float, target: float) -> dict[str, Any]:
    return {"seconds": round(seconds, 3), "target_seconds": target, "met": seconds <= target}


# -- the phases --------------------------------------------------------------------------------------------------------


def fresh_first(bench: run.Bench, m: run.Measurement) -> tuple[dict[str, Any], process.OperatorProcess]:
    """Restart over the converged objects, create a fresh Memcached :data:`FRESH_DELAY` s after the restarted
    operator began reconciling, and time it to Ready; returns the figures and the restarted process (the leader)."""
    s = bench.settings
    leader = launch_elected(bench, m, "fresh-first")
    reconciling_at = wait_logged(leader, READY_LINE, s.timeout(90, 0.02))
    bench.sleep_alive(leader, reconciling_at + FRESH_DELAY, "the fresh-first delay")
    at_create = scrape(leader)
    created_at = time.time()
    bench.client.create(manifests.custom_resource(FRESH_NAME, m.namespace, 1), cluster.MEMCACHED)
    fresh_ready_at = run.poll(
        lambda: ready_at(bench, m.namespace, FRESH_NAME, 1),
        s.timeout(60, 0.05),
        f"{m.contender.key}'s fresh {FRESH_NAME} to be Ready",
    )
    at_ready = scrape(leader)
    settled = wait_settled(leader, s.timeout(60, 0.3))
    sweeping = at_ready["sweep_keys_waiting"] > 0
    run.say(
        f"{m.tag} fresh CR Ready {fresh_ready_at - created_at:.2f}s after its creation (target {FRESH_TARGET:.0f}s); "
        f"sweep keys still waiting then: {at_ready['sweep_keys_waiting']}"
    )
    figures = judged(fresh_ready_at - created_at, FRESH_TARGET) | {
        "applicable": True,
        "created_after_reconciling_seconds": round(created_at - reconciling_at, 3),
        "restart_to_reconciling_seconds": round(reconciling_at - leader.started_at, 3),
        "sweep_running_at_ready": sweeping,
        "evidence": (
            f"okt_workqueue_depth_by_priority{{priority=sweep}} = {at_ready['sweep_keys_waiting']} when scraped "
            f"{at_ready['at'] - fresh_ready_at:.2f}s after the fresh object was seen Ready; "
            f"{at_ready['reconciles']} reconciles done by then, {settled['reconciles']} once the queue was empty"
        ),
        "at_create": at_create,
        "at_ready": at_ready,
        "settled": settled,
    }
    return figures, leader


def failover(
    bench: run.Bench, m: run.Measurement, leader: process.OperatorProcess, standby_user: str
) -> dict[str, Any]:
    """A warm standby beside ``leader``; ``leader`` killed with SIGKILL, a spec changed at once; the time until the
    standby reconciled it, with the audit log's word on who wrote when."""
    s = bench.settings
    standby = launch_elected(bench, dataclasses.replace(m, user=standby_user), "standby")
    warm_at = wait_logged(standby, STANDBY_LINE, s.timeout(90, 0.02))
    # A standby in its steady state: it has seen the leader renew the Lease at least once.
    bench.sleep_alive(standby, time.time() + RETRY_PERIOD * 2, "the standby's warm-up")
    run.check_alive(leader, "the standby's warm-up")
    name = cluster.cr_names(s.n)[0]
    size = int((bench.client.get(cluster.MEMCACHED, name, m.namespace).get("spec") or {}).get("size") or 1)
    killed_at = time.time()
    leader.kill()
    changed = bench.client.patch(cluster.MEMCACHED, name, {"spec": {"size": size + 1}}, m.namespace)
    changed_at = time.time()
    generation = int(changed["metadata"]["generation"])
    reconciled_at = run.poll(
        lambda: ready_at(bench, m.namespace, name, generation),
        LEASE_DURATION + s.timeout(60, 0.01),
        f"the standby to reconcile {name} generation {generation}",
        detail=standby.tail,
    )
    led_at = wait_logged(standby, LEADER_LINE, 10.0)
    bench.audit.settle(time.time())
    after_kill = bench.audit.counts(m.user, killed_at)
    # Taking the Lease is the standby's one write before it leads; any other would be a second writer.
    before_leading = [r for r in bench.audit.requests(standby_user, standby.started_at, led_at) if r.resource != LEASES]
    target = LEASE_DURATION + FAILOVER_SLACK
    run.say(
        f"{m.tag} failover: the standby reconciled {reconciled_at - killed_at:.2f}s after the kill "
        f"(target {target:.0f}s), led after {led_at - killed_at:.2f}s; the killed leader's requests after the kill: "
        f"{after_kill.writes + after_kill.reads}"
    )
    return judged(reconciled_at - killed_at, target) | {
        "applicable": True,
        "lease_duration_seconds": LEASE_DURATION,
        "standby_warm_after_seconds": round(warm_at - standby.started_at, 3),
        "became_leader_after_kill_seconds": round(led_at - killed_at, 3),
        "change_after_kill_seconds": round(changed_at - killed_at, 3),
        "generation": generation,
        "killed_leader_requests_after_kill": after_kill.writes + after_kill.reads,
        "standby_writes_before_leading": sum(r.is_write for r in before_leading),
        "standby_requests_before_leading": audit.Counts.of(before_leading).to_json(),
    }


def measure(bench: run.Bench, contender: contenders.Contender, converged: bool) -> dict[str, Any]:
    """Both phases for an okt contender (one of :data:`APPLICABLE`) that ``converged``, on a fresh control plane; a
    failure is recorded with its error. The others are recorded as not applicable, or skipped."""
    if contender.key not in APPLICABLE:
        return {phase: {"applicable": False, "why": why} for phase, why in NOT_APPLICABLE.items()} | {
            "contender": contender.key
        }
    if not converged:
        return {"contender": contender.key, "error": "skipped: the contender did not converge"}
    run.say(f"scale: N={bench.settings.n} {contender.key} fresh-first and failover phases")
    user, standby_user = f"bench-{contender.key}-leader", f"bench-{contender.key}-standby"
    namespace = f"bench-{contender.key}-phases-{secrets.token_hex(3)}"
    result: dict[str, Any] = {"contender": contender.key, "namespace": namespace, "error": None}
    m = run.Measurement(contender, user, namespace, f"[phases {contender.key}]")
    try:
        with bench.started(m, "phases-converge", standby_user) as first:
            bench.converge(m, first)
            result["fresh_first"], leader = fresh_first(bench, m)
            result["failover"] = failover(bench, m, leader, standby_user)
    except run.MEASUREMENT_ERRORS as exc:
        result["error"] = run.failure(m.tag, exc)
    return result
