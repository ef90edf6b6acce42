"""The permission check of ``okt run``: ask the API server, before the first watch, for everything the operator needs.

Why this exists: an operator deployed with a role that misses one verb starts, syncs its caches, and fails its first
reconcile with a 403 — or, worse, only the first one that needs that verb (a prune, a finalizer), hours later. Asking
up front turns that into one line per missing permission, naming the RBAC rule that grants it, before anything runs.

What is asked: exactly the rules ``okt gen rbac`` writes for the same reconcilers
(:func:`okt.codegen.rbac.rbac_for_reconcilers` — one source of truth, so the check and the generated role never
disagree), and those the options of ``okt run`` add (``--webhook-service``, ``--webhook-configuration``:
:func:`okt.codegen.rbac.webhook_ca_rules`, the rules of ``okt gen deploy``'s ``webhook.yaml``, each on the
objects it names). The ClusterRole's rules are asked in every watched namespace (cluster-wide when all are watched);
the leader-election Role's, in the Lease's namespace.

How it is asked: one ``SelfSubjectRulesReview`` per namespace lists every rule the identity holds there (its
RoleBindings' and ClusterRoleBindings'); a permission one of those rules covers, with RBAC's own matching (``*``
wildcards, ``*/subresource``, no ``resourceNames``), is held. What a rules review cannot answer is asked with one
``SelfSubjectAccessReview`` each: a cluster-wide permission (a namespace's rules include its RoleBindings, which do
not reach beyond it), and every permission the rules do not cover — the rules of a webhook or other authorizer may be
missing from the review (``incomplete``), so only the authorizer's own answer says "refused". A rules review can
under-report, never over-report, so the answers are those the access reviews alone would give, in one request per
namespace instead of one per (verb, resource, namespace) when nothing is missing. Any authenticated user may send
both reviews (the ``system:basic-user`` role grants them).

What ``/metrics`` needs is asked apart (:func:`refused`, by ``okt run`` when it serves ``/metrics`` to reviewed
tokens only): without it the operator runs and its probes answer, only the scrapes are answered ``503``, so a refusal
there is a warning, never a stop.

Guarantees: :func:`missing` lists the permissions the server refuses, in the order of the generated rules, each with
the rule that grants it; nothing is written. When the check cannot be made — the reconcilers' permissions cannot be
derived (a child kind missing from the kind dictionary), or the server does not answer access reviews — it says so
and reports nothing missing: the check never stops an operator that might work.

Caveats: the review asks the authorizer what it would answer now; a webhook authorizer may decide differently per
object. A cluster-scoped kind watched with ``--namespace`` is asked about in those namespaces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from collections.abc import Callable, Sequence
from typing import Any

from okt import errors
from okt.codegen import errors as codegen_errors
from okt.codegen import rbac
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core, watches

ACCESS_REVIEW = kinds.Kind(
    "authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False
)
RULES_REVIEW = kinds.Kind(
    "authorization.k8s.io/v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", namespaced=False
)


@dataclasses.dataclass(frozen=True)
class Permission:
    """One verb on one resource (``plural`` or ``plural/subresource``) of an API group, in a namespace (``None``:
    cluster-wide), on every object or (``name``) on one."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None = None

    def rule(self) -> str:
        """The RBAC rule that grants it, as one line of YAML."""
        names = f', resourceNames: ["{self.name}"]' if self.name is not None else ""
        return f'{{apiGroups: ["{self.group}"], resources: ["{self.resource}"]{names}, verbs: ["{self.verb}"]}}'

    def where(self) -> str:
        """Where the rule must apply: a Role in the namespace, or a ClusterRole."""
        if self.namespace is None:
            return "cluster-wide (a ClusterRole)"
        return f"in namespace {self.namespace} (a Role there, or a ClusterRole)"

    def __str__(self) -> str:
        group = self.group or "core"
        what = self.resource if self.name is None else f"{self.resource} {self.name}"
        return f"missing permission: {self.verb} {what} ({group}) {self.where()}; rule: {self.rule()}"


def required(
    reconcilers: Sequence[type[Any]],
    namespaces: Sequence[str] | None,
    *,
    leader_elect: bool,
    lease_namespace: str,
    lease_name: str | None = None,
    extra: Sequence[tuple[str | None, Sequence[dict[str, Any]]]] = (),
) -> list[Permission]:
    """Every permission the operator running ``reconcilers`` needs, from the rules ``okt gen rbac`` generates, then
    those of ``extra`` (``(namespace or None for cluster-wide, rules)``: what ``okt run``'s options add, such as
    :func:`okt.codegen.rbac.webhook_ca_rules`; a rule limited to ``resourceNames`` asks for each name). With
    ``lease_name``, the Lease's get and update are asked of that Lease, as ``okt gen rbac --lease-name`` grants them
    (a role granting them on every Lease holds them too).

    Raises:
        okt.codegen.errors.CodegenError: the rules cannot be derived (see :func:`rbac.rbac_for_reconcilers`).
    """
    # The reviews of /metrics are asked about on their own, only when it reviews tokens, and only warned of.
    documents = rbac.rbac_for_reconcilers(
        reconcilers,
        namespace=lease_namespace,
        cluster_wide=True,
        leader_elect=leader_elect,
        metrics_auth=False,
        lease_name=lease_name if leader_elect else None,
    )
    where: list[str | None] = list(namespaces) if namespaces else [None]
    needed: list[Permission] = []
    for document in documents:
        if document["kind"] == "ClusterRole":
            scopes = where
        elif document["kind"] == "Role":
            scopes = [document["metadata"]["namespace"]]
        else:
            continue
        needed += _permissions_of(document["rules"], scopes)
    for namespace, rules in extra:
        needed += _permissions_of(rules, [namespace])
    return list(dict.fromkeys(needed))


def _permissions_of(rules: Sequence[dict[str, Any]], scopes: Sequence[str | None]) -> list[Permission]:
    found = []
    for rule in rules:
        names: list[str | None] = list(rule.get("resourceNames") or [None])
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    found += [Permission(verb, group, resource, scope, name) for scope in scopes for name in names]
    return found


def _as_served(client: kube_client.Client, cls: type[Any]) -> type[Any]:
    """``cls`` with its kinds as the API server serves them: the runtime reads from discovery a plural the reconciler
    does not declare and a kind named as kubectl names it (its own or a watch's), so the check asks about the
    resources the operator will use — not okt's guess (``Person`` is served as ``people``, never ``persons``, and a
    watch of ``Person.example.com`` lists ``people``). A kind discovery cannot resolve is checked as declared: the
    start reports it in one line."""
    try:
        served = core.resolved(cls, client)
    except errors.OktError:
        return cls
    attributes: dict[str, Any] = {"__module__": served.__module__, "__qualname__": served.__qualname__}
    with contextlib.suppress(errors.OktError):
        attributes["plural"] = served.plural or core.primary_kind(served, client).plural
    attributes["watches"] = tuple(_watch_as_served(client, w) for w in served.watches)
    return types.new_class(served.__name__, (served,), exec_body=lambda namespace: namespace.update(attributes))


def _watch_as_served(client: kube_client.Client, declared: watches.Watch) -> watches.Watch:
    try:
        return dataclasses.replace(declared, kind=watches.resolve(client, declared.kind))
    except errors.OktError:
        return declared


def allowed(client: kube_client.Client, permission: Permission) -> bool:
    """Ask the API server whether the client's identity holds ``permission`` (one SelfSubjectAccessReview).

    Raises:
        okt.errors.ApiError: the review itself failed.
    """
    resource, _, subresource = permission.resource.partition("/")
    attributes = {"verb": permission.verb, "group": permission.group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    if permission.namespace is not None:
        attributes["namespace"] = permission.namespace
    if permission.name is not None:
        attributes["name"] = permission.name
    review = {
        "apiVersion": ACCESS_REVIEW.api_version,
        "kind": ACCESS_REVIEW.kind,
        "spec": {"resourceAttributes": attributes},
    }
    answer = client.create(review, ACCESS_REVIEW)
    return bool((answer.get("status") or {}).get("allowed"))


def rules_in(client: kube_client.Client, namespace: str) -> list[dict[str, Any]]:
    """The resource rules the client's identity holds in ``namespace`` (one SelfSubjectRulesReview): those of its
    RoleBindings there and of its ClusterRoleBindings, as far as the authorizers can list them.

    Raises:
        okt.errors.ApiError: the review itself failed.
    """
    review = {"apiVersion": RULES_REVIEW.api_version, "kind": RULES_REVIEW.kind, "spec": {"namespace": namespace}}
    answer = client.create(review, RULES_REVIEW)
    return list((answer.get("status") or {}).get("resourceRules") or [])


def covers(rule: dict[str, Any], permission: Permission) -> bool:
    """Whether the policy ``rule`` grants ``permission``, matched as Kubernetes' RBAC authorizer matches: ``*`` in
    verbs, groups or resources, ``*/<subresource>`` for a subresource, and a rule limited to ``resourceNames`` grants
    only a permission on one of those names (never one on every object)."""
    names = rule.get("resourceNames")
    if names and permission.name not in names:
        return False
    verbs = rule.get("verbs") or ()
    groups = rule.get("apiGroups") or ()
    if not ("*" in verbs or permission.verb in verbs) or not ("*" in groups or permission.group in groups):
        return False
    _, _, subresource = permission.resource.partition("/")
    return any(
        resource in ("*", permission.resource) or (bool(subresource) and resource == f"*/{subresource}")
        for resource in rule.get("resources") or ()
    )


def refused(client: kube_client.Client, rules: Sequence[dict[str, Any]]) -> list[Permission]:
    """The permissions of the cluster-wide ``rules`` the API server refuses to the client's identity, in their order
    (one access review each: a rules review of a namespace does not show what is granted cluster-wide only).

    Raises:
        okt.errors.ApiError: a review itself failed.
    """
    return [permission for permission in _permissions_of(rules, [None]) if not allowed(client, permission)]


def _held_by_rules(client: kube_client.Client, needed: Sequence[Permission]) -> set[Permission]:
    """The permissions of ``needed`` that a rules review of their namespace shows held (one review per namespace;
    a namespace whose review fails shows nothing: its permissions go to access reviews)."""
    held: set[Permission] = set()
    for namespace in dict.fromkeys(p.namespace for p in needed if p.namespace is not None):
        try:
            rules = rules_in(client, namespace)
        except errors.ApiError:
            continue
        held.update(p for p in needed if p.namespace == namespace and any(covers(r, p) for r in rules))
    return held


def missing(
    client: kube_client.Client,
    reconcilers: Sequence[type[Any]],
    namespaces: Sequence[str] | None,
    *,
    leader_elect: bool,
    lease_namespace: str,
    warn: Callable[[str], None],
    lease_name: str | None = None,
    extra: Sequence[tuple[str | None, Sequence[dict[str, Any]]]] = (),
) -> list[Permission]:
    """The permissions the operator needs (``extra`` as for :func:`required`) and the API server refuses to the
    client's identity (see the module docstring); ``warn`` receives one line when the check cannot be made."""
    try:
        needed = required(
            [_as_served(client, cls) for cls in reconcilers],
            namespaces,
            leader_elect=leader_elect,
            lease_namespace=lease_namespace,
            lease_name=lease_name,
            extra=extra,
        )
    except codegen_errors.CodegenError as exc:
        warn(f"permissions not checked: {exc}")
        return []
    held = _held_by_rules(client, needed)
    refused = []
    for permission in needed:
        if permission in held:
            continue
        try:
            if not allowed(client, permission):
                refused.append(permission)
        except errors.ApiError as exc:
            warn(f"permissions not checked: the API server does not answer access reviews ({exc})")
            return []
    return refused
