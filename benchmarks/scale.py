"""The scale benchmark: ``python -m benchmarks.scale --n 1000 3000 10000`` — how okt's cost grows with N.

Runs :mod:`benchmarks.run`'s measurement at each N with the realistic mix (the floor first, Kopf within
:data:`KOPF_LIMIT` times its time), then okt's two phases of :mod:`benchmarks.phases`, and prints the tables: see
"The scale run" in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import pathlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks import contenders, phases, report, run, runtime_env

DEFAULT_SIZES = (1000, 3000, 10000)
CACHED_PER_CR = run.OBJECTS_PER_CR
KOPF_LIMIT = 3.0
"""Kopf is measured where it converges within this many times the floor's convergence time."""


def settings_for(n: int, args: argparse.Namespace) -> run.Settings:
    return run.Settings(
        n=n,
        rounds=1,
        workers=args.workers,
        steady_seconds=args.steady_seconds,
        contenders=args.chosen,
        json_path=args.json,
        markdown_path=args.json.with_suffix(".md"),
        logs_dir=args.logs_dir,
        timeout_scale=args.timeout_scale,
        mix=True,
    )


def measure_size(
    n: int, args: argparse.Namespace, logs: pathlib.Path, skip: set[str]
) -> tuple[dict[str, dict[str, Any]], str]:
    """Every contender at one N, the floor first; Kopf given :data:`KOPF_LIMIT` times the floor's time. With the
    results, the version the API server reported."""
    bench = run.Bench(settings_for(n, args), logs, runtime_env.prepare())
    results: dict[str, dict[str, Any]] = {}
    ordered = sorted(args.chosen, key=lambda c: c.key != contenders.RAW.key)
    for contender in ordered:
        if contender.key in skip:
            results[contender.key] = {"converged": False, "error": "skipped: did not finish at a smaller N"}
            continue
        floor = results.get(contenders.RAW.key, {}).get("converge", {}).get("seconds")
        if contender is contenders.KOPF and floor:
            bench.converge_limits[contender.key] = KOPF_LIMIT * float(floor)
        run.say(f"scale: N={n} {contender.key}")
        results[contender.key] = bench.measure(contender, 1)
        if contender is contenders.KOPF and not results[contender.key].get("converged"):
            skip.add(contender.key)
        if not args.skip_phases:
            converged = bool(results[contender.key].get("converged"))
            results[contender.key]["phases"] = phases.measure(bench, contender, converged)
    return results, bench.server_version


def figures(result: Mapping[str, Any], n: int) -> dict[str, float | None]:
    """The figures of one measurement by dotted path (None where the phase did not run), with the memory per cached
    object above the RSS the operator had when it was ready."""
    flat: dict[str, float | None] = dict(report.flatten(result))
    ready, rss = flat.get("ready_rss_mib"), flat.get("converge.rss_mib")
    if ready is not None and rss is not None:
        flat[KIB_PER_OBJECT] = round((rss - ready) * 1024 / (CACHED_PER_CR * n), 2)
    return flat


RATIO, KIB_PER_OBJECT, RESTART_RATIO = "ratio", "kib_per_object", "restart_ratio"
COLUMNS = (
    ("converge.seconds", "conv s"),
    (RATIO, "x floor"),
    ("converge.requests.writes", "writes"),
    ("converge.requests.reads", "reads"),
    ("converge.cpu_seconds", "CPU s"),
    ("converge.rss_mib", "RSS MiB"),
    ("converge.peak_rss_mib", "peak MiB"),
    (KIB_PER_OBJECT, "KiB/obj"),
    ("restart.requests.writes", "rst writes"),
    ("restart.idle_after_seconds", "rst idle s"),
    ("restart.list_everything_seconds", "floor list-all s"),
    (RESTART_RATIO, "rst idle x floor list-all"),
    ("restart.rss_mib", "rst RSS"),
    ("restart.peak_rss_mib", "rst peak"),
    ("spec_change.seconds", "chg s"),
    ("spec_change.requests.writes", "chg writes"),
    ("spec_change.peak_rss_mib", "chg peak"),
)
GROWTH = (
    "converge.seconds",
    "converge.cpu_seconds",
    "converge.rss_mib",
    "converge.peak_rss_mib",
    "restart.idle_after_seconds",
    "spec_change.seconds",
)


def _over(mine: float | None, floor: float | None) -> float | None:
    return round(mine / floor, 2) if mine and floor else None


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def tables(document: Mapping[str, Any]) -> str:
    """The per-N table and the growth per 1000 objects between consecutive sizes, per contender."""
    rows: dict[str, dict[int, dict[str, Any]]] = {}
    lines = [report.row("N", "contender", *(label for _, label in COLUMNS)), report.rule(len(COLUMNS) + 2)]
    for n in sorted(int(n) for n in document["sizes"]):
        results = document["sizes"][str(n)]
        floor = figures(results.get(contenders.RAW.key, {}), n)
        for key, result in results.items():
            if not result.get("converged"):
                lines.append(report.row(n, key, f"not finished: {str(result.get('error'))[:80]}"))
                continue
            row: dict[str, Any] = dict(figures(result, n))
            row[RATIO] = _over(row.get("converge.seconds"), floor.get("converge.seconds"))
            listed = floor.get("restart.list_everything_seconds")
            row[RESTART_RATIO] = _over(row.get("restart.idle_after_seconds"), listed)
            rows.setdefault(key, {})[n] = row
            lines.append(report.row(n, key, *(_cell(row.get(col)) for col, _ in COLUMNS)))
    labels = dict(COLUMNS)
    lines += ["", "Growth per 1000 objects (N CRs; 4N cached objects) between consecutive sizes:", ""]
    lines += [report.row("contender", "from N", "to N", *(labels[col] for col in GROWTH)), report.rule(len(GROWTH) + 3)]
    for key, by_n in rows.items():
        for low, high in itertools.pairwise(sorted(by_n)):
            slopes = (_slope(by_n[low].get(col), by_n[high].get(col), (high - low) / 1000) for col in GROWTH)
            lines.append(report.row(key, low, high, *slopes))
    return "\n".join([*lines, "", phase_table(document)])


def _slope(low: float | None, high: float | None, per: float) -> str:
    return "-" if low is None or high is None else f"{(high - low) / per:.2f}"


def _target(figures: Mapping[str, Any]) -> str:
    return f"≤ {figures['target_seconds']:g} s, {'met' if figures['met'] else 'MISSED'}"


def _fresh_cells(fresh: Mapping[str, Any]) -> list[str]:
    if not fresh.get("applicable", True):
        return [str(fresh.get("why", "not applicable")), "-", "-", "-"]
    at_ready = fresh["at_ready"]
    return [
        _cell(fresh["seconds"]),
        _target(fresh),
        f"{at_ready['sweep_keys_waiting']} ({'running' if fresh['sweep_running_at_ready'] else 'done'})",
        f"{at_ready['reconciles']} of {fresh['settled']['reconciles']}",
    ]


def _failover_cells(failover: Mapping[str, Any]) -> list[str]:
    if not failover.get("applicable", True):
        return [str(failover.get("why", "not applicable")), "-", "-", "-", "-"]
    return [
        _cell(failover["seconds"]),
        _target(failover),
        _cell(failover["became_leader_after_kill_seconds"]),
        str(failover["killed_leader_requests_after_kill"]),
        str(failover["standby_writes_before_leading"]),
    ]


def phase_table(document: Mapping[str, Any]) -> str:
    """Fresh events first and warm standby, per N and contender, each figure beside its target."""
    header = (
        "fresh Ready s",
        "target",
        "sweep keys waiting then",
        "reconciles then (of all)",
        "failover s",
        "target",
        "led after kill s",
        "killed leader's requests after kill",
        "standby writes before leading",
    )
    lines = [
        f"Fresh events first (a CR created {phases.FRESH_DELAY:g} s after a restart over N converged objects, until "
        f"Ready) and warm standby (leader killed with SIGKILL, lease {phases.LEASE_DURATION:g} s: until the standby "
        "reconciled a change made at the kill):",
        "",
        report.row("N", "contender", *header),
        report.rule(len(header) + 2),
    ]
    for n in sorted(int(n) for n in document["sizes"]):
        for key, result in document["sizes"][str(n)].items():
            measured = result.get("phases")
            if measured is None:
                continue
            if measured.get("error"):
                lines.append(report.row(n, key, f"failed: {str(measured['error'])[:100]}"))
                continue
            lines.append(
                report.row(n, key, *_fresh_cells(measured["fresh_first"]), *_failover_cells(measured["failover"]))
            )
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    options: tuple[run.Option, ...] = (
        ("--contenders", str, "raw,okt,kopf", "comma-separated keys (default raw,okt,kopf)."),
        ("--json", pathlib.Path, run.RESULTS / "scale.json", "the JSON output."),
    )
    parser = run.parser_for("python -m benchmarks.scale", "okt's cost as N grows.", options)
    parser.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_SIZES), help="sizes (default 1000 3000 10000)")
    parser.add_argument("--skip-phases", action="store_true", help="leave out okt's fresh-first and failover phases.")
    return run.parsed(parser, argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    logs = run.logs_folder(args.logs_dir, "okt-bench-scale-")
    run.say(f"scale: N={' '.join(map(str, args.n))}, contenders {args.contenders}; logs in {logs}")
    skip: set[str] = set()
    document: dict[str, Any] = {
        "sizes": {},
        "kopf_limit": KOPF_LIMIT,
        "cached_per_cr": CACHED_PER_CR,
        "targets": {
            "fresh_first_seconds": phases.FRESH_TARGET,
            "fresh_first_delay_seconds": phases.FRESH_DELAY,
            "failover_seconds": phases.LEASE_DURATION + phases.FAILOVER_SLACK,
            "lease_duration_seconds": phases.LEASE_DURATION,
        },
    }
    server = ""
    for n in sorted(args.n):
        document["sizes"][str(n)], version = measure_size(n, args, logs, skip)
        server = version or server
        document["settings"] = dataclasses.asdict(settings_for(n, args)) | {"n": sorted(args.n)}
        report.write_json(args.json, document)
    document["machine"] = report.machine_info(server)
    report.write_json(args.json, document)
    print(tables(document))
    ok = all(
        (result.get("converged") or key == contenders.KOPF.key) and not (result.get("phases") or {}).get("error")
        for results in document["sizes"].values()
        for key, result in results.items()
    )
    return run.finish("scale", ok, logs, args.logs_dir, str(args.json))


if __name__ == "__main__":
    sys.exit(main())
