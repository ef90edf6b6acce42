"""The generators' YAML: what kubectl reads from it is what the generator wrote.

kubectl reads YAML 1.1 as Go's yaml.v2 does, which takes more plain scalars for booleans and numbers than PyYAML's
resolver does (``y``, ``n``, ``1e3``, ``0o17``, ``0X1F``): those strings must be quoted, or an enum value, a default
or a label becomes a boolean or a number on the way to the API server.
"""

from __future__ import annotations

import pytest
import yaml

from okt.codegen import yamlout


@pytest.mark.parametrize(
    "value", ["y", "Y", "n", "N", "1e3", "1E3", "-2e-3", "1.5e3", ".5e3", "1_000e2", "0o17", "0O17", "0X1F", "-0B101"]
)
def test_a_string_a_yaml_1_1_reader_takes_for_a_boolean_or_a_number_is_quoted(value: str) -> None:
    text = yamlout.dump_all([{"enum": [value]}])

    assert text == f"enum:\n- '{value}'\n"
    assert yaml.safe_load(text) == {"enum": [value]}


@pytest.mark.parametrize("value", ["yes", "no", "on", "10", "1.5", "0x1F", "0b101", "null", "~", "2032-04-23"])
def test_a_string_pyyaml_takes_for_another_type_stays_quoted(value: str) -> None:
    text = yamlout.dump_all([{"enum": [value]}])

    assert text.startswith(("enum:\n- '", 'enum:\n- "'))
    assert yaml.safe_load(text) == {"enum": [value]}


@pytest.mark.parametrize("value", ["yellow", "memcached:1.6", "1.6.0", "e3", "v1alpha1", "no-op", "0o8", "1e"])
def test_other_strings_stay_plain(value: str) -> None:
    assert yamlout.dump_all([{"value": value}]) == f"value: {value}\n"


def test_an_object_shared_by_two_fields_is_written_out_at_each_of_them() -> None:
    labels = {"app.kubernetes.io/name": "my-operator"}

    text = yamlout.dump_all([{"metadata": {"labels": labels}, "selector": {"matchLabels": labels}}])

    assert "&" not in text and "*" not in text
    assert text.count("app.kubernetes.io/name: my-operator") == 2
