"""A status write that fails says so: a CRD without the status subresource is an error, logged and counted."""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.testing import crds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration


PLAIN_GROUP = "plain.okt.io"  # a group of its own: a new CRD in the Widget's group unsettles its REST mapping a while


def statusless_crd() -> dict[str, Any]:
    crd = crds.schemaless_crd(PLAIN_GROUP, "Plain", "plains")
    del crd["spec"]["versions"][0]["subresources"]
    return crd


class PlainReconciler(shared.WidgetReconciler):
    """No children: the status is the only write."""

    api_version = f"{PLAIN_GROUP}/v1"
    kind = "Plain"
    plural = "plains"
    owns = ()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return []


def test_a_crd_without_the_status_subresource_is_a_status_error_logged_and_counted(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    plain_kind: kinds.Kind = apply_crd(statusless_crd())
    shared.make_widget(kube, plain_kind, namespace, "p", size=1)
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(PlainReconciler, kube, cache, workers=1)
    controller.watch()
    assert cache.wait_for_sync(15)
    try:
        outcome = controller.process((namespace, "p"))
    finally:
        cache.stop()

    assert outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(outcome.error, okt.NotFound)
    assert "does the CRD declare the status subresource" in str(outcome.error)
    counted = controller.metrics.registry.get_sample_value(
        "okt_status_write_errors_total", {"controller": PlainReconciler.controller_name()}
    )
    assert counted is not None and counted >= 1
