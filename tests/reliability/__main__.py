"""``python -m tests.reliability`` (``make chaos``): the reliability suite's command line.

Why this exists: it picks the profile and the scenarios, runs the suite, writes the JSON and the page, prints the
summary table, and exits with status 1 when any scenario failed — so that a script or CI can rely on it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence

from tests import reliability
from tests.reliability import profiles, report, suite


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.reliability", description=reliability.__doc__.splitlines()[0]
    )
    parser.add_argument("--reduced", action="store_true", help="the sizes of the reduced suite (make test)")
    parser.add_argument(
        "--only", default=",".join(suite.SCENARIOS), help=f"comma-separated among {', '.join(suite.SCENARIOS)}"
    )
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
    unknown = sorted(set(only) - set(suite.SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose among {', '.join(suite.SCENARIOS)}")
    sizes = profiles.REDUCED if args.reduced else profiles.FULL
    results = suite.run_all(sizes, only, args.seed, args.logs_dir, out=lambda line: print(line, flush=True))
    doc = report.document(results, sizes, args.seed)
    report.write(doc, args.json, args.markdown)
    print()
    print(report.table(results))
    print()
    print(json.dumps(doc["summary"], default=str))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
