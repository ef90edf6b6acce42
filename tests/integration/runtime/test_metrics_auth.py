"""``/metrics`` beyond loopback: served over TLS to a bearer token the API server authenticates and allows to ``get
/metrics`` (a TokenReview and a SubjectAccessReview, remembered a short time), with the RBAC ``okt gen deploy``
generates; the probes stay open to the kubelet, which sends no token."""

from __future__ import annotations

import secrets
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import click.testing
import pytest
import yaml

from okt.codegen import cli, rbac
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import certs, metrics_auth, probe_server
from okt.runtime import metrics as metrics_mod
from okt.testing import RunningOperator, envtest
from tests.integration import service_accounts
from tests.integration.reconciler import conftest as shared

widget_kind = shared.widget_kind

RBAC_GROUP = "rbac.authorization.k8s.io"


def token_of(kube: kube_client.Client, namespace: str, name: str) -> str:
    """A token of the ServiceAccount ``namespace/name`` (a TokenRequest), as a Pod running as it holds."""
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        verb="create",
        resource="serviceaccounts/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    ).json()
    return str(answer["status"]["token"])


def get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=10, context=context
        ) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def reviewed_server(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, account: str
) -> tuple[kube_client.Client, probe_server.ProbeServer, ssl.SSLContext]:
    """A probe server (not started) serving ``/metrics`` over TLS to the tokens the API server reviews for it, as the
    ServiceAccount ``account`` (with its client, whose request counts tell the reviews asked), and a TLS context
    that verifies its certificate."""
    operator = kube_client.Client.from_kubeconfig(
        service_accounts.kubeconfig_of(kube, control_plane, namespace, account)
    )
    bundle = certs.self_signed()
    server = probe_server.ProbeServer(
        ("127.0.0.1", 0),
        metrics_mod.Metrics(),
        lambda: (True, "ok"),
        lambda: (True, "ok"),
        tls=bundle.server_context(),
        reviewer=metrics_auth.Reviewer(operator),
    )
    return operator, server, ssl.create_default_context(cadata=bundle.ca_pem.decode())


@pytest.fixture
def generated_rbac(kube: kube_client.Client, namespace: str) -> Iterator[str]:
    """The operator's ServiceAccount with the metrics RBAC ``okt gen deploy`` generates for it, and the scraper's
    ServiceAccount ``scraper`` bound to the generated metrics-reader ClusterRole; yields the operator's account."""
    account = f"{namespace}-operator"  # the ClusterRoles are named after it: one set per test
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}})
    documents = rbac.metrics_manifests(account, namespace)
    documents.append(
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{account}-scraper"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": f"{account}-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
        }
    )
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    yield account
    for document in documents:
        kube.delete(kube.resolve(document["apiVersion"], document["kind"]), document["metadata"]["name"])


def test_metrics_are_served_to_an_allowed_token_only_and_the_probes_to_anyone(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, generated_rbac: str
) -> None:
    scraper, stranger = token_of(kube, namespace, "scraper"), token_of(kube, namespace, "stranger")
    operator, server, verified = reviewed_server(kube, control_plane, namespace, generated_rbac)
    server.start()
    try:
        allowed = [get(server.metrics_url, scraper, verified) for _ in range(3)]
        refused = get(server.metrics_url, stranger, verified)
        unknown = get(server.metrics_url, secrets.token_hex(16), verified)
        missing = get(server.metrics_url, None, verified)
        plain = get(server.url + "/metrics", scraper)
        probes = [
            get(server.url + "/healthz"),
            get(server.url + "/readyz"),
            get(f"https://localhost:{server.port}/readyz", None, verified),
        ]
        reviews = operator.stats.snapshot()
    finally:
        server.stop()
        operator.close()

    for status, _headers, body in allowed:
        assert status == 200
        assert "okt_reconcile_total" in body
    # Each review asked once: the second and third scrapes were answered from what the first learnt.
    assert reviews[("create", "tokenreviews")] == 3  # the scraper's, the stranger's and the unknown token's
    assert reviews[("create", "subjectaccessreviews")] == 2  # the scraper's and the stranger's
    assert refused[0] == 403
    assert refused[2] == f"forbidden: system:serviceaccount:{namespace}:stranger may not get /metrics"
    for status, headers, body in (unknown, missing):
        assert status == 401
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert len(body.splitlines()) == 1 and body.startswith("unauthorized: ")
    assert plain[0] == 403
    assert plain[2] == "forbidden: /metrics is served over https on this address, to a bearer token"
    assert [(status, body) for status, _headers, body in probes] == [(200, "ok")] * 3


def test_scrapes_bringing_one_new_token_at_once_cause_one_review_of_it(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, generated_rbac: str
) -> None:
    """Each scrape not answered from what was kept asked the API server itself: as many TokenReviews and
    SubjectAccessReviews as scrapes came at once with a token new to the operator."""
    scraper = token_of(kube, namespace, "scraper")
    operator, server, verified = reviewed_server(kube, control_plane, namespace, generated_rbac)
    together = threading.Barrier(8)
    statuses: list[int] = []

    def scrape() -> None:
        together.wait(10)
        statuses.append(get(server.metrics_url, scraper, verified)[0])

    scrapes = [threading.Thread(target=scrape) for _ in range(8)]
    server.start()
    try:
        for thread in scrapes:
            thread.start()
        for thread in scrapes:
            thread.join(30)
        reviews = operator.stats.snapshot()
    finally:
        server.stop()
        operator.close()

    assert statuses == [200] * 8
    assert reviews[("create", "tokenreviews")] == 1
    assert reviews[("create", "subjectaccessreviews")] == 1


def test_okt_run_beyond_loopback_refuses_metrics_without_a_token_and_answers_the_kubelets_probes(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Bound to every interface, as in a Pod, ``/metrics`` was served plain to anyone who reached the pod."""
    insecure: Any = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # Prometheus's insecure_skip_verify, before it is given the CA
    with RunningOperator.start(kube, shared.WidgetReconciler, namespaces=[namespace], metrics_bind="0.0.0.0:0") as op:
        probes = op.manager.probes
        assert probes is not None
        port = probes.port
        plain = get(f"http://127.0.0.1:{port}/metrics")
        missing = get(f"https://127.0.0.1:{port}/metrics", None, insecure)
        admin = get(f"https://127.0.0.1:{port}/metrics", control_plane.token, insecure)
        liveness = get(f"http://127.0.0.1:{port}/healthz")

    assert plain[0] == 403
    assert missing[0] == 401
    assert admin[0] == 200 and "controller_runtime_reconcile_total" in admin[2]
    assert liveness[:3:2] == (200, "ok")


def test_okt_run_with_the_rbac_of_okt_gen_rbac_serves_metrics_to_an_allowed_token(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, widget_kind: kinds.Kind
) -> None:
    """``okt gen rbac`` alone (a sample's ``deploy/rbac.yaml``) let the operator review no token: every scrape of a
    Deployment serving metrics on ``:8080`` was answered 503."""
    account = f"{namespace}-operator"  # cluster-wide names after it: one set per test
    generated = click.testing.CliRunner().invoke(
        cli.make_gen_group(lambda _target: [shared.WidgetReconciler]),
        ["rbac", "main.py", "--namespace", namespace, "--service-account", account],
        catch_exceptions=False,
    )
    assert generated.exit_code == 0, generated.output
    reader = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{account}-scraper"},
        "rules": list(rbac.METRICS_READER_RULES),
    }
    binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{account}-scraper"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": f"{account}-scraper"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
    }
    documents = [doc for doc in yaml.safe_load_all(generated.stdout) if doc] + [reader, binding]
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    scraper = token_of(kube, namespace, "scraper")
    operator = kube_client.Client.from_kubeconfig(
        service_accounts.kubeconfig_of(kube, control_plane, namespace, account)
    )
    insecure: Any = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    try:
        with RunningOperator.start(
            operator, shared.WidgetReconciler, namespaces=[namespace], metrics_bind="0.0.0.0:0"
        ) as op:
            probes = op.manager.probes
            assert probes is not None
            scraped = get(f"https://127.0.0.1:{probes.port}/metrics", scraper, insecure)
    finally:
        operator.close()
        for document in documents:
            if "namespace" not in document["metadata"]:
                kube.delete(kube.resolve(document["apiVersion"], document["kind"]), document["metadata"]["name"])

    assert scraped[0] == 200, scraped[2]
    assert "controller_runtime_reconcile_total" in scraped[2]
