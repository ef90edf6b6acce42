"""A paged list against the real API server: etcd compacted between two pages expires the continue token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest

pytestmark = pytest.mark.integration

CONFIG_MAP = kinds.BUILTIN[("v1", "ConfigMap")]


class BeforeEachRequest(kube_client.RateLimit):
    """No limit; ``before(n)`` runs before the client's n-th request (counted from 1)."""

    def __init__(self, before: Callable[[int], None]) -> None:
        super().__init__(qps=1000.0, burst=1000)
        self.requests = 0
        self._before = before

    def acquire(self) -> None:
        self.requests += 1
        self._before(self.requests)


def test_a_list_whose_continue_token_expired_is_listed_again_whole_from_one_snapshot(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    for name in ("a", "b", "c", "d"):
        kube.create({"metadata": {"name": name, "namespace": namespace}}, CONFIG_MAP)
    created: list[dict[str, Any]] = []

    def before(request: int) -> None:
        if request == 2:  # the first page (a, b) is in: the cluster changes and etcd compacts past its snapshot
            kube.delete(CONFIG_MAP, "a", namespace)
            kube.delete(CONFIG_MAP, "d", namespace)
            created.append(kube.create({"metadata": {"name": "e", "namespace": namespace}}, CONFIG_MAP))
            control_plane.compact_etcd()

    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig, rate_limit=BeforeEachRequest(before))
    try:
        items, version = client.list(CONFIG_MAP, namespace, page_size=2)
    finally:
        client.close()

    assert sorted(item["metadata"]["name"] for item in items) == ["b", "c", "e"]
    assert int(version) >= int(created[0]["metadata"]["resourceVersion"])  # a watch from it misses nothing


def test_a_page_after_its_continue_token_expired_is_refused_as_gone(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    """What the pages of an informer's relist do: the pages handed out are the caller's, which lists again."""
    for name in ("a", "b", "c"):
        kube.create({"metadata": {"name": name, "namespace": namespace}}, CONFIG_MAP)
    pages = kube.list_pages(CONFIG_MAP, namespace, page_size=2)
    first, _ = next(pages)
    kube.delete(CONFIG_MAP, "c", namespace)  # history past the snapshot: compacting drops the snapshot
    control_plane.compact_etcd()
    with pytest.raises(errors.Gone):
        next(pages)
    assert [item["metadata"]["name"] for item in first] == ["a", "b"]
