"""The operator's Deployment agrees with what ``okt run`` serves; its Lease follows the pod's namespace."""

from __future__ import annotations

import pytest

from okt import names
from okt.cli import run as run_cli
from okt.codegen import errors, manager


def test_the_deployment_runs_okt_run_with_probes_on_the_metrics_port() -> None:
    namespace, deployment = manager.manager_manifests(
        name="my-operator",
        namespace="ops",
        image="my-operator:0.1.0",
        service_account="my-operator",
        controllers=["widget"],
    )
    assert namespace == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "ops",
            "labels": {"app.kubernetes.io/name": "my-operator", names.OPERATOR_LABEL: "my-operator"},
        },
    }
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == "my-operator"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["ports"][0]["containerPort"] == manager.METRICS_PORT
    context = run_cli.run_command.make_context("run", list(container["args"]))
    assert context.params["target"] == "/app/main.py"
    assert context.params["leader_elect"] and context.params["lease_namespace"] is None
    assert container["env"] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    ]
    assert context.params["metrics_bind_address"] == f":{manager.METRICS_PORT}"


def test_an_operator_with_webhooks_serves_them_on_a_named_port_for_its_service_and_configurations() -> None:
    _namespace, deployment = manager.manager_manifests(
        name="my-operator",
        namespace="ops",
        image="my-operator:0.1.0",
        service_account="my-operator",
        webhooks=True,
        controllers=["widget"],
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "webhooks", "containerPort": manager.WEBHOOK_PORT, "protocol": "TCP"} in container["ports"]
    context = run_cli.run_command.make_context("run", list(container["args"]))
    assert context.params["webhook_port"] == manager.WEBHOOK_PORT
    assert context.params["webhook_service"] == "my-operator-webhooks"
    assert context.params["webhook_configuration"] == "my-operator"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "My_Operator"}, "invalid name"),
        ({"namespace": "a b"}, "invalid namespace"),
        ({"image": "two words"}, "invalid image"),
        ({"image": "My-Operator:1"}, "invalid image"),
        ({"replicas": 0}, "invalid replicas"),
        ({"name": "9-operator", "webhooks": True}, "its webhooks' Service is 9-operator-webhooks"),
        ({"name": "o" * 60, "webhooks": True}, "at most 54 characters"),
    ],
)
def test_bad_names_are_refused(options: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {
        "name": "op",
        "namespace": "ops",
        "image": "op:1",
        "service_account": "op",
        "controllers": ["widget"],
    }
    with pytest.raises(errors.CodegenError, match=message):
        manager.manager_manifests(**{**arguments, **options})  # type: ignore[arg-type]


def test_the_deployment_labels_and_its_selector_are_separate_objects() -> None:
    namespace, deployment = manager.manager_manifests(
        name="my-operator",
        namespace="ops",
        image="my-operator:0.1.0",
        service_account="my-operator",
        controllers=["widget"],
    )

    deployment["metadata"]["labels"]["app.kubernetes.io/version"] = "0.2.0"

    own = {"app.kubernetes.io/name": "my-operator", names.OPERATOR_LABEL: "my-operator"}
    assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "my-operator"}
    assert deployment["spec"]["template"]["metadata"]["labels"] == own
    assert namespace["metadata"]["labels"] == own


def test_the_operator_s_own_workload_is_labelled_as_its_webhooks_leave_it_out_and_its_selector_is_not() -> None:
    namespace, deployment = manager.manager_manifests(
        name="my-operator",
        namespace="ops",
        image="my-operator:0.1.0",
        service_account="my-operator",
        controllers=["widget"],
    )

    # The Deployment, its Pods (so its ReplicaSets) and its Namespace: never judged by its own webhooks.
    for labelled in (deployment["metadata"], deployment["spec"]["template"]["metadata"], namespace["metadata"]):
        assert labelled["labels"][names.OPERATOR_LABEL] == "my-operator"
    # The selector is immutable: an installed operator's Deployment must still apply.
    assert names.OPERATOR_LABEL not in deployment["spec"]["selector"]["matchLabels"]
