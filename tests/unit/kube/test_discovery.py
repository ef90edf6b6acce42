"""Kinds named as kubectl names them, matched against what discovery lists."""

from __future__ import annotations

import pytest

import okt
from okt.kube import discovery, kinds


def served(
    api_version: str, kind: str, plural: str, short: tuple[str, ...] = (), preferred: bool = True, singular: str = ""
) -> discovery.Served:
    return discovery.Served(kinds.Kind(api_version, kind, plural), singular or kind.lower(), short, preferred)


SERVER = [
    served("v1", "ConfigMap", "configmaps", ("cm",)),
    served("v1", "Event", "events", ("ev",)),
    served("v1", "Service", "services", ("svc",)),
    served("events.k8s.io/v1", "Event", "events", ("ev",)),
    served("apps/v1", "Deployment", "deployments", ("deploy",)),
    served("extensions/v1beta1", "Ingress", "ingresses", ("ing",)),
    served("networking.k8s.io/v1", "Ingress", "ingresses", ("ing",)),
    served("networking.k8s.io/v1beta1", "Ingress", "ingresses", ("ing",), preferred=False),
    served("cache.example.com/v1alpha1", "Memcached", "memcacheds", ("mc",), preferred=False),
    served("cache.example.com/v1beta1", "Memcached", "memcacheds", ("mc",)),
    served("other.example.com/v1", "Memcached", "memcacheds"),
    served("x.example.com/v1", "Service", "services", ("xsvc",)),
    served("y.example.com/v1", "Widget", "widgets", ("svc",)),
]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("deploy", ("apps/v1", "Deployment")),
        ("deployments", ("apps/v1", "Deployment")),
        ("deployment", ("apps/v1", "Deployment")),
        ("Deployment", ("apps/v1", "Deployment")),
        ("deployments.apps", ("apps/v1", "Deployment")),
        ("deploy.apps", ("apps/v1", "Deployment")),
        ("Deployment.apps", ("apps/v1", "Deployment")),
        ("deployments.v1.apps", ("apps/v1", "Deployment")),
        ("cm", ("v1", "ConfigMap")),
        ("configmaps.v1", ("v1", "ConfigMap")),
        ("memcacheds.cache.example.com", ("cache.example.com/v1beta1", "Memcached")),
        ("mc", ("cache.example.com/v1beta1", "Memcached")),
        ("Memcached.v1alpha1.cache.example.com", ("cache.example.com/v1alpha1", "Memcached")),
        ("ingresses.networking.k8s.io", ("networking.k8s.io/v1", "Ingress")),
        ("events", ("v1", "Event")),  # the core group wins, as with kubectl
        ("ev", ("v1", "Event")),
        ("events.events.k8s.io", ("events.k8s.io/v1", "Event")),
        ("svc", ("v1", "Service")),  # a short name of two groups: the core group wins
        ("xsvc", ("x.example.com/v1", "Service")),
    ],
)
def test_a_name_resolves_as_kubectl_resolves_it(name: str, expected: tuple[str, str]) -> None:
    kind = discovery.match(name, SERVER)
    assert (kind.api_version, kind.kind) == expected


@pytest.mark.parametrize(
    ("name", "choices"),
    [
        ("Memcached", "memcacheds.cache.example.com, memcacheds.other.example.com"),
        ("ingresses", "ingresses.extensions, ingresses.networking.k8s.io"),
        ("ing", "ingresses.extensions, ingresses.networking.k8s.io"),
    ],
)
def test_a_name_served_by_several_groups_is_ambiguous_in_one_line(name: str, choices: str) -> None:
    with pytest.raises(okt.ConfigurationError) as caught:
        discovery.match(name, SERVER)
    assert str(caught.value) == f"the kind name {name!r} is ambiguous: name one of {choices}"


@pytest.mark.parametrize("name", ["gizmo", "deployments.batch", "pods/log", "mc.v1.cache.example.com", " "])
def test_an_unknown_name_is_one_clear_line(name: str) -> None:
    with pytest.raises(okt.ConfigurationError, match=r"^(the server serves no kind named|an empty kind name)"):
        discovery.match(name, SERVER)


def test_subresources_are_not_served_kinds() -> None:
    listing = {
        "resources": [
            {"name": "pods", "kind": "Pod", "namespaced": True, "shortNames": ["po"]},
            {"name": "pods/log", "kind": "Pod", "namespaced": True},
        ]
    }
    found = discovery.served_from("v1", listing, preferred=True)
    assert [(s.kind.plural, s.singular, s.short_names) for s in found] == [("pods", "pod", ("po",))]
