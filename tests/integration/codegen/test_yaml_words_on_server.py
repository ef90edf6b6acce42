"""A generated CRD and a scaffolded sample holding words kubectl (go-yaml v2, YAML 1.1) reads as booleans or numbers,
applied with the machine's real kubectl to a real API server: the server stores the strings the generator wrote.

An enum of ``yes``/``no`` or ``on``/``off``, a default ``y`` or ``1e3`` written plain would reach the server as
``true``, ``false`` or ``1000``: a schema the server refuses (an enum value that is no string in a string's schema),
or a default the server fills in as another value.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Any, ClassVar, Literal

import pydantic
import pytest

import okt
from okt.codegen import crd, scaffold, yamlout
from okt.kube import client as kube_client
from okt.testing import envtest

KUBECTL = "/usr/bin/kubectl"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl"),
]


class SwitchSpec(pydantic.BaseModel):
    answer: Literal["yes", "no"] = "no"
    power: Literal["on", "off"] = "on"
    flag: Literal["y", "n"] = "y"
    amount: str = "1e3"
    mode: str = pydantic.Field(default="0o17", pattern="^0o17|017|0x1F$")


class SwitchConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class SwitchReconciler(okt.Reconciler):
    api_version = "words.okt.example.com/v1alpha1"
    kind = "Switch"
    spec_model = SwitchSpec
    owns: ClassVar = [SwitchConfig]


SWITCHES = "switches.words.okt.example.com"


def kubectl(plane: envtest.ControlPlane, *args: str) -> str:
    completed = subprocess.run(
        [KUBECTL, "--kubeconfig", str(plane.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, f"kubectl {' '.join(args)}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def established(plane: envtest.ControlPlane, name: str) -> None:
    kubectl(plane, "wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")


def test_the_generated_crd_s_enums_and_defaults_are_stored_and_filled_in_as_strings(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yamlout.dump_all([crd.crd_for_reconciler(SwitchReconciler)]))
    kubectl(control_plane, "apply", "--dry-run=server", "-f", str(crd_file))
    kubectl(control_plane, "apply", "-f", str(crd_file))
    established(control_plane, SWITCHES)
    custom = tmp_path / "switch.yaml"
    custom.write_text(
        yamlout.dump_all(
            [{"apiVersion": SwitchReconciler.api_version, "kind": "Switch", "metadata": {"name": "off"}, "spec": {}}]
        )
    )
    kubectl(control_plane, "apply", "-n", namespace, "-f", str(custom))

    stored_crd = kube.get(kube.resolve("apiextensions.k8s.io/v1", "CustomResourceDefinition"), SWITCHES, None)
    fields = stored_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    switch = kube.get(kube.resolve(SwitchReconciler.api_version, "Switch"), "off", namespace)

    assert [fields[name]["enum"] for name in ("answer", "power", "flag")] == [["yes", "no"], ["on", "off"], ["y", "n"]]
    assert {name: field["default"] for name, field in fields.items()} == switch["spec"]
    assert switch["spec"] == {"answer": "no", "power": "on", "flag": "y", "amount": "1e3", "mode": "0o17"}


def test_the_scaffolded_sample_of_a_kind_named_yes_is_created_as_that_kind(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    directory = tmp_path / "on"
    scaffold.init(
        directory,
        scaffold.Project.new("on", group="yaml.okt.example.com", version="v1alpha1"),
        scaffold.Api.new("Yes", group="yaml.okt.example.com", version="v1alpha1"),
    )
    kubectl(control_plane, "apply", "-f", str(directory / "deploy" / "crd.yaml"))
    established(control_plane, "yeses.yaml.okt.example.com")

    kubectl(control_plane, "apply", "-n", namespace, "-f", str(directory / "deploy" / "samples" / "yes.yaml"))

    sample: dict[str, Any] = kube.get(kube.resolve("yaml.okt.example.com/v1alpha1", "Yes"), "yes-sample", namespace)
    assert sample["kind"] == "Yes"
    assert sample["spec"]["message"] == "hello from yes-sample"
