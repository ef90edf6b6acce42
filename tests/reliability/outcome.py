"""What a scenario comes to: its checks and figures as one :class:`ScenarioResult`, even when it raised (then the
result says why), so that one failing scenario does not stop the others."""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tests.reliability import checks, profiles

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
        lines += [f"  error: {self.error}"] if self.error else []
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
