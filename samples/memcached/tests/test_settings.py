"""memcached settings derived from the cluster size (pure)."""

from __future__ import annotations

import pytest

from samples.memcached.memcached_operator import settings


@pytest.mark.parametrize(
    ("size", "tier", "memory_mb", "connections", "threads"),
    [
        (1, "small", 64, 1024, 2),
        (3, "small", 64, 1024, 2),
        (4, "medium", 256, 4096, 4),
        (10, "medium", 256, 4096, 4),
        (11, "large", 1024, 16384, 8),
        (100, "large", 1024, 16384, 8),
        (1000, "large", 1024, 16384, 8),
    ],
)
def test_each_size_gets_the_settings_of_its_tier(
    size: int, tier: str, memory_mb: int, connections: int, threads: int
) -> None:
    tuned = settings.for_size(size)

    assert (tuned.tier, tuned.memory_limit_mb, tuned.max_connections, tuned.threads) == (
        tier,
        memory_mb,
        connections,
        threads,
    )


@pytest.mark.parametrize("size", [0, -1])
def test_a_cluster_without_replicas_has_no_settings(size: int) -> None:
    with pytest.raises(ValueError, match="at least one replica"):
        settings.for_size(size)


@pytest.mark.parametrize(("size", "memory"), [(1, "96Mi"), (5, "288Mi"), (50, "1056Mi")])
def test_the_container_memory_leaves_room_beyond_the_cache(size: int, memory: str) -> None:
    assert settings.for_size(size).container_memory == memory


def test_the_config_data_is_environment_variables_for_the_memcached_flags() -> None:
    assert settings.for_size(4).to_config_data() == {
        "MEMCACHED_TIER": "medium",
        "MEMCACHED_MEMORY_LIMIT_MB": "256",
        "MEMCACHED_MAX_CONNECTIONS": "4096",
        "MEMCACHED_THREADS": "4",
    }


@pytest.mark.parametrize(("a", "b", "same"), [(1, 3, True), (4, 10, True), (3, 4, False), (10, 11, False)])
def test_the_settings_checksum_changes_exactly_when_the_settings_do(a: int, b: int, same: bool) -> None:
    assert (settings.for_size(a).checksum() == settings.for_size(b).checksum()) is same
