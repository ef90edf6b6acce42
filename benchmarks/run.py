"""The benchmark harness: ``python -m benchmarks.run --n 200`` — okt, Kopf and the raw floor, side by side.

Why this exists: to measure, the same way for everyone, what an operator framework costs on the way to convergence,
at rest, and on a change. Contenders take turns (the order rotates every round); every measurement gets a fresh local
control plane (empty etcd, its own audit log), so none inherits what the one before it left behind; each contender
runs as its own process under its own token user. The phases of one measurement (start, converge, restart, spec
change) are described in ``benchmarks/README.md`` and in each phase's docstring.

Guarantees: every wait is bounded (timeouts grow with N; ``--timeout-scale`` stretches them) and ends with a message
naming the contender, the phase and what was last seen; operator processes are always stopped (and die with the
harness in any case); a failed measurement is recorded with its error and the run goes on; the exit status is 1 if
any measurement failed. Outputs: ``benchmarks/results/n<N>.json`` (or ``--json``) and ``docs/benchmarks.md`` (or
``--markdown``), the page showing this run and the other sizes' JSON found next to it; the page is printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pathlib
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from benchmarks import cluster, contenders, report, runtime_env, watched
from okt import errors
from okt.kube import client as kube_client
from okt.runtime import logs as okt_logs
from okt.testing import audit, crds, envtest, process, waiting

RESULTS = contenders.ROOT / "benchmarks" / "results"
QUIET_SECONDS = 2.0
READY_QUIET_SECONDS = 1.0
CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would only add the same Pending-pod churn to every contender's run."""


@dataclasses.dataclass(frozen=True)
class Settings:
    n: int
    rounds: int
    workers: int
    steady_seconds: float
    size: int
    new_size: int
    contenders: tuple[contenders.Contender, ...]
    crd: pathlib.Path
    json_path: pathlib.Path
    markdown_path: pathlib.Path
    logs_dir: pathlib.Path | None
    timeout_scale: float
    mix: bool = False
    """The realistic mix: CRs ask for 1-3 replicas and the replicaset controller runs, so the control plane also does
    the Pod work a cluster does; the spec change adds one replica to every CR."""

    @property
    def controllers(self) -> tuple[str, ...]:
        return (*CONTROLLERS, "replicaset") if self.mix else CONTROLLERS

    def sizes(self) -> int | list[int]:
        """``spec.size`` at creation: one for all, or (the mix) each CR's own."""
        return cluster.mixed_sizes(self.n) if self.mix else self.size

    def new_sizes(self) -> int | list[int]:
        """``spec.size`` after the change (the mix: one more replica for every CR)."""
        return cluster.mixed_sizes(self.n, shift=1) if self.mix else self.new_size

    def timeout(self, base: float, per_object: float) -> float:
        return (base + per_object * self.n) * self.timeout_scale

    def to_json(self) -> dict[str, Any]:
        shown = ("n", "rounds", "workers", "steady_seconds", "size", "new_size")
        return {
            **{name: getattr(self, name) for name in shown},
            "contenders": [c.key for c in self.contenders],
            "controllers": list(self.controllers),
            "mix": self.mix,
        }


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def memory(proc: process.OperatorProcess) -> dict[str, float]:
    """The operator's memory now (VmRSS) and at its peak (VmHWM), in MiB."""
    rss, hwm = proc.memory_kib()
    return {"rss_mib": round(rss / 1024, 1), "peak_rss_mib": round(hwm / 1024, 1)}


def poll(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    *,
    interval: float = watched.POLL_INTERVAL,
    detail: Callable[[], str] | None = None,
) -> float:
    """Ask ``predicate`` until it is true; returns the wall-clock time it first was (a timeout is a BenchTimeout)."""
    try:
        return waiting.wait_for(
            lambda: predicate() and time.time(),
            timeout,
            interval,
            lambda: f"{what}; {detail()}" if detail is not None else what,
        )
    except waiting.WaitTimeout as exc:
        raise cluster.BenchTimeout(str(exc)) from None


@dataclasses.dataclass
class Measurement:
    """One contender in one round, as its phases share it: who runs where, and what is running."""

    contender: contenders.Contender
    user: str
    namespace: str
    tag: str
    """How its progress lines start (``[round 1 okt]``)."""
    view: watched.WatchedNamespace | None = None
    running: list[process.OperatorProcess] = dataclasses.field(default_factory=list)

    @property
    def seen(self) -> watched.WatchedNamespace:
        """The harness's view of the namespace (started once the operator is ready)."""
        if self.view is None:
            raise cluster.BenchError(f"{self.tag} no view of {self.namespace} yet")
        return self.view


class Bench:
    """One benchmark run: the settings, the measurements, and a fresh control plane for each measurement."""

    def __init__(self, settings: Settings, logs: pathlib.Path, bin_dir: pathlib.Path) -> None:
        self.settings = settings
        self.logs = logs
        self.bin_dir = bin_dir
        self.crd = crds.load_crd(settings.crd)
        self.server_version = ""
        # The current measurement's control plane, harness client, audit log and token users.
        self.plane: envtest.ControlPlane
        self.client: kube_client.Client
        self.audit: audit.AuditLog
        self.tokens: dict[str, envtest.TokenUser] = {}
        self.converge_limits: dict[str, float] = {}
        """Per contender key: how long its convergence may take before it is recorded as not finished."""

    @contextlib.contextmanager
    def fresh_plane(self, user: str, *more_users: str) -> Iterator[None]:
        """A new control plane (empty etcd, CRD installed before the controller manager) for one measurement.

        Why one per measurement: a contender that runs after another inherits what the first left behind — etcd's
        uncompacted history of thousands of deleted objects, the API server's grown heap, garbage collection still
        settling — and measured up to 40 % slower for it (the same contender, N=1000, first or second on a shared
        control plane). A fresh one gives every contender the same start, whatever the order. ``more_users`` get
        tokens too (two processes told apart in the audit log).
        """
        tokens = [envtest.TokenUser(u, secrets.token_hex(16), ("system:masters",)) for u in (user, *more_users)]
        s = self.settings
        with envtest.ControlPlane(
            audit_log=True, users=tokens, controllers=s.controllers, crds=[self.crd], out=say
        ) as plane:
            self.plane = plane
            self.client = kube_client.Client.from_kubeconfig(plane.kubeconfig, pool_size=self.settings.workers * 2 + 4)
            self.audit = audit.AuditLog(plane.audit_log_path, [t.name for t in tokens])
            self.tokens = {t.name: t for t in tokens}
            try:
                crds.ensure_crd(self.client, self.crd, timeout=60.0)
                self.server_version = self.server_version or self.client.server_version()
                yield
            finally:
                self.client.close()

    def plane_cpu(self, since: dict[str, float] | None = None) -> dict[str, float]:
        """CPU seconds of each control-plane process so far, or (``since``) spent since that reading."""
        now = {name: process.cpu_seconds_of(pid) for name, pid in self.plane.process_ids().items()}
        if since is None:
            return now
        return {name: round(seconds - since.get(name, 0.0), 2) for name, seconds in now.items()}

    # -- the operator's life -----------------------------------------------------------------------------------------

    def launch(self, m: Measurement, tag: str) -> process.OperatorProcess:
        """Start the contender as its own process (under its token user), sampled for CPU; kept in ``m.running``."""
        kubeconfig = self.plane.kubeconfig_for(self.tokens[m.user], self.logs / f"kubeconfig-{m.user}")
        launch = m.contender.launch(kubeconfig, m.namespace, self.settings.workers, self.bin_dir)
        proc = process.OperatorProcess(
            launch.argv,
            name=f"{m.contender.key}-{tag}",
            env=launch.env,
            log_path=self.logs / f"{m.namespace}-{tag}.log",
            cwd=contenders.ROOT,
            sample_cpu=True,
        )
        m.running.append(proc)
        return proc.start()

    def wait_idle(
        self,
        proc: process.OperatorProcess,
        user: str,
        since: float,
        what: str,
        timeout: float,
        quiet: float = QUIET_SECONDS,
    ) -> float:
        """Wait until ``proc`` sent no request and used no CPU for ``quiet`` s; returns when it became idle."""
        deadline = time.monotonic() + timeout
        while True:
            self.audit.refresh()
            last_request = self.audit.last_request_at(user, since) or since
            last_busy = proc.last_busy_at(since) or since
            candidate = max(since, last_request, last_busy)
            now = time.time()
            if now - candidate >= quiet + audit.FLUSH_LAG:
                return candidate
            self.check_alive(proc, what)
            if time.monotonic() >= deadline:
                raise cluster.BenchTimeout(
                    f"{proc.name} still busy {timeout:.0f}s into {what}: last request {now - last_request:.1f}s ago, "
                    f"last busy CPU interval {now - last_busy:.1f}s ago"
                )
            time.sleep(0.25)

    def wait_ready(self, proc: process.OperatorProcess, user: str, ready_line: str | None = None) -> float:
        timeout = self.settings.timeout(90, 0)
        deadline = time.monotonic() + timeout
        while True:
            self.audit.refresh()
            watching = (ready_line is not None and proc.logged(ready_line)) or any(
                r.verb == "watch" and r.resource == cluster.MEMCACHED.plural
                for r in self.audit.requests(user, proc.started_at)
            )
            if watching:
                break
            self.check_alive(proc, "start-up")
            if time.monotonic() >= deadline:
                raise cluster.BenchTimeout(
                    f"{proc.name} did not watch {cluster.MEMCACHED.plural} within {timeout:.0f}s:\n{proc.tail()}"
                )
            time.sleep(0.2)
        return self.wait_idle(proc, user, proc.started_at, "start-up", timeout, quiet=READY_QUIET_SECONDS)

    @staticmethod
    def check_alive(proc: process.OperatorProcess, what: str) -> None:
        if not proc.alive:
            raise cluster.BenchError(f"{proc.name} exited ({proc.returncode}) during {what}:\n{proc.tail()}")

    def sleep_alive(self, proc: process.OperatorProcess, until: float, what: str) -> None:
        while time.time() < until:
            self.check_alive(proc, what)
            time.sleep(min(0.5, max(0.0, until - time.time())))

    # -- one measurement -------------------------------------------------------------------------------------------

    def measure(self, contender: contenders.Contender, round_no: int) -> dict[str, Any]:
        user = f"bench-{contender.key}-r{round_no}"
        namespace = f"bench-{contender.key}-r{round_no}-{secrets.token_hex(3)}"
        result: dict[str, Any] = {
            "contender": contender.key,
            "round": round_no,
            "namespace": namespace,
            "converged": False,
            "error": None,
        }
        try:
            with self.fresh_plane(user):
                self._measure(Measurement(contender, user, namespace, f"[round {round_no} {contender.key}]"), result)
        except (envtest.ControlPlaneError, errors.OktError, OSError) as exc:
            result["converged"] = False
            result["error"] = result["error"] or f"control plane: {type(exc).__name__}: {exc}"
            say(f"[round {round_no} {contender.key}] FAILED: {result['error']}")
        return result

    def _measure(self, m: Measurement, result: dict[str, Any]) -> None:
        """The phases in order, on one namespace; a failure ends the measurement with its error."""
        cluster.create_namespace(self.client, m.namespace)
        try:
            first = self.launch(m, "converge")
            self.wait_ready(first, m.user, m.contender.ready_line)
            result["ready_rss_mib"] = memory(first)["rss_mib"]
            say(f"{m.tag} ready; creating {self.settings.n} Memcached objects")
            m.view = watched.WatchedNamespace(self.client, m.namespace, self.settings.n).start()
            result["converge"] = self.converge(m, first)
            result["converged"] = True
            second = self.launch(m, "restart")
            result["restart"] = self.restart(m, second)
            result["spec_change"] = self.spec_change(m, second)
        except (cluster.BenchError, errors.OktError, OSError) as exc:
            result["converged"] = False
            result["error"] = f"{type(exc).__name__}: {exc}"
            say(f"{m.tag} FAILED: {result['error']}")
        finally:
            for proc in m.running:
                proc.stop()
            if m.view is not None:
                m.view.close()

    # -- the phases ----------------------------------------------------------------------------------------------

    def converge(self, m: Measurement, first: process.OperatorProcess) -> dict[str, Any]:
        """N objects created at once: the time until all converged, then the operator's requests from its start to
        its stop (once idle), its CPU and memory, and the control plane's CPU."""
        s, view = self.settings, m.seen
        plane_before = self.plane_cpu()
        started = cluster.create_custom_resources(self.client, m.namespace, s.n, s.sizes(), s.workers)
        limit = self.converge_limits.get(m.contender.key, s.timeout(120, 1.5))
        converged_at = poll(view.converged, limit, f"{m.contender.key} to converge", detail=lambda: view.last)
        plane_converge = self.plane_cpu(since=plane_before)
        idle_at = self.wait_idle(first, m.user, started, "convergence", s.timeout(60, 0.3))
        used = memory(first)
        cpu = round(first.cpu_seconds(), 2)
        first.stop()
        stopped_at = time.time()
        self.audit.settle(stopped_at)
        figures: dict[str, Any] = {
            "seconds": round(converged_at - started, 3),
            "settle_seconds": round(max(0.0, idle_at - converged_at), 3),
            "requests": self.audit.counts(m.user, first.started_at, stopped_at).to_json(),
            "cpu_seconds": cpu,
            "control_plane_cpu_seconds": plane_converge,
            **used,
        }
        say(f"{m.tag} converged in {converged_at - started:.2f}s, {figures['requests']['writes']} writes; restarting")
        return figures

    def restart(self, m: Measurement, second: process.OperatorProcess) -> dict[str, Any]:
        """A new process over the converged objects: its requests in the first ``steady_seconds``, and when it
        became idle."""
        s = self.settings
        window_end = second.started_at + s.steady_seconds
        self.sleep_alive(second, window_end, "the restart window")
        self.audit.settle(window_end)
        restart_counts = self.audit.counts(m.user, second.started_at, window_end)
        idle_at = self.wait_idle(second, m.user, second.started_at, "the restart", s.timeout(60, 0.3))
        used = memory(second)
        say(
            f"{m.tag} restart: {restart_counts.writes} writes in {s.steady_seconds:.0f}s, idle after "
            f"{idle_at - second.started_at:.2f}s; changing spec.size on all"
        )
        return {
            "window_seconds": s.steady_seconds,
            "requests": restart_counts.to_json(),
            "idle_after_seconds": round(idle_at - second.started_at, 3),
            **used,
        }

    def spec_change(self, m: Measurement, second: process.OperatorProcess) -> dict[str, Any]:
        """``spec.size`` patched on all N: the time until every Deployment follows, the requests until the operator
        is idle again, its CPU and memory, and the control plane's CPU."""
        s, view = self.settings, m.seen
        plane_before = self.plane_cpu()
        target = s.new_sizes()
        changed = cluster.patch_sizes(self.client, m.namespace, s.n, target, s.workers)
        what = f"{m.contender.key} to roll out spec.size={cluster.describe_sizes(target)}"
        rolled_at = poll(lambda: view.replicas_are(target), s.timeout(120, 1.0), what, detail=lambda: view.last)
        plane_change = self.plane_cpu(since=plane_before)
        self.wait_idle(second, m.user, changed, "the spec change", s.timeout(60, 0.3))
        ended = time.time()
        used = memory(second)
        cpu = round(second.cpu_seconds(), 2)
        self.audit.settle(ended)
        figures: dict[str, Any] = {
            "seconds": round(rolled_at - changed, 3),
            "requests": self.audit.counts(m.user, changed, ended).to_json(),
            "cpu_seconds": cpu,
            "control_plane_cpu_seconds": plane_change,
            **used,
        }
        say(f"{m.tag} spec change rolled out in {rolled_at - changed:.2f}s, {figures['requests']['writes']} writes")
        return figures

    def run(self) -> dict[str, Any]:
        s = self.settings
        rounds: dict[str, list[dict[str, Any]]] = {c.key: [] for c in s.contenders}
        for round_no in range(1, s.rounds + 1):
            shift = (round_no - 1) % len(s.contenders)
            order = s.contenders[shift:] + s.contenders[:shift]
            for contender in order:
                rounds[contender.key].append(self.measure(contender, round_no))
        summaries = {key: report.summarize(results) for key, results in rounds.items()}
        report.add_ratios(summaries)
        return {
            "machine": report.machine_info(self.server_version),
            "settings": s.to_json(),
            "summary": summaries,
            "rounds": rounds,
        }


# -- command line ------------------------------------------------------------------------------------------------------

OPTIONS: tuple[tuple[str, type, Any, str], ...] = (
    ("--n", int, 200, "Memcached objects per measurement (default 200)."),
    ("--rounds", int, 2, "measurements per contender, the median is reported (default 2)."),
    ("--workers", int, 8, "concurrent reconciles of every contender."),
    ("--steady-seconds", float, 30.0, "the restart window (default 30)."),
    ("--contenders", str, ",".join(c.key for c in contenders.ALL), "comma-separated keys, in order (default: all)."),
    (
        "--json",
        pathlib.Path,
        None,
        "the JSON output (default: benchmarks/results/n<N>.json; the page also shows the other n*.json there).",
    ),
    ("--markdown", pathlib.Path, contenders.ROOT / "docs" / "benchmarks.md", "the markdown output."),
    (
        "--logs-dir",
        pathlib.Path,
        None,
        "keep the operators' logs here (default: a temporary directory, kept on failure).",
    ),
    ("--timeout-scale", float, 1.0, "stretch every bounded wait."),
)


def parse(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description="okt vs Kopf vs the raw floor.")
    for flag, kind, default, text in OPTIONS:
        parser.add_argument(flag, type=kind, default=default, help=text)
    parser.add_argument("--skip-kopf", action="store_true", help="leave Kopf out.")
    args = parser.parse_args(argv)
    if args.n < 1 or args.workers < 1 or args.steady_seconds <= 0:
        parser.error("--n, --workers and --steady-seconds must be positive")
    try:
        chosen = tuple(contenders.by_key(k.strip()) for k in args.contenders.split(",") if k.strip())
    except KeyError as exc:
        parser.error(str(exc))
    chosen = tuple(c for c in chosen if not (args.skip_kopf and c is contenders.KOPF))
    if not chosen:
        parser.error("no contender left to run")
    return Settings(
        n=args.n,
        rounds=max(1, args.rounds),
        workers=args.workers,
        steady_seconds=args.steady_seconds,
        size=1,
        new_size=2,
        contenders=chosen,
        crd=contenders.CRD,
        json_path=args.json or RESULTS / f"n{args.n}.json",
        markdown_path=args.markdown,
        logs_dir=args.logs_dir,
        timeout_scale=args.timeout_scale,
    )


def runs_beside(json_path: pathlib.Path, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """This run's document and those of other sizes next to it (``n<N>.json``), by the path the page names them."""

    def shown(path: pathlib.Path) -> str:
        return str(path.relative_to(contenders.ROOT)) if path.is_relative_to(contenders.ROOT) else str(path)

    runs = {shown(json_path): document}
    for other in sorted(json_path.parent.glob("n*.json")):
        if other.resolve() == json_path.resolve():
            continue
        try:
            earlier = json.loads(other.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(earlier, dict) and earlier.get("settings", {}).get("n") != document["settings"]["n"]:
            runs[shown(other)] = earlier
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse(argv)
    okt_logs.configure("console", verbosity=-1)  # the harness's own watches log only warnings (and errors)
    logs = settings.logs_dir or pathlib.Path(tempfile.mkdtemp(prefix="okt-bench-"))
    logs.mkdir(parents=True, exist_ok=True)
    say(
        f"bench: N={settings.n}, {settings.rounds} round(s), {settings.workers} workers, contenders "
        f"{', '.join(c.key for c in settings.contenders)}; logs in {logs}"
    )
    bench = Bench(settings, logs, runtime_env.prepare())
    document = bench.run()
    labels = {c.key: c.label for c in contenders.ALL}
    descriptions = {c.key: c.description for c in contenders.ALL}
    report.write(settings.json_path, json.dumps(document, indent=2, sort_keys=False) + "\n")
    page = report.page(runs_beside(settings.json_path, document), labels, descriptions)
    report.write(settings.markdown_path, page)
    print(page)
    ok = all(summary["converged"] for summary in document["summary"].values())
    if ok and settings.logs_dir is None:
        shutil.rmtree(logs, ignore_errors=True)
    else:
        say(f"bench: operator logs kept in {logs}")
    say(f"bench: wrote {settings.markdown_path} and {settings.json_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
