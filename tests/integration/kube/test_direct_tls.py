"""The direct path verifies the real kube-apiserver as the kubeconfig says: its CA, ``tls-server-name``, and watches."""

from __future__ import annotations

import base64
import pathlib
import threading
from typing import Any

import pytest
import yaml

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import certs
from okt.testing import envtest

pytestmark = pytest.mark.integration


def kubeconfig_with(plane: envtest.ControlPlane, target: pathlib.Path, cluster: dict[str, Any]) -> pathlib.Path:
    """The control plane's kubeconfig with ``cluster``'s settings (a ``None`` value removes the setting)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    settings = config["clusters"][0]["cluster"]
    settings.update({key: value for key, value in cluster.items() if value is not None})
    for key in [key for key, value in cluster.items() if value is None]:
        settings.pop(key, None)
    target.write_text(yaml.safe_dump(config))
    return target


def test_a_server_whose_certificate_another_ca_signed_is_refused(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    stranger = base64.b64encode(certs.self_signed().ca_pem).decode()
    path = kubeconfig_with(
        control_plane, tmp_path / "kubeconfig", {"certificate-authority": None, "certificate-authority-data": stranger}
    )
    client = kube_client.Client.from_kubeconfig(path)

    with pytest.raises(okt.Unavailable, match="certificate verify failed"):
        client.get(kinds.NAMESPACE, "default")
    with pytest.raises(okt.Unavailable, match="certificate verify failed"):
        next(client.watch(kinds.NAMESPACE, resource_version="0"))
    client.close()


@pytest.mark.parametrize(("server_name", "works"), [("kubernetes.default.svc", True), ("elsewhere.example", False)])
def test_tls_server_name_is_the_name_the_certificate_must_match(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, server_name: str, works: bool
) -> None:
    path = kubeconfig_with(control_plane, tmp_path / "kubeconfig", {"tls-server-name": server_name})
    client = kube_client.Client.from_kubeconfig(path)

    if works:
        assert client.get(kinds.NAMESPACE, "default")["metadata"]["name"] == "default"
    else:
        with pytest.raises(okt.Unavailable, match="certificate verify failed"):
            client.get(kinds.NAMESPACE, "default")
    client.close()


def test_a_watch_delivers_each_change_as_it_happens_and_a_stop_ends_it_at_once(
    control_plane: envtest.ControlPlane, kube: kube_client.Client
) -> None:
    namespace = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "direct-"}})
    name = namespace["metadata"]["name"]
    _, version = kube.list(kinds.CONFIG_MAP, name)
    opened: list[Any] = []
    events = kube.watch(kinds.CONFIG_MAP, name, resource_version=version, on_open=opened.append)
    for i in range(3):
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": name}})

    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in (next(events) for _ in range(3))]

    assert seen == [("ADDED", "c0"), ("ADDED", "c1"), ("ADDED", "c2")]
    threading.Timer(0.2, kube_client.interrupt, args=(opened[0],)).start()
    with pytest.raises(okt.Unavailable):
        next(events)  # nothing more happens: only the interrupt ends the wait
    kube.delete(kinds.NAMESPACE, name)
