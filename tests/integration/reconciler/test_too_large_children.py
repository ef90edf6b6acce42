"""A child the API server refuses for its size: a body past its 3 MiB request limit (413), data past what its kind
may hold (a ConfigMap's 1 MiB, a 422), or an object its storage, etcd, refuses (``etcdserver: request is too
large``). Retrying cannot help while the custom resource says the same: reported once in Ready, nothing written per
retry, and reconciled again once the custom resource changes."""

from __future__ import annotations

import secrets
from typing import Any

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.status import events
from okt.testing import condition, crds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

GROUP = "blobs.okt.io"


class BlobSpec(pydantic.BaseModel):
    keys: int = 1
    key_length: int = pydantic.Field(default=8, alias="keyLength")
    value_length: int = pydantic.Field(default=8, alias="valueLength")


class BlobConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-blob
  namespace: {{ namespace }}
"""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        spec = cr.spec
        assert isinstance(spec, BlobSpec)
        self.desired["data"] = {
            f"{i:06d}".ljust(spec.key_length, "k"): "v" * spec.value_length for i in range(spec.keys)
        }


class Blob(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Blob"
    plural = "blobs"
    spec_model = BlobSpec
    owns = (BlobConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [BlobConfig(ctx.cr)]


@pytest.fixture(scope="module")
def blob_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(GROUP, "Blob", "blobs"))
    return kind


@pytest.mark.parametrize(
    ("spec", "limit"),
    [
        # One value of 3.3 MB: the API server refuses the body itself (413, "limit is 3145728").
        pytest.param({"keys": 1, "valueLength": 3_300_000}, "3145728 bytes", id="past-the-request-limit"),
        # One value of 1.2 MB: the API server refuses a ConfigMap's data past 1 MiB (422, "at most 1048576 bytes").
        pytest.param({"keys": 1, "valueLength": 1_200_000}, "1048576 bytes", id="past-the-kinds-limit"),
        # 5000 keys of 200 characters: under the 1 MiB a ConfigMap may hold, but the object the API server makes of
        # it (its managedFields name every key again) is past what etcd stores in one request.
        pytest.param({"keys": 5000, "keyLength": 200, "valueLength": 0}, "etcd", id="refused-by-etcd"),
    ],
)
def test_a_child_refused_for_its_size_is_reported_once_and_reconciled_again_once_the_object_changes(
    kube: kube_client.Client, blob_kind: kinds.Kind, namespace: str, spec: dict[str, int], limit: str
) -> None:
    name = f"b-{secrets.token_hex(3)}"
    body = {"apiVersion": blob_kind.api_version, "kind": "Blob", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": spec}, blob_kind)
    recorder = events.EventRecorder(kube, "blob")

    first = okt.reconcile(Blob(), kube, None, namespace, name, kind=blob_kind, recorder=recorder)

    assert first.outcome.kind is okt.OutcomeKind.GIVE_UP, first.outcome
    ready = condition(kube.get(blob_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ObjectTooLarge"), ready
    assert f"ConfigMap/{namespace}/{name}-blob" in ready["message"], ready["message"]
    assert " bytes" in ready["message"] and limit in ready["message"], ready["message"]
    before = kube.stats.snapshot()

    for _ in range(3):
        again = okt.reconcile(Blob(), kube, None, namespace, name, kind=blob_kind, recorder=recorder)
        assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome

    assert shared.write_requests(kube, before) == {}  # the same child refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "ObjectTooLarge", 1)

    kube.patch(blob_kind, name, {"spec": {"keys": 2, "keyLength": 8, "valueLength": 8}}, namespace)
    fixed = okt.reconcile(Blob(), kube, None, namespace, name, kind=blob_kind, recorder=recorder)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
    ready = condition(kube.get(blob_kind, name, namespace), "Ready")
    assert ready is not None and ready["status"] == "True", ready
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{name}-blob")
    assert config is not None and len(config["data"]) == 2
