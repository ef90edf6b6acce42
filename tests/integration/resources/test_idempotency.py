"""Zero writes when nothing changed, exactly the writes needed when something did — counted on a real API server.

Every test reconciles a Widget (ConfigMap + Service + Deployment children) with ``okt.reconcile`` and counts the
requests okt's client sent. Out-of-band edits come from a second client (``other_client``), so the counts are okt's
alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

FULL_PATH = ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"
NAME = "demo"


class BareService(okt.ServiceResource):
    """A Service that leaves ``targetPort``, ``protocol``, ``type`` and ``sessionAffinity`` to the server."""

    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}-bare
  namespace: {{ namespace }}
spec:
  selector:
    app: {{ name }}
  ports:
    - port: 9000
"""


class DefaultedWidgetReconciler(shared.WidgetReconciler):
    """The Widget's children plus a Service whose every optional field is left to the server."""

    owns = (*shared.WidgetReconciler.owns, BareService)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [*super().resources(ctx), BareService(ctx.cr)]


class SettingsConfig(okt.MutableResource):
    """A ConfigMap whose keys come from the reconciler's ``settings`` parameter."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
data: {{ settings | to_yaml }}
"""


class SettingsReconciler(shared.WidgetReconciler):
    owns = (SettingsConfig,)
    params: ClassVar[Mapping[str, Any]] = {"settings": {"color": "blue", "mode": "fast", "retries": "3"}}

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [SettingsConfig(ctx.cr, params=ctx.params)]


class FewerSettingsReconciler(SettingsReconciler):
    params: ClassVar[Mapping[str, Any]] = {"settings": {"color": "blue"}}


def reconcile(reconciler: okt.Reconciler, kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> okt.Run:
    return shared.reconcile_widget(reconciler, kube, kind, namespace, NAME)


def dig(obj: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def has_path(obj: Any, path: Sequence[str | int]) -> bool:
    try:
        dig(obj, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def test_first_reconcile_creates_each_child_once_and_writes_the_status_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    before = kube.stats.snapshot()

    run = reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)

    assert run.path_str == FULL_PATH
    assert run.outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {
        ("apply", "configmaps"): 1,
        ("apply", "services"): 1,
        ("apply", "deployments"): 1,
        ("apply", "widgets/status"): 1,
    }
    assert run.results.counts()[okt.Operation.CREATED] == 3


def test_second_reconcile_with_nothing_changed_sends_no_write(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)
    shared.settle_deployment(kube, namespace, NAME)
    before = kube.stats.snapshot()

    run = reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)

    assert run.outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 3
    assert run.results.counts()[okt.Operation.STATUS_UNCHANGED] == 1


@pytest.mark.parametrize(
    ("child", "path", "server_value"),
    [
        (shared.WidgetDeployment, ("spec", "strategy", "type"), "RollingUpdate"),
        (shared.WidgetDeployment, ("spec", "strategy", "rollingUpdate", "maxSurge"), "25%"),
        (shared.WidgetDeployment, ("spec", "revisionHistoryLimit"), 10),
        (shared.WidgetDeployment, ("spec", "progressDeadlineSeconds"), 600),
        (shared.WidgetDeployment, ("spec", "template", "spec", "restartPolicy"), "Always"),
        (shared.WidgetDeployment, ("spec", "template", "spec", "dnsPolicy"), "ClusterFirst"),
        (shared.WidgetDeployment, ("spec", "template", "spec", "schedulerName"), "default-scheduler"),
        (shared.WidgetDeployment, ("spec", "template", "spec", "containers", 0, "imagePullPolicy"), "IfNotPresent"),
        (
            shared.WidgetDeployment,
            ("spec", "template", "spec", "containers", 0, "terminationMessagePath"),
            "/dev/termination-log",
        ),
        (shared.WidgetDeployment, ("spec", "template", "spec", "containers", 0, "ports", 0, "protocol"), "TCP"),
        (shared.WidgetService, ("spec", "sessionAffinity"), "None"),
        (shared.WidgetService, ("spec", "type"), "ClusterIP"),
        (shared.WidgetService, ("spec", "ports", 0, "protocol"), "TCP"),
        (BareService, ("spec", "ports", 0, "targetPort"), 9000),
        (shared.WidgetService, ("spec", "clusterIP"), None),
    ],
    ids=lambda value: (
        value.__name__ if isinstance(value, type) else "/".join(map(str, value)) if isinstance(value, tuple) else None
    ),
)
def test_a_server_defaulted_field_absent_from_the_template_never_causes_a_write(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    child: type[okt.Resource],
    path: tuple[str | int, ...],
    server_value: object,
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    reconcile(DefaultedWidgetReconciler(), kube, widget_kind, namespace)
    shared.settle_deployment(kube, namespace, NAME)
    rendered = child(okt.CustomResource(shared.get_widget(kube, widget_kind, namespace, NAME)))
    live = shared.get_child(kube, child.api_version, child.kind, namespace, rendered.name)
    assert live is not None

    assert not has_path(rendered.desired, path), "the template leaves this field to the server"
    assert has_path(live, path), "the server defaults this field"
    if server_value is None:
        assert dig(live, path), "the server assigns a value"
    else:
        assert dig(live, path) == server_value
    before = kube.stats.snapshot()
    run = reconcile(DefaultedWidgetReconciler(), kube, widget_kind, namespace)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 4


def test_a_spec_change_touching_only_the_config_map_patches_only_the_config_map(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2, greeting="hello")
    reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, greeting="bonjour")
    before = kube.stats.snapshot()

    run = reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)

    # The status follows the new generation (observedGeneration), hence the one status patch.
    assert shared.write_requests(kube, before) == {("apply", "configmaps"): 1, ("apply", "widgets/status"): 1}
    assert run.results.counts()[okt.Operation.UPDATED] == 1
    assert run.results.counts()[okt.Operation.UNCHANGED] == 2
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert config is not None
    assert config["data"] == {"greeting": "bonjour", "size": "2"}


@pytest.mark.parametrize(
    ("api_version", "kind_name", "name", "edit", "path", "expected", "write"),
    [
        pytest.param(
            "apps/v1",
            "Deployment",
            NAME,
            {"spec": {"replicas": 5}},
            ("spec", "replicas"),
            2,
            ("apply", "deployments"),
            id="deployment-replicas",
        ),
        pytest.param(
            "v1",
            "ConfigMap",
            f"{NAME}-config",
            {"data": {"greeting": "tampered"}},
            ("data", "greeting"),
            "hello",
            ("apply", "configmaps"),
            id="config-map-value",
        ),
        pytest.param(
            "v1",
            "ConfigMap",
            f"{NAME}-config",
            {"data": {"size": None}},
            ("data", "size"),
            "2",
            ("apply", "configmaps"),
            id="config-map-key-deleted",
        ),
        pytest.param(
            "apps/v1",
            "Deployment",
            NAME,
            {"metadata": {"labels": {"app": "stolen"}}},
            ("metadata", "labels", "app"),
            NAME,
            ("apply", "deployments"),
            id="deployment-label",
        ),
        pytest.param(
            "v1",
            "Service",
            NAME,
            {"spec": {"selector": {"app": "elsewhere"}}},
            ("spec", "selector", "app"),
            NAME,
            ("apply", "services"),
            id="service-selector",
        ),
    ],
)
def test_an_out_of_band_edit_of_a_managed_field_is_repaired_by_the_next_reconcile(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    api_version: str,
    kind_name: str,
    name: str,
    edit: dict[str, Any],
    path: tuple[str, ...],
    expected: object,
    write: tuple[str, str],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2, greeting="hello")
    reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)
    kind = other_client.resolve(api_version, kind_name)
    edited = other_client.patch(kind, name, edit, namespace)
    assert not has_path(edited, path) or dig(edited, path) != expected
    shared.settle_deployment(kube, namespace, NAME)
    before = kube.stats.snapshot()

    run = reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)

    assert shared.write_requests(kube, before) == {write: 1}
    assert run.results.counts()[okt.Operation.UPDATED] == 1
    live = shared.get_child(kube, api_version, kind_name, namespace, name)
    assert live is not None
    assert dig(live, path) == expected
    after_repair = kube.stats.snapshot()
    reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)
    assert shared.write_requests(kube, after_repair) == {}


@pytest.mark.parametrize(
    ("api_version", "kind_name", "name"),
    [
        ("v1", "ConfigMap", f"{NAME}-config"),
        ("v1", "Service", NAME),
        ("apps/v1", "Deployment", NAME),
    ],
)
@pytest.mark.parametrize("field", ["annotations", "labels"])
def test_an_annotation_or_label_added_by_someone_else_is_left_alone(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    api_version: str,
    kind_name: str,
    name: str,
    field: str,
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)
    kind = other_client.resolve(api_version, kind_name)
    other_client.patch(kind, name, {"metadata": {field: {"example.com/owner-team": "storage"}}}, namespace)
    before = kube.stats.snapshot()

    run = reconcile(shared.WidgetReconciler(), kube, widget_kind, namespace)

    assert shared.write_requests(kube, before) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 3
    live = shared.get_child(kube, api_version, kind_name, namespace, name)
    assert live is not None
    assert live["metadata"][field]["example.com/owner-team"] == "storage"


def test_a_config_map_key_removed_from_the_template_is_removed_from_the_live_object(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    reconcile(SettingsReconciler(), kube, widget_kind, namespace)
    created = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-settings")
    assert created is not None
    assert created["data"] == {"color": "blue", "mode": "fast", "retries": "3"}
    before = kube.stats.snapshot()

    run = reconcile(FewerSettingsReconciler(), kube, widget_kind, namespace)

    assert run.outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {("apply", "configmaps"): 1}
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-settings")
    assert live is not None
    assert live["data"] == {"color": "blue"}
    steady = kube.stats.snapshot()
    reconcile(FewerSettingsReconciler(), kube, widget_kind, namespace)
    assert shared.write_requests(kube, steady) == {}


class ConfigOnlyReconciler(shared.WidgetReconciler):
    """The Widget's ConfigMap alone, written with the strategy of the ``strategy`` parameter."""

    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_controller_reference_that_no_longer_blocks_the_owners_deletion_is_repaired_by_the_next_reconcile(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    strategy: str,
) -> None:
    rec = type("Reconciler", (ConfigOnlyReconciler,), {"apply_strategy": strategy})()
    widget = shared.make_widget(kube, widget_kind, namespace, NAME, size=2)
    reconcile(rec, kube, widget_kind, namespace)
    config_maps = other_client.resolve("v1", "ConfigMap")
    remove = [{"op": "remove", "path": "/metadata/ownerReferences/0/blockOwnerDeletion"}]
    other_client.patch(config_maps, f"{NAME}-config", remove, namespace, patch_type="json", field_manager="editor")
    before = kube.stats.snapshot()

    run = reconcile(rec, kube, widget_kind, namespace)

    write = ("apply" if strategy == "apply" else "patch", "configmaps")
    assert {k: n for k, n in shared.write_requests(kube, before).items() if k[1] == "configmaps"} == {write: 1}
    assert run.results.counts()[okt.Operation.UPDATED] == 1
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert live is not None
    assert live["metadata"]["ownerReferences"] == [okt.CustomResource(widget).owner_reference()]
    steady = kube.stats.snapshot()
    reconcile(rec, kube, widget_kind, namespace)
    assert {k: n for k, n in shared.write_requests(kube, steady).items() if k[1] == "configmaps"} == {}
