"""A new operator version that no longer owns a kind, on a real kube-apiserver: with that kind in ``legacy_owns`` the
children of it the old version made are pruned — and only those — by a plain reconcile and under the manager, and
once that is done a reconcile or a restart writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class WidgetSettingsMap(okt.MutableResource):
    """Where the old version kept the settings."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
data:
  size: "{{ cr.spec.size }}"
"""


class WidgetSettingsSecret(okt.SecretResource):
    """Where the new version keeps them."""

    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
stringData:
  size: "{{ cr.spec.size }}"
"""


class OldWidget(shared.WidgetReconciler):
    owns = (WidgetSettingsMap, WidgetSettingsSecret)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [WidgetSettingsMap(ctx.cr), WidgetSettingsSecret(ctx.cr)]


class NewWidget(shared.WidgetReconciler):
    owns = (WidgetSettingsSecret,)
    legacy_owns = (("v1", "ConfigMap"),)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [WidgetSettingsSecret(ctx.cr)]


def config_map(kube: kube_client.Client, namespace: str, name: str) -> dict[str, Any] | None:
    return kube.get_or_none(kinds.CONFIG_MAP, name, namespace)


def strangers(kube: kube_client.Client, widget_kind: kinds.Kind, owner: dict[str, Any], namespace: str) -> list[str]:
    """Two ConfigMaps that are not okt's: one made by hand, one someone pointed at the owner with a controller
    reference but without okt's owner label."""
    name = owner["metadata"]["name"]
    reference = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        "name": name,
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    made = [f"{name}-by-hand", f"{name}-pointed"]
    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": made[0], "namespace": namespace}})
    pointed = {"name": made[1], "namespace": namespace, "ownerReferences": [reference]}
    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": pointed})
    return made


def writes(client: kube_client.Client) -> int:
    return sum(n for (verb, _), n in client.stats.snapshot().items() if verb in kube_client.WRITE_VERBS)


def test_children_of_a_kind_no_longer_owned_but_listed_in_legacy_owns_are_pruned_and_only_they(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    made = strangers(kube, widget_kind, owner, namespace)
    assert okt.reconcile(OldWidget(), kube, None, namespace, "w").outcome == okt.Outcome.done()
    assert config_map(kube, namespace, "w-settings") is not None

    run = okt.reconcile(NewWidget(), kube, None, namespace, "w")  # the operator upgraded

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert config_map(kube, namespace, "w-settings") is None  # the old version's child: pruned
    assert run.results.counts()[okt.Operation.PRUNED] == 1
    assert all(config_map(kube, namespace, name) is not None for name in made)  # never okt's: untouched
    assert kube.get_or_none(kube.resolve("v1", "Secret"), "w-settings", namespace) is not None

    sent = writes(kube)
    again = okt.reconcile(NewWidget(), kube, None, namespace, "w")

    assert again.outcome == okt.Outcome.done()
    assert writes(kube) == sent


def test_under_the_manager_legacy_children_are_pruned_from_the_cache_and_a_restart_writes_nothing(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, widget_kind: kinds.Kind
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, "m", size=1)
    made = strangers(kube, widget_kind, owner, namespace)
    okt.reconcile(OldWidget(), kube, None, namespace, "m")
    assert config_map(kube, namespace, "m-settings") is not None
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)  # its requests counted apart
    try:
        with RunningOperator.start(operator, NewWidget, namespaces=[namespace]) as running:
            wait_for(lambda: config_map(kube, namespace, "m-settings") is None, timeout=30)
            controller = running.manager.controllers[0]
            before = operator.stats.snapshot()
            done = controller.processed
            kube.patch(widget_kind, "m", {"metadata": {"labels": {"round": "2"}}}, namespace)  # wakes it
            wait_for(lambda: controller.processed > done and not controller.in_flight, timeout=30)

            # The prune of every reconcile since read the ConfigMaps from the cache: no list sent.
            assert operator.stats.delta(before)[("list", "configmaps")] == 0

        sent = writes(operator)
        with RunningOperator.start(operator, NewWidget, namespaces=[namespace]) as running:
            controller = running.manager.controllers[0]
            wait_for(lambda: controller.processed >= 1 and not controller.in_flight, timeout=30)
        assert writes(operator) == sent
    finally:
        operator.close()

    assert all(config_map(kube, namespace, name) is not None for name in made)
