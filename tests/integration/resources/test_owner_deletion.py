"""Deleting the owner: the controller-manager's garbage collector deletes every child okt created.

okt does not delete children itself when the custom resource goes; it gives each child a controller ownerReference
(with blockOwnerDeletion) and lets the garbage collector do it, as controller-runtime operators do. The collector
knows the Widget kind from the start: ``apply_crd`` restarts kube-controller-manager when it creates a CRD.
"""

from __future__ import annotations

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "demo"
CHILDREN = (
    ("v1", "ConfigMap", f"{NAME}-config"),
    ("v1", "Service", NAME),
    ("apps/v1", "Deployment", NAME),
)


def test_deleting_the_owner_lets_the_garbage_collector_delete_every_child(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    widget = shared.get_widget(kube, widget_kind, namespace, NAME)
    for api_version, kind_name, name in CHILDREN:
        child = shared.get_child(kube, api_version, kind_name, namespace, name)
        assert child is not None
        assert child["metadata"]["ownerReferences"] == [okt.CustomResource(widget).owner_reference()]

    kube.delete(widget_kind, NAME, namespace)

    def children_left() -> list[str]:
        return [
            f"{kind_name}/{name}"
            for api_version, kind_name, name in CHILDREN
            if shared.get_child(kube, api_version, kind_name, namespace, name) is not None
        ]

    waiting.wait_for(
        lambda: not children_left(),
        timeout=30,
        interval=0.2,
        message=lambda: f"garbage collection of {children_left()}",
    )
    assert kube.get_or_none(widget_kind, NAME, namespace) is None
