"""A hook reads the admission request it runs for, and its warnings reach the client as the API server passes them."""

from __future__ import annotations

from typing import Any

import pytest

import okt
from okt.reconciler import admission_request


def test_the_request_says_its_operation_dry_run_and_user() -> None:
    given = okt.Admission.of(
        {
            "uid": "u-1",
            "operation": "UPDATE",
            "dryRun": True,
            "userInfo": {"username": "jane", "uid": "42", "groups": ["devs", "system:authenticated"]},
        }
    )
    assert (given.operation, given.dry_run, given.username, given.groups) == (
        "UPDATE",
        True,
        "jane",
        ("devs", "system:authenticated"),
    )


@pytest.mark.parametrize(
    "request_",
    [
        {"operation": "CREATE"},
        {"operation": "CREATE", "dryRun": "true", "userInfo": ["jane"]},
        {"operation": "CREATE", "dryRun": 1, "userInfo": {"username": 7, "groups": "devs"}},
        {"operation": "CREATE", "dryRun": None, "userInfo": {"username": None, "groups": [None, 3]}},
    ],
    ids=["absent", "of-other-types", "numbers", "nulls"],
)
def test_values_of_other_types_are_a_write_by_nobody_named(request_: dict[str, Any]) -> None:
    given = okt.Admission.of(request_)
    assert (given.dry_run, given.username, given.groups) == (False, "", ())


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("spec.size is deprecated: use spec.replicas", "spec.size is deprecated: use spec.replicas"),
        ("two\nlines\r\tand a bell\x07", "two lines  and a bell"),
        ("  surrounded  ", "surrounded"),
        ("a C1 control\x85here, DEL\x7fthere", "a C1 control here, DEL there"),
        ("a lone surrogate \ud800 here", "a lone surrogate ? here"),
        ("déprécié: ünïcode is kept", "déprécié: ünïcode is kept"),
    ],
    ids=["plain", "controls", "blanks", "c1-and-del", "surrogate", "unicode"],
)
def test_a_warning_is_one_line_of_valid_text(message: str, said: str) -> None:
    given = okt.Admission("CREATE")
    given.warn(message)
    assert given.warnings == (said,)


def test_a_long_warning_is_cut_to_the_length_kept_whole_ending_with_dots() -> None:
    given = okt.Admission("CREATE")
    given.warn("x" * 1000)
    given.warn("y" * admission_request.MAX_WARNING)
    (cut, whole) = given.warnings
    assert cut == "x" * (admission_request.MAX_WARNING - 3) + "..."
    assert whole == "y" * admission_request.MAX_WARNING


def test_a_warning_is_said_once_and_an_empty_one_is_none() -> None:
    given = okt.Admission("CREATE")
    for message in ("first", "", " \n ", "second", "first", "first\n"):
        given.warn(message)
    assert given.warnings == ("first", "second")


@pytest.mark.parametrize("message", [None, 3, b"bytes", ["a list"]], ids=["none", "int", "bytes", "list"])
def test_a_warning_that_is_not_a_string_is_a_type_error_naming_its_type(message: Any) -> None:
    given = okt.Admission("CREATE")
    with pytest.raises(TypeError, match=f"a warning is a string, not {type(message).__name__}$"):
        given.warn(message)
    assert given.warnings == ()
