"""The Secret and Service helpers against the server behaviours they exist for.

A Secret's ``stringData`` is write-only: the server folds it into base64 ``data`` and never returns it, so a naive
comparison sees drift forever. A Service's ``clusterIP`` and ``nodePort`` are assigned by the server: an update must
keep them (a changed clusterIP is refused; a dropped nodePort is re-allocated under the users' feet).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "demo"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class StringDataSecret(okt.SecretResource):
    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
stringData:
  password: {{ cr.spec.greeting }}-s3cret
"""


class MixedSecret(okt.SecretResource):
    """``data`` and ``stringData`` together; a key in both takes the ``stringData`` value, as on the server."""

    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
data:
  user: YWRtaW4=          # "admin"
  password: b3ZlcnJpZGRlbg==  # "overridden"
stringData:
  password: {{ cr.spec.greeting }}-s3cret
"""


def _secret_reconciler(secret: type[okt.SecretResource]) -> okt.Reconciler:
    class SecretReconciler(shared.WidgetReconciler):
        owns = (secret,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [secret(ctx.cr)]

    return SecretReconciler()


@pytest.mark.parametrize(
    ("secret", "expected"),
    [
        pytest.param(StringDataSecret, {"password": b64("hello-s3cret")}, id="string-data"),
        pytest.param(MixedSecret, {"user": b64("admin"), "password": b64("hello-s3cret")}, id="data-and-string-data"),
    ],
)
def test_a_secret_with_string_data_is_created_once_then_left_alone(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    secret: type[okt.SecretResource],
    expected: dict[str, str],
) -> None:
    reconciler = _secret_reconciler(secret)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting="hello")
    before = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, before) == {("apply", "secrets"): 1, ("apply", "widgets/status"): 1}
    live = shared.get_child(kube, "v1", "Secret", namespace, f"{NAME}-credentials")
    assert live is not None
    assert live["data"] == expected
    assert "stringData" not in live
    steady = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, steady) == {}
    assert run.results.counts()[okt.Operation.UNCHANGED] == 1


def test_a_changed_string_data_value_updates_the_secret_once(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    reconciler = _secret_reconciler(StringDataSecret)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting="hello")
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, greeting="bonjour")
    before = kube.stats.snapshot()

    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {("apply", "secrets"): 1, ("apply", "widgets/status"): 1}
    live = shared.get_child(kube, "v1", "Secret", namespace, f"{NAME}-credentials")
    assert live is not None
    assert live["data"] == {"password": b64("bonjour-s3cret")}
    steady = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, steady) == {}


class PortedService(okt.ServiceResource):
    """A Service whose type, port and target port come from the reconciler's parameters."""

    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  type: {{ type }}
  selector:
    app: {{ name }}
  ports:
    - name: http
      port: {{ port }}
      targetPort: {{ target }}
"""


def _service_reconciler(**settings: Any) -> okt.Reconciler:
    class ServiceReconciler(shared.WidgetReconciler):
        owns = (PortedService,)
        params: ClassVar[Mapping[str, Any]] = settings

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [PortedService(ctx.cr, params=ctx.params)]

    return ServiceReconciler()


@pytest.mark.parametrize(
    ("before_params", "after_params", "kept"),
    [
        pytest.param(
            {"type": "ClusterIP", "port": 80, "target": 8080},
            {"type": "ClusterIP", "port": 8081, "target": 8080},
            ("clusterIP",),
            id="cluster-ip-port-change",
        ),
        pytest.param(
            {"type": "NodePort", "port": 80, "target": 8080},
            {"type": "NodePort", "port": 80, "target": 9090},
            ("clusterIP", "nodePort"),
            id="node-port-target-change",
        ),
    ],
)
def test_a_service_update_keeps_the_addresses_the_server_assigned(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    before_params: Mapping[str, Any],
    after_params: Mapping[str, Any],
    kept: tuple[str, ...],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(_service_reconciler(**before_params), kube, widget_kind, namespace, NAME)
    created = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert created is not None
    assigned = {"clusterIP": created["spec"]["clusterIP"], "nodePort": created["spec"]["ports"][0].get("nodePort")}
    assert all(assigned[field] for field in kept), "the server assigned them"
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(_service_reconciler(**after_params), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {("apply", "services"): 1}
    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert live["spec"]["ports"][0]["port"] == after_params["port"]
    assert live["spec"]["ports"][0]["targetPort"] == after_params["target"]
    now = {"clusterIP": live["spec"]["clusterIP"], "nodePort": live["spec"]["ports"][0].get("nodePort")}
    assert {field: now[field] for field in kept} == {field: assigned[field] for field in kept}
    steady = kube.stats.snapshot()
    shared.reconcile_widget(_service_reconciler(**after_params), kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, steady) == {}
