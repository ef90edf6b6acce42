"""The RBAC ``okt gen rbac`` generates is enough to reconcile, on a real API server, as the ServiceAccount it binds.

The generated ServiceAccount, Role and RoleBinding are created in a fresh namespace, a token of that ServiceAccount is
asked from the API server (TokenRequest), and the reconciler runs with a client holding only that token.
"""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.codegen import crd, rbac
from okt.kube import client as kube_client
from okt.kube import errors as kube_errors
from okt.kube import kinds
from okt.runtime import leader
from okt.testing import envtest, wait_for
from tests.integration import service_accounts

pytestmark = pytest.mark.integration

GROUP = "rbac.okt.example.com"


class BatchJob(okt.Resource):
    """A create/delete-only child (a Job's spec cannot change once created)."""

    api_version = "batch/v1"
    kind = "Job"
    template = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox:1.36
          command: ["true"]
"""


class SettingsMap(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
data:
  size: "1"
"""


class BatchReconciler(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Batch"
    plural = "batches"
    owns = (BatchJob, SettingsMap)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [BatchJob(ctx.cr), SettingsMap(ctx.cr)]


@pytest.fixture(scope="module")
def batch_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(BatchReconciler))
    return kind


def client_of_service_account(
    kube: kube_client.Client, plane: envtest.ControlPlane, namespace: str, name: str
) -> kube_client.Client:
    """A client holding only a token of the ServiceAccount ``name``, as a Pod running as it would."""
    return kube_client.Client.from_kubeconfig(service_accounts.kubeconfig_of(kube, plane, namespace, name))


def test_a_reconcile_as_the_generated_service_account_creates_every_child(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, batch_kind: kinds.Kind
) -> None:
    documents = rbac.rbac_for_reconcilers(
        [BatchReconciler], namespace=namespace, service_account="batch-operator", metrics_auth=False
    )
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    kube.create(
        {"apiVersion": batch_kind.api_version, "kind": "Batch", "metadata": {"name": "b", "namespace": namespace}},
        batch_kind,
    )
    operator = client_of_service_account(kube, control_plane, namespace, "batch-operator")
    try:
        run = okt.reconcile(BatchReconciler(), operator, None, namespace, "b", kind=batch_kind)
    finally:
        operator.close()

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert run.results.counts()[okt.Operation.CREATED] == 2
    assert kube.get_or_none(kube.resolve("batch/v1", "Job"), "b", namespace) is not None


class MovedBatchReconciler(BatchReconciler):
    """The next version: the settings ConfigMap is no longer made; the one the previous version made is pruned."""

    owns = (BatchJob,)
    legacy_owns = (("v1", "ConfigMap"),)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [BatchJob(ctx.cr)]


def test_the_generated_service_account_prunes_the_children_of_a_kind_an_earlier_version_owned(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, batch_kind: kinds.Kind
) -> None:
    account = "moved-operator"
    documents = rbac.rbac_for_reconcilers(
        [MovedBatchReconciler], namespace=namespace, service_account=account, metrics_auth=False
    )
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    kube.create(
        {"apiVersion": batch_kind.api_version, "kind": "Batch", "metadata": {"name": "m", "namespace": namespace}},
        batch_kind,
    )
    assert okt.reconcile(BatchReconciler(), kube, None, namespace, "m", kind=batch_kind).outcome == okt.Outcome.done()
    assert kube.get_or_none(kinds.CONFIG_MAP, "m-settings", namespace) is not None
    operator = client_of_service_account(kube, control_plane, namespace, account)
    try:
        run = okt.reconcile(MovedBatchReconciler(), operator, None, namespace, "m", kind=batch_kind)
    finally:
        operator.close()

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert run.results.counts()[okt.Operation.PRUNED] == 1
    assert kube.get_or_none(kinds.CONFIG_MAP, "m-settings", namespace) is None


def test_the_generated_lease_role_of_a_named_lease_lets_the_operator_lead_on_it_and_on_no_other(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str
) -> None:
    """``okt gen rbac --leader-elect --lease-name``: get and update of that Lease alone, create of any. The operator
    still wins its Lease (created, then renewed), and may neither read nor take over another one of its namespace."""
    documents = rbac.rbac_for_reconcilers(
        [BatchReconciler],
        namespace=namespace,
        leader_elect=True,
        lease_name="okt-batch",
        service_account="batch-operator",
        metrics_auth=False,
    )
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    other = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "another-controller", "namespace": namespace},
        "spec": {"holderIdentity": "another", "leaseDurationSeconds": 3600},
    }
    kube.create(other, kinds.LEASE)
    operator = client_of_service_account(kube, control_plane, namespace, "batch-operator")
    elector = leader.LeaderElector(
        operator, namespace, "okt-batch", "batch-1", lease_duration=3.0, renew_deadline=2.0, retry_period=0.5
    )
    elector.start()
    try:
        wait_for(lambda: elector.is_leader, timeout=10)
        renewed = kube.get(kinds.LEASE, "okt-batch", namespace)["spec"]["renewTime"]
        wait_for(lambda: kube.get(kinds.LEASE, "okt-batch", namespace)["spec"]["renewTime"] != renewed, timeout=10)
        assert elector.is_leader

        with pytest.raises(kube_errors.Forbidden):
            operator.get(kinds.LEASE, "another-controller", namespace)
        taken = kube.get(kinds.LEASE, "another-controller", namespace)
        taken["spec"]["holderIdentity"] = "batch-1"
        with pytest.raises(kube_errors.Forbidden):
            operator.replace(kinds.LEASE, taken)  # the elector's own write: a PUT, authorized as update
    finally:
        elector.stop(release=True)
        operator.close()
    assert kube.get(kinds.LEASE, "another-controller", namespace)["spec"]["holderIdentity"] == "another"
