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


def test_the_request_says_its_users_uid_and_extra_read_only() -> None:
    pod = "authentication.kubernetes.io/pod-name"
    given = okt.Admission.of(
        {
            "uid": "u-1",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:ops:deployer", "uid": "9f3c", "extra": {pod: ["web-0"]}},
        }
    )
    assert (given.user_uid, dict(given.extra)) == ("9f3c", {pod: ("web-0",)})
    with pytest.raises(TypeError):
        given.extra[pod] = ("another",)  # type: ignore[index]


@pytest.mark.parametrize(
    ("extra", "kept"),
    [
        (None, {}),
        (["scopes"], {}),
        ({"scopes": "user:info"}, {}),
        ({"scopes": ["user:info", 3, None], "empty": []}, {"scopes": ("user:info",), "empty": ()}),
    ],
    ids=["absent", "a-list", "a-value-not-a-list", "values-not-strings"],
)
def test_an_extra_of_other_types_keeps_only_lists_of_strings(extra: Any, kept: dict[str, tuple[str, ...]]) -> None:
    given = okt.Admission.of({"operation": "CREATE", "userInfo": {"uid": 42, "extra": extra}})
    assert (given.user_uid, dict(given.extra)) == ("", kept)


def test_the_headers_are_read_by_any_case_and_a_repeated_one_is_one_value_joined_as_http_joins_them() -> None:
    headers = admission_request.Headers(
        [("Content-Type", "application/json"), ("X-Trace", "a"), ("x-trace", "b"), ("User-Agent", "kube-apiserver")]
    )
    given = okt.Admission.of({"operation": "CREATE"}, headers)

    assert given.headers["content-type"] == given.headers["CONTENT-TYPE"] == "application/json"
    assert given.headers.get("X-TRACE") == "a, b"
    assert list(given.headers) == ["content-type", "x-trace", "user-agent"]
    assert "user-agent" in given.headers and 3 not in given.headers and given.headers.get(3) is None  # type: ignore
    assert okt.Admission.of({"operation": "CREATE"}).headers == {}


def test_neither_the_headers_nor_the_extra_show_in_a_repr() -> None:
    headers = admission_request.Headers([("Authorization", "Bearer hunter2")])
    given = okt.Admission.of({"operation": "CREATE", "userInfo": {"extra": {"scopes": ["secret-scope"]}}}, headers)
    assert "hunter2" not in repr(given) and "secret-scope" not in repr(given)
    assert repr(headers) == "Headers(['authorization'])"
    with pytest.raises(TypeError):
        headers["authorization"] = "Bearer other"  # type: ignore[index]


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
