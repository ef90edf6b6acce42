"""A deposed leader stops writing at once: proven from the API server's audit log.

Two Managers in one process stand for two operator replicas, each with its own token user so the audit log tells
their requests apart. The first leads and is stuck inside a reconcile (a hook waits) when it loses the lease; the
second acquires the lease once it expired and reconciles the same object. Released afterwards, the first leader's
reconcile goes on to its writes: none of them may reach the server.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import audit, condition, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

OLD = envtest.TokenUser("replica-old", "old-" + "0" * 28, ("system:masters",))
NEW = envtest.TokenUser("replica-new", "new-" + "0" * 28, ("system:masters",))
LEASE = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}


@pytest.fixture(scope="module")
def audited() -> Iterator[envtest.ControlPlane]:
    plane = envtest.ControlPlane(users=(OLD, NEW), audit_log=True, crds=(shared.widget_crd(),))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


class Stuck(shared.WidgetReconciler):
    """In the process of ``stuck_client``, waits in the Updater (before any write) while ``hold`` is set."""

    hold: ClassVar[threading.Event] = threading.Event()
    waiting: ClassVar[threading.Event] = threading.Event()
    stuck_client: ClassVar[Any] = None

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and ctx.client is self.stuck_client and self.hold.is_set():
            self.waiting.set()
            while self.hold.is_set():
                time.sleep(0.05)
        super().enter_in_state(state, ctx)


def client_of(plane: envtest.ControlPlane, user: envtest.TokenUser) -> kube_client.Client:
    return kube_client.Client.from_kubeconfig(plane.kubeconfig_for(user))


def manager_of(client: kube_client.Client, namespace: str, identity: str) -> manager_mod.Manager:
    return manager_mod.Manager(
        client,
        [Stuck],
        namespaces=[namespace],
        leader_elect=True,
        lease_namespace=namespace,
        identity=identity,
        metrics_bind="0",
        grace_period=10.0,
        **LEASE,
    )


def test_no_write_of_the_old_leader_reaches_the_server_after_the_new_leaders_first(
    audited: envtest.ControlPlane,
) -> None:
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    namespace = "fenced"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    old_client, new_client = client_of(audited, OLD), client_of(audited, NEW)
    Stuck.hold.set()
    Stuck.stuck_client = old_client
    old = manager_of(old_client, namespace, "old")
    old.start()
    try:
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert Stuck.waiting.wait(30), "the old leader reconciles the widget"
        # The old leader's renewals now fail: someone else holds the lease (and lets it expire).
        lease_kind = admin.resolve("coordination.k8s.io/v1", "Lease")
        lease = admin.get(lease_kind, old.lease_name, namespace)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"].update(holderIdentity="nobody", renewTime=now)
        admin.replace(lease_kind, lease)
        new = manager_of(new_client, namespace, "new")
        new.start()
        try:
            wait_for(lambda: condition(admin.get(widget_kind, "w", namespace), "Ready"), timeout=60)
            Stuck.hold.clear()  # the old leader's reconcile goes on to its writes
            wait_for(lambda: not old.running, timeout=30)
        finally:
            new.stop()
            new.join(15)
    finally:
        Stuck.hold.clear()
        old.stop()
        old.join(15)

    assert old.lost_leadership
    log = audit.AuditLog(audited.audit_log_path, [OLD.name, NEW.name])
    wait_for(lambda: (log.refresh(), log.counts(NEW.name).writes > 0)[1], timeout=30)
    time.sleep(audit.FLUSH_LAG)
    log.refresh()
    new_writes = [r for r in log.requests(NEW.name) if r.is_write and r.resource != "leases"]
    first_new_write = min(r.received for r in new_writes)
    late = [r for r in log.requests(OLD.name, start=first_new_write) if r.is_write]
    assert late == []
    assert old_client.stats.writes() > 0  # it did write while it led (the lease, at least)
