"""``ctx.exec`` and ``ctx.http`` talk to real Pods on the local node: output, exit codes, HTTP answers and failures.

Every Pod here is started by the test (busybox from the machine's packages); every address touched is its own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds, objects, podexec
from okt.reconciler import context
from okt.testing import envtest, images, waiting
from tests.integration import connect_proxy

pytestmark = pytest.mark.integration

POD = kinds.BUILTIN[("v1", "Pod")]
START_TIMEOUT = 60.0
WEB = (
    "mkdir -p /www && echo served-by-$HOSTNAME > /www/index.html && echo '{\"items\": 3}' > /www/stats.json"
    " && (nc -ll -p 9090 -e sleep 60 &) ; exec httpd -f -p 8080 -h /www"
)
"""busybox's httpd serving two files on 8080, and on 9090 a listener that accepts and never answers."""


def web_pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "web",
                    "image": images.BUSYBOX,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", WEB],
                    "ports": [{"name": "http", "containerPort": 8080}, {"name": "mute", "containerPort": 9090}],
                    "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1},
                }
            ],
        },
    }


def web_service(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }


def pod_ready(pod: dict[str, Any] | None) -> bool:
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@pytest.fixture(scope="module")
def web(node_kube: kube_client.Client) -> Iterator[context.Context]:
    """A context of a (pretend) custom resource in a namespace where Pod ``web`` serves, Ready."""
    namespace = "okt-remote"
    node_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    node_kube.create(web_pod("web", namespace))
    node_kube.create(web_service("web", namespace))
    waiting.wait_for(
        lambda: pod_ready(node_kube.get_or_none(POD, "web", namespace)),
        timeout=START_TIMEOUT,
        message=lambda: f"Pod web Ready ({(node_kube.get_or_none(POD, 'web', namespace) or {}).get('status')})",
    )
    cr = objects.CustomResource(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cr", "namespace": namespace}}
    )
    yield context.Context(
        settings=context.Settings(controller="remote"),
        client=node_kube,
        reader=None,  # type: ignore[arg-type]  # the remote helpers never read through it
        kind=kinds.BUILTIN[("v1", "ConfigMap")],
        cr=cr,
        exists=True,
        logger=structlog.get_logger("test"),
        recorder=None,
    )
    node_kube.delete(kinds.NAMESPACE, namespace)


def test_exec_returns_the_commands_stdout_and_exit_code_zero(web: context.Context) -> None:
    result = web.exec("web", "web", ["cat", "/www/index.html"])

    assert result == okt.ExecResult(stdout="served-by-web\n", stderr="", exit_code=0)
    assert result.ok


def test_exec_keeps_stderr_apart_from_stdout(web: context.Context) -> None:
    result = web.exec("web", "web", ["sh", "-c", "echo out; echo err >&2"])

    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 0)


def test_a_failing_command_returns_its_exit_code_not_an_exception(web: context.Context) -> None:
    result = web.exec("web", "web", ["sh", "-c", "echo half-done; exit 3"])

    assert result.exit_code == 3
    assert result.stdout == "half-done\n"
    assert not result.ok


@pytest.mark.parametrize("scheme", connect_proxy.SCHEMES)
def test_exec_through_the_kubeconfigs_proxy_returns_the_commands_whole_output_and_exit_code(
    web: context.Context, node_plane: envtest.ControlPlane, tmp_path: pathlib.Path, scheme: str
) -> None:
    """Each way a ``proxy-url`` tunnels: through an https proxy, the API server's TLS inside the proxy's (TLS in
    TLS); through a socks5 one, the name resolved by the proxy. Output of many TLS records each way (the stream
    read through both layers to its end), stderr apart, the exit code; the exec's connection is the proxy's."""
    if scheme == "socks5" and importlib.util.find_spec("socks") is None:
        pytest.skip("PySocks is not installed: a socks5 proxy-url is refused at start (tests/unit/kube)")
    command = ["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo err >&2; exit 4"]
    with connect_proxy.proxied_kubeconfig(node_plane, tmp_path, scheme) as (proxy, kubeconfig):
        client = kube_client.Client.from_kubeconfig(kubeconfig)
        try:
            result = podexec.run(client, web.cr.namespace or "", "web", "web", command, timeout=30)
        finally:
            client.close()

    assert (result.stdout, result.stderr, result.exit_code) == ("x" * 300000 + "\n", "err\n", 4)
    assert len(proxy.targets) == 1  # the exec's connection, nothing else sent


def open_sockets() -> int:
    """The sockets this process holds open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the descriptor listing the directory is gone by now
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


def test_a_command_past_its_timeout_raises_remote_timeout_and_closes_its_stream(web: context.Context) -> None:
    before = open_sockets()

    with pytest.raises(okt.RemoteTimeout, match=r"pod okt-remote/web container web.*after 1s"):
        web.exec("web", "web", ["sleep", "30"], timeout=1)

    assert open_sockets() <= before
    assert web.exec("web", "web", ["echo", "still here"], timeout=10).stdout == "still here\n"


def test_exec_in_a_missing_container_raises_an_api_error_naming_it(web: context.Context) -> None:
    with pytest.raises(okt.BadRequest, match=r"pod okt-remote/web container nope.*nope"):
        web.exec("web", "nope", ["true"])


def test_exec_in_a_missing_pod_raises_not_found_naming_it(web: context.Context) -> None:
    with pytest.raises(okt.NotFound, match=r"pod okt-remote/ghost.*ghost"):
        web.exec("ghost", None, ["true"])


def test_a_command_that_cannot_start_exits_126_with_the_runtimes_message(web: context.Context) -> None:
    result = web.exec("web", "web", ["/no/such/binary"])

    assert result.exit_code == 126  # as a shell reports a command it cannot execute
    assert "/no/such/binary" in result.stdout + result.stderr


@pytest.mark.parametrize("target", ["pod/web", "service/web", "web"])
@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_http_gets_a_file_from_the_pod_by_pod_or_service_on_both_routes(
    web: context.Context, target: str, route: Any
) -> None:
    port = "http" if target.startswith("pod/") else None

    answer = web.http(target, "/stats.json", port=port, route=route)

    assert answer.status == 200
    assert answer.json() == {"items": 3}


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_path_that_404s_raises_http_error_with_status_and_excerpt(web: context.Context, route: Any) -> None:
    with pytest.raises(okt.HttpError) as raised:
        web.http("pod/web", "/missing.html", port=8080, route=route)

    assert raised.value.status == 404
    assert "/missing.html" in str(raised.value)
    assert "404" in raised.value.body


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_port_that_never_answers_raises_remote_timeout(web: context.Context, route: Any) -> None:
    with pytest.raises(okt.RemoteTimeout, match="within 1s"):
        web.http("pod/web", "/", port=9090, timeout=1, route=route)

    assert web.http("pod/web", "/index.html", port=8080, route=route).text == "served-by-web\n"


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_closed_port_raises_remote_error_naming_the_refusal(web: context.Context, route: Any) -> None:
    with pytest.raises(okt.RemoteError, match="refused") as raised:
        web.http("pod/web", "/", port=8081, route=route)

    assert not isinstance(raised.value, okt.HttpError | okt.RemoteTimeout)


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_service_without_a_ready_endpoint_raises_remote_error_not_an_operands_answer(
    web: context.Context, route: Any
) -> None:
    client = web.client
    client.create(web_service("idle", web.cr.namespace))  # selects app=idle: no Pod
    endpoints = kinds.Kind("v1", "Endpoints", "endpoints", True)

    try:
        waiting.wait_for(lambda: client.get_or_none(endpoints, "idle", web.cr.namespace), timeout=START_TIMEOUT)
        with pytest.raises(okt.RemoteError, match="endpoint") as raised:
            web.http("service/idle", "/", route=route)
    finally:
        client.delete(kinds.BUILTIN[("v1", "Service")], "idle", web.cr.namespace)

    assert not isinstance(raised.value, okt.HttpError | okt.RemoteTimeout)


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_port_the_service_does_not_have_raises_remote_error_not_an_operands_answer(
    web: context.Context, route: Any
) -> None:
    with pytest.raises(okt.RemoteError, match="port 81") as raised:
        web.http("service/web", "/", port=81, route=route)

    assert not isinstance(raised.value, okt.HttpError | okt.RemoteTimeout)


@pytest.mark.parametrize("route", ["proxy", "direct"])
def test_a_missing_pod_raises_not_found_naming_it_on_both_routes(web: context.Context, route: Any) -> None:
    with pytest.raises(okt.NotFound, match='pods "gone" not found'):
        web.http("pod/gone", "/", port=8080, route=route)
