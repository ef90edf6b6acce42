"""``okt gen rbac``: exactly the permissions okt needs, no wildcards, deterministic."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.codegen import errors, rbac

PRIMARY = [
    {
        "apiGroups": ["cache.example.com"],
        "resources": ["memcacheds"],
        "verbs": ["get", "list", "patch", "watch"],
    },
    {"apiGroups": ["cache.example.com"], "resources": ["memcacheds/status"], "verbs": ["patch"]},
]
FINALIZERS = {"apiGroups": ["cache.example.com"], "resources": ["memcacheds/finalizers"], "verbs": ["update"]}
EVENTS = {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}
LEASES = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]}
ALL_VERBS = ["create", "delete", "get", "list", "patch", "watch"]


def rules_of(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    (role,) = [document for document in documents if document["kind"] == kind]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def memcached_rbac(**overrides: Any) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {
        "primary_group": "cache.example.com",
        "primary_plural": "memcacheds",
        "owned": [("apps", "deployments"), ("", "configmaps"), ("", "services"), ("", "serviceaccounts", False)],
        "namespace": "operators",
        "cluster_wide": False,
        "leader_elect": False,
        "service_account": "memcached-operator",
    }
    arguments.update(overrides)
    return rbac.rbac_for(**arguments)


def test_namespaced_operator_gets_exactly_the_rules_okt_uses() -> None:
    assert rules_of(memcached_rbac(), "Role") == [
        {"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": ALL_VERBS},
        EVENTS,
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ALL_VERBS},
        PRIMARY[0],
        FINALIZERS,
        PRIMARY[1],
    ]


def test_no_rule_grants_update_on_what_okt_only_patches() -> None:
    granted = {
        (resource, verb)
        for rule in rules_of(memcached_rbac(leader_elect=True), "Role")
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {resource for resource, verb in granted if verb == "update"} == {"memcacheds/finalizers", "leases"}


def test_namespaced_operator_documents_are_account_role_and_binding_in_its_namespace() -> None:
    account, role, binding = memcached_rbac()
    assert account == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "memcached-operator", "namespace": "operators"},
    }
    assert (role["kind"], role["metadata"]) == ("Role", {"name": "memcached-operator", "namespace": "operators"})
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "memcached-operator", "namespace": "operators"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "memcached-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "memcached-operator", "namespace": "operators"}],
    }


def test_finalizers_permission_only_for_a_primary_that_owns_children() -> None:
    """Owner references with blockOwnerDeletion need update on the owner's finalizers (OwnerReferencesPermission-
    Enforcement); a primary without children sets none."""
    assert FINALIZERS in rules_of(memcached_rbac(), "Role")
    assert FINALIZERS not in rules_of(memcached_rbac(owned=[]), "Role")


@pytest.mark.parametrize(("leader_elect", "granted"), [(True, True), (False, False)])
def test_lease_permissions_only_with_leader_election(leader_elect: bool, granted: bool) -> None:
    assert (LEASES in rules_of(memcached_rbac(leader_elect=leader_elect), "Role")) is granted


def test_cluster_wide_operator_gets_a_cluster_role_and_a_namespaced_lease_role() -> None:
    documents = memcached_rbac(cluster_wide=True, leader_elect=True)
    assert [(d["kind"], d["metadata"]) for d in documents] == [
        ("ServiceAccount", {"name": "memcached-operator", "namespace": "operators"}),
        ("ClusterRole", {"name": "memcached-operator"}),
        ("ClusterRoleBinding", {"name": "memcached-operator"}),
        ("Role", {"name": "memcached-operator-leader-election", "namespace": "operators"}),
        ("RoleBinding", {"name": "memcached-operator-leader-election", "namespace": "operators"}),
    ]
    assert LEASES not in rules_of(documents, "ClusterRole")
    assert rules_of(documents, "Role") == [LEASES]
    assert documents[2]["subjects"] == [
        {"kind": "ServiceAccount", "name": "memcached-operator", "namespace": "operators"}
    ]
    assert documents[4]["roleRef"]["name"] == "memcached-operator-leader-election"


LEASE_CREATE = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]}
LEASE_NAMED = {
    "apiGroups": ["coordination.k8s.io"],
    "resources": ["leases"],
    "resourceNames": ["okt-memcached"],
    "verbs": ["get", "update"],
}


def memcached_primaries_rbac(**overrides: Any) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {
        "primaries": [rbac.PrimaryKind("cache.example.com", "memcacheds")],
        "owned": [("apps", "deployments")],
        "namespace": "operators",
        "cluster_wide": False,
        "leader_elect": True,
        "service_account": "memcached-operator",
        "lease_name": "okt-memcached",
    }
    arguments.update(overrides)
    return rbac.rbac_for_primaries(**arguments)


@pytest.mark.parametrize("cluster_wide", [False, True])
def test_a_known_lease_name_limits_get_and_update_to_that_lease(cluster_wide: bool) -> None:
    """Granted on every Lease of the namespace, the operator could read and take over the Lease of any other
    controller there (another operator's, the scheduler's in kube-system). A create cannot be limited by name."""
    rules = rules_of(memcached_primaries_rbac(cluster_wide=cluster_wide), "Role")
    leases = [rule for rule in rules if rule["resources"] == ["leases"]]
    assert leases == [LEASE_CREATE, LEASE_NAMED]
    assert LEASES not in rules


def test_a_known_lease_name_is_not_merged_with_other_rules_of_its_group() -> None:
    """A lease permission the reconciler declares itself stays a rule of its own, the named one too."""
    documents = memcached_primaries_rbac(declared=[("coordination.k8s.io", "leases", ("list",))])
    leases = [rule for rule in rules_of(documents, "Role") if rule["resources"] == ["leases"]]
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]} in leases
    assert LEASE_NAMED in leases and LEASE_CREATE in leases
    assert not any("resourceNames" not in rule and "update" in rule["verbs"] for rule in leases)


def test_without_a_lease_name_every_lease_of_the_namespace_is_granted_as_before() -> None:
    assert LEASES in rules_of(memcached_primaries_rbac(lease_name=None), "Role")


def test_a_lease_name_without_leader_election_grants_no_lease() -> None:
    rules = rules_of(memcached_primaries_rbac(leader_elect=False), "Role")
    assert not any(rule["resources"] == ["leases"] for rule in rules)


@pytest.mark.parametrize("name", ["", "Okt_Memcached", "-okt", "x" * 254])
def test_a_lease_name_no_lease_can_have_is_refused(name: str) -> None:
    with pytest.raises(errors.CodegenError, match=r"^invalid lease name .*: expected a DNS name"):
        memcached_primaries_rbac(lease_name=name)


@pytest.mark.parametrize("cluster_wide", [True, False])
@pytest.mark.parametrize("leader_elect", [True, False])
def test_no_wildcard_anywhere(cluster_wide: bool, leader_elect: bool) -> None:
    for document in memcached_rbac(cluster_wide=cluster_wide, leader_elect=leader_elect):
        for rule in document.get("rules", []):
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key]
                assert rule[key] == sorted(rule[key])


def test_a_kind_owned_twice_gets_the_union_of_its_verbs_once() -> None:
    rules = rbac.rules_for(
        primaries=[rbac.PrimaryKind("x.io", "things")], owned=[("", "pods", False), ("", "pods", True)], leases=False
    )
    assert [rule for rule in rules if "pods" in rule["resources"]] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ALL_VERBS}
    ]


def test_rules_are_the_same_whatever_the_order_of_owned_kinds() -> None:
    owned = [
        rbac.OwnedKind("apps", "deployments"),
        rbac.OwnedKind("", "configmaps"),
        rbac.OwnedKind("batch", "jobs", False),
    ]
    first = rbac.rules_for(primaries=[rbac.PrimaryKind("x.io", "things")], owned=owned, leases=True)
    second = rbac.rules_for(primaries=[rbac.PrimaryKind("x.io", "things")], owned=owned[::-1], leases=True)
    assert first == second


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"namespace": "Operators"},
            "invalid namespace 'Operators': expected a DNS label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters) such as operators",
        ),
        (
            {"namespace": "operators\n"},  # the pattern's $ took a name ending in a newline
            "invalid namespace 'operators\\n': expected a DNS label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters) such as operators",
        ),
        (
            {"namespace": "n" * 64},
            f"invalid namespace '{'n' * 64}': expected a DNS label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters) such as operators",
        ),
        (
            {"service_account": "my_operator"},
            "invalid service account name 'my_operator': expected a DNS name of at most 253 characters",
        ),
        (
            {"service_account": "s" * 254},
            f"invalid service account name '{'s' * 254}': expected a DNS name of at most 253 characters",
        ),
    ],
)
def test_invalid_names_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        memcached_rbac(**overrides)
    assert str(caught.value) == message


class Config(okt.Resource):
    api_version = "v1"
    kind = "ConfigMap"


class Workload(okt.DeploymentResource):
    api_version = "apps/v1"
    kind = "Deployment"


class Account(okt.Resource):
    api_version = "v1"
    kind = "ServiceAccount"


class MutableConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class MemcachedReconciler(okt.Reconciler):
    api_version = "cache.example.com/v1alpha1"
    kind = "Memcached"
    owns: ClassVar = [MutableConfig, Workload, Account]
    finalizer = "cache.example.com/cleanup"


def test_rbac_for_reconciler_reads_owned_kinds_and_their_mutability() -> None:
    class Merging(MemcachedReconciler):
        apply_strategy = "merge"

    documents = rbac.rbac_for_reconciler(Merging, namespace="operators")
    assert documents[0]["metadata"] == {"name": "memcached-operator", "namespace": "operators"}
    assert rules_of(documents, "Role") == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_VERBS},
        EVENTS,
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create", "delete", "get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ALL_VERBS},
        PRIMARY[0],
        FINALIZERS,
        PRIMARY[1],
    ]


def test_a_create_delete_only_child_written_by_apply_gets_patch_too() -> None:
    # okt creates it with a server-side apply, a PATCH the API server authorizes as patch and create.
    documents = rbac.rbac_for_reconciler(MemcachedReconciler, namespace="operators")

    assert rules_of(documents, "Role") == [
        {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts"], "verbs": ALL_VERBS},
        EVENTS,
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ALL_VERBS},
        PRIMARY[0],
        FINALIZERS,
        PRIMARY[1],
    ]


def test_create_delete_only_wrapper_of_a_mutable_kind_gets_no_update() -> None:
    class Reconciler(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        owns: ClassVar = [Config]
        apply_strategy = "merge"

    rules = rules_of(rbac.rbac_for_reconciler(Reconciler), "Role")
    assert {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["create", "delete", "get", "list", "watch"],
    } in rules


def test_several_reconcilers_share_one_role() -> None:
    class Other(okt.Reconciler):
        api_version = "other.example.com/v1"
        kind = "Other"

    documents = rbac.rbac_for_reconcilers([MemcachedReconciler, Other], service_account="both")
    resources = {resource for rule in rules_of(documents, "Role") for resource in rule["resources"]}
    assert {"memcacheds", "memcacheds/finalizers", "others", "others/status"} <= resources
    assert "others/finalizers" not in resources  # Other owns nothing
    assert documents[0]["metadata"]["name"] == "both"


class Widget(okt.MutableResource):
    api_version = "widgets.example.com/v1"
    kind = "Widget"


class WidgetReconciler(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"
    owns: ClassVar = [Widget]


class ClusterOwner(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"

    class Aggregate(okt.MutableResource):
        api_version = "rbac.authorization.k8s.io/v1"
        kind = "ClusterRole"

    owns: ClassVar = [Aggregate]


class ClusterScoped(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"
    namespaced = False


class ClusterScopedCustomOwner(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"

    class Tenant(okt.MutableResource):
        api_version = "tenants.example.com/v1"
        kind = "Tenant"
        plural = "tenants"
        namespaced = False

    owns: ClassVar = [Tenant]


class TeamNamespaces(okt.Reconciler):
    api_version = "v1"
    kind = "Namespace"  # namespaced left at its default: the scope of a built-in kind is Kubernetes'


class Volumes(okt.Reconciler):
    api_version = "v1"
    kind = "PersistentVolume"


class StorageClasses(okt.Reconciler):
    api_version = "storage.k8s.io/v1"
    kind = "StorageClass"


class NodeWatcher(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"
    watches = (okt.watch(okt.Kind("v1", "Node", "nodes", namespaced=False), map=lambda obj, ctx: []),)


class ClusterRoleWatcher(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"
    watches = (okt.watch("ClusterRole", map=lambda obj, ctx: []),)


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (
            WidgetReconciler,
            "WidgetReconciler.owns: 'Widget': kind Widget is not in the kind dictionary, so its plural is unknown: "
            'declare it on the class, such as plural = "widgets"',
        ),
        (ClusterOwner, "ClusterOwner.owns: 'Aggregate': ClusterRole is cluster-scoped: use --cluster-wide"),
        (ClusterScoped, "ClusterScoped reconciles cluster-scoped Thing: use --cluster-wide"),
        (TeamNamespaces, "TeamNamespaces reconciles cluster-scoped Namespace: use --cluster-wide"),
        (Volumes, "Volumes reconciles cluster-scoped PersistentVolume: use --cluster-wide"),
        (StorageClasses, "StorageClasses reconciles cluster-scoped StorageClass: use --cluster-wide"),
        (
            ClusterScopedCustomOwner,
            "ClusterScopedCustomOwner.owns: 'Tenant': Tenant is cluster-scoped: use --cluster-wide",
        ),
        (NodeWatcher, "NodeWatcher.watches: 'Node' is cluster-scoped: use --cluster-wide"),
        (ClusterRoleWatcher, "ClusterRoleWatcher.watches: 'ClusterRole' is cluster-scoped: use --cluster-wide"),
    ],
)
def test_rbac_for_reconciler_refuses_what_it_cannot_grant_safely(cls: type[okt.Reconciler], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        rbac.rbac_for_reconciler(cls)
    assert str(caught.value) == message


def test_a_built_in_cluster_scoped_primary_is_read_cluster_wide_and_its_children_written_where_they_are() -> None:
    class Quota(okt.MutableResource):
        api_version = "v1"
        kind = "ResourceQuota"

    class Teams(okt.Reconciler):
        api_version = "v1"
        kind = "Namespace"
        owns: ClassVar = [Quota]

    documents = rbac.rbac_for_reconciler(Teams, cluster_wide=True, metrics_auth=False)
    assert [d["kind"] for d in documents] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    rules = {resource: rule["verbs"] for rule in documents[1]["rules"] for resource in rule["resources"]}
    assert rules["namespaces"] == ["get", "list", "patch", "watch"]
    assert rules["namespaces/finalizers"] == ["update"]  # blockOwnerDeletion on the children's owner reference
    assert "namespaces/status" not in rules  # okt writes no status on a built-in kind
    assert rules["resourcequotas"] == ["create", "delete", "get", "list", "patch", "watch"]


def test_owned_kind_with_its_own_plural_needs_no_dictionary_entry() -> None:
    class PluralWidget(Widget):
        plural = "widgets"

    class Reconciler(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        owns: ClassVar = [PluralWidget]

    rules = rules_of(rbac.rbac_for_reconciler(Reconciler), "Role")
    assert {"apiGroups": ["widgets.example.com"], "resources": ["widgets"], "verbs": ALL_VERBS} in rules


def test_declared_permissions_join_the_rules_of_their_group() -> None:
    class Execing(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        owns: ClassVar = [MutableConfig]
        permissions: ClassVar = {("", "pods"): ("list", "get"), ("", "pods/exec"): ("create", "get")}

    rules = rules_of(rbac.rbac_for_reconciler(Execing, namespace="operators"), "Role")

    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]} in rules
    assert {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"]} in rules
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_VERBS} in rules


@pytest.mark.parametrize("subresource", ["pods/exec", "pods/attach", "pods/portforward"])
@pytest.mark.parametrize("declared", [("create",), ("get",)])
def test_a_declared_websocket_subresource_gets_create_and_get_whichever_was_declared(
    subresource: str, declared: tuple[str, ...]
) -> None:
    # Its websocket is a GET, authorized as get before Kubernetes 1.30 and as create after: create alone was granted
    # as declared, and every exec against an older server refused.
    class Execing(okt.Reconciler):
        api_version = "v1"
        kind = "ConfigMap"
        permissions: ClassVar = {("", subresource): declared}

    rules = rules_of(rbac.rbac_for_reconciler(Execing, namespace="operators"), "Role")

    assert {"apiGroups": [""], "resources": [subresource], "verbs": ["create", "get"]} in rules


@pytest.mark.parametrize(
    "permissions",
    [
        {("", "*"): ("get",)},
        {("", "pods"): ("*",)},
        {("*", "pods"): ("get",)},
        {("", "pods"): ()},
        {("", "*/exec"): ("create",)},
        {("apps", "*/scale"): ("patch",)},
    ],
)
def test_a_wildcard_or_empty_permission_is_refused(permissions: dict[tuple[str, str], tuple[str, ...]]) -> None:
    class Greedy(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"

    Greedy.permissions = permissions

    with pytest.raises(errors.CodegenError, match=r"^Greedy\.permissions: "):
        rbac.rbac_for_reconciler(Greedy)


@pytest.mark.parametrize(
    "permissions",
    [{"pods": ("get",)}, {("", "pods", "get"): ("get",)}, {("", "pods"): None}, {("", "pods"): (1,)}, [("", "pods")]],
)
def test_a_malformed_permission_is_refused_in_one_line(permissions: Any) -> None:
    class Confused(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"

    Confused.permissions = permissions

    with pytest.raises(errors.CodegenError, match=r"^Confused\.permissions"):
        rbac.rbac_for_reconciler(Confused)


class StarChild(okt.Resource):
    api_version = "v1"
    kind = "Anything"
    plural = "*"


@pytest.mark.parametrize(
    "declared",
    [
        {"owns": (StarChild,)},
        {"watches": (okt.watch(okt.Kind("v1", "Anything", "*"), map=lambda obj: []),)},
        {"watches": (okt.watch(okt.Kind("apps/v1", "Anything", "*/scale"), map=lambda obj: []),)},
        {"watches": (okt.watch("*.apps", map=lambda obj: []),)},
        {"legacy_owns": (okt.Kind("v1", "Anything", "*"),)},
        {"plural": "*"},
    ],
)
def test_a_plural_that_is_a_wildcard_is_refused_wherever_it_is_declared(declared: dict[str, Any]) -> None:
    greedy = type("Greedy", (okt.Reconciler,), {"api_version": "x.example.com/v1", "kind": "Thing", **declared})

    with pytest.raises(errors.CodegenError, match=r"a wildcard \('\*'\)"):
        rbac.rbac_for_reconciler(greedy, cluster_wide=True)


def test_watched_kinds_are_only_read() -> None:
    class Watching(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        watches = (
            okt.watch("ConfigMap", map=lambda obj, ctx: []),
            okt.watch(okt.Kind("y.example.com/v1", "Other", "others"), map=lambda obj, ctx: []),
            okt.watch("gizmos.z.example.com", map=lambda obj, ctx: []),
        )

    rules = rules_of(rbac.rbac_for_reconciler(Watching, namespace="operators"), "Role")
    read = ["get", "list", "watch"]
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": read} in rules
    assert {"apiGroups": ["y.example.com"], "resources": ["others"], "verbs": read} in rules
    assert {"apiGroups": ["z.example.com"], "resources": ["gizmos"], "verbs": read} in rules


def test_kinds_an_earlier_version_owned_get_only_what_their_prune_needs() -> None:
    class Moved(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        legacy_owns = (
            ("v1", "ConfigMap"),
            ("policy/v1beta1", "PodDisruptionBudget"),
            okt.Kind("y.example.com/v1", "Old", "olds"),
        )

    rules = rules_of(rbac.rbac_for_reconciler(Moved, namespace="operators"), "Role")
    pruned = ["delete", "get", "list", "watch"]
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": pruned} in rules
    assert {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": pruned} in rules
    assert {"apiGroups": ["y.example.com"], "resources": ["olds"], "verbs": pruned} in rules
    assert "things/finalizers" not in {resource for rule in rules for resource in rule["resources"]}  # none created


def test_a_legacy_kind_of_no_dictionary_is_named_with_an_okt_kind() -> None:
    class Moved(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        legacy_owns = (("y.example.com/v1", "Old"),)

    with pytest.raises(
        errors.CodegenError,
        match=r'Moved\.legacy_owns: .*: name it with okt\.Kind\("y\.example\.com/v1", "Old", "<plural>"\)$',
    ):
        rbac.rbac_for_reconciler(Moved, namespace="operators")


@pytest.mark.parametrize(
    ("name", "group", "plural"),
    [
        ("deployments.v1.apps", "apps", "deployments"),
        ("Deployment.apps", "apps", "deployments"),
        ("deployment.apps", "apps", "deployments"),
        ("configmaps.v1", "", "configmaps"),
        ("gizmos.v1beta1.z.example.com", "z.example.com", "gizmos"),
        # A kind of no dictionary, named by its kind as kubectl reads Kind.group: its plural, not its name.
        ("Widget.example.com", "example.com", "widgets"),
        ("Policy.v1.z.example.com", "z.example.com", "policies"),
    ],
)
def test_a_watch_named_with_its_group_or_version_as_kubectl_names_it_reads_that_kind(
    name: str, group: str, plural: str
) -> None:
    class Watching(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        watches = (okt.watch(name, map=lambda obj, ctx: []),)

    rules = rules_of(rbac.rbac_for_reconciler(Watching, namespace="operators"), "Role")
    assert {"apiGroups": [group], "resources": [plural], "verbs": ["get", "list", "watch"]} in rules


def test_a_watch_named_by_a_short_name_needs_its_group_for_code_generation() -> None:
    class Watching(okt.Reconciler):
        api_version = "x.example.com/v1"
        kind = "Thing"
        plural = "things"
        watches = (okt.watch("cm", map=lambda obj, ctx: []),)

    with pytest.raises(errors.CodegenError, match=r"Watching\.watches: 'cm' is not in the kind dictionary"):
        rbac.rbac_for_reconciler(Watching, namespace="operators")


def test_a_declared_cluster_operator_gets_a_cluster_role_limited_to_its_name() -> None:
    class Mirrored(MemcachedReconciler):
        cluster_operator = "memcached"

    documents = rbac.rbac_for_reconciler(Mirrored, namespace="operators", metrics_auth=False)

    roles = [d for d in documents if d["kind"] == "ClusterRole"]
    assert [r["metadata"]["name"] for r in roles] == ["memcached-operator-cluster-operator"]
    assert roles[0]["rules"] == [
        {"apiGroups": ["config.openshift.io"], "resources": ["clusteroperators"], "verbs": ["create"]},
        {
            "apiGroups": ["config.openshift.io"],
            "resources": ["clusteroperators"],
            "resourceNames": ["memcached"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["config.openshift.io"],
            "resources": ["clusteroperators/status"],
            "resourceNames": ["memcached"],
            "verbs": ["get", "patch"],
        },
    ]
    binding = next(d for d in documents if d["kind"] == "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "memcached-operator", "namespace": "operators"}]
    assert rules_of(documents, "Role") == rules_of(rbac.rbac_for_reconciler(MemcachedReconciler), "Role")


def test_no_cluster_operator_no_cluster_role() -> None:
    documents = rbac.rbac_for_reconciler(MemcachedReconciler, namespace="operators", metrics_auth=False)

    assert not [d for d in documents if d["kind"].startswith("Cluster")]


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        ("deployments.apps", 'api_version = "apps/v1", kind = "Deployment"'),
        ("Namespace", 'api_version = "v1", kind = "Namespace"'),
        ("configmaps", 'api_version = "v1", kind = "ConfigMap"'),
        ("memcacheds.cache.example.com", 'api_version = "cache.example.com/v1alpha1", kind = "Memcached"'),
    ],
)
def test_a_kind_named_as_kubectl_names_it_is_refused_with_the_declaration_to_write(name: str, spelled: str) -> None:
    class Named(okt.Reconciler):
        kind = name

    with pytest.raises(errors.CodegenError) as caught:
        rbac.rbac_for_reconciler(Named)
    assert str(caught.value) == (
        f"Named.kind {name!r} without api_version is resolved by discovery when okt run starts; code generation "
        f"works offline and needs both spelled out, such as {spelled}"
    )
