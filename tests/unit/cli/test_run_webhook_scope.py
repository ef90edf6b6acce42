"""``okt run --webhook-configuration`` narrows the webhooks it configures to the objects the run serves."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import okt
from okt.cli import run


class GadgetSpec(pydantic.BaseModel):
    size: int


class Gadgets(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Gadget"
    spec_model = GadgetSpec

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


class Racks(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Rack"
    namespaced = False
    spec_model = GadgetSpec


SHOP = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["blog", "shop"]}]}
RELEASE = {"matchExpressions": [{"key": "release", "operator": "In", "values": ["one"]}]}


@pytest.mark.parametrize("version", ["v1.21.0", "v1.32.3", "v2.0.0-alpha.1"])
def test_on_a_server_that_names_its_namespaces_the_webhooks_are_narrowed_to_the_served_namespaces_and_labels(
    version: str,
) -> None:
    fields = run._scope_fields([Gadgets, Racks], ("shop", "blog"), "release=one", version)

    assert fields == {
        "/validate/gadget": {"namespaceSelector": SHOP, "objectSelector": RELEASE},
        "/mutate/gadget": {"namespaceSelector": SHOP, "objectSelector": RELEASE},
        "/validate/rack": {"namespaceSelector": {}, "objectSelector": RELEASE},  # no namespace to select
    }


@pytest.mark.parametrize("version", ["v1.20.5+really1.20.2", "v1.19.0", "unknown"])
def test_before_namespaces_carry_their_name_the_namespace_selector_is_left_alone(version: str) -> None:
    fields = run._scope_fields([Gadgets], ("shop", "blog"), "release=one", version)

    assert fields == {"/validate/gadget": {"objectSelector": RELEASE}, "/mutate/gadget": {"objectSelector": RELEASE}}


def test_a_run_serving_everything_selects_every_object_again() -> None:
    fields = run._scope_fields([Gadgets], (), None, "v1.30.0")

    assert fields["/validate/gadget"] == {"namespaceSelector": {}, "objectSelector": {}}
