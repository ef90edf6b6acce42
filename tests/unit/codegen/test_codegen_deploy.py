"""``okt gen deploy`` / ``okt gen bundle``: a kustomize tree and an OLM bundle made of okt's own generators' output."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import pydantic
import pytest
import yaml
from click.testing import CliRunner

import okt
from okt.cli import run as run_cli
from okt.codegen import cli, crd, deploy, errors, manager, rbac
from okt.runtime import manager as runtime_manager

KUBECTL = "/usr/bin/kubectl"


class GizmoSpec(pydantic.BaseModel):
    size: int = pydantic.Field(default=1, ge=1)


class GizmoConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class GizmoReconciler(okt.Reconciler):
    api_version = "toys.example.com/v1alpha1"
    kind = "Gizmo"
    spec_model = GizmoSpec
    owns: ClassVar = [GizmoConfig]


OPERATOR = deploy.Operator([GizmoReconciler], "gizmo-operator", "gizmo-system", "registry.example.com/gizmo:1.2.3")


class PlainGizmoReconciler(okt.Reconciler):
    """No spec model, no check, no default: no admission webhook."""

    api_version = "toys.example.com/v1alpha1"
    kind = "Gizmo"
    owns: ClassVar = [GizmoConfig]


PLAIN = deploy.Operator([PlainGizmoReconciler], "gizmo-operator", "gizmo-system", "registry.example.com/gizmo:1.2.3")


def load(text: str) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(text) if document]


def test_the_base_holds_the_generators_output_and_no_webhook_without_webhooks() -> None:
    tree = deploy.kustomize_tree(PLAIN)

    assert sorted(tree) == [
        "base/crd.yaml",
        "base/kustomization.yaml",
        "base/manager.yaml",
        "base/metrics.yaml",
        "base/rbac.yaml",
        "overlays/default/kustomization.yaml",
        "overlays/default/namespace.yaml",
    ]
    assert load(tree["base/kustomization.yaml"])[0]["resources"] == [
        "crd.yaml",
        "rbac.yaml",
        "metrics.yaml",
        "manager.yaml",
    ]
    assert load(tree["base/crd.yaml"]) == [crd.crd_for_reconciler(PlainGizmoReconciler)]
    assert load(tree["base/rbac.yaml"]) == rbac.rbac_for_reconcilers(
        [PlainGizmoReconciler],
        namespace="gizmo-system",
        cluster_wide=True,
        leader_elect=True,
        service_account="gizmo-operator",
        metrics_auth=False,
        lease_name="okt-gizmo",
    )
    (deployment,) = load(tree["base/manager.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == deploy.IMAGE_PLACEHOLDER
    assert not [arg for arg in container["args"] if arg.startswith("--webhook")]


def test_an_operator_with_webhooks_gets_their_service_configuration_and_the_rbac_to_write_their_ca() -> None:
    tree = deploy.kustomize_tree(OPERATOR)

    assert load(tree["base/kustomization.yaml"])[0]["resources"][-1] == "webhook.yaml"
    documents = {(doc["kind"], doc["metadata"]["name"]): doc for doc in load(tree["base/webhook.yaml"])}
    service = documents[("Service", "gizmo-operator-webhooks")]
    assert service["spec"]["ports"][0]["targetPort"] == "webhooks"
    (hook,) = documents[("ValidatingWebhookConfiguration", "gizmo-operator")]["webhooks"]
    assert hook["clientConfig"]["service"]["name"] == "gizmo-operator-webhooks"
    assert "caBundle" not in hook["clientConfig"]  # the operator writes it at start
    (configurations,) = documents[("ClusterRole", "gizmo-operator-webhooks")]["rules"]
    assert configurations == {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "verbs": ["get", "patch"],
        "resourceNames": ["gizmo-operator"],
    }
    secrets = documents[("Role", "gizmo-operator-webhooks")]["rules"]
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]} in secrets
    assert all("*" not in rule["verbs"] and "*" not in rule["resources"] for rule in [*secrets, configurations])
    for binding in ("RoleBinding", "ClusterRoleBinding"):
        assert documents[(binding, "gizmo-operator-webhooks")]["subjects"][0]["name"] == "gizmo-operator"
    (deployment,) = load(tree["base/manager.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--webhook-service=gizmo-operator-webhooks" in container["args"]
    assert "--webhook-configuration=gizmo-operator" in container["args"]


def test_the_default_overlay_sets_the_namespace_and_the_image() -> None:
    overlay = load(deploy.kustomize_tree(OPERATOR)["overlays/default/kustomization.yaml"])[0]
    assert overlay["namespace"] == "gizmo-system"
    assert overlay["resources"] == ["../../base", "namespace.yaml"]
    assert overlay["images"] == [{"name": "operator", "newName": "registry.example.com/gizmo", "newTag": "1.2.3"}]


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("gizmo", {"newName": "gizmo"}),
        ("registry:5000/team/gizmo:v1", {"newName": "registry:5000/team/gizmo", "newTag": "v1"}),
        ("gizmo@sha256:" + "0a1b" * 16, {"newName": "gizmo", "digest": "sha256:" + "0a1b" * 16}),
        ("gizmo:1.2@sha512:" + "f" * 128, {"newName": "gizmo", "newTag": "1.2", "digest": "sha512:" + "f" * 128}),
        ("Registry.Example.com/gizmo:1", {"newName": "Registry.Example.com/gizmo", "newTag": "1"}),
    ],
)
def test_an_image_becomes_a_kustomize_images_entry(image: str, parts: dict[str, str]) -> None:
    assert deploy.image_parts(image) == {"name": deploy.IMAGE_PLACEHOLDER, **parts}


@pytest.mark.parametrize(
    "image",
    [
        "",
        "two words",
        "registry/",
        "My-Operator:1",
        "registry.example.com/Team/gizmo",
        # Digests a runtime cannot pull by: too short for their algorithm, not hexadecimal, in capitals.
        "gizmo@sha256:0a1b",
        "gizmo@sha256:" + "0a1b" * 16 + "0",
        "gizmo@sha512:" + "f" * 64,
        "gizmo@sha256:" + "g" * 64,
        "gizmo@sha256:" + "A" * 64,
        "gizmo@" + "0a1b" * 16,
    ],
)
def test_a_bad_image_is_refused(image: str) -> None:
    with pytest.raises(errors.CodegenError, match="invalid --image"):
        deploy.image_parts(image)


def test_the_csv_owns_the_crds_and_installs_the_manager_with_the_generated_rules() -> None:
    files = deploy.bundle(OPERATOR, version="0.1.0")

    assert sorted(files) == [
        "manifests/gizmo-operator-metrics-reader.clusterrole.yaml",
        "manifests/gizmo-operator.clusterserviceversion.yaml",
        "manifests/gizmos.toys.example.com.yaml",
        "metadata/annotations.yaml",
    ]
    (csv,) = load(files["manifests/gizmo-operator.clusterserviceversion.yaml"])
    assert (csv["apiVersion"], csv["kind"]) == ("operators.coreos.com/v1alpha1", "ClusterServiceVersion")
    assert csv["metadata"]["name"] == "gizmo-operator.v0.1.0" and csv["spec"]["version"] == "0.1.0"
    owned = csv["spec"]["customresourcedefinitions"]["owned"]
    assert [(o["name"], o["version"], o["kind"]) for o in owned] == [("gizmos.toys.example.com", "v1alpha1", "Gizmo")]
    install = csv["spec"]["install"]
    assert install["strategy"] == "deployment"
    (_namespace, expected) = manager.manager_manifests(
        name="gizmo-operator",
        namespace="gizmo-system",
        image="registry.example.com/gizmo:1.2.3",
        service_account="gizmo-operator",
        webhooks=True,  # the validating webhook of the spec model, with the certificate OLM mounts
        webhook_cert_dir=manager.OLM_CERT_DIR,
        controllers=["gizmo"],
    )
    assert install["spec"]["deployments"] == [{"name": "gizmo-operator", "spec": expected["spec"]}]
    roles = {document["kind"]: document for document in OPERATOR.rbac()}
    assert install["spec"]["clusterPermissions"] == [
        {"serviceAccountName": "gizmo-operator", "rules": [*roles["ClusterRole"]["rules"], *rbac.METRICS_AUTH_RULES]}
    ]
    (permission,) = install["spec"]["permissions"]
    assert permission["rules"][0]["resources"] == ["leases"]
    assert {mode["type"] for mode in csv["spec"]["installModes"] if mode["supported"]} >= {"AllNamespaces"}
    assert load(files["manifests/gizmos.toys.example.com.yaml"]) == [crd.crd_for_reconciler(GizmoReconciler)]
    (definition,) = csv["spec"]["webhookdefinitions"]
    assert definition == {
        "type": "ValidatingAdmissionWebhook",
        "generateName": "validate.gizmos.toys.example.com",
        "deploymentName": "gizmo-operator",
        "containerPort": 443,
        "targetPort": 9443,
        "webhookPath": "/validate/gizmo",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "rules": [
            {
                "apiGroups": ["toys.example.com"],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["gizmos"],
                "scope": "Namespaced",
            }
        ],
        "sideEffects": "None",
        "timeoutSeconds": 10,
    }


def test_the_bundle_metadata_names_the_package_and_the_channel() -> None:
    files = deploy.bundle(OPERATOR, version="0.1.0", channel="stable")
    (metadata,) = load(files["metadata/annotations.yaml"])
    annotations = metadata["annotations"]
    assert annotations["operators.operatorframework.io.bundle.mediatype.v1"] == "registry+v1"
    assert annotations["operators.operatorframework.io.bundle.manifests.v1"] == "manifests/"
    assert annotations["operators.operatorframework.io.bundle.package.v1"] == "gizmo-operator"
    assert annotations["operators.operatorframework.io.bundle.channel.default.v1"] == "stable"


@pytest.mark.parametrize("version", ["v1", "0.1.0\n"])
def test_a_bundle_version_that_is_not_semantic_is_refused(version: str) -> None:
    # "0.1.0\n" (a version read from a file) named the ClusterServiceVersion "gizmo-operator.v0.1.0\n".
    with pytest.raises(errors.CodegenError, match="semantic version"):
        deploy.bundle(OPERATOR, version=version)


@pytest.mark.parametrize("version", ["0.1.0-RC1", "0.1.0-rc-", "0.1.0-rc.1-", f"0.1.0-{'1' * 240}"])
def test_a_bundle_version_that_makes_a_csv_name_the_api_server_refuses_is_refused(version: str) -> None:
    with pytest.raises(errors.CodegenError, match="must be a lowercase DNS name of at most 253 characters"):
        deploy.bundle(OPERATOR, version=version)


@pytest.mark.parametrize("image", ["two words", "registry/", "gizmo@sha256:0a1b"])
def test_a_bundle_of_an_image_no_runtime_pulls_is_refused(image: str) -> None:
    with pytest.raises(errors.CodegenError, match="invalid --image"):
        deploy.bundle(dataclasses.replace(OPERATOR, image=image), version="0.1.0")


@pytest.mark.parametrize(
    "channel", ["bad channel", "alpha,stable", "Stable", "stable_v1", "-alpha", "", "a" * 254, "alpha\n"]
)
def test_okt_gen_bundle_refuses_a_channel_olm_cannot_subscribe_to_in_one_line(tmp_path: Path, channel: str) -> None:
    # The channel went into the annotations as given: OLM splits "alpha,stable" into two channels, and its
    # ClusterExtension takes only a DNS subdomain, so a bundle in "bad channel" could never be subscribed to.
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = ["bundle", "main.py", "--name", "gizmo-operator", "--version", "0.1.0", "--image", "gizmo:1"]

    result = CliRunner().invoke(group, [*arguments, "--channel", channel, "--out", str(tmp_path)])

    assert result.exit_code == 2
    assert result.output == (
        f"Error: invalid --channel {channel!r}: OLM wants one channel name, a lowercase DNS name of at most 253 "
        "characters such as alpha, stable or stable-v1\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("channel", ["alpha", "stable-v1", "1.1.x", "fast-2.0", "a" * 253])
def test_a_bundle_takes_a_channel_olm_subscribes_to(channel: str) -> None:
    (metadata,) = load(deploy.bundle(OPERATOR, version="0.1.0", channel=channel)["metadata/annotations.yaml"])
    assert metadata["annotations"]["operators.operatorframework.io.bundle.channels.v1"] == channel


def test_okt_gen_deploy_writes_the_tree_and_lists_each_file(tmp_path: Path) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = ["deploy", "main.py", "--name", "gizmo-operator", "--namespace", "gizmo-system"]
    arguments += ["--image", "gizmo:1", "--out", str(tmp_path / "config")]

    result = CliRunner().invoke(group, arguments)

    assert result.exit_code == 0, result.output
    assert f"written  {(tmp_path / 'config' / 'base' / 'manager.yaml').as_posix()}" in result.output.splitlines()
    assert (tmp_path / "config" / "overlays" / "default" / "kustomization.yaml").is_file()


def test_okt_gen_bundle_errors_are_one_line(tmp_path: Path) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = ["bundle", "main.py", "--name", "gizmo-operator", "--version", "1", "--image", "gizmo:1"]

    result = CliRunner().invoke(group, [*arguments, "--out", str(tmp_path)])

    assert result.exit_code == 2
    assert result.output.strip() == "Error: invalid --version '1': OLM wants a semantic version such as 0.1.0"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        (["bundle", "--version", "0.1.0", "--name"], "--name", "Gizmo Operator"),
        (["bundle", "--version", "0.1.0", "--name"], "--name", "gizmo.operator"),
        (["deploy", "--namespace", "gizmo-system", "--name"], "--name", "Gizmo Operator"),
        (["deploy", "--namespace", "gizmo-system", "--name"], "--name", "gizmo.operator"),
        (["deploy", "--name", "gizmo-operator", "--namespace"], "--namespace", "Gizmo_System"),
    ],
)
def test_okt_gen_deploy_and_bundle_name_the_option_whose_name_the_api_server_refuses(
    tmp_path: Path, command: list[str], option: str, value: str
) -> None:
    # The name was met first as another: a service account's (deploy) or the CSV's of a wrong --version (bundle).
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = [command[0], "main.py", "--image", "gizmo:1", *command[1:], value, "--out", str(tmp_path)]

    result = CliRunner().invoke(group, arguments)

    assert result.exit_code == 2
    assert result.output == (
        f"Error: invalid {option} {value!r}: expected a DNS label (lowercase letters, digits and '-', starting and "
        "ending with a letter or digit, at most 63 characters) such as my-operator\n"
    )
    assert list(tmp_path.iterdir()) == []


class GadgetSpecAlpha(pydantic.BaseModel):
    colour: str


class GadgetSpec(pydantic.BaseModel):
    color: str


class GadgetReconciler(okt.Reconciler):
    """Two versions and converters between them, no spec model of the stored version: a conversion webhook only."""

    api_version = "toys.example.com/v1beta1"
    kind = "Gadget"
    spec_models: ClassVar = {"v1alpha1": GadgetSpecAlpha}
    converters: ClassVar = {
        ("v1alpha1", "v1beta1"): lambda spec: GadgetSpec(color=spec.colour),
        ("v1beta1", "v1alpha1"): lambda spec: GadgetSpecAlpha(colour=spec["color"]),
    }


GADGETS = deploy.Operator([GadgetReconciler], "gadget-operator", "gadget-system", "registry.example.com/gadget:2.0.0")


def test_a_crd_with_converters_calls_the_trees_webhook_service_for_conversion() -> None:
    tree = deploy.kustomize_tree(GADGETS)

    (definition,) = load(tree["base/crd.yaml"])
    assert definition["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "gadget-operator-webhooks",
                    "namespace": "gadget-system",
                    "path": "/convert/gadget",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert load(tree["overlays/default/kustomization.yaml"])[0]["namespace"] == "gadget-system"
    assert load(tree["base/kustomization.yaml"])[0]["configurations"] == ["kustomizeconfig.yaml"]
    assert load(tree["base/kustomizeconfig.yaml"]) == [deploy.CRD_SERVICE_REFERENCE]


@pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")
def test_an_overlays_namespace_and_name_prefix_reach_the_crds_conversion_service(tmp_path: Path) -> None:
    deploy.write(deploy.kustomize_tree(GADGETS), tmp_path)
    overlay = tmp_path / "overlays" / "elsewhere"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("namespace: elsewhere\nnamePrefix: pre-\nresources: [../default]\n")

    built = subprocess.run(
        [KUBECTL, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60, check=True
    ).stdout

    documents = {(doc["kind"], doc["metadata"]["name"]): doc for doc in load(built)}
    assert ("Service", "pre-gadget-operator-webhooks") in documents
    definition = documents[("CustomResourceDefinition", "gadgets.toys.example.com")]
    service = definition["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert (service["name"], service["namespace"]) == ("pre-gadget-operator-webhooks", "elsewhere")


def test_a_conversion_webhook_alone_gets_the_service_the_port_and_the_rbac_to_write_its_ca_into_the_crd() -> None:
    tree = deploy.kustomize_tree(GADGETS)

    assert load(tree["base/kustomization.yaml"])[0]["resources"][-1] == "webhook.yaml"
    documents = {(doc["kind"], doc["metadata"]["name"]): doc for doc in load(tree["base/webhook.yaml"])}
    assert not [kind for kind, _name in documents if kind.endswith("WebhookConfiguration")]
    service = documents[("Service", "gadget-operator-webhooks")]
    assert service["metadata"]["namespace"] == "gadget-system"
    assert service["spec"]["ports"] == [{"name": "webhooks", "port": 443, "targetPort": "webhooks", "protocol": "TCP"}]
    assert documents[("ClusterRole", "gadget-operator-webhooks")]["rules"] == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get", "patch"],
            "resourceNames": ["gadgets.toys.example.com"],
        }
    ]
    secrets = documents[("Role", "gadget-operator-webhooks")]["rules"]
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]} in secrets
    (deployment,) = load(tree["base/manager.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "webhooks", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert "--webhook-service=gadget-operator-webhooks" in container["args"]
    assert "--webhook-configuration=gadget-operator" in container["args"]


def test_an_operator_with_both_kinds_of_webhook_writes_its_ca_into_the_configurations_and_the_crds() -> None:
    both = deploy.Operator([GizmoReconciler, GadgetReconciler], "toy-operator", "toys", "toys:1")

    documents = {(d["kind"], d["metadata"]["name"]): d for d in deploy.webhook_manifests(both)}

    resources = [rule["resources"] for rule in documents[("ClusterRole", "toy-operator-webhooks")]["rules"]]
    assert resources == [["validatingwebhookconfigurations"], ["customresourcedefinitions"]]


def test_the_csv_lists_the_conversion_webhook_for_olm_and_supports_all_namespaces_only() -> None:
    files = deploy.bundle(GADGETS, version="2.0.0")

    (csv,) = load(files["manifests/gadget-operator.clusterserviceversion.yaml"])
    assert csv["spec"]["webhookdefinitions"] == [
        {
            "type": "ConversionWebhook",
            "generateName": "convert.gadgets.toys.example.com",
            "deploymentName": "gadget-operator",
            "containerPort": 443,
            "targetPort": 9443,
            "webhookPath": "/convert/gadget",
            "conversionCRDs": ["gadgets.toys.example.com"],
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
        }
    ]
    modes = {mode["type"]: mode["supported"] for mode in csv["spec"]["installModes"]}
    assert modes == {"OwnNamespace": False, "SingleNamespace": False, "MultiNamespace": False, "AllNamespaces": True}
    (deployment,) = csv["spec"]["install"]["spec"]["deployments"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert f"--webhook-cert-dir={manager.OLM_CERT_DIR}" in container["args"]
    assert not [arg for arg in container["args"] if arg.startswith(("--webhook-service", "--webhook-configuration"))]
    assert {"name": "webhooks", "containerPort": 9443, "protocol": "TCP"} in container["ports"]


def test_a_csv_without_webhooks_lists_none() -> None:
    (csv,) = load(deploy.bundle(PLAIN, version="0.1.0")["manifests/gizmo-operator.clusterserviceversion.yaml"])

    assert "webhookdefinitions" not in csv["spec"]


@pytest.mark.parametrize("operator", [PLAIN, OPERATOR], ids=["plain", "webhooks"])
def test_the_csv_supports_all_namespaces_only_as_its_deployment_watches_every_namespace(
    operator: deploy.Operator,
) -> None:
    (csv,) = load(deploy.bundle(operator, version="0.1.0")["manifests/gizmo-operator.clusterserviceversion.yaml"])

    (deployment,) = csv["spec"]["install"]["spec"]["deployments"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--all-namespaces" in container["args"]
    supported = [mode["type"] for mode in csv["spec"]["installModes"] if mode["supported"]]
    assert supported == ["AllNamespaces"]


class AuditGizmoReconciler(GizmoReconciler):
    """A second reconciler of Gizmo, under the same default controller name."""


@pytest.mark.parametrize("command", [["bundle", "--version", "0.1.0"], ["deploy", "--namespace", "gizmo-system"]])
def test_okt_gen_bundle_and_deploy_of_two_reconcilers_under_one_controller_name_is_one_line_error(
    tmp_path: Path, command: list[str]
) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler, AuditGizmoReconciler])
    identity = ["--name", "gizmo-operator", "--image", "gizmo:1", "--out", str(tmp_path / "out")]

    result = CliRunner().invoke(group, [command[0], "main.py", *command[1:], *identity])

    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "GizmoReconciler and AuditGizmoReconciler are both named 'gizmo'" in result.output
    assert not (tmp_path / "out").exists()


def test_okt_gen_deploy_of_an_operator_serving_some_namespaces_and_labels_scopes_every_piece(tmp_path: Path) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    scope = ["--watch-namespace", "shop-b", "--watch-namespace", "shop-a", "-l", "tier=gold"]
    identity = ["--name", "gizmo-operator", "--namespace", "gizmo-system", "--image", "gizmo:1"]
    result = CliRunner().invoke(group, ["deploy", "main.py", *identity, *scope, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    # the installation's namespace, changed where the tree says it is changed
    install = tmp_path / "overlays" / "default" / "install" / "kustomization.yaml"
    install.write_text(install.read_text().replace("namespace: gizmo-system", "namespace: elsewhere"))

    built = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "overlays" / "default")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout

    documents = {(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]): doc for doc in load(built)}
    (container,) = documents[("Deployment", "elsewhere", "gizmo-operator")]["spec"]["template"]["spec"]["containers"]
    assert "--all-namespaces" not in container["args"]
    assert container["args"][1:5] == [
        "--namespace=shop-a",
        "--namespace=shop-b",
        "--selector=tier=gold",
        "--lease-name=gizmo-operator",
    ]
    (hook,) = documents[("ValidatingWebhookConfiguration", None, "gizmo-operator")]["webhooks"]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["shop-a", "shop-b"]
    assert hook["objectSelector"] == {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}
    assert ("ClusterRole", None, "gizmo-operator") in documents
    assert ("ClusterRoleBinding", None, "gizmo-operator") not in documents
    for watched in ("shop-a", "shop-b"):
        binding = documents[("RoleBinding", watched, "gizmo-operator")]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "gizmo-operator",
        }
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gizmo-operator", "namespace": "elsewhere"}]
    # The Lease okt run is told to lead on is the only one it may read or update (any it may create: RBAC cannot
    # limit a create by name).
    role = documents[("Role", "elsewhere", "gizmo-operator-leader-election")]
    assert [(rule.get("resourceNames"), rule["verbs"]) for rule in role["rules"]] == [
        (None, ["create"]),
        (["gizmo-operator"], ["get", "update"]),
    ]


def test_okt_gen_deploy_of_an_operator_serving_everything_grants_the_lease_okt_run_derives_alone() -> None:
    """Its okt run is told the Lease it leads on: the one it would derive from its reconcilers' controller names
    (``okt-gizmo``, so an operator deployed before it was named keeps its Lease), named by the same function. Its
    get and update were granted on every Lease of the namespace: another operator's in it too."""
    (container,) = OPERATOR.deployment("gizmo:1")["spec"]["template"]["spec"]["containers"]
    derived = runtime_manager.default_lease_name([GizmoReconciler.controller_name()])
    assert derived == "okt-gizmo"
    assert f"--lease-name={derived}" in container["args"]
    assert run_cli.run_command.make_context("run", list(container["args"])).params["lease_name"] == derived
    (role,) = [doc for doc in OPERATOR.rbac() if doc["kind"] == "Role"]
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [derived],
            "verbs": ["get", "update"],
        },
    ]


def test_okt_gen_bundle_of_an_operator_serving_everything_names_the_lease_its_permissions_grant(
    tmp_path: Path,
) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = ["bundle", "main.py", "--name", "gizmo-operator", "--version", "0.1.0", "--image", "gizmo:1"]

    result = CliRunner().invoke(group, [*arguments, "--out", str(tmp_path)])

    assert result.exit_code == 0, result.output
    (csv,) = load((tmp_path / "manifests" / "gizmo-operator.clusterserviceversion.yaml").read_text())
    (deployment,) = csv["spec"]["install"]["spec"]["deployments"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--lease-name=okt-gizmo" in container["args"]
    (permission,) = csv["spec"]["install"]["spec"]["permissions"]
    assert [(rule.get("resourceNames"), rule["verbs"]) for rule in permission["rules"]] == [
        (None, ["create"]),
        (["okt-gizmo"], ["get", "update"]),
    ]


def test_okt_gen_bundle_of_an_operator_serving_some_labels_runs_and_calls_its_webhooks_for_those(
    tmp_path: Path,
) -> None:
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = ["bundle", "main.py", "--name", "gizmo-operator", "--version", "0.1.0", "--image", "gizmo:1"]

    result = CliRunner().invoke(group, [*arguments, "-l", "tier=gold", "--out", str(tmp_path)])

    assert result.exit_code == 0, result.output
    (csv,) = load((tmp_path / "manifests" / "gizmo-operator.clusterserviceversion.yaml").read_text())
    (deployment,) = csv["spec"]["install"]["spec"]["deployments"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--selector=tier=gold" in container["args"]
    (definition,) = csv["spec"]["webhookdefinitions"]
    assert definition["objectSelector"] == {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}


class NamedAuditGizmoReconciler(GizmoReconciler):
    """A second reconciler of Gizmo, under its own controller name (which okt run accepts)."""

    name = "gizmo-audit"


class OtherSpecGizmoReconciler(GizmoReconciler):
    name = "gizmo-other"
    spec_model = GadgetSpec


def test_two_reconcilers_of_one_kind_make_one_crd_in_the_tree_kustomize_builds_and_in_the_bundle(
    tmp_path: Path,
) -> None:
    operator = deploy.Operator(
        [GizmoReconciler, NamedAuditGizmoReconciler], "gizmo-operator", "gizmo-system", "gizmo:1"
    )
    deploy.write(deploy.kustomize_tree(operator), tmp_path)

    built = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "overlays" / "default")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert built.returncode == 0, built.stderr
    assert [doc["kind"] for doc in load(built.stdout)].count("CustomResourceDefinition") == 1
    (csv,) = load(deploy.bundle(operator, version="0.1.0")["manifests/gizmo-operator.clusterserviceversion.yaml"])
    assert [owned["name"] for owned in csv["spec"]["customresourcedefinitions"]["owned"]] == ["gizmos.toys.example.com"]


def test_two_reconcilers_of_one_kind_that_would_make_different_crds_are_one_line_error() -> None:
    operator = deploy.Operator([GizmoReconciler, OtherSpecGizmoReconciler], "gizmo-operator", "gizmo-system", "gizmo:1")

    with pytest.raises(errors.CodegenError, match="GizmoReconciler and OtherSpecGizmoReconciler make different CRDs"):
        deploy.kustomize_tree(operator)


@pytest.mark.parametrize("command", ["deploy", "bundle"])
def test_okt_gen_deploy_and_bundle_that_cannot_write_every_file_write_none(tmp_path: Path, command: str) -> None:
    # The files before the one that failed were written: a tree half new, half old, kustomize building a mix of both.
    out = tmp_path / "config"
    blocked = {"deploy": "overlays", "bundle": "metadata"}[command]
    kept = {"deploy": "base/manager.yaml", "bundle": "manifests/toys.example.com_gizmos.yaml"}[command]
    (out / kept).parent.mkdir(parents=True)
    (out / kept).write_text("old: text\n")
    (out / blocked).write_text("not a folder\n")
    group = cli.make_gen_group(lambda _target: [GizmoReconciler])
    arguments = [command, "main.py", "--name", "gizmo-operator", "--image", "gizmo:1", "--out", str(out)]
    arguments += ["--namespace", "gizmo-system"] if command == "deploy" else ["--version", "1.0.0"]

    result = CliRunner().invoke(group, arguments)

    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert line == f"Error: cannot write {out / blocked}: Not a directory"
    assert sorted(path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file()) == sorted(
        [kept, blocked]
    )
    assert (out / kept).read_text() == "old: text\n"


class DeploymentNotesReconciler(okt.Reconciler):
    """A built-in primary: the operator keeps a ConfigMap of notes beside each Deployment."""

    api_version = "apps/v1"
    kind = "Deployment"
    owns: ClassVar = [GizmoConfig]


def test_an_operator_of_a_built_in_kind_gets_a_tree_without_a_crd_that_kustomize_builds(tmp_path: Path) -> None:
    # Refused whole: "a built-in kind has no CRD to generate", so such an operator had no tree and no bundle at all.
    operator = deploy.Operator([DeploymentNotesReconciler], "notes-operator", "notes-system", "notes:1")
    tree = deploy.kustomize_tree(operator)
    deploy.write(tree, tmp_path)

    built = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "overlays" / "default")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert built.returncode == 0, built.stderr
    assert "base/crd.yaml" not in tree
    assert load(tree["base/kustomization.yaml"])[0]["resources"] == ["rbac.yaml", "metrics.yaml", "manager.yaml"]
    kinds_built = [doc["kind"] for doc in load(built.stdout)]
    assert "CustomResourceDefinition" not in kinds_built
    assert {"ClusterRole", "Deployment", "ServiceAccount"} <= set(kinds_built)
    (csv,) = load(deploy.bundle(operator, version="0.1.0")["manifests/notes-operator.clusterserviceversion.yaml"])
    assert csv["spec"]["customresourcedefinitions"]["owned"] == []


def test_the_tree_lets_the_operator_review_scrapers_tokens_and_ships_the_role_to_bind_a_scraper_to() -> None:
    """The Deployment serves /metrics on every interface, to a bearer token allowed to get /metrics: without these
    roles the operator could not ask the API server about a token, nor a scraper be allowed."""
    tree = deploy.kustomize_tree(PLAIN)

    documents = {(doc["kind"], doc["metadata"]["name"]): doc for doc in load(tree["base/metrics.yaml"])}
    assert sorted(documents) == [
        ("ClusterRole", "gizmo-operator-metrics-auth"),
        ("ClusterRole", "gizmo-operator-metrics-reader"),
        ("ClusterRoleBinding", "gizmo-operator-metrics-auth"),
    ]
    assert documents["ClusterRole", "gizmo-operator-metrics-auth"]["rules"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ]
    assert documents["ClusterRoleBinding", "gizmo-operator-metrics-auth"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "gizmo-operator", "namespace": "gizmo-system"}
    ]
    assert documents["ClusterRole", "gizmo-operator-metrics-reader"]["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]
    every_rule = [rule for doc in documents.values() for rule in doc.get("rules", ())]
    assert not [rule for rule in every_rule if "*" in str(rule)]
    (deployment,) = load(tree["base/manager.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert f"--metrics-bind-address=:{manager.METRICS_PORT}" in container["args"]
    bundle = deploy.bundle(PLAIN, version="0.1.0")
    (reader,) = load(bundle["manifests/gizmo-operator-metrics-reader.clusterrole.yaml"])
    assert reader == documents["ClusterRole", "gizmo-operator-metrics-reader"]


def test_the_deployment_of_a_tree_or_bundle_of_one_reconciler_runs_that_reconciler_alone(tmp_path: Path) -> None:
    # The file holds two reconcilers; the tree and the bundle are generated for one, its CRD and its rules alone. The
    # Deployment ran the whole file: okt run loaded the other too, its kind without a CRD and its rules ungranted.
    group = cli.make_gen_group(lambda _target: [GizmoReconciler, GadgetReconciler])
    chosen = ["main.py", "--reconciler", "GizmoReconciler", "--name", "gizmo-operator", "--image", "gizmo:1"]

    tree = CliRunner().invoke(group, ["deploy", *chosen, "--namespace", "gizmo-system", "--out", str(tmp_path / "c")])
    bundled = CliRunner().invoke(group, ["bundle", *chosen, "--version", "0.1.0", "--out", str(tmp_path / "b")])

    assert tree.exit_code == 0, tree.output
    assert bundled.exit_code == 0, bundled.output
    (deployment,) = load((tmp_path / "c" / "base" / "manager.yaml").read_text())
    (csv,) = load((tmp_path / "b" / "manifests" / "gizmo-operator.clusterserviceversion.yaml").read_text())
    (installed,) = csv["spec"]["install"]["spec"]["deployments"]
    for spec in (deployment["spec"], installed["spec"]):
        (container,) = spec["template"]["spec"]["containers"]
        assert container["args"][:2] == ["/app/main.py", "--reconciler=GizmoReconciler"]
    assert [crd["spec"]["names"]["kind"] for crd in load((tmp_path / "c" / "base" / "crd.yaml").read_text())] == [
        "Gizmo"
    ]
