"""Conversion rewrites apiVersion and the spec through the author's converters, and fails whole with a reason."""

from __future__ import annotations

import datetime
from typing import Any

import pydantic
import pytest
import structlog.testing

import okt
from okt.reconciler import conversion


class SpecAlpha(pydantic.BaseModel):
    size: int = 1
    image_name: str = pydantic.Field(alias="imageName")


class SpecBeta(pydantic.BaseModel):
    size: int = 1
    image: str


class SpecOne(pydantic.BaseModel):
    replicas: int
    image: str


def up(spec: SpecAlpha) -> SpecBeta:
    return SpecBeta(size=spec.size, image=spec.image_name)


def down(spec: SpecBeta) -> dict[str, Any]:
    return {"size": spec.size, "imageName": spec.image}


def beta_to_one(spec: SpecBeta) -> SpecOne:
    if spec.image == "broken":
        raise RuntimeError("cannot map this image")
    return SpecOne(replicas=spec.size, image=spec.image)


class Caches(okt.Reconciler):
    api_version = "example.com/v1beta1"
    kind = "Cache"
    spec_model = SpecBeta
    spec_models = {"v1alpha1": SpecAlpha, "v1": SpecOne}
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down, ("v1beta1", "v1"): beta_to_one}


def cache(version: str, spec: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {
        "apiVersion": f"example.com/{version}",
        "kind": "Cache",
        "metadata": {"name": name, "namespace": "ns", "labels": {"a": "b"}},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def convert(desired: str, *objects: dict[str, Any]) -> conversion.Result:
    return conversion.convert(Caches, {"uid": "u", "desiredAPIVersion": f"example.com/{desired}", "objects": objects})


def test_a_renamed_field_is_converted_both_ways_and_round_trips() -> None:
    alpha = cache("v1alpha1", {"size": 3, "imageName": "memcached:1.6"})
    (beta,) = convert("v1beta1", alpha).objects
    assert beta["apiVersion"] == "example.com/v1beta1"
    assert beta["spec"] == {"size": 3, "image": "memcached:1.6"}
    assert {k: v for k, v in beta.items() if k not in ("apiVersion", "spec")} == {
        k: v for k, v in alpha.items() if k not in ("apiVersion", "spec")
    }
    (back,) = convert("v1alpha1", beta).objects
    assert back == alpha


def test_unset_fields_stay_unset_so_defaults_are_the_schemas() -> None:
    (beta,) = convert("v1beta1", cache("v1alpha1", {"imageName": "x"})).objects
    assert beta["spec"] == {"image": "x", "size": 1}  # set by the converter, which passed it explicitly
    (back,) = convert("v1alpha1", cache("v1beta1", {"image": "x"})).objects
    assert back["spec"] == {"size": 1, "imageName": "x"}


def test_versions_without_a_direct_converter_are_chained() -> None:
    assert conversion.chain(Caches.converters, "v1alpha1", "v1") == [("v1alpha1", "v1beta1"), ("v1beta1", "v1")]
    (one,) = convert("v1", cache("v1alpha1", {"size": 2, "imageName": "x"})).objects
    assert (one["apiVersion"], one["spec"]) == ("example.com/v1", {"replicas": 2, "image": "x"})


def test_an_object_in_the_desired_version_is_returned_as_it_is() -> None:
    obj = cache("v1beta1", {"image": "x", "unknown": "kept"})
    assert convert("v1beta1", obj).objects == (obj,)


@pytest.mark.parametrize(
    ("desired", "obj", "reason"),
    [
        ("v1", cache("v1beta1", {"image": "broken"}), "internal error in converter v1beta1->v1: RuntimeError"),
        ("v1beta1", cache("v1alpha1", {"size": 2}), "spec.imageName: Field required"),
        ("v1alpha1", cache("v1", {"replicas": 1, "image": "x"}), "no converters lead from v1 to v1alpha1"),
    ],
    ids=["converter-raises", "invalid-source-spec", "no-path"],
)
def test_a_failed_conversion_fails_the_whole_review_naming_object_versions_and_reason(
    desired: str, obj: dict[str, Any], reason: str
) -> None:
    result = convert(desired, cache("v1alpha1", {"imageName": "fine"}, name="ok"), obj)
    assert result.objects == ()
    assert result.failure is not None
    assert result.failure.startswith(f"cannot convert ns/c from {obj['apiVersion']} to example.com/{desired}: ")
    assert reason in result.failure


def test_the_review_answer_is_success_with_objects_or_a_failure_with_a_message() -> None:
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u-9"}}
    ok = conversion.respond(review, conversion.Result(({"a": 1},)))
    assert ok == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": "u-9", "convertedObjects": [{"a": 1}], "result": {"status": "Success"}},
    }
    failed = conversion.respond(review, conversion.Result(failure="why"))["response"]
    assert failed["result"] == {"status": "Failure", "message": "why"}


@pytest.mark.parametrize(
    "value", [datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), float("nan")], ids=["datetime", "nan"]
)
def test_a_converter_that_returns_what_json_cannot_say_fails_the_review_naming_the_object(value: Any) -> None:
    class Loose(okt.Reconciler):
        """The stored version has no spec model: what the converter returns is written as it is."""

        api_version = "example.com/v2"
        kind = "Cache"
        spec_models = {"v1beta1": SpecBeta}
        converters = {("v1beta1", "v2"): lambda spec: {"image": spec.image, "since": value}}

    request = {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": [cache("v1beta1", {"image": "x"})]}

    result = conversion.convert(Loose, request)

    assert result.objects == ()
    assert result.failure is not None
    assert result.failure.startswith("cannot convert ns/c from example.com/v1beta1 to example.com/v2: ")


class SecretAlpha(pydantic.BaseModel):
    size: int = 1
    password: pydantic.SecretStr
    token: pydantic.SecretBytes | None = None


class SecretBeta(pydantic.BaseModel):
    replicas: int = 1
    password: pydantic.SecretStr
    token: pydantic.SecretBytes | None = None


class Databases(okt.Reconciler):
    api_version = "example.com/v1beta1"
    kind = "Cache"
    spec_model = SecretBeta
    spec_models = {"v1alpha1": SecretAlpha}
    converters = {
        ("v1alpha1", "v1beta1"): lambda s: SecretBeta(replicas=s.size, password=s.password, token=s.token),
        ("v1beta1", "v1alpha1"): lambda s: {"size": s.replicas, "password": s.password, "token": s.token},
    }


def test_a_secret_field_is_converted_with_its_value_not_its_mask() -> None:
    alpha = cache("v1alpha1", {"size": 2, "password": "hunter2", "token": "t0k"})

    (beta,) = conversion.convert(
        Databases, {"uid": "u", "desiredAPIVersion": "example.com/v1beta1", "objects": [alpha]}
    ).objects
    (back,) = conversion.convert(
        Databases, {"uid": "u", "desiredAPIVersion": "example.com/v1alpha1", "objects": [beta]}
    ).objects

    assert beta["spec"] == {"replicas": 2, "password": "hunter2", "token": "t0k"}
    assert back == alpha


class Credentials(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    user: str
    port: int


SECRET_DATA = {"user": "admin", "password": "hunter2", "port": 5432}


def leaky(spec: SpecBeta) -> SpecOne:
    """A converter's bug: it validates data it read, a password among it, with a model that data does not fit."""
    Credentials.model_validate(SECRET_DATA)
    return SpecOne(replicas=spec.size, image=spec.image)


class LeakyCaches(Caches):
    converters = {("v1beta1", "v1"): leaky}


def test_a_converter_that_raises_fails_the_review_in_one_line_without_its_input_and_logs_it_once() -> None:
    obj = cache("v1beta1", {"image": "x"})
    with structlog.testing.capture_logs() as logged:
        result = conversion.convert(LeakyCaches, {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [obj]})

    reason = "Credentials: password: Extra inputs are not permitted"
    assert result.failure == f"cannot convert ns/c from example.com/v1beta1 to example.com/v1: {reason}"
    errors_logged = [line for line in logged if line["log_level"] == "error"]
    assert [line["error"] for line in errors_logged] == [f"ValidationError: {reason}"]
    assert "hunter2" not in repr(logged)
    assert "leaky" in errors_logged[0]["stack"]


def test_a_converter_that_cannot_convert_a_spec_its_model_refuses_fails_the_review_saying_both() -> None:
    # The required field the converter moves is missing (stored before the schema required it): nothing to move.
    with structlog.testing.capture_logs() as logged:
        result = convert("v1beta1", cache("v1alpha1", {"size": 2}))

    assert result.failure == (
        "cannot convert ns/c from example.com/v1alpha1 to example.com/v1beta1: internal error in converter "
        "v1alpha1->v1beta1: AttributeError (a spec the v1alpha1 model refuses: spec.imageName: Field required)"
    )
    assert [line["converter"] for line in logged if line["log_level"] == "error"] == ["v1alpha1->v1beta1"]


class Backup(pydantic.BaseModel):
    every_hours: int = pydantic.Field(alias="everyHours", ge=1)
    since: datetime.datetime


class TaggedAlpha(pydantic.BaseModel):
    """A model whose validators refuse what the CRD schema generated from it accepts (no validator is in it)."""

    size: int = pydantic.Field(default=1, le=10)
    image_name: str = pydantic.Field(alias="imageName")
    backups: list[Backup] = []
    spare: Backup | None = None

    @pydantic.field_validator("image_name")
    @classmethod
    def tagged(cls, value: str) -> str:
        if ":" not in value:
            raise ValueError("the image needs a tag")
        return value

    @pydantic.model_validator(mode="after")
    def backed_up_when_large(self) -> TaggedAlpha:
        if self.size > 5 and not self.backups:
            raise ValueError("more than 5 replicas need a backup")
        return self


class TaggedBeta(pydantic.BaseModel):
    replicas: int = pydantic.Field(default=1, le=10)
    image: str
    backups: list[Backup] = []
    spare: Backup | None = None

    @pydantic.field_validator("image")
    @classmethod
    def tagged(cls, value: str) -> str:
        if ":" not in value:
            raise ValueError("the image needs a tag")
        return value


SEEN: list[TaggedAlpha] = []
MOVED = {"size": "replicas", "image_name": "image", "backups": "backups", "spare": "spare"}


def tagged_up(spec: TaggedAlpha) -> dict[str, Any]:
    """A converter moving fields into a mapping: what it returns is not validated."""
    SEEN.append(spec)
    return {MOVED[name]: getattr(spec, name) for name in spec.model_fields_set}


def tagged_down(spec: TaggedBeta) -> TaggedAlpha:
    """A converter building its model without validation."""
    back = {source: target for target, source in MOVED.items()}
    return TaggedAlpha.model_construct(**{back[name]: getattr(spec, name) for name in spec.model_fields_set})


class Tagged(okt.Reconciler):
    api_version = "example.com/v1beta1"
    kind = "Cache"
    spec_model = TaggedBeta
    spec_models = {"v1alpha1": TaggedAlpha}
    converters = {("v1alpha1", "v1beta1"): tagged_up, ("v1beta1", "v1alpha1"): tagged_down}


def tagged(version: str, desired: str, *objects: dict[str, Any]) -> conversion.Result:
    request = {"uid": "u", "desiredAPIVersion": f"example.com/{desired}", "objects": objects}
    return conversion.convert(Tagged, request)


BACKUP = {"everyHours": 6, "since": "2032-04-23T10:20:30Z"}


@pytest.mark.parametrize(
    ("alpha", "beta"),
    [
        ({"size": 2, "imageName": "memcached"}, {"replicas": 2, "image": "memcached"}),
        ({"size": 7, "imageName": "memcached:1.6"}, {"replicas": 7, "image": "memcached:1.6"}),
        ({"size": 12, "imageName": "memcached:1.6"}, {"replicas": 12, "image": "memcached:1.6"}),
        (
            {"size": 2, "imageName": "m:1", "backups": [BACKUP, {**BACKUP, "everyHours": 0}]},
            {"replicas": 2, "image": "m:1", "backups": [BACKUP, {**BACKUP, "everyHours": 0}]},
        ),
        (
            {"size": 2, "imageName": "m:1", "spare": {"everyHours": "often", "since": BACKUP["since"]}},
            {"replicas": 2, "image": "m:1", "spare": {"everyHours": "often", "since": BACKUP["since"]}},
        ),
    ],
    ids=["field-validator", "model-validator", "constraint", "nested-constraint-in-a-list", "nested-wrong-type"],
)
def test_a_spec_its_models_refuse_is_converted_both_ways_without_a_failure_or_a_logged_error(
    alpha: dict[str, Any], beta: dict[str, Any]
) -> None:
    # Stored before the validator existed, or in a namespace admission is not called for: its conversion failing
    # would fail every list of the kind at the other version, the operator's own among them.
    with structlog.testing.capture_logs() as logged:
        up_result = tagged("v1alpha1", "v1beta1", cache("v1alpha1", alpha))
        down_result = tagged("v1beta1", "v1alpha1", cache("v1beta1", beta))

    assert (up_result.failure, down_result.failure) == (None, None)
    assert [converted["spec"] for converted in up_result.objects] == [beta]
    assert [converted["spec"] for converted in down_result.objects] == [alpha]
    assert [line for line in logged if line["log_level"] in ("error", "warning")] == []


def test_a_refused_spec_reaches_the_converter_with_each_field_its_type_takes_typed() -> None:
    SEEN.clear()
    spec = {"size": 12, "imageName": "memcached", "backups": [BACKUP, {**BACKUP, "everyHours": 0}]}

    assert tagged("v1alpha1", "v1beta1", cache("v1alpha1", spec)).failure is None

    (seen,) = SEEN
    assert (seen.size, seen.image_name) == (12, "memcached")
    assert [type(backup) for backup in seen.backups] == [Backup, Backup]
    assert [(backup.every_hours, backup.since.year) for backup in seen.backups] == [(6, 2032), (0, 2032)]
    assert seen.model_fields_set == {"size", "image_name", "backups"}


def test_a_review_of_valid_and_refused_specs_converts_every_object_in_its_order() -> None:
    objects = [
        cache("v1alpha1", {"size": 1, "imageName": "a:1"}, name="a"),
        cache("v1alpha1", {"size": 1, "imageName": "b"}, name="b"),
        cache("v1alpha1", {"size": 1, "imageName": "c:1"}, name="c"),
    ]

    result = tagged("v1alpha1", "v1beta1", *objects)

    assert result.failure is None
    converted = [(converted["metadata"]["name"], converted["spec"]["image"]) for converted in result.objects]
    assert converted == [("a", "a:1"), ("b", "b"), ("c", "c:1")]


class StrictWindow(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    since: datetime.datetime


class StrictStart(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    start: datetime.datetime


class Schedules(okt.Reconciler):
    api_version = "example.com/v2"
    kind = "Schedule"
    spec_model = StrictStart
    spec_models = {"v1": StrictWindow}
    converters = {
        ("v1", "v2"): lambda spec: StrictStart(start=spec.since),
        ("v2", "v1"): lambda spec: StrictWindow(since=spec.start),
    }


def test_a_strict_model_reads_the_stored_spec_by_the_json_forms_of_its_values() -> None:
    # Python's strict mode wants a datetime object, which no stored spec holds: every review failed.
    old = {**cache("v1", {"since": "2032-04-23T10:20:30Z"}), "apiVersion": "example.com/v1", "kind": "Schedule"}

    result = conversion.convert(Schedules, {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": [old]})

    assert result.failure is None
    assert [converted["spec"] for converted in result.objects] == [{"start": "2032-04-23T10:20:30Z"}]


class Timers(okt.Reconciler):
    """A strict stored version, and an older one served without a model: its converter passes the stored data on."""

    api_version = "example.com/v2"
    kind = "Timer"
    spec_model = StrictStart
    converters = {("v1", "v2"): lambda spec: {"start": spec["since"]}}


class Alarms(okt.Reconciler):
    """A strict model on both sides, the converter answering with data in the JSON forms of its values."""

    api_version = "example.com/v2"
    kind = "Alarm"
    spec_model = StrictStart
    spec_models = {"v1": StrictWindow}
    converters = {("v1", "v2"): lambda spec: {"start": spec.since.isoformat()}}


@pytest.mark.parametrize("reconciler", [Timers, Alarms])
def test_a_strict_model_reads_a_converters_data_by_the_json_forms_of_its_values(
    reconciler: type[okt.Reconciler],
) -> None:
    old = {**cache("v1", {"since": "2032-04-23T10:20:30Z"}), "apiVersion": "example.com/v1", "kind": reconciler.kind}

    result = conversion.convert(reconciler, {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": [old]})

    # Python's strict mode wanted a datetime object, which JSON data never holds: every review of it failed.
    assert result.failure is None
    assert [converted["spec"] for converted in result.objects] == [{"start": "2032-04-23T10:20:30Z"}]


class SpecTwo(pydantic.BaseModel):
    replicas: int = pydantic.Field(ge=1)


class Sized(okt.Reconciler):
    api_version = "example.com/v2"
    kind = "Cache"
    spec_model = SpecTwo
    spec_models = {"v1beta1": SpecBeta}
    converters = {("v1beta1", "v2"): lambda spec: SpecTwo(replicas=spec.size)}


def test_a_converter_whose_model_refuses_what_it_builds_fails_the_review_naming_the_fields() -> None:
    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "u",
            "desiredAPIVersion": "example.com/v2",
            "objects": [cache("v1beta1", {"size": 0, "image": "x"})],
        },
    }

    answer = conversion.respond(review, conversion.convert(Sized, review["request"]))

    assert answer["response"]["convertedObjects"] == []
    assert answer["response"]["result"] == {
        "status": "Failure",
        "message": "cannot convert ns/c from example.com/v1beta1 to example.com/v2: "
        "SpecTwo: replicas: Input should be greater than or equal to 1",
    }


class Careless(okt.Reconciler):
    """A converter's bug: it looks a value of the spec (a password, say) up where its key belongs."""

    api_version = "example.com/v2"
    kind = "Cache"
    spec_models = {"v1beta1": SpecBeta}
    converters = {("v1beta1", "v2"): lambda spec: {"image": {}[spec.image]}}


def test_a_converter_that_raises_a_bug_fails_the_review_naming_its_class_not_its_text_and_logs_it_once() -> None:
    obj = cache("v1beta1", {"image": "hunter2"})
    with structlog.testing.capture_logs() as logged:
        result = conversion.convert(Careless, {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": [obj]})

    assert result.failure == (
        "cannot convert ns/c from example.com/v1beta1 to example.com/v2: "
        "internal error in converter v1beta1->v2: KeyError"
    )
    errors_logged = [line for line in logged if line["log_level"] == "error"]
    assert [line["converter"] for line in errors_logged] == ["v1beta1->v2"]
    assert "spec.image]" in errors_logged[0]["stack"]


@pytest.mark.parametrize(
    ("returned", "said"),
    [(None, "returned None"), (["x"], "returned a list"), ("x", "returned a str")],
    ids=["none", "list", "text"],
)
def test_a_converter_that_returns_no_object_fails_the_review_rather_than_answering_a_spec_lost(
    returned: Any, said: str
) -> None:
    class Forgetful(okt.Reconciler):
        """A converter without its ``return`` (the spec lost): answered, the object came back with ``spec: null``."""

        api_version = "example.com/v1beta1"
        kind = "Cache"
        spec_model = SpecBeta
        spec_models = {"v1alpha1": SpecAlpha, "v1": None}
        converters = {("v1alpha1", "v1beta1"): lambda spec: returned, ("v1", "v1beta1"): lambda spec: returned}

    for source in ("v1alpha1", "v1"):
        request = {
            "uid": "u",
            "desiredAPIVersion": "example.com/v1beta1",
            "objects": [cache(source, {"size": 2, "imageName": "secret-image"})],
        }

        result = conversion.convert(Forgetful, request)

        assert result.objects == ()
        assert result.failure is not None
        assert f"converter {source}->v1beta1 {said}" in result.failure
        assert "secret-image" not in result.failure


class Schedule(pydantic.BaseModel):
    at: str = "daily"
    keep: int = 7


class PlainSpec(pydantic.BaseModel):
    schedule: str | None = None
    tags: list[str] = []


class NestedSpec(pydantic.BaseModel):
    backup: Schedule = pydantic.Field(default_factory=Schedule)
    tags: list[str] = []
    replicas: int = 1


def nest(spec: PlainSpec) -> NestedSpec:
    """Written as Python is: the target built with its defaults, then filled in place."""
    nested = NestedSpec()
    if spec.schedule is not None:
        nested.backup.at = spec.schedule
    nested.tags.extend(spec.tags)
    return nested


class Nesting(okt.Reconciler):
    api_version = "example.com/v2"
    kind = "Cache"
    spec_model = NestedSpec
    spec_models = {"v1": PlainSpec}
    converters = {("v1", "v2"): nest}


def test_what_a_converter_fills_in_place_in_a_default_of_its_model_is_converted_not_lost() -> None:
    """Pydantic counts a field as set only when it was given or assigned: ``nested.backup.at = ...`` on a default
    ``backup``, ``nested.tags.extend(...)`` on a default ``tags``, left them unset, and the spec went out without them.
    A default left as it is stays unset: the schema's to apply."""
    request = {
        "uid": "u",
        "desiredAPIVersion": "example.com/v2",
        "objects": [
            cache("v1", {"schedule": "hourly", "tags": ["a", "b"]}, name="filled"),
            cache("v1", {}, name="defaults"),
        ],
    }

    filled, defaults = conversion.convert(Nesting, request).objects

    assert filled["spec"] == {"backup": {"at": "hourly"}, "tags": ["a", "b"]}
    assert defaults["spec"] == {}
