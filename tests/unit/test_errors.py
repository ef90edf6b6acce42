import copy
import io
import pickle
import re
import typing

import pydantic
import pytest
import structlog

from okt import errors
from okt.kube import errors as kube_errors
from okt.runtime import logs

REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

EXPECTED_REASONS = {
    errors.OktError: "OktError",
    errors.TemporaryError: "TemporaryError",
    errors.PermanentError: "PermanentError",
    errors.InvalidSpec: "InvalidSpec",
    errors.GiveUp: "GiveUp",
    errors.ApiError: "ApiError",
    errors.BadRequest: "ApiError",
    errors.Unauthorized: "ApiError",
    errors.Forbidden: "ApiError",
    errors.NotFound: "ApiError",
    errors.NotServed: "ApiError",
    errors.Conflict: "ApiError",
    errors.Gone: "ApiError",
    errors.Invalid: "ApiError",
    errors.TooManyRequests: "ApiError",
    errors.ServerError: "ApiError",
    errors.Unavailable: "ApiError",
    errors.OwnedByAnother: "OwnedByAnother",
    errors.NotLeader: "NotLeader",
    errors.WriteRefused: "WriteRefused",
    errors.RegistrationError: "RegistrationAborted",
    errors.MutationError: "MutateError",
    errors.ConfigurationError: "ConfigurationError",
    errors.RemoteError: "RemoteError",
    errors.RemoteTimeout: "RemoteTimeout",
    errors.HttpError: "HttpError",
    errors.NamespaceTerminating: "NamespaceTerminating",
    errors.ObjectTooLarge: "ObjectTooLarge",
    errors.ImmutableField: "ImmutableField",
    errors.InvalidChild: "InvalidChild",
    errors.AdmissionRefused: "AdmissionRefused",
    errors.RequestTooLarge: "ApiError",
}


def _every_error_class() -> list[type[errors.OktError]]:
    """The tree drawn in okt.errors, its ApiError branch defined in okt.kube.errors (subclasses defined elsewhere, e.g.
    by codegen or the lifecycle, are not in it)."""
    found: list[type[errors.OktError]] = []
    pending: list[type[errors.OktError]] = [errors.OktError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(sub for sub in cls.__subclasses__() if sub.__module__ in (errors.__name__, kube_errors.__name__))
    return found


class _Spec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    image: str = "memcached"
    ports: list[int] = []


def _validation_error(data: dict[str, object]) -> pydantic.ValidationError:
    with pytest.raises(pydantic.ValidationError) as info:
        _Spec.model_validate(data)
    return info.value


@pytest.mark.parametrize(("cls", "reason"), EXPECTED_REASONS.items(), ids=lambda v: getattr(v, "__name__", v))
def test_each_error_kind_has_its_condition_reason(cls: type[errors.OktError], reason: str) -> None:
    assert cls.reason == reason


@pytest.mark.parametrize("cls", _every_error_class(), ids=lambda cls: cls.__name__)
def test_every_reason_matches_the_kubernetes_condition_reason_pattern(cls: type[errors.OktError]) -> None:
    assert REASON_PATTERN.match(cls.reason)


def test_the_tree_has_no_class_missing_from_the_reason_table() -> None:
    assert set(_every_error_class()) == set(EXPECTED_REASONS)


@pytest.mark.parametrize("cls", _every_error_class(), ids=lambda cls: cls.__name__)
def test_errors_descend_only_from_okt_error_and_builtin_exception(cls: type[errors.OktError]) -> None:
    foreign = [base for base in cls.__mro__ if base.__module__ not in ("okt.errors", "okt.kube.errors", "builtins")]
    assert foreign == []


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (errors.TemporaryError("later"), "TemporaryError"),
        (errors.InvalidSpec("bad size", field="spec.size"), "InvalidSpec"),
        (errors.GiveUp("gone"), "GiveUp"),
        (errors.ApiError.from_status(404, "NotFound", "missing"), "ApiError"),
        (errors.RegistrationError("twice"), "RegistrationAborted"),
        (errors.MutationError("renamed"), "MutateError"),
        (errors.ConfigurationError("bad flag"), "ConfigurationError"),
        (ValueError("boom"), "ReconcileError"),
        (KeyError("k"), "ReconcileError"),
        (KeyboardInterrupt(), "ReconcileError"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else v,
)
def test_reason_for_names_okt_errors_by_kind_and_anything_else_reconcile_error(exc: BaseException, reason: str) -> None:
    assert errors.reason_for(exc) == reason


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (0, errors.Unavailable),
        (400, errors.BadRequest),
        (401, errors.Unauthorized),
        (403, errors.Forbidden),
        (404, errors.NotFound),
        (409, errors.Conflict),
        (410, errors.Gone),
        (422, errors.Invalid),
        (413, errors.RequestTooLarge),
        (429, errors.TooManyRequests),
        (500, errors.ServerError),
        (503, errors.ServerError),
        (599, errors.ServerError),
        (418, errors.ApiError),
        (405, errors.ApiError),
    ],
)
def test_from_status_picks_the_status_class(status: int, cls: type[errors.ApiError]) -> None:
    exc = errors.ApiError.from_status(status, "Reason", "message", method="GET", url="/api/v1/pods")
    assert type(exc) is cls
    assert (exc.status, exc.api_reason, exc.api_message, exc.method, exc.url) == (
        status,
        "Reason",
        "message",
        "GET",
        "/api/v1/pods",
    )


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (0, True),
        (409, True),
        (429, True),
        (500, True),
        (504, True),
        (400, False),
        (403, False),
        (404, False),
        (410, False),
        (413, False),
        (422, False),
    ],
)
def test_only_conflicts_throttling_server_errors_and_no_response_are_retryable(status: int, retryable: bool) -> None:
    assert errors.ApiError.from_status(status, "R", "m").retryable is retryable


@pytest.mark.parametrize(
    ("status", "message", "limit", "by_storage"),
    [
        (413, "Request entity too large: limit is 3145728", 3145728, False),
        (413, "etcdserver: request is too large", None, True),
        (500, "etcdserver: request is too large", None, True),
    ],
)
def test_a_request_refused_for_its_size_is_never_retried_and_says_its_limit(
    status: int, message: str, limit: int | None, by_storage: bool
) -> None:
    exc = errors.ApiError.from_status(status, "", message)
    assert isinstance(exc, errors.RequestTooLarge)
    assert (exc.retryable, exc.limit, exc.by_storage) == (False, limit, by_storage)


@pytest.mark.parametrize(
    ("message", "causes"),
    [
        (
            "failed to create typed patch object: .spec.replicas: expected numeric (int or float), got string",
            [("spec.replicas", "expected numeric (int or float), got string")],
        ),
        (
            "failed to create typed patch object (apps/v1, Kind=Deployment ns/web): "
            ".spec.replica: field not declared in schema",
            [("spec.replica", "field not declared in schema")],
        ),
        (
            'failed to create typed patch object: errors:\n  .spec.template.spec.containers[name="main"].env[name="A"]'
            ".value: expected string, got a value (left out)\n  .spec.replica: field not declared in schema",
            [
                (
                    'spec.template.spec.containers[name="main"].env[name="A"].value',
                    "expected string, got a value (left out)",
                ),
                ("spec.replica", "field not declared in schema"),
            ],
        ),
        ("failed to create typed patch object: something else", [("", "something else")]),
    ],
    ids=["one", "object-named", "several", "no-field"],
)
def test_an_apply_the_api_server_cannot_type_is_an_invalid_object_naming_each_field_though_a_500(
    message: str, causes: list[tuple[str, str]]
) -> None:
    """Server-side apply answers a body its schema cannot type with a 500 of its own, not a 422: the same body is
    refused at every try, so it is no server failure to retry but a refusal naming its fields."""
    exc = errors.ApiError.from_status(500, "InternalError", message)

    assert isinstance(exc, errors.Invalid) and exc.status == 500 and exc.retryable is False
    assert [(c.field, c.message) for c in exc.causes] == causes
    assert {c.reason for c in exc.causes} == {kube_errors.UNTYPED}
    error = errors.InvalidChild.from_invalid("Deployment/ns/web", exc, "then")
    assert error is not None and error.fields == tuple(field or "(object)" for field, _ in causes)


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            "failed to convert new object to proper version: unable to convert unstructured object to /v1, "
            "Kind=Secret: error decoding from json: illegal base64 data at input byte 3",
            "error decoding from json: illegal base64 data at input byte 3",
        ),
        (
            "failed to convert new object to proper version: unable to convert unstructured object to /v1, Kind=Pod: "
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "failed to convert new object (ns/web; apps/v1, Kind=Deployment) to proper version (apps/v1): unable to "
            'convert unstructured object to apps/v1, Kind=Deployment: parsing time "x" as "2006-01-02T15:04:05Z07:00"',
            'parsing time "x" as "2006-01-02T15:04:05Z07:00"',
        ),
    ],
    ids=["base64", "quantity", "object-named"],
)
def test_an_apply_the_api_server_cannot_decode_into_its_kind_is_an_invalid_object_though_a_500(
    message: str, said: str
) -> None:
    """A value of the right JSON type in a form the kind does not take (a Secret's ``data`` that is no base64, a
    quantity that is none): the API server answers the apply with a 500, the same at every try."""
    exc = errors.ApiError.from_status(500, "InternalError", message)

    assert isinstance(exc, errors.Invalid) and exc.status == 500 and exc.retryable is False
    assert [(c.reason, c.field, c.message) for c in exc.causes] == [(kube_errors.UNDECODED, "", said)]
    error = errors.InvalidChild.from_invalid("Secret/ns/web", exc, "then")
    assert error is not None and error.fields == ("(object)",)


def test_a_conversion_webhook_failing_on_an_apply_stays_a_server_error() -> None:
    message = (
        "failed to convert new object to proper version: conversion webhook for example.com/v2, Kind=Widget failed: "
        'Post "https://widgets.default.svc:443/convert": dial tcp: connection refused'
    )
    exc = errors.ApiError.from_status(500, "InternalError", message)
    assert type(exc) is errors.ServerError and exc.retryable


def test_a_server_failure_that_is_no_typing_of_an_apply_stays_a_server_error() -> None:
    exc = errors.ApiError.from_status(500, "InternalError", "failed to create typed live object: .spec: broken")
    assert type(exc) is errors.ServerError and exc.retryable


@pytest.mark.parametrize(
    ("cause", "bound"),
    [
        (errors.StatusCause("FieldValueTooLong", "Too long: must have at most 1048576 bytes", "[]"), ("[]", 1048576)),
        (
            errors.StatusCause("FieldValueTooLong", "Too long: must have at most 262144 bytes", "metadata.annotations"),
            ("metadata.annotations", 262144),
        ),
        (errors.StatusCause("FieldValueTooLong", "Too long: may not be longer than 63", "metadata.labels"), None),
        (errors.StatusCause("FieldValueInvalid", "Invalid value: must have at most 10 bytes", "spec.x"), None),
    ],
)
def test_an_invalid_object_says_the_bound_in_bytes_it_passed_when_refused_for_its_size(
    cause: errors.StatusCause, bound: tuple[str, int] | None
) -> None:
    exc = errors.ApiError.from_status(422, "Invalid", "refused", causes=[cause])
    assert isinstance(exc, errors.Invalid)
    assert exc.size_bound == bound


_SELECTOR = errors.StatusCause(
    "FieldValueInvalid",
    'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"b"}}: field is immutable',
    "spec.selector",
)

_STATEFUL_SET_SPEC = errors.StatusCause(
    "FieldValueForbidden",
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are "
    "forbidden",
    "spec",
)


@pytest.mark.parametrize(
    ("causes", "fields"),
    [
        # What Kubernetes 1.20 answers: a Deployment's selector, a Service's clusterIP, a Secret's type, a
        # PersistentVolumeClaim's spec (then a diff of values), an immutable ConfigMap's data.
        ([_SELECTOR], ("spec.selector",)),
        (
            [
                errors.StatusCause(
                    "FieldValueInvalid",
                    'Invalid value: []string{"10.96.0.7"}: may not change once set',
                    "spec.clusterIPs[0]",
                )
            ],
            ("spec.clusterIPs[0]",),
        ),
        (
            [errors.StatusCause("FieldValueInvalid", 'Invalid value: "kubernetes.io/tls": field is immutable', "type")],
            ("type",),
        ),
        (
            [
                errors.StatusCause(
                    "FieldValueForbidden",
                    "Forbidden: spec is immutable after creation except resources.requests for bound claims\n  core."
                    'PersistentVolumeClaimSpec{\n- StorageClassName: &"b",\n',
                    "spec",
                )
            ],
            ("spec",),
        ),
        (
            [
                errors.StatusCause(
                    "FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "data"
                )
            ],
            ("data",),
        ),
        # A StatefulSet's spec but the fields the cause names (1.20's three; later versions name more).
        ([_STATEFUL_SET_SPEC], ("spec",)),
        (
            [
                errors.StatusCause(
                    "FieldValueForbidden",
                    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    "spec",
                )
            ],
            ("spec",),
        ),
        (
            [
                errors.StatusCause(
                    "FieldValueInvalid",
                    "Invalid value: map[string]string{}: `selector` does not match",
                    "spec.template.metadata.labels",
                ),
                _SELECTOR,
                _SELECTOR,
            ],
            ("spec.selector",),
        ),
        # A value that says "immutable" is the request's, not the refusal's.
        (
            [
                errors.StatusCause(
                    "FieldValueInvalid", 'Invalid value: "immutable": a valid label must be ...', "metadata.labels"
                )
            ],
            (),
        ),
        (
            [
                errors.StatusCause(
                    "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0", "spec.replicas"
                )
            ],
            (),
        ),
        ([], ()),
    ],
)
def test_an_invalid_object_names_the_immutable_fields_it_was_refused_a_change_of(
    causes: list[errors.StatusCause], fields: tuple[str, ...]
) -> None:
    exc = errors.ApiError.from_status(422, "Invalid", "refused", causes=causes)
    assert isinstance(exc, errors.Invalid)
    assert exc.immutable_fields == fields


def test_an_immutable_field_names_the_child_the_fields_and_the_way_out_but_never_the_value() -> None:
    exc = errors.ApiError.from_status(422, "Invalid", "refused: {app: b}", causes=[_SELECTOR])
    assert isinstance(exc, errors.Invalid)

    error = errors.ImmutableField.from_invalid("Deployment/ns/web", exc, "reconciled again once it changes")

    assert isinstance(error, errors.PermanentError) and error.__cause__ is exc
    assert error is not None and error.fields == ("spec.selector",)
    assert "Deployment/ns/web" in str(error) and "spec.selector is immutable" in str(error), str(error)
    assert "delete Deployment/ns/web" in str(error) and '"b"' not in str(error), str(error)
    plain = errors.ApiError.from_status(422, "Invalid", "refused", causes=[])
    assert isinstance(plain, errors.Invalid)
    assert errors.ImmutableField.from_invalid("Deployment/ns/web", plain, "then") is None


def test_a_statefulset_s_forbidden_spec_change_is_an_immutable_field_naming_what_may_change() -> None:
    exc = errors.ApiError.from_status(422, "Invalid", 'StatefulSet.apps "db" is invalid', causes=[_STATEFUL_SET_SPEC])
    assert isinstance(exc, errors.Invalid)

    error = errors.ImmutableField.from_invalid("StatefulSet/ns/db", exc, "reconciled again once it changes")

    assert error is not None and error.fields == ("spec",)
    assert exc.mutable_within == {"spec": ("replicas", "template", "updateStrategy")}
    assert str(error).startswith(
        "StatefulSet/ns/db cannot be changed in place: spec (but for replicas, template, updateStrategy) is immutable "
        "and the template changes it; delete StatefulSet/ns/db"
    ), str(error)


@pytest.mark.parametrize(
    ("cause", "said", "depends_on_others"),
    [
        (
            errors.StatusCause(
                "FieldValueInvalid", 'Invalid value: "s3cr3t!": a valid label must be ...', "metadata.labels"
            ),
            "metadata.labels: invalid value: a valid label must be ...",
            False,
        ),
        (
            errors.StatusCause(
                "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0", "spec.replicas"
            ),
            "spec.replicas: invalid value: must be greater than or equal to 0",
            False,
        ),
        (
            errors.StatusCause(
                "FieldValueNotSupported",
                'Unsupported value: "s3cr3t": supported values: "TCP", "UDP"',
                "spec.ports[0].protocol",
            ),
            'spec.ports[0].protocol: unsupported value: supported values: "TCP", "UDP"',
            False,
        ),
        (
            errors.StatusCause("FieldValueRequired", "Required value", "spec.template"),
            "spec.template: Required value",
            False,
        ),
        (
            errors.StatusCause(
                "FieldValueInvalid",
                "Invalid value: 30080: provided port is already allocated",
                "spec.ports[0].nodePort",
            ),
            None,
            True,
        ),
        (
            errors.StatusCause(
                "FieldValueInvalid",
                'Invalid value: []string{"10.96.0.50"}: failed to allocated ip:10.96.0.50 with error:provided IP is '
                "already allocated",
                "spec.clusterIPs",
            ),
            None,
            True,
        ),
    ],
)
def test_an_invalid_child_names_each_field_and_what_is_wrong_but_never_the_value_unless_another_object_holds_it(
    cause: errors.StatusCause, said: str | None, depends_on_others: bool
) -> None:
    exc = errors.ApiError.from_status(422, "Invalid", "refused", causes=[cause, cause])
    assert isinstance(exc, errors.Invalid)
    assert exc.depends_on_others is depends_on_others

    error = errors.InvalidChild.from_invalid("Deployment/ns/web", exc, "then")

    if said is None:
        assert error is None
        return
    assert error is not None and isinstance(error, errors.PermanentError) and error.__cause__ is exc
    assert str(error) == f"Deployment/ns/web is refused by the API server: {said}; then"
    assert error.fields == (cause.field,) and "s3cr3t" not in str(error)


def test_an_invalid_object_that_names_no_field_is_no_invalid_child() -> None:
    """A JSON patch whose test failed (someone wrote in between) is a 422 without causes: the next read may pass it."""
    exc = errors.ApiError.from_status(422, "Invalid", "the server rejected our request due to an error in our request")
    assert isinstance(exc, errors.Invalid)
    assert errors.InvalidChild.from_invalid("Deployment/ns/web", exc, "then") is None


@pytest.mark.parametrize(("api_reason", "already_exists"), [("AlreadyExists", True), ("Conflict", False)])
def test_conflict_tells_already_exists_from_a_stale_version(api_reason: str, already_exists: bool) -> None:
    exc = errors.ApiError.from_status(409, api_reason, 'configmaps "x" already exists')
    assert isinstance(exc, errors.Conflict)
    assert exc.already_exists is already_exists


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (
            errors.ApiError.from_status(
                404, "NotFound", 'configmaps "x" not found', method="GET", url="/api/v1/namespaces/ns/configmaps/x"
            ),
            'GET /api/v1/namespaces/ns/configmaps/x -> 404 NotFound: configmaps "x" not found',
        ),
        (errors.ApiError.from_status(500, "InternalError", "etcd down"), "500 InternalError: etcd down"),
        (errors.ApiError.from_status(0, "ConnectionRefused", ""), "no response (ConnectionRefused)"),
        (errors.ApiError.from_status(0, "", "", method="PATCH", url="/x"), "PATCH /x -> no response"),
        (errors.TemporaryError("first line\n  second line\n"), "first line; second line"),
        (errors.GiveUp("custom resource\ndeleted"), "custom resource; deleted"),
        (errors.PermanentError(""), "PermanentError"),
        (errors.OktError(), "OktError"),
    ],
)
def test_str_is_one_readable_line(exc: errors.OktError, text: str) -> None:
    assert str(exc) == text
    assert "\n" not in str(exc)


def test_the_transport_exception_stays_reachable_as_the_cause() -> None:
    transport = ConnectionResetError("reset by peer")
    with pytest.raises(errors.Unavailable) as info:
        try:
            raise transport
        except ConnectionResetError as exc:
            raise errors.ApiError.from_status(0, "ConnectionReset", str(exc)) from exc
    assert info.value.__cause__ is transport


@pytest.mark.parametrize("delay", [None, 0, 2.5])
def test_temporary_error_keeps_its_delay(delay: float | None) -> None:
    assert errors.TemporaryError("later", delay=delay).delay == delay


@pytest.mark.parametrize("delay", [-1.0, float("nan"), float("inf"), True])
def test_temporary_error_refuses_a_delay_that_is_not_a_duration(delay: float) -> None:
    with pytest.raises(ValueError, match="delay"):
        errors.TemporaryError("later", delay=delay)


@pytest.mark.parametrize("code", [400, 409, 422, 429, 599])
def test_an_admission_refusal_keeps_its_code_and_is_permanent(code: int) -> None:
    refused = errors.AdmissionRefused("spec.name: taken by another widget", code=code)
    assert (refused.code, str(refused), isinstance(refused, errors.PermanentError)) == (
        code,
        "spec.name: taken by another widget",
        True,
    )
    assert errors.AdmissionRefused("no").code == 403


@pytest.mark.parametrize("code", [200, 399, 600, 999, True, 409.0, "409", None])
def test_an_admission_refusal_refuses_a_code_that_is_no_http_error_status_in_one_line(code: object) -> None:
    with pytest.raises(ValueError) as refused:
        errors.AdmissionRefused("no", code=code)  # type: ignore[arg-type]
    assert str(refused.value) == f"an admission refusal's code is an HTTP error status from 400 to 599, not {code!r}"


@pytest.mark.parametrize("alarming", [False, True])
def test_give_up_keeps_its_reason_text_and_alarm(alarming: bool) -> None:
    exc = errors.GiveUp("the custom resource is gone", alarming=alarming)
    assert (exc.reason_text, exc.alarming, exc.reason) == ("the custom resource is gone", alarming, "GiveUp")


def test_invalid_spec_from_validation_error_names_the_field_and_the_bad_value() -> None:
    exc = errors.InvalidSpec.from_validation_error(_validation_error({"size": 0}))
    assert str(exc) == "spec.size: Input should be greater than or equal to 1 (got 0)"
    assert exc.field == "spec.size"
    assert exc.reason == "InvalidSpec"
    assert isinstance(exc, errors.PermanentError)


def test_invalid_spec_from_validation_error_names_every_bad_field() -> None:
    exc = errors.InvalidSpec.from_validation_error(_validation_error({"size": 0, "image": 3, "ports": [80, "x"]}))
    message = str(exc)
    assert [part.split(":")[0] for part in message.split("; ")] == ["spec.size", "spec.image", "spec.ports[1]"]
    assert "(got 'x')" in message
    assert exc.field == "spec.size"


class _Strict(pydantic.BaseModel, extra="forbid"):
    size: int = pydantic.Field(ge=1)
    image: str
    mode: typing.Literal["fast", "safe"] = "fast"
    name: str = pydantic.Field("x", max_length=3)
    ports: list[int] = pydantic.Field([], max_length=1)


def test_invalid_spec_from_validation_error_has_one_cause_per_bad_field_as_the_api_server_says_it() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        _Strict.model_validate({"size": 0, "mode": "slow", "name": "long", "ports": [1, 2], "extra": 1})
    exc = errors.InvalidSpec.from_validation_error(info.value)
    assert [(cause.field, cause.reason) for cause in exc.causes] == [
        ("spec.size", "FieldValueInvalid"),
        ("spec.image", "FieldValueRequired"),
        ("spec.mode", "FieldValueNotSupported"),
        ("spec.name", "FieldValueTooLong"),
        ("spec.ports", "FieldValueTooMany"),
        ("spec.extra", "FieldValueForbidden"),
    ]
    assert exc.causes[0].message == "Input should be greater than or equal to 1 (got 0)"
    assert str(exc) == "; ".join(f"{cause.field}: {cause.message}" for cause in exc.causes)


def test_a_cause_never_echoes_what_a_secret_field_was_given() -> None:
    exc = _secret_error({"size": 1, "token": 42})
    assert [cause.message for cause in exc.causes] == ["Input should be a valid string"]


@pytest.mark.parametrize(
    ("exc", "causes"),
    [
        (
            errors.InvalidSpec("at most 3 replicas in dev", field="spec.size"),
            (errors.StatusCause("FieldValueInvalid", "at most 3 replicas in dev", "spec.size"),),
        ),
        (
            errors.InvalidSpec("spec: must be an object, got list", field="spec"),
            (errors.StatusCause("FieldValueInvalid", "must be an object, got list", "spec"),),
        ),
        (errors.InvalidSpec("the template failed"), ()),
    ],
    ids=["field", "field-in-the-message", "no-field"],
)
def test_an_invalid_spec_raised_by_hand_has_a_cause_when_it_names_its_field(
    exc: errors.InvalidSpec, causes: tuple[errors.StatusCause, ...]
) -> None:
    assert exc.causes == causes


def test_invalid_spec_does_not_echo_the_whole_object_for_a_missing_field() -> None:
    class Required(pydantic.BaseModel):
        image: str

    with pytest.raises(pydantic.ValidationError) as info:
        Required.model_validate({"other": "x" * 500})
    exc = errors.InvalidSpec.from_validation_error(info.value, prefix="")
    assert str(exc) == "image: Field required"
    assert exc.field == "image"


def test_invalid_spec_shortens_long_bad_values() -> None:
    exc = errors.InvalidSpec.from_validation_error(_validation_error({"size": 1, "image": ["y" * 500]}))
    assert str(exc).startswith("spec.image: Input should be a valid string (got ['yyy")
    assert len(str(exc)) < 150


@pytest.mark.parametrize(
    "exc",
    [
        errors.TemporaryError("later", delay=3.0),
        errors.InvalidSpec("bad", field="spec.size"),
        errors.InvalidSpec.from_validation_error(_validation_error({"size": 0, "ports": ["x"]})),
        errors.GiveUp("stop", alarming=True),
        errors.ApiError.from_status(409, "AlreadyExists", "exists", method="POST", url="/x"),
        errors.ApiError.from_status(503, "ServiceUnavailable", "down"),
        errors.ApiError.from_status(
            422, "Invalid", "bad", causes=[errors.StatusCause("FieldValueInvalid", "too big", "spec.size")]
        ),
        errors.RegistrationError("twice"),
        errors.HttpError("GET pod/x -> 404: gone", status=404, body="gone"),
        errors.AdmissionRefused("the name is taken", code=409),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_errors_survive_pickle_and_copy_with_their_attributes(exc: errors.OktError) -> None:
    for clone in (pickle.loads(pickle.dumps(exc)), copy.copy(exc)):
        assert type(clone) is type(exc)
        assert vars(clone) == vars(exc)
        assert str(clone) == str(exc)


class _Credentials(pydantic.BaseModel):
    user: str
    password: pydantic.SecretStr = pydantic.Field(min_length=12)


class _WithSecrets(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    token: pydantic.SecretStr | None = None
    credentials: _Credentials | None = None
    keys: list[pydantic.SecretBytes] = []
    pins: dict[str, pydantic.Secret[int]] = {}

    @pydantic.model_validator(mode="after")
    def _token_or_credentials(self) -> typing.Self:
        if self.size > 5 and self.token is None and self.credentials is None:
            raise ValueError("a cluster above 5 needs a token or credentials")
        return self


def _secret_error(data: dict[str, object]) -> errors.InvalidSpec:
    with pytest.raises(pydantic.ValidationError) as info:
        _WithSecrets.model_validate(data)
    return errors.InvalidSpec.from_validation_error(info.value, model=_WithSecrets)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"size": 1, "token": 42}, "spec.token"),
        ({"size": 1, "credentials": {"user": "u", "password": "hunter2-short"[:7]}}, "spec.credentials.password"),
        ({"size": 1, "credentials": "hunter2-as-a-string"}, "spec.credentials"),
        ({"size": 1, "keys": ["k1", 3]}, "spec.keys[1]"),
        ({"size": 1, "pins": {"door": "hunter2"}}, "spec.pins.door"),
        ({"size": 9, "credentials": None, "note": "hunter2"}, "spec"),
    ],
    ids=[
        "secret-field",
        "nested-secret-field",
        "model-holding-a-secret",
        "list-of-secrets",
        "generic-secret",
        "whole-spec",
    ],
)
def test_invalid_spec_never_echoes_what_a_secret_field_was_given(data: dict[str, object], field: str) -> None:
    exc = _secret_error(data)
    assert exc.field == field
    assert "hunter2" not in str(exc)
    assert "(got" not in str(exc)


def test_invalid_spec_still_echoes_the_bad_value_of_a_plain_field_beside_secret_ones() -> None:
    exc = _secret_error({"size": 0, "token": "s3cr3t-value"})
    assert str(exc) == "spec.size: Input should be greater than or equal to 1 (got 0)"


@pytest.mark.parametrize(
    ("causes", "terminating"),
    [
        ((errors.StatusCause("NamespaceTerminating", "namespace ns is being terminated", "metadata.namespace"),), True),
        ((), False),
    ],
    ids=["namespace-terminating", "rbac"],
)
def test_a_forbidden_create_in_a_namespace_being_deleted_is_told_from_rbac_by_its_cause(
    causes: tuple[errors.StatusCause, ...], terminating: bool
) -> None:
    exc = errors.ApiError.from_status(403, "Forbidden", "configmaps is forbidden", causes=causes)

    assert isinstance(exc, errors.Forbidden)
    assert exc.namespace_terminating is terminating


def test_a_wait_is_a_temporary_error_that_is_not_counted_as_a_failure() -> None:
    wait = errors.NamespaceTerminating("namespace ns is being deleted", namespace="ns")

    assert isinstance(wait, errors.TemporaryError)
    assert (wait.waiting, errors.TemporaryError("flaky").waiting) == (True, False)
    assert pickle.loads(pickle.dumps(wait)).namespace == "ns"


@pytest.mark.parametrize(
    ("message", "causes", "said"),
    [
        (
            'Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already '
            "allocated",
            [
                errors.StatusCause(
                    "FieldValueInvalid",
                    "Invalid value: 30080: provided port is already allocated",
                    "spec.ports[0].nodePort",
                )
            ],
            "spec.ports[0].nodePort: invalid value: provided port is already allocated",
        ),
        (
            'Service "web" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.50"}: failed to allocated '
            "ip:10.96.0.50 with error:provided IP is already allocated",
            [
                errors.StatusCause(
                    "FieldValueInvalid",
                    'Invalid value: []string{"10.96.0.50"}: failed to allocated ip:10.96.0.50 with error:provided IP '
                    "is already allocated",
                    "spec.clusterIPs",
                )
            ],
            "spec.clusterIPs: invalid value: provided IP is already allocated",
        ),
        (
            'Picker.selectors.okt.io "p" is invalid: status.url: Invalid value: "https://u:10.96.0.50@db": '
            "status.url in body should match '^https://[a-z.]+$'",
            [
                errors.StatusCause(
                    "FieldValueInvalid",
                    "Invalid value: \"https://u:10.96.0.50@db\": status.url in body should match '^https://[a-z.]+$'",
                    "status.url",
                )
            ],
            "status.url: invalid value: status.url in body should match '^https://[a-z.]+$'",
        ),
        (
            'Service "web" is invalid: spec.ports[1].name: Duplicate value: "a: 10.96.0.50"',
            [errors.StatusCause("FieldValueDuplicate", 'Duplicate value: "a: 10.96.0.50"', "spec.ports[1].name")],
            "spec.ports[1].name: duplicate value",
        ),
        (
            'admission webhook "check.example.com" denied the request: spec.password: Invalid value: "10.96.0.50": '
            "too short",
            [],
            'admission webhook "check.example.com" denied the request: spec.password: invalid value: too short',
        ),
        (
            "admission webhook \"validate.example.com\" denied the request: spec.image '10.96.0.50:latest' uses a "
            "floating tag",
            [errors.StatusCause("FieldValueInvalid", "spec.image uses a floating tag: pin a version", "spec.image")],
            'admission webhook "validate.example.com" denied the request: spec.image uses a floating tag: pin a '
            "version",
        ),
        (
            '[spec.a: Invalid value: map[string]interface {}{"k":"10.96.0.50"}: must be a string, spec.b: '
            'Not found value: "10.96.0.50"]',
            [],
            "[spec.a: invalid value: must be a string, spec.b: not found value]",
        ),
    ],
)
def test_an_invalid_object_says_each_field_and_what_is_wrong_never_the_value_the_server_quotes(
    message: str, causes: list[errors.StatusCause], said: str
) -> None:
    exc = errors.ApiError.from_status(422, "Invalid", message, method="PATCH", url="/api/v1/x", causes=causes)

    assert isinstance(exc, errors.Invalid)
    assert str(exc) == f"PATCH /api/v1/x -> 422 Invalid: {said}"
    assert "10.96.0.50" not in errors.said(exc) and "30080" not in str(exc) and "u:" not in str(exc)
    assert exc.api_message == message and exc.causes == tuple(causes)  # the server's text stays data for code


def test_the_api_errors_are_importable_from_okt_errors_as_the_same_classes() -> None:
    for name in ("ApiError", "Invalid", "RequestTooLarge", "StatusCause", "refused_fields", "without_values"):
        assert getattr(errors, name) is getattr(kube_errors, name) and name in errors.__all__


class _Login(pydantic.BaseModel):
    port: int


def _login_read(data: dict[str, str]) -> _Login:
    try:
        return _Login.model_validate(data)
    except pydantic.ValidationError as exc:
        raise RuntimeError("the login Secret is unreadable") from exc


def _login_read_without_from(data: dict[str, str]) -> _Login:
    try:
        return _Login.model_validate(data)
    except pydantic.ValidationError:
        raise RuntimeError("the login Secret is unreadable")  # noqa: B904 - the other way a hook writes it


@pytest.mark.parametrize("format", ["json", "console"])
@pytest.mark.parametrize("read", [_login_read, _login_read_without_from], ids=["from", "during"])
def test_a_logged_traceback_never_says_the_values_a_validation_error_it_came_of_was_given(
    format: logs.Format, read: typing.Callable[[dict[str, str]], _Login]
) -> None:
    """A hook turning a ``ValidationError`` into its own error keeps it in the chain the traceback prints, with
    pydantic's text, which repeats every input (the Secret's value the hook validated): the log line says each
    exception of the chain as :func:`okt.errors.said` does, where it was raised, and no value."""
    password = "-".join(("hunter2", "s3cret"))  # decoded from a Secret's data (no literal of a traceback's line)
    stream = io.StringIO()
    logs.configure(format, stream=stream)
    try:
        try:
            read({"port": password})
        except RuntimeError as exc:
            structlog.get_logger().error("a hook raised", error=errors.said(exc), **errors.where_raised(exc))
    finally:
        structlog.reset_defaults()

    out = stream.getvalue()
    assert "hunter2" not in out
    assert "ValidationError: _Login: port: Input should be a valid integer" in out
    assert "_Login.model_validate(data)" in out  # where the chain began, by its line
    assert "RuntimeError: the login Secret is unreadable" in out


def test_a_logged_traceback_of_no_validation_error_is_the_exception_itself() -> None:
    try:
        try:
            raise KeyError("mode")
        except KeyError as exc:
            raise RuntimeError("no mode") from exc
    except RuntimeError as exc:
        assert errors.where_raised(exc) == {"exc_info": exc}
