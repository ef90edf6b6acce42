"""okt.testing.FakeClient: whole reconciles of a small reconciler in memory, and the API server's rules it keeps."""

from __future__ import annotations

import copy
import datetime
import enum
import logging
import math
import re
from collections.abc import Iterator
from typing import Any, ClassVar

import pydantic
import pytest
import structlog
import structlog.testing

import okt
from okt import errors
from okt.kube import kinds
from okt.testing import FakeClient, condition, patching

GADGET = kinds.Kind("toys.example.com/v1", "Gadget", "gadgets")
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]


class GadgetSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1, le=10)


class GadgetConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
data:
  size: "{{ cr.spec.size }}"
"""


class GadgetReconciler(okt.Reconciler):
    api_version = GADGET.api_version
    kind = GADGET.kind
    plural = GADGET.plural
    spec_model = GadgetSpec
    owns = (GadgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GadgetConfig(ctx.cr)]


class MergingGadgetReconciler(GadgetReconciler):
    apply_strategy = "merge"


class CleaningGadgetReconciler(GadgetReconciler):
    finalizer = "toys.example.com/cleanup"
    cleaned: ClassVar[list[str]] = []

    def cleanup(self, ctx: okt.Context) -> None:
        type(self).cleaned.append(ctx.cr.name)


@pytest.fixture
def fake() -> Iterator[FakeClient]:
    client = FakeClient(kinds=[GADGET])
    yield client
    client.close()


def gadget(name: str = "g", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GADGET.api_version,
        "kind": GADGET.kind,
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec or {"size": 2},
    }


def reconcile(fake: FakeClient, reconciler: okt.Reconciler | None = None, name: str = "g") -> okt.Run:
    return okt.reconcile(reconciler or GadgetReconciler(), fake, None, "ns", name)


def ready(fake: FakeClient, name: str = "g") -> dict[str, Any]:
    found = condition(fake.stored(GADGET, name, "ns"), "Ready")
    assert found is not None
    return found


# -- whole reconciles ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reconciler", [GadgetReconciler(), MergingGadgetReconciler()], ids=["apply", "merge"])
def test_a_first_reconcile_creates_the_child_owned_by_the_object_and_reports_ready(
    fake: FakeClient, reconciler: okt.Reconciler
) -> None:
    owner = fake.put(gadget(size=3))

    run = reconcile(fake, reconciler)

    assert run.outcome.kind is okt.OutcomeKind.DONE
    config = fake.stored(kinds.CONFIG_MAP, "g-config", "ns")
    assert config is not None and config["data"] == {"size": "3"}
    assert [ref["uid"] for ref in config["metadata"]["ownerReferences"]] == [owner["metadata"]["uid"]]
    assert (ready(fake)["status"], ready(fake)["observedGeneration"]) == ("True", 1)


@pytest.mark.parametrize(
    ("wrapper", "quiet_line"),
    [(structlog.BoundLogger, ["debug"]), (structlog.make_filtering_bound_logger(logging.INFO), [])],
    ids=["any-level", "info-and-up"],
)
def test_the_reconciled_line_is_info_when_the_reconcile_wrote_and_debug_when_it_found_everything_in_place(
    fake: FakeClient, wrapper: Any, quiet_line: list[str]
) -> None:
    fake.put(gadget())
    captured = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(captured, wrapper_class=wrapper, processors=[])

    for _ in range(2):
        okt.reconcile(GadgetReconciler(), fake, None, "ns", "g", logger=logger)

    levels = [call.method_name for call in captured.calls if call.kwargs.get("event") == "reconciled"]
    assert levels == ["info", *quiet_line]


@pytest.mark.parametrize("reconciler", [GadgetReconciler(), MergingGadgetReconciler()], ids=["apply", "merge"])
def test_a_second_reconcile_of_a_converged_object_writes_nothing(fake: FakeClient, reconciler: okt.Reconciler) -> None:
    fake.put(gadget())
    reconcile(fake, reconciler)
    before = fake.stats.snapshot()

    reconcile(fake, reconciler)

    assert fake.stats.writes(before) == 0


def test_a_spec_change_raises_the_generation_and_the_next_reconcile_follows_it(fake: FakeClient) -> None:
    fake.put(gadget(size=1))
    reconcile(fake)

    changed = fake.patch(GADGET, "g", {"spec": {"size": 4}}, "ns")
    reconcile(fake)

    assert changed["metadata"]["generation"] == 2
    assert fake.stored(kinds.CONFIG_MAP, "g-config", "ns")["data"] == {"size": "4"}  # type: ignore[index]
    assert ready(fake)["observedGeneration"] == 2


def test_a_child_edited_by_someone_else_is_repaired(fake: FakeClient) -> None:
    fake.put(gadget(size=2))
    reconcile(fake)
    fake.patch(kinds.CONFIG_MAP, "g-config", {"data": {"size": "9"}}, "ns")

    reconcile(fake)

    assert fake.stored(kinds.CONFIG_MAP, "g-config", "ns")["data"] == {"size": "2"}  # type: ignore[index]


def test_an_invalid_spec_is_reported_and_no_child_is_written(fake: FakeClient) -> None:
    fake.put(gadget(size=99))

    run = reconcile(fake)

    assert run.outcome.kind is not okt.OutcomeKind.DONE
    assert (ready(fake)["status"], ready(fake)["reason"]) == ("False", "InvalidSpec")
    assert fake.objects(kinds.CONFIG_MAP) == []


def test_a_missing_object_gives_up_quietly_after_one_read(fake: FakeClient) -> None:
    run = reconcile(fake, name="nobody")

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert fake.stats.snapshot() == {("get", "gadgets"): 1}


def test_an_injected_conflict_ends_in_a_retry_and_the_next_reconcile_converges(fake: FakeClient) -> None:
    fake.put(gadget())
    fake.fail("apply", "configmaps", errors.ApiError.from_status(409, "Conflict", "the object has been modified"))

    first = reconcile(fake)
    second = reconcile(fake)

    assert first.outcome.kind is okt.OutcomeKind.RETRY
    assert second.outcome.kind is okt.OutcomeKind.DONE
    assert fake.stats.snapshot()[("apply", "configmaps")] == 2


def test_a_finalizer_is_added_then_cleanup_runs_once_and_the_object_goes(fake: FakeClient) -> None:
    CleaningGadgetReconciler.cleaned.clear()
    fake.put(gadget())
    reconcile(fake, CleaningGadgetReconciler())
    assert fake.stored(GADGET, "g", "ns")["metadata"]["finalizers"] == [CleaningGadgetReconciler.finalizer]  # type: ignore[index]

    assert fake.delete(GADGET, "g", "ns")
    assert fake.stored(GADGET, "g", "ns")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    reconcile(fake, CleaningGadgetReconciler())

    assert CleaningGadgetReconciler.cleaned == ["g"]
    assert fake.stored(GADGET, "g", "ns") is None
    assert fake.objects(kinds.CONFIG_MAP) == []  # its child went with it


# -- the API server's rules ------------------------------------------------------------------------------------------


def test_a_create_of_an_existing_object_is_a_conflict_that_says_already_exists(fake: FakeClient) -> None:
    fake.create(gadget())

    with pytest.raises(errors.Conflict) as refused:
        fake.create(gadget())

    assert refused.value.already_exists


def test_a_create_drops_the_status_and_sets_identity_and_version(fake: FakeClient) -> None:
    created = fake.create({**gadget(), "status": {"phase": "made up"}})

    meta = created["metadata"]
    assert "status" not in created
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda f: f.get(GADGET, "missing", "ns"), errors.NotFound),
        (lambda f: f.patch(GADGET, "missing", {}, "ns"), errors.NotFound),
        (lambda f: f.resolve("toys.example.com/v1", "Unknown"), errors.NotFound),
        (lambda f: f.require_served([GADGET, kinds.Kind("batch/v2", "CronJob", "cronjobs")]), errors.NotFound),
        (
            lambda f: f.patch(GADGET, "g", {"metadata": {"resourceVersion": "1"}, "spec": {"size": 1}}, "ns"),
            errors.Conflict,
        ),
        (
            lambda f: f.patch(
                GADGET,
                "g",
                [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}],
                "ns",
                patch_type="json",
            ),
            errors.Invalid,
        ),
        (lambda f: f.delete(GADGET, "g", "ns", uid="another"), errors.Conflict),
    ],
    ids=["get", "patch", "resolve", "require-served", "stale-merge-patch", "failed-json-test", "uid-precondition"],
)
def test_requests_fail_with_the_status_class_the_api_server_answers(
    fake: FakeClient, call: Any, error: type[errors.ApiError]
) -> None:
    fake.create(gadget())

    with pytest.raises(error):
        call(fake)


def test_a_path_not_served_made_to_fail_reads_as_no_answer_about_the_object_as_the_client_has_it(
    fake: FakeClient,
) -> None:
    fake.create(gadget())
    not_served = errors.NotServed(404, "Not Found", "404 page not found")
    fake.fail("get", "gadgets", not_served)
    fake.fail("delete", "gadgets", not_served)

    with pytest.raises(errors.NotServed):
        fake.get_or_none(GADGET, "g", "ns")
    with pytest.raises(errors.NotServed):
        fake.delete(GADGET, "g", "ns")
    assert fake.get_or_none(GADGET, "g", "ns") is not None  # only the requests failed: the object is there


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda f: f.get(GADGET, "missing", "ns"), '404 NotFound: gadgets.toys.example.com "missing" not found'),
        (lambda f: f.get(DEPLOYMENT, "missing", "ns"), '404 NotFound: deployments.apps "missing" not found'),
        (lambda f: f.get(kinds.CONFIG_MAP, "missing", "ns"), '404 NotFound: configmaps "missing" not found'),
        (lambda f: f.create(gadget()), '409 AlreadyExists: gadgets.toys.example.com "g" already exists'),
        (
            lambda f: f.patch(GADGET, "g", {"metadata": {"resourceVersion": "1"}}, "ns", subresource="status"),
            '409 Conflict: Operation cannot be fulfilled on gadgets.toys.example.com "g": the object has been '
            "modified; please apply your changes to the latest version and try again",
        ),
    ],
    ids=["custom", "apps", "core", "already-exists", "stale"],
)
def test_a_refusal_names_the_resource_qualified_by_its_group_as_the_api_server_does(
    fake: FakeClient, call: Any, message: str
) -> None:
    # The API server says deployments.apps "x" and gadgets.toys.example.com "x" (configmaps "x" for the core group):
    # a test asserting on the message it would see on a cluster failed here, where the plural stood alone.
    fake.create(gadget())

    with pytest.raises(errors.ApiError) as refused:
        call(fake)

    assert str(refused.value) == message


SECRET = kinds.BUILTIN[("v1", "Secret")]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda f: f.create({**gadget(), "kind": "Gizmo"}, GADGET),
            errors.BadRequest,
            '400 BadRequest: Gizmo in version "v1" cannot be handled as a Gadget',
        ),
        (
            lambda f: f.create({"metadata": {"name": "s", "namespace": "ns"}, "kind": "Secret"}, kinds.CONFIG_MAP),
            errors.BadRequest,
            '400 BadRequest: Secret in version "v1" cannot be handled as a ConfigMap',
        ),
        (
            lambda f: f.create({"metadata": {"name": "g", "namespace": "ns"}, "spec": {"size": 1}}, GADGET),
            errors.BadRequest,
            "400 BadRequest: Gadget in version \"v1\" cannot be handled as a Gadget: Object 'Kind' is missing",
        ),
        (
            lambda f: f.replace(
                kinds.CONFIG_MAP, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c", "namespace": "ns"}}
            ),
            errors.BadRequest,
            '400 BadRequest: Secret in version "v1" cannot be handled as a ConfigMap',
        ),
        (
            lambda f: f.apply(
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}},
                kinds.CONFIG_MAP,
                field_manager="test",
            ),
            errors.ServerError,
            "500 InternalError: failed to merge config: expected objects of the same type, but got a Secret of v1 and "
            "a ConfigMap of v1",
        ),
        (
            lambda f: f.patch(kinds.CONFIG_MAP, "c", {"kind": "Secret"}, "ns"),
            errors.Invalid,
            "422 Invalid: patch: invalid value: a Secret of v1 cannot be handled as a ConfigMap of v1",
        ),
    ],
    ids=[
        "create-another-kind",
        "create-built-in-without-api-version",
        "create-custom-without-kind",
        "replace",
        "apply",
        "patch",
    ],
)
def test_a_body_of_another_kind_than_its_path_addresses_is_refused_as_the_api_server_refuses_it(
    fake: FakeClient, call: Any, error: type[errors.ApiError], message: str
) -> None:
    # It was stored as the body's kind (a Secret made through the ConfigMaps' path), or the stored ConfigMap became
    # a Secret: a template whose kind is not its class's passed here and was refused on the server.
    fake.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}})

    with pytest.raises(error) as refused:
        call(fake)

    assert str(refused.value) == message
    assert fake.objects(SECRET) == [] and fake.objects(GADGET) == []
    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["kind"] == "ConfigMap"  # type: ignore[index]


def test_a_body_of_a_built_in_kind_naming_no_type_is_taken_as_the_kind_of_its_path(fake: FakeClient) -> None:
    created = fake.create({"metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}, kinds.CONFIG_MAP)

    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")


@pytest.mark.parametrize("named", [{"apiVersion": "v1"}, {"kind": "ConfigMap"}], ids=["no-kind", "no-api-version"])
def test_a_body_of_a_built_in_kind_naming_half_its_type_takes_the_other_half_from_its_path(
    fake: FakeClient, named: dict[str, str]
) -> None:
    # The API server fills the kind and the apiVersion of a built-in kind's body each from the path when missing
    # (as measured on Kubernetes 1.20: both created a ConfigMap); they were refused here as another kind.
    created = fake.create({**named, "metadata": {"name": "c", "namespace": "ns"}}, kinds.CONFIG_MAP)
    body = {**named, "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}
    replaced = fake.replace(kinds.CONFIG_MAP, body)

    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")
    assert (replaced["apiVersion"], replaced["kind"]) == ("v1", "ConfigMap")
    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["kind"] == "ConfigMap"  # type: ignore[index]


UNSERVED = kinds.Kind("toys.example.com/v1", "Doohickey", "doohickeys")
DOOHICKEY = {"apiVersion": UNSERVED.api_version, "kind": UNSERVED.kind, "metadata": {"name": "d", "namespace": "ns"}}


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.get_or_none(UNSERVED, "d", "ns"),
        lambda f: f.delete(UNSERVED, "d", "ns"),
        lambda f: f.get(UNSERVED, "d", "ns"),
        lambda f: f.list(UNSERVED, "ns"),
        lambda f: f.create(DOOHICKEY, UNSERVED),
        lambda f: f.apply(DOOHICKEY, UNSERVED, field_manager="test"),
        lambda f: f.patch(UNSERVED, "d", {"spec": {}}, "ns"),
        lambda f: f.replace(UNSERVED, DOOHICKEY),
    ],
    ids=["get_or_none", "delete", "get", "list", "create", "apply", "patch", "replace"],
)
def test_a_kind_not_served_is_a_path_not_served_as_the_api_server_answers_it(fake: FakeClient, call: Any) -> None:
    # The API server answers a kind whose CRD is not installed "404 page not found", which the client raises as
    # NotServed, from get_or_none() and delete() too: they were told nothing of the object.
    with pytest.raises(errors.NotServed) as refused:
        call(fake)

    assert str(refused.value).startswith("404 Not Found: 404 page not found (FakeClient serves no Doohickey in ")
    assert "FakeClient(kinds=[...]) or serve() it" in str(refused.value)


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            kinds.Kind(GADGET.api_version, "Gadget", "gadget"),
            'serves Gadget in toys.example.com/v1 as "gadgets", not "gadget"',
        ),
        (
            kinds.Kind(GADGET.api_version, "Gadget", "gadgets", namespaced=False),
            "serves Gadget in toys.example.com/v1 namespaced, not cluster-scoped",
        ),
        (
            kinds.Kind(GADGET.api_version, "Gadget", "gadget", namespaced=False),
            'serves Gadget in toys.example.com/v1 as "gadgets", namespaced, not "gadget", cluster-scoped',
        ),
    ],
    ids=["plural", "scope", "both"],
)
def test_require_served_refuses_a_kind_declared_with_another_plural_or_scope_naming_both(
    fake: FakeClient, declared: kinds.Kind, message: str
) -> None:
    with pytest.raises(errors.NotFound) as caught:
        fake.require_served([declared])

    assert str(caught.value) == f"404 NotFound: the server {message}"


@pytest.mark.parametrize(("stored", "tested"), [(True, 1), (1, True), (1, 1.0)], ids=["true-1", "1-true", "1-1.0"])
def test_a_json_patch_test_of_an_equal_python_value_of_another_json_type_fails_as_on_the_api_server(
    fake: FakeClient, stored: Any, tested: Any
) -> None:
    fake.create(gadget(size=1, enabled=stored))
    guarded = [
        {"op": "test", "path": "/spec/enabled", "value": tested},
        {"op": "replace", "path": "/spec/size", "value": 5},
    ]

    with pytest.raises(errors.Invalid):
        fake.patch(GADGET, "g", guarded, "ns", patch_type="json")

    assert fake.get(GADGET, "g", "ns")["spec"] == {"size": 1, "enabled": stored}


def test_a_failed_json_patch_test_of_a_secret_s_data_names_the_path_never_the_values(fake: FakeClient) -> None:
    """The API server's answer quotes neither the value held nor the one tested (``the server rejected our request due
    to an error in our request``); the fake's named both, a Secret's data in a user's test log."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    fake.create({**secret, "stringData": {"pw": "hunter2-in-clear"}})
    guarded = [{"op": "test", "path": "/data/pw", "value": "aHVudGVyMy1ndWVzc2Vk"}]

    with pytest.raises(errors.Invalid) as raised:
        fake.patch(kinds.builtin("v1", "Secret"), "s", guarded, "ns", patch_type="json")

    said = f"{raised.value} {raised.value.api_message}"
    assert "the test of /data/pw failed: it holds another value than the one tested" in said, said
    assert "aHVudGVyMi1pbi1jbGVhcg" not in said and "aHVudGVyMy1ndWVzc2Vk" not in said, said


def test_a_write_to_the_object_leaves_the_status_and_one_to_the_status_leaves_the_rest(fake: FakeClient) -> None:
    fake.create(gadget(size=1))

    fake.patch(GADGET, "g", {"spec": {"size": 2}, "status": {"phase": "ignored"}}, "ns")
    fake.patch(GADGET, "g", {"spec": {"size": 3}, "status": {"phase": "Running"}}, "ns", subresource="status")

    stored = fake.stored(GADGET, "g", "ns")
    assert stored is not None
    assert (stored["spec"], stored["status"], stored["metadata"]["generation"]) == (
        {"size": 2},
        {"phase": "Running"},
        2,
    )


def test_a_write_that_changes_nothing_keeps_the_resource_version(fake: FakeClient) -> None:
    created = fake.create(gadget())

    again = fake.patch(GADGET, "g", {"spec": {"size": 2}}, "ns")

    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_an_apply_removes_what_the_same_manager_no_longer_applies_and_keeps_what_others_set(fake: FakeClient) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    fake.apply({**body, "data": {"a": "1", "b": "2"}}, field_manager="okt")
    fake.patch(kinds.CONFIG_MAP, "c", {"data": {"theirs": "x"}}, "ns")

    fake.apply({**body, "data": {"a": "1"}}, field_manager="okt")

    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["data"] == {"a": "1", "theirs": "x"}  # type: ignore[index]


_CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}


def test_an_apply_without_force_of_another_manager_s_field_is_a_conflict_naming_it_and_stores_nothing(
    fake: FakeClient,
) -> None:
    applied = fake.apply({**_CM, "data": {"x": "1", "y": "2"}}, field_manager="a")

    with pytest.raises(errors.Conflict) as raised:
        fake.apply({**_CM, "data": {"x": "2", "y": "3", "z": "0"}}, field_manager="b", force=False)

    assert raised.value.api_message == 'Apply failed with 2 conflicts: conflicts with "a":\n- .data.x\n- .data.y'
    assert raised.value.causes == (
        errors.StatusCause("FieldManagerConflict", 'conflict with "a"', ".data.x"),
        errors.StatusCause("FieldManagerConflict", 'conflict with "a"', ".data.y"),
    )
    assert fake.stored(kinds.CONFIG_MAP, "c", "ns") == applied


def test_an_apply_without_force_of_a_field_another_manager_wrote_names_that_manager_and_its_version(
    fake: FakeClient,
) -> None:
    fake.create({**_CM, "data": {"x": "1"}})
    fake.patch(kinds.CONFIG_MAP, "c", {"data": {"z": "1"}}, "ns", field_manager="kubectl-edit")

    with pytest.raises(errors.Conflict) as raised:
        fake.apply({**_CM, "data": {"x": "2", "z": "2"}}, field_manager="b", force=False)

    assert raised.value.api_message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using v1:\n- .data.z\nconflicts with "okt" '
        "using v1:\n- .data.x"
    )


def test_an_apply_without_force_of_the_value_another_manager_applied_shares_the_field(fake: FakeClient) -> None:
    fake.apply({**_CM, "data": {"x": "1", "y": "2"}}, field_manager="a")
    fake.apply({**_CM, "data": {"x": "1"}}, field_manager="b", force=False)

    fake.apply({**_CM, "data": {"y": "2"}}, field_manager="a", force=False)  # x stays, b owns it

    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["data"] == {"x": "1", "y": "2"}  # type: ignore[index]
    with pytest.raises(errors.Conflict, match=r'conflict with "b": \.data\.x'):
        fake.apply({**_CM, "data": {"x": "3"}}, field_manager="a", force=False)


def test_a_forced_apply_takes_another_manager_s_field_which_then_conflicts_with_its_old_owner(
    fake: FakeClient,
) -> None:
    fake.apply({**_CM, "data": {"x": "1"}}, field_manager="a")

    fake.apply({**_CM, "data": {"x": "2"}}, field_manager="b", force=True)

    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["data"] == {"x": "2"}  # type: ignore[index]
    with pytest.raises(errors.Conflict, match=r'conflict with "b": \.data\.x'):
        fake.apply({**_CM, "data": {"x": "1"}}, field_manager="a", force=False)


def test_an_apply_without_force_conflicts_on_a_field_of_another_manager_s_keyed_list_item(fake: FakeClient) -> None:
    def deployment(*images: str) -> dict[str, Any]:
        containers = [{"name": image.partition(":")[0], "image": image} for image in images]
        template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": containers}}
        spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
        meta = {"name": "d", "namespace": "ns"}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}

    fake.apply(deployment("app:1"), field_manager="a")
    fake.apply(deployment("side:1"), field_manager="b", force=False)  # an item no one else holds is free

    with pytest.raises(errors.Conflict) as raised:
        fake.apply(deployment("app:1", "side:2"), field_manager="a", force=False)

    assert [cause.field for cause in raised.value.causes] == ['.spec.template.spec.containers[name="side"].image']


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("spec", "replicas"), ".spec.replicas"),
        (("spec", "ports", patching.Item((("protocol", "TCP"), ("port", 80)))), '.spec.ports[port=80,protocol="TCP"]'),
        (("metadata", "finalizers", patching.Item((("", "a/b"),))), '.metadata.finalizers[="a/b"]'),
    ],
)
def test_a_field_s_path_is_written_as_the_api_server_writes_it_in_a_conflict(path: Any, text: str) -> None:
    assert patching.text(path) == text


_SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}


def test_a_secret_s_string_data_is_written_into_its_data_by_every_write_and_never_answered(fake: FakeClient) -> None:
    created = fake.create({**_SECRET, "data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "y"}})
    patched = fake.patch(SECRET, "s", {"stringData": {"c": "zé"}}, "ns")
    applied = fake.apply({**_SECRET, "stringData": {"d": "1"}}, field_manager="a")
    fake.apply({**_SECRET, "data": {"e": "eA=="}}, field_manager="a")  # d was never a's to remove

    assert created["data"] == {"a": "eA==", "b": "eQ=="}
    assert patched["data"] == {"a": "eA==", "b": "eQ==", "c": "esOp"}
    assert applied["data"] == {"a": "eA==", "b": "eQ==", "c": "esOp", "d": "MQ=="}
    stored = fake.stored(SECRET, "s", "ns")
    assert stored is not None and "stringData" not in stored and "stringData" not in created
    assert stored["data"] == {"a": "eA==", "b": "eQ==", "c": "esOp", "d": "MQ==", "e": "eA=="}


def test_an_apply_that_creates_a_secret_writes_its_string_data_into_its_data(fake: FakeClient) -> None:
    applied = fake.apply({**_SECRET, "stringData": {"g": "3"}}, field_manager="a")

    assert applied["data"] == {"g": "Mw=="} and "stringData" not in applied
    assert fake.stored(SECRET, "s", "ns") == applied


@pytest.mark.parametrize(
    ("verb", "refused"),
    [
        ("create", errors.BadRequest),
        ("update", errors.BadRequest),
        ("patch", errors.Invalid),
        ("apply", errors.Invalid),  # a 500 server-side apply gives a body it cannot type
    ],
)
def test_a_secret_s_string_data_value_that_is_no_string_is_refused_as_the_api_server_refuses_it(
    fake: FakeClient, verb: str, refused: type[errors.ApiError]
) -> None:
    live = fake.create(_SECRET)
    body = {**_SECRET, "stringData": {"n": 4}}
    send = {
        "create": lambda: fake.create({**body, "metadata": {"name": "t", "namespace": "ns"}}),
        "update": lambda: fake.replace(SECRET, {**live, "stringData": {"n": 4}}),
        "patch": lambda: fake.patch(SECRET, "s", {"stringData": {"n": 4}}, "ns"),
        "apply": lambda: fake.apply(body, field_manager="a"),
    }[verb]

    with pytest.raises(refused, match="stringData"):
        send()
    assert fake.stored(SECRET, "s", "ns") == live


def test_an_object_stored_again_with_put_keeps_what_each_manager_applied(fake: FakeClient) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    applied = fake.apply({**body, "data": {"a": "1", "b": "2"}}, field_manager="okt")
    fake.put({**applied, "data": {"a": "1", "b": "edited"}})

    fake.apply({**body, "data": {"a": "1"}}, field_manager="okt")

    assert fake.stored(kinds.CONFIG_MAP, "c", "ns")["data"] == {"a": "1"}  # type: ignore[index]


def test_lists_filter_by_namespace_and_label_selector(fake: FakeClient) -> None:
    for name, namespace, labels in (("a", "ns", {"app": "x"}), ("b", "ns", {"app": "y"}), ("c", "other", {"app": "x"})):
        fake.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
            }
        )

    items, version = fake.list(kinds.CONFIG_MAP, "ns", label_selector="app=x")

    assert [item["metadata"]["name"] for item in items] == ["a"]
    assert version


def test_a_list_with_a_label_selector_the_api_server_cannot_read_is_a_bad_request(fake: FakeClient) -> None:
    fake.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}})

    with pytest.raises(okt.errors.BadRequest, match="app:web"):
        fake.list(kinds.CONFIG_MAP, "ns", label_selector="app:web")


def test_a_foreground_or_background_delete_takes_the_dependents_and_an_orphaning_one_leaves_them(
    fake: FakeClient,
) -> None:
    for name in ("kept", "gone"):
        owner = fake.create(gadget(name))
        reference = {"apiVersion": GADGET.api_version, "kind": "Gadget", "name": name, "uid": owner["metadata"]["uid"]}
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}
        child["metadata"]["ownerReferences"] = [reference]  # type: ignore[index]
        fake.create(child)

    fake.delete(GADGET, "kept", "ns", propagation="Orphan")
    fake.delete(GADGET, "gone", "ns")

    assert [c["metadata"]["name"] for c in fake.objects(kinds.CONFIG_MAP)] == ["kept"]


def _owned_by(name: str, *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """A ConfigMap naming ``owners`` in its owner references."""
    meta = {"name": name, "namespace": "ns", **meta}
    if owners:
        meta["ownerReferences"] = [
            {
                "apiVersion": o["apiVersion"],
                "kind": o["kind"],
                "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"],
            }
            for o in owners
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_a_deleted_owner_takes_the_dependents_naming_it_when_it_goes_in_the_order_they_were_stored(
    fake: FakeClient,
) -> None:
    a, b = fake.create(gadget("a")), fake.create(gadget("b"))
    fake.create(_owned_by("moved", a))
    fake.put(_owned_by("moved", b))  # put in place of the one naming a
    fake.create(_owned_by("dropped", a))
    fake.patch(
        kinds.CONFIG_MAP,
        "dropped",
        {"metadata": {"ownerReferences": _owned_by("x", b)["metadata"]["ownerReferences"]}},
        "ns",
    )
    fake.create(_owned_by("shared", a, b))
    child = fake.create(_owned_by("child", a))
    fake.create(_owned_by("grandchild", child))
    fake.create(_owned_by("finalized", a, finalizers=["x/y"]))

    fake.delete(GADGET, "a", "ns")

    stored = {c["metadata"]["name"]: c["metadata"] for c in fake.objects(kinds.CONFIG_MAP)}
    assert sorted(stored) == ["dropped", "finalized", "moved", "shared"]
    assert stored["shared"]["ownerReferences"] == _owned_by("x", b)["metadata"]["ownerReferences"]
    assert "deletionTimestamp" in stored["finalized"] and "deletionTimestamp" not in stored["shared"]
    assert int(stored["shared"]["resourceVersion"]) < int(stored["finalized"]["resourceVersion"])


# -- what okt's client can send -------------------------------------------------------------------------------------


class Speed(enum.Enum):
    FAST = "fast"


class Mode(enum.StrEnum):
    FAST = "fast"


VERBS = ["create", "apply", "merge-patch", "json-patch", "update", "put"]


def write(fake: FakeClient, verb: str, spec: dict[Any, Any]) -> dict[str, Any] | None:
    """Write ``spec`` as the spec of the Gadget g with ``verb`` (a patch or an update of the g stored by
    :func:`stored_before`); the answer, None for a ``put``."""
    body = {**gadget(), "spec": spec}
    if verb == "create":
        return fake.create(body)
    if verb == "apply":
        return fake.apply(body, field_manager="test")
    if verb == "put":
        fake.put(body)
        return None
    if verb == "merge-patch":
        return fake.patch(GADGET, "g", {"spec": {"size": None, **spec}}, "ns")
    if verb == "json-patch":
        return fake.patch(GADGET, "g", [{"op": "replace", "path": "/spec", "value": spec}], "ns", patch_type="json")
    return fake.replace(GADGET, {**fake.objects(GADGET)[0], "spec": spec})


def stored_before(fake: FakeClient, verb: str) -> list[dict[str, Any]]:
    """Store the Gadget g a patch or an update of :func:`write` changes; every object stored."""
    if verb in ("merge-patch", "json-patch", "update"):
        fake.put(gadget())
    return fake.objects()


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    ("value", "error"),
    [
        (datetime.datetime(2026, 11, 29, 6, 0, tzinfo=datetime.UTC), TypeError),
        ({"a"}, TypeError),
        (b"bytes", TypeError),
        (Speed.FAST, TypeError),
        (math.nan, ValueError),
        ([math.inf], ValueError),
    ],
    ids=["datetime", "set", "bytes", "enum", "nan", "nested-infinity"],
)
def test_a_write_body_the_client_cannot_encode_raises_what_it_raises_and_nothing_is_counted_or_stored(
    fake: FakeClient, verb: str, value: Any, error: type[Exception]
) -> None:
    before = stored_before(fake, verb)
    counted = fake.stats.snapshot()

    with pytest.raises(error):
        write(fake, verb, {"size": 2, "at": value})

    assert fake.stats.by_verb(counted) == {}
    assert fake.objects() == before


@pytest.mark.parametrize("verb", VERBS)
def test_a_write_body_is_stored_as_the_api_server_decodes_the_json_the_client_sends(
    fake: FakeClient, verb: str
) -> None:
    stored_before(fake, verb)

    answer = write(fake, verb, {"args": ("a", "b"), "ports": {80: "http"}, "mode": Mode.FAST, "ratio": 1.5})

    stored = fake.stored(GADGET, "g", "ns")
    assert stored is not None
    assert stored["spec"] == {"args": ["a", "b"], "ports": {"80": "http"}, "mode": "fast", "ratio": 1.5}
    assert type(stored["spec"]["mode"]) is str
    assert answer is None or answer == stored


def test_every_request_is_counted_as_the_real_client_counts_it(fake: FakeClient) -> None:
    fake.create(gadget())
    fake.get_or_none(GADGET, "missing", "ns")
    fake.patch(GADGET, "g", {"status": {"phase": "x"}}, "ns", subresource="status")
    fake.list(kinds.CONFIG_MAP, "ns")

    assert fake.stats.snapshot() == {
        ("create", "gadgets"): 1,
        ("get", "gadgets"): 1,
        ("patch", "gadgets/status"): 1,
        ("list", "configmaps"): 1,
    }


def test_it_neither_watches_nor_speaks_http(fake: FakeClient) -> None:
    with pytest.raises(NotImplementedError):
        next(iter(fake.watch(GADGET, "ns", resource_version="1")))
    with pytest.raises(NotImplementedError):
        fake.request("GET", "/version", verb="get", resource="version")


# -- a custom kind's map lists ---------------------------------------------------------------------------------------

RACK = kinds.Kind("toys.example.com/v1", "Rack", "racks")
RACK_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "slots": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "side"],
                    "items": {"type": "object", "properties": {"side": {"type": "string", "default": "front"}}},
                }
            },
        }
    },
}


class RackChild(okt.Resource):
    """A child of the custom kind, its class carrying the CRD's schema: ``spec.slots`` is a map list."""

    api_version = RACK.api_version
    kind = RACK.kind
    openapi_schema = RACK_SCHEMA


class SchemalessRackChild(okt.Resource):
    api_version = RACK.api_version
    kind = RACK.kind


def rack(*slots: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RACK.api_version,
        "kind": RACK.kind,
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {"slots": list(slots)},
    }


def slots_of(fake: FakeClient) -> list[dict[str, Any]]:
    stored = fake.stored(RACK, "r", "ns")
    assert stored is not None
    return list(stored["spec"]["slots"])


def test_another_manager_s_item_in_a_custom_kind_s_map_list_survives_okt_s_apply() -> None:
    fake = FakeClient(keyed_lists={RACK: RackChild.keyed_lists})
    fake.apply(rack({"name": "a", "size": 1}), field_manager="okt")
    fake.apply(rack({"name": "probe", "side": "back"}), field_manager="monitor")

    fake.apply(rack({"name": "a", "size": 2}), field_manager="okt")

    assert slots_of(fake) == [{"name": "a", "size": 2}, {"name": "probe", "side": "back"}]


def test_okt_s_own_item_in_a_custom_kind_s_map_list_is_replaced_by_key_and_one_it_no_longer_applies_goes() -> None:
    fake = FakeClient(keyed_lists={RACK: RackChild.keyed_lists})
    fake.apply(rack({"name": "a", "size": 1, "color": "red"}, {"name": "b", "size": 1}), field_manager="okt")
    fake.patch(RACK, "r", {"spec": {"slots": [*slots_of(fake), {"name": "c", "size": 9}]}}, "ns")

    # "side" left out is the schema's default, "front": the same key as the item stored with it.
    fake.apply(rack({"name": "d", "size": 4}, {"name": "a", "side": "front", "size": 2}), field_manager="okt")

    assert slots_of(fake) == [
        {"name": "a", "side": "front", "size": 2},
        {"name": "c", "size": 9},
        {"name": "d", "size": 4},
    ]


@pytest.mark.parametrize(
    "given",
    [
        pytest.param({}, id="none-given"),
        pytest.param({"keyed_lists": {RACK: SchemalessRackChild.keyed_lists}}, id="class-without-schema"),
    ],
)
def test_an_apply_replaces_a_custom_kind_s_list_whole_without_its_schema(given: dict[str, Any]) -> None:
    fake = FakeClient(kinds=[RACK], **given)
    fake.apply(rack({"name": "a", "size": 1}), field_manager="okt")
    fake.apply(rack({"name": "probe", "side": "back"}), field_manager="monitor")

    fake.apply(rack({"name": "a", "size": 2}), field_manager="okt")

    assert slots_of(fake) == [{"name": "a", "size": 2}]


def test_a_merge_patch_replaces_a_custom_kind_s_map_list_whole() -> None:
    fake = FakeClient(keyed_lists={RACK: RackChild.keyed_lists})
    fake.apply(rack({"name": "a", "size": 1}), field_manager="okt")

    fake.patch(RACK, "r", {"spec": {"slots": [{"name": "b"}]}}, "ns")

    assert slots_of(fake) == [{"name": "b"}]


@pytest.mark.parametrize(
    ("keyed_lists", "error", "message"),
    [
        pytest.param(
            {kinds.CONFIG_MAP: RackChild.keyed_lists},
            ValueError,
            "ConfigMap of v1 is a built-in kind",
            id="built-in-kind",
        ),
        pytest.param({RACK: RACK_SCHEMA}, TypeError, "Rack of toys.example.com/v1: a dict", id="schema-not-lists"),
    ],
)
def test_keyed_lists_the_fake_cannot_take_are_refused(keyed_lists: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        FakeClient(keyed_lists=keyed_lists)


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.get(SECRET, "", "ns"),
        lambda f: f.get_or_none(SECRET, "", "ns"),
        lambda f: f.patch(SECRET, "", {"metadata": {"labels": {"a": "b"}}}, "ns"),
        lambda f: f.replace(
            SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "", "namespace": "ns"}}
        ),
        lambda f: f.apply(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "", "namespace": "ns"}}, field_manager="okt"
        ),
        lambda f: f.delete(SECRET, "", "ns"),
        lambda f: f.replace(SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "ns"}}),
        lambda f: f.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "ns"}}, field_manager="okt"),
    ],
    ids=["get", "get_or_none", "patch", "replace", "apply", "delete", "replace-unnamed", "apply-unnamed"],
)
def test_an_empty_name_is_refused_as_the_client_refuses_it(fake: FakeClient, call: Any) -> None:
    fake.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ns"}})
    before = fake.stats.snapshot()

    with pytest.raises(okt.InvalidSpec, match="Secret name '': an object's name may not be empty"):
        call(fake)

    assert fake.stored(SECRET, "db", "ns") is not None
    assert fake.stats.delta(before) == {}  # refused before any request, as the client refuses it: nothing counted


@pytest.mark.parametrize("name", ["db/", "db/status", ".", "..", "db%2F"])
@pytest.mark.parametrize(
    "call",
    [
        lambda f, name: f.get(SECRET, name, "ns"),
        lambda f, name: f.get_or_none(SECRET, name, "ns"),
        lambda f, name: f.patch(SECRET, name, {"metadata": {"labels": {"a": "b"}}}, "ns"),
        lambda f, name: f.delete(SECRET, name, "ns"),
    ],
    ids=["get", "get_or_none", "patch", "delete"],
)
def test_a_name_that_is_no_path_segment_is_refused_as_the_client_refuses_it(
    fake: FakeClient, call: Any, name: str
) -> None:
    fake.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ns"}})

    with pytest.raises(
        okt.InvalidSpec, match=re.escape("an object's name may not be '.' or '..', nor hold '/' or '%'")
    ):
        call(fake, name)

    assert fake.stored(SECRET, "db", "ns") is not None


# -- fields that never change in place -------------------------------------------------------------------------------


def _workload(kind: str, app: str) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "template": template, "serviceName": "w"},
    }


def _job(app: str) -> dict[str, Any]:
    """A Job running its Pods to completion (a workload's template restarts them ``Always``, which a Job may not),
    selecting them by the selector the server gives it (one it is given is refused)."""
    job = _workload("Job", app) | {"apiVersion": "batch/v1"}
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    del job["spec"]["selector"]
    return job


_IMMUTABLE_CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "ns"}}
_IMMUTABLE_SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w", "namespace": "ns"}}


@pytest.mark.parametrize(
    ("created", "change", "refused"),
    [
        (
            _workload("Deployment", "a"),
            # Its Pods relabelled with it: a selector that selects none of them is refused first.
            {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}}}},
            ["spec.selector"],
        ),
        (
            _workload("ReplicaSet", "a"),
            {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}}}},
            ["spec.selector"],
        ),
        (
            _workload("DaemonSet", "a"),
            {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}}}},
            ["spec.selector"],
        ),
        (_workload("StatefulSet", "a"), {"spec": {"volumeClaimTemplates": [{"metadata": {"name": "d"}}]}}, ["spec"]),
        (_workload("StatefulSet", "a"), {"spec": {"serviceName": "other"}}, ["spec"]),
        (
            _job("a"),
            {"spec": {"template": {"metadata": {"labels": {"app": "b"}}}, "completions": 2}},
            ["spec.template", "spec.completions"],
        ),
        ({**_IMMUTABLE_CM, "immutable": True, "data": {"a": "1"}}, {"data": {"a": "2"}}, ["data"]),
        (
            {**_IMMUTABLE_CM, "immutable": True},
            {"binaryData": {"b": "eA=="}, "immutable": False},
            ["binaryData", "immutable"],
        ),
        ({**_IMMUTABLE_SECRET, "immutable": True, "data": {"a": "eA=="}}, {"stringData": {"a": "y"}}, ["data"]),
    ],
    ids=[
        "deployment",
        "replica-set",
        "daemon-set",
        "stateful-set-claims",
        "stateful-set-service",
        "job",
        "config-map",
        "config-map-binary-data",
        "secret-string-data",
    ],
)
@pytest.mark.parametrize("verb", ["patch", "apply", "replace"])
def test_a_write_changing_a_field_that_never_changes_in_place_is_refused_naming_it_as_the_api_server_does(
    fake: FakeClient, created: dict[str, Any], change: dict[str, Any], refused: list[str], verb: str
) -> None:
    kind = fake.kind_of(created)
    stored = fake.create(created)
    name, namespace = "w", "ns"

    with pytest.raises(errors.Invalid) as raised:
        if verb == "patch":
            fake.patch(kind, name, change, namespace)
        elif verb == "apply":
            fake.apply(patching.merge_patch(created, change), field_manager="okt")
        else:
            fake.replace(kind, patching.merge_patch(stored, change))

    assert [cause.field for cause in raised.value.causes] == refused
    assert fake.stored(kind, name, namespace) == stored


@pytest.mark.parametrize(
    ("created", "change"),
    [
        (_workload("Deployment", "a"), {"spec": {"replicas": 3}, "metadata": {"labels": {"x": "1"}}}),
        (_workload("StatefulSet", "a"), {"spec": {"replicas": 3, "template": {"metadata": {"labels": {"v": "2"}}}}}),
        (_workload("StatefulSet", "a"), {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}),
        ({**_IMMUTABLE_CM, "data": {"a": "1"}}, {"data": {"a": "2"}, "immutable": True}),
        ({**_IMMUTABLE_CM, "immutable": True, "data": {"a": "1"}}, {"metadata": {"labels": {"x": "1"}}}),
    ],
    ids=[
        "deployment-replicas",
        "stateful-set-template",
        "stateful-set-strategy",
        "config-map-made-immutable",
        "immutable-config-map-labels",
    ],
)
def test_a_write_changing_only_what_may_change_goes_through(
    fake: FakeClient, created: dict[str, Any], change: dict[str, Any]
) -> None:
    kind = fake.kind_of(created)
    fake.create(created)

    written = fake.patch(kind, "w", change, "ns")

    assert fake.stored(kind, "w", "ns") == written == patching.merge_patch(written, change)


class GadgetDeployment(okt.MutableResource):
    """A child whose selector follows the custom resource's size: a change of the size cannot be made in place."""

    api_version = "apps/v1"
    kind = "Deployment"
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector: {matchLabels: {app: "{{ name }}", size: "{{ cr.spec.size }}"}}
  template:
    metadata: {labels: {app: "{{ name }}", size: "{{ cr.spec.size }}"}}
    spec: {containers: [{name: app, image: busybox}]}
"""


class DeployingGadgetReconciler(GadgetReconciler):
    owns = (GadgetDeployment,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GadgetDeployment(ctx.cr)]


def test_a_reconcile_whose_template_changes_a_child_s_selector_reports_it_immutable_and_leaves_the_child(
    fake: FakeClient,
) -> None:
    fake.put(gadget(size=1))
    assert reconcile(fake, DeployingGadgetReconciler()).outcome.kind is okt.OutcomeKind.DONE
    before = fake.stored(DEPLOYMENT, "g", "ns")
    fake.patch(GADGET, "g", {"spec": {"size": 2}}, "ns")

    reconcile(fake, DeployingGadgetReconciler())

    assert (ready(fake)["status"], ready(fake)["reason"]) == ("False", "ImmutableField")
    assert fake.stored(DEPLOYMENT, "g", "ns") == before


def test_an_apply_that_changes_only_who_owns_a_field_is_a_write_with_a_new_resource_version(fake: FakeClient) -> None:
    applied = fake.apply({**_CM, "data": {"x": "1", "y": "2"}}, field_manager="a")
    shared = fake.apply({**_CM, "data": {"x": "1"}}, field_manager="b")
    again = fake.apply({**_CM, "data": {"x": "1"}}, field_manager="b")
    named = fake.apply(_CM, field_manager="c")  # owns nothing: the server keeps no name in managedFields
    dropped = fake.apply({**_CM, "data": {"y": "2"}}, field_manager="a")  # x stays: b owns it too

    versions = [answer["metadata"]["resourceVersion"] for answer in (applied, shared, again, named, dropped)]
    assert versions[1] != versions[0] and versions[2] == versions[3] == versions[1] and versions[4] != versions[1]
    assert dropped["data"] == applied["data"]
    assert fake.stored(kinds.CONFIG_MAP, "c", "ns") == dropped


SERVICE = kinds.BUILTIN[("v1", "Service")]
_SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}}


def test_a_service_gets_a_cluster_ip_of_its_own_that_no_write_changes(fake: FakeClient) -> None:
    first = fake.create({**_SERVICE, "spec": {"ports": [{"port": 80}]}})
    second = fake.apply({**_SERVICE, "metadata": {"name": "t", "namespace": "ns"}}, field_manager="a")
    ip = first["spec"]["clusterIP"]

    assert first["spec"]["clusterIPs"] == [ip] and second["spec"]["clusterIPs"] == [second["spec"]["clusterIP"]]
    assert ip != second["spec"]["clusterIP"] and ip.startswith("10.96.")
    with pytest.raises(errors.Invalid) as raised:
        fake.patch(SERVICE, "s", {"spec": {"clusterIP": "10.96.0.77"}}, "ns")
    assert raised.value.immutable_fields == ("spec.clusterIPs[0]",)
    assert raised.value.api_message == (
        'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.0.77"}: may not change once set'
    )
    live = fake.get(SERVICE, "s", "ns")
    without = {k: v for k, v in live["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    with pytest.raises(errors.Invalid, match=r"primary clusterIP can not be unset"):
        fake.replace(SERVICE, {**live, "spec": without})
    with pytest.raises(errors.Invalid, match=r"provided IP is already allocated"):
        fake.create({**_SERVICE, "metadata": {"name": "u", "namespace": "ns"}, "spec": {"clusterIP": ip}})
    assert fake.patch(SERVICE, "s", {"spec": {"clusterIPs": None}}, "ns") == live


CLAIM = kinds.BUILTIN[("v1", "PersistentVolumeClaim")]


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"resources": {"requests": {"storage": "2Gi"}}}, ("spec",)),
        ({"storageClassName": "fast"}, ("spec",)),
        ({"volumeMode": "Block"}, ("spec", "volumeMode")),
    ],
)
def test_an_unbound_claim_s_spec_does_not_change(fake: FakeClient, change: dict[str, Any], fields: Any) -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    created = fake.create({**_CM, "kind": "PersistentVolumeClaim", "spec": spec})

    with pytest.raises(errors.Invalid) as raised:
        fake.patch(CLAIM, "c", {"spec": change}, "ns")

    assert raised.value.immutable_fields == fields
    assert fake.stored(CLAIM, "c", "ns") == created


def test_a_claim_takes_its_volume_once_and_a_bound_claim_more_storage(fake: FakeClient) -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    fake.create({**_CM, "kind": "PersistentVolumeClaim", "spec": spec})

    fake.patch(CLAIM, "c", {"spec": {"volumeName": "pv1"}}, "ns")
    with pytest.raises(errors.Invalid):
        fake.patch(CLAIM, "c", {"spec": {"volumeName": "pv2"}}, "ns")
    fake.patch(CLAIM, "c", {"status": {"phase": "Bound"}}, "ns", subresource="status")
    grown = fake.patch(CLAIM, "c", {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}, "ns")

    assert grown["spec"]["resources"] == {"requests": {"storage": "2Gi"}}


STATEFUL_SET = kinds.BUILTIN[("apps/v1", "StatefulSet")]


def test_a_stateful_set_update_that_spells_out_the_server_s_defaults_is_no_change_of_its_immutable_spec(
    fake: FakeClient,
) -> None:
    template = {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    spec = {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}}, "template": template}
    fake.create(
        {**_CM, "apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {**spec, "volumeClaimTemplates": [claim]}}
    )
    as_the_server_holds_it = {
        "podManagementPolicy": "OrderedReady",
        "revisionHistoryLimit": 10,
        "volumeClaimTemplates": [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "creationTimestamp": None},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"},
            }
        ],
    }

    written = fake.patch(STATEFUL_SET, "c", {"spec": as_the_server_holds_it}, "ns")

    assert written["spec"]["podManagementPolicy"] == "OrderedReady"
    with pytest.raises(errors.Invalid, match="updates to statefulset spec"):
        fake.patch(STATEFUL_SET, "c", {"spec": {"podManagementPolicy": "Parallel"}}, "ns")


def test_a_job_s_completions_spelt_out_as_the_server_defaulted_them_are_no_change(fake: FakeClient) -> None:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    fake.create({**_CM, "apiVersion": "batch/v1", "kind": "Job", "spec": {"template": template}})
    job = kinds.BUILTIN[("batch/v1", "Job")]

    fake.patch(job, "c", {"spec": {"parallelism": 2}}, "ns")
    fake.patch(job, "c", {"spec": {"completions": 1}}, "ns")

    with pytest.raises(errors.Invalid) as raised:
        fake.patch(job, "c", {"spec": {"completions": 2}}, "ns")
    assert raised.value.immutable_fields == ("spec.completions",)


def test_a_write_spelling_out_a_default_or_a_quantity_otherwise_is_no_change(fake: FakeClient) -> None:
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "1000m"}}}
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [container]}}
    spec = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    body = {**_CM, "apiVersion": "apps/v1", "kind": "Deployment", "spec": spec}
    created = fake.apply(body, field_manager="a")
    spelt = copy.deepcopy(body)
    spelt["spec"]["strategy"] = {"type": "RollingUpdate"}
    spelt["spec"]["template"]["spec"]["containers"][0].update(
        imagePullPolicy="IfNotPresent", resources={"requests": {"cpu": "1"}}
    )

    patched = fake.patch(DEPLOYMENT, "c", {"spec": {"strategy": {"type": "RollingUpdate"}}}, "ns")
    replaced = fake.replace(DEPLOYMENT, {**spelt, "metadata": created["metadata"]})

    assert created["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert patched == replaced == created


def test_a_node_port_service_keeps_its_node_ports_through_an_apply_that_leaves_them_out(fake: FakeClient) -> None:
    # Kubernetes 1.20 refuses an apply of a port without its protocol (a key of the list, with no default there).
    body = {**_SERVICE, "spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}}
    created = fake.apply(body, field_manager="a")
    other = fake.create({**body, "metadata": {"name": "t", "namespace": "ns"}})

    again = fake.apply(body, field_manager="a")

    assert again == created
    assert created["spec"]["ports"][0]["nodePort"] != other["spec"]["ports"][0]["nodePort"]
    assert created["spec"]["externalTrafficPolicy"] == "Cluster"


def _deployment(**spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "app:1"}]}}
    selector = {"matchLabels": {"app": "a"}}
    return {
        **_CM,
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"selector": selector, "template": template, **spec},
    }


def test_an_object_stored_with_put_holds_the_defaults_a_create_gives_it(fake: FakeClient) -> None:
    put = fake.put(_deployment())
    created = fake.create({**_deployment(), "metadata": {"name": "d", "namespace": "ns"}})

    assert put["spec"] == created["spec"]
    assert put["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert put["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize("verb", ["patch", "replace"])
def test_a_write_of_the_spec_put_stored_is_no_change(fake: FakeClient, verb: str) -> None:
    # (An apply is a change even so: its manager's managedFields are new, a new resourceVersion on the server too.)
    stored = fake.put(_deployment(replicas=2))

    if verb == "patch":
        written = fake.patch(DEPLOYMENT, "c", {"spec": _deployment(replicas=2)["spec"]}, "ns")
    else:
        written = fake.replace(DEPLOYMENT, {**_deployment(replicas=2), "metadata": stored["metadata"]})

    assert written["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert written == fake.stored(DEPLOYMENT, "c", "ns") == stored


def _node_port(name: str, *ports: int, kind: str = "NodePort") -> dict[str, Any]:
    listed = [{"name": f"p{i}", "port": 80 + i, "protocol": "TCP", "nodePort": port} for i, port in enumerate(ports)]
    return {**_SERVICE, "metadata": {"name": name, "namespace": "ns"}, "spec": {"type": kind, "ports": listed}}


def _refused_port(raised: pytest.ExceptionInfo[errors.Invalid], field: str, port: int) -> None:
    assert raised.value.status == 422 and raised.value.api_reason == "Invalid"
    assert [(cause.reason, cause.field) for cause in raised.value.causes] == [("FieldValueInvalid", field)]
    assert raised.value.api_message.endswith(f"{field}: Invalid value: {port}: provided port is already allocated")


@pytest.mark.parametrize("kind", ["NodePort", "LoadBalancer"])
@pytest.mark.parametrize("verb", ["create", "apply"])
def test_a_create_naming_a_node_port_another_service_holds_is_invalid(fake: FakeClient, verb: str, kind: str) -> None:
    fake.create(_node_port("a", 30100))
    body = _node_port("b", 30101, 30100, kind=kind)

    with pytest.raises(errors.Invalid) as raised:
        fake.create(body) if verb == "create" else fake.apply(body, field_manager="m")

    _refused_port(raised, "spec.ports[1].nodePort", 30100)
    assert raised.value.api_message.startswith('Service "b" is invalid: ')
    assert fake.stored(SERVICE, "b", "ns") is None


@pytest.mark.parametrize("verb", ["patch", "replace", "apply"])
def test_an_update_to_a_node_port_another_service_holds_is_invalid(fake: FakeClient, verb: str) -> None:
    fake.create(_node_port("a", 30100))
    before = fake.create(_node_port("b", 30200))

    with pytest.raises(errors.Invalid) as raised:
        if verb == "patch":
            fake.patch(SERVICE, "b", {"spec": _node_port("b", 30100)["spec"]}, "ns")
        elif verb == "replace":
            fake.replace(SERVICE, {**before, "spec": {**before["spec"], **_node_port("b", 30100)["spec"]}})
        else:
            fake.apply(_node_port("b", 30100), field_manager="m")

    _refused_port(raised, "spec.ports[0].nodePort", 30100)
    assert fake.stored(SERVICE, "b", "ns") == before


def test_a_node_port_named_twice_in_one_service_is_a_duplicate(fake: FakeClient) -> None:
    with pytest.raises(errors.Invalid) as raised:
        fake.create(_node_port("a", 30300, 30300))

    assert [(cause.reason, cause.field) for cause in raised.value.causes] == [
        ("FieldValueDuplicate", "spec.ports[1].nodePort")
    ]


def test_a_health_check_node_port_is_held_as_a_node_port(fake: FakeClient) -> None:
    lb = _node_port("a", 30501, kind="LoadBalancer")
    fake.create({**lb, "spec": {**lb["spec"], "externalTrafficPolicy": "Local", "healthCheckNodePort": 30500}})

    with pytest.raises(errors.Invalid) as raised:
        fake.create(_node_port("b", 30500))

    _refused_port(raised, "spec.ports[0].nodePort", 30500)


@pytest.mark.parametrize(
    "release",
    [
        pytest.param(lambda fake: fake.delete(SERVICE, "a", "ns"), id="deleted"),
        pytest.param(lambda fake: fake.patch(SERVICE, "a", {"spec": {"type": "ClusterIP"}}, "ns"), id="cluster-ip"),
        pytest.param(
            lambda fake: fake.patch(SERVICE, "a", {"spec": _node_port("a", 30101)["spec"]}, "ns"), id="other-port"
        ),
    ],
)
def test_a_node_port_is_free_again_once_its_service_is_deleted_made_cluster_ip_or_moved(
    fake: FakeClient, release: Any
) -> None:
    fake.create(_node_port("a", 30100))

    release(fake)
    taken = fake.create(_node_port("b", 30100))

    assert taken["spec"]["ports"][0]["nodePort"] == 30100


def test_a_cluster_ip_freed_is_the_lowest_free_one_given_again(fake: FakeClient) -> None:
    for name in ("a", "b", "c"):
        fake.create({**_SERVICE, "metadata": {"name": name, "namespace": "ns"}})

    fake.delete(SERVICE, "b", "ns")
    ips = [
        fake.create({**_SERVICE, "metadata": {"name": name, "namespace": "ns"}})["spec"]["clusterIP"] for name in "de"
    ]
    fake.patch(SERVICE, "a", {"spec": {"type": "ExternalName", "externalName": "a.example.com"}}, "ns")

    assert ips == ["10.96.0.3", "10.96.0.5"]
    made_back = fake.patch(SERVICE, "a", {"spec": {"type": "ClusterIP", "externalName": None}}, "ns")
    assert made_back["spec"]["clusterIPs"] == ["10.96.0.2"]  # freed by ExternalName, the lowest free again


def test_a_node_port_released_is_handed_out_again_only_once_the_range_has_run_out(fake: FakeClient) -> None:
    # One Service holds every port of the range but the last two; the server picks free ports at random, so one
    # just released is not handed out again at once.
    fake.create(_node_port("big", *[0] * (len(range(30000, 32768)) - 2)))
    first = fake.create(_node_port("a", 0))
    fake.delete(SERVICE, "a", "ns")
    second = fake.create(_node_port("b", 0))
    fake.delete(SERVICE, "b", "ns")
    third = fake.create(_node_port("c", 0))

    assert [s["spec"]["ports"][0]["nodePort"] for s in (first, second, third)] == [32766, 32767, 32766]


def test_a_service_needing_more_node_ports_than_were_never_handed_out_is_given_free_ones(fake: FakeClient) -> None:
    fake.create(_node_port("big", *[0] * (len(range(30000, 32768)) - 2)))
    fake.create(_node_port("a", 0))
    fake.create({**_SERVICE, "metadata": {"name": "x", "namespace": "ns"}})
    fake.delete(SERVICE, "a", "ns")

    created = fake.create(_node_port("b", 0, 0))  # 32767 never handed out, 32766 released by a

    assert sorted(port["nodePort"] for port in created["spec"]["ports"]) == [32766, 32767]


def _range_full(raised: pytest.ExceptionInfo[errors.ServerError], what: str) -> None:
    failed = f"failed to allocate a {what}: range is full"
    assert (raised.value.status, raised.value.api_reason) == (500, "InternalError")
    assert raised.value.api_message == f"Internal error occurred: {failed}"
    assert [cause.message for cause in raised.value.causes] == [failed]


def test_a_service_needing_a_node_port_when_every_one_is_held_is_the_servers_500(fake: FakeClient) -> None:
    fake.create(_node_port("big", *[0] * (len(range(30000, 32768)) - 1)))
    before = fake.create(_node_port("a", 0))  # the last free one
    lb = _node_port("b", 0, kind="LoadBalancer")

    with pytest.raises(errors.ServerError) as created:
        fake.create(lb)
    with pytest.raises(errors.ServerError) as added:
        fake.patch(SERVICE, "a", {"spec": _node_port("a", before["spec"]["ports"][0]["nodePort"], 0)["spec"]}, "ns")
    with pytest.raises(errors.ServerError) as health_check:
        fake.patch(SERVICE, "a", {"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}}, "ns")

    _range_full(created, "nodePort")
    _range_full(added, "nodePort")
    _range_full(health_check, "HealthCheck NodePort 0")
    assert fake.stored(SERVICE, "b", "ns") is None
    assert fake.stored(SERVICE, "a", "ns") == before


def test_an_update_leaving_a_node_port_out_is_given_one_never_handed_out(fake: FakeClient) -> None:
    created = fake.create(_node_port("a", 0, 0))
    fake.create(_node_port("b", 30005))

    moved = fake.patch(SERVICE, "a", {"spec": {"ports": [{"name": "p0", "port": 80, "protocol": "TCP"}]}}, "ns")
    again = fake.create(_node_port("c", 0, 0))

    assert [port["nodePort"] for port in created["spec"]["ports"]] == [30000, 30001]
    assert [port["nodePort"] for port in moved["spec"]["ports"]] == [30002]
    assert [port["nodePort"] for port in again["spec"]["ports"]] == [30003, 30004]


def test_services_stored_with_put_hold_their_cluster_ips_and_node_ports_until_replaced(fake: FakeClient) -> None:
    held = _node_port("a", 30100)
    fake.put({**held, "spec": {**held["spec"], "clusterIP": "10.96.0.2", "clusterIPs": ["10.96.0.2"]}})
    fake.put({**_node_port("b", 30100), "spec": {**_node_port("b", 30100)["spec"], "clusterIP": "10.96.0.3"}})
    fake.put({**_node_port("a", 30200), "spec": {**_node_port("a", 30200)["spec"], "clusterIP": "10.96.0.4"}})

    with pytest.raises(errors.Invalid) as raised:
        fake.create(_node_port("c", 30100))  # b holds it still
    _refused_port(raised, "spec.ports[0].nodePort", 30100)
    fake.delete(SERVICE, "b", "ns")
    created = fake.create(_node_port("c", 30100))

    assert created["spec"]["clusterIP"] == "10.96.0.2"  # a's first cluster IP, replaced
    assert created["spec"]["ports"][0]["nodePort"] == 30100


def test_a_service_made_cluster_ip_loses_its_node_ports_and_traffic_policy(fake: FakeClient) -> None:
    lb = _node_port("a", 30501, kind="LoadBalancer")
    fake.create({**lb, "spec": {**lb["spec"], "externalTrafficPolicy": "Local"}})

    node_port = fake.patch(SERVICE, "a", {"spec": {"type": "NodePort"}}, "ns")
    cluster_ip = fake.patch(SERVICE, "a", {"spec": {"type": "ClusterIP"}}, "ns")

    assert "healthCheckNodePort" not in node_port["spec"] and node_port["spec"]["externalTrafficPolicy"] == "Local"
    assert node_port["spec"]["ports"][0]["nodePort"] == 30501
    assert "externalTrafficPolicy" not in cluster_ip["spec"]
    assert [port.get("nodePort") for port in cluster_ip["spec"]["ports"]] == [None]


_RECREATE = "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"


def _refused_strategy(raised: pytest.ExceptionInfo[errors.Invalid]) -> None:
    assert [(cause.reason, cause.field) for cause in raised.value.causes] == [
        ("FieldValueForbidden", "spec.strategy.rollingUpdate")
    ]
    assert raised.value.api_message == f'Deployment.apps "c" is invalid: {_RECREATE}'


@pytest.mark.parametrize("rolling_update", [{}, {"maxSurge": 1}])
@pytest.mark.parametrize("verb", ["create", "apply"])
def test_a_recreate_deployment_with_a_rolling_update_is_invalid(
    fake: FakeClient, verb: str, rolling_update: dict[str, Any]
) -> None:
    body = _deployment(strategy={"type": "Recreate", "rollingUpdate": rolling_update})

    with pytest.raises(errors.Invalid) as raised:
        fake.create(body) if verb == "create" else fake.apply(body, field_manager="m")

    _refused_strategy(raised)
    assert fake.stored(DEPLOYMENT, "c", "ns") is None


@pytest.mark.parametrize(
    ("patch", "patch_type"),
    [
        ({"spec": {"strategy": {"type": "Recreate"}}}, "merge"),
        ({"spec": {"strategy": {"type": "Recreate"}}}, "strategic"),
        ([{"op": "replace", "path": "/spec/strategy/type", "value": "Recreate"}], "json"),
    ],
)
def test_a_patch_to_recreate_that_leaves_the_defaulted_rolling_update_is_invalid(
    fake: FakeClient, patch: Any, patch_type: str
) -> None:
    created = fake.create(_deployment())

    with pytest.raises(errors.Invalid) as raised:
        fake.patch(DEPLOYMENT, "c", patch, "ns", patch_type=patch_type)

    _refused_strategy(raised)
    assert fake.stored(DEPLOYMENT, "c", "ns") == created


def test_an_apply_to_recreate_leaves_the_rolling_update_it_did_not_apply_and_is_invalid(fake: FakeClient) -> None:
    fake.apply(_deployment(strategy={"type": "RollingUpdate"}), field_manager="m")

    with pytest.raises(errors.Invalid) as raised:
        fake.apply(_deployment(strategy={"type": "Recreate"}), field_manager="m")

    _refused_strategy(raised)


def test_an_update_to_recreate_that_drops_the_rolling_update_is_taken(fake: FakeClient) -> None:
    live = fake.create(_deployment())
    kept = copy.deepcopy(live)
    kept["spec"]["strategy"]["type"] = "Recreate"
    with pytest.raises(errors.Invalid) as raised:
        fake.replace(DEPLOYMENT, kept)
    _refused_strategy(raised)

    replaced = fake.replace(DEPLOYMENT, {**live, "spec": {**live["spec"], "strategy": {"type": "Recreate"}}})
    back = fake.patch(DEPLOYMENT, "c", {"spec": {"strategy": {"type": "RollingUpdate"}}}, "ns")
    patched = fake.patch(DEPLOYMENT, "c", {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}, "ns")

    assert replaced["spec"]["strategy"] == patched["spec"]["strategy"] == {"type": "Recreate"}
    assert back["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}


# -- what the API server's validation refuses (okt.testing.validation.RULES) -----------------------------------------


def _causes(raised: pytest.ExceptionInfo[errors.Invalid]) -> list[tuple[str, str, str]]:
    assert raised.value.status == 422 and raised.value.api_reason == "Invalid"
    return [(cause.reason, cause.field, cause.message) for cause in raised.value.causes]


def test_each_unnamed_port_of_a_service_of_several_is_required_and_one_port_may_go_unnamed(fake: FakeClient) -> None:
    ports = [{"name": "a", "port": 80}, {"port": 81}, {"port": 82}]
    with pytest.raises(errors.Invalid) as raised:
        fake.create({**_SERVICE, "spec": {"ports": ports}})
    one = fake.create({**_SERVICE, "spec": {"ports": [{"port": 81}]}})
    with pytest.raises(errors.Invalid):
        fake.patch(SERVICE, "s", {"spec": {"ports": ports[1:]}}, "ns")

    assert _causes(raised) == [
        ("FieldValueRequired", "spec.ports[1].name", "Required value"),
        ("FieldValueRequired", "spec.ports[2].name", "Required value"),
    ]
    assert raised.value.api_message == (
        'Service "s" is invalid: [spec.ports[1].name: Required value, spec.ports[2].name: Required value]'
    )
    assert fake.stored(SERVICE, "s", "ns") == one


_UNKNOWN_STRATEGY = (
    'Unsupported value: apps.DeploymentStrategy{Type:"Blue", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
    'supported values: "Recreate", "RollingUpdate"'
)


def test_a_deployment_strategy_of_an_unknown_type_is_not_supported(fake: FakeClient) -> None:
    with pytest.raises(errors.Invalid) as raised:
        fake.create(_deployment(strategy={"type": "Blue"}))
    refused = _causes(raised)
    fake.create(_deployment())
    with pytest.raises(errors.Invalid) as kept:
        fake.patch(DEPLOYMENT, "c", {"spec": {"strategy": {"type": "Blue"}}}, "ns")

    assert refused == [("FieldValueNotSupported", "spec.strategy", _UNKNOWN_STRATEGY)]
    assert raised.value.api_message == f'Deployment.apps "c" is invalid: spec.strategy: {_UNKNOWN_STRATEGY}'
    # The defaulted rollingUpdate is kept: the server writes its address, which changes with each request.
    ((reason, field, message),) = _causes(kept)
    assert (reason, field) == ("FieldValueNotSupported", "spec.strategy")
    assert re.fullmatch(r".*RollingUpdate:\(\*apps\.RollingUpdateDeployment\)\(0x[0-9a-f]+\)}: supported .*", message)


_NODE_PORT_ON_CLUSTER_IP = (
    "FieldValueForbidden",
    "spec.ports[0].nodePort",
    "Forbidden: may not be used when `type` is 'ClusterIP'",
)


def test_a_service_made_cluster_ip_while_a_write_changes_its_node_port_is_invalid(fake: FakeClient) -> None:
    live = fake.create(_node_port("a", 30100))
    with pytest.raises(errors.Invalid) as changed:
        fake.patch(SERVICE, "a", {"spec": _node_port("a", 30101, kind="ClusterIP")["spec"]}, "ns")
    with pytest.raises(errors.Invalid) as named:
        fake.create(_node_port("b", 30102, kind="ClusterIP"))

    kept = fake.patch(SERVICE, "a", {"spec": _node_port("a", 30100, kind="ClusterIP")["spec"]}, "ns")

    assert _causes(changed) == _causes(named) == [_NODE_PORT_ON_CLUSTER_IP]
    assert changed.value.api_message == f'Service "a" is invalid: spec.ports[0].nodePort: {_NODE_PORT_ON_CLUSTER_IP[2]}'
    assert live["spec"]["ports"][0]["nodePort"] == 30100
    assert [port.get("nodePort") for port in kept["spec"]["ports"]] == [None]


def _on_delete(partition: int) -> str:
    return (
        f"Invalid value: apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}}}: "
        "only allowed for updateStrategy 'RollingUpdate'"
    )


def test_a_stateful_set_deleted_pod_by_pod_may_not_hold_a_rolling_update_even_the_defaulted_one(
    fake: FakeClient,
) -> None:
    body = _workload("StatefulSet", "a")
    with pytest.raises(errors.Invalid) as given:
        fake.create(
            {
                **body,
                "spec": {**body["spec"], "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 2}}},
            }
        )
    fake.create(body)
    with pytest.raises(errors.Invalid) as defaulted:
        fake.patch(STATEFUL_SET, "w", {"spec": {"updateStrategy": {"type": "OnDelete"}}}, "ns")

    cleared = fake.patch(
        STATEFUL_SET, "w", {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}, "ns"
    )

    field = "spec.updateStrategy.rollingUpdate"
    assert _causes(given) + _causes(defaulted) == [
        ("FieldValueInvalid", field, _on_delete(2)),
        ("FieldValueInvalid", field, _on_delete(0)),
    ]
    assert given.value.api_message == f'StatefulSet.apps "w" is invalid: {field}: {_on_delete(2)}'
    assert cleared["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_a_pod_spec_s_refusals_come_container_by_container_as_the_api_server_lists_them(fake: FakeClient) -> None:
    over = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    deployment = _workload("Deployment", "a")
    deployment["metadata"]["labels"] = {"-x": "y"}
    deployment["spec"]["template"]["spec"]["containers"] = [
        {"name": "", "image": "busybox", "resources": over},
        {"name": "", "image": "", "env": [{"name": ""}]},
    ]

    with pytest.raises(errors.Invalid) as raised:
        fake.create(deployment)

    containers = "spec.template.spec.containers"
    assert [(cause.reason, cause.field) for cause in raised.value.causes] == [
        ("FieldValueInvalid", "metadata.labels"),
        ("FieldValueRequired", f"{containers}[0].name"),
        ("FieldValueInvalid", f"{containers}[0].resources.requests"),
        ("FieldValueInvalid", f"{containers}[0].resources.requests"),
        ("FieldValueRequired", f"{containers}[1].name"),
        ("FieldValueDuplicate", f"{containers}[1].name"),
        ("FieldValueRequired", f"{containers}[1].image"),
        ("FieldValueRequired", f"{containers}[1].env[0].name"),
    ]


@pytest.mark.parametrize(
    ("kind", "said"), [("Deployment", "deployment"), ("ReplicaSet", "deployment"), ("DaemonSet", "daemonset")]
)
def test_a_workload_selecting_nothing_is_refused_as_the_api_server_refuses_it(
    fake: FakeClient, kind: str, said: str
) -> None:
    workload = _workload(kind, "a")
    workload["spec"]["selector"] = {"matchLabels": {}}

    with pytest.raises(errors.Invalid, match=f"empty selector is invalid for {said}$"):
        fake.create(workload)


@pytest.mark.parametrize("policy", ["Always", None])
def test_a_job_restarting_its_pods_always_is_refused(fake: FakeClient, policy: str | None) -> None:
    job = _job("a")
    job["spec"]["template"]["spec"]["restartPolicy"] = policy

    with pytest.raises(errors.Invalid, match=r'restartPolicy: Required value: valid values: "OnFailure", "Never"$'):
        fake.create(job)


_QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": "ns"},
                "data": {"k": "not b"},
            },
            "unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data "
            "at input byte 3",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": "ns"},
                "data": {"k": "YQ==YQ"},
            },
            "unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data "
            "at input byte 4",
        ),
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "lots"}}}]},
                    },
                },
            },
            f"unable to convert unstructured object to apps/v1, Kind=Deployment: {_QUANTITY_FORMAT}",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "ns"},
                "spec": {"hard": {"cpu": "1e"}},
            },
            "unable to convert unstructured object to /v1, Kind=ResourceQuota: unable to parse quantity's suffix",
        ),
    ],
    ids=["not base64", "trailing garbage", "quantity", "quantity suffix"],
)
def test_an_apply_the_server_cannot_decode_into_its_kind_is_its_500_and_stores_nothing(
    body: dict[str, Any], message: str
) -> None:
    fake = FakeClient()

    with pytest.raises(errors.Invalid) as refused:
        fake.apply(body, field_manager="m")

    assert (refused.value.status, refused.value.api_message) == (
        500,
        f"failed to convert new object to proper version: {message}",
    )
    assert fake.objects(fake.kind_of(body)) == []


def test_a_create_or_an_update_of_secret_data_that_is_not_base64_is_a_400() -> None:
    fake = FakeClient()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    fake.create({**secret, "data": {"k": "YQ=="}})

    for write in (
        lambda: fake.create({**secret, "metadata": {"name": "t", "namespace": "ns"}, "data": {"k": "abc"}}),
        lambda: fake.replace(fake.kind_of(secret), {**secret, "data": {"k": "abc"}}),
    ):
        with pytest.raises(errors.BadRequest) as refused:
            write()
        assert refused.value.api_message == (
            'Secret in version "v1" cannot be handled as a Secret: v1.Secret.Data: decode base64: illegal base64 data '
            "at input byte 0, error found in #10 byte of the request (its text left out)"
        )


def test_a_create_of_a_quantity_that_is_none_is_the_400_naming_its_path() -> None:
    fake = FakeClient()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"memory": "1x"}}}]},
    }

    with pytest.raises(errors.BadRequest) as refused:
        fake.create(pod)

    assert refused.value.api_message == (
        'Pod in version "v1" cannot be handled as a Pod: v1.Pod.Spec: v1.PodSpec.Containers: []v1.Container: '
        f"v1.Container.Resources: v1.ResourceRequirements.Requests: unmarshalerDecoder: {_QUANTITY_FORMAT}, error "
        "found in #10 byte of the request (its text left out)"
    )
    assert fake.objects(fake.kind_of(pod)) == []


def test_one_write_s_owner_reference_is_refused_before_its_finalizer_as_the_api_server_lists_them() -> None:
    fake = FakeClient()
    meta = {
        "name": "c",
        "namespace": "ns",
        "finalizers": ["clean up"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": ""}],
    }

    with pytest.raises(errors.Invalid) as refused:
        fake.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})

    assert [cause.field for cause in refused.value.causes] == [
        "metadata.ownerReferences.uid",
        "metadata.finalizers",
        "metadata.finalizers[0]",
    ]


_NO_TIME = 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'


def test_a_time_that_is_none_is_refused_by_every_verb_as_the_api_server_refuses_it() -> None:
    fake = FakeClient()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    live = fake.create(cm)
    stamped = {**cm, "metadata": {**cm["metadata"], "creationTimestamp": "yesterday"}}
    path = "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.CreationTimestamp: unmarshalerDecoder"

    with pytest.raises(errors.BadRequest) as created:
        fake.create({**stamped, "metadata": {**stamped["metadata"], "name": "d"}})
    with pytest.raises(errors.BadRequest) as updated:
        fake.replace(kinds.CONFIG_MAP, stamped)
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(kinds.CONFIG_MAP, "c", {"metadata": {"creationTimestamp": "yesterday"}}, "ns")
    with pytest.raises(errors.Invalid) as applied:
        fake.apply({**stamped, "metadata": {**stamped["metadata"], "name": "e"}}, field_manager="m")

    assert created.value.api_message == (
        f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {path}: {_NO_TIME}, error found in #10 byte '
        "of the request (its text left out)"
    )
    assert updated.value.api_message == created.value.api_message
    assert (patched.value.status, [cause.field for cause in patched.value.causes]) == (422, ["patch"])
    assert (applied.value.status, applied.value.api_message) == (
        500,
        f"failed to convert new object to proper version: unable to convert unstructured object to /v1, "
        f"Kind=ConfigMap: {_NO_TIME}",
    )
    assert fake.objects(kinds.CONFIG_MAP) == [live]


def test_a_job_s_start_time_that_is_none_is_refused_on_create_and_a_condition_s_on_a_status_patch() -> None:
    fake = FakeClient()
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
    }

    with pytest.raises(errors.BadRequest) as created:
        fake.create({**job, "status": {"startTime": "yesterday"}})
    fake.create(job)
    condition = {"type": "Complete", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00"}
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(fake.kind_of(job), "j", {"status": {"conditions": [condition]}}, "ns", subresource="status")

    assert "v1.Job.Status: v1.JobStatus.StartTime: unmarshalerDecoder: " + _NO_TIME in created.value.api_message
    assert (
        "v1.JobStatus.Conditions: []v1.JobCondition: v1.JobCondition.LastTransitionTime: unmarshalerDecoder: "
        'parsing time "2020-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"'
    ) in patched.value.api_message


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (
            {
                "apiVersion": "batch/v1beta1",
                "kind": "CronJob",
                "metadata": {"name": "cj", "namespace": "ns"},
                "spec": {
                    "schedule": "* * * * *",
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {"name": "c", "image": "x", "resources": {"limits": {"cpu": "lots"}}}
                                    ],
                                }
                            }
                        }
                    },
                },
            },
            "v1beta1.CronJob.Spec: v1beta1.CronJobSpec.JobTemplate: v1beta1.JobTemplateSpec.Spec: v1.JobSpec.Template: "
            "v1.PodTemplateSpec.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: "
            "v1.ResourceRequirements.Limits",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "pvc", "namespace": "ns"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "lots"}}},
            },
            "v1.PersistentVolumeClaim.Spec: v1.PersistentVolumeClaimSpec.Resources: v1.ResourceRequirements.Requests",
        ),
        (
            {
                "apiVersion": "autoscaling/v2beta2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h", "namespace": "ns"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                    "maxReplicas": 2,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "lots"}},
                        }
                    ],
                },
            },
            "v2beta2.HorizontalPodAutoscaler.Spec: v2beta2.HorizontalPodAutoscalerSpec.Metrics: []v2beta2.MetricSpec: "
            "v2beta2.MetricSpec.Resource: v2beta2.ResourceMetricSource.Target: v2beta2.MetricTarget.AverageValue",
        ),
    ],
    ids=["CronJob", "PersistentVolumeClaim", "HorizontalPodAutoscaler"],
)
def test_a_quantity_that_is_none_is_refused_by_a_create_an_update_and_a_patch_as_by_an_apply(
    body: dict[str, Any], path: str
) -> None:
    fake = FakeClient()
    kind = fake.kind_of(body)
    fine = copy.deepcopy(body)
    if body["kind"] == "HorizontalPodAutoscaler":
        fine["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "1Gi"
    elif body["kind"] == "CronJob":
        fine["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
    else:
        fine["spec"]["resources"]["requests"]["storage"] = "1Gi"
    patching_ops = [{"op": "replace", "path": "/spec", "value": body["spec"]}]
    version = kind.api_version.rpartition("/")[2]

    with pytest.raises(errors.BadRequest) as created:
        fake.create(body)
    live = fake.create(fine)
    with pytest.raises(errors.BadRequest) as updated:
        fake.replace(kind, {**body, "metadata": live["metadata"]})
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(kind, body["metadata"]["name"], patching_ops, "ns", patch_type="json")

    assert created.value.api_message == (
        f'{kind.kind} in version "{version}" cannot be handled as a {kind.kind}: {path}: unmarshalerDecoder: '
        f"{_QUANTITY_FORMAT}, error found in #10 byte of the request (its text left out)"
    )
    assert updated.value.api_message == created.value.api_message
    assert [cause.field for cause in patched.value.causes] == ["patch"]
    assert fake.objects(kind) == [live]


def test_a_custom_resource_s_time_that_is_none_is_refused_by_a_create_and_stored_by_an_apply() -> None:
    fake = FakeClient(kinds=[GADGET])
    meta = {"name": "g", "namespace": "ns", "creationTimestamp": "yesterday"}
    body = {"apiVersion": GADGET.api_version, "kind": "Gadget", "metadata": meta, "spec": {"size": 1}}

    with pytest.raises(errors.BadRequest) as created:
        fake.create(body)
    applied = fake.apply(body, field_manager="m")

    assert created.value.api_message == (
        'Gadget in version "v1" cannot be handled as a Gadget: v1.ObjectMeta.Namespace: Name: CreationTimestamp: '
        f"unmarshalerDecoder: {_NO_TIME}, error found in #10 byte of the request (its text left out)"
    )
    assert applied["metadata"]["creationTimestamp"] != "yesterday"


def _named_job(name: str, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"restartPolicy": "Never"}}
    template["spec"]["containers"] = [{"name": "c", "image": "x"}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"template": template, **spec},
    }


def test_a_job_is_given_a_selector_of_its_own_pods_and_without_labels_its_template_s() -> None:
    fake = FakeClient()
    labelled = _named_job("b")
    labelled["metadata"]["labels"] = {"own": "label"}

    created = fake.create(_named_job("a"))
    kept = fake.create(labelled)
    applied = fake.apply(_named_job("c"), field_manager="m")
    manual = fake.create(_named_job("d", manualSelector=True, selector={"matchLabels": {"app": "a"}}))

    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {"matchLabels": {"controller-uid": uid}}
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "a", "controller-uid": uid, "job-name": "a"}
    assert created["metadata"]["labels"] == created["spec"]["template"]["metadata"]["labels"]
    assert kept["metadata"]["labels"] == {"own": "label"}
    assert kept["spec"]["template"]["metadata"]["labels"]["job-name"] == "b"
    assert applied["metadata"]["labels"]["controller-uid"] == applied["metadata"]["uid"]
    assert (manual["metadata"]["labels"], manual["spec"]["selector"]) == ({"app": "a"}, {"matchLabels": {"app": "a"}})


def test_a_job_whose_template_names_another_job_or_that_gives_a_selector_of_its_own_is_refused() -> None:
    fake = FakeClient()
    named = _named_job("a")
    named["spec"]["template"]["metadata"]["labels"]["job-name"] = "other"

    with pytest.raises(errors.Invalid) as other_job:
        fake.create(named)
    with pytest.raises(errors.Invalid) as selected:
        fake.create(_named_job("b", selector={"matchLabels": {"app": "a"}}))

    assert [cause.field for cause in other_job.value.causes] == ["spec.template.metadata.labels[job-name]"]
    assert [cause.field for cause in selected.value.causes] == ["spec.selector"]
    assert fake.objects(fake.kind_of(named)) == []


def test_a_job_with_a_manual_selector_left_out_is_refused_as_missing_one() -> None:
    # The server is not asked to make up a manual selector: it answers one left out as required, then as selecting no
    # labels of the template (a selector that is not there selects nothing).
    fake = FakeClient()

    with pytest.raises(errors.Invalid) as raised:
        fake.create(_named_job("a", manualSelector=True))

    assert [(cause.reason, cause.field, cause.message) for cause in raised.value.causes] == [
        ("FieldValueRequired", "spec.selector", "Required value"),
        (
            "FieldValueInvalid",
            "spec.template.metadata.labels",
            'Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`',
        ),
    ]
    assert fake.objects(fake.kind_of(_named_job("a"))) == []


def test_a_job_put_without_a_selector_is_held_as_created_and_takes_later_writes() -> None:
    # put() stores an object as a cluster holds it: a Job put as a fixture is written without the selector the server
    # gives it, and every patch, apply or update of it was then refused ("`selector` does not match template
    # `labels`"), an answer no server gives.
    fake = FakeClient()
    put = fake.put(_named_job("a"))
    kind = fake.kind_of(put)

    patched = fake.patch(kind, "a", {"spec": {"parallelism": 2}}, "ns")
    applied = fake.apply(_named_job("a", parallelism=3), field_manager="m")
    replaced = fake.replace(kind, fake.get(kind, "a", "ns"))

    uid = put["metadata"]["uid"]
    assert put["spec"]["selector"] == {"matchLabels": {"controller-uid": uid}}
    assert put["spec"]["template"]["metadata"]["labels"] == {"app": "a", "controller-uid": uid, "job-name": "a"}
    assert (patched["spec"]["parallelism"], applied["spec"]["parallelism"]) == (2, 3)
    assert replaced["spec"]["selector"] == put["spec"]["selector"]
    # A Job put with a selector of its own is held as it was put, as any object put is.
    given = fake.put(_named_job("b", selector={"matchLabels": {"app": "a"}}))
    assert given["spec"]["selector"] == {"matchLabels": {"app": "a"}}
    assert given["spec"]["template"]["metadata"]["labels"] == {"app": "a"}


def test_a_time_written_as_a_json_number_is_refused_as_one_that_is_none() -> None:
    # metav1.Time reads a string: a number (a bool, an object) is refused as Go's JSON decoding refuses it.
    fake = FakeClient()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "creationTimestamp": 5}}
    job = _named_job("j")
    no_string = "json: cannot unmarshal number into Go value of type string"

    with pytest.raises(errors.BadRequest) as created:
        fake.create(cm)
    with pytest.raises(errors.Invalid) as applied:
        fake.apply(cm, field_manager="m")
    with pytest.raises(errors.BadRequest) as started:
        fake.create({**job, "status": {"startTime": 1.5}})
    fake.create(job)
    condition = {"type": "Complete", "status": "True", "lastTransitionTime": 0}
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(fake.kind_of(job), "j", {"status": {"conditions": [condition]}}, "ns", subresource="status")
    with pytest.raises(errors.BadRequest) as flagged:
        fake.create({**cm, "metadata": {**cm["metadata"], "creationTimestamp": True}})

    assert created.value.api_message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: v1.ConfigMap.ObjectMeta: '
        f"v1.ObjectMeta.CreationTimestamp: unmarshalerDecoder: {no_string}, error found in #10 byte of the request "
        "(its text left out)"
    )
    assert (applied.value.status, applied.value.api_message) == (
        500,
        "failed to convert new object to proper version: unable to convert unstructured object to /v1, "
        f"Kind=ConfigMap: {no_string}",
    )
    assert f"v1.Job.Status: v1.JobStatus.StartTime: unmarshalerDecoder: {no_string}," in started.value.api_message
    assert (
        f"[]v1.JobCondition: v1.JobCondition.LastTransitionTime: unmarshalerDecoder: {no_string}"
        in patched.value.api_message
    )
    assert "unmarshalerDecoder: json: cannot unmarshal bool into Go value of type string" in flagged.value.api_message
    assert fake.objects(kinds.CONFIG_MAP) == []


def _older_autoscaler(metric: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2beta1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "ns"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "maxReplicas": 2,
            "metrics": [metric],
        },
    }


_REFERENCE = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}


@pytest.mark.parametrize(
    ("metric", "path"),
    [
        (
            {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "lots"}},
            "Resource: v2beta1.ResourceMetricSource.TargetAverageValue",
        ),
        (
            {"type": "Pods", "pods": {"metricName": "m", "targetAverageValue": "lots"}},
            "Pods: v2beta1.PodsMetricSource.TargetAverageValue",
        ),
        (
            {"type": "Object", "object": {"target": _REFERENCE, "metricName": "m", "targetValue": "lots"}},
            "Object: v2beta1.ObjectMetricSource.TargetValue",
        ),
        (
            {
                "type": "Object",
                "object": {"target": _REFERENCE, "metricName": "m", "targetValue": "1", "averageValue": "lots"},
            },
            "Object: v2beta1.ObjectMetricSource.AverageValue",
        ),
        (
            {"type": "External", "external": {"metricName": "m", "targetValue": "lots"}},
            "External: v2beta1.ExternalMetricSource.TargetValue",
        ),
    ],
    ids=["resource", "pods", "object", "object average", "external"],
)
def test_an_autoscaling_v2beta1_target_that_is_no_quantity_is_refused_by_every_verb(
    metric: dict[str, Any], path: str
) -> None:
    fake = FakeClient()
    body = _older_autoscaler(metric)
    kind = fake.kind_of(body)
    live = fake.create(
        _older_autoscaler({"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "1"}})
    )

    with pytest.raises(errors.BadRequest) as created:
        fake.create({**body, "metadata": {"name": "i", "namespace": "ns"}})
    with pytest.raises(errors.BadRequest) as updated:
        fake.replace(kind, {**body, "metadata": live["metadata"]})
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(kind, "h", {"spec": {"metrics": [metric]}}, "ns")
    with pytest.raises(errors.Invalid) as applied:
        fake.apply(body, field_manager="m")

    assert created.value.api_message == (
        'HorizontalPodAutoscaler in version "v2beta1" cannot be handled as a HorizontalPodAutoscaler: '
        "v2beta1.HorizontalPodAutoscaler.Spec: v2beta1.HorizontalPodAutoscalerSpec.Metrics: []v2beta1.MetricSpec: "
        f"v2beta1.MetricSpec.{path}: unmarshalerDecoder: {_QUANTITY_FORMAT}, error found in #10 byte of the request "
        "(its text left out)"
    )
    assert updated.value.api_message == created.value.api_message
    assert [cause.field for cause in patched.value.causes] == ["patch"]
    assert (applied.value.status, applied.value.api_message) == (
        500,
        "failed to convert new object to proper version: unable to convert unstructured object to "
        f"autoscaling/v2beta1, Kind=HorizontalPodAutoscaler: {_QUANTITY_FORMAT}",
    )
    assert fake.objects(kind) == [live]


def _cron_job(**job_spec: Any) -> dict[str, Any]:
    template = _named_job("t")["spec"]["template"]
    return {
        "apiVersion": "batch/v1beta1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": "ns"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template, **job_spec}}},
    }


def test_a_cron_job_s_job_template_asking_for_a_manual_selector_or_giving_one_is_refused() -> None:
    # Each Job of a CronJob is given a selector of its own Pods: its template may neither give one nor ask for none.
    fake = FakeClient()

    with pytest.raises(errors.Invalid) as manual:
        fake.create(_cron_job(manualSelector=True))
    with pytest.raises(errors.Invalid) as both:
        fake.create(_cron_job(manualSelector=True, selector={"matchLabels": {"app": "a"}}))

    assert [(cause.reason, cause.field, cause.message) for cause in manual.value.causes] == [
        (
            "FieldValueNotSupported",
            "spec.jobTemplate.spec.manualSelector",
            'Unsupported value: true: supported values: "nil", "false"',
        )
    ]
    assert [cause.message for cause in both.value.causes] == [
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"a"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
        'Unsupported value: true: supported values: "nil", "false"',
    ]
    assert fake.objects(fake.kind_of(_cron_job())) == []
    assert fake.create(_cron_job(manualSelector=False))["spec"]["jobTemplate"]["spec"]["manualSelector"] is False


def test_an_update_or_a_patch_removing_a_job_s_manual_selector_is_refused_as_missing_and_changed() -> None:
    # The server validates a Job's update as a Job, then as an update (its spec again, then what may not change): each
    # of the spec's causes comes twice, the message naming it once.
    fake = FakeClient()
    live = fake.create(_named_job("a", manualSelector=True, selector={"matchLabels": {"app": "a"}}))
    kind = fake.kind_of(live)
    removed = copy.deepcopy(live)
    del removed["spec"]["selector"]

    with pytest.raises(errors.Invalid) as updated:
        fake.replace(kind, removed)
    with pytest.raises(errors.Invalid) as patched:
        fake.patch(kind, "a", {"spec": {"selector": None}}, "ns")

    required = ("FieldValueRequired", "spec.selector", "Required value")
    unselected = (
        "FieldValueInvalid",
        "spec.template.metadata.labels",
        'Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`',
    )
    immutable = ("FieldValueInvalid", "spec.selector", 'Invalid value: "null": field is immutable')
    for refused in (updated, patched):
        assert [(cause.reason, cause.field, cause.message) for cause in refused.value.causes] == [
            required,
            unselected,
            required,
            unselected,
            immutable,
        ]
        assert refused.value.api_message == (
            'Job.batch "a" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: '
            'map[string]string{"app":"a"}: `selector` does not match template `labels`, spec.selector: Invalid value: '
            '"null": field is immutable]'
        )
    assert fake.objects(kind) == [live]


@pytest.mark.parametrize(("kind_name", "twice"), [("Deployment", False), ("ReplicaSet", True), ("DaemonSet", True)])
def test_a_workload_s_selector_changed_to_select_none_of_its_pods_is_refused_as_both_in_one_422(
    kind_name: str, twice: bool
) -> None:
    # A ReplicaSet's or a DaemonSet's update is validated as the object, then as an update: its spec's causes twice.
    fake = FakeClient()
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    spec = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    meta = {"name": "w", "namespace": "ns"}
    live = fake.create({"apiVersion": "apps/v1", "kind": kind_name, "metadata": meta, "spec": spec})
    kind = fake.kind_of(live)

    with pytest.raises(errors.Invalid) as refused:
        fake.patch(kind, "w", {"spec": {"selector": {"matchLabels": {"app": "c"}}}}, "ns")

    unselected = (
        "spec.template.metadata.labels",
        'Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`',
    )
    immutable = (
        "spec.selector",
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"c"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
    )
    expected = [unselected, unselected, immutable] if twice else [unselected, immutable]
    assert [(cause.field, cause.message) for cause in refused.value.causes] == expected
    assert fake.objects(kind) == [live]
