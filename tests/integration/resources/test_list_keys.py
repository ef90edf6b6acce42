"""okt's table of keyed lists against the API server's own schema: the lists server-side apply merges by key, with
their keys, for each built-in kind of the table; and a custom resource's, which its CRD declares, as a child whose
class carries that schema.

The server's OpenAPI document says how each list merges: ``x-kubernetes-list-type: map`` with its
``x-kubernetes-list-map-keys``, or, where it names no list type, the ``patchMergeKey`` of a ``merge`` patch strategy
(which server-side apply merges by too). Fields newer than the test's server are in the table and not in its schema:
they are skipped, not refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.resources import drift_check, list_keys
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.testing import envtest
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client


@pytest.fixture(scope="module")
def definitions(control_plane: envtest.ControlPlane) -> dict[str, Any]:
    found: dict[str, Any] = control_plane.request("GET", "/openapi/v2")["definitions"]
    return found


def definition_of(definitions: Mapping[str, Any], group: str, kind: str) -> str | None:
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if gvk.get("group") == group and gvk.get("kind") == kind:
                return name
    return None


def keys_of(prop: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The keys server-side apply merges the list ``prop`` by, or None for an atomic list (or a set of scalars)."""
    list_type = prop.get("x-kubernetes-list-type")
    if list_type is not None:
        return tuple(prop.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else None
    merge_key = prop.get("x-kubernetes-patch-merge-key")
    strategy = str(prop.get("x-kubernetes-patch-strategy") or "").split(",")
    return (merge_key,) if merge_key and "merge" in strategy else None


def keyed_lists(definitions: Mapping[str, Any], ref: str, path: tuple[str, ...] = ()) -> Iterator[Any]:
    """Each keyed list under the definition ``ref`` (outside ``metadata`` and ``status``): its path (``[]`` for an
    item) and keys."""
    for name, prop in (definitions[ref].get("properties") or {}).items():
        if name in ("metadata", "status"):
            continue
        inner = prop.get("items", {}) if prop.get("type") == "array" else prop
        if prop.get("type") == "array" and (keys := keys_of(prop)) is not None:
            yield (*path, name), keys
        if "$ref" in inner:
            step = (*path, name, "[]") if prop.get("type") == "array" else (*path, name)
            yield from keyed_lists(definitions, inner["$ref"].rpartition("/")[2], step)


def table_lists(schema: list_keys.Schema, path: tuple[str, ...] = ()) -> Iterator[Any]:
    for name, inner in schema.items():
        if isinstance(inner, list_keys.Keyed):
            yield (*path, name), inner.fields
            yield from table_lists(inner.items, (*path, name, "[]"))
        else:
            yield from table_lists(inner, (*path, name))


@pytest.mark.parametrize(("group", "kind"), list(list_keys.KINDS))
def test_the_keyed_lists_of_each_kind_are_those_the_api_server_merges_by_key(
    definitions: dict[str, Any], group: str, kind: str
) -> None:
    ref = definition_of(definitions, group, kind)
    assert ref is not None, f"{kind} of group {group!r} is not served"
    # A pod's ephemeral containers are added through its subresource only, never by a template: not in the table.
    served = {path: keys for path, keys in keyed_lists(definitions, ref) if "ephemeralContainers" not in path}
    table = dict(table_lists(list_keys.KINDS[(group, kind)]))

    assert {path: keys for path, keys in table.items() if path in served} == served
    unserved = {path for path in table if path not in served}
    assert {path[-2:] for path in unserved} <= NEWER_THAN_THE_TEST_SERVER, unserved


NEWER_THAN_THE_TEST_SERVER = {("spec", "resourceClaims"), ("spec", "schedulingGates"), ("resources", "claims")}
"""The keyed lists of the table the test's server (Kubernetes 1.20) does not serve yet, by the last two steps of their
path: a Pod's ``resourceClaims`` and ``schedulingGates``, a container's ``resources.claims``."""


LISTENER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
            },
        },
    },
}
"""A custom resource's schema whose ``spec.ports`` server-side apply merges by name and protocol (TCP by default)."""

LISTENER_GROUP = "keyed.test.okt.io"


def listener_crd() -> dict[str, Any]:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": LISTENER_SCHEMA}}
    names = {"kind": "Listener", "plural": "listeners", "singular": "listener", "listKind": "ListenerList"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"listeners.{LISTENER_GROUP}"},
        "spec": {"group": LISTENER_GROUP, "names": names, "scope": "Namespaced", "versions": [version]},
    }


class Listener(okt.MutableResource):
    """A child of a custom kind, its class carrying the schema of its CRD; its port leaves the protocol to the
    schema's default."""

    api_version = f"{LISTENER_GROUP}/v1"
    kind = "Listener"
    openapi_schema = LISTENER_SCHEMA
    template = """
apiVersion: keyed.test.okt.io/v1
kind: Listener
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  ports:
    - name: http
      port: 80
"""


class ListenerReconciler(shared.WidgetReconciler):
    owns = (Listener,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Listener(ctx.cr)]


NAME = "keyed"


@pytest.fixture(scope="module")
def listener_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(listener_crd())
    return kind


def converge(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[tuple[str, str], int]:
    """One reconcile reading from the API; the writes it sent, the Widget's status aside."""
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(ListenerReconciler(), kube, kind, namespace, NAME)
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return {k: n for k, n in shared.write_requests(kube, before).items() if k[1] != "widgets/status"}


def restarted(kube: kube_client.Client, namespace: str) -> dict[tuple[str, str], int]:
    """One reconcile by a new operator (its cache filled anew, nothing remembered); the writes it sent."""
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(ListenerReconciler, kube, cache, workers=1)
    controller.watch()
    try:
        assert cache.wait_for_sync(15)
        before = kube.stats.snapshot()
        assert controller.process((namespace, NAME)) == okt.Outcome.done()
        sent = shared.write_requests(kube, before)
    finally:
        cache.stop()
    return {k: n for k, n in sent.items() if k[1] != "widgets/status"}


def ports_of(kube: kube_client.Client, namespace: str) -> dict[str, tuple[int, str]]:
    live = shared.get_child(kube, f"{LISTENER_GROUP}/v1", "Listener", namespace, NAME)
    assert live is not None
    return {p["name"]: (p["port"], p["protocol"]) for p in live["spec"]["ports"]}


def test_another_managers_item_in_a_custom_resources_map_list_is_no_drift_and_okts_own_edited_is_repaired(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    listener_kind: kinds.Kind,
) -> None:
    """The CRD declares ``spec.ports`` a map list: server-side apply keeps another manager's port beside okt's, so it
    is no drift, and a new operator over the converged child writes nothing (compared item by item, it was written
    once per restart, for nothing). okt's own port made UDP (another port: okt's is gone) or edited is repaired."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(kube, widget_kind, namespace) == {("apply", "listeners"): 1}
    assert converge(kube, widget_kind, namespace) == {}, "the protocol the server filled in is no drift"
    udp = [{"op": "replace", "path": "/spec/ports/0/protocol", "value": "UDP"}]
    other_client.patch(listener_kind, NAME, udp, namespace, patch_type="json", field_manager="kubectl-edit")
    assert converge(kube, widget_kind, namespace)
    assert ports_of(kube, namespace) == {"http": (80, "TCP")}

    metadata = {"name": NAME, "namespace": namespace}
    metrics = {"name": "metrics", "port": 9150, "protocol": "TCP"}
    theirs = {"apiVersion": listener_kind.api_version, "kind": "Listener", "metadata": metadata}
    other_client.apply({**theirs, "spec": {"ports": [metrics]}}, listener_kind, field_manager="exporter")
    assert ports_of(kube, namespace) == {"http": (80, "TCP"), "metrics": (9150, "TCP")}

    assert restarted(kube, namespace) == {}
    assert restarted(kube, namespace) == {}

    ours = [{"op": "replace", "path": "/spec/ports/0/port", "value": 8080}]
    other_client.patch(listener_kind, NAME, ours, namespace, patch_type="json", field_manager="kubectl-edit")
    assert converge(kube, widget_kind, namespace) == {("apply", "listeners"): 1}
    assert ports_of(kube, namespace) == {"http": (80, "TCP"), "metrics": (9150, "TCP")}
    assert restarted(kube, namespace) == {}


SLOTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "slots": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"],
                    "items": {
                        "type": "object",
                        "required": ["id"],
                        "properties": {"id": {"type": "number"}, "owner": {"type": "string"}},
                    },
                },
            },
        },
    },
}
"""A custom resource's schema whose ``spec.slots`` server-side apply merges by a number, ``id`` (an ``integer``
beyond int64 is refused: ``must be of type integer``)."""


def slots_crd() -> dict[str, Any]:
    crd = listener_crd()
    crd["metadata"]["name"] = f"slots.{LISTENER_GROUP}"
    crd["spec"]["names"] = {"kind": "Slots", "plural": "slots", "singular": "slots", "listKind": "SlotsList"}
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": SLOTS_SCHEMA}
    return crd


class Slots(okt.MutableResource):
    """A child of a custom kind whose map list's key is a number, built in Python."""

    api_version = f"{LISTENER_GROUP}/v1"
    kind = "Slots"
    openapi_schema = SLOTS_SCHEMA


BIG_IDS = [2**53 + 1, 123456789012345678901, 1.2345678901234567e20, 5.0]
"""An integer the server keeps, one beyond int64 it stores as a float (given back ``123456789012345680000``), and a
float of 2**53 and more it gives back as another integer (``123456789012345670000``), and an integral float (given back
as ``5``)."""


class SlotsReconciler(shared.WidgetReconciler):
    owns = (Slots,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        metadata = {"name": NAME, "namespace": ctx.cr.namespace}
        slots = [{"id": number, "owner": "okt"} for number in BIG_IDS]
        body = {"apiVersion": Slots.api_version, "kind": Slots.kind, "metadata": metadata, "spec": {"slots": slots}}
        return [Slots(ctx.cr, body=body)]


def test_a_map_list_keyed_by_a_number_the_server_stores_as_another_matches_its_live_items(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    apply_crd: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its key numbers compared as Python computed them, no live item matched okt's once another manager's item stood
    among them, and a new operator wrote the child again each time."""
    slots_kind: kinds.Kind = apply_crd(slots_crd())
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    first = shared.reconcile_widget(SlotsReconciler(), kube, widget_kind, namespace, NAME)
    assert first.results.counts()[okt.Operation.CREATED] == 1, first.path_str
    live = shared.get_child(kube, Slots.api_version, Slots.kind, namespace, NAME)
    assert live is not None
    assert [slot["id"] for slot in live["spec"]["slots"]] == [
        2**53 + 1,
        123456789012345680000,
        123456789012345670000,
        5,
    ]
    # Another manager's slot: okt's are matched by key among the live ones, no longer item by item.
    theirs = {"apiVersion": Slots.api_version, "kind": Slots.kind, "metadata": {"name": NAME, "namespace": namespace}}
    other_client.apply({**theirs, "spec": {"slots": [{"id": 7, "owner": "them"}]}}, slots_kind, field_manager="other")
    live = shared.get_child(kube, Slots.api_version, Slots.kind, namespace, NAME)
    assert live is not None and len(live["spec"]["slots"]) == 5
    # A process started anew knows nothing of what the server made of its writes: the desired child alone must match.
    monkeypatch.setattr(drift_check, "SERVER_FORMS", drift_check.ServerForms())
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(SlotsReconciler(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}, run.results.summary()
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1
