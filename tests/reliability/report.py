"""What a run reports: the summary table, ``tests/reliability/results/chaos.json`` and the ``docs/reliability.md`` page.

The page, okt's published evidence, is generated from a run's JSON (``--render``), so its figures are a real run's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import platform
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks import report as bench_report
from tests.reliability import outcome, profiles

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS_JSON = ROOT / "tests" / "reliability" / "results" / "chaos.json"
RESULTS_PAGE = ROOT / "docs" / "reliability.md"
TOTALS = ("faults_injected", "kills", "objects_lost", "duplicates", "orphans", "crashes")
"""The figures the summary adds up over every scenario."""


def summary(results: Sequence[outcome.ScenarioResult]) -> dict[str, Any]:
    """The headline figures over every scenario."""
    by_key = {r.key: r for r in results}
    backoff: dict[str, Any] = {}
    if "fuzz" in by_key:
        backoff["invalid_spec_reconciles_in_20s"] = by_key["fuzz"].figures.get("probe_reconciles_in_window")
    if "deletions" in by_key:
        backoff["failing_cleanup_attempts_max"] = by_key["deletions"].figures.get("failing_attempts_max")
    return {
        "runs": len(results),
        "passed": sum(r.ok for r in results),
        **{figure: sum(int(r.figures.get(figure) or 0) for r in results) for figure in TOTALS},
        "takeover_seconds": by_key["failover"].figures.get("takeover_seconds") if "failover" in by_key else None,
        "backoff": backoff,
    }


def table(results: Sequence[outcome.ScenarioResult]) -> str:
    """The summary table printed at the end of a run."""
    rows = [("scenario", "result", "seconds", "key figures")]
    for r in results:
        figures = ", ".join(f"{k}={v}" for k, v in r.figures.items() if not isinstance(v, Mapping))
        rows.append((r.key, "ok" if r.ok else "FAILED", f"{r.seconds:.0f}", figures or (r.error or "")))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}  {d}" for a, b, c, d in rows]
    lines.insert(1, "-" * min(max(len(line) for line in lines), 120))
    return "\n".join(lines)


def document(results: Sequence[outcome.ScenarioResult], sizes: profiles.Sizes, seed: int) -> dict[str, Any]:
    return {
        "generated": bench_report.utc_now(),
        "profile": sizes.profile,
        "seed": seed,
        "sizes": dataclasses.asdict(sizes),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "summary": summary(results),
        "scenarios": [r.to_json() for r in results],
    }


def write(doc: Mapping[str, Any], json_path: pathlib.Path, page_path: pathlib.Path) -> None:
    """Write a run's document as JSON to ``json_path`` and its page to ``page_path`` (creating their folders)."""
    bench_report.write(json_path, json.dumps(doc, indent=2, default=str) + "\n")
    bench_report.write(page_path, markdown(doc))


PAGE_TEMPLATE = pathlib.Path(__file__).with_name("page.md")
"""The page's fixed text, around ``{last_run}``: the figures of a run."""


def markdown(doc: Mapping[str, Any]) -> str:
    """The ``docs/reliability.md`` page for a run's document."""
    s = doc["summary"]
    backoff = s.get("backoff") or {}
    lines = [
        f"Profile **{doc['profile']}** (seed {doc['seed']}), {doc['generated']}, on {doc['machine']['cpus']} CPUs "
        f"(Python {doc['machine']['python']}). The raw figures are in `tests/reliability/results/chaos.json`.",
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
        verdict = "passed" if scenario["ok"] else "**failed**"
        lines += [f"### {scenario['key']}: {scenario['title']}", "", f"{verdict} in {scenario['seconds']} s.", ""]
        if scenario["error"]:
            lines += [f"Could not be carried out: `{scenario['error']}`", ""]
        lines += ["| check | result |", "|---|---|"]
        for check in scenario["checks"]:
            result = "ok" if check["ok"] else "; ".join(check["problems"][:3]).replace("|", "\\|")
            lines.append(f"| {check['name']} | {result} |")
        figures = ", ".join(f"{k} = {_plain(v)}" for k, v in scenario["figures"].items())
        lines += ["", f"Figures: {figures}." if figures else "", ""]
    return PAGE_TEMPLATE.read_text().format(last_run="\n".join(lines))


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{value} s"


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    return str(value)
