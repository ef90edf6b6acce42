"""A reconciler declares its kind as kubectl names it, and ``okt run --reconciler`` takes such a name: both resolved
by the real kube-apiserver's discovery."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import OperatorProcess, condition, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class ByPlural(okt.Reconciler):
    kind = f"widgets.{shared.GROUP}"  # no api_version: a name as kubectl takes it


class Ambiguous(okt.Reconciler):
    kind = "ing"


def test_a_reconciler_declared_by_a_kubectl_name_reconciles_its_kind_as_a_custom_resource(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    manager = manager_mod.Manager(operator, [ByPlural], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    try:
        # The status goes to the status subresource: the discovered kind is a custom resource, not a built-in one.
        wait_for(
            lambda: (condition(kube.get(widget_kind, "w", namespace), "Ready") or {}).get("status") == "True",
            timeout=30,
        )
        controller = manager.controllers[0]
    finally:
        manager.stop()
        manager.join(15)
        operator.close()

    assert controller.kind == widget_kind
    assert controller.name == "widget"
    assert controller.reconciler_cls.__name__ == "ByPlural"
    assert ByPlural.api_version == ""  # the declaration itself is left as written


def test_an_ambiguous_kind_name_stops_the_start_with_one_line(kube: kube_client.Client, namespace: str) -> None:
    manager = manager_mod.Manager(kube, [Ambiguous], namespaces=[namespace], metrics_bind="0")
    with pytest.raises(okt.ConfigurationError) as caught:
        manager.start()
    manager.join(10)
    assert str(caught.value) == (
        "the kind name 'ing' is ambiguous: name one of ingresses.extensions, ingresses.networking.k8s.io"
    )


OPERATOR = f"""
import okt

class WidgetReconciler(okt.Reconciler):
    api_version = "{shared.GROUP}/v1"
    kind = "Widget"

class ConfigMapReconciler(okt.Reconciler):
    api_version = "v1"
    kind = "ConfigMap"
"""


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ing", "has no reconciler named 'ing': the kind name 'ing' is ambiguous: name one of ingresses.extensions"),
        ("nosuchthings", "has no reconciler named 'nosuchthings': the server serves no kind named 'nosuchthings'"),
        ("deploy", "has no reconciler named 'deploy'"),
    ],
)
def test_okt_run_refuses_a_reconciler_name_it_cannot_resolve_in_one_line(
    control_plane: envtest.ControlPlane, widget_kind: kinds.Kind, tmp_path: pathlib.Path, name: str, message: str
) -> None:
    operator = tmp_path / "kinds_operator.py"
    operator.write_text(OPERATOR)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "okt",
            "run",
            str(operator),
            "--reconciler",
            name,
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--metrics-bind-address",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", [f"widgets.{shared.GROUP}", "widget"])
def test_okt_run_runs_the_reconciler_named_as_kubectl_names_its_kind(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    tmp_path: pathlib.Path,
    name: str,
) -> None:
    operator = tmp_path / "kinds_operator.py"
    operator.write_text(OPERATOR)
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    process = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=["--reconciler", name],
        log_path=tmp_path / "operator.log",
    )
    with process:
        wait_for(
            lambda: (condition(kube.get(widget_kind, "w", namespace), "Ready") or {}).get("status") == "True",
            timeout=30,
        )
        metrics = process.metrics()
    assert process.returncode == 0, process.tail()
    assert 'controller="widget"' in metrics
    assert 'controller="configmap"' not in metrics  # only the reconciler named runs
