"""Admission's hooks against the real API server: what they may send through it while an object is reviewed."""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import admission

pytestmark = pytest.mark.integration


class Claims(okt.Reconciler):
    """A check that writes (a quota claim): what a webhook declared sideEffects None may not do."""

    api_version = "test.okt.io/v1"
    kind = "Widget"
    plural = "widgets"

    def check(self, ctx: okt.Context) -> None:
        if ctx.client.get_or_none(kinds.CONFIG_MAP, f"{ctx.cr.name}-claim", ctx.cr.namespace) is None:  # reads pass
            ctx.client.create(claim(ctx.cr.namespace, f"{ctx.cr.name}-claim"), kinds.CONFIG_MAP)


def claim(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def review(namespace: str, name: str, *, dry_run: bool) -> dict[str, Any]:
    obj = {"apiVersion": Claims.api_version, "kind": "Widget", "metadata": {"name": name, "namespace": namespace}}
    return {
        "uid": secrets.token_hex(4),
        "operation": "CREATE",
        "namespace": namespace,
        "dryRun": dry_run,
        "object": {**obj, "spec": {"size": 2}},
        "resource": {"group": "test.okt.io", "version": "v1", "resource": "widgets"},
    }


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "create"])
def test_a_check_that_writes_sends_nothing_and_refuses_saying_admission_writes_nothing(
    kube: kube_client.Client, namespace: str, dry_run: bool
) -> None:
    name = f"w-{secrets.token_hex(3)}"

    verdict = admission.validate(Claims(), review(namespace, name, dry_run=dry_run), kube)

    assert kube.get_or_none(kinds.CONFIG_MAP, f"{name}-claim", namespace) is None
    assert (verdict.allowed, verdict.code) == (False, 403)
    assert verdict.message == (
        "create configmaps not sent: an admission hook writes nothing (its webhook is declared sideEffects None: "
        "a dry run, or an object refused later, must leave no trace)"
    )


class CatchingClaims(Claims):
    """A check that catches what its write raises, as a check guarding an optional write would."""

    caught: ClassVar[list[BaseException]] = []

    def check(self, ctx: okt.Context) -> None:
        try:
            super().check(ctx)
        except okt.OktError as exc:
            self.caught.append(exc)


def test_a_write_refused_at_admission_is_a_write_refused_and_not_a_lost_lease(
    kube: kube_client.Client, namespace: str
) -> None:
    name = f"w-{secrets.token_hex(3)}"
    CatchingClaims.caught.clear()

    verdict = admission.validate(CatchingClaims(), review(namespace, name, dry_run=False), kube)

    [refused] = CatchingClaims.caught
    assert isinstance(refused, okt.WriteRefused)
    assert not isinstance(refused, okt.NotLeader)
    assert refused.reason == "WriteRefused"
    assert str(refused).startswith("create configmaps not sent: an admission hook writes nothing")
    assert kube.get_or_none(kinds.CONFIG_MAP, f"{name}-claim", namespace) is None
    assert verdict.allowed
