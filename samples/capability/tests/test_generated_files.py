"""The sample's generated files are what the generators produce today (golden files; ``OKT_UPDATE_GOLDEN=1``
rewrites them): ``deploy/crd.yaml`` from ``okt gen crd``, ``deploy/rbac.yaml`` from ``okt gen rbac`` (the commands
are in the sample's README)."""

from __future__ import annotations

import os
import pathlib

from okt.codegen import crd, rbac, yamlout
from okt.runtime import manager as runtime_manager
from samples.capability import main as operator

SAMPLE = pathlib.Path(__file__).resolve().parents[1]
ROOT = SAMPLE.parents[1]
UPDATE = os.environ.get("OKT_UPDATE_GOLDEN") == "1"
OPERATOR_NAMESPACE = "capability-operator-system"


def check_golden(path: pathlib.Path, generated: str) -> None:
    if UPDATE:
        path.write_text(generated, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == generated, (
        f"{path.relative_to(ROOT)} is stale: regenerate it (see samples/capability/README.md) or run the tests with "
        "OKT_UPDATE_GOLDEN=1"
    )


def test_the_crd_is_generated_from_the_reconcilers_models() -> None:
    check_golden(SAMPLE / "deploy" / "crd.yaml", yamlout.dump_all([crd.crd_for_reconciler(operator.CacheReconciler)]))


def test_the_rbac_is_generated_from_what_the_reconciler_owns_and_declares() -> None:
    documents = rbac.rbac_for_reconcilers(
        [operator.CacheReconciler],
        namespace=OPERATOR_NAMESPACE,
        cluster_wide=True,
        leader_elect=True,
        metrics_auth=True,
        # okt gen rbac --leader-elect names the Lease okt run derives from the same reconcilers.
        lease_name=runtime_manager.default_lease_name([operator.CacheReconciler.controller_name()]),
    )

    check_golden(SAMPLE / "deploy" / "rbac.yaml", yamlout.dump_all(documents))


def test_the_rbac_lets_the_operator_exec_in_the_pods_it_lists() -> None:
    role = next(doc for doc in rbac.rbac_for_reconciler(operator.CacheReconciler) if doc["kind"] == "Role")
    granted = {
        (group, resource, verb)
        for r in role["rules"]
        for group in r["apiGroups"]
        for resource in r["resources"]
        for verb in r["verbs"]
    }

    assert {("", "pods", "get"), ("", "pods", "list"), ("", "pods/exec", "create"), ("", "pods/exec", "get")} <= granted
