from __future__ import annotations

from typing import Any

import pytest

from okt.kube import patches

META = {"resourceVersion": "42"}
CONDITIONS = {"f:conditions": {'k:{"type":"Ready"}': {}}}
ENTRY = {"manager": "okt", "operation": "Update", "fieldsV1": {"f:status": CONDITIONS}}


def test_values_the_server_writes_as_okt_does_are_tested_each_at_its_pointer() -> None:
    values = [("/metadata/managedFields/0", ENTRY), ("/metadata/managedFields/2", {"time": "2026-01-02T03:04:05Z"})]

    assert patches.guard(values, META) == [{"op": "test", "path": pointer, "value": value} for pointer, value in values]


@pytest.mark.parametrize("value", ["a&b", "<x>", "é", 1.5, {"k": ["a", "b&c"]}], ids=repr)
def test_a_value_the_server_writes_otherwise_tests_the_resource_version_instead(value: Any) -> None:
    values = [("/metadata/managedFields/0", ENTRY), ("/spec/x", value)]

    assert patches.guard(values, META) == [{"op": "test", "path": "/metadata/resourceVersion", "value": "42"}]


def test_a_union_of_field_sets_keeps_every_path_of_both() -> None:
    into: dict[str, Any] = {"f:status": {"f:observedGeneration": {}}}

    patches.union(into, {"f:status": {"f:conditions": {".": {}}}, "f:metadata": {"f:finalizers": {}}})

    assert into == {
        "f:status": {"f:observedGeneration": {}, "f:conditions": {".": {}}},
        "f:metadata": {"f:finalizers": {}},
    }
