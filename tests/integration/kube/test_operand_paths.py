"""A call to the operand through the API server's proxy stays a call to the operand: no dot segment climbs out of the
proxy subresource, no redirect the operand answers takes okt's credentials elsewhere; a direct call reaches the port
the proxy would, and is fenced as late as a proxied one; an answer trickled past the timeout is cut off there.

The clients here reach the API server through an HTTPS proxy (``HTTPS_PROXY``), so their requests take the session
(``requests``, which resolves dot segments before anything is sent, and follows redirects unless told not to), or
straight (okt's direct path). The operand is a local HTTP server at a Pod's IP (the Pod never runs: its status is
written by the test, and the API server proxies to that IP).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, operand_http, podexec
from okt.runtime import certs
from okt.testing import envtest, faults
from tests.integration.connect_proxy import connect_proxy

pytestmark = pytest.mark.integration

ENDPOINTS = kinds.Kind("v1", "Endpoints", "endpoints", True)


@pytest.mark.parametrize(
    "path", ["../../../secrets/keys", "/a/../../../../secrets/keys", "%2e%2e/%2E%2E/../secrets/keys"]
)
def test_dot_segments_in_an_operand_path_never_reach_another_resource(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keys", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": "hunter2"}})
    with connect_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
        try:
            # The API server's own answer that the Service is not there (no operand answered): not the Secret.
            with pytest.raises(errors.NotFound) as raised:
                operand_http.call(client, operand_http.Target("services", "web", namespace), path, port=80)
        finally:
            client.close()

    assert raised.value.status == 404
    assert 'services "web" not found' in str(raised.value)
    assert "hunter2" not in str(raised.value)


def outside_address() -> str:
    """This machine's address on its default route: one the API server proxies to (it refuses loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route
        except OSError:
            pytest.skip("no default route: no address the API server would proxy to")
        address: str = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("only a loopback address, which the API server does not proxy to")
    return address


@contextlib.contextmanager
def http_server(address: str, answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[int]:
    """A local HTTP server at ``address`` answering every GET and POST with ``answer``; yields its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer(self)

        def do_POST(self) -> None:
            answer(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("through_proxy", [False, True], ids=["direct", "session"])
def test_a_redirect_the_operand_answers_is_its_answer_and_is_not_followed(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    through_proxy: bool,
) -> None:
    address = outside_address()
    visits: list[dict[str, str]] = []

    def elsewhere(handler: http.server.BaseHTTPRequestHandler) -> None:
        visits.append(dict(handler.headers))
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with http_server(address, elsewhere) as other, contextlib.ExitStack() as stack:

        def redirect(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.send_response(302)
            handler.send_header("Location", f"http://{address}:{other}/collect")
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        port = stack.enter_context(http_server(address, redirect))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
        kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
        status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
        kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
        if through_proxy:
            monkeypatch.setenv("HTTPS_PROXY", stack.enter_context(connect_proxy()).url)
            monkeypatch.delenv("NO_PROXY", raising=False)
            monkeypatch.delenv("no_proxy", raising=False)
        client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
        stack.callback(client.close)

        with pytest.raises(errors.HttpError) as raised:
            operand_http.call(client, operand_http.Target("pods", "operand", namespace), "/stats", port=port)

    assert raised.value.status == 302
    assert visits == []


@pytest.mark.parametrize("port", [80, "web"])
def test_a_direct_call_to_a_services_port_reaches_its_target_port(
    kube: kube_client.Client, namespace: str, port: int | str
) -> None:
    address = outside_address()

    def hello(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "5")
        handler.end_headers()
        handler.wfile.write(b"hello")

    with http_server(address, hello) as target_port:
        meta = {"name": "operand", "namespace": namespace}
        service_port = {"name": "web", "port": 80, "targetPort": target_port}
        kube.create({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": [service_port]}})
        subset = {"addresses": [{"ip": address}], "ports": [{"name": "web", "port": target_port}]}
        kube.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": [subset]}, ENDPOINTS)

        answer = operand_http.call(
            kube, operand_http.Target("services", "operand", namespace), "/", port=port, route="direct"
        )

    assert answer.text == "hello"


def test_a_direct_call_to_a_service_without_a_port_reaches_its_first_port_as_the_proxy_does(
    kube: kube_client.Client, namespace: str
) -> None:
    """The endpoint controller sorts an Endpoints subset's ports by their hash, not in the Service's order: the
    Service's first port is found there by its name (as the proxied call names it), not taken for the subset's
    first."""
    address = outside_address()

    def answering(text: bytes) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
        def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(text)))
            handler.end_headers()
            handler.wfile.write(text)

        return answer

    with http_server(address, answering(b"web")) as web, http_server(address, answering(b"metrics")) as metrics:
        meta = {"name": "operand", "namespace": namespace}
        ports = [
            {"name": "web", "port": 80, "targetPort": web},
            {"name": "metrics", "port": 9090, "targetPort": metrics},
        ]
        kube.create({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": ports}})
        subset = {
            "addresses": [{"ip": address}],
            "ports": [{"name": "metrics", "port": metrics}, {"name": "web", "port": web}],
        }
        kube.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": [subset]}, ENDPOINTS)

        answer = operand_http.call(kube, operand_http.Target("services", "operand", namespace), "/", route="direct")

    assert answer.text == "web"


def test_a_direct_call_to_a_services_port_reaches_the_endpoints_that_serve_it(
    kube: kube_client.Client, namespace: str
) -> None:
    """An Endpoints object holds one subset per set of ports its Pods serve (a rollout that adds a port: the old Pods
    serve one port, the new ones two); the call goes to a ready address of a subset with the port asked for, as the
    API server's proxy looks for one, not to the first subset's."""
    address = outside_address()

    def hello(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "5")
        handler.end_headers()
        handler.wfile.write(b"hello")

    with http_server(address, hello) as metrics:
        meta = {"name": "operand", "namespace": namespace}
        ports = [{"name": "web", "port": 80, "targetPort": 8080}, {"name": "metrics", "port": 9090}]
        kube.create({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": ports}})
        old = {"addresses": [{"ip": "192.0.2.7"}], "ports": [{"name": "web", "port": 8080}]}
        new = {"addresses": [{"ip": address}], "ports": [{"name": "metrics", "port": metrics}]}
        kube.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": [old, new]}, ENDPOINTS)

        answer = operand_http.call(
            kube, operand_http.Target("services", "operand", namespace), "/", port=9090, route="direct"
        )

    assert answer.text == "hello"


@pytest.mark.parametrize("route", ["proxy", "direct"])
@pytest.mark.parametrize("port", [None, 80, "web"])
def test_a_service_without_endpoints_yet_is_a_remote_error_on_both_routes(
    kube: kube_client.Client, namespace: str, route: operand_http.Route, port: int | str | None
) -> None:
    """No endpoint controller runs here: the Service has no Endpoints object, as one just created has for a moment
    (the API server's proxy answers that as the Service not found, the direct route read the Endpoints' 404)."""
    meta = {"name": "web", "namespace": namespace}
    kube.create(
        {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": [{"name": "web", "port": 80}]}}
    )

    with pytest.raises(errors.RemoteError) as raised:
        operand_http.call(kube, operand_http.Target("services", "web", namespace), "/", port=port, route=route)

    assert f"service/{namespace}/web has no endpoints yet" in str(raised.value)


@pytest.mark.parametrize("route", ["proxy", "direct"])
@pytest.mark.parametrize("port", [None, 80])
def test_a_missing_service_is_not_found_on_both_routes(
    kube: kube_client.Client, namespace: str, route: operand_http.Route, port: int | None
) -> None:
    with pytest.raises(errors.NotFound) as raised:
        operand_http.call(kube, operand_http.Target("services", "web", namespace), "/", port=port, route=route)

    assert '"web" not found' in str(raised.value)  # the Service's 404, or on the direct route its Endpoints'


@pytest.mark.parametrize("target", ["pods", "services"])
def test_a_proxied_call_that_cannot_reach_the_api_server_is_unavailable_not_the_operands_failure(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, namespace: str, target: str
) -> None:
    """The client's API server is gone (the port it was given is closed): nothing reached the operand, and the error
    is the one every other request of okt raises then, its query's values left out as in any error of a call."""
    proxy = faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0).start()
    client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig"))
    proxy.stop()
    try:
        with pytest.raises(errors.Unavailable) as raised:
            operand_http.call(
                client,
                operand_http.Target(target, "web", namespace),
                "/admin?token=hunter2",
                port=80,  # type: ignore[arg-type]
            )
    finally:
        client.close()

    assert not isinstance(raised.value, errors.RemoteError)
    assert f"GET http://{target[:-1]}/{namespace}/web:80/admin?token=… -> no response" in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_a_direct_call_that_waited_at_the_rate_limit_past_the_loss_of_leadership_is_not_sent(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    """The direct route reads the Pod first (its IP): that read may wait at the rate limit while leadership is lost,
    and the POST that follows may change the operand."""
    address = outside_address()
    posts: list[str] = []

    def record(handler: http.server.BaseHTTPRequestHandler) -> None:
        posts.append(handler.path)
        handler.send_response(204)
        handler.end_headers()

    qps = 0.5  # one request every 2 s once the burst of one is spent
    client = kube_client.Client.from_kubeconfig(
        control_plane.kubeconfig, rate_limit=kube_client.RateLimit(qps=qps, burst=1)
    )
    with http_server(address, record) as port, contextlib.closing(client):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
        kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
        status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
        kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
        client.get(kinds.NAMESPACE, namespace)  # the burst is spent: the next request waits about 1 / qps
        lost_at = time.monotonic() + 0.5 / qps  # leadership is lost halfway through that wait

        def fence(verb: str, resource: str) -> str | None:
            return "leadership lost" if time.monotonic() >= lost_at else None

        target = operand_http.Target("pods", "operand", namespace)
        with pytest.raises(errors.NotLeader), fence_mod.fenced(fence):
            operand_http.call(client, target, "/flush", method="POST", port=port, route="direct")

    assert posts == []


def test_a_direct_call_answered_after_the_time_its_fence_allows_a_write_gets_its_answer(
    kube: kube_client.Client, namespace: str
) -> None:
    """A leader's fence lets a write leave only while the leader may write (until its renew deadline), and bounds
    how long it may take to leave: connecting and sending. An operand's answer may take longer (a backup): it is
    waited for as long as the call's timeout allows, the fence counting the call until it came."""
    address = outside_address()

    def backup(handler: http.server.BaseHTTPRequestHandler) -> None:
        time.sleep(3)  # the operand works longer than the fence allows a write to take to leave
        handler.send_response(200)
        handler.send_header("Content-Length", "4")
        handler.end_headers()
        handler.wfile.write(b"done")

    fence = fence_mod.Fence(lambda verb, resource: None, lambda: 1.0)  # a leader 1 s before its renew deadline
    with http_server(address, backup) as port:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
        kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
        status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
        kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
        target = operand_http.Target("pods", "operand", namespace)
        with fence_mod.fenced(fence):
            answer = operand_http.call(kube, target, "/backup", method="POST", port=port, route="direct", timeout=30)

    assert (answer.status, answer.text) == (200, "done")
    assert fence.in_flight == 0


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_an_answer_trickled_past_the_timeout_raises_remote_timeout(
    kube: kube_client.Client, namespace: str, route: operand_http.Route
) -> None:
    """``timeout`` bounds the whole answer, not each read: an operand sending a byte now and then would otherwise hold
    the reconcile as long as it likes."""
    address = outside_address()
    stop = threading.Event()
    trickled = 16  # one byte every half second: 8 s in all

    def trickle(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(trickled))
        handler.end_headers()
        with contextlib.suppress(OSError):  # the caller hung up
            for _ in range(trickled):
                handler.wfile.write(b".")
                handler.wfile.flush()
                if stop.wait(0.5):
                    return

    timeout = 1.0
    with http_server(address, trickle) as port:
        try:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
            kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
            status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
            kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
            target = operand_http.Target("pods", "operand", namespace)
            started = time.monotonic()
            with pytest.raises(errors.RemoteTimeout):
                operand_http.call(kube, target, "/stats", port=port, timeout=timeout, route=route)
            took = time.monotonic() - started
        finally:
            stop.set()

    assert took < 5 * timeout


def test_an_exec_reaches_the_api_server_through_the_https_proxy_the_session_uses(
    control_plane: envtest.ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exec's websocket is tunnelled through the proxy as the client's other requests are (the Pod does not
    exist: the API server's answer, NotFound naming it, came back through the tunnel)."""
    with connect_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
        try:
            with pytest.raises(errors.NotFound, match='pods "operand" not found'):
                podexec.run(client, namespace, "operand", None, ["true"], timeout=30)
        finally:
            client.close()


class HeldTLSOperand:
    """An HTTPS operand at ``address`` whose TLS handshake waits until :attr:`proceed` is set (as a connection to a
    busy node takes its time); keeps the requests it reads and answers each 204. Its certificate names ``hosts``
    (default: ``address``)."""

    def __init__(self, address: str, folder: pathlib.Path, hosts: Sequence[str] = ()) -> None:
        bundle = certs.self_signed(hosts or [address])
        self.ca_file = folder / "ca.crt"
        self.ca_file.write_bytes(bundle.ca_pem)
        self._served = bundle.server_context()
        self._listener = socket.create_server((address, 0))
        self.port: int = self._listener.getsockname()[1]
        self.connected, self.proceed = threading.Event(), threading.Event()
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self.proceed.set()
        self._listener.close()

    def _serve(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        self.connected.set()
        self.proceed.wait()
        try:
            with self._served.wrap_socket(conn, server_side=True) as tls:
                tls.settimeout(10)
                head = tls.recv(65536)
                if head:
                    self.requests.append(head)
                    tls.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        except OSError:
            pass  # the caller hung up during the handshake or before writing


def test_a_direct_call_whose_connection_was_made_after_the_loss_of_leadership_is_not_sent(
    kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """The fence is asked again once the connection to the operand is made: making it (TCP, TLS) may take as long
    as the call's timeout, and the next leader may be calling the operand by then."""
    address = outside_address()
    operand = HeldTLSOperand(address, tmp_path)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
    status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
    kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
    lost = threading.Event()

    def fence(verb: str, resource: str) -> str | None:
        return "leadership lost" if lost.is_set() else None

    outcome: list[BaseException | None] = []

    def call() -> None:
        target = operand_http.Target("pods", "operand", namespace)
        try:
            with fence_mod.fenced(fence):
                operand_http.call(
                    kube,
                    target,
                    "/flush",
                    method="POST",
                    port=operand.port,
                    scheme="https",
                    route="direct",
                    verify=str(operand.ca_file),
                    timeout=30,
                )
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    caller = threading.Thread(target=call, daemon=True)
    try:
        caller.start()
        assert operand.connected.wait(10), "the call connects"
        lost.set()  # leadership is lost while the connection is being made
        operand.proceed.set()
        caller.join(30)
    finally:
        operand.close()
    assert len(outcome) == 1
    assert isinstance(outcome[0], errors.NotLeader), repr(outcome[0])
    assert operand.requests == []


def test_a_direct_call_that_cannot_connect_within_the_time_its_fence_allows_a_write_is_not_sent(
    kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Connecting (TCP, TLS) and sending are what the fence's time bounds: a handshake held past it ends the call
    unsent, well before the call's own timeout, and the request never reaches the operand."""
    address = outside_address()
    operand = HeldTLSOperand(address, tmp_path)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
    status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
    kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
    fence = fence_mod.Fence(lambda verb, resource: None, lambda: 1.0)  # a leader 1 s before its renew deadline
    target = operand_http.Target("pods", "operand", namespace)
    try:
        refused = pytest.raises(errors.RemoteTimeout, match="not sent within the 1s its write fence allowed")
        with refused, fence_mod.fenced(fence):
            operand_http.call(
                kube,
                target,
                "/flush",
                method="POST",
                port=operand.port,
                scheme="https",
                route="direct",
                verify=str(operand.ca_file),
                timeout=30,
            )
    finally:
        operand.close()
    assert operand.requests == []


@pytest.mark.parametrize("server_name", [None, "operand.{namespace}.svc"], ids=["the-pod-ip", "the-service-name"])
def test_a_direct_https_call_checks_the_certificate_against_the_server_name_it_is_given(
    kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path, server_name: str | None
) -> None:
    """An in-cluster certificate names the Service (``NAME.NAMESPACE.svc``), not the Pod's IP the direct route calls:
    checked against the IP it is refused, checked against the name it is given it is accepted."""
    address = outside_address()
    operand = HeldTLSOperand(address, tmp_path, hosts=[f"operand.{namespace}.svc"])
    operand.proceed.set()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    kube.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
    status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
    kube.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")
    target = operand_http.Target("pods", "operand", namespace)
    call = functools.partial(
        operand_http.call,
        kube,
        target,
        "/stats",
        port=operand.port,
        scheme="https",
        route="direct",
        verify=str(operand.ca_file),
        server_name=None if server_name is None else server_name.format(namespace=namespace),
    )
    try:
        if server_name is None:
            with pytest.raises(errors.RemoteError, match="certificate verify failed"):
                call()
            assert operand.requests == []
        else:
            assert call().status == 204
            assert operand.requests[0].startswith(b"GET /stats HTTP/1.1")
    finally:
        operand.close()
