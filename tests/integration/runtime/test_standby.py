"""Warm standby: a replica competes for the lease only once its caches are synced, and writes nothing before it leads.

Replicas are Managers in one process, each with its own token user under RBAC, so what one may read (and so whether
its caches can sync) is decided by the API server, and its requests are its own.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import envtest, wait_for
from tests.integration.runtime import conftest as runtime

pytestmark = pytest.mark.integration

LEADER = envtest.TokenUser("replica-leader", "leader-" + "0" * 25, ())
STANDBY = envtest.TokenUser("replica-standby", "standby-" + "0" * 24, ())
LEASELESS = envtest.TokenUser("replica-leaseless", "leaseless-" + "0" * 22, ())
LEASE = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
NAMESPACE = "standby"
GADGETS = 40
SETTLE = 3.0
"""How long a negative check waits: six retry periods of the lease."""
WRITES = frozenset({"create", "update", "patch", "delete", "apply"})


@pytest.fixture(scope="module")
def plane() -> Iterator[envtest.ControlPlane]:
    control_plane = envtest.ControlPlane(users=(LEADER, STANDBY, LEASELESS), crds=(runtime.gadget_crd(),))
    control_plane.start()
    try:
        yield control_plane
    finally:
        control_plane.stop()


@pytest.fixture(scope="module")
def admin(plane: envtest.ControlPlane) -> kube_client.Client:
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, kinds.NAMESPACE)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "leases", "namespace": NAMESPACE},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}],
    }
    client.create(role, client.resolve("rbac.authorization.k8s.io/v1", "Role"))
    for user in (LEADER, STANDBY):
        bind(client, "leases", user)
    gadget_kind = client.resolve(f"{runtime.GROUP}/v1", "Gadget")
    bodies = [
        {
            "apiVersion": gadget_kind.api_version,
            "kind": "Gadget",
            "metadata": {"name": f"g-{i:02d}", "namespace": NAMESPACE},
            "spec": {},
        }
        for i in range(GADGETS)
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda body: client.create(body, gadget_kind), bodies))
    reader = {
        **role,
        "metadata": {"name": "reader", "namespace": NAMESPACE},
        "rules": [
            {"apiGroups": [runtime.GROUP], "resources": ["gadgets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        ],
    }
    client.create(reader, client.resolve("rbac.authorization.k8s.io/v1", "Role"))
    return client


def bind(admin: kube_client.Client, role: str, user: envtest.TokenUser) -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{role}-{user.name}", "namespace": NAMESPACE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}],
    }
    admin.create(binding, admin.resolve("rbac.authorization.k8s.io/v1", "RoleBinding"))


def replica(plane: envtest.ControlPlane, user: envtest.TokenUser, reconcile: Any) -> manager_mod.Manager:
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(user))
    return manager_mod.Manager(
        client,
        [runtime.GadgetReconciler],
        reconcile=reconcile,
        namespaces=[NAMESPACE],
        leader_elect=True,
        lease_namespace=NAMESPACE,
        lease_name="standby-test",
        identity=user.name,
        metrics_bind="0",
        grace_period=5.0,
        **LEASE,
    )


def writes_of(manager: manager_mod.Manager) -> int:
    return sum(n for (verb, _), n in manager.client.stats.snapshot().items() if verb in WRITES)


def holder(admin: kube_client.Client) -> str | None:
    lease = admin.get_or_none(kinds.LEASE, "standby-test", NAMESPACE)
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_a_replica_takes_the_lease_only_once_its_caches_are_synced_and_a_standby_stays_warm_and_silent(
    plane: envtest.ControlPlane, admin: kube_client.Client, fake_reconcile: Any
) -> None:
    on_leader, on_standby = fake_reconcile(), fake_reconcile()
    leader = replica(plane, LEADER, on_leader)
    standby = replica(plane, STANDBY, on_standby)
    try:
        leader.start()  # it may not read the gadgets yet: its caches cannot sync
        time.sleep(SETTLE)
        assert holder(admin) in (None, "")
        assert not leader.working

        bind(admin, "reader", LEADER)
        wait_for(lambda: leader.working, timeout=60)
        assert holder(admin) == LEADER.name
        wait_for(lambda: on_leader.count() == GADGETS, timeout=30)

        bind(admin, "reader", STANDBY)
        standby.start()
        assert standby.cache is not None
        wait_for(lambda: standby.cache is not None and standby.cache.synced, timeout=60)
        wait_for(lambda: standby.elector is not None and standby.elector.holder == LEADER.name, timeout=10)
        time.sleep(SETTLE)
        assert sum(len(i) for i in standby.cache.informers(standby.controllers[0].kind)) == GADGETS
        assert standby.elector is not None and not standby.elector.is_leader
        assert (on_standby.count(), writes_of(standby), standby.working) == (0, 0, False)

        leader.stop()
        assert leader.join(15)
        wait_for(lambda: on_standby.count() == GADGETS, timeout=30)
        assert holder(admin) == STANDBY.name
    finally:
        for manager in (standby, leader):
            manager.stop()
            manager.join(15)


def test_a_replica_the_api_server_refuses_the_lease_is_not_ready_and_its_readyz_says_why(
    plane: envtest.ControlPlane, admin: kube_client.Client, fake_reconcile: Any
) -> None:
    """A replica whose role lacks the Lease rules can never lead: not ready, as one that cannot reach the API server
    — but ``/readyz`` said only "cannot reach the lease" of a lease the API server answers for, refusing it; the
    refusal (and the rule to grant) was in the log alone, at the first try."""
    bind(admin, "reader", LEASELESS)
    leaseless = replica(plane, LEASELESS, fake_reconcile())
    try:
        leaseless.start()
        wait_for(lambda: leaseless.cache is not None and leaseless.cache.synced, timeout=60)
        wait_for(lambda: leaseless.readiness()[1] != "caches not synced", timeout=10)
        time.sleep(SETTLE)
        ready, reason = leaseless.readiness()
        assert not ready
        assert reason.startswith("leader election cannot reach the lease: ")
        assert "forbidden" in reason.lower() and "leases" in reason
        assert (leaseless.working, writes_of(leaseless)) == (False, 0)
    finally:
        leaseless.stop()
        leaseless.join(15)
