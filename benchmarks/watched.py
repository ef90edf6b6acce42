"""The harness's view of one namespace, kept from watches: which custom resources are Ready, whose children exist.

Why this exists: the harness must know the moment a contender is done without loading the API server it measures.
Judging from lists every 0.2 s cost the API server a quorum read, a decode and a JSON encoding of every object each
time — at N=1000 a few MB five times a second, on the same two cores as the contender, and longer for a slower
contender (the tax grew with the very time it was measuring). A watch costs one encoded event per change instead.

Guarantees:

* one of okt's informers per kind (the custom resources and the three child kinds) lists, then watches, resumes a
  watch that ends and relists when its version is gone (410), announcing what changed meanwhile — so a missed event
  is never assumed (the floor and Kopf are judged by the same instrument, and every verdict is confirmed by lists);
* only what judgement needs is kept: per custom resource its uid and whether it is ``Ready=True``, per child kind
  the uids of the custom resources that control one, and the Deployments' replicas;
* :meth:`converged` and :meth:`replicas_are` read memory only, and each one's "yes" is confirmed by the list-based
  :class:`benchmarks.cluster.Convergence` before it counts, so a bug in this view could delay a verdict but never
  fake it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from benchmarks import cluster, manifests
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import informer as informer_mod

CONFIRM_INTERVAL = 1.0
"""At most one list-based confirmation per this many seconds (should the lists ever disagree with the watches)."""
POLL_INTERVAL = 0.05
"""How often a verdict is asked of the view (memory only, so often: the verdict's time is this precise)."""
SYNC_TIMEOUT = 60.0


class WatchedNamespace:
    """Watches of the custom resources and their children in one namespace; use as a context manager."""

    def __init__(self, client: kube_client.Client, namespace: str, n: int) -> None:
        self.n = n
        self.namespace = namespace
        self.lists = cluster.Convergence(client, namespace, n)
        self.last = "nothing seen yet"
        self._deployment = cluster.CHILD_KINDS[-1]
        self._confirmed_at = 0.0
        self._lock = threading.Lock()
        self._ready: dict[str, bool] = {}  # custom resource uid -> Ready=True
        self._owned: dict[str, dict[str, str]] = {k.kind: {} for k in cluster.CHILD_KINDS}  # child name -> owner uid
        self._replicas: dict[str, int | None] = {}  # Deployment name -> spec.replicas
        self._informers = [
            informer_mod.Informer(client, cluster.MEMCACHED, namespace, on_event=self._on_custom),
            *(
                informer_mod.Informer(client, kind, namespace, on_event=self._child_handler(kind))
                for kind in cluster.CHILD_KINDS
            ),
        ]

    def __enter__(self) -> WatchedNamespace:
        return self.start()

    def start(self) -> WatchedNamespace:
        """Start the watches and return once every kind has been listed."""
        for informer in self._informers:
            informer.start()
        deadline = time.monotonic() + SYNC_TIMEOUT
        for informer in self._informers:
            if not informer.has_synced.wait(max(deadline - time.monotonic(), 0.0)):
                self.close()
                raise cluster.BenchError(f"the harness could not list and watch {self.namespace} within 60s")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for informer in self._informers:
            informer.stop(timeout=5.0)

    # -- verdicts --------------------------------------------------------------------------------------------------

    def converged(self) -> bool:
        """Every custom resource is Ready=True and controls a ConfigMap, a Service and a Deployment."""
        with self._lock:
            uids = set(self._ready)
            ready = sum(self._ready.values())
            missing = {kind: len(uids - set(owned.values())) for kind, owned in self._owned.items()}
        self.last = f"{ready}/{self.n} Ready, children missing: " + ", ".join(f"{k} {v}" for k, v in missing.items())
        return (
            len(uids) >= self.n
            and ready == len(uids)
            and not any(missing.values())
            and self._confirm(self.lists.converged)
        )

    def replicas_are(self, size: int | Sequence[int]) -> bool:
        """Every custom resource's Deployment asks for ``size`` replicas (or its own size of the list, by name)."""
        # One size for all holds whatever the objects are named; a list of sizes goes by the harness's names.
        wanted = None if isinstance(size, int) else cluster.expected_sizes(self.n, size)
        with self._lock:
            owners = self._owned[self._deployment.kind]
            done = sum(
                1
                for name, replicas in self._replicas.items()
                if replicas == (size if wanted is None else wanted.get(name)) and name in owners
            )
            total = len(self._ready)
        self.last = f"{done}/{self.n} Deployments at {cluster.describe_sizes(size)} replicas"
        return total >= self.n and done == total and self._confirm(lambda: self.lists.replicas_are(size))

    def _confirm(self, verdict: Callable[[], bool]) -> bool:
        """The list-based ``verdict``, asked at most every :data:`CONFIRM_INTERVAL` seconds (False in between)."""
        now = time.monotonic()
        if now - self._confirmed_at < CONFIRM_INTERVAL:
            return False
        self._confirmed_at = now
        return verdict()

    # -- what the informers announce -------------------------------------------------------------------------------

    def _on_custom(self, change: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        with self._lock:
            if change == informer_mod.DELETED:
                self._ready.pop(uid, None)
            else:
                self._ready[uid] = manifests.is_ready(obj)

    def _child_handler(self, kind: kinds.Kind) -> informer_mod.EventHandler:
        owned = self._owned[kind.kind]
        deployment = kind is self._deployment

        def on_child(change: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            meta: Mapping[str, Any] = obj.get("metadata") or {}
            name = str(meta.get("name", ""))
            owner = next(
                (
                    r
                    for r in meta.get("ownerReferences") or []
                    if r.get("controller") and r.get("kind") == manifests.KIND
                ),
                None,
            )
            with self._lock:
                if change == informer_mod.DELETED or owner is None:
                    owned.pop(name, None)
                    if deployment:
                        self._replicas.pop(name, None)
                    return
                owned[name] = str(owner["uid"])
                if deployment:
                    self._replicas[name] = (obj.get("spec") or {}).get("replicas")

        return on_child
