"""Available, Progressing, Degraded and ``status.versions`` as the default hooks derive them from a Deployment child's
status, reconciled with the in-memory client (the Deployment controller's status is written by the test)."""

from __future__ import annotations

from typing import Any, ClassVar

import okt
from okt.kube import kinds
from okt.testing import FakeClient, condition
from tests.unit.reconciler.webapps import WEBAPP, webapp

DEPLOYMENT = kinds.Kind("apps/v1", "Deployment", "deployments")

TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ name }}"
  namespace: "{{ namespace }}"
spec:
  replicas: 2
  progressDeadlineSeconds: 60
  selector:
    matchLabels: {app: "{{ name }}"}
  template:
    metadata:
      labels: {app: "{{ name }}"}
    spec:
      containers:
        - {name: web, image: "registry.example.com/web:2"}
"""


class WebDeployment(okt.DeploymentResource):
    template = TEMPLATE


class WebAppReconciler(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    owns = (WebDeployment,)
    versions: ClassVar[dict[str, str]] = {"web": "2"}


def reconciled(fake: FakeClient) -> dict[str, Any]:
    okt.reconcile(WebAppReconciler(), fake, None, "shop", "web")
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    return stored


def deployment_reports(fake: FakeClient, **status: Any) -> None:
    deployment = fake.stored(DEPLOYMENT, "web", "shop")
    assert deployment is not None
    fake.put({**deployment, "status": {"observedGeneration": deployment["metadata"].get("generation", 1), **status}})


def test_a_rollout_past_its_progress_deadline_is_no_longer_progressing_and_its_versions_are_not_reported() -> None:
    """The Deployment controller gives up: ``Progressing=False, ProgressDeadlineExceeded``. The owner says the same,
    Degraded says why, and the versions of the stuck rollout are not reported as reached."""
    fake = webapp()
    reconciled(fake)
    deployment_reports(
        fake,
        replicas=3,
        updatedReplicas=1,
        readyReplicas=2,
        availableReplicas=2,
        unavailableReplicas=1,
        conditions=[
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": 'ReplicaSet "web-5d9c7b" has timed out progressing.',
            },
        ],
    )

    stored = reconciled(fake)

    progressing = condition(stored, "Progressing")
    degraded = condition(stored, "Degraded")
    assert progressing is not None and degraded is not None
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"] == 'Deployment web: ReplicaSet "web-5d9c7b" has timed out progressing.'
    assert (degraded["status"], degraded["reason"]) == ("True", "ProgressDeadlineExceeded")
    assert "versions" not in stored["status"]


class FixedWebDeployment(okt.DeploymentResource):
    """The same Deployment with a fixed image: a new template, so a new generation of the Deployment."""

    template = TEMPLATE.replace("web:2", "web:3")


class FixedWebAppReconciler(WebAppReconciler):
    owns = (FixedWebDeployment,)


def test_a_fixed_template_is_rolling_out_not_degraded_until_the_controller_judges_it() -> None:
    """Right after the fix is written, the Deployment's status is still its controller's verdict on the spec before
    (``observedGeneration`` one behind): the owner is Progressing, not Degraded for a spec that is already fixed."""
    fake = webapp()
    reconciled(fake)
    deployment_reports(
        fake,
        replicas=2,
        updatedReplicas=2,
        conditions=[{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "x"}],
    )
    stuck = condition(reconciled(fake), "Degraded")

    okt.reconcile(FixedWebAppReconciler(), fake, None, "shop", "web")

    stored = fake.stored(WEBAPP, "web", "shop")
    deployment = fake.stored(DEPLOYMENT, "web", "shop")
    assert stuck is not None and (stuck["status"], stuck["reason"]) == ("True", "ProgressDeadlineExceeded")
    assert stored is not None and deployment is not None
    assert deployment["metadata"]["generation"] == deployment["status"]["observedGeneration"] + 1
    progressing, degraded = condition(stored, "Progressing"), condition(stored, "Degraded")
    assert progressing is not None and degraded is not None
    assert (progressing["status"], progressing["reason"]) == ("True", "Upgrading")  # toward the versions not reached
    assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")


def test_a_rollout_that_completes_reports_its_versions_and_settles() -> None:
    fake = webapp()
    reconciled(fake)
    deployment_reports(fake, replicas=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2)

    stored = reconciled(fake)

    progressing = condition(stored, "Progressing")
    available = condition(stored, "Available")
    assert progressing is not None and available is not None
    assert (progressing["status"], available["status"]) == ("False", "True")
    assert stored["status"]["versions"] == [{"name": "web", "version": "2"}]
