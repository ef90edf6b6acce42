"""``docs/guide/deploying.md``: what its RBAC section says ``okt gen rbac`` grants is what the generator grants, and
its Deployment is the one ``okt gen deploy`` writes where the page says so (ports, probes, security settings).

An author who writes the operator's role by hand from that sentence must get a role the start-up check accepts: a
verb left out of it is a permission found missing at the first start. A scraper pointed at the port the page names
must find it in the generated pods.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

import okt
from okt.codegen import deploy, manager, rbac

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "deploying.md"
KUBECTL = "/usr/bin/kubectl"


def _said_of(subject: str) -> set[str]:
    """The backticked words of the parenthesis that follows ``subject`` in the page's list of the generated rules."""
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    start = text.index("The rules hold no wildcard")
    found = re.search(re.escape(subject) + r"[^(]*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text[start:])
    assert found, f"the page no longer says what {subject} is granted"
    return set(re.findall(r"`([a-z]+)`", found.group(1)))


@pytest.mark.parametrize(
    ("subject", "granted"),
    [
        ("the custom resource", rbac.PRIMARY_VERBS),
        ("its `status`", rbac.STATUS_VERBS),
        ("its `finalizers`", rbac.FINALIZER_VERBS),
        ("each owned kind", (*rbac.OWNED_VERBS, *rbac.CREATE_DELETE_VERBS)),
    ],
)
def test_the_page_names_every_verb_okt_gen_rbac_grants(subject: str, granted: tuple[str, ...]) -> None:
    assert sorted(set(granted) - _said_of(subject)) == []


def _page_deployment() -> dict[str, Any]:
    """The Deployment of the page's section 4."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"^## 4\. The Deployment$.*?^```yaml\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert found, "the page has no Deployment in its section 4"
    return yaml.safe_load(found.group(1))  # type: ignore[no-any-return]


def _generated_deployment() -> dict[str, Any]:
    documents = manager.manager_manifests(
        name="memcached-operator",
        namespace="memcached-system",
        image="registry.example.com/memcached-operator:0.1.0",
        service_account="memcached-operator",
        controllers=["memcached"],
    )
    (deployment,) = (document for document in documents if document["kind"] == "Deployment")
    return deployment


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container  # type: ignore[no-any-return]


def test_the_pages_deployment_names_its_ports_and_probes_as_okt_gen_deploy_does() -> None:
    # The page named the port metrics, and told to scrape port metrics: okt gen deploy's pods have none of that name.
    page, generated = _container(_page_deployment()), _container(_generated_deployment())
    assert {p["name"]: p["containerPort"] for p in page["ports"]} == {
        p["name"]: p["containerPort"] for p in generated["ports"]
    }
    for probe in ("livenessProbe", "readinessProbe"):
        assert page[probe]["httpGet"] == generated[probe]["httpGet"]
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    scrape = text[text.index("To scrape the metrics") :]
    (port,) = (p["name"] for p in generated["ports"] if p["containerPort"] == manager.METRICS_PORT)
    assert scrape.startswith(
        f"To scrape the metrics, point a Prometheus scrape config (or a ServiceMonitor) at port `{port}`"
    )


def test_the_pages_security_settings_are_those_okt_gen_deploy_writes() -> None:
    page, generated = _page_deployment(), _generated_deployment()
    assert (
        page["spec"]["template"]["spec"]["securityContext"] == generated["spec"]["template"]["spec"]["securityContext"]
    )
    assert _container(page)["securityContext"] == _container(generated)["securityContext"]
    assert _container(page)["resources"] == _container(generated)["resources"]
    grace = "terminationGracePeriodSeconds"
    assert page["spec"]["template"]["spec"][grace] == generated["spec"]["template"]["spec"][grace]


class MemcachedSpec(pydantic.BaseModel):
    size: int = pydantic.Field(default=1, ge=1)


class MemcachedReconciler(okt.Reconciler):
    """The page's memcached operator as far as its tree goes: a spec model, so an admission webhook."""

    api_version = "cache.example.com/v1alpha1"
    kind = "Memcached"
    spec_model = MemcachedSpec


@pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")
def test_the_pages_name_prefix_overlay_renames_every_name_the_operator_is_given_and_granted(tmp_path: Path) -> None:
    # The page said to patch --webhook-service only: --webhook-configuration still named the unprefixed configuration,
    # and the webhooks' Role and ClusterRole granted the unprefixed Secret and configuration, so the operator, given
    # the prefixed names, was refused them.
    operator = deploy.Operator(
        [MemcachedReconciler], "memcached-operator", "memcached-system", "registry.example.com/memcached-operator:0.1.0"
    )
    deploy.write(deploy.kustomize_tree(operator), tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"^# config/overlays/blue/kustomization\.yaml\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert found, "the page has no namePrefix overlay"
    (tmp_path / "overlays" / "blue").mkdir()
    (tmp_path / "overlays" / "blue" / "kustomization.yaml").write_text(found.group(1))

    built = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "overlays" / "blue")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    documents = [document for document in yaml.safe_load_all(built.stdout) if document]
    named = {(document["kind"], document["metadata"]["name"]): document for document in documents}
    (deployment,) = (document for document in documents if document["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = dict(arg[2:].split("=", 1) for arg in container["args"] if arg.startswith("--webhook-") and "=" in arg)
    namespace = deployment["metadata"]["namespace"]

    service = named[("Service", args["webhook-service"])]
    assert service["metadata"]["namespace"] == namespace
    configuration = named[("ValidatingWebhookConfiguration", args["webhook-configuration"])]
    assert {hook["clientConfig"]["service"]["name"] for hook in configuration["webhooks"]} == {args["webhook-service"]}
    secrets = named[("Role", "blue-memcached-operator-webhooks")]
    assert secrets["metadata"]["namespace"] == namespace
    assert [rule["resourceNames"] for rule in secrets["rules"] if "resourceNames" in rule] == [
        [f"{args['webhook-service']}-tls"]
    ]
    configurations = named[("ClusterRole", "blue-memcached-operator-webhooks")]
    assert [rule["resourceNames"] for rule in configurations["rules"]] == [[args["webhook-configuration"]]]
    assert args["webhook-configuration"] == "blue-memcached-operator"
