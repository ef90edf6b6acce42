"""A child the API server refuses as invalid (422) for what the custom resource makes of it: a template change that
alters an immutable field of the live child (a Deployment's ``spec.selector``), or a value the server refuses (a
label value the custom resource gives). The same custom resource is refused the same way at every retry: reported
once in Ready, naming the child and the field, nothing written per retry, and reconciled again once the custom
resource changes; okt never deletes the child itself. A refusal that depends on other objects (a node port another
Service holds) is retried."""

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

GROUP = "selectors.okt.io"


class PickerSpec(pydantic.BaseModel):
    app: str = "a"
    tier: str = "web"
    node_port: int = pydantic.Field(default=30080, alias="nodePort")
    grace: int | str = 30


class PickerDeployment(okt.MutableResource):
    api_version = "apps/v1"
    kind = "Deployment"
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  labels:
    tier: {{ cr.spec.tier }}
spec:
  replicas: 0
  selector:
    matchLabels:
      app: {{ cr.spec.app }}
  template:
    metadata:
      labels:
        app: {{ cr.spec.app }}
    spec:
      containers:
        - name: main
          image: busybox
"""


class Picker(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerDeployment,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerDeployment(ctx.cr)]


class PickerJob(okt.MutableResource):
    api_version = "batch/v1"
    kind = "Job"
    template = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: {{ cr.spec.grace }}
      containers:
        - name: main
          image: busybox
"""


class Runner(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerJob,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerJob(ctx.cr)]


class PickerEnv(okt.DeploymentResource):
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  replicas: 0
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      containers:
        - name: main
          image: busybox
          env:
            - name: APP
              value: {{ cr.spec.app }}
            - name: {{ cr.spec.tier }}
              value: "1"
"""


class Namer(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerEnv,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerEnv(ctx.cr)]


class PickerService(okt.ServiceResource):
    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  type: NodePort
  selector:
    app: {{ name }}
  ports:
    - port: 80
      protocol: TCP
      nodePort: {{ cr.spec.node_port }}
"""


class Porter(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerService,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerService(ctx.cr)]


class PickerStatefulSet(okt.StatefulSetResource):
    template = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  replicas: 0
  serviceName: {{ cr.spec.tier }}
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      containers:
        - name: main
          image: busybox
"""


class Keeper(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerStatefulSet,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerStatefulSet(ctx.cr)]


class PickerSecret(okt.SecretResource):
    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
data:
  token: {{ cr.spec.tier }}
"""


class Sealer(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Picker"
    plural = "pickers"
    spec_model = PickerSpec
    owns = (PickerSecret,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PickerSecret(ctx.cr)]


@pytest.fixture(scope="module")
def picker_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(GROUP, "Picker", "pickers"))
    return kind


def test_a_change_of_an_immutable_field_is_reported_once_and_the_deleted_child_is_created_again(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"app": "first"}}, picker_kind)
    recorder = events.EventRecorder(kube, "picker")
    created = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
    assert created.outcome.kind is okt.OutcomeKind.DONE, created.outcome

    kube.patch(picker_kind, name, {"spec": {"app": "second"}}, namespace)
    refused = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ImmutableField"), ready
    assert f"Deployment/{namespace}/{name}" in ready["message"] and "spec.selector" in ready["message"], ready
    assert "delete" in ready["message"] and "second" not in ready["message"], ready["message"]
    before = kube.stats.snapshot()

    for _ in range(3):
        again = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
        assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome

    assert shared.write_requests(kube, before) == {}  # the same change refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "ImmutableField", 1)
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, name)
    assert live is not None and live["spec"]["selector"]["matchLabels"] == {"app": "first"}  # never deleted by okt

    kube.delete(kube.resolve("apps/v1", "Deployment"), name, namespace)
    recreated = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert recreated.outcome.kind is okt.OutcomeKind.DONE, recreated.outcome
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, name)
    assert live is not None and live["spec"]["selector"]["matchLabels"] == {"app": "second"}
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and ready["status"] == "True", ready


def test_a_change_of_a_statefulset_s_spec_the_api_server_forbids_is_an_immutable_field_reported_once(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    """A StatefulSet's spec but its replicas, template and update strategy never changes in place: the API server
    says so with a Forbidden cause on ``spec`` ("updates to statefulset spec for fields other than ... are
    forbidden"), which never says "immutable" — the same refusal as a Deployment's selector all the same."""
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"tier": "web"}}, picker_kind)
    recorder = events.EventRecorder(kube, "picker")
    created = okt.reconcile(Keeper(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
    assert created.outcome.kind is okt.OutcomeKind.DONE, created.outcome

    kube.patch(picker_kind, name, {"spec": {"tier": "db"}}, namespace)
    refused = okt.reconcile(Keeper(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ImmutableField"), ready
    message = ready["message"]
    assert message.startswith(f"StatefulSet/{namespace}/{name} cannot be changed in place: spec"), message
    assert "replicas, template, updateStrategy" in message and "delete" in message, message
    before = kube.stats.snapshot()

    again = okt.reconcile(Keeper(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome
    assert shared.write_requests(kube, before) == {}  # the same change refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "ImmutableField", 1)
    live = shared.get_child(kube, "apps/v1", "StatefulSet", namespace, name)
    assert live is not None and live["spec"]["serviceName"] == "web"  # never deleted by okt


def test_a_value_the_api_server_refuses_is_reported_once_naming_the_field_and_reconciled_again_once_fixed(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"tier": "front end!"}}, picker_kind)
    recorder = events.EventRecorder(kube, "picker")

    refused = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "InvalidChild"), ready
    message = ready["message"]
    assert f"Deployment/{namespace}/{name}" in message and "metadata.labels" in message, message
    assert "a valid label must be" in message and "front end!" not in message, message
    before = kube.stats.snapshot()

    for _ in range(3):
        again = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
        assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome

    assert shared.write_requests(kube, before) == {}  # the same child refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "InvalidChild", 1)

    kube.patch(picker_kind, name, {"spec": {"tier": "front-end"}}, namespace)
    fixed = okt.reconcile(Picker(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, name)
    assert live is not None and live["metadata"]["labels"]["tier"] == "front-end"


def test_a_value_of_the_wrong_type_is_reported_once_naming_the_field_and_reconciled_again_once_fixed(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    """Server-side apply cannot type a body that places text where the schema wants a number (or names a field the
    schema lacks): the API server answers 500 ("failed to create typed patch object"), not 422, on 1.20 as on the
    versions of today. The same custom resource makes the same body: a refusal for good, not a server failure."""
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"grace": "half a minute"}}, picker_kind)
    recorder = events.EventRecorder(kube, "picker")

    refused = okt.reconcile(Runner(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "InvalidChild"), ready
    message = ready["message"]
    assert f"Job/{namespace}/{name}" in message and "spec.template.spec.terminationGracePeriodSeconds" in message
    assert "expected numeric" in message and "half a minute" not in message, message
    before = kube.stats.snapshot()

    for _ in range(3):
        again = okt.reconcile(Runner(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
        assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome

    assert shared.write_requests(kube, before) == {}  # the same child refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "InvalidChild", 1)

    kube.patch(picker_kind, name, {"spec": {"grace": 30}}, namespace)
    fixed = okt.reconcile(Runner(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
    live = shared.get_child(kube, "batch/v1", "Job", namespace, name)
    assert live is not None and live["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30


def test_two_items_of_one_key_in_a_list_apply_merges_by_key_are_reported_once_and_reconciled_again_once_fixed(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    """Two env vars of one name: server-side apply cannot type the list (another 500 of its own), where a create
    would have kept the last of them."""
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"tier": "APP"}}, picker_kind)

    refused = okt.reconcile(Namer(), kube, None, namespace, name, kind=picker_kind)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "InvalidChild"), ready
    assert 'env: duplicate entries for key [name="APP"]' in ready["message"], ready["message"]
    before = kube.stats.snapshot()

    again = okt.reconcile(Namer(), kube, None, namespace, name, kind=picker_kind)

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome
    assert shared.write_requests(kube, before) == {}  # the same child refused before is not sent again
    kube.patch(picker_kind, name, {"spec": {"tier": "TIER"}}, namespace)
    fixed = okt.reconcile(Namer(), kube, None, namespace, name, kind=picker_kind)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome


def test_a_value_the_api_server_cannot_decode_into_its_kind_is_reported_once_and_reconciled_again_once_fixed(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    """A Secret's ``data`` that is no base64: a string where a string goes, so server-side apply types it, but the API
    server cannot decode it into a Secret and answers 500 ("failed to convert new object to proper version"), the
    same at every try. A refusal for good, said without the value."""
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"tier": "hunter2!"}}, picker_kind)
    recorder = events.EventRecorder(kube, "picker")

    refused = okt.reconcile(Sealer(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert refused.outcome.kind is okt.OutcomeKind.GIVE_UP, refused.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "InvalidChild"), ready
    message = ready["message"]
    assert f"Secret/{namespace}/{name}" in message and "illegal base64 data" in message, message
    assert "hunter2" not in message, message
    before = kube.stats.snapshot()

    for _ in range(3):
        again = okt.reconcile(Sealer(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)
        assert again.outcome.kind is okt.OutcomeKind.GIVE_UP, again.outcome

    assert shared.write_requests(kube, before) == {}  # the same child refused before is not sent again
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "InvalidChild", 1)
    assert "hunter2" not in event["message"], event["message"]

    kube.patch(picker_kind, name, {"spec": {"tier": "aHVudGVyMg=="}}, namespace)
    fixed = okt.reconcile(Sealer(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert fixed.outcome.kind is okt.OutcomeKind.DONE, fixed.outcome
    live = shared.get_child(kube, "v1", "Secret", namespace, name)
    assert live is not None and live["data"]["token"] == "aHVudGVyMg=="


def test_a_node_port_another_service_holds_is_retried_until_it_is_free(
    kube: kube_client.Client, picker_kind: kinds.Kind, namespace: str
) -> None:
    port = 30000 + secrets.randbelow(2000)
    service = kube.resolve("v1", "Service")
    holder = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "holder", "namespace": namespace},
        "spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": port}]},
    }
    kube.create(holder, service)
    name = f"p-{secrets.token_hex(3)}"
    body = {"apiVersion": picker_kind.api_version, "kind": "Picker", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"nodePort": port}}, picker_kind)

    recorder = events.EventRecorder(kube, "picker")

    held = okt.reconcile(Porter(), kube, None, namespace, name, kind=picker_kind, recorder=recorder)

    assert held.outcome.kind is okt.OutcomeKind.RETRY, held.outcome
    assert isinstance(held.outcome.error, okt.Invalid), held.outcome
    ready = condition(kube.get(picker_kind, name, namespace), "Ready")
    assert ready is not None and ready["status"] == "False", ready
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    for text in (ready["message"], event["message"], str(held.outcome.error)):
        said = text.replace(namespace, "").replace(name, "")
        assert "spec.ports[0].nodePort" in said and "already allocated" in said, said
        assert str(port) not in said, said  # the custom resource's value: said as the field, never quoted

    kube.delete(service, "holder", namespace)
    freed = okt.reconcile(Porter(), kube, None, namespace, name, kind=picker_kind)

    assert freed.outcome.kind is okt.OutcomeKind.DONE, freed.outcome
    live = shared.get_child(kube, "v1", "Service", namespace, name)
    assert live is not None and live["spec"]["ports"][0]["nodePort"] == port
