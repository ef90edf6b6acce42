"""Behaviour of okt.resources.helpers: the Secret, Service and workload helpers, without a cluster."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from okt import errors
from okt.names import Names
from okt.resources import apply, helpers
from okt.resources import resource as okt_resource

LABELS = Names()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(**fields: Any) -> helpers.SecretResource:
    return helpers.SecretResource(body={"metadata": {"name": "creds", "namespace": "ns"}, **fields})


def service(spec: dict[str, Any]) -> helpers.ServiceResource:
    return helpers.ServiceResource(body={"metadata": {"name": "web", "namespace": "ns"}, "spec": spec})


# --- Secret ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "data"),
    [
        pytest.param({"stringData": {"password": "s3cret"}}, {"password": b64("s3cret")}, id="string-data-only"),
        pytest.param(
            {"data": {"user": b64("admin")}, "stringData": {"password": "s3cret"}},
            {"user": b64("admin"), "password": b64("s3cret")},
            id="both",
        ),
        pytest.param(
            {"data": {"password": b64("old")}, "stringData": {"password": "new"}},
            {"password": b64("new")},
            id="string-data-wins-like-on-the-server",
        ),
        pytest.param({"stringData": {"port": 5432}}, {"port": b64("5432")}, id="non-string-value"),
        pytest.param({"stringData": {"name": "żółw"}}, {"name": b64("żółw")}, id="utf-8"),
        pytest.param({"data": {"user": b64("admin")}}, {"user": b64("admin")}, id="data-only"),
    ],
)
def test_a_secret_folds_string_data_into_base64_data(fields: dict[str, Any], data: dict[str, str]) -> None:
    res = secret(**fields)

    res.normalize()

    assert res.desired["data"] == data
    assert "stringData" not in res.desired


@pytest.mark.parametrize(
    ("value", "spelled"),
    [(None, "null"), (True, "true"), (False, "false"), ({"user": "admin"}, "a mapping"), (["a", "b"], "a list")],
)
def test_a_string_data_value_that_is_no_text_is_an_invalid_spec_not_its_python_spelling(
    value: Any, spelled: str
) -> None:
    # folded as str(value), it was the Secret's value: the password "None" for one left out, "True" for a YAML true,
    # "{'user': 'admin'}" for a mapping placed whole
    res = secret(stringData={"user": "admin", "password": value})

    with pytest.raises(errors.InvalidSpec, match=rf"^Secret/ns/creds: stringData.password is {spelled}, not a string"):
        res.normalize()


def test_an_empty_string_data_leaves_no_trace() -> None:
    res = secret(stringData={})

    res.normalize()

    assert "stringData" not in res.desired
    assert "data" not in res.desired


def test_folding_is_idempotent_so_the_hash_is_stable() -> None:
    once, twice = secret(stringData={"password": "s3cret"}), secret(stringData={"password": "s3cret"})

    first = apply.prepare(once, None, LABELS)
    apply.prepare(twice, None, LABELS)
    second = apply.prepare(twice, None, LABELS)

    assert first == second
    assert once.desired == twice.desired


def test_a_secret_written_with_string_data_matches_what_the_server_stores() -> None:
    res = secret(stringData={"password": "s3cret"})
    apply.prepare(res, None, LABELS)
    stored = copy.deepcopy(res.desired)
    stored["type"] = "Opaque"
    stored["metadata"]["resourceVersion"] = "7"

    assert apply.decide(res, stored, None, LABELS).action is apply.Action.UNCHANGED


# --- Service --------------------------------------------------------------------------------------------------------

LIVE_SERVICE = {
    "spec": {
        "type": "NodePort",
        "clusterIP": "10.96.0.10",
        "clusterIPs": ["10.96.0.10"],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "ports": [
            {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080},
            {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53, "nodePort": 30053},
        ],
    }
}


def test_a_service_update_keeps_the_cluster_ips_the_server_assigned() -> None:
    res = service({"type": "NodePort", "ports": [{"name": "http", "port": 80}]})

    res.preserve_from_live(LIVE_SERVICE)

    spec = res.desired["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"]) == ("10.96.0.10", ["10.96.0.10"])
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")


@pytest.mark.parametrize(
    ("ports", "node_ports"),
    [
        pytest.param([{"port": 80}], [30080], id="same-port-default-protocol"),
        pytest.param([{"port": 53, "protocol": "UDP"}], [30053], id="same-port-and-protocol"),
        pytest.param([{"port": 53}], [None], id="same-port-other-protocol"),
        pytest.param([{"port": 8080}], [None], id="new-port"),
        pytest.param([{"port": 80, "nodePort": 31000}], [31000], id="explicit-node-port-wins"),
        pytest.param([{"port": 53, "protocol": "UDP"}, {"port": 80}], [30053, 30080], id="reordered"),
    ],
)
def test_a_service_update_keeps_each_ports_node_port_when_the_port_is_the_same(
    ports: list[dict[str, Any]], node_ports: list[int | None]
) -> None:
    res = service({"type": "NodePort", "ports": ports})

    res.preserve_from_live(LIVE_SERVICE)

    assert [port.get("nodePort") for port in res.desired["spec"]["ports"]] == node_ports


def test_a_cluster_ip_the_template_sets_is_not_overridden() -> None:
    res = service({"clusterIP": "None", "ports": [{"port": 80}]})

    res.preserve_from_live(LIVE_SERVICE)

    assert res.desired["spec"]["clusterIP"] == "None"


def test_preserving_from_a_live_object_without_spec_changes_nothing_but_the_spec_key() -> None:
    res = service({"ports": [{"port": 80}]})

    res.preserve_from_live({})

    assert res.desired["spec"] == {"ports": [{"port": 80}]}


# --- Readiness ------------------------------------------------------------------------------------------------------


def workload(desired: int | None, generation: int, **status: int) -> dict[str, Any]:
    spec = {} if desired is None else {"replicas": desired}
    return {"metadata": {"generation": generation}, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("live", "available_all", "progressing"),
    [
        pytest.param(None, False, True, id="missing"),
        pytest.param(workload(3, 1), False, True, id="never-observed"),
        pytest.param(
            workload(3, 2, observedGeneration=1, readyReplicas=3, availableReplicas=3, updatedReplicas=3),
            False,
            True,
            id="new-generation-not-observed-yet",
        ),
        pytest.param(
            workload(3, 2, observedGeneration=2, readyReplicas=3, availableReplicas=3, updatedReplicas=3),
            True,
            False,
            id="rolled-out",
        ),
        pytest.param(
            workload(3, 2, observedGeneration=2, readyReplicas=3, availableReplicas=3, updatedReplicas=1),
            True,
            True,
            id="rolling-out-but-available",
        ),
        pytest.param(
            workload(1, 2, observedGeneration=2, replicas=2, readyReplicas=1, availableReplicas=1, updatedReplicas=1),
            True,
            True,
            id="new-pod-not-ready-while-the-old-one-serves",
        ),
        pytest.param(
            workload(3, 1, observedGeneration=1, readyReplicas=1, availableReplicas=1, updatedReplicas=3),
            False,
            True,
            id="waiting-for-replicas",
        ),
        pytest.param(
            workload(None, 1, observedGeneration=1, readyReplicas=1, availableReplicas=1, updatedReplicas=1),
            True,
            False,
            id="replicas-default-to-one",
        ),
        pytest.param(workload(0, 1, observedGeneration=1), True, False, id="scaled-to-zero"),
    ],
)
def test_readiness_reads_the_workload_status(
    live: dict[str, Any] | None, available_all: bool, progressing: bool
) -> None:
    readiness = helpers.Readiness.of(live)

    assert (readiness.available_all, readiness.progressing) == (available_all, progressing)


@pytest.mark.parametrize("cls", [helpers.DeploymentResource, helpers.StatefulSetResource])
def test_workload_helpers_report_the_readiness_of_their_live_object(
    cls: type[helpers.DeploymentResource] | type[helpers.StatefulSetResource],
) -> None:
    res = cls(body={"metadata": {"name": "app", "namespace": "ns"}})
    assert res.readiness() == helpers.Readiness(desired=0, ready=0, available=0, updated=0, observed=False)

    res.live = workload(2, 1, observedGeneration=1, readyReplicas=2, availableReplicas=2, updatedReplicas=2)

    assert res.readiness() == helpers.Readiness(desired=2, ready=2, available=2, updated=2, observed=True)


@pytest.mark.parametrize("helper", [helpers.DeploymentResource, helpers.StatefulSetResource])
def test_a_workloads_status_view_is_what_its_conditions_read(helper: type[helpers.DeploymentResource]) -> None:
    live = {
        "metadata": {"generation": 2},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 2, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 3},
    }
    assert helper.status_view(live) == (1, 1, 3, False, True, None)
    noisy = copy.deepcopy(live)
    noisy["status"].update(conditions=[{"type": "Progressing"}], unavailableReplicas=2, collisionCount=1)
    assert helper.status_view(noisy) == helper.status_view(live)


def test_a_plain_resource_reads_the_whole_status() -> None:
    live = {"status": {"phase": "Running", "conditions": []}}
    assert okt_resource.MutableResource.status_view(live) == live["status"]


@pytest.mark.parametrize(
    ("condition", "stalled"),
    [
        pytest.param(
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"},
            "timed out",
            id="deadline-exceeded",
        ),
        pytest.param(
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "progressing"},
            None,
            id="progressing",
        ),
        pytest.param(
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "x"},
            None,
            id="other-condition",
        ),
    ],
)
def test_a_deployment_whose_rollout_passed_its_deadline_reads_as_stalled_and_its_view_changes(
    condition: dict[str, str], stalled: str | None
) -> None:
    live = workload(1, 1, observedGeneration=1)
    before = helpers.DeploymentResource.status_view(live)
    live["status"]["conditions"] = [condition]

    assert helpers.Readiness.of(live).stalled == stalled
    assert (helpers.DeploymentResource.status_view(live) != before) is (stalled is not None)


def statefulset(desired: int, update_strategy: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A StatefulSet as the API serves it after its controller acted on generation 2 (a new Pod template)."""
    return {
        "metadata": {"generation": 2},
        "spec": {"replicas": desired, "updateStrategy": update_strategy},
        "status": {"observedGeneration": 2, "currentRevision": "web-1", "updateRevision": "web-2", **status},
    }


@pytest.mark.parametrize(
    ("live", "progressing"),
    [
        pytest.param(
            statefulset(
                3,
                {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
                replicas=3,
                readyReplicas=3,
                availableReplicas=3,
                currentReplicas=2,
                updatedReplicas=1,
            ),
            False,
            id="partition-rolled-out",
        ),
        pytest.param(
            statefulset(
                3,
                {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
                replicas=3,
                readyReplicas=3,
                availableReplicas=3,
                currentReplicas=2,
                updatedReplicas=1,
            ),
            True,
            id="partition-rolling-out",
        ),
        pytest.param(
            statefulset(
                3,
                {"type": "RollingUpdate", "rollingUpdate": {"partition": 5}},
                replicas=3,
                readyReplicas=3,
                availableReplicas=3,
                currentReplicas=3,
                updatedReplicas=0,
            ),
            False,
            id="partition-above-the-replicas",
        ),
        pytest.param(
            statefulset(3, {"type": "OnDelete"}, replicas=3, readyReplicas=3, availableReplicas=3, currentReplicas=3),
            False,
            id="on-delete-waits-for-pods-deleted-by-hand",
        ),
        pytest.param(
            statefulset(3, {"type": "OnDelete"}, replicas=3, readyReplicas=2, availableReplicas=2, currentReplicas=3),
            True,
            id="on-delete-with-a-pod-not-ready",
        ),
        pytest.param(
            statefulset(
                3,
                {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                replicas=3,
                readyReplicas=3,
                availableReplicas=3,
                currentReplicas=2,
                updatedReplicas=1,
            ),
            True,
            id="rolling-update-under-way",
        ),
        pytest.param(
            statefulset(3, {"type": "OnDelete"}, replicas=4, readyReplicas=4, availableReplicas=4, updatedReplicas=1),
            True,
            id="on-delete-scaling-down",
        ),
        pytest.param(
            statefulset(
                3,
                {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
                replicas=4,
                readyReplicas=4,
                availableReplicas=4,
                updatedReplicas=2,
            ),
            True,
            id="partition-scaling-down",
        ),
    ],
)
def test_a_statefulset_has_rolled_out_when_its_controller_updated_every_pod_its_strategy_updates(
    live: dict[str, Any], progressing: bool
) -> None:
    """A partition keeps the Pods below it on the old revision and OnDelete replaces none: the controller's rollout is
    over once the Pods it does update are (``kubectl rollout status`` and kstatus read them so)."""
    assert helpers.Readiness.of(live).progressing is progressing
    assert helpers.StatefulSetResource.status_view(live)[4] is progressing


def test_a_deployment_past_its_progress_deadline_is_not_progressing() -> None:
    """Its controller stopped rolling it out (``Progressing=False, ProgressDeadlineExceeded``) although Pods of the
    previous spec still run: it is stalled, no longer progressing."""
    live = workload(2, 2, observedGeneration=2, replicas=3, updatedReplicas=1, readyReplicas=2, availableReplicas=2)
    live["status"]["conditions"] = [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}
    ]

    readiness = helpers.Readiness.of(live)

    assert (readiness.stalled, readiness.progressing) == ("timed out", False)


def test_a_stalled_condition_the_controller_has_not_reconsidered_yet_leaves_the_new_spec_progressing() -> None:
    """A new generation the controller has not observed yet restarts the rollout (and resets its deadline): the
    condition is its verdict on the spec before, not on this one — kstatus's *InProgress*, not *Failed*."""
    live = workload(2, 3, observedGeneration=2, replicas=3, updatedReplicas=1, readyReplicas=2, availableReplicas=2)
    live["status"]["conditions"] = [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}
    ]

    readiness = helpers.Readiness.of(live)

    assert (readiness.progressing, readiness.stalled, readiness.available_all) == (True, None, False)


def test_a_deployment_whose_last_pods_are_ready_but_not_yet_available_is_still_rolling_out() -> None:
    """With ``minReadySeconds``, a ready Pod is available only after that long: until then the Deployment controller
    has not completed the rollout (``Progressing`` stays ``ReplicaSetUpdated``, not ``NewReplicaSetAvailable``) and
    ``kubectl rollout status`` still waits for "3 of 4 updated replicas are available"."""
    live = workload(4, 2, observedGeneration=2, replicas=4, updatedReplicas=4, readyReplicas=4, availableReplicas=3)
    live["spec"]["minReadySeconds"] = 30
    live["status"]["conditions"] = [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
    ]

    readiness = helpers.Readiness.of(live)

    assert (readiness.available_all, readiness.progressing) == (False, True)


def test_a_statefulset_from_a_server_that_does_not_count_available_pods_is_available_once_its_pods_are_ready() -> None:
    """Before Kubernetes 1.22 a StatefulSet's status has no ``availableReplicas``: its ready Pods are its available
    ones (a Deployment's status leaves the field out only when it is 0)."""
    live = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"generation": 1},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
    }
    readiness = helpers.Readiness.of(live)

    assert (readiness.available, readiness.available_all, readiness.progressing) == (2, True, False)
    deployment = {**live, "kind": "Deployment"}
    assert helpers.Readiness.of(deployment).available == 0
