"""A field of the spec given under two of the names its model reads it by, with different values, is found and named
by both keys; one given once, or twice alike, is not."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import okt
from okt.reconciler import reconciler as reconciler_mod
from okt.reconciler import spec_names


class ByName(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    replica_count: int = pydantic.Field(1, alias="replicaCount")


class ValidateByName(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(validate_by_name=True)
    replica_count: int = pydantic.Field(1, alias="replicaCount")


class AliasOnly(pydantic.BaseModel):
    replica_count: int = pydantic.Field(1, alias="replicaCount")


class Choices(pydantic.BaseModel):
    replica_count: int = pydantic.Field(1, validation_alias=pydantic.AliasChoices("replicaCount", "replicas"))


class Holder(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    pools: list[ByName] = []
    by_zone: dict[str, ByName] = pydantic.Field(default_factory=dict, alias="byZone")
    main: ByName | None = None


def _fields(model: type[pydantic.BaseModel], data: dict[str, Any]) -> list[str]:
    return [cause.field for cause in spec_names.given_twice(model, data)]


@pytest.mark.parametrize("model", [ByName, ValidateByName])
def test_a_field_given_by_its_alias_and_its_name_with_different_values_is_named_by_both(
    model: type[pydantic.BaseModel],
) -> None:
    [cause] = spec_names.given_twice(model, {"replicaCount": 2, "replica_count": 3})

    assert cause.reason == "FieldValueDuplicate"
    assert cause.field == "spec.replica_count"
    assert "spec.replicaCount" in cause.message
    assert "2" not in cause.message and "3" not in cause.message  # values are data, never quoted


def test_the_other_names_of_an_alias_choices_given_other_values_are_each_named() -> None:
    data = {"replicaCount": 2, "replicas": 3, "replica_count": 4}

    assert _fields(Choices, data) == ["spec.replicas"]  # no populate_by_name: the Python name is no name of it


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (ByName, {"replicaCount": 2, "replica_count": 2}),  # twice alike: one value
        (ByName, {"replica_count": 3}),
        (ByName, {"replicaCount": 3}),
        (AliasOnly, {"replicaCount": 2, "replica_count": 3}),  # an unknown key to this model, as to its CRD
        (Holder, {"pools": "not a list", "main": None}),
    ],
)
def test_a_field_given_once_or_twice_alike_is_not_refused(model: type[pydantic.BaseModel], data: Any) -> None:
    assert spec_names.given_twice(model, data) == []


def test_nested_models_fields_given_twice_are_found_in_lists_mappings_and_optionals() -> None:
    twice = {"replicaCount": 2, "replica_count": 3}
    data = {"pools": [{"replicaCount": 1}, twice], "byZone": {"a": twice}, "main": twice}

    assert _fields(Holder, data) == [
        "spec.pools[1].replica_count",
        "spec.byZone.a.replica_count",
        "spec.main.replica_count",
    ]


def test_a_nested_model_is_walked_through_the_key_its_parent_reads() -> None:
    data = {"byZone": {"a": {"replicaCount": 1}}, "by_zone": {"a": {"replicaCount": 2, "replica_count": 3}}}

    assert _fields(Holder, data) == ["spec.by_zone"]  # what by_zone holds is dropped whole


def test_a_spec_given_a_field_twice_is_an_invalid_spec_naming_both_keys_beside_the_model_s_own_refusals() -> None:
    with pytest.raises(okt.InvalidSpec) as refused:
        reconciler_mod.spec_from_data(ByName, {"replicaCount": "x", "replica_count": 3})

    assert refused.value.field == "spec.replica_count"
    assert [cause.field for cause in refused.value.causes] == ["spec.replica_count", "spec.replicaCount"]
    assert str(refused.value).startswith("spec.replica_count: the same field as spec.replicaCount, given another value")


def test_a_spec_given_a_field_twice_alike_is_read() -> None:
    assert reconciler_mod.spec_from_data(ByName, {"replicaCount": 2, "replica_count": 2}).replica_count == 2


class _Watched(dict[str, Any]):
    """Data that records each key looked up in it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.looked: list[str] = []

    def __contains__(self, key: object) -> bool:
        self.looked.append(str(key))
        return super().__contains__(key)

    def __getitem__(self, key: str) -> Any:
        self.looked.append(key)
        return super().__getitem__(key)


class Plain(pydantic.BaseModel):
    replicas: int = 1
    image: str = "x"


class Plainly(pydantic.BaseModel):
    pools: list[Plain] = []
    main: Plain | None = None


class HolderOfPlain(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    replica_count: int = pydantic.Field(1, alias="replicaCount")
    pools: list[Plain] = []


class Tree(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    child_nodes: list[Tree] = pydantic.Field(default_factory=list, alias="childNodes")


@pytest.mark.parametrize("model", [Plain, Plainly, AliasOnly])
def test_a_model_with_no_field_of_two_names_reads_nothing_of_the_spec(model: type[pydantic.BaseModel]) -> None:
    """Every reconcile reads its spec through given_twice: a model that can hold nothing twice costs no walk."""
    pool = _Watched(replicas=2, image="y")
    data = _Watched(pools=[pool], main=_Watched(replicas=3), replicaCount=2, replica_count=3)

    assert spec_names.given_twice(model, data) == []
    assert (data.looked, pool.looked) == ([], [])


def test_a_field_whose_value_holds_no_model_with_two_names_is_not_walked_into() -> None:
    pool = _Watched(replicas=2, image="y")
    data = {"replicaCount": 2, "replica_count": 3, "pools": [pool]}

    assert _fields(HolderOfPlain, data) == ["spec.replica_count"]
    assert pool.looked == []


def test_a_model_that_holds_itself_is_walked_to_the_field_given_twice() -> None:
    data = {"childNodes": [{"childNodes": [{"childNodes": [], "child_nodes": [{}]}]}]}

    assert _fields(Tree, data) == ["spec.childNodes[0].childNodes[0].child_nodes"]
