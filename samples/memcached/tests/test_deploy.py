"""The in-cluster deployment files: ``deploy/rbac.yaml`` is enough for the whole lifecycle, and every file is
accepted by the apiserver and by ``okt run``."""

from __future__ import annotations

import contextlib
import json
import pathlib
import secrets
from collections.abc import Iterator
from typing import Any

import click
import pytest
import yaml

import okt
from okt.cli import run as run_cli
from okt.codegen import manager
from okt.kube import kinds
from okt.testing import envtest, waiting
from okt.testing.waiting import wait_for
from samples.memcached.tests import harness

DEPLOY = pathlib.Path(__file__).resolve().parents[1] / "deploy"


def documents(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc]


def operator_deployment() -> dict[str, Any]:
    (deployment,) = [doc for doc in documents("deployment.yaml") if doc["kind"] == "Deployment"]
    return deployment


def test_the_operator_deployment_runs_as_the_service_account_the_rbac_binds() -> None:
    rbac = documents("rbac.yaml")
    deployment = operator_deployment()

    (account,) = [doc for doc in rbac if doc["kind"] == "ServiceAccount"]
    bound = {
        (subject["namespace"], subject["name"])
        for doc in rbac
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")
        for subject in doc["subjects"]
    }
    identity = (harness.OPERATOR_NAMESPACE, harness.SERVICE_ACCOUNT)
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == identity
    assert deployment["metadata"]["namespace"] == harness.OPERATOR_NAMESPACE
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == harness.SERVICE_ACCOUNT
    assert bound == {identity}


def test_okt_run_accepts_the_operator_deployments_arguments() -> None:
    (container,) = operator_deployment()["spec"]["template"]["spec"]["containers"]

    context = run_cli.run_command.make_context("run", list(container["args"]))

    assert context.params["leader_elect"] is True
    assert context.params["all_namespaces"] is True
    assert context.params["lease_namespace"] == harness.OPERATOR_NAMESPACE
    assert context.params["metrics_bind_address"] == ":8080"
    probes = {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"}


def entry_point() -> list[str]:
    """The image's ENTRYPOINT (samples/memcached/Dockerfile), after ``okt run``."""
    dockerfile = (DEPLOY.parent / "Dockerfile").read_text()
    (line,) = [line for line in dockerfile.splitlines() if line.startswith("ENTRYPOINT ")]
    command = json.loads(line.removeprefix("ENTRYPOINT "))
    assert command[:2] == ["okt", "run"]
    return list(command[2:])


def test_the_images_entry_point_runs_the_arguments_of_deploy_and_of_okt_gen_deploy() -> None:
    (generated,) = manager.manager_manifests(
        name=harness.SERVICE_ACCOUNT,
        namespace=harness.OPERATOR_NAMESPACE,
        image="op:1",
        service_account="op",
        controllers=["memcached"],
    )[1:]
    for deployment in (operator_deployment(), generated):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]

        context = run_cli.run_command.make_context("run", [*entry_point(), *container["args"]])

        assert context.params["target"] == "/app/main.py"


def test_okt_run_refuses_a_mistyped_argument() -> None:
    with pytest.raises(click.UsageError):
        run_cli.run_command.make_context("run", ["/app/main.py", "--leader-elekt"])


ROLE_KINDS = ("ClusterRole", "Role")
STEP_TIMEOUT = 20.0
SUBJECT_ACCESS_REVIEW = okt.Kind("authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", False)


def rule_cases() -> list[Any]:
    """One case with the generated RBAC whole, then one per rule of its roles with that rule removed — but those of
    ``<account>-metrics-auth``: the operator needs them only to serve ``/metrics`` beyond loopback, and these runs
    serve it on loopback (without them, an operator serving it beyond loopback runs, with one warning at start:
    tests/integration/cli/test_permissions.py)."""
    cases = [pytest.param(None, id="whole")]
    for doc in documents("rbac.yaml"):
        if doc["kind"] in ROLE_KINDS and not doc["metadata"]["name"].endswith("-metrics-auth"):
            for index, rule in enumerate(doc["rules"]):
                removed = (doc["kind"], doc["metadata"]["name"], index)
                cases.append(pytest.param(removed, id=f"without-{'+'.join(rule['resources'])}"))
    return cases


def role_of(removed: tuple[str, str, int]) -> dict[str, Any]:
    """The role of deploy/rbac.yaml a ``removed`` (role kind, role name, rule index) takes a rule from."""
    role_kind, name, _ = removed
    (role,) = [doc for doc in documents("rbac.yaml") if (doc["kind"], doc["metadata"]["name"]) == (role_kind, name)]
    return role


@pytest.fixture(scope="module")
def deployed(bare_plane: envtest.ControlPlane) -> Iterator[tuple[okt.Client, okt.Kind]]:
    """The CRD, deploy/deployment.yaml and deploy/rbac.yaml created on the control plane (the apiserver validates
    every object)."""
    admin = okt.Client.from_kubeconfig(bare_plane.kubeconfig)
    kind = harness.apply_crd(admin)
    for doc in documents("deployment.yaml") + documents("rbac.yaml"):
        admin.create(doc)
    yield admin, kind
    admin.close()


def allowed(admin: okt.Client, user: envtest.TokenUser, rule: dict[str, Any], namespace: str) -> bool:
    """Whether ``user`` may use the first verb of ``rule`` on its first resource in ``namespace`` (on its first
    object, for a rule limited to some by name: the Lease ``okt run`` leads on)."""
    resource, _, subresource = rule["resources"][0].partition("/")
    attributes = {
        "group": rule["apiGroups"][0],
        "resource": resource,
        "subresource": subresource,
        "verb": rule["verbs"][0],
        "namespace": namespace,
        **({"name": rule["resourceNames"][0]} if rule.get("resourceNames") else {}),
    }
    review = admin.create(
        {
            "apiVersion": SUBJECT_ACCESS_REVIEW.api_version,
            "kind": SUBJECT_ACCESS_REVIEW.kind,
            "spec": {"user": user.name, "groups": list(user.groups), "resourceAttributes": attributes},
        },
        SUBJECT_ACCESS_REVIEW,
    )
    return bool(review["status"].get("allowed"))


@contextlib.contextmanager
def rbac_without(
    admin: okt.Client, user: envtest.TokenUser, removed: tuple[str, str, int] | None, namespace: str
) -> Iterator[None]:
    """The generated roles with the ``removed`` (role kind, role name, rule index) taken out, put back afterwards;
    returns once the authorizer has seen the change."""
    if removed is None:
        yield
        return
    role = role_of(removed)
    index = removed[2]
    meta, rules = role["metadata"], role["rules"]
    kind = admin.kind_of(role)
    rule = rules[index]
    where = meta.get("namespace", namespace)
    admin.patch(kind, meta["name"], {"rules": rules[:index] + rules[index + 1 :]}, meta.get("namespace"))
    try:
        wait_for(lambda: not allowed(admin, user, rule, where), timeout=10, message="the rule's removal to apply")
        yield
    finally:
        admin.patch(kind, meta["name"], {"rules": rules}, meta.get("namespace"))
        wait_for(lambda: allowed(admin, user, rule, where), timeout=10, message="the rule to be granted again")


def lifecycle(admin: okt.Client, memcacheds: harness.Memcacheds, timeout: float) -> None:
    """What the sample does for its users: converge, refuse a bad spec with a Warning Event, scale, clean up on
    deletion. Raises (``WaitTimeout``, ``AssertionError``) at the first step that does not happen in ``timeout``."""
    for name in ("first", "second"):
        memcacheds.create(name, size=2)
    memcacheds.create("floating", size=1, image="memcached:latest")
    memcacheds.wait_converged(["first", "second"], timeout=timeout)
    memcacheds.wait_ready_false("floating", timeout=timeout)

    def warned() -> bool:
        events, _ = admin.list(kinds.EVENT, memcacheds.namespace)
        return any(e["type"] == "Warning" and e["involvedObject"]["name"] == "floating" for e in events)

    wait_for(warned, timeout=timeout, message="a Warning Event about the floating image")
    memcacheds.update_spec("first", size=5)
    memcacheds.wait_converged(["first"], timeout=timeout)
    memcacheds.delete("second")
    memcacheds.wait_gone("second", timeout=timeout)
    assert set(memcacheds.inventory()) == {"first"}  # a refused spec never gets an entry


@pytest.mark.integration
@pytest.mark.parametrize("removed", rule_cases())
def test_the_generated_rbac_is_exactly_what_the_operator_needs(
    deployed: tuple[okt.Client, okt.Kind],
    operator_identity: envtest.TokenUser,
    bare_plane: envtest.ControlPlane,
    tmp_path: pathlib.Path,
    removed: tuple[str, str, int] | None,
) -> None:
    """Run as its ServiceAccount, the operator does its whole job with the generated RBAC (the control plane enforces
    OwnerReferencesPermissionEnforcement, as production clusters do); without any one rule it refuses to start and
    names that rule (its start-up permission check), before any request fails on a 403."""
    admin, kind = deployed
    namespace = f"rbac-{secrets.token_hex(4)}"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    memcacheds = harness.Memcacheds(admin, kind, namespace)
    failure: BaseException | None = None
    status: int | None = None
    with rbac_without(admin, operator_identity, removed, namespace):
        operator = harness.okt_run(
            bare_plane.kubeconfig_for(operator_identity),
            namespaces=[namespace],
            log_path=tmp_path / "operator.log",
            args=["--leader-elect", "--lease-namespace", harness.OPERATOR_NAMESPACE],
        )
        try:
            operator.start(ready_within=STEP_TIMEOUT)
            lifecycle(admin, memcacheds, STEP_TIMEOUT)
        except (waiting.WaitTimeout, AssertionError) as exc:
            failure = exc
        finally:
            status = operator.stop()
            for obj in admin.list(kind, namespace)[0]:  # leave nothing blocked on a finalizer
                admin.patch(kind, obj["metadata"]["name"], {"metadata": {"finalizers": None}}, namespace)
            admin.delete(kinds.NAMESPACE, namespace)
    log = (tmp_path / "operator.log").read_text(errors="replace").lower()

    if removed is None:
        assert failure is None, f"{failure}\n{log[-3000:]}"
        assert status == 0
        assert "forbidden" not in log
    else:
        assert failure is not None, f"the operator did its whole job without rule {removed}"
        assert status == 1, f"{failure}"
        missing = [line for line in log.splitlines() if "missing permission" in line]
        for resource in role_of(removed)["rules"][removed[2]]["resources"]:
            assert any(f" {resource} " in line for line in missing), f"{resource} not named in:\n{log[-3000:]}"
        assert "forbidden" not in log  # refused before any request failed
