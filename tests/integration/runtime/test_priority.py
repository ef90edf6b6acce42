"""Fresh events first: after a start over many objects, a change made now is reconciled before the sweep ends."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import pytest

from okt.kube import kinds
from okt.runtime import controller as controller_mod
from okt.testing import WaitTimeout, wait_for

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


def test_a_sweep_of_python_work_runs_one_key_at_a_time_and_leaves_the_other_workers_to_live_events(
    many_gadgets: list[str],
    make_gadget: Callable[..., dict[str, Any]],
    fake_reconcile: Any,
    run_controller: Callable[..., controller_mod.Controller],
) -> None:
    reconcile = fake_reconcile()
    reconcile.release.clear()  # every reconcile waits: the sweep's first key stays in flight
    controller = run_controller(reconcile, workers=4)
    wait_for(lambda: reconcile.count() == 1 and controller.in_flight == 1, timeout=10)
    with pytest.raises(WaitTimeout):
        wait_for(lambda: controller.in_flight > 1, timeout=0.5)  # three workers free, the sweep held to one

    make_gadget("fresh")
    wait_for(lambda: reconcile.count("fresh") == 1, timeout=10)  # taken by a free worker, the sweep's key still held
    assert controller.in_flight == 2

    reconcile.release.set()
    wait_for(lambda: reconcile.count() == CONVERGED + 1 and not controller.in_flight, timeout=60)
    assert reconcile.max_running_per_key == 1


def test_a_sweep_that_waits_opens_to_every_worker(
    many_gadgets: list[str],
    fake_reconcile: Any,
    run_controller: Callable[..., controller_mod.Controller],
) -> None:
    reconcile = fake_reconcile(delay=0.02)  # a reconcile that waits on something: more at once finish more
    controller = run_controller(reconcile, workers=4)
    wait_for(lambda: reconcile.count() == CONVERGED and not controller.in_flight, timeout=60)
    assert reconcile.max_running == 4
    assert reconcile.max_running_per_key == 1
