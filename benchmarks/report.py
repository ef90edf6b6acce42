"""Machine facts, the median over rounds, and the two outputs: the markdown page and the JSON document.

A number without the machine, the date, N and the rounds is an anecdote; medians are taken over the rounds that
converged, and ratios only against a floor that converged.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

Round = Mapping[str, Any]
SMALL_N = 200
"""Below this many objects a run is a smoke test: the page says so."""


def machine_info(kubernetes_version: str) -> dict[str, Any]:
    """CPU model, cores, memory, Python, Kubernetes, the frameworks' versions, and the date (UTC)."""
    memory_kib = _proc_field("/proc/meminfo", "MemTotal:", "0 kB").split()[0]
    return {
        "cpu_model": _proc_field("/proc/cpuinfo", "model name", "unknown"),
        "cores": os.cpu_count() or 0,
        "memory_gib": round(int(memory_kib) / 1024**2, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "kubernetes": kubernetes_version,
        "okt": _version("okt"),
        "kopf": _version("kopf"),
        "date": utc_now(),
    }


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _proc_field(path: str, prefix: str, default: str) -> str:
    """The value of the first ``prefix: value`` line of a /proc file (``default`` when there is none)."""
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except OSError:
        return default
    return next((line.partition(":")[2].strip() for line in lines if line.startswith(prefix)), default)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def write(path: pathlib.Path, text: str) -> None:
    """Write ``text`` to ``path``, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_json(path: pathlib.Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` to ``path`` as indented JSON (what is not JSON as its ``str``)."""
    write(path, json.dumps(document, indent=2, default=str) + "\n")


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """Every number in a nested mapping, keyed by its dotted path (``converge.requests.by_verb.create``)."""
    out: dict[str, float] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, bool):
        return out
    elif isinstance(value, int | float):
        out[prefix] = float(value)
    return out


def summarize(rounds: Sequence[Round]) -> dict[str, Any]:
    """The median of every figure over the converged rounds of one contender."""
    good = [r for r in rounds if r.get("converged")]
    errors = [str(r["error"]) for r in rounds if r.get("error")]
    if not good:
        return {"converged": False, "rounds": len(rounds), "errors": errors, "median": {}}
    flat = [flatten({k: v for k, v in r.items() if k not in ("round",)}) for r in good]
    keys = sorted({key for figures in flat for key in figures})
    median = {key: round(statistics.median(f.get(key, 0.0) for f in flat), 3) for key in keys}
    return {
        "converged": len(good) == len(rounds),
        "rounds": len(rounds),
        "rounds_converged": len(good),
        "errors": errors,
        "median": median,
    }


def add_ratios(summaries: dict[str, dict[str, Any]], floor_key: str = "raw") -> None:
    """Each contender's converge and spec-change time divided by the floor's (when the floor converged)."""
    floor = summaries.get(floor_key, {}).get("median", {})
    for summary in summaries.values():
        median = summary.get("median", {})
        for phase in ("converge", "spec_change"):
            base, mine = floor.get(f"{phase}.seconds"), median.get(f"{phase}.seconds")
            if base and mine is not None:
                summary[f"{phase}_ratio"] = round(mine / base, 2)


def row(*cells: object) -> str:
    """One row of a markdown table (its header too)."""
    return "| " + " | ".join(map(str, cells)) + " |"


def rule(columns: int) -> str:
    """The rule under a markdown table's header of ``columns`` columns, aligned left."""
    return "|" + "---|" * columns


def _n(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}f}"


def _verbs(median: Mapping[str, float], phase: str, verbs: Sequence[str]) -> str:
    return " / ".join(_n(median.get(f"{phase}.requests.by_verb.{verb}", 0.0), 0) for verb in verbs)


WRITE_COLUMNS = ("create", "patch", "update", "delete")
READ_COLUMNS = ("get", "list", "watch")


def _sizes(settings: Mapping[str, Any]) -> str:
    if settings.get("mix"):
        return (
            "the realistic mix: each CR asks for 1-3 replicas and the replicaset controller makes the Pods; the spec "
            "change adds one replica to every CR"
        )
    return f"spec change size {settings['size']} → {settings['new_size']}"


def section(
    document: Mapping[str, Any], labels: Mapping[str, str], descriptions: Mapping[str, str], source: str
) -> list[str]:
    """One run's section of the page: context, the two tables, and how to read them (``source``: its JSON file)."""
    m, s = document["machine"], document["settings"]
    lines = [
        f"## N = {s['n']}",
        "",
        f"- **Machine**: {m['cpu_model']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, {m['os']}",
        f"- **Software**: Python {m['python']}, Kubernetes {m['kubernetes']} (local control plane), "
        f"okt {m['okt']}, Kopf {m['kopf']}",
        f"- **Run**: {m['date']}; N = {s['n']} custom resources; {s['rounds']} round(s); {s['workers']} workers "
        f"per contender; restart window {s['steady_seconds']:.0f} s; {_sizes(s)}",
        "",
        *(
            [
                f"> **A small run (N = {s['n']})**: at this size the times are dominated by start-up "
                "latencies; `make bench` (N=200) and `make bench-full` (N=1000) give the figures to quote.",
                "",
            ]
            if s["n"] < SMALL_N
            else []
        ),
        "### Convergence: N new custom resources to Ready=True with every child",
        "",
        "| contender | time (s) | vs floor | writes | create / patch / update / delete | reads | "
        "get / list / watch | 4xx/5xx answers | CPU (s) | RSS end (MiB) | RSS peak (MiB) |",
        "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    summaries: Mapping[str, Mapping[str, Any]] = document["summary"]
    for key, summary in summaries.items():
        med = summary.get("median", {})
        label = labels.get(key, key)
        if not med:
            error = " ".join("; ".join(summary.get("errors", [])).split()).replace("|", "/")[:200]
            lines.append(f"| {label} | failed: {error} |" + " |" * 9)
            continue
        lines.append(
            f"| {label} | {_n(med.get('converge.seconds'), 2)} | {_n(summary.get('converge_ratio'), 2)} "
            f"| {_n(med.get('converge.requests.writes'), 0)} | {_verbs(med, 'converge', WRITE_COLUMNS)} "
            f"| {_n(med.get('converge.requests.reads'), 0)} | {_verbs(med, 'converge', READ_COLUMNS)} "
            f"| {_n(med.get('converge.requests.failed'), 0)} | {_n(med.get('converge.cpu_seconds'), 1)} "
            f"| {_n(med.get('converge.rss_mib'), 1)} | {_n(med.get('converge.peak_rss_mib'), 1)} |"
        )
    lines += [
        "",
        "### Steady state and spec change",
        "",
        f"Restart: the operator is stopped and started again over the N converged objects; writes and reads are "
        f"counted for the first {s['steady_seconds']:.0f} s or until it is idle, whichever is later, and *idle after* "
        f"is the time from the process start "
        f"to its last request or busy CPU interval. Spec change: `spec.size` is patched on all N; the time runs "
        f"until every Deployment asks for the new replicas, the requests until the operator is idle again.",
        "",
        "| contender | restart writes | restart reads | idle after restart (s) | spec change (s) | vs floor "
        "| spec change writes | spec change reads | RSS end (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, summary in summaries.items():
        med = summary.get("median", {})
        if not med:
            continue
        lines.append(
            f"| {labels.get(key, key)} | {_n(med.get('restart.requests.writes'), 0)} "
            f"| {_n(med.get('restart.requests.reads'), 0)} | {_n(med.get('restart.idle_after_seconds'), 2)} "
            f"| {_n(med.get('spec_change.seconds'), 2)} | {_n(summary.get('spec_change_ratio'), 2)} "
            f"| {_n(med.get('spec_change.requests.writes'), 0)} | {_n(med.get('spec_change.requests.reads'), 0)} "
            f"| {_n(med.get('spec_change.rss_mib'), 1)} |"
        )
    lines += ["", "### The contenders", ""]
    lines += [f"- **{labels.get(k, k)}** — {descriptions.get(k, '')}" for k in summaries]
    lines += [
        "",
        "Writes are create, patch, update and delete requests, reads are get, list and watch (and the access "
        "reviews of okt's start-up permission check: a create that stores nothing); both include the "
        "requests the API server refused (the 4xx/5xx column: e.g. a read answered 404 before a create, a conflict). "
        "The raw floor is no operator: it writes the minimum the job needs "
        "(3 creates and a status patch per object) and its ratio is 1 by definition; the okt-shaped floor sends "
        "the same writes with okt's objects (five conditions in the status, okt's label and annotations on the "
        "children), which tells the API server's cost of those larger objects apart from the framework's. "
        f"Per-round figures, and the writes broken down by resource, are in `{source}`.",
        "",
    ]
    return lines


def page(documents: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str], descriptions: Mapping[str, str]) -> str:
    """The page ``docs/benchmarks.md`` (a ``--mix`` run's: ``benchmarks/results/mix/benchmarks.md``): the figures at a
    glance, then one section per run (``documents``: JSON file name -> the run's document), smallest N first."""
    ordered = sorted(documents.items(), key=lambda item: int(item[1]["settings"]["n"]))
    mix = any(document["settings"].get("mix") for _, document in ordered)
    how = (
        "`python -m benchmarks.run --mix` (the realistic mix; each run rewrites its own section)"
        if mix
        else "`python -m benchmarks.run` (`make bench`: N=200, `make bench-full`: N=1000; each run rewrites its own "
        "section)"
    )
    lines = [
        "# Benchmarks: okt vs Kopf vs the raw floor",
        "",
        f"Generated by {how}; see `benchmarks/README.md` for the method. Every measurement runs on a fresh local "
        "control plane; every request is counted from the API server's audit log, each contender under its own "
        "token user. Figures are medians over the rounds.",
        "",
        "## At a glance",
        "",
        "Times as a ratio to the raw floor's in the same run (lower is better); writes per custom resource.",
        "",
        "| N | contender | converge vs floor | first-pass writes / CR | restart writes | spec change vs floor "
        "| RSS after converging (MiB) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for _, document in ordered:
        n = int(document["settings"]["n"])
        for key, summary in document["summary"].items():
            med = summary.get("median", {})
            if not med or key == "raw":
                continue
            writes = med.get("converge.requests.writes")
            lines.append(
                f"| {n} | {labels.get(key, key)} | {_n(summary.get('converge_ratio'), 2)} "
                f"| {_n(writes / n if writes is not None else None, 1)} | {_n(med.get('restart.requests.writes'), 0)} "
                f"| {_n(summary.get('spec_change_ratio'), 2)} | {_n(med.get('converge.rss_mib'), 1)} |"
            )
    lines.append("")
    for source, document in ordered:
        lines += section(document, labels, descriptions, source)
    return "\n".join(lines)
