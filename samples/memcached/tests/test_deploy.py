"""The in-cluster deployment files: ``deploy/rbac.yaml`` is enough for the whole lifecycle, and every file is
accepted by the apiserver and by ``okt run``."""

from __future__ import annotations

import pathlib
from typing import Any

import click
import pytest
import yaml

import okt
from okt.cli import run as run_cli
from okt.testing import envtest
from samples.memcached import harness

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

    context = run_cli.run_command.make_context("run", ["/app/operator.py", *container["args"]])

    assert context.params["leader_elect"] is True
    assert context.params["all_namespaces"] is True
    assert context.params["lease_namespace"] == harness.OPERATOR_NAMESPACE
    assert context.params["metrics_bind_address"] == ":8080"
    probes = {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"}


def test_okt_run_refuses_a_mistyped_argument() -> None:
    with pytest.raises(click.UsageError):
        run_cli.run_command.make_context("run", ["/app/operator.py", "--leader-elekt"])


@pytest.mark.integration
def test_the_generated_rbac_is_all_the_operator_needs(
    bare_plane: envtest.ControlPlane, operator_identity: envtest.TokenUser, tmp_path: pathlib.Path
) -> None:
    admin = okt.Client.from_kubeconfig(bare_plane.kubeconfig)
    kind = harness.apply_crd(admin)
    for doc in documents("deployment.yaml") + documents("rbac.yaml"):  # the apiserver validates every object
        admin.create(doc)
    memcacheds = harness.Memcacheds(admin, kind, "default")
    operator = harness.OperatorProcess.start(
        bare_plane.kubeconfig_for(operator_identity),
        log_path=tmp_path / "operator.log",
        args=["--leader-elect", "--lease-namespace", harness.OPERATOR_NAMESPACE],
    )
    try:
        for name in ("first", "second"):
            memcacheds.create(name, size=2)
        memcacheds.wait_converged(["first", "second"])
        memcacheds.update_spec("first", size=5)
        memcacheds.wait_converged(["first"])
        memcacheds.delete("second")
        memcacheds.wait_gone("second")
        assert set(memcacheds.inventory()) == {"first"}
    finally:
        status = operator.stop()
        admin.close()

    assert status == 0
    assert "forbidden" not in operator.log_tail(10_000).lower()
