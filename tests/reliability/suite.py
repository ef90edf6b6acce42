"""The whole suite in one call: the chosen scenarios in order, on one shared testbed (``fuzz`` on its own).

Why this exists: the command line and anyone scripting a run need the same wiring — one testbed for the scenarios
that share it, the in-process operator's log kept off the harness's output, and a result for every scenario even when
one of them fails.
"""

from __future__ import annotations

import contextlib
import pathlib
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence

import structlog

from okt.runtime import logs
from tests.reliability import cleanup, disruptions, fuzz, outcome, profiles, testbed

SCENARIOS = ("kill", "restart", "faults", "fuzz", "deletions", "failover")


def run_all(
    sizes: profiles.Sizes,
    only: Sequence[str] = SCENARIOS,
    seed: int = 0,
    workdir: pathlib.Path | None = None,
    out: Callable[[str], None] = print,
) -> list[outcome.ScenarioResult]:
    """Run the chosen scenarios in order on one lab (the fuzz scenario on its own control plane)."""
    rng = random.Random(seed)
    results: list[outcome.ScenarioResult] = []
    with contextlib.ExitStack() as stack:
        root = workdir or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="okt-chaos-")))
        stack.enter_context(_in_process_logs(root))
        shared = [key for key in only if key != "fuzz"]
        lab = stack.enter_context(testbed.Lab(root / "lab")) if shared else None
        scenarios: dict[str, Callable[[], outcome.ScenarioResult]] = {
            "kill": lambda: disruptions.kill_nine(_need(lab), sizes, rng),
            "restart": lambda: disruptions.apiserver_restart(_need(lab), sizes, rng),
            "faults": lambda: disruptions.api_faults(_need(lab), sizes, rng),
            "fuzz": lambda: fuzz.fuzzed_specs(root, sizes, rng),
            "deletions": lambda: cleanup.deletions(_need(lab), sizes, rng),
            "failover": lambda: disruptions.failover(_need(lab), sizes, rng),
        }
        for key in only:
            out(f"chaos: {key} ...")
            result = scenarios[key]()
            results.append(result)
            out(result.report())
    return results


def _need(lab: testbed.Lab | None) -> testbed.Lab:
    if lab is None:
        raise RuntimeError("no lab was started")
    return lab


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
