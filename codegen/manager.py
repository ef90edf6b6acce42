"""The operator's own workload: its Namespace and the Deployment that runs ``okt run`` in the cluster.

Why it exists: the Deployment of an operator is the same for every okt operator but for a few names (the namespace,
the ServiceAccount the RBAC generator binds, the image), and it must agree with what ``okt run`` serves — the
``/healthz`` and ``/readyz`` probes and ``/metrics`` on the port of ``--metrics-bind-address``, the Lease namespace of
``--leader-elect``, a graceful shutdown that fits in the termination grace period. Generating it keeps those facts in
one place, next to the CRD and RBAC generators.

Guarantees: an unprivileged, read-only container (the operator only talks to the API server); two replicas under
leader election (one reconciles, the other is a warm standby); every name checked before anything is built; the
Deployment, its Pods (so its ReplicaSets) and its Namespace carry :data:`okt.names.OPERATOR_LABEL`, which the
operator's own webhooks of built-in kinds leave out (an operator that is down never refuses its own fix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from okt import names
from okt.codegen import crd, errors
from okt.runtime import manager as runtime_manager

METRICS_PORT = 8080
"""The port of ``/metrics``, ``/healthz`` and ``/readyz`` inside the container."""

WEBHOOK_PORT = 9443
"""The port of the admission and conversion webhooks inside the container (``okt run --webhook-port``)."""

OLM_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # noqa: S108 - a mount point OLM chooses
"""Where OLM mounts the serving certificate (``tls.crt``, ``tls.key``) of the webhooks a ClusterServiceVersion
lists into the Deployment it names."""


def lease_name(name: str, watch_namespaces: Sequence[str], selector: str | None, controllers: Sequence[str]) -> str:
    """The Lease the Deployment's ``okt run`` leads on, which its command line names (``--lease-name``), so that the
    RBAC grants that Lease alone: ``name`` for an operator serving some namespaces or labels (another release of it
    serving others from the same namespace leads apart); otherwise the name ``okt run`` derives from the controller
    names of the reconcilers it runs (:func:`okt.runtime.manager.default_lease_name`, ``okt-<controllers>``), so an
    operator deployed before it was named keeps leading on the same Lease through the rollout. Named on the command
    line, it stays the Lease the rules grant even if the file in the image comes to load other reconcilers."""
    return name if watch_namespaces or selector else runtime_manager.default_lease_name(controllers)


def manager_manifests(
    *,
    name: str,
    namespace: str,
    image: str,
    service_account: str,
    entry_point: str = "/app/main.py",
    reconciler: str | None = None,
    replicas: int = 2,
    webhooks: bool = False,
    webhook_cert_dir: str | None = None,
    watch_namespaces: Sequence[str] = (),
    selector: str | None = None,
    controllers: Sequence[str],
) -> list[dict[str, Any]]:
    """The operator's Namespace and Deployment (``okt run ENTRY_POINT`` on every namespace, or on
    ``watch_namespaces``, leader-elected).

    Args:
        name: the Deployment's name and its ``app.kubernetes.io/name`` label.
        namespace: where the operator runs (and its Lease lives: ``okt run`` reads ``$POD_NAMESPACE``).
        image: the operator's container image.
        service_account: the ServiceAccount of the RBAC generator's output.
        entry_point: the operator file inside the image.
        reconciler: the one reconciler of ``entry_point`` the artifacts were generated for (``okt run
            --reconciler``; None: every reconciler the file binds): a run of the others would reconcile kinds without
            their CRDs and rules.
        replicas: 1 or more; above 1, the others wait as standbys.
        webhooks: the operator serves admission or conversion webhooks: on the ``webhooks`` port
            (:data:`WEBHOOK_PORT`), behind the Service ``<name>-webhooks`` (:func:`webhook_service_name`), with a
            certificate ``okt run`` keeps in the Secret ``<name>-webhooks-tls`` and whose CA it writes into the
            configurations named ``<name>`` and the conversion webhooks of its CRDs.
        webhook_cert_dir: with ``webhooks``, serve the certificate mounted in this directory instead
            (``--webhook-cert-dir``: OLM mounts one at :data:`OLM_CERT_DIR` and writes the CA itself).
        watch_namespaces: the namespaces the operator serves (``okt run --namespace``; none: every namespace).
        selector: the label selector of the objects it serves (``okt run --selector``).
        controllers: the controller names of the reconcilers it runs (``cls.controller_name()``). ``okt run`` is told
            the Lease it leads on (``--lease-name``, :func:`lease_name`): the one it derives from these, or, for an
            operator serving some namespaces or labels, one of its own named ``name`` (another release of it serving
            others from the same namespace leads apart).

    Raises:
        CodegenError: a name that is not a DNS label (with ``webhooks`` and no ``webhook_cert_dir``, one that makes
            a Service name: starting with a letter, at most 54 characters), an empty image or a replica count below 1.
    """
    for option, value in (("name", name), ("namespace", namespace), ("service account", service_account)):
        crd.require_dns_label(option, value)
    if not image.strip() or any(character.isspace() for character in image) or not lowercase_repository(image):
        raise errors.CodegenError(
            f"invalid image {image!r}: expected a reference such as my-operator:0.1.0 (a lowercase repository)"
        )
    if replicas < 1:
        raise errors.CodegenError(f"invalid replicas {replicas}: at least 1")
    if webhooks and webhook_cert_dir is None:
        crd.require_service_prefix("name", name, webhook_service_name(name))
    labels = {"app.kubernetes.io/name": name}  # copied where it goes: editing one object's labels changes no other
    # What the operator's own webhooks of built-in kinds leave out (names.OPERATOR_LABEL). Not in the Deployment's
    # selector: that one is immutable, and an installed operator's would no longer apply.
    own = {**labels, names.OPERATOR_LABEL: name}
    webhook_args = [f"--webhook-port={WEBHOOK_PORT}"]
    if webhook_cert_dir is not None:
        webhook_args.append(f"--webhook-cert-dir={webhook_cert_dir}")
    else:
        webhook_args += [f"--webhook-service={webhook_service_name(name)}", f"--webhook-configuration={name}"]
    ports = [{"name": "http", "containerPort": METRICS_PORT, "protocol": "TCP"}]
    if webhooks:
        ports.append({"name": "webhooks", "containerPort": WEBHOOK_PORT, "protocol": "TCP"})
    container = {
        "name": "operator",
        "image": image,
        "args": [
            entry_point,
            *([f"--reconciler={reconciler}"] if reconciler else []),
            *([f"--namespace={watched}" for watched in sorted(set(watch_namespaces))] or ["--all-namespaces"]),
            *([f"--selector={selector}"] if selector else []),
            f"--lease-name={lease_name(name, watch_namespaces, selector, controllers)}",
            "--leader-elect",
            f"--metrics-bind-address=:{METRICS_PORT}",
            "--log-format=json",
            *(webhook_args if webhooks else []),
        ],
        # The Lease lives in the pod's own namespace, whatever a kustomize overlay renames it to.
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": ports,
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(own)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(own)},
                "spec": {
                    "serviceAccountName": service_account,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    # okt run finishes in-flight reconciles (30 s at most) and releases the Lease on SIGTERM.
                    "terminationGracePeriodSeconds": 40,
                    "containers": [container],
                },
            },
        },
    }
    namespace_object = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": dict(own)},
    }
    return [namespace_object, deployment]


def lowercase_repository(image: str) -> bool:
    """Whether the repository of the image reference ``image`` is lowercase, as the kubelet requires: it refuses
    ``My-Operator:1`` at every Pod start (``InvalidImageName``), while the API server accepts the Deployment. A
    registry host (``Registry.Example.com/``) and a tag (``:V1``) may hold capitals."""
    name = image.partition("@")[0]
    first, slash, rest = name.partition("/")
    path = rest if slash and ("." in first or ":" in first or first == "localhost") else name
    folders, separator, last = path.rpartition("/")
    repository = folders + separator + last.partition(":")[0]
    return repository == repository.lower()


def webhook_service_name(name: str) -> str:
    """The Service in front of operator ``name``'s webhooks (its certificate's Secret adds ``-tls``)."""
    return f"{name}-webhooks"
