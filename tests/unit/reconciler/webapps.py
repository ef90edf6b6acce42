"""The WebApp the reconciler's unit tests reconcile with okt's in-memory client: ``shop/web``, generation 1."""

from __future__ import annotations

from okt.kube import kinds
from okt.testing import FakeClient

WEBAPP = kinds.Kind("apps.example.com/v1alpha1", "WebApp", "webapps")


def webapp() -> FakeClient:
    """An in-memory API holding the WebApp ``shop/web``, and room for its Events."""
    fake = FakeClient(kinds=[WEBAPP])
    fake.serve(kinds.EVENT)
    fake.put(
        {
            "apiVersion": WEBAPP.api_version,
            "kind": WEBAPP.kind,
            "metadata": {"name": "web", "namespace": "shop", "generation": 1},
            "spec": {},
        }
    )
    return fake
