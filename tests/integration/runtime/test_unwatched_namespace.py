"""A cluster-scoped primary run with some namespaces only (``okt run -n``) whose child would be written in another
namespace: okt would create it and never watch it (its deletion or drift unrepaired, never pruned). The reconcile
refuses it instead, saying so in Ready, and writes the children of the watched namespaces as usual."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import condition, crds, wait_for

pytestmark = pytest.mark.integration

GROUP = "unwatched.okt.io"


class PlacedConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ cr.spec.namespace }}
data:
  placed: {{ name }}
"""


class Placement(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Placement"
    plural = "placements"
    namespaced = False
    owns = (PlacedConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PlacedConfig(ctx.cr)]


@pytest.fixture(scope="module")
def placement_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(crds.schemaless_crd(GROUP, "Placement", "placements", namespaced=False))


@pytest.fixture
def other_namespace(kube: kube_client.Client) -> Iterator[str]:
    name = f"okt-other-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield name
    kube.delete(kinds.NAMESPACE, name)


def test_a_child_in_a_namespace_the_operator_does_not_watch_is_refused_not_written_unwatched(
    kube: kube_client.Client, placement_kind: kinds.Kind, namespace: str, other_namespace: str
) -> None:
    manager = manager_mod.Manager(kube, [Placement], namespaces=[namespace], metrics_bind="0")
    names = {"inside": namespace, "outside": other_namespace}
    for name, where in names.items():
        body = {"apiVersion": placement_kind.api_version, "kind": "Placement", "metadata": {"name": name}}
        kube.create({**body, "spec": {"namespace": where}}, placement_kind)
    manager.start()
    try:

        def ready(name: str) -> dict[str, Any] | None:
            return condition(kube.get(placement_kind, name), "Ready")

        wait_for(lambda: (ready("inside") or {}).get("status") == "True", timeout=30)
        wait_for(lambda: (ready("outside") or {}).get("status") == "False", timeout=30)
        refused = ready("outside") or {}
        assert f"namespace {other_namespace}" in refused["message"], refused
        assert "does not watch" in refused["message"], refused
        assert kube.get_or_none(kinds.CONFIG_MAP, "outside-config", other_namespace) is None
        assert kube.get_or_none(kinds.CONFIG_MAP, "inside-config", namespace) is not None
    finally:
        manager.stop()
        manager.join(30)
        for name in names:
            kube.delete(placement_kind, name)
