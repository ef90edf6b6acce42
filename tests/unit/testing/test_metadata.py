"""okt.testing.metadata: the names, labels and annotations the API server refuses, kind by kind (each answer pinned
against Kubernetes 1.20's API server)."""

from __future__ import annotations

import pytest

from okt import errors
from okt.kube import kinds
from okt.testing import metadata

NAMESPACE = kinds.NAMESPACE
EVENT = kinds.EVENT
PDB = kinds.BUILTIN[("policy/v1beta1", "PodDisruptionBudget")]
LEASE = kinds.BUILTIN[("coordination.k8s.io/v1", "Lease")]
CONFIG_MAP = kinds.BUILTIN[("v1", "ConfigMap")]


@pytest.mark.parametrize(
    ("kind", "name", "allowed"),
    [
        (NAMESPACE, "a.b", False),
        (NAMESPACE, "a" * 64, False),
        (NAMESPACE, "team-1", True),
        (EVENT, "Upper:case_b", True),
        (PDB, "Upper:case_b", True),
        (LEASE, "Upper", False),
        (LEASE, "a" * 64, True),
    ],
)
def test_each_kind_names_its_objects_by_its_own_rule(kind: kinds.Kind, name: str, allowed: bool) -> None:
    if allowed:
        metadata.check(kind, {"name": name})
    else:
        with pytest.raises(errors.Invalid, match=r"metadata\.name"):
            metadata.check(kind, {"name": name})


def test_every_refused_field_is_named_and_an_existing_object_s_name_is_not_checked() -> None:
    meta = {"name": "Upper", "labels": {"a/b/c": "x", "ok": "-x"}, "annotations": {"x" * 64: "v"}}

    with pytest.raises(errors.Invalid) as refused:
        metadata.check(kinds.CONFIG_MAP, meta)
    with pytest.raises(errors.Invalid) as unnamed:
        metadata.check(kinds.CONFIG_MAP, meta, name=False)

    assert str(refused.value).count("metadata.") == 4
    assert "metadata.name" not in str(unnamed.value) and str(unnamed.value).count("metadata.") == 3


def test_each_refusal_is_a_cause_naming_its_field_and_quoting_its_value_as_the_api_server_does() -> None:
    meta = {"name": "c", "labels": {"a": "x y"}, "annotations": {"a/b/c": "v", "big": "x" * 262144}}

    with pytest.raises(errors.Invalid) as refused:
        metadata.check(kinds.CONFIG_MAP, meta)

    causes = [(cause.reason, cause.field, cause.message.split(":")[:2]) for cause in refused.value.causes]
    assert causes == [
        ("FieldValueInvalid", "metadata.labels", ["Invalid value", ' "x y"']),
        ("FieldValueInvalid", "metadata.annotations", ["Invalid value", ' "a/b/c"']),
        ("FieldValueTooLong", "metadata.annotations", ["Too long", " must have at most 262144 bytes"]),
    ]


@pytest.mark.parametrize("reference", ["memcached", 3, None])
def test_an_owner_reference_that_is_no_object_is_refused_for_each_of_its_fields(reference: object) -> None:
    with pytest.raises(errors.Invalid) as refused:
        metadata.check(CONFIG_MAP, {"name": "settings", "ownerReferences": [reference]})
    fields = {cause.field for cause in refused.value.causes}
    assert fields == {f"metadata.ownerReferences.{field}" for field in ("apiVersion", "kind", "name", "uid")}
