from __future__ import annotations

from typing import Any

import pytest

from okt import errors
from okt.resources import refusals

KEY = ("apps/v1", "Deployment", "ns", "web")
DESIRED: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}}
LIVE = {"metadata": {"name": "web", "uid": "u-1"}}
REFUSED = errors.InvalidChild("Deployment/ns/web is refused by the API server: metadata.labels: invalid value")


@pytest.mark.parametrize("live", [None, LIVE])
def test_the_same_desired_object_over_the_same_object_is_recalled_as_refused(live: dict[str, Any] | None) -> None:
    memory = refusals.Refusals()
    memory.remember(KEY, refusals.digest(DESIRED), live, REFUSED)

    assert memory.recall(KEY, refusals.digest(dict(DESIRED)), live) is REFUSED


@pytest.mark.parametrize(
    ("key", "desired", "live"),
    [
        (KEY, {**DESIRED, "spec": {"replicas": 2}}, LIVE),  # the custom resource or the template changed it
        (KEY, DESIRED, None),  # the child was deleted since: a create
        (KEY, DESIRED, {"metadata": {"name": "web", "uid": "u-2"}}),  # another object under its name
        (("apps/v1", "Deployment", "ns", "api"), DESIRED, LIVE),  # another child
    ],
)
def test_another_desired_object_or_another_live_object_is_sent_again(
    key: tuple[str, str, str, str], desired: dict[str, Any], live: dict[str, Any] | None
) -> None:
    memory = refusals.Refusals()
    memory.remember(KEY, refusals.digest(DESIRED), LIVE, REFUSED)

    assert memory.recall(key, refusals.digest(desired), live) is None


def test_a_child_written_since_is_forgotten() -> None:
    memory = refusals.Refusals()
    memory.remember(KEY, refusals.digest(DESIRED), LIVE, REFUSED)

    memory.forget(KEY)

    assert memory.recall(KEY, refusals.digest(DESIRED), LIVE) is None


def test_the_oldest_refusals_are_forgotten_past_the_limit() -> None:
    memory = refusals.Refusals(limit=2)
    keys = [("v1", "ConfigMap", "ns", f"c{i}") for i in range(3)]
    for key in keys:
        memory.remember(key, refusals.digest(DESIRED), None, REFUSED)

    assert [memory.recall(key, refusals.digest(DESIRED), None) for key in keys] == [None, REFUSED, REFUSED]


class Client:
    """Stands for a client: any object that can be weakly referenced."""


def test_each_client_has_a_memory_of_its_own() -> None:
    one, other = Client(), Client()
    refusals.of(one).remember(KEY, refusals.digest(DESIRED), LIVE, REFUSED)

    assert refusals.of(one).recall(KEY, refusals.digest(DESIRED), LIVE) is REFUSED
    assert refusals.of(other).recall(KEY, refusals.digest(DESIRED), LIVE) is None
