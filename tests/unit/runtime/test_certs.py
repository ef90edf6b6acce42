"""The webhook CA written into the conversion webhook of the CRDs that call the operator's Service, and only there;
when a kept self-signed certificate must be replaced (pure: no API server)."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

import okt
from okt.kube import kinds
from okt.runtime import certs
from okt.testing import FakeClient

SECRET = kinds.BUILTIN[("v1", "Secret")]
SERVICE, NAMESPACE, CA = "gadget-operator-webhooks", "gadget-system", "Q0EgYnVuZGxl"


def crd(name: str, client_config: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": name.partition(".")[2], "conversion": {"strategy": "None"}}
    if client_config is not None:
        spec["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
        }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": spec,
    }


def service(name: str = SERVICE, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {"service": {"name": name, "namespace": namespace, "path": "/convert/gadget", "port": 443}}


def ca_of(client: FakeClient, name: str) -> str | None:
    stored = client.stored(kinds.CRD, name)
    assert stored is not None
    config: dict[str, Any] = (stored["spec"]["conversion"].get("webhook") or {}).get("clientConfig") or {}
    return config.get("caBundle")


def version_of(client: FakeClient, name: str) -> str:
    stored = client.stored(kinds.CRD, name)
    assert stored is not None
    return str(stored["metadata"]["resourceVersion"])


def test_the_ca_goes_into_the_crds_calling_the_service_once() -> None:
    client = FakeClient(objects=[crd("gadgets.toys.example.com", service())])

    assert certs.inject_conversion_ca_bundle(client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, CA) == [
        "gadgets.toys.example.com"
    ]
    assert ca_of(client, "gadgets.toys.example.com") == CA
    version = version_of(client, "gadgets.toys.example.com")

    assert certs.inject_conversion_ca_bundle(client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, CA) == []
    assert version_of(client, "gadgets.toys.example.com") == version  # nothing written


def test_a_new_ca_replaces_the_old_one() -> None:
    client = FakeClient(objects=[crd("gadgets.toys.example.com", {**service(), "caBundle": "b2xk"})])

    assert certs.inject_conversion_ca_bundle(client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, CA)
    assert ca_of(client, "gadgets.toys.example.com") == CA


@pytest.mark.parametrize(
    "client_config",
    [
        service(name="other-webhooks"),
        service(namespace="elsewhere"),
        {"url": "https://127.0.0.1:9443/convert/gadget"},
        None,  # strategy None: no webhook
    ],
)
def test_a_crd_whose_conversion_calls_something_else_is_left_alone(client_config: dict[str, Any] | None) -> None:
    client = FakeClient(objects=[crd("gadgets.toys.example.com", client_config)])

    assert certs.inject_conversion_ca_bundle(client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, CA) == []
    assert ca_of(client, "gadgets.toys.example.com") is None


def test_a_missing_crd_is_skipped() -> None:
    client = FakeClient(objects=[crd("gadgets.toys.example.com", service())])

    changed = certs.inject_conversion_ca_bundle(
        client, ["absent.toys.example.com", "gadgets.toys.example.com"], SERVICE, NAMESPACE, CA
    )

    assert changed == ["gadgets.toys.example.com"]


NOW = datetime.datetime(2027, 6, 1, tzinfo=datetime.UTC)
HOSTS = certs.service_hosts("gadget-webhooks", "shop")


def test_a_fresh_certificate_for_the_service_is_kept() -> None:
    assert not certs.needs_renewal(certs.self_signed(HOSTS, now=NOW), HOSTS, now=NOW)


def test_a_certificate_in_its_last_month_or_past_its_end_is_renewed() -> None:
    last_month = certs.self_signed(HOSTS, now=NOW - datetime.timedelta(days=340))
    ended = certs.self_signed(HOSTS, now=NOW - datetime.timedelta(days=400))
    before_last_month = certs.self_signed(HOSTS, now=NOW - datetime.timedelta(days=300))

    assert certs.needs_renewal(last_month, HOSTS, now=NOW)
    assert certs.needs_renewal(ended, HOSTS, now=NOW)
    assert not certs.needs_renewal(before_last_month, HOSTS, now=NOW)


def test_a_certificate_that_does_not_name_the_service_is_renewed() -> None:
    other = certs.self_signed(certs.service_hosts("other-webhooks", "shop"), now=NOW)

    assert certs.needs_renewal(other, HOSTS, now=NOW)
    assert not certs.needs_renewal(certs.self_signed(certs.LOCAL_HOSTS, now=NOW), ("127.0.0.1",), now=NOW)


def tls_secret(data: dict[str, bytes]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "gadget-webhooks-tls", "namespace": "shop"},
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


GOOD = certs.self_signed(HOSTS)


@pytest.mark.parametrize(
    "data",
    [
        {"tls.crt": b"hunter2-not-a-certificate", "tls.key": b"hunter2-not-a-key"},
        {"tls.crt": GOOD.cert_pem, "tls.key": GOOD.key_pem, "ca.crt": b"hunter2-not-a-ca"},
    ],
    ids=["certificate", "ca"],
)
def test_a_kept_secret_that_holds_no_certificate_is_one_configuration_error_and_is_left_as_it_is(
    data: dict[str, bytes],
) -> None:
    client = FakeClient(objects=[tls_secret(data)])
    before = client.stored(SECRET, "gadget-webhooks-tls", "shop")

    with pytest.raises(okt.ConfigurationError, match=r"Secret shop/gadget-webhooks-tls") as raised:
        certs.for_service(client, "shop", "gadget-webhooks", "gadget-webhooks-tls")

    assert "hunter2" not in str(raised.value)
    assert client.stored(SECRET, "gadget-webhooks-tls", "shop") == before


def test_a_renewal_keeps_the_old_ca_trusted_so_a_replica_still_serving_the_old_certificate_is_answered() -> None:
    client = FakeClient()
    a_year_ago = NOW - datetime.timedelta(days=340)
    still_served = certs.for_service(client, "shop", "gadget-webhooks", "gadget-webhooks-tls", now=a_year_ago)

    renewed = certs.for_service(client, "shop", "gadget-webhooks", "gadget-webhooks-tls", now=NOW)

    trusted = x509.load_pem_x509_certificates(renewed.ca_pem)
    for served in (renewed, still_served):
        issuer = x509.load_pem_x509_certificate(served.cert_pem).issuer
        assert [ca.subject for ca in trusted if ca.subject == issuer and signed(served.cert_pem, ca)]
    assert not certs.needs_renewal(renewed, HOSTS, now=NOW)
    next_year = certs.for_service(
        client, "shop", "gadget-webhooks", "gadget-webhooks-tls", now=NOW + datetime.timedelta(days=340)
    )
    assert len(x509.load_pem_x509_certificates(next_year.ca_pem)) == 2  # the CA ended by then is dropped


def signed(cert_pem: bytes, ca: x509.Certificate) -> bool:
    try:
        x509.load_pem_x509_certificate(cert_pem).verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def test_a_service_whose_dns_name_is_longer_than_a_common_name_gets_its_certificate() -> None:
    hosts = certs.service_hosts("postgres-cluster-operator-webhooks", "postgres-cluster-operator-system")
    assert len(hosts[0]) > 64  # past the 64 characters x509 allows a common name

    bundle = certs.for_service(
        FakeClient(), "postgres-cluster-operator-system", "postgres-cluster-operator-webhooks", "t"
    )

    names = x509.load_pem_x509_certificate(bundle.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert names.value.get_values_for_type(x509.DNSName) == list(hosts)


SERVED, OTHER = certs.self_signed(), certs.self_signed()


@pytest.mark.parametrize(
    ("held", "written"),
    [
        (None, True),
        ("", True),
        ("bm90IGEgY2VydGlmaWNhdGU=", True),  # base64, not of PEM
        ("not base64 at all", True),
        (OTHER.ca_bundle(), True),
        (SERVED.ca_bundle(), False),
        (base64.b64encode(OTHER.ca_pem + SERVED.ca_pem).decode(), False),  # a replica that read a renewal wrote it
    ],
    ids=["none", "empty", "not-pem", "not-base64", "another-ca", "the-served-ca", "beside-another"],
)
def test_a_restore_writes_the_ca_into_a_crd_only_where_it_is_not_trusted(held: str | None, written: bool) -> None:
    config = {**service(), "caBundle": held} if held is not None else service()
    client = FakeClient(objects=[crd("gadgets.toys.example.com", config)])

    changed = certs.inject_conversion_ca_bundle(
        client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, SERVED.ca_bundle(), missing_only=True
    )

    assert changed == (["gadgets.toys.example.com"] if written else [])
    assert ca_of(client, "gadgets.toys.example.com") == (SERVED.ca_bundle() if written else held)


ENDED = certs.self_signed(now=datetime.datetime.now(datetime.UTC) - 2 * certs.VALIDITY)


def test_a_restore_drops_the_cas_that_have_ended_and_keeps_every_other_one_as_it_was() -> None:
    held = base64.b64encode(OTHER.ca_pem + ENDED.ca_pem + SERVED.ca_pem).decode()
    client = FakeClient(objects=[crd("gadgets.toys.example.com", {**service(), "caBundle": held})])

    changed = certs.inject_conversion_ca_bundle(
        client, ["gadgets.toys.example.com"], SERVICE, NAMESPACE, SERVED.ca_bundle(), missing_only=True
    )

    assert changed == ["gadgets.toys.example.com"]
    assert ca_of(client, "gadgets.toys.example.com") == base64.b64encode(OTHER.ca_pem + SERVED.ca_pem).decode()


def test_a_kept_secret_whose_ca_crt_holds_a_ca_that_has_ended_is_written_without_it_and_its_pair_kept() -> None:
    client = FakeClient()
    served = certs.for_service(client, "shop", "gadget-webhooks", "gadget-webhooks-tls", now=NOW)
    stored = client.stored(SECRET, "gadget-webhooks-tls", "shop")
    stored["data"]["ca.crt"] = base64.b64encode(served.ca_pem + ENDED.ca_pem).decode()
    client.replace(SECRET, stored)

    read = certs.for_service(client, "shop", "gadget-webhooks", "gadget-webhooks-tls", now=NOW)

    assert read == served
    assert (
        client.stored(SECRET, "gadget-webhooks-tls", "shop")["data"]["ca.crt"]
        == base64.b64encode(served.ca_pem).decode()
    )


@pytest.mark.parametrize(
    ("held", "kept"),
    [
        (None, SERVED.ca_pem),
        (b"", SERVED.ca_pem),
        (b"not a certificate", SERVED.ca_pem),
        (OTHER.ca_pem, SERVED.ca_pem),
        (SERVED.ca_pem, None),
        (OTHER.ca_pem + SERVED.ca_pem, None),  # a renewal's trust wrote it while this check ran with the CAs before
        (SERVED.ca_pem + ENDED.ca_pem, SERVED.ca_pem),
        (ENDED.ca_pem + OTHER.ca_pem + SERVED.ca_pem, OTHER.ca_pem + SERVED.ca_pem),
    ],
    ids=["none", "empty", "not-pem", "another-ca", "the-ca", "beside-another", "beside-an-ended-one", "ended-first"],
)
def test_a_kept_ca_file_is_written_again_where_it_lacks_the_ca_and_without_the_cas_that_have_ended(
    held: bytes | None, kept: bytes | None
) -> None:
    assert certs.restored(held, SERVED.ca_pem) == kept


def test_a_ca_that_has_ended_is_never_written_back_by_a_restore() -> None:
    assert certs.restored(None, SERVED.ca_pem + ENDED.ca_pem) == SERVED.ca_pem
