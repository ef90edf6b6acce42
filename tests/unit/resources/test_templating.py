"""Values are data placed in a template's slots: no value changes a rendered object's structure.

The injection property feeds adversarial text (YAML indicators, line breaks, quotes, comments, anchors, tags, unicode
line separators, 10 kB strings) into every slot shape a template has — a whole plain scalar, a plain scalar with
literal text around it, double- and single-quoted strings, block scalars, mapping keys, block and flow list items,
slots inside ``{% for %}`` and ``{% if %}`` blocks — and checks that the object is exactly the template's, with the
value in its slot (a whole plain scalar holds the value itself, with its own type and structure; elsewhere its text),
or that rendering refuses the value with :class:`okt.errors.InvalidSpec`.
"""

from __future__ import annotations

import ast
import collections
import concurrent.futures
import dataclasses
import decimal
import enum
import functools
import json
import logging
import math
import pathlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Annotated, Any

import hypothesis
import jinja2
import pydantic
import pytest
import requests
import yaml
from hypothesis import strategies as st

from okt import errors
from okt.kube import objects
from okt.resources import checksum, templating
from tests.unit.kube import loopback

ROOT = pathlib.Path(__file__).resolve().parents[3]
GENERATED = sorted(
    [*(ROOT / "tests/unit/codegen/golden").glob("*_gen.py"), *(ROOT / "samples").glob("*/*/resources/*_gen.py")]
)

HOSTILE = [
    "\n",
    "\r\n",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "#",
    " #",
    "|",
    ">",
    "&a",
    "*a",
    "!!python/object/apply:os.system ['id']",
    "!!binary",
    "---",
    "...",
    "\t",
    "\\",
    "%YAML 1.1",
    "<<: *a",
    "? ",
    "@",
    "`",
    ",",
    "\u2028",
    "\x85",
    "\ufeff",
    "é漢🙂",
    "null",
    "yes",
    "~",
    "0x1F",
    "1e3",
    "-.5",
    ".nan",
    "2001-12-14",
    "12:30",
    "=",
    "oktslot0x",
    "\n      hostNetwork: true\n      volumes: [{name: host, hostPath: {path: /}}]",
    "\n  securityContext:\n    privileged: true",
    '"\nprivileged: true\nx: "',
    "'\nprivileged: true\nx: '",
    "\n- injected",
    "{{ 7 * 7 }}",
]
VALUES = st.one_of(
    st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=4)), max_size=8).map("".join),
    st.text(),
    st.builds(lambda piece, n: piece * n, st.sampled_from(HOSTILE), st.just(10_000 // 8)),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8)), inner, max_size=3),
        ),
        max_leaves=6,
    ),
)
CASES = hypothesis.settings(max_examples=250, deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow])

FRAME = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: main
          image: nginx
{slot}
"""


def text(value: Any) -> str:
    """What Jinja2 writes for a value."""
    return str(value)


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def stored(value: Any) -> Any:
    """A value as the API server stores it: an integer beyond int64 a float, a float of 2**53 to 1e21 the integer of
    its shortest digits when they name another integer (Go's JSON writes it so)."""
    if isinstance(value, dict):
        return {key: stored(item) for key, item in value.items()}
    if isinstance(value, list):
        return [stored(item) for item in value]
    if type(value) is int and not -(2**63) <= value < 2**63:
        number = float(value)
        return int(decimal.Decimal(repr(number))) if abs(number) < 1e21 else number
    if type(value) is float and 2**53 <= abs(value) < 1e21 and int(decimal.Decimal(repr(value))) != value:
        return int(decimal.Decimal(repr(value)))
    return value


def whole_slot(placed: Any, value: Any) -> None:
    """A whole plain scalar holds the value itself: a string that very string, a number (as the server stores it),
    boolean, null, list or mapping the same one, with the same types all the way down."""
    assert as_json(placed) == as_json(stored(value))


@dataclasses.dataclass(frozen=True)
class Shape:
    """One slot shape: the template lines under ``containers[0]`` and the object they must give for a value."""

    lines: str
    expected: Callable[[Any, dict[str, Any]], dict[str, Any]]

    @property
    def template(self) -> str:
        return FRAME.format(slot=self.lines)


def container(rendered: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = rendered["spec"]["template"]["spec"]["containers"][0]
    return result


def whole_plain(value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    placed = container(rendered)["args"]
    whole_slot(placed, value)
    return {"args": placed}


def block_list(value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    placed = container(rendered)["args"][1]
    whole_slot(placed, value)
    return {"args": ["--name", placed, "--end"]}


def flow_list(value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    placed = container(rendered)["command"][1]
    whole_slot(placed, value)
    return {"command": ["run", placed, "--end"]}


def flow_mapping(value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    placed = container(rendered)["resources"]["limits"]["cpu"]
    whole_slot(placed, value)
    return {"resources": {"limits": {"cpu": placed, "memory": "1Gi"}}}


def looped(value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    return {"env": [{"name": f"V{i}", "value": f"{text(value)}"} for i in range(3)]}


SHAPES = {
    "whole plain scalar": Shape("          args: {{ v }}", whole_plain),
    "plain scalar with text around": Shape(
        "          workingDir: /srv/{{ v }}-data", lambda v, r: {"workingDir": f"/srv/{text(v)}-data"}
    ),
    "double quoted": Shape(
        '          env:\n            - name: A\n              value: "a\\t{{ v }} \\"b\\""',
        lambda v, r: {"env": [{"name": "A", "value": f'a\t{text(v)} "b"'}]},
    ),
    "single quoted": Shape(
        "          env:\n            - name: A\n              value: '{{ v }}''s'",
        lambda v, r: {"env": [{"name": "A", "value": f"{text(v)}'s"}]},
    ),
    "literal block scalar": Shape(
        "          command:\n            - sh\n            - |\n              echo {{ v }}\n              exit",
        lambda v, r: {"command": ["sh", f"echo {text(v)}\nexit\n"]},
    ),
    "folded block scalar": Shape(
        "          command:\n            - >-\n              say {{ v }}",
        lambda v, r: {"command": [f"say {text(v)}"]},
    ),
    "mapping key": Shape(
        "          resources:\n            limits:\n              {{ v }}: 1\n              cpu: 2",
        lambda v, r: {"resources": {"limits": {text(v): 1, "cpu": 2}}},
    ),
    "block list item": Shape(
        "          args:\n            - --name\n            - {{ v }}\n            - --end", block_list
    ),
    "flow list item": Shape("          command: [run, {{ v }}, --end]", flow_list),
    "flow mapping value": Shape("          resources: {limits: {cpu: {{ v }}, memory: 1Gi}}", flow_mapping),
    "inside a for block": Shape(
        '          env:\n{% for i in range(3) %}            - name: V{{ i }}\n              value: "{{ v }}"\n'
        "{% endfor %}",
        looped,
    ),
    "inside an if block": Shape(
        "{% if v is not none %}          env:\n            - name: A\n              value: '{{ v }}'\n{% endif %}",
        lambda v, r: {"env": [{"name": "A", "value": text(v)}]} if v is not None else {},
    ),
}


def expected_object(shape: Shape, value: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    fields = {"name": "main", "image": "nginx", **shape.expected(value, rendered)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [fields]}}},
    }


def not_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(not_finite(item) for item in value.values())
    return isinstance(value, list) and any(not_finite(item) for item in value)


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@CASES
@hypothesis.given(value=VALUES)
@hypothesis.example(value=None)  # was the text "None"
@hypothesis.example(value="")  # was null
@hypothesis.example(value="12:30")  # was the number 750
@hypothesis.example(value=1e16)  # was the string "1e+16"
@hypothesis.example(value={"app.kubernetes.io/name": ["a", None]})  # was its Python text
def test_no_value_changes_the_structure_of_the_rendered_object(shape: Shape, value: Any) -> None:
    try:
        rendered = templating.render_template(shape.template, {"v": value})
    except errors.InvalidSpec as exc:
        if "not a finite number" in str(exc):  # NaN or an infinity placed as itself: JSON cannot write it
            assert not_finite(value)
            return
        assert shape is SHAPES["mapping key"]
        assert text(value) == "cpu"  # the only value that cannot be placed there: it would merge two keys
        return
    assert as_json(rendered) == as_json(expected_object(shape, value, rendered))


# Strings YAML 1.1 reads as something else when they are its text: booleans, null, numbers, a sexagesimal, a date.
YAML_LOOKALIKES = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "True",
    "~",
    "null",
    "NULL",
    "",
    "3",
    "-0x1F",
    "0x10",
    "0o7",
    "012",
    "0b101",
    "1_000",
    "1e3",
    "1.5",
    "+1",
    "12:30",
    "190:20:30",
    ".inf",
    "-.Inf",
    ".nan",
    "2026-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "=",
    "<<",
    "a: b",
    "- a",
    "[1, 2]",
    "{a: 1}",
    "'3'",
    '"3"',
    "x #y",
    " 3",
    "&a",
    "*a",
    "!!int 3",
    "!!python/object/apply:os.system ['id']",
    "a\nb",
    "a\tb",
    "nul\x00",
    "{{ 7 * 7 }}",
    "{% if true %}x{% endif %}",
]
STRING_PLACES = """apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels:
    value: {{ v }}
data:
  value: {{ v }}
  list: [{{ v }}]
"""


@pytest.mark.parametrize("value", YAML_LOOKALIKES)
def test_a_string_in_a_whole_plain_slot_stays_that_very_string(value: str) -> None:
    rendered = templating.render_template(STRING_PLACES, {"v": value})

    assert rendered["metadata"]["labels"] == {"value": value}
    assert rendered["data"] == {"value": value, "list": [value]}
    assert type(rendered["data"]["value"]) is str


class Tier(str, enum.Enum):  # noqa: UP042 - str() of this mixin is "Tier.GOLD", not its value
    GOLD = "gold"


class Limits(pydantic.BaseModel):
    cpu: str
    memory_mb: int = pydantic.Field(alias="memoryMb")
    tier: Tier = Tier.GOLD
    note: str | None = None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (-31, -31),
        (1.5, 1.5),
        (1e16, 1e16),
        (0.0, 0.0),
        (True, True),
        (False, False),
        (None, None),
        ({"app.kubernetes.io/name": "web", "a b": [1, "2", None], "c": {"d": True}}, None),
        ([1, "yes", {"k": "v"}, []], None),
        ({}, None),
        ([], None),
        (Tier.GOLD, "gold"),
        (Limits(cpu="1", memoryMb=64), {"cpu": "1", "memoryMb": 64, "tier": "gold"}),
    ],
    ids=repr,
)
def test_a_value_in_a_whole_plain_slot_keeps_its_own_type_and_structure(value: Any, expected: Any) -> None:
    expected = value if expected is None else expected

    rendered = templating.render_template("kind: X\nspec:\n  v: {{ v }}\n  items: [{{ v }}]\n", {"v": value})

    assert as_json(rendered["spec"]) == as_json({"v": expected, "items": [expected]})


@pytest.mark.parametrize(
    ("scalar", "variables", "expected"),
    [
        ("{{ a }}:{{ b }}", {"a": "12", "b": "30"}, "12:30"),  # was the number 750
        ("{{ a }}.{{ b }}", {"a": 1, "b": 5}, "1.5"),  # was the number 1.5
        ("{{ a }}{{ b }}", {"a": 1, "b": 2}, "12"),  # was the number 12
        ("{{ a }}{{ b }}", {"a": "", "b": ""}, ""),  # was null
        ("0x{{ a }}", {"a": "1F"}, "0x1F"),  # was the number 31
        ("{{ a }}_000", {"a": 1}, "1_000"),  # was the number 1000
        ("nu{{ a }}", {"a": "ll"}, "null"),  # was null
        ("{{ a }}es", {"a": "y"}, "yes"),  # was true
        ("{{ a }}-config", {"a": "yes"}, "yes-config"),
        ("{{ a }}-01-01", {"a": 2026}, "2026-01-01"),
    ],
)
def test_a_plain_scalar_joining_values_and_text_is_that_text(
    scalar: str, variables: dict[str, Any], expected: str
) -> None:
    rendered = templating.render_template(f"kind: X\nspec:\n  v: {scalar}\n  items: [{scalar}]\n", variables)

    assert rendered["spec"] == {"v": expected, "items": [expected]}


def test_a_spec_placed_whole_is_the_spec_of_the_custom_resource() -> None:
    spec = {"resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": 1}}, "on": "yes", "port": "8080"}
    cr = objects.CustomResource({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": spec})
    template = "kind: X\nresources: {{ cr.spec.resources }}\nflag: {{ cr.spec.on }}\nport: {{ cr.spec.port }}\n"

    rendered = templating.render_template(template, {"cr": cr})

    assert rendered == {"kind": "X", "resources": spec["resources"], "flag": "yes", "port": "8080"}


@pytest.mark.parametrize(
    ("template", "value", "expected"),
    [
        ("kind: X\ndata: {{ v | to_yaml }}\n", {"a": "1", "b": {"c": [1, None]}}, {"a": "1", "b": {"c": [1, None]}}),
        ("kind: X\ndata: {{ v | to_yaml }}\n", ["- x", "a: b"], ["- x", "a: b"]),
        ("kind: X\ndata: {{ v | to_yaml }}\n", "yes", "yes"),
        ("kind: X\ndata: {{ v | to_yaml }}\n", "a: b\nc: d", "a: b\nc: d"),
        ("kind: X\ndata: {{ v | to_yaml }}\n", {1: True, None: 2.5}, {"1": True, "null": 2.5}),
        ("kind: X\ndata: {{ v | to_yaml }}\n", ("a", 1), ["a", 1]),
        ("kind: X\ndata:\n  {{ v | to_yaml }}: 1\n", "k: v", {"k: v": 1}),
        ("kind: X\ndata: [{{ v | to_yaml }}, 2]\n", {"a": 1}, [{"a": 1}, 2]),
        ('kind: X\ndata: "{{ v | to_yaml }}"\n', [1, "a"], "[1, a]"),
    ],
    ids=["mapping", "list", "yes", "multiline", "keys", "tuple", "key", "flow item", "in a string"],
)
def test_to_yaml_places_a_value_with_its_own_structure(template: str, value: Any, expected: Any) -> None:
    assert templating.render_template(template, {"v": value})["data"] == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("yes", "yes"),  # was the text '"yes"', quotes included
        ("web", "web"),
        (3, 3),
        (None, None),
        ({"app.kubernetes.io/name": "web", "limits": {"cpu": 1}}, None),  # was its JSON text
        (["a", {"b": [None, True]}], None),
        (Limits(cpu="1", memoryMb=64), {"cpu": "1", "memoryMb": 64, "tier": "gold"}),  # was a TypeError
    ],
    ids=repr,
)
def test_tojson_as_a_whole_plain_scalar_places_what_its_json_text_means(value: Any, expected: Any) -> None:
    expected = value if expected is None else expected
    template = "kind: X\nwhole: {{ v | tojson }}\nquoted: '{{ v | tojson }}'\njoined: x={{ v | tojson(indent=1) }}\n"

    rendered = templating.render_template(template, {"v": value})

    assert as_json(rendered["whole"]) == as_json(expected)
    assert json.loads(rendered["quoted"]) == json.loads(as_json(expected))
    assert json.loads(rendered["joined"].removeprefix("x=")) == json.loads(as_json(expected))


def test_to_yaml_places_a_pydantic_model_as_its_json_form() -> None:
    class Limits(pydantic.BaseModel):
        cpu: str
        memory: str | None = None

    rendered = templating.render_template("kind: X\nlimits: {{ v | to_yaml }}\n", {"v": Limits(cpu="1\n- x")})

    assert rendered["limits"] == {"cpu": "1\n- x"}


def test_to_yaml_gives_each_place_a_private_copy() -> None:
    shared = {"a": [1]}
    rendered = templating.render_template("kind: X\none: {{ v | to_yaml }}\ntwo: {{ v | to_yaml }}\n", {"v": shared})

    rendered["one"]["a"].append(2)

    assert rendered["two"] == {"a": [1]}
    assert shared == {"a": [1]}


def test_a_mapping_key_from_to_yaml_must_be_a_string() -> None:
    with pytest.raises(errors.InvalidSpec, match=r"data: a mapping key must be a string, got a list"):
        templating.render_template("kind: X\ndata:\n  {{ v | to_yaml }}: 1\n", {"v": [1]})


def test_two_keys_made_equal_by_a_value_are_an_invalid_spec_naming_the_key() -> None:
    with pytest.raises(errors.InvalidSpec, match=r"metadata\.labels: the key 'app' appears twice"):
        templating.render_template("kind: X\nmetadata:\n  labels:\n    app: web\n    {{ k }}: x\n", {"k": "app"})


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("v: {{ v }}", {1: "a", "1": "b"}),
        ("v: {{ v }}", {True: "a", "true": "b"}),
        ("v: {{ v }}", {None: "a", "null": "b"}),
        ("v: {{ v }}", [{"x": {2: 1, "2": 2}}]),
        ("v: {{ v | to_yaml }}", {1: "a", "1": "b"}),
        ("v: {{ v | tojson }}", {1.5: "a", "1.5": "b"}),
        # a dict the template builds from a custom resource's keys
        ("{% set d = {} %}{% for k in v %}{% set _ = d.update({k: loop.index}) %}{% endfor %}v: {{ d }}", [1, "1"]),
    ],
)
def test_a_mapping_two_of_whose_keys_are_one_string_in_json_is_an_invalid_spec(template: str, value: Any) -> None:
    # one of the two took the other's place, and its value was lost without a word
    with pytest.raises(errors.InvalidSpec, match="a mapping two of whose keys are one string as JSON writes keys"):
        templating.render_template(f"kind: X\n{template}\n", {"v": value})


def leaves(value: Any) -> int:
    """How many scalars a JSON-like value holds: no placement may lose one."""
    if isinstance(value, dict):
        return sum(leaves(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(leaves(item) for item in value)
    return 1


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([*HOSTILE, "0o17", "1e3", "yes", "~", "!!int 3", "&a b", "*a", "a\u2028b", "a\x85b", "{{ x }}"]),
    st.text(max_size=6),
)
KEYS = st.one_of(st.text(max_size=4), st.sampled_from(["1", "true", "null", "1.5"]), st.integers(0, 2), st.booleans())
TREES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)
PLACES = (
    "kind: X\nmetadata:\n  labels: {app: web}\nwhole: {{ v }}\nlisted: [{{ v }}, x]\n"
    "yamled: {{ v | to_yaml }}\njsoned: {{ v | tojson }}\nquoted: '{{ v }}'\n"
)


@CASES
@hypothesis.given(value=TREES)
@hypothesis.example(value={1: "a", "1": "b"})  # one of the two was lost
def test_a_value_placed_whole_is_placed_with_every_item_or_refused_and_renders_the_same_twice(value: Any) -> None:
    try:
        first = templating.render_template(PLACES, {"v": value})
    except errors.InvalidSpec as exc:
        assert "a mapping two of whose keys are one string" in str(exc)
        return
    second = templating.render_template(PLACES, {"v": value})

    assert checksum.checksum(first) == checksum.checksum(second)  # the same child at each reconcile
    assert list(first) == ["kind", "metadata", "whole", "listed", "yamled", "jsoned", "quoted"]
    assert first["metadata"] == {"labels": {"app": "web"}}
    for name in ("whole", "yamled", "jsoned"):
        assert leaves(first[name]) == leaves(value)
        assert checksum.canonical_json(first[name]) == checksum.canonical_json(first["whole"])
    assert first["listed"][1:] == ["x"] and first["listed"][0] == first["whole"]
    assert first["quoted"] == str(value)


def variables_for(value: Any, name: str) -> dict[str, Any]:
    cr = {"name": name, "namespace": "ns", "spec": {"size": value, "image": value, "replicas": value}}
    return {"name": name, "namespace": "ns", "cr": cr, "password": value, "task": value, "version": value}


def generated_template(path: pathlib.Path) -> str:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TEMPLATE" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError(f"{path} has no TEMPLATE")


def whole_text(template: str, variables: dict[str, Any]) -> Any:
    """What rendering the whole text and parsing it gives (the meaning of a template for ordinary values)."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    loaded = yaml.safe_load(environment.from_string(template).render(**variables))
    return json.loads(json.dumps(loaded, default=str))  # JSON's string keys; a date as the text it was written as


ORDINARY = st.one_of(
    # Strings YAML reads back as themselves: whole-text rendering would retype the others ("yes", "1.5").
    st.from_regex(r"\A[a-z][a-z0-9.-]{0,20}\Z").filter(lambda text: yaml.safe_load(text) == text),
    st.integers(-1000, 1000),
    st.booleans(),
    st.sampled_from(["nginx:1.25", "web 1"]),
)


@pytest.mark.parametrize("path", GENERATED, ids=lambda path: path.name)
@hypothesis.given(value=ORDINARY, name=st.sampled_from(["web", "db-1"]))
def test_generated_templates_give_what_their_whole_text_means_for_ordinary_values(
    path: pathlib.Path, value: Any, name: str
) -> None:
    template = generated_template(path)
    variables = variables_for(value, name)
    assert templating.render_template(template, variables) == whole_text(template, variables)


def test_rendering_a_template_again_with_other_values_parses_no_yaml() -> None:
    assert len(GENERATED) > 20
    templates = [generated_template(path) for path in GENERATED]
    for template in templates:
        templating.render_template(template, variables_for("first", "web"))
    parsed = templating._parse.cache_info().misses

    for template in templates:
        templating.render_template(template, variables_for("second\n- value: 'x'", "db-1"))

    assert templating._parse.cache_info().misses == parsed


@pytest.mark.parametrize(
    "template",
    [
        "kind: X\n{% if v %}spec: {}\n{% endif %}",
        "kind: X\n{# note #}spec: {}\n",
        "kind: X\nspec:\n  a: ' {{- v -}} '\n",
        "kind: X\nspec: !!str {{ v }}\n",
        "kind: X\nbase: &b {a: 1}\nspec: *b\nname: {{ v }}\n",
        "kind: X\nbase: &b {a: 1}\nspec:\n  <<: *b\n  c: {{ v }}\n",
        "kind: X\nspec:\n  script: |\n    echo {{ v }}\n",
        "kind: X\nspec:\n  at: 2001-12-14\n  v: {{ v }}\n",
        "kind: X\n1: {{ v }}\n",
        "kind: X\nspec: {}\n",
    ],
    ids=[
        "block",
        "comment",
        "whitespace control",
        "tag",
        "alias",
        "merge key",
        "block scalar",
        "timestamp",
        "number key",
        "no expression",
    ],
)
def test_every_template_gives_what_its_whole_text_means_for_an_ordinary_value(template: str) -> None:
    variables = {"v": "x"}
    rendered = templating.render_template(template, variables)
    assert json.loads(json.dumps(rendered, default=str)) == whole_text(template, variables)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01", "2024-05-01"),  # was a date, which no JSON body holds: every reconcile failed on hashing it
        ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z"),  # was a datetime
        ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
        ("!!timestamp 2024-05-01", "2024-05-01"),
        ("12:30", "12:30"),  # was the number 750, which the API server refuses where a string goes
        ("190:20:30.15", "190:20:30.15"),  # was a float
        ("012", 10),
        ("0x1F", 31),
        ("1_000", 1000),
        ("-1.5", -1.5),
        ("yes", True),
        # each as `kubectl annotate --local -o json` (kubectl 1.32, sigs.k8s.io/yaml) printed it:
        ("0o17", 15),  # was the text "0o17"
        ("+0o17", 15),  # was text
        ("0o19", "0o19"),
        ("017", 15),
        ("08", 8),  # was the text "08"
        ("00", 0),
        ("0", 0),
        ("-0", 0),
        ("0x_1F", 31),
        ("-0x1F", -31),
        ("+0x1F", 31),
        ("0b101", 5),
        ("0b1_01", 5),
        ("1e3", 1000),  # was the text "1e3"
        ("1E3", 1000),  # was text
        ("12e03", 12000),  # was text
        ("1.5e3", 1500),  # was text
        ("1.0e+3", 1000),  # was the float 1000.0, which Go's JSON writes 1000
        ("1.", 1),  # was 1.0
        ("0.", 0),
        ("6.8523015e+5", 685230.15),
        ("685.230_15e+03", 685230.15),
        ("1_0.5", 10.5),
        ("1__0", 10),
        ("+12", 12),
        (".5", 0.5),
        ("-.5", -0.5),  # was the text "-.5"
        ("9223372036854775808", 9223372036854776000),  # beyond int64: a float, as Go writes it
        ("on", True),
        ("Yes", True),
        ("y", True),  # was the text "y"
        ("n", False),  # was text
        ("off", False),
        ("NO", False),
        ("True", True),
        ("~", None),
        ("Null", None),
        ("NULL", None),
        ("2024-05-01 10:00:00", "2024-05-01 10:00:00"),
        ('"1e3"', "1e3"),
    ],
)
def test_a_plain_scalar_of_the_template_reads_as_kubectl_reads_it(text: str, expected: Any) -> None:
    rendered = templating.render_template(f"kind: X\nat: {text}\nname: {{{{ v }}}}\n", {"v": "x"})
    assert rendered["at"] == expected
    assert type(rendered["at"]) is type(expected)
    tagged = templating.render_template(f"kind: X\nat: {text}\nname: !!str {{{{ v }}}}\n", {"v": "x"})
    assert tagged["at"] == expected  # the Python parser's too
    assert type(tagged["at"]) is type(expected)


class _Count(pydantic.BaseModel):
    n: int


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("v * 123456789012345678901", 123456789012345680000),  # was the int 123456789012345678901
        ("-v * 123456789012345678901", -123456789012345680000),
        ("v * 10**22 + 1", 1e22),  # was the int 10000000000000000000001
        ("v * 1.2345678901234567e20", 123456789012345670000),  # was the float, whose digits Go writes otherwise
        ("v * 2.0**53", 2.0**53),  # exactly the integer Go writes: as it is
        ("v * 1e16", 1e16),
        ("[v * 2**64 + 1]", [18446744073709552000]),
        ("{'n': v * 2**64} | to_yaml", {"n": 18446744073709552000}),
        ("[v * 2**64] | tojson", [18446744073709552000]),
        ("big", [123456789012345680000]),
        ("model", {"n": 123456789012345680000}),
        ("v * 9223372036854775807", 9223372036854775807),  # int64's largest: an integer, as it is
        ("-v * 2**63", -(2**63)),
        ("v * 2.5", 2.5),
        ("v * 3.0", 3.0),
    ],
)
def test_a_number_is_placed_as_the_api_server_stores_it(expression: str, expected: Any) -> None:
    # The server keeps a JSON number as an int64, else as a float64 it writes back with its shortest digits (an
    # integer below 1e21): placed otherwise, the desired child never matched the live one.
    variables = {"v": 1, "big": [123456789012345678901], "model": _Count(n=123456789012345678901)}
    rendered = templating.render_template(f"kind: X\nspec: {{{{ {expression} }}}}\n", variables)
    assert rendered["spec"] == expected
    assert json.dumps(rendered["spec"]) == json.dumps(expected)  # the type too, at any depth
    literal = templating.render_template(f"kind: X\nspec: {json.dumps(expected)}\n", {})
    assert literal["spec"] == expected  # what the template's own literal of that number reads as


@pytest.mark.parametrize("expression", ["10**400", "[10**400]", "[10**400] | tojson", "-(10**400)"])
def test_an_integer_no_float_holds_is_an_invalid_spec(expression: str) -> None:
    with pytest.raises(errors.InvalidSpec, match="an integer beyond the largest number JSON's floats hold"):
        templating.render_template(f"kind: X\nspec: {{{{ {expression} }}}}\n", {})


def test_the_text_of_a_number_beyond_int64_is_its_own_digits() -> None:
    rendered = templating.render_template("kind: X\nspec: '{{ v * 123456789012345678901 }}'\n", {"v": 1})
    assert rendered["spec"] == "123456789012345678901"


@pytest.mark.parametrize("text", [".inf", "-.Inf", "+.INF", ".NaN", ".nan", "!!float .inf"])
def test_a_plain_infinity_or_nan_of_the_template_is_refused_as_kubectl_refuses_it(text: str) -> None:
    # kubectl: "error converting YAML to JSON: json: unsupported value: +Inf"; was the float, which no body holds
    with pytest.raises(errors.MutationError, match="a number JSON cannot write"):
        templating.render_template(f"kind: X\nat: {text}\nname: {{{{ v }}}}\n", {"v": "x"})


def test_a_value_under_an_explicit_string_tag_stays_a_string() -> None:
    assert templating.render_template("kind: X\nspec: !!str {{ v }}\n", {"v": 3}) == {"kind": "X", "spec": "3"}


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("kind: X\nspec: !!int {{ v }}\n", "tagged tag:yaml.org,2002:int"),
        ("kind: X\nspec: !{{ v }} x\n", "a YAML tag"),
        ("{% macro m(x) %}a: {{ x }}{% endmacro %}kind: X\n{{ m(v) }}\n", "template's own output"),
        # each was "the rendered template is not valid YAML: ... expected a mapping ... for merging, but found scalar"
        ("kind: X\nmeta:\n  <<: {{ v }}\n", "^template error: a value cannot stand under a YAML merge key"),
        ("kind: X\n<<: '{{ v }}'\n", "^template error: a value cannot stand under a YAML merge key"),
        ("kind: X\nmeta:\n  <<: [{a: 1}, {{ v }}]\n", "^template error: a value cannot stand under a YAML merge key"),
    ],
    ids=["typed tag", "in a tag", "macro output", "merge key", "quoted under a merge key", "merged list"],
)
def test_a_template_placing_an_expression_where_no_value_can_stand_is_a_mutation_error(
    template: str, message: str
) -> None:
    with pytest.raises(errors.MutationError, match=message) as caught:
        templating.render_template(template, {"v": "x"})
    assert not isinstance(caught.value, errors.InvalidSpec)


def test_an_expression_in_a_yaml_comment_places_nothing() -> None:
    template = "kind: X\n# was: {{ v }}\nspec: {}\n"
    assert templating.render_template(template, {"v": "x\nspec: injected"}) == {"kind": "X", "spec": {}}


def test_an_undefined_variable_is_a_one_line_template_error() -> None:
    with pytest.raises(errors.MutationError) as caught:
        templating.render_template("kind: X\nspec:\n  a: {{ missing }}\n", {})
    assert str(caught.value) == "template error: 'missing' is undefined"


@pytest.mark.parametrize(
    ("expression", "spec", "message"),
    [
        ("cr.spec.size + 1", {"size": "3"}, r'can only concatenate str \(not "int"\) to str \(TypeError\)'),
        ("100 // cr.spec.shards", {"shards": 0}, r"integer division or modulo by zero \(ZeroDivisionError\)"),
        ('"{:d}".format(cr.spec.port)', {"port": "http"}, r"Unknown format code 'd' .* \(ValueError\)"),
        ("cr.spec.hosts | join(',')", {"hosts": 3}, r"'int' object is not iterable \(TypeError\)"),
    ],
    ids=["add to a string", "divide by zero", "format a string as a number", "join a number"],
)
def test_an_expression_failing_on_a_value_of_the_custom_resource_is_an_invalid_spec_naming_its_line(
    expression: str, spec: dict[str, Any], message: str
) -> None:
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
    template = f"kind: ConfigMap\nmetadata:\n  name: w\ndata:\n  value: '{{{{ {expression} }}}}'\n"

    with pytest.raises(
        errors.InvalidSpec, match=f"^template line 5: {message}: the template cannot use a value"
    ) as caught:
        templating.render_template(template, {"cr": cr})

    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "spec"),
    [
        ("cr.spec.size | int", {"size": "three"}),  # was 0
        ("cr.spec.size | int", {"size": ""}),  # was 0
        ("cr.spec.size | int", {"size": None}),  # was 0
        ("cr.spec.size | int * 2", {"size": "12:30"}),  # was 0
        ("cr.spec.ratio | float", {"ratio": "half"}),  # was 0.0
    ],
)
def test_int_or_float_of_a_value_that_is_no_number_is_an_invalid_spec_naming_its_line(
    expression: str, spec: dict[str, Any]
) -> None:
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
    template = f"kind: Deployment\nmetadata:\n  name: w\nspec:\n  replicas: {{{{ {expression} }}}}\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 5: a \w+ that is no number .*\(ValueError\)"):
        templating.render_template(template, {"cr": cr})


@pytest.mark.parametrize(
    ("expression", "value", "expected"),
    [
        ("v | int", "3", 3),
        ("v | int", "3.7", 3),
        ("v | int", 4.2, 4),
        ("v | int(base=16)", "0x1F", 31),
        ("v | int(5)", "three", 5),
        ("v | int(default=0)", None, 0),
        ("v | float", "1.5", 1.5),
        ("v | float", 2, 2.0),
        ("v | float(0.5)", "half", 0.5),
    ],
)
def test_int_and_float_still_convert_numbers_and_take_an_explicit_default(
    expression: str, value: Any, expected: Any
) -> None:
    rendered = templating.render_template(f"kind: X\nv: {{{{ {expression} }}}}\n", {"v": value})

    assert as_json(rendered["v"]) == as_json(expected)


INNER_YAML = "server:\n  port: 80\nlog: debug"


@pytest.mark.parametrize(
    ("template", "value", "expected"),
    [
        # was the YAML text "{limits: {cpu: '1'}}", a string where the mapping goes
        ("kind: X\nv: {{ v | to_yaml | indent(2) }}\n", {"limits": {"cpu": "1"}}, {"limits": {"cpu": "1"}}),
        ("kind: X\nv: {{ v | tojson(indent=2) | indent(2) }}\n", {"a": [1]}, {"a": [1]}),
        # was the inner file with its later lines moved 4 columns right: "server:\n      port: 80\n    log: debug\n"
        ("kind: X\nv: |\n    {{ v | indent(4) }}\n", INNER_YAML, INNER_YAML + "\n"),
        ("kind: X\nv: |\n  {{ v | indent(2, first=true) }}\n", INNER_YAML, INNER_YAML + "\n"),
        ("kind: X\nv: {{ v | indent }}\n", "yes", "yes"),
        ("kind: X\nv: {{ v | indent }}\n", 3, 3),
    ],
)
def test_indent_places_the_value_unchanged(template: str, value: Any, expected: Any) -> None:
    assert templating.render_template(template, {"v": value})["v"] == expected


def test_each_render_is_a_private_object() -> None:
    template = "kind: X\nspec:\n  items: [a, {{ v }}]\n"
    first = templating.render_template(template, {"v": "b"})
    first["spec"]["items"].append("mutated")
    assert templating.render_template(template, {"v": "b"}) == {"kind": "X", "spec": {"items": ["a", "b"]}}


def test_jinja_globals_still_work_when_each_render_reads_them_from_a_plain_dict() -> None:
    template = (
        "{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}"
        "kind: ConfigMap\ndata:\n  sum: '{{ ns.n }}'\n  kind: '{{ dict(a=1) | length }}'\n"
    )

    assert templating.render_template(template, {}) == {"kind": "ConfigMap", "data": {"sum": "3", "kind": "1"}}
    # A template's globals are a snapshot of the environment's, merged into each render's context without a ChainMap.
    assert type(templating._compiled(template).globals) is dict


@pytest.mark.parametrize(
    ("template", "spec", "expected"),
    [
        pytest.param("v: '{{ cr.spec.values }}'", {"values": "mine"}, "mine", id="values"),
        pytest.param("v: '{{ cr.spec.items | length }}'", {"items": ["a", "b"]}, "2", id="items-filtered"),
        pytest.param("v: '{{ cr.spec.get.path }}'", {"get": {"path": "/healthz"}}, "/healthz", id="nested"),
        pytest.param("v: {% if cr.spec.keys %}some{% else %}none{% endif %}", {"keys": []}, "none", id="in-a-block"),
        pytest.param("v: '{{ cr.spec.labels.items() | list | length }}'", {"labels": {"a": "b"}}, "1", id="method"),
    ],
)
def test_a_spec_field_named_like_a_dict_method_is_the_field(template: str, spec: Any, expected: str) -> None:
    cr = objects.CustomResource({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": spec})

    assert templating.render_template(template, {"cr": cr}) == {"v": expected}


class Level(enum.IntEnum):
    HIGH = 3


class TieredSpec(pydantic.BaseModel):
    tier: Tier
    tiers: list[Tier]
    level: Level


TIERED = """kind: X
metadata:
  name: "{{ cr.spec.tier }}"
  labels:
    tier: {{ cr.spec.tier }}-web
    {{ cr.spec.tier }}: key
data:
  whole: {{ cr.spec.tier }}
  joined: {{ cr.spec.tier ~ "-x" }}
  indexed: '{{ cr.spec["tier"] }}'
  listed: '{% for tier in cr.spec.tiers %}{{ tier }},{% endfor %}'
  level: '{{ cr.spec.level }} {{ cr.spec.level == 3 }}'
  member: '{{ cr.spec.tier.value }} {{ cr.spec.tier.name }} {{ cr.spec.tier == "gold" }}'
"""


def test_an_enum_field_of_the_spec_model_is_the_value_the_custom_resource_holds() -> None:
    spec = {"tier": "gold", "tiers": ["gold"], "level": 3}
    raw = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": spec}
    cr = objects.CustomResource(raw, spec=TieredSpec.model_validate(spec))

    rendered = templating.render_template(TIERED, {"cr": cr})

    assert rendered["metadata"] == {"name": "gold", "labels": {"tier": "gold-web", "gold": "key"}}
    assert rendered["data"] == {
        "whole": "gold",
        "joined": "gold-x",
        "indexed": "gold",
        "listed": "gold,",
        "level": "3 True",
        "member": "gold GOLD True",
    }


def widget(spec: dict[str, Any]) -> objects.CustomResource:
    return objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})


@pytest.mark.parametrize(
    ("expression", "spec", "message"),
    [
        # read the operator's module globals into the child
        ("cr.spec.pattern.format(cr)", {"pattern": "{0.__class__.__init__.__globals__}"}, "'__class__'"),
        ("cr.spec.pattern.format_map(cr.spec)", {"pattern": "{pattern.__class__.__mro__}"}, "'__class__'"),
        ("cr.spec[cr.spec.field]", {"field": "__class__"}, "'__class__'"),
        ("cr.spec.name.__class__.__mro__", {"name": "web"}, "'__class__'"),
    ],
    ids=["format", "format_map", "subscript", "attribute"],
)
def test_a_template_reading_python_internals_is_an_invalid_spec_naming_its_line(
    expression: str, spec: dict[str, Any], message: str
) -> None:
    template = f"kind: ConfigMap\nmetadata:\n  name: w\ndata:\n  value: '{{{{ {expression} }}}}'\n"

    refused = f"^template line 5: access to attribute {message} .* unsafe"
    with pytest.raises(errors.InvalidSpec, match=refused) as caught:
        templating.render_template(template, {"cr": widget(spec)})

    assert "\n" not in str(caught.value)


def _traceback() -> Any:
    try:
        raise ValueError("x")
    except ValueError as exc:
        return exc.__traceback__


def _generator() -> Any:
    yield 1


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        ("f_globals", sys._getframe()),  # a frame's module globals: a plain dict
        ("f_lineno", sys._getframe()),
        ("tb_lineno", _traceback()),
        ("co_name", _traceback.__code__),
        ("gi_frame", _generator()),
    ],
    ids=["frame-globals", "frame-line", "traceback-line", "code-name", "generator-frame"],
)
def test_a_template_reading_the_data_of_code_a_frame_or_a_traceback_is_an_invalid_spec(
    attribute: str, value: Any
) -> None:
    template = f"kind: ConfigMap\ndata:\n  value: '{{{{ v.{attribute} }}}}'\n"

    with pytest.raises(errors.InvalidSpec, match=f"^template line 3: access to attribute '{attribute}' .* unsafe"):
        templating.render_template(template, {"v": value})


def test_a_range_bounded_by_the_custom_resource_is_capped() -> None:
    # looped for ever (10**12 empty iterations)
    template = "kind: X\n{% for i in range(cr.spec.n) %}{% endfor %}\nv: 1\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: Range too big.* \(OverflowError\)"):
        templating.render_template(template, {"cr": widget({"n": 10**12})})
    assert templating.render_template(template, {"cr": widget({"n": 3})}) == {"kind": "X", "v": 1}


@pytest.mark.parametrize(
    ("expression", "spec", "message"),
    [
        # each took the memory of the process
        ('"x" * cr.spec.n', {"n": 10**10}, "repeating a str of length 1 10000000000 times would build"),
        ('cr.spec.n * "ab"', {"n": 10**10}, "repeating a str of length 2 10000000000 times"),
        ("cr.spec.names * cr.spec.n", {"names": ["a", "b"], "n": 10**10}, "repeating a list of length 2"),
        ("(cr.spec.name,) * cr.spec.n", {"name": "a", "n": 10**10}, "repeating a tuple of length 1"),
        ("2 ** cr.spec.n", {"n": 10**10}, r"an integer power would have 3010299957 digits"),
        ("cr.spec.base ** 10000", {"base": 12345}, r"an integer power would have 40915 digits"),
    ],
)
def test_an_operation_building_a_value_larger_than_a_child_can_hold_is_an_invalid_spec_naming_its_line(
    expression: str, spec: dict[str, Any], message: str
) -> None:
    template = f"kind: ConfigMap\nmetadata:\n  name: w\ndata:\n  value: '{{{{ {expression} }}}}'\n"

    with pytest.raises(errors.InvalidSpec, match=f"^template line 5: {message}") as caught:
        templating.render_template(template, {"cr": widget(spec)})

    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('"-" * cr.spec.n', "---"),
        ('cr.spec.n * "ab"', "ababab"),
        ("(cr.spec.names * cr.spec.n) | join", "ababab"),
        ("cr.spec.n * 4", 12),
        ("cr.spec.n * 1.5", 4.5),
        ("2 ** cr.spec.n", 8),
        ("2 ** 64", 18446744073709552000),  # beyond int64: placed as the server stores it
        ("cr.spec.n ** -1", 1 / 3),
        ("cr.spec.n % 2", 1),
    ],
)
def test_operations_within_bounds_build_what_python_builds(expression: str, expected: Any) -> None:
    cr = widget({"n": 3, "names": ["a", "b"]})

    assert templating.render_template(f"kind: X\nv: {{{{ {expression} }}}}\n", {"cr": cr})["v"] == expected


@pytest.mark.parametrize(
    ("expression", "name"),
    [
        # each walked 3 million items for 6 to 12 seconds before anything looked at its size (or never did)
        ("([0] * 3000000) | pprint", "pprint"),
        ("(['a'] * 3000000) | map('upper') | list | length", "map"),
        ("(['<'] * 3000000) | escape | length", "escape"),
        ("([0] * 3000000) | sort | length", "sort"),
        ("([0] * 3000000) | string | length", "string"),
        ("([0] * 3000000) | unique | list | length", "unique"),
        ("([[0] * 700000] * 3) | pprint | length", "pprint"),  # one list, three times: its JSON thrice
        ("('x' * 2000000) | upper | length", "upper"),
    ],
)
def test_a_filter_refuses_an_input_no_child_holds_at_once(expression: str, name: str) -> None:
    message = rf"^template line 2: \| {name} of a \w+ of at least \d+ characters as JSON, more than the 1572864 the API"
    with pytest.raises(errors.InvalidSpec, match=message):
        templating.render_template(f"kind: X\nv: {{{{ {expression} }}}}\n", {})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("value | trim | replace('a', 'b') | upper | length", 1024 * 1024),  # a ConfigMap's largest value
        ("value | escape | length", 1024 * 1024),
        ("hosts | sort | join(',') | length", 100_000 * 8 - 1),
        ("hosts | map('upper') | unique | list | length", 100_000),
        ("hosts | length", 100_000),
        ("([0] * 3000000) | length", 3_000_000),  # a filter reading no item is not refused
        ("([0] * 3000000) | first", 0),
    ],
)
def test_a_filter_takes_any_input_a_child_holds(expression: str, expected: Any) -> None:
    variables = {"value": "a" * 1024 * 1024, "hosts": [f"h{i:06d}" for i in range(100_000)]}
    assert templating.render_template(f"kind: X\nv: {{{{ {expression} }}}}\n", variables)["v"] == expected


def test_pprint_refuses_a_value_whose_text_no_child_holds_before_walking_it() -> None:
    # 700,000 zeros are within the bound on a filter's input: | pprint took 2.5 seconds to write 2.8 million characters
    message = r"^template line 2: \| pprint of a list would write at least 2100000 characters, more than the 1572864 "
    with pytest.raises(errors.InvalidSpec, match=message):
        templating.render_template("kind: X\nv: {{ zeros | pprint | length }}\n", {"zeros": [0] * 700_000})


@pytest.mark.parametrize("value", [[0] * 1000, {"b": [1, "x" * 100], "a": None}, "x" * 1_500_000])
def test_pprint_writes_what_jinja2_writes_within_the_bound(value: Any) -> None:
    rendered = templating.render_template("kind: X\nv: '{{ value | pprint }}'\n", {"value": value})
    assert rendered["v"] == jinja2.filters.do_pprint(value)


FILTER_LOOP = (
    "kind: X\n"
    "{% set ns = namespace(n=0) %}{% for i in range(times) %}{% set ns.n = ns.n + (value | upper | length) %}"
    "{% endfor %}\n"
    "v: {{ ns.n }}\n"
    "last: {{ last | FILTER | length }}\n"
)
MIB = 1024 * 1024


def test_a_render_refuses_filters_walking_more_input_together_than_four_requests() -> None:
    # each filter's input within the bound: fifty | pprint of a list of 1.4 MiB took two minutes
    message = (
        r"^template line 2: \| upper: the filters of this render would walk \d+ characters of input as JSON, "
        r"more than the 12582912 a render may"
    )
    with pytest.raises(errors.InvalidSpec, match=message):
        templating.render_template(
            FILTER_LOOP.replace("FILTER", "upper"), {"value": "a" * MIB, "times": 13, "last": ""}
        )


@pytest.mark.parametrize(
    ("filter_", "size"),
    [
        ("upper", MIB + 1),
        ("pprint", 400_000),  # a character of its input costs three of | upper's
        ("to_yaml", 200_000),  # eight of | upper's
    ],
)
def test_a_slow_filter_counts_its_input_as_often_as_it_costs(filter_: str, size: int) -> None:
    message = rf"^template line 4: \| {filter_}: the filters of this render would walk \d+ characters of input"
    variables = {"value": "a" * MIB, "times": 11, "last": "a" * size}
    with pytest.raises(errors.InvalidSpec, match=message):
        templating.render_template(FILTER_LOOP.replace("FILTER", filter_), variables)


@pytest.mark.parametrize(("filter_", "size"), [("upper", MIB), ("pprint", 300_000), ("to_yaml", 100_000)])
def test_the_filters_input_is_counted_per_render(filter_: str, size: int) -> None:
    variables = {"value": "a" * MIB, "times": 11, "last": "a" * size}
    for _ in range(3):  # each render counts its own: three of them filter three times as much
        rendered = templating.render_template(FILTER_LOOP.replace("FILTER", filter_), variables)
        assert (rendered["v"], rendered["last"] >= size) == (11 * MIB, True)


def test_concurrent_renders_count_their_filters_input_apart() -> None:
    variables = {"value": "a" * MIB, "times": 12, "last": ""}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        renders = [
            pool.submit(templating.render_template, FILTER_LOOP.replace("FILTER", "upper"), variables) for _ in range(8)
        ]
        assert [render.result()["v"] for render in renders] == [12 * MIB] * 8


MANY_EMPTY = [""] * 100_000
WIDE = "x" * 100_000
BLOB = "QUJD" * 250_000
"""A megabyte of base64: one word."""


@pytest.mark.parametrize(
    ("expression", "spec", "message"),
    [
        # each took the memory of the process
        ("cr.spec.hosts | join(cr.spec.separator)", {"hosts": MANY_EMPTY, "separator": WIDE}, r"\| join"),
        ('"ab" | replace("", cr.spec.filler)', {"filler": "x" * 2_000_000}, r"\| replace"),
        ("cr.spec.name | center(cr.spec.n)", {"name": "a", "n": 10**10}, r"\| center"),
        ('"a b c" | wordwrap(1, wrapstring=cr.spec.filler)', {"filler": "x" * 2_000_000}, r"\| wordwrap"),
        ('"%*s" | format(cr.spec.n, "x")', {"n": 10**10}, "this %-format"),
        ('cr.spec.pattern | format("x")', {"pattern": "%10000000000s"}, "this %-format"),
        ('cr.spec.pattern % "x"', {"pattern": "%.10000000000f"}, "this %-format"),
        ('"{:>{}}".format("x", cr.spec.n)', {"n": 10**10}, "this format string's widths"),
        ("cr.spec.pattern.format_map(cr.spec)", {"pattern": "{pattern:10000000000}"}, "this format string's widths"),
        ("cr.spec.name.ljust(cr.spec.n)", {"name": "a", "n": 10**10}, r"str\.ljust"),
        ("cr.spec.name.zfill(cr.spec.n)", {"name": "1", "n": 10**10}, r"str\.zfill"),
        ('"a\tb".expandtabs(cr.spec.n)', {"n": 10**10}, r"str\.expandtabs"),
        ('cr.spec.name.replace("", cr.spec.filler)', {"name": "ab", "filler": "x" * 2_000_000}, r"str\.replace"),
        ("cr.spec.separator.join(cr.spec.hosts)", {"hosts": MANY_EMPTY, "separator": WIDE}, r"str\.join"),
        ("cr.spec.name.translate({97: cr.spec.filler})", {"name": "a" * 2000, "filler": "x" * 2000}, r"str\.translate"),
        ("[1] | batch(cr.spec.n, 0) | list", {"n": 10**10}, r"\| batch"),
        ("[1] | slice(cr.spec.n) | list", {"n": 10**10}, r"\| slice"),
        ("cr.spec | tojson(indent=cr.spec.n)", {"n": 10**10}, r"\| tojson\(indent=...\)"),
        # (a sum of [hosts] * n, one list n times, is refused before, as an input no child holds)
        ("[cr.spec.hosts] | sum(start=[0] * cr.spec.n) | length", {"hosts": [1] * 1000, "n": 3 * 2**20}, r"\| sum"),
        # bytes, which a template reaches through str.encode() and int.to_bytes(): each built what n said
        ('"x".encode() * cr.spec.n', {"n": 10**10}, "repeating a bytes of length 1 10000000000 times"),
        ('cr.spec.n * "ab".encode()', {"n": 10**10}, "repeating a bytes of length 2 10000000000 times"),
        ("cr.spec.name.encode().ljust(cr.spec.n)", {"name": "a", "n": 10**10}, r"bytes\.ljust"),
        ("cr.spec.name.encode().center(cr.spec.n)", {"name": "a", "n": 10**10}, r"bytes\.center"),
        ("cr.spec.name.encode().zfill(cr.spec.n)", {"name": "1", "n": 10**10}, r"bytes\.zfill"),
        ('"a\tb".encode().expandtabs(cr.spec.n)', {"n": 10**10}, r"bytes\.expandtabs"),
        (
            'cr.spec.name.encode().replace("".encode(), cr.spec.filler.encode())',
            {"name": "ab", "filler": "x" * 2_000_000},
            r"bytes\.replace",
        ),
        ("cr.spec.separator.encode().join([''.encode()] * 100000)", {"separator": WIDE}, r"bytes\.join"),
        ('cr.spec.pattern.encode() % "x".encode()', {"pattern": "%10000000000s"}, "this %-format"),
        ("(0).to_bytes(cr.spec.n, 'big')", {"n": 10**10}, r"int\.to_bytes"),
    ],
)
def test_a_filter_method_or_format_sized_by_a_value_beyond_what_a_child_holds_is_an_invalid_spec(
    expression: str, spec: dict[str, Any], message: str
) -> None:
    template = f"kind: ConfigMap\nmetadata:\n  name: w\ndata:\n  value: '{{{{ {expression} }}}}'\n"

    with pytest.raises(errors.InvalidSpec, match=f"^template line 5: {message} would build .* a child can hold$"):
        templating.render_template(template, {"cr": widget(spec)})


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("length", "width"), [(1_500_000, 1), (1_500_000, 50), (300_000, 0)])
def test_wordwrap_refuses_to_break_a_word_so_long_into_lines_so_short_that_it_would_take_minutes(
    length: int, width: int
) -> None:
    # each copied the rest of the word at each of its lines: hours for a megabyte at width=1, the worker gone
    template = "kind: X\nv: '{{ cr.spec.text | wordwrap(cr.spec.width) | length }}'\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: \| wordwrap would copy \d+ characters to break"):
        templating.render_template(template, {"cr": widget({"text": "x" * length, "width": width})})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("cr.spec.names | join(cr.spec.sep)", "a, b"),
        ('cr.spec.items | join("/", attribute="k")', "1/2"),
        ('cr.spec.name | replace("e", "E")', "wEb"),
        ('cr.spec.name | replace("", "-", 2)', "-w-eb"),
        ("cr.spec.name | center(7)", "  web  "),
        ('"aaa bbb" | wordwrap(3, wrapstring=cr.spec.sep)', "aaa, bbb"),
        ('"%-4s|%*d|%.2f|%%" | format(cr.spec.name, 3, 7, 1.5)', "web |  7|1.50|%"),
        ('"%(name)s!" | format(name=cr.spec.name)', "web!"),
        ('"%05d" % cr.spec.n', "00003"),
        ('"{:>{}}|{:.3}|{name}".format(cr.spec.name, 5, 3.14159, name="x")', "  web|3.14|x"),
        ('"{name}-{n}".format_map(cr.spec)', "web-3"),
        ("cr.spec.name.ljust(5) ~ cr.spec.name.zfill(4)", "web  0web"),
        ('"a\tb".expandtabs(4)', "a   b"),
        ("cr.spec.sep.join(cr.spec.names)", "a, b"),
        ('cr.spec.name.translate({119: "W", 98: none, 101: 69})', "WE"),
        ("[1, 2, 3] | batch(2, 0) | list | string", "[[1, 2], [3, 0]]"),
        ("[1, 2, 3] | slice(2) | list | string", "[[1, 2], [3]]"),
        ("cr.spec.items | tojson(indent=1)", '[\n {\n  "k": 1\n },\n {\n  "k": 2\n }\n]'),
        ("([[cr.spec.n]] * 300000) | sum(start=[]) | length", "300000"),  # a list at a time, it never ended
        ("[cr.spec.names, ['c']] | sum(start=['z'])", "['z', 'a', 'b', 'c']"),
        ("[(1,), (2,)] | sum(start=())", "(1, 2)"),
        ("cr.spec.items | sum(attribute='k')", "3"),
        ("[1.5, cr.spec.n] | sum", "4.5"),
        ('("-".encode() * cr.spec.n).decode()', "---"),
        ('(cr.spec.name.encode().rjust(5) + "!".encode()).decode()', "  web!"),
        ('("%-4s|".encode() % cr.spec.name.encode()).decode()', "web |"),
        ('",".encode().join(["a".encode(), "b".encode()]).decode()', "a,b"),
        ('"web".encode().replace("e".encode(), "E".encode()).decode()', "wEb"),
        ("(cr.spec.n).to_bytes(2, 'big') | list | string", "[0, 3]"),
        ("(cr.spec.text | wordwrap(76)).count('\n')", "13157"),  # a megabyte of base64 at 76 columns
    ],
)
def test_filters_methods_and_formats_within_bounds_give_what_jinja_gives(expression: str, expected: Any) -> None:
    spec = {"n": 3, "name": "web", "names": ["a", "b"], "sep": ", ", "items": [{"k": 1}, {"k": 2}], "text": BLOB}
    cr = widget(spec)

    assert templating.render_template(f"kind: X\nv: '{{{{ {expression} }}}}'\n", {"cr": cr})["v"] == expected


ITEMS = [f"item-{i:015d}" for i in range(200_000)]


@pytest.mark.parametrize(
    ("template", "spec"),
    [
        # 200000 items of 20 characters: 5 MB of YAML, parsed for seconds into a child no API server takes
        ("kind: X\nitems:\n{% for item in cr.spec.items %}\n  - {{ item }}\n{% endfor %}\n", {"items": ITEMS}),
        # one value placed 100000 times
        ("kind: X\nitems:\n{% for i in range(100000) %}\n  - {{ cr.spec.text }}\n{% endfor %}\n", {"text": WIDE}),
        # 10**10 lines of the template's own text: never ended
        (
            "kind: X\nitems:\n{% for i in range(cr.spec.n) %}{% for j in range(cr.spec.n) %}\n  - x\n"
            "{% endfor %}{% endfor %}\n",
            {"n": 100_000},
        ),
    ],
    ids=["a long list", "a value placed in a loop", "nested loops"],
)
def test_a_render_larger_than_the_api_server_takes_is_an_invalid_spec_naming_its_line(
    template: str, spec: dict[str, Any]
) -> None:
    with pytest.raises(
        errors.InvalidSpec, match=r"^template line [34]: the rendered template would build \d+ characters, more than"
    ):
        templating.render_template(template, {"cr": widget(spec)})


def test_a_render_just_within_the_bound_is_the_object() -> None:
    items = ITEMS[: templating.template_limits.MAX_SIZE // 30]
    template = "kind: X\nitems:\n{% for item in cr.spec.items %}\n  - {{ item }}\n{% endfor %}\n"

    assert templating.render_template(template, {"cr": widget({"items": items})})["items"] == items


def tree(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"children": []}
    for _ in range(depth):
        node = {"children": [node]}
    return node


@pytest.mark.parametrize(
    ("template", "spec", "message"),
    [
        (
            "{% macro down(n) %}{% if n > 0 %}{% set inner = down(n - 1) %}{% endif %}{% endmacro %}\n"
            "kind: X\n{% set deep = down(cr.spec.depth) %}\n",
            {"depth": 100_000},
            "^template line 1: recursion deeper than Python allows",
        ),
        (
            "kind: X\n{% for node in [cr.spec.tree] recursive %}{% set inner = loop(node.children) %}{% endfor %}\n",
            {"tree": tree(3000)},
            "^template line 2: recursion deeper than Python allows",
        ),
        ("kind: X\nspec: {{ cr.spec.tree | to_yaml }}\n", {"tree": tree(3000)}, "^template line 2: recursion deeper"),
        ("kind: X\nspec: {{ cr.spec.tree }}\n", {"tree": tree(300)}, "^a value placed in the template is nested"),
    ],
    ids=["macro", "recursive loop", "to_yaml", "placed whole"],
)
def test_a_recursion_as_deep_as_a_value_makes_it_is_an_invalid_spec(
    template: str, spec: dict[str, Any], message: str
) -> None:
    # each raised a RecursionError out of the reconcile
    with pytest.raises(errors.InvalidSpec, match=message) as caught:
        templating.render_template(template, {"cr": widget(spec)})

    assert "\n" not in str(caught.value)
    assert templating.render_template(template, {"cr": widget({"depth": 3, "tree": tree(3)})})["kind"] == "X"


@pytest.mark.parametrize(
    "statement",
    ["{% include 'kind.yaml' %}", "{% import 'kind.yaml' as kind %}", "{% extends 'kind.yaml' %}"],
    ids=["include", "import", "extends"],
)
def test_a_template_naming_another_template_is_a_mutation_error_not_the_custom_resources_fault(statement: str) -> None:
    # was an InvalidSpec: "no loader for this environment specified (TypeError): the template cannot use a value of
    # the custom resource there"
    with pytest.raises(
        errors.MutationError, match=r"'kind\.yaml': okt templates include, import and extend no"
    ) as caught:
        templating.render_template(f"{statement}\nkind: X\n", {"cr": widget({})})

    assert not isinstance(caught.value, errors.InvalidSpec)


@pytest.mark.parametrize(
    ("expression", "spec", "message"),
    [
        ("cr.spec.pattern.format(name=cr.spec.name)", {"pattern": "{nme}-web", "name": "a"}, r"'nme' \(KeyError\)"),
        (
            "cr.spec.pattern.format(cr.spec.name)",
            {"pattern": "{1}", "name": "a"},
            r"tuple index out of range \(IndexError\)",
        ),
        ("cr.spec.pattern % {'name': cr.spec.name}", {"pattern": "%(nme)s", "name": "a"}, r"'nme' \(KeyError\)"),
        (
            "cr.spec.name.encode(cr.spec.pattern)",
            {"pattern": "nope", "name": "a"},
            r"unknown encoding: nope \(LookupError",
        ),
        ("{'b': 1}.pop(cr.spec.name)", {"name": "a"}, r"'a' \(KeyError\)"),
    ],
)
def test_a_missing_key_or_index_an_expression_reads_in_a_value_is_an_invalid_spec_naming_the_line(
    expression: str, spec: dict[str, Any], message: str
) -> None:
    # each escaped the render as Python's KeyError, IndexError or LookupError: retried for ever, as if the cluster
    # could answer it, where another spec is what helps
    template = f"kind: ConfigMap\nmetadata:\n  name: w\ndata:\n  value: '{{{{ {expression} }}}}'\n"

    with pytest.raises(errors.InvalidSpec, match=f"^template line 5: {message}"):
        templating.render_template(template, {"cr": widget(spec)})


@pytest.mark.parametrize(
    ("template", "message"),
    [
        # the custom resource's text written into the YAML: a name holding a line break added fields
        ('{% filter replace("NAME", cr.spec.name) %}\nname: NAME\n{% endfilter %}', "arguments must be constants"),
        ("{% filter format(cr.spec.name) %}\nname: %s\n{% endfilter %}", "arguments must be constants"),
        ('{% filter trim | replace("NAME", name) %}\nname: NAME\n{% endfilter %}', "arguments must be constants"),
        ("{% filter replace(*cr.spec.pair) %}\nname: a\n{% endfilter %}", "arguments must be constants"),
        # the value's placeholder filtered: upper wrote it into the child, lower placed the name unchanged
        ("name: {% filter upper %}{{ cr.spec.name }}{% endfilter %}", "holding {{ }} filters the template's text"),
        ("name: {% filter lower %}x-{{ cr.spec.name }}{% endfilter %}", "holding {{ }} filters the template's text"),
        ("{% filter trim %}\nname: {{ cr.spec.name }}\n{% endfilter %}", "holding {{ }} filters the template's text"),
    ],
)
def test_a_filter_block_taking_or_holding_values_does_not_compile(template: str, message: str) -> None:
    source = f"kind: X\n{template}\n"

    wrong = templating.syntax_error(source)

    assert wrong is not None and wrong.startswith("line 2: a {% filter %} block") and message in wrong
    with pytest.raises(errors.MutationError, match=r"a \{% filter %\} block"):
        templating.render_template(source, {"cr": widget({"name": "x\nhostNetwork: true", "pair": ["a", "b"]})})


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ('{% filter replace("NAME", "web") | upper %}\nname: NAME\n{% endfilter %}', {"NAME": "WEB"}),
        ("name: {% filter indent(4) %}{{ cr.spec.name }}{% endfilter %}", {"name": "x\nhostNetwork: true"}),
        ("{% filter trim %}\nname: {% if cr.spec.name %}set{% endif %}\n{% endfilter %}", {"name": "set"}),
    ],
)
def test_a_filter_block_of_constants_over_the_templates_own_text_filters_it(template: str, expected: Any) -> None:
    rendered = templating.render_template(f"kind: X\n{template}\n", {"cr": widget({"name": "x\nhostNetwork: true"})})

    assert rendered == {"kind": "X", **expected}


class LockSpec(pydantic.BaseModel):
    pin: pydantic.SecretStr
    code: pydantic.Secret[int]


@pytest.mark.parametrize(
    "expression",
    [
        "cr.spec.pin.get_secret_value() | int",
        "cr.spec.pin.get_secret_value() | float",
        "cr.spec.code.get_secret_value() ** 100000",
        # errors of expressions on the value wrote it in their message, into the Ready condition
        "[1, 2].index(cr.spec.pin.get_secret_value())",
        "{'a': 1}.pop(cr.spec.pin.get_secret_value())",
        "'%(x)s' % {cr.spec.pin.get_secret_value(): 1}",
        "('{0:' ~ cr.spec.pin.get_secret_value() ~ '}').format(1)",
        "cr.spec.pin.get_secret_value().split('-') | dictsort",
        "range(cr.spec.code.get_secret_value() | string | int, 1, 0)[0]",
        "[].pop(cr.spec.code.get_secret_value())",
    ],
)
def test_a_template_error_never_carries_a_secret_value(expression: str) -> None:
    spec = {"pin": "hunter2-not-a-number", "code": 987654321}
    raw = {"apiVersion": "x/v1", "kind": "Lock", "metadata": {"name": "n"}, "spec": spec}
    cr = objects.CustomResource(raw, spec=LockSpec.model_validate(spec))

    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: ") as caught:
        templating.render_template(f"kind: Secret\nstringData:\n  pin: '{{{{ {expression} }}}}'\n", {"cr": cr})

    assert "hunter2" not in str(caught.value)
    assert "987654321" not in str(caught.value)


@pytest.mark.parametrize(
    "expression",
    [
        "cr.spec.pin.get_secret_value().encode('ascii')",
        "cr.spec.pin.get_secret_value().upper().encode('ascii')",  # text made of it
        "cr.spec.pin.get_secret_value()[3:].encode('latin-1')",  # a part of it
        "cr.spec.pin.get_secret_value().encode('utf-8').decode('ascii')",
        "cr.spec.pin.get_secret_value().encode('cp437')",
        "cr.spec.pin.get_secret_value().encode('idna')",  # its own UnicodeError, naming the character
    ],
)
def test_a_codec_error_on_a_secret_value_names_neither_its_character_nor_where(expression: str) -> None:
    # Python's message named the character and its position: "can't encode character '\xe4' in position 1".
    spec = {"pin": "pässwörd\u0100\u202e", "code": 1}
    raw = {"apiVersion": "x/v1", "kind": "Lock", "metadata": {"name": "n"}, "spec": spec}
    cr = objects.CustomResource(raw, spec=LockSpec.model_validate(spec))

    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: ") as caught:
        templating.render_template(f"kind: Secret\nstringData:\n  pin: '{{{{ {expression} }}}}'\n", {"cr": cr})

    message = str(caught.value)
    assert "codec" in message
    for part in ("position", "xe4", "xc4", "100", "202", "U+", "ä", "Ä", "ssw"):
        assert part not in message


@pytest.mark.parametrize(
    "expression",
    [
        "[].index(token.get_secret_value())",
        "token.get_secret_value().encode('ascii')",
        "tokens | first | lower",
    ],
)
def test_a_secret_the_reconciler_passes_in_params_as_a_pydantic_secret_is_withheld_from_errors(expression: str) -> None:
    # What the docs tell a reconciler to do with a value read out of a Secret: okt cannot tell a plain string from it.
    params = {"token": pydantic.SecretStr("tökenvalue"), "tokens": [pydantic.SecretStr("tökenvalue")]}

    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: ") as caught:
        templating.render_template(f"kind: Secret\nstringData: {{t: '{{{{ {expression} }}}}'}}\n", params)

    assert "kenval" not in str(caught.value)
    assert "position" not in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        (
            "cr.spec.name.encode('ascii')",
            "the 'ascii' codec cannot encode the character U+202E RIGHT-TO-LEFT OVERRIDE at position 1 (and 1 more "
            "after it): ordinal not in range(128) (UnicodeEncodeError)",
        ),
        (
            "cr.spec.name[2:].encode('ascii')",
            "the 'ascii' codec cannot encode the character U+2028 LINE SEPARATOR at position 0: ordinal not in "
            "range(128) (UnicodeEncodeError)",
        ),
        (
            "cr.spec.name.encode('utf-8').decode('ascii')",
            "the 'ascii' codec cannot decode the byte 0xE2 at position 1: ordinal not in range(128) "
            "(UnicodeDecodeError)",
        ),
    ],
)
def test_a_codec_error_names_the_line_the_codec_and_the_character_by_its_code(expression: str, said: str) -> None:
    cr = widget({"name": "a\u202e\u2028\nb"})

    with pytest.raises(errors.InvalidSpec) as caught:
        templating.render_template(f"kind: X\n\nv: {{{{ {expression} }}}}\n", {"cr": cr})

    assert str(caught.value).startswith(f"template line 3: {said}: the template cannot use a value")
    assert not {"\u202e", "\n", "\u2028"} & set(str(caught.value))  # no character that moves or breaks the text


@pytest.mark.parametrize(
    ("start", "step"),
    [
        ('"x"', "{% set ns.v = ns.v ~ ns.v %}"),
        ('"x"', "{% set ns.v = ns.v + ns.v %}"),
        ("[1]", "{% set ns.v = ns.v + ns.v %}"),
        ("[1]", "{% set done = ns.v.extend(ns.v) %}"),
    ],
    ids=["~ of strings", "+ of strings", "+ of lists", "extend"],
)
def test_a_value_doubled_as_often_as_the_custom_resource_says_is_an_invalid_spec(start: str, step: str) -> None:
    # 2**64 characters or items: the memory of the process
    template = (
        f"{{% set ns = namespace(v={start}) %}}kind: X\n"
        f"{{% for i in range(cr.spec.n) %}}\n{step}\n{{% endfor %}}\nsize: {{{{ ns.v | length }}}}\n"
    )

    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: .* would build \d+ (characters|items), more than"):
        templating.render_template(template, {"cr": widget({"n": 64})})
    assert templating.render_template(template, {"cr": widget({"n": 3})}) == {"kind": "X", "size": 8}


def test_a_long_skeleton_from_a_custom_resources_list_is_not_kept() -> None:
    # its tree was kept for each length of the list: 20 custom resources of 50000 items held 800 MB
    template = "kind: X\nitems:\n{% for item in cr.spec.items %}\n  - {{ item }}\n{% endfor %}\n"
    kept = templating._parse.cache_info().currsize

    for length in (5000, 5001):
        items = [f"item{i}" for i in range(length)]
        assert templating.render_template(template, {"cr": widget({"items": items})})["items"] == items

    assert templating._parse.cache_info().currsize == kept


@pytest.mark.parametrize(
    ("template", "spec"),
    [
        (
            "kind: X\n{% for i in range(cr.spec.n) %}{% for j in range(cr.spec.n) %}{% endfor %}{% endfor %}\n",
            {"n": 100_000},
        ),
        (
            "kind: X\n{% for a in cr.spec.items %}{% for b in cr.spec.items if a == b and false %}"
            "{% endfor %}{% endfor %}\n",
            {"items": list(range(100_000))},
        ),
        (
            "kind: X\n{% set ns = namespace(tree=[]) %}{% for i in range(cr.spec.n) %}"
            "{% set ns.tree = [ns.tree, ns.tree] %}{% endfor %}"
            "{% for node in ns.tree recursive %}{% if node and loop(node) %}{% endif %}{% endfor %}\n",
            {"n": 40},
        ),
        (
            "kind: X\n{% macro f(n) %}{% if n %}{% set a = f(n - 1) %}{% set b = f(n - 1) %}{% endif %}{% endmacro %}"
            "{% set x = f(cr.spec.n) %}\n",
            {"n": 40},
        ),
    ],
    ids=["ranges", "lists", "recursive loop", "macro calling itself twice"],
)
def test_loops_running_as_often_as_the_custom_resource_says_stop_at_a_bound(
    template: str, spec: dict[str, Any]
) -> None:
    # 10**10 steps (2**40 loop(...) or macro calls) that output nothing: the worker never came back
    message = r"^template line 2: the template's loops and macro calls would run more than \d+ "
    with pytest.raises(errors.InvalidSpec, match=message):
        templating.render_template(template, {"cr": widget(spec)})


def test_values_placed_past_the_bound_name_the_line_that_placed_the_last() -> None:
    # was "template line ?": the render's text was counted once the template had ended
    template = "kind: X\na: {{ cr.spec.text }}\nb: {{ cr.spec.text }}\nc: x\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: the rendered template would build"):
        templating.render_template(template, {"cr": widget({"text": "x" * 2_000_000})})


class Credentials(pydantic.BaseModel):
    user: str
    password: pydantic.SecretStr


class Auth(pydantic.BaseModel):
    credentials: Credentials
    tokens: list[pydantic.SecretStr] = []
    keys: dict[str, pydantic.SecretStr] = {}
    blob: pydantic.SecretBytes = pydantic.SecretBytes(b"b1ob")
    code: pydantic.Secret[int] = pydantic.Secret[int](4321)


SECRET_SPEC = Auth(
    credentials=Credentials(user="app", password=pydantic.SecretStr("s3cret")),
    tokens=[pydantic.SecretStr("t0ken")],
    keys={"api": pydantic.SecretStr("k3y")},
)


def secret_cr() -> objects.CustomResource:
    return objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}, spec=SECRET_SPEC)


@pytest.mark.parametrize(
    "line",
    [
        "  dsn: app:{{ cr.spec.credentials.password }}@db",  # was app:**********@db
        "  dsn: '{{ \"app:\" ~ cr.spec.credentials.password }}'",  # was app:**********
        "  credentials: {{ cr.spec.credentials }}",  # was {user: app, password: '**********'}
        "  credentials: {{ cr.spec.credentials | to_yaml }}",  # was {user: app, password: '**********'}
        "  credentials: {{ cr.spec | tojson }}",  # was {credentials: {user: app, password: '**********'}}
        "  secrets: {{ [cr.spec.credentials.password] }}",  # was ['**********']
        "  password: {{ cr.spec.credentials.password | string }}",  # was **********
        "  dsn: '{{ \"app:%s\" % cr.spec.credentials.password }}'",  # was app:**********
        "  dsn: '{{ \"app:%(p)s\" | format(p=cr.spec.credentials.password) }}'",  # was app:**********
        "  dsn: '{{ \"app:{}\".format(cr.spec.credentials.password) }}'",  # was app:**********
        "  dsn: '{{ \"app:{0.password}\".format(cr.spec.credentials) }}'",  # was app:**********
        '  dsn: \'{{ ["app", cr.spec.credentials.password] | join(":") }}\'',  # was app:**********
        '  dsn: \'{{ ":".join(["app", cr.spec.credentials.password]) }}\'',  # was app:**********
    ],
)
def test_a_placed_pydantic_secret_is_an_invalid_spec_saying_to_read_its_value_explicitly(line: str) -> None:
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}, spec=SECRET_SPEC)
    template = f"kind: Secret\nmetadata:\n  name: w\nstringData:\n{line}\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 5: .*Secret.*get_secret_value\(\)") as caught:
        templating.render_template(template, {"cr": cr})

    assert "s3cret" not in str(caught.value)
    assert "**" not in str(caught.value)


def test_a_pydantic_secret_read_with_get_secret_value_is_placed() -> None:
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}, spec=SECRET_SPEC)
    template = "kind: Secret\nstringData:\n  password: {{ cr.spec.credentials.password.get_secret_value() }}\n"

    assert templating.render_template(template, {"cr": cr}) == {"kind": "Secret", "stringData": {"password": "s3cret"}}


@pytest.mark.parametrize(
    "line",
    [
        "  password: {{ cr.spec.credentials.password | lower }}",
        "  password: {{ cr.spec.credentials.password | upper }}",
        "  password: {{ cr.spec.credentials.password | title }}",
        "  password: {{ cr.spec.credentials.password | capitalize }}",
        "  password: {{ cr.spec.credentials.password | truncate(3) }}",
        "  password: {{ cr.spec.credentials.password | trim }}",
        "  password: {{ cr.spec.credentials.password | center(20) }}",
        "  password: {{ cr.spec.credentials.password | replace('*', 'x') }}",  # was xxxxxxxxxx
        "  password: {{ 'x' | replace('x', cr.spec.credentials.password) }}",
        "  password: {{ cr.spec.credentials.password | striptags }}",
        "  password: {{ cr.spec.credentials.password | escape }}",
        "  password: {{ cr.spec.credentials.password | safe }}",
        "  password: {{ cr.spec.credentials.password | urlize }}",
        "  password: {{ cr.spec.credentials.password | urlencode }}",  # was %2A%2A...
        "  password: {{ cr.spec.credentials.password | pprint }}",  # was SecretStr('**********')
        "  password: {{ cr.spec.credentials.password | wordwrap(3) }}",  # was an AttributeError out of the reconcile
        "  size: {{ cr.spec.credentials.password | length }}",  # was 6, the secret's length
        "  words: {{ cr.spec.credentials.password | wordcount }}",  # was 0
        "  pin: {{ cr.spec.credentials.password | int }}",  # was 0
        "  pin: {{ cr.spec.code | string }}",
        "  same: {{ cr.spec.credentials.password == 's3cret' }}",  # was false
        "  password: {{ cr.spec.credentials.password.upper() }}",
        "  blob: {{ cr.spec.blob | lower }}",  # was b'**********'
        "  tokens: {{ cr.spec.tokens | map('lower') | join(',') }}",
        "  token: {{ cr.spec.tokens | first | lower }}",
        "  token: {{ cr.spec.tokens[0] | lower }}",
        "  key: {{ cr.spec.keys.api | lower }}",
        "  key: {{ cr.spec.keys['api'] | lower }}",
        "  tokens: '{% for token in cr.spec.tokens %}{{ token | upper }}{% endfor %}'",
        "  dsn: {{ 'app:' ~ cr.spec.credentials.password | lower }}",
        "  password: {{ cr.spec.credentials.model_dump().values() | list | last | lower }}",  # was **********
        "  pair: {{ cr.spec.credentials.model_dump() | dictsort | first | lower }}",  # was ('password', secretstr(...
    ],
)
def test_a_pydantic_secret_made_text_by_any_string_operation_is_an_invalid_spec_naming_the_line(line: str) -> None:
    # each wrote pydantic's mask, **********, or a value made of it, into the child as if it were the secret
    template = f"kind: Secret\nmetadata:\n  name: w\nstringData:\n{line}\n"

    with pytest.raises(errors.InvalidSpec, match=r"^template line 5: a Secret(Str|Bytes|\[int\])? .*") as caught:
        templating.render_template(template, {"cr": secret_cr()})

    message = str(caught.value)
    assert "pydantic's mask" in message
    assert "get_secret_value()" in message
    for value in ("s3cret", "t0ken", "k3y", "b1ob", "4321", "**"):
        assert value not in message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("password: {{ cr.spec.credentials.password }}", {"password": "s3cret"}),
        ("password: '{{ cr.spec.credentials.password }}'", {"password": "s3cret"}),
        ("password: \"{{ cr.spec.credentials.password | default('x') }}\"", {"password": "s3cret"}),
        ("token: {{ cr.spec.tokens[0] }}", {"token": "t0ken"}),
        ("api: {{ cr.spec.keys.api }}", {"api": "k3y"}),
        ("pin: {{ cr.spec.code }}", {"pin": 4321}),
        (
            "{% for token in cr.spec.tokens %}token{{ loop.index }}: {{ token }}\n  {% endfor %}set: "
            "{{ 'yes' if cr.spec.credentials.password else 'no' }}",
            {"token1": "t0ken", "set": "yes"},
        ),
    ],
)
def test_a_pydantic_secret_placed_alone_is_placed_as_its_value(line: str, expected: dict[str, Any]) -> None:
    # was an InvalidSpec saying to read it with get_secret_value(): its mask was refused, never its value placed
    template = f"kind: Secret\nstringData:\n  {line}\n"

    assert templating.render_template(template, {"cr": secret_cr()}) == {"kind": "Secret", "stringData": expected}


def test_a_pydantic_secret_bytes_placed_alone_is_its_base64_as_kubernetes_writes_bytes() -> None:
    template = "kind: Secret\ndata:\n  blob: {{ cr.spec.blob }}\n"

    assert templating.render_template(template, {"cr": secret_cr()}) == {"kind": "Secret", "data": {"blob": "YjFvYg=="}}


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("kind: X\ndata:\n  {{ a }}: 1\n  {{ b }}: 2\n", r"^data: two keys placed from values \('\{\{ \}\}' and"),
        ("kind: X\ndata:\n  {{ a }}:\n    k: 1\n    k{{ e }}: 2\n", r"^data\.\{\{ \}\}: the key 'k' appears twice"),
        (
            "kind: X\ndata:\n  {{ a }}-x:\n    k: [{{ n | to_yaml }}: 1]\n",
            r"^data\.\{\{ \}\}-x\.k\[0\]: a mapping key must",
        ),
    ],
    ids=["two keys from values", "the path to a duplicate", "the path to an unplaceable key"],
)
def test_a_key_placed_from_a_value_is_never_named_in_an_invalid_spec(template: str, message: str) -> None:
    # a value read out of a Secret, placed as a key, went to the Ready condition
    variables = {"a": "s3cret", "b": "s3cret", "e": "", "n": [1]}

    with pytest.raises(errors.InvalidSpec, match=message) as caught:
        templating.render_template(template, variables)

    assert "s3cret" not in str(caught.value)


def test_a_missing_item_read_with_a_value_is_never_named_in_the_error() -> None:
    template = "kind: X\nv: '{{ cr.spec.passwords[cr.spec.user] }}'\n"
    cr = widget({"user": "s3cret", "passwords": {"app": "x"}})

    with pytest.raises(errors.MutationError, match=r"'dict' object has no item for that str") as caught:
        templating.render_template(template, {"cr": cr})

    assert "s3cret" not in str(caught.value)


def test_a_missing_attribute_read_with_a_value_is_never_named_in_the_error() -> None:
    template = "kind: X\nv: '{{ cr.spec.passwords | attr(cr.spec.user) }}'\n"
    cr = widget({"user": "s3cret", "passwords": {"app": "x"}})

    with pytest.raises(errors.MutationError, match=r"'dict' object has no attribute for that str") as caught:
        templating.render_template(template, {"cr": cr})

    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('(cr.spec.name | attr("upper"))()', "WEB"),
        ("cr | attr('name')", "w"),
    ],
)
def test_attr_reads_what_jinja_reads(expression: str, expected: str) -> None:
    cr = widget({"name": "web"})

    assert templating.render_template(f"kind: X\nv: '{{{{ {expression} }}}}'\n", {"cr": cr})["v"].startswith(expected)


class Tagged(pydantic.BaseModel):
    tags: set[int]
    names: frozenset[str] = frozenset()


class Tags(pydantic.BaseModel):
    tagged: Tagged
    more: list[Tagged] = []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("v: {{ cr.spec.tagged.tags }}", [0, 8]),
        ("v: {{ cr.spec.tagged.tags | to_yaml }}", [0, 8]),
        ("v: {{ cr.spec.tagged.tags | tojson }}", [0, 8]),
        ("v: {{ cr.spec.tagged }}", {"tags": [0, 8], "names": ["a", "b", "c"]}),
        (
            "v: {{ cr.spec | tojson }}",
            {"tagged": {"tags": [0, 8], "names": ["a", "b", "c"]}, "more": [{"tags": [0, 8], "names": []}]},
        ),
        ('v: "{% for tag in cr.spec.tagged.tags %}{{ tag }},{% endfor %}"', "0,8,"),
        ('v: {{ cr.spec.tagged.tags | join(",") }}', "0,8"),
        ('v: {{ cr.spec.tagged.names | join(",") }}', "a,b,c"),
        ("v: {{ tags | list }}", [0, 8]),
        ("v: {{ tags }}", [0, 8]),
    ],
)
def test_a_set_is_read_and_placed_in_one_order_whatever_its_history(line: str, expected: Any) -> None:
    # the set {0, 8} built from [8, 0] iterated 8, 0, and a set of strings took another order in each process (hash
    # randomization): the same desired child rendered otherwise, its checksum changed, and a restart rewrote it
    spec = Tags.model_validate(
        {"tagged": {"tags": [8, 0], "names": ["c", "a", "b"]}, "more": [{"tags": [8, 0], "names": []}]}
    )
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}, spec=spec)
    tags = {8}
    tags.add(0)

    assert templating.render_template(f"kind: X\n{line}\n", {"cr": cr, "tags": tags})["v"] == expected


@pytest.mark.parametrize(
    ("step", "n", "small"),
    [
        ("{% set ns.v = ns.v * ns.v %}", 20, "100000000"),
        ("{% set ns.v = ns.v + ns.v %}", 20_000, "80"),
        ("{% set ns.v = ns.v - (0 - ns.v) %}", 20_000, "80"),
    ],
    ids=["*", "+", "-"],
)
def test_an_integer_grown_as_often_as_the_custom_resource_says_is_an_invalid_spec(
    step: str, n: int, small: str
) -> None:
    # squaring 30 times gave a number of 10**9 digits, each product slower than the last: the worker never came back
    # (a number the template never writes out, compared or counted, was never refused)
    template = (
        "kind: X\n{% set ns = namespace(v=cr.spec.base) %}{% for i in range(cr.spec.n) %}\n"
        f"{step}\n{{% endfor %}}\nv: '{{{{ ns.v if ns.v < 10 ** 9 else 0 }}}}'\n"
    )

    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: an integer .* would have \d+ digits, more than"):
        templating.render_template(template, {"cr": widget({"base": 10, "n": n})})
    assert templating.render_template(template, {"cr": widget({"base": 10, "n": 3})}) == {"kind": "X", "v": small}


@pytest.mark.parametrize(
    ("line", "spec"),
    [
        ("v: {{ cr.spec.x | float }}", {"x": "nan"}),
        ("v: {{ cr.spec.x | float }}", {"x": "-inf"}),
        ("v: {{ cr.spec.x * 10 }}", {"x": 1e308}),
        ("v: {{ [cr.spec.x | float] }}", {"x": "inf"}),
        ("v: {{ {'a': cr.spec.x | float} | to_yaml }}", {"x": "nan"}),
        ("v: {{ {'a': cr.spec.x | float} | tojson }}", {"x": "nan"}),
    ],
)
def test_a_number_json_cannot_write_is_an_invalid_spec(line: str, spec: dict[str, Any]) -> None:
    # NaN or an infinity went into the child, and its checksum raised a ValueError at each reconcile, retried for ever
    with pytest.raises(errors.InvalidSpec, match=r"^(template line 2|v).*: .*a number JSON cannot write"):
        templating.render_template(f"kind: X\n{line}\n", {"cr": widget(spec)})


class Ratio(pydantic.BaseModel):
    ratio: float


@pytest.mark.parametrize("line", ["v: {{ cr.spec.ratio }}", "v: {{ cr.spec }}", "v: {{ [cr.spec] }}"])
def test_a_spec_models_float_given_inf_is_an_invalid_spec_where_it_is_placed(line: str) -> None:
    # pydantic reads the string "inf" as a float field's infinity
    cr = objects.CustomResource(
        {"kind": "Widget", "metadata": {"name": "w"}}, spec=Ratio.model_validate({"ratio": "inf"})
    )

    with pytest.raises(errors.InvalidSpec, match=r"^v: not a finite number"):
        templating.render_template(f"kind: X\n{line}\n", {"cr": cr})


class NullRatio(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(ser_json_inf_nan="null")

    ratio: float
    limit: Annotated[float, pydantic.PlainSerializer(lambda v: v if math.isfinite(v) else None, when_used="json")] = 1


@pytest.mark.parametrize("line", ["v: {{ cr.spec | to_yaml }}", "v: '{{ cr.spec | tojson }}'", "v: {{ cr.spec }}"])
@pytest.mark.parametrize("spec", [{"ratio": "inf"}, {"ratio": 1, "limit": "nan"}])
def test_a_spec_models_float_given_inf_is_an_invalid_spec_whatever_its_json_form(line: str, spec: Any) -> None:
    # a serializer writing JSON's null for it (as ser_json_inf_nan="null" writes its JSON text) placed null silently
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w"}}, spec=NullRatio.model_validate(spec))

    with pytest.raises(errors.InvalidSpec, match=r"not a finite number"):
        templating.render_template(f"kind: X\n{line}\n", {"cr": cr})


def test_a_number_json_cannot_write_stays_its_text_in_a_string() -> None:
    template = "kind: X\nv: '{{ cr.spec.x | float }}'\n"

    assert templating.render_template(template, {"cr": widget({"x": "nan"})}) == {"kind": "X", "v": "nan"}


@pytest.mark.parametrize(
    ("expression", "spec"),
    [
        ("cr.spec.labels | dictsort", {"labels": "app=web"}),
        ("cr.spec.labels | xmlattr", {"labels": ["app"]}),
    ],
)
def test_a_filter_given_a_value_of_another_type_is_an_invalid_spec_naming_the_line(
    expression: str, spec: dict[str, Any]
) -> None:
    # an AttributeError ('str' object has no attribute 'items') left the render, an error retried for ever
    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: .*\(AttributeError\): the template cannot use"):
        templating.render_template(f"kind: X\nv: '{{{{ {expression} }}}}'\n", {"cr": widget(spec)})


def test_a_set_read_again_in_a_render_is_the_same_set_in_the_same_order() -> None:
    # each read sorted the set again into a list: `tag in cr.spec.tagged.tags` in a loop over its items was quadratic
    spec = Tags.model_validate({"tagged": {"tags": [8, 0], "names": ["c", "a", "b"]}})
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}, spec=spec)
    template = (
        "kind: X\nsame: {{ cr.spec.tagged.names is sameas cr.spec.tagged.names }}\n"
        "found: {{ cr.spec.tagged.names | select('in', cr.spec.tagged.names) | list }}\n"
        "text: '{{ cr.spec.tagged.tags }}'\n"
    )

    assert templating.render_template(template, {"cr": cr}) == {
        "kind": "X",
        "same": True,
        "found": ["a", "b", "c"],
        "text": "{0, 8}",
    }


@pytest.mark.parametrize(
    "expression", ["cr.spec.hosts | random", "lipsum(1)", "[cr.spec.hosts] | map('random') | list"]
)
def test_a_template_placing_another_value_at_each_render_is_refused(expression: str) -> None:
    # another value at each render: the child's checksum changed at each reconcile and okt rewrote it each time (a
    # password drawn with | random changed at each one)
    template = f"kind: X\nv: '{{{{ {expression} }}}}'\n"

    with pytest.raises(errors.MutationError, match=r"give another value at each render") as caught:
        templating.render_template(template, {"cr": widget({"hosts": ["a", "b", "c"]})})

    assert not isinstance(caught.value, errors.InvalidSpec)


@pytest.mark.parametrize("expression", ["cr.spec.hosts | random", "lipsum(1)"])
def test_a_template_placing_another_value_at_each_render_does_not_compile(expression: str) -> None:
    assert (templating.syntax_error(f"kind: X\nv: '{{{{ {expression} }}}}'\n") or "").startswith("line 2: ")


@pytest.mark.parametrize(
    ("line", "params"),
    [
        ("token: {{ params.tokens | first | lower }}", {"params": {"tokens": [pydantic.SecretStr("t0ken")]}}),
        ("token: {{ tokens | last | upper }}", {"tokens": [pydantic.SecretStr("t0ken")]}),
        ("token: {{ keys | dictsort | first | last | lower }}", {"keys": {"api": pydantic.SecretStr("k3y")}}),
        ("token: {{ keys.values() | list | first | trim }}", {"keys": {"api": pydantic.SecretStr("k3y")}}),
        ("token: {{ nested | map('first') | first | lower }}", {"nested": [[pydantic.SecretStr("t0ken")]]}),
    ],
)
def test_a_pydantic_secret_inside_a_variables_container_made_text_by_a_filter_is_an_invalid_spec(
    line: str, params: dict[str, Any]
) -> None:
    # a filter iterating the container handed on pydantic's object, and its mask, **********, went into the child
    with pytest.raises(errors.InvalidSpec, match=r"^template line 3: a SecretStr .*pydantic's mask") as caught:
        templating.render_template(f"kind: Secret\nstringData:\n  {line}\n", params)

    assert "t0ken" not in str(caught.value) and "k3y" not in str(caught.value)


def test_a_pydantic_secret_inside_a_variables_container_placed_alone_is_its_value() -> None:
    params = {"params": {"tokens": [pydantic.SecretStr("t0ken")], "plain": ["a"]}}
    template = "kind: Secret\nstringData:\n  token: {{ params.tokens | first }}\n  plain: {{ params.plain | first }}\n"

    assert templating.render_template(template, params) == {
        "kind": "Secret",
        "stringData": {"token": "t0ken", "plain": "a"},
    }
    assert params == {"params": {"tokens": [pydantic.SecretStr("t0ken")], "plain": ["a"]}}  # the caller's, unchanged


def test_a_variable_without_secrets_is_read_as_the_very_object_given() -> None:
    hosts = ["a", "b"]

    template = "kind: X\nsame: {{ hosts is sameas given }}\n"

    assert templating.render_template(template, {"hosts": hosts, "given": hosts}) == {"kind": "X", "same": True}


@pytest.mark.parametrize(
    "line",
    ["v: {{ cr.spec.labels | items }}", "v: '{{ cr.spec.labels | items }}'", "v: {{ {'a': cr.spec.labels | items} }}"],
)
def test_items_of_a_value_that_is_no_mapping_is_an_invalid_spec_naming_the_line(line: str) -> None:
    # quoted, the text <generator object do_items at 0x...> went into the child; whole, a TypeError left the render
    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: Can only get item pairs from a mapping"):
        templating.render_template(f"kind: X\n{line}\n", {"cr": widget({"labels": "app=web"})})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("cr.spec.labels | items", "[('app', 'web')]"),
        ("cr.spec.hosts | map('upper')", "['A', 'B']"),
        ("cr.spec.hosts | select('ne', 'a')", "['b']"),
        ("cr.spec.hosts | reject('ne', 'a')", "['a']"),
        ("cr.spec.hosts | unique", "['a', 'b']"),
        ("cr.spec.hosts | reverse", "['b', 'a']"),
        ("cr.spec.hosts | batch(1)", "[['a'], ['b']]"),
        ("cr.spec.hosts | slice(1)", "[['a', 'b']]"),
        ("cr.spec.hosts | select('eq', 'z') | length", "0"),
        ("'some' if cr.spec.hosts | select('eq', 'z') else 'none'", "none"),
        ("cr.spec.hosts | map('upper') == cr.spec.hosts | map('upper')", "True"),
    ],
)
def test_a_filter_giving_items_one_at_a_time_gives_a_list_the_same_at_each_render(
    expression: str, expected: str
) -> None:
    # each placed its iterator's text, <generator object ... at 0x7f...>, another at each render: the child's
    # checksum changed at each reconcile; its length was a TypeError and its truth always true
    template = f"kind: X\nv: '{{{{ {expression} }}}}'\n"
    cr = widget({"labels": {"app": "web"}, "hosts": ["a", "b"]})

    assert templating.render_template(template, {"cr": cr}) == {"kind": "X", "v": expected}


@pytest.mark.parametrize("quote", ["", "'"])
@pytest.mark.parametrize(
    "expression", ["cr.spec.name.upper", "cr.spec.labels.keys", "range", "joiner()", "cycler(1, 2)", "opaque"]
)
def test_a_value_whose_text_is_its_address_in_memory_is_a_mutation_error(expression: str, quote: str) -> None:
    # its text, <built-in method upper of str object at 0x7f...>, went into the child, another at each render (a
    # Cycler placed whole was a TypeError out of the render)
    cr = widget({"name": "web", "labels": {"app": "web"}})
    template = f"kind: X\nv: {quote}{{{{ {expression} }}}}{quote}\n"

    with pytest.raises(errors.MutationError, match=r"^template error: .* its text is its address in memory") as caught:
        templating.render_template(template, {"cr": cr, "opaque": object()})

    assert not isinstance(caught.value, errors.InvalidSpec)


class Inputs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    hosts: list[str]
    labels: dict[str, str]
    tags: set[str]
    servers: list[dict[str, Any]] = []


def inputs_of(source: str) -> dict[str, Any]:
    """A render's variables holding ``hosts`` (a list), ``labels`` (a dict) and ``tags`` (a set) at ``source``: the
    custom resource's raw spec, its spec model, or the reconciler's params."""
    data: dict[str, Any] = {"hosts": ["b", "a"], "labels": {"app": "web"}, "tags": {"a"}, "servers": [{"n": 1}]}
    raw = {"kind": "Widget", "metadata": {"name": "w", "namespace": "ns", "labels": {"app": "web"}}}
    if source == "cr":
        return {"cr": objects.CustomResource({**raw, "spec": data}), "groups": [{"a"}]}
    if source == "model":
        model = Inputs.model_validate({**data, "more": {"k": "v"}})
        return {"cr": objects.CustomResource({**raw, "spec": {"size": 1}}, spec=model), "groups": [{"a"}]}
    return {**data, "cr": objects.CustomResource(raw), "groups": [{"a"}]}


def snapshot(variables: dict[str, Any]) -> Any:
    """Everything a render's variables hold, as data, to compare before and after."""
    cr = variables["cr"]
    spec = cr.spec.model_dump() if isinstance(cr.spec, pydantic.BaseModel) else cr.spec
    fields_set = sorted(cr.spec.model_fields_set) if isinstance(cr.spec, pydantic.BaseModel) else None
    rest = {name: value for name, value in variables.items() if name != "cr"}
    return repr((cr.raw, spec, fields_set, rest))


MUTATIONS = [
    "{list}.append('x')",
    "{list}.extend(['x'])",
    "{list}.insert(0, 'x')",
    "{list}.remove('a')",
    "{list}.pop()",
    "{list}.clear()",
    "{list}.sort()",
    "{list}.reverse()",
    "{dict}.update({'x': 'y'})",
    "{dict}.pop('app')",
    "{dict}.setdefault('x', 'y')",
    "{dict}.clear()",
    "{dict}.popitem()",
    "{set}.add('x')",
    "{set}.discard('a')",
]


@pytest.mark.parametrize("source", ["cr", "model", "params"])
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_template_changing_a_list_dict_or_set_it_reads_is_a_mutation_error_and_changes_nothing(
    mutation: str, source: str
) -> None:
    # {% set _ = cr.spec.hosts.append('x') %} changed the custom resource's object and the reconciler's params in
    # place: each render added another item, so the child changed at each reconcile, and later reads of the custom
    # resource saw it
    prefix = "" if source == "params" else "cr.spec."
    call = mutation.replace("{list}", f"{prefix}hosts").replace("{dict}", f"{prefix}labels")
    call = call.replace("{set}", f"{prefix}tags")
    variables = inputs_of(source)
    before = snapshot(variables)

    with pytest.raises(errors.MutationError, match=r"^template line 2: .*a template cannot change what it reads"):
        templating.render_template(f"kind: X\n{{% set _ = {call} %}}\nv: ok\n", variables)

    assert snapshot(variables) == before


@pytest.mark.parametrize(
    "statement",
    [
        "{% for server in cr.spec.servers %}{% set _ = server.update({'x': 1}) %}{% endfor %}",
        "{% set l = [cr.spec.hosts] %}{% set _ = l[0].append('x') %}",
        "{% set _ = (cr.spec.servers | first).clear() %}",
        "{% set _ = dict.update(cr.spec.labels, {'x': 'y'}) %}",
        "{% set _ = dict.pop(cr.spec.labels, 'app') %}",
        "{% set _ = namespace(cr.spec).hosts.append('x') %}",
        "{% set _ = (cr.spec.hosts | attr('append'))('x') %}",
        "{% set _ = cr.raw.metadata.labels.popitem() %}",
        "{% set _ = cr.metadata.labels.update({'x': 'y'}) %}",
        "{% set _ = cr.labels.clear() %}",
        "{% for group in groups %}{% set _ = group.add('x') %}{% endfor %}",
        "{% set _ = (groups | first).discard('a') %}",
    ],
)
@pytest.mark.parametrize("source", ["cr", "model"])
def test_a_template_changing_what_it_reads_through_an_item_alias_or_loop_is_a_mutation_error(
    statement: str, source: str
) -> None:
    variables = inputs_of(source)
    before = snapshot(variables)

    with pytest.raises(errors.MutationError, match=r"^template line 2: .*a template cannot change what it reads"):
        templating.render_template(f"kind: X\n{statement}\nv: ok\n", variables)

    assert snapshot(variables) == before


def test_a_spec_models_extra_fields_and_fields_set_are_read_only_to_a_template() -> None:
    variables = inputs_of("model")
    before = snapshot(variables)

    for statement in ("{% set _ = cr.spec.model_extra.update({'x': 'y'}) %}", "{% set _ = cr.spec.more.clear() %}"):
        with pytest.raises(errors.MutationError, match=r"a template cannot change what it reads"):
            templating.render_template(f"kind: X\n{statement}\nv: ok\n", variables)
    rendered = templating.render_template("kind: X\n{% set _ = cr.spec.model_fields_set | list %}\nv: ok\n", variables)

    assert rendered == {"kind": "X", "v": "ok"}
    assert snapshot(variables) == before


@pytest.mark.parametrize(
    ("statements", "expected"),
    [
        (
            "{% set ns = namespace(v=[]) %}{% for h in hosts %}{% set _ = ns.v.append(h ~ '-x') %}{% endfor %}"
            "{% set v = ns.v %}",
            ["b-x", "a-x"],
        ),
        ("{% set v = hosts | list %}{% set _ = v.append('c') %}{% set _ = v.sort() %}", ["a", "b", "c"]),
        ("{% set v = hosts + ['c'] %}{% set _ = v.reverse() %}{% set _ = v.remove('b') %}", ["c", "a"]),
        ("{% set v = [] %}{% set _ = v.extend(hosts) %}{% set _ = v.insert(0, v.pop()) %}", ["a", "b"]),
        (
            "{% set v = {} %}{% set _ = v.update(labels) %}{% set _ = v.setdefault('x', 'y') %}",
            {"app": "web", "x": "y"},
        ),
        ("{% set v = dict(labels) %}{% set _ = v.pop('app') %}", {}),
        ("{% set ns = namespace(d={}) %}{% set _ = ns.d.update({'n': hosts | length}) %}{% set v = ns.d %}", {"n": 2}),
        ("{% set v = {'a': [1]} %}{% set _ = v.a.append(2) %}{% set _ = v.popitem() %}", {}),
        ("{% set v = [[1]] %}{% set _ = v[0].clear() %}", [[]]),
    ],
)
def test_lists_and_dicts_a_template_builds_itself_stay_usable(statements: str, expected: Any) -> None:
    variables = inputs_of("params")
    before = snapshot(variables)
    template = f"kind: X\n{statements}\nv: {{{{ v }}}}\n"

    assert templating.render_template(template, variables) == {"kind": "X", "v": expected}
    assert templating.render_template(template, variables) == {"kind": "X", "v": expected}
    assert snapshot(variables) == before


@pytest.mark.parametrize(
    "statement",
    [
        "{% set _ = cr.spec.tokens.append('x') %}",
        "{% set t = cr.spec.tokens %}{% set _ = t.pop() %}",
        "{% set _ = cr.spec.keys.clear() %}",
        "{% set _ = tokens.append('x') %}",
    ],
)
def test_a_list_or_dict_of_pydantic_secrets_is_read_only_to_a_template_as_any_other(statement: str) -> None:
    # a field or parameter holding secrets is read through a copy with each one wrapped: changing that copy changed
    # nothing, silently, where any other field was refused
    variables = {"cr": secret_cr(), "tokens": [pydantic.SecretStr("t0ken")]}

    with pytest.raises(errors.MutationError, match=r"^template line 2: .*a template cannot change what it reads"):
        templating.render_template(f"kind: X\n{statement}\nv: ok\n", variables)


class Cache:
    """An object of the operator's own in the params (a client, a cache): no container, model or namespace."""

    def __init__(self) -> None:
        self.entries = ["a"]
        self.index = {"a": ["b"]}
        self.headers = collections.UserDict({"h": "v"})
        self._store = {"k": ["v"]}

    def lookup(self, key: str) -> list[str]:
        return self._store[key]


class Slotted:
    __slots__ = ("hosts",)

    def __init__(self) -> None:
        self.hosts = ["a"]


def opaque_params() -> dict[str, Any]:
    closed = {"app": "web"}
    settings = types.ModuleType("settings")
    settings.hosts = ["a"]  # type: ignore[attr-defined]

    def labels() -> dict[str, str]:
        return closed

    return {
        "cr": widget({}),
        "cache": Cache(),
        "slotted": Slotted(),
        "labels": labels,
        "named": functools.partial(dict),
        "settings": settings,
    }


def opaque_snapshot(variables: dict[str, Any]) -> Any:
    cache, slotted = variables["cache"], variables["slotted"]
    data = (cache.entries, cache.index, dict(cache.headers), cache._store, slotted.hosts, variables["labels"]())
    return repr((*data, variables["named"].keywords, variables["settings"].hosts))


@pytest.mark.parametrize(
    "statement",
    [
        "{% set _ = cache.entries.append('x') %}",
        "{% set _ = cache.index.a.clear() %}",
        "{% set _ = cache.index.update({'x': []}) %}",
        "{% set _ = cache.headers.update({'x': 'y'}) %}",
        "{% set _ = cache.headers.pop('h') %}",
        "{% set _ = cache.lookup('k').append('x') %}",
        "{% for entries in cache.index.values() %}{% set _ = entries.pop() %}{% endfor %}",
        "{% set _ = slotted.hosts.append('x') %}",
        "{% set _ = labels().update({'x': 'y'}) %}",
        "{% set _ = named.keywords.update({'x': 'y'}) %}",
        "{% set _ = settings.hosts.append('x') %}",
    ],
)
def test_a_template_changing_what_it_reaches_through_an_object_of_another_kind_is_a_mutation_error(
    statement: str,
) -> None:
    # the read-only walk followed containers, models, dataclasses and namespaces only: a list or dict an object of
    # the operator's own held (a client's, a cache's) was changed in place by the template
    variables = opaque_params()
    before = opaque_snapshot(variables)

    with pytest.raises(errors.MutationError, match=r"^template line 2: .*a template cannot change what it reads"):
        templating.render_template(f"kind: X\n{statement}\nv: ok\n", variables)

    assert opaque_snapshot(variables) == before


def test_lists_a_template_builds_beside_an_object_of_another_kind_stay_usable() -> None:
    variables = opaque_params()
    before = opaque_snapshot(variables)
    template = (
        "kind: X\n{% set v = cache.entries | list %}{% set _ = v.append('x') %}"
        "{% set d = dict(labels()) %}{% set _ = d.update({'x': 'y'}) %}\nv: {{ v }}\nd: {{ d }}\n"
    )

    assert templating.render_template(template, variables) == {
        "kind": "X",
        "v": ["a", "x"],
        "d": {"app": "web", "x": "y"},
    }
    assert opaque_snapshot(variables) == before


def machinery_params() -> dict[str, Any]:
    """Params holding I/O and concurrency machinery: okt's client, an HTTP session, a logger, a lock, and an object of
    the operator's own holding a logger."""
    log = logging.Logger("operator")  # of no manager's: its handler leaves with it
    log.addHandler(logging.NullHandler())
    session = requests.Session()
    session.headers = requests.structures.CaseInsensitiveDict({"h": "v"})
    return {
        "cr": widget({}),
        "client": loopback.client_for(9),  # nobody listens: building it sends nothing
        "session": session,
        "log": log,
        "lock": threading.Lock(),
        "settings": types.SimpleNamespace(log=log, replicas=3),
    }


def machinery_snapshot(variables: dict[str, Any]) -> Any:
    log, session = variables["log"], variables["session"]
    manager = log.manager.loggerDict
    return repr((log.handlers, dict(session.headers), variables["client"].stats.snapshot(), sorted(manager)))


@pytest.mark.parametrize(
    "statement",
    [
        "{% set _ = log.handlers.clear() %}",
        "{% set _ = settings.log.handlers.append(1) %}",
        "{% set _ = log.manager.loggerDict.clear() %}",
        "{% set _ = log['handlers'].clear() %}",
        "{% set _ = (log | attr('handlers')).clear() %}",
        "{% set _ = ([log] | map(attribute='handlers') | first).clear() %}",
        "{% set _ = '{0.handlers}'.format(log) %}",
        "{% set _ = session.headers.update({'x': 'y'}) %}",
        "{% set _ = client.stats.reset() %}",
        "{% set _ = lock.acquire() %}",
        "{% set _ = log.info('x') %}",
    ],
)
def test_a_template_reads_nothing_but_plain_values_of_a_client_session_logger_or_lock(statement: str) -> None:
    # the read-only walk no longer enters the machinery (it walked a client's connection pools and the logging
    # module's every logger at each render calling a changing method): so a template gets hold of nothing it holds
    variables = machinery_params()
    before = machinery_snapshot(variables)

    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: .*of I/O or concurrency machinery a template"):
        templating.render_template(f"kind: X\n{statement}\nv: ok\n", variables)

    assert machinery_snapshot(variables) == before
    assert variables["lock"].acquire(blocking=False)


def test_a_template_reads_the_plain_values_of_a_client_or_logger() -> None:
    variables = machinery_params()
    template = (
        "kind: X\n{% set ns = namespace(v=[]) %}{% set _ = ns.v.append(client.host) %}\n"
        "v: {{ ns.v }}\nname: {{ settings.log.name }}-{{ log.level }}-{{ log.propagate }}\n"
        "r: {{ settings.replicas }}\n"
    )

    rendered = templating.render_template(template, variables)

    assert rendered == {"kind": "X", "v": ["127.0.0.1:9"], "name": "operator-0-True", "r": 3}


@pytest.mark.parametrize("quote", ["", "'"])
@pytest.mark.parametrize(
    "expression",
    [
        "'x' ~ cr.spec.name.upper",
        "cr.spec.name ~ '-' ~ range",
        "cr.spec.name.upper | string | lower",
        "'x' ~ cr.spec.name.upper | upper",
        "[cr.spec.name, cr.spec.labels.keys] | join('-')",
        "'%s-x' % cycler(1, 2)",
        "'{}-x'.format(joiner())",
        "'x-' ~ [cr.spec.name.upper]",
        "[cr.spec.name.upper]",
        "{'k': opaque}",
    ],
)
def test_text_holding_an_address_in_memory_inside_a_larger_string_is_a_mutation_error(
    expression: str, quote: str
) -> None:
    # x<built-in method upper of str object at 0x7f...> went into the child, another at each render, so the child's
    # checksum changed at each reconcile (only a value that was wholly such text was refused)
    cr = widget({"name": "web", "labels": {"app": "web"}})
    template = f"kind: X\nv: {quote}{{{{ {expression} }}}}{quote}\n"

    with pytest.raises(errors.MutationError, match=r"^template error: .* its text is its address in memory") as caught:
        templating.render_template(template, {"cr": cr, "opaque": object()})

    assert not isinstance(caught.value, errors.InvalidSpec)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("v: x-{{ cr.spec.note }}", "x-<function f at 0x7f00deadbeef>"),
        ('v: \'{{ "x-" ~ cr.spec.note | replace("function", "fn") }}\'', "x-<fn f at 0x7f00deadbeef>"),
        ("v: '{{ [cr.spec.note] }}'", "['<function f at 0x7f00deadbeef>']"),
        ("v: '{{ cr.spec.note | upper }}'", "<FUNCTION F AT 0X7F00DEADBEEF>"),
    ],
)
def test_a_custom_resources_text_that_reads_like_an_address_in_memory_is_placed_as_data(
    line: str, expected: str
) -> None:
    cr = widget({"note": "<function f at 0x7f00deadbeef>"})

    assert templating.render_template(f"kind: X\n{line}\n", {"cr": cr}) == {"kind": "X", "v": expected}


@pytest.mark.parametrize(
    "line",
    [
        "v: '{{ cr.spec.model_dump_json() }}'",
        "v: {{ cr.spec.model_dump_json() }}",
        "v: '{{ cr.spec.model_dump_json(indent=2) | trim }}'",
        "v: {{ cr.spec.model_dump(mode='json') }}",
        "v: '{{ cr.spec.model_dump(mode='json').ratio }}'",
    ],
)
@pytest.mark.parametrize("model", [Ratio, NullRatio])
def test_a_spec_models_float_given_inf_made_json_by_its_own_method_is_an_invalid_spec(
    line: str, model: type[pydantic.BaseModel]
) -> None:
    # pydantic's model_dump_json() writes null for it: the child held null where the custom resource said inf
    cr = objects.CustomResource(
        {"kind": "Widget", "metadata": {"name": "w"}}, spec=model.model_validate({"ratio": "inf"})
    )

    with pytest.raises(errors.InvalidSpec, match=r"^template line 2: not a finite number"):
        templating.render_template(f"kind: X\n{line}\n", {"cr": cr})


def test_a_spec_models_json_made_by_its_own_method_is_placed_as_its_text() -> None:
    spec = NullRatio.model_validate({"ratio": 0.5, "limit": "inf"})
    cr = objects.CustomResource({"kind": "Widget", "metadata": {"name": "w"}}, spec=spec)
    template = "kind: X\nv: '{{ cr.spec.model_dump_json(exclude={'limit': true}) }}'\n"

    assert templating.render_template(template, {"cr": cr}) == {"kind": "X", "v": '{"ratio":0.5}'}
