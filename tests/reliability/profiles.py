"""How hard the suite pushes: the full profile (``make chaos``) and the reduced one (``make test``), one frozen value
each, next to the backoff bound both are judged against."""

from __future__ import annotations

import dataclasses

BACKOFF_WINDOW = 20.0
BACKOFF_LIMIT = 15
"""An object in error must be reconciled fewer times than this in :data:`BACKOFF_WINDOW` seconds (a loop without
backoff would reconcile it hundreds of times)."""


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How hard each scenario pushes; the defaults are :data:`FULL`'s (``make chaos``)."""

    profile: str = "full"
    kill_crs: int = 300
    kills: int = 20
    restart_crs: int = 300
    restart_late_crs: int = 50
    outage: float = 8.0
    fault_crs: int = 300
    fault_rate: float = 0.1
    fuzz_cases: int = 500
    deletions: int = 200
    failing_deletions: int = 10
    failing_window: float = BACKOFF_WINDOW
    failover_crs: int = 100

    def timeout(self, crs: int) -> float:
        """How long ``crs`` custom resources may take to converge (generous: the machine is shared)."""
        return 60.0 + 0.6 * crs


FULL = Sizes()
REDUCED = Sizes(
    profile="reduced",
    kill_crs=30,
    kills=3,
    restart_crs=20,
    restart_late_crs=10,
    outage=3.0,
    fault_crs=30,
    fuzz_cases=40,
    deletions=20,
    failing_deletions=3,
    failing_window=8.0,
    failover_crs=10,
)
