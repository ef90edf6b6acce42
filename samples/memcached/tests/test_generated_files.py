"""The sample's generated files are what the generators produce today (golden files; ``OKT_UPDATE_GOLDEN=1``
rewrites them).

``deploy/crd.yaml`` comes from ``okt gen crd``, ``deploy/rbac.yaml`` from ``okt gen rbac`` and the
``resources/*_gen.py`` modules from ``okt gen resource`` (the commands are in the sample's README).
"""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from okt.codegen import crd, rbac, resource, yamlout
from okt.runtime import manager as runtime_manager
from samples.memcached.memcached_operator import MemcachedReconciler

SAMPLE = pathlib.Path(__file__).resolve().parents[1]
ROOT = SAMPLE.parents[1]
RESOURCES = SAMPLE / "memcached_operator" / "resources"
UPDATE = os.environ.get("OKT_UPDATE_GOLDEN") == "1"
OPERATOR_NAMESPACE = "memcached-operator-system"


def check_golden(path: pathlib.Path, generated: str) -> None:
    if UPDATE:
        path.write_text(generated, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == generated, (
        f"{path.relative_to(ROOT)} is stale: regenerate it (see samples/memcached/README.md) or run the tests with "
        "OKT_UPDATE_GOLDEN=1"
    )


def test_the_crd_is_generated_from_the_reconcilers_models() -> None:
    check_golden(SAMPLE / "deploy" / "crd.yaml", yamlout.dump_all([crd.crd_for_reconciler(MemcachedReconciler)]))


def test_the_rbac_is_generated_from_what_the_reconciler_owns() -> None:
    documents = rbac.rbac_for_reconcilers(
        [MemcachedReconciler],
        namespace=OPERATOR_NAMESPACE,
        cluster_wide=True,
        leader_elect=True,
        metrics_auth=True,
        # okt gen rbac --leader-elect names the Lease okt run derives from the same reconcilers.
        lease_name=runtime_manager.default_lease_name([MemcachedReconciler.controller_name()]),
    )

    check_golden(SAMPLE / "deploy" / "rbac.yaml", yamlout.dump_all(documents))


@pytest.mark.parametrize(
    ("resource_type", "manifest"),
    [("ConfigMap", "configmap.yaml"), ("Service", "service.yaml"), ("Deployment", "deployment.yaml")],
)
def test_the_resource_wrappers_are_generated_from_the_manifests(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, resource_type: str, manifest: str
) -> None:
    # Regenerate exactly as the README's command does (paths relative to the repository root), in a scratch tree.
    manifests = pathlib.Path("samples/memcached/manifests")
    out = pathlib.Path("samples/memcached/memcached_operator/resources")
    (tmp_path / manifests).mkdir(parents=True)
    shutil.copy(SAMPLE / "manifests" / manifest, tmp_path / manifests / manifest)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    monkeypatch.chdir(tmp_path)

    resource.generate(
        resource_type=resource_type,
        cr_kind="Memcached",
        group="cache",
        version="v1alpha1",
        manifest_path=manifests / manifest,
        out_dir=out,
    )

    gen_module, _ = resource.module_names(resource_type, "Memcached")
    check_golden(RESOURCES / f"{gen_module}.py", (tmp_path / out / f"{gen_module}.py").read_text(encoding="utf-8"))
