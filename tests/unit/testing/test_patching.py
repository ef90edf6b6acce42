"""okt.testing.patching: merge patches, JSON patches, the fields an apply owns and removes, and label selectors, as
the API server applies them."""

from __future__ import annotations

from typing import Any

import pytest

from okt import errors
from okt.testing import patching


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": {"b": 1}}, {"a": "flat"}, {"a": "flat"}),
        ({}, {"a": {"b": None}}, {"a": {}}),
    ],
)
def test_a_merge_patch_merges_objects_deletes_nulls_and_replaces_lists(
    target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = repr(target)
    assert patching.merge_patch(target, patch) == expected
    assert repr(target) == before


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        ([{"op": "add", "path": "/m/f", "value": ["x"]}], {"m": {"f": ["x"], "v": "7"}}),
        (
            [{"op": "test", "path": "/m/v", "value": "7"}, {"op": "replace", "path": "/m/v", "value": "8"}],
            {"m": {"v": "8"}},
        ),
        ([{"op": "remove", "path": "/m/v"}], {"m": {}}),
        ([{"op": "add", "path": "/l/-", "value": 3}], {"m": {"v": "7"}, "l": [1, 2, 3]}),
        ([{"op": "remove", "path": "/l/0"}], {"m": {"v": "7"}, "l": [2]}),
        ([{"op": "add", "path": "/a~1b", "value": 1}], {"m": {"v": "7"}, "a/b": 1}),
        ([{"op": "replace", "path": "/m/w", "value": "8"}], {"m": {"v": "7", "w": "8"}}),
    ],
)
def test_a_json_patch_applies_its_operations_in_order(
    operations: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    target: dict[str, Any] = {"m": {"v": "7"}}
    if any("/l/" in op["path"] for op in operations):
        target["l"] = [1, 2]

    assert patching.json_patch(target, operations) == expected


@pytest.mark.parametrize(
    ("operation", "error"),
    [
        ({"op": "test", "path": "/m/v", "value": "6"}, errors.Invalid),
        ({"op": "remove", "path": "/m/nothing"}, errors.Invalid),
        ({"op": "replace", "path": "/l/2", "value": 3}, errors.Invalid),
        ({"op": "add", "path": "/l/3", "value": 3}, errors.Invalid),
        ({"op": "add", "path": "/no/such/parent", "value": 1}, errors.Invalid),
        ({"op": "move", "from": "/m/v", "path": "/w"}, errors.BadRequest),
    ],
)
def test_a_json_patch_that_cannot_apply_fails_as_the_api_server_answers(
    operation: dict[str, Any], error: type[errors.ApiError]
) -> None:
    with pytest.raises(error):
        patching.json_patch({"m": {"v": "7"}, "l": [1, 2]}, [operation])


STORED = {"i": 1, "b": True, "f": 1.5, "s": "1", "o": {"a": 1, "b": [1, 2]}, "l": [1, True]}


@pytest.mark.parametrize(
    ("path", "value", "passes"),
    [
        ("/i", 1, True),
        ("/i", 1.0, False),
        ("/i", True, False),
        ("/b", True, True),
        ("/b", 1, False),
        ("/f", 1.5, True),
        ("/s", 1, False),
        ("/s", "1", True),
        ("/o", {"b": [1, 2], "a": 1}, True),
        ("/o", {"a": 1.0, "b": [1, 2]}, False),
        ("/o", {"a": True, "b": [1, 2]}, False),
        ("/l", [True, 1], False),
        ("/l", [1, 1], False),
    ],
)
def test_a_json_patch_test_compares_as_the_api_server_does_by_json_type_and_value(
    path: str, value: Any, passes: bool
) -> None:
    """What the API server answered each of these (the stored object as above): ``true`` is not ``1``, nor ``1.0``
    an integer ``1``; object keys may come in any order."""
    operation = {"op": "test", "path": path, "value": value}

    if passes:
        assert patching.json_patch(STORED, [operation]) == STORED
    else:
        with pytest.raises(errors.Invalid):
            patching.json_patch(STORED, [operation])


def test_an_object_s_fields_are_its_values_its_lists_whole_and_its_empty_objects() -> None:
    obj = {"data": {"a": "1", "b": "2"}, "spec": {"ports": [1, 2], "empty": {}}, "gone": True}

    assert patching.fields(obj) == {
        ("data", "a"): "1",
        ("data", "b"): "2",
        ("spec", "ports"): [1, 2],
        ("spec", "empty"): {},
        ("gone",): True,
    }


def test_removing_fields_removes_the_objects_they_leave_empty_and_no_other() -> None:
    obj = {"metadata": {"labels": {"app": "x"}}, "data": {"a": "1", "b": "2"}, "spec": {"empty": {}}}

    assert patching.without(
        obj, [("metadata", "labels", "app"), ("data", "a"), ("data", "missing"), ("nope", "x")]
    ) == {
        "data": {"b": "2"},
        "spec": {"empty": {}},
    }


SERVICE = patching.schema_of("v1", "Service")


def test_an_item_of_a_keyed_list_is_owned_by_its_key_with_its_fields_but_the_key_s() -> None:
    obj = {
        "metadata": {"finalizers": ["a/b"]},
        "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "x"}},
    }
    http = patching.Item((("port", 80), ("protocol", "TCP")))  # a protocol left out is the server's default
    dns = patching.Item((("port", 53), ("protocol", "UDP")))
    finalizer = patching.Item((("", "a/b"),))

    assert patching.fields(obj, SERVICE) == {
        ("metadata", "finalizers", finalizer): finalizer,
        ("spec", "ports", http): http,
        ("spec", "ports", http, "name"): "http",
        ("spec", "ports", dns): dns,
        ("spec", "selector", "app"): "x",
    }
    assert (repr(http), repr(finalizer)) == ('k:{"port":80,"protocol":"TCP"}', 'v:"a/b"')


@pytest.mark.parametrize(
    "ports",
    [[{"name": "no-port"}], [{"port": 80}, {"port": 80, "protocol": "TCP"}], ["80"], "80"],
    ids=["no-key", "two-of-one-key", "not-an-object", "not-a-list"],
)
def test_a_keyed_list_whose_items_cannot_be_keyed_is_one_field(ports: Any) -> None:
    assert patching.fields({"spec": {"ports": ports}}, SERVICE) == {("spec", "ports"): ports}
    assert patching.apply_merge({"spec": {"ports": [{"port": 1}]}}, {"spec": {"ports": ports}}, SERVICE) == {
        "spec": {"ports": ports}
    }


def test_an_apply_merges_a_keyed_list_by_key_keeps_the_stored_order_and_appends_new_items() -> None:
    stored = {"spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "a"}, {"port": 9100, "name": "m"}]}}
    applied = {"spec": {"ports": [{"port": 443}, {"port": 80, "name": "web", "targetPort": 8080}]}}

    merged = patching.apply_merge(stored, applied, SERVICE)

    assert merged["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP", "name": "web", "targetPort": 8080},
        {"port": 9100, "name": "m"},
        {"port": 443},
    ]
    assert stored["spec"]["ports"][0]["name"] == "a"


def test_removing_an_item_removes_it_whole_and_a_keyed_list_it_leaves_empty() -> None:
    def port(number: int, *field: str) -> patching.Path:
        return ("spec", "ports", patching.Item((("port", number), ("protocol", "TCP"))), *field)

    obj = {"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}, {"port": 82}]}}

    removed = patching.without(obj, [port(80), port(81, "name"), port(83), port(83, "name")], SERVICE)
    emptied = patching.without(obj, [port(80), port(81), port(82)], SERVICE)

    assert removed == {"spec": {"ports": [{"port": 81}, {"port": 82}]}}
    assert emptied == {}
