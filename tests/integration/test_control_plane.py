"""Smoke tests of the real local control plane (etcd + kube-apiserver + kube-controller-manager).

Everything okt does against Kubernetes rests on the behaviours pinned here: custom resources with a status
subresource and their generation, watches that start from a list's resourceVersion, optimistic concurrency, the
controllers okt relies on (garbage collector, namespace, deployment, replicaset), RBAC for token users, and a control
plane that cleans up after itself. No mocks: every request goes to a real kube-apiserver.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime
import json
import os
import pathlib
import secrets
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest
import requests
import yaml

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, waiting

pytestmark = pytest.mark.integration

GROUP = "smoke.okt.io"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer", "minimum": 1}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "observedGeneration": {"type": "integer"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}

DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
REPLICA_SET = kinds.BUILTIN[("apps/v1", "ReplicaSet")]
POD = kinds.BUILTIN[("v1", "Pod")]
ROLE = kinds.BUILTIN[("rbac.authorization.k8s.io/v1", "Role")]
ROLE_BINDING = kinds.BUILTIN[("rbac.authorization.k8s.io/v1", "RoleBinding")]

CONTROL_PLANE_PROCESSES = ("etcd", "kube-apiserver", "kube-controller-manager")


def widget(name: str, namespace: str, size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": size},
    }


def config_map(name: str, namespace: str, data: dict[str, str] | None = None, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "data": data or {},
    }


def controller_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    references = obj["metadata"].get("ownerReferences") or []
    return any(ref["uid"] == owner["metadata"]["uid"] and ref.get("controller") for ref in references)


@contextlib.contextmanager
def client_for(plane: envtest.ControlPlane, user: envtest.TokenUser) -> Iterator[kube_client.Client]:
    client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(user))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def widgets(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(WIDGET_CRD)


# -- custom resources ---------------------------------------------------------------------------------------------


def test_a_crd_with_a_status_subresource_is_established_and_served(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, widgets: kinds.Kind
) -> None:
    crd = kube.get(kinds.CRD, WIDGET_CRD["metadata"]["name"])
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    discovery = control_plane.request("GET", f"/apis/{GROUP}/v1alpha1")

    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert {"widgets", "widgets/status"} <= {resource["name"] for resource in discovery["resources"]}
    assert kube.resolve(f"{GROUP}/v1alpha1", "Widget") == widgets


def test_a_custom_resource_is_created_with_generation_one(
    kube: kube_client.Client, widgets: kinds.Kind, namespace: str
) -> None:
    created = kube.create(widget("first", namespace, size=2), widgets)

    assert created["metadata"]["generation"] == 1
    assert kube.get(widgets, "first", namespace)["spec"] == {"size": 2}


@pytest.mark.parametrize(
    ("subresource", "patch", "generation", "spec", "status"),
    [
        pytest.param("status", {"status": {"phase": "Ready"}}, 1, {"size": 1}, {"phase": "Ready"}, id="status"),
        pytest.param(None, {"spec": {"size": 3}}, 2, {"size": 3}, None, id="spec"),
        pytest.param(None, {"metadata": {"labels": {"tier": "cache"}}}, 1, {"size": 1}, None, id="labels"),
        pytest.param(
            "status",
            {"spec": {"size": 5}, "status": {"phase": "Ready"}},
            1,
            {"size": 1},
            {"phase": "Ready"},
            id="spec through the status subresource is ignored",
        ),
        pytest.param(
            None,
            {"status": {"phase": "Ready"}},
            1,
            {"size": 1},
            None,
            id="status through the main resource is ignored",
        ),
    ],
)
def test_only_a_spec_change_bumps_generation_and_status_is_written_only_through_its_subresource(
    kube: kube_client.Client,
    widgets: kinds.Kind,
    namespace: str,
    subresource: str | None,
    patch: dict[str, Any],
    generation: int,
    spec: dict[str, Any],
    status: dict[str, Any] | None,
) -> None:
    kube.create(widget("gen", namespace), widgets)

    patched = kube.patch(widgets, "gen", patch, namespace, subresource=subresource)
    live = kube.get(widgets, "gen", namespace)

    assert patched["metadata"]["generation"] == live["metadata"]["generation"] == generation
    assert live["spec"] == spec
    assert live.get("status") == status


# -- watch --------------------------------------------------------------------------------------------------------


def watch_until_deleted(
    kube: kube_client.Client, namespace: str, name: str, resource_version: str
) -> list[tuple[str, dict[str, str]]]:
    """The (type, data) of every event about ConfigMap ``name`` from ``resource_version`` up to its deletion."""
    seen: list[tuple[str, dict[str, str]]] = []
    events = kube.watch(
        kinds.CONFIG_MAP, namespace, resource_version=resource_version, timeout_seconds=20, inactivity_timeout=20
    )
    assert isinstance(events, Generator), "a watch must be closable by its consumer"
    try:
        for event in events:
            obj = event["object"]
            if event["type"] == "BOOKMARK" or obj["metadata"]["name"] != name:
                continue
            seen.append((event["type"], obj.get("data") or {}))
            if event["type"] == "DELETED":
                break
    finally:
        events.close()
    return seen


def config_map_watchers(plane: envtest.ControlPlane) -> int:
    """How many ConfigMap watches the apiserver is serving (its ``apiserver_registered_watchers`` gauge)."""
    for line in str(plane.request("GET", "/metrics")).splitlines():
        if line.startswith("apiserver_registered_watchers{") and 'kind="ConfigMap"' in line:
            return int(float(line.rpartition(" ")[2]))
    return 0


@pytest.mark.parametrize("live", [True, False], ids=["watch serving while the changes happen", "opened after them"])
def test_a_watch_from_the_lists_resource_version_receives_added_modified_and_deleted(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, live: bool
) -> None:
    _, resource_version = kube.list(kinds.CONFIG_MAP, namespace)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        watching = None
        if live:
            before = config_map_watchers(control_plane)
            watching = pool.submit(watch_until_deleted, kube, namespace, "watched", resource_version)
            waiting.wait_for(lambda: config_map_watchers(control_plane) > before, timeout=10, message="the watch")
        kube.create(config_map("watched", namespace, {"step": "1"}))
        kube.patch(kinds.CONFIG_MAP, "watched", {"data": {"step": "2"}}, namespace)
        kube.delete(kinds.CONFIG_MAP, "watched", namespace)
        if watching is None:
            watching = pool.submit(watch_until_deleted, kube, namespace, "watched", resource_version)
        events = watching.result(timeout=30)

    assert events == [("ADDED", {"step": "1"}), ("MODIFIED", {"step": "2"}), ("DELETED", {"step": "2"})]


# -- optimistic concurrency and errors ----------------------------------------------------------------------------


def replace_with_stale_resource_version(kube: kube_client.Client, existing: dict[str, Any]) -> object:
    meta = existing["metadata"]
    kube.patch(kinds.CONFIG_MAP, meta["name"], {"data": {"writer": "other"}}, meta["namespace"])
    return kube.replace(kinds.CONFIG_MAP, {**existing, "data": {"writer": "stale"}})


def patch_with_stale_resource_version(kube: kube_client.Client, existing: dict[str, Any]) -> object:
    meta = existing["metadata"]
    kube.patch(kinds.CONFIG_MAP, meta["name"], {"data": {"writer": "other"}}, meta["namespace"])
    stale = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "data": {"writer": "stale"}}
    return kube.patch(kinds.CONFIG_MAP, meta["name"], stale, meta["namespace"])


def create_again(kube: kube_client.Client, existing: dict[str, Any]) -> object:
    meta = existing["metadata"]
    return kube.create(config_map(meta["name"], meta["namespace"], {"writer": "second"}))


def get_missing(kube: kube_client.Client, existing: dict[str, Any]) -> object:
    return kube.get(kinds.CONFIG_MAP, "missing", existing["metadata"]["namespace"])


def patch_missing(kube: kube_client.Client, existing: dict[str, Any]) -> object:
    return kube.patch(kinds.CONFIG_MAP, "missing", {"data": {"a": "b"}}, existing["metadata"]["namespace"])


@pytest.mark.parametrize(
    ("action", "error", "status", "already_exists"),
    [
        pytest.param(replace_with_stale_resource_version, errors.Conflict, 409, False, id="stale update"),
        pytest.param(patch_with_stale_resource_version, errors.Conflict, 409, False, id="stale merge patch"),
        pytest.param(create_again, errors.Conflict, 409, True, id="create existing"),
        pytest.param(get_missing, errors.NotFound, 404, None, id="get missing"),
        pytest.param(patch_missing, errors.NotFound, 404, None, id="patch missing"),
    ],
)
def test_api_failures_raise_the_matching_okt_error_with_the_http_error_as_cause(
    kube: kube_client.Client,
    namespace: str,
    action: Callable[[kube_client.Client, dict[str, Any]], object],
    error: type[errors.ApiError],
    status: int,
    already_exists: bool | None,
) -> None:
    existing = kube.create(config_map("existing", namespace, {"writer": "first"}))

    with pytest.raises(error) as raised:
        action(kube, existing)

    assert raised.value.status == status
    assert getattr(raised.value, "already_exists", None) is already_exists
    assert isinstance(raised.value.__cause__, requests.HTTPError)  # raised for the status, on either request path
    assert kube.get(kinds.CONFIG_MAP, "existing", namespace)["data"]["writer"] != "stale"


def test_deleting_a_missing_object_reports_that_it_was_already_gone(kube: kube_client.Client, namespace: str) -> None:
    kube.create(config_map("doomed", namespace))

    assert kube.delete(kinds.CONFIG_MAP, "doomed", namespace) is True
    assert kube.delete(kinds.CONFIG_MAP, "doomed", namespace) is False


# -- identities and RBAC ------------------------------------------------------------------------------------------

NO_RULES = "no-rules"
READER = "reader"


@pytest.fixture(scope="module")
def rbac_plane() -> Iterator[envtest.ControlPlane]:
    """A second, controller-less control plane: token users can only be declared when the apiserver starts."""
    users = [envtest.TokenUser.service_account("default", name) for name in (NO_RULES, READER)]
    with envtest.control_plane(controllers=(), users=users) as plane:
        yield plane


def user_named(plane: envtest.ControlPlane, service_account: str) -> envtest.TokenUser:
    return next(user for user in plane.users if user.name.endswith(f":{service_account}"))


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(lambda client: client.list(kinds.CONFIG_MAP, "default"), id="list configmaps"),
        pytest.param(lambda client: client.get(kinds.NAMESPACE, "default"), id="get a namespace"),
        pytest.param(lambda client: client.create(config_map("denied", "default")), id="create a configmap"),
    ],
)
def test_a_token_user_without_rbac_rules_is_forbidden(
    rbac_plane: envtest.ControlPlane, action: Callable[[kube_client.Client], object]
) -> None:
    user = user_named(rbac_plane, NO_RULES)

    with client_for(rbac_plane, user) as client, pytest.raises(errors.Forbidden) as raised:
        action(client)

    assert raised.value.status == 403
    assert user.name in raised.value.api_message


def test_a_role_bound_to_the_service_account_grants_the_token_user_exactly_its_rules(
    rbac_plane: envtest.ControlPlane,
) -> None:
    user = user_named(rbac_plane, READER)
    admin = kube_client.Client.from_kubeconfig(rbac_plane.kubeconfig)
    try:
        admin.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "configmap-reader", "namespace": "default"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
            },
            ROLE,
        )
        admin.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "configmap-reader", "namespace": "default"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": READER, "namespace": "default"}],
            },
            ROLE_BINDING,
        )
        admin.create(config_map("readable", "default", {"k": "v"}))
    finally:
        admin.close()

    with client_for(rbac_plane, user) as client:
        readable = waiting.wait_for(
            lambda: client.get(kinds.CONFIG_MAP, "readable", "default"), timeout=10, message="the RoleBinding"
        )
        with pytest.raises(errors.Forbidden):
            client.create(config_map("not-granted", "default"))
        with pytest.raises(errors.Forbidden):
            client.list(kinds.CONFIG_MAP, "kube-system")

    assert readable["data"] == {"k": "v"}


def test_an_unknown_token_is_unauthorized(rbac_plane: envtest.ControlPlane) -> None:
    stranger = envtest.TokenUser("stranger", secrets.token_hex(16))

    with client_for(rbac_plane, stranger) as client, pytest.raises(errors.Unauthorized) as raised:
        client.list(kinds.CONFIG_MAP, "default")

    assert raised.value.status == 401


# -- the kubeconfig and request counting --------------------------------------------------------------------------


@pytest.mark.parametrize("from_environment", [False, True], ids=["explicit path", "KUBECONFIG"])
def test_the_written_kubeconfig_reaches_the_apiserver_as_the_admin(
    control_plane: envtest.ControlPlane, monkeypatch: pytest.MonkeyPatch, from_environment: bool
) -> None:
    if from_environment:
        monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    client = kube_client.Client.from_kubeconfig(None if from_environment else control_plane.kubeconfig)
    try:
        version = client.server_version()
        default = client.get(kinds.NAMESPACE, "default")
        system = client.list(kinds.CONFIG_MAP, "kube-system")
    finally:
        client.close()

    assert version == "v1.20.2"
    assert client.default_namespace == "default"
    assert default["status"]["phase"] == "Active"
    assert system[1]


def test_each_token_user_gets_a_kubeconfig_of_its_own_when_their_tokens_begin_alike(
    control_plane: envtest.ControlPlane,
) -> None:
    first = envtest.TokenUser("first-operator", "operator-token-one")
    second = envtest.TokenUser("second-operator", "operator-token-two")

    first_path = control_plane.kubeconfig_for(first)
    second_path = control_plane.kubeconfig_for(second)

    assert first_path != second_path
    assert yaml.safe_load(first_path.read_text())["users"] == [
        {"name": "first-operator", "user": {"token": "operator-token-one"}}
    ]


def test_a_kubeconfig_written_where_the_test_asks_is_readable_by_its_owner_only(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    previous = os.umask(0o022)
    try:
        path = control_plane.kubeconfig_for(control_plane.users[0], tmp_path / "admin-kubeconfig")
    finally:
        os.umask(previous)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text())["users"][0]["user"]["token"] == control_plane.token


def kubeconfig_variant(plane: envtest.ControlPlane, path: pathlib.Path, **changes: Any) -> pathlib.Path:
    """The admin kubeconfig with ``cluster=`` / ``user=`` entries replaced."""
    doc = yaml.safe_load(plane.kubeconfig.read_text())
    if "cluster" in changes:
        doc["clusters"][0]["cluster"] = changes["cluster"]
    if "user" in changes:
        doc["users"][0]["user"] = changes["user"]
    path.write_text(yaml.safe_dump(doc))
    return path


def exec_plugin_user(plane: envtest.ControlPlane, directory: pathlib.Path) -> dict[str, Any]:
    """A kubeconfig user whose token (the admin's) comes from an exec credential plugin."""
    token = yaml.safe_load(plane.kubeconfig.read_text())["users"][0]["user"]["token"]
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential"}
    plugin = directory / "credential.sh"
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps({**credential, 'status': {'token': token}})}'\n")
    plugin.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin)}}


def test_credentials_from_an_exec_plugin_are_sent_through_the_session(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    """A token from an exec plugin can change while the process runs: such a client keeps the pykube session path
    (which runs the plugin and retries a 401) instead of headers built once; the verbs behave the same."""
    exec_user = exec_plugin_user(control_plane, tmp_path)
    client = kube_client.Client.from_kubeconfig(kubeconfig_variant(control_plane, tmp_path / "kc", user=exec_user))
    try:
        assert client.get(kinds.NAMESPACE, "default")["metadata"]["name"] == "default"
        with pytest.raises(errors.NotFound) as raised:
            client.get(kinds.CONFIG_MAP, "missing", "default")
    finally:
        client.close()
    assert isinstance(raised.value.__cause__, requests.HTTPError)


@pytest.mark.parametrize("exec_plugin", [False, True], ids=["static token", "exec plugin"])
def test_a_server_certificate_the_kubeconfig_does_not_trust_is_refused(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, exec_plugin: bool
) -> None:
    stranger = tmp_path / "other-ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=other", "-days", "1",
         "-keyout", str(tmp_path / "other-ca.key"), "-out", str(stranger)],
        check=True, capture_output=True,
    )  # fmt: skip
    cluster = {"server": control_plane.url, "certificate-authority": str(stranger)}
    user = exec_plugin_user(control_plane, tmp_path) if exec_plugin else {"token": "irrelevant"}
    client = kube_client.Client.from_kubeconfig(
        kubeconfig_variant(control_plane, tmp_path / "kc", cluster=cluster, user=user)
    )
    try:
        with pytest.raises(errors.ApiError) as raised:
            client.get(kinds.NAMESPACE, "default")
    finally:
        client.close()
    assert raised.value.status == 0
    assert "certificate verify failed" in str(raised.value).lower()


def test_a_list_comes_in_pages_of_the_size_asked_with_one_resource_version(
    kube: kube_client.Client, namespace: str
) -> None:
    for index in range(5):
        kube.create(config_map(f"paged-{index}", namespace))

    pages = list(kube.list_pages(kinds.CONFIG_MAP, namespace, page_size=2))

    assert [len(items) for items, _ in pages] == [2, 2, 1]
    assert len({version for _, version in pages}) == 1
    names = [item["metadata"]["name"] for items, _ in pages for item in items]
    assert names == [f"paged-{index}" for index in range(5)]
    assert all(item["kind"] == "ConfigMap" for items, _ in pages for item in items)


def test_a_list_from_the_servers_cache_is_one_request_handed_out_in_pages_of_the_size_asked(
    kube: kube_client.Client, namespace: str
) -> None:
    for index in range(5):
        kube.create(config_map(f"cached-{index}", namespace))

    def listed() -> tuple[list[tuple[list[dict[str, Any]], str]], collections.Counter[tuple[str, str]]] | None:
        before = kube.stats.snapshot()
        pages = list(kube.list_pages(kinds.CONFIG_MAP, namespace, page_size=2, resource_version="0"))
        # The watch cache may be a moment behind the creates: list again until it has all five.
        return (pages, kube.stats.delta(before)) if sum(len(items) for items, _ in pages) == 5 else None

    pages, requests_made = waiting.wait_for(listed, timeout=10, message="the watch cache to hold all five")

    # The server does not page an answer from its cache: one request, read as it streams, handed out two at a time.
    assert requests_made == collections.Counter({("list", "configmaps"): 1})
    assert [len(items) for items, _ in pages] == [2, 2, 1]
    assert len({version for _, version in pages}) == 1 and pages[0][1]
    names = sorted(item["metadata"]["name"] for items, _ in pages for item in items)  # the cache's own order
    assert names == [f"cached-{index}" for index in range(5)]
    assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for items, _ in pages for item in items)


def test_a_custom_resources_list_is_handed_out_before_its_metadata_is_read(
    kube: kube_client.Client, widgets: kinds.Kind, namespace: str
) -> None:
    for index in range(5):
        kube.create(widget(f"streamed-{index}", namespace), widgets)

    def listed() -> list[tuple[list[dict[str, Any]], str]] | None:
        pages = list(kube.list_pages(widgets, namespace, page_size=2, resource_version="0"))
        return pages if sum(len(items) for items, _ in pages) == 5 else None

    pages = waiting.wait_for(listed, timeout=10, message="the watch cache to hold all five")

    # A custom resource's list has its keys in order: the items come before the list's metadata. The pages are
    # handed out as the items are read, without holding the list until its resourceVersion comes; the last one
    # carries it.
    assert [(len(items), version) for items, version in pages[:-1]] == [(2, ""), (2, "")]
    assert len(pages[-1][0]) == 1 and int(pages[-1][1]) > 0
    names = sorted(item["metadata"]["name"] for items, _ in pages for item in items)
    assert names == [f"streamed-{index}" for index in range(5)]


def test_an_empty_list_is_one_empty_page_with_the_lists_resource_version(
    kube: kube_client.Client, namespace: str
) -> None:
    for resource_version in (None, "0"):
        pages = list(
            kube.list_pages(
                kinds.CONFIG_MAP,
                namespace,
                label_selector="nothing=here",
                page_size=2,
                resource_version=resource_version,
            )
        )

        assert len(pages) == 1
        assert pages[0][0] == [] and int(pages[0][1]) > 0


def test_request_stats_count_each_request_by_verb_and_resource(
    kube: kube_client.Client, widgets: kinds.Kind, namespace: str
) -> None:
    before = kube.stats.snapshot()

    kube.create(config_map("counted", namespace))
    kube.get(kinds.CONFIG_MAP, "counted", namespace)
    kube.create(widget("counted", namespace), widgets)
    kube.patch(widgets, "counted", {"status": {"phase": "Ready"}}, namespace, subresource="status")

    assert kube.stats.delta(before) == collections.Counter(
        {
            ("create", "configmaps"): 1,
            ("get", "configmaps"): 1,
            ("create", "widgets"): 1,
            ("patch", "widgets/status"): 1,
        }
    )
    assert kube.stats.writes(before) == 3
    assert kube.stats.by_verb(before) == {"create": 2, "get": 1, "patch": 1}


# -- stopping -----------------------------------------------------------------------------------------------------


def processes_under(directory: pathlib.Path) -> dict[int, str]:
    """The pid and program name of every process whose command line mentions ``directory``."""
    found: dict[int, str] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(directory).encode() in arg for arg in argv):
            found[int(entry.name)] = os.path.basename(argv[0].decode())
    return found


def accepts_connections(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_stop_leaves_no_process_behind_and_removes_the_temporary_directory() -> None:
    plane = envtest.ControlPlane().start()
    try:
        directory, port, etcd_port = plane.directory, plane.port, plane.etcd_port
        running = processes_under(directory)
    finally:
        plane.stop()

    assert sorted(running.values()) == sorted(CONTROL_PLANE_PROCESSES)
    assert not any(pathlib.Path(f"/proc/{pid}").exists() for pid in running)
    assert processes_under(directory) == {}
    assert not directory.exists()
    assert not accepts_connections(port)
    assert not accepts_connections(etcd_port)
    plane.stop()
    with pytest.raises(envtest.ControlPlaneError):
        _ = plane.directory


def test_starting_a_started_plane_again_is_refused_and_stop_leaves_nothing_of_it_behind() -> None:
    plane = envtest.ControlPlane(controllers=())
    plane.start()
    directory = plane.directory
    try:
        with pytest.raises(envtest.ControlPlaneError, match="already started"):
            plane.start()  # e.g. ``with ControlPlane().start() as plane:``, whose ``with`` starts it again
        assert plane.directory == directory
    finally:
        plane.stop()

    assert processes_under(directory) == {}
    assert not directory.exists()


OWNER_KILLED_OUTRIGHT = """
import sys, threading
from okt.testing import envtest
plane = envtest.ControlPlane(controllers=()).start()
print(plane.directory, flush=True)
threading.Event().wait()
"""


def test_the_directory_of_a_plane_whose_owner_was_killed_outright_goes_at_the_next_start() -> None:
    # ``kill -9`` (or SIGTERM, which Python does not turn into an exit) of a test run: no stop(), no atexit.
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_KILLED_OUTRIGHT],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert owner.stdout is not None
        left = pathlib.Path(owner.stdout.readline().strip())
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    waiting.wait_for(lambda: processes_under(left) == {}, timeout=30, message="the killed owner's plane to die")
    assert left.is_dir()

    plane = envtest.ControlPlane(controllers=())
    plane.start()
    try:
        assert plane.directory.is_dir()
    finally:
        plane.stop()

    assert not left.exists()


def test_a_detached_plane_is_stopped_by_its_state_with_every_process_and_its_directory() -> None:
    plane = envtest.ControlPlane(tie_to_parent=False).start()
    directory = plane.directory
    state = plane.detach()
    running = processes_under(directory)

    envtest.stop_detached(state)

    for pid in running:
        os.waitpid(pid, 0)  # our children: reaped here, as init reaps those of an `okt envtest start` that exited
    assert sorted(running.values()) == sorted(CONTROL_PLANE_PROCESSES)
    assert processes_under(directory) == {}
    assert not directory.exists()


def test_ports_taken_between_their_choice_and_their_binding_are_chosen_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another process's connection can be given a port the kernel called free a moment before: here the first two
    # choices (etcd's client port, then the API server's) are ports something already listens on.
    with contextlib.ExitStack() as held:
        taken = []
        for _ in range(2):
            listener = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            taken.append(listener.getsockname()[1])
        choices = iter(taken[:1])
        real = envtest.free_port
        monkeypatch.setattr(envtest, "free_port", lambda: next(choices, None) or real())
        plane = envtest.ControlPlane(controllers=())
        plane.port = taken[1]  # the API server's port, as a restart on the same port keeps it
        plane.start()
        kept_logs = pathlib.Path(tempfile.gettempdir()).glob(f"{plane.directory.name}-*.log")
        try:
            client = kube_client.Client.from_kubeconfig(plane.kubeconfig)
            assert client.server_version()
            client.close()
            assert plane.etcd_port != taken[0]
            assert plane.port != taken[1]
        finally:
            plane.stop()
    assert list(kept_logs) == []  # the copy of a failed attempt's log is kept only when the start fails


# -- the controllers of kube-controller-manager -------------------------------------------------------------------


def create_deployment(kube: kube_client.Client, namespace: str, replicas: int) -> dict[str, Any]:
    labels = {"app": "smoke"}
    return kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "smoke", "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "main", "image": "registry.invalid/smoke:1"}]},
                },
            },
        },
        DEPLOYMENT,
    )


def wait_for_owned(
    kube: kube_client.Client, kind: kinds.Kind, owner: dict[str, Any], count: int
) -> list[dict[str, Any]]:
    """Wait until exactly ``count`` objects of ``kind`` are controlled by ``owner``, and return them."""
    namespace = owner["metadata"]["namespace"]

    def owned() -> list[dict[str, Any]]:
        items = [item for item in kube.list(kind, namespace)[0] if is_controlled_by(item, owner)]
        return items if len(items) == count else []

    return waiting.wait_for(owned, timeout=30, message=f"{count} {kind.plural} of {owner['metadata']['name']}")


def mark_ready(kube: kube_client.Client, pod: dict[str, Any]) -> None:
    """Do what the missing kubelet would: report the Pod Running and Ready."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    kube.patch(POD, pod["metadata"]["name"], {"status": status}, pod["metadata"]["namespace"], subresource="status")


def available(kube: kube_client.Client, deployment: dict[str, Any]) -> bool:
    live = kube.get(DEPLOYMENT, deployment["metadata"]["name"], deployment["metadata"]["namespace"])
    conditions = {c["type"]: c["status"] for c in live["status"].get("conditions") or []}
    return conditions.get("Available") == "True" and live["status"].get("availableReplicas") == 2


def test_a_deployment_gets_a_replica_set_whose_pods_stay_pending(kube: kube_client.Client, namespace: str) -> None:
    deployment = create_deployment(kube, namespace, replicas=2)

    replica_sets = wait_for_owned(kube, REPLICA_SET, deployment, 1)
    pods = wait_for_owned(kube, POD, replica_sets[0], 2)

    assert replica_sets[0]["spec"]["replicas"] == 2
    assert replica_sets[0]["spec"]["template"]["metadata"]["labels"]["app"] == "smoke"
    assert all(pod["status"].get("phase") == "Pending" and not pod["spec"].get("nodeName") for pod in pods)
    assert not available(kube, deployment)


def test_a_deployment_becomes_available_once_its_pods_are_marked_ready(
    kube: kube_client.Client, namespace: str
) -> None:
    deployment = create_deployment(kube, namespace, replicas=2)
    pods = wait_for_owned(kube, POD, wait_for_owned(kube, REPLICA_SET, deployment, 1)[0], 2)

    for pod in pods:
        mark_ready(kube, pod)

    waiting.wait_for(lambda: available(kube, deployment), timeout=30, message="the Deployment Available")


def test_a_patched_deployment_status_is_overwritten_by_the_deployment_controller(
    kube: kube_client.Client, namespace: str
) -> None:
    deployment = create_deployment(kube, namespace, replicas=2)
    wait_for_owned(kube, POD, wait_for_owned(kube, REPLICA_SET, deployment, 1)[0], 2)
    faked = {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}

    patched = kube.patch(DEPLOYMENT, "smoke", {"status": faked}, namespace, subresource="status")

    assert patched["status"]["availableReplicas"] == 2
    waiting.wait_for(
        lambda: not kube.get(DEPLOYMENT, "smoke", namespace)["status"].get("availableReplicas"),
        timeout=30,
        message="the deployment controller to recompute the status from the Pods",
    )


def test_a_namespace_deletion_completes_with_its_content(kube: kube_client.Client, widgets: kinds.Kind) -> None:
    name = f"okt-smoke-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    kube.create(config_map("content", name))
    kube.create(widget("content", name), widgets)

    kube.delete(kinds.NAMESPACE, name)

    waiting.wait_for(
        lambda: kube.get_or_none(kinds.NAMESPACE, name) is None,
        timeout=45,
        message=f"the namespace controller to finish deleting {name}",
    )
    assert kube.list(kinds.CONFIG_MAP, name)[0] == []
    assert kube.list(widgets, name)[0] == []


def test_an_owned_config_map_is_garbage_collected_after_its_owner_is_deleted(
    kube: kube_client.Client, widgets: kinds.Kind, namespace: str
) -> None:
    # apply_crd restarted kube-controller-manager when it created the Widget CRD: its garbage collector maps Widgets
    # from its start (on its own, it would learn the kind at its next discovery resync, up to 30 s later, and back off
    # on the dependent meanwhile).
    kube.create(config_map("bystander", namespace))
    owner = kube.create(widget("owner", namespace), widgets)
    owned = kube.create(config_map("owned", namespace, ownerReferences=[controller_reference(owner)]))
    assert is_controlled_by(owned, owner)

    kube.delete(widgets, "owner", namespace)

    waiting.wait_for(
        lambda: kube.get_or_none(kinds.CONFIG_MAP, "owned", namespace) is None,
        timeout=30,
        message="the garbage collector to delete a ConfigMap whose owner Widget was deleted",
    )
    assert kube.get_or_none(kinds.CONFIG_MAP, "bystander", namespace) is not None
