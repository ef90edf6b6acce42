from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from okt.kube import objects
from okt.names import Names
from okt.resources import apply, checksum, drift_check, helpers, list_keys, resource

OWNER = objects.CustomResource(
    {
        "apiVersion": "test.okt.io/v1",
        "kind": "Widget",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"size": 2},
    }
)
NAMES = Names()


class Web(helpers.DeploymentResource):
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      volumes:
        - name: data
          emptyDir: {}
      containers:
        - name: main
          image: nginx:1.25
          args: ["--port", "8080"]
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: HOST
              value: db
            - name: URL
              value: "tcp://$(HOST):5432"
          volumeMounts:
            - name: data
              mountPath: /data
"""


class Front(helpers.ServiceResource):
    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    app: {{ name }}
  ports:
    - name: http
      port: 80
"""


class Listener(resource.MutableResource):
    """A custom resource's list: its CRD decides how it merges, and declares it atomic unless it says otherwise."""

    api_version = "example.com/v1"
    kind = "Listener"
    template = """
apiVersion: example.com/v1
kind: Listener
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  ports:
    - name: http
      port: 80
"""


def prepared(cls: type[resource.Resource]) -> resource.Resource:
    res = cls(OWNER)
    apply.prepare(res, OWNER, NAMES)
    return res


def as_live(res: resource.Resource) -> dict[str, Any]:
    """The object as the API server holds it after okt's write: what the server defaults filled in."""
    live = copy.deepcopy(res.desired)
    live["metadata"]["uid"] = f"uid-of-{res.kind}"
    for port in live.get("spec", {}).get("ports") or ():
        port.setdefault("protocol", "TCP")
    for container in live.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or ():
        container.update(terminationMessagePath="/dev/termination-log", imagePullPolicy="IfNotPresent")
        for port in container.get("ports") or ():
            port.setdefault("protocol", "TCP")
    return live


def pod(live: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = live["spec"]["template"]["spec"]
    return spec


def main(live: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod(live)["containers"][0]
    return container


Edit = Callable[[dict[str, Any]], None]

THEIRS: list[tuple[type[resource.Resource], Edit, str]] = [
    (Front, lambda live: live["spec"]["ports"].append({"name": "metrics", "port": 9150, "protocol": "TCP"}), "port"),
    (Front, lambda live: live["spec"]["ports"].insert(0, {"port": 53, "protocol": "UDP"}), "port-before"),
    (Web, lambda live: main(live)["env"].insert(1, {"name": "INJECTED", "value": "x"}), "env-var"),
    (Web, lambda live: main(live)["ports"].append({"containerPort": 9150, "protocol": "TCP"}), "container-port"),
    (Web, lambda live: main(live)["volumeMounts"].append({"name": "certs", "mountPath": "/certs"}), "mount"),
    (Web, lambda live: pod(live)["volumes"].append({"name": "certs", "secret": {"secretName": "c"}}), "volume"),
    (Web, lambda live: pod(live)["containers"].insert(0, {"name": "proxy", "image": "envoy"}), "sidecar"),
]


@pytest.mark.parametrize(("cls", "edit"), [pytest.param(cls, edit, id=name) for cls, edit, name in THEIRS])
def test_another_managers_item_in_a_keyed_list_of_a_built_in_kind_is_no_drift(
    cls: type[resource.Resource], edit: Edit
) -> None:
    """Server-side apply keeps it beside okt's items: writing again could not take it away, after a restart either
    (nothing of the process's memory is needed to tell)."""
    res = prepared(cls)
    live = as_live(res)
    edit(live)

    assert drift_check.in_place(res, live)
    assert apply.decide(res, live, OWNER, NAMES) == apply.Decision(apply.Action.UNCHANGED, "hash and fields match")


def their_port_and_ours_renamed(live: dict[str, Any]) -> None:
    live["spec"]["ports"].insert(0, {"name": "metrics", "port": 9150, "protocol": "TCP"})
    live["spec"]["ports"][1]["name"] = "web"


def their_env_var_and_ours_edited(live: dict[str, Any]) -> None:
    main(live)["env"].append({"name": "INJECTED", "value": "x"})
    main(live)["env"][0]["value"] = "other"


def their_sidecar_and_our_image_edited(live: dict[str, Any]) -> None:
    pod(live)["containers"].insert(0, {"name": "proxy", "image": "envoy"})
    pod(live)["containers"][1]["image"] = "nginx:evil"


DRIFT: list[tuple[type[resource.Resource], Edit, str, str]] = [
    (Front, their_port_and_ours_renamed, ".spec.ports[1].name", "our-port-edited"),
    (Front, lambda live: live["spec"]["ports"][0].update(port=8080), ".spec.ports", "our-port-renumbered"),
    (Web, their_env_var_and_ours_edited, ".spec.template.spec.containers[0].env[0].value", "our-env-var-edited"),
    (Web, lambda live: main(live)["env"].reverse(), ".spec.template.spec.containers[0].env", "our-env-vars-reordered"),
    (Web, lambda live: main(live)["env"].pop(0), ".spec.template.spec.containers[0].env", "our-env-var-removed"),
    (Web, lambda live: main(live)["args"].append("-v"), ".spec.template.spec.containers[0].args", "atomic-list"),
    (Web, their_sidecar_and_our_image_edited, ".spec.template.spec.containers[1].image", "our-container-edited"),
    (
        Listener,
        lambda live: live["spec"]["ports"].append({"name": "metrics", "port": 9150}),
        ".spec.ports",
        "custom-resource-list",
    ),
]


@pytest.mark.parametrize(
    ("cls", "edit", "drift"), [pytest.param(cls, edit, drift, id=name) for cls, edit, drift, name in DRIFT]
)
def test_an_edit_of_okts_items_or_of_a_list_compared_whole_is_drift(
    cls: type[resource.Resource], edit: Edit, drift: str
) -> None:
    """Named where it is: inside okt's item at its live index, or the list when one of okt's items is missing or out
    of order (or when the list is compared whole)."""
    res = prepared(cls)
    live = as_live(res)
    edit(live)

    assert not drift_check.in_place(res, live)
    assert apply.decide(res, live, OWNER, NAMES) == apply.Decision(apply.Action.UPDATE, "drift", (drift,))


def our_port_made_udp(live: dict[str, Any]) -> None:
    live["spec"]["ports"][0]["protocol"] = "UDP"


def our_container_port_made_udp(live: dict[str, Any]) -> None:
    main(live)["ports"][0]["protocol"] = "UDP"


PROTOCOL_EDITED: list[tuple[type[resource.Resource], Edit, str, str, str]] = [
    (Front, our_port_made_udp, ".spec.ports", ".spec.ports[0].protocol", "service-port"),
    (
        Web,
        our_container_port_made_udp,
        ".spec.template.spec.containers[0].ports",
        ".spec.template.spec.containers[0].ports[0].protocol",
        "container-port",
    ),
]


@pytest.mark.parametrize(
    ("cls", "edit", "keyed_drift", "merged_drift"),
    [pytest.param(*case[:4], id=case[4]) for case in PROTOCOL_EDITED],
)
def test_a_key_field_the_template_leaves_to_the_server_default_edited_is_drift(
    cls: type[resource.Resource], edit: Edit, keyed_drift: str, merged_drift: str
) -> None:
    """A port without ``protocol`` is TCP: the live port of that number made UDP is not okt's any more, though the item
    at its index holds every field the template sets. An apply puts okt's TCP port back; a merge patch writes the list
    over, TCP again."""
    res = prepared(cls)
    live = as_live(res)
    edit(live)

    assert not drift_check.in_place(res, live)
    assert apply.decide(res, live, OWNER, NAMES) == apply.Decision(apply.Action.UPDATE, "drift", (keyed_drift,))
    assert not drift_check.in_place(res, live, keyed=False)
    merged = apply.Decision(apply.Action.UPDATE, "drift", (merged_drift,))
    assert apply.decide(res, live, OWNER, NAMES, keyed=False) == merged


@pytest.mark.parametrize("keyed", [True, False], ids=["applied", "merged"])
@pytest.mark.parametrize("cls", [Front, Web])
def test_a_key_field_the_server_filled_in_with_its_default_is_no_drift(
    cls: type[resource.Resource], keyed: bool
) -> None:
    res = prepared(cls)
    live = as_live(res)

    assert drift_check.in_place(res, live, keyed=keyed)
    decision = apply.decide(res, live, OWNER, NAMES, keyed=keyed)
    assert decision == apply.Decision(apply.Action.UNCHANGED, "hash and fields match")


def test_a_key_field_outside_hashable_ref_is_not_compared() -> None:
    class Unhashed(Front):
        def hashable_ref(self) -> Any:
            return {"labels": self.desired["metadata"].get("labels")}

    res = prepared(Unhashed)
    live = as_live(res)
    our_port_made_udp(live)

    assert drift_check.in_place(res, live)
    assert drift_check.in_place(res, live, keyed=False)


def test_the_keyed_lists_of_a_workloads_pod_template_are_marked_with_their_keys() -> None:
    body = prepared(Web).desired
    view = copy.deepcopy(body)

    list_keys.mark(view)

    spec = view["spec"]["template"]["spec"]
    container = spec["containers"][0]
    marked = {
        name: (value.keys, dict(value.defaults))
        for name, value in [
            ("containers", spec["containers"]),
            ("volumes", spec["volumes"]),
            ("ports", container["ports"]),
            ("env", container["env"]),
            ("volumeMounts", container["volumeMounts"]),
        ]
        if isinstance(value, checksum.KeyedList)
    }
    assert marked == {
        "containers": (("name",), {}),
        "volumes": (("name",), {}),
        "ports": (("containerPort", "protocol"), {"protocol": "TCP"}),
        "env": (("name",), {}),
        "volumeMounts": (("mountPath",), {}),
    }
    assert type(container["args"]) is list, "an atomic list is compared whole"
    assert view == body, "the same items"


@pytest.mark.parametrize(
    ("api_version", "kind", "found"),
    [
        ("v1", "Service", True),
        ("apps/v1", "StatefulSet", True),
        ("batch/v1beta1", "CronJob", True),
        ("v1", "ConfigMap", False),
        ("example.com/v1", "Service", False),
    ],
)
def test_the_keyed_lists_are_those_of_a_built_in_kinds_group_in_any_version(
    api_version: str, kind: str, found: bool
) -> None:
    assert (list_keys.schema_of(api_version, kind) is not None) is found


@pytest.mark.parametrize(("cls", "edit"), [pytest.param(cls, edit, id=name) for cls, edit, name in THEIRS])
def test_another_managers_item_in_a_keyed_list_is_drift_for_a_child_written_by_merge_patches(
    cls: type[resource.Resource], edit: Edit
) -> None:
    """A merge patch replaces the list whole: okt's write removes the other item, so it is drift there (left as no
    drift, it would stay until the template changed, and then go without a word)."""
    res = prepared(cls)
    live = as_live(res)
    edit(live)

    assert not drift_check.in_place(res, live, keyed=False)
    decision = apply.decide(res, live, OWNER, NAMES, keyed=False)
    assert decision.action is apply.Action.UPDATE
    assert decision.drift


ROUTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
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
                            "hosts": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["host"],
                                "items": {"type": "object", "properties": {"host": {"type": "string"}}},
                            },
                        },
                    },
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


class DeclaredListener(Listener):
    """The same custom resource, its class carrying its CRD's schema: ``spec.ports`` is a map list."""

    openapi_schema = ROUTES_SCHEMA


def test_the_map_lists_of_a_crds_schema_are_its_keyed_lists_with_their_keys_and_defaults() -> None:
    hosts = list_keys.Keyed(("host",))
    assert list_keys.from_openapi(ROUTES_SCHEMA) == {
        "spec": {"ports": list_keys.Keyed(("name", "protocol"), {"protocol": "TCP"}, {"hosts": hosts})}
    }
    assert DeclaredListener.keyed_lists == list_keys.Lists.of(list_keys.from_openapi(ROUTES_SCHEMA))
    assert Listener.keyed_lists is None


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": {"spec": "object"}}, ".spec: is not a mapping but a str"),
        (
            {"properties": {"spec": {"properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map"}}}}},
            ".spec.ports: x-kubernetes-list-type map needs x-kubernetes-list-map-keys",
        ),
        ({"properties": ["spec"]}, ".: properties is not a mapping"),
        ("openAPIV3Schema", "is not a mapping but a str"),
    ],
)
def test_a_schema_okt_cannot_read_is_refused_when_the_class_is_defined(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=r"Bad\.openapi_schema") as refused:

        class Bad(Listener):
            openapi_schema = schema

    assert message in str(refused.value)


CR_THEIRS: list[tuple[Edit, str]] = [
    (lambda live: live["spec"]["ports"].append({"name": "metrics", "port": 9150, "protocol": "TCP"}), "port-after"),
    (lambda live: live["spec"]["ports"].insert(0, {"name": "dns", "port": 53, "protocol": "UDP"}), "port-before"),
]


def as_live_listener(res: resource.Resource) -> dict[str, Any]:
    live = copy.deepcopy(res.desired)
    live["metadata"]["uid"] = "uid-of-listener"
    for port in live["spec"]["ports"]:
        port.setdefault("protocol", "TCP")  # the schema's default, filled in by the server
    return live


@pytest.mark.parametrize("edit", [pytest.param(edit, id=name) for edit, name in CR_THEIRS])
def test_another_managers_item_in_a_map_list_of_a_custom_resource_is_no_drift_when_its_class_declares_it(
    edit: Edit,
) -> None:
    res = prepared(DeclaredListener)
    live = as_live_listener(res)
    edit(live)

    assert drift_check.in_place(res, live)
    assert apply.decide(res, live, OWNER, NAMES) == apply.Decision(apply.Action.UNCHANGED, "hash and fields match")
    assert not drift_check.in_place(res, live, keyed=False), "a merge patch replaces the list whole"
    assert not drift_check.in_place(prepared(Listener), live), "undeclared, the list is compared whole"


@pytest.mark.parametrize(
    ("edit", "drift"),
    [
        pytest.param(lambda live: live["spec"]["ports"][0].update(port=8080), ".spec.ports[0].port", id="edited"),
        pytest.param(lambda live: live["spec"]["ports"][0].update(protocol="UDP"), ".spec.ports", id="key-default"),
        pytest.param(lambda live: live["spec"]["ports"].clear(), ".spec.ports", id="removed"),
    ],
)
def test_an_edit_of_okts_item_in_a_declared_map_list_of_a_custom_resource_is_drift(edit: Edit, drift: str) -> None:
    res = prepared(DeclaredListener)
    live = as_live_listener(res)
    assert drift_check.in_place(res, live), "the default the server filled in is no drift"
    edit(live)

    assert not drift_check.in_place(res, live)
    assert apply.decide(res, live, OWNER, NAMES) == apply.Decision(apply.Action.UPDATE, "drift", (drift,))


def test_the_apply_of_a_custom_resource_spells_out_the_key_fields_its_schema_defaults() -> None:
    """Servers before 1.21 refuse an apply whose list item omits a key field; the server would fill in that value."""
    assert apply.apply_body(prepared(DeclaredListener))["spec"]["ports"] == [
        {"name": "http", "port": 80, "protocol": "TCP"}
    ]
    assert apply.apply_body(prepared(Listener))["spec"]["ports"] == [{"name": "http", "port": 80}]


@pytest.mark.parametrize(
    "schema",
    [pytest.param(list_keys.from_openapi(ROUTES_SCHEMA), id="crd")]
    + [pytest.param(schema, id=f"{group or 'core'}-{kind}") for (group, kind), schema in list_keys.KINDS.items()],
)
def test_the_part_of_a_schema_written_for_its_keyed_lists_reads_back_as_the_same_lists(
    schema: list_keys.Schema,
) -> None:
    assert list_keys.from_openapi(list_keys.to_openapi(schema)) == schema
