"""The two sizes a template's bounds count a value by, in one walk: the fewest characters its JSON may take (a filter's
input, never refusing what a child holds) and about those it takes once placed (more, to bound what is placed)."""

from __future__ import annotations

import enum
from typing import Any

import pydantic
import pytest

from okt.resources import template_limits


class _Model(pydantic.BaseModel):
    a: int = 1
    b: str | None = None


class _Colour(enum.StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    ("value", "least", "placed"),
    [
        ("abc", 3, 3),
        (_Colour.RED, 3, 3),  # an enum's text
        (5, 1, 8),
        (None, 1, 8),
        (_Model(), 1, 7),  # unwalked as a filter's input, dumped when placed: {"a":1}
        ([1, 2, 3], 7, 29),
        ({"a": ["xy", {"b": None, 7: "z"}], "c": (1.5, True)}, 30, 63),
        ({"a", "bc"}, 10, 8),  # a set is walked as a filter's input; placed, it is an ordered list already
        ([], 1, 2),
        ([_Model(b="q")], 3, 18),
        (object, 1, 8),
    ],
)
def test_a_value_is_counted_as_its_least_json_and_as_placed(value: Any, least: int, placed: int) -> None:
    assert (template_limits.least_json_size(value, 10**6), template_limits.value_size(value, 10**6)) == (least, placed)


def test_a_count_stops_once_past_its_budget() -> None:
    value = [[0] * 10] * 1000  # a thousand lists, none walked once the outer one passes the budget
    assert (template_limits.least_json_size(value, 50), template_limits.value_size(value, 50)) == (2001, 1002)
