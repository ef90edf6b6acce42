"""One prune rule, under the Manager (the informer cache path ``okt run`` uses): okt deletes only what it created.

A child okt created and no longer registers goes; an object someone else made and pointed at the owner with a
controller reference, but without okt's owner label, stays.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Toggling(shared.WidgetReconciler):
    """The ConfigMap child while ``with_config`` holds."""

    owns = (shared.WidgetConfig,)
    with_config: ClassVar[bool] = True

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)] if self.with_config else []


def config(kube: kube_client.Client, namespace: str, name: str) -> dict[str, Any] | None:
    return kube.get_or_none(kinds.CONFIG_MAP, name, namespace)


def test_under_the_manager_only_children_okt_created_are_pruned(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, "p", size=1)
    reference = {
        "apiVersion": widget_kind.api_version,
        "kind": widget_kind.kind,
        "name": "p",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p-notes", "namespace": namespace}}
    foreign["metadata"]["ownerReferences"] = [reference]  # type: ignore[index]
    kube.create(foreign, kinds.CONFIG_MAP)
    Toggling.with_config = True
    try:
        with RunningOperator.start(kube, Toggling, namespaces=[namespace], grace_period=5):
            wait_for(lambda: config(kube, namespace, "p-config") is not None, timeout=30)
            Toggling.with_config = False
            kube.patch(widget_kind, "p", {"metadata": {"labels": {"round": "2"}}}, namespace)  # wakes it

            wait_for(lambda: config(kube, namespace, "p-config") is None, timeout=30)  # the same pass saw p-notes
    finally:
        Toggling.with_config = True

    assert config(kube, namespace, "p-notes") is not None
