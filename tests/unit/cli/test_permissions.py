"""The permissions ``okt run`` asks for are the rules ``okt gen rbac`` writes, scoped where they apply."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.cli import permissions


class Config(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class GizmoReconciler(okt.Reconciler):
    api_version = "perm.okt.io/v1"
    kind = "Gizmo"
    plural = "gizmos"
    owns: ClassVar[tuple[type[okt.Resource], ...]] = (Config,)


def test_every_generated_rule_is_asked_in_every_watched_namespace_and_the_lease_in_its_own() -> None:
    needed = permissions.required([GizmoReconciler], ["a", "b"], leader_elect=True, lease_namespace="ops")

    asked = {(p.verb, p.group, p.resource, p.namespace) for p in needed}
    for namespace in ("a", "b"):
        assert ("patch", "perm.okt.io", "gizmos/status", namespace) in asked
        assert ("update", "perm.okt.io", "gizmos/finalizers", namespace) in asked
        assert ("delete", "", "configmaps", namespace) in asked
        assert ("create", "", "events", namespace) in asked
    assert {p.namespace for p in needed if p.resource == "leases"} == {"ops"}
    assert {p.verb for p in needed if p.resource == "leases"} == {"get", "create", "update"}
    assert len(needed) == len(set(needed))


def test_the_lease_okt_run_leads_on_is_asked_by_name_but_its_create_of_any() -> None:
    """okt run leading on a Lease a role of okt gen rbac --lease-name grants by name: asked without its name, the
    get and update would be refused (a rule limited to names grants nothing on every Lease) and okt run would stop."""
    needed = permissions.required(
        [GizmoReconciler], ["a"], leader_elect=True, lease_namespace="ops", lease_name="okt-gizmo"
    )

    asked = {(p.verb, p.namespace, p.name) for p in needed if p.resource == "leases"}
    assert asked == {("create", "ops", None), ("get", "ops", "okt-gizmo"), ("update", "ops", "okt-gizmo")}
    limited = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["okt-gizmo"]}
    for permission in needed:
        if permission.resource == "leases" and permission.verb != "create":
            assert permissions.covers({**limited, "verbs": ["get", "update"]}, permission)


def test_all_namespaces_ask_cluster_wide_and_without_leader_election_no_lease() -> None:
    needed = permissions.required([GizmoReconciler], None, leader_elect=False, lease_namespace="ops")

    assert {p.namespace for p in needed} == {None}
    assert not any(p.resource == "leases" for p in needed)


def test_a_missing_permission_reads_as_one_line_with_the_rule_that_grants_it() -> None:
    permission = permissions.Permission("patch", "perm.okt.io", "gizmos/status", "shop")

    assert str(permission) == (
        "missing permission: patch gizmos/status (perm.okt.io) in namespace shop (a Role there, or a ClusterRole); "
        'rule: {apiGroups: ["perm.okt.io"], resources: ["gizmos/status"], verbs: ["patch"]}'
    )
    assert "cluster-wide (a ClusterRole)" in str(permissions.Permission("list", "", "configmaps", None))


STATUS = permissions.Permission("patch", "perm.okt.io", "gizmos/status", "shop")


@pytest.mark.parametrize(
    ("rule", "held"),
    [
        ({"apiGroups": ["perm.okt.io"], "resources": ["gizmos/status"], "verbs": ["patch"]}, True),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, True),
        ({"apiGroups": ["perm.okt.io"], "resources": ["*/status"], "verbs": ["patch"]}, True),
        ({"apiGroups": ["perm.okt.io"], "resources": ["gizmos"], "verbs": ["patch"]}, False),
        ({"apiGroups": ["perm.okt.io"], "resources": ["*/scale"], "verbs": ["patch"]}, False),
        ({"apiGroups": ["perm.okt.io"], "resources": ["gizmos/status"], "verbs": ["get", "update"]}, False),
        ({"apiGroups": [""], "resources": ["gizmos/status"], "verbs": ["patch"]}, False),
        (
            {"apiGroups": ["perm.okt.io"], "resources": ["gizmos/status"], "resourceNames": ["one"], "verbs": ["*"]},
            False,
        ),
        ({"apiGroups": ["perm.okt.io"], "resources": [], "verbs": ["patch"]}, False),
    ],
)
def test_a_rule_covers_a_permission_as_the_rbac_authorizer_matches_it(rule: dict[str, Any], held: bool) -> None:
    assert permissions.covers(rule, STATUS) is held


def test_a_star_slash_subresource_rule_does_not_cover_the_resource_itself() -> None:
    rule = {"apiGroups": [""], "resources": ["*/exec"], "verbs": ["create"]}

    assert permissions.covers(rule, permissions.Permission("create", "", "pods/exec", "shop"))
    assert not permissions.covers(rule, permissions.Permission("create", "", "pods", "shop"))


CRD = permissions.Permission("patch", "apiextensions.k8s.io", "customresourcedefinitions", None, "gizmos.perm.okt.io")


@pytest.mark.parametrize(
    ("names", "held"),
    [
        (["gizmos.perm.okt.io"], True),
        (["gizmos.perm.okt.io", "other.perm.okt.io"], True),
        (["other.perm.okt.io"], False),
    ],
)
def test_a_rule_limited_to_names_covers_a_permission_on_one_of_them(names: list[str], held: bool) -> None:
    rule = {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "patch"],
        "resourceNames": names,
    }

    assert permissions.covers(rule, CRD) is held


def test_a_permission_on_one_object_reads_with_its_name() -> None:
    assert str(CRD) == (
        "missing permission: patch customresourcedefinitions gizmos.perm.okt.io (apiextensions.k8s.io) cluster-wide "
        '(a ClusterRole); rule: {apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], '
        'resourceNames: ["gizmos.perm.okt.io"], verbs: ["patch"]}'
    )


def test_extra_rules_are_asked_where_they_apply_and_for_each_of_their_names() -> None:
    extra = [
        ("ops", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["hooks-tls"]}]),
        (None, [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                 "verbs": ["get", "patch"], "resourceNames": ["a.perm.okt.io", "b.perm.okt.io"]}]),
    ]  # fmt: skip

    needed = permissions.required([GizmoReconciler], ["a"], leader_elect=False, lease_namespace="ops", extra=extra)

    assert permissions.Permission("get", "", "secrets", "ops", "hooks-tls") in needed
    crds = {(p.verb, p.name) for p in needed if p.resource == "customresourcedefinitions" and p.namespace is None}
    assert crds == {(verb, name) for verb in ("get", "patch") for name in ("a.perm.okt.io", "b.perm.okt.io")}
