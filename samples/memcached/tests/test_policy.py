"""Semantic checks of a Memcached spec (pure: no cluster)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

import okt
from samples.memcached.memcached_operator import MemcachedSpec, policy


@pytest.mark.parametrize(
    ("image", "repository", "tag", "digest"),
    [
        ("memcached", "memcached", None, None),
        ("memcached:1.6", "memcached", "1.6", None),
        ("library/memcached:1.6.21-alpine", "library/memcached", "1.6.21-alpine", None),
        ("registry.example.com:5000/memcached", "registry.example.com:5000/memcached", None, None),
        ("registry.example.com:5000/cache/memcached:1.6", "registry.example.com:5000/cache/memcached", "1.6", None),
        ("memcached@sha256:0123abcd", "memcached", None, "sha256:0123abcd"),
        ("memcached:1.6@sha256:0123abcd", "memcached", "1.6", "sha256:0123abcd"),
    ],
)
def test_an_image_reference_splits_into_repository_tag_and_digest(
    image: str, repository: str, tag: str | None, digest: str | None
) -> None:
    assert policy.ImageRef.parse(image) == policy.ImageRef(repository, tag, digest)


@pytest.mark.parametrize(
    ("size", "image"),
    [
        (1, "memcached:1.6"),
        (50, "memcached:1.6"),
        (3, "memcached@sha256:0123abcd"),
        (50, "registry.example.com:5000/memcached:1.6.21"),
        (100, "example.com/team/cache:2024.1"),
    ],
)
def test_a_pinned_image_within_its_size_limit_passes(size: int, image: str) -> None:
    policy.check(MemcachedSpec(size=size, image=image))


@pytest.mark.parametrize(
    ("size", "image", "field", "message"),
    [
        (2, "memcached", "spec.image", "spec.image 'memcached' has no tag: pin a version, for example memcached:1.6"),
        (2, "registry.example.com:5000/memcached", "spec.image", "has no tag"),
        (2, "memcached:latest", "spec.image", "spec.image 'memcached:latest' uses the floating tag 'latest'"),
        (
            51,
            "memcached:1.6",
            "spec.size",
            "spec.size 51 exceeds the maximum of 50 replicas configured for memcached images: lower spec.size to 50",
        ),
        (51, "mirror.example.com/library/memcached:1.6", "spec.size", "exceeds the maximum of 50 replicas"),
    ],
)
def test_a_semantically_bad_spec_is_refused_with_a_readable_message(
    size: int, image: str, field: str, message: str
) -> None:
    with pytest.raises(okt.InvalidSpec) as refused:
        policy.check(MemcachedSpec(size=size, image=image))

    assert refused.value.field == field
    assert message in str(refused.value)
    assert refused.value.reason == "InvalidSpec"


@pytest.mark.parametrize(
    ("max_sizes", "image", "allowed", "refused"),
    [
        ({"memcached": 5}, "memcached:1.6", 5, 6),
        ({"mirror.example.com/memcached": 8}, "mirror.example.com/memcached:1.6", 8, 9),
        ({"memcached": 8}, "mirror.example.com/memcached:1.6", 8, 9),
        ({}, "memcached:1.6", 100, None),
    ],
)
def test_the_size_limit_is_configured_per_image_repository(
    max_sizes: Mapping[str, int], image: str, allowed: int, refused: int | None
) -> None:
    policy.check(MemcachedSpec(size=allowed, image=image), max_sizes)
    if refused is not None:
        with pytest.raises(okt.InvalidSpec, match=f"maximum of {allowed} replicas"):
            policy.check(MemcachedSpec(size=refused, image=image), max_sizes)


@pytest.mark.parametrize(
    ("max_sizes", "image"),
    [
        ({"docker.io/library/memcached": 8}, "memcached:1.6"),
        ({"docker.io/library/memcached": 8}, "library/memcached:1.6"),
        ({"docker.io/library/memcached": 8}, "index.docker.io/library/memcached:1.6"),
        ({"docker.io/memcached": 8}, "memcached:1.6"),
        ({"library/memcached": 8}, "docker.io/memcached:1.6"),
        ({"memcached": 50, "docker.io/library/memcached": 8}, "memcached:1.6"),
    ],
)
def test_a_limit_configured_for_a_docker_hub_image_holds_however_the_image_is_spelled(
    max_sizes: Mapping[str, int], image: str
) -> None:
    policy.check(MemcachedSpec(size=8, image=image), max_sizes)
    with pytest.raises(okt.InvalidSpec, match="maximum of 8 replicas"):
        policy.check(MemcachedSpec(size=9, image=image), max_sizes)
