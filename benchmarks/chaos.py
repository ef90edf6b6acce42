"""The reliability suite: the memcached operator under kill -9, apiserver restarts, API faults and fuzzed specs.

Why this exists: okt claims that an operator built with it loses nothing, duplicates nothing, never crashes and backs
off when things go wrong. Each claim is only worth the experiment that tries to break it. This harness runs six, on
a real local control plane, against the operator users run (``okt run samples/memcached/operator.py``, as a child
process, unless a scenario needs to count inside the reconciler):

=================  ================================================================================================
``kill``           kill -9 the operator at random moments (starting up, or reconciling) while custom resources are
                   created and changed; then: all converge, no duplicate or orphan child, none without status
``restart``        kill the kube-apiserver mid-run and bring it back; resources created right after its return are
                   reconciled too (the informers relist and reconnect)
``faults``         a fault-injecting proxy between operator and API (500/503, lost responses, 409s, resets, cut
                   watch streams); everything converges, deletions clean up, no unhandled exception in the log
``fuzz``           hypothesis-generated specs past a CRD whose spec accepts anything (its own control plane); each
                   ends Ready=True or Ready=False with a reason, the operator never crashes, errors back off
``deletions``      deletions with the sample's finalizer: each cleanup takes effect exactly once; a reconciler whose
                   cleanup fails keeps its finalizer (and retries with backoff) until the cleanup works again
``failover``       two replicas with ``--leader-elect`` under their own identities: only the leader writes (the
                   API server's audit log says who wrote), kill -9 the leader, the standby takes over in time
=================  ================================================================================================

Run it: ``make chaos`` (the full sizes; prints a summary table, writes ``benchmarks/results/chaos.json`` and the
``docs/reliability.md`` page), ``python -m benchmarks.chaos --reduced`` for the sizes of the reduced suite that
``make test`` runs (``tests/e2e/test_reliability.py``), ``--only kill,fuzz`` to pick scenarios.

Guarantees: every wait is bounded; a scenario that fails says which check failed and on which objects; one failing
scenario does not stop the others (the exit status is 1); every process started here — control planes, operators —
is stopped at the end and dies with the harness in any case (``PR_SET_PDEATHSIG``). The judgements themselves are in
:mod:`benchmarks.chaos_checks`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import ctypes
import dataclasses
import datetime
import itertools
import json
import os
import pathlib
import platform
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import hypothesis
import pydantic
import structlog
import yaml
from hypothesis import strategies as st

import okt
from benchmarks import chaos_checks as checks
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import leader, logs
from okt.testing import envtest, waiting
from samples.memcached import harness
from samples.memcached.memcached_operator import FINALIZER, MemcachedReconciler, api, inventory, policy

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS_JSON = ROOT / "benchmarks" / "results" / "chaos.json"
RESULTS_PAGE = ROOT / "docs" / "reliability.md"

LAB_CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would stay Pending anyway (no kubelet) and would only add load."""

BACKOFF_WINDOW = 20.0
BACKOFF_LIMIT = 15
"""An object in error must be reconciled fewer times than this in :data:`BACKOFF_WINDOW` seconds (a loop without
backoff would reconcile it hundreds of times)."""

LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0
TAKEOVER_LIMIT = LEASE_DURATION + 2 * RETRY_PERIOD * leader.JITTER + 2.0
"""The lease time, plus up to two jittered retry periods (one to see the last renewal, one to take the lease), plus
two seconds of slack for a loaded machine."""

POLL = 0.5
SCENARIOS = ("kill", "restart", "faults", "fuzz", "deletions", "failover")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How hard each scenario pushes; :data:`FULL` for ``make chaos``, :data:`REDUCED` for ``make test``."""

    profile: str
    kill_crs: int
    kills: int
    restart_crs: int
    restart_late_crs: int
    outage: float
    fault_crs: int
    fault_rate: float
    fuzz_cases: int
    deletions: int
    failing_deletions: int
    failing_window: float
    failover_crs: int

    def timeout(self, crs: int) -> float:
        """How long ``crs`` custom resources may take to converge (generous: the machine is shared)."""
        return 60.0 + 0.6 * crs


FULL = Sizes(
    profile="full",
    kill_crs=300,
    kills=20,
    restart_crs=300,
    restart_late_crs=50,
    outage=8.0,
    fault_crs=300,
    fault_rate=0.1,
    fuzz_cases=500,
    deletions=200,
    failing_deletions=10,
    failing_window=BACKOFF_WINDOW,
    failover_crs=100,
)
REDUCED = Sizes(
    profile="reduced",
    kill_crs=30,
    kills=3,
    restart_crs=20,
    restart_late_crs=10,
    outage=3.0,
    fault_crs=30,
    fault_rate=0.1,
    fuzz_cases=40,
    deletions=20,
    failing_deletions=3,
    failing_window=8.0,
    failover_crs=10,
)


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """What one scenario found: its checks, its figures, and an error if it could not be carried out."""

    key: str
    title: str
    checks: tuple[checks.Check, ...]
    figures: Mapping[str, Any]
    seconds: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    def report(self) -> str:
        """Every check on one line each, the error first (what a failing test prints)."""
        lines = [f"{self.key}: {'ok' if self.ok else 'FAILED'} in {self.seconds:.1f}s"]
        if self.error:
            lines.append(f"  error: {self.error}")
        lines += [f"  {c.describe()}" for c in self.checks]
        lines.append(f"  figures: {json.dumps(dict(self.figures), default=str)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "ok": self.ok,
            "seconds": round(self.seconds, 1),
            "error": self.error,
            "figures": dict(self.figures),
            "checks": [c.to_json() for c in self.checks],
        }


# -- processes ---------------------------------------------------------------------------------------------------


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class OperatorProcess:
    """``okt run samples/memcached/operator.py`` as a child process in its own process group.

    It dies with the harness; :meth:`kill9` is the crash under test, :meth:`stop` the graceful end (SIGTERM).
    """

    def __init__(self, label: str, process: subprocess.Popen[bytes], probe_url: str, log_path: pathlib.Path) -> None:
        self.label = label
        self.process = process
        self.probe_url = probe_url
        self.log_path = log_path
        self.killed = False
        self.hung = False
        self.started_at = time.time()

    @classmethod
    def start(
        cls,
        label: str,
        kubeconfig: pathlib.Path,
        namespace: str,
        log_path: pathlib.Path,
        args: Sequence[str] = (),
    ) -> OperatorProcess:
        port = envtest.free_port()
        argv = [harness.okt_command(), "run", str(harness.OPERATOR_PATH), "--kubeconfig", str(kubeconfig)]
        argv += ["--namespace", namespace, "--metrics-bind-address", f"127.0.0.1:{port}", "--log-format", "json"]
        argv += list(args)
        env = {**os.environ, "MEMCACHED_FINALIZER": "on", "PYTHONUNBUFFERED": "1"}
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - the operator must die with the harness
            )
        return cls(label, process, f"http://127.0.0.1:{port}", log_path)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def ready(self) -> bool:
        """``/readyz`` answers 200 (caches synced; with leader election, leading or a healthy standby)."""
        if not self.alive:
            raise RuntimeError(f"{self.label} exited with status {self.process.returncode}: {self.log_tail()}")
        try:
            with urllib.request.urlopen(f"{self.probe_url}/readyz", timeout=2) as response:  # noqa: S310 - loopback
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait until ready; returns the seconds since the start."""
        waiting.wait_for(self.ready, timeout=timeout, interval=0.1, message=f"{self.label} to be ready")
        return time.time() - self.started_at

    def kill9(self) -> bool:
        """SIGKILL the process group; returns whether the process was still running (it did not die by itself)."""
        was_alive = self.alive
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        return was_alive

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (graceful shutdown), SIGKILL after ``timeout`` seconds (:attr:`hung`); returns the exit status."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.hung = True
                self.kill9()
        return self.process.returncode

    @property
    def exit_status(self) -> int | None:
        """The exit status when it ended by itself or by SIGTERM; None while running or when killed here."""
        code = self.process.poll()
        return None if code is None or self.killed else code

    def records(self) -> list[dict[str, Any]]:
        try:
            return checks.parse_log(self.log_path.read_text(errors="replace"))
        except OSError:
            return []

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""


# -- the lab -----------------------------------------------------------------------------------------------------


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
        self._operators: list[OperatorProcess] = []
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
    ) -> OperatorProcess:
        """Start ``okt run`` for the sample (with its finalizer) in ``namespace``; does not wait until it is ready."""
        operator = OperatorProcess.start(
            label, self.kubeconfig(role, server), namespace, self.workdir / f"{label}.log", args
        )
        self._operators.append(operator)
        return operator

    def snapshot(self, namespace: str) -> checks.Snapshot:
        return checks.Snapshot.take(self.client, self.kind, namespace)


# -- what a user does --------------------------------------------------------------------------------------------


def body(namespace: str, name: str, spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def create_all(lab: Lab, namespace: str, specs: Mapping[str, Any], workers: int = 8) -> dict[str, dict[str, Any]]:
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


def resize(lab: Lab, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]) -> int:
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
    lab: Lab, namespace: str, names: Sequence[str], timeout: float, gone: Sequence[str] = ()
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

    converged = _until(done, timeout)
    if not last:
        last.append(lab.snapshot(namespace))
    return last[0], (time.monotonic() - started) if converged else timeout


def delete_some(lab: Lab, namespace: str, names: Sequence[str], rng: random.Random, sizes: dict[str, int]) -> list[str]:
    """Delete about one in fifty of ``names`` (at least one), forgetting their sizes; returns them."""
    chosen = rng.sample(list(names), min(len(names), max(1, len(names) // 50)))
    for name in chosen:
        lab.client.delete(lab.kind, name, namespace)
        sizes.pop(name, None)
    return chosen


def _until(predicate: Callable[[], bool], timeout: float, interval: float = POLL) -> bool:
    try:
        waiting.wait_for(predicate, timeout=timeout, interval=interval)
    except waiting.WaitTimeout:
        return False
    return True


def state_checks(
    snapshot: checks.Snapshot, names: Sequence[str], sizes: Mapping[str, int], deleted: Sequence[str] = ()
) -> list[checks.Check]:
    """The end state every scenario with the stock operator must reach (``deleted``: gone, and gone from the
    inventory)."""
    return [
        checks.converged(snapshot, names),
        checks.children_exact(snapshot, names=names),
        checks.with_status(snapshot),
        checks.replicas_match(snapshot, sizes),
        checks.inventory_matches(snapshot, deleted),
    ]


def labelled(when: str, check: checks.Check) -> checks.Check:
    """The same check, named for the moment it judges (a scenario may judge the same thing twice)."""
    return dataclasses.replace(check, name=f"{when}: {check.name}")


def loss_figures(snapshot: checks.Snapshot, names: Sequence[str]) -> dict[str, int]:
    """Objects lost (not converged, or missing from the inventory), duplicate and orphan children."""
    audit = checks.child_audit(snapshot, names=names)
    inventory_missing = len(checks.inventory_matches(snapshot).problems)
    return {
        "objects_lost": len(checks.not_converged(snapshot, names)) + inventory_missing,
        "duplicates": len(audit.duplicates) + len(audit.unexpected) + len(audit.multi_controller),
        "orphans": len(audit.orphans),
    }


def crash_check(operators: Sequence[OperatorProcess]) -> tuple[checks.Check, int]:
    """No unhandled exception in the operators' logs, no error exit, no hang on SIGTERM; and how many problems."""
    records = [record for operator in operators for record in operator.records()]
    check = checks.no_crash(records, {o.label: o.exit_status for o in operators})
    hung = tuple(f"{o.label} ignored SIGTERM (killed after 30s)" for o in operators if o.hung)
    check = dataclasses.replace(check, problems=check.problems + hung)
    return check, len(check.problems)


def _scenario(key: str, title: str, body_: Callable[[], tuple[list[checks.Check], dict[str, Any]]]) -> ScenarioResult:
    started = time.monotonic()
    try:
        found, figures = body_()
    except Exception as exc:
        return ScenarioResult(key, title, (), {}, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
    return ScenarioResult(key, title, tuple(found), figures, time.monotonic() - started)


# -- 1. kill -9 --------------------------------------------------------------------------------------------------


def kill_nine(lab: Lab, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """kill -9 the operator ``sizes.kills`` times at random moments while custom resources are created and changed."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        namespace = lab.namespace("kill")
        names = [f"k{i:04d}" for i in range(sizes.kill_crs)]
        want: dict[str, int] = {name: rng.randint(1, 5) for name in names}
        batches = _split(names, sizes.kills + 1)
        create_all(lab, namespace, {n: {"size": want[n]} for n in batches[0]})
        created = list(batches[0])
        operators: list[OperatorProcess] = []
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
            create_all(lab, namespace, {n: {"size": want[n]} for n in batches[k + 1]})
            created += batches[k + 1]
            live = [n for n in created if n not in deleted]
            resized += resize(lab, namespace, live, rng, want)
            deleted += delete_some(lab, namespace, live, rng, want)
            time.sleep(rng.uniform(0.0, 1.5 if mode == "starting" else 0.4))
            if operator.kill9():
                modes[mode] += 1
            in_flight += len(checks.not_converged(lab.snapshot(namespace), [n for n in created if n not in deleted]))
        restarted = time.monotonic()
        final = lab.operator("kill-final", namespace)
        operators.append(final)
        final.wait_ready()
        live = [n for n in names if n not in deleted]
        snapshot, _ = settle(lab, namespace, live, sizes.timeout(len(names)), gone=deleted)
        took = time.monotonic() - restarted
        final.stop()
        crash, crashes = crash_check(operators)
        found = [
            *state_checks(snapshot, live, want, deleted),
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
            "crashes": crashes,
            **loss_figures(snapshot, live),
        }
        return found, figures

    return _scenario("kill", "kill -9 the operator at random moments", run)


def _split(items: Sequence[str], parts: int) -> list[list[str]]:
    size = -(-len(items) // parts)
    return [list(items[i * size : (i + 1) * size]) for i in range(parts)]


# -- 2. apiserver restart ----------------------------------------------------------------------------------------


def apiserver_restart(lab: Lab, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """Kill the kube-apiserver while custom resources converge, restart it, and create more right after."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        namespace = lab.namespace("restart")
        early = [f"r{i:04d}" for i in range(sizes.restart_crs)]
        late = [f"late{i:04d}" for i in range(sizes.restart_late_crs)]
        want = {name: rng.randint(1, 5) for name in early + late}
        operator = lab.operator("restart", namespace)
        operator.wait_ready()
        create_all(lab, namespace, {n: {"size": want[n]} for n in early})
        time.sleep(rng.uniform(0.2, 1.5))
        down = time.monotonic()
        lab.plane.stop_apiserver()
        time.sleep(sizes.outage)
        lab.plane.start_apiserver()
        back = time.monotonic()
        create_all(lab, namespace, {n: {"size": want[n]} for n in late})
        resized = resize(lab, namespace, early, rng, want)
        snapshot, took = settle(lab, namespace, early + late, sizes.timeout(len(early + late)))
        ready_again = _until(operator.ready, 30)
        records = operator.records()
        operator.stop()
        crash, crashes = crash_check([operator])
        found = [
            *state_checks(snapshot, early + late, want),
            checks.Check("the operator is ready again", () if ready_again else ("/readyz never answered 200",)),
            crash,
        ]
        figures = {
            "crs": len(early),
            "created_after_return": len(late),
            "spec_changes": resized,
            "outage_seconds": round(back - down, 1),
            "converge_after_return_seconds": round(took, 1),
            "watch_reconnects": sum(1 for r in records if r.get("event") == "list or watch failed, retrying"),
            "relists": sum(1 for r in records if r.get("event") == "watch expired, relisting"),
            "crashes": crashes,
            **loss_figures(snapshot, early + late),
        }
        return found, figures

    return _scenario("restart", "restart the kube-apiserver mid-run", run)


# -- 3. API faults -----------------------------------------------------------------------------------------------


def api_faults(lab: Lab, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """Run the operator through the fault proxy; converge, change and delete custom resources."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        from okt.testing import faults

        namespace = lab.namespace("faults")
        names = [f"f{i:04d}" for i in range(sizes.fault_crs)]
        want = {name: rng.randint(1, 5) for name in names}
        seed = first_request_fails(sizes.fault_rate, rng.randrange(2**32))
        with faults.FaultProxy(lab.plane.url, str(lab.plane.ca_file), rate=sizes.fault_rate, seed=seed) as proxy:
            operator = lab.operator("faults", namespace, server=proxy.url)
            operator.wait_ready(90)
            create_all(lab, namespace, {n: {"size": want[n]} for n in names})
            resized = resize(lab, namespace, names, rng, want)
            snapshot, took = settle(lab, namespace, names, sizes.timeout(len(names)))
            deleted = rng.sample(names, max(1, len(names) // 5))
            for name in deleted:
                lab.client.delete(lab.kind, name, namespace)
            kept = [n for n in names if n not in deleted]
            after, _ = settle(lab, namespace, kept, sizes.timeout(len(deleted)), gone=deleted)
            alive = operator.alive
            operator.stop()
            injected = dict(proxy.injected)
            forwarded = proxy.forwarded
        crash, crashes = crash_check([operator])
        found = [
            *state_checks(snapshot, names, want),
            checks.Check("deletions complete", tuple(sorted(set(deleted) & set(after.by_name)))),
            labelled("after the deletions", checks.inventory_matches(after, deleted)),
            labelled("after the deletions", checks.children_exact(after, names=kept)),
            checks.Check("the operator survived", () if alive else (f"exited with {operator.exit_status}",)),
            crash,
        ]
        figures = {
            "crs": len(names),
            "fault_rate": sizes.fault_rate,
            "faults_injected": sum(injected.values()),
            "faults_by_kind": injected,
            "requests_forwarded": forwarded,
            "startup_retries": sum(
                1 for r in operator.records() if r.get("event") == "the API server failed the first request, retrying"
            ),
            "spec_changes": resized,
            "deletions": len(deleted),
            "converge_seconds": round(took, 1),
            "crashes": crashes,
            **loss_figures(snapshot, names),
        }
        return found, figures

    return _scenario("faults", f"{sizes.fault_rate:.0%} of API requests fail", run)


def first_request_fails(rate: float, start: int) -> int:
    """The first proxy seed from ``start`` whose first decision injects a fault.

    The proxy draws one number per request from its seeded generator, so with this seed the operator's very first
    request — its start-up check of the API server — meets a fault: starting up against a flaky API is tested on
    every run, not one run in ten.
    """
    seed = start
    while random.Random(seed).random() >= rate:
        seed += 1
    return seed


# -- 4. fuzzed specs ---------------------------------------------------------------------------------------------


def fuzz_crd() -> dict[str, Any]:
    """The sample's CRD, except that its spec accepts any JSON value (the schema no longer protects the operator)."""
    crd = harness.load_crd()
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {
        "description": "Anything: the reliability suite bypasses the schema.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema.pop("required", None)
    return crd


_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)


def _json_containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)


_JSON = st.recursive(_JSON_SCALARS, _json_containers, max_leaves=12)
_IMAGES = st.sampled_from(
    [
        "memcached:1.6",
        "memcached",
        "memcached:latest",
        "registry.example.com/memcached:1.6.21",
        "memcached@sha256:" + "a" * 64,
        "",
        " memcached:1.6",
        "Memcached:1.6",
    ]
)
_NEAR_VALID = st.fixed_dictionaries(
    {"size": st.integers(min_value=1, max_value=50) | st.integers(min_value=-3, max_value=120)},
    optional={"image": _IMAGES},
)
_MEMCACHED_LIKE = st.builds(
    lambda base, extra: {**extra, **base},
    st.fixed_dictionaries(
        {},
        optional={
            "size": st.integers(min_value=-3, max_value=120) | _JSON,
            "image": _IMAGES | st.text(max_size=60) | _JSON,
        },
    ),
    st.dictionaries(st.text(max_size=10), _JSON, max_size=2) | st.just({}),
)
SPECS = st.one_of(_NEAR_VALID, _NEAR_VALID, _NEAR_VALID, _MEMCACHED_LIKE, _JSON)
"""Memcached-shaped specs, about half of them valid; the others with out-of-range sizes, floating images, wrong
types and unknown fields; now and then any JSON value at all (a string, a list, null)."""


EDGE_SPECS: tuple[Any, ...] = (
    {"size": 3, "image": "memcached:" + "1" * 20_000},
    {"size": 3, **{f"unknown-{i}": i for i in range(1500)}},
    {"size": json.loads("[" * 60 + "]" * 60)},
    {"size": "3"},
    {"size": 3.0, "image": "memcached:1.6"},
    {"size": 1e300},
    {"size": 3, "image": "memcached:1.6\n--privileged"},
)
"""Specs hypothesis rarely reaches: a huge image name, a thousand unknown fields (an error message far over the
condition's 32 KiB), deep nesting, numbers as strings or floats, a newline in the image."""


def fuzz_specs(count: int, seed: int) -> list[Any]:
    """Up to ``count`` distinct specs drawn by hypothesis from :data:`SPECS`, reproducibly for a seed."""
    found: list[Any] = []

    @hypothesis.settings(
        max_examples=2 * count,  # hypothesis repeats itself now and then
        database=None,
        deadline=None,
        phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.seed(seed)
    @hypothesis.given(SPECS)
    def collect(spec: Any) -> None:
        found.append(spec)

    collect()
    distinct: dict[str, Any] = {}
    for spec in found:
        distinct.setdefault(json.dumps(spec, sort_keys=True), spec)
    return list(distinct.values())[:count]


def expected_verdict(spec: Any) -> str | None:
    """What the operator should say about a stored spec: None (valid) or the reason it must refuse it with."""
    if not isinstance(spec, Mapping):
        return "InvalidSpec"
    try:
        policy.check(api.MemcachedSpec.model_validate(dict(spec)))
    except (pydantic.ValidationError, okt.InvalidSpec):
        return "InvalidSpec"
    return None


def fuzzed_specs(workdir: pathlib.Path, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """Hypothesis-generated specs past a permissive CRD, on a control plane of their own."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        with Lab(workdir / "fuzz", crd=fuzz_crd(), audit_log=False, controllers=()) as lab:
            namespace = lab.namespace("fuzz")
            operator = lab.operator("fuzz", namespace)
            operator.wait_ready()
            probe_created = time.time()
            create_all(lab, namespace, {"probe": {"size": 1, "image": "memcached:latest"}})
            specs = fuzz_specs(sizes.fuzz_cases, rng.randrange(2**32))
            cases = {f"fuzz-{i:04d}": spec for i, spec in enumerate(specs)}
            cases.update((f"edge-{i:02d}", spec) for i, spec in enumerate(EDGE_SPECS))
            stored = create_all(lab, namespace, cases)
            verdicts = {name: expected_verdict(obj.get("spec")) for name, obj in stored.items()}
            verdicts["probe"] = "InvalidSpec"
            valid = [name for name, verdict in verdicts.items() if verdict is None]

            def expected(name: str) -> frozenset[tuple[str, str]]:
                return checks.memcached_children(name) if verdicts.get(name) is None else frozenset()

            last: list[checks.Snapshot] = []

            def settled() -> bool:
                last[:] = [lab.snapshot(namespace)]
                return not checks.unsettled(last[0])

            started = time.monotonic()
            _until(settled, sizes.timeout(len(stored)))
            took = time.monotonic() - started
            time.sleep(max(probe_created + BACKOFF_WINDOW + 1.0 - time.time(), 0.0))
            snapshot = lab.snapshot(namespace)
            records = operator.records()
            counts = {"probe": checks.reconciles(records, "probe", probe_created, probe_created + BACKOFF_WINDOW)}
            alive = operator.alive
            operator.stop()
            crash, crashes = crash_check([operator])
            reasons = checks.ready_reasons(snapshot)
        found = [
            checks.Check("every CR settled", tuple(checks.unsettled(snapshot))),
            checks.with_status(snapshot),
            checks.verdicts_match(snapshot, verdicts),
            checks.children_exact(snapshot, expected, names=valid),
            checks.backoff_bounded(counts, BACKOFF_LIMIT, BACKOFF_WINDOW),
            checks.Check("the operator survived", () if alive else (f"exited with {operator.exit_status}",)),
            crash,
        ]
        figures = {
            "cases": len(specs),
            "edge_cases": len(EDGE_SPECS),
            "refused_by_the_api": len(cases) - len(stored),
            "valid": len(valid),
            "ready_reasons": reasons,
            "settle_seconds": round(took, 1),
            "probe_reconciles_in_window": counts["probe"],
            "backoff_window_seconds": BACKOFF_WINDOW,
            "crashes": crashes,
        }
        return found, figures

    return _scenario("fuzz", "fuzzed specs past a permissive schema", run)


# -- 5. deletions ------------------------------------------------------------------------------------------------


class CleanupLedger:
    """Counts, per custom resource, the cleanups run and those that took effect; makes chosen ones fail."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.effective: dict[str, int] = {}
        self._failing: set[str] = set()

    def fail(self, names: Sequence[str]) -> None:
        with self._lock:
            self._failing |= set(names)

    def heal(self) -> None:
        with self._lock:
            self._failing.clear()

    def cleanup(self, ctx: okt.Context) -> None:
        """The sample's cleanup (remove the inventory entry), counted; raises for a custom resource set to fail."""
        name = ctx.cr.name
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            failing = name in self._failing
        if failing:
            raise okt.TemporaryError(f"injected cleanup failure for {name}")
        operation = inventory.forget(ctx)
        if operation is okt.Operation.UPDATED:
            with self._lock:
                self.effective[name] = self.effective.get(name, 0) + 1
        ctx.results.add(operation, inventory.describe(ctx.cr.namespace))


def ledger_reconciler(ledger: CleanupLedger) -> type[MemcachedReconciler]:
    """The sample's reconciler whose cleanup goes through ``ledger``."""

    class LedgerMemcachedReconciler(MemcachedReconciler):
        def cleanup(self, ctx: okt.Context) -> None:
            ledger.cleanup(ctx)

    return LedgerMemcachedReconciler


def deletions(lab: Lab, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """Delete custom resources; count cleanups; a failing cleanup keeps the finalizer until it succeeds."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        namespace = lab.namespace("delete")
        names = [f"d{i:04d}" for i in range(sizes.deletions)]
        failing = [f"fail{i:02d}" for i in range(sizes.failing_deletions)]
        ledger = CleanupLedger()
        ledger.fail(failing)
        client = kube_client.Client.from_kubeconfig(lab.kubeconfig("operator"))
        running = harness.RunningOperator.start(client, ledger_reconciler(ledger), namespaces=[namespace])
        try:
            everyone = names + failing
            create_all(lab, namespace, {n: {"size": rng.randint(1, 3)} for n in everyone})
            before, _ = settle(lab, namespace, everyone, sizes.timeout(len(everyone)))
            recorded = labelled("before the deletions", checks.inventory_matches(before))
            started = time.monotonic()
            deleted_at = time.time()
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: lab.client.delete(lab.kind, n, namespace), everyone))
            gone = _until(lambda: not set(names) & set(lab.snapshot(namespace).by_name), sizes.timeout(len(names)))
            took = time.monotonic() - started
            time.sleep(max(deleted_at + sizes.failing_window - time.time(), 0.0))
            held = lab.snapshot(namespace)
            attempts = {name: ledger.calls.get(name, 0) for name in failing}
            window = time.time() - deleted_at
            ledger.heal()
            released = _until(lambda: not lab.snapshot(namespace).crs, sizes.timeout(len(failing)))
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
            checks.backoff_bounded(attempts, BACKOFF_LIMIT, window),
            checks.Check("released once cleanup works", () if released else tuple(sorted(after.by_name))),
            checks.cleanup_exactly_once(ledger.effective, everyone),
            labelled("after the deletions", checks.inventory_matches(after, everyone)),
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

    return _scenario("deletions", "deletions clean up exactly once", run)


# -- 6. leader failover ------------------------------------------------------------------------------------------


def failover(lab: Lab, sizes: Sizes, rng: random.Random) -> ScenarioResult:
    """Two replicas with leader election; kill -9 the leader; the standby takes over; never two writers."""

    def run() -> tuple[list[checks.Check], dict[str, Any]]:
        namespace = lab.namespace("failover")
        audit_offset = _size(lab.plane.audit_log_path)
        first = [f"l{i:04d}" for i in range(sizes.failover_crs)]
        second = [f"t{i:04d}" for i in range(max(1, sizes.failover_crs // 2))]
        want = {name: rng.randint(1, 5) for name in first + second}
        replicas = {
            role: lab.operator(
                f"failover-{role}", namespace, role=role, args=["--leader-elect", "--lease-namespace", namespace]
            )
            for role in ("replica-a", "replica-b")
        }
        for replica in replicas.values():
            replica.wait_ready()
        leader_role: str = waiting.wait_for(
            lambda: next((r for r, p in replicas.items() if checks.first_event(p.records(), "became leader")), ""),
            timeout=30,
            message="one replica to become the leader",
        )
        standby_role = next(r for r in replicas if r != leader_role)
        leader_user, standby_user = lab.users[leader_role].name, lab.users[standby_role].name
        create_all(lab, namespace, {n: {"size": want[n]} for n in first})
        before, _ = settle(lab, namespace, first, sizes.timeout(len(first)))
        killed_at = time.time()
        replicas[leader_role].kill9()
        create_all(lab, namespace, {n: {"size": want[n]} for n in second})
        resized = resize(lab, namespace, first, rng, want)
        standby = replicas[standby_role]
        _until(lambda: checks.first_event(standby.records(), "became leader") is not None, TAKEOVER_LIMIT + 30)
        took_over_at = checks.first_event(standby.records(), "became leader")
        snapshot, _ = settle(lab, namespace, first + second, sizes.timeout(len(first + second)))
        status = standby.stop()
        time.sleep(3.0)  # the API server flushes its audit log every second
        requests, _ = checks.read_audit(lab.plane.audit_log_path, [leader_user, standby_user], audit_offset)
        takeover = None if took_over_at is None else took_over_at - killed_at
        windows = checks.write_windows(requests)
        leader_writes = windows[leader_user].writes if leader_user in windows else 0
        found = [
            labelled("before the kill", checks.converged(before, first)),
            *state_checks(snapshot, first + second, want),
            checks.Check(
                "the standby takes over in time",
                ()
                if takeover is not None and takeover <= TAKEOVER_LIMIT
                else (
                    f"took over after {takeover if takeover is None else round(takeover, 1)}s "
                    f"(limit {TAKEOVER_LIMIT:.1f}s)",
                ),
            ),
            checks.Check("the leader wrote", () if leader_writes else (f"no write by {leader_user}",)),
            checks.no_writes(requests, standby_user, 0.0, killed_at, "standby"),
            checks.single_writer(requests, [leader_user, standby_user]),
            checks.Check("the new leader stops cleanly", () if status == 0 else (f"exit status {status}",)),
            crash_check(list(replicas.values()))[0],
        ]
        figures = {
            "crs": len(first) + len(second),
            "spec_changes": resized,
            "takeover_seconds": None if takeover is None else round(takeover, 1),
            "takeover_limit_seconds": round(TAKEOVER_LIMIT, 1),
            "leader_writes": leader_writes,
            "new_leader_writes": windows[standby_user].writes if standby_user in windows else 0,
            "audited_requests": len(requests),
            **loss_figures(snapshot, first + second),
        }
        return found, figures

    return _scenario("failover", "leader failover under kill -9", run)


def _size(path: pathlib.Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# -- the run -----------------------------------------------------------------------------------------------------


def run_all(
    sizes: Sizes,
    only: Sequence[str] = SCENARIOS,
    seed: int = 0,
    workdir: pathlib.Path | None = None,
    out: Callable[[str], None] = print,
) -> list[ScenarioResult]:
    """Run the chosen scenarios in order on one lab (the fuzz scenario on its own control plane)."""
    rng = random.Random(seed)
    results: list[ScenarioResult] = []
    with contextlib.ExitStack() as stack:
        root = workdir or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="okt-chaos-")))
        stack.enter_context(_in_process_logs(root))
        shared = [key for key in only if key != "fuzz"]
        lab = stack.enter_context(Lab(root / "lab")) if shared else None
        scenarios: dict[str, Callable[[], ScenarioResult]] = {
            "kill": lambda: kill_nine(_need(lab), sizes, rng),
            "restart": lambda: apiserver_restart(_need(lab), sizes, rng),
            "faults": lambda: api_faults(_need(lab), sizes, rng),
            "fuzz": lambda: fuzzed_specs(root, sizes, rng),
            "deletions": lambda: deletions(_need(lab), sizes, rng),
            "failover": lambda: failover(_need(lab), sizes, rng),
        }
        for key in only:
            out(f"chaos: {key} ...")
            result = scenarios[key]()
            results.append(result)
            out(result.report())
    return results


def _need(lab: Lab | None) -> Lab:
    if lab is None:
        raise RuntimeError("no lab was started")
    return lab


def summary(results: Sequence[ScenarioResult]) -> dict[str, Any]:
    """The headline figures over every scenario."""

    def total(figure: str) -> int:
        return sum(int(r.figures.get(figure) or 0) for r in results)

    by_key = {r.key: r for r in results}
    backoff: dict[str, Any] = {}
    if "fuzz" in by_key:
        backoff["invalid_spec_reconciles_in_20s"] = by_key["fuzz"].figures.get("probe_reconciles_in_window")
    if "deletions" in by_key:
        backoff["failing_cleanup_attempts_max"] = by_key["deletions"].figures.get("failing_attempts_max")
    return {
        "runs": len(results),
        "passed": sum(r.ok for r in results),
        "faults_injected": total("faults_injected"),
        "kills": total("kills"),
        "objects_lost": total("objects_lost"),
        "duplicates": total("duplicates"),
        "orphans": total("orphans"),
        "crashes": total("crashes"),
        "takeover_seconds": by_key["failover"].figures.get("takeover_seconds") if "failover" in by_key else None,
        "backoff": backoff,
    }


def table(results: Sequence[ScenarioResult]) -> str:
    """The summary table printed at the end of a run."""
    rows = [("scenario", "result", "seconds", "key figures")]
    for r in results:
        figures = ", ".join(f"{k}={v}" for k, v in r.figures.items() if not isinstance(v, Mapping))
        rows.append((r.key, "ok" if r.ok else "FAILED", f"{r.seconds:.0f}", figures or (r.error or "")))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}  {d}" for a, b, c, d in rows]
    lines.insert(1, "-" * min(max(len(line) for line in lines), 120))
    return "\n".join(lines)


def document(results: Sequence[ScenarioResult], sizes: Sizes, seed: int) -> dict[str, Any]:
    return {
        "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "profile": sizes.profile,
        "seed": seed,
        "sizes": dataclasses.asdict(sizes),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "summary": summary(results),
        "scenarios": [r.to_json() for r in results],
    }


PAGE_INTRO = """\
# Reliability

okt claims that an operator built with it **loses nothing, duplicates nothing, never crashes, and backs off** when
the cluster misbehaves. This page is the evidence: the reliability suite runs the
[memcached sample](samples/memcached.md) (`okt run samples/memcached/operator.py`, with its finalizer) on a real local
control plane and tries to break it in six ways. It is generated by `make chaos` (`python -m benchmarks.chaos`);
`make test` runs the same scenarios at reduced sizes (`tests/e2e/test_reliability.py`), so a regression fails CI.
"""

PAGE_SCENARIOS = (
    (
        "kill",
        "`kill -9` the operator at random moments (while it starts, while it reconciles) as custom resources are "
        "created, resized and deleted",
        "all converge (Ready=True for the current generation, Deployment replicas = the last `spec.size`, an "
        "inventory entry each); children by owner uid are exactly the expected set, each with one controller "
        "ownerReference; no orphan; no custom resource without status",
    ),
    (
        "restart",
        "kill the kube-apiserver mid-run, bring it back, create more custom resources at once",
        "the informers reconnect (and relist when needed); everything converges, including what was created right "
        "after the return",
    ),
    (
        "faults",
        "a proxy between operator and API fails 10 % of requests: 500/503 without forwarding, lost responses "
        "(written, answered 500), 409s, connection resets, watch streams cut",
        "everything converges and deletions clean up; no unhandled exception or Traceback in the operator's log",
    ),
    (
        "fuzz",
        "hypothesis-generated specs (wrong types, out-of-range sizes, floating images, unknown fields, not even an "
        "object) past a CRD whose spec accepts anything",
        "every object ends Ready=True or Ready=False with a reason (`InvalidSpec` exactly for the specs the model or "
        "the policy refuses); the operator never crashes; an invalid object is reconciled fewer than 15 times in "
        "20 s (backoff, not a loop)",
    ),
    (
        "deletions",
        "delete custom resources of the finalizer-enabled operator; a variant whose cleanup fails for some of them",
        "each cleanup takes effect exactly once (the inventory entry goes once); a failing cleanup keeps the "
        "finalizer and is retried with backoff until it works",
    ),
    (
        "failover",
        "two replicas with `--leader-elect`, each under its own identity; `kill -9` the leader",
        "the API server's audit log shows writes by the leader only; the standby takes over within the lease time "
        "(15 s + retries); never two writers at once",
    ),
)


PAGE_FINDINGS = """\
## What it caught

Each of these fails its scenario without its fix in okt:

- **A spec that is not an object crashed the reconcile** (fuzz). A CRD that preserves unknown fields lets `spec: "x"`
  or `spec: [...]` through; the reconcile raised a `TypeError` and the object ended `Ready=False` with the reason
  `ReconcileError`. okt now refuses it as `InvalidSpec` ("spec: must be an object, got list").
- **One failed request at start-up stopped `okt run`** (faults). The first request, the check of the API server's
  version, gave up on a single 503 or reset connection. It is now retried with backoff (15 s for 5xx/429 answers,
  three tries when nothing answers, so a wrong address still fails in seconds).

## Caveats

- The control plane is local (etcd, kube-apiserver and kube-controller-manager 1.20 on loopback, no kubelet): Pods
  stay Pending, so availability is not part of "converged"; the garbage collector does run, so orphans are real.
- An API server that is down accepts no object: "created during the outage" means created the moment it is back,
  before the operator's informers have reconnected.
- After an outage, objects whose reconciles failed meanwhile wait out their per-key backoff (it grew while the
  server was down): the time to converge after the return includes it.
- The fault proxy is a Python process that opens a TLS connection per request: it, not the operator, bounds the
  throughput of the faults scenario.
- Times are those of a 2-core machine shared by the control plane, the harness and the operator.
"""


def markdown(doc: Mapping[str, Any]) -> str:
    """The ``docs/reliability.md`` page for a run's document."""
    s = doc["summary"]
    backoff = s.get("backoff") or {}
    lines = [
        PAGE_INTRO,
        "| scenario | what is done | what must hold |",
        "|---|---|---|",
        *(f"| {key} | {done} | {holds} |" for key, done, holds in PAGE_SCENARIOS),
        "",
        "## Last run",
        "",
        f"Profile **{doc['profile']}** (seed {doc['seed']}), {doc['generated']}, on {doc['machine']['cpus']} CPUs "
        f"(Python {doc['machine']['python']}). The raw figures are in `benchmarks/results/chaos.json`.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| scenarios passed | {s['passed']} of {s['runs']} |",
        f"| operator kills (`kill -9`) | {s['kills']} |",
        f"| API faults injected | {s['faults_injected']} |",
        f"| objects lost | {s['objects_lost']} |",
        f"| duplicate children | {s['duplicates']} |",
        f"| orphan children | {s['orphans']} |",
        f"| crashes | {s['crashes']} |",
        f"| leader takeover | {_seconds(s.get('takeover_seconds'))} |",
        f"| reconciles of an invalid object in 20 s | {backoff.get('invalid_spec_reconciles_in_20s', '-')} |",
        f"| most attempts of a failing cleanup | {backoff.get('failing_cleanup_attempts_max', '-')} |",
        "",
    ]
    for scenario in doc["scenarios"]:
        lines += [f"### {scenario['key']}: {scenario['title']}", ""]
        verdict = "passed" if scenario["ok"] else "**failed**"
        lines += [f"{verdict} in {scenario['seconds']} s.", ""]
        if scenario["error"]:
            lines += [f"Could not be carried out: `{scenario['error']}`", ""]
        lines += ["| check | result |", "|---|---|"]
        for check in scenario["checks"]:
            result = "ok" if check["ok"] else "; ".join(check["problems"][:3]).replace("|", "\\|")
            lines.append(f"| {check['name']} | {result} |")
        figures = ", ".join(f"{k} = {_plain(v)}" for k, v in scenario["figures"].items())
        lines += ["", f"Figures: {figures}." if figures else "", ""]
    lines += [
        "## Run it",
        "",
        "```console",
        "$ make chaos                                   # the full sizes (the figures above when profile is full)",
        "$ .venv/bin/python -m benchmarks.chaos --reduced  # the sizes `make test` uses",
        "$ .venv/bin/python -m benchmarks.chaos --only kill,failover --seed 7",
        "```",
        "",
        "The checks are in `benchmarks/chaos_checks.py`; each one names the objects concerned when it fails.",
        "",
        PAGE_FINDINGS,
    ]
    return "\n".join(lines)


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{value} s"


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the sizes of the reduced suite (make test)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"comma-separated among {', '.join(SCENARIOS)}")
    parser.add_argument("--seed", type=int, default=0, help="the random seed (kill moments, specs, faults)")
    parser.add_argument("--json", type=pathlib.Path, default=RESULTS_JSON, help="where the figures go")
    parser.add_argument("--markdown", type=pathlib.Path, default=RESULTS_PAGE, help="where the page goes")
    parser.add_argument("--logs-dir", type=pathlib.Path, help="keep kubeconfigs and operator logs there")
    parser.add_argument("--render", action="store_true", help="only rewrite the page from the JSON of the last run")
    args = parser.parse_args(argv)
    if args.render:
        args.markdown.write_text(markdown(json.loads(args.json.read_text())))
        return 0
    only = [key.strip() for key in args.only.split(",") if key.strip()]
    unknown = sorted(set(only) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose among {', '.join(SCENARIOS)}")
    sizes = REDUCED if args.reduced else FULL
    results = run_all(sizes, only, args.seed, args.logs_dir, out=lambda line: print(line, flush=True))
    doc = document(results, sizes, args.seed)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(markdown(doc))
    print()
    print(table(results))
    print()
    print(json.dumps(doc["summary"], default=str))
    return 0 if all(r.ok for r in results) else 1


@contextlib.contextmanager
def _in_process_logs(directory: pathlib.Path) -> Iterator[None]:
    """The operator run in this process (deletions) logs to a file of the run, not over the harness's output."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "in-process.log").open("a") as stream:
        logs.configure("json", stream=stream)
        try:
            yield
        finally:
            structlog.reset_defaults()


if __name__ == "__main__":
    sys.exit(main())
