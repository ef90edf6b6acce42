"""The Memcached API (``cache.example.com/v1alpha1``): the spec and status of the custom resource, as pydantic models.

Why this exists: these models are the single source of the resource's schema. The reconciler validates every spec
with :class:`MemcachedSpec` before it reconciles, and ``okt gen crd`` turns the same models into the CRD's
``openAPIV3Schema`` (``deploy/crd.yaml``), so the apiserver refuses what the operator would refuse (``size: 0`` is a
422 at ``kubectl apply`` time, not a reconcile error later).

Only what a schema can say lives here. Rules that depend on the operator's configuration (the largest cluster allowed
for an image, pinned image tags) are semantic checks: see :mod:`.policy`.
"""

from __future__ import annotations

import pydantic

GROUP = "cache.example.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Memcached"
PLURAL = "memcacheds"

DEFAULT_IMAGE = "memcached:1.6"
MIN_SIZE = 1
MAX_SIZE = 100
IMAGE_MAX_LENGTH = 255 + len(":") + 128 + len("@sha512:") + 128
"""The longest image reference a registry can serve: a name of 255 characters at most (registry host included), a tag
of 128, a sha512 digest. Kubernetes sets no bound of its own, and a longer string would be copied into the Deployment
and the namespace's inventory, whose ConfigMap the API server refuses past 1 MiB: a few such Memcacheds would stop
every other one of the namespace from being recorded."""


class MemcachedSpec(pydantic.BaseModel):
    """The desired memcached cluster."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    size: int = pydantic.Field(
        ge=MIN_SIZE,
        le=MAX_SIZE,
        description="The number of memcached replicas.",
    )
    image: str = pydantic.Field(
        default=DEFAULT_IMAGE,
        min_length=1,
        max_length=IMAGE_MAX_LENGTH,
        description="The memcached container image, with a pinned tag (for example memcached:1.6).",
    )


class MemcachedStatus(pydantic.BaseModel):
    """What the operator observed. Conditions and observedGeneration are written by okt itself."""

    model_config = pydantic.ConfigDict(frozen=True, populate_by_name=True)

    available_replicas: int = pydantic.Field(
        default=0,
        ge=0,
        alias="availableReplicas",
        description="The memcached replicas available to clients (from the Deployment).",
    )


def spec_of(raw: object) -> MemcachedSpec:
    """The typed spec of a custom resource's ``spec`` (already a model inside a reconcile; validated otherwise)."""
    if isinstance(raw, MemcachedSpec):
        return raw
    return MemcachedSpec.model_validate(raw)
