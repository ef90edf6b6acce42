"""What ``okt.kube.operand_http.call`` refuses before anything is sent."""

from __future__ import annotations

import pykube
import pytest

from okt.kube import client as kube_client
from okt.kube import operand_http


def test_a_ca_file_on_the_proxy_route_is_refused_as_the_api_servers_hop_does_not_verify() -> None:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],  # nothing may be sent
        "users": [{"name": "u", "user": {"token": "static"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    client = kube_client.Client(pykube.KubeConfig(doc))
    try:
        with pytest.raises(ValueError, match="direct route"):
            operand_http.call(
                client, operand_http.Target("pods", "web", "ns"), "/", port=8443, scheme="https", verify="ca.pem"
            )
    finally:
        client.close()
    assert client.stats.snapshot() == {}
