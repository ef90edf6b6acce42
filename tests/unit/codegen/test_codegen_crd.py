"""``okt gen crd``: pydantic models -> a structural apiextensions.k8s.io/v1 CRD.

``golden/crd_memcached.yaml`` pins the whole CRD of a sample reconciler; ``OKT_UPDATE_GOLDEN=1`` regenerates it (see
``test_codegen_resource.py``). Every converted schema is also checked against Kubernetes' structural-schema rules.
"""

from __future__ import annotations

import datetime
import enum
import ipaddress
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import pydantic
import pytest
import yaml

import okt
from okt.codegen import crd, errors, yamlout
from okt.reconciler import report

GOLDEN = Path(__file__).parent / "golden" / "crd_memcached.yaml"
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
VALUE_VALIDATIONS = {"enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"}


def assert_value_validation(node: Mapping[str, Any], path: str) -> None:
    """A junctor's member: value validations, required fields and nested junctors only (no type, default, nullable,
    description or other structure), naming only properties the structural schema declares."""
    assert set(node) <= VALUE_VALIDATIONS | {"properties", "required", "not", "anyOf"}, f"{path}: {sorted(node)}"
    for child in node.get("properties", {}).values():
        assert set(child) <= VALUE_VALIDATIONS, f"{path}: {sorted(child)}"
    for member in [*node.get("anyOf", ()), *([node["not"]] if "not" in node else [])]:
        assert_value_validation(member, path)


def assert_structural(node: Mapping[str, Any], path: str = "openAPIV3Schema") -> None:
    """Kubernetes' structural-schema rules (apiextensions v1), as far as okt's schemas can break them."""
    for forbidden in (
        "$ref",
        "$defs",
        "definitions",
        "title",
        "oneOf",
        "not",
        "const",
        "prefixItems",
    ):
        assert forbidden not in node, f"{path}: {forbidden}"
    for member in node.get("anyOf", ()):
        assert_value_validation(member, f"{path}.anyOf")
        for name in member.get("properties", {}):
            assert name in node.get("properties", {}), f"{path}.anyOf: {name} is not a property"
    if not (node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")):
        assert node.get("type") in TYPES, f"{path}: no type"
    assert not ("properties" in node and "additionalProperties" in node), f"{path}: properties and additionalProperties"
    assert node.get("uniqueItems") is not True, f"{path}: uniqueItems"
    for member in node.get("allOf", []):
        # A junctor may hold value validations only (no type, default, nullable, description or structure).
        assert set(member) <= VALUE_VALIDATIONS, f"{path}: allOf holds {sorted(set(member) - VALUE_VALIDATIONS)}"
    for keyword in ("exclusiveMinimum", "exclusiveMaximum"):
        assert isinstance(node.get(keyword, True), bool), f"{path}: numeric {keyword}"
    if node.get("type") == "array":
        assert isinstance(node.get("items"), Mapping), f"{path}: array without items"
        assert_structural(node["items"], f"{path}[]")
    for name, child in (node.get("properties") or {}).items():
        assert_structural(child, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), Mapping):
        assert_structural(node["additionalProperties"], f"{path}.*")
    for key in node.get("required", []):
        assert key in node.get("properties", {}), f"{path}: required {key} is not a property"


def schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    converted = crd.structural_schema(model)
    assert_structural(converted)
    return converted


class Color(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Limits(pydantic.BaseModel):
    """Resource limits of one instance."""

    memory_mb: int = pydantic.Field(64, alias="memoryMB", ge=16, le=4096, description="Memory in MiB.")
    ratio: float = pydantic.Field(0.5, gt=0, lt=1)


class MemcachedSpec(pydantic.BaseModel):
    """The desired state of a Memcached cluster."""

    model_config = pydantic.ConfigDict(populate_by_name=True)

    size: int = pydantic.Field(ge=1, le=10, description="Number of instances.")
    image: str = pydantic.Field("memcached:1.6", min_length=1, max_length=255, pattern=r"^[a-z0-9./:-]+$")
    color: Color = Color.RED
    mode: Literal["fast", "safe"] = "safe"
    limits: Limits = pydantic.Field(default_factory=Limits)
    backup: Limits | None = None
    args: list[str] = pydantic.Field(default_factory=list, max_length=8)
    labels: dict[str, str] = {}
    port: int | str = 11211
    tags: set[str] = set()
    extra: dict[str, Any] = {}
    since: datetime.datetime | None = None


class MemcachedStatus(pydantic.BaseModel):
    """What the operator observed."""

    ready_replicas: int = pydantic.Field(0, alias="readyReplicas")
    nodes: list[str] = []


def test_required_fields_are_kept() -> None:
    assert schema(MemcachedSpec)["required"] == ["size"]


def test_model_and_field_descriptions_are_kept_and_titles_dropped() -> None:
    converted = schema(MemcachedSpec)
    assert converted["description"] == "The desired state of a Memcached cluster."
    assert converted["properties"]["size"]["description"] == "Number of instances."
    assert converted["properties"]["limits"]["description"] == "Resource limits of one instance."


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("size", {"description": "Number of instances.", "type": "integer", "minimum": 1, "maximum": 10}),
        (
            "image",
            {
                "type": "string",
                "default": "memcached:1.6",
                "minLength": 1,
                "maxLength": 255,
                "pattern": r"^[a-z0-9./:-]+$",
            },
        ),
        ("color", {"type": "string", "enum": ["red", "blue"], "default": "red"}),
        ("mode", {"type": "string", "enum": ["fast", "safe"], "default": "safe"}),
        ("args", {"type": "array", "maxItems": 8, "items": {"type": "string"}}),
        ("labels", {"type": "object", "default": {}, "additionalProperties": {"type": "string"}}),
        ("port", {"default": 11211, "x-kubernetes-int-or-string": True}),
        ("tags", {"type": "array", "default": [], "items": {"type": "string"}}),
        ("extra", {"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": True}),
        ("since", {"type": "string", "nullable": True}),
    ],
)
def test_fields_convert_to_their_structural_schema(field: str, expected: dict[str, Any]) -> None:
    assert schema(MemcachedSpec)["properties"][field] == expected


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (ipaddress.IPv4Address, {"type": "string", "format": "ipv4"}),
        (ipaddress.IPv6Address, {"type": "string"}),
        (uuid.UUID, {"type": "string"}),
        (pydantic.UUID4, {"type": "string"}),
        (pydantic.AnyUrl, {"type": "string", "minLength": 1}),
        (pydantic.SecretStr, {"type": "string", "format": "password"}),
    ],
)
def test_formats_are_kept_only_where_the_api_server_accepts_every_value_the_model_does(
    annotation: Any, expected: dict[str, Any]
) -> None:
    model = pydantic.create_model("Formatted", value=(annotation, ...))

    assert schema(model)["properties"]["value"] == expected


class Defaulted(pydantic.BaseModel):
    password: pydantic.SecretStr = pydantic.SecretStr("changeme")
    key: pydantic.SecretBytes = pydantic.SecretBytes(b"changeme")
    limit: float = float("inf")
    period: datetime.timedelta = datetime.timedelta(hours=1)
    color: Color = Color.BLUE
    limits: Limits = Limits(memoryMB=32)


def test_a_default_the_field_does_not_read_back_from_its_json_form_is_left_to_the_model() -> None:
    properties = schema(Defaulted)["properties"]

    assert {name for name, field in properties.items() if "default" in field} == {"period", "color", "limits"}
    assert (properties["period"]["default"], properties["color"]["default"]) == ("PT1H", "blue")
    assert properties["limits"]["default"] == {"memoryMB": 32, "ratio": 0.5}
    assert "changeme" not in yamlout.dump_all([schema(Defaulted)])


class Stamped(pydantic.BaseModel):
    uid: uuid.UUID = pydantic.Field(default_factory=uuid.uuid4)


class Required(pydantic.BaseModel):
    name: str


class Made(pydantic.BaseModel):
    limits: Limits = pydantic.Field(default_factory=Limits)
    backup: Limits | None = pydantic.Field(default_factory=Limits)
    stamped: Stamped = pydantic.Field(default_factory=Stamped)
    required: Required = pydantic.Field(default_factory=lambda: Required(name="x"))
    sized: Limits = pydantic.Field(default_factory=lambda: Limits(memoryMB=32))
    args: list[str] = pydantic.Field(default_factory=list)


def test_a_model_its_own_class_makes_by_default_factory_defaults_to_an_object_the_api_server_fills_in() -> None:
    properties = schema(Made)["properties"]

    assert {name: field["default"] for name, field in properties.items() if "default" in field} == {
        "limits": {},
        "backup": {},
    }
    assert properties["limits"]["properties"]["memoryMB"]["default"] == 64


class Stepped(pydantic.BaseModel):
    count: int = pydantic.Field(multiple_of=5)
    ratio: float = pydantic.Field(multiple_of=0.01)
    weight: float | None = pydantic.Field(default=None, multiple_of=0.5)


def test_multiple_of_is_kept_for_integers_and_left_to_the_model_for_floats() -> None:
    properties = schema(Stepped)["properties"]

    assert properties["count"] == {"type": "integer", "multipleOf": 5}
    assert properties["ratio"] == {"type": "number"}
    assert properties["weight"] == {"type": "number", "nullable": True}


class Bounded(pydantic.BaseModel):
    values: list[str] = pydantic.Field(min_length=1, max_length=3)
    distinct: set[str] = pydantic.Field(min_length=1, max_length=3)
    frozen: frozenset[int] = pydantic.Field(min_length=1, max_length=3)


def test_a_set_is_bounded_below_only_since_the_api_server_counts_duplicates() -> None:
    properties = schema(Bounded)["properties"]

    assert (properties["values"]["minItems"], properties["values"]["maxItems"]) == (1, 3)
    for name in ("distinct", "frozen"):
        assert properties[name]["minItems"] == 1
        assert "maxItems" not in properties[name]


class Anything(pydantic.BaseModel):
    value: Any = "unset"
    values: list[Any] = []


def test_any_takes_every_value_null_included() -> None:
    properties = schema(Anything)["properties"]

    assert properties["value"] == {"nullable": True, "x-kubernetes-preserve-unknown-fields": True}
    assert properties["values"]["items"] == {"nullable": True, "x-kubernetes-preserve-unknown-fields": True}


def test_nested_models_are_inlined_with_aliases_and_exclusive_bounds() -> None:
    assert schema(MemcachedSpec)["properties"]["limits"] == {
        "description": "Resource limits of one instance.",
        "type": "object",
        "default": {},
        "properties": {
            "memoryMB": {
                "description": "Memory in MiB.",
                "type": "integer",
                "default": 64,
                "minimum": 16,
                "maximum": 4096,
            },
            "ratio": {
                "type": "number",
                "default": 0.5,
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1,
                "exclusiveMaximum": True,
            },
        },
    }


def test_optional_model_is_nullable_without_a_null_default() -> None:
    backup = schema(MemcachedSpec)["properties"]["backup"]
    assert backup["nullable"] is True
    assert backup["type"] == "object"
    assert "default" not in backup
    assert set(backup["properties"]) == {"memoryMB", "ratio"}


def test_an_optional_enum_checks_its_values_where_a_null_passes() -> None:
    class Spec(pydantic.BaseModel):
        color: Color | None = None
        mode: Literal["fast", "safe"] | None = "safe"

    properties = schema(Spec)["properties"]

    assert properties["color"] == {"type": "string", "nullable": True, "allOf": [{"enum": ["red", "blue"]}]}
    assert properties["mode"] == {
        "type": "string",
        "nullable": True,
        "allOf": [{"enum": ["fast", "safe"]}],
        "default": "safe",
    }


def test_a_literal_that_lists_none_is_a_nullable_enum() -> None:
    class Spec(pydantic.BaseModel):
        mode: Literal["fast", "safe", None] = "safe"
        level: Literal[1, 2, None]

    properties = schema(Spec)["properties"]

    assert properties["mode"] == {
        "type": "string",
        "nullable": True,
        "allOf": [{"enum": ["fast", "safe"]}],
        "default": "safe",
    }
    assert properties["level"] == {"type": "integer", "nullable": True, "allOf": [{"enum": [1, 2]}]}


class Tree(pydantic.BaseModel):
    """A recursive node."""

    name: str
    children: list[Tree] = []


class Forest(pydantic.BaseModel):
    trees: list[Tree]


def test_recursive_models_are_cut_with_preserved_unknown_fields() -> None:
    tree = schema(Forest)["properties"]["trees"]["items"]
    assert tree["properties"]["name"] == {"type": "string"}
    assert tree["properties"]["children"]["items"] == {
        "description": "A recursive node.",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


class Open(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    known: int = 0


class Closed(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    known: int = 0


class Ignoring(pydantic.BaseModel):
    known: int = 0


class ClosedEmpty(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


@pytest.mark.parametrize(("model", "preserved"), [(Open, True), (Closed, True), (ClosedEmpty, True), (Ignoring, False)])
def test_a_model_that_allows_or_forbids_extra_fields_preserves_unknown_ones(
    model: type[pydantic.BaseModel], preserved: bool
) -> None:
    converted = schema(model)
    assert converted.get("x-kubernetes-preserve-unknown-fields", False) is preserved
    assert "additionalProperties" not in converted


class BoundMembers(pydantic.BaseModel):
    slot: Annotated[int, pydantic.Field(gt=0, le=9)] | Annotated[str, pydantic.Field(max_length=3, pattern=r"^\d+$")]
    name: int | pydantic.constr(min_length=1) | None = None
    peer: int | ipaddress.IPv4Address = 0
    host: int | ipaddress.IPv6Address = 0


def test_the_members_of_an_int_or_string_keep_their_constraints() -> None:
    properties = schema(BoundMembers)["properties"]
    assert properties["slot"] == {
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 9,
        "maxLength": 3,
        "pattern": r"^\p{Nd}+$",
        "x-kubernetes-int-or-string": True,
    }
    assert properties["name"] == {"nullable": True, "minLength": 1, "x-kubernetes-int-or-string": True}
    assert properties["peer"] == {"format": "ipv4", "default": 0, "x-kubernetes-int-or-string": True}
    assert properties["host"] == {"default": 0, "x-kubernetes-int-or-string": True}


class Numbers(pydantic.BaseModel):
    amount: int | float = pydantic.Field(default=1, gt=0, le=100)
    scale: Annotated[int, pydantic.Field(ge=1)] | Annotated[float, pydantic.Field(ge=1)] | None = None
    ratio: float | int = 0.5


def test_int_or_float_is_a_number_with_the_bounds_of_the_union_or_of_its_members() -> None:
    properties = schema(Numbers)["properties"]
    assert properties["amount"] == {
        "type": "number",
        "default": 1,
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 100,
    }
    assert properties["scale"] == {"type": "number", "nullable": True, "minimum": 1}
    assert properties["ratio"] == {"type": "number", "default": 0.5}


class UnevenNumbers(pydantic.BaseModel):
    scale: Annotated[int, pydantic.Field(ge=1)] | float = 1


class Cat(pydantic.BaseModel):
    """A cat."""

    pet: Literal["cat"]
    name: str = pydantic.Field(min_length=1)
    lives: int = 9


class Dog(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    pet: Literal["dog", "puppy"]
    name: str = pydantic.Field(min_length=1)
    good: bool = True


class Pets(pydantic.BaseModel):
    pet: Annotated[Cat | Dog, pydantic.Field(discriminator="pet", description="The pet.")]
    spare: Annotated[Cat | Dog, pydantic.Field(discriminator="pet")] | None = None


def test_a_discriminated_union_is_one_object_that_checks_each_members_fields_by_its_tag() -> None:
    properties = schema(Pets)["properties"]
    assert properties["pet"] == {
        "description": "The pet.",
        "type": "object",
        "properties": {
            "pet": {"type": "string", "enum": ["cat", "dog", "puppy"]},
            "name": {"type": "string", "minLength": 1},
            "lives": {"type": "integer"},
            "good": {"type": "boolean"},
        },
        "required": ["pet", "name"],
        "anyOf": [
            {"properties": {"pet": {"enum": ["cat"]}}, "required": ["pet", "name"]},
            {
                "properties": {"pet": {"enum": ["dog", "puppy"]}},
                "required": ["pet", "name"],
                "not": {"anyOf": [{"required": ["lives"]}]},
            },
        ],
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert properties["spare"]["nullable"] is True
    assert properties["spare"]["anyOf"] == properties["pet"]["anyOf"]


class Named(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    pet_kind: Literal["named"] = pydantic.Field(alias="petKind")
    mode: Literal["calm", "wild"] = "calm"


class Numbered(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    pet_kind: Literal["numbered"] = pydantic.Field(alias="petKind")
    mode: Literal["odd", "even"]


class Tagged(pydantic.BaseModel):
    pet: Annotated[Named | Numbered, pydantic.Field(discriminator="pet_kind")]


def test_members_of_a_discriminated_union_may_give_a_field_their_own_literal_values_and_read_it_by_two_names() -> None:
    pet = schema(Tagged)["properties"]["pet"]
    assert pet["properties"] == {
        "petKind": {"type": "string", "enum": ["named", "numbered"]},
        "pet_kind": {"type": "string", "enum": ["named", "numbered"]},
        "mode": {"type": "string", "enum": ["calm", "wild", "odd", "even"]},
    }
    assert "required" not in pet
    assert pet["anyOf"] == [
        {
            "properties": {
                "petKind": {"enum": ["named"]},
                "pet_kind": {"enum": ["named"]},
                "mode": {"enum": ["calm", "wild"]},
            }
        },
        {
            "properties": {
                "petKind": {"enum": ["numbered"]},
                "pet_kind": {"enum": ["numbered"]},
                "mode": {"enum": ["odd", "even"]},
            },
            "required": ["mode"],
        },
    ]


class Bird(pydantic.BaseModel):
    pet: Literal["bird"]
    name: int


class Clash(pydantic.BaseModel):
    pet: Annotated[Cat | Bird, pydantic.Field(discriminator="pet")]


class Untagged(pydantic.BaseModel):
    pet: Cat | Dog


class Keyed(pydantic.BaseModel):
    weights: dict[Literal["cpu", 'say "hi"'], int] = {}
    colours: dict[Color, str] | None = pydantic.Field(default=None, max_length=1)
    anything: dict[Literal["a", "b"], Any] = {}
    only: dict[Literal["cpu"], int] = {}


def test_a_map_with_literal_keys_holds_at_most_that_many_and_says_which_in_a_validation_rule() -> None:
    properties = schema(Keyed)["properties"]
    assert properties["weights"] == {
        "type": "object",
        "default": {},
        "maxProperties": 2,
        "additionalProperties": {"type": "integer"},
        "x-kubernetes-validations": [
            {
                "rule": 'self.all(k, k in ["cpu", "say \\"hi\\""])',
                "message": 'the keys must be among "cpu", "say \\"hi\\""',
            }
        ],
    }
    assert properties["colours"]["maxProperties"] == 1
    assert properties["colours"]["x-kubernetes-validations"] == [
        {"rule": 'self.all(k, k in ["red", "blue"])', "message": 'the keys must be among "red", "blue"'}
    ]
    assert properties["anything"] == {
        "type": "object",
        "default": {},
        "maxProperties": 2,
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert properties["only"]["maxProperties"] == 1
    assert properties["only"]["x-kubernetes-validations"] == [
        {"rule": 'self.all(k, k in ["cpu"])', "message": 'the keys must be among "cpu"'}
    ]


PatternKeys = pydantic.create_model("PatternKeys", labels=(dict[pydantic.constr(pattern=r"^[a-z]+$"), int], {}))
ShortKeys = pydantic.create_model(
    "ShortKeys", labels=(dict[Annotated[str, pydantic.StringConstraints(max_length=3)], str], {})
)
BoundedPatternKeys = pydantic.create_model(
    "BoundedPatternKeys", labels=(dict[Annotated[str, pydantic.Field(pattern="^a", min_length=2)], str], {})
)
UuidKeys = pydantic.create_model("UuidKeys", owners=(dict[uuid.UUID, str], {}))
IntegerKeys = pydantic.create_model("IntegerKeys", ports=(dict[int, str], {}))
KEYS_UNCHECKED = (
    "the API server checks the keys of a map against nothing but a list of values (Literal or Enum keys) and would "
    "store a key the model refuses: use dict[str, X] and check the keys in check(), or a list of models whose name "
    "field carries the constraint"
)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (PatternKeys, f"spec.labels: keys with pattern '^[a-z]+$': {KEYS_UNCHECKED}"),
        (ShortKeys, f"spec.labels: keys with max_length=3: {KEYS_UNCHECKED}"),
        (BoundedPatternKeys, f"spec.labels: keys with pattern '^a', min_length=2: {KEYS_UNCHECKED}"),
        (UuidKeys, f"spec.owners: keys with format uuid: {KEYS_UNCHECKED}"),
        (IntegerKeys, f"spec.ports: keys of type integer: {KEYS_UNCHECKED}"),
    ],
)
def test_a_map_whose_keys_are_constrained_otherwise_than_by_a_list_is_refused_naming_the_field(
    model: type[pydantic.BaseModel], message: str
) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.structural_schema(model)
    assert str(caught.value) == message


BLANK = r"[\s\v\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
SOLID = "[^" + BLANK[1:]


class Stripped(pydantic.BaseModel):
    name: pydantic.constr(strip_whitespace=True, min_length=1)  # type: ignore[valid-type]
    pair: Annotated[str, pydantic.Field(min_length=2), pydantic.StringConstraints(strip_whitespace=True)]
    short: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, max_length=3)]
    between: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, min_length=2, max_length=4)]
    long: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, max_length=4096)]
    plain: Annotated[str, pydantic.StringConstraints(strip_whitespace=True)]


class StrippedByConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(str_strip_whitespace=True)

    name: str = pydantic.Field(min_length=1)


def test_the_length_of_a_string_pydantic_strips_is_a_pattern_that_measures_it_without_its_white_space() -> None:
    properties = schema(Stripped)["properties"]
    assert properties["name"] == {"type": "string", "minLength": 1, "pattern": SOLID}
    assert properties["pair"] == {"type": "string", "minLength": 2, "pattern": f"{SOLID}(?s:.){{0,}}{SOLID}"}
    assert properties["short"] == {
        "type": "string",
        "pattern": f"^{BLANK}*(?:{SOLID}|{SOLID}(?s:.){{0,1}}{SOLID})?{BLANK}*$",
    }
    assert properties["between"] == {
        "type": "string",
        "minLength": 2,
        "pattern": f"^{BLANK}*(?:{SOLID}(?s:.){{0,2}}{SOLID}){BLANK}*$",
    }
    assert properties["long"] == {"type": "string"}
    assert properties["plain"] == {"type": "string"}
    assert schema(StrippedByConfig)["properties"]["name"] == {"type": "string", "minLength": 1, "pattern": SOLID}


StrippedPattern = pydantic.create_model(
    "StrippedPattern", code=(pydantic.constr(strip_whitespace=True, pattern="^[a-z]+$"), "a")
)


def test_a_pattern_pydantic_matches_against_the_stripped_string_is_refused_naming_the_field() -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.structural_schema(StrippedPattern)
    assert str(caught.value) == (
        "spec.code: pattern '^[a-z]+$' with strip_whitespace: pydantic matches it against the stripped value, the API "
        "server against the value as written (and would refuse what the model takes): write the pattern for the value "
        r"as written (like ^\s*[a-z]+\s*$) and strip it in your code, or check the pattern in check()"
    )


class Blob(pydantic.BaseModel):
    data: bytes = pydantic.Field(min_length=5, max_length=8)


def test_the_length_of_bytes_is_bounded_in_characters_of_up_to_four_bytes() -> None:
    assert schema(Blob)["properties"]["data"] == {"type": "string", "minLength": 2, "maxLength": 8}


class UnionBound(pydantic.BaseModel):
    port: int | str = pydantic.Field(default=80, ge=1)


class UnionLength(pydantic.BaseModel):
    port: int | str | None = pydantic.Field(default=None, max_length=5)


class EnumMember(pydantic.BaseModel):
    port: Literal["http", "https"] | int = "http"


class FloatOrStr(pydantic.BaseModel):
    value: float | str


class Pair(pydantic.BaseModel):
    value: tuple[int, str]


class Nothing(pydantic.BaseModel):
    value: None = None


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (Pair, "spec.value: fixed-length tuples have no structural schema; use list[X]"),
        (
            Clash,
            "spec.pet: name is a different field in Cat and Bird, and one object of the CRD holds every member's "
            "fields: give it one type and one set of constraints in each member (its Literal values may differ), or "
            "another name",
        ),
        (
            Untagged,
            "spec.pet: a union of Cat, Dog has no structural schema: make it a discriminated union, "
            'Annotated[Cat | Dog, Field(discriminator="kind")], each member with a Literal field of that name',
        ),
        (
            FloatOrStr,
            "spec.value: a union of number, string has no structural schema (the API server checks one type per "
            "field; only Optional[X], int | str, int | float and discriminated unions of models have one): use one "
            "type, or a field for each",
        ),
        (
            UnevenNumbers,
            "spec.scale: the members of int | float are bounded differently, and the API server checks one number: "
            "bound the union as a whole (int | float = Field(ge=...)), or use float",
        ),
        (
            UnionBound,
            "spec.port: Field(ge=...) on a union applies to each of its members, and pydantic refuses with a TypeError "
            "a value it cannot compare: constrain the member it is meant for, like Annotated[int, Field(ge=...)] | str",
        ),
        (
            UnionLength,
            "spec.port: Field(max_length=...) on a union applies to each of its members, and pydantic refuses with a "
            "TypeError a value it cannot compare: constrain the member it is meant for, like "
            "Annotated[int, Field(ge=...)] | str",
        ),
        (
            EnumMember,
            "spec.port: an enum of the string member of int | str has no structural schema (the API server would "
            "check the other member's values against it too): declare two fields, or leave the values to check()",
        ),
        (Nothing, "spec.value: a field that can only be None has no structural schema"),
    ],
)
def test_models_without_a_structural_schema_are_refused_naming_the_field(
    model: type[pydantic.BaseModel], message: str
) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.structural_schema(model)
    assert str(caught.value) == message


class BelowMinimum(pydantic.BaseModel):
    size: int = pydantic.Field(default=0, ge=1)


class OutsideLiteral(pydantic.BaseModel):
    mode: Literal["fast", "safe"] = "slow"  # type: ignore[assignment]


class NestedTooShort(pydantic.BaseModel):
    class Inner(pydantic.BaseModel):
        name: str = pydantic.Field(default="", min_length=1)

    inner: Inner | None = None


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (BelowMinimum, "spec: BelowMinimum.size: its default 0 is one the field refuses (Input should be greater than"),
        (OutsideLiteral, "spec: OutsideLiteral.mode: its default 'slow' is one the field refuses (Input should be"),
        (NestedTooShort, "spec: Inner.name: its default '' is one the field refuses (String should have at least 1"),
    ],
)
def test_a_default_its_field_refuses_is_refused_naming_the_field(model: type[pydantic.BaseModel], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.structural_schema(model)
    assert str(caught.value).startswith(message)


class SloppyNone(pydantic.BaseModel):
    size: int = None  # type: ignore[assignment]


def test_a_none_default_of_a_field_that_refuses_none_is_left_out_as_before() -> None:
    assert crd.structural_schema(SloppyNone)["properties"]["size"] == {"type": "integer"}


def memcached_crd(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "group": "cache.example.com",
        "version": "v1alpha1",
        "kind": "Memcached",
        "plural": "memcacheds",
        "scope": "Namespaced",
        "spec_model": MemcachedSpec,
        "status_model": MemcachedStatus,
        "printer_columns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
    }
    arguments.update(overrides)
    return crd.crd_from_models(**arguments)


def test_crd_matches_the_golden_file() -> None:
    produced = yamlout.dump_all([memcached_crd()])
    if os.environ.get("OKT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(produced, encoding="utf-8")
    assert produced == GOLDEN.read_text(encoding="utf-8")


def test_crd_names_scope_version_and_status_subresource() -> None:
    definition = memcached_crd(scope="Cluster")
    assert definition["apiVersion"] == "apiextensions.k8s.io/v1"
    assert definition["metadata"]["name"] == "memcacheds.cache.example.com"
    assert definition["spec"]["names"] == {
        "kind": "Memcached",
        "listKind": "MemcachedList",
        "plural": "memcacheds",
        "singular": "memcached",
    }
    assert definition["spec"]["scope"] == "Cluster"
    (version,) = definition["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    root = version["schema"]["openAPIV3Schema"]
    assert_structural(root)
    assert root["required"] == ["spec"]


def test_printer_columns_are_ready_reason_extra_then_age() -> None:
    (version,) = memcached_crd()["spec"]["versions"]
    assert version["additionalPrinterColumns"] == [
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Reason", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].reason'},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def status_of(definition: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return status


def test_status_without_a_model_holds_conditions_and_observed_generation_and_preserves_the_rest() -> None:
    status = status_of(memcached_crd(status_model=None))
    assert status["type"] == "object"
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert set(status["properties"]) == {"conditions", "observedGeneration"}
    conditions = status["properties"]["conditions"]
    assert conditions["type"] == "array"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert set(conditions["items"]["properties"]) == {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert status["properties"]["observedGeneration"]["type"] == "integer"


def test_status_model_gets_conditions_and_observed_generation_added() -> None:
    status = status_of(memcached_crd())
    assert list(status["properties"]) == ["readyReplicas", "nodes", "conditions", "observedGeneration"]
    assert_structural(status)


class ConditionOfTheModel(pydantic.BaseModel):
    type: str
    status: str


class ModelConditions(pydantic.BaseModel):
    conditions: list[dict[str, Any]] = []


class TypedModelConditions(pydantic.BaseModel):
    conditions: list[ConditionOfTheModel] | None = None


class OktModelConditions(pydantic.BaseModel):
    conditions: list[okt.Condition] = []


@pytest.mark.parametrize("model", [ModelConditions, TypedModelConditions, OktModelConditions])
def test_conditions_the_status_model_declares_stay_a_list_merged_by_type(model: type[pydantic.BaseModel]) -> None:
    status = status_of(memcached_crd(status_model=model))
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["properties"]["type"]["type"] == "string"
    assert "type" in conditions["items"]["required"]
    assert_structural(status)


class Endpoint(pydantic.BaseModel):
    host_name: str = pydantic.Field(default="", serialization_alias="hostName")
    port: int = pydantic.Field(default=0, validation_alias="portNumber")


class WrittenStatus(pydantic.BaseModel):
    endpoints: list[Endpoint] = []
    ready_replicas: int = pydantic.Field(default=0, serialization_alias="readyReplicas")


def test_the_status_declares_each_field_under_the_name_okt_writes_it_by() -> None:
    """okt writes the status as the model dumps it (``by_alias``, the serialization alias): a nested field declared
    only under the name the model reads would be pruned by the API server, and its default added under that name."""
    written = report.status_fields_view(
        {"endpoints": [Endpoint(host_name="db", port=5432)], "ready_replicas": 2}, WrittenStatus
    )
    status = crd.status_schema(WrittenStatus)

    endpoint = status["properties"]["endpoints"]["items"]["properties"]
    assert set(written["endpoints"][0]) <= set(endpoint)
    assert set(written) <= set(status["properties"])
    assert endpoint["hostName"] == endpoint["host_name"] == {"type": "string"}  # no default under a name not read
    assert "default" not in status["properties"]["readyReplicas"]
    assert (
        WrittenStatus.model_validate({"endpoints": [{"host_name": "db", "portNumber": 5432}]}).endpoints[0].port == 5432
    )
    assert_structural(status)


def test_spec_without_a_model_accepts_any_object() -> None:
    definition = memcached_crd(spec_model=None)
    root = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["properties"]["spec"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert "required" not in root


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([{"name": "Size", "type": "integer"}], "printer column #1 lacks jsonPath"),
        (
            [{"name": "Size", "type": "int", "jsonPath": ".spec.size"}],
            "printer column #1 (Size): type 'int' is not one of ",
        ),
        (
            [{"name": "Size", "type": "integer", "jsonPath": "spec.size"}],
            "printer column #1 (Size): jsonPath must start",
        ),
        (
            [{"name": "Age", "type": "date", "jsonPath": ".metadata.x"}],
            "printer column #1: a column named 'Age' already",
        ),
        (
            [{"name": "S", "type": "integer", "jsonPath": ".s", "colour": 1}],
            "printer column #1 (S): unknown keys colour",
        ),
        (
            [{"name": "S", "type": "integer", "jsonPath": ".s", "priority": "high"}],
            "printer column #1 (S): priority 'high' is not a whole number",
        ),
        (
            [{"name": "S", "type": "number", "jsonPath": ".s", "format": "percent"}],
            "printer column #1 (S): format 'percent' is not one of ",
        ),
        (
            [{"name": "Memory", "type": "integer", "jsonPath": ".spec.memory_mb"}],
            "printer column #1 (Memory): jsonPath .spec.memory_mb names no field of the schema ('memory_mb' is not one "
            "of ",
        ),
        (
            [{"name": "Size", "type": "integer", "jsonPath": ".spec.sise"}],
            "printer column #1 (Size): jsonPath .spec.sise names no field of the schema ('sise' is not one of ",
        ),
        (
            [{"name": "Max", "type": "integer", "jsonPath": ".spec.limits.maxConnections"}],
            "printer column #1 (Max): jsonPath .spec.limits.maxConnections names no field of the schema",
        ),
        (
            [{"name": "Image", "type": "integer", "jsonPath": ".spec.image"}],
            "printer column #1 (Image): type integer cannot show .spec.image, a field of type string (the column would "
            "be empty or <invalid> for every object): make the column's type string",
        ),
        (
            [{"name": "Size", "type": "date", "jsonPath": ".spec.size"}],
            "printer column #1 (Size): type date cannot show .spec.size, a field of type integer (the column would be "
            "empty or <invalid> for every object): make the column's type integer",
        ),
        (
            [{"name": "Ratio", "type": "boolean", "jsonPath": ".spec.limits.ratio"}],
            "printer column #1 (Ratio): type boolean cannot show .spec.limits.ratio, a field of type number",
        ),
        (
            [{"name": "Limits", "type": "number", "jsonPath": ".spec.limits"}],
            "printer column #1 (Limits): type number cannot show .spec.limits, a field of type object",
        ),
        (
            [{"name": "Spec", "type": "string", "jsonPath": ".specs"}],
            "printer column #1 (Spec): jsonPath .specs names no field of the schema ('specs' is not one of apiVersion, "
            "kind, metadata, spec, status)",
        ),
    ],
)
def test_invalid_printer_columns_are_refused(columns: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        memcached_crd(printer_columns=columns)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    "json_path",
    [
        ".spec.limits.memoryMB",
        ".spec.labels.app",
        ".spec.extra.anything.below",
        ".spec.args[0]",
        ".spec['size']",
        ".status.readyReplicas",
        ".status.anything",
        ".metadata.labels.app",
    ],
)
def test_printer_columns_may_name_declared_fields_map_keys_and_preserved_fields(json_path: str) -> None:
    column = {"name": "Column", "type": "string", "jsonPath": json_path}
    (version,) = memcached_crd(printer_columns=[column])["spec"]["versions"]
    assert column in version["additionalPrinterColumns"]


@pytest.mark.parametrize(
    ("column_type", "json_path"),
    [
        ("integer", ".spec.size"),
        ("number", ".spec.size"),
        ("integer", ".spec.limits.ratio"),
        ("number", ".spec.limits.ratio"),
        ("string", ".spec.size"),
        ("string", ".spec.limits"),
        ("date", ".spec.since"),
        ("integer", ".spec.port"),
        ("integer", ".spec.args[0]"),
        ("boolean", ".spec.labels.enabled"),
        ("integer", ".status.anything"),
    ],
)
def test_printer_columns_may_show_fields_of_a_type_they_can_show_or_one_unknown(
    column_type: str, json_path: str
) -> None:
    column = {"name": "Column", "type": column_type, "jsonPath": json_path}
    (version,) = memcached_crd(printer_columns=[column])["spec"]["versions"]
    assert column in version["additionalPrinterColumns"]


def test_printer_column_paths_are_checked_against_the_stored_version_only() -> None:
    class Older(pydantic.BaseModel):
        replicas: int = 1

    column = {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    definition = memcached_crd(printer_columns=[column], other_versions={"v1": Older}, conversion_client_config={})

    assert all(column in version["additionalPrinterColumns"] for version in definition["spec"]["versions"])


class MemcachedReconciler(okt.Reconciler):
    api_version = "cache.example.com/v1alpha1"
    kind = "Memcached"
    spec_model = MemcachedSpec
    status_model = MemcachedStatus
    printer_columns: ClassVar = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({"plural": "Memcacheds"}, "invalid plural 'Memcacheds': expected a lowercase DNS label such as memcacheds"),
        ({"plural": "mem.cacheds"}, "invalid plural 'mem.cacheds': expected a lowercase DNS label such as memcacheds"),
        ({"kind": "Mem_cached"}, "invalid kind 'Mem_cached': expected a name such as Memcached"),
        ({"group": "cache"}, "invalid group 'cache': expected a DNS name with a dot, such as cache.example.com"),
        ({"version": "V1"}, "invalid version 'V1': expected a lowercase DNS label such as v1alpha1"),
        ({"other_versions": {"1.0": None}}, "invalid version '1.0': expected a lowercase DNS label such as v1alpha1"),
    ],
)
def test_names_the_api_server_refuses_are_refused(names: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        memcached_crd(**names)
    assert str(caught.value) == message


class MemcachedSpecAlpha(pydantic.BaseModel):
    size: int = 1


class UnconvertedMemcached(okt.Reconciler):
    api_version = "cache.example.com/v1beta1"
    kind = "Memcached"
    spec_model = MemcachedSpec
    spec_models: ClassVar = {"v1alpha1": MemcachedSpecAlpha}


def test_versions_whose_spec_schemas_differ_need_converters() -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.crd_for_reconciler(UnconvertedMemcached)
    assert str(caught.value).startswith(
        "Memcached: the spec schema of version v1alpha1 differs from the stored version v1beta1's, and without "
        "converters"
    )


def test_versions_whose_spec_schemas_are_the_same_need_no_converters() -> None:
    class Described(MemcachedSpec):
        """The same fields, described otherwise."""

    definition = memcached_crd(other_versions={"v1": Described})

    assert [version["name"] for version in definition["spec"]["versions"]] == ["v1alpha1", "v1"]
    assert "conversion" not in definition["spec"]


def test_crd_for_reconciler_reads_the_class_attributes() -> None:
    assert crd.crd_for_reconciler(MemcachedReconciler) == memcached_crd()


class ClusterThing(okt.Reconciler):
    api_version = "infra.example.com/v1"
    kind = "ClusterThing"
    plural = "clusterthingies"
    namespaced = False


def test_crd_for_reconciler_honours_plural_and_scope() -> None:
    definition = crd.crd_for_reconciler(ClusterThing)
    assert definition["metadata"]["name"] == "clusterthingies.infra.example.com"
    assert definition["spec"]["scope"] == "Cluster"


class CoreGroup(okt.Reconciler):
    api_version = "v1"
    kind = "Thing"


class BadModel(okt.Reconciler):
    api_version = "x.example.com/v1"
    kind = "Thing"


# Set once the class exists: okt.Reconciler refuses it in a class body.
BadModel.spec_model = dict  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (
            CoreGroup,
            "CoreGroup reconciles Thing in 'v1', an API group of Kubernetes itself: a built-in kind has no CRD to "
            "generate, and a custom resource needs a group of its own (like cache.example.com)",
        ),
        (BadModel, "BadModel.spec_model must be a pydantic model class or None"),
    ],
)
def test_crd_for_reconciler_refuses_malformed_classes(cls: type[okt.Reconciler], message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        crd.crd_for_reconciler(cls)
    assert str(caught.value) == message


def test_crd_yaml_round_trips() -> None:
    text = yamlout.dump_all([memcached_crd()])
    assert yaml.safe_load(text) == memcached_crd()
