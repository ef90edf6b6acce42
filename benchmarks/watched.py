"""The harness's view of one namespace, kept from watches: which custom resources are Ready, whose children exist.

Why this exists: the harness must know the moment a contender is done without loading the API server it measures.
Judging from lists every 0.2 s cost the API server a quorum read, a decode and a JSON encoding of every object each
time — at N=1000 a few MB five times a second, on the same two cores as the contender, and longer for a slower
contender (the tax grew with the very time it was measuring). A watch costs one encoded event per change instead.

Guarantees:

* one thread per kind (the custom resources and the three child kinds) lists once, then watches from the list's
  resourceVersion; a watch that ends or fails is resumed from the last version seen, or relisted when that version is
  gone (410), so a missed event is never assumed;
* only what judgement needs is kept: per custom resource its uid and whether it is ``Ready=True`` at its current
  generation, per child kind the uids of the custom resources that control one, and the Deployments' replicas;
* :meth:`converged` and :meth:`replicas_are` read memory only, and each one's "yes" is confirmed by the list-based
  :class:`benchmarks.cluster.Convergence` before it counts, so a bug in this view could delay a verdict but never
  fake it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

from benchmarks import cluster, manifests
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds

CONFIRM_INTERVAL = 1.0
"""At most one list-based confirmation per this many seconds (should the lists ever disagree with the watches)."""
POLL_INTERVAL = 0.05
"""How often a verdict is asked of the view (memory only, so often: the verdict's time is this precise)."""
RETRY_DELAY = 0.5
WATCH_SECONDS = 120


class WatchedNamespace:
    """Watches of the custom resources and their children in one namespace; use as a context manager."""

    def __init__(self, client: kube_client.Client, namespace: str, n: int) -> None:
        self.client = client
        self.namespace = namespace
        self.n = n
        self.custom = cluster.MEMCACHED
        self.children = cluster.CHILD_KINDS
        self.lists = cluster.Convergence(client, namespace, n)
        self._confirmed_at = 0.0
        custom, children = self.custom, self.children
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._streams: dict[str, Any] = {}
        self._synced: dict[str, threading.Event] = {k.kind: threading.Event() for k in (custom, *children)}
        self._ready: dict[str, bool] = {}  # custom resource uid -> Ready=True at its generation
        self._owned: dict[str, dict[str, str]] = {k.kind: {} for k in children}  # child name -> owner uid
        self._replicas: dict[str, int | None] = {}  # Deployment name -> spec.replicas
        self._threads = [
            threading.Thread(target=self._follow, args=(kind,), name=f"view-{kind.plural}", daemon=True)
            for kind in (custom, *children)
        ]
        self.last = "nothing seen yet"

    def __enter__(self) -> WatchedNamespace:
        return self.start()

    def start(self) -> WatchedNamespace:
        """Start the watches and return once every kind has been listed."""
        for thread in self._threads:
            thread.start()
        for event in self._synced.values():
            if not event.wait(60):
                self.close()
                raise cluster.BenchError(f"the harness could not list and watch {self.namespace} within 60s")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            kube_client.interrupt(stream)
        for thread in self._threads:
            if thread.is_alive():
                thread.join(5)

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

    def replicas_are(self, size: int) -> bool:
        """Every custom resource's Deployment asks for ``size`` replicas."""
        deployment = self.children[-1].kind
        with self._lock:
            owners = self._owned[deployment]
            done = sum(1 for name, replicas in self._replicas.items() if replicas == size and name in owners)
            total = len(self._ready)
        self.last = f"{done}/{self.n} Deployments at {size} replicas"
        return total >= self.n and done == total and self._confirm(lambda: self.lists.replicas_are(size))

    def _confirm(self, verdict: Callable[[], bool]) -> bool:
        """The list-based ``verdict``, asked at most every :data:`CONFIRM_INTERVAL` seconds (False in between)."""
        now = time.monotonic()
        if now - self._confirmed_at < CONFIRM_INTERVAL:
            return False
        self._confirmed_at = now
        return verdict()

    # -- the watches -----------------------------------------------------------------------------------------------

    def _follow(self, kind: kinds.Kind) -> None:
        version = ""
        while not self._stopping.is_set():
            try:
                if not version:
                    items, version = self.client.list(kind, self.namespace)
                    self._reset(kind, items)
                    self._synced[kind.kind].set()
                for event in self._events(kind, version):
                    obj = event.get("object") or {}
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self._apply(kind, event["type"], obj)
            except errors.Gone:
                version = ""
            except errors.OktError:
                if self._stopping.wait(RETRY_DELAY):
                    return

    def _events(self, kind: kinds.Kind, version: str) -> Iterator[dict[str, Any]]:
        def opened(stream: Any) -> None:
            with self._lock:
                self._streams[kind.kind] = stream
            if self._stopping.is_set():
                kube_client.interrupt(stream)

        yield from self.client.watch(
            kind, self.namespace, resource_version=version, timeout_seconds=WATCH_SECONDS, on_open=opened
        )

    def _reset(self, kind: kinds.Kind, items: list[dict[str, Any]]) -> None:
        with self._lock:
            if kind is self.custom:
                self._ready.clear()
            else:
                self._owned[kind.kind].clear()
                if kind is self.children[-1]:
                    self._replicas.clear()
        for item in items:
            self._apply(kind, "ADDED", item)

    def _apply(self, kind: kinds.Kind, change: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        gone = change == "DELETED"
        with self._lock:
            if kind is self.custom:
                uid = str(meta.get("uid", ""))
                if gone:
                    self._ready.pop(uid, None)
                else:
                    self._ready[uid] = manifests.is_ready(obj)
                return
            name = str(meta.get("name", ""))
            owner = next(
                (
                    r
                    for r in meta.get("ownerReferences") or []
                    if r.get("controller") and r.get("kind") == manifests.KIND
                ),
                None,
            )
            deployment = kind is self.children[-1]
            if gone or owner is None:
                self._owned[kind.kind].pop(name, None)
                if deployment:
                    self._replicas.pop(name, None)
                return
            self._owned[kind.kind][name] = str(owner["uid"])
            if deployment:
                self._replicas[name] = (obj.get("spec") or {}).get("replicas")
