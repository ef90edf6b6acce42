"""A CRD generated from a pydantic model, on a real API server: it accepts what the model accepts and refuses what
the model refuses.

Each case creates a custom resource with a spec and compares the server's answer with the model's: a spec the model
validates is stored (and what is stored still validates to the same model), a spec the model refuses is refused.
"""

from __future__ import annotations

import datetime
import enum
import ipaddress
import secrets
import uuid
from typing import Annotated, Any, Literal

import hypothesis
import pydantic
import pytest
from hypothesis import strategies

import okt
from okt import errors
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds

pytestmark = pytest.mark.integration


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Port(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    container_port: int | str = pydantic.Field(alias="containerPort")
    protocol: Literal["TCP", "UDP"] = "TCP"
    target_port: int = pydantic.Field(default=8080, alias="targetPort")
    host_port: int | None = pydantic.Field(default=None, alias="hostPort", ge=1)


class Limit(pydantic.BaseModel):
    value: int


class GitSource(pydantic.BaseModel):
    type: Literal["git"]
    url: str
    branch: str = "main"
    depth: int | None = pydantic.Field(default=None, ge=1)
    mode: Literal["shallow", "full"] = "full"


class ImageSource(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    type: Literal["image", "oci"]
    image: str = pydantic.Field(min_length=1)
    depth: int | None = pydantic.Field(default=None, ge=1)
    mode: Literal["pull", "cache"] = "pull"


class SchemedSpec(pydantic.BaseModel):
    colour: Colour | None = None
    mode: Literal["fast", "safe"] | None = "safe"
    tier: Literal["gold"] | None = None
    grade: Literal["a", "b", None] = "a"
    size: int = pydantic.Field(default=1, ge=1)
    port: Port | None = None
    limit: Limit | None = None
    ports: list[Port] = pydantic.Field(default_factory=list, max_length=3)
    labels: dict[str, str] = {}
    tags: set[str] = pydantic.Field(default=set(), max_length=2)
    extra: dict[str, Any] | None = None
    target: int | str | None = None
    ratio: float = pydantic.Field(default=0.5, gt=0, lt=1)
    since: datetime.datetime | None = None
    day: datetime.date | None = None
    period: datetime.timedelta | None = None
    anything: Any = "unset"
    values: list[Any] = []
    uid: uuid.UUID | None = None
    uid4: pydantic.UUID4 | None = None
    address: ipaddress.IPv4Address | None = None
    address6: ipaddress.IPv6Address | None = None
    url: pydantic.AnyUrl | None = None
    code: str | None = pydantic.Field(default=None, pattern=r"^\w+(-\d+)?$")
    words: str | None = pydantic.Field(default=None, pattern=r"^[a-z]+(\s[a-z]+)*$")
    label: str | None = pydantic.Field(default=None, pattern=r"^\S+$")
    password: pydantic.SecretStr = pydantic.SecretStr("changeme")
    step: float = pydantic.Field(default=0.5, multiple_of=0.01)
    batch: int = pydantic.Field(default=10, multiple_of=5)
    key: str | None = pydantic.Field(default=None, pattern=r"^[\w.]+$")
    source: Annotated[GitSource | ImageSource, pydantic.Field(discriminator="type")] | None = None
    weights: dict[Literal["cpu", "memory"], int] = pydantic.Field(default={}, max_length=3)
    only: dict[Literal["cpu"], int] = {}
    data: bytes = pydantic.Field(default=b"ab", min_length=2)
    amount: int | float = pydantic.Field(default=1, gt=0, le=100)
    scale: Annotated[int, pydantic.Field(ge=1)] | Annotated[float, pydantic.Field(ge=1)] | None = None
    peer: int | ipaddress.IPv4Address | None = None
    slot: Annotated[int, pydantic.Field(ge=1)] | Annotated[str, pydantic.Field(max_length=3, pattern=r"^[a-z]+$")] = 1


class SchemedReconciler:
    api_version = "schema.okt.example.com/v1"
    kind = "Schemed"
    spec_model = SchemedSpec


@pytest.fixture(scope="module")
def schemed_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(SchemedReconciler))
    return kind


def create(kube: kube_client.Client, kind: kinds.Kind, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": f"s-{secrets.token_hex(3)}", "namespace": namespace},
        "spec": spec,
    }
    return kube.create(body, kind)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"colour": None}, id="optional-enum-null"),
        pytest.param({"mode": None}, id="optional-literal-with-default-null"),
        pytest.param({"tier": None}, id="optional-one-value-literal-null"),
        pytest.param({"grade": None}, id="literal-listing-none-null"),
        pytest.param({"colour": "red", "mode": "fast", "tier": "gold", "grade": "b"}, id="enum-values"),
        pytest.param({}, id="defaults"),
        pytest.param({"password": "s3cret"}, id="secret"),
        pytest.param({"step": 1.15, "batch": 15}, id="multiple-of"),
        pytest.param({"step": 0.29}, id="multiple-of-a-fraction"),
        pytest.param({"port": None, "extra": None, "target": None}, id="optional-null"),
        pytest.param({"port": {"containerPort": "http"}}, id="nested-defaults"),
        pytest.param({"port": {"containerPort": 80, "host_port": 8080}}, id="populate-by-name-optional"),
        pytest.param({"port": {"container_port": 80}}, id="populate-by-name-required"),
        pytest.param({"port": {"containerPort": 80, "target_port": 9090}}, id="populate-by-name-default"),
        pytest.param(
            {"ports": [{"containerPort": 80, "hostPort": None}, {"containerPort": 81, "protocol": "UDP"}]},
            id="list-of-models",
        ),
        pytest.param(
            {"labels": {"a": "b"}, "tags": ["x", "y"], "extra": {"any": [1, {"x": None}]}}, id="maps-and-sets"
        ),
        pytest.param({"tags": ["x", "y", "x"]}, id="set-with-a-duplicate"),
        pytest.param({"target": 8080}, id="int-or-string-int"),
        pytest.param({"target": "50%"}, id="int-or-string-string"),
        pytest.param({"ratio": 0.25}, id="float"),
        pytest.param({"since": "2032-04-23T10:20:30Z", "day": "2032-04-23", "period": "PT1H"}, id="time-rfc3339"),
        pytest.param({"since": "2032-04-23T10:20:30"}, id="datetime-local"),
        pytest.param({"since": "2032-04-23 10:20:30+02:00"}, id="datetime-space"),
        pytest.param({"since": "2032-04-23"}, id="datetime-date-only"),
        pytest.param({"day": "2032-04-23T00:00:00"}, id="date-midnight"),
        pytest.param({"period": "P1Y"}, id="duration-year"),
        pytest.param({"anything": None}, id="any-null"),
        pytest.param({"anything": {"x": [None]}, "values": [1, None, "a"]}, id="any-list-with-a-null"),
        pytest.param({"uid": "12345678-1234-5678-1234-567812345678"}, id="uuid"),
        pytest.param({"uid": "{12345678-1234-5678-1234-567812345678}"}, id="uuid-braces"),
        pytest.param({"uid": "urn:uuid:12345678-1234-5678-1234-567812345678"}, id="uuid-urn"),
        pytest.param({"uid4": "{12345678-1234-4678-9234-567812345678}"}, id="uuid4-braces"),
        pytest.param({"address": "10.0.0.1", "address6": "fe80::1"}, id="ip-addresses"),
        pytest.param({"address6": "fe80::1%eth0"}, id="ipv6-scoped"),
        pytest.param({"url": "https://example.com/a%20b"}, id="url"),
        pytest.param({"url": "https://example.com/%zz"}, id="url-unescaped-percent"),
        pytest.param({"url": " https://example.com/a\tb "}, id="url-blanks"),
        pytest.param({"code": "release_2-10", "words": "a b", "key": "a.b_c", "label": "x"}, id="pattern-ascii"),
        pytest.param({"code": "café-٣"}, id="pattern-word-and-digit-classes-beyond-ascii"),
        pytest.param({"words": "deux\u00a0mots"}, id="pattern-space-class-beyond-ascii"),
        pytest.param({"key": "ü.ö"}, id="pattern-word-class-in-a-set-beyond-ascii"),
        pytest.param({"slot": 2}, id="int-or-string-member-bound-int"),
        pytest.param({"peer": 7}, id="int-or-string-formatted-int"),
        pytest.param({"peer": "10.0.0.1"}, id="int-or-string-formatted-string"),
        pytest.param({"weights": {"cpu": 1, "memory": 2}}, id="literal-keys"),
        pytest.param({"only": {"cpu": 1}}, id="one-literal-key"),
        pytest.param({"data": "\u00e9"}, id="bytes-min-length-counts-bytes"),
        pytest.param({"source": {"type": "git", "url": "https://x", "depth": 1}}, id="tagged-union-one-member"),
        pytest.param({"source": {"type": "oci", "image": "x"}}, id="tagged-union-other-member"),
        pytest.param({"source": {"type": "git", "url": "https://x", "image": "x"}}, id="tagged-union-ignored-field"),
        pytest.param({"source": None}, id="tagged-union-null"),
        pytest.param({"source": {"type": "git", "url": "https://x", "mode": "shallow"}}, id="tagged-union-own-value"),
        pytest.param({"source": {"type": "image", "image": "x", "mode": "cache"}}, id="tagged-union-other-value"),
        pytest.param({"amount": 3, "scale": 2}, id="int-or-float-int"),
        pytest.param({"amount": 0.5, "scale": 1.5}, id="int-or-float-float"),
        pytest.param({"scale": None}, id="int-or-float-null"),
        pytest.param({"slot": "abc"}, id="int-or-string-member-bound-string"),
    ],
)
def test_a_spec_the_model_accepts_is_stored_as_the_model_reads_it(
    kube: kube_client.Client, namespace: str, schemed_kind: kinds.Kind, spec: dict[str, Any]
) -> None:
    expected = SchemedSpec.model_validate(spec)

    stored = create(kube, schemed_kind, namespace, spec)

    assert SchemedSpec.model_validate(stored["spec"]) == expected


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"colour": "green"}, id="enum-value-unknown"),
        pytest.param({"mode": "slow"}, id="literal-value-unknown"),
        pytest.param({"grade": "c"}, id="literal-listing-none-value-unknown"),
        pytest.param({"size": 0}, id="below-minimum"),
        pytest.param({"ratio": 1}, id="exclusive-maximum"),
        pytest.param({"ports": [{"containerPort": 1}] * 4}, id="too-many-items"),
        pytest.param({"port": {"containerPort": 80, "protocol": "SCTP"}}, id="nested-enum"),
        pytest.param({"port": {"containerPort": 80, "hostPort": 0}}, id="nested-optional-minimum"),
        pytest.param({"limit": {}}, id="nested-required"),
        pytest.param({"labels": {"a": 1}}, id="map-value-type"),
        pytest.param({"target": 1.5}, id="int-or-string-float"),
        pytest.param({"address": "10.0.0.256"}, id="ipv4-out-of-range"),
        pytest.param({"batch": 12}, id="integer-multiple-of"),
        pytest.param({"code": "a b"}, id="pattern-word-class"),
        pytest.param({"code": "a-b"}, id="pattern-digit-class"),
        pytest.param({"words": " a"}, id="pattern-space-class"),
        pytest.param({"label": "deux\u00a0mots"}, id="pattern-negated-space-class-beyond-ascii"),
        pytest.param({"slot": 0}, id="int-or-string-int-member-minimum"),
        pytest.param({"peer": "10.0.0.256"}, id="int-or-string-string-member-format"),
        pytest.param({"weights": {"cpu": 1, "memory": 2, "disk": 3}}, id="literal-keys-more-than-listed"),
        pytest.param({"only": {"cpu": 1, "memory": 2}}, id="one-literal-key-more-than-listed"),
        pytest.param({"data": ""}, id="bytes-min-length"),
        pytest.param({"source": {"type": "svn", "url": "https://x"}}, id="tagged-union-unknown-tag"),
        pytest.param({"source": {"type": "git", "url": "https://x", "mode": "pull"}}, id="tagged-union-others-value"),
        pytest.param({"source": {"url": "https://x"}}, id="tagged-union-no-tag"),
        pytest.param({"source": {"type": "git"}}, id="tagged-union-member-required"),
        pytest.param({"source": {"type": "image", "url": "https://x"}}, id="tagged-union-other-members-required"),
        pytest.param({"source": {"type": "image", "image": ""}}, id="tagged-union-member-min-length"),
        pytest.param({"source": {"type": "git", "url": "https://x", "depth": 0}}, id="tagged-union-shared-minimum"),
        pytest.param(
            {"source": {"type": "image", "image": "x", "url": "https://x"}}, id="tagged-union-member-forbids-field"
        ),
        pytest.param({"amount": 0}, id="int-or-float-exclusive-minimum"),
        pytest.param({"amount": 100.5}, id="int-or-float-maximum"),
        pytest.param({"scale": 0.5}, id="int-or-float-member-minimum"),
        pytest.param({"amount": "three"}, id="int-or-float-string"),
        pytest.param({"slot": "abcd"}, id="int-or-string-string-member-max-length"),
        pytest.param({"slot": "AB"}, id="int-or-string-string-member-pattern"),
    ],
)
def test_a_spec_the_model_refuses_is_refused(
    kube: kube_client.Client, namespace: str, schemed_kind: kinds.Kind, spec: dict[str, Any]
) -> None:
    with pytest.raises(pydantic.ValidationError):
        SchemedSpec.model_validate(spec)

    with pytest.raises(errors.Invalid):
        create(kube, schemed_kind, namespace, spec)


class Probe(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    path: str = "/"


class StrictSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    size: int = 1
    probe: Probe | None = None


class StrictReconciler:
    api_version = "strict.okt.example.com/v1"
    kind = "Strict"
    spec_model = StrictSpec


@pytest.mark.parametrize(
    ("spec", "misspelled"),
    [
        pytest.param({"sise": 3}, ("sise",), id="top-level"),
        pytest.param({"probe": {"paht": "/healthz"}}, ("probe", "paht"), id="nested"),
    ],
)
def test_a_field_a_forbidding_model_does_not_declare_is_stored_for_the_model_to_refuse(
    kube: kube_client.Client, namespace: str, apply_crd: Any, spec: dict[str, Any], misspelled: tuple[str, ...]
) -> None:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(StrictReconciler))

    stored = create(kube, kind, namespace, spec)

    with pytest.raises(pydantic.ValidationError) as refused:
        StrictSpec.model_validate(stored["spec"])
    assert [(error["type"], error["loc"]) for error in refused.value.errors()] == [("extra_forbidden", misspelled)]


class Volume(pydantic.BaseModel):
    size_gi: int = pydantic.Field(default=1, alias="sizeGi", ge=1)
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = pydantic.Field(default="ReadWriteOnce", alias="accessMode")
    storage_class: str | None = pydantic.Field(default=None, alias="storageClass")


class Stamp(pydantic.BaseModel):
    uid: uuid.UUID = pydantic.Field(default_factory=uuid.uuid4)


class FactorySpec(pydantic.BaseModel):
    volume: Volume = pydantic.Field(default_factory=Volume)
    spare: Volume | None = pydantic.Field(default_factory=Volume)
    stamp: Stamp = pydantic.Field(default_factory=Stamp)
    names: list[str] = pydantic.Field(default_factory=list)


class FactoryReconciler:
    api_version = "factory.okt.example.com/v1"
    kind = "Factory"
    spec_model = FactorySpec


def test_a_nested_model_its_default_factory_makes_is_stored_with_the_defaults_the_model_fills_in(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(FactoryReconciler))

    stored = create(kube, kind, namespace, {"spare": {"sizeGi": 5}})

    volume = {"sizeGi": 1, "accessMode": "ReadWriteOnce"}
    assert stored["spec"] == {"volume": volume, "spare": {**volume, "sizeGi": 5}}
    read = FactorySpec.model_validate(stored["spec"])
    assert (read.volume, read.spare) == (Volume(), Volume(sizeGi=5))


class GaugeSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)


class GaugeStatus(pydantic.BaseModel):
    phase: str


class GaugeReconciler(okt.Reconciler):
    """Fails before it could report a phase (a backend that does not answer)."""

    api_version = "status.okt.example.com/v1"
    kind = "Gauge"
    spec_model = GaugeSpec
    status_model = GaugeStatus

    def check(self, ctx: okt.Context) -> None:
        raise okt.TemporaryError("the backend does not answer")


def test_a_status_model_with_a_required_field_takes_the_conditions_of_a_reconcile_that_failed_before_setting_it(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(GaugeReconciler))
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "g", "namespace": namespace}}
    kube.create({**body, "spec": {"size": 1}}, kind)

    okt.reconcile(GaugeReconciler(), kube, None, namespace, "g", kind=kind)

    status = kube.get(kind, "g", namespace).get("status") or {}
    ready = [c for c in status.get("conditions") or () if c["type"] == "Ready"]
    assert [(c["status"], c["reason"]) for c in ready] == [("False", "TemporaryError")]


class Endpoint(pydantic.BaseModel):
    host_name: str = pydantic.Field(default="", serialization_alias="hostName")
    port: int = pydantic.Field(default=0, validation_alias="portNumber")


class DirectoryStatus(pydantic.BaseModel):
    endpoints: list[Endpoint] = []
    ready_replicas: int = pydantic.Field(default=0, serialization_alias="readyReplicas")


class DirectoryReconciler(okt.Reconciler):
    """Reports its endpoints through a status model that writes other names than it reads."""

    api_version = "directory.okt.example.com/v1"
    kind = "Directory"
    status_model = DirectoryStatus

    def check(self, ctx: okt.Context) -> None:
        ctx.status_fields["endpoints"] = [Endpoint(host_name="db", portNumber=5432)]
        ctx.status_fields["ready_replicas"] = 2


def test_a_status_field_is_stored_under_the_name_the_status_model_writes_it_by(
    kube: kube_client.Client, namespace: str, apply_crd: Any
) -> None:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(DirectoryReconciler))
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "d", "namespace": namespace}}
    kube.create({**body, "spec": {}}, kind)

    okt.reconcile(DirectoryReconciler(), kube, None, namespace, "d", kind=kind)

    status = kube.get(kind, "d", namespace)["status"]
    assert status["endpoints"] == [{"hostName": "db", "port": 5432}]
    assert (status["readyReplicas"], "ready_replicas" in status) == (2, False)


PATTERN_TEXT = strategies.text(
    strategies.sampled_from("az_-.Z09 \t\u00a0\u2003éü٣\u0301\u24b6\u203f\u00b2!/"), min_size=1, max_size=6
)


@hypothesis.settings(max_examples=40, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(code=PATTERN_TEXT, words=PATTERN_TEXT, label=PATTERN_TEXT)
def test_the_api_server_matches_a_pattern_as_the_model_does(
    kube: kube_client.Client, namespace: str, schemed_kind: kinds.Kind, code: str, words: str, label: str
) -> None:
    for field, value in (("code", code), ("words", words), ("label", label)):
        try:
            SchemedSpec.model_validate({field: value})
            accepted = True
        except pydantic.ValidationError:
            accepted = False
        try:
            create(kube, schemed_kind, namespace, {field: value})
            stored = True
        except errors.Invalid:
            stored = False

        assert stored == accepted, f"{field}={value!r}"


class TrimmedSpec(pydantic.BaseModel):
    name: pydantic.constr(strip_whitespace=True, min_length=1) | None = None  # type: ignore[valid-type]
    short: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, max_length=3)] | None = None
    between: Annotated[
        str, pydantic.Field(min_length=2, max_length=4), pydantic.StringConstraints(strip_whitespace=True)
    ]
    fixed: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, min_length=1, max_length=1)] = "x"


class TrimmedReconciler:
    api_version = "trimmed.okt.example.com/v1"
    kind = "Trimmed"
    spec_model = TrimmedSpec


TRIMMED_TEXT = strategies.text(strategies.sampled_from("ab \t\n\u00a0\u3000é"), max_size=7)


@hypothesis.settings(max_examples=40, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(
    examples=strategies.lists(
        strategies.tuples(strategies.sampled_from(["name", "short", "between", "fixed"]), TRIMMED_TEXT), max_size=4
    )
)
def test_the_api_server_measures_a_stripped_string_as_the_model_does(
    kube: kube_client.Client, namespace: str, apply_crd: Any, examples: list[tuple[str, str]]
) -> None:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(TrimmedReconciler))
    for field, value in [
        ("name", " "),
        ("short", " abc "),
        ("between", "\u00a0a\u3000"),
        ("between", " ab  "),
        *examples,
    ]:
        spec = {"between": "ab", field: value}
        try:
            TrimmedSpec.model_validate(spec)
            accepted = True
        except pydantic.ValidationError:
            accepted = False
        try:
            create(kube, kind, namespace, spec)
            stored = True
        except errors.Invalid:
            stored = False

        assert stored == accepted, f"{field}={value!r}"
