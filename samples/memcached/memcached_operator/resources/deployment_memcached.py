"""Deployment owned by Memcached (cache/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours: regeneration rewrites
``deployment_memcached_gen.py`` (template, API version, hashed fields) and never
touches this file.

The template (from ``manifests/deployment.yaml``) fixes the shape: labels, port
11211, the settings read from ``<name>-config``. What follows the custom resource
is set here: the replicas, the image, the container's memory, and a checksum of
the settings on the pod template, so that a change of settings rolls the pods
(they read the ConfigMap only when they start); the rollout's deadline when the
operator's ``progress_deadline_seconds`` parameter sets one.
"""

from collections.abc import Mapping
from typing import Any

import okt

from .. import api, settings
from .deployment_memcached_gen import DeploymentMemcachedBase

SETTINGS_ANNOTATION = "cache.example.com/settings-checksum"
"""The pod-template annotation holding :meth:`settings.Settings.checksum`."""


class DeploymentMemcached(DeploymentMemcachedBase):
    """The memcached Deployment that okt keeps in place for each Memcached (replicas = ``spec.size``)."""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        """Set replicas, image, memory and the settings checksum from the custom resource."""
        spec = api.spec_of(cr.spec)
        tuned = settings.for_size(spec.size)
        deployment_spec = self.desired["spec"]
        deployment_spec["replicas"] = spec.size
        pod = deployment_spec["template"]
        pod["metadata"].setdefault("annotations", {})[SETTINGS_ANNOTATION] = tuned.checksum()
        container = memcached_container(pod["spec"])
        container["image"] = spec.image
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})["memory"] = tuned.container_memory
        resources.setdefault("limits", {})["memory"] = tuned.container_memory
        deadline = self.params.get("progress_deadline_seconds")
        if deadline is not None:  # how long a stuck rollout waits before the Memcached reads Degraded
            deployment_spec["progressDeadlineSeconds"] = int(deadline)

    @classmethod
    def status_view(cls, live: Mapping[str, Any]) -> Any:
        """What the Memcached reads of its Deployment's status: the available count (its ``status.availableReplicas``)
        and what okt's conditions derive (all available, rolling out, stuck). The ready and updated counts move on
        their own while Pods start (the deployment controller writes each step), so those writes do not wake it."""
        readiness = okt.Readiness.of(live)
        return (readiness.available, readiness.available_all, readiness.progressing, readiness.stalled)


def memcached_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """The container named ``memcached`` of a pod spec (a template without it is a programming error)."""
    for container in pod_spec["containers"]:
        if container["name"] == "memcached":
            return container  # type: ignore[no-any-return]
    raise okt.PermanentError("the Deployment template has no container named 'memcached'")
