"""Behaviour of okt.resources.registry: the ordered set of one reconcile's children, one registration per object."""

from __future__ import annotations

from typing import Any

import pytest

from okt import errors
from okt.resources import registry, resource


def child(api_version: str, kind: str, name: str, namespace: str | None = "team-a") -> resource.Resource:
    metadata: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return resource.MutableResource(body={"apiVersion": api_version, "kind": kind, "metadata": metadata})


def test_children_come_back_in_registration_order() -> None:
    children = [child("v1", "Service", "b"), child("v1", "ConfigMap", "a"), child("apps/v1", "Deployment", "c")]
    found = registry.Registry()
    for res in children:
        found.register(res)

    assert list(found) == children
    assert len(found) == 3


@pytest.mark.parametrize(
    ("first", "again"),
    [
        pytest.param(child("v1", "ConfigMap", "a"), child("v1", "ConfigMap", "a"), id="same-key"),
        pytest.param(
            child("autoscaling/v2beta2", "HorizontalPodAutoscaler", "a"),
            child("autoscaling/v1", "HorizontalPodAutoscaler", "a"),
            id="same-object-another-version",
        ),
    ],
)
def test_registering_the_same_object_twice_is_an_error(first: resource.Resource, again: resource.Resource) -> None:
    found = registry.Registry()
    found.register(first)

    with pytest.raises(errors.RegistrationError, match="already registered"):
        found.register(again)
    assert list(found) == [first]


def test_an_unregistered_object_can_be_registered_again_in_another_version() -> None:
    found = registry.Registry()
    first = found.register(child("autoscaling/v2beta2", "HorizontalPodAutoscaler", "a"))
    assert found.unregister(first)

    again = found.register(child("autoscaling/v1", "HorizontalPodAutoscaler", "a"))

    assert list(found) == [again]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(child("v1", "ConfigMap", "a", namespace="team-b"), id="another-namespace"),
        pytest.param(child("v1", "Secret", "a"), id="another-kind"),
        pytest.param(child("example.com/v1", "ConfigMap", "a"), id="another-group"),
    ],
)
def test_another_object_of_the_same_name_is_registered_beside(other: resource.Resource) -> None:
    found = registry.Registry()
    found.register(child("v1", "ConfigMap", "a"))
    found.register(other)

    assert len(found) == 2
