"""Conversion on the real API server: a CRD from ``okt gen crd`` with two versions and a renamed field, its conversion
webhook served by okt on loopback. Created as v1alpha1, read as v1beta1 (stored) and back; a converter that raises
makes the request fail with its message, one with a bug naming its class only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

import okt
from okt.codegen import crd, webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import webhook_server

pytestmark = pytest.mark.integration

GROUP = "conversion.okt.example.com"


class SpecAlpha(pydantic.BaseModel):
    size: int = 1
    imageName: str  # noqa: N815 - the field's name in the API


class SpecBeta(pydantic.BaseModel):
    size: int = 1
    image: str


def up(spec: SpecAlpha) -> SpecBeta:
    if spec.imageName == "broken":
        raise okt.PermanentError("no v1beta1 image for 'broken'")
    if spec.imageName.startswith("careless"):  # a bug: a value of the spec looked up where its key belongs
        return {"size": spec.size, "image": {}[spec.imageName]}
    return SpecBeta(size=spec.size, image=spec.imageName)


def down(spec: SpecBeta) -> SpecAlpha:
    return SpecAlpha(size=spec.size, imageName=spec.image)


class Caches(okt.Reconciler):
    api_version = f"{GROUP}/v1beta1"
    kind = "Cache"
    plural = "caches"
    spec_model = SpecBeta
    spec_models = {"v1alpha1": SpecAlpha}
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down}


ALPHA = kinds.Kind(f"{GROUP}/v1alpha1", "Cache", "caches")
BETA = kinds.Kind(f"{GROUP}/v1beta1", "Cache", "caches")


@pytest.fixture(scope="module")
def server(kube: kube_client.Client, apply_crd: Any) -> Iterator[webhook_server.WebhookServer]:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Caches], kube)
    running.start()
    config = webhooks.ClientConfig(url=running.url(), ca_bundle=running.ca_bundle)
    apply_crd(crd.crd_for_reconciler(Caches, webhooks.conversion_client_config(Caches, config)))
    yield running
    running.stop()


def cache(kind: kinds.Kind, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": kind.api_version,
        "kind": "Cache",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_created_as_v1alpha1_read_as_v1beta1_and_back_with_the_renamed_field(
    kube: kube_client.Client, namespace: str, server: webhook_server.WebhookServer
) -> None:
    kube.create(cache(ALPHA, namespace, "c", {"size": 3, "imageName": "memcached:1.6"}), ALPHA)

    beta = kube.get(BETA, "c", namespace)
    assert beta["apiVersion"] == BETA.api_version
    assert beta["spec"] == {"size": 3, "image": "memcached:1.6"}

    alpha = kube.get(ALPHA, "c", namespace)
    assert alpha["apiVersion"] == ALPHA.api_version
    assert alpha["spec"] == {"size": 3, "imageName": "memcached:1.6"}
    assert alpha["metadata"]["uid"] == beta["metadata"]["uid"]


def test_the_storage_version_round_trips_and_edits_through_either_version_land(
    kube: kube_client.Client, namespace: str, server: webhook_server.WebhookServer
) -> None:
    kube.create(cache(BETA, namespace, "s", {"size": 2, "image": "redis:7"}), BETA)
    assert kube.get(BETA, "s", namespace)["spec"] == {"size": 2, "image": "redis:7"}

    kube.patch(ALPHA, "s", {"spec": {"imageName": "redis:7.2"}}, namespace)
    assert kube.get(BETA, "s", namespace)["spec"] == {"size": 2, "image": "redis:7.2"}
    listed, _ = kube.list(ALPHA, namespace)
    assert [(item["apiVersion"], item["spec"]) for item in listed] == [
        (ALPHA.api_version, {"size": 2, "imageName": "redis:7.2"})
    ]


def test_a_converter_that_raises_fails_the_request_with_its_message(
    kube: kube_client.Client, namespace: str, server: webhook_server.WebhookServer
) -> None:
    with pytest.raises(okt.ApiError, match=r"no v1beta1 image for 'broken'") as caught:
        kube.create(cache(ALPHA, namespace, "b", {"imageName": "broken"}), ALPHA)
    assert f"cannot convert {namespace}/b from {ALPHA.api_version} to {BETA.api_version}" in str(caught.value)
    assert kube.get_or_none(BETA, "b", namespace) is None


def test_a_converter_with_a_bug_fails_the_request_naming_its_class_not_its_text(
    kube: kube_client.Client, namespace: str, server: webhook_server.WebhookServer
) -> None:
    with pytest.raises(okt.ApiError) as caught:
        kube.create(cache(ALPHA, namespace, "k", {"imageName": "careless-hunter2"}), ALPHA)

    said = f"cannot convert {namespace}/k from {ALPHA.api_version} to {BETA.api_version}: "
    assert f"{said}internal error in converter v1alpha1->v1beta1: KeyError" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert kube.get_or_none(BETA, "k", namespace) is None
