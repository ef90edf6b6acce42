"""The default Available/Progressing/Degraded read a Deployment child's status only for the spec it describes.

The local control plane runs the Deployment controller but no scheduler: Pods stay Pending, so a Deployment with a
one-second ``progressDeadlineSeconds`` is given up on by its real controller (``Progressing=False,
ProgressDeadlineExceeded``) within seconds. Right after okt writes a fixed template, the Deployment's status still
describes the generation before (``status.observedGeneration < metadata.generation``): kstatus calls that InProgress,
not Failed, and so must okt.
"""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class ImpatientDeployment(okt.DeploymentResource):
    """A Deployment given up on one second after no progress; its image tag is the Widget's greeting."""

    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  replicas: 1
  progressDeadlineSeconds: 1
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
          image: "registry.example.com/widget:{{ cr.spec.greeting }}"
"""


class ImpatientWidgets(shared.WidgetReconciler):
    owns = (ImpatientDeployment,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [ImpatientDeployment(ctx.cr)]


def given_up(kube: kube_client.Client, namespace: str, name: str) -> bool:
    """Whether the Deployment controller has given up on the Deployment's latest generation."""
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, name) or {}
    status = live.get("status") or {}
    return status.get("observedGeneration") == live["metadata"]["generation"] and any(
        c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
        for c in status.get("conditions") or ()
    )


def reported(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> dict[str, Any]:
    """The Widget's Available/Progressing/Degraded as ``type -> (status, reason)``."""
    widget = shared.get_widget(kube, kind, namespace, name)
    found = {t: condition(widget, t) for t in ("Available", "Progressing", "Degraded")}
    return {t: (c["status"], c["reason"]) for t, c in found.items() if c is not None}


def test_a_fixed_template_is_not_degraded_by_the_deadline_the_deployment_missed_before_it(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=1, greeting="broken")
    shared.reconcile_widget(ImpatientWidgets(), kube, widget_kind, namespace, "w")
    waiting.wait_for(lambda: given_up(kube, namespace, "w"), timeout=30, message="the Deployment to be given up on")
    shared.reconcile_widget(ImpatientWidgets(), kube, widget_kind, namespace, "w")
    stuck = reported(kube, widget_kind, namespace, "w")

    shared.patch_widget_spec(kube, widget_kind, namespace, "w", greeting="fixed")
    shared.reconcile_widget(ImpatientWidgets(), kube, widget_kind, namespace, "w")

    assert stuck == {
        "Available": ("False", "ReplicasUnavailable"),
        "Progressing": ("False", "ProgressDeadlineExceeded"),
        "Degraded": ("True", "ProgressDeadlineExceeded"),
    }
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, "w")
    assert live is not None and live["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":fixed")
    # The Deployment's status was its controller's verdict on the broken template: not yet one on the fixed one.
    assert reported(kube, widget_kind, namespace, "w") == {
        "Available": ("False", "ReplicasUnavailable"),
        "Progressing": ("True", "RollingOut"),
        "Degraded": ("False", "AsExpected"),
    }
