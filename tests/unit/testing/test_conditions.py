"""okt.testing.condition: one condition of an object's status, whatever shape the object is in."""

from __future__ import annotations

from typing import Any

import pytest

from okt.testing import condition

READY = {"type": "Ready", "status": "True", "reason": "Reconciled"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"status": {"conditions": [{"type": "Degraded"}, READY]}}, READY),
        ({"status": {"conditions": [{"type": "Degraded"}]}}, None),
        ({"status": {}}, None),
        ({}, None),
        (None, None),
        ({"status": "broken"}, None),
        ({"status": {"conditions": "broken"}}, None),
        ({"status": {"conditions": ["broken", READY]}}, READY),
    ],
)
def test_the_condition_of_a_type_or_none_never_an_exception(obj: Any, expected: dict[str, Any] | None) -> None:
    assert condition(obj, "Ready") == expected


def test_the_condition_is_a_copy() -> None:
    obj = {"status": {"conditions": [dict(READY)]}}
    found = condition(obj, "Ready")
    assert found is not None
    found["status"] = "False"
    assert obj["status"]["conditions"][0]["status"] == "True"
