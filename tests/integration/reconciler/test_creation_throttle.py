"""OKT's creation throttle (``max_creates``): at most N creates per reconcile, counted exactly; the rest wait for a
reconcile requeued at once, and Ready stays False until every child exists."""

from __future__ import annotations

from typing import ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import children
from okt.testing import condition
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Shard(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
data:
  shard: "{{ name }}"
"""


class Sharded(shared.WidgetReconciler):
    owns = (Shard,)
    max_creates: ClassVar[int | None] = 3

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Shard(ctx.cr, name=f"{ctx.cr.name}-shard-{i}") for i in range(10)]


def creates_of_one_reconcile(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> tuple[int, okt.Run]:
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(Sharded(), kube, kind, namespace, "s")
    writes = shared.write_requests(kube, before)
    return writes.get(("apply", "configmaps"), 0) + writes.get(("create", "configmaps"), 0), run


def test_at_most_max_creates_children_are_created_per_reconcile_and_the_rest_follow_at_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "s", size=1)

    rounds = [creates_of_one_reconcile(kube, widget_kind, namespace) for _ in range(5)]

    assert [created for created, _ in rounds] == [3, 3, 3, 1, 0]
    assert [run.outcome for _, run in rounds[:3]] == [okt.Outcome.requeue_after(children.THROTTLE_DELAY)] * 3
    assert rounds[3][1].outcome == okt.Outcome.done()
    assert [run.results.counts()[okt.Operation.THROTTLED] for _, run in rounds] == [7, 4, 1, 0, 0]
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "s"), "Ready")
    assert ready is not None and ready["status"] == "True"


def test_ready_stays_false_while_creations_wait(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "s", size=1)

    creates_of_one_reconcile(kube, widget_kind, namespace)

    ready = condition(shared.get_widget(kube, widget_kind, namespace, "s"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "Creating")
    assert "7 children wait for their creation" in ready["message"]


def test_max_creates_must_be_a_positive_int() -> None:
    with pytest.raises(TypeError, match=r"Bad.max_creates = 0: expected a positive int or None"):
        type("Bad", (okt.Reconciler,), {"max_creates": 0})
