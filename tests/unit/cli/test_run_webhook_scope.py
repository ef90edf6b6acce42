"""``okt run --webhook-configuration`` narrows the webhooks it configures to the objects the run serves."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import okt
from okt import names
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


class Deployments(okt.Reconciler):
    api_version = "apps/v1"
    kind = "Deployment"

    def check(self, ctx: okt.Context) -> None:
        return None


OWN = {"key": names.OPERATOR_LABEL, "operator": "DoesNotExist"}


@pytest.mark.parametrize(
    ("selector", "expressions"),
    [(None, [OWN]), ("release=one", [*RELEASE["matchExpressions"], OWN])],
)
def test_the_webhook_of_a_built_in_kind_leaves_out_the_operator_s_own_workload_as_the_generator_does(
    selector: str | None, expressions: list[dict[str, Any]]
) -> None:
    fields = run._scope_fields([Deployments], (), selector, "v1.30.0")

    # Written over the configuration at start: without it, okt run would undo what okt gen deploy wrote.
    assert fields == {
        "/validate/deployment": {"namespaceSelector": {}, "objectSelector": {"matchExpressions": expressions}}
    }


def test_a_scope_that_names_the_operator_label_itself_is_kept_as_said() -> None:
    fields = run._scope_fields([Deployments], (), f"{names.OPERATOR_LABEL}=shop", "v1.30.0")

    assert fields["/validate/deployment"]["objectSelector"] == {
        "matchExpressions": [{"key": names.OPERATOR_LABEL, "operator": "In", "values": ["shop"]}]
    }
