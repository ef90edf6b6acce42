"""A small custom resource ("Widget") and a reconciler with ConfigMap + Service + Deployment children."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds

GROUP = "test.okt.io"


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


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


@pytest.fixture(scope="session")
def widget_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(widget_crd())
    return kind


def make_widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return kube.create(body, kind)
