"""The harness's view of one namespace, kept from watches: which custom resources are Ready, whose children exist.

Watches, not lists every 0.2 s, so the harness does not load the API server it measures (``benchmarks/README.md``,
"How it is measured"). A child counts by its controller ownerReference to the CR's uid, whatever its name; each "yes"
is confirmed over fresh lists (at most once per :data:`CONFIRM_INTERVAL`), so the view can delay a verdict, never fake
it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
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
DEPLOYMENT = cluster.CHILD_KINDS[-1].kind


class Seen:
    """Only what judgement needs: per custom resource uid whether it is Ready=True, per child kind the owner uid of
    each child, and the Deployments' replicas; fed with watch events or with the items of lists."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ready: dict[str, bool] = {}
        self.owned: dict[str, dict[str, str]] = {k.kind: {} for k in cluster.CHILD_KINDS}
        self.replicas: dict[str, int | None] = {}

    @classmethod
    def listed(cls, client: kube_client.Client, namespace: str, n: int) -> Seen:
        """The same view from one list per kind."""
        seen = cls(n)
        for kind in (cluster.MEMCACHED, *cluster.CHILD_KINDS):
            for obj in client.list(kind, namespace)[0]:
                seen.feed(kind, informer_mod.ADDED, obj)
        return seen

    def feed(self, of: kinds.Kind, change: str, obj: dict[str, Any]) -> None:
        """Take in one event (or listed item, as ``ADDED``) of the kind ``of``."""
        meta, kind = obj.get("metadata") or {}, of.kind
        if of is cluster.MEMCACHED:
            uid = str(meta.get("uid", ""))
            if change == informer_mod.DELETED:
                self.ready.pop(uid, None)
            else:
                self.ready[uid] = manifests.is_ready(obj)
            return
        name = str(meta.get("name", ""))
        refs = meta.get("ownerReferences") or []
        owner = next((r for r in refs if r.get("controller") and r.get("kind") == manifests.KIND), None)
        if change == informer_mod.DELETED or owner is None:
            self.owned[kind].pop(name, None)
            if kind == DEPLOYMENT:
                self.replicas.pop(name, None)
            return
        self.owned[kind][name] = str(owner["uid"])
        if kind == DEPLOYMENT:
            self.replicas[name] = (obj.get("spec") or {}).get("replicas")

    def converged(self) -> tuple[bool, str]:
        """See :meth:`WatchedNamespace.converged`; with what was seen."""
        uids = set(self.ready)
        ready = sum(self.ready.values())
        missing = {kind: len(uids - set(owned.values())) for kind, owned in self.owned.items()}
        said = f"{ready}/{self.n} Ready, children missing: " + ", ".join(f"{k} {v}" for k, v in missing.items())
        return len(uids) >= self.n and ready == len(uids) and not any(missing.values()), said

    def replicas_are(self, size: int | Sequence[int]) -> tuple[bool, str]:
        """See :meth:`WatchedNamespace.replicas_are`; with what was seen."""
        # One size for all holds whatever the objects are named; a list of sizes goes by the harness's names.
        wanted = None if isinstance(size, int) else cluster.expected_sizes(self.n, size)
        owners = self.owned[DEPLOYMENT]
        done = sum(
            1
            for name, replicas in self.replicas.items()
            if replicas == (size if wanted is None else wanted.get(name)) and name in owners
        )
        said = f"{done}/{self.n} Deployments at {cluster.describe_sizes(size)} replicas"
        return len(self.ready) >= self.n and done == len(self.ready), said


class WatchedNamespace:
    """Watches of the custom resources and their children in one namespace; use as a context manager."""

    def __init__(self, client: kube_client.Client, namespace: str, n: int) -> None:
        self.client = client
        self.n = n
        self.namespace = namespace
        self.last = "nothing seen yet"
        self._seen = Seen(n)
        self._confirmed_at = 0.0
        self._lock = threading.Lock()
        self._informers = [
            informer_mod.Informer(client, kind, namespace, on_event=functools.partial(self._on_event, kind))
            for kind in (cluster.MEMCACHED, *cluster.CHILD_KINDS)
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

    def converged(self) -> bool:
        """Every custom resource is Ready=True and controls a ConfigMap, a Service and a Deployment."""
        return self._verdict(Seen.converged)

    def replicas_are(self, size: int | Sequence[int]) -> bool:
        """Every custom resource's Deployment asks for ``size`` replicas (or its own size of the list, by name)."""
        return self._verdict(lambda seen: seen.replicas_are(size))

    def _verdict(self, judge: Callable[[Seen], tuple[bool, str]]) -> bool:
        """``judge``'s verdict on the watched view (what it saw kept in :attr:`last`), a "yes" confirmed by the same
        judgement over fresh lists — asked at most every :data:`CONFIRM_INTERVAL` seconds (False in between)."""
        with self._lock:
            yes, self.last = judge(self._seen)
        now = time.monotonic()
        if not yes or now - self._confirmed_at < CONFIRM_INTERVAL:
            return False
        self._confirmed_at = now
        return judge(Seen.listed(self.client, self.namespace, self.n))[0]

    def _on_event(self, kind: kinds.Kind, change: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self._seen.feed(kind, change, obj)
