"""The identity of a child: its name and namespace, often taken from a custom resource's values.

A name is a segment of the URL okt reads and writes the child at: a value holding ``/`` (``demo/status``) or ``?``
would address another object — the child okt already manages, which the reconcile would then read as its own and
prune. Such a name is refused before any request; a name the API server refuses for the kind is its readable 422.
Either way the child okt manages stays and the custom resource is not Ready.

A child's controller ownerReference holds only within its owner's namespace: the garbage collector deletes a
namespaced child whose owner is in another namespace as soon as it sees it, and ignores the reference of a
cluster-scoped child to a namespaced owner (the child outlives its owner). okt refuses to write either, and a class
that gives a namespace to a kind the server serves cluster-scoped is refused when the child is registered.
"""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition, crds
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
        pytest.param(f"{NAME}?watch=false", "InvalidChild", id="query"),
        pytest.param(f"{NAME}#x", "InvalidChild", id="fragment"),
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


class ElsewhereConfig(okt.MutableResource):
    """A ConfigMap in the namespace ``spec.greeting`` names."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-elsewhere
  namespace: {{ cr.spec.greeting }}
data:
  greeting: hello
"""


class WidgetRole(okt.MutableResource):
    """A cluster-scoped child of the namespaced Widget."""

    api_version = "rbac.authorization.k8s.io/v1"
    kind = "ClusterRole"
    template = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ cr.spec.greeting }}-{{ name }}
rules: []
"""


@pytest.mark.parametrize(
    ("child", "where"),
    [
        pytest.param(ElsewhereConfig, "namespace {other}", id="another-namespace"),
        pytest.param(WidgetRole, "in no namespace", id="cluster-scoped"),
    ],
)
def test_a_child_outside_its_owners_namespace_is_refused_and_never_written(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    child: type[okt.Resource],
    where: str,
) -> None:
    other = f"{namespace}-other"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, kinds.NAMESPACE)

    class ChildReconciler(shared.WidgetReconciler):
        owns = (child,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [child(ctx.cr)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting=other)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(ChildReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.write_requests(kube, before) == {("apply", "widgets/status"): 1}
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and ready["status"] == "False"
    assert where.format(other=other) in ready["message"] and f"namespace {namespace}" in ready["message"]


class ClusterGizmo(okt.MutableResource):
    """A child of a cluster-scoped custom kind, whose class does not say so (``namespaced`` left to okt's table)."""

    api_version = f"{shared.GROUP}/v1"
    kind = "ClusterGizmo"
    template = """
apiVersion: test.okt.io/v1
kind: ClusterGizmo
metadata:
  name: {{ name }}-gizmo
spec:
  size: {{ cr.spec.size }}
"""


class GizmoReconciler(shared.WidgetReconciler):
    owns = (ClusterGizmo,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [ClusterGizmo(ctx.cr)]


def test_a_child_class_that_takes_a_cluster_scoped_kind_for_a_namespaced_one_is_refused_with_the_fix(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, apply_crd: Any
) -> None:
    apply_crd(crds.schemaless_crd(shared.GROUP, "ClusterGizmo", "clustergizmos", namespaced=False))
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(GizmoReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is not okt.OutcomeKind.DONE
    assert shared.write_requests(kube, before) == {("apply", "widgets/status"): 1}
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and ready["status"] == "False"
    assert "cluster-scoped" in ready["message"] and "namespaced = False" in ready["message"]
