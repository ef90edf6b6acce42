"""The webhook Service's certificate, shared by the replicas through a Secret, and its CA written into the webhook
configurations that call the Service — on the real API server (``okt run --webhook-service --webhook-configuration``);
a certificate given in a Secret (``okt run --webhook-secret``) served as that Secret is rotated.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import secrets
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import structlog.testing
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import okt
from okt import errors
from okt import names as names_mod
from okt.cli import run
from okt.codegen import webhooks as codegen_webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import certs, webhook_server
from okt.testing import wait_for

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


def tls_secret(namespace: str, name: str, bundle: certs.Bundle) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace},
        "data": tls_data(bundle),
    }


def tls_data(bundle: certs.Bundle) -> dict[str, str]:
    pems = {"tls.crt": bundle.cert_pem, "tls.key": bundle.key_pem, "ca.crt": bundle.ca_pem}
    return {key: base64.b64encode(pem).decode() for key, pem in pems.items()}


def der(bundle: certs.Bundle) -> bytes:
    return x509.load_pem_x509_certificate(bundle.cert_pem).public_bytes(serialization.Encoding.DER)


def presented(server: webhook_server.WebhookServer) -> bytes:
    """The certificate the server presents in a new TLS handshake (unverified: which one it is, is the question)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw) as connection,
    ):
        certificate = connection.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def test_a_certificate_rotated_in_its_secret_is_presented_by_a_later_handshake_without_a_restart(
    kube: kube_client.Client, namespace: str
) -> None:
    first, rotated = certs.self_signed(), certs.self_signed()
    kube.create(tls_secret(namespace, "gadget-serving", first), SECRET)
    options = run._webhook_options(kube, "127.0.0.1", 0, None, f"{namespace}/gadget-serving", None)
    server = webhook_server.WebhookServer(options, [], kube)
    server.start()
    try:
        assert presented(server) == der(first)

        kube.patch(SECRET, "gadget-serving", {"data": tls_data(rotated)}, namespace)

        wait_for(lambda: presented(server) == der(rotated), timeout=30, message="the rotated certificate presented")
        assert server.certificates == rotated
    finally:
        server.stop()


def test_a_rotated_pair_whose_key_does_not_match_or_a_secret_gone_is_never_served_the_previous_pair_is(
    kube: kube_client.Client, namespace: str
) -> None:
    first, rotated = certs.self_signed(), certs.self_signed()
    kube.create(tls_secret(namespace, "gadget-serving", first), SECRET)
    source = certs.SecretSource(kube, namespace, "gadget-serving")
    options = webhook_server.Options(host="127.0.0.1", port=0, certificates=source, reload_interval=0.1)
    server = webhook_server.WebhookServer(options, [], kube)
    with structlog.testing.capture_logs() as logs:
        server.start()
        try:
            mismatched = dataclasses.replace(rotated, key_pem=first.key_pem)
            kube.patch(SECRET, "gadget-serving", {"data": tls_data(mismatched)}, namespace)
            refused = "the renewed webhook certificate is not served"
            wait_for(lambda: any(log["event"] == refused for log in logs), timeout=30, message="the pair refused")
            assert presented(server) == der(first)

            kube.delete(SECRET, "gadget-serving", namespace)
            unread = "the webhook certificate could not be read again: the previous one is served"
            wait_for(lambda: any(log["event"] == unread for log in logs), timeout=30, message="the Secret missed")
            assert presented(server) == der(first)

            kube.create(tls_secret(namespace, "gadget-serving", rotated), SECRET)
            wait_for(lambda: presented(server) == der(rotated), timeout=30, message="the good pair presented")
        finally:
            server.stop()
    said = [log for log in logs if log["event"] in (refused, unread)]
    assert [log["event"] for log in said] == [refused, unread]  # each once, however many reads it lasted
    pems = (first.key_pem, rotated.cert_pem, rotated.key_pem)
    assert not any(
        pem.decode() in str(log) or base64.b64encode(pem).decode() in str(log) for pem in pems for log in logs
    )


def test_a_rotation_under_a_new_ca_writes_that_ca_into_the_configurations_before_its_certificate_is_presented(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    first, rotated = certs.self_signed(), certs.self_signed()  # each its own CA, as cert-manager's selfSigned issuer
    kube.create(tls_secret(namespace, "gadget-serving", first), SECRET)
    options = run._webhook_options(
        kube,
        "127.0.0.1",
        0,
        None,
        f"{namespace}/gadget-serving",
        None,
        service=(namespace, "gadget-webhooks"),
        configuration=name,
        configuration_kinds=["ValidatingWebhookConfiguration"],
    )
    server = webhook_server.WebhookServer(options, [], kube)
    server.start()
    try:
        kube.patch(SECRET, "gadget-serving", {"data": tls_data(rotated)}, namespace)

        wait_for(lambda: presented(server) == der(rotated), timeout=30, message="the rotated certificate presented")
        hooks = {h["name"]: h["clientConfig"] for h in kube.get(kind, name)["webhooks"]}
        trusted = base64.b64decode(hooks["ours.gadgets.okt.example.com"]["caBundle"])
        assert rotated.ca_pem in trusted
        assert first.ca_pem in trusted  # a replica that has not read the Secret yet still presents the first
        assert "caBundle" not in hooks["other.gadgets.okt.example.com"]
    finally:
        server.stop()


def service_options(kube: kube_client.Client, namespace: str, configuration: str) -> webhook_server.Options:
    """``okt run --webhook-service gadget-webhooks --webhook-configuration NAME``'s options, read again often."""
    options = run._webhook_options(
        kube,
        "127.0.0.1",
        0,
        None,
        None,
        None,
        service=(namespace, "gadget-webhooks"),
        configuration=configuration,
        configuration_kinds=["ValidatingWebhookConfiguration"],
    )
    return dataclasses.replace(options, reload_interval=0.2)


def kept_bundle(kube: kube_client.Client, namespace: str) -> certs.Bundle:
    return certs.from_secret(kube, namespace, "gadget-webhooks-tls")


def trusted_by_our_hook(kube: kube_client.Client, kind: kinds.Kind, name: str) -> bytes:
    hooks = {h["name"]: h["clientConfig"] for h in kube.get(kind, name)["webhooks"]}
    return base64.b64decode(hooks["ours.gadgets.okt.example.com"].get("caBundle", ""))


def test_the_services_own_certificate_reaching_its_renewal_while_serving_is_renewed_its_ca_written_and_presented(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    # Made by an earlier start, so that it enters its last RENEW_BEFORE some seconds after this one starts.
    made = (
        datetime.datetime.now(datetime.UTC)
        - certs.VALIDITY
        + certs.RENEW_BEFORE
        + datetime.timedelta(minutes=5, seconds=10)
    )
    kept = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls", now=made)
    server = webhook_server.WebhookServer(service_options(kube, namespace, name), [], kube)
    server.start()
    try:
        assert presented(server) == der(kept)  # not yet due at start

        wait_for(lambda: presented(server) != der(kept), timeout=60, message="a renewed certificate presented")
        renewed = kept_bundle(kube, namespace)
        assert presented(server) == der(renewed)
        assert not certs.needs_renewal(renewed, certs.service_hosts("gadget-webhooks", namespace))
        trusted = trusted_by_our_hook(kube, kind, name)
        assert x509.load_pem_x509_certificates(renewed.ca_pem)[0].public_bytes(serialization.Encoding.PEM) in trusted
        assert kept.ca_pem in trusted  # a replica that has not read the Secret yet still presents the kept one
    finally:
        server.stop()


def test_the_services_own_certificate_renewed_by_another_replica_is_presented_without_a_restart(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    first = certs.for_service(kube, namespace, "gadget-webhooks", "gadget-webhooks-tls")
    server = webhook_server.WebhookServer(service_options(kube, namespace, name), [], kube)
    server.start()
    try:
        assert presented(server) == der(first)
        # Another replica's renewal: a new CA and certificate for the Service, written into the shared Secret.
        other = certs.self_signed(certs.service_hosts("gadget-webhooks", namespace))
        other = dataclasses.replace(other, ca_pem=other.ca_pem + first.ca_pem)
        kube.patch(SECRET, "gadget-webhooks-tls", {"data": tls_data(other)}, namespace)

        wait_for(lambda: presented(server) == der(other), timeout=30, message="the other replica's certificate")
        assert server.certificates == other
        assert other.ca_pem in trusted_by_our_hook(kube, kind, name)
    finally:
        server.stop()


def replaced_without_ca(kube: kube_client.Client, kind: kinds.Kind, name: str, ca_bundle: str | None) -> None:
    """``kubectl replace`` (a Helm upgrade) of the configuration as its manifest says it: our webhook's ``caBundle``
    empty, or ``ca_bundle`` (another CA's)."""
    live = kube.get(kind, name)
    ours = live["webhooks"][0]["clientConfig"]
    ours.pop("caBundle", None)
    if ca_bundle is not None:
        ours["caBundle"] = ca_bundle
    kube.replace(kind, live)


def reads_of(kube: kube_client.Client, resource: str) -> int:
    return sum(n for (verb, what), n in kube.stats.snapshot().items() if verb == "get" and what == resource)


@pytest.mark.parametrize("ca_bundle", [None, "other"], ids=["without-ca", "another-ca"])
def test_a_configuration_replaced_without_the_served_ca_has_it_written_again_while_serving_and_then_nothing(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str], ca_bundle: str | None
) -> None:
    kind, name = configuration
    server = webhook_server.WebhookServer(service_options(kube, namespace, name), [], kube)
    served = server.certificates.ca_pem
    server.start()
    try:
        assert trusted_by_our_hook(kube, kind, name) == served
        replaced_without_ca(kube, kind, name, certs.self_signed().ca_bundle() if ca_bundle else None)

        wait_for(lambda: trusted_by_our_hook(kube, kind, name) == served, timeout=30, message="the CA written again")
        assert "caBundle" not in kube.get(kind, name)["webhooks"][1]["clientConfig"]  # another Service's webhook
        version = kube.get(kind, name)["metadata"]["resourceVersion"]
        reads = reads_of(kube, "validatingwebhookconfigurations")
        wait_for(
            lambda: reads_of(kube, "validatingwebhookconfigurations") >= reads + 6,
            timeout=30,
            message="three more reads of the configuration",
        )
        assert kube.get(kind, name)["metadata"]["resourceVersion"] == version  # right: nothing written
    finally:
        server.stop()


def test_a_configuration_trusting_the_served_ca_beside_another_is_left_as_it_is(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    server = webhook_server.WebhookServer(service_options(kube, namespace, name), [], kube)
    both = certs.self_signed().ca_pem + server.certificates.ca_pem  # a replica that has read a renewal wrote both
    replaced_without_ca(kube, kind, name, base64.b64encode(both).decode())
    version = kube.get(kind, name)["metadata"]["resourceVersion"]
    reads = reads_of(kube, "validatingwebhookconfigurations")
    server.start()
    try:
        wait_for(
            lambda: reads_of(kube, "validatingwebhookconfigurations") >= reads + 6,
            timeout=30,
            message="three more reads of the configuration",
        )
        assert kube.get(kind, name)["metadata"]["resourceVersion"] == version
        assert trusted_by_our_hook(kube, kind, name) == both
    finally:
        server.stop()


def secret_ca(kube: kube_client.Client, namespace: str) -> bytes:
    return base64.b64decode(kube.get(SECRET, "gadget-webhooks-tls", namespace)["data"]["ca.crt"])


def test_an_old_ca_that_has_ended_leaves_the_configurations_and_the_secret_while_serving_and_the_served_one_stays(
    kube: kube_client.Client, namespace: str, configuration: tuple[kinds.Kind, str]
) -> None:
    kind, name = configuration
    server = webhook_server.WebhookServer(service_options(kube, namespace, name), [], kube)
    served = server.certificates
    server.start()
    try:
        # What a renewal a month ago left once the CA it replaced has ended: that CA beside the served one in the
        # Secret's ca.crt and in the caBundle (written there by a replica that read the renewal).
        two_years_ago = datetime.datetime.now(datetime.UTC) - 2 * certs.VALIDITY
        ended = certs.self_signed(certs.service_hosts("gadget-webhooks", namespace), now=two_years_ago).ca_pem
        kube.patch(
            SECRET,
            "gadget-webhooks-tls",
            {"data": tls_data(dataclasses.replace(served, ca_pem=served.ca_pem + ended))},
            namespace,
        )
        replaced_without_ca(kube, kind, name, base64.b64encode(served.ca_pem + ended).decode())

        wait_for(
            lambda: (
                trusted_by_our_hook(kube, kind, name) == served.ca_pem and secret_ca(kube, namespace) == served.ca_pem
            ),
            timeout=30,
            message=lambda: "the ended CA still trusted",
        )
        assert presented(server) == der(served)
        assert server.certificates.cert_pem == served.cert_pem
    finally:
        server.stop()


class SecretGuard(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"

    def check(self, ctx: okt.Context) -> None:
        return None


def test_the_certificate_secret_is_made_while_the_operator_s_own_webhook_of_secrets_is_not_served_yet(
    kube: kube_client.Client, namespace: str
) -> None:
    # An operator of Secrets, starting: its webhook, as okt gen webhooks writes it, calls a Service nothing serves
    # yet (narrowed to this test's namespace, as the control plane is shared).
    (validating,) = codegen_webhooks.webhooks_for_reconcilers(
        [SecretGuard],
        name=f"guard-{namespace}",
        client_config=codegen_webhooks.ClientConfig(service="guard-webhooks", namespace=namespace),
    )[1:]
    kube.patch(kinds.NAMESPACE, namespace, {"metadata": {"labels": {"okt-guarded": namespace}}})
    validating["webhooks"][0]["namespaceSelector"] = {"matchLabels": {"okt-guarded": namespace}}
    configurations = kube.resolve("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    kube.create(validating, configurations)
    try:
        wait_for(
            lambda: _refused(kube, namespace),
            timeout=30,
            message="the webhook judging (and refusing) other Secrets",
        )

        certs.for_service(kube, namespace, "guard-webhooks", "guard-webhooks-tls")

        stored = kube.get(SECRET, "guard-webhooks-tls", namespace)
        assert stored["metadata"]["labels"] == {names_mod.OPERATOR_LABEL: "guard-webhooks"}
    finally:
        kube.delete(configurations, validating["metadata"]["name"])


def _refused(kube: kube_client.Client, namespace: str) -> bool:
    """Whether an ordinary Secret's create is refused, unjudged (the configuration has reached the API server)."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"generateName": "plain-", "namespace": namespace}}
    try:
        kube.create(secret, SECRET)
    except errors.ApiError as exc:
        return "failed calling webhook" in str(exc)
    return False
