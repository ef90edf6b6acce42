"""How okt reads a custom resource's spec through the reconciler's ``spec_model``: as the JSON data it is."""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Any

import pydantic
import pytest

import okt
from okt.reconciler import reconciler as reconciler_mod


class Tier(enum.StrEnum):
    GOLD = "gold"
    SILVER = "silver"


class StrictSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    since: datetime.datetime | None = None
    uid: uuid.UUID | None = None
    tier: Tier = Tier.SILVER
    ratio: float = 0.5
    size: int = 1


class StrictReconciler(okt.Reconciler):
    api_version = "strict.example.com/v1"
    kind = "Strict"
    spec_model = StrictSpec


def test_a_strict_model_reads_the_json_forms_of_its_values() -> None:
    # In Python's strict mode only a datetime, a UUID or a Tier would do: no custom resource can hold one, and every
    # object was InvalidSpec ("Input should be a valid datetime").
    spec = {"since": "2032-04-23T10:20:30Z", "uid": "12345678-1234-5678-1234-567812345678", "tier": "gold", "ratio": 1}

    typed = reconciler_mod.validate_spec(StrictReconciler(), spec)

    assert typed == StrictSpec(
        since=datetime.datetime(2032, 4, 23, 10, 20, 30, tzinfo=datetime.UTC),
        uid=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        tier=Tier.GOLD,
        ratio=1.0,
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"size": "3"}, "spec.size: Input should be a valid integer (got '3')"),
        ({"tier": "bronze"}, "spec.tier: Input should be 'gold' or 'silver' (got 'bronze')"),
    ],
)
def test_a_strict_model_still_refuses_what_its_json_form_refuses(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(okt.InvalidSpec) as refused:
        reconciler_mod.validate_spec(StrictReconciler(), spec)
    assert str(refused.value) == message
