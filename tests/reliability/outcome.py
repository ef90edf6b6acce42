"""What a scenario comes to: its checks and figures as one :class:`ScenarioResult`, and the judgements all share.

Why this exists: a scenario that could not be carried out (it raised) must still yield a result that says why, so
that one failing scenario does not stop the others; and every scenario with the stock operator judges the same end
state, losses and crashes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from okt.testing import process
from tests.reliability import checks, logs, profiles

T = TypeVar("T")
Found = tuple[list[checks.Check], dict[str, Any]]
"""What a scenario's body finds: its checks and its figures."""
Body = Callable[[T, profiles.Sizes, random.Random], Found]


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


def crash_check(operators: Sequence[process.OperatorProcess]) -> tuple[checks.Check, int]:
    """No unhandled exception in the operators' logs, no error exit, no hang on SIGTERM; and how many problems."""
    records = [record for operator in operators for record in operator.records()]
    check = logs.no_crash(records, {o.name: o.exit_status for o in operators})
    hung = tuple(f"{o.name} ignored SIGTERM (killed after 30s)" for o in operators if o.hung)
    check = dataclasses.replace(check, problems=check.problems + hung)
    return check, len(check.problems)


def scenario(key: str, title: str) -> Callable[[Body[T]], Callable[[T, profiles.Sizes, random.Random], ScenarioResult]]:
    """Make a scenario's body return a :class:`ScenarioResult` (``title`` formatted with ``sizes``); an exception
    becomes the result's error, so that the other scenarios go on."""

    def decorate(body: Body[T]) -> Callable[[T, profiles.Sizes, random.Random], ScenarioResult]:
        @functools.wraps(body)
        def run(where: T, sizes: profiles.Sizes, rng: random.Random) -> ScenarioResult:
            started, named = time.monotonic(), title.format(sizes=sizes)
            try:
                found, figures = body(where, sizes, rng)
            except Exception as exc:
                return ScenarioResult(key, named, (), {}, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
            return ScenarioResult(key, named, tuple(found), figures, time.monotonic() - started)

        return run

    return decorate
