"""capability-operator: a memcached operator climbing the five Operator Capability Levels.

Why this exists: okt's README promises operators "beyond Phase 2" — beyond installing and upgrading. This sample runs
memcached (Debian's package, the ``memcached:1.6`` image) and adds what the next levels ask, with okt's remote
helpers doing the talking:

=======  ===========================  =====================================================================
Level    Feature                      How
=======  ===========================  =====================================================================
1        basic install                a Deployment of ``spec.size`` Pods (memcached + a busybox ``tools``
                                      sidecar sharing its network), okt's conditions and relatedObjects
2        seamless upgrade             ``spec.version`` picks a release of :data:`RELEASES`; the Deployment rolls
                                      and ``status.versions`` reports the new release only once its Pods are
                                      ready (``Progressing=True, Upgrading`` meanwhile): ``target_versions``
3        full lifecycle: backup       ``spec.backup: NAME`` — the keys and values are read with ``ctx.exec``
                                      in the sidecar (``lru_crawler metadump``, ``get``) into the ConfigMap
                                      ``<cache>-backup-NAME``; ``status.backups`` lists the backups taken
3        full lifecycle: restore      ``spec.restore: NAME`` — that ConfigMap's values are ``set`` back into
                                      every ready Pod; ``status.restored`` says which backup was restored
4        deep insights                memcached's ``stats`` read through ``ctx.exec`` in every ready Pod, every
                                      ``spec.statsIntervalSeconds``: ``capability_cache_items``,
                                      ``capability_cache_bytes``, ``capability_cache_busiest_items``,
                                      Prometheus gauges of the operator, and ``status.stats``; a deleted
                                      Cache's series go with it (``on_deleted``)
5        auto-pilot                   ``spec.autopilot`` — one more Pod when the busiest Pod holds
                                      ``itemsThreshold`` items, guarded by a cool-down kept in
                                      ``status.autopilot`` (see :mod:`.autopilot`)
=======  ===========================  =====================================================================

Each backup and restore happens once per name: the status remembers it, so a reconcile later (a restart, a resync)
does not take or apply it again. Values are data: they travel as arguments of the exec'd command, never as shell text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import prometheus_client
import pydantic

import okt

from . import autopilot as autopilot_mod
from . import memcache_protocol as proto

GROUP = "capability.example.com"
API_VERSION = f"{GROUP}/v1alpha1"
TOOLS = "tools"
"""The sidecar the operator execs in (memcached's image has no shell)."""
EXEC_TIMEOUT = 20.0

ITEMS = prometheus_client.Gauge(
    "capability_cache_items", "Items stored in a Cache's memcached (all ready Pods).", ["namespace", "name"]
)
BYTES = prometheus_client.Gauge(
    "capability_cache_bytes", "Bytes stored in a Cache's memcached (all ready Pods).", ["namespace", "name"]
)
BUSIEST = prometheus_client.Gauge(
    "capability_cache_busiest_items", "Items held by a Cache's busiest ready Pod.", ["namespace", "name"]
)
STATS_READS = prometheus_client.Counter(
    "capability_stats_reads", "Reads of a Cache's memcached statistics.", ["namespace", "name"]
)
SCALE_OUTS = prometheus_client.Counter(
    "capability_autopilot_scale_outs", "Pods the auto-pilot added to a Cache.", ["namespace", "name"]
)
PER_CACHE: tuple[prometheus_client.Gauge | prometheus_client.Counter, ...] = (
    ITEMS,
    BYTES,
    BUSIEST,
    STATS_READS,
    SCALE_OUTS,
)
"""The series each Cache has, labelled with its namespace and name: they go with it (``on_deleted``)."""
OPERATOR_VERSION = "0.2.0"
POD = okt.Kind("v1", "Pod", "pods", True)
CONFIG_MAP = okt.Kind("v1", "ConfigMap", "configmaps", True)


Version = Literal["1.6.0", "1.6.1"]


@dataclasses.dataclass(frozen=True)
class Release:
    """What one operand version runs: the image and memcached's arguments."""

    image: str
    args: tuple[str, ...]


RELEASES: Mapping[str, Release] = {
    "1.6.0": Release("memcached:1.6", ("-m", "64")),
    # The same binary (memcached:1.6 is the only memcached image of the local node): this release of the operand
    # raises memcached's connection limit. The rollout it causes is a real one all the same.
    "1.6.1": Release("memcached:1.6", ("-m", "64", "-c", "2048")),
}
"""The operand versions this operator knows, as an operator's catalog maps each to its image and settings."""


class CacheSpec(pydantic.BaseModel):
    """The desired cache, and the day-2 operations asked of it."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    size: int = pydantic.Field(default=1, ge=1, le=10, description="memcached Pods.")
    version: Version = pydantic.Field(default="1.6.0", description="The memcached release to run (an upgrade).")
    backup: str | None = pydantic.Field(
        default=None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="Take this backup (once)."
    )
    restore: str | None = pydantic.Field(
        default=None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="Restore this backup (once)."
    )
    stats_interval_seconds: int = pydantic.Field(
        default=30, ge=1, alias="statsIntervalSeconds", description="Seconds between two reads of the statistics."
    )
    autopilot: autopilot_mod.AutopilotSpec | None = pydantic.Field(
        default=None, description="Add Pods when the busiest Pod holds too many items (off when absent)."
    )


class CacheDeployment(okt.DeploymentResource):
    """memcached and the ``tools`` sidecar the operator execs in."""

    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  labels:
    app.kubernetes.io/instance: {{ name }}
spec:
  replicas: {{ replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ name }}
        app.kubernetes.io/version: "{{ version }}"
    spec:
      terminationGracePeriodSeconds: 1
      # What the "restricted" Pod Security Standard asks for, so that a namespace enforcing it admits the pods: each
      # container runs as an unprivileged user of its image, without privileges, under the runtime's seccomp profile.
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: memcached
          image: {{ release.image }}
          imagePullPolicy: IfNotPresent
          args: {{ release.args | list | to_yaml }}
          ports:
            - name: memcached
              containerPort: 11211
          readinessProbe:
            tcpSocket:
              port: memcached
            periodSeconds: 1
          resources:
            requests:
              cpu: 100m
              memory: 96Mi
            limits:
              memory: 96Mi
          securityContext:
            # The image's memcache user, by number: the kubelet cannot tell a user named in the image from root.
            runAsUser: 11211
            allowPrivilegeEscalation: false
            capabilities:
              drop: ["ALL"]
        - name: tools
          image: busybox:1.35
          imagePullPolicy: IfNotPresent
          command: ["sleep", "2147483647"]
          # sleep, and the sh, printf and nc of each exec: a backup's values pass through its memory.
          resources:
            requests:
              cpu: 10m
              memory: 32Mi
            limits:
              memory: 32Mi
          securityContext:
            # busybox's nobody (its image runs as root): talking to memcached over loopback needs no privilege.
            runAsUser: 65534
            allowPrivilegeEscalation: false
            capabilities:
              drop: ["ALL"]
"""


class CacheReconciler(okt.Reconciler):
    """Reconciles ``Cache`` (``capability.example.com/v1alpha1``); the day-2 work runs once the Pods are available."""

    api_version = API_VERSION
    kind = "Cache"
    plural = "caches"
    spec_model = CacheSpec
    owns = (CacheDeployment,)
    permissions: ClassVar[Mapping[tuple[str, str], Sequence[str]]] = {
        ("", "pods"): ("get", "list"),  # the ready Pods to exec in
        ("", "pods/exec"): ("create", "get"),  # ctx.exec (get: Kubernetes 1.30 and earlier)
        ("", "configmaps"): ("create", "get"),  # the backups
    }

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        spec: CacheSpec = ctx.spec
        state = autopilot_mod.State.from_status(ctx.cr.status.get("autopilot"))
        replicas = autopilot_mod.replicas(spec.size, spec.autopilot, state)
        params = {"release": RELEASES[spec.version], "version": spec.version, "replicas": replicas}
        return [CacheDeployment(ctx.cr, params=params)]

    def target_versions(self, ctx: okt.Context) -> dict[str, str]:
        """The operator's version and the memcached release the spec asks for: okt reports them in
        ``status.versions`` once the Deployment has rolled out, with ``Progressing=True, Upgrading`` until then."""
        spec: CacheSpec = ctx.spec
        return {"capability-operator": OPERATOR_VERSION, "memcached": spec.version}

    def on_deleted(self, cr: okt.CustomResource) -> None:
        """A deleted Cache's series go with it: kept, a dashboard showed its last statistics for ever, and each Cache
        ever created stayed in every scrape. Best effort (see okt's ``on_deleted``): a Cache deleted while the
        operator was down has no series in the new process anyway, its series living in the operator's memory."""
        for family in PER_CACHE:
            # A series never set (its Pods never answered): older prometheus-client releases raise KeyError.
            with contextlib.suppress(KeyError):
                family.remove(cr.namespace, cr.name)

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.SuccessManager and self.available(ctx) is True:
            self.day_two(ctx)
        return super().enter_in_state(state, ctx)

    def day_two(self, ctx: okt.Context) -> None:
        """Backup, restore, statistics, auto-pilot: each a status field, written with the conditions."""
        pods = ready_pods(ctx)
        if not pods:
            return
        spec: CacheSpec = ctx.spec
        status = ctx.cr.status
        backups = list(status.get("backups") or ())
        if spec.backup and spec.backup not in backups:
            take_backup(ctx, pods[0], spec.backup)
            backups.append(spec.backup)
        ctx.status_fields["backups"] = backups
        restored = status.get("restored")
        if spec.restore and spec.restore != restored:
            for pod in pods:
                restore_backup(ctx, pod, spec.restore)
            restored = spec.restore
        if restored:
            ctx.status_fields["restored"] = restored
        per_pod = [proto.parse_stats(run(ctx, pod, proto.stats_request())) for pod in pods]
        counts = [int(stats.get("curr_items", 0)) for stats in per_pod]
        items, size, busiest = sum(counts), sum(int(stats.get("bytes", 0)) for stats in per_pod), max(counts)
        labels = (ctx.cr.namespace, ctx.cr.name)
        STATS_READS.labels(*labels).inc()
        ITEMS.labels(*labels).set(items)
        BYTES.labels(*labels).set(size)
        BUSIEST.labels(*labels).set(busiest)
        ctx.status_fields["stats"] = {"items": items, "bytes": size, "busiest": busiest}
        ctx.requeue_after(spec.stats_interval_seconds)
        self.pilot(ctx, busiest)

    def pilot(self, ctx: okt.Context, busiest: int) -> None:
        """Level 5: add a Pod when the busiest one holds too many items (see :mod:`.autopilot` for the guards).

        The decision is kept in ``status.autopilot`` with the conditions; the reconcile asked for a second later
        renders the Deployment with one more replica from it.
        """
        spec: CacheSpec = ctx.spec
        if spec.autopilot is None:
            return
        rolling = self.progressing(ctx)
        decision = autopilot_mod.decide(
            spec.autopilot,
            autopilot_mod.State.from_status(ctx.cr.status.get("autopilot")),
            size=spec.size,
            busiest_items=busiest,
            rolling=rolling[0] if isinstance(rolling, tuple) else rolling,
            now=datetime.datetime.now(datetime.UTC).replace(microsecond=0),
        )
        ctx.status_fields["autopilot"] = decision.state.to_status(decision.reason)
        if decision.acted:
            SCALE_OUTS.labels(ctx.cr.namespace, ctx.cr.name).inc()
            ctx.event("Normal", "ScaledOut", decision.reason)
            ctx.results.add(okt.Operation.UPDATED, f"autopilot: {decision.reason}")
            ctx.requeue_after(1.0)


def ready_pods(ctx: okt.Context) -> list[str]:
    """The names of the Cache's ready Pods, sorted."""
    pods, _ = ctx.client.list(POD, ctx.cr.namespace, label_selector=f"app.kubernetes.io/instance={ctx.cr.name}")
    ready = [
        p["metadata"]["name"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (p.get("status") or {}).get("conditions") or ()
        )
    ]
    return sorted(ready)


def run(ctx: okt.Context, pod: str, payload: str) -> str:
    """Send ``payload`` to memcached from the Pod's sidecar; its answer. A failing command is a temporary error."""
    result = ctx.exec(pod, TOOLS, proto.command(payload), timeout=EXEC_TIMEOUT)
    if not result.ok:
        raise okt.TemporaryError(f"memcached in {pod} did not answer (exit {result.exit_code}): {result.stderr}")
    return result.stdout


def backup_name(cache: str, backup: str) -> str:
    return f"{cache}-backup-{backup}"


def take_backup(ctx: okt.Context, pod: str, backup: str) -> None:
    """Every key and value of ``pod``'s memcached into the ConfigMap ``<cache>-backup-<backup>``, owned by the Cache."""
    keys = proto.parse_keys(run(ctx, pod, proto.metadump_request()))
    values = proto.parse_values(run(ctx, pod, proto.get_request(keys))) if keys else {}
    owner = {"apiVersion": API_VERSION, "kind": "Cache", "name": ctx.cr.name, "uid": ctx.cr.uid}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": backup_name(ctx.cr.name, backup),
            "namespace": ctx.cr.namespace,
            "ownerReferences": [owner],
        },
        "data": {"values.json": json.dumps(values, sort_keys=True)},
    }
    try:
        ctx.client.create(body, CONFIG_MAP)
    except okt.Conflict as exc:  # taken before, and the status write was lost: keep the first one
        if not exc.already_exists:
            raise
    ctx.results.add(okt.Operation.CREATED, f"backup {backup} ({len(values)} keys from {pod})")


def restore_backup(ctx: okt.Context, pod: str, backup: str) -> None:
    """Set the values of backup ``backup`` into ``pod``'s memcached."""
    stored = ctx.client.get_or_none(CONFIG_MAP, backup_name(ctx.cr.name, backup), ctx.cr.namespace)
    if stored is None:
        raise okt.InvalidSpec(f"no backup {backup!r} of this Cache", field="spec.restore")
    values = json.loads((stored.get("data") or {}).get("values.json") or "{}")
    if values:
        run(ctx, pod, proto.set_request(values))
    ctx.results.add(okt.Operation.UPDATED, f"restore {backup} ({len(values)} keys into {pod})")
