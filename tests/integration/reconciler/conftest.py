"""A small custom resource ("Widget") and a reconciler with ConfigMap + Service + Deployment children.

Shared by the integration tests of the reconciler, the resources and the status. Test modules in other folders import
it as ``from tests.integration.reconciler import conftest as shared`` and expose its session fixtures by assignment
(``widget_kind = shared.widget_kind``, ``other_client = shared.other_client``). Besides the Widget itself it offers
the small readers those tests share: the write requests sent since a snapshot, a child or the Widget as the API server
has it (one condition of a status: :func:`okt.testing.condition`).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import crds, envtest, waiting

GROUP = "test.okt.io"


def widget_crd() -> dict[str, Any]:
    return crds.schemaless_crd(GROUP, "Widget", "widgets")


class WidgetSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1, le=10)
    greeting: str = "hello"


class WidgetConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
data:
  greeting: {{ cr.spec.greeting }}
  size: "{{ cr.spec.size }}"
"""


class WidgetService(okt.ServiceResource):
    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    app: {{ name }}
  ports:
    - port: 80
      targetPort: 8080
"""


class WidgetDeployment(okt.DeploymentResource):
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  labels:
    app: {{ name }}
spec:
  replicas: {{ cr.spec.size }}
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      containers:
        - name: main
          image: nginx:1.25
          ports:
            - containerPort: 8080
"""


class WidgetReconciler(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = WidgetSpec
    owns = (WidgetConfig, WidgetService, WidgetDeployment)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [WidgetConfig(ctx.cr), WidgetService(ctx.cr), WidgetDeployment(ctx.cr)]


def sized_crd(group: str, kind: str, plural: str, maximum: int | None) -> dict[str, Any]:
    """A CRD whose ``spec.size`` is an integer; with ``maximum``, one that refuses what it stored before (a CRD made
    stricter: every write of such an object, its status's too, is refused)."""
    crd = crds.schemaless_crd(group, kind, plural)
    size: dict[str, Any] = {"type": "integer"} if maximum is None else {"type": "integer", "maximum": maximum}
    crd["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"size": size}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    }
    return crd


@pytest.fixture(scope="session")
def widget_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(widget_crd())
    return kind


@pytest.fixture(scope="session")
def other_client(control_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    """A second admin client standing for "someone else" (a user, another controller): its requests are counted in
    its own stats, so ``kube.stats`` keeps counting only what okt sent."""
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    yield client
    client.close()


def make_widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return kube.create(body, kind)


# -- readers shared by the integration tests -------------------------------------------------------------------------


def write_requests(
    kube: kube_client.Client, before: collections.Counter[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """The write requests (create, update, patch, delete) sent since ``before``, by (verb, resource)."""
    return {key: n for key, n in kube.stats.delta(before).items() if key[0] in kube_client.WRITE_VERBS}


def reconcile_widget(
    reconciler: okt.Reconciler,
    kube: kube_client.Client,
    kind: kinds.Kind,
    namespace: str,
    name: str,
    recorder: events.EventRecorder | None = None,
) -> okt.Run:
    """One reconcile of a Widget, reading from the API (no informer cache)."""
    return okt.reconcile(reconciler, kube, None, namespace, name, kind=kind, recorder=recorder)


def get_widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> dict[str, Any]:
    return kube.get(kind, name, namespace)


def get_child(
    kube: kube_client.Client, api_version: str, kind_name: str, namespace: str, name: str
) -> dict[str, Any] | None:
    """A child object as the API server has it, or None when it does not exist."""
    return kube.get_or_none(kube.resolve(api_version, kind_name), name, namespace)


def patch_widget_spec(
    kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, **spec: Any
) -> dict[str, Any]:
    """Change the Widget's spec as a user would (``kubectl patch --type merge``); the generation goes up."""
    return kube.patch(kind, name, {"spec": spec}, namespace)


def deployment_settled(kube: kube_client.Client, namespace: str, name: str) -> bool:
    """Whether the deployment controller has caught up with a Deployment and has nothing left to write for now.

    It owns the Deployment's status and bumps its resourceVersion while it works; a test that counts okt's writes
    waits for this first, or a well-placed controller write turns okt's guarded update into a 409. Without a kubelet
    the pods stay Pending, so "settled" means every replica exists, is updated and is counted unavailable.
    """
    live = kube.get_or_none(kube.resolve("apps/v1", "Deployment"), name, namespace)
    if live is None:
        return False
    annotations = live["metadata"].get("annotations") or {}
    status = live.get("status") or {}
    replicas = live["spec"].get("replicas", 1)
    return (
        "deployment.kubernetes.io/revision" in annotations
        and status.get("observedGeneration") == live["metadata"]["generation"]
        and status.get("replicas", 0) == replicas
        and status.get("updatedReplicas", 0) == replicas
        and status.get("unavailableReplicas", 0) == replicas
    )


def settle_deployment(kube: kube_client.Client, namespace: str, name: str) -> None:
    """Wait until :func:`deployment_settled`; call it before a reconcile that must update the Deployment."""
    waiting.wait_for(
        lambda: deployment_settled(kube, namespace, name), message=f"the deployment controller to settle {name}"
    )
