"""The names the generators accept are the names the API server accepts: each case generates a manifest with a name
at its limit and one past it, and sends what the generator wrote (or, where it refused, what it would have written)
to a real API server as a server-side dry run. The generator refuses exactly what the server refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from click.testing import CliRunner

import okt
from okt import errors as okt_errors
from okt.codegen import cli, crd, deploy, errors, rbac, webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds

pytestmark = pytest.mark.integration

DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
VALIDATING_WEBHOOK_CONFIGURATION = kinds.Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)


def group_of(length: int) -> str:
    """An API group of ``length`` characters (at least 12), in labels of at most 63."""
    labels = "".join("abcdefghijklmnopqrstuvwxyz"[index % 26] for index in range(length - len(".example.com")))
    return ".".join([*(labels[start : start + 62] for start in range(0, len(labels), 63)), "example", "com"])


def reconciler_of(group: str) -> type[okt.Reconciler]:
    """A reconciler of Widgets in ``group`` with a validating webhook (it has a spec model)."""
    return type(
        "WidgetReconciler",
        (okt.Reconciler,),
        {"api_version": f"{group}/v1", "kind": "Widget", "plural": "widgets", "spec_model": WidgetSpec},
    )


class WidgetSpec(pydantic.BaseModel):
    size: int = 1


def server_accepts(kube: kube_client.Client, kind: kinds.Kind, obj: dict[str, Any]) -> bool:
    """Whether the API server would create ``obj`` (a dry run: nothing is stored)."""
    try:
        kube.request(
            "POST",
            kind.collection_path(obj["metadata"].get("namespace")),
            verb="dry-run",
            resource=kind.plural,
            params={"dryRun": "All"},
            body=obj,
        )
    except okt_errors.Invalid:
        return False
    return True


@pytest.mark.parametrize("length", [253, 254])
def test_the_crd_generator_refuses_the_crd_names_the_api_server_refuses(kube: kube_client.Client, length: int) -> None:
    # The CRD's name is <plural>.<group>: a DNS name of at most 253 characters, though the group alone may be longer.
    group = group_of(length - len("widgets."))
    names = {"version": "v1", "kind": "Widget", "plural": "widgets", "scope": "Namespaced"}
    definition = crd.crd_from_models(group="names.okt.example.com", spec_model=None, status_model=None, **names)
    definition["metadata"]["name"] = f"widgets.{group}"
    definition["spec"]["group"] = group
    try:
        crd.crd_from_models(group=group, spec_model=None, status_model=None, **names)
    except errors.CodegenError:
        generated = False
    else:
        generated = True

    assert generated == server_accepts(kube, kinds.CRD, definition)


@pytest.mark.parametrize("length", [244, 245])
def test_the_webhook_generator_refuses_the_webhook_names_the_api_server_refuses(
    kube: kube_client.Client, length: int
) -> None:
    # A webhook is named validate.<plural>.<group>: a DNS name of at most 253 characters, 9 more than the CRD's name.
    group = group_of(length - len("widgets."))
    config = webhooks.ClientConfig(service="widget-operator-webhooks")
    short = reconciler_of("names.okt.example.com")
    (configuration,) = webhooks.webhooks_for_reconcilers([short], name="widget-operator", client_config=config)[1:]
    configuration["webhooks"][0]["name"] = f"validate.widgets.{group}"
    configuration["webhooks"][0]["rules"][0]["apiGroups"] = [group]
    try:
        webhooks.webhooks_for_reconcilers([reconciler_of(group)], name="widget-operator", client_config=config)
    except errors.CodegenError:
        generated = False
    else:
        generated = True

    assert generated == server_accepts(kube, VALIDATING_WEBHOOK_CONFIGURATION, configuration)


def generated_or_refused(call: Any) -> bool:
    """Whether the generator ``call`` wrote its manifests (False: it refused its input)."""
    try:
        call()
    except errors.CodegenError:
        return False
    return True


@pytest.mark.parametrize("length", [63, 64])
def test_the_rbac_generator_refuses_the_namespaces_the_api_server_refuses(
    kube: kube_client.Client, length: int
) -> None:
    # A namespace is a DNS label: 63 characters at most.
    name = "n" * length
    generated = generated_or_refused(
        lambda: rbac.rbac_for_reconcilers([reconciler_of("names.okt.example.com")], namespace=name, metrics_auth=False)
    )
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}

    assert generated == server_accepts(kube, kinds.NAMESPACE, namespace_object)


@pytest.mark.parametrize("length", [253, 254])
@pytest.mark.parametrize("cluster_wide", [False, True])
def test_the_rbac_generator_refuses_the_service_account_names_the_api_server_refuses(
    kube: kube_client.Client, namespace: str, length: int, cluster_wide: bool
) -> None:
    # A ServiceAccount's name is a DNS name: 253 characters at most.
    account = group_of(length)
    reconciler = reconciler_of("names.okt.example.com")
    generated = generated_or_refused(
        lambda: rbac.rbac_for_reconcilers(
            [reconciler],
            namespace=namespace,
            service_account=account,
            cluster_wide=cluster_wide,
            leader_elect=True,
            metrics_auth=False,
        )
    )
    documents = rbac.rbac_for_reconcilers(
        [reconciler],
        namespace=namespace,
        service_account="widget-operator",
        cluster_wide=cluster_wide,
        leader_elect=True,
        metrics_auth=False,
    )
    for document in documents:
        if document["kind"] == "ServiceAccount" or document["metadata"]["name"] == "widget-operator":
            document["metadata"]["name"] = account
        for subject in document.get("subjects", ()):
            subject["name"] = account
    accepted = [server_accepts(kube, kube.kind_of(document), document) for document in documents]

    assert generated == all(accepted)


@pytest.mark.parametrize(
    "version", ["0.1.0", "0.1.0-rc.1", "0.1.0-RC1", "0.1.0-rc-", pytest.param(f"0.1.0-{'1' * 245}", id="0.1.0-1...1")]
)
def test_the_bundle_generator_refuses_the_csv_names_the_api_server_refuses(
    kube: kube_client.Client, apply_crd: Any, namespace: str, version: str
) -> None:
    # The ClusterServiceVersion is named <name>.v<version>: a custom resource's name is a DNS name (lowercase, each
    # dot-separated part starting and ending with a letter or digit, 253 characters at most). No OLM runs here: a CRD
    # that takes any ClusterServiceVersion lets the API server judge its name.
    csv_kind = apply_crd(
        crds.schemaless_crd("operators.coreos.com", "ClusterServiceVersion", "clusterserviceversions", "v1alpha1")
    )
    operator = deploy.Operator([reconciler_of("names.okt.example.com")], "widget-operator", namespace, "widget:0.1.0")
    generated = generated_or_refused(lambda: deploy.bundle(operator, version=version))
    csv = deploy.cluster_service_version(operator, operator.crds(), version="0.1.0")
    csv["metadata"].update(name=f"widget-operator.v{version}", namespace=namespace)
    csv["spec"]["version"] = version

    assert generated == server_accepts(kube, csv_kind, csv)


@pytest.mark.parametrize("length", [63, 64])
def test_okt_gen_bundle_takes_the_operator_names_the_api_server_takes(
    kube: kube_client.Client, apply_crd: Any, namespace: str, tmp_path: Path, length: int
) -> None:
    # The operator's name names the CSV (<name>.v<version>), the Deployment and its pods' app.kubernetes.io/name
    # label, whose value is 63 characters at most.
    csv_kind = apply_crd(
        crds.schemaless_crd("operators.coreos.com", "ClusterServiceVersion", "clusterserviceversions", "v1alpha1")
    )
    name = "o" * length
    group = cli.make_gen_group(lambda _target: [reconciler_of("names.okt.example.com")])
    arguments = ["bundle", "main.py", "--name", name, "--version", "0.1.0", "--image", "widget:0.1.0"]
    generated = CliRunner().invoke(group, [*arguments, "--out", str(tmp_path)]).exit_code == 0
    operator = deploy.Operator([reconciler_of("names.okt.example.com")], "widget-operator", namespace, "widget:0.1.0")
    csv = deploy.cluster_service_version(operator, operator.crds(), version="0.1.0")
    if generated:
        csv = yaml.safe_load((tmp_path / "manifests" / f"{name}.clusterserviceversion.yaml").read_text())
    else:
        csv["metadata"]["name"] = f"{name}.v0.1.0"
        labels = {"app.kubernetes.io/name": name}
        spec = csv["spec"]["install"]["spec"]["deployments"][0]["spec"]
        spec["selector"]["matchLabels"] = spec["template"]["metadata"]["labels"] = labels
    csv["metadata"]["namespace"] = namespace
    (install,) = csv["spec"]["install"]["spec"]["deployments"]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": install["spec"],
    }
    accepted = [server_accepts(kube, csv_kind, csv), server_accepts(kube, DEPLOYMENT, deployment)]

    assert generated == all(accepted)
