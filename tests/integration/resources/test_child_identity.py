"""The identity of a child (its name and namespace) taken from a custom resource's values.

A name is a segment of the URL okt reads and writes the child at: a value holding ``/`` (``demo/status``) or ``?``
would address another object — the child okt already manages, which the reconcile would then read as its own and
prune. Such a name is refused before any request; a name the API server refuses for the kind is its readable 422.
Either way the child okt manages stays and the custom resource is not Ready.
"""

from __future__ import annotations

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "demo"


class NamedDeployment(okt.DeploymentResource):
    """The Widget's Deployment, named after ``spec.greeting``."""

    template = shared.WidgetDeployment.template.replace("  name: {{ name }}\n", "  name: {{ cr.spec.greeting }}\n", 1)


class NamingReconciler(shared.WidgetReconciler):
    owns = (NamedDeployment,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [NamedDeployment(ctx.cr)]


@pytest.mark.parametrize(
    ("child_name", "reason"),
    [
        pytest.param(f"{NAME}/status", "InvalidSpec", id="subresource"),
        pytest.param(f"{NAME}/../{NAME}", "InvalidSpec", id="dot-dot"),
        pytest.param(f"{NAME}?watch=false", "ApiError", id="query"),
        pytest.param(f"{NAME}#x", "ApiError", id="fragment"),
    ],
)
def test_a_child_name_that_would_address_another_object_leaves_the_managed_child_and_is_not_ready(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, child_name: str, reason: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting=NAME)
    assert shared.reconcile_widget(NamingReconciler(), kube, widget_kind, namespace, NAME).outcome == okt.Outcome.done()
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, greeting=child_name)

    run = shared.reconcile_widget(NamingReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is not okt.OutcomeKind.DONE
    assert shared.get_child(kube, "apps/v1", "Deployment", namespace, NAME) is not None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", reason)
    assert child_name in ready["message"]
