"""Helpers for kinds whose server behaviour needs care: Secret, Service, Deployment, StatefulSet.

* Secret: ``stringData`` is write-only on the server (it is folded into ``data``), so the helper folds it before
  hashing and comparing — otherwise every reconcile would see drift.
* Service: ``clusterIP``/``clusterIPs`` and each port's ``nodePort`` are assigned by the server; an update keeps them
  (a changed clusterIP is rejected, a dropped nodePort would be re-allocated).
* Deployment / StatefulSet: readiness counts from the live status, for the Available/Progressing conditions.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from typing import Any

from okt.resources import resource


class SecretResource(resource.MutableResource):
    """A Secret whose ``stringData`` is folded into base64 ``data`` before hashing and comparing."""

    api_version = "v1"
    kind = "Secret"

    def normalize(self) -> None:
        string_data = self.desired.pop("stringData", None) or {}
        if string_data:
            data = dict(self.desired.get("data") or {})
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            self.desired["data"] = data


class ServiceResource(resource.MutableResource):
    """A Service whose server-assigned cluster IPs and node ports survive updates."""

    api_version = "v1"
    kind = "Service"

    def preserve_from_live(self, live: Mapping[str, Any]) -> None:
        live_spec = live.get("spec") or {}
        spec = self.desired.setdefault("spec", {})
        for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"):
            if field in live_spec and field not in spec:
                spec[field] = live_spec[field]
        live_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in live_spec.get("ports") or []}
        for port in spec.get("ports") or []:
            match = live_ports.get((port.get("port"), port.get("protocol", "TCP")))
            if match and "nodePort" in match and "nodePort" not in port:
                port["nodePort"] = match["nodePort"]


@dataclasses.dataclass(frozen=True)
class Readiness:
    """Replica counts of a workload, and whether the controller has seen its latest spec."""

    desired: int
    ready: int
    available: int
    updated: int
    observed: bool

    @property
    def available_all(self) -> bool:
        return self.observed and self.available >= self.desired

    @property
    def progressing(self) -> bool:
        return not self.observed or self.updated < self.desired or self.ready < self.desired

    @classmethod
    def of(cls, live: Mapping[str, Any] | None) -> Readiness:
        if live is None:
            return cls(desired=0, ready=0, available=0, updated=0, observed=False)
        spec = live.get("spec") or {}
        status = live.get("status") or {}
        generation = (live.get("metadata") or {}).get("generation") or 0
        return cls(
            desired=int(spec.get("replicas", 1)),
            ready=int(status.get("readyReplicas") or 0),
            available=int(status.get("availableReplicas") or 0),
            updated=int(status.get("updatedReplicas") or 0),
            observed=int(status.get("observedGeneration") or 0) >= int(generation),
        )


class DeploymentResource(resource.MutableResource):
    """A Deployment with readiness counts (``readiness()``) for conditions."""

    api_version = "apps/v1"
    kind = "Deployment"

    def readiness(self) -> Readiness:
        return Readiness.of(self.live)


class StatefulSetResource(resource.MutableResource):
    """A StatefulSet with readiness counts (``readiness()``) for conditions."""

    api_version = "apps/v1"
    kind = "StatefulSet"

    def readiness(self) -> Readiness:
        return Readiness.of(self.live)
