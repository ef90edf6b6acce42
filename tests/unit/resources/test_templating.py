"""The parsed-once template plan gives exactly what rendering the whole text and parsing it gives — or steps aside."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Callable
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from okt import errors
from okt.resources import templating

ROOT = pathlib.Path(__file__).resolve().parents[3]
GENERATED = sorted(
    [*(ROOT / "tests/unit/codegen/golden").glob("*_gen.py"), *(ROOT / "samples").glob("*/*/resources/*_gen.py")]
)

HANDMADE = {
    "plain in the middle": "kind: ConfigMap\nmetadata:\n  name: {{ name }}-config\ndata:\n  a: x{{ v }}y\n",
    "typed plain": "kind: X\nspec:\n  replicas: {{ v }}\n  flag: {{ v }}\n",
    "single quoted": "kind: X\nspec:\n  s: '{{ v }} and {{ name }}'\n",
    "double quoted with escapes": 'kind: X\nspec:\n  s: "tab\\t{{ v }}"\n',
    "key": "kind: X\ndata:\n  {{ v }}: value\n  fixed-{{ name }}: 1\n",
    "flow sequence": 'kind: X\nspec:\n  args: [-m, {{ v }}, "{{ name }}"]\n',
    "flow mapping": "kind: X\nspec: {a: {{ v }}, b: 2}\n",
    "empty value": "kind: X\nspec:\n  a: {{ v }}\n  b: 1\n",
    "to_yaml filter": "kind: X\nspec:\n  items: {{ [v, name] | to_yaml }}\n",
}

TOKENS = [*"aZ09 :#-_.,[]{}\"'\\!?&*|>%@`~=\t\n", "yes", "null", "0x1F", "1e3", "12:30", "2001-12-14", ".inf", "~"]
VALUES = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=6).map("".join),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
)


def outcome(render: Callable[[str, dict[str, Any]], Any], template: str, variables: dict[str, Any]) -> Any:
    try:
        return ("ok", render(template, variables))
    except errors.MutationError as exc:
        return ("error", str(exc))


def variables_for(value: Any, name: str) -> dict[str, Any]:
    cr = {"name": name, "namespace": "ns", "spec": {"size": value, "image": value}}
    return {"name": name, "namespace": "ns", "cr": cr, "v": value, "password": value}


def generated_template(path: pathlib.Path) -> str:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TEMPLATE" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError(f"{path} has no TEMPLATE")


def test_every_generated_template_is_parsed_once() -> None:
    assert len(GENERATED) > 20
    assert [path.name for path in GENERATED if templating._plan(generated_template(path)) is None] == []


@pytest.mark.parametrize("path", GENERATED, ids=lambda path: path.name)
@hypothesis.given(value=VALUES, name=st.sampled_from(["web", "db-1", "a:b", "x #y"]))
def test_generated_templates_render_as_their_whole_text_parses(path: pathlib.Path, value: Any, name: str) -> None:
    template = generated_template(path)
    variables = variables_for(value, name)
    assert outcome(templating.render_template, template, variables) == outcome(
        templating.render_text, template, variables
    )


@pytest.mark.parametrize("template", HANDMADE.values(), ids=HANDMADE.keys())
@hypothesis.given(value=VALUES, name=st.sampled_from(["web", "db-1", "a:b", "x #y", "'q'", ""]))
def test_expressions_anywhere_in_scalars_render_as_the_whole_text_parses(template: str, value: Any, name: str) -> None:
    variables = variables_for(value, name)
    assert outcome(templating.render_template, template, variables) == outcome(
        templating.render_text, template, variables
    )


@pytest.mark.parametrize(
    "template",
    [
        "kind: X\n{% if v %}spec: {}\n{% endif %}",
        "kind: X\n{# note #}spec: {}\n",
        "kind: X\nspec:\n  a: {{ v -}}\n  \n  b: 1\n",
        "kind: X\nspec: !!str {{ v }}\n",
        "kind: X\nbase: &b {a: 1}\nspec: *b\nname: {{ v }}\n",
        "kind: X\nspec:\n  script: |\n    echo {{ v }}\n",
        "kind: X\nspec:\n  at: 2001-12-14\n  v: {{ v }}\n",
        "kind: X\nspec: {}\n",
    ],
    ids=["block", "comment", "whitespace control", "tag", "alias", "block scalar", "timestamp", "no expression"],
)
def test_what_the_plan_cannot_represent_takes_the_text_path(template: str) -> None:
    assert templating._plan(template) is None
    variables = {"v": "x"}
    assert outcome(templating.render_template, template, variables) == outcome(
        templating.render_text, template, variables
    )


def test_an_undefined_variable_is_the_same_one_line_error_on_both_paths() -> None:
    template = "kind: X\nspec:\n  a: {{ missing }}\n"
    assert templating._plan(template) is not None
    with pytest.raises(errors.MutationError) as fast:
        templating.render_template(template, {})
    with pytest.raises(errors.MutationError) as text:
        templating.render_text(template, {})
    assert str(fast.value) == str(text.value) == "template error: 'missing' is undefined"


def test_each_render_is_a_private_object() -> None:
    template = "kind: X\nspec:\n  items: [a, {{ v }}]\n"
    first = templating.render_template(template, {"v": "b"})
    first["spec"]["items"].append("mutated")
    assert templating.render_template(template, {"v": "b"}) == {"kind": "X", "spec": {"items": ["a", "b"]}}
