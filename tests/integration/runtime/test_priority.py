"""Fresh events first: after a start over many objects, a change made now is reconciled before the sweep ends."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import pytest

from okt.kube import kinds
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


def test_a_resource_created_after_a_start_over_many_is_reconciled_before_the_sweep_ends(
    many_gadgets: list[str],
    make_gadget: Callable[..., dict[str, Any]],
    fake_reconcile: Any,
    run_controller: Callable[..., controller_mod.Controller],
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
    controller = run_controller(reconcile, workers=1)
    started.append(controller)
    wait_for(lambda: reconcile.count() == 1 and controller.in_flight == 1, timeout=10)

    make_gadget("fresh")
    wait_for(lambda: len(controller.queue) == CONVERGED, timeout=10)  # the sweep's other keys and the new one
    reconcile.release.set()
    wait_for(lambda: len(order) == CONVERGED + 1, timeout=60)

    assert order.index("fresh") == 1
    assert left_when_handed_out["fresh"] == CONVERGED - 1  # the whole sweep was still to come
    assert sorted(order) == sorted([*many_gadgets, "fresh"])
