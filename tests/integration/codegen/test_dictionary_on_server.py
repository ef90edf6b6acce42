"""The kind dictionary and okt's table of built-in kinds, compared with what a real API server's discovery serves.

A wrong plural addresses URLs that do not exist and grants RBAC rules on nothing; a wrong scope writes a namespace
into a cluster-scoped object or none into a namespaced one. Each entry's group must serve the kind under the same
plural and scope. Kubernetes 1.20 predates three of the versions the dictionary targets (current clusters serve
them): those are named here, so that any other version the server does not serve is a mistake.
"""

from __future__ import annotations

import urllib.error
from typing import Any

import pytest

from okt.codegen import dictionary
from okt.kube import kinds
from okt.testing import envtest

pytestmark = pytest.mark.integration

NEWER_THAN_1_20 = {
    ("policy/v1", "PodDisruptionBudget"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("batch/v1", "CronJob"),
}

Served = dict[tuple[str, str], tuple[str, bool]]
"""(apiVersion, kind) -> (plural, namespaced), as discovery lists them."""


@pytest.fixture(scope="module")
def served(control_plane: envtest.ControlPlane) -> Served:
    listings: list[dict[str, Any]] = [control_plane.request("GET", "/api/v1")]
    for group in control_plane.request("GET", "/apis")["groups"]:
        for version in group["versions"]:
            try:
                listings.append(control_plane.request("GET", f"/apis/{version['groupVersion']}"))
            except urllib.error.HTTPError as error:  # a group version an aggregated server would serve
                if error.code != 503:
                    raise
    return {
        (listing["groupVersion"], resource["kind"]): (resource["name"], resource["namespaced"])
        for listing in listings
        for resource in listing["resources"]
        if "/" not in resource["name"]  # a subresource
    }


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def in_its_group(served: Served, api_version: str, kind: str) -> set[tuple[str, bool]]:
    """How each served version of ``api_version``'s group serves ``kind``."""
    group = group_of(api_version)
    return {addressing for (version, name), addressing in served.items() if name == kind and group_of(version) == group}


ENTRIES = [(spec.api_version, spec.kind, spec.plural, spec.namespaced) for spec in dictionary.builtin()]
BUILTIN = [(kind.api_version, kind.kind, kind.plural, kind.namespaced) for kind in kinds.BUILTIN.values()]


@pytest.mark.parametrize(("api_version", "kind", "plural", "namespaced"), ENTRIES + BUILTIN)
def test_each_known_kind_is_served_by_its_group_under_its_plural_and_scope(
    served: Served, api_version: str, kind: str, plural: str, namespaced: bool
) -> None:
    assert in_its_group(served, api_version, kind) == {(plural, namespaced)}
    assert ((api_version, kind) in served) is ((api_version, kind) not in NEWER_THAN_1_20)
