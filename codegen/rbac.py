"""``okt gen rbac``: the least-privilege RBAC an okt operator runs with.

Why it exists: an operator's permissions follow from what it reconciles, so they are derived, not written by hand —
hand-written roles drift into ``"*"`` wildcards or miss the one verb that fails at 3 a.m. The rules below are exactly
what okt's runtime and engine use:

* the primary (``<plural>``): get, list, watch, patch — the informer, and the JSON patches of its finalizer and
  bookkeeping annotations (okt never replaces an object with PUT, so no ``update``);
* ``<plural>/status``: patch — conditions are written through the status subresource (not when the reconciler's
  ``status`` is ``"annotations"`` or ``"off"``, the default for a built-in primary such as a Deployment);
* ``<plural>/finalizers``: update — when the primary owns children: okt sets ``blockOwnerDeletion`` on their owner
  references, which the OwnerReferencesPermissionEnforcement admission plugin (on in many production clusters)
  allows only to who may update the owner's finalizers;
* each owned kind: get, list, watch, create, patch, delete — informer, create, guarded merge patch, prune, and the
  one read after a create races with the informer (``AlreadyExists``); a create/delete-only kind (``okt.Resource``)
  gets get, list, watch, create, delete — and patch too when the reconciler writes with server-side apply (its
  ``apply_strategy``, ``"apply"`` by default), since the API server authorizes an apply that creates as both;
* each kind an earlier version owned (``legacy_owns``): get, list, watch, delete — the informer and the prune of the
  children of it okt made (the get: a prune that met a change reads the child again), never create or patch;
* each watched kind (``watches``, related objects that reconcile primaries): get, list, watch — the informer only;
  a cluster-scoped one (known from an ``okt.Kind`` or the kind dictionary) needs a cluster-wide operator;
* what the reconciler declares in ``permissions`` (``{(group, resource): verbs}``): what its hooks reach beyond the
  children — ``pods/exec`` for ``ctx.exec``, the Pods it lists — never a wildcard; ``create`` or ``get`` on
  ``pods/exec``, ``pods/attach`` or ``pods/portforward`` gets both (:data:`WEBSOCKET_SUBRESOURCES`);
* ``events`` in the core group: create, patch — the events ``kubectl describe`` shows;
* ``leases`` in ``coordination.k8s.io``: get, create, update — only with leader election; get and update of the
  Lease ``okt run`` leads on alone when its name is known (``lease_name``: ``okt gen rbac``'s ``--lease-name``, or
  the name ``okt run`` derives from the reconcilers it was given; ``okt gen deploy``'s, whose Deployment passes
  ``--lease-name``), create of any (RBAC cannot limit a create by name: the object has none until it exists) — see
  :func:`lease_rules`;
* the webhook CA (:func:`webhook_ca_rules`, for ``okt run --webhook-service --webhook-configuration``): its Secret
  by name, ``create`` on Secrets, ``get``/``patch`` by name on the webhook configurations and on the CRDs whose
  conversion webhook it serves — only in ``okt gen deploy``'s tree, which passes those options;
* ``/metrics`` served to an authorized bearer token: ``create`` on ``tokenreviews`` and ``subjectaccessreviews``
  for the operator (:func:`metrics_auth_manifests`: a ClusterRole ``<account>-metrics-auth`` and its binding, since
  both reviews are cluster-scoped, even for a namespaced operator) — ``okt gen rbac`` writes it unless told
  ``--no-metrics-auth`` (an operator run with ``--no-metrics-secure``, or its metrics on loopback), ``okt gen deploy``
  in its ``metrics.yaml``; and ``get`` on the non-resource URL ``/metrics`` for the scraper
  (``<account>-metrics-reader``, bound by whoever installs the scraper: :func:`metrics_manifests`) — only in ``okt
  gen deploy``'s tree and ``okt gen bundle``;
* ``clusteroperators`` in ``config.openshift.io``: create, and get (plus patch on ``clusteroperators/status``) of the
  names the reconcilers declare in ``cluster_operator`` — a separate ClusterRole ``<account>-cluster-operator``, since
  a ClusterOperator is cluster-scoped even when the operator is namespaced.

Guarantees: no wildcard anywhere (a ``*`` in a plural, a watched kind or a declared permission — ``*/scale`` is
that subresource of every resource — is refused with a :class:`~okt.codegen.errors.CodegenError`); rules are grouped
per API group (a rule per group and set of verbs), with groups, resources and verbs sorted, so the output is
deterministic and diffs well. A namespaced operator gets a ServiceAccount, a Role and a RoleBinding in its namespace.
A cluster-wide one gets a ClusterRole and a ClusterRoleBinding — and, with leader election, a separate Role for the
leases in its own namespace, because the lease lives there and nowhere else.

Caveat: an operator that owns Roles or RoleBindings can only grant permissions it holds itself (Kubernetes'
escalation check); add those permissions to the generated role, or the ``bind``/``escalate`` verbs, by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from okt.codegen import crd, dictionary, errors
from okt.kube import kinds as kube_kinds

PRIMARY_VERBS = ("get", "list", "watch", "patch")
STATUS_VERBS = ("patch",)
FINALIZER_VERBS = ("update",)
OWNED_VERBS = ("get", "list", "watch", "create", "patch", "delete")
CREATE_DELETE_VERBS = ("get", "list", "watch", "create", "delete")
READ_VERBS = ("get", "list", "watch")
LEGACY_VERBS = ("delete", "get", "list", "watch")
EVENT_VERBS = ("create", "patch")
LEASE_VERBS = ("get", "create", "update")
_LEASE_GROUP = "coordination.k8s.io"
WEBSOCKET_SUBRESOURCES = frozenset({"pods/exec", "pods/attach", "pods/portforward"})
"""The Pod subresources a client reaches by websocket, an upgraded GET: API servers before 1.30 authorize it as
``get``, later ones as ``create``, so a declared permission on one gets both."""
CLUSTER_OPERATOR_GROUP = "config.openshift.io"
METRICS_AUTH_RULES = (
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
)
"""What ``okt run`` needs to let a scraper read ``/metrics``: review its token (who it is) and its access (whether it
may ``get /metrics``). A review creates nothing: ``create`` is how the API server is asked."""
METRICS_READER_RULES = ({"nonResourceURLs": ["/metrics"], "verbs": ["get"]},)
"""What a scraper needs to read ``/metrics`` of an okt operator (controller-runtime's ``metrics-reader`` role)."""

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
_RBAC_GROUP = "rbac.authorization.k8s.io"
_VERSION = re.compile(r"^v\d+((alpha|beta)\d+)?\Z")
"""An API version, as the middle part of ``plural.version.group``."""


class OwnedKind(NamedTuple):
    """A kind the operator creates: its API group (``""`` for core), plural, and whether okt updates it."""

    group: str
    plural: str
    mutable: bool = True


class PrimaryKind(NamedTuple):
    """A custom resource the operator reconciles: its API group, plural, and whether it owns children (whose owner
    references block its deletion, see the module docstring)."""

    group: str
    plural: str
    owner: bool = True
    status: bool = True


def lease_rules(lease_name: str | None) -> list[dict[str, Any]]:
    """The rules of leader election on the Lease ``lease_name``: get and update of it alone, create of any (RBAC cannot
    limit a create by name).

    ``None``, every verb on every Lease of the namespace: only for a caller of the Python API that cannot know the
    name, as when the rules go to an ``okt run`` whose command line no generator writes or reads — its
    ``--lease-name`` chosen at deployment time, or several operators of different reconcilers sharing one role. The
    generators always know it: ``okt gen deploy`` and ``okt gen bundle`` write the ``--lease-name`` of the
    Deployment (:func:`okt.codegen.manager.lease_name`), and ``okt gen rbac`` takes its ``--lease-name`` or the name
    ``okt run`` derives from the reconcilers it is given (:func:`okt.runtime.manager.default_lease_name`).

    Raises:
        CodegenError: ``lease_name`` is no name the API server takes for a Lease (a DNS subdomain).
    """
    resource = {"apiGroups": [_LEASE_GROUP], "resources": ["leases"]}
    if lease_name is None:
        return [{**resource, "verbs": sorted(LEASE_VERBS)}]
    if len(lease_name) > 253 or not crd.DNS_SUBDOMAIN.fullmatch(lease_name):
        raise errors.CodegenError(
            f"invalid lease name {lease_name!r}: expected a DNS name of at most 253 characters, such as my-operator"
        )
    named = sorted(verb for verb in LEASE_VERBS if verb != "create")
    return [{**resource, "verbs": ["create"]}, {**resource, "resourceNames": [lease_name], "verbs": named}]


def rules_for(
    *,
    primaries: Iterable[PrimaryKind],
    owned: Iterable[tuple[str, str] | tuple[str, str, bool]],
    leases: bool,
    watched: Iterable[tuple[str, str]] = (),
    declared: Iterable[tuple[str, str, Sequence[str]]] = (),
) -> list[dict[str, Any]]:
    """The policy rules for reconciling ``primaries`` that own ``owned`` (see the module docstring's table).

    ``owned`` items are ``(group, plural)`` (updated by okt) or ``(group, plural, mutable)``; ``declared`` items are
    ``(group, resource, verbs)``; a kind listed twice gets the union of its verbs.
    """
    verbs: dict[tuple[str, str], set[str]] = {}

    def grant(group: str, resource: str, granted: Iterable[str]) -> None:
        granted = set(granted)
        if any("*" in part for part in (group, resource, *granted)):
            # RBAC reads "*" as every group, resource or verb, and "*/scale" as that subresource of every resource:
            # a plural, a watch or a declared permission holding one would grant far beyond what the operator uses.
            raise errors.CodegenError(
                f"{resource!r} in group {group!r} ({', '.join(sorted(granted))}): a wildcard ('*') grants every "
                "resource, subresource or verb it stands for; okt gen rbac names each one"
            )
        verbs.setdefault((group, resource), set()).update(granted)

    for primary in primaries:
        grant(primary.group, primary.plural, PRIMARY_VERBS)
        if primary.status:
            grant(primary.group, f"{primary.plural}/status", STATUS_VERBS)
        if primary.owner:
            grant(primary.group, f"{primary.plural}/finalizers", FINALIZER_VERBS)
    for item in owned:
        kind = OwnedKind(*item)
        grant(kind.group, kind.plural, OWNED_VERBS if kind.mutable else CREATE_DELETE_VERBS)
    for group, plural in watched:
        grant(group, plural, READ_VERBS)
    for group, resource, asked in declared:
        grant(group, resource, asked)
    grant("", "events", EVENT_VERBS)
    if leases:
        grant(_LEASE_GROUP, "leases", LEASE_VERBS)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), granted in verbs.items():
        grouped.setdefault((group, tuple(sorted(granted))), []).append(resource)
    rules = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(granted)}
        for (group, granted), resources in grouped.items()
    ]
    return sorted(rules, key=lambda rule: (rule["apiGroups"][0], rule["resources"]))


def rbac_for(
    *,
    primary_group: str,
    primary_plural: str,
    owned: Sequence[tuple[str, str] | tuple[str, str, bool]],
    namespace: str,
    cluster_wide: bool,
    leader_elect: bool,
    service_account: str,
) -> list[dict[str, Any]]:
    """The ServiceAccount, role(s) and binding(s) of an operator reconciling one custom resource.

    Args:
        primary_group, primary_plural: the custom resource reconciled.
        owned: the kinds it creates, as ``(group, plural)`` or ``(group, plural, mutable)``.
        namespace: where the ServiceAccount lives (and, unless ``cluster_wide``, what the operator watches).
        cluster_wide: a ClusterRole/ClusterRoleBinding instead of a Role/RoleBinding.
        leader_elect: grant the Lease permissions leader election needs (in ``namespace``).
        service_account: the ServiceAccount's name, also the name of the roles and bindings.

    Raises:
        CodegenError: an invalid namespace or ServiceAccount name.
    """
    return rbac_for_primaries(
        primaries=[PrimaryKind(primary_group, primary_plural, owner=bool(owned))],
        owned=owned,
        namespace=namespace,
        cluster_wide=cluster_wide,
        leader_elect=leader_elect,
        service_account=service_account,
    )


def rbac_for_primaries(
    *,
    primaries: Sequence[PrimaryKind],
    owned: Sequence[tuple[str, str] | tuple[str, str, bool]],
    namespace: str,
    cluster_wide: bool,
    leader_elect: bool,
    service_account: str,
    watched: Sequence[tuple[str, str]] = (),
    declared: Sequence[tuple[str, str, Sequence[str]]] = (),
    lease_name: str | None = None,
) -> list[dict[str, Any]]:
    """:func:`rbac_for` for an operator running several reconcilers under one ServiceAccount (``watched``: the
    ``(group, plural)`` of kinds only read; ``declared``: ``(group, resource, verbs)`` the reconcilers ask for;
    ``lease_name``: the Lease leader election leads on, when known, see :func:`lease_rules`)."""
    crd.require_dns_label("namespace", namespace, "operators")
    if not crd.DNS_SUBDOMAIN.match(service_account) or len(service_account) > 253:
        raise errors.CodegenError(
            f"invalid service account name {service_account!r}: expected a DNS name of at most 253 characters"
        )
    account: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": service_account, "namespace": namespace},
    }
    leases = lease_rules(lease_name) if leader_elect else []
    if not cluster_wide:
        # A Lease known by name gets rules of its own: merged with the others, its get and update would reach every
        # Lease of the namespace again.
        merged = leader_elect and lease_name is None
        rules = rules_for(primaries=primaries, owned=owned, leases=merged, watched=watched, declared=declared)
        if not merged:
            rules = sorted([*rules, *leases], key=lambda rule: (rule["apiGroups"][0], rule["resources"]))
        return [account, *_role_and_binding(service_account, namespace, rules, service_account)]
    documents = [
        account,
        *_role_and_binding(
            service_account,
            None,
            rules_for(primaries=primaries, owned=owned, leases=False, watched=watched, declared=declared),
            service_account,
            namespace,
        ),
    ]
    if leader_elect:
        documents += _role_and_binding(f"{service_account}-leader-election", namespace, leases, service_account)
    return documents


def rbac_for_reconcilers(
    classes: Sequence[type[Any]],
    *,
    namespace: str = "default",
    cluster_wide: bool = False,
    leader_elect: bool = False,
    service_account: str | None = None,
    kinds: dictionary.KindDictionary | None = None,
    metrics_auth: bool = True,
    lease_name: str | None = None,
) -> list[dict[str, Any]]:
    """The RBAC of an operator running ``classes`` (``okt.Reconciler`` subclasses), read from their attributes.

    Reads ``api_version``, ``kind``, ``plural``, ``namespaced``, ``owns``, ``legacy_owns`` and ``permissions`` of each
    reconciler, and
    ``api_version``, ``kind`` (and ``plural``/``mutable``/``namespaced`` when set) of each class in its ``owns``. An
    owned class without ``plural`` takes it from the kind dictionary (``kinds``, default: the shipped one); one
    without a boolean ``mutable`` or ``namespaced`` is as mutable or namespaced as its dictionary entry (a kind the
    dictionary lacks counts as namespaced). ``service_account`` defaults to ``<kind>-operator`` (lowercased, first
    reconciler). ``metrics_auth`` (the default, as ``okt gen rbac``'s) adds :func:`metrics_auth_manifests`: what
    ``okt run`` needs to serve ``/metrics`` beyond loopback; ``False`` (``--no-metrics-auth``) for an operator run with
    ``--no-metrics-secure`` or its metrics on loopback. ``lease_name``, with ``leader_elect``: the Lease ``okt run``
    leads on (its ``--lease-name``, or the name it derives: :func:`okt.runtime.manager.default_lease_name`), whose get
    and update are then granted on it alone; ``None``: every Lease of the namespace (see :func:`lease_rules`).

    Raises:
        CodegenError: no reconciler, a malformed attribute, an owned kind missing from the dictionary, a
            cluster-scoped primary or owned kind without ``cluster_wide``, a wildcard or empty permission, or a
            ``lease_name`` no Lease can have.
    """
    if not classes:
        raise errors.CodegenError("no reconciler to generate RBAC for")
    kinds = kinds if kinds is not None else dictionary.builtin()
    primaries: list[PrimaryKind] = []
    owned: list[OwnedKind] = []
    watched: list[tuple[str, str]] = []
    declared: list[tuple[str, str, Sequence[str]]] = []
    for cls in classes:
        watched += [_watched_kind(cls, w.kind, kinds, cluster_wide) for w in getattr(cls, "watches", ()) or ()]
        declared += _declared(cls)
        for entry in _legacy_owns(cls):
            group, plural = _legacy_kind(cls, entry, kinds, cluster_wide)
            declared.append((group, plural, LEGACY_VERBS))
        primary = crd.primary_of(cls, custom=False)
        if not primary.namespaced and not cluster_wide:
            raise errors.CodegenError(f"{cls.__name__} reconciles cluster-scoped {primary.kind}: use --cluster-wide")
        applies = getattr(cls, "apply_strategy", "apply") == "apply"
        children = [_owned_kind(cls, child, kinds, cluster_wide, applies) for child in getattr(cls, "owns", ()) or ()]
        primaries.append(PrimaryKind(primary.group, primary.plural, owner=bool(children), status=primary.status))
        owned += children
    account = service_account or f"{crd.primary_of(classes[0], custom=False).kind.lower()}-operator"
    documents = rbac_for_primaries(
        primaries=primaries,
        owned=owned,
        namespace=namespace,
        cluster_wide=cluster_wide,
        leader_elect=leader_elect,
        service_account=account,
        watched=watched,
        declared=declared,
        lease_name=lease_name,
    )
    names = sorted({name for cls in classes if isinstance(name := getattr(cls, "cluster_operator", None), str)})
    if names:
        documents += _role_and_binding(
            f"{account}-cluster-operator", None, cluster_operator_rules(names), account, namespace
        )
    if metrics_auth:
        documents += metrics_auth_manifests(account, namespace)
    return documents


def cluster_operator_rules(names: Sequence[str]) -> list[dict[str, Any]]:
    """What mirroring onto the ClusterOperators ``names`` needs: create them (a create cannot be limited to names),
    read them and patch their status."""
    group = [CLUSTER_OPERATOR_GROUP]
    return [
        {"apiGroups": group, "resources": ["clusteroperators"], "verbs": ["create"]},
        {"apiGroups": group, "resources": ["clusteroperators"], "resourceNames": list(names), "verbs": ["get"]},
        {
            "apiGroups": group,
            "resources": ["clusteroperators/status"],
            "resourceNames": list(names),
            "verbs": ["get", "patch"],
        },
    ]


def webhook_ca_rules(
    *,
    secret: str | None,
    configuration: str | None,
    configurations: Sequence[str] = (),
    crds: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``okt run --webhook-service`` needs to keep its own webhook CA: ``(rules in its namespace, cluster rules)``.

    ``secret``: the Secret it keeps the Service's certificate in (None: the certificate comes from elsewhere) — get
    and update (the renewal) it by name, and create Secrets in the namespace (a create cannot be limited to a name).
    ``configuration``: the name of the webhook configurations it writes the CA into (``--webhook-configuration``;
    None: it writes none) — get and patch, by that name, on ``configurations`` (``validatingwebhookconfigurations``,
    ``mutatingwebhookconfigurations``), and on the CustomResourceDefinitions ``crds`` whose conversion webhook it
    serves. One source for ``okt gen deploy``'s RBAC and ``okt run``'s permission check.
    """
    namespaced: list[dict[str, Any]] = []
    if secret is not None:
        namespaced = [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "update"], "resourceNames": [secret]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ]
    cluster: list[dict[str, Any]] = []
    if configuration is not None and configurations:
        cluster.append(
            {
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": sorted(configurations),
                "verbs": ["get", "patch"],
                "resourceNames": [configuration],
            }
        )
    if configuration is not None and crds:
        cluster.append(
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "verbs": ["get", "patch"],
                "resourceNames": sorted(crds),
            }
        )
    return namespaced, cluster


def metrics_auth_manifests(service_account: str, namespace: str) -> list[dict[str, Any]]:
    """What the operator needs to serve ``/metrics`` to an authorized bearer token (``okt run
    --metrics-bind-address`` on an address other than loopback): the ClusterRole ``<account>-metrics-auth``
    (:data:`METRICS_AUTH_RULES`), bound to its ServiceAccount ``namespace/service_account``, with which it reviews each
    scraper's token. Cluster-wide whatever the operator watches: TokenReviews and SubjectAccessReviews are
    cluster-scoped, which a Role cannot grant."""
    return _role_and_binding(
        f"{service_account}-metrics-auth", None, [dict(rule) for rule in METRICS_AUTH_RULES], service_account, namespace
    )


def metrics_manifests(service_account: str, namespace: str) -> list[dict[str, Any]]:
    """The RBAC of ``/metrics`` served to an authorized bearer token: :func:`metrics_auth_manifests`, and the
    ClusterRole ``<account>-metrics-reader`` (:data:`METRICS_READER_RULES`), bound to nothing: bind the scraper's
    ServiceAccount (Prometheus's) to it."""
    auth = metrics_auth_manifests(service_account, namespace)
    reader = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": {"name": f"{service_account}-metrics-reader"},
        "rules": list(METRICS_READER_RULES),
    }
    return [*auth, reader]


def rbac_for_reconciler(cls: type[Any], **options: Any) -> list[dict[str, Any]]:
    """The RBAC of an operator running the one reconciler ``cls``; ``options`` as in :func:`rbac_for_reconcilers`."""
    return rbac_for_reconcilers([cls], **options)


def _declared(cls: type[Any]) -> list[tuple[str, str, Sequence[str]]]:
    """A reconciler's ``permissions`` as ``(group, resource, verbs)``, each checked: a ``{(group, resource): verbs}``
    mapping of strings, no wildcard, some verb."""
    permissions = getattr(cls, "permissions", None) or {}
    if not isinstance(permissions, Mapping):
        raise errors.CodegenError(f"{cls.__name__}.permissions must map (group, resource) to verbs")
    declared: list[tuple[str, str, Sequence[str]]] = []
    for key, verbs in permissions.items():
        granted = list(verbs) if isinstance(verbs, Iterable) and not isinstance(verbs, str) else [verbs]
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(part, str) for part in key)) or not all(
            isinstance(verb, str) for verb in granted
        ):
            raise errors.CodegenError(
                f"{cls.__name__}.permissions: {key!r}: {verbs!r}: expected (group, resource): verbs, all strings, "
                'such as ("", "pods"): ("get", "list")'
            )
        group, resource = key
        if any("*" in part for part in (group, resource, *granted)) or not resource or not granted:
            raise errors.CodegenError(
                f"{cls.__name__}.permissions: {key!r}: {granted!r}: name the group, resource and verbs, no wildcard"
            )
        if group == "" and resource in WEBSOCKET_SUBRESOURCES and {"create", "get"} & set(granted):
            granted = sorted({*granted, "create", "get"})
        declared.append((group, resource, granted))
    return declared


def _watched_kind(owner: type[Any], kind: Any, kinds: dictionary.KindDictionary, cluster_wide: bool) -> tuple[str, str]:
    """``(group, plural)`` of a watch's kind: an ``okt.Kind``, ``plural.group``, or a kind or plural of the
    dictionary, alone or with its group (``Deployment.apps``) and version (``deployments.v1.apps``) as ``kubectl``
    and okt's runtime read them (a short name needs the server's discovery, which code generation does without).

    A kind known to be cluster-scoped needs ``cluster_wide``: its informer lists the whole cluster, which a Role
    cannot grant (a Role's rule on a cluster-scoped resource is accepted and grants nothing).
    """
    if not isinstance(kind, str):
        if not getattr(kind, "namespaced", True) and not cluster_wide:
            raise errors.CodegenError(f"{owner.__name__}.watches: {kind.kind!r} is cluster-scoped: use --cluster-wide")
        return str(kind.api_version).rpartition("/")[0], str(kind.plural)
    named = kind.strip().partition(".")[0]
    word, dot, rest = kind.strip().lower().partition(".")
    version, _, after_version = rest.partition(".")
    group = (after_version if _VERSION.match(version) else rest) if dot else None
    for spec in kinds:
        spec_group = spec.api_version.rpartition("/")[0]
        if word in (spec.kind.lower(), spec.plural) and group in (None, spec_group):
            if not spec.namespaced and not cluster_wide:
                raise errors.CodegenError(f"{owner.__name__}.watches: {kind!r} is cluster-scoped: use --cluster-wide")
            return spec_group, spec.plural
    if group is not None:
        # A kind of no dictionary, ``Widget.example.com`` as kubectl reads it: the rule names its plural (the runtime
        # asks discovery for it; okt's plural rule is the one ``okt gen crd`` declares), never the kind's own name.
        return group, kube_kinds.plural_of(named) if named[:1].isupper() else word
    raise errors.CodegenError(
        f"{owner.__name__}.watches: {kind!r} is not in the kind dictionary: name it as plural.group "
        "(widgets.example.com) or with an okt.Kind"
    )


def _legacy_owns(cls: type[Any]) -> Sequence[Any]:
    legacy = getattr(cls, "legacy_owns", ()) or ()
    if isinstance(legacy, str) or not isinstance(legacy, Sequence):
        raise errors.CodegenError(f"{cls.__name__}.legacy_owns must be a tuple of (api_version, kind) pairs")
    return legacy


def _legacy_kind(owner: type[Any], entry: Any, kinds: dictionary.KindDictionary, cluster_wide: bool) -> tuple[str, str]:
    """``(group, plural)`` of a ``legacy_owns`` entry: an ``okt.Kind`` says both, a pair ``(api_version, kind)``
    takes the plural and scope of its kind from the dictionary (any version of the group: an earlier version of the
    operator may have used one the dictionary no longer lists)."""
    if isinstance(entry, kube_kinds.Kind):
        group, kind, plural, namespaced = entry.group, entry.kind, entry.plural, entry.namespaced
    else:
        if not (isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(p, str) and p for p in entry)):
            raise errors.CodegenError(f"{owner.__name__}.legacy_owns: {entry!r}: expected an (api_version, kind) pair")
        group, kind = entry[0].rpartition("/")[0], entry[1]
        spec = kinds.specs.get(kind)
        if spec is None or spec.group != group:
            raise errors.CodegenError(
                f"{owner.__name__}.legacy_owns: {entry!r}: {kind} of group {group or 'core'!r} is not in the kind "
                f'dictionary, so its plural is unknown: name it with okt.Kind("{entry[0]}", "{kind}", "<plural>")'
            )
        plural, namespaced = spec.plural, spec.namespaced
    if not namespaced and not cluster_wide:
        raise errors.CodegenError(f"{owner.__name__}.legacy_owns: {kind} is cluster-scoped: use --cluster-wide")
    return group, plural


def _owned_kind(
    owner: type[Any], child: type[Any], kinds: dictionary.KindDictionary, cluster_wide: bool, applies: bool
) -> OwnedKind:
    """The owned kind of ``child``; ``applies``: the reconciler writes its children with server-side apply, whose
    create is a ``PATCH`` that the API server authorizes as ``patch`` and ``create`` both, so a create/delete-only
    kind needs ``patch`` as well (which a mutable kind has)."""
    where = f"{owner.__name__}.owns: {getattr(child, '__name__', child)!r}"
    api_version = getattr(child, "api_version", None)
    kind = getattr(child, "kind", None)
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        raise errors.CodegenError(f"{where} must declare api_version and kind")
    spec = kinds.specs.get(kind)
    plural = getattr(child, "plural", None)
    if not isinstance(plural, str) or not plural:
        if spec is None:
            raise errors.CodegenError(
                f"{where}: kind {kind} is not in the kind dictionary, so its plural is unknown: "
                f'declare it on the class, such as plural = "{kube_kinds.plural_of(kind)}"'
            )
        plural = spec.plural
    mutable = getattr(child, "mutable", None)
    if not isinstance(mutable, bool):
        mutable = spec.mutable if spec is not None else True
    namespaced = getattr(child, "namespaced", None)
    if not isinstance(namespaced, bool):
        namespaced = spec.namespaced if spec is not None else True
    if not namespaced and not cluster_wide:
        raise errors.CodegenError(f"{where}: {kind} is cluster-scoped: use --cluster-wide")
    return OwnedKind(api_version.rpartition("/")[0], plural, mutable or applies)


def _role_and_binding(
    name: str, namespace: str | None, rules: list[dict[str, Any]], account: str, account_namespace: str | None = None
) -> list[dict[str, Any]]:
    """A Role and RoleBinding in ``namespace``, or a ClusterRole and ClusterRoleBinding when it is None."""
    role_kind, binding_kind = (
        ("Role", "RoleBinding") if namespace is not None else ("ClusterRole", "ClusterRoleBinding")
    )
    metadata: dict[str, Any] = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    subject = {"kind": "ServiceAccount", "name": account, "namespace": account_namespace or namespace}
    return [
        {"apiVersion": RBAC_API_VERSION, "kind": role_kind, "metadata": dict(metadata), "rules": rules},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": binding_kind,
            "metadata": dict(metadata),
            "roleRef": {"apiGroup": _RBAC_GROUP, "kind": role_kind, "name": name},
            "subjects": [subject],
        },
    ]
