"""Admission judges an object with the reconciler's own checks, and says what Ready=False would say."""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Mapping
from typing import Any

import jsonpatch
import pydantic
import pytest
import structlog.testing

import okt
from okt.kube import kinds
from okt.reconciler import admission, admission_request
from okt.testing import FakeClient, condition

WIDGET = kinds.Kind("example.com/v1", "Widget", "widgets")


class WidgetSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    mode: str = "fast"


class Widgets(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = WidgetSpec

    def check(self, ctx: okt.Context) -> None:
        if ctx.spec.mode == "forbidden":
            raise okt.InvalidSpec("this mode is not allowed", field="spec.mode")

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        obj["spec"].setdefault("mode", "fast")
        obj.setdefault("metadata", {}).setdefault("labels", {})["example.com/size"] = str(obj["spec"].get("size"))
        return obj


def widget(spec: Any, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", **meta},
        "spec": spec,
    }


def request(obj: Mapping[str, Any], operation: str = "CREATE", old: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "uid": "u-1",
        "operation": operation,
        "object": obj,
        "oldObject": old,
        "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
    }


def ready_message_of_a_reconcile(obj: Mapping[str, Any]) -> str:
    fake = FakeClient(kinds=[WIDGET], objects=[obj])
    okt.reconcile(Widgets(), fake, None, "ns", "w")
    ready = condition(fake.stored(WIDGET, "w", "ns"), "Ready")
    assert ready is not None and ready["status"] == "False"
    return str(ready["message"])


@pytest.mark.parametrize(
    ("spec", "field"),
    [({"size": 0}, "spec.size"), ({"size": 2, "mode": "forbidden"}, "spec.mode"), ({}, "spec.size")],
)
def test_a_bad_spec_is_refused_with_the_message_ready_false_would_carry(spec: dict[str, Any], field: str) -> None:
    verdict = admission.validate(Widgets(), request(widget(spec)), FakeClient(kinds=[WIDGET]))
    assert not verdict.allowed
    assert verdict.message.startswith(f"{field}: ")
    assert verdict.message == ready_message_of_a_reconcile(widget(spec))
    assert (verdict.code, verdict.reason) == (422, "Invalid")


class CamelSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)
    replica_count: int = pydantic.Field(1, alias="replicaCount")


class CamelWidgets(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = CamelSpec


def test_a_field_given_by_its_alias_and_its_name_with_different_values_is_refused_as_ready_false_says() -> None:
    obj = widget({"replicaCount": 2, "replica_count": 3})

    verdict = admission.validate(CamelWidgets(), request(obj), FakeClient(kinds=[WIDGET]))

    assert not verdict.allowed
    assert (verdict.code, verdict.reason) == (422, "Invalid")
    assert verdict.message.startswith("spec.replica_count: the same field as spec.replicaCount, given another value")
    assert [(cause.reason, cause.field) for cause in verdict.causes] == [("FieldValueDuplicate", "spec.replica_count")]
    fake = FakeClient(kinds=[WIDGET], objects=[obj])
    okt.reconcile(CamelWidgets(), fake, None, "ns", "w")
    ready = condition(fake.stored(WIDGET, "w", "ns"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "InvalidSpec", verdict.message)


def test_a_good_spec_is_admitted() -> None:
    assert admission.validate(Widgets(), request(widget({"size": 3})), FakeClient()).allowed


def test_a_check_that_fails_otherwise_refuses_with_403_and_its_message() -> None:
    class Strict(Widgets):
        def check(self, ctx: okt.Context) -> None:
            raise okt.TemporaryError("the quota service is down")

    verdict = admission.validate(Strict(), request(widget({"size": 3})), FakeClient())
    assert (verdict.allowed, verdict.code, verdict.message) == (False, 403, "the quota service is down")


class Quota(Widgets):
    """Refuses a widget past a quota of its own with 429, and one of a taken name with a code the API has no reason
    for."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.spec.size > 5:
            raise okt.AdmissionRefused("spec.size: past the quota of 5 widgets' replicas", code=429)
        if ctx.spec.mode == "odd":
            raise okt.AdmissionRefused("spec.mode: odd is kept for later", code=418)


@pytest.mark.parametrize(
    ("spec", "code", "reason"), [({"size": 6}, 429, "TooManyRequests"), ({"size": 1, "mode": "odd"}, 418, "")]
)
def test_a_check_refusing_with_a_code_of_its_own_is_answered_with_it_and_the_apis_reason_for_it(
    spec: dict[str, Any], code: int, reason: str
) -> None:
    review = {"apiVersion": "admission.k8s.io/v1", "request": request(widget(spec))}

    verdict = admission.validate(Quota(), review["request"], FakeClient(kinds=[WIDGET]))

    status = admission.respond(review, verdict)["response"]["status"]
    assert (status["code"], status["reason"], status["message"]) == (code, reason, verdict.message)
    assert verdict.message.startswith("spec.")
    assert "details" not in status


def test_a_default_refusing_with_a_code_of_its_own_is_answered_with_it() -> None:
    class Taken(Widgets):
        def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
            raise okt.AdmissionRefused("metadata.name: w is taken", code=409)

    verdict = admission.mutate(Taken(), request(widget({"size": 1})))
    assert (verdict.allowed, verdict.code, verdict.reason, verdict.message) == (
        False,
        409,
        "Conflict",
        "metadata.name: w is taken",
    )


def test_a_check_refusing_with_a_code_in_a_reconcile_is_ready_false_admission_refused() -> None:
    fake = FakeClient(kinds=[WIDGET], objects=[widget({"size": 6})])
    okt.reconcile(Quota(), fake, None, "ns", "w")
    ready = condition(fake.stored(WIDGET, "w", "ns"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "AdmissionRefused")
    assert ready["message"] == "spec.size: past the quota of 5 widgets' replicas"


def test_a_check_reads_the_users_uid_extra_and_the_headers_of_the_call() -> None:
    seen: list[okt.Admission] = []

    class Reading(Widgets):
        def check(self, ctx: okt.Context) -> None:
            assert ctx.admission is not None
            seen.append(ctx.admission)

    review = {**request(widget({"size": 1})), "userInfo": {"username": "jane", "uid": "7", "extra": {"k": ["v"]}}}
    headers = admission_request.Headers([("User-Agent", "kube-apiserver-admission")])

    assert admission.validate(Reading(), review, FakeClient(kinds=[WIDGET]), headers=headers).allowed

    (given,) = seen
    assert (given.user_uid, dict(given.extra), given.headers["user-agent"]) == (
        "7",
        {"k": ("v",)},
        "kube-apiserver-admission",
    )


@pytest.mark.parametrize(
    "review",
    [
        request(widget({"size": 0}), "DELETE"),
        request(widget({"size": 0}, deletionTimestamp="2026-01-01T00:00:00Z"), "UPDATE"),
        request(widget({"size": 0}, labels={"a": "b"}), "UPDATE", old=widget({"size": 0})),
    ],
    ids=["delete", "being-deleted", "spec-unchanged"],
)
def test_what_cannot_be_made_valid_by_this_request_is_admitted(review: dict[str, Any]) -> None:
    assert admission.validate(Widgets(), review, FakeClient()).allowed


def test_an_update_that_breaks_the_spec_is_refused() -> None:
    review = request(widget({"size": 0}), "UPDATE", old=widget({"size": 1}))
    assert not admission.validate(Widgets(), review, FakeClient()).allowed


def test_defaulting_answers_a_json_patch_that_gives_the_defaulted_object() -> None:
    obj = widget({"size": 2})
    verdict = admission.mutate(Widgets(), request(obj))
    assert verdict.allowed
    patched = jsonpatch.apply_patch(obj, list(verdict.patch))
    assert patched["spec"] == {"size": 2, "mode": "fast"}
    assert patched["metadata"]["labels"] == {"example.com/size": "2"}
    assert obj["spec"] == {"size": 2}  # the request's object is not touched


def test_a_default_hook_that_raises_refuses_the_object() -> None:
    class Broken(Widgets):
        def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
            raise okt.PermanentError("no default for you")

    verdict = admission.mutate(Broken(), request(widget({"size": 2})))
    assert (verdict.allowed, verdict.code, verdict.message) == (False, 403, "no default for you")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"a": 1}, {"a": 1}),
        ({"a": 1}, {"a": True}),
        ({"a/b": {"c~d": [1]}}, {"a/b": {"c~d": [1, 2]}, "e": None}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}),
        ({"a": "x"}, {"a": {"nested": "{{ not a template }}"}}),
    ],
)
def test_the_json_patch_turns_the_old_object_into_the_new_one(old: dict[str, Any], new: dict[str, Any]) -> None:
    patch = admission.json_patch(old, new)
    assert jsonpatch.apply_patch(old, patch) == new
    assert json.dumps(jsonpatch.apply_patch(old, patch), sort_keys=True) == json.dumps(new, sort_keys=True)
    assert (patch == []) == (json.dumps(old) == json.dumps(new))


def test_the_review_answer_carries_the_uid_status_and_base64_patch() -> None:
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request(widget({"size": 0}))}
    refused = admission.respond(review, admission.Verdict.refuse(okt.InvalidSpec("bad"), "check"))
    assert refused["response"] == {
        "uid": "u-1",
        "allowed": False,
        "status": {"status": "Failure", "code": 422, "reason": "Invalid", "message": "bad"},
    }
    ops = ({"op": "add", "path": "/spec/mode", "value": "fast"},)
    patched = admission.respond(review, admission.Verdict.allow(ops))["response"]
    assert patched["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(patched["patch"])) == list(ops)


def test_a_bad_spec_is_refused_with_one_cause_per_bad_field_and_the_object_named_as_the_api_server_does() -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            **request(widget({"size": 0, "mode": 3})),
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        },
    }
    verdict = admission.validate(Widgets(), review["request"], FakeClient())
    status = admission.respond(review, verdict)["response"]["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        "spec.size: Input should be greater than or equal to 1 (got 0); "
        "spec.mode: Input should be a valid string (got 3)"
    )
    assert status["details"] == {
        "group": "example.com",
        "kind": "Widget",
        "name": "w",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Input should be greater than or equal to 1 (got 0)",
                "field": "spec.size",
            },
            {"reason": "FieldValueInvalid", "message": "Input should be a valid string (got 3)", "field": "spec.mode"},
        ],
    }


def test_a_check_that_names_its_field_refuses_with_that_field_as_the_cause() -> None:
    verdict = admission.validate(Widgets(), request(widget({"size": 2, "mode": "forbidden"})), FakeClient())
    assert verdict.causes == (okt.errors.StatusCause("FieldValueInvalid", "this mode is not allowed", "spec.mode"),)


class TieredSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    replicas: int = 1

    @pydantic.field_validator("replicas")
    @classmethod
    def within_size(cls, replicas: int, info: pydantic.ValidationInfo) -> int:
        if replicas > info.data["size"]:  # a KeyError once size failed: pydantic lets it through
            raise ValueError("more replicas than size")
        return replicas


class Tiered(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    spec_model = TieredSpec


def test_a_spec_model_whose_validation_raises_past_pydantic_refuses_as_an_internal_error_of_the_spec_model() -> None:
    obj = widget({"size": 0, "replicas": 2})

    verdict = admission.validate(Tiered(), request(obj), FakeClient(kinds=[WIDGET]))

    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 500, "InternalError")
    assert verdict.message == "internal error in spec_model: KeyError"


@pytest.mark.parametrize(
    "value",
    [datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), WidgetSpec(size=2), float("nan")],
    ids=["datetime", "model", "nan"],
)
def test_a_default_hook_that_returns_what_json_cannot_say_refuses_the_object_with_a_message(value: Any) -> None:
    class Careless(Widgets):
        def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
            obj["spec"]["extra"] = value
            return obj

    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request(widget({"size": 2}))}

    answer = admission.respond(review, admission.mutate(Careless(), review["request"]))

    json.loads(json.dumps(answer, allow_nan=False))  # what the API server receives is JSON
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"].startswith("default() returned ")


class ClassA(Widgets):
    """Reconciles only the widgets of class ``a``; another operator owns the others."""

    annotation_selector = {"example.com/class": "a"}


@pytest.mark.parametrize("annotations", [{}, {"example.com/class": "b"}], ids=["no-class", "another-class"])
def test_an_object_the_reconciler_does_not_select_is_neither_judged_nor_defaulted(annotations: dict[str, str]) -> None:
    review = request(widget({"size": 0, "mode": "forbidden"}, annotations=annotations))

    assert admission.validate(ClassA(), review, FakeClient()) == admission.Verdict.allow()
    assert admission.mutate(ClassA(), review) == admission.Verdict.allow()


def test_an_object_the_reconciler_selects_is_judged_and_defaulted() -> None:
    review = request(widget({"size": 0}, annotations={"example.com/class": "a"}))

    assert not admission.validate(ClassA(), review, FakeClient()).allowed
    assert admission.mutate(ClassA(), review).patch


SCOPE_A = admission.Scope(frozenset({"a"}), "release=one")


@pytest.mark.parametrize(
    ("namespace", "labels", "why"),
    [
        ("b", {"release": "one"}, "namespace 'b' is not one this operator serves (a)"),
        ("a", {"release": "two"}, "the labels do not match this operator's selector 'release=one'"),
        ("a", {}, "the labels do not match this operator's selector 'release=one'"),
    ],
    ids=["another-namespace", "another-release", "no-labels"],
)
def test_an_object_outside_the_operators_scope_is_admitted_untouched_saying_why(
    namespace: str, labels: dict[str, str], why: str
) -> None:
    review = request(widget({"size": 0}, namespace=namespace, labels=labels))
    review["namespace"] = namespace

    validated = admission.validate(Widgets(), review, FakeClient(), SCOPE_A)
    defaulted = admission.mutate(Widgets(), review, SCOPE_A)

    assert validated == defaulted == admission.Verdict.unjudged(why)
    answer = admission.respond({"request": review}, validated)["response"]
    assert answer["allowed"] is True
    assert answer["auditAnnotations"] == {"out-of-scope": why}
    assert "patch" not in answer


def test_an_object_inside_the_operators_scope_is_judged_and_defaulted() -> None:
    review = request(widget({"size": 0}, namespace="a", labels={"release": "one"}))
    review["namespace"] = "a"

    assert admission.validate(Widgets(), review, FakeClient(), SCOPE_A).code == 422
    assert admission.mutate(Widgets(), review, SCOPE_A).patch


def test_the_namespace_of_the_request_decides_when_the_object_leaves_it_to_the_url() -> None:
    obj = widget({"size": 0}, labels={"release": "one"})
    del obj["metadata"]["namespace"]
    review = {**request(obj), "namespace": "b"}

    assert admission.validate(Widgets(), review, FakeClient(), SCOPE_A).out_of_scope.startswith("namespace 'b'")


def test_a_cluster_scoped_object_is_in_every_scopes_namespaces() -> None:
    obj = widget({"size": 0}, labels={"release": "one"})
    del obj["metadata"]["namespace"]

    assert not admission.validate(Widgets(), request(obj), FakeClient(), SCOPE_A).allowed


def test_a_scope_refuses_a_selector_the_api_server_cannot_read() -> None:
    with pytest.raises(ValueError, match="'release in one' is not a term the API server reads"):
        admission.Scope(label_selector="release in one")


class Credentials(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    user: str
    port: int


SECRET_DATA = {"user": "admin", "password": "hunter2", "port": 5432}


def read_credentials() -> Credentials:
    """A hook's bug: the Secret it read is validated with a model it does not fit (a password it does not expect)."""
    return Credentials.model_validate(SECRET_DATA)


class Buggy(Widgets):
    def check(self, ctx: okt.Context) -> None:
        read_credentials()

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        return {"port": read_credentials().port}


@pytest.mark.parametrize("hook", ["check", "default"])
def test_a_hook_that_raises_a_validation_error_of_its_own_refuses_in_one_line_without_its_input_and_logs_it_once(
    hook: str,
) -> None:
    with structlog.testing.capture_logs() as logged:
        if hook == "check":
            verdict = admission.validate(Buggy(), request(widget({"size": 2})), FakeClient())
        else:
            verdict = admission.mutate(Buggy(), request(widget({"size": 2})))

    assert (verdict.allowed, verdict.code) == (False, 403)
    assert verdict.message == "Credentials: password: Extra inputs are not permitted"
    errors_logged = [line for line in logged if line["log_level"] == "error"]
    assert [(line["hook"], line["error"]) for line in errors_logged] == [(hook, f"ValidationError: {verdict.message}")]
    assert "hunter2" not in repr(logged)
    assert "read_credentials" in errors_logged[0]["stack"]  # where the operator's bug is


@pytest.mark.parametrize("hook", ["check", "default"])
def test_a_hook_that_raises_another_exception_refuses_as_an_internal_error_naming_its_class_only_and_logs_it_once(
    hook: str,
) -> None:
    class Careless(Widgets):
        """Looks a value of the object up where its key belongs: the KeyError says that value."""

        def check(self, ctx: okt.Context) -> None:
            {}[ctx.cr.raw_spec["mode"]]

        def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
            return {"size": {}[obj["spec"]["mode"]]}

    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request(widget({"size": 2, "mode": "hunter2"})),
    }
    with structlog.testing.capture_logs() as logged:
        if hook == "check":
            verdict = admission.validate(Careless(), review["request"], FakeClient())
        else:
            verdict = admission.mutate(Careless(), review["request"])
    status = admission.respond(review, verdict)["response"]["status"]

    assert status == {
        "status": "Failure",
        "code": 500,
        "reason": "InternalError",
        "message": f"internal error in {hook}: KeyError",
    }
    assert "hunter2" not in json.dumps(status)
    errors_logged = [line for line in logged if line["log_level"] == "error"]
    assert [line["hook"] for line in errors_logged] == [hook]
    assert 'raw_spec["mode"]' in errors_logged[0]["stack"] or 'obj["spec"]["mode"]' in errors_logged[0]["stack"]
    assert "object" not in errors_logged[0] and "spec" not in errors_logged[0]


def test_a_hook_that_refuses_with_an_okt_error_is_an_answer_not_a_logged_failure() -> None:
    with structlog.testing.capture_logs() as logged:
        verdict = admission.validate(Widgets(), request(widget({"size": 2, "mode": "forbidden"})), FakeClient())

    assert (verdict.allowed, verdict.message) == (False, "spec.mode: this mode is not allowed")
    assert [line for line in logged if line["log_level"] == "error"] == []


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (["spec"], "TypeError: default() returned list, not the object"),
        ("obj", "TypeError: default() returned str, not the object"),
        ({"spec": {"at": datetime.datetime(2026, 1, 1)}}, "TypeError: default() returned an object that is not JSON"),
        ({"spec": {"size": float("nan")}}, "TypeError: default() returned an object that is not JSON"),
    ],
    ids=["list", "str", "datetime", "nan"],
)
def test_a_default_hook_that_returns_what_is_not_the_object_refuses_it_and_logs_the_bug_once(
    returned: Any, said: str
) -> None:
    class Careless(Widgets):
        def default(self, obj: dict[str, Any]) -> Any:
            return returned

    with structlog.testing.capture_logs() as logged:
        verdict = admission.mutate(Careless(), request(widget({"size": 2})))

    assert (verdict.allowed, verdict.code) == (False, 403)
    assert f"TypeError: {verdict.message}".startswith(said)
    errors_logged = [(line["hook"], line["error"]) for line in logged if line["log_level"] == "error"]
    assert errors_logged == [("default", f"TypeError: {verdict.message}")]


class Schemaless(okt.Reconciler):
    """A spec without a model (``x-kubernetes-preserve-unknown-fields``): ``check`` alone judges its values."""

    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"

    def check(self, ctx: okt.Context) -> None:
        replicas = ctx.cr.raw_spec.get("replicas")
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            raise okt.InvalidSpec("replicas must be an integer", field="spec.replicas")


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, True), (0, False), (1.0, True), ([1], [True]), ({"a": 0}, {"a": False})],
    ids=["int-to-true", "zero-to-false", "float-to-true", "in-a-list", "in-a-mapping"],
)
def test_an_update_changing_a_value_to_one_of_another_json_type_is_judged(old: Any, new: Any) -> None:
    review = request(widget({"replicas": new}), "UPDATE", old=widget({"replicas": old}))

    verdict = admission.validate(Schemaless(), review, FakeClient())

    assert (verdict.allowed, verdict.message) == (False, "spec.replicas: replicas must be an integer")


def test_an_update_writing_a_number_as_the_api_server_stores_it_is_not_judged_again() -> None:
    # 1.0 is stored as 1: the spec is unchanged, and an object stored before the webhook keeps its edits.
    review = request(
        widget({"replicas": "x", "ratio": 1.0}, labels={"a": "b"}), "UPDATE", old=widget({"replicas": "x", "ratio": 1})
    )

    assert admission.validate(Schemaless(), review, FakeClient()).allowed


class Deprecating(Widgets):
    """Warns of a deprecated mode, admitted or not, and refuses what a dry run by a robot sends."""

    seen: list[okt.Admission | None] = []

    def check(self, ctx: okt.Context) -> None:
        type(self).seen.append(ctx.admission)
        if ctx.admission is not None and ctx.spec.mode == "slow":
            ctx.admission.warn("spec.mode slow is deprecated:\nuse fast")
        if ctx.admission is not None and ctx.admission.dry_run and "robots" in ctx.admission.groups:
            raise okt.PermanentError(f"no dry runs by {ctx.admission.username}")

    def default(self, obj: dict[str, Any], admission: okt.Admission | None = None) -> Mapping[str, Any] | None:
        assert admission is not None
        if "size" in obj["spec"]:
            admission.warn(f"spec.size is deprecated ({admission.operation} by {admission.username})")
        return obj


def test_a_check_warns_whoever_writes_an_admitted_object_and_the_answer_carries_it_as_one_line() -> None:
    review = {"apiVersion": "admission.k8s.io/v1", "request": request(widget({"size": 1, "mode": "slow"}))}

    verdict = admission.validate(Deprecating(), review["request"], FakeClient(kinds=[WIDGET]))

    assert verdict.allowed
    assert admission.respond(review, verdict)["response"]["warnings"] == ["spec.mode slow is deprecated: use fast"]


def test_a_check_sees_the_dry_run_and_the_user_and_warns_with_its_refusal() -> None:
    review = {
        **request(widget({"size": 1, "mode": "slow"})),
        "dryRun": True,
        "userInfo": {"username": "system:serviceaccount:ci:bot", "groups": ["robots"]},
    }

    verdict = admission.validate(Deprecating(), review, FakeClient(kinds=[WIDGET]))

    assert (verdict.allowed, verdict.message) == (False, "no dry runs by system:serviceaccount:ci:bot")
    assert verdict.warnings == ("spec.mode slow is deprecated: use fast",)


def test_a_check_run_by_a_reconcile_has_no_admission() -> None:
    Deprecating.seen.clear()
    fake = FakeClient(kinds=[WIDGET], objects=[widget({"size": 1, "mode": "slow"})])
    okt.reconcile(Deprecating(), fake, None, "ns", "w")
    assert Deprecating.seen and all(seen is None for seen in Deprecating.seen)


def test_a_default_declaring_admission_is_given_the_request_and_its_warnings_are_answered() -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1beta1",
        "request": {**request(widget({"size": 1})), "userInfo": {"username": "jane"}},
    }

    verdict = admission.mutate(Deprecating(), review["request"])

    assert verdict.allowed and not verdict.patch
    assert admission.respond(review, verdict)["response"]["warnings"] == ["spec.size is deprecated (CREATE by jane)"]


def test_a_default_with_the_object_alone_is_called_so_and_an_answer_without_warnings_has_none() -> None:
    review = {"apiVersion": "admission.k8s.io/v1", "request": request(widget({"size": 1}))}
    verdict = admission.mutate(Widgets(), review["request"])
    assert verdict.allowed and verdict.patch
    assert "warnings" not in admission.respond(review, verdict)["response"]


class ByTier(Widgets):
    """Defaults ``spec.mode`` from the label ``example.com/tier``, and keeps okt's finalizer on the objects."""

    finalizer = "example.com/cleanup"

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        tier = (obj["metadata"].get("labels") or {}).get("example.com/tier")
        obj["spec"]["mode"] = "slow" if tier == "archive" else "fast"
        return obj


def test_an_update_that_leaves_the_spec_as_it_was_is_defaulted_again_from_the_label_it_changed() -> None:
    old = widget({"size": 2, "mode": "fast"})
    new = widget({"size": 2, "mode": "fast"}, labels={"example.com/tier": "archive"})

    verdict = admission.mutate(ByTier(), request(new, "UPDATE", old=old))

    assert verdict.allowed
    assert jsonpatch.apply_patch(new, list(verdict.patch))["spec"] == {"size": 2, "mode": "slow"}


def test_an_object_stored_before_the_webhook_is_defaulted_at_its_next_update_okts_finalizer_kept() -> None:
    # okt's own write (its finalizer added) of an object stored without its defaults: defaulted, the finalizer kept.
    old = widget({"size": 2})
    new = widget({"size": 2}, finalizers=["example.com/cleanup"])

    verdict = admission.mutate(ByTier(), request(new, "UPDATE", old=old))

    patched = jsonpatch.apply_patch(new, list(verdict.patch))
    assert patched["spec"] == {"size": 2, "mode": "fast"}
    assert patched["metadata"]["finalizers"] == ["example.com/cleanup"]


class Rebuilding(Widgets):
    """A default building the metadata anew, from the name and labels alone: okt's finalizer and annotations are not
    in what it returns."""

    finalizer = "example.com/cleanup"
    legacy_prefixes = ("old.example.com",)

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        meta = obj["metadata"]
        labels = {**(meta.get("labels") or {}), "example.com/defaulted": "yes"}
        return {**obj, "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": labels}}


def test_a_default_that_drops_okts_own_finalizer_and_annotations_leaves_them_as_the_request_has_them() -> None:
    own = {"okt.io/error-count": "2", "okt.io/phase": "Running", "old.example.com/phase": "Running"}
    new = widget(
        {"size": 2},
        finalizers=["other.example.com/keep", "example.com/cleanup"],
        annotations={**own, "example.com/note": "n"},
    )

    with structlog.testing.capture_logs() as logged:
        verdict = admission.mutate(Rebuilding(), request(new, "UPDATE", old=widget({"size": 2})))

    meta = jsonpatch.apply_patch(new, list(verdict.patch))["metadata"]
    assert meta["finalizers"] == ["example.com/cleanup"]  # another's finalizer is default()'s to drop, not okt's
    assert meta["annotations"] == own
    assert meta["labels"] == {"example.com/defaulted": "yes"}
    (bug,) = [line for line in logged if line["log_level"] == "error"]
    assert bug["changed"] == ["okt.io/error-count", "okt.io/phase", "old.example.com/phase", "finalizers"]
    assert "Running" not in repr(bug)


def test_a_default_that_leaves_okts_own_metadata_alone_is_answered_as_it_returned_it() -> None:
    new = widget({"size": 2}, finalizers=["example.com/cleanup"], annotations={"okt.io/phase": "Running"})

    with structlog.testing.capture_logs() as logged:
        verdict = admission.mutate(ByTier(), request(new, "UPDATE", old=widget({"size": 2})))

    assert list(verdict.patch) == [{"op": "add", "path": "/spec/mode", "value": "fast"}]
    assert logged == []


@pytest.mark.parametrize(
    "raised",
    [okt.PermanentError("no default for you"), KeyError("hunter2")],
    ids=["okt-error", "bug"],
)
def test_an_update_that_leaves_the_spec_is_admitted_untouched_when_default_fails_saying_so_in_a_warning(
    raised: Exception,
) -> None:
    class Failing(Widgets):
        def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
            raise raised

    new = widget({"size": 0}, labels={"a": "b"})
    spec_unchanged = admission.mutate(Failing(), request(new, "UPDATE", old=widget({"size": 0})))
    spec_changed = admission.mutate(Failing(), request(new, "UPDATE", old=widget({"size": 1})))

    said = "no default for you" if isinstance(raised, okt.OktError) else "internal error in default: KeyError"
    assert (spec_unchanged.allowed, spec_unchanged.patch) == (True, ())
    assert spec_unchanged.warnings == (f"not defaulted: {said}",)
    assert (spec_changed.allowed, spec_changed.message) == (False, said)


class Filtering(Widgets):
    """Reconciles the widgets of class ``a``, reading the annotation that says so where it may be missing: its
    ``when`` raises a KeyError naming the key it looked for (a value, where a lookup of the object's data failed)."""

    def when(self, obj: Mapping[str, Any]) -> bool:
        return bool({"a": True}[obj["metadata"]["annotations"]["example.com/class"]])


@pytest.mark.parametrize("webhook", ["validate", "mutate"])
def test_a_when_that_raises_refuses_the_object_as_an_internal_error_naming_its_class_not_its_text_and_logs_it_once(
    webhook: str,
) -> None:
    review = request(widget({"size": 2}, annotations={"example.com/class": "hunter2"}))

    with structlog.testing.capture_logs() as logged:
        if webhook == "validate":
            verdict = admission.validate(Filtering(), review, FakeClient())
        else:
            verdict = admission.mutate(Filtering(), review)

    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 500, "InternalError")
    assert verdict.message == "internal error in when: KeyError"
    (bug,) = [line for line in logged if line["log_level"] == "error"]
    assert (bug["hook"], bug["controller"]) == ("when", "widget")
    assert 'obj["metadata"]["annotations"]' in bug["stack"]


def test_a_when_that_raises_on_an_update_leaving_the_spec_admits_it_untouched_with_a_warning() -> None:
    review = request(widget({"size": 2}, labels={"a": "b"}), "UPDATE", old=widget({"size": 2}))

    assert admission.validate(Filtering(), review, FakeClient()) == admission.Verdict.allow()
    assert admission.mutate(Filtering(), review) == admission.Verdict(
        True, warnings=("not defaulted: internal error in when: KeyError",)
    )


def test_a_when_that_refuses_with_an_okt_error_is_answered_with_its_message() -> None:
    class Refusing(Widgets):
        def when(self, obj: Mapping[str, Any]) -> bool:
            raise okt.AdmissionRefused("widgets need a class", code=422)

    verdict = admission.validate(Refusing(), request(widget({"size": 2})), FakeClient())

    assert (verdict.allowed, verdict.code, verdict.message) == (False, 422, "widgets need a class")


def test_a_selects_of_the_authors_own_that_raises_refuses_the_object_and_the_watch_still_leaves_it_out() -> None:
    class Selecting(Widgets):
        def selects(self, obj: Mapping[str, Any]) -> bool:
            raise KeyError("hunter2")

    verdict = admission.validate(Selecting(), request(widget({"size": 2})), FakeClient())

    assert (verdict.allowed, verdict.message) == (False, "internal error in selects: KeyError")
    assert Filtering().selects(widget({"size": 2})) is False  # the watch: left out, logged
