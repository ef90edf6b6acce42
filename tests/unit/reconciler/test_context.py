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


class Flaky(okt.Reconciler):
    """Fails its first two reconciles, and remembers the attempt each reconcile saw."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    seen: ClassVar[list[int]] = []
    failing: ClassVar[int] = 2

    def check(self, ctx: okt.Context) -> None:
        self.seen.append(ctx.attempt)
        if len(self.seen) <= self.failing:
            raise RuntimeError("the backend is not up yet")


def test_the_attempt_counts_the_failed_reconciles_before_this_one_and_starts_again_after_a_success() -> None:
    """Kopf's ``retry`` (``ctx.attempt - 1``): a limit of retries written in a hook, from the count kept on the object
    (so another process, after a restart, counts on)."""
    fake = FakeClient(kinds=[WEBAPP])
    fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": {"name": "w", "namespace": "ns"}})

    outcomes = [okt.reconcile(Flaky(), fake, None, "ns", "w").outcome.kind.value for _ in range(4)]

    assert outcomes == ["retry", "retry", "done", "done"]
    assert Flaky.seen == [1, 2, 3, 1]  # two failures, a success, then the count starts again
