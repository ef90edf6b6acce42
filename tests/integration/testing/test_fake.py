"""okt.testing.FakeClient against the API server: each test body runs twice, on the fake and on the real control
plane, and asserts the one answer both give.

A unit test of a reconciler on the fake passes or fails as the same reconcile on a cluster would only where the fake
answers as the API server does; these tests pin that for every rule the fake's documentation says it keeps. The
custom resource is a Widget (a schemaless CRD with a status subresource); a Rack's CRD declares a map list, whose
schema the fake is given.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import FakeClient, condition, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
WIDGET = kinds.Kind(f"{shared.GROUP}/v1", "Widget", "widgets")
CLUSTER_ROLE = kinds.BUILTIN[("rbac.authorization.k8s.io/v1", "ClusterRole")]


@dataclasses.dataclass
class Api:
    """One of the two API servers a test body runs on."""

    client: kube_client.Client
    namespace: str

    def widget(self, name: str = "w", **fields: Any) -> dict[str, Any]:
        body = {"apiVersion": WIDGET.api_version, "kind": WIDGET.kind, "metadata": {"name": name}, "spec": {"size": 1}}
        body["metadata"]["namespace"] = self.namespace  # type: ignore[index]
        return {**body, **fields}

    def config_map(self, name: str = "c", **fields: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.namespace},
            **fields,
        }


@pytest.fixture(params=["fake", "server"])
def api(request: pytest.FixtureRequest) -> Iterator[Api]:
    if request.param == "fake":
        fake = FakeClient(kinds=[WIDGET])
        yield Api(fake, "ns")
        fake.close()
    else:
        assert request.getfixturevalue("widget_kind") == WIDGET
        yield Api(request.getfixturevalue("kube"), request.getfixturevalue("namespace"))


# -- patches ---------------------------------------------------------------------------------------------------------


def test_a_merge_patch_deletes_a_null_key_and_replaces_a_list_whole(api: Api) -> None:
    api.client.create(api.widget(spec={"size": 1, "tags": ["a", "b"], "extra": {"x": "1", "y": "2"}}))

    patched = api.client.patch(WIDGET, "w", {"spec": {"tags": ["c"], "extra": {"x": None}}}, api.namespace)

    assert patched["spec"] == {"size": 1, "tags": ["c"], "extra": {"y": "2"}}


def test_a_json_patch_applies_test_add_remove_and_replace_in_order(api: Api) -> None:
    created = api.client.create(api.widget(spec={"size": 1, "tags": ["a", "b"]}))
    version = created["metadata"]["resourceVersion"]

    patched = api.client.patch(
        WIDGET,
        "w",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "add", "path": "/spec/tags/1", "value": "between"},
            {"op": "add", "path": "/spec/tags/-", "value": "last"},
            {"op": "remove", "path": "/spec/tags/0"},
            {"op": "replace", "path": "/spec/size", "value": 2},
            {"op": "add", "path": "/metadata/labels", "value": {"app/name": "w"}},
        ],
        api.namespace,
        patch_type="json",
    )

    assert (patched["spec"], patched["metadata"]["labels"]) == (
        {"size": 2, "tags": ["between", "b", "last"]},
        {"app/name": "w"},
    )


def test_a_json_patch_replace_of_a_missing_key_sets_it_and_of_a_missing_list_item_is_invalid(api: Api) -> None:
    api.client.create(api.widget(spec={"size": 1, "tags": ["a"]}))

    patched = api.client.patch(
        WIDGET, "w", [{"op": "replace", "path": "/spec/missing", "value": 1}], api.namespace, patch_type="json"
    )
    with pytest.raises(errors.Invalid):
        api.client.patch(
            WIDGET, "w", [{"op": "replace", "path": "/spec/tags/3", "value": "b"}], api.namespace, patch_type="json"
        )

    assert patched["spec"] == {"size": 1, "tags": ["a"], "missing": 1}


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "test", "path": "/spec/size", "value": 5},
        {"op": "remove", "path": "/spec/missing"},
        {"op": "add", "path": "/spec/missing/deeper", "value": 1},
        {"op": "add", "path": "/spec/tags/3", "value": "d"},
        {"op": "remove", "path": "/spec/tags/3"},
    ],
    ids=["failed-test", "remove-missing", "add-under-missing", "add-past-the-end", "remove-past-the-end"],
)
def test_a_json_patch_that_cannot_apply_is_invalid_and_changes_nothing(api: Api, operation: dict[str, Any]) -> None:
    created = api.client.create(api.widget(spec={"size": 1, "tags": ["a"]}))

    with pytest.raises(errors.Invalid):
        api.client.patch(WIDGET, "w", [operation], api.namespace, patch_type="json")

    assert api.client.get(WIDGET, "w", api.namespace) == created


# -- optimistic locking, existence -----------------------------------------------------------------------------------


def test_a_stale_resource_version_is_a_conflict_for_a_merge_patch_and_an_update(api: Api) -> None:
    created = api.client.create(api.widget())
    api.client.patch(WIDGET, "w", {"spec": {"size": 2}}, api.namespace)
    stale = created["metadata"]["resourceVersion"]

    with pytest.raises(errors.Conflict) as patched:
        api.client.patch(WIDGET, "w", {"metadata": {"resourceVersion": stale}, "spec": {"size": 3}}, api.namespace)
    with pytest.raises(errors.Conflict) as replaced:
        api.client.replace(WIDGET, {**created, "spec": {"size": 3}})

    assert not patched.value.already_exists and not replaced.value.already_exists
    assert api.client.get(WIDGET, "w", api.namespace)["spec"] == {"size": 2}


def test_a_json_patch_setting_a_stale_resource_version_is_a_conflict(api: Api) -> None:
    created = api.client.create(api.widget())
    api.client.patch(WIDGET, "w", {"spec": {"size": 2}}, api.namespace)
    stale = created["metadata"]["resourceVersion"]

    with pytest.raises(errors.Conflict):
        api.client.patch(
            WIDGET,
            "w",
            [
                {"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
                {"op": "replace", "path": "/spec/size", "value": 3},
            ],
            api.namespace,
            patch_type="json",
        )

    assert api.client.get(WIDGET, "w", api.namespace)["spec"] == {"size": 2}


def test_a_create_naming_a_resource_version_is_refused(api: Api) -> None:
    # A body copied from another object (a Secret copied into another namespace) must leave its version behind.
    body = api.config_map()
    body["metadata"]["resourceVersion"] = "123"

    with pytest.raises(errors.ServerError, match="resourceVersion should not be set on objects to be created"):
        api.client.create(body)

    assert api.client.get_or_none(kinds.CONFIG_MAP, "c", api.namespace) is None


def test_an_update_without_a_resource_version_is_invalid_for_a_custom_resource_and_not_for_a_config_map(
    api: Api,
) -> None:
    api.client.create(api.widget())
    api.client.create(api.config_map(data={"a": "1"}))

    with pytest.raises(errors.Invalid):
        api.client.replace(WIDGET, api.widget(spec={"size": 2}))
    replaced = api.client.replace(kinds.CONFIG_MAP, api.config_map(data={"a": "2"}))

    assert api.client.get(WIDGET, "w", api.namespace)["spec"] == {"size": 1}
    assert replaced["data"] == {"a": "2"}


def test_a_create_of_an_existing_name_is_a_conflict_that_says_already_exists(api: Api) -> None:
    api.client.create(api.widget())

    with pytest.raises(errors.Conflict) as refused:
        api.client.create(api.widget())

    assert refused.value.already_exists


def test_a_create_without_a_name_or_a_generate_name_is_invalid(api: Api) -> None:
    with pytest.raises(errors.Invalid) as refused:
        api.client.create(api.config_map(metadata={"namespace": api.namespace}))

    # A refused write, by its cause: no JSON patch test that failed (which has none), and so no race to retry.
    assert {(cause.reason, cause.field) for cause in refused.value.causes} == {("FieldValueRequired", "metadata.name")}

    assert api.client.list(kinds.CONFIG_MAP, api.namespace)[0] == []


def test_a_generated_name_keeps_at_most_58_characters_of_its_prefix(api: Api) -> None:
    created = api.client.create(api.config_map(metadata={"generateName": "g" * 70, "namespace": api.namespace}))

    name = created["metadata"]["name"]
    assert (len(name), name[:58]) == (63, "g" * 58)
    assert api.client.get(kinds.CONFIG_MAP, name, api.namespace) == created


def test_a_missing_object_is_not_found_and_its_delete_says_it_was_gone(api: Api) -> None:
    with pytest.raises(errors.NotFound):
        api.client.get(WIDGET, "missing", api.namespace)
    with pytest.raises(errors.NotFound):
        api.client.patch(WIDGET, "missing", {"spec": {"size": 2}}, api.namespace)
    with pytest.raises(errors.NotFound):
        api.client.replace(WIDGET, api.widget("missing", metadata={"name": "missing", "namespace": api.namespace}))

    assert api.client.get_or_none(WIDGET, "missing", api.namespace) is None
    assert api.client.delete(WIDGET, "missing", api.namespace) is False


@pytest.mark.parametrize("verb", ["get", "list", "create", "apply", "patch"])
def test_every_request_for_a_kind_the_server_does_not_serve_is_not_found(api: Api, verb: str) -> None:
    unserved = kinds.Kind("nowhere.example.com/v1", "Nothing", "nothings")
    body = {"apiVersion": unserved.api_version, "kind": "Nothing", "metadata": {"name": "n"}}
    body["metadata"]["namespace"] = api.namespace  # type: ignore[index]
    calls: dict[str, Callable[[], object]] = {
        "get": lambda: api.client.get(unserved, "n", api.namespace),
        "list": lambda: api.client.list(unserved, api.namespace),
        "create": lambda: api.client.create(body, unserved),
        "apply": lambda: api.client.apply(body, unserved, field_manager="okt"),
        "patch": lambda: api.client.patch(unserved, "n", {"spec": {}}, api.namespace),
    }

    with pytest.raises(errors.NotFound):
        calls[verb]()


# -- identity --------------------------------------------------------------------------------------------------------


def test_a_create_sets_the_identity_itself_whatever_the_body_says(api: Api) -> None:
    body = api.widget(status={"phase": "made up"})
    body["metadata"].update(
        {"uid": "made-up", "creationTimestamp": "2001-01-01T00:00:00Z", "generation": 7, "resourceVersion": ""}
    )

    created = api.client.create(body)

    meta = created["metadata"]
    assert "status" not in created
    assert meta["uid"] != "made-up" and meta["creationTimestamp"] != "2001-01-01T00:00:00Z"
    assert meta["generation"] == 1


def test_a_write_keeps_the_creation_timestamp(api: Api) -> None:
    created = api.client.create(api.widget())

    patched = api.client.patch(
        WIDGET, "w", {"metadata": {"creationTimestamp": "2001-01-01T00:00:00Z"}, "spec": {"size": 2}}, api.namespace
    )

    assert patched["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert patched["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_write_that_changes_the_uid_or_the_name_is_refused(api: Api) -> None:
    created = api.client.create(api.widget())
    other_uid = "0b0b0b0b-0000-0000-0000-000000000000"

    with pytest.raises(errors.Invalid):
        api.client.patch(WIDGET, "w", {"metadata": {"uid": other_uid}}, api.namespace)
    with pytest.raises(errors.BadRequest):
        api.client.patch(WIDGET, "w", {"metadata": {"name": "renamed"}}, api.namespace)
    with pytest.raises(errors.Conflict):
        api.client.replace(WIDGET, {**created, "metadata": {**created["metadata"], "uid": other_uid}})

    assert api.client.get(WIDGET, "w", api.namespace) == created
    assert api.client.get_or_none(WIDGET, "renamed", api.namespace) is None


def test_empty_labels_annotations_finalizers_and_owner_references_are_left_out(api: Api) -> None:
    metadata = {"name": "w", "namespace": api.namespace, "labels": {}, "annotations": {}, "ownerReferences": []}
    created = api.client.create(api.widget(metadata={**metadata, "finalizers": ["a/b"]}))
    unfinalized = api.client.patch(
        WIDGET, "w", [{"op": "remove", "path": "/metadata/finalizers/0"}], api.namespace, patch_type="json"
    )
    labelled = api.client.patch(WIDGET, "w", {"metadata": {"labels": {"a": "b"}}}, api.namespace)
    unlabelled = api.client.patch(WIDGET, "w", {"metadata": {"labels": {"a": None}}}, api.namespace)

    for answer in (created, unfinalized, unlabelled):
        assert not {"labels", "annotations", "ownerReferences"} & answer["metadata"].keys()
    assert "finalizers" not in unfinalized["metadata"]
    assert labelled["metadata"]["labels"] == {"a": "b"}


CRON_JOB_SPEC = {
    "schedule": "* * * * *",
    "jobTemplate": {
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    },
}
NAMED: dict[str, tuple[kinds.Kind, dict[str, Any]]] = {
    "ConfigMap": (kinds.CONFIG_MAP, {}),
    "Widget": (WIDGET, {"spec": {"size": 1}}),
    "Service": (kinds.BUILTIN[("v1", "Service")], {"spec": {"ports": [{"port": 80, "protocol": "TCP"}]}}),
    "Role": (kinds.BUILTIN[("rbac.authorization.k8s.io/v1", "Role")], {"rules": []}),
    "CronJob": (kinds.BUILTIN[("batch/v1beta1", "CronJob")], {"spec": CRON_JOB_SPEC}),
}


@pytest.mark.parametrize("verb", ["create", "apply"])
@pytest.mark.parametrize(
    ("kind", "name", "allowed"),
    [
        ("ConfigMap", "Upper", False),
        ("ConfigMap", "a_b", False),
        ("ConfigMap", "-a", False),
        ("ConfigMap", "a" * 254, False),
        ("ConfigMap", "a" * 253, True),
        ("ConfigMap", "1.a-b", True),
        ("Widget", "Upper", False),
        ("Widget", "w.1", True),
        ("Service", "1a", False),
        ("Service", "a.b", False),
        ("Service", "a" * 64, False),
        ("Service", "a" * 63, True),
        ("Role", "Upper:Case_b", True),
        ("CronJob", "a" * 53, False),
        ("CronJob", "a" * 52, True),
    ],
    ids=lambda value: f"{value[:8]}..{len(value)}" if isinstance(value, str) and len(value) > 12 else str(value),
)
def test_a_name_its_kind_does_not_allow_is_invalid(api: Api, verb: str, kind: str, name: str, allowed: bool) -> None:
    served, fields = NAMED[kind]
    body = {"apiVersion": served.api_version, "kind": served.kind, "metadata": {"name": name}, **fields}
    body["metadata"]["namespace"] = api.namespace

    def write() -> dict[str, Any]:
        return api.client.create(body) if verb == "create" else api.client.apply(body, field_manager="okt")

    if allowed:
        assert write()["metadata"]["name"] == name
    else:
        with pytest.raises(errors.Invalid):
            write()
        assert api.client.get_or_none(served, name, api.namespace) is None


def write_metadata(api: Api, verb: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap c written with ``metadata`` by ``verb`` (a patch or an update of a c created first)."""
    body = api.config_map(metadata={"name": "c", "namespace": api.namespace, **metadata})
    if verb == "create":
        return api.client.create(body)
    if verb == "apply":
        return api.client.apply(body, field_manager="okt")
    live = api.client.create(api.config_map())
    if verb == "merge-patch":
        return api.client.patch(kinds.CONFIG_MAP, "c", {"metadata": metadata}, api.namespace)
    return api.client.replace(kinds.CONFIG_MAP, {**live, "metadata": {**live["metadata"], **metadata}})


@pytest.mark.parametrize("verb", ["create", "apply", "merge-patch", "update"])
@pytest.mark.parametrize(
    "metadata",
    [
        {"labels": {"a/b/c": "x"}},
        {"labels": {"/n": "x"}},
        {"labels": {"Upper.Prefix/n": "x"}},
        {"labels": {"x" * 64: "v"}},
        {"labels": {"a": "x" * 64}},
        {"labels": {"a": "-x"}},
        {"labels": {"a": "x y"}},
        {"annotations": {"a/b/c": "x"}},
        {"annotations": {"x" * 64: "v"}},
        {"annotations": {"a": "x" * 262144}},
    ],
    ids=[
        "label-key-two-slashes",
        "label-key-empty-prefix",
        "label-key-uppercase-prefix",
        "label-key-too-long",
        "label-value-too-long",
        "label-value-dash-first",
        "label-value-space",
        "annotation-key-two-slashes",
        "annotation-key-too-long",
        "annotations-too-big",
    ],
)
def test_labels_and_annotations_the_api_server_refuses_are_invalid(
    api: Api, verb: str, metadata: dict[str, Any]
) -> None:
    with pytest.raises(errors.Invalid):
        write_metadata(api, verb, metadata)

    found = api.client.get_or_none(kinds.CONFIG_MAP, "c", api.namespace)
    assert found is None or not {"labels", "annotations"} & found["metadata"].keys()


@pytest.mark.parametrize("verb", ["create", "apply", "merge-patch", "update"])
def test_labels_and_annotations_the_api_server_allows_are_kept(api: Api, verb: str) -> None:
    labels = {"empty": "", "app.kubernetes.io/name": "x" * 63, "A_b.c": "Value_1.x", "y" * 63: "v"}
    annotations = {"Upper.Case/Key": "any value, at all !", "a": "x" * 262000}

    written = write_metadata(api, verb, {"labels": labels, "annotations": annotations})

    assert (written["metadata"]["labels"], written["metadata"]["annotations"]) == (labels, annotations)


QUALIFIED = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
DNS_1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("kind", "metadata", "said"),
    [
        ("ConfigMap", {"labels": {"a": "x y"}}, [("metadata.labels", f'"x y": {LABEL_VALUE}')]),
        (
            "ConfigMap",
            {"labels": {"a": "-" + "x" * 63}},
            [
                ("metadata.labels", f'"-{"x" * 63}": {why}')
                for why in ("must be no more than 63 characters", LABEL_VALUE)
            ],
        ),
        ("ConfigMap", {"labels": {"-a": "x"}}, [("metadata.labels", f'"-a": name part {QUALIFIED}')]),
        (
            "ConfigMap",
            {"labels": {"": "x"}},
            [("metadata.labels", f'"": name part {why}') for why in ("must be non-empty", QUALIFIED)],
        ),
        (
            "ConfigMap",
            {"labels": {"a/b/c": "x"}},
            [
                (
                    "metadata.labels",
                    f"\"a/b/c\": a qualified name {QUALIFIED} with an optional DNS subdomain prefix and '/' (e.g. "
                    "'example.com/MyName')",
                )
            ],
        ),
        ("ConfigMap", {"labels": {"Up/a": "x"}}, [("metadata.labels", f'"Up/a": prefix part {SUBDOMAIN}')]),
        (
            "ConfigMap",
            {"annotations": {"Up.Case/-k": "x"}},
            [("metadata.annotations", f'"Up.Case/-k": name part {QUALIFIED}')],
        ),
        ("ConfigMap", {"name": "Upper"}, [("metadata.name", f'"Upper": {SUBDOMAIN}')]),
        ("Service", {"name": "1a"}, [("metadata.name", f'"1a": {DNS_1035}')]),
        ("Namespace", {"name": "a.b"}, [("metadata.name", f'"a.b": {DNS_LABEL}')]),
        ("Role", {"name": "a/b"}, [("metadata.name", "\"a/b\": may not contain '/'")]),
        (
            "CronJob",
            {"name": "A" * 53},
            [("metadata.name", f'"{"A" * 53}": {why}') for why in (SUBDOMAIN, "must be no more than 52 characters")],
        ),
    ],
    ids=[
        "label-value",
        "label-value-long-and-dash-first",
        "label-key-name",
        "label-key-empty",
        "label-key-two-slashes",
        "label-key-prefix",
        "annotation-key",
        "name-subdomain",
        "name-service",
        "name-namespace",
        "name-role",
        "name-cron-job",
    ],
)
def test_a_refused_name_label_or_annotation_is_worded_as_the_api_server_words_it(
    api: Api, kind: str, metadata: dict[str, Any], said: list[tuple[str, str]]
) -> None:
    served, fields = NAMED.get(kind) or (kinds.NAMESPACE, {})
    body = {"apiVersion": served.api_version, "kind": served.kind, "metadata": {"name": "c", **metadata}, **fields}
    if served.namespaced:
        body["metadata"]["namespace"] = api.namespace
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(body)

    group = served.api_version.rpartition("/")[0]
    listed = ", ".join(f"{field}: Invalid value: {why}" for field, why in said)
    opening = f'{served.kind}{"." + group if group else ""} "{body["metadata"]["name"]}" is invalid'
    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueInvalid", field, f"Invalid value: {why}") for field, why in said
    ]
    assert raised.value.api_message == f"{opening}: {listed if len(said) == 1 else f'[{listed}]'}"


def refuse(api: Api, refusal: str) -> None:
    """Send the write ``refusal`` names, which the API server refuses with a 422."""
    if refusal == "name":
        api.client.create(api.config_map("Upper", metadata={"name": "Upper", "namespace": api.namespace}))
    elif refusal in ("label", "annotation"):
        field = {"label": {"labels": {"a": "x y"}}, "annotation": {"annotations": {"a/b/c": "x"}}}[refusal]
        api.client.apply(api.config_map(metadata={"name": "c", "namespace": api.namespace, **field}), field_manager="o")
    elif refusal == "uid":
        api.client.create(api.widget())
        api.client.patch(WIDGET, "w", {"metadata": {"uid": "0b0b0b0b-0000-0000-0000-000000000000"}}, api.namespace)
    elif refusal == "finalizer":
        api.client.create(api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]}))
        api.client.delete(WIDGET, "w", api.namespace)
        api.client.patch(WIDGET, "w", {"metadata": {"finalizers": ["a/b", "c/d"]}}, api.namespace)
    else:
        api.client.create(api.widget())
        api.client.replace(WIDGET, api.widget(spec={"size": 2}))


@pytest.mark.parametrize(
    ("refusal", "cause"),
    [
        ("name", ("FieldValueInvalid", "metadata.name")),
        ("label", ("FieldValueInvalid", "metadata.labels")),
        ("annotation", ("FieldValueInvalid", "metadata.annotations")),
        ("uid", ("FieldValueInvalid", "metadata.uid")),
        ("finalizer", ("FieldValueForbidden", "metadata.finalizers")),
        ("resource-version", ("FieldValueInvalid", "metadata.resourceVersion")),
    ],
)
def test_a_refused_write_names_the_refused_field_in_its_causes(api: Api, refusal: str, cause: tuple[str, str]) -> None:
    # okt tells a refused child (reported once, as the field to fix) from a lost race (a JSON patch's failed test, a
    # 422 without causes, retried soon) by these causes: a reconcile unit-tested on the fake must see them too.
    with pytest.raises(errors.Invalid) as refused:
        refuse(api, refusal)

    assert {(found.reason, found.field) for found in refused.value.causes} == {cause}


@pytest.mark.parametrize(
    ("kind", "metadata", "refused"),
    [
        ("ConfigMap", {"finalizers": ["example.com/clean up"]}, "metadata.finalizers"),
        ("ConfigMap", {"finalizers": ["a/b/c"]}, "metadata.finalizers"),
        ("ConfigMap", {"finalizers": ["plain"]}, "metadata.finalizers[0]"),
        ("Widget", {"finalizers": ["plain"]}, None),
        ("ConfigMap", {"ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": ""}]}, "uid"),
        ("ConfigMap", {"ownerReferences": [{"apiVersion": "v1", "kind": "", "name": "x", "uid": "u"}]}, "kind"),
        (
            "ConfigMap",
            {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "X", "name": n, "uid": n, "controller": True} for n in "ab"
                ]
            },
            "metadata.ownerReferences",
        ),
        (
            "ConfigMap",
            {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "X", "name": n, "uid": n, "controller": n == "a"} for n in "ab"
                ]
            },
            None,
        ),
    ],
    ids=[
        "finalizer-space",
        "finalizer-two-slashes",
        "finalizer-unqualified-built-in",
        "finalizer-unqualified-custom",
        "owner-without-uid",
        "owner-without-kind",
        "two-controllers",
        "one-controller",
    ],
)
def test_finalizers_and_owner_references_the_api_server_refuses_are_invalid(
    api: Api, kind: str, metadata: dict[str, Any], refused: str | None
) -> None:
    meta = {"name": "x", "namespace": api.namespace, **metadata}
    body = api.widget(metadata=meta) if kind == "Widget" else api.config_map(metadata=meta)
    served = WIDGET if kind == "Widget" else kinds.CONFIG_MAP

    if refused is None:
        api.client.create(body)
        api.client.patch(served, "x", {"metadata": {"finalizers": None}}, api.namespace)
    else:
        with pytest.raises(errors.Invalid) as invalid:
            api.client.create(body)
        fields = {cause.field for cause in invalid.value.causes}
        assert fields == {refused if "." in refused else f"metadata.ownerReferences.{refused}"}
        assert api.client.get_or_none(served, "x", api.namespace) is None


# -- status subresource, generation ----------------------------------------------------------------------------------


def test_a_write_to_the_object_leaves_the_status_and_one_to_the_status_leaves_the_rest(api: Api) -> None:
    api.client.create(api.widget())
    api.client.patch(WIDGET, "w", {"status": {"phase": "Ready"}}, api.namespace, subresource="status")

    main = api.client.patch(WIDGET, "w", {"spec": {"size": 2}, "status": {"phase": "ignored"}}, api.namespace)
    status = api.client.patch(
        WIDGET,
        "w",
        {"spec": {"size": 3}, "status": {"phase": "Running"}},
        api.namespace,
        subresource="status",
    )

    assert (main["spec"], main["status"], main["metadata"]["generation"]) == ({"size": 2}, {"phase": "Ready"}, 2)
    assert (status["spec"], status["status"], status["metadata"]["generation"]) == (
        {"size": 2},
        {"phase": "Running"},
        2,
    )


def test_the_generation_follows_the_spec_and_not_metadata_or_status(api: Api) -> None:
    api.client.create(api.widget())

    labelled = api.client.patch(WIDGET, "w", {"metadata": {"labels": {"a": "b"}}}, api.namespace)
    with_status = api.client.patch(WIDGET, "w", {"status": {"phase": "x"}}, api.namespace, subresource="status")
    changed = api.client.patch(WIDGET, "w", {"spec": {"size": 2}}, api.namespace)

    generations = [o["metadata"]["generation"] for o in (labelled, with_status, changed)]
    assert generations == [1, 1, 2]


@pytest.mark.parametrize(
    ("kind", "body", "change"),
    [
        (kinds.CONFIG_MAP, {"data": {"a": "1"}}, {"data": {"a": "2"}}),
        (kinds.BUILTIN[("v1", "Service")], {"spec": {"ports": [{"port": 80}]}}, {"spec": {"ports": [{"port": 81}]}}),
        (kinds.BUILTIN[("rbac.authorization.k8s.io/v1", "Role")], {"rules": []}, {"rules": None}),
        (
            kinds.BUILTIN[("v1", "PersistentVolumeClaim")],
            {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
            {"metadata": {"labels": {"a": "b"}}},
        ),
    ],
    ids=["config-map", "service", "role", "persistent-volume-claim"],
)
def test_a_kind_without_a_generation_gets_none(
    api: Api, kind: kinds.Kind, body: dict[str, Any], change: dict[str, Any]
) -> None:
    meta = {"name": "x", "namespace": api.namespace}

    created = api.client.create({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, **body})
    changed = api.client.patch(kind, "x", change, api.namespace)

    assert "generation" not in created["metadata"] and "generation" not in changed["metadata"]


def test_a_deployment_s_generation_follows_its_annotations_too(api: Api) -> None:
    deployment = kinds.BUILTIN[("apps/v1", "Deployment")]
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
    meta = {"name": "d", "namespace": api.namespace}
    api.client.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})

    annotated = api.client.patch(deployment, "d", {"metadata": {"annotations": {"a": "1"}}}, api.namespace)
    labelled = api.client.patch(deployment, "d", {"metadata": {"labels": {"a": "1"}}}, api.namespace)

    assert [annotated["metadata"]["generation"], labelled["metadata"]["generation"]] == [2, 2]


def test_a_write_that_changes_nothing_keeps_the_resource_version(api: Api) -> None:
    created = api.client.create(api.widget())

    again = api.client.patch(WIDGET, "w", {"spec": {"size": 1}}, api.namespace)

    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


# -- deletion --------------------------------------------------------------------------------------------------------


def test_a_delete_of_an_object_with_finalizers_marks_it_and_the_last_finalizer_removed_deletes_it(api: Api) -> None:
    created = api.client.create(api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]}))

    assert api.client.delete(WIDGET, "w", api.namespace) is True
    marked = api.client.get(WIDGET, "w", api.namespace)
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["finalizers"] == ["a/b"]
    assert marked["metadata"]["generation"] == created["metadata"]["generation"] + 1
    assert api.client.delete(WIDGET, "w", api.namespace) is True
    assert api.client.get(WIDGET, "w", api.namespace)["metadata"] == marked["metadata"]

    answer = api.client.patch(WIDGET, "w", {"metadata": {"finalizers": None}}, api.namespace)

    assert api.client.get_or_none(WIDGET, "w", api.namespace) is None
    # The answer is the object as the patch left it, deleted then and never stored: no version written for it.
    assert "finalizers" not in answer["metadata"]
    assert answer["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]


def test_a_write_cannot_take_back_the_deletion_of_an_object(api: Api) -> None:
    api.client.create(api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]}))
    api.client.delete(WIDGET, "w", api.namespace)
    marked = api.client.get(WIDGET, "w", api.namespace)
    cleared = {
        k: v for k, v in marked["metadata"].items() if k not in ("deletionTimestamp", "deletionGracePeriodSeconds")
    }

    patched = api.client.patch(
        WIDGET,
        "w",
        {"metadata": {"deletionTimestamp": None, "deletionGracePeriodSeconds": None}, "spec": {"size": 2}},
        api.namespace,
    )
    replaced = api.client.replace(
        WIDGET,
        {
            **patched,
            "metadata": {**cleared, "resourceVersion": patched["metadata"]["resourceVersion"]},
            "spec": {"size": 3},
        },
    )

    for answer in (patched, replaced):
        assert [answer["metadata"].get(f) for f in ("deletionTimestamp", "deletionGracePeriodSeconds")] == [
            marked["metadata"]["deletionTimestamp"],
            0,
        ]


@pytest.mark.parametrize(
    ("patch", "patch_type"),
    [
        ([{"op": "add", "path": "/metadata/finalizers/-", "value": "c/d"}], "json"),
        ({"metadata": {"finalizers": ["a/b", "c/d"]}}, "merge"),
    ],
    ids=["json", "merge"],
)
def test_no_finalizer_can_be_added_to_an_object_being_deleted(api: Api, patch: Any, patch_type: str) -> None:
    api.client.create(api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]}))
    api.client.delete(WIDGET, "w", api.namespace)
    marked = api.client.get(WIDGET, "w", api.namespace)

    with pytest.raises(errors.Invalid):
        api.client.patch(WIDGET, "w", patch, api.namespace, patch_type=patch_type)

    assert api.client.get(WIDGET, "w", api.namespace) == marked


def test_a_dependent_with_finalizers_outlives_its_deleted_owner_until_they_are_removed(api: Api) -> None:
    owner = api.client.create(api.widget("owner"))
    reference = {"apiVersion": WIDGET.api_version, "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    meta = {"name": "c", "namespace": api.namespace, "ownerReferences": [reference], "finalizers": ["a/b"]}
    api.client.create(api.config_map(metadata=meta))

    api.client.delete(WIDGET, "owner", api.namespace)

    waiting.wait_for(
        lambda: api.client.get(kinds.CONFIG_MAP, "c", api.namespace)["metadata"].get("deletionTimestamp"),
        message="the dependent marked for deletion",
    )
    assert api.client.get(kinds.CONFIG_MAP, "c", api.namespace)["metadata"]["finalizers"] == ["a/b"]
    assert api.client.get_or_none(WIDGET, "owner", api.namespace) is None
    api.client.patch(kinds.CONFIG_MAP, "c", {"metadata": {"finalizers": None}}, api.namespace)
    assert api.client.get_or_none(kinds.CONFIG_MAP, "c", api.namespace) is None


@pytest.mark.parametrize("survivor", ["orphaned", "another owner"])
def test_a_dependent_that_stays_loses_its_reference_to_the_deleted_owner(api: Api, survivor: str) -> None:
    references = []
    for name in ("gone", "kept"):
        owner = api.client.create(api.widget(name))
        references.append(
            {"apiVersion": WIDGET.api_version, "kind": "Widget", "name": name, "uid": owner["metadata"]["uid"]}
        )
    if survivor == "orphaned":
        references.pop()
    api.client.create(api.config_map(metadata={"name": "c", "namespace": api.namespace, "ownerReferences": references}))

    api.client.delete(WIDGET, "gone", api.namespace, propagation="Orphan" if survivor == "orphaned" else "Background")

    left = references[1:] or None
    waiting.wait_for(
        lambda: api.client.get(kinds.CONFIG_MAP, "c", api.namespace)["metadata"].get("ownerReferences") == left,
        message="the dependent without its reference to the deleted owner",
    )
    # An orphaning delete lets the owner go once its dependents are orphaned.
    waiting.wait_for(lambda: api.client.get_or_none(WIDGET, "gone", api.namespace) is None, message="the owner gone")


def test_an_orphaning_delete_of_an_object_with_finalizers_leaves_its_dependents_when_it_goes(api: Api) -> None:
    owner = api.client.create(api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]}))
    reference = {"apiVersion": WIDGET.api_version, "kind": "Widget", "name": "w", "uid": owner["metadata"]["uid"]}
    api.client.create(
        api.config_map(metadata={"name": "c", "namespace": api.namespace, "ownerReferences": [reference]})
    )

    api.client.delete(WIDGET, "w", api.namespace, propagation="Orphan")
    waiting.wait_for(
        lambda: "ownerReferences" not in api.client.get(kinds.CONFIG_MAP, "c", api.namespace)["metadata"],
        # The garbage collector orphans a kind it monitors: one whose CRD is new here waits for its next discovery
        # (every 30 s), and a busy controller manager takes longer still.
        timeout=120,
        message="the dependent orphaned",
    )
    api.client.patch(WIDGET, "w", {"metadata": {"finalizers": None}}, api.namespace)
    waiting.wait_for(lambda: api.client.get_or_none(WIDGET, "w", api.namespace) is None, message="the owner gone")

    assert api.client.get_or_none(kinds.CONFIG_MAP, "c", api.namespace) is not None


def test_a_delete_with_a_wrong_uid_precondition_is_a_conflict(api: Api) -> None:
    api.client.create(api.widget())

    with pytest.raises(errors.Conflict):
        api.client.delete(WIDGET, "w", api.namespace, uid="0b0b0b0b-0000-0000-0000-000000000000")

    assert api.client.get_or_none(WIDGET, "w", api.namespace) is not None


def test_a_delete_with_a_stale_resource_version_precondition_is_a_conflict(api: Api) -> None:
    created = api.client.create(api.widget())
    api.client.patch(WIDGET, "w", {"metadata": {"labels": {"touched": "yes"}}}, api.namespace)

    with pytest.raises(errors.Conflict):
        api.client.delete(WIDGET, "w", api.namespace, resource_version=created["metadata"]["resourceVersion"])

    assert api.client.get_or_none(WIDGET, "w", api.namespace) is not None


# -- lists and scopes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("app=x", ["a", "c"]),
        ("app!=x", ["b", "d"]),
        ("app in (x,y),tier", ["c"]),
        ("!tier", ["a", "b", "d"]),
        ("app notin (x)", ["b", "d"]),
    ],
)
def test_a_list_keeps_what_its_label_selector_matches(api: Api, selector: str, names: list[str]) -> None:
    for name, labels in (("a", {"app": "x"}), ("b", {"app": "y"}), ("c", {"app": "x", "tier": "1"}), ("d", {})):
        api.client.create(api.config_map(name, metadata={"name": name, "namespace": api.namespace, "labels": labels}))

    items, _ = api.client.list(kinds.CONFIG_MAP, api.namespace, label_selector=selector)

    assert sorted(item["metadata"]["name"] for item in items) == names


def test_a_list_of_every_namespace_comes_in_the_api_server_s_order(api: Api) -> None:
    namespaces = [api.namespace, f"{api.namespace}-b", f"{api.namespace}0"]
    on_server = not isinstance(api.client, FakeClient)
    try:
        for namespace in namespaces:
            if on_server and namespace != api.namespace:
                api.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            api.client.create(api.config_map("same", metadata={"name": "same", "namespace": namespace}))

        items, _ = api.client.list(kinds.CONFIG_MAP)

        listed = [item["metadata"]["namespace"] for item in items if item["metadata"]["namespace"] in namespaces]
        assert listed == [f"{api.namespace}-b", api.namespace, f"{api.namespace}0"]
    finally:
        if on_server:
            for namespace in namespaces[1:]:
                api.client.delete(kinds.NAMESPACE, namespace)


@pytest.mark.parametrize("verb", ["create", "apply"])
def test_a_cluster_scoped_object_has_no_namespace_whatever_the_body_says(api: Api, verb: str) -> None:
    name = f"okt-fake-{secrets.token_hex(4)}"
    body = {"apiVersion": CLUSTER_ROLE.api_version, "kind": "ClusterRole", "metadata": {"name": name}, "rules": []}
    body["metadata"]["namespace"] = api.namespace  # type: ignore[index]
    try:
        created = api.client.create(body) if verb == "create" else api.client.apply(body, field_manager="okt")

        assert "namespace" not in created["metadata"]
        assert "namespace" not in api.client.get(CLUSTER_ROLE, name)["metadata"]
    finally:
        api.client.delete(CLUSTER_ROLE, name)


# -- server-side apply -----------------------------------------------------------------------------------------------


def test_an_apply_creates_a_missing_object_without_its_status(api: Api) -> None:
    created = api.client.apply(api.widget(status={"phase": "made up"}), field_manager="okt")

    assert (created["spec"], created.get("status"), created["metadata"]["generation"]) == ({"size": 1}, None, 1)


def test_an_apply_removes_what_its_manager_alone_applied_and_no_longer_applies(api: Api) -> None:
    api.client.apply(api.config_map(data={"mine": "1", "shared": "2", "kept": "3"}), field_manager="okt")
    api.client.apply(api.config_map(data={"shared": "2"}), field_manager="other")

    applied = api.client.apply(api.config_map(data={"kept": "3"}), field_manager="okt")

    assert applied["data"] == {"shared": "2", "kept": "3"}


def test_an_apply_leaves_what_another_writer_has_taken_over_or_also_wrote(api: Api) -> None:
    api.client.create(api.widget(spec={"size": 1, "created": "x"}))
    api.client.apply(api.widget(spec={"size": 1, "created": "x", "taken": "2", "tags": ["a"]}), field_manager="okt")
    api.client.patch(WIDGET, "w", {"spec": {"taken": "changed", "tags": ["b"]}}, api.namespace, field_manager="editor")
    api.client.apply(api.widget(spec={"forced": "1"}), field_manager="other")
    api.client.apply(api.widget(spec={"size": 1, "forced": "2"}), field_manager="okt")

    applied = api.client.apply(api.widget(spec={"size": 1}), field_manager="other")

    assert applied["spec"] == {"size": 1, "created": "x", "taken": "changed", "tags": ["b"], "forced": "2"}


def test_an_apply_that_drops_a_whole_map_removes_only_the_keys_its_manager_alone_set(api: Api) -> None:
    labelled = {"name": "c", "namespace": api.namespace, "labels": {"app": "c"}}
    api.client.apply(api.config_map(metadata=labelled, data={"mine": "1"}), field_manager="okt")
    api.client.patch(kinds.CONFIG_MAP, "c", {"data": {"theirs": "2"}}, api.namespace, field_manager="editor")

    applied = api.client.apply(api.config_map(), field_manager="okt")

    assert (applied["metadata"].get("labels"), applied["data"]) == (None, {"theirs": "2"})


@pytest.mark.parametrize("subresource", [None, "status"], ids=["object", "status"])
def test_an_apply_stores_a_null_as_a_value_where_a_merge_patch_deletes_the_key(
    api: Api, subresource: str | None
) -> None:
    part = "status" if subresource else "spec"
    api.client.create(api.widget())
    api.client.patch(WIDGET, "w", {part: {"size": 1, "x": "1", "y": "2"}}, api.namespace, subresource=subresource)

    without_x: dict[str, Any] = {part: {"size": 1, "x": None}}
    applied = api.client.apply(api.widget(**without_x), field_manager="okt", subresource=subresource)
    patched = api.client.patch(WIDGET, "w", {part: {"y": None}}, api.namespace, subresource=subresource)

    assert applied[part] == {"size": 1, "x": None, "y": "2"}
    assert patched[part] == {"size": 1, "x": None}


def test_an_apply_that_creates_sets_the_identity_itself_and_refuses_to_create_a_named_uid(api: Api) -> None:
    body = api.widget(metadata={"name": "w", "namespace": api.namespace, "finalizers": ["a/b"]})
    body["metadata"].update(
        {"creationTimestamp": "2001-01-01T00:00:00Z", "generation": 7, "deletionTimestamp": "2001-01-01T00:00:00Z"}
    )
    named = api.widget("named")
    named["metadata"]["uid"] = "0b0b0b0b-0000-0000-0000-000000000000"

    created = api.client.apply(body, field_manager="okt")
    with pytest.raises(errors.Conflict):
        api.client.apply(named, field_manager="okt")

    meta = created["metadata"]
    assert (meta["generation"], meta.get("deletionTimestamp")) == (1, None)
    assert meta["creationTimestamp"] != "2001-01-01T00:00:00Z"
    assert api.client.get_or_none(WIDGET, "named", api.namespace) is None


def test_an_apply_that_changes_the_uid_is_invalid(api: Api) -> None:
    created = api.client.create(api.widget())
    body = api.widget(spec={"size": 2})
    body["metadata"]["uid"] = "0b0b0b0b-0000-0000-0000-000000000000"

    with pytest.raises(errors.Invalid):
        api.client.apply(body, field_manager="okt")

    assert api.client.get(WIDGET, "w", api.namespace) == created


def test_an_apply_naming_a_stale_resource_version_is_a_conflict(api: Api) -> None:
    created = api.client.apply(api.widget(), field_manager="okt")
    api.client.patch(WIDGET, "w", {"spec": {"size": 2}}, api.namespace)
    stale = api.widget(metadata={"name": "w", "namespace": api.namespace}, spec={"size": 3})
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]

    with pytest.raises(errors.Conflict):
        api.client.apply(stale, field_manager="okt")

    assert api.client.get(WIDGET, "w", api.namespace)["spec"] == {"size": 2}


def test_an_apply_to_the_status_changes_only_the_status(api: Api) -> None:
    api.client.create(api.widget())

    applied = api.client.apply(
        api.widget(spec={"size": 5}, status={"phase": "Ready"}), field_manager="okt", subresource="status"
    )

    assert (applied["spec"], applied["status"], applied["metadata"]["generation"]) == (
        {"size": 1},
        {"phase": "Ready"},
        1,
    )


# -- lists an apply merges by key -----------------------------------------------------------------------------------

SERVICE = kinds.BUILTIN[("v1", "Service")]
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
STATEFUL_SET = kinds.BUILTIN[("apps/v1", "StatefulSet")]


def service(api: Api, *ports: tuple[str, int]) -> dict[str, Any]:
    spec = {"ports": [{"name": name, "port": port, "protocol": "TCP"} for name, port in ports]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": api.namespace}, "spec": spec}


def deployment(api: Api, *containers: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": list(containers)}}
    spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
    meta = {"name": "d", "namespace": api.namespace}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def app(**env: str) -> dict[str, Any]:
    return {"name": "app", "image": "busybox", "env": [{"name": name, "value": value} for name, value in env.items()]}


def ports_of(obj: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(port["name"], port["port"], port["protocol"]) for port in obj["spec"]["ports"]]


def containers_of(obj: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    containers = obj["spec"]["template"]["spec"]["containers"]
    return [(c["name"], [(var["name"], var["value"]) for var in c.get("env") or ()]) for c in containers]


def test_an_apply_keeps_another_manager_s_port_and_removes_the_one_its_manager_no_longer_applies(api: Api) -> None:
    api.client.apply(service(api, ("http", 80), ("https", 443)), field_manager="okt")
    api.client.apply(service(api, ("metrics", 9100)), field_manager="exporter")

    applied = api.client.apply(service(api, ("http", 80)), field_manager="okt")

    assert ports_of(applied) == [("http", 80, "TCP"), ("metrics", 9100, "TCP")]


def test_an_apply_edits_a_port_by_key_in_the_place_it_holds(api: Api) -> None:
    api.client.apply(service(api, ("http", 80)), field_manager="okt")
    api.client.apply(service(api, ("metrics", 9100)), field_manager="exporter")

    applied = api.client.apply(service(api, ("web", 80), ("https", 443)), field_manager="okt")

    assert ports_of(applied) == [("web", 80, "TCP"), ("metrics", 9100, "TCP"), ("https", 443, "TCP")]


@pytest.mark.parametrize(
    ("first", "then", "expected"),
    [
        ([80, 443], [443, 80], [80, 443, 9100]),
        ([80], [443, 80], [80, 9100, 443]),
        ([80, 443], [443], [443, 9100]),
    ],
    ids=["swapped", "new-before", "first-dropped"],
)
def test_an_apply_orders_a_keyed_list_as_the_api_server_does(
    api: Api, first: list[int], then: list[int], expected: list[int]
) -> None:
    # The order of the API server okt is tested on: the stored items where they are, new ones appended. Newer servers
    # order the applied items as the applied list does.
    api.client.apply(service(api, *((f"p{port}", port) for port in first)), field_manager="okt")
    api.client.apply(service(api, ("metrics", 9100)), field_manager="exporter")

    applied = api.client.apply(service(api, *((f"p{port}", port) for port in then)), field_manager="okt")

    assert [port for _, port, _ in ports_of(applied)] == expected


def test_an_apply_edits_an_env_var_by_name_and_keeps_the_one_another_manager_added(api: Api) -> None:
    api.client.apply(deployment(api, app(A="1", B="2")), field_manager="okt")
    api.client.apply(deployment(api, {"name": "app", "env": [{"name": "C", "value": "3"}]}), field_manager="webhook")

    applied = api.client.apply(deployment(api, app(A="changed", B="2")), field_manager="okt")

    assert containers_of(applied) == [("app", [("A", "changed"), ("B", "2"), ("C", "3")])]


def test_an_apply_removes_an_env_var_its_manager_no_longer_applies(api: Api) -> None:
    api.client.apply(deployment(api, app(A="1", B="2")), field_manager="okt")
    api.client.apply(deployment(api, {"name": "app", "env": [{"name": "C", "value": "3"}]}), field_manager="webhook")

    applied = api.client.apply(deployment(api, app(B="2")), field_manager="okt")

    assert containers_of(applied) == [("app", [("B", "2"), ("C", "3")])]


def test_an_item_its_manager_no_longer_applies_stays_while_another_manager_applies_it(api: Api) -> None:
    api.client.apply(deployment(api, app(A="1", B="2")), field_manager="okt")
    api.client.apply(deployment(api, {"name": "app", "env": [{"name": "A", "value": "1"}]}), field_manager="other")

    applied = api.client.apply(deployment(api, app(B="2")), field_manager="okt")

    assert containers_of(applied) == [("app", [("A", "1"), ("B", "2")])]


def test_an_item_its_manager_alone_applied_goes_whole_with_the_field_another_writer_edited_in_it(api: Api) -> None:
    api.client.apply(deployment(api, app(A="1", B="2")), field_manager="okt")
    edit = {"op": "replace", "path": "/spec/template/spec/containers/0/env/0/value", "value": "edited"}
    edited = api.client.patch(DEPLOYMENT, "d", [edit], api.namespace, patch_type="json")

    applied = api.client.apply(deployment(api, app(B="2")), field_manager="okt")

    assert containers_of(edited) == [("app", [("A", "edited"), ("B", "2")])]
    assert containers_of(applied) == [("app", [("B", "2")])]


def test_an_apply_keeps_a_container_another_manager_added(api: Api) -> None:
    api.client.apply(deployment(api, app(A="1")), field_manager="okt")
    sidecar = {"name": "sidecar", "image": "busybox", "env": [{"name": "S", "value": "1"}]}
    api.client.apply(deployment(api, sidecar), field_manager="injector")

    applied = api.client.apply(deployment(api, app(A="2")), field_manager="okt")

    assert containers_of(applied) == [("app", [("A", "2")]), ("sidecar", [("S", "1")])]


def test_a_list_an_update_wrote_is_merged_by_key_into_by_an_apply(api: Api) -> None:
    api.client.create(service(api, ("http", 80), ("metrics", 9100)))
    api.client.apply(service(api, ("https", 443)), field_manager="okt")

    applied = api.client.apply(service(api, ("web", 80)), field_manager="okt")

    assert ports_of(applied) == [("web", 80, "TCP"), ("metrics", 9100, "TCP")]


def config_map_with(
    api: Api, *, finalizer: str | None = None, owner: str | None = None, controller: bool = False
) -> dict[str, Any]:
    """The ConfigMap c with ``finalizer`` and a reference to the ConfigMap ``owner`` (created if missing: an owner that
    does not exist has its dependents deleted by the garbage collector)."""
    meta: dict[str, Any] = {"name": "c", "namespace": api.namespace}
    if finalizer:
        meta["finalizers"] = [finalizer]
    if owner:
        found = api.client.get_or_none(kinds.CONFIG_MAP, owner, api.namespace)
        uid = (found or api.client.create(api.config_map(owner)))["metadata"]["uid"]
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid, "controller": controller}
        meta["ownerReferences"] = [reference]
    return api.config_map(metadata=meta)


def uids(api: Api, *names: str) -> list[str]:
    return [api.client.get(kinds.CONFIG_MAP, name, api.namespace)["metadata"]["uid"] for name in names]


def test_an_apply_keeps_another_manager_s_finalizer_and_owner_reference(api: Api) -> None:
    api.client.apply(config_map_with(api, finalizer="okt.io/mine", owner="mine"), field_manager="okt")
    api.client.apply(config_map_with(api, finalizer="x.io/theirs", owner="theirs"), field_manager="other")

    again = api.client.apply(config_map_with(api, finalizer="okt.io/mine", owner="mine"), field_manager="okt")
    dropped = api.client.apply(config_map_with(api), field_manager="okt")

    def held(obj: dict[str, Any]) -> tuple[list[str], list[str]]:
        return obj["metadata"]["finalizers"], [ref["uid"] for ref in obj["metadata"]["ownerReferences"]]

    assert held(again) == (["okt.io/mine", "x.io/theirs"], uids(api, "mine", "theirs"))
    assert held(dropped) == (["x.io/theirs"], uids(api, "theirs"))
    api.client.patch(kinds.CONFIG_MAP, "c", {"metadata": {"finalizers": None}}, api.namespace)


def test_an_apply_of_a_controller_reference_beside_another_controller_s_is_invalid(api: Api) -> None:
    created = api.client.apply(config_map_with(api, owner="theirs", controller=True), field_manager="other")

    with pytest.raises(errors.Invalid):
        api.client.apply(config_map_with(api, owner="mine", controller=True), field_manager="okt")

    assert api.client.get(kinds.CONFIG_MAP, "c", api.namespace) == created


# -- a whole reconcile -----------------------------------------------------------------------------------------------


class Settings(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
data:
  size: "{{ cr.spec.size }}"
{%- if cr.spec.size > 1 %}
  many: "yes"
{%- endif %}
"""


class WidgetSettings(okt.Reconciler):
    api_version = WIDGET.api_version
    kind = WIDGET.kind
    plural = WIDGET.plural
    spec_model = shared.WidgetSpec
    owns = (Settings,)
    finalizer = "test.okt.io/cleanup"
    cleaned: ClassVar[list[str]] = []

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Settings(ctx.cr)]

    def cleanup(self, ctx: okt.Context) -> None:
        type(self).cleaned.append(ctx.cr.name)


class MergedWidgetSettings(WidgetSettings):
    apply_strategy = "merge"


# A reconcile that writes reads its object once more before the writes no resourceVersion guards (its children, its
# status applied), to tell whether it was deleted and created again meanwhile: through the API, one more get each.
@pytest.mark.parametrize(
    ("reconciler", "first_writes", "change_writes", "checks"),
    [
        (WidgetSettings(), {"patch": 1, "apply": 2}, {"apply": 2}, 2),
        (MergedWidgetSettings(), {"patch": 2, "create": 1}, {"patch": 2}, 1),
    ],
    ids=["apply", "merge"],
)
def test_a_reconciler_s_life_sends_the_same_requests_and_leaves_the_same_objects(
    api: Api, reconciler: WidgetSettings, first_writes: dict[str, int], change_writes: dict[str, int], checks: int
) -> None:
    def reconcile() -> tuple[okt.OutcomeKind, dict[str, int]]:
        before = api.client.stats.snapshot()
        run = okt.reconcile(reconciler, api.client, None, api.namespace, "w", kind=WIDGET)
        return run.outcome.kind, api.client.stats.by_verb(before)

    def settings() -> dict[str, str] | None:
        found = api.client.get_or_none(kinds.CONFIG_MAP, "w-settings", api.namespace)
        return found["data"] if found is not None else None

    def ready() -> tuple[str, int]:
        found = condition(api.client.get(WIDGET, "w", api.namespace), "Ready")
        assert found is not None
        return found["status"], found["observedGeneration"]

    api.client.create(api.widget(spec={"size": 2}))
    assert reconcile() == (okt.OutcomeKind.DONE, {"get": 2 + checks, "list": 1, **first_writes})
    assert (settings(), ready()) == ({"size": "2", "many": "yes"}, ("True", 1))
    assert reconcile() == (okt.OutcomeKind.DONE, {"get": 2, "list": 1})

    api.client.patch(WIDGET, "w", {"spec": {"size": 1}}, api.namespace)
    assert reconcile() == (okt.OutcomeKind.DONE, {"get": 2 + checks, "list": 1, **change_writes})
    assert (settings(), ready()) == ({"size": "1"}, ("True", 2))

    cleaned = len(WidgetSettings.cleaned)
    api.client.delete(WIDGET, "w", api.namespace)
    assert reconcile() == (okt.OutcomeKind.DONE, {"get": 1, "patch": 1})
    assert WidgetSettings.cleaned[cleaned:] == ["w"]
    assert api.client.get_or_none(WIDGET, "w", api.namespace) is None


@pytest.mark.parametrize("reconciler", [WidgetSettings(), MergedWidgetSettings()], ids=["apply", "merge"])
def test_a_child_someone_else_edited_is_repaired_the_same_on_both(api: Api, reconciler: WidgetSettings) -> None:
    api.client.create(api.widget(spec={"size": 2}))
    okt.reconcile(reconciler, api.client, None, api.namespace, "w", kind=WIDGET)
    api.client.patch(
        kinds.CONFIG_MAP,
        "w-settings",
        {"metadata": {"labels": {"theirs": "x"}}, "data": {"size": "9", "many": None, "theirs": "x"}},
        api.namespace,
        field_manager="editor",
    )
    api.client.patch(
        WIDGET, "w", {"status": {"theirs": "x"}}, api.namespace, subresource="status", field_manager="editor"
    )
    before = api.client.stats.snapshot()
    apply = reconciler.apply_strategy == "apply"

    run = okt.reconcile(reconciler, api.client, None, api.namespace, "w", kind=WIDGET)

    repaired = api.client.get(kinds.CONFIG_MAP, "w-settings", api.namespace)
    assert run.outcome.kind is okt.OutcomeKind.DONE
    # One more get than the reads: whether the object was replaced, before its child is written (its status is not).
    assert api.client.stats.by_verb(before) == {"get": 4, "list": 1, ("apply" if apply else "patch"): 1}
    assert (repaired["data"]["size"], repaired["data"].get("many")) == ("2", "yes")
    if apply:
        assert repaired["data"]["theirs"] == "x"  # another manager's field, which apply never touches
    assert repaired["metadata"]["labels"]["theirs"] == "x"
    assert api.client.get(WIDGET, "w", api.namespace)["status"]["theirs"] == "x"


# -- a custom kind's map lists, its schema given to the fake ---------------------------------------------------------

RACK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "slots": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "size": {"type": "integer"},
                            "color": {"type": "string"},
                        },
                    },
                },
            },
        },
    },
}
"""A custom kind whose ``spec.slots`` server-side apply merges by name."""

RACK = kinds.Kind(f"fake.{shared.GROUP}/v1", "Rack", "racks")


class RackChild(okt.Resource):
    api_version = RACK.api_version
    kind = RACK.kind
    openapi_schema = RACK_SCHEMA


def rack_crd() -> dict[str, Any]:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": RACK_SCHEMA}}
    names = {"kind": "Rack", "plural": "racks", "singular": "rack", "listKind": "RackList"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"racks.{RACK.group}"},
        "spec": {"group": RACK.group, "names": names, "scope": "Namespaced", "versions": [version]},
    }


@pytest.fixture(params=["fake", "server"])
def rack_api(request: pytest.FixtureRequest) -> Iterator[Api]:
    if request.param == "fake":
        fake = FakeClient(keyed_lists={RACK: RackChild.keyed_lists})
        yield Api(fake, "ns")
        fake.close()
    else:
        assert request.getfixturevalue("apply_crd")(rack_crd()) == RACK
        yield Api(request.getfixturevalue("kube"), request.getfixturevalue("namespace"))


def rack(api: Api, *slots: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "r", "namespace": api.namespace}
    return {"apiVersion": RACK.api_version, "kind": RACK.kind, "metadata": meta, "spec": {"slots": list(slots)}}


def test_an_apply_merges_a_custom_kind_s_map_list_by_key_when_the_fake_is_given_its_schema(rack_api: Api) -> None:
    api = rack_api
    api.client.apply(rack(api, {"name": "a", "size": 1, "color": "red"}, {"name": "b", "size": 1}), field_manager="okt")
    api.client.apply(rack(api, {"name": "probe", "size": 0}), field_manager="monitor")

    applied = api.client.apply(rack(api, {"name": "d", "size": 4}, {"name": "a", "size": 2}), field_manager="okt")

    assert applied["spec"]["slots"] == [
        {"name": "a", "size": 2},
        {"name": "probe", "size": 0},
        {"name": "d", "size": 4},
    ]


# -- what the API server fills in, allocates and refuses for Kubernetes' own kinds --------------------------------


def _deployment(api: Api, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "app:1"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": api.namespace},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": template, **spec},
    }


def test_an_object_put_in_the_fake_holds_the_defaults_the_server_gives_one_created_there(api: Api) -> None:
    body = _deployment(api, replicas=2)
    # What a test stores as its starting point in the fake, as if a create had written it.
    stored = api.client.put(body) if isinstance(api.client, FakeClient) else api.client.create(body)

    patched = api.client.patch(DEPLOYMENT, "d", {"spec": body["spec"]}, api.namespace)

    assert stored["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    # No change of the spec: the same generation (on the server the Deployment controller writes the status
    # meanwhile, so the resourceVersion may move, but never the generation).
    assert (patched["metadata"]["generation"], patched["spec"]) == (stored["metadata"]["generation"], stored["spec"])


def _node_port_service(api: Api, name: str, *ports: int | None) -> dict[str, Any]:
    """A NodePort Service of one port per ``ports``: that node port, or one the API server picks for None."""
    listed = [{"name": f"p{i}", "port": 80 + i, "protocol": "TCP", "nodePort": port} for i, port in enumerate(ports)]
    for entry in listed:
        if entry["nodePort"] is None:
            del entry["nodePort"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": api.namespace},
        "spec": {"type": "NodePort", "ports": listed},
    }


def test_a_node_port_another_service_holds_is_invalid_until_that_service_lets_it_go(api: Api) -> None:
    # Node ports are the whole cluster's: each is picked by the allocator, so none is one another test holds.
    taken = api.client.create(_node_port_service(api, "a", None))["spec"]["ports"][0]["nodePort"]
    api.client.create(_node_port_service(api, "c", None))
    refused: list[tuple[str, str, str]] = []
    for write in (
        lambda: api.client.create(_node_port_service(api, "b", None, taken)),
        lambda: api.client.patch(SERVICE, "c", {"spec": _node_port_service(api, "c", taken)["spec"]}, api.namespace),
    ):
        with pytest.raises(errors.Invalid) as raised:
            write()
        (cause,) = raised.value.causes
        refused.append((cause.reason, cause.field, cause.message))

    made_cluster_ip = api.client.patch(SERVICE, "a", {"spec": {"type": "ClusterIP"}}, api.namespace)
    moved = api.client.patch(SERVICE, "c", {"spec": _node_port_service(api, "c", taken)["spec"]}, api.namespace)

    already = f"Invalid value: {taken}: provided port is already allocated"
    assert refused == [
        ("FieldValueInvalid", "spec.ports[1].nodePort", already),
        ("FieldValueInvalid", "spec.ports[0].nodePort", already),
    ]
    assert [port.get("nodePort") for port in made_cluster_ip["spec"]["ports"]] == [None]
    assert "externalTrafficPolicy" not in made_cluster_ip["spec"]
    assert moved["spec"]["ports"][0]["nodePort"] == taken
    api.client.delete(SERVICE, "c", api.namespace)  # frees both for the next run on this control plane


def test_a_recreate_deployment_may_not_keep_a_rolling_update_even_the_one_the_server_defaulted(api: Api) -> None:
    recreate = "Forbidden: may not be specified when strategy `type` is 'Recreate'"
    refused: list[tuple[str, str, str]] = []
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(_deployment(api, strategy={"type": "Recreate", "rollingUpdate": {}}))
    refused += [(cause.reason, cause.field, cause.message) for cause in raised.value.causes]
    created = api.client.create(_deployment(api))
    with pytest.raises(errors.Invalid) as raised:
        api.client.patch(DEPLOYMENT, "d", {"spec": {"strategy": {"type": "Recreate"}}}, api.namespace)
    refused += [(cause.reason, cause.field, cause.message) for cause in raised.value.causes]

    cleared = {"type": "Recreate", "rollingUpdate": None}
    patched = api.client.patch(DEPLOYMENT, "d", {"spec": {"strategy": cleared}}, api.namespace)

    assert refused == [("FieldValueForbidden", "spec.strategy.rollingUpdate", recreate)] * 2
    assert raised.value.api_message == f'Deployment.apps "d" is invalid: spec.strategy.rollingUpdate: {recreate}'
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    assert patched["spec"]["strategy"] == {"type": "Recreate"}


def test_a_null_rolling_update_is_left_out_then_defaulted_only_for_a_rolling_update_strategy(api: Api) -> None:
    rolling = api.client.create(_deployment(api, strategy={"rollingUpdate": None}))
    recreate_strategy = {"type": "Recreate", "rollingUpdate": None}
    named_e = {"name": "e", "namespace": api.namespace}
    recreate = api.client.create({**_deployment(api, strategy=recreate_strategy), "metadata": named_e})

    assert rolling["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


NOT_SELECTED = "`selector` does not match template `labels`"


@pytest.mark.parametrize(
    ("kind", "spec", "causes"),
    [
        (
            "Deployment",
            {"template": {"metadata": {"labels": {"tier": "web", "app": "other"}}}},
            [
                (
                    "spec.template.metadata.labels",
                    f'Invalid value: map[string]string{{"app":"other", "tier":"web"}}: {NOT_SELECTED}',
                )
            ],
        ),
        (
            "Deployment",
            {"template": {"metadata": {}}},
            [("spec.template.metadata.labels", f"Invalid value: map[string]string(nil): {NOT_SELECTED}")],
        ),
        (
            "Deployment",
            {"selector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["d"]}]}},
            [("spec.template.metadata.labels", f'Invalid value: map[string]string{{"app":"d"}}: {NOT_SELECTED}')],
        ),
        (
            "StatefulSet",
            {"selector": None},
            [
                ("spec.selector", "Required value"),
                ("spec.template.metadata.labels", f'Invalid value: map[string]string{{"app":"d"}}: {NOT_SELECTED}'),
            ],
        ),
    ],
    ids=["other-labels", "no-labels", "not-in", "stateful-set-without-selector"],
)
def test_a_workload_whose_selector_does_not_select_its_pod_template_is_invalid(
    api: Api, kind: str, spec: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    body = _deployment(api) if kind == "Deployment" else _stateful_set(api)
    template = body["spec"]["template"]
    body["spec"] |= {**spec, "template": {**template, **spec.get("template", {})}}
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(body)

    assert [(cause.field, cause.message) for cause in raised.value.causes] == causes
    listed = ", ".join(f"{field}: {message}" for field, message in causes)
    assert raised.value.api_message == (f'{kind}.apps "d" is invalid: {listed if len(causes) == 1 else f"[{listed}]"}')


def test_a_selector_matching_its_pod_template_by_expressions_is_kept(api: Api) -> None:
    selector = {
        "matchLabels": {"app": "d"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web", "api"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "app", "operator": "Exists"},
        ],
    }
    body = _deployment(api, selector=selector)
    body["spec"]["template"]["metadata"]["labels"] = {"app": "d", "tier": "web"}

    assert api.client.create(body)["spec"]["selector"] == selector


def test_a_deployment_strategy_of_an_unknown_type_is_not_supported(api: Api) -> None:
    unsupported = (
        'Unsupported value: apps.DeploymentStrategy{Type:"Blue", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
        'supported values: "Recreate", "RollingUpdate"'
    )
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(_deployment(api, strategy={"type": "Blue"}))

    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueNotSupported", "spec.strategy", unsupported)
    ]
    assert raised.value.api_message == f'Deployment.apps "d" is invalid: spec.strategy: {unsupported}'


def test_each_unnamed_port_of_a_service_of_several_is_required(api: Api) -> None:
    ports = [{"name": "a", "port": 80}, {"port": 81}, {"port": 82}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": api.namespace}}
    with pytest.raises(errors.Invalid) as raised:
        api.client.create({**service, "spec": {"ports": ports}})

    one = api.client.create({**service, "spec": {"ports": ports[1:2]}})

    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueRequired", "spec.ports[1].name", "Required value"),
        ("FieldValueRequired", "spec.ports[2].name", "Required value"),
    ]
    assert raised.value.api_message == (
        'Service "s" is invalid: [spec.ports[1].name: Required value, spec.ports[2].name: Required value]'
    )
    assert one["spec"]["ports"] == [{"port": 81, "protocol": "TCP", "targetPort": 81}]
    api.client.delete(SERVICE, "s", api.namespace)  # frees its cluster IP for the next run on this control plane


def test_a_service_made_cluster_ip_while_the_write_changes_its_node_port_is_invalid(api: Api) -> None:
    # Node ports are the whole cluster's: each is picked by the allocator, so none is one another test holds.
    api.client.create(_node_port_service(api, "a", None))
    other = api.client.create(_node_port_service(api, "b", None))["spec"]["ports"][0]["nodePort"]
    changed = {**_node_port_service(api, "a", other)["spec"], "type": "ClusterIP"}
    try:
        with pytest.raises(errors.Invalid) as raised:
            api.client.patch(SERVICE, "a", {"spec": changed}, api.namespace)
    finally:
        for name in ("a", "b"):
            api.client.delete(SERVICE, name, api.namespace)  # frees their node ports for the next run

    forbidden = "Forbidden: may not be used when `type` is 'ClusterIP'"
    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueForbidden", "spec.ports[0].nodePort", forbidden)
    ]
    assert raised.value.api_message == f'Service "a" is invalid: spec.ports[0].nodePort: {forbidden}'


ONLY_THROUGH_NODES = "ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service"


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        (
            {"externalTrafficPolicy": "Local"},
            [("spec.externalTrafficPolicy", f'Invalid value: "Local": {ONLY_THROUGH_NODES}')],
        ),
        (
            {"clusterIP": "None", "externalTrafficPolicy": "Cluster"},
            [("spec.externalTrafficPolicy", f'Invalid value: "Cluster": {ONLY_THROUGH_NODES}')],
        ),
        (
            {"type": "ExternalName", "externalName": "example.com", "externalTrafficPolicy": "Cluster"},
            [("spec.externalTrafficPolicy", f'Invalid value: "Cluster": {ONLY_THROUGH_NODES}')],
        ),
        (
            {"type": "NodePort", "externalTrafficPolicy": "Nearest"},
            [
                (
                    "spec.externalTrafficPolicy",
                    'Invalid value: "Nearest": ExternalTrafficPolicy must be empty, Cluster or Local',
                )
            ],
        ),
        (
            # Checked once the rest passes, so never beside another refusal.
            {"externalTrafficPolicy": "Local", "ports": [{"port": 80}, {"port": 81}]},
            [(f"spec.ports[{index}].name", "Required value") for index in (0, 1)],
        ),
        (
            {"externalTrafficPolicy": "Local", "healthCheckNodePort": 31999},
            [
                ("spec.externalTrafficPolicy", f'Invalid value: "Local": {ONLY_THROUGH_NODES}'),
                (
                    "spec.healthCheckNodePort",
                    "Invalid value: 31999: HealthCheckNodePort can only be set on LoadBalancer service with "
                    "ExternalTrafficPolicy=Local",
                ),
            ],
        ),
    ],
    ids=["cluster-ip", "headless", "external-name", "unknown", "after-the-rest", "with-a-health-check-port"],
)
def test_an_external_traffic_policy_is_invalid_but_known_and_on_a_service_reached_through_its_nodes(
    api: Api, spec: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": api.namespace}}
    with pytest.raises(errors.Invalid) as raised:
        api.client.create({**service, "spec": {"ports": [{"port": 80}], **spec}})

    assert [(cause.field, cause.message) for cause in raised.value.causes] == causes
    assert api.client.get_or_none(SERVICE, "s", api.namespace) is None


def test_a_service_made_cluster_ip_loses_its_external_traffic_policy_even_one_the_write_changes(api: Api) -> None:
    api.client.create({**_node_port_service(api, "a", None), "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    try:
        with pytest.raises(errors.Invalid) as unknown:
            api.client.patch(
                SERVICE, "a", {"spec": {"type": "ClusterIP", "externalTrafficPolicy": "Nearest"}}, api.namespace
            )
        made = api.client.patch(
            SERVICE, "a", {"spec": {"type": "ClusterIP", "externalTrafficPolicy": "Local"}}, api.namespace
        )
        with pytest.raises(errors.Invalid) as set_again:
            api.client.patch(SERVICE, "a", {"spec": {"externalTrafficPolicy": "Local"}}, api.namespace)
    finally:
        api.client.delete(SERVICE, "a", api.namespace)  # frees its node port and cluster IP for the next run

    assert [cause.field for cause in unknown.value.causes] == ["spec.externalTrafficPolicy"]
    assert "externalTrafficPolicy" not in made["spec"]
    assert set_again.value.api_message == (
        f'Service "a" is invalid: spec.externalTrafficPolicy: Invalid value: "Local": {ONLY_THROUGH_NODES}'
    )


def test_a_stateful_set_deleted_pod_by_pod_may_not_hold_a_rolling_update_even_the_defaulted_one(api: Api) -> None:
    template = _deployment(api)["spec"]["template"]
    spec = {"selector": {"matchLabels": {"app": "d"}}, "serviceName": "d", "template": template}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "d", "namespace": api.namespace}}
    refused: list[tuple[str, str, str]] = []
    with pytest.raises(errors.Invalid) as raised:
        on_delete = {"type": "OnDelete", "rollingUpdate": {"partition": 2}}
        api.client.create({**body, "spec": {**spec, "updateStrategy": on_delete}})
    refused += [(cause.reason, cause.field, cause.message) for cause in raised.value.causes]
    created = api.client.create({**body, "spec": spec})
    with pytest.raises(errors.Invalid) as raised:
        api.client.patch(STATEFUL_SET, "d", {"spec": {"updateStrategy": {"type": "OnDelete"}}}, api.namespace)
    refused += [(cause.reason, cause.field, cause.message) for cause in raised.value.causes]

    cleared = {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}
    patched = api.client.patch(STATEFUL_SET, "d", {"spec": cleared}, api.namespace)

    only = "only allowed for updateStrategy 'RollingUpdate'"
    assert refused == [
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate", f"Invalid value: {value}: {only}")
        for value in (
            "apps.RollingUpdateStatefulSetStrategy{Partition:2}",
            "apps.RollingUpdateStatefulSetStrategy{Partition:0}",
        )
    ]
    assert created["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert patched["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_a_stateful_set_strategy_naming_rolling_update_gets_no_rolling_update(api: Api) -> None:
    template = _deployment(api)["spec"]["template"]
    spec = {"selector": {"matchLabels": {"app": "d"}}, "serviceName": "d", "template": template}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "d", "namespace": api.namespace}}
    named = api.client.create({**body, "spec": {**spec, "updateStrategy": {"type": "RollingUpdate"}}})

    patched = api.client.patch(STATEFUL_SET, "d", {"spec": {"updateStrategy": {"rollingUpdate": {}}}}, api.namespace)

    assert named["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    assert patched["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}


def test_an_empty_string_in_a_defaulted_string_field_is_defaulted_as_if_left_out(api: Api) -> None:
    deployment = _deployment(api, strategy={"type": ""})
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="", terminationMessagePolicy="", ports=[{"containerPort": 80, "protocol": ""}])
    deployment["spec"]["template"]["spec"].update(restartPolicy="", dnsPolicy="")
    ports = [{"port": 80, "protocol": "", "targetPort": 0}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": api.namespace}}

    created = api.client.create(deployment)
    made = api.client.create({**service, "spec": {"type": "", "sessionAffinity": "", "ports": ports}})
    api.client.delete(SERVICE, "s", api.namespace)  # frees its cluster IP for the next run on this control plane

    pod = created["spec"]["template"]["spec"]
    assert created["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (pod["restartPolicy"], pod["dnsPolicy"]) == ("Always", "ClusterFirst")
    assert {key: pod["containers"][0][key] for key in ("imagePullPolicy", "terminationMessagePolicy", "ports")} == {
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePolicy": "File",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
    }
    assert {key: made["spec"][key] for key in ("type", "sessionAffinity", "ports")} == {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
    }


def test_a_stateful_set_strategy_of_an_empty_type_is_a_rolling_update_from_partition_0(api: Api) -> None:
    template = _deployment(api)["spec"]["template"]
    spec = {"selector": {"matchLabels": {"app": "d"}}, "serviceName": "d", "template": template}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "d", "namespace": api.namespace}}

    created = api.client.create({**body, "spec": {**spec, "updateStrategy": {"type": ""}, "podManagementPolicy": ""}})

    assert created["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert created["spec"]["podManagementPolicy"] == "OrderedReady"


def _stateful_set(api: Api, **spec: Any) -> dict[str, Any]:
    template = _deployment(api)["spec"]["template"]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "d", "namespace": api.namespace},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "serviceName": "d", "template": template, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        (
            {"updateStrategy": {"type": "Blue"}},
            (
                "spec.updateStrategy",
                'Invalid value: apps.StatefulSetUpdateStrategy{Type:"Blue", '
                "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'",
            ),
        ),
        (
            {"podManagementPolicy": "Blue"},
            ("spec.podManagementPolicy", "Invalid value: \"Blue\": must be 'OrderedReady' or 'Parallel'"),
        ),
        (
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
            ("spec.updateStrategy.rollingUpdate.partition", "Invalid value: -1: must be greater than or equal to 0"),
        ),
    ],
    ids=["unknown-strategy", "unknown-pod-management", "negative-partition"],
)
def test_a_stateful_set_of_an_unknown_strategy_or_policy_or_a_negative_partition_is_invalid(
    api: Api, spec: dict[str, Any], cause: tuple[str, str]
) -> None:
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(_stateful_set(api, **spec))

    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueInvalid", *cause)
    ]
    assert raised.value.api_message == f'StatefulSet.apps "d" is invalid: {cause[0]}: {cause[1]}'


def test_a_refused_value_is_quoted_in_the_message_as_go_quotes_it(api: Api) -> None:
    odd = 'é\u00a0\x01\x7f\u200b\t\U0001f600"\\'
    with pytest.raises(errors.Invalid) as strategy:
        api.client.create(_deployment(api, strategy={"type": odd}))
    with pytest.raises(errors.Invalid) as label:
        api.client.create(api.config_map(metadata={"name": "c", "namespace": api.namespace, "labels": {"a": odd}}))

    quoted = r'"é\u00a0\x01\x7f\u200b\t😀\"\\"'
    assert strategy.value.causes[0].message.startswith(f"Unsupported value: apps.DeploymentStrategy{{Type:{quoted}, ")
    assert label.value.causes[0].message.startswith(f"Invalid value: {quoted}: ")


def _local_load_balancer(api: Api, name: str, **spec: Any) -> dict[str, Any]:
    """A LoadBalancer Service routing to its nodes' local endpoints: it holds a health check node port."""
    ports = [{"name": "a", "port": 80, "protocol": "TCP"}]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": api.namespace},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": ports, **spec},
    }


def test_a_health_check_node_port_held_is_a_server_error_and_one_changed_or_misplaced_is_invalid(api: Api) -> None:
    # Node ports are the whole cluster's: each is picked by the allocator, so none is one another test holds.
    held = api.client.create(_local_load_balancer(api, "a"))["spec"]
    taken = [held["healthCheckNodePort"], held["ports"][0]["nodePort"]]
    refused: list[tuple[int, str]] = []
    try:
        for port in taken:
            with pytest.raises(errors.ServerError) as raised:
                api.client.create(_local_load_balancer(api, "b", healthCheckNodePort=port))
            refused.append((raised.value.status, raised.value.api_message))
        with pytest.raises(errors.Invalid) as changed:
            api.client.patch(SERVICE, "a", {"spec": {"healthCheckNodePort": None}}, api.namespace)
        cleared = api.client.patch(SERVICE, "a", {"spec": {"externalTrafficPolicy": "Cluster"}}, api.namespace)
        with pytest.raises(errors.Invalid) as misplaced:
            api.client.patch(SERVICE, "a", {"spec": {"healthCheckNodePort": taken[0]}}, api.namespace)
    finally:
        api.client.delete(SERVICE, "a", api.namespace)  # frees its ports for the next run on this control plane

    assert refused == [
        (
            500,
            f"Internal error occurred: failed to allocate requested HealthCheck NodePort {port}: provided port is "
            "already allocated",
        )
        for port in taken
    ]
    assert [(cause.reason, cause.field, cause.message) for cause in changed.value.causes] == [
        (
            "FieldValueInvalid",
            "spec.healthCheckNodePort",
            "Invalid value: 0: cannot change healthCheckNodePort on loadBalancer service with externalTraffic=Local "
            "during update",
        )
    ]
    assert "healthCheckNodePort" not in cleared["spec"]
    assert [(cause.reason, cause.field, cause.message) for cause in misplaced.value.causes] == [
        (
            "FieldValueInvalid",
            "spec.healthCheckNodePort",
            f"Invalid value: {taken[0]}: HealthCheckNodePort can only be set on LoadBalancer service with "
            "ExternalTrafficPolicy=Local",
        )
    ]


def test_an_apply_of_service_ports_without_their_protocol_or_of_one_key_twice_is_refused_with_the_servers_500(
    api: Api,
) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": api.namespace}}
    deployment = _deployment(api)
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    refused: list[tuple[int, str]] = []
    for ports in (
        [{"name": "a", "port": 80}],
        [{"name": "a", "port": 80, "protocol": "TCP"}, {"name": "b", "port": 80, "protocol": "TCP"}],
    ):
        with pytest.raises(errors.Invalid) as raised:  # a 500, which names the field refused
            api.client.apply({**service, "spec": {"ports": ports}}, SERVICE, field_manager="test")
        refused.append((raised.value.status, raised.value.api_message))
        assert [cause.field for cause in raised.value.causes] == ["spec.ports"]

    # A container port's protocol has a default in Kubernetes 1.20's apply schema.
    applied = api.client.apply(deployment, DEPLOYMENT, field_manager="test")

    assert refused == [
        (
            500,
            "failed to create typed patch object: .spec.ports: element 0: associative list with keys has an element "
            'that omits key field "protocol" (and doesn\'t have default value)',
        ),
        (500, 'failed to create typed patch object: .spec.ports: duplicate entries for key [port=80,protocol="TCP"]'),
    ]
    assert applied["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert api.client.get_or_none(SERVICE, "s", api.namespace) is None


ENV_NAME_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not "
    "start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is "
    "'[-._a-zA-Z][-._a-zA-Z0-9]*')"
)


def _workload(api: Api, kind: str, **pod: Any) -> dict[str, Any]:
    body = _stateful_set(api) if kind == "StatefulSet" else {**_deployment(api), "kind": kind}
    body["spec"]["template"]["spec"] |= pod
    return body


@pytest.mark.parametrize(
    ("kind", "pod", "cause"),
    [
        ("Pod", {"containers": [{"name": "c"}]}, ("FieldValueRequired", "containers[0].image", "Required value")),
        (
            "Deployment",
            {"containers": [{"name": "c"}]},
            ("FieldValueRequired", "containers[0].image", "Required value"),
        ),
        ("Pod", {"containers": [{"image": "app:1"}]}, ("FieldValueRequired", "containers[0].name", "Required value")),
        ("Job", {"containers": [{"image": "app:1"}]}, ("FieldValueRequired", "containers[0].name", "Required value")),
        (
            "Deployment",
            {"containers": [{"name": "c", "image": "app:1"}, {"name": "c", "image": "app:2"}]},
            ("FieldValueDuplicate", "containers[1].name", 'Duplicate value: "c"'),
        ),
        (
            "DaemonSet",
            {
                "containers": [
                    {"name": "c", "image": "app:1", "ports": [{"name": "http", "containerPort": p} for p in (80, 81)]}
                ]
            },
            ("FieldValueDuplicate", "containers[0].ports[1].name", 'Duplicate value: "http"'),
        ),
        (
            "Deployment",
            {"containers": [{"name": "c", "image": "app:1", "env": [{"name": "1 A", "value": "x"}]}]},
            ("FieldValueInvalid", "containers[0].env[0].name", f'Invalid value: "1 A": {ENV_NAME_MESSAGE}'),
        ),
        (
            "Pod",
            {
                "containers": [
                    {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "2000m"}, "limits": {"cpu": "1"}}}
                ]
            },
            (
                "FieldValueInvalid",
                "containers[0].resources.requests",
                'Invalid value: "2": must be less than or equal to cpu limit',
            ),
        ),
        (
            "Deployment",
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "app:1",
                        "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1024Mi"}},
                    }
                ]
            },
            (
                "FieldValueInvalid",
                "containers[0].resources.requests",
                'Invalid value: "2Gi": must be less than or equal to memory limit',
            ),
        ),
        (
            "Deployment",
            {"restartPolicy": "Never"},
            ("FieldValueNotSupported", "restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
        ),
        (
            "ReplicaSet",
            {"restartPolicy": "OnFailure"},
            ("FieldValueNotSupported", "restartPolicy", 'Unsupported value: "OnFailure": supported values: "Always"'),
        ),
    ],
    ids=[
        "pod-without-image",
        "template-without-image",
        "pod-without-name",
        "job-without-name",
        "two-containers-of-one-name",
        "two-ports-of-one-name",
        "env-var-name",
        "requests-above-limits",
        "template-requests-above-limits",
        "deployment-restart-never",
        "replica-set-restart-on-failure",
    ],
)
def test_a_pod_spec_the_api_server_refuses_is_invalid_in_a_pod_or_a_workload_s_template(
    api: Api, kind: str, pod: dict[str, Any], cause: tuple[str, str, str]
) -> None:
    if kind == "Pod":
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d", "namespace": api.namespace}, "spec": pod}
        at, said = "spec", 'Pod "d" is invalid'
    elif kind == "Job":
        body = {**_deployment(api), "apiVersion": "batch/v1", "kind": "Job"}
        body["spec"] = {"template": {"spec": {**pod, "restartPolicy": "Never"}}}
        at, said = "spec.template.spec", 'Job.batch "d" is invalid'
    else:
        body, at, said = _workload(api, kind, **pod), "spec.template.spec", f'{kind}.apps "d" is invalid'
    reason, field, message = cause
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(body)

    assert [(c.reason, c.field, c.message) for c in raised.value.causes] == [(reason, f"{at}.{field}", message)]
    assert raised.value.api_message == f"{said}: {at}.{field}: {message}"


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
def test_a_negative_number_of_replicas_is_invalid(api: Api, kind: str) -> None:
    with pytest.raises(errors.Invalid) as raised:
        api.client.create({**_workload(api, kind), "spec": {**_workload(api, kind)["spec"], "replicas": -1}})

    message = "Invalid value: -1: must be greater than or equal to 0"
    assert [(c.reason, c.field, c.message) for c in raised.value.causes] == [
        ("FieldValueInvalid", "spec.replicas", message)
    ]
    assert raised.value.api_message == f'{kind}.apps "d" is invalid: spec.replicas: {message}'


@pytest.mark.parametrize("kind", ["ReplicaSet", "DaemonSet"])
def test_a_replica_set_or_daemon_set_whose_selector_does_not_select_its_template_is_invalid(
    api: Api, kind: str
) -> None:
    body = _workload(api, kind)
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(errors.Invalid) as raised:
        api.client.create(body)

    message = f'Invalid value: map[string]string{{"app":"other"}}: {NOT_SELECTED}'
    assert [(c.field, c.message) for c in raised.value.causes] == [("spec.template.metadata.labels", message)]
    assert raised.value.api_message == f'{kind}.apps "d" is invalid: spec.template.metadata.labels: {message}'


def test_a_stateful_set_s_template_is_checked_for_its_restart_policy_alone(api: Api) -> None:
    # Kubernetes 1.20 leaves a StatefulSet's containers to the Pods it makes, which are refused then.
    containers = [{"name": "c"}, {"name": "c", "image": "app:1"}]
    body = _workload(api, "StatefulSet", containers=containers)
    body["spec"]["replicas"] = 0
    created = api.client.create(body)

    with pytest.raises(errors.Invalid) as raised:
        api.client.create(
            _workload(api, "StatefulSet", restartPolicy="Never")
            | {"metadata": {"name": "e", "namespace": api.namespace}}
        )

    assert [c["name"] for c in created["spec"]["template"]["spec"]["containers"]] == ["c", "c"]
    assert [(c.field, c.message) for c in raised.value.causes] == [
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')
    ]
