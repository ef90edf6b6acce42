"""The scenarios that break the operator's surroundings: ``kill``, ``restart``, ``faults`` and ``failover``, each on
the stock operator as users run it (``okt run``, a child process) on the shared testbed."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from okt.cli import run
from okt.runtime import leader
from okt.testing import audit, faults, process, waiting
from tests.reliability import checks, logs, outcome, profiles, testbed

LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0
TAKEOVER_LIMIT = LEASE_DURATION + 2 * RETRY_PERIOD * leader.JITTER + 2.0
"""The lease time, plus up to two jittered retry periods (one to see the last renewal, one to take the lease), plus
two seconds of slack for a loaded machine."""
REPLICAS = ("replica-a", "replica-b")


@outcome.scenario("kill", "kill -9 the operator at random moments")
def kill_nine(lab: testbed.Lab, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """kill -9 the operator ``sizes.kills`` times at random moments while custom resources are created and changed."""
    namespace = lab.namespace("kill")
    names = testbed.names("k", sizes.kill_crs)
    want = testbed.random_sizes(rng, names)
    batches = _split(names, sizes.kills + 1)
    lab.create_sized(namespace, batches[0], want)
    created = list(batches[0])
    operators: list[process.OperatorProcess] = []
    modes = {"starting": 0, "working": 0}
    resized = in_flight = 0
    deleted: list[str] = []
    for k in range(sizes.kills):
        operator = lab.operator(f"kill-{k}", namespace)
        operators.append(operator)
        # Half the kills land while the operator starts (informers listing), half while it reconciles a batch
        # it has just been given.
        mode = rng.choice(("starting", "working"))
        if mode == "working":
            operator.wait_ready()
        lab.create_sized(namespace, batches[k + 1], want)
        created += batches[k + 1]
        live = [n for n in created if n not in deleted]
        resized += lab.resize(namespace, live, rng, want)
        deleted += lab.delete_some(namespace, live, rng, want)
        time.sleep(rng.uniform(0.0, 1.5 if mode == "starting" else 0.4))
        if operator.kill():
            modes[mode] += 1
        in_flight += len(checks.not_converged(lab.snapshot(namespace), [n for n in created if n not in deleted]))
    restarted = time.monotonic()
    final = lab.operator("kill-final", namespace)
    operators.append(final)
    final.wait_ready()
    live = [n for n in names if n not in deleted]
    snapshot, _ = lab.settle(namespace, live, sizes.timeout(len(names)), gone=deleted)
    took = time.monotonic() - restarted
    final.stop()
    crash = logs.crash_check(operators)
    found = [
        *checks.state_checks(snapshot, live, want, deleted),
        checks.Check("deleted ones are gone", tuple(sorted(set(deleted) & set(snapshot.by_name)))),
        crash,
    ]
    figures = {
        "crs": len(names),
        "kills": sum(modes.values()),
        "kills_while_starting": modes["starting"],
        "kills_while_working": modes["working"],
        "spec_changes": resized,
        "deletions": len(deleted),
        "unconverged_at_kills": in_flight,
        "converge_after_last_restart_seconds": round(took, 1),
        "crashes": len(crash.problems),
        **checks.loss_figures(snapshot, live),
    }
    return found, figures


def _split(items: Sequence[str], parts: int) -> list[list[str]]:
    size = -(-len(items) // parts)
    return [list(items[i * size : (i + 1) * size]) for i in range(parts)]


@outcome.scenario("restart", "restart the kube-apiserver mid-run")
def apiserver_restart(lab: testbed.Lab, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """Kill the kube-apiserver while custom resources converge, restart it, and create more right after."""
    namespace = lab.namespace("restart")
    early, late = testbed.names("r", sizes.restart_crs), testbed.names("late", sizes.restart_late_crs)
    want = testbed.random_sizes(rng, early + late)
    operator = lab.operator("restart", namespace)
    operator.wait_ready()
    lab.create_sized(namespace, early, want)
    time.sleep(rng.uniform(0.2, 1.5))
    down = time.monotonic()
    lab.plane.stop_apiserver()
    time.sleep(sizes.outage)
    lab.plane.start_apiserver()
    back = time.monotonic()
    lab.create_sized(namespace, late, want)
    resized = lab.resize(namespace, early, rng, want)
    snapshot, took = lab.settle(namespace, early + late, sizes.timeout(len(early + late)))
    ready_again = testbed.until(operator.ready, 30)
    records = operator.records()
    operator.stop()
    crash = logs.crash_check([operator])
    found = [
        *checks.state_checks(snapshot, early + late, want),
        checks.Check.holds("the operator is ready again", ready_again, "/readyz never answered 200"),
        crash,
    ]
    figures = {
        "crs": len(early),
        "created_after_return": len(late),
        "spec_changes": resized,
        "outage_seconds": round(back - down, 1),
        "converge_after_return_seconds": round(took, 1),
        "watch_reconnects": logs.count(records, "list or watch failed, retrying"),
        "relists": logs.count(records, "expired, relisting"),
        "crashes": len(crash.problems),
        **checks.loss_figures(snapshot, early + late),
    }
    return found, figures


@outcome.scenario("faults", "{sizes.fault_rate:.0%} of API requests fail")
def api_faults(lab: testbed.Lab, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """Run the operator through the fault proxy; converge, change and delete custom resources."""
    namespace = lab.namespace("faults")
    names = testbed.names("f", sizes.fault_crs)
    want = testbed.random_sizes(rng, names)
    seed = first_request_fails(sizes.fault_rate, rng.randrange(2**32))
    with faults.FaultProxy(lab.plane.url, str(lab.plane.ca_file), rate=sizes.fault_rate, seed=seed) as proxy:
        operator = lab.operator("faults", namespace, proxy=proxy)
        operator.wait_ready(90)
        lab.create_sized(namespace, names, want)
        resized = lab.resize(namespace, names, rng, want)
        snapshot, took = lab.settle(namespace, names, sizes.timeout(len(names)))
        deleted = rng.sample(names, max(1, len(names) // 5))
        for name in deleted:
            lab.client.delete(lab.kind, name, namespace)
        kept = [n for n in names if n not in deleted]
        after, _ = lab.settle(namespace, kept, sizes.timeout(len(deleted)), gone=deleted)
        alive = operator.alive
        operator.stop()
        injected = dict(proxy.injected)
        forwarded = proxy.forwarded
    crash = logs.crash_check([operator])
    found = [
        *checks.state_checks(snapshot, names, want),
        checks.Check("deletions complete", tuple(sorted(set(deleted) & set(after.by_name)))),
        checks.inventory_matches(after, deleted).labelled("after the deletions"),
        checks.children_exact(after, names=kept).labelled("after the deletions"),
        checks.Check.holds("the operator survived", alive, f"exited with {operator.exit_status}"),
        crash,
    ]
    figures = {
        "crs": len(names),
        "fault_rate": sizes.fault_rate,
        "faults_injected": sum(injected.values()),
        "faults_by_kind": injected,
        "requests_forwarded": forwarded,
        "startup_retries": sum(
            record.get("failures", 0) for record in operator.records() if record.get("event") == run.STARTUP_RETRIED
        ),
        "spec_changes": resized,
        "deletions": len(deleted),
        "converge_seconds": round(took, 1),
        "crashes": len(crash.problems),
        **checks.loss_figures(snapshot, names),
    }
    return found, figures


def first_request_fails(rate: float, start: int) -> int:
    """The first proxy seed from ``start`` whose first decision injects a fault: the operator's start-up check of the
    API server meets a fault on every run, not one run in ten."""
    seed = start
    while random.Random(seed).random() >= rate:
        seed += 1
    return seed


@outcome.scenario("failover", "leader failover under kill -9")
def failover(lab: testbed.Lab, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """Two replicas with leader election; kill -9 the leader; the standby takes over; never two writers."""
    namespace = lab.namespace("failover")
    written = audit.AuditLog.from_end(lab.plane.audit_log_path, [lab.users[r].name for r in REPLICAS])
    first, second = testbed.names("l", sizes.failover_crs), testbed.names("t", max(1, sizes.failover_crs // 2))
    want = testbed.random_sizes(rng, first + second)
    replicas = {
        role: lab.operator(
            f"failover-{role}", namespace, role=role, args=["--leader-elect", "--lease-namespace", namespace]
        )
        for role in REPLICAS
    }
    for replica in replicas.values():
        replica.wait_ready()
    leader_role: str = waiting.wait_for(
        lambda: next((r for r, p in replicas.items() if p.logged_at("became leader")), ""),
        timeout=30,
        message="one replica to become the leader",
    )
    standby_role = next(r for r in replicas if r != leader_role)
    leader_user, standby_user = lab.users[leader_role].name, lab.users[standby_role].name
    lab.create_sized(namespace, first, want)
    before, _ = lab.settle(namespace, first, sizes.timeout(len(first)))
    killed_at = time.time()
    replicas[leader_role].kill()
    lab.create_sized(namespace, second, want)
    resized = lab.resize(namespace, first, rng, want)
    standby = replicas[standby_role]
    testbed.until(lambda: standby.logged_at("became leader") is not None, TAKEOVER_LIMIT + 30)
    took_over_at = standby.logged_at("became leader")
    snapshot, _ = lab.settle(namespace, first + second, sizes.timeout(len(first + second)))
    status = standby.stop()
    written.settle()  # the API server writes its audit log in batches
    requests = written.requests()
    takeover = None if took_over_at is None else took_over_at - killed_at
    windows = logs.write_windows(requests)
    leader_writes = windows[leader_user].writes if leader_user in windows else 0
    found = [
        checks.converged(before, first).labelled("before the kill"),
        *checks.state_checks(snapshot, first + second, want),
        checks.Check.holds(
            "the standby takes over in time",
            takeover is not None and takeover <= TAKEOVER_LIMIT,
            f"took over after {takeover if takeover is None else round(takeover, 1)}s (limit {TAKEOVER_LIMIT:.1f}s)",
        ),
        checks.Check.holds("the leader wrote", leader_writes > 0, f"no write by {leader_user}"),
        logs.no_writes(requests, standby_user, 0.0, killed_at, "standby"),
        logs.single_writer(requests, [leader_user, standby_user]),
        checks.Check.holds("the new leader stops cleanly", status == 0, f"exit status {status}"),
        logs.crash_check(list(replicas.values())),
    ]
    figures = {
        "crs": len(first) + len(second),
        "spec_changes": resized,
        "takeover_seconds": None if takeover is None else round(takeover, 1),
        "takeover_limit_seconds": round(TAKEOVER_LIMIT, 1),
        "leader_writes": leader_writes,
        "new_leader_writes": windows[standby_user].writes if standby_user in windows else 0,
        "audited_requests": len(requests),
        **checks.loss_figures(snapshot, first + second),
    }
    return found, figures
