"""okt.testing.defaults: the values the API server gives what a write leaves out, and its quantities' stored form;
okt.testing.services' node ports."""

from __future__ import annotations

import copy
import fractions
import ipaddress
from collections.abc import Collection, Iterator
from typing import Any

import pytest

from okt import errors
from okt.resources import checksum
from okt.testing import defaults, services


def _deployment(**spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "app:1"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": template, **spec},
    }


def test_a_deployment_gets_its_strategy_and_its_pod_template_s_defaults() -> None:
    filled = defaults.fill(_deployment())

    assert filled["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (filled["spec"]["replicas"], filled["spec"]["revisionHistoryLimit"]) == (1, 10)
    pod = filled["spec"]["template"]
    assert pod["metadata"] == {"labels": {"app": "a"}, "creationTimestamp": None}
    assert pod["spec"]["restartPolicy"] == "Always" and pod["spec"]["securityContext"] == {}
    assert pod["spec"]["containers"] == [
        {
            "name": "c",
            "image": "app:1",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
        }
    ]


def test_a_value_written_is_kept_and_a_default_only_where_its_holder_says_so() -> None:
    given = _deployment(strategy={"type": "Recreate"}, replicas=3)
    before = copy.deepcopy(given)

    filled = defaults.fill(given)

    assert filled["spec"]["strategy"] == {"type": "Recreate"}  # no rollingUpdate for a Recreate strategy
    assert filled["spec"]["replicas"] == 3
    assert given == before  # a copy is answered


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("app", "Always"),
        ("app:latest", "Always"),
        ("registry:5000/app", "Always"),
        ("registry:5000/app:1.2", "IfNotPresent"),
        ("app@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_a_container_s_pull_policy_follows_its_image_s_tag(image: str, policy: str) -> None:
    filled = defaults.fill({**_deployment(), "spec": {"template": {"spec": {"containers": [{"image": image}]}}}})

    assert filled["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_a_service_s_defaults_and_its_node_traffic_policy_only_when_reached_through_its_nodes() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}

    plain = defaults.fill(service)
    node = defaults.fill({**service, "spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "web"}]}})

    assert plain["spec"] == {
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "type": "ClusterIP",
        "sessionAffinity": "None",
    }
    assert node["spec"]["externalTrafficPolicy"] == "Cluster"
    assert node["spec"]["ports"][0]["targetPort"] == "web"


def test_quantities_of_kubernetes_own_kinds_are_stored_in_their_canonical_form() -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "spec": {"resources": {"requests": {"storage": "1024Mi"}, "limits": {"storage": 0.5}}},
    }
    resources = {"requests": {"cpu": "1000m", "memory": "not a quantity"}}
    pod_template = _deployment()
    pod_template["spec"]["template"]["spec"]["containers"][0]["resources"] = resources

    assert defaults.fill(claim)["spec"]["resources"] == {"requests": {"storage": "1Gi"}, "limits": {"storage": "500m"}}
    filled = defaults.fill(pod_template)["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert filled == {"requests": {"cpu": "1", "memory": "not a quantity"}}


def test_a_custom_kind_is_left_as_written() -> None:
    widget = {
        "apiVersion": "example.io/v1",
        "kind": "Deployment",
        "spec": {"resources": {"requests": {"cpu": "1000m"}}},
    }

    assert defaults.fill(widget) == widget


def test_a_quantity_s_amount_is_one_whatever_its_spelling() -> None:
    assert checksum.quantity_amount("1Gi") == checksum.quantity_amount("1073741824") == 1024**3
    assert checksum.quantity_amount(0.5) == checksum.quantity_amount("500m") == fractions.Fraction(1, 2)
    assert checksum.quantity_amount("1 Gi") is None
    assert checksum.quantity_amount(True) is None


def _service(kind: str, *ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "spec": {"type": kind, "ports": list(ports), **spec}}


def test_node_ports_are_the_lowest_free_ones_and_kept_where_named() -> None:
    service = _service("NodePort", {"port": 80}, {"port": 81, "nodePort": 30001}, {"port": 82})

    services.allocate_node_ports(service, in_use={30000})

    assert [port["nodePort"] for port in service["spec"]["ports"]] == [30002, 30001, 30003]
    assert "healthCheckNodePort" not in service["spec"]
    assert services.node_ports(service) == [30002, 30001, 30003]


def test_a_local_load_balancer_gets_a_health_check_node_port_and_a_cluster_ip_service_no_node_port() -> None:
    balancer = _service("LoadBalancer", {"port": 80}, externalTrafficPolicy="Local")
    cluster = _service("ClusterIP", {"port": 80})

    services.allocate_node_ports(balancer, in_use=())
    services.allocate_node_ports(cluster, in_use=())

    assert balancer["spec"]["ports"][0]["nodePort"] == 30000 and balancer["spec"]["healthCheckNodePort"] == 30001
    assert cluster["spec"]["ports"] == [{"port": 80}]


class _EveryAddress(Collection[str]):
    """Every address of the service range held (a million: none listed)."""

    def __contains__(self, address: object) -> bool:
        return isinstance(address, str) and bool(address) and ipaddress.ip_address(address) in services.SERVICE_RANGE

    def __iter__(self) -> Iterator[str]:
        return map(str, services.SERVICE_RANGE.hosts())

    def __len__(self) -> int:
        return services.SERVICE_RANGE.num_addresses


def test_a_service_needing_a_cluster_ip_when_every_one_is_held_is_the_servers_500() -> None:
    service = _service("ClusterIP", {"port": 80})

    with pytest.raises(errors.ServerError) as raised:
        services.allocate(service, _EveryAddress())

    assert (raised.value.status, raised.value.api_reason) == (500, "InternalError")
    assert raised.value.api_message == "Internal error occurred: failed to allocate a serviceIP: range is full"
    assert "clusterIP" not in service["spec"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [({}, (1, 1)), ({"parallelism": 2}, (None, 2)), ({"completions": 3}, (3, 1))],
)
def test_a_job_runs_one_pod_to_completion_unless_it_names_its_parallelism(
    given: dict[str, Any], expected: tuple[Any, Any]
) -> None:
    spec = defaults.fill({"apiVersion": "batch/v1", "kind": "Job", "spec": given})["spec"]

    assert (spec.get("completions"), spec["parallelism"], spec["backoffLimit"]) == (*expected, 6)


def test_a_stateful_set_s_claim_templates_are_stored_as_whole_claims() -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"volumeClaimTemplates": [claim]}}

    assert defaults.fill(sts)["spec"]["volumeClaimTemplates"] == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "creationTimestamp": None},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"},
        }
    ]


def test_a_null_is_left_out_as_the_server_decodes_it_then_defaulted_where_the_holder_says_so() -> None:
    rolling = defaults.fill(_deployment(strategy={"rollingUpdate": None}, replicas=None))
    recreate = defaults.fill(_deployment(strategy={"type": "Recreate", "rollingUpdate": None}))

    assert rolling["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert rolling["spec"]["replicas"] == 1
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (None, {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
        ({"rollingUpdate": {"partition": 2}}, {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
        ({"type": "RollingUpdate"}, {"type": "RollingUpdate"}),
        ({"type": "RollingUpdate", "rollingUpdate": {}}, {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
        ({"type": "OnDelete"}, {"type": "OnDelete"}),
    ],
)
def test_a_stateful_set_gets_a_rolling_update_only_where_its_strategy_names_no_type(
    given: dict[str, Any] | None, stored: dict[str, Any]
) -> None:
    body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {}}
    if given is not None:
        body["spec"]["updateStrategy"] = given

    assert defaults.fill(body)["spec"]["updateStrategy"] == stored
