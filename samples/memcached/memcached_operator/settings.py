"""memcached settings derived from a Memcached spec: memory limit, connections and threads, by cluster size.

Why this exists: the ``<name>-config`` ConfigMap and the Deployment must agree on the settings (the pods read them
from the ConfigMap, the container's memory limit must leave room for memcached's cache), so both derive them from one
pure function of the spec. A bigger cluster serves more clients, so each size tier raises the per-replica memory
limit and the connection limit.

Guarantees: :func:`for_size` is total over every size >= 1 (the CRD allows 1..100) and deterministic;
:meth:`Settings.checksum` changes exactly when a setting changes, which is what rolls the pods when the ConfigMap
changes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json

CONTAINER_OVERHEAD_MB = 32
"""Memory the memcached process needs beyond its cache (connections, hash table, threads)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """The memcached settings of one cluster (every replica runs with the same)."""

    tier: str
    memory_limit_mb: int
    """``memcached -m``: the cache size of one replica, in megabytes."""
    max_connections: int
    """``memcached -c``: simultaneous client connections per replica."""
    threads: int
    """``memcached -t``: worker threads per replica."""

    def to_config_data(self) -> dict[str, str]:
        """The ConfigMap ``data``: environment variables the memcached container reads with ``envFrom``."""
        return {
            "MEMCACHED_TIER": self.tier,
            "MEMCACHED_MEMORY_LIMIT_MB": str(self.memory_limit_mb),
            "MEMCACHED_MAX_CONNECTIONS": str(self.max_connections),
            "MEMCACHED_THREADS": str(self.threads),
        }

    @property
    def container_memory(self) -> str:
        """The container's memory request and limit: the cache plus the process overhead, as a quantity."""
        return f"{self.memory_limit_mb + CONTAINER_OVERHEAD_MB}Mi"

    def checksum(self) -> str:
        """A short digest of the settings, stamped on the pod template so that a settings change rolls the pods."""
        return _checksum(self)


@functools.lru_cache(maxsize=64)
def _checksum(settings: Settings) -> str:
    # Every reconcile asks for the digest of one of a few settings (the tiers): computed once for each.
    canonical = json.dumps(dataclasses.asdict(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


TIERS: tuple[tuple[int, Settings], ...] = (
    (3, Settings(tier="small", memory_limit_mb=64, max_connections=1024, threads=2)),
    (10, Settings(tier="medium", memory_limit_mb=256, max_connections=4096, threads=4)),
    (100, Settings(tier="large", memory_limit_mb=1024, max_connections=16384, threads=8)),
)
"""``(largest size of the tier, its settings)``, by increasing size; the last tier also covers anything bigger."""


def for_size(size: int) -> Settings:
    """The settings of a cluster of ``size`` replicas.

    Raises:
        ValueError: ``size`` is below 1 (the CRD refuses such objects; this guards direct callers).
    """
    if size < 1:
        raise ValueError(f"a memcached cluster has at least one replica, got {size}")
    for largest, settings in TIERS:
        if size <= largest:
            return settings
    return TIERS[-1][1]
