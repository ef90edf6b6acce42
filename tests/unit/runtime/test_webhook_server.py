"""The webhook server answers reviews over verified TLS, with certificates generated or read from a directory."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import http.client
import json
import os
import socket
import ssl
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
import structlog.testing
from cryptography import x509

import okt
from okt.cli import run
from okt.reconciler import admission
from okt.runtime import certs, webhook_connections, webhook_server
from okt.runtime import metrics as metrics_mod
from okt.testing import FakeClient, wait_for


class Spec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)


class Widgets(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = Spec


@pytest.fixture
def server() -> Iterator[webhook_server.WebhookServer]:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Widgets], FakeClient())
    running.start()
    yield running
    running.stop()


def test_a_port_bound_before_the_server_is_made_is_served_and_closed_at_stop() -> None:
    """okt run binds the webhook port before it says anything and hands the socket over in the options: the server
    serves that one, whatever port the options name, and frees it when it stops."""
    listener = webhook_server.listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    options = webhook_server.Options(host="127.0.0.1", port=webhook_server.DEFAULT_PORT, listener=listener)
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        assert running.port == port
        status, answer = post(running, "/validate/widget", review({"size": 2}))
    finally:
        running.stop()
    assert (status, answer["response"]["allowed"]) == (200, True)
    assert listener.fileno() == -1
    socket.create_server(("127.0.0.1", port)).close()  # free again


def test_a_webhook_port_another_process_holds_is_refused_as_it_is_bound_with_the_ways_out() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(okt.errors.ConfigurationError) as refused:
            webhook_server.listen("127.0.0.1", port, "try another")
    assert str(refused.value) == f"cannot serve webhooks on 127.0.0.1:{port}: Address already in use (try another)"


def post(
    server: webhook_server.WebhookServer,
    path: str,
    body: Any,
    host: str = "127.0.0.1",
    raw: bool = False,
    ca: bytes | None = None,
) -> tuple[int, dict[str, Any]]:
    context = ssl.create_default_context(cadata=(ca or server.certificates.ca_pem).decode())
    connection = http.client.HTTPSConnection(host, server.port, context=context, timeout=10)
    try:
        sent = body if raw else json.dumps(body)
        connection.request("POST", path, body=sent, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def review(spec: dict[str, Any]) -> dict[str, Any]:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "abc", "operation": "CREATE", "object": obj},
    }


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_refusal_comes_back_over_tls_verified_with_the_generated_ca(
    server: webhook_server.WebhookServer, host: str
) -> None:
    status, answer = post(server, "/validate/widget", review({"size": 0}), host=host)
    assert status == 200
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == "abc"
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"].startswith("spec.size: ")


def test_a_good_object_is_allowed_and_several_requests_share_a_connection(server: webhook_server.WebhookServer) -> None:
    context = ssl.create_default_context(cadata=server.certificates.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        for _ in range(3):
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 2})))
            assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [("/validate/other", review({"size": 1}), 404), ("/validate/widget", ["not", "a", "review"], 400)],
)
def test_unknown_paths_and_malformed_reviews_are_client_errors(
    server: webhook_server.WebhookServer, path: str, body: Any, status: int
) -> None:
    assert post(server, path, body)[0] == status


class Gadgets(okt.Reconciler):
    api_version = "example.com/v2"
    kind = "Gadget"
    plural = "gadgets"
    converters = {("v1", "v2"): lambda spec: spec, ("v2", "v1"): lambda spec: spec}

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("spec", {}).setdefault("size", 1)


def gadget(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "ns"}, **fields}


def admission_review(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", **request}}


def conversion_review(objects: Any) -> dict[str, Any]:
    request = {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": objects}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}


widget = review({"size": 1})["request"]["object"]


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        ("/validate/widget", admission_review(operation="CREATE", object=gadget(metadata="g")), "request.object"),
        ("/validate/widget", admission_review(operation="CREATE", object=widget, resource="widgets"), "resource"),
        ("/mutate/gadget", admission_review(operation="CREATE", object=gadget(metadata=["g"])), "request.object"),
        ("/mutate/gadget", admission_review(operation="UPDATE", object=gadget(), oldObject="g"), "oldObject"),
        ("/convert/gadget", conversion_review(5), "request.objects"),
        ("/convert/gadget", conversion_review([gadget(apiVersion="other.com/v1", metadata="g")]), "request.objects"),
        ("/validate/widget", "[" * 100_000 + "]" * 100_000, "depth"),
        ("/validate/widget", admission_review(object=widget), "request.operation"),
        ("/mutate/gadget", admission_review(operation=["CREATE"], object=gadget()), "request.operation"),
        ("/convert/gadget", {**conversion_review([gadget()]), "request": {"uid": "u"}}, "request.desiredAPIVersion"),
        ("/convert/gadget", {**conversion_review([]), "request": {"uid": "u", "objects": []}}, "desiredAPIVersion"),
        ("/convert/gadget", {**conversion_review([]), "request": {"uid": "u", "desiredAPIVersion": "v2"}}, "group"),
        ("/convert/gadget", conversion_review([gadget(), 5]), "request.objects[1] is not a JSON object"),
        ("/convert/gadget", conversion_review([gadget(), ["g"]]), "request.objects[1] is not a JSON object"),
        (
            "/validate/widget",
            admission_review(operation="CREATE", object=widget, namespace=["ns"]),
            "request.namespace",
        ),
        ("/mutate/gadget", admission_review(operation="CREATE", object=gadget(), name={"n": 1}), "request.name"),
        (
            "/validate/widget",
            admission_review(operation="CREATE", object={**widget, "metadata": {"name": "w", "labels": {"a": ["b"]}}}),
            "request.object.metadata.labels",
        ),
        (
            "/mutate/gadget",
            admission_review(operation="CREATE", object=gadget(metadata={"name": "g", "annotations": 5})),
            "request.object.metadata.annotations",
        ),
        (
            "/validate/widget",
            admission_review(operation="UPDATE", object=widget, oldObject={**widget, "metadata": {"namespace": 1}}),
            "request.oldObject.metadata.namespace",
        ),
        (
            "/validate/widget",
            admission_review(operation="CREATE", object={**widget, "spec": {"size": 0}}, kind="Widget"),
            "request.kind",
        ),
    ],
    ids=[
        "metadata",
        "resource",
        "mutated-metadata",
        "old-object",
        "objects",
        "converted-metadata",
        "nesting",
        "no-operation",
        "operation-not-a-string",
        "no-desired-version",
        "no-desired-version-nothing-to-convert",
        "desired-version-without-group",
        "object-a-number",
        "object-a-list",
        "namespace-a-list",
        "name-an-object",
        "label-a-list",
        "annotations-a-number",
        "old-namespace-a-number",
        "kind-a-string",
    ],
)
def test_a_review_of_the_wrong_shape_is_a_client_error_naming_what_is_wrong(path: str, body: Any, named: str) -> None:
    scope = admission.Scope(frozenset({"ns"}), "release!=other")  # judging the scope reads namespace and labels
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient(), scope
    )
    running.start()
    try:
        status, answer = post(running, path, body, raw=isinstance(body, str))
        assert (status, named in answer.get("error", "")) == (400, True), answer
        assert post(running, "/mutate/gadget", admission_review(operation="CREATE", object=gadget()))[0] == 200
    finally:
        running.stop()


def test_a_client_that_does_not_trust_the_ca_is_refused_by_its_own_verification(
    server: webhook_server.WebhookServer,
) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        post_untrusted = ssl.create_default_context()
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=post_untrusted, timeout=10)
        try:
            connection.request("POST", "/validate/widget", body="{}")
        finally:
            connection.close()


def test_the_generated_certificate_names_exactly_the_given_hosts_and_is_signed_by_the_ca() -> None:
    bundle = certs.self_signed(certs.service_hosts("ops-webhooks", "ops"))
    cert = x509.load_pem_x509_certificate(bundle.cert_pem)
    ca = x509.load_pem_x509_certificate(bundle.ca_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "ops-webhooks.ops.svc",
        "ops-webhooks",
        "ops-webhooks.ops",
        "ops-webhooks.ops.svc.cluster.local",
    ]
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert "PEM" not in repr(bundle).replace("PEM data hidden", "")


def test_a_certificate_directory_is_served_and_its_ca_is_the_bundle() -> None:
    generated = certs.self_signed()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "tls.crt").write_bytes(generated.cert_pem)
        (root / "tls.key").write_bytes(generated.key_pem)
        (root / "ca.crt").write_bytes(generated.ca_pem)
        assert certs.from_directory(root) == generated
        (root / "tls.key").unlink()
        with pytest.raises(okt.ConfigurationError, match=r"cannot read the webhook certificate"):
            certs.from_directory(root)


def test_the_certificate_generated_for_a_run_names_the_address_it_binds_too() -> None:
    # An API server calling okt run --webhook-host 127.0.0.2 dials that address (okt gen webhooks --url).
    options = run._webhook_options(FakeClient(), "127.0.0.2", 0, None, None, None)
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        status, answer = post(running, "/validate/widget", review({"size": 1}), host="127.0.0.2")
        assert (status, answer["response"]["allowed"]) == (200, True)
    finally:
        running.stop()
    names = x509.load_pem_x509_certificate(running.certificates.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    named = {*names.value.get_values_for_type(x509.DNSName), *map(str, names.value.get_values_for_type(x509.IPAddress))}
    assert named == {*certs.LOCAL_HOSTS, "127.0.0.2"}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (webhook_server.Options(host="127.0.0.2", port=0), {*certs.LOCAL_HOSTS, "127.0.0.2"}),
        (webhook_server.Options(host="0.0.0.0", port=0), set(certs.LOCAL_HOSTS)),
        (webhook_server.Options(host="127.0.0.2", port=0, hosts=("127.0.0.2",)), {"127.0.0.2"}),
    ],
    ids=["one-address", "every-address", "hosts-given"],
)
def test_a_server_generating_its_certificate_names_the_address_it_binds_as_okt_run_does(
    options: webhook_server.Options, named: set[str]
) -> None:
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    names = x509.load_pem_x509_certificate(running.certificates.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    running.stop()

    assert {
        *names.value.get_values_for_type(x509.DNSName),
        *map(str, names.value.get_values_for_type(x509.IPAddress)),
    } == named


def mount(root: Path, bundle: certs.Bundle, generation: str) -> None:
    """Write ``bundle`` as the kubelet updates a mounted Secret: a new folder, then ``..data`` pointed at it at once."""
    folder = root / f"..{generation}"
    folder.mkdir()
    files = {"tls.crt": bundle.cert_pem, "tls.key": bundle.key_pem, "ca.crt": bundle.ca_pem}
    for name, pem in files.items():
        (folder / name).write_bytes(pem)
    (root / "..data_tmp").symlink_to(folder.name)
    os.replace(root / "..data_tmp", root / "..data")
    for name in files:
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")


def test_a_certificate_directory_renewed_while_serving_is_served_from_the_next_connection(tmp_path: Path) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    options = run._webhook_options(FakeClient(), "127.0.0.1", 0, str(tmp_path), None, None)
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        assert post(running, "/validate/widget", review({"size": 1}), ca=first.ca_pem)[0] == 200

        mount(tmp_path, renewed, "2")

        status, answer = post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)
        assert (status, answer["response"]["allowed"]) == (200, True)
        assert running.certificates == renewed
    finally:
        running.stop()


def test_a_renewed_certificate_whose_key_is_not_written_yet_is_never_served(tmp_path: Path) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, certificates=tmp_path), [Widgets], FakeClient()
    )
    running.start()
    try:
        mount(tmp_path, dataclasses.replace(renewed, key_pem=first.key_pem), "2")
        assert post(running, "/validate/widget", review({"size": 1}), ca=first.ca_pem)[0] == 200

        mount(tmp_path, renewed, "3")
        assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200
    finally:
        running.stop()


def test_a_renewal_under_another_ca_is_served_only_once_that_ca_is_trusted_with_the_served_one(tmp_path: Path) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    trusted: list[bytes] = []
    api_server_away = True

    def trust(ca_pem: bytes) -> None:
        if api_server_away:
            raise okt.errors.Unavailable(503, "ServiceUnavailable", "the API server is away")
        trusted.append(ca_pem)

    # Tried again on a connection once the reload interval has passed since the last try.
    options = webhook_server.Options(
        host="127.0.0.1", port=0, certificates=tmp_path, trust_ca=trust, reload_interval=0.01
    )
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        with structlog.testing.capture_logs() as logs:
            mount(tmp_path, renewed, "2")
            for _ in range(3):
                assert post(running, "/validate/widget", review({"size": 1}), ca=first.ca_pem)[0] == 200
        assert [log["log_level"] for log in logs if "CA could not be written" in log["event"]] == ["warning"]

        api_server_away = False
        assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200
        assert trusted == [renewed.ca_pem + first.ca_pem]
        assert running.certificates == renewed
    finally:
        running.stop()


def test_a_renewals_ca_that_cannot_be_written_is_tried_again_once_a_reload_interval_not_on_every_connection(
    tmp_path: Path,
) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    tries: list[bytes] = []

    def trust(ca_pem: bytes) -> None:  # RBAC refuses the configurations' patch
        tries.append(ca_pem)
        raise okt.errors.Forbidden(403, "Forbidden", "cannot patch validatingwebhookconfigurations")

    options = webhook_server.Options(
        host="127.0.0.1", port=0, certificates=tmp_path, trust_ca=trust, reload_interval=3600
    )
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        mount(tmp_path, renewed, "2")
        for _ in range(5):  # each connection's handshake waited for the configurations' read and patch, one at a time
            assert post(running, "/validate/widget", review({"size": 1}), ca=first.ca_pem)[0] == 200
        assert tries == [renewed.ca_pem + first.ca_pem]
    finally:
        running.stop()


def test_the_ca_file_holds_a_renewals_ca_with_the_served_one_once_that_renewal_is_served(tmp_path: Path) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()  # each its own CA, as cert-manager's selfSigned issuer
    mounted, ca_file = tmp_path / "mounted", tmp_path / "webhook-ca.crt"
    mounted.mkdir()
    mount(mounted, first, "1")
    options = run._webhook_options(FakeClient(), "127.0.0.1", 0, str(mounted), None, str(ca_file))
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        assert ca_file.read_bytes() == first.ca_pem

        mount(mounted, renewed, "2")
        assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200

        # What okt gen webhooks --ca-bundle reads: the renewal's CA, and the one a replica not renewed yet serves.
        assert ca_file.read_bytes() == renewed.ca_pem + first.ca_pem
    finally:
        running.stop()


def test_a_ca_file_that_can_no_longer_be_written_is_logged_and_the_renewal_served_all_the_same(tmp_path: Path) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mounted, ca_file = tmp_path / "mounted", tmp_path / "webhook-ca.crt"
    mounted.mkdir()
    mount(mounted, first, "1")
    options = run._webhook_options(FakeClient(), "127.0.0.1", 0, str(mounted), None, str(ca_file))
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        ca_file.unlink()
        ca_file.mkdir()  # no longer a file okt can write
        mount(mounted, renewed, "2")
        with structlog.testing.capture_logs() as logs:
            assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200
        assert [log["log_level"] for log in logs if log["event"] == "the webhook CA file was not written again"] == [
            "warning"
        ]
    finally:
        running.stop()


def test_a_stopped_server_answers_nothing_even_on_a_kept_alive_connection() -> None:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Widgets], FakeClient())
    running.start()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10)
    try:
        connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 2})))
        assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
        running.stop()
        with pytest.raises((ConnectionError, http.client.HTTPException, ssl.SSLError, OSError)):
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 2})))
            connection.getresponse().read()
    finally:
        connection.close()
        running.stop()


def test_a_port_already_taken_is_one_configuration_error(server: webhook_server.WebhookServer) -> None:
    taken = webhook_server.Options(host="127.0.0.1", port=server.port)
    with pytest.raises(okt.ConfigurationError, match=rf"cannot serve webhooks on 127.0.0.1:{server.port}: "):
        webhook_server.WebhookServer(taken, [Widgets], FakeClient())


def test_serving_writes_no_file_so_a_read_only_root_filesystem_is_fine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-directory"))  # as unwritable as /tmp can be
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Widgets], FakeClient())
    try:
        running.start()
        assert post(running, "/validate/widget", review({"size": 1}))[1]["response"]["allowed"] is True
    finally:
        running.stop()


def test_a_review_in_either_version_the_api_server_sends_is_answered_in_that_version() -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient()
    )
    running.start()
    try:
        for version in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1"):
            sent = {**admission_review(operation="CREATE", object=gadget()), "apiVersion": version}
            status, answer = post(running, "/mutate/gadget", sent)
            assert (status, answer["apiVersion"], answer["kind"]) == (200, version, "AdmissionReview")
        for version in ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"):
            status, answer = post(running, "/convert/gadget", {**conversion_review([gadget()]), "apiVersion": version})
            assert (status, answer["apiVersion"], answer["kind"]) == (200, version, "ConversionReview")
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        ("/validate/widget", {**review({"size": 1}), "apiVersion": "admission.k8s.io/v2"}, "admission.k8s.io/v2"),
        ("/validate/widget", {**review({"size": 1}), "apiVersion": "apiextensions.k8s.io/v1"}, "apiextensions"),
        ("/validate/widget", {**review({"size": 1}), "apiVersion": 5}, "apiVersion 5"),
        ("/validate/widget", {k: v for k, v in review({"size": 1}).items() if k != "apiVersion"}, "apiVersion None"),
        ("/validate/widget", {**review({"size": 1}), "kind": "ConversionReview"}, "ConversionReview"),
        ("/mutate/gadget", {**admission_review(operation="CREATE", object=gadget()), "kind": None}, "kind None"),
        ("/convert/gadget", {**conversion_review([gadget()]), "apiVersion": "admission.k8s.io/v1"}, "admission"),
        ("/convert/gadget", {**conversion_review([gadget()]), "kind": "AdmissionReview"}, "AdmissionReview"),
    ],
    ids=[
        "unknown-version",
        "conversion-version",
        "not-a-string",
        "no-version",
        "wrong-kind",
        "no-kind",
        "admission-version-converted",
        "admission-kind-converted",
    ],
)
def test_a_review_of_a_version_or_kind_the_webhook_does_not_speak_is_a_client_error_naming_it(
    path: str, body: Any, named: str
) -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient()
    )
    running.start()
    try:
        status, answer = post(running, path, body)
        assert (status, named in answer.get("error", "")) == (400, True), answer
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 200),
        ("Application/JSON; charset=utf-8", 200),
        ("application/x-www-form-urlencoded", 415),
        ("application/yaml", 415),
        ("text/plain", 415),
    ],
)
def test_a_body_said_to_be_other_than_json_is_refused_and_the_connection_serves_on(
    server: webhook_server.WebhookServer, content_type: str, status: int
) -> None:
    context = ssl.create_default_context(cadata=server.certificates.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        connection.request("POST", "/validate/widget", json.dumps(review({"size": 1})), {"Content-Type": content_type})
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == status, answer
        if status == 415:
            assert content_type in answer["error"]
        connection.request(
            "POST", "/validate/widget", json.dumps(review({"size": 1})), {"Content-Type": "application/json"}
        )
        assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
    finally:
        connection.close()


@pytest.mark.parametrize("error", [RuntimeError, ValueError])
def test_a_review_failing_inside_okt_is_a_500_naming_the_errors_type_logged_once_with_its_stack_never_its_values(
    server: webhook_server.WebhookServer, error: type[Exception]
) -> None:
    secret_value = "czNjcjN0LXBhc3N3b3Jk"  # a Secret's data, as a review of a Secret carries it

    def failing_review(body: Any, headers: Any) -> dict[str, Any]:
        data = {"password": secret_value}
        try:
            return {"response": data["token"]}
        except KeyError as exc:
            raise error(f"cannot answer for {data}") from exc

    server.routes["/validate/widget"] = failing_review
    with structlog.testing.capture_logs() as logs:
        status, answer = post(server, "/validate/widget", review({"size": 1, "password": secret_value}))

    assert status == 500
    assert answer == {"error": f"{error.__name__}: the webhook failed inside the operator (its log says where)"}
    failed = [log for log in logs if log["log_level"] == "error"]
    assert len(failed) == 1
    assert failed[0]["error"] == error.__name__
    assert "KeyError, raised at:" in failed[0]["stack"]
    assert f"{error.__name__}, raised at:" in failed[0]["stack"]
    assert "in failing_review" in failed[0]["stack"]
    assert secret_value not in str(logs)


def test_connections_stuck_before_the_handshake_or_inside_a_body_do_not_hold_up_other_reviews(
    server: webhook_server.WebhookServer,
) -> None:
    silent = socket.create_connection(("127.0.0.1", server.port))  # connects, never says hello
    context = ssl.create_default_context(cadata=server.certificates.ca_pem.decode())
    unfinished = context.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1")
    unfinished.sendall(b"POST /validate/widget HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n{")  # never ends
    try:
        for _ in range(3):
            # Well within the stuck connections' own timeout: served beside them, not after them.
            connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=5)
            try:
                connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 2})))
                assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
            finally:
                connection.close()
    finally:
        silent.close()
        unfinished.close()


def test_a_client_that_trickles_a_body_it_never_finishes_is_cut_off_at_the_request_timeout() -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, request_timeout=1.0), [Widgets], FakeClient()
    )
    running.start()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    slow = context.wrap_socket(socket.create_connection(("127.0.0.1", running.port)), server_hostname="127.0.0.1")
    slow.settimeout(0.2)
    try:
        slow.sendall(b"POST /validate/widget HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n{")
        cut_off = False
        for _ in range(100):  # a byte every 0.2 s or so, each well within the server's timeout between two reads
            try:
                slow.sendall(b" ")
                cut_off = slow.recv(1) == b""
            except TimeoutError:
                continue
            except (OSError, ssl.SSLError):
                cut_off = True
            if cut_off:
                break
        assert cut_off, "the server was still reading the trickled body"
        assert post(running, "/validate/widget", review({"size": 1}))[1]["response"]["allowed"] is True
    finally:
        slow.close()
        running.stop()


def test_a_storm_of_connections_waits_for_a_free_connection_slot_and_each_is_served_in_turn() -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, max_connections=3), [Widgets], FakeClient()
    )
    running.start()
    idle = threading.active_count()
    storm = [socket.create_connection(("127.0.0.1", running.port)) for _ in range(12)]  # never say hello
    try:
        wait_for(lambda: threading.active_count() - idle >= 3, timeout=10, message="three connections being served")
        time.sleep(0.5)  # time for the accepting thread to start more threads, were it to
        assert threading.active_count() - idle == 3
        for silent in storm:
            silent.close()
        assert post(running, "/validate/widget", review({"size": 1}))[1]["response"]["allowed"] is True
    finally:
        for silent in storm:
            silent.close()
        running.stop()


def test_a_server_that_could_serve_no_connection_is_a_configuration_error() -> None:
    with pytest.raises(okt.ConfigurationError, match=r"max_connections must be at least 1, not 0"):
        webhook_server.Options(max_connections=0)


def client_hello() -> bytes:
    """The first bytes of a TLS handshake, as a client sends them."""
    outgoing = ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname="127.0.0.1")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_stopping_cuts_a_connection_still_in_its_tls_handshake() -> None:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Widgets], FakeClient())
    with structlog.testing.capture_logs() as logs:
        running.start()
        stuck = socket.create_connection(("127.0.0.1", running.port))
        try:
            stuck.sendall(client_hello()[:10])  # a handshake begun, never finished
            assert post(running, "/validate/widget", review({"size": 1}))[1]["response"]["allowed"] is True
            running.stop()
            stuck.settimeout(10)
            assert stuck.recv(1) == b""
        finally:
            stuck.close()
            running.stop()
    # Cut by the stop (or never begun, when the stop came first), not left to its own timeout.
    failed = [entry["error"] for entry in logs if entry["event"] == "webhook TLS handshake failed"]
    assert not [error for error in failed if "timed out" in error]


checking = threading.Event()
checked = threading.Event()


class SlowWidgets(Widgets):
    kind = "SlowWidget"
    plural = "slowwidgets"

    def check(self, ctx: okt.Context) -> None:
        checking.set()
        assert checked.wait(30), "the test never let the check end"


def test_stopping_lets_a_review_in_flight_be_answered_and_cuts_the_idle_connections() -> None:
    checking.clear()
    checked.clear()
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [SlowWidgets], FakeClient()
    )
    running.start()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    idle = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10)
    busy = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10)
    slow = {**review({"size": 1}), "request": {**review({"size": 1})["request"], "uid": "slow"}}
    slow["request"]["object"] = {**slow["request"]["object"], "kind": "SlowWidget"}
    stopper = threading.Thread(target=running.stop)
    try:
        idle.request("POST", "/validate/slowwidget", body=json.dumps(review({"size": 0})))
        assert json.loads(idle.getresponse().read())["response"]["allowed"] is False  # refused before any check
        busy.request("POST", "/validate/slowwidget", body=json.dumps(slow))
        assert checking.wait(10)

        stopper.start()
        assert idle.sock is not None
        assert idle.sock.recv(1) == b""  # the kept-alive connection is cut at once
        checked.set()

        response = busy.getresponse()
        assert (response.status, json.loads(response.read())["response"]["uid"]) == (200, "slow")
        stopper.join(30)
        assert not stopper.is_alive()
    finally:
        checked.set()
        idle.close()
        busy.close()
        if stopper.is_alive():
            stopper.join(30)
        running.stop()


MiB = 1024 * 1024


def padded(review: dict[str, Any], field: str, filler: Any, size: int) -> str:
    """``review`` with its object's ``field`` a list of ``filler`` making the whole body about ``size`` bytes."""
    item = json.dumps(filler)
    items = ",".join([item] * (size // (len(item) + 1)))
    body = json.dumps(review).replace(f'"{field}": null', f'"{field}": [{items}]')
    assert field in body
    return body


def peak_memory_of_post(path: str, body: str) -> tuple[int, int, dict[str, Any]]:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient()
    )
    running.start()
    try:
        tracemalloc.start()
        try:
            status, answer = post(running, path, body, raw=True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return status, peak, answer
    finally:
        running.stop()


def with_junk(review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    objects = [{**obj, "junk": None} for obj in request.get("objects", [])]
    obj = {**request["object"], "junk": None} if "object" in request else None
    return {**review, "request": {**request, **({"objects": objects} if objects else {"object": obj})}}


@pytest.mark.parametrize(
    ("path", "review", "filler", "size"),
    [
        ("/validate/widget", with_junk(review({"size": 1})), {}, 7 * MiB),
        ("/mutate/gadget", with_junk(admission_review(operation="CREATE", object=gadget())), [0], 7 * MiB),
        ("/convert/gadget", with_junk(conversion_review([gadget()])), {"a": 0}, 8 * MiB),
    ],
    ids=["empty-objects", "short-lists", "small-objects"],
)
def test_a_body_of_more_small_values_than_a_review_holds_is_refused_before_it_is_decoded(
    path: str, review: dict[str, Any], filler: Any, size: int
) -> None:
    body = padded(review, "junk", filler, size)
    status, peak, answer = peak_memory_of_post(path, body)
    assert (status, "values" in answer.get("error", "")) == (413, True), answer
    assert peak < 3 * len(body)  # decoded, each small value would cost some 10 to 40 times its bytes


@pytest.mark.parametrize(
    ("path", "size", "named"),
    [
        ("/validate/widget", 9 * MiB, "up to 8 MiB"),
        ("/mutate/gadget", 8 * MiB + 1, "up to 8 MiB"),
        ("/convert/gadget", 17 * MiB, "up to 16 MiB"),
    ],
)
def test_a_review_larger_than_the_api_server_sends_is_refused_unread(path: str, size: int, named: str) -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient()
    )
    running.start()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10)
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(size))  # an object past 3 MiB, twice; the body never sent
        connection.endheaders()
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert (response.status, named in answer["error"]) == (413, True), answer
    finally:
        connection.close()
        running.stop()


def post_to_a_new_server(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [Widgets, Gadgets], FakeClient()
    )
    running.start()
    try:
        return post(running, path, body)
    finally:
        running.stop()


def test_the_largest_reviews_the_api_server_sends_are_answered() -> None:
    obj = {**widget, "data": "x" * (3 * MiB)}  # an UPDATE of an object as large as a request may be
    old = {**widget, "data": "y" * (3 * MiB // 2)}  # from an object as large as etcd stores
    update = admission_review(operation="UPDATE", object=obj, oldObject=old)
    status, answer = post_to_a_new_server("/validate/widget", update)
    assert (status, answer["response"]["allowed"]) == (200, True), answer
    page = conversion_review([gadget(spec={"n": i}) for i in range(40_000)])  # a list of objects, some 5 MiB
    status, answer = post_to_a_new_server("/convert/gadget", page)
    assert (status, len(answer["response"]["convertedObjects"])) == (200, 40_000)


judging: list[str] = []
judged = threading.Event()


class CheckedWidgets(Widgets):
    """Widgets whose check reads for a while (as one reading the API server does), the review held meanwhile."""

    kind = "CheckedWidget"
    plural = "checkedwidgets"

    def check(self, ctx: okt.Context) -> None:
        judging.append(ctx.cr.name)
        assert judged.wait(30), "the test never let the check end"


def test_large_reviews_arriving_at_once_are_decoded_and_judged_a_few_at_a_time() -> None:
    judging.clear()
    judged.clear()
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [CheckedWidgets], FakeClient()
    )
    running.start()
    large = {**widget, "kind": "CheckedWidget", "data": ["ab"] * 400_000}  # 2 MiB of short strings, 25 MiB decoded
    body = json.dumps(admission_review(operation="CREATE", object=large)).encode()
    answers: list[int] = []

    def send() -> None:
        answers.append(post(running, "/validate/checkedwidget", body, raw=True)[0])

    clients = [threading.Thread(target=send) for _ in range(10)]
    tracemalloc.start()
    try:
        for client in clients:
            client.start()
        wait_for(lambda: len(judging) >= 2, timeout=30, message="two reviews being judged")
        time.sleep(1)  # time for the others to be decoded too, were they to be
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        judged.set()
        for client in clients:
            client.join(60)
        running.stop()
    assert answers == [200] * 10
    assert held < 128 * MiB, held / MiB  # all ten decoded and held at once: some 250 MiB


def test_with_every_slot_kept_alive_by_an_idle_connection_a_new_one_is_served_in_place_of_one() -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, max_connections=2), [Widgets], FakeClient()
    )
    running.start()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    kept = [http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10) for _ in range(2)]
    try:
        for connection in kept:  # as the API server keeps its connections for the next calls
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 1})))
            assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
        # Well within the 10 s an idle connection is kept: served at once, not after one of them ends.
        connection = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=5)
        try:
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 1})))
            assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
        finally:
            connection.close()
    finally:
        for connection in kept:
            connection.close()
        running.stop()


def test_with_every_slot_held_by_a_silent_connection_a_working_one_is_served_in_place_of_one() -> None:
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, max_connections=2), [Widgets], FakeClient()
    )
    running.start()
    idle = threading.active_count()
    silent = [socket.create_connection(("127.0.0.1", running.port)) for _ in range(2)]  # connect, never say hello
    try:
        wait_for(lambda: threading.active_count() - idle >= 2, timeout=10, message="both silent ones being served")
        # Well within the time a silent connection was given before: served at once, not after one of them ends.
        context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
        connection = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=8)
        try:
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 1})))
            assert json.loads(connection.getresponse().read())["response"]["allowed"] is True
        finally:
            connection.close()
    finally:
        for connection in silent:
            connection.close()
        running.stop()


@pytest.mark.parametrize("handshake", [False, True])
def test_a_connection_that_sends_no_handshake_or_no_first_request_is_closed_before_an_idle_ones_timeout(
    server: webhook_server.WebhookServer, handshake: bool
) -> None:
    raw = socket.create_connection(("127.0.0.1", server.port))
    if handshake:
        context = ssl.create_default_context(cadata=server.certificates.ca_pem.decode())
        silent: socket.socket = context.wrap_socket(raw, server_hostname="127.0.0.1")
    else:
        silent = raw
    try:
        # The API server sends as soon as it connects: a connection that does not is cut short, not kept as long
        # as one between two of its requests.
        silent.settimeout(webhook_connections.IDLE_TIMEOUT - 2)
        assert silent.recv(1) == b""
    finally:
        silent.close()


def test_the_cas_a_renewal_trusted_are_the_ones_restored_every_reload_interval_and_a_failure_is_logged_once(
    tmp_path: Path,
) -> None:
    first, renewed = certs.self_signed(), certs.self_signed()
    mount(tmp_path, first, "1")
    restored: list[bytes] = []
    api_server_away = True

    def restore(ca_pem: bytes) -> None:
        if api_server_away:
            raise okt.errors.Unavailable(503, "ServiceUnavailable", "the API server is away")
        restored.append(ca_pem)

    options = webhook_server.Options(
        host="127.0.0.1",
        port=0,
        certificates=tmp_path,
        trust_ca=lambda ca_pem: None,
        restore_ca=restore,
        reload_interval=0.01,
    )
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    with structlog.testing.capture_logs() as logs:
        running.start()
        try:
            wait_for(lambda: len([log for log in logs if "CA could not be checked" in log["event"]]) == 1)
            api_server_away = False
            wait_for(lambda: first.ca_pem in restored, message="the served CA restored")

            mount(tmp_path, renewed, "2")
            assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200

            wait_for(lambda: restored[-1] == renewed.ca_pem + first.ca_pem, message="both CAs restored")
        finally:
            running.stop()
    assert len([log for log in logs if "CA could not be checked" in log["event"]]) == 1


def test_a_renewals_ca_is_trusted_with_the_served_ones_each_once_and_without_those_that_have_ended(
    tmp_path: Path,
) -> None:
    ended = certs.self_signed(now=datetime.datetime.now(datetime.UTC) - 2 * certs.VALIDITY)
    served, renewed = certs.self_signed(), certs.self_signed()
    # A renewal a year ago left the CA it replaced beside the served one; this renewal keeps the served one beside its.
    served = dataclasses.replace(served, ca_pem=served.ca_pem + ended.ca_pem)
    renewed = dataclasses.replace(renewed, ca_pem=renewed.ca_pem + served.ca_pem.replace(ended.ca_pem, b""))
    mount(tmp_path, served, "1")
    trusted: list[bytes] = []
    options = webhook_server.Options(host="127.0.0.1", port=0, certificates=tmp_path, trust_ca=trusted.append)
    running = webhook_server.WebhookServer(options, [Widgets], FakeClient())
    running.start()
    try:
        mount(tmp_path, renewed, "2")
        assert post(running, "/validate/widget", review({"size": 1}), ca=renewed.ca_pem)[0] == 200

        assert trusted == [renewed.ca_pem]
    finally:
        running.stop()


returning = threading.Event()


class HangingWidgets(Widgets):
    kind = "HangingWidget"
    plural = "hangingwidgets"

    def check(self, ctx: okt.Context) -> None:
        assert returning.wait(60), "the test never let the check return"


def send_review(running: webhook_server.WebhookServer, path: str) -> ssl.SSLSocket:
    """A connection that sent one review to ``path`` and reads no answer."""
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    sent = context.wrap_socket(socket.create_connection(("127.0.0.1", running.port)), server_hostname="127.0.0.1")
    body = json.dumps(review({"size": 1})).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sent.sendall(head.encode() + body)
    return sent


def test_every_slot_held_by_a_hook_past_its_request_timeout_stops_the_server_serving_until_one_returns() -> None:
    returning.clear()
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0, max_connections=2, request_timeout=1.0),
        [HangingWidgets],
        FakeClient(),
    )
    running.start()
    hung = [send_review(running, "/validate/hangingwidget") for _ in range(2)]
    try:
        for connection in hung:
            connection.settimeout(30)
            assert connection.recv(1) == b""  # cut at the request timeout; its hook goes on
        # No connection is accepted any more, however long the API server tries: the probes must say so.
        assert not running.serving
        assert running.stalled
        returning.set()
        wait_for(lambda: running.serving, timeout=30, message="the hooks' slots free again")
        assert not running.stalled
        assert post(running, "/validate/hangingwidget", review({"size": 1}))[1]["response"]["allowed"] is True
    finally:
        returning.set()
        for connection in hung:
            connection.close()
        running.stop()


@pytest.mark.skipif(not socket.has_ipv6, reason="this Python has no IPv6")
@pytest.mark.parametrize("host", ["::1", "::"])
def test_an_ipv6_host_is_bound_and_served_over_ipv6_with_the_generated_certificate(host: str) -> None:
    """``--webhook-host ::`` is every interface of an IPv6-only pod, as ``[::]:8080`` is for the probes."""
    running = webhook_server.WebhookServer(webhook_server.Options(host=host, port=0), [Widgets], FakeClient())
    running.start()
    try:
        status, answer = post(running, "/validate/widget", review({"size": 1}), host="::1")
        assert (status, answer["response"]["allowed"]) == (200, True)
        assert running.url("/validate/widget", host="::1") == f"https://[::1]:{running.port}/validate/widget"
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("query", "seconds"),
    [
        ("timeout=10s", 10.0),
        ("timeout=30s", 30.0),
        ("timeout=1m0s", 60.0),
        ("timeout=1.5s", 1.5),
        ("timeout=500ms", 0.5),
        ("a=b&timeout=2s", 2.0),
        ("", None),
        ("timeout=", None),
        ("timeout=0s", None),
        ("timeout=10", None),
        ("timeout=10s;drop", None),
        ("timeout=-5s", None),
        ("timeout=ten", None),
    ],
)
def test_the_callers_timeout_is_read_from_the_go_duration_the_api_server_puts_in_the_url(
    query: str, seconds: float | None
) -> None:
    assert webhook_connections.caller_timeout(query) == seconds


class Reserved(okt.Reconciler):
    """Refuses a widget of a reserved name with 409, and keeps what each check was told of its call."""

    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = Spec
    told: list[okt.Admission] = []

    def check(self, ctx: okt.Context) -> None:
        assert ctx.admission is not None
        type(self).told.append(ctx.admission)
        if ctx.cr.name == "w":
            raise okt.AdmissionRefused("metadata.name: w is reserved", code=409)


def test_a_refusal_with_its_own_code_comes_back_over_tls_and_the_check_reads_the_calls_headers_never_logged() -> None:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Reserved], FakeClient())
    running.start()
    Reserved.told.clear()
    context = ssl.create_default_context(cadata=running.certificates.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", running.port, context=context, timeout=10)
    try:
        with structlog.testing.capture_logs() as logs:
            headers = {"Content-Type": "application/json", "Authorization": "Bearer hunter2", "X-Trace": "t-1"}
            connection.request("POST", "/validate/widget", body=json.dumps(review({"size": 2})), headers=headers)
            answer = json.loads(connection.getresponse().read())
    finally:
        connection.close()
        running.stop()

    status = answer["response"]["status"]
    assert (answer["response"]["allowed"], status["code"], status["reason"]) == (False, 409, "Conflict")
    assert status["message"] == "metadata.name: w is reserved"
    (told,) = Reserved.told
    assert (told.headers["authorization"], told.headers["x-trace"]) == ("Bearer hunter2", "t-1")
    assert logs and "hunter2" not in repr(logs)


class CountedWidgets(Widgets):
    kind = "CountedWidget"
    plural = "countedwidgets"

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.name == "slow":
            checking.set()
            assert checked.wait(30), "the test never let the check end"


def counted(kind: str, name: str, size: int) -> dict[str, Any]:
    body = review({"size": size})
    body["request"]["object"] = {**body["request"]["object"], "kind": kind, "metadata": {"name": name}}
    return body


def test_each_webhook_counts_its_requests_by_code_and_its_reviews_by_verdict_times_them_and_shows_those_in_flight() -> (
    None
):
    """An SRE alerts on a webhook refusing, failing or nearing the API server's timeout, as on controller-runtime's:
    with ``failurePolicy: Fail`` every write of the kind across the cluster goes through it."""
    checking.clear()
    checked.clear()
    metrics = metrics_mod.Metrics()
    running = webhook_server.WebhookServer(
        webhook_server.Options(host="127.0.0.1", port=0), [CountedWidgets, Gadgets], FakeClient(), metrics=metrics
    )
    sample = metrics.registry.get_sample_value
    validate = {"webhook": "/validate/countedwidget"}
    running.start()
    slow = threading.Thread(target=post, args=(running, "/validate/countedwidget", counted("CountedWidget", "slow", 1)))
    try:
        assert sample("controller_runtime_webhook_requests_in_flight", {"webhook": "/mutate/gadget"}) == 0
        slow.start()
        assert checking.wait(10)
        assert sample("controller_runtime_webhook_requests_in_flight", validate) == 1
        checked.set()
        slow.join(10)
        assert (
            post(running, "/validate/countedwidget", counted("CountedWidget", "w", 0))[1]["response"]["allowed"]
            is False
        )
        assert post(running, "/validate/countedwidget", ["not", "a", "review"])[0] == 400
        assert post(running, "/convert/gadget", conversion_review([gadget()]))[0] == 200
        assert post(running, "/validate/nothing", counted("CountedWidget", "w", 1))[0] == 404
    finally:
        checked.set()
        running.stop()

    # Out of flight once its answer is written, a moment after the caller may have read it.
    wait_for(lambda: sample("controller_runtime_webhook_requests_in_flight", validate) == 0, timeout=5)
    assert sample("controller_runtime_webhook_requests_total", {**validate, "code": "200"}) == 2
    assert sample("controller_runtime_webhook_requests_total", {**validate, "code": "400"}) == 1
    assert sample("controller_runtime_webhook_latency_seconds_count", validate) == 3
    assert sample("okt_webhook_reviews_total", {**validate, "verdict": "allowed"}) == 1
    assert sample("okt_webhook_reviews_total", {**validate, "verdict": "refused"}) == 1
    assert sample("okt_webhook_reviews_total", {"webhook": "/convert/gadget", "verdict": "converted"}) == 1
    # A path no webhook is served on has no series: a scanner's requests would make one per path it tries.
    exposed = metrics.exposition().decode()
    assert "/validate/nothing" not in exposed
