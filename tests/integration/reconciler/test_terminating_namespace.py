"""A cluster-scoped primary whose children live in a namespace being deleted: the API server refuses every create
there until the namespace is gone. The reconcile says so in Ready and backs off, at no write per retry."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import condition, crds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

GROUP = "terminating.okt.io"
HOLD = "terminating.okt.io/hold"


class TenantConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ cr.spec.namespace }}
data:
  tenant: {{ name }}
"""


class Tenant(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Tenant"
    plural = "tenants"
    namespaced = False
    owns = (TenantConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [TenantConfig(ctx.cr)]


@pytest.fixture(scope="module")
def tenant_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(GROUP, "Tenant", "tenants", namespaced=False))
    return kind


@pytest.fixture
def terminating_namespace(kube: kube_client.Client) -> Iterator[str]:
    """A namespace being deleted, held there by a ConfigMap's finalizer until the test ends."""
    name = f"okt-term-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    held = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "namespace": name}}
    kube.create({**held, "metadata": {**held["metadata"], "finalizers": [HOLD]}}, kinds.CONFIG_MAP)
    kube.delete(kinds.NAMESPACE, name)
    try:
        yield name
    finally:
        kube.patch(kinds.CONFIG_MAP, "held", {"metadata": {"finalizers": None}}, name)


def test_children_refused_in_a_namespace_being_deleted_are_said_in_ready_and_retried_without_a_write_each(
    kube: kube_client.Client, tenant_kind: kinds.Kind, terminating_namespace: str
) -> None:
    name = f"t-{secrets.token_hex(3)}"
    body = {"apiVersion": tenant_kind.api_version, "kind": "Tenant", "metadata": {"name": name}}
    kube.create({**body, "spec": {"namespace": terminating_namespace}}, tenant_kind)
    recorder = events.EventRecorder(kube, "tenant")
    try:
        first = okt.reconcile(Tenant(), kube, None, None, name, kind=tenant_kind, recorder=recorder)

        assert first.outcome.kind is okt.OutcomeKind.RETRY, first.outcome
        live = kube.get(tenant_kind, name)
        ready = condition(live, "Ready")
        assert ready is not None and (ready["status"], ready["reason"]) == ("False", "NamespaceTerminating"), ready
        assert f"namespace {terminating_namespace} is being deleted" in ready["message"]
        assert "ConfigMap" in ready["message"] and f"{name}-config" in ready["message"]
        before = kube.stats.snapshot()

        for _ in range(3):
            again = okt.reconcile(Tenant(), kube, None, None, name, kind=tenant_kind, recorder=recorder)
            assert again.outcome.kind is okt.OutcomeKind.RETRY, again.outcome

        refused = {("apply", "configmaps")}  # the create tried again (a server-side apply), refused
        assert {k: n for k, n in shared.write_requests(kube, before).items() if k not in refused} == {}
        degraded = condition(kube.get(tenant_kind, name), "Degraded")
        assert degraded is not None and degraded["status"] == "False", degraded
        [event] = [e for e in kube.list(kinds.EVENT, "default")[0] if e["involvedObject"]["name"] == name]
        assert (event["type"], event["reason"], event["count"]) == ("Warning", "NamespaceTerminating", 1)
    finally:
        kube.delete(tenant_kind, name)
