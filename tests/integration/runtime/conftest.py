"""A small custom resource ("Gadget", with a status subresource) and a reconciler owning ConfigMaps.

The runtime tests inject their own reconcile function: what they pin is the wiring (events, queue, workers, leases,
probes), not what a reconcile does.
"""

from __future__ import annotations

import collections
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import okt
from okt.engines import results as results_mod
from okt.engines import stepper
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import manager as manager_mod
from okt.testing import crds, faults

GROUP = "runtime.okt.io"


def gadget_crd() -> dict[str, Any]:
    return crds.schemaless_crd(GROUP, "Gadget", "gadgets")


class GadgetConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class GadgetReconciler(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    owns = (GadgetConfig,)


@pytest.fixture(scope="session")
def gadget_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(gadget_crd())


@pytest.fixture
def make_gadget(kube: kube_client.Client, gadget_kind: kinds.Kind, namespace: str) -> Callable[..., dict[str, Any]]:
    def make(name: str, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": gadget_kind.api_version,
            "kind": gadget_kind.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec or {"size": 1},
        }
        return kube.create(body, gadget_kind)

    return make


class FakeReconcile:
    """A reconcile function standing in for the core: counts calls per key, optionally slow or blocking."""

    def __init__(self, delay: float = 0.0, action: Callable[[str | None, str], None] | None = None) -> None:
        self.delay = delay
        self.action = action
        self.lock = threading.Lock()
        self.calls: collections.Counter[tuple[str | None, str]] = collections.Counter()
        self.running: collections.Counter[tuple[str | None, str]] = collections.Counter()
        self.max_running_per_key = 0
        self.max_running = 0
        self.release = threading.Event()
        self.release.set()

    def __call__(
        self, reconciler: Any, client: Any, reader: Any, namespace: str | None, name: str, **kwargs: Any
    ) -> stepper.Run:
        key = (namespace, name)
        with self.lock:
            self.calls[key] += 1
            self.running[key] += 1
            self.max_running_per_key = max(self.max_running_per_key, self.running[key])
            self.max_running = max(self.max_running, sum(self.running.values()))
        try:
            time.sleep(self.delay)
            self.release.wait(60)
            if self.action is not None:
                self.action(namespace, name)
        finally:
            with self.lock:
                self.running[key] -= 1
        return stepper.Run((okt.State.End,), results_mod.Outcome.done(), results_mod.Results())

    def count(self, name: str | None = None) -> int:
        with self.lock:
            return sum(n for (_, key_name), n in self.calls.items() if name is None or key_name == name)


def idle(controller: controller_mod.Controller) -> bool:
    """Whether nothing of ``controller`` is queued, waiting for its delay, or running."""
    queue = controller.queue
    return len(queue) == 0 and queue.delayed_count == 0 and controller.in_flight == 0


@pytest.fixture
def start_manager(kube: kube_client.Client, namespace: str) -> Iterator[Callable[..., manager_mod.Manager]]:
    """Start a Manager of one reconciler in the test's namespace (no metrics port); every one started is stopped after
    the test."""
    made: list[manager_mod.Manager] = []

    def start(reconciler: type[okt.Reconciler], **options: Any) -> manager_mod.Manager:
        manager = manager_mod.Manager(
            kube, [reconciler], namespaces=[namespace], metrics_bind="0", grace_period=5, **options
        )
        made.append(manager)
        manager.start()
        return manager

    yield start
    for manager in made:
        manager.stop()
        manager.join(15)


@pytest.fixture
def fake_reconcile() -> type[FakeReconcile]:
    return FakeReconcile


@pytest.fixture
def gadget_reconciler() -> type[GadgetReconciler]:
    return GadgetReconciler


@pytest.fixture
def run_controller(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, gadget_reconciler: Any
) -> Iterator[Callable[..., controller_mod.Controller]]:
    running: list[tuple[controller_mod.Controller, cache_mod.Cache]] = []

    def start(reconcile: Any, workers: int = 2) -> controller_mod.Controller:
        cache = cache_mod.Cache(kube, [namespace])
        controller = controller_mod.Controller(gadget_reconciler, kube, cache, workers=workers, reconcile=reconcile)
        running.append((controller, cache))
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        return controller

    yield start
    for controller, cache in running:
        controller.shutdown(5)
        cache.stop()


class LeaseHangingProxy(faults.FaultProxy):
    """Forwards every request; while :attr:`hang` is set, requests for a lease get no answer at all (the connection is
    held open until :attr:`done` or a minute, then closed) — the API server paused, or the network dropping the packets
    of the lease's renewals only."""

    def __init__(self, upstream: str, ca_file: str) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.hang = threading.Event()
        self.done = threading.Event()

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                if not ("/leases/" in self.path and proxy.hang.is_set()):
                    super()._relay()
                    return
                proxy.done.wait(60)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler


class HoldingProxy(faults.FaultProxy):
    """Forwards every request; the first one whose method and path ``holds`` accepts waits for :attr:`release` before
    it is forwarded (:attr:`held` set once it arrived: the client is provably in the step that sends it), and
    :attr:`answered` is set once its answer went back. Notes each request's method, path and arrival
    (:attr:`requests`)."""

    def __init__(self, upstream: str, ca_file: str, holds: Callable[[str, str], bool]) -> None:
        super().__init__(upstream, ca_file, rate=0.0)
        self.holds = holds
        self.held, self.release, self.answered = threading.Event(), threading.Event(), threading.Event()
        self.requests: list[tuple[str, str, float]] = []

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[valid-type, misc]
            def _relay(self) -> None:
                proxy.requests.append((self.command, self.path, time.monotonic()))
                if proxy.held.is_set() or not proxy.holds(self.command, self.path):
                    super()._relay()
                    return
                proxy.held.set()
                proxy.release.wait(60)
                super()._relay()
                proxy.answered.set()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay  # noqa: N815 - stdlib dispatch names

        return Handler
