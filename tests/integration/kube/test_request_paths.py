"""A namespace is one segment of a request's path: one that is no namespace's name (a ``?``, a ``/``, a dot segment in
it, perhaps out of a custom resource) is refused before anything is sent, never read as a path to another object."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds

pytestmark = pytest.mark.integration

SECRET = kinds.BUILTIN[("v1", "Secret")]

VERBS: dict[str, Callable[[kube_client.Client, str], Any]] = {
    "get": lambda kube, where: kube.get(kinds.CONFIG_MAP, "settings", where),
    "list": lambda kube, where: kube.list(kinds.CONFIG_MAP, where),
    "delete": lambda kube, where: kube.delete(kinds.CONFIG_MAP, "settings", where),
    "create": lambda kube, where: kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": where}}
    ),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("shape", ["{ns}/secrets/db?", "{ns}/secrets?", "elsewhere/../{ns}"])
def test_a_namespace_that_is_no_namespaces_name_is_refused_before_it_reaches_another_object(
    kube: kube_client.Client, namespace: str, verb: str, shape: str
) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db", "namespace": namespace},
            "stringData": {"password": "hunter2"},
        }
    )

    with pytest.raises(okt.InvalidSpec, match="not a valid namespace name"):
        VERBS[verb](kube, shape.format(ns=namespace))

    assert kube.get(SECRET, "db", namespace)["data"] == {"password": "aHVudGVyMg=="}


NAMED: dict[str, Callable[[kube_client.Client, str], Any]] = {
    "get": lambda kube, namespace: kube.get(SECRET, "", namespace),
    "get_or_none": lambda kube, namespace: kube.get_or_none(SECRET, "", namespace),
    "delete": lambda kube, namespace: kube.delete(SECRET, "", namespace),
    "patch": lambda kube, namespace: kube.patch(SECRET, "", {"metadata": {"labels": {"a": "b"}}}, namespace),
    "replace": lambda kube, namespace: kube.replace(
        SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "", "namespace": namespace}}
    ),
    "apply": lambda kube, namespace: kube.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "", "namespace": namespace}}, field_manager="okt"
    ),
    # No name at all (a template that forgot it): the same refusal as FakeClient's, not a KeyError.
    "replace-unnamed": lambda kube, namespace: kube.replace(
        SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": namespace}}
    ),
    "apply-unnamed": lambda kube, namespace: kube.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": namespace}}, field_manager="okt"
    ),
}


@pytest.mark.parametrize("verb", sorted(NAMED))
def test_an_empty_name_is_refused_before_it_reaches_the_whole_collection(
    kube: kube_client.Client, namespace: str, verb: str
) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db", "namespace": namespace},
            "stringData": {"password": "hunter2"},
        }
    )

    with pytest.raises(okt.InvalidSpec, match="name '': an object's name may not be empty"):
        NAMED[verb](kube, namespace)

    assert kube.get(SECRET, "db", namespace)["data"] == {"password": "aHVudGVyMg=="}


APPS = kinds.BUILTIN[("apps/v1", "Deployment")]


@pytest.mark.parametrize("name", ["db/", "db/status", "x/../db", ".", "..", "db%"])
@pytest.mark.parametrize("verb", sorted(set(NAMED) - {"replace-unnamed", "apply-unnamed"}))
def test_a_name_that_is_no_path_segment_is_refused_before_it_reaches_another_object(
    kube: kube_client.Client, namespace: str, verb: str, name: str
) -> None:
    """A ``/`` the API server decodes: ``db/`` was the Secret ``db`` (read, patched, deleted and answered ``True``)."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db", "namespace": namespace},
            "stringData": {"password": "hunter2"},
        }
    )
    call = {
        "get": lambda: kube.get(SECRET, name, namespace),
        "get_or_none": lambda: kube.get_or_none(SECRET, name, namespace),
        "delete": lambda: kube.delete(SECRET, name, namespace),
        "patch": lambda: kube.patch(SECRET, name, {"metadata": {"labels": {"a": "b"}}}, namespace),
        "replace": lambda: kube.replace(
            SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}}
        ),
        "apply": lambda: kube.apply(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}},
            field_manager="okt",
        ),
    }[verb]
    before = kube.stats.snapshot()

    with pytest.raises(
        okt.InvalidSpec, match=re.escape("an object's name may not be '.' or '..', nor hold '/' or '%'")
    ):
        call()

    assert kube.stats.delta(before) == {}  # nothing sent
    secret = kube.get(SECRET, "db", namespace)
    assert secret["data"] == {"password": "aHVudGVyMg=="}
    assert "labels" not in secret["metadata"]


def test_a_name_ending_in_a_subresource_does_not_scale_another_object(kube: kube_client.Client, namespace: str) -> None:
    """``web/scale`` was the scale of the Deployment ``web``: a patch of it scaled ``web`` to 0."""
    labels = {"app": "web"}
    kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "web", "image": "registry.invalid/web"}]},
                },
            },
        }
    )

    with pytest.raises(okt.InvalidSpec, match="Deployment name 'web/scale'"):
        kube.patch(APPS, "web/scale", {"spec": {"replicas": 0}}, namespace)

    assert kube.get(APPS, "web", namespace)["spec"]["replicas"] == 2
