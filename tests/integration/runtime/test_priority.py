"""Fresh events first: after a start over many objects, a change made now is reconciled before the sweep ends."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.testing import wait_for

pytestmark = pytest.mark.integration

CONVERGED = 300


@pytest.fixture
def many_gadgets(make_gadget: Callable[..., dict[str, Any]]) -> list[str]:
    names = [f"old-{i:03d}" for i in range(CONVERGED)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(make_gadget, names))
    return names


@pytest.fixture
def controller_over(
    kube: kube_client.Client, namespace: str, gadget_reconciler: Any
) -> Iterator[Callable[[Any], controller_mod.Controller]]:
    running: list[tuple[controller_mod.Controller, cache_mod.Cache]] = []

    def start(reconcile: Any) -> controller_mod.Controller:
        cache = cache_mod.Cache(kube, [namespace])
        controller = controller_mod.Controller(gadget_reconciler, kube, cache, workers=1, reconcile=reconcile)
        running.append((controller, cache))
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        return controller

    yield start
    for controller, cache in running:
        controller.shutdown(5)
        cache.stop()


def test_a_resource_created_after_a_start_over_many_is_reconciled_before_the_sweep_ends(
    many_gadgets: list[str],
    make_gadget: Callable[..., dict[str, Any]],
    fake_reconcile: Any,
    controller_over: Callable[[Any], controller_mod.Controller],
    gadget_kind: kinds.Kind,
) -> None:
    order: list[str] = []
    left_when_handed_out: dict[str, int] = {}
    lock = threading.Lock()
    started: list[controller_mod.Controller] = []

    def record(namespace: str | None, name: str) -> None:
        with lock:
            order.append(name)
            left_when_handed_out[name] = len(started[0].queue)

    reconcile = fake_reconcile(action=record)
    reconcile.release.clear()  # the one worker holds the first key of the sweep until the new resource is queued
    controller = controller_over(reconcile)
    started.append(controller)
    wait_for(lambda: reconcile.count() == 1 and controller.in_flight == 1, timeout=10)

    make_gadget("fresh")
    wait_for(lambda: len(controller.queue) == CONVERGED, timeout=10)  # the sweep's other keys and the new one
    reconcile.release.set()
    wait_for(lambda: len(order) == CONVERGED + 1, timeout=60)

    assert order.index("fresh") == 1
    assert left_when_handed_out["fresh"] == CONVERGED - 1  # the whole sweep was still to come
    assert sorted(order) == sorted([*many_gadgets, "fresh"])
