"""``okt run`` asks the real API server for every permission ``okt gen rbac`` would grant, as the identity it runs
with (a ServiceAccount's token), and stops before the first watch when one is missing; it asks with one rules review
per namespace, and its answers are those of one access review per permission."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

import okt
from okt.cli import permissions
from okt.codegen import deploy, rbac
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import loader
from okt.testing import OperatorProcess, audit, crds, envtest
from tests.integration import converting

pytestmark = pytest.mark.integration

NAMESPACE = "shop"
OPERATOR = envtest.TokenUser.service_account(NAMESPACE, "gizmo-operator")
HOLDER = envtest.TokenUser.service_account("depot-a", "gizmo-operator")
"""Holds every permission, through a ClusterRole and the leader-election Role (counted in the audit log)."""
WILDCARD = envtest.TokenUser.service_account("depot-w", "gizmo-operator")
"""Holds permissions through wildcards, ``*/status`` and ``resourceNames`` (some refused)."""
CONVERTER = envtest.TokenUser.service_account("depot-c", "gadget-operator")
"""Runs an operator with a conversion webhook, with ``okt gen deploy``'s webhook arguments."""
PERSONS = envtest.TokenUser.service_account("depot-p", "person-operator")
"""Holds the permissions of an operator of a kind whose plural is irregular (Person, people)."""
WATCHER = envtest.TokenUser.service_account("depot-v", "gizmo-operator")
"""Holds the permissions of an operator that watches people."""
SECRETS_WATCHER = envtest.TokenUser.service_account("depot-s", "gizmo-operator")
"""Holds the permissions of an operator that watches people, not those of the Secrets it watches too."""
SCRAPED = envtest.TokenUser.service_account("depot-m", "gizmo-operator")
"""Serves ``/metrics`` beyond loopback, at first without the permission to review its scrapers' tokens."""
GROUP = "perm.okt.io"

OPERATOR_SOURCE = textwrap.dedent(
    f'''
    import okt


    class GizmoConfig(okt.MutableResource):
        api_version = "v1"
        kind = "ConfigMap"
        template = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{{{ name }}}}
      namespace: {{{{ namespace }}}}
    data:
      size: "1"
    """


    class GizmoReconciler(okt.Reconciler):
        api_version = "{GROUP}/v1"
        kind = "Gizmo"
        plural = "gizmos"
        owns = (GizmoConfig,)

        def resources(self, ctx):
            return [GizmoConfig(ctx.cr)]
    '''
)


@pytest.fixture(scope="module")
def plane() -> Iterator[envtest.ControlPlane]:
    """A control plane of its own: token users are declared when the API server starts."""
    plane = envtest.ControlPlane(
        users=(OPERATOR, HOLDER, WILDCARD, CONVERTER, PERSONS, WATCHER, SECRETS_WATCHER, SCRAPED),
        audit_log=True,
        crds=(crds.schemaless_crd(GROUP, "Gizmo", "gizmos"), crds.schemaless_crd(GROUP, "Person", "people")),
    )
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def operator_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("operator") / "gizmo_operator.py"
    path.write_text(OPERATOR_SOURCE)
    return path


STATUS_RULE = {"apiGroups": [GROUP], "resources": ["gizmos/status"], "verbs": ["patch"]}


def apply(admin: kube_client.Client, documents: list[dict[str, Any]]) -> None:
    for document in documents:
        admin.create(document, admin.resolve(document["apiVersion"], document["kind"]))


def without_status_rule(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``okt gen rbac``'s documents, the status rule left out of the Role."""
    trimmed = [{**d, "rules": [r for r in d["rules"] if r != STATUS_RULE]} if "rules" in d else d for d in documents]
    assert trimmed != documents, "the generated Role has no rule of its own for gizmos/status"
    return trimmed


def status_role() -> list[dict[str, Any]]:
    """The missing rule, granted on its own."""
    rbac_group = "rbac.authorization.k8s.io"
    role = {
        "apiVersion": f"{rbac_group}/v1",
        "kind": "Role",
        "metadata": {"name": "gizmo-status", "namespace": NAMESPACE},
        "rules": [STATUS_RULE],
    }
    binding = {
        "apiVersion": f"{rbac_group}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gizmo-status", "namespace": NAMESPACE},
        "roleRef": {"apiGroup": rbac_group, "kind": "Role", "name": "gizmo-status"},
        "subjects": [{"kind": "ServiceAccount", "name": "gizmo-operator", "namespace": NAMESPACE}],
    }
    return [role, binding]


def okt_run(
    plane: envtest.ControlPlane,
    operator: pathlib.Path,
    *args: str,
    user: envtest.TokenUser = OPERATOR,
    namespace: str = NAMESPACE,
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "okt", "run", str(operator), "--kubeconfig", str(plane.kubeconfig_for(user))]
    argv += ["--namespace", namespace, "--metrics-bind-address", "0", *args]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])}
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, env=env)


def serving_okt_run(
    plane: envtest.ControlPlane, operator: pathlib.Path, user: envtest.TokenUser, host: str, *args: str
) -> str:
    """The output of ``okt run`` serving its metrics and probes on ``host`` (every interface: ``0.0.0.0``), once it
    is ready (its probes answer over plain http) and stopped again."""
    port = envtest.free_port()
    argv = [sys.executable, "-m", "okt", "run", str(operator), "--kubeconfig", str(plane.kubeconfig_for(user))]
    argv += ["--namespace", user.name.split(":")[2], "--metrics-bind-address", f"{host}:{port}", *args]
    log_path = plane.directory / f"okt-run-{port}.log"
    running = OperatorProcess(
        argv,
        env={"PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])},
        log_path=log_path,
        probe_url=f"http://127.0.0.1:{port}",
    )
    with running:
        pass  # started, and ready: its probes answer
    return log_path.read_text()


def test_okt_run_serving_metrics_to_reviewed_tokens_without_the_reviews_warns_once_and_runs(
    plane: envtest.ControlPlane, operator_file: pathlib.Path
) -> None:
    """The start-up check asked nothing of the reviews: the operator started, and answered every scrape 503."""
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    try:
        create_namespaces(admin, "depot-m")
        reconcilers = gizmo_reconcilers(operator_file)
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                reconcilers, namespace="depot-m", service_account="gizmo-operator", metrics_auth=False
            ),
        )

        secured = serving_okt_run(plane, operator_file, SCRAPED, "0.0.0.0")
        plain = serving_okt_run(plane, operator_file, SCRAPED, "0.0.0.0", "--no-metrics-secure")
        loopback = serving_okt_run(plane, operator_file, SCRAPED, "127.0.0.1")
        apply(admin, rbac.metrics_auth_manifests("gizmo-operator", "depot-m"))
        granted = serving_okt_run(plane, operator_file, SCRAPED, "0.0.0.0")
        print(secured)
    finally:
        admin.close()

    said = [line for line in secured.splitlines() if "tokenreviews" in line or "subjectaccessreviews" in line]
    assert len(said) == 1, secured
    warning = said[0]
    assert warning.startswith("okt: warning: "), warning
    assert '{apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"]}' in warning
    assert '{apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"]}' in warning
    for log in (plain, loopback, granted):
        assert "tokenreviews" not in log and "subjectaccessreviews" not in log, log


def test_okt_run_without_one_permission_prints_the_missing_rule_and_stops_before_the_first_watch(
    plane: envtest.ControlPlane, operator_file: pathlib.Path
) -> None:
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    try:
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, kinds.NAMESPACE)
        reconcilers = loader.reconcilers_of(loader.load_module(str(operator_file), as_module=False), "gizmo")
        documents = rbac.rbac_for_reconcilers(
            reconcilers, namespace=NAMESPACE, service_account="gizmo-operator", metrics_auth=False
        )
        apply(admin, without_status_rule(documents))

        result = okt_run(plane, operator_file)
        print(result.stderr)  # the transcript, shown with pytest -rP

        missing = [line for line in result.stderr.splitlines() if "missing permission" in line]
        assert result.returncode == 1, result.stderr
        assert missing == [
            "okt: missing permission: patch gizmos/status (perm.okt.io) in namespace shop (a Role there, or a "
            'ClusterRole); rule: {apiGroups: ["perm.okt.io"], resources: ["gizmos/status"], verbs: ["patch"]}'
        ]
        assert "--skip-permission-check" in result.stderr
        assert "watching" not in result.stderr  # stopped before the first watch

        client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(OPERATOR))
        try:
            apply(admin, status_role())
            assert (
                permissions.missing(
                    client, reconcilers, [NAMESPACE], leader_elect=False, lease_namespace=NAMESPACE, warn=print
                )
                == []
            )
        finally:
            client.close()
    finally:
        admin.close()


def create_namespaces(admin: kube_client.Client, *names: str) -> None:
    for name in names:
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)


def gizmo_reconcilers(operator_file: pathlib.Path) -> list[type[Any]]:
    return loader.reconcilers_of(loader.load_module(str(operator_file), as_module=False), "gizmo")


def test_an_operator_holding_every_permission_is_checked_with_one_rules_review_per_namespace_and_no_access_review(
    plane: envtest.ControlPlane, operator_file: pathlib.Path
) -> None:
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(HOLDER))
    try:
        create_namespaces(admin, "depot-a", "depot-b")
        reconcilers = gizmo_reconcilers(operator_file)
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                reconcilers,
                namespace="depot-a",
                service_account="gizmo-operator",
                cluster_wide=True,
                leader_elect=True,
                metrics_auth=False,
            ),
        )
        log = audit.AuditLog.from_end(plane.audit_log_path, [HOLDER.name])

        refused = permissions.missing(
            client, reconcilers, ["depot-a", "depot-b"], leader_elect=True, lease_namespace="depot-a", warn=print
        )

        log.settle()
        asked = sorted((r.resource, r.namespace) for r in log.requests(HOLDER.name))
        assert refused == []
        assert asked == [("selfsubjectrulesreviews", ""), ("selfsubjectrulesreviews", "")], asked
    finally:
        client.close()
        admin.close()


def test_the_rules_review_refuses_exactly_what_one_access_review_per_permission_refuses(
    plane: envtest.ControlPlane, operator_file: pathlib.Path
) -> None:
    rbac_group = "rbac.authorization.k8s.io"
    role = {
        "apiVersion": f"{rbac_group}/v1",
        "kind": "Role",
        "metadata": {"name": "gizmo-wildcards", "namespace": "depot-w"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
            {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["patch"]},
            {"apiGroups": [GROUP], "resources": ["*"], "verbs": ["get", "list"]},
            {"apiGroups": [GROUP], "resources": ["gizmos"], "resourceNames": ["one"], "verbs": ["watch", "patch"]},
        ],
    }
    binding = {
        "apiVersion": f"{rbac_group}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gizmo-wildcards", "namespace": "depot-w"},
        "roleRef": {"apiGroup": rbac_group, "kind": "Role", "name": "gizmo-wildcards"},
        "subjects": [{"kind": "ServiceAccount", "name": "gizmo-operator", "namespace": "depot-w"}],
    }
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(WILDCARD))
    try:
        create_namespaces(admin, "depot-w")
        apply(admin, [role, binding])
        reconcilers = gizmo_reconcilers(operator_file)
        needed = permissions.required(reconcilers, ["depot-w"], leader_elect=False, lease_namespace="depot-w")

        refused = permissions.missing(
            client, reconcilers, ["depot-w"], leader_elect=False, lease_namespace="depot-w", warn=print
        )

        assert refused == [p for p in needed if not permissions.allowed(client, p)]
        assert {(p.verb, p.resource) for p in refused} == {
            ("watch", "gizmos"),
            ("patch", "gizmos"),
            ("update", "gizmos/finalizers"),
            ("create", "events"),
            ("patch", "events"),
        }
    finally:
        client.close()
        admin.close()


def test_with_the_webhook_ca_options_okt_run_asks_to_get_and_patch_the_crd_of_its_conversion_webhook(
    plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    source = converting.gadget_operator(tmp_path, f"conv.{GROUP}")
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(CONVERTER))
    try:
        create_namespaces(admin, "depot-c")
        reconcilers = loader.reconcilers_of(loader.load_module(str(source), as_module=False), "gadget")
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                reconcilers, namespace="depot-c", service_account="gadget-operator", metrics_auth=False
            ),
        )
        webhook_rbac = deploy.webhook_manifests(deploy.Operator(reconcilers, "gadget-operator", "depot-c", "gadget:1"))
        apply(admin, [d for d in webhook_rbac if d["kind"] in ("Role", "RoleBinding")])  # the Secret's, not the CRD's
        options = ["--webhook-service", "gadget-operator-webhooks", "--webhook-configuration", "gadget-operator"]

        result = okt_run(plane, source, *options, user=CONVERTER, namespace="depot-c")
        print(result.stderr)

        missing = [line for line in result.stderr.splitlines() if "missing permission" in line]
        assert result.returncode == 1, result.stderr
        crd_name = "gadgets.conv.perm.okt.io"
        assert missing == [
            f"okt: missing permission: {verb} customresourcedefinitions {crd_name} (apiextensions.k8s.io) "
            'cluster-wide (a ClusterRole); rule: {apiGroups: ["apiextensions.k8s.io"], resources: '
            f'["customresourcedefinitions"], resourceNames: ["{crd_name}"], verbs: ["{verb}"]}}'
            for verb in ("get", "patch")
        ]
        apply(admin, [d for d in webhook_rbac if d["kind"] in ("ClusterRole", "ClusterRoleBinding")])
        namespaced, cluster = rbac.webhook_ca_rules(
            secret="gadget-operator-webhooks-tls",
            configuration="gadget-operator",
            crds=[crd_name],
        )
        extra = [("depot-c", namespaced), (None, cluster)]
        assert (
            permissions.missing(
                client, reconcilers, ["depot-c"], leader_elect=False, lease_namespace="depot-c", warn=print, extra=extra
            )
            == []
        )
    finally:
        client.close()
        admin.close()


def test_a_primary_kind_declared_without_its_plural_is_checked_under_the_plural_the_server_serves(
    plane: envtest.ControlPlane,
) -> None:
    class PersonReconciler(okt.Reconciler):
        api_version = f"{GROUP}/v1"
        kind = "Person"  # served as "people": the runtime reads the plural from discovery

    class Declared(PersonReconciler):
        plural = "people"

    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(PERSONS))
    try:
        create_namespaces(admin, "depot-p")
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                [Declared], namespace="depot-p", service_account="person-operator", metrics_auth=False
            ),
        )

        refused = permissions.missing(
            client, [PersonReconciler], ["depot-p"], leader_elect=False, lease_namespace="depot-p", warn=print
        )

        assert refused == []
    finally:
        client.close()
        admin.close()


def test_a_kind_watched_by_its_kubectl_name_is_checked_under_the_plural_the_server_serves(
    plane: envtest.ControlPlane,
) -> None:
    people = kinds.Kind(f"{GROUP}/v1", "Person", "people")

    class Declared(okt.Reconciler):
        api_version = f"{GROUP}/v1"
        kind = "Gizmo"
        plural = "gizmos"
        watches = (okt.watch(people, map=lambda obj, ctx: []),)

    class WatchingByName(Declared):
        watches = (okt.watch(f"Person.{GROUP}", map=lambda obj, ctx: []),)  # kind.group, as kubectl takes it

    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(WATCHER))
    try:
        create_namespaces(admin, "depot-v")
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                [Declared], namespace="depot-v", service_account="gizmo-operator", metrics_auth=False
            ),
        )

        refused = permissions.missing(
            client, [WatchingByName], ["depot-v"], leader_elect=False, lease_namespace="depot-v", warn=print
        )

        assert refused == []
    finally:
        client.close()
        admin.close()


def test_a_watched_kind_the_role_does_not_grant_is_named_with_its_rule(plane: envtest.ControlPlane) -> None:
    people = kinds.Kind(f"{GROUP}/v1", "Person", "people")

    class Granted(okt.Reconciler):
        api_version = f"{GROUP}/v1"
        kind = "Gizmo"
        plural = "gizmos"
        watches = (okt.watch(people, map=lambda obj, ctx: []),)

    class AlsoSecrets(Granted):
        watches = (*Granted.watches, okt.watch("secrets", map=lambda obj, ctx: []))

    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(SECRETS_WATCHER))
    try:
        create_namespaces(admin, "depot-s")
        apply(
            admin,
            rbac.rbac_for_reconcilers(
                [Granted], namespace="depot-s", service_account="gizmo-operator", metrics_auth=False
            ),
        )

        refused = permissions.missing(
            client, [AlsoSecrets], ["depot-s"], leader_elect=False, lease_namespace="depot-s", warn=print
        )

        assert sorted(str(p) for p in refused) == [
            f"missing permission: {verb} secrets (core) in namespace depot-s (a Role there, or a ClusterRole); rule: "
            f'{{apiGroups: [""], resources: ["secrets"], verbs: ["{verb}"]}}'
            for verb in ("get", "list", "watch")
        ]
    finally:
        client.close()
        admin.close()
