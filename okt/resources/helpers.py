"""Helpers for kinds whose server behaviour needs care: Secret, Service, Deployment, StatefulSet.

* Secret: ``stringData`` is write-only on the server (it is folded into ``data``), so the helper folds it before
  hashing and comparing — otherwise every reconcile would see drift.
* Service: ``clusterIP``/``clusterIPs`` and each port's ``nodePort`` are assigned by the server; an update keeps them
  (a changed clusterIP is rejected, a dropped nodePort would be re-allocated).
* Deployment / StatefulSet: readiness counts from the live status, for the Available/Progressing conditions, and a
  Deployment's stuck rollout (``ProgressDeadlineExceeded``) for Degraded — each only from a status that describes the
  latest spec (its ``observedGeneration``): right after a write, the status is the controller's on the spec before.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from typing import Any

from okt import errors
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
                spelled = _no_text(value)
                if spelled is not None:
                    raise errors.InvalidSpec(
                        f"{self.describe()}: stringData.{key} is {spelled}, not a string (quote it in the template)",
                        f"stringData.{key}",
                    )
                data[key] = base64.b64encode(str(value).encode()).decode()
            self.desired["data"] = data


def _no_text(value: Any) -> str | None:
    """How a ``stringData`` value that is no text is said (``null``, ``true``, ``a mapping``, ``a list``), None for
    text or a number (the text it reads as).

    Why: folded as ``str(value)``, its Python spelling would be the Secret's value — a password left out stored as
    the text ``None``, a YAML ``true`` as ``True``, a mapping placed whole as Python's text of it, which nothing reads
    back (the API server refuses a mapping or a list there)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return None


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


PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
"""The reason of a Deployment's ``Progressing=False`` once its rollout made no progress within
``progressDeadlineSeconds``; okt's Progressing and Degraded conditions take it over."""


@dataclasses.dataclass(frozen=True)
class Readiness:
    """Replica counts of a workload, and whether the controller has seen its latest spec."""

    desired: int
    ready: int
    available: int
    updated: int
    observed: bool
    stalled: str | None = None
    """Why the rollout is stuck — the message of a Deployment's ``Progressing=False, ProgressDeadlineExceeded``
    condition (no progress within ``progressDeadlineSeconds``) — or None while it is not, or while the controller has
    not observed the latest spec (``status.observedGeneration < metadata.generation``): the condition is then its
    verdict on the spec before, which a fixed template has just replaced. kstatus reads such a status as
    *InProgress*, not *Failed*; so does okt (``progressing``), until the controller has seen the new spec."""
    replicas: int = 0
    """The Pods the controller keeps, of every revision (``status.replicas``): more than ``updated`` while Pods of the
    previous spec still run — a surge Pod of the new spec counts as updated before it is ready, and the old Pod as
    ready, so only this count tells that the rollout is not over."""
    kept: int = 0
    """The Pods the controller leaves on the previous spec by design: those below a StatefulSet's ``partition``, or
    all of them under its ``OnDelete`` strategy (the controller replaces none; a Pod deleted by hand comes back
    updated). The rollout is over once the other Pods are updated — as ``kubectl rollout status`` and kstatus read
    it — instead of waiting for ever for Pods nothing will update."""

    @property
    def available_all(self) -> bool:
        return self.observed and self.available >= self.desired

    @property
    def progressing(self) -> bool:
        """Whether the controller is rolling out the latest spec: it has not observed it yet, or it has and some Pod
        is still to update, to become ready then available (``minReadySeconds`` after it is ready, as the controller
        and ``kubectl rollout status`` count a rollout complete) or to go (a scale-down) — but for a rollout its
        controller gave up on (``stalled``), which is not progressing any more, as the Deployment's own
        ``Progressing=False`` says."""
        return not self.observed or (
            self.stalled is None
            and (
                self.updated < self.desired - self.kept
                or self.ready < self.desired
                or self.available < self.updated
                or self.replicas > self.updated + self.kept
                or self.replicas > self.desired
            )
        )

    def view(self) -> tuple[int, int, int, bool, bool, str | None]:
        """What conditions derive from these counts: ready, available, updated, all available, progressing, stalled.

        Whether the controller has observed the latest generation matters only through the last two: its status
        write that only acknowledges a new generation changes nothing a condition shows.
        """
        return (self.ready, self.available, self.updated, self.available_all, self.progressing, self.stalled)

    @classmethod
    def of(cls, live: Mapping[str, Any] | None) -> Readiness:
        if live is None:
            return cls(desired=0, ready=0, available=0, updated=0, observed=False)
        spec = live.get("spec") or {}
        status = live.get("status") or {}
        generation = (live.get("metadata") or {}).get("generation") or 0
        observed = int(status.get("observedGeneration") or 0) >= int(generation)
        desired = int(spec.get("replicas", 1))
        ready = int(status.get("readyReplicas") or 0)
        available = status.get("availableReplicas")
        if available is None and live.get("kind") == "StatefulSet":
            # A StatefulSet's status has counted available Pods only since Kubernetes 1.22 (minReadySeconds); before,
            # a ready Pod is all there is to count. (A Deployment leaves the field out when it is 0.)
            available = ready
        return cls(
            desired=desired,
            ready=ready,
            available=int(available or 0),
            updated=int(status.get("updatedReplicas") or 0),
            observed=observed,
            stalled=_stalled(status) if observed else None,
            replicas=int(status.get("replicas") or 0),
            kept=_kept(spec, desired),
        )


def _kept(spec: Mapping[str, Any], desired: int) -> int:
    """The Pods a StatefulSet's ``updateStrategy`` leaves on the previous spec; none for a Deployment (whose
    ``spec.strategy`` replaces every Pod)."""
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete":
        return desired
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
    return max(0, min(partition, desired))


def _stalled(status: Mapping[str, Any]) -> str | None:
    for condition in status.get("conditions") or ():
        stuck = condition.get("reason") == PROGRESS_DEADLINE_EXCEEDED and condition.get("status") == "False"
        if stuck and condition.get("type") == "Progressing":
            return str(condition.get("message") or PROGRESS_DEADLINE_EXCEEDED)
    return None


class DeploymentResource(resource.MutableResource):
    """A Deployment with readiness counts (``readiness()``) for conditions.

    Its watch events wake the reconciler only when its readiness view changes (or anything outside the status, but
    for the Deployment controller's revision annotation): the controller rewrites a Deployment's status several
    times per rollout step. Override :meth:`status_view` when the reconciler reads more of the status.
    """

    api_version = "apps/v1"
    kind = "Deployment"
    foreign_annotations = frozenset({"deployment.kubernetes.io/revision"})

    def readiness(self) -> Readiness:
        return Readiness.of(self.live)

    @classmethod
    def status_view(cls, live: Mapping[str, Any]) -> Any:
        return Readiness.of(live).view()


class StatefulSetResource(resource.MutableResource):
    """A StatefulSet with readiness counts (``readiness()``) for conditions; its watch events wake the reconciler
    only when that view changes (or anything outside the status), as for :class:`DeploymentResource`."""

    api_version = "apps/v1"
    kind = "StatefulSet"

    def readiness(self) -> Readiness:
        return Readiness.of(self.live)

    @classmethod
    def status_view(cls, live: Mapping[str, Any]) -> Any:
        return Readiness.of(live).view()
