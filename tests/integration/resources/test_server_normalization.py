"""What the API server makes of what okt asked for: a child it normalises still costs no write once converged.

Each test reconciles a Widget whose one child is built from the body the reconciler's ``body`` parameter holds, waits
for the workload's controller to settle, and counts the writes okt's client sends on the next reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.resources import drift_check
from okt.testing import crds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "normal"


class Given(okt.DeploymentResource):
    """A Deployment whose body the reconciler's parameters give whole."""


class GivenReconciler(okt.Reconciler):
    api_version = shared.WidgetReconciler.api_version
    kind = shared.WidgetReconciler.kind
    plural = shared.WidgetReconciler.plural
    owns = (Given,)
    params: ClassVar[Mapping[str, Any]] = {"container": {}}

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        container = {"name": "main", "image": "nginx:1.25", **ctx.params["container"]}
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": ctx.cr.namespace, "labels": {"app": NAME}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": NAME}},
                "template": {"metadata": {"labels": {"app": NAME}}, "spec": {"containers": [container]}},
            },
        }
        return [Given(ctx.cr, body=body)]


def reconciler_with(container: Mapping[str, Any], strategy: str = "apply") -> GivenReconciler:
    class With(GivenReconciler):
        params: ClassVar[Mapping[str, Any]] = {"container": container}
        apply_strategy: ClassVar[str] = strategy

    return With()


def container_of(kube: kube_client.Client, namespace: str) -> dict[str, Any]:
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, NAME)
    assert live is not None
    container: dict[str, Any] = live["spec"]["template"]["spec"]["containers"][0]
    return container


@pytest.mark.parametrize(
    ("resources", "stored", "strategy"),
    [
        pytest.param({"requests": {"cpu": "1000m"}}, {"requests": {"cpu": "1"}}, "apply", id="apply-cpu-1000m"),
        pytest.param({"requests": {"cpu": "0.5"}}, {"requests": {"cpu": "500m"}}, "apply", id="apply-cpu-0.5"),
        pytest.param(
            {"requests": {"memory": "1024Mi"}}, {"requests": {"memory": "1Gi"}}, "apply", id="apply-memory-1024Mi"
        ),
        pytest.param(
            {"requests": {"memory": "1000k"}}, {"requests": {"memory": "1M"}}, "apply", id="apply-memory-1000k"
        ),
        pytest.param(
            {"requests": {"memory": "0.5Gi"}}, {"requests": {"memory": "512Mi"}}, "apply", id="apply-memory-0.5Gi"
        ),
        pytest.param(
            {"requests": {"memory": "1.5Gi"}}, {"requests": {"memory": "1536Mi"}}, "apply", id="apply-memory-1.5Gi"
        ),
        pytest.param({"limits": {"memory": "1E3"}}, {"limits": {"memory": "1E3"}}, "apply", id="apply-memory-1E3-kept"),
        pytest.param(
            {"limits": {"memory": "1000E3"}}, {"limits": {"memory": "1e6"}}, "apply", id="apply-memory-1000E3"
        ),
        pytest.param(
            {"limits": {"ephemeral-storage": "2048Ki"}},
            {"limits": {"ephemeral-storage": "2Mi"}},
            "apply",
            id="apply-storage-2048Ki",
        ),
        pytest.param({"limits": {"cpu": 0.5}}, {"limits": {"cpu": "500m"}}, "merge", id="merge-cpu-0.5"),
        pytest.param({"limits": {"cpu": 2}}, {"limits": {"cpu": "2"}}, "merge", id="merge-cpu-2"),
        pytest.param({"limits": {"cpu": 0.5}}, {"limits": {"cpu": "500m"}}, "apply", id="apply-number-cpu-0.5"),
        pytest.param({"limits": {"cpu": 1}}, {"limits": {"cpu": "1"}}, "apply", id="apply-number-cpu-1"),
        pytest.param(
            {"requests": {"memory": 1024}}, {"requests": {"memory": "1024"}}, "apply", id="apply-number-memory-1024"
        ),
        pytest.param(
            {"requests": {"cpu": 0.25, "memory": "64Mi"}, "limits": {"cpu": 2}},
            {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "2"}},
            "apply",
            id="apply-number-mixed",
        ),
    ],
)
def test_a_quantity_the_server_canonicalizes_is_written_once_and_then_left_alone(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    resources: dict[str, Any],
    stored: dict[str, Any],
    strategy: str,
) -> None:
    # A number goes as it is by merge patch (a create or a merge patch takes it) and as its text by apply (which
    # refuses a number where a quantity goes): the server stores the canonical form either way.
    reconciler = reconciler_with({"resources": resources}, strategy=strategy)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    assert container_of(kube, namespace)["resources"] == stored, "the server stores the canonical form"
    shared.settle_deployment(kube, namespace, NAME)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


class Quota(okt.MutableResource):
    """A ResourceQuota from a template whose quantities YAML reads as numbers."""

    api_version = "v1"
    kind = "ResourceQuota"
    template = """
apiVersion: v1
kind: ResourceQuota
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  hard:
    pods: 10
    requests.cpu: 1.5
    requests.memory: 1Gi
"""


class QuotaReconciler(GivenReconciler):
    owns = (Quota,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Quota(ctx.cr, name=NAME)]


def test_a_resource_quota_templated_with_numbers_is_applied_once_and_then_left_alone(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(QuotaReconciler(), kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    live = shared.get_child(kube, "v1", "ResourceQuota", namespace, NAME)
    assert live is not None
    assert live["spec"]["hard"] == {"pods": "10", "requests.cpu": "1500m", "requests.memory": "1Gi"}
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(QuotaReconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


class Autoscaler(okt.MutableResource):
    """A HorizontalPodAutoscaler from a template whose metric targets YAML reads as numbers."""

    api_version = "autoscaling/v2beta2"
    kind = "HorizontalPodAutoscaler"
    template = """
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ name }}}
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Pods
      pods:
        metric: {name: queue-depth}
        target: {type: AverageValue, averageValue: 100}
    - type: Object
      object:
        describedObject: {apiVersion: v1, kind: Service, name: {{ name }}}
        metric: {name: requests}
        target: {type: Value, value: 0.5}
"""


class AutoscalerReconciler(GivenReconciler):
    owns = (Autoscaler,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Autoscaler(ctx.cr, name=NAME)]


def test_an_autoscaler_templated_with_numeric_targets_is_applied_once_and_then_left_alone(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(AutoscalerReconciler(), kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    live = shared.get_child(kube, "autoscaling/v2beta2", "HorizontalPodAutoscaler", namespace, NAME)
    assert live is not None
    targets = [metric[metric["type"].lower()]["target"] for metric in live["spec"]["metrics"]]
    assert targets == [{"type": "AverageValue", "averageValue": "100"}, {"type": "Value", "value": "500m"}]
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(AutoscalerReconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


@pytest.mark.parametrize(
    ("container", "strategy"),
    [
        pytest.param({"env": []}, "apply", id="empty-list"),
        pytest.param({"resources": {}}, "apply", id="empty-map"),
        pytest.param({"securityContext": {}}, "apply", id="empty-struct"),
        pytest.param({"args": None}, "apply", id="null-left-unset"),
        pytest.param({"imagePullPolicy": None}, "apply", id="null-the-server-defaults"),
        pytest.param({"terminationMessagePolicy": None, "ports": [{"containerPort": 80}]}, "apply", id="null-and-port"),
        # Zero values the server leaves out of what it stores, even in its answer to okt's write:
        pytest.param({"env": [{"name": "PROXY", "value": ""}]}, "apply", id="env-value-empty-string"),
        pytest.param({"stdin": False}, "apply", id="false"),
        pytest.param({"ports": [{"containerPort": 80, "hostPort": 0}]}, "apply", id="zero"),
        # Written by merge patches, whose drift check spells out the protocol a port leaves to the server:
        pytest.param({"stdin": False, "ports": [{"containerPort": 80}]}, "merge", id="merge-false-and-port"),
        pytest.param({"ports": [{"containerPort": 80, "hostPort": 0}]}, "merge", id="merge-zero"),
    ],
)
def test_an_empty_null_or_zero_field_in_the_template_is_written_once_and_then_left_alone(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, container: dict[str, Any], strategy: str
) -> None:
    reconciler = reconciler_with(container, strategy=strategy)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1
    shared.settle_deployment(kube, namespace, NAME)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


@pytest.mark.parametrize(
    ("container", "edit", "path", "expected"),
    [
        pytest.param(
            {"stdin": False},
            [{"op": "add", "path": "/spec/template/spec/containers/0/stdin", "value": True}],
            ("stdin",),
            None,
            id="a-left-out-false-turned-true",
        ),
        pytest.param(
            {"env": [{"name": "PROXY", "value": ""}]},
            [{"op": "add", "path": "/spec/template/spec/containers/0/env/0/value", "value": "http://elsewhere"}],
            ("env", 0, "value"),
            None,
            id="a-left-out-empty-string-given-a-value",
        ),
        pytest.param(
            {"stdin": False, "securityContext": {"allowPrivilegeEscalation": False}},
            [{"op": "remove", "path": "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation"}],
            ("securityContext", "allowPrivilegeEscalation"),
            False,
            id="a-stored-false-removed",
        ),
    ],
)
def test_an_edit_of_a_field_the_server_left_out_or_kept_is_repaired_once_and_then_left_alone(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    container: dict[str, Any],
    edit: list[dict[str, Any]],
    path: tuple[str | int, ...],
    expected: object,
) -> None:
    reconciler = reconciler_with(container)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    other_client.patch(other_client.resolve("apps/v1", "Deployment"), NAME, edit, namespace, patch_type="json")
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {("apply", "deployments"): 1}
    assert run.results.counts()[okt.Operation.UPDATED] == 1
    parent: Any = container_of(kube, namespace)
    for step in path[:-1]:
        parent = parent[step]
    assert parent.get(path[-1]) == expected
    after_repair = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, after_repair) == {}


class Listener(okt.MutableResource):
    """A custom resource child with a ``ports`` list of its own (its schema knows nothing of a ``protocol``)."""

    api_version = f"{shared.GROUP}/v1"
    kind = "Listener"
    template = """
apiVersion: test.okt.io/v1
kind: Listener
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  ports:
    - port: 8080
      name: web
"""


class ListenerReconciler(GivenReconciler):
    owns = (Listener,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Listener(ctx.cr)]


@pytest.fixture(scope="module")
def listener_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(shared.GROUP, "Listener", "listeners"))
    return kind


def test_a_custom_resource_child_gets_only_the_fields_its_template_sets(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, listener_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(ListenerReconciler(), kube, widget_kind, namespace, NAME)

    assert run.results.counts()[okt.Operation.CREATED] == 1
    live = kube.get(listener_kind, NAME, namespace)
    assert live["spec"] == {"ports": [{"port": 8080, "name": "web"}]}


class Settings(okt.MutableResource):
    """A ConfigMap whose label and value read as quantities, though the server stores them as they are."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  labels:
    version: "2.0"
data:
  limit: "1000"
"""


class SettingsReconciler(GivenReconciler):
    owns = (Settings,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Settings(ctx.cr, name=NAME)]


@pytest.mark.parametrize("strategy", ["apply", "merge"])
@pytest.mark.parametrize(
    ("path", "edited"),
    [(("data", "limit"), "1k"), (("metadata", "labels", "version"), "2")],
    ids=["value", "label"],
)
def test_a_value_edited_to_the_quantity_form_of_what_okt_wrote_is_repaired_outside_quantity_fields(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    path: tuple[str, ...],
    edited: str,
    strategy: str,
) -> None:
    class Chosen(SettingsReconciler):
        apply_strategy: ClassVar[str] = strategy

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(Chosen(), kube, widget_kind, namespace, NAME)
    written = shared.get_child(kube, "v1", "ConfigMap", namespace, NAME)
    assert written is not None
    edit: dict[str, Any] = {}
    target = edit
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = edited
    other_client.patch(other_client.resolve("v1", "ConfigMap"), NAME, edit, namespace, field_manager="editor")
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(Chosen(), kube, widget_kind, namespace, NAME)

    write = ("apply" if strategy == "apply" else "patch", "configmaps")
    assert {k: n for k, n in shared.write_requests(kube, before).items() if k[1] == "configmaps"} == {write: 1}
    assert run.results.counts()[okt.Operation.UPDATED] == 1
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, NAME)
    assert live is not None
    assert live["data"] == written["data"]
    assert live["metadata"]["labels"] == written["metadata"]["labels"]


class Counter(okt.MutableResource):
    """A custom resource child holding numbers beyond what the API server keeps exactly: computed from the Widget's
    size, written as a literal, in a field the schema leaves open and in fields typed ``number`` and ``integer``."""

    api_version = f"{shared.GROUP}/v1"
    kind = "Counter"
    template = """
apiVersion: test.okt.io/v1
kind: Counter
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  open:
    computed: {{ cr.spec.size * 123456789012345678901 }}
    huge: {{ cr.spec.size * 10**22 + 1 }}
    float: {{ cr.spec.size * 1.2345678901234567e20 }}
    nested: {{ [cr.spec.size * 2**64 + 1] }}
    literal: 123456789012345678901
  number: {{ cr.spec.size * 123456789012345678901 }}
  integer: {{ cr.spec.size * 9223372036854775807 }}
"""


class BigConfig(okt.MutableResource):
    """A ConfigMap holding the text of a number beyond ``int64``: a string the server keeps as it is."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
data:
  count: "{{ cr.spec.size * 123456789012345678901 }}"
"""


@pytest.fixture(scope="module")
def counter_kind(apply_crd: Any) -> kinds.Kind:
    crd = crds.schemaless_crd(shared.GROUP, "Counter", "counters")
    crd["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        "number": {"type": "number"},
                        "integer": {"type": "integer"},
                    },
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    }
    kind: kinds.Kind = apply_crd(crd)
    return kind


@pytest.mark.parametrize("child", [Counter, BigConfig])
def test_a_number_beyond_int64_is_placed_as_the_server_stores_it_and_never_written_again(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    counter_kind: kinds.Kind,
    child: type[okt.MutableResource],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Reconciler(GivenReconciler):
        owns = (child,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [child(ctx.cr, name=NAME)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(Reconciler(), kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    live = shared.get_child(kube, child.api_version, child.kind, namespace, NAME)
    assert live is not None
    if child is Counter:
        assert live["spec"]["open"] == {
            "computed": 123456789012345680000,
            "huge": 1e22,
            "float": 123456789012345670000,
            "nested": [18446744073709552000],
            "literal": 123456789012345680000,
        }
    else:
        assert live["data"] == {"count": "123456789012345678901"}
    # A process started anew knows nothing of what the server made of its writes: the desired child alone must match.
    monkeypatch.setattr(drift_check, "SERVER_FORMS", drift_check.ServerForms())
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(Reconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


class CounterModel(pydantic.BaseModel):
    """A Counter's body as a model: its numbers as Python computes them."""

    model_config = pydantic.ConfigDict(populate_by_name=True)

    api_version: str = pydantic.Field(Counter.api_version, alias="apiVersion")
    kind: str = Counter.kind
    metadata: dict[str, Any]
    spec: dict[str, Any]


class Mutated(Counter):
    """A Counter whose ``mutate_with_cr`` sets numbers beyond what the server keeps exactly, after the template."""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["spec"]["open"]["mutated"] = [cr.raw_spec["size"] * 2**64 + 1, {"float": 2.0**60 + 2**8}]


def big_spec(size: int) -> dict[str, Any]:
    return {
        "open": {
            "computed": size * 123456789012345678901,
            "huge": size * 10**22 + 1,
            "float": size * 1.2345678901234567e20,
            "nested": [size * 2**64 + 1, {"deep": -size * 2**70 - 3}],
        },
        "number": size * 123456789012345678901,
    }


@pytest.mark.parametrize("declared", ["body", "model", "mutation"])
def test_a_number_beyond_int64_in_a_child_built_in_python_is_compared_as_the_server_stores_it(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    counter_kind: kinds.Kind,
    declared: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Reconciler(GivenReconciler):
        owns = (Counter,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            if declared == "mutation":
                return [Mutated(ctx.cr, name=NAME)]
            metadata = {"name": NAME, "namespace": ctx.cr.namespace}
            body = {"apiVersion": Counter.api_version, "kind": Counter.kind, "metadata": metadata}
            body["spec"] = big_spec(ctx.cr.raw_spec["size"])
            return [Counter(ctx.cr, body=body if declared == "body" else CounterModel(**body))]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(Reconciler(), kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    live = shared.get_child(kube, Counter.api_version, Counter.kind, namespace, NAME)
    assert live is not None
    if declared == "mutation":
        assert live["spec"]["open"]["mutated"] == [18446744073709552000, {"float": 1152921504606847200}]
    else:
        assert live["spec"]["open"] == {
            "computed": 123456789012345680000,
            "huge": 1e22,
            "float": 123456789012345670000,
            "nested": [18446744073709552000, {"deep": -1.1805916207174113e21}],
        }
        assert live["spec"]["number"] == 123456789012345680000
    # A process started anew knows nothing of what the server made of its writes: the desired child alone must match.
    monkeypatch.setattr(drift_check, "SERVER_FORMS", drift_check.ServerForms())
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(Reconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1
