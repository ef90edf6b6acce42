"""Status fields at steady state: once okt's status is written, a reconcile with nothing new sends no write — whatever
the fields hold and whoever else writes the status.

Each test reconciles a Widget (no children) whose reconciler sets the status fields its ``fields`` parameter holds,
and counts the writes okt's client sends. "Someone else" writes the status through a second client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "steady"


class Fielded(okt.Reconciler):
    api_version = shared.WidgetReconciler.api_version
    kind = shared.WidgetReconciler.kind
    plural = shared.WidgetReconciler.plural
    params: ClassVar[Mapping[str, Any]] = {"fields": {}}

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        ctx.status_fields.update(ctx.params["fields"])
        return []


def reconciler_with(fields: Mapping[str, Any], strategy: str = "apply") -> Fielded:
    class With(Fielded):
        params: ClassVar[Mapping[str, Any]] = {"fields": fields}
        apply_strategy: ClassVar[str] = strategy

    return With()


def status_of(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = shared.get_widget(kube, kind, namespace, NAME).get("status") or {}
    return status


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_status_field_set_to_none_is_removed_once_and_then_costs_no_write(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(reconciler_with({"level": "debug"}, strategy), kube, widget_kind, namespace, NAME)
    assert status_of(kube, widget_kind, namespace)["level"] == "debug"
    unset = reconciler_with({"level": None}, strategy)
    shared.reconcile_widget(unset, kube, widget_kind, namespace, NAME)
    assert "level" not in status_of(kube, widget_kind, namespace)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(unset, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_status_field_never_set_and_stated_as_none_costs_no_write(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    unset = reconciler_with({"level": None}, strategy)
    shared.reconcile_widget(unset, kube, widget_kind, namespace, NAME)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(unset, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1


@pytest.mark.parametrize("strategy", ["apply", "merge"])
@pytest.mark.parametrize("how", ["apply", "merge"])
def test_another_writers_status_field_survives_and_costs_okt_no_write(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    strategy: str,
    how: str,
) -> None:
    reconciler = reconciler_with({"endpoints": {"primary": "a"}}, strategy)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    theirs = {"backup": {"last": "2026-01-02T03:04:05Z"}}
    if how == "apply":
        body = {
            "apiVersion": widget_kind.api_version,
            "kind": widget_kind.kind,
            "metadata": {"name": NAME, "namespace": namespace},
            "status": theirs,
        }
        other_client.apply(body, widget_kind, field_manager="backup", subresource="status")
    else:
        other_client.patch(widget_kind, NAME, {"status": theirs}, namespace, subresource="status")
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1
    status = status_of(kube, widget_kind, namespace)
    assert status["backup"] == theirs["backup"]
    assert status["endpoints"] == {"primary": "a"}


def endpoints_beside_another_writers(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> tuple[Fielded, dict[str, Any]]:
    """A Widget whose ``status.endpoints`` okt applied (``primary: a``) and another field manager then applied a key
    of its own into (``secondary: b``): the reconciler, and that other writer's apply body."""
    reconciler = reconciler_with({"endpoints": {"primary": "a"}})
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    body: dict[str, Any] = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        "metadata": {"name": NAME, "namespace": namespace},
        "status": {"endpoints": {"secondary": "b"}},
    }
    other_client.apply(body, widget_kind, field_manager="backup", subresource="status")
    return reconciler, body


def test_another_writers_key_in_a_status_map_okt_applies_survives_and_then_costs_okt_no_write(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler, body = endpoints_beside_another_writers(kube, other_client, namespace, widget_kind)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)  # may apply once: it changes nothing
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1
    assert status_of(kube, widget_kind, namespace)["endpoints"] == {"primary": "a", "secondary": "b"}
    other_client.apply(
        {**body, "status": {"endpoints": {"secondary": "c"}}}, widget_kind, field_manager="backup", subresource="status"
    )
    changed = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, changed) == {}
    assert status_of(kube, widget_kind, namespace)["endpoints"] == {"primary": "a", "secondary": "c"}


def test_okts_own_value_in_a_status_map_it_applies_is_still_repaired_beside_another_writers_key(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler, _ = endpoints_beside_another_writers(kube, other_client, namespace, widget_kind)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    other_client.patch(widget_kind, NAME, {"status": {"endpoints": {"primary": "x"}}}, namespace, subresource="status")
    before = kube.stats.snapshot()

    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {("apply", "widgets/status"): 1}
    assert status_of(kube, widget_kind, namespace)["endpoints"] == {"primary": "a", "secondary": "b"}
