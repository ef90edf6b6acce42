"""The samples' Pods, and the Pod templates of the docs, are admitted where the "restricted" Pod Security Standard is
enforced.

Why this exists: the samples and the docs' manifests are what operator authors copy, and a namespace labelled
``pod-security.kubernetes.io/enforce: restricted`` refuses every Pod of a template that misses one of the level's
fields — the Deployment is accepted, its ReplicaSet then fails to create a single Pod. The local control plane
(Kubernetes 1.20) has no PodSecurity admission, so the rules are checked here, as the standard states them
(https://kubernetes.io/docs/concepts/security/pod-security-standards/, the "latest" version): the baseline level's
rules, then the restricted level's own.
"""

from __future__ import annotations

import pathlib
import re
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import yaml

import okt
from benchmarks import manifests as benchmark_manifests
from samples.capability import main as capability
from samples.lifecycle.lifecycle_operator import API_VERSION as WEBAPP_API_VERSION
from samples.lifecycle.lifecycle_operator import WebAppSpec
from samples.lifecycle.lifecycle_operator.resources import DeploymentWebApp, JobWebApp
from samples.memcached.memcached_operator import API_VERSION as MEMCACHED_API_VERSION
from samples.memcached.memcached_operator import MemcachedSpec
from samples.memcached.memcached_operator.resources import DeploymentMemcached

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ping_group_range",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_syncookies",
    }
)
SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
DOCS = SAMPLES.parent / "docs"
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
CONFINED_SECCOMP = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every container of a pod spec, init and ephemeral ones included, with a name for messages."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            yield f"{field}[{container['name']}]", container


def baseline_violations(template: Mapping[str, Any]) -> list[str]:
    """What the baseline level refuses in a pod template (``metadata`` and ``spec``)."""
    spec = template["spec"]
    pod_context = spec.get("securityContext") or {}
    found = [f"spec.{field}" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    found += [f"volume {v['name']} is a hostPath" for v in spec.get("volumes") or () if "hostPath" in v]
    found += [
        f"sysctl {s['name']} is not safe" for s in pod_context.get("sysctls") or () if s["name"] not in SAFE_SYSCTLS
    ]
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    found += [
        f"annotation {key}: {value}"
        for key, value in annotations.items()
        if key.startswith(APPARMOR_ANNOTATION) and value != "runtime/default" and not value.startswith("localhost/")
    ]
    contexts = [("spec.securityContext", pod_context)]
    contexts += [(name, container.get("securityContext") or {}) for name, container in containers(spec)]
    for name, context in contexts:
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"{name}.windowsOptions.hostProcess")
        selinux = context.get("seLinuxOptions") or {}
        if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            found.append(f"{name}.seLinuxOptions: {selinux}")
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            found.append(f"{name}.seccompProfile is Unconfined")
        if (context.get("appArmorProfile") or {}).get("type") not in (None, *CONFINED_SECCOMP):
            found.append(f"{name}.appArmorProfile: {context['appArmorProfile']}")
    for name, container in containers(spec):
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{name} is privileged")
        added = set((context.get("capabilities") or {}).get("add") or ())
        found += [f"{name} adds {cap}" for cap in sorted(added - BASELINE_CAPABILITIES)]
        found += [f"{name} uses hostPort {p['hostPort']}" for p in container.get("ports") or () if p.get("hostPort")]
        if context.get("procMount", "Default") != "Default":
            found.append(f"{name}.securityContext.procMount: {context['procMount']}")
    return found


def restricted_violations(template: Mapping[str, Any]) -> list[str]:
    """What the restricted level refuses in a pod template: the baseline's refusals and its own."""
    spec = template["spec"]
    pod_context = spec.get("securityContext") or {}
    found = baseline_violations(template)
    for volume in spec.get("volumes") or ():
        kinds = set(volume) - {"name"}
        found += [f"volume {volume['name']} is a {kind}" for kind in sorted(kinds - RESTRICTED_VOLUMES)]
    if pod_context.get("runAsUser") == 0:
        found.append("spec.securityContext.runAsUser is 0")
    for name, container in containers(spec):
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}.securityContext.allowPrivilegeEscalation is not false")
        run_as_non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
        if run_as_non_root is not True:
            found.append(f"{name} may run as root (runAsNonRoot is not true, in the container or the pod)")
        if context.get("runAsUser") == 0:
            found.append(f"{name}.securityContext.runAsUser is 0")
        seccomp = (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
        if seccomp not in CONFINED_SECCOMP:
            found.append(f"{name} has no RuntimeDefault or Localhost seccompProfile (in the container or the pod)")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            found.append(f"{name}.securityContext.capabilities.drop does not hold ALL")
        added = set(capabilities.get("add") or ())
        found += [f"{name} adds {cap}" for cap in sorted(added - RESTRICTED_CAPABILITIES)]
    return found


def memcached(size: int = 2, image: str = "memcached:1.6") -> okt.CustomResource:
    raw = {
        "apiVersion": MEMCACHED_API_VERSION,
        "kind": "Memcached",
        "metadata": {"name": "sessions", "namespace": "shop", "uid": "uid-1", "generation": 1},
        "spec": {"size": size, "image": image},
    }
    return okt.CustomResource(raw, MemcachedSpec(size=size, image=image))


def rendered(resource: okt.Resource) -> dict[str, Any]:
    """The child as okt writes it: rendered from its template, then mutated from the custom resource."""
    assert resource.cr is not None
    resource.mutate_with_cr(resource.cr)
    return resource.desired


def memcached_deployment() -> dict[str, Any]:
    return rendered(DeploymentMemcached(memcached()))


def memcached_operator_deployment() -> dict[str, Any]:
    """The memcached operator's own Deployment (``deploy/deployment.yaml``)."""
    documents = yaml.safe_load_all((SAMPLES / "memcached" / "deploy" / "deployment.yaml").read_text())
    (deployment,) = [doc for doc in documents if doc and doc["kind"] == "Deployment"]
    return deployment  # type: ignore[no-any-return]


def benchmark_deployment() -> dict[str, Any]:
    return benchmark_manifests.deployment("sessions", "shop", {"size": 2, "image": "memcached:1.6"})


def webapp() -> okt.CustomResource:
    raw = {
        "apiVersion": WEBAPP_API_VERSION,
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "shop", "uid": "uid-2", "generation": 1},
        "spec": {"version": "1.25"},
    }
    return okt.CustomResource(raw, WebAppSpec(version="1.25"))


def webapp_deployment() -> dict[str, Any]:
    return rendered(DeploymentWebApp.at(webapp(), "1.25"))


def webapp_setup_job() -> dict[str, Any]:
    return rendered(JobWebApp.setup(webapp(), "1.25"))


def webapp_upgrade_job() -> dict[str, Any]:
    return rendered(JobWebApp.upgrade(webapp(), "1.26"))


def cache_deployment() -> dict[str, Any]:
    """The capability sample's Deployment (memcached and its ``tools`` sidecar)."""
    raw = {
        "apiVersion": capability.API_VERSION,
        "kind": "Cache",
        "metadata": {"name": "c", "namespace": "shop", "uid": "uid-3", "generation": 1},
        "spec": {"size": 1, "version": "1.6.0"},
    }
    cr = okt.CustomResource(raw, capability.CacheSpec(size=1, version="1.6.0"))
    params = {"release": capability.RELEASES["1.6.0"], "version": "1.6.0", "replicas": 1}
    return rendered(capability.CacheDeployment(cr, params=params))


def page_block(page: str, mark: str, language: str) -> str:
    """The first ``language`` code block after the line ``mark`` of ``docs/<page>``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    pattern = rf"^{re.escape(mark)}$.*?^```{language}\n(.*?)^```$"
    match = re.search(pattern, text, re.DOTALL | re.MULTILINE)
    assert match, f"docs/{page} has no {language} block after {mark!r}"
    return match.group(1)


def getting_started_deployment() -> dict[str, Any]:
    """The reader's ``manifests/deployment.yaml`` of ``docs/getting-started.md``."""
    block = page_block("getting-started.md", "<!-- snippet: file manifests/deployment.yaml -->", "yaml")
    return yaml.safe_load(block)  # type: ignore[no-any-return]


def ready_guide_deployment() -> dict[str, Any]:
    """The WebApp Deployment of ``docs/guide/ready.md``'s example, rendered for a WebApp."""
    example = types.ModuleType("ready_example")
    source = page_block("guide/ready.md", "<!-- example: ready.py -->", "python")
    exec(compile(source, str(DOCS / "guide" / "ready.md"), "exec"), vars(example))
    raw = {
        "apiVersion": "apps.example.com/v1alpha1",
        "kind": "WebApp",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-4", "generation": 1},
        "spec": {"replicas": 2, "image": "registry.example.com/web:1.0"},
    }
    return rendered(example.WebAppDeployment(okt.CustomResource(raw)))


def deploying_guide_deployment() -> dict[str, Any]:
    """The operator's own Deployment of ``docs/guide/deploying.md``."""
    return yaml.safe_load(page_block("guide/deploying.md", "## 4. The Deployment", "yaml"))  # type: ignore[no-any-return]


POD_OWNERS: dict[str, Callable[[], dict[str, Any]]] = {
    "memcached Deployment": memcached_deployment,
    "memcached operator's Deployment": memcached_operator_deployment,
    "benchmarks' memcached Deployment": benchmark_deployment,
    "lifecycle Deployment": webapp_deployment,
    "lifecycle setup Job": webapp_setup_job,
    "lifecycle upgrade Job": webapp_upgrade_job,
    "capability Deployment": cache_deployment,
    "getting started's Deployment": getting_started_deployment,
    "ready guide's Deployment": ready_guide_deployment,
    "deploying guide's operator Deployment": deploying_guide_deployment,
}


@pytest.mark.parametrize("owner", POD_OWNERS.values(), ids=POD_OWNERS.keys())
def test_the_samples_pods_meet_the_restricted_pod_security_level(owner: Callable[[], dict[str, Any]]) -> None:
    assert restricted_violations(owner()["spec"]["template"]) == []


@pytest.mark.parametrize("owner", POD_OWNERS.values(), ids=POD_OWNERS.keys())
def test_every_container_of_the_samples_pods_requests_cpu_and_memory_and_has_a_memory_limit(
    owner: Callable[[], dict[str, Any]],
) -> None:
    """A container without requests is scheduled as if it needed nothing, and one without a memory limit can take
    its node's memory; a namespace with a ResourceQuota refuses both."""
    for _, container in containers(owner()["spec"]["template"]["spec"]):
        resources = container.get("resources") or {}
        assert {"cpu", "memory"} <= set(resources.get("requests") or {}), container["name"]
        assert "memory" in (resources.get("limits") or {}), container["name"]


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        ({"spec": {"hostNetwork": True, "containers": []}}, "spec.hostNetwork"),
        ({"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/"}}], "containers": []}}, "volume v is a hostPath"),
        (
            {"spec": {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}},
            "containers[c] is privileged",
        ),
        (
            {"spec": {"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}},
            "containers[c] adds SYS_ADMIN",
        ),
        (
            {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}},
            "containers[c] uses hostPort 80",
        ),
        (
            {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": []}},
            "spec.securityContext.seccompProfile is Unconfined",
        ),
    ],
)
def test_the_baseline_rules_refuse_what_the_standard_refuses(template: dict[str, Any], refused: str) -> None:
    assert refused in baseline_violations(template)


COMPLIANT_CONTAINER: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
COMPLIANT_POD: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def test_the_restricted_rules_accept_a_pod_that_sets_every_field_they_ask_for() -> None:
    template = {
        "spec": {
            "securityContext": COMPLIANT_POD,
            "containers": [{"name": "c", "securityContext": COMPLIANT_CONTAINER}],
        }
    }

    assert restricted_violations(template) == []


@pytest.mark.parametrize(
    ("pod", "container", "refused"),
    [
        ({}, {}, "containers[c] may run as root (runAsNonRoot is not true, in the container or the pod)"),
        (
            {"runAsNonRoot": True},
            {},
            "containers[c] has no RuntimeDefault or Localhost seccompProfile (in the container or the pod)",
        ),
        (
            COMPLIANT_POD,
            {"runAsNonRoot": False},
            "containers[c] may run as root (runAsNonRoot is not true, in the container or the pod)",
        ),
        (COMPLIANT_POD, {"runAsUser": 0}, "containers[c].securityContext.runAsUser is 0"),
        (
            COMPLIANT_POD,
            {"allowPrivilegeEscalation": True},
            "containers[c].securityContext.allowPrivilegeEscalation is not false",
        ),
        (
            COMPLIANT_POD,
            {"capabilities": {"drop": ["NET_RAW"]}},
            "containers[c].securityContext.capabilities.drop does not hold ALL",
        ),
        (COMPLIANT_POD, {"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}, "containers[c] adds CHOWN"),
    ],
)
def test_the_restricted_rules_refuse_a_pod_that_misses_one_of_their_fields(
    pod: dict[str, Any], container: dict[str, Any], refused: str
) -> None:
    context = {**COMPLIANT_CONTAINER, **container}
    template = {"spec": {"securityContext": pod, "containers": [{"name": "c", "securityContext": context}]}}

    assert refused in restricted_violations(template)
