"""The generators' YAML: what kubectl reads from it is what the generator wrote.

kubectl reads YAML 1.1 as Go's yaml.v2 does, which takes more plain scalars for booleans and numbers than PyYAML's
resolver does (``y``, ``n``, ``1e3``, ``0o17``, ``0X1F``): those strings must be quoted, or an enum value, a default
or a label becomes a boolean or a number on the way to the API server.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, ClassVar, Literal

import pydantic
import pytest
import yaml

import okt
from okt.codegen import crd, deploy, rbac, yamlout
from okt.reconciler import admission
from okt.resources import template_skeleton

KUBECTL = "/usr/bin/kubectl"


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


KUBECTL_WORDS = [
    *("y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"),
    *("true", "True", "FALSE", "~", "null", "Null", "NULL", ""),
    *("0o17", "017", "08", "0x1F", "0b101", "-0B1", "1e3", "1_000", "+12", ".5", "-.5", "1.", "+0o17", "1.5e3"),
    *(".inf", "-.Inf", ".nan", "<<", "2024-05-01", "12:30"),
]
"""Every kind of plain scalar kubectl (go-yaml v2, YAML 1.1) reads as a boolean, a null, a number or a merge key."""


@pytest.mark.parametrize("value", [*KUBECTL_WORDS, "it's", " lead", "#x", "a: b", "line\nline"])
def test_a_scalar_placed_in_yaml_text_reads_back_in_kubectl_as_the_same_string(value: str) -> None:
    text = f"key: {yamlout.scalar(value)}\n"

    assert "\n" not in text[:-1]
    assert yaml.load(text, Loader=template_skeleton.KubectlLoader) == {"key": value}


@pytest.mark.parametrize("value", ["web", "my-operator", "example.com/v1alpha1", "hello from web-sample", "0o8"])
def test_a_scalar_kubectl_reads_as_the_same_string_stays_plain(value: str) -> None:
    assert yamlout.scalar(value) == value


class WordsSpec(pydantic.BaseModel):
    """yes"""

    answer: Literal["yes", "no"] = "yes"
    power: Literal["on", "off"] = pydantic.Field(default="off", description="no")
    flag: Literal["y", "n", "Y", "N", "true", "null"] = "y"
    amount: str = pydantic.Field(default="1e3")
    switch: int = pydantic.Field(default=1, alias="on")
    mode: str = pydantic.Field(default="0o17", pattern="^(0o17|1_000|[+]12|[.]5)$")


class WordsConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class WordsReconciler(okt.Reconciler):
    api_version = "words.example.com/v1alpha1"
    kind = "Word"
    spec_model = WordsSpec
    owns: ClassVar = [WordsConfig]


WORDS_OPERATOR = deploy.Operator(
    [WordsReconciler],
    "no",
    "on",
    "registry.example.com/y:1e3",
    scope=admission.Scope(frozenset({"n", "off", "true"}), "app=true,on=y"),
)
"""An operator whose every name, namespace, label and selector value is a word kubectl reads as another value."""


def generated_files() -> dict[str, str]:
    """Every YAML file okt gen crd, rbac, deploy and bundle write for :data:`WORDS_OPERATOR`."""
    roles = rbac.rbac_for_reconcilers(
        [WordsReconciler], namespace="on", cluster_wide=True, leader_elect=True, service_account="no"
    )
    return {
        "crd.yaml": yamlout.dump_all([crd.crd_for_reconciler(WordsReconciler)]),
        "rbac.yaml": yamlout.dump_all(roles),
        **{f"config/{path}": text for path, text in deploy.kustomize_tree(WORDS_OPERATOR).items()},
        **{f"bundle/{path}": text for path, text in deploy.bundle(WORDS_OPERATOR, version="1.0.0").items()},
    }


def test_the_crd_of_a_schema_holding_such_words_keeps_them_strings_in_kubectl() -> None:
    (document,) = yaml.load_all(generated_files()["crd.yaml"], Loader=template_skeleton.KubectlLoader)
    schema = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]

    fields = schema["properties"]
    assert (fields["answer"]["enum"], fields["answer"]["default"]) == (["yes", "no"], "yes")
    assert (fields["power"]["enum"], fields["power"]["default"], fields["power"]["description"]) == (
        ["on", "off"],
        "off",
        "no",
    )
    assert fields["flag"]["enum"] == ["y", "n", "Y", "N", "true", "null"]
    assert fields["flag"]["default"] == "y"
    assert fields["amount"]["default"] == "1e3"
    assert fields["on"]["default"] == 1
    assert (fields["mode"]["default"], fields["mode"]["pattern"]) == ("0o17", "^(0o17|1_000|[+]12|[.]5)$")
    assert schema["description"] == "yes"


@pytest.mark.parametrize("path", sorted(generated_files()))
def test_every_generated_file_reads_back_in_kubectl_as_the_generator_wrote_it(path: str) -> None:
    text = generated_files()[path]

    # PyYAML reads back exactly the objects its writer was given; go-yaml v2's rules must read the same.
    assert list(yaml.load_all(text, Loader=template_skeleton.KubectlLoader)) == list(yaml.safe_load_all(text))


@pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")
# every file but the bundle's metadata/annotations.yaml, which holds no object (OLM reads it, not kubectl)
@pytest.mark.parametrize("path", sorted(path for path, text in generated_files().items() if "\nkind: " in text))
def test_kubectl_reads_every_generated_value_as_the_generator_wrote_it(path: str, tmp_path: Path) -> None:
    file = tmp_path / "manifest.yaml"
    file.write_text(generated_files()[path])

    read = kubectl_reading(file)

    assert read == [document for document in yaml.safe_load_all(file.read_text()) if document]


def kubectl_reading(file: Path) -> list[dict[str, Any]]:
    """The objects of ``file`` as kubectl's own decoder reads them (offline: ``annotate --local``), less the
    annotation the command adds."""
    completed = subprocess.run(
        [KUBECTL, "annotate", "--local", "-f", str(file), "okt-test=read", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    objects: list[dict[str, Any]] = []
    decoder, text = json.JSONDecoder(), completed.stdout.strip()
    while text:  # one JSON object per document, one after the other
        document, end = decoder.raw_decode(text)
        objects.append(document)
        text = text[end:].strip()
    for document in objects:
        annotations = document["metadata"]["annotations"]
        del annotations["okt-test"]
        if not annotations:
            del document["metadata"]["annotations"]
        if not document["metadata"]:  # a Kustomization has none
            del document["metadata"]
    return objects
