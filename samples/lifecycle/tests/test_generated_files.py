"""The lifecycle sample's ``deploy/crd.yaml`` and ``deploy/rbac.yaml`` are what ``okt gen crd`` and ``okt gen rbac``
produce today with the README's commands (``OKT_UPDATE_GOLDEN=1`` rewrites them)."""

from __future__ import annotations

import os
import pathlib

from okt.codegen import crd, rbac, yamlout
from samples.lifecycle.lifecycle_operator import WebAppReconciler

DEPLOY = pathlib.Path(__file__).resolve().parents[1] / "deploy"
UPDATE = os.environ.get("OKT_UPDATE_GOLDEN") == "1"


def check_golden(path: pathlib.Path, generated: str) -> None:
    if UPDATE:
        path.write_text(generated, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == generated, (
        f"{path.name} is stale: regenerate it (see samples/lifecycle/README.md) or run with OKT_UPDATE_GOLDEN=1"
    )


def test_the_crd_is_generated_from_the_reconcilers_models() -> None:
    check_golden(DEPLOY / "crd.yaml", yamlout.dump_all([crd.crd_for_reconciler(WebAppReconciler)]))


def test_the_rbac_is_generated_from_what_the_reconciler_owns() -> None:
    documents = rbac.rbac_for_reconcilers(
        [WebAppReconciler], namespace="lifecycle-system", cluster_wide=True, metrics_auth=True
    )

    check_golden(DEPLOY / "rbac.yaml", yamlout.dump_all(documents))
