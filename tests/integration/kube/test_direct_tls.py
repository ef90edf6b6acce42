"""The direct path verifies the real kube-apiserver as the kubeconfig says: its CA, ``tls-server-name``, and watches;
and offers a credential plugin's client certificate of the moment (to a server of the test's own that asks for one:
the control plane asks for none)."""

from __future__ import annotations

import base64
import pathlib
import socket
import ssl
import threading
from typing import Any

import pytest
import yaml
from cryptography import x509

import okt
from okt.kube import client as kube_client
from okt.kube import kinds, transport
from okt.runtime import certs
from okt.testing import envtest
from tests.integration import connect_proxy

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


class CertificateRecordingServer:
    """An https server on loopback that asks each connection for a client certificate of ``client_cas`` and keeps
    the serial number of the one offered, a connection each; it answers every request ``200 {}``."""

    def __init__(self, client_cas: bytes) -> None:
        self.bundle = certs.self_signed(("127.0.0.1",))
        self._context = self.bundle.server_context()
        self._context.verify_mode = ssl.CERT_REQUIRED
        self._context.load_verify_locations(cadata=client_cas.decode())
        self.offered: list[int] = []
        """The serial number of the client certificate each connection offered, in the order they came."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        try:
            with self._context.wrap_socket(conn, server_side=True) as tls:
                self.offered.append(int(str(tls.getpeercert()["serialNumber"]), 16))
                reader = tls.makefile("rb")
                while True:
                    line = reader.readline()
                    if not line:
                        return
                    if line == b"\r\n":  # the end of a request's head (the client's GETs carry no body)
                        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        except OSError:
            return

    def close(self) -> None:
        self._listener.close()


def serial(certificate_file: str) -> int:
    return x509.load_pem_x509_certificate(pathlib.Path(certificate_file).read_bytes()).serial_number


def test_the_direct_path_keeps_its_connections_while_the_plugins_certificate_holds_and_makes_new_ones_for_the_next(
    tmp_path: pathlib.Path,
) -> None:
    """client-go keeps its connections while the credential plugin's certificate holds, and closes them when the
    plugin gives another (its next connections offering that one); so does the direct path."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first_ca, first = connect_proxy.client_certificate(tmp_path / "first")
    second_ca, second = connect_proxy.client_certificate(tmp_path / "second", "another CA")
    server = CertificateRecordingServer(first_ca + second_ca)
    (tmp_path / "ca.crt").write_bytes(server.bundle.ca_pem)
    given = [(first["client-certificate"], first["client-key"])]
    direct = transport.DirectTransport(
        f"https://127.0.0.1:{server.port}",
        {"User-Agent": "okt"},
        transport.TLS(str(tmp_path / "ca.crt")),
        certificate=lambda: given[0],
    )
    try:
        statuses = []
        for files in (
            (first["client-certificate"], first["client-key"]),
            (second["client-certificate"], second["client-key"]),
        ):
            given[0] = files
            statuses += [
                direct.send(
                    "GET", "/api", params=None, data=None, content_type="application/json", timeout=10
                ).status_code
                for _ in range(3)
            ]
    finally:
        direct.close()
        server.close()

    assert statuses == [200] * 6
    assert server.offered == [serial(first["client-certificate"]), serial(second["client-certificate"])]
