"""Built-in kinds okt's table addresses for current servers, against a server that serves some of them under an older
version only (Kubernetes 1.20: CronJob in batch/v1beta1, PodDisruptionBudget in policy/v1beta1, HorizontalPodAutoscaler
in autoscaling/v1, v2beta1 and v2beta2)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.runtime import manager as manager_mod
from okt.testing import RunningOperator, envtest

pytestmark = pytest.mark.integration


class CurrentCronJob(okt.MutableResource):
    api_version = "batch/v1"
    kind = "CronJob"


class OlderCronJob(okt.MutableResource):
    api_version = "batch/v1beta1"
    kind = "CronJob"


class Schedules(okt.Reconciler):
    """ConfigMaps, each owning a CronJob of batch/v1."""

    api_version = "v1"
    kind = "ConfigMap"
    owns: ClassVar = (CurrentCronJob,)


class Budgets(okt.Reconciler):
    """ConfigMaps, reconciled again when a PodDisruptionBudget of policy/v1 changes."""

    api_version = "v1"
    kind = "ConfigMap"
    watches = (
        okt.watch(okt.Kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"), map=lambda obj, ctx: []),
    )


class Scalers(okt.Reconciler):
    """HorizontalPodAutoscalers of autoscaling/v2 as the primary kind."""

    api_version = "autoscaling/v2"
    kind = "HorizontalPodAutoscaler"


@pytest.mark.parametrize(
    ("reconciler", "message"),
    [
        (Schedules, "the server does not serve CronJob in batch/v1 (it serves it in batch/v1beta1)"),
        (Budgets, "the server does not serve PodDisruptionBudget in policy/v1 (it serves it in policy/v1beta1)"),
        (
            Scalers,
            "the server does not serve HorizontalPodAutoscaler in autoscaling/v2 "
            "(it serves it in autoscaling/v1, autoscaling/v2beta1, autoscaling/v2beta2)",
        ),
    ],
)
def test_a_builtin_kind_the_server_does_not_serve_stops_the_start_naming_it_and_the_versions_that_serve_it(
    kube: kube_client.Client, namespace: str, reconciler: type[okt.Reconciler], message: str
) -> None:
    manager = manager_mod.Manager(kube, [reconciler], namespaces=[namespace], metrics_bind="0", tune_memory=False)
    try:
        with pytest.raises(okt.errors.NotFound) as caught:
            manager.start()
    finally:
        manager.stop()
        manager.join(15)
    assert str(caught.value) == f"404 NotFound: {message}"


class Credentials(okt.MutableResource):
    api_version = "v1"
    kind = "Secret"


class Endpoint(okt.MutableResource):
    api_version = "v1"
    kind = "Service"


class Workload(okt.MutableResource):
    api_version = "apps/v1"
    kind = "Deployment"


class SchedulesOfTheServer(okt.Reconciler):
    """ConfigMaps owning Secrets, Services, Deployments and CronJobs, each of a version the server serves."""

    api_version = "v1"
    kind = "ConfigMap"
    owns: ClassVar = (Credentials, Endpoint, Workload, OlderCronJob)


def test_the_builtin_kinds_the_server_serves_start_with_one_discovery_read_per_group_version(
    control_plane: envtest.ControlPlane, namespace: str
) -> None:
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        with RunningOperator.start(client, SchedulesOfTheServer, namespaces=[namespace], tune_memory=False):
            discovery_reads = client.stats.snapshot()[("get", "discovery")]
    finally:
        client.close()
    assert discovery_reads == 3  # /api/v1, /apis/apps/v1, /apis/batch/v1beta1


def test_okt_run_of_a_reconciler_owning_a_kind_the_server_does_not_serve_stops_with_one_line(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    operator = tmp_path / "cronjob_operator.py"
    operator.write_text(
        "import okt\n"
        "class CronJob(okt.MutableResource):\n    api_version = 'batch/v1'\n    kind = 'CronJob'\n"
        "class Schedules(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n    owns = (CronJob,)\n"
    )
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, "--metrics-bind-address", "0", "--log-format", "json"]

    # A guard, not a measure: before the fix the operator ran on, its informer listing CronJobs again and again.
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)

    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: 404 NotFound: the server does not serve CronJob in batch/v1 (it serves it in batch/v1beta1)"
    ], done.stderr
    assert "Traceback" not in done.stderr
