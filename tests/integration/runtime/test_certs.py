"""The webhook Service's certificate, shared by the replicas through a Secret, and its CA written into the webhook
configurations that call the Service — on the real API server (``okt run --webhook-service --webhook-configuration``).
"""

from __future__ import annotations

import base64
import datetime
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import certs

pytestmark = pytest.mark.integration

SECRET = kinds.BUILTIN[("v1", "Secret")]


def test_replicas_share_the_services_certificate_through_its_secret(kube: kube_client.Client, namespace: str) -> None:
    first = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")
    second = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")

    assert (second.cert_pem, second.key_pem, second.ca_pem) == (first.cert_pem, first.key_pem, first.ca_pem)
    stored = kube.get(SECRET, "gadget-webhooks-tls", namespace)
    assert stored["type"] == "kubernetes.io/tls"
    assert base64.b64decode(stored["data"]["ca.crt"]) == first.ca_pem
    names = x509.load_pem_x509_certificate(first.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert f"gadget-webhooks.{namespace}.svc" in names.value.get_values_for_type(x509.DNSName)


def hook(name: str, client_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": ["certs.okt.example.com"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["gadgets"],
            }
        ],
    }


@pytest.fixture
def configuration(kube: kube_client.Client, namespace: str) -> Iterator[tuple[kinds.Kind, str]]:
    kind = kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    name = f"okt-certs-{secrets.token_hex(4)}"
    ours = {"service": {"name": "gadget-webhooks", "namespace": namespace, "path": "/validate", "port": 443}}
    other = {"service": {"name": "other-webhooks", "namespace": namespace, "path": "/validate", "port": 443}}
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [hook("ours.gadgets.okt.example.com", ours), hook("other.gadgets.okt.example.com", other)],
    }
    kube.create(body, kind)
    try:
        yield kind, name
    finally:
        kube.delete(kind, name)


def test_the_ca_goes_into_the_webhooks_that_call_the_service_and_nowhere_else(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    bundle = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")

    changed = certs.inject_ca_bundle(kube, name, "gadget-webhooks", namespace, bundle.ca_bundle())

    assert changed == ["ValidatingWebhookConfiguration"]
    hooks = {h["name"]: h["clientConfig"] for h in kube.get(kind, name)["webhooks"]}
    assert base64.b64decode(hooks["ours.gadgets.okt.example.com"]["caBundle"]) == bundle.ca_pem
    assert "caBundle" not in hooks["other.gadgets.okt.example.com"]
    again = certs.inject_ca_bundle(kube, name, "gadget-webhooks", namespace, bundle.ca_bundle())
    assert again == []  # already there: nothing written


def test_a_certificate_near_its_end_is_renewed_once_at_start_and_the_new_ca_is_served_by_every_replica(
    kube: kube_client.Client, namespace: str
) -> None:
    eleven_months_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=340)
    old = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls", now=eleven_months_ago)

    renewed = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")
    written = kube.get(SECRET, "gadget-webhooks-tls", namespace)["metadata"]["resourceVersion"]
    again = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")

    assert renewed.ca_pem != old.ca_pem
    end = x509.load_pem_x509_certificate(renewed.cert_pem).not_valid_after_utc
    assert end - datetime.datetime.now(datetime.UTC) > datetime.timedelta(days=360)
    assert (again.cert_pem, again.ca_pem) == (renewed.cert_pem, renewed.ca_pem)
    assert kube.get(SECRET, "gadget-webhooks-tls", namespace)["metadata"]["resourceVersion"] == written


def test_a_renewal_keeps_the_labels_annotations_and_keys_other_writers_put_on_the_secret(
    kube: kube_client.Client, namespace: str
) -> None:
    eleven_months_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=340)
    certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls", now=eleven_months_ago)
    note = base64.b64encode(b"kept by the backup tool").decode()
    others = {
        "metadata": {
            "labels": {"app.kubernetes.io/part-of": "gadgets"},
            "annotations": {"backup.example.com/exclude": "true"},
        },
        "data": {"note": note},
    }
    kube.patch(SECRET, "gadget-webhooks-tls", others, namespace)

    renewed = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")

    stored = kube.get(SECRET, "gadget-webhooks-tls", namespace)
    assert base64.b64decode(stored["data"]["tls.crt"]) == renewed.cert_pem
    assert stored["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gadgets"
    assert stored["metadata"]["annotations"]["backup.example.com/exclude"] == "true"
    assert stored["data"]["note"] == note
