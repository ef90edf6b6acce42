"""The operator's own probes on the API server: ``okt run`` and ``RunningOperator`` find them in the operator's file,
and ``/healthz`` asked for JSON gives their values, a failing one named by its class, its status still 200."""

from __future__ import annotations

import json
import pathlib
import urllib.error
import urllib.request

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, RunningOperator, envtest

pytestmark = pytest.mark.integration

OPERATOR = """
import okt
from tests.integration.runtime.conftest import GadgetReconciler

@okt.probe("answer")
def answer():
    return {"value": 42}

@okt.probe("database")
def database():
    raise ConnectionError("postgres://admin:hunter2@db refused")
"""

EXPECTED = {"status": "ok", "probes": {"answer": {"value": 42}}, "failed": {"database": "ConnectionError"}}


def _healthz(base: str, accept: str) -> tuple[int, str, str]:
    request = urllib.request.Request(base + "/healthz", headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _check(base: str) -> None:
    status, content_type, body = _healthz(base, "application/json")
    assert (status, content_type) == (200, "application/json")
    assert json.loads(body) == EXPECTED
    assert "hunter2" not in body
    assert _healthz(base, "*/*") == (200, "text/plain", "ok")


def test_okt_run_adds_its_operators_probes_to_the_json_healthz(
    tmp_path: pathlib.Path, control_plane: envtest.ControlPlane, namespace: str, gadget_kind: kinds.Kind
) -> None:
    operator = tmp_path / "probed.py"
    operator.write_text(OPERATOR)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        env={"PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])},
        cwd=tmp_path,
        log_path=tmp_path / "operator.log",
    )
    with running as started:
        assert started.probe_url is not None
        _check(started.probe_url)
    log = running.log_text()
    assert '"probe": "database"' in log and "a probe failed" in log


def test_a_running_operators_module_has_its_probes_on_the_json_healthz(
    tmp_path: pathlib.Path, kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind
) -> None:
    operator = tmp_path / "probed_module.py"
    operator.write_text(OPERATOR)
    with RunningOperator.start(kube, str(operator), namespaces=[namespace], metrics_bind="127.0.0.1:0") as running:
        probes = running.manager.probes
        assert probes is not None
        _check(probes.url)
