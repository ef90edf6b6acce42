"""``python -m tests.reliability`` (``make chaos``): runs the chosen scenarios on one shared testbed (``fuzz`` on its
own), writes the JSON and the page, and exits with status 1 when any failed, so that a script or CI can rely on it."""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import random
import sys
import tempfile
from collections.abc import Callable, Sequence

import structlog

from okt.runtime import logs as okt_logs
from tests import reliability
from tests.reliability import cleanup, disruptions, fuzz, outcome, profiles, report, testbed

Scenario = Callable[[testbed.Lab, profiles.Sizes, random.Random], outcome.ScenarioResult]
SHARED: dict[str, Scenario] = {
    "kill": disruptions.kill_nine,
    "restart": disruptions.apiserver_restart,
    "faults": disruptions.api_faults,
    "deletions": cleanup.deletions,
    "failover": disruptions.failover,
}
"""The scenarios run on the shared testbed; ``fuzz`` needs a control plane of its own."""
SCENARIOS = ("kill", "restart", "faults", "fuzz", "deletions", "failover")


def run_all(
    sizes: profiles.Sizes, only: Sequence[str], seed: int, workdir: pathlib.Path | None
) -> list[outcome.ScenarioResult]:
    """Run the chosen scenarios in order on one lab (the fuzz scenario on its own control plane)."""
    rng = random.Random(seed)
    results: list[outcome.ScenarioResult] = []
    with contextlib.ExitStack() as stack:
        root = workdir or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="okt-chaos-")))
        root.mkdir(parents=True, exist_ok=True)
        # The operator run in this process (deletions) logs to a file of the run, not over the harness's output.
        okt_logs.configure("json", stream=stack.enter_context((root / "in-process.log").open("a")))
        stack.callback(structlog.reset_defaults)
        lab = stack.enter_context(testbed.Lab(root / "lab")) if set(only) & set(SHARED) else None
        for key in only:
            print(f"chaos: {key} ...", flush=True)
            if key == "fuzz":
                result = fuzz.fuzzed_specs(root, sizes, rng)
            else:
                assert lab is not None  # started above whenever a shared scenario is chosen
                result = SHARED[key](lab, sizes, rng)
            results.append(result)
            print(result.report(), flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.reliability", description=reliability.__doc__.splitlines()[0]
    )
    parser.add_argument("--reduced", action="store_true", help="the sizes of the reduced suite (make test)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"comma-separated among {', '.join(SCENARIOS)}")
    parser.add_argument("--seed", type=int, default=0, help="the random seed (kill moments, specs, faults)")
    parser.add_argument("--json", type=pathlib.Path, default=report.RESULTS_JSON, help="where the figures go")
    parser.add_argument("--markdown", type=pathlib.Path, default=report.RESULTS_PAGE, help="where the page goes")
    parser.add_argument("--logs-dir", type=pathlib.Path, help="keep kubeconfigs and operator logs there")
    parser.add_argument("--render", action="store_true", help="only rewrite the page from the JSON of the last run")
    args = parser.parse_args(argv)
    if args.render:
        args.markdown.write_text(report.markdown(json.loads(args.json.read_text())))
        return 0
    only = [key.strip() for key in args.only.split(",") if key.strip()]
    unknown = sorted(set(only) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose among {', '.join(SCENARIOS)}")
    sizes = profiles.REDUCED if args.reduced else profiles.FULL
    results = run_all(sizes, only, args.seed, args.logs_dir)
    doc = report.document(results, sizes, args.seed)
    report.write(doc, args.json, args.markdown)
    print(f"\n{report.table(results)}\n")
    print(json.dumps(doc["summary"], default=str))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
