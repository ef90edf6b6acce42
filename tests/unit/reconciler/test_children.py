"""The built-in work on children, reconciled with the in-memory client: what a child's own hooks raise is recorded as
any hook's is."""

from __future__ import annotations

from typing import Any

import okt
from okt.kube import kinds
from okt.testing import FakeClient

SHOP = kinds.Kind("apps.example.com/v1", "Shop", "shops")


class ShopConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
"""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        raise okt.GiveUp("waiting for the payment provider's credentials")


class ShopReconciler(okt.Reconciler):
    api_version = SHOP.api_version
    kind = SHOP.kind
    owns = (ShopConfig,)


def shop() -> FakeClient:
    fake = FakeClient(kinds=[SHOP])
    body: dict[str, Any] = {
        "apiVersion": SHOP.api_version,
        "kind": SHOP.kind,
        "metadata": {"name": "s", "namespace": "ns"},
    }
    fake.put({**body, "spec": {}})
    return fake


def test_a_give_up_raised_by_mutate_with_cr_gives_up_as_from_any_hook() -> None:
    fake = shop()

    run = okt.reconcile(ShopReconciler(), fake, None, "ns", "s")

    assert run.outcome == okt.give_up("waiting for the payment provider's credentials")
    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>GiveupManager>End"
    assert fake.stored(kinds.CONFIG_MAP, "s-config", "ns") is None


class PlainShopConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = ShopConfig.template


class FreeStyleShops(ShopReconciler):
    engine = okt.FreeStyle()
    owns = (PlainShopConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        ctx.give_up("")
        return [PlainShopConfig(ctx.cr)]


def test_a_give_up_without_a_reason_stops_freestyles_main_course_too() -> None:
    fake = shop()

    run = okt.reconcile(FreeStyleShops(), fake, None, "ns", "s")

    assert run.outcome == okt.give_up("")
    assert fake.stored(kinds.CONFIG_MAP, "s-config", "ns") is None
