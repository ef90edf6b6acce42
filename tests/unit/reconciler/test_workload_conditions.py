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
