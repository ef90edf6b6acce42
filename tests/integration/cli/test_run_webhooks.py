"""``okt run`` serves the webhooks of an operator with a spec_model: a generated CA written where ``okt gen webhooks
--ca-bundle`` reads it, and the API server refusing a bad spec through it. With ``--webhook-service`` and
``--webhook-configuration`` (what ``okt gen deploy`` passes), the CA of the Service's certificate goes into the
conversion webhook of the CRDs of reconcilers with converters, once."""

from __future__ import annotations

import base64
import datetime
import pathlib
import secrets
import socket
import ssl
import textwrap
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import okt
from okt.cli import run
from okt.codegen import crd, webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import loader
from okt.runtime import certs
from okt.testing import OperatorProcess, envtest, wait_for
from tests.integration import converting

pytestmark = pytest.mark.integration

OPERATOR = """
import pydantic
import okt

class ThingSpec(pydantic.BaseModel):
    size: int

    @pydantic.field_validator("size")
    @classmethod
    def even(cls, size: int) -> int:
        if size % 2:
            raise ValueError("the size must be even")
        return size

class Things(okt.Reconciler):
    api_version = "run.okt.example.com/v1"
    kind = "Thing"
    plural = "things"
    spec_model = ThingSpec
"""
VALIDATING = kinds.Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)


def thing_operator(
    tmp_path: pathlib.Path, apply_crd: object, filename: str = "webhook_operator.py"
) -> tuple[pathlib.Path, Any, kinds.Kind]:
    """The operator of these tests written to ``tmp_path``, its CRD applied: its source, reconciler and kind."""
    source = tmp_path / filename
    source.write_text(textwrap.dedent(OPERATOR))
    (things,) = loader.load_reconcilers(str(source))
    kind = apply_crd(crd.crd_for_reconciler(things))  # type: ignore[operator]
    return source, things, kind


def test_okt_run_serves_the_validating_webhook_with_its_generated_ca(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: object,
    tmp_path: pathlib.Path,
) -> None:
    source, things, kind = thing_operator(tmp_path, apply_crd)
    ca_file = tmp_path / "ca.crt"
    args = ["--webhook-host", "127.0.0.1", "--webhook-ca-file", str(ca_file)]
    running = OperatorProcess.okt_run(
        source,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=args,
        log_path=tmp_path / "operator.log",
    )
    with running as operator:
        serving = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "serving webhooks"), None),
            timeout=30,
            message="the webhook server's log line",
        )
        assert serving["paths"] == ["/validate/thing"]
        name = f"things-{secrets.token_hex(3)}"
        (configuration,) = webhooks.webhooks_for_reconcilers(
            [things],
            name=name,
            client_config=webhooks.ClientConfig(
                url=f"https://127.0.0.1:{serving['port']}", ca_bundle=base64.b64encode(ca_file.read_bytes()).decode()
            ),
        )
        kube.create(configuration, VALIDATING)
        try:

            def refused() -> bool:
                thing_name = f"t-{secrets.token_hex(3)}"
                obj = {
                    "apiVersion": "run.okt.example.com/v1",
                    "kind": "Thing",
                    "metadata": {"name": thing_name, "namespace": namespace},
                    "spec": {"size": 3},
                }
                try:
                    kube.create(obj, kind)
                except okt.ApiError as exc:
                    return "spec.size: Value error, the size must be even" in str(exc)
                kube.delete(kind, thing_name, namespace)
                return False

            wait_for(refused, timeout=30, message="okt run refusing an odd size")
            # The refusal is on okt run's /metrics, under the webhook's path.
            metrics = operator.metrics()
            assert 'okt_webhook_reviews_total{verdict="refused",webhook="/validate/thing"}' in metrics
            assert 'controller_runtime_webhook_requests_total{code="200",webhook="/validate/thing"}' in metrics
        finally:
            kube.delete(VALIDATING, name)


SERVICE = "gadget-operator-webhooks"
SECRET = kinds.BUILTIN[("v1", "Secret")]


def conversion_client_config(crd_document: dict[str, Any]) -> dict[str, Any]:
    return dict(crd_document["spec"]["conversion"]["webhook"]["clientConfig"])


def test_okt_run_writes_the_services_ca_into_the_crds_conversion_webhook_once(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: object,
    tmp_path: pathlib.Path,
) -> None:
    source = converting.gadget_operator(tmp_path, "conv.run.okt.example.com")
    (gadgets,) = loader.load_reconcilers(str(source))
    client_config = webhooks.ClientConfig(service=SERVICE, namespace=namespace)
    apply_crd(crd.crd_for_reconciler(gadgets, webhooks.conversion_client_config(gadgets, client_config)))  # type: ignore[operator]
    name = "gadgets.conv.run.okt.example.com"
    args = ["--webhook-host", "127.0.0.1", "--webhook-service", SERVICE, "--webhook-configuration", "gadget-operator"]

    def start(log: str) -> OperatorProcess:
        return OperatorProcess.okt_run(
            source, kubeconfig=control_plane.kubeconfig, namespaces=[namespace], args=args, log_path=tmp_path / log
        )

    with start("first.log") as operator:
        written = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "webhook CA written"), None),
            timeout=30,
            message="the log line of the CA written",
        )
        serving = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "serving webhooks"), None),
            timeout=30,
            message="the webhook server's log line",
        )
        assert written["crds"] == [name]
        assert serving["paths"] == ["/convert/gadget"]
        live = kube.get(kinds.CRD, name)
        config = conversion_client_config(live)
        ca_pem = base64.b64decode(config["caBundle"])
        assert ca_pem == base64.b64decode(kube.get(SECRET, f"{SERVICE}-tls", namespace)["data"]["ca.crt"])
        assert config["service"] == {"name": SERVICE, "namespace": namespace, "path": "/convert/gadget", "port": 443}
        # the CA is the one of the certificate served, for the name the API server dials
        context = ssl.create_default_context(cadata=ca_pem.decode())
        raw = socket.create_connection(("127.0.0.1", serving["port"]), timeout=10)
        with context.wrap_socket(raw, server_hostname=f"{SERVICE}.{namespace}.svc") as tls:
            assert tls.getpeercert() is not None
    version = live["metadata"]["resourceVersion"]

    with start("second.log") as operator:
        again = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "webhook CA written"), None),
            timeout=30,
            message="the log line of the CA written at the second start",
        )
        assert again["crds"] == []  # the same CA from the Secret, already in the CRD: nothing written
    assert kube.get(kinds.CRD, name)["metadata"]["resourceVersion"] == version


def test_okt_run_narrows_the_webhooks_of_its_configuration_to_the_objects_it_serves(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: object,
    tmp_path: pathlib.Path,
) -> None:
    source, things, _kind = thing_operator(tmp_path, apply_crd, "scoped_operator.py")
    name = f"things-{secrets.token_hex(3)}"
    service = "thing-operator-webhooks"
    _service, configuration = webhooks.webhooks_for_reconcilers(
        [things], name=name, client_config=webhooks.ClientConfig(service=service, namespace=namespace)
    )
    kube.create(configuration, VALIDATING)
    args = ["--webhook-host", "127.0.0.1", "--webhook-service", service, "--webhook-configuration", name]
    try:
        with OperatorProcess.okt_run(
            source,
            kubeconfig=control_plane.kubeconfig,
            namespaces=[namespace],
            args=[*args, "--selector", "release=one"],
            log_path=tmp_path / "operator.log",
        ) as operator:
            written = wait_for(
                lambda: next((r for r in operator.records() if r.get("event") == "webhook CA written"), None),
                timeout=30,
                message="the log line of the CA written",
            )
        assert written["kinds"] == ["ValidatingWebhookConfiguration"]
        (hook,) = kube.get(VALIDATING, name)["webhooks"]
        assert hook["objectSelector"] == {"matchExpressions": [{"key": "release", "operator": "In", "values": ["one"]}]}
        # before 1.21 (the local control plane's 1.20) namespaces carry no name label: a selector of them matches none
        served = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}]}
        assert hook["namespaceSelector"] == (served if run._names_namespaces(kube.server_version()) else {})
        assert hook["clientConfig"]["caBundle"]
    finally:
        kube.delete(VALIDATING, name)


def test_okt_run_drops_a_ca_that_has_ended_from_its_ca_file_at_the_next_check_and_keeps_the_served_one(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: object,
    tmp_path: pathlib.Path,
) -> None:
    source, _things, _kind = thing_operator(tmp_path, apply_crd)
    # What a certificate directory holds after its issuer renewed it under a new CA: the old CAs beside the new one in
    # ca.crt, one that has ended already and one that ends while okt runs; the served pair stays as it is.
    served = certs.self_signed(("127.0.0.1",))
    now = datetime.datetime.now(datetime.UTC)
    ended = certs.self_signed(now=now - 2 * certs.VALIDITY).ca_pem
    # self_signed starts its certificates 5 minutes before ``now``: this CA ends 15 seconds from now.
    ending = certs.self_signed(now=now - certs.VALIDITY + datetime.timedelta(minutes=5, seconds=15)).ca_pem
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    (cert_dir / certs.CERT_FILE).write_bytes(served.cert_pem)
    (cert_dir / certs.KEY_FILE).write_bytes(served.key_pem)
    (cert_dir / certs.CA_FILE).write_bytes(served.ca_pem + ended + ending)
    ca_file = tmp_path / "ca.crt"
    args = ["--webhook-host", "127.0.0.1", "--webhook-cert-dir", str(cert_dir), "--webhook-ca-file", str(ca_file)]
    with OperatorProcess.okt_run(
        source, kubeconfig=control_plane.kubeconfig, namespaces=[namespace], args=args, log_path=tmp_path / "op.log"
    ) as operator:
        serving = wait_for(
            lambda: next((r for r in operator.records() if r.get("event") == "serving webhooks"), None),
            timeout=30,
            message="the webhook server's log line",
        )
        assert ended not in ca_file.read_bytes()
        wait_for(
            lambda: ca_file.read_bytes() == served.ca_pem,
            timeout=60,
            message=lambda: f"the CA file still holds {ca_file.read_bytes().count(b'BEGIN CERTIFICATE')} CAs",
        )
        # the pair served is the one it was, verified by the CA the file holds
        context = ssl.create_default_context(cadata=ca_file.read_text())
        raw = socket.create_connection(("127.0.0.1", serving["port"]), timeout=10)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.getpeercert(binary_form=True) == x509.load_pem_x509_certificate(served.cert_pem).public_bytes(
                serialization.Encoding.DER
            )
