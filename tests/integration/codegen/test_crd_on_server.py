"""A CRD generated from a pydantic model, on a real API server: it accepts what the model accepts and refuses what
the model refuses.

Each case creates a custom resource with a spec and compares the server's answer with the model's: a spec the model
validates is stored (and what is stored still validates to the same model), a spec the model refuses is refused.
"""

from __future__ import annotations

import enum
import secrets
from typing import Any, Literal

import pydantic
import pytest

from okt import errors
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds

pytestmark = pytest.mark.integration


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class SchemedSpec(pydantic.BaseModel):
    colour: Colour | None = None
    mode: Literal["fast", "safe"] | None = "safe"
    tier: Literal["gold"] | None = None
    size: int = pydantic.Field(default=1, ge=1)


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
        pytest.param({"colour": "red", "mode": "fast", "tier": "gold"}, id="enum-values"),
        pytest.param({}, id="defaults"),
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
        pytest.param({"size": 0}, id="below-minimum"),
    ],
)
def test_a_spec_the_model_refuses_is_refused(
    kube: kube_client.Client, namespace: str, schemed_kind: kinds.Kind, spec: dict[str, Any]
) -> None:
    with pytest.raises(pydantic.ValidationError):
        SchemedSpec.model_validate(spec)

    with pytest.raises(errors.Invalid):
        create(kube, schemed_kind, namespace, spec)
