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
    """How hard each scenario pushes; :data:`FULL` for ``make chaos``, :data:`REDUCED` for ``make test``."""

    profile: str
    kill_crs: int
    kills: int
    restart_crs: int
    restart_late_crs: int
    outage: float
    fault_crs: int
    fault_rate: float
    fuzz_cases: int
    deletions: int
    failing_deletions: int
    failing_window: float
    failover_crs: int

    def timeout(self, crs: int) -> float:
        """How long ``crs`` custom resources may take to converge (generous: the machine is shared)."""
        return 60.0 + 0.6 * crs


FULL = Sizes(
    profile="full",
    kill_crs=300,
    kills=20,
    restart_crs=300,
    restart_late_crs=50,
    outage=8.0,
    fault_crs=300,
    fault_rate=0.1,
    fuzz_cases=500,
    deletions=200,
    failing_deletions=10,
    failing_window=BACKOFF_WINDOW,
    failover_crs=100,
)
REDUCED = Sizes(
    profile="reduced",
    kill_crs=30,
    kills=3,
    restart_crs=20,
    restart_late_crs=10,
    outage=3.0,
    fault_crs=30,
    fault_rate=0.1,
    fuzz_cases=40,
    deletions=20,
    failing_deletions=3,
    failing_window=8.0,
    failover_crs=10,
)
