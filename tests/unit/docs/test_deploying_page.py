"""``docs/guide/deploying.md``: what its RBAC section says ``okt gen rbac`` grants is what the generator grants, and
its Deployment is the one ``okt gen deploy`` writes where the page says so (ports, probes, security settings).

An author who writes the operator's role by hand from that sentence must get a role the start-up check accepts: a
verb left out of it is a permission found missing at the first start. A scraper pointed at the port the page names
must find it in the generated pods.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml

from okt.codegen import manager, rbac

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "deploying.md"


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
