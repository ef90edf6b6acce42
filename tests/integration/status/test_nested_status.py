"""A nested status map that loses keys converges: one status write, then none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


def reporting(details: Mapping[str, Any]) -> okt.Reconciler:
    class Reporting(shared.WidgetReconciler):
        def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
            if state is okt.State.SuccessManager:
                ctx.status_fields["details"] = dict(details)
            super().enter_in_state(state, ctx)

    return Reporting()


def status_writes(kube: kube_client.Client, reconciler: okt.Reconciler, kind: kinds.Kind, namespace: str) -> int:
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(reconciler, kube, kind, namespace, "n")
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return shared.write_requests(kube, before).get(("apply", "widgets/status"), 0)


def test_a_nested_status_map_that_loses_keys_is_written_once_then_not_again(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "n", size=1)
    both = {"config": {"ready": True}, "service": {"ready": True}}
    assert status_writes(kube, reporting(both), widget_kind, namespace) == 1
    assert status_writes(kube, reporting(both), widget_kind, namespace) == 0

    one = {"config": {"ready": True}}
    writes = [status_writes(kube, reporting(one), widget_kind, namespace) for _ in range(3)]

    assert writes == [1, 0, 0]
    stored = shared.get_widget(kube, widget_kind, namespace, "n")["status"]["details"]
    assert stored == one
