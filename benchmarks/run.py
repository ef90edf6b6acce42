"""The benchmark harness: ``python -m benchmarks.run --n 200`` — okt, Kopf and the raw floor, side by side.

Measures the same way for everyone what a framework costs to converge, at rest and on a change; the method, the
phases and the guarantees (bounded waits naming contender and phase, operators always stopped, a failed measurement
recorded and the run going on, exit status 1) are in ``benchmarks/README.md``.
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
from typing import Any, TypeVar, cast

from benchmarks import cluster, contenders, report, runtime_env, watched
from okt import errors
from okt.kube import client as kube_client
from okt.runtime import logs as okt_logs
from okt.testing import audit, crds, envtest, process, waiting

RESULTS = contenders.ROOT / "benchmarks" / "results"
DEFAULT_PAGE = contenders.ROOT / "docs" / "benchmarks.md"
CRD = contenders.CRD
QUIET_SECONDS = 2.0
READY_QUIET_SECONDS = 1.0
CONTROLLERS = ("garbagecollector", "namespace", "deployment")
"""No replicaset controller: Pods would only add the same Pending-pod churn to every contender's run."""
OBJECTS_PER_CR = 4
"""Objects of the job per Memcached: the CR, its ConfigMap, Service and Deployment."""
T = TypeVar("T")
Detail = Callable[[], str] | None
"""What a bounded wait says it last saw, when it runs out."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    n: int
    rounds: int
    workers: int
    steady_seconds: float
    size: int = 1
    new_size: int = 2
    contenders: tuple[contenders.Contender, ...]
    crd: pathlib.Path = CRD
    json_path: pathlib.Path
    markdown_path: pathlib.Path
    logs_dir: pathlib.Path | None
    timeout_scale: float
    mix: bool = False
    """The realistic mix (``--mix``, see ``benchmarks/README.md``)."""

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


def until(
    predicate: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    interval: float = watched.POLL_INTERVAL,
    detail: Detail = None,
    alive: process.OperatorProcess | None = None,
) -> T:
    """Ask ``predicate`` until it gives something true, and return that: a timeout is a BenchTimeout, and ``alive``
    (the operator the wait is about) exiting first a BenchError. An exception the predicate raises is a "not yet"."""

    def asked() -> T | bool | None:
        return (alive is not None and not alive.alive) or predicate()

    try:
        found = waiting.wait_for(asked, timeout, interval, lambda: f"{what}; {detail()}" if detail else what)
    except waiting.WaitTimeout as exc:
        raise cluster.BenchTimeout(str(exc)) from None
    if alive is not None:
        check_alive(alive, what)
    return cast("T", found)


def check_alive(proc: process.OperatorProcess, what: str) -> None:
    if not proc.alive:
        raise cluster.BenchError(f"{proc.name} exited ({proc.returncode}) during {what}:\n{proc.tail()}")


def poll(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    interval: float = watched.POLL_INTERVAL,
    detail: Detail = None,
) -> float:
    """Ask ``predicate`` until it is true, as :func:`until` does; returns the wall-clock time it first was."""
    return until(lambda: time.time() if predicate() else None, timeout, what, interval=interval, detail=detail)


MEASUREMENT_ERRORS = (cluster.BenchError, envtest.ControlPlaneError, errors.OktError, OSError)
"""What ends a measurement, recorded as its error; the run goes on."""


def failure(tag: str, exc: BaseException) -> str:
    """``exc`` as a failed measurement records it, said with its ``tag``."""
    error = f"{'control plane: ' if isinstance(exc, envtest.ControlPlaneError) else ''}{type(exc).__name__}: {exc}"
    say(f"{tag} FAILED: {error}")
    return error


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
        """A new control plane (empty etcd, CRD installed before the controller manager) for one measurement, so none
        inherits what the one before left (see ``benchmarks/README.md``); ``more_users`` get tokens too."""
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

    def kubeconfig(self, m: Measurement) -> pathlib.Path:
        """The contender's kubeconfig, as its token user, with ``disable-compression`` (``benchmarks/README.md``)."""
        return self.plane.kubeconfig_for(self.tokens[m.user], self.logs / f"kubeconfig-{m.user}", compression=False)

    def launch(self, m: Measurement, tag: str) -> process.OperatorProcess:
        """Start the contender as its own process (under its token user), sampled for CPU; kept in ``m.running``."""
        kubeconfig = self.kubeconfig(m)
        proc = m.contender.launch(
            kubeconfig, m.namespace, self.settings.workers, self.logs, tag, self.bin_dir, sample_cpu=True
        )
        m.running.append(proc)
        return proc.start()

    def wait_idle(
        self,
        proc: process.OperatorProcess,
        user: str,
        since: float,
        what: str,
        timeout: float | None = None,
        quiet: float = QUIET_SECONDS,
    ) -> float:
        """Wait until ``proc`` sent no request and used no CPU for ``quiet`` s; returns when it became idle."""
        timeout = timeout or self.settings.timeout(60, 0.3)
        last = {"request": since, "busy": since}

        def idle_since() -> float | None:
            self.audit.refresh()
            last["request"] = self.audit.last_request_at(user, since) or since
            last["busy"] = proc.last_busy_at(since) or since
            candidate = max(since, last["request"], last["busy"])
            return candidate if time.time() - candidate >= quiet + audit.FLUSH_LAG else None

        def busy() -> str:
            request, cpu = (time.time() - last[moment] for moment in ("request", "busy"))
            return f"last request {request:.1f}s ago, last busy CPU interval {cpu:.1f}s ago"

        return until(idle_since, timeout, f"{proc.name} idle after {what}", interval=0.25, detail=busy, alive=proc)

    def requests(self, m: Measurement, start: float, end: float) -> dict[str, Any]:
        """``m``'s requests from ``start`` to ``end``, once the audit log has been written past ``end``."""
        self.audit.settle(end)
        return self.audit.counts(m.user, start, end).to_json()

    def wait_ready(self, proc: process.OperatorProcess, user: str, ready_line: str | None = None) -> float:
        """Wait until ``proc`` watches the custom resources (or logged ``ready_line``), then until it is idle."""

        def watching() -> bool:
            self.audit.refresh()
            return (ready_line is not None and proc.logged(ready_line)) or any(
                r.verb == "watch" and r.resource == cluster.MEMCACHED.plural
                for r in self.audit.requests(user, proc.started_at)
            )

        timeout, what = self.settings.timeout(90, 0), f"{proc.name} to watch {cluster.MEMCACHED.plural}"
        until(watching, timeout, what, interval=0.2, detail=proc.tail, alive=proc)
        return self.wait_idle(proc, user, proc.started_at, "start-up", timeout, quiet=READY_QUIET_SECONDS)

    def sleep_alive(self, proc: process.OperatorProcess, until: float, what: str) -> None:
        while time.time() < until:
            check_alive(proc, what)
            time.sleep(min(0.5, max(0.0, until - time.time())))

    # -- one measurement -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def started(self, m: Measurement, tag: str, *more_users: str) -> Iterator[process.OperatorProcess]:
        """A fresh control plane holding ``m``'s namespace, and ``m``'s contender launched there (``tag``) and ready;
        at the end every process it ran is stopped and the harness's view of its namespace closed."""
        with self.fresh_plane(m.user, *more_users):
            cluster.create_namespace(self.client, m.namespace)
            try:
                first = self.launch(m, tag)
                self.wait_ready(first, m.user, m.contender.ready_line)
                yield first
            finally:
                for proc in m.running:
                    proc.stop()
                if m.view is not None:
                    m.view.close()

    def measure(self, contender: contenders.Contender, round_no: int) -> dict[str, Any]:
        """The phases in order, on one namespace of a fresh control plane; a failure ends the measurement with its
        error."""
        user = f"bench-{contender.key}-r{round_no}"
        namespace = f"bench-{contender.key}-r{round_no}-{secrets.token_hex(3)}"
        m = Measurement(contender, user, namespace, f"[round {round_no} {contender.key}]")
        result: dict[str, Any] = {
            "contender": contender.key,
            "round": round_no,
            "namespace": namespace,
            "converged": False,
            "error": None,
        }
        try:
            with self.started(m, "converge") as first:
                result["ready_rss_mib"] = memory(first)["rss_mib"]
                say(f"{m.tag} ready; creating {self.settings.n} Memcached objects")
                result["converge"] = self.converge(m, first)
                result["converged"] = True
                second = self.launch(m, "restart")
                result["restart"] = self.restart(m, second)
                result["spec_change"] = self.spec_change(m, second)
        except MEASUREMENT_ERRORS as exc:
            result["converged"], result["error"] = False, failure(m.tag, exc)
        return result

    # -- the phases ----------------------------------------------------------------------------------------------

    def converge(self, m: Measurement, first: process.OperatorProcess) -> dict[str, Any]:
        """N objects created at once (watched from now on): the time until all converged, then the operator's
        requests from its start to its stop (once idle), its CPU and memory, and the control plane's CPU."""
        s = self.settings
        m.view = view = watched.WatchedNamespace(self.client, m.namespace, s.n).start()
        plane_before = self.plane_cpu()
        started = cluster.create_custom_resources(self.client, m.namespace, s.n, s.sizes(), s.workers)
        limit = self.converge_limits.get(m.contender.key, s.timeout(120, 1.5))
        converged_at = poll(view.converged, limit, f"{m.contender.key} to converge", detail=lambda: view.last)
        plane_converge = self.plane_cpu(since=plane_before)
        idle_at = self.wait_idle(first, m.user, started, "convergence")
        used = memory(first)
        cpu = round(first.cpu_seconds(), 2)
        first.stop()
        figures: dict[str, Any] = {
            "seconds": round(converged_at - started, 3),
            "settle_seconds": round(max(0.0, idle_at - converged_at), 3),
            "requests": self.requests(m, first.started_at, time.time()),
            "cpu_seconds": cpu,
            "control_plane_cpu_seconds": plane_converge,
            **used,
        }
        say(f"{m.tag} converged in {converged_at - started:.2f}s, {figures['requests']['writes']} writes; restarting")
        return figures

    def restart(self, m: Measurement, second: process.OperatorProcess) -> dict[str, Any]:
        """A new process over the converged objects: when it became idle, and its requests from its start until then
        or until ``steady_seconds`` have passed, whichever is later."""
        s = self.settings
        plane_before, plane_from = self.plane_cpu(), time.time()
        window_end = second.started_at + s.steady_seconds
        self.sleep_alive(second, window_end, "the restart window")
        idle_at = self.wait_idle(second, m.user, second.started_at, "the restart")
        plane_restart, plane_to = self.plane_cpu(since=plane_before), time.time()
        counted_until = max(window_end, idle_at)
        requests = self.requests(m, second.started_at, counted_until)
        used = memory(second)
        figures: dict[str, Any] = {
            "window_seconds": round(counted_until - second.started_at, 3),
            "requests": requests,
            "idle_after_seconds": round(idle_at - second.started_at, 3),
            "cpu_seconds": round(second.cpu_seconds(), 2),
            "control_plane_cpu_seconds": plane_restart,  # the Pod work the convergence left competes with a restart
            "control_plane_window_seconds": round(plane_to - plane_from, 1),
            **used,
        }
        if m.contender in (contenders.RAW, contenders.RAW_OKT):
            plane_before = self.plane_cpu()
            figures["list_everything_seconds"] = self.list_everything(m)
            figures["list_everything_control_plane_cpu_seconds"] = self.plane_cpu(since=plane_before)
        say(
            f"{m.tag} restart: {requests['writes']} writes in {figures['window_seconds']:.0f}s, idle after "
            f"{figures['idle_after_seconds']:.2f}s; changing spec.size on all"
        )
        return figures

    def list_everything(self, m: Measurement) -> float:
        """Seconds from the start to the exit of the floor's client listing the four kinds once
        (:func:`benchmarks.raw_floor.list_everything`; why in ``benchmarks/README.md``)."""
        kubeconfig = self.kubeconfig(m)
        lister = contenders.LISTER.launch(kubeconfig, m.namespace, 1, self.logs, "list", self.bin_dir).start()
        try:
            timeout = self.settings.timeout(60, 0.1)
            ended = poll(lambda: lister.returncode is not None, timeout, f"{lister.name} to exit", interval=0.01)
        finally:
            lister.stop()  # nothing to do once it exited
        expected = f"raw-floor: listed {OBJECTS_PER_CR * self.settings.n}\n"  # the whole line: 40000 is not 4000
        if lister.returncode != 0 or not lister.logged(expected):
            raise cluster.BenchError(f"{lister.name} exited {lister.returncode}, not {expected!r}:\n{lister.tail()}")
        return round(ended - lister.started_at, 3)

    def spec_change(self, m: Measurement, second: process.OperatorProcess) -> dict[str, Any]:
        """``spec.size`` patched on all N: the time until every Deployment follows, then the requests, CPU and memory
        until the operator is idle again, and the control plane's CPU."""
        s, view = self.settings, m.seen
        plane_before, cpu_before = self.plane_cpu(), second.cpu_seconds()
        target = s.new_sizes()
        changed = cluster.patch_sizes(self.client, m.namespace, s.n, target, s.workers)
        what = f"{m.contender.key} to roll out spec.size={cluster.describe_sizes(target)}"
        rolled_at = poll(lambda: view.replicas_are(target), s.timeout(120, 1.0), what, detail=lambda: view.last)
        plane_change = self.plane_cpu(since=plane_before)
        self.wait_idle(second, m.user, changed, "the spec change")
        ended = time.time()
        used = memory(second)
        cpu = second.cpu_seconds()
        figures: dict[str, Any] = {
            "seconds": round(rolled_at - changed, 3),
            "requests": self.requests(m, changed, ended),
            "cpu_seconds": round(cpu - cpu_before, 2),
            "process_cpu_seconds": round(cpu, 2),
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


Option = tuple[str, type, Any, str]
"""A command-line option: its flag, type, default and help."""
SHARED: tuple[Option, ...] = (
    ("--workers", int, 8, "concurrent reconciles of every contender."),
    ("--steady-seconds", float, 30.0, "the restart window (default 30)."),
    ("--logs-dir", pathlib.Path, None, "keep the operators' logs here (default: a temporary folder, kept on failure)."),
    ("--timeout-scale", float, 1.0, "stretch every bounded wait."),
)
"""The options ``benchmarks.scale`` shares with this command."""
OPTIONS: tuple[Option, ...] = (
    ("--n", int, 200, "Memcached objects per measurement (default 200)."),
    ("--rounds", int, 2, "measurements per contender, the median is reported (default 2)."),
    ("--contenders", str, ",".join(c.key for c in contenders.ALL), "comma-separated keys, in order (default: all)."),
    (
        "--json",
        pathlib.Path,
        None,
        "the JSON output (default: benchmarks/results/n<N>.json; the page also shows the other n*.json there).",
    ),
    ("--markdown", pathlib.Path, None, "the markdown output (default: docs/benchmarks.md)."),
)


def parser_for(prog: str, description: str, options: Sequence[Option]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for flag, kind, default, text in (*options, *SHARED):
        parser.add_argument(flag, type=kind, default=default, help=text)
    return parser


def parsed(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed and checked, with the contenders it names as ``chosen``."""
    args = parser.parse_args(argv)
    sizes = args.n if isinstance(args.n, list) else [args.n]  # the scale run takes several
    if min(sizes) < 1 or args.workers < 1 or args.steady_seconds <= 0:
        parser.error("--n, --workers and --steady-seconds must be positive")
    try:
        args.chosen = tuple(contenders.by_key(k.strip()) for k in args.contenders.split(",") if k.strip())
    except KeyError as exc:
        parser.error(str(exc))
    return args


def parse(argv: Sequence[str] | None) -> Settings:
    parser = parser_for("python -m benchmarks.run", "okt vs Kopf vs the raw floor.", OPTIONS)
    parser.add_argument("--skip-kopf", action="store_true", help="leave Kopf out.")
    parser.add_argument(
        "--mix",
        action="store_true",
        help="the realistic mix: CRs ask for 1-3 replicas and the replicaset controller runs (default outputs: "
        "benchmarks/results/mix/n<N>.json and benchmarks.md beside it).",
    )
    args = parsed(parser, argv)
    chosen = tuple(c for c in args.chosen if not (args.skip_kopf and c is contenders.KOPF))
    if not chosen:
        parser.error("no contender left to run")
    results = RESULTS / "mix" if args.mix else RESULTS
    json_path = args.json or results / f"n{args.n}.json"
    return Settings(
        n=args.n,
        rounds=max(1, args.rounds),
        workers=args.workers,
        steady_seconds=args.steady_seconds,
        contenders=chosen,
        json_path=json_path,
        markdown_path=args.markdown or (json_path.parent / "benchmarks.md" if args.mix else DEFAULT_PAGE),
        logs_dir=args.logs_dir,
        timeout_scale=args.timeout_scale,
        mix=args.mix,
    )


def logs_folder(given: pathlib.Path | None, prefix: str) -> pathlib.Path:
    """Where the operators' logs go: ``given``, or a new temporary folder (the harness's own logging set up too)."""
    okt_logs.configure("console", verbosity=-1)  # the harness's own watches log only warnings (and errors)
    logs = given or pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    logs.mkdir(parents=True, exist_ok=True)
    return logs


def finish(command: str, ok: bool, logs: pathlib.Path, given: pathlib.Path | None, wrote: str) -> int:
    """Remove a temporary logs folder after a run that went well (else say where the logs are); the exit status."""
    if ok and given is None:
        shutil.rmtree(logs, ignore_errors=True)
    else:
        say(f"{command}: operator logs kept in {logs}")
    say(f"{command}: wrote {wrote}")
    return 0 if ok else 1


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
    logs = logs_folder(settings.logs_dir, "okt-bench-")
    say(
        f"bench: N={settings.n}, {settings.rounds} round(s), {settings.workers} workers, contenders "
        f"{', '.join(c.key for c in settings.contenders)}; logs in {logs}"
    )
    document = Bench(settings, logs, runtime_env.prepare()).run()
    labels = {c.key: c.label for c in contenders.ALL}
    descriptions = {c.key: c.description for c in contenders.ALL}
    report.write_json(settings.json_path, document)
    page = report.page(runs_beside(settings.json_path, document), labels, descriptions)
    report.write(settings.markdown_path, page)
    print(page)
    ok = all(summary["converged"] for summary in document["summary"].values())
    return finish("bench", ok, logs, settings.logs_dir, f"{settings.markdown_path} and {settings.json_path}")


if __name__ == "__main__":
    sys.exit(main())
