"""The desired children of a Memcached, rendered from the generated templates and the author's mutations (pure)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import okt
from samples.memcached.memcached_operator import API_VERSION, MemcachedSpec, settings
from samples.memcached.memcached_operator.resources import (
    ConfigMapMemcached,
    DeploymentMemcached,
    ServiceMemcached,
    config_name,
    deployment_memcached,
)

INSTANCE = "app.kubernetes.io/instance"


def memcached(name: str = "web-cache", size: int = 2, image: str = "memcached:1.6") -> okt.CustomResource:
    raw = {
        "apiVersion": API_VERSION,
        "kind": "Memcached",
        "metadata": {"name": name, "namespace": "shop", "uid": "uid-1", "generation": 1},
        "spec": {"size": size, "image": image},
    }
    return okt.CustomResource(raw, MemcachedSpec(size=size, image=image))


def desired(resource: okt.Resource) -> dict[str, Any]:
    assert resource.cr is not None
    resource.mutate_with_cr(resource.cr)
    return resource.desired


def memcached_container(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment_memcached.memcached_container(deployment["spec"]["template"]["spec"])


@pytest.mark.parametrize(("size", "image"), [(1, "memcached:1.6"), (4, "memcached:1.6.21"), (60, "example.com/mc:2")])
def test_the_deployment_runs_size_replicas_of_the_image_with_the_memory_of_the_tier(size: int, image: str) -> None:
    cr = memcached(size=size, image=image)

    deployment = desired(DeploymentMemcached(cr))

    container = memcached_container(deployment)
    tuned = settings.for_size(size)
    assert (deployment["metadata"]["name"], deployment["metadata"]["namespace"]) == ("web-cache", "shop")
    assert deployment["spec"]["replicas"] == size
    assert container["image"] == image
    assert container["resources"]["requests"]["memory"] == tuned.container_memory
    assert container["resources"]["limits"]["memory"] == tuned.container_memory
    assert container["ports"] == [{"name": "memcached", "containerPort": 11211, "protocol": "TCP"}]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations[deployment_memcached.SETTINGS_ANNOTATION] == tuned.checksum()


def test_the_deployment_selects_only_the_pods_of_its_own_memcached() -> None:
    deployment = desired(DeploymentMemcached(memcached(name="orders")))

    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector[INSTANCE] == "orders"
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("size", [1, 4, 11])
def test_the_pods_read_every_setting_their_arguments_use_from_the_config_map(size: int) -> None:
    cr = memcached(size=size)
    deployment = desired(DeploymentMemcached(cr))
    config = desired(ConfigMapMemcached(cr, name=config_name(cr.name)))

    container = memcached_container(deployment)
    used = {name for arg in container["args"] for name in re.findall(r"\$\((\w+)\)", arg)}
    assert container["envFrom"] == [{"configMapRef": {"name": config["metadata"]["name"]}}]
    assert used == {"MEMCACHED_MEMORY_LIMIT_MB", "MEMCACHED_MAX_CONNECTIONS", "MEMCACHED_THREADS"}
    assert used <= set(config["data"])


@pytest.mark.parametrize("size", [1, 4, 11])
def test_the_config_map_holds_the_settings_of_the_size(size: int) -> None:
    cr = memcached(size=size)

    config = desired(ConfigMapMemcached(cr, name=config_name(cr.name)))

    assert config["metadata"]["name"] == "web-cache-config"
    assert config["metadata"]["labels"][INSTANCE] == "web-cache"
    assert config["data"] == settings.for_size(size).to_config_data()


def test_the_service_exposes_port_11211_of_the_memcached_pods() -> None:
    cr = memcached(name="orders")

    service = desired(ServiceMemcached(cr))
    deployment = desired(DeploymentMemcached(cr))

    assert service["metadata"]["name"] == "orders"
    assert service["spec"]["ports"] == [
        {"name": "memcached", "port": 11211, "targetPort": "memcached", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize(("resource", "hashed"), [(DeploymentMemcached, {"spec"}), (ServiceMemcached, {"spec"})])
def test_the_checksum_covers_the_fields_the_kind_dictionary_names_and_the_labels(
    resource: type[okt.Resource], hashed: set[str]
) -> None:
    child = resource(memcached())

    assert set(child.hashable_ref()) == hashed | {"labels"}


def test_a_template_without_the_memcached_container_is_a_permanent_error() -> None:
    with pytest.raises(okt.PermanentError, match="no container named 'memcached'"):
        deployment_memcached.memcached_container({"containers": [{"name": "sidecar"}]})


def deployment_status(**status: Any) -> dict[str, Any]:
    return {"metadata": {"generation": 1}, "spec": {"replicas": 2}, "status": {"observedGeneration": 1, **status}}


def test_pods_starting_do_not_wake_the_memcached_until_one_is_available() -> None:
    view = DeploymentMemcached.status_view
    created = view({"metadata": {"generation": 1}, "spec": {"replicas": 2}})
    scheduled = view(deployment_status(replicas=2, updatedReplicas=2))
    started = view(deployment_status(replicas=2, updatedReplicas=2, readyReplicas=1))
    available = view(deployment_status(replicas=2, updatedReplicas=2, readyReplicas=1, availableReplicas=1))
    assert created == scheduled == started  # the Memcached's status and conditions read the same for all three
    assert available != started  # status.availableReplicas moves
    everything = view(deployment_status(replicas=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2))
    assert everything != available  # Available and Progressing change
