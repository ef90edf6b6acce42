"""A custom resource giving a field under both names its model reads (``populate_by_name``), with different values:
the CRD ``okt gen crd`` writes stores both, and okt reports the spec invalid instead of running one of them."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import okt
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition

pytestmark = pytest.mark.integration


class PoolSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    replica_count: int = pydantic.Field(1, alias="replicaCount")


class Pools(okt.Reconciler):
    api_version = "names.okt.io/v1"  # a group of its own: a new CRD in the Widget's group unsettles its REST mapping
    kind = "Pool"
    plural = "pools"
    spec_model = PoolSpec


def test_a_field_given_under_its_alias_and_its_name_with_different_values_is_an_invalid_spec_naming_both(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    pool_kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(Pools))
    body = {"apiVersion": Pools.api_version, "kind": "Pool", "metadata": {"name": "p", "namespace": namespace}}
    stored = kube.create({**body, "spec": {"replicaCount": 2, "replica_count": 3}}, pool_kind)
    assert stored["spec"] == {"replicaCount": 2, "replica_count": 3}  # the CRD declares both names: both are kept

    run = okt.reconcile(Pools(), kube, None, namespace, "p", kind=pool_kind)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP, run.outcome  # reported, waiting for a change of the object
    ready = condition(kube.get(pool_kind, "p", namespace), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith("spec.replica_count: the same field as spec.replicaCount, given another value")

    kube.patch(pool_kind, "p", {"spec": {"replica_count": None}}, namespace)  # given once: read
    fixed = okt.reconcile(Pools(), kube, None, namespace, "p", kind=pool_kind)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
