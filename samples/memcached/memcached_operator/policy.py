"""Semantic checks of a Memcached spec: what the schema cannot say because it depends on the operator's configuration.

Why this exists: the CRD already refuses a size outside 1..100 or a missing size (the apiserver answers 422). Some
specs are well-formed but still wrong for this operator: a floating image (no tag, or ``latest``) would let every
node pull a different memcached, and an image may have a configured ceiling on the cluster size (for example an older
memcached that was only validated up to some size). Such a custom resource is stored by the apiserver, so the
operator refuses it at reconcile time: :func:`check` raises :class:`okt.InvalidSpec`, and the reconciler's
ErrorManager turns it into ``Ready=False`` with reason ``InvalidSpec`` and this module's message.

Guarantees: :func:`check` is pure (no API call), names the offending field in ``InvalidSpec.field`` and says in its
message what to change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import okt

from . import api

DEFAULT_MAX_SIZES: Mapping[str, int] = {"memcached": 50}
"""The largest cluster allowed per image repository (repositories not listed may use the CRD's maximum, 100)."""

FLOATING_TAGS = frozenset({"latest"})

DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = frozenset({"index.docker.io", "registry-1.docker.io"})


@dataclasses.dataclass(frozen=True)
class ImageRef:
    """An image reference split into repository, tag and digest (``registry:5000/memcached:1.6@sha256:...``)."""

    repository: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, image: str) -> ImageRef:
        name, _, digest = image.partition("@")
        slash = name.rfind("/")
        colon = name.rfind(":")
        if colon > slash:
            repository, tag = name[:colon], name[colon + 1 :]
        else:
            repository, tag = name, None
        return cls(repository=repository, tag=tag or None, digest=digest or None)

    @property
    def short_name(self) -> str:
        """The last path element of the repository (``registry:5000/library/memcached`` -> ``memcached``)."""
        return self.repository.rsplit("/", 1)[-1]

    @property
    def pinned(self) -> bool:
        """A digest, or a tag that does not float."""
        return self.digest is not None or (self.tag is not None and self.tag not in FLOATING_TAGS)


def canonical_repository(repository: str) -> str:
    """``repository`` as the container runtime pulls it: an image of Docker Hub under ``docker.io``, with
    ``library/`` for its official images (``memcached``, ``library/memcached``, ``docker.io/memcached`` and
    ``index.docker.io/library/memcached`` are all ``docker.io/library/memcached``); other registries as written."""
    host, _, path = repository.partition("/")
    if not path or ("." not in host and ":" not in host and host != "localhost"):
        host, path = DOCKER_HUB, repository
    if host in DOCKER_HUB_ALIASES:
        host = DOCKER_HUB
    if host == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return f"{host}/{path}"


def max_size_for(image: ImageRef, max_sizes: Mapping[str, int]) -> int:
    """The largest cluster allowed for ``image``: configured by full repository (compared as the runtime pulls it,
    so that another spelling of the same image cannot escape its limit) or by its short name (a key without ``/``).
    """
    by_repository = {canonical_repository(key): limit for key, limit in max_sizes.items() if "/" in key}
    configured = by_repository.get(canonical_repository(image.repository), max_sizes.get(image.short_name))
    return api.MAX_SIZE if configured is None else configured


def check(spec: api.MemcachedSpec, max_sizes: Mapping[str, int] = DEFAULT_MAX_SIZES) -> None:
    """Refuse a spec this operator must not run.

    Args:
        spec: the validated spec.
        max_sizes: the largest cluster allowed per image repository (full name or last path element).

    Raises:
        okt.InvalidSpec: the image is not pinned, or ``size`` exceeds the maximum configured for the image.
    """
    image = ImageRef.parse(spec.image)
    if not image.pinned:
        what = "has no tag" if image.tag is None else f"uses the floating tag {image.tag!r}"
        raise okt.InvalidSpec(
            f"spec.image {spec.image!r} {what}: pin a version, for example {image.repository}:1.6",
            field="spec.image",
        )
    limit = max_size_for(image, max_sizes)
    if spec.size > limit:
        raise okt.InvalidSpec(
            f"spec.size {spec.size} exceeds the maximum of {limit} replicas configured for {image.repository} "
            f"images: lower spec.size to {limit} or less",
            field="spec.size",
        )
