"""A client of okt's for a scripted server on loopback: plain HTTP, a static token."""

from __future__ import annotations

import pykube

from okt.kube import client as kube_client


def client_for(
    port: int, *, user: dict[str, str] | None = None, cluster: dict[str, object] | None = None, **options: object
) -> kube_client.Client:
    """An ordinary :class:`okt.kube.client.Client` built from a kubeconfig naming ``http://127.0.0.1:<port>`` (and
    the ``cluster`` fields given)."""
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}", **(cluster or {})}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": "static"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    return kube_client.Client(pykube.KubeConfig(doc), **options)  # type: ignore[arg-type]
