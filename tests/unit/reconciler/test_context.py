"""The context of one reconcile shares nothing with another reconcile, reconciled with the in-memory client."""

from __future__ import annotations

from typing import Any, ClassVar

import okt
from okt.kube import kinds
from okt.testing import FakeClient

WEBAPP = kinds.Kind("apps.example.com/v1alpha1", "WebApp", "webapps")


class Tagging(okt.Reconciler):
    """Puts the object's name in ``ctx.params`` (a per-reconcile value a template could read), and remembers what
    each reconcile found there first."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    params: ClassVar[dict[str, Any]] = {"tier": "web"}
    found: ClassVar[list[dict[str, Any]]] = []

    def check(self, ctx: okt.Context) -> None:
        self.found.append(dict(ctx.params))
        ctx.params["owner"] = ctx.cr.name  # type: ignore[index]


def test_a_hook_that_changes_params_changes_them_for_its_own_reconcile_only() -> None:
    fake = FakeClient(kinds=[WEBAPP])
    for name in ("first", "second"):
        fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": {"name": name, "namespace": "ns"}})

    for name in ("first", "second"):
        okt.reconcile(Tagging(), fake, None, "ns", name)

    assert Tagging.found == [{"tier": "web"}, {"tier": "web"}]
    assert Tagging.params == {"tier": "web"}
