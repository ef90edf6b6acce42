"""The ClusterOperator mirror: a reconciler declaring ``cluster_operator`` sums its custom resources up on a
cluster-scoped ``config.openshift.io/v1`` ClusterOperator where that kind is served, and does nothing where it is not.

The Gizmos here are a kind of their own (no other test creates one), so the mirror sums up this file's objects
only (each test's in a namespace of its own); the ClusterOperator CRD is OpenShift's schema
(:mod:`okt.testing.openshift`), installed by the tests that need it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import cluster_operator
from okt.runtime import manager as manager_mod
from okt.testing import crds, envtest, openshift, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

CLUSTER_OPERATOR = cluster_operator.KIND


class Gizmos(shared.WidgetReconciler):
    kind = "Gizmo"
    plural = "gizmos"
    owns = (shared.WidgetConfig,)
    cluster_operator = "gizmo-operator"
    versions: ClassVar[dict[str, str]] = {"operator": "1.2.0", "gizmo": "7"}

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]


class BrokenGizmos(Gizmos):
    def check(self, ctx: okt.Context) -> None:
        raise okt.InvalidSpec("size must be odd", field="spec.size")


class PickyGizmos(Gizmos):
    # Reconciled in one namespace (okt run -n): a scope of its own, so a name of its own (see the test of two scopes).
    cluster_operator = "gizmo-operator-in-a-namespace"

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.name == "broken":
            raise okt.InvalidSpec("broken on purpose", field="metadata.name")


class ShardedGizmos(PickyGizmos):
    cluster_operator = "gizmo-operator-sharded"


@pytest.fixture(scope="module")
def gizmo_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(shared.GROUP, "Gizmo", "gizmos"))
    return kind


@pytest.fixture
def fresh_client(control_plane: envtest.ControlPlane) -> Iterator[kube_client.Client]:
    """A client of its own: its requests are counted apart, and it has not looked for the ClusterOperator kind yet."""
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    yield client
    client.close()


def co_status(kube: kube_client.Client, name: str = Gizmos.cluster_operator or "") -> dict[str, Any]:
    return dict((kube.get(CLUSTER_OPERATOR, name) or {}).get("status") or {})


def co_conditions(kube: kube_client.Client, name: str = Gizmos.cluster_operator or "") -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in co_status(kube, name).get("conditions") or ()}


def test_without_the_clusteroperator_kind_nothing_is_mirrored_and_the_reconcile_succeeds(
    fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    shared.make_widget(fresh_client, gizmo_kind, namespace, "plain", size=1)

    runs = [shared.reconcile_widget(Gizmos(), fresh_client, gizmo_kind, namespace, "plain") for _ in range(3)]

    assert [run.outcome for run in runs] == [okt.Outcome.done()] * 3
    sent = fresh_client.stats.snapshot()
    assert not [key for key in sent if key[1].startswith("clusteroperators")]
    assert sent[("get", "discovery")] == 1  # asked once, not on every reconcile
    conditions = shared.get_widget(fresh_client, gizmo_kind, namespace, "plain")["status"]["conditions"]
    assert {c["type"]: c["status"] for c in conditions}["Ready"] == "True"


@pytest.fixture(scope="module")
def clusteroperator_crd(kube: kube_client.Client, control_plane: envtest.ControlPlane) -> Iterator[None]:
    crds.ensure_crd(kube, openshift.cluster_operator_crd(), plane=control_plane)
    yield
    kube.delete(
        kinds.BUILTIN[("apiextensions.k8s.io/v1", "CustomResourceDefinition")], "clusteroperators.config.openshift.io"
    )


def test_the_clusteroperator_mirrors_conditions_versions_and_related_objects_and_is_not_rewritten_unchanged(
    clusteroperator_crd: None, fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    kube = fresh_client
    shared.make_widget(kube, gizmo_kind, namespace, "g", size=1)

    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "g")

    status = co_status(kube)
    assert co_conditions(kube) == {
        "Available": ("True", "AsExpected"),
        "Progressing": ("False", "AsExpected"),
        "Degraded": ("False", "AsExpected"),
    }
    assert status["versions"] == [{"name": "gizmo", "version": "7"}, {"name": "operator", "version": "1.2.0"}]
    assert [entry for entry in status["relatedObjects"] if entry.get("namespace") == namespace] == [
        {"group": shared.GROUP, "resource": "gizmos", "namespace": namespace, "name": "g"},
        {"group": "", "resource": "configmaps", "namespace": namespace, "name": "g-config"},
    ]

    before = kube.stats.snapshot()
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "g")

    assert shared.write_requests(kube, before) == {}


def test_a_degraded_custom_resource_degrades_the_clusteroperator_and_other_writers_conditions_stay(
    clusteroperator_crd: None, fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    kube = fresh_client
    shared.make_widget(kube, gizmo_kind, namespace, "d", size=1)
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "d")
    upgradeable = {
        "type": "Upgradeable",
        "status": "False",
        "reason": "AdminAckRequired",
        "message": "set by someone else",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    conditions = [*co_status(kube)["conditions"], upgradeable]
    kube.patch(CLUSTER_OPERATOR, "gizmo-operator", {"status": {"conditions": conditions}}, subresource="status")
    available_since = next(c for c in conditions if c["type"] == "Available")["lastTransitionTime"]

    shared.reconcile_widget(BrokenGizmos(), kube, gizmo_kind, namespace, "d")

    after = {c["type"]: c for c in co_status(kube)["conditions"]}
    assert (after["Degraded"]["status"], after["Degraded"]["reason"]) == ("True", "InvalidSpec")
    assert after["Degraded"]["message"] == f"Gizmo {namespace}/d: spec.size: size must be odd"
    assert after["Upgradeable"] == upgradeable
    assert after["Available"]["lastTransitionTime"] == available_since  # status unchanged: the time stays


def test_a_deleted_custom_resource_leaves_the_clusteroperator_and_its_degradation_with_it(
    clusteroperator_crd: None, kube: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, gizmo_kind, namespace, "fine", size=1)
    shared.make_widget(kube, gizmo_kind, namespace, "broken", size=1)

    name = PickyGizmos.cluster_operator or ""

    def summed_up() -> list[str]:
        related = co_status(kube, name).get("relatedObjects") or ()
        return sorted(e["name"] for e in related if e.get("namespace") == namespace and e["resource"] == "gizmos")

    running = manager_mod.Manager(kube, [PickyGizmos], namespaces=[namespace], metrics_bind="127.0.0.1:0")
    running.start()
    try:
        wait_for(lambda: summed_up() == ["broken", "fine"] and co_conditions(kube, name)["Degraded"][0] == "True")

        kube.delete(gizmo_kind, "broken", namespace)

        wait_for(lambda: summed_up() == ["fine"], timeout=15, message=lambda: f"still summed up: {summed_up()}")
        assert co_conditions(kube, name)["Degraded"] == ("False", "AsExpected")
    finally:
        running.stop()
        running.join(15)


class Doohickeys(Gizmos):
    """A kind no other test creates: the mirror, summing up every object of the kind, sums up this test's only."""

    kind = "Doohickey"
    plural = "doohickeys"
    cluster_operator = "doohickey-operator"
    versions: ClassVar[dict[str, str]] = {"operator": "1"}


class UpgradedDoohickeys(Doohickeys):
    versions: ClassVar[dict[str, str]] = {"operator": "2"}


@pytest.fixture(scope="module")
def doohickey_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(shared.GROUP, "Doohickey", "doohickeys"))
    return kind


def test_resources_settled_at_different_versions_keep_the_clusteroperator_progressing_until_all_are_upgraded(
    clusteroperator_crd: None, kube: kube_client.Client, namespace: str, doohickey_kind: kinds.Kind
) -> None:
    """An upgraded operator reconciles its objects one by one; each settles at once at the new version (no workload
    rolls out), so none is Progressing. The operator is still moving from one version to another: OpenShift's
    Progressing=True, while the ClusterOperator's versions stay the old ones."""
    name = Doohickeys.cluster_operator or ""
    for each in ("a", "b"):
        shared.make_widget(kube, doohickey_kind, namespace, each, size=1)
        shared.reconcile_widget(Doohickeys(), kube, doohickey_kind, namespace, each)
    try:
        before = (co_conditions(kube, name)["Progressing"], co_status(kube, name)["versions"])

        shared.reconcile_widget(UpgradedDoohickeys(), kube, doohickey_kind, namespace, "a")
        midway = co_status(kube, name)
        shared.reconcile_widget(UpgradedDoohickeys(), kube, doohickey_kind, namespace, "b")

        assert before == (("False", "AsExpected"), [{"name": "operator", "version": "1"}])
        progressing = next(c for c in midway["conditions"] if c["type"] == "Progressing")
        assert (progressing["status"], progressing["reason"]) == ("True", "VersionsDiffer"), progressing
        assert progressing["message"] == (
            f"Doohickey resources report different versions: operator 2 ({namespace}/a); operator 1 ({namespace}/b)"
        )
        assert midway["versions"] == [{"name": "operator", "version": "1"}]
        assert co_conditions(kube, name)["Progressing"] == ("False", "AsExpected")
        assert co_status(kube, name)["versions"] == [{"name": "operator", "version": "2"}]
    finally:
        kube.delete(CLUSTER_OPERATOR, name)


def test_related_objects_and_versions_the_clusteroperator_schema_refuses_or_prunes_are_left_out_of_the_mirror(
    clusteroperator_crd: None, fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    kube = fresh_client
    shared.make_widget(kube, gizmo_kind, namespace, "good", size=1)
    shared.make_widget(kube, gizmo_kind, namespace, "edited", size=1)
    hand_edited = {
        "relatedObjects": [
            {"resource": "pods", "name": "no-group"},  # a required field missing: the whole write would be refused
            {"group": "", "resource": "pods", "name": 7},  # not a string
            {"group": "", "resource": "pods", "namespace": namespace, "name": "kept", "kind": "Pod"},
        ],
        "versions": [{"name": "operator"}],
    }
    kube.patch(gizmo_kind, "edited", {"status": hand_edited}, namespace, subresource="status")
    try:
        run = shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "good")

        assert run.outcome == okt.Outcome.done()
        related = [entry for entry in co_status(kube)["relatedObjects"] if entry.get("namespace") == namespace]
        assert related == [
            {"group": shared.GROUP, "resource": "gizmos", "namespace": namespace, "name": "edited"},
            {"group": "", "resource": "pods", "namespace": namespace, "name": "kept"},
            {"group": shared.GROUP, "resource": "gizmos", "namespace": namespace, "name": "good"},
            {"group": "", "resource": "configmaps", "namespace": namespace, "name": "good-config"},
        ]

        before = kube.stats.snapshot()
        shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "good")

        assert shared.write_requests(kube, before) == {}
    finally:
        kube.delete(gizmo_kind, "edited", namespace)


def test_related_objects_another_writer_added_stay_while_the_mirror_adds_and_removes_its_own(
    clusteroperator_crd: None, fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    kube = fresh_client

    def related() -> list[dict[str, str]]:
        return [entry for entry in co_status(kube)["relatedObjects"] if entry.get("namespace") == namespace]

    shared.make_widget(kube, gizmo_kind, namespace, "first", size=1)
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "first")
    added = {"group": "", "resource": "secrets", "namespace": namespace, "name": "listed-by-another"}
    entries = [*co_status(kube)["relatedObjects"], added]
    kube.patch(CLUSTER_OPERATOR, "gizmo-operator", {"status": {"relatedObjects": entries}}, subresource="status")

    shared.make_widget(kube, gizmo_kind, namespace, "second", size=1)
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "second")

    assert added in related()
    assert {e["name"] for e in related()} == {"first", "first-config", "second", "second-config", "listed-by-another"}

    kube.delete(gizmo_kind, "first", namespace)
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "first")

    assert {e["name"] for e in related()} == {"second", "second-config", "listed-by-another"}
    before = kube.stats.snapshot()
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "second")

    assert shared.write_requests(kube, before) == {}


def test_a_clusteroperator_an_earlier_okt_wrote_loses_the_stale_entries_of_the_mirrored_kind_and_keeps_the_others(
    clusteroperator_crd: None, fresh_client: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    kube = fresh_client

    def related() -> list[dict[str, str]]:
        return [entry for entry in co_status(kube)["relatedObjects"] if entry.get("namespace") == namespace]

    shared.make_widget(kube, gizmo_kind, namespace, "kept", size=1)
    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "kept")
    # As an okt that recorded nothing left it: its own entries, with those of a Gizmo deleted before the upgrade and
    # of its child, and an entry another writer added since.
    stale = {"group": shared.GROUP, "resource": "gizmos", "namespace": namespace, "name": "deleted-before-upgrade"}
    stale_child = {
        "group": "",
        "resource": "configmaps",
        "namespace": namespace,
        "name": "deleted-before-upgrade-config",
    }
    another = {"group": "", "resource": "secrets", "namespace": namespace, "name": "listed-by-another"}
    entries = [*co_status(kube)["relatedObjects"], stale, stale_child, another]
    kube.patch(
        CLUSTER_OPERATOR,
        "gizmo-operator",
        {"status": {"relatedObjects": entries, "extension": {cluster_operator.EXTENSION_KEY: None}}},
        subresource="status",
    )
    assert cluster_operator.EXTENSION_KEY not in (co_status(kube).get("extension") or {})

    shared.reconcile_widget(Gizmos(), kube, gizmo_kind, namespace, "kept")

    assert stale not in related()
    # nothing tells a child's entry from another writer's of that resource: kept, as every entry of another resource
    assert related() == [
        {"group": shared.GROUP, "resource": "gizmos", "namespace": namespace, "name": "kept"},
        {"group": "", "resource": "configmaps", "namespace": namespace, "name": "kept-config"},
        stale_child,
        another,
    ]
    recorded = co_status(kube)["extension"][cluster_operator.EXTENSION_KEY]["relatedObjects"]
    assert [entry for entry in recorded if entry.get("namespace") == namespace] == related()[:2]


@pytest.fixture
def other_namespace(kube: kube_client.Client) -> Iterator[str]:
    name = f"okt-other-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield name
    kube.delete(kinds.NAMESPACE, name)


class SelectedGizmos(PickyGizmos):
    cluster_operator = "gizmo-operator-selected"


def sharded(kube: kube_client.Client, watched: str) -> manager_mod.Manager:
    """An operator reconciling the Gizmos of ``watched`` only (okt run -n), started."""
    running = manager_mod.Manager(kube, [ShardedGizmos], namespaces=[watched], metrics_bind="127.0.0.1:0")
    running.start()
    return running


def stop(running: manager_mod.Manager) -> None:
    running.stop()
    running.join(15)


def summed_up(kube: kube_client.Client, name: str) -> list[tuple[str, str]]:
    """The Gizmos a ClusterOperator lists, as (namespace, name)."""
    related = co_status(kube, name).get("relatedObjects") or ()
    return sorted((e.get("namespace", ""), e["name"]) for e in related if e["resource"] == "gizmos")


def settled(kube: kube_client.Client, name: str) -> bool:
    return co_conditions(kube, name) == {
        "Available": ("True", "AsExpected"),
        "Progressing": ("False", "AsExpected"),
        "Degraded": ("False", "AsExpected"),
    }


def degraded(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> bool:
    conditions = (shared.get_widget(kube, kind, namespace, name).get("status") or {}).get("conditions")
    return {c["type"]: c["status"] for c in conditions or ()}.get("Degraded") == "True"


def test_a_clusteroperator_is_one_scope_s_another_writes_nothing_of_it_and_says_why_and_a_restart_keeps_writing(
    clusteroperator_crd: None, kube: kube_client.Client, namespace: str, other_namespace: str, gizmo_kind: kinds.Kind
) -> None:
    """Two deployments of one operator, each watching a namespace of its own (okt run -n), given one ClusterOperator
    name: the one that wrote it first keeps it; the other's reconciles go on, its mirror writes nothing and says why
    once. The first restarted (a new process of the same scope) writes on; deleted, the name moves to the other."""
    name = ShardedGizmos.cluster_operator or ""
    resource = f"gizmos.{shared.GROUP}"
    shared.make_widget(kube, gizmo_kind, namespace, "fine", size=1)
    shared.make_widget(kube, gizmo_kind, other_namespace, "broken", size=1)
    first = sharded(kube, namespace)
    try:
        wait_for(
            lambda: summed_up(kube, name) == [(namespace, "fine")] and settled(kube, name),
            message=lambda: str(co_status(kube, name)),
        )
        written = co_status(kube, name)

        with structlog.testing.capture_logs() as logged:
            second = sharded(kube, other_namespace)
            try:
                wait_for(lambda: degraded(kube, gizmo_kind, other_namespace, "broken"), message="its own reconcile")
                wait_for(
                    lambda: [e for e in logged if "is not mirrored" in e["event"]],
                    message=lambda: f"no refusal said; the ClusterOperator now: {co_status(kube, name)}",
                )
                assert co_status(kube, name) == written  # conditions, entries, owner: nothing of the first's
            finally:
                stop(second)
        [said] = [e for e in logged if "is not mirrored" in e["event"]]  # once, not at every reconcile
        assert said["log_level"] == "error"
        assert said["event"] == (
            f"ClusterOperator {name} is not mirrored: another operator owns it ({resource} in namespaces {namespace}), "
            f"this one reconciles {resource} in namespaces {other_namespace}; give each its own cluster_operator "
            "name, or delete the ClusterOperator for this one to take it"
        )
        assert written["extension"][cluster_operator.EXTENSION_KEY]["owner"] == {
            "group": shared.GROUP,
            "resource": "gizmos",
            "namespaces": [namespace],
        }
    finally:
        stop(first)

    # The same scope started again, by a process that is not the first: it writes on.
    restarted = sharded(kube, namespace)
    try:
        shared.make_widget(kube, gizmo_kind, namespace, "more", size=1)
        wait_for(lambda: summed_up(kube, name) == [(namespace, "fine"), (namespace, "more")] and settled(kube, name))
    finally:
        stop(restarted)

    # The documented move: the ClusterOperator deleted, the operator now given the name creates it as its own.
    kube.delete(CLUSTER_OPERATOR, name)
    wait_for(lambda: kube.get_or_none(CLUSTER_OPERATOR, name) is None)
    moved = sharded(kube, other_namespace)
    try:
        wait_for(
            lambda: summed_up(kube, name) == [(other_namespace, "broken")], message=lambda: str(co_status(kube, name))
        )
        assert co_conditions(kube, name)["Degraded"] == ("True", "InvalidSpec")
    finally:
        stop(moved)
        kube.delete(CLUSTER_OPERATOR, name)


def test_a_restart_given_its_label_selector_in_another_order_is_the_same_scope_and_keeps_writing(
    clusteroperator_crd: None, kube: kube_client.Client, namespace: str, gizmo_kind: kinds.Kind
) -> None:
    """okt run -l shard=a,tier=web, restarted with -l 'tier=web, shard==a': one scope, spelt otherwise. The selector
    was compared as written, so the restart took the ClusterOperator its first run wrote for another operator's:
    it said so and wrote nothing more."""
    name = SelectedGizmos.cluster_operator or ""

    def labelled(gizmo: str) -> None:
        meta = {"name": gizmo, "namespace": namespace, "labels": {"shard": "a", "tier": "web"}}
        kube.create(
            {"apiVersion": gizmo_kind.api_version, "kind": gizmo_kind.kind, "metadata": meta, "spec": {"size": 1}},
            gizmo_kind,
        )

    def selected(selector: str) -> manager_mod.Manager:
        running = manager_mod.Manager(
            kube, [SelectedGizmos], namespaces=[namespace], label_selector=selector, metrics_bind="127.0.0.1:0"
        )
        running.start()
        return running

    labelled("fine")
    shared.make_widget(kube, gizmo_kind, namespace, "unlabelled", size=1)  # not selected: never summed up
    try:
        first = selected("shard=a,tier=web")
        try:
            wait_for(
                lambda: summed_up(kube, name) == [(namespace, "fine")] and settled(kube, name),
                message=lambda: str(co_status(kube, name)),
            )
        finally:
            stop(first)
        assert co_status(kube, name)["extension"][cluster_operator.EXTENSION_KEY]["owner"] == {
            "group": shared.GROUP,
            "resource": "gizmos",
            "namespaces": [namespace],
            "labelSelector": "shard=a,tier=web",
        }

        with structlog.testing.capture_logs() as logged:
            restarted = selected("tier=web, shard==a")
            try:
                labelled("more")
                refused = wait_for(
                    lambda: (
                        [e["event"] for e in logged if "is not mirrored" in e["event"]]
                        or summed_up(kube, name) == [(namespace, "fine"), (namespace, "more")]
                    ),
                    message=lambda: str(co_status(kube, name)),
                )
            finally:
                stop(restarted)
        assert refused is True  # summed up, no refusal said
        assert [e for e in logged if "is not mirrored" in e["event"]] == []
    finally:
        if kube.get_or_none(CLUSTER_OPERATOR, name) is not None:
            kube.delete(CLUSTER_OPERATOR, name)
