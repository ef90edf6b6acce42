"""Conversion of a stored spec the models refuse, on the real API server: the kind was served in v1alpha1 only when
its objects were stored, one of them with a value the models' validator refuses (the CRD's schema, generated from the
models, has no validator in it); the operator's CRD then adds v1beta1, stores that version and converts through okt's
webhook. Listing at v1beta1 — a client's list, and the operator's own informer — converts every stored object: one
refused by the models must be converted as the others, and reported by the reconcile, not fail every list."""

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
from okt.testing import RunningOperator, condition, wait_for

pytestmark = pytest.mark.integration

GROUP = "refused.conversion.okt.example.com"


def tagged(image: str) -> str:
    if ":" not in image:
        raise ValueError("the image needs a tag")
    return image


class SpecAlpha(pydantic.BaseModel):
    size: int = 1
    imageName: str  # noqa: N815 - the field's name in the API

    check_image = pydantic.field_validator("imageName")(tagged)


class SpecBeta(pydantic.BaseModel):
    size: int = 1
    image: str

    check_image = pydantic.field_validator("image")(tagged)


def up(spec: SpecAlpha) -> dict[str, Any]:
    return {"size": spec.size, "image": spec.imageName}


def down(spec: SpecBeta) -> dict[str, Any]:
    return {"size": spec.size, "imageName": spec.image}


class Caches(okt.Reconciler):
    api_version = f"{GROUP}/v1beta1"
    kind = "Cache"
    plural = "caches"
    spec_model = SpecBeta
    spec_models = {"v1alpha1": SpecAlpha}
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down}


class FirstCaches(okt.Reconciler):
    """The kind as its first release served it: v1alpha1 only, stored."""

    api_version = f"{GROUP}/v1alpha1"
    kind = "Cache"
    plural = "caches"
    spec_model = SpecAlpha


ALPHA = kinds.Kind(f"{GROUP}/v1alpha1", "Cache", "caches")
BETA = kinds.Kind(f"{GROUP}/v1beta1", "Cache", "caches")


@pytest.fixture
def server(kube: kube_client.Client) -> Iterator[webhook_server.WebhookServer]:
    running = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Caches], kube)
    running.start()
    yield running
    running.stop()


def ready(kube: kube_client.Client, namespace: str, name: str) -> dict[str, Any]:
    return condition(kube.get_or_none(BETA, name, namespace), "Ready") or {}


def test_a_stored_spec_the_models_refuse_is_listed_converted_and_reported_by_the_reconcile_not_failing_every_list(
    kube: kube_client.Client, namespace: str, apply_crd: Any, server: webhook_server.WebhookServer
) -> None:
    apply_crd(crd.crd_for_reconciler(FirstCaches))
    for name, image in (("good", "memcached:1.6"), ("untagged", "memcached"), ("other", "redis:7")):
        obj = {"apiVersion": ALPHA.api_version, "kind": "Cache", "metadata": {"name": name, "namespace": namespace}}
        kube.create({**obj, "spec": {"size": 2, "imageName": image}}, ALPHA)
    config = webhooks.ClientConfig(url=server.url(), ca_bundle=server.ca_bundle)
    apply_crd(crd.crd_for_reconciler(Caches, webhooks.conversion_client_config(Caches, config)))

    listed, _ = kube.list(BETA, namespace)

    assert sorted((item["metadata"]["name"], item["apiVersion"], item["spec"]) for item in listed) == [
        ("good", BETA.api_version, {"size": 2, "image": "memcached:1.6"}),
        ("other", BETA.api_version, {"size": 2, "image": "redis:7"}),
        ("untagged", BETA.api_version, {"size": 2, "image": "memcached"}),
    ]

    with RunningOperator.start(kube, Caches, namespaces=[namespace]):  # its informer lists at v1beta1 too
        wait_for(lambda: ready(kube, namespace, "good").get("status") == "True", message="good to be Ready")
        wait_for(lambda: ready(kube, namespace, "other").get("status") == "True", message="other to be Ready")
        wait_for(lambda: ready(kube, namespace, "untagged").get("reason") == "InvalidSpec", message="InvalidSpec")
        refused = ready(kube, namespace, "untagged")
    assert refused["status"] == "False"
    assert "spec.image" in refused["message"] and "the image needs a tag" in refused["message"]
