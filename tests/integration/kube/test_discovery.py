"""Kinds named as kubectl names them, resolved by the real kube-apiserver's discovery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds, envtest
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("deploy", ("apps/v1", "Deployment", "deployments")),
        ("deployments.apps", ("apps/v1", "Deployment", "deployments")),
        ("Deployment", ("apps/v1", "Deployment", "deployments")),
        ("cm", ("v1", "ConfigMap", "configmaps")),
        ("ns", ("v1", "Namespace", "namespaces")),
        ("events", ("v1", "Event", "events")),
        ("Widget", (f"{shared.GROUP}/v1", "Widget", "widgets")),
        ("widget", (f"{shared.GROUP}/v1", "Widget", "widgets")),
        (f"widgets.{shared.GROUP}", (f"{shared.GROUP}/v1", "Widget", "widgets")),
    ],
)
def test_a_name_kubectl_takes_resolves_to_its_kind(
    kube: kube_client.Client, widget_kind: kinds.Kind, name: str, expected: tuple[str, str, str]
) -> None:
    kind = kube.resolve_name(name)
    assert (kind.api_version, kind.kind, kind.plural) == expected
    assert kind.namespaced is (name != "ns")


def test_a_name_two_groups_serve_is_one_line_naming_the_choices(kube: kube_client.Client) -> None:
    # Kubernetes 1.20 serves Ingress in extensions and in networking.k8s.io.
    with pytest.raises(okt.ConfigurationError) as caught:
        kube.resolve_name("ing")
    assert str(caught.value) == (
        "the kind name 'ing' is ambiguous: name one of ingresses.extensions, ingresses.networking.k8s.io"
    )
    assert kube.resolve_name("ingresses.networking.k8s.io").api_version == "networking.k8s.io/v1"


def test_an_unknown_name_is_one_line(kube: kube_client.Client) -> None:
    with pytest.raises(okt.ConfigurationError, match=r"^the server serves no kind named 'nosuchthings'"):
        kube.resolve_name("nosuchthings")


def test_a_kind_served_after_discovery_was_read_is_found(
    control_plane: envtest.ControlPlane, apply_crd: Callable[[dict[str, Any]], kinds.Kind]
) -> None:
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        client.resolve_name("deploy")  # discovery is read now
        apply_crd(crds.schemaless_crd("late.okt.io", "Latecomer", "latecomers"))
        assert client.resolve_name("latecomers.late.okt.io").kind == "Latecomer"
    finally:
        client.close()


def test_a_group_listed_but_not_served_does_not_hide_the_others(
    kube: kube_client.Client, control_plane: envtest.ControlPlane
) -> None:
    # An APIService without a backend, for a group no one serves: /apis lists the group and its listing answers 404,
    # as an aggregated API's does while it registers, or a CRD group's deleted between the two requests.
    api_services = kinds.Kind("apiregistration.k8s.io/v1", "APIService", "apiservices", namespaced=False)
    spec = {"group": "unserved.okt.io", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15}
    metadata = {"name": "v1.unserved.okt.io"}
    kube.create(
        {"apiVersion": api_services.api_version, "kind": "APIService", "metadata": metadata, "spec": spec}, api_services
    )
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        assert client.resolve_name("deploy").api_version == "apps/v1"
    finally:
        client.close()
        kube.delete(api_services, "v1.unserved.okt.io")


@pytest.mark.parametrize("api_version", [f"{shared.GROUP}/v1", "nothing.okt.io/v1"])
def test_a_kind_the_server_does_not_serve_is_named_in_the_error_whether_its_group_is_served_or_not(
    kube: kube_client.Client, widget_kind: kinds.Kind, api_version: str
) -> None:
    with pytest.raises(okt.errors.NotFound) as caught:
        kube.resolve(api_version, "Thing")
    assert str(caught.value) == f"404 NotFound: the server does not serve Thing in {api_version}"


def test_every_built_in_kind_okt_addresses_without_discovery_is_addressed_as_the_server_serves_it(
    kube: kube_client.Client,
) -> None:
    """``okt.kube.kinds.BUILTIN`` spares a discovery round-trip, and decides the scope ``okt gen rbac`` grants: a
    plural or a scope it gets wrong addresses URLs that do not exist, or asks a Role for a cluster-wide list."""
    served = {(s.kind.api_version, s.kind.kind): s.kind for s in kube._discover()}
    checked = [known for key, known in kinds.BUILTIN.items() if key in served]

    assert [str(k) for k in checked if kinds.addressing_mismatch(k, served[(k.api_version, k.kind)])] == []
    assert len(checked) >= len(kinds.BUILTIN) - 3  # all but versions this server is too old or too new to serve
