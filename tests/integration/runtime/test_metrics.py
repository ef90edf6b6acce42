"""``/metrics`` of a running operator against the contract dashboards rely on: controller-runtime's names, types and
labels (client-go's for the work queue, leader election and REST client), and okt's own series beside them."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import parser

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, envtest, wait_for
from tests.integration.reconciler import conftest as shared

widget_kind = shared.widget_kind

#: The contract: the series a controller-runtime dashboard queries, with their Prometheus type and label names.
CONTROLLER_RUNTIME = {
    "controller_runtime_reconcile_total": ("counter", {"controller", "result"}),
    "controller_runtime_reconcile_errors_total": ("counter", {"controller"}),
    "controller_runtime_reconcile_time_seconds": ("histogram", {"controller"}),
    "controller_runtime_max_concurrent_reconciles": ("gauge", {"controller"}),
    "controller_runtime_active_workers": ("gauge", {"controller"}),
    "workqueue_depth": ("gauge", {"name"}),
    "workqueue_adds_total": ("counter", {"name"}),
    "workqueue_queue_duration_seconds": ("histogram", {"name"}),
    "workqueue_work_duration_seconds": ("histogram", {"name"}),
    "workqueue_retries_total": ("counter", {"name"}),
    "workqueue_unfinished_work_seconds": ("gauge", {"name"}),
    "workqueue_longest_running_processor_seconds": ("gauge", {"name"}),
    "leader_election_master_status": ("gauge", {"name"}),
    "rest_client_requests_total": ("counter", {"code", "method", "host"}),
}

#: okt's own series, kept beside them (dashboards and docs written for okt use these).
OKT = {
    "okt_reconcile_total": ("counter", {"controller", "result"}),
    "okt_reconcile_errors_total": ("counter", {"controller"}),
    "okt_reconcile_duration_seconds": ("histogram", {"controller"}),
    "okt_workqueue_depth": ("gauge", {"controller"}),
    "okt_active_workers": ("gauge", {"controller"}),
    "okt_status_write_errors_total": ("counter", {"controller"}),
    "okt_api_requests_total": ("counter", {"verb", "resource"}),
    "okt_reconcile_paths_total": ("counter", {"controller", "path"}),
    "okt_writes_skipped_total": ("counter", {"controller"}),
    "okt_on_deleted_errors_total": ("counter", {"controller"}),
}

Families = dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]]
"""``{name as queried: (type, [(sample name, labels, value)])}``."""

#: Label names Prometheus adds to a histogram's samples.
_HISTOGRAM_LABELS = {"le"}


def scrape(url: str) -> Families:
    """``/metrics`` parsed."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    families: Families = {}
    for family in parser.text_string_to_metric_families(text):
        name = family.name + "_total" if family.type == "counter" else family.name
        families[name] = (family.type, [(s.name, s.labels, s.value) for s in family.samples])
    return families


def value(
    families: dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]], sample: str, **labels: str
) -> float:
    """The sum of the samples named ``sample`` whose labels include ``labels`` (there must be one)."""
    matching = [
        number
        for name, sample_labels, number in families[sample.removesuffix("_count")][1]
        if name == sample and all(sample_labels.get(k) == v for k, v in labels.items())
    ]
    assert matching, f"no sample {sample}{labels}"
    return sum(matching)


def test_metrics_carry_controller_runtimes_names_types_and_labels_and_okts_own_beside_them(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    request: pytest.FixtureRequest,
) -> None:
    operator_client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    request.addfinalizer(operator_client.close)
    controller = shared.WidgetReconciler.controller_name()
    with RunningOperator.start(
        operator_client,
        shared.WidgetReconciler,
        namespaces=[namespace],
        max_concurrent=3,
        metrics_bind="127.0.0.1:0",
        leader_elect=True,
        lease_namespace=namespace,
        grace_period=5,
    ) as operator:
        probes = operator.manager.probes
        assert probes is not None
        shared.make_widget(kube, widget_kind, namespace, "scraped", size=1)
        first_path = ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"
        wait_for(
            lambda: value(scrape(probes.url), "okt_reconcile_paths_total", controller=controller, path=first_path) >= 1,
            message="the first reconcile to be counted",
        )
        # A second reconcile finds the three children as they should be: three writes saved by the checksum.
        kube.patch(widget_kind, "scraped", {"metadata": {"annotations": {"touched": "yes"}}}, namespace)
        wait_for(
            lambda: value(scrape(probes.url), "okt_writes_skipped_total", controller=controller) >= 3,
            message="the children left alone to be counted",
        )
        families = scrape(probes.url)
        lease = operator.manager.lease_name

    for name, (kind, labels) in {**CONTROLLER_RUNTIME, **OKT}.items():
        assert name in families, f"{name} is not exported"
        exported_type, samples = families[name]
        assert exported_type == kind, f"{name} is a {exported_type}, not a {kind}"
        assert samples, f"{name} has no series"
        for sample_name, sample_labels, _ in samples:
            assert set(sample_labels) - _HISTOGRAM_LABELS == labels, f"{sample_name} is labelled {set(sample_labels)}"

    results = {labels["result"] for _, labels, _ in families["controller_runtime_reconcile_total"][1]}
    assert results == {"success", "error", "requeue", "requeue_after"}
    reconciles = sum(
        value(families, "controller_runtime_reconcile_total", controller=controller, result=result)
        for result in results
    )
    assert reconciles >= 2
    assert value(families, "controller_runtime_reconcile_time_seconds_count", controller=controller) == reconciles
    assert value(families, "controller_runtime_max_concurrent_reconciles", controller=controller) == 3
    assert value(families, "controller_runtime_active_workers", controller=controller) >= 0
    assert value(families, "workqueue_adds_total", name=controller) >= 2
    assert value(families, "workqueue_queue_duration_seconds_count", name=controller) >= 2
    assert value(families, "workqueue_work_duration_seconds_count", name=controller) >= 2
    assert value(families, "leader_election_master_status", name=lease) == 1
    host = operator_client.host
    assert host.startswith("127.0.0.1:")
    assert value(families, "rest_client_requests_total", code="200", method="GET", host=host) >= 1
    # The children's creations (server-side apply answers a creation with 201 Created).
    assert value(families, "rest_client_requests_total", code="201", host=host) >= 3
