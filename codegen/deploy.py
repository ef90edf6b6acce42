"""``okt gen deploy`` and ``okt gen bundle``: how an operator ships — a kustomize tree and an OLM bundle.

Why it exists: people install operators with ``kubectl apply -k`` (or Flux and Argo CD, which read the same tree) and
with the Operator Lifecycle Manager. Both are made of facts okt already generates — the CRDs from the models, the RBAC
from what the reconcilers own, the Deployment of :mod:`okt.codegen.manager` — so both are generated from them, never
written by hand, and never drift from the code.

The kustomize tree (``--out``, default ``config``)::

    base/kustomization.yaml        crd.yaml, rbac.yaml, manager.yaml (+ webhook.yaml when the operator has webhooks)
    base/webhook.yaml              the webhooks' Service, configurations and the RBAC to write their caBundle
    base/crd.yaml                  okt gen crd
    base/rbac.yaml                 okt gen rbac --cluster-wide --leader-elect
    base/manager.yaml              the Deployment, image ``IMAGE_PLACEHOLDER``
    overlays/default/kustomization.yaml   namespace and image: the two things an installation changes
    overlays/default/namespace.yaml

The overlay's ``namespace`` renames the Namespace and moves every namespaced object and the bindings' ServiceAccount
subjects (kustomize's namespace transformer); the operator finds its Lease namespace from the pod
(``$POD_NAMESPACE``), so nothing else names it.

The OLM bundle (``--out``, default ``bundle``): ``manifests/<name>.clusterserviceversion.yaml`` (owned CRDs, the
``deployment`` install strategy with the Deployment's spec, ``clusterPermissions`` and ``permissions`` from the RBAC
generator's rules), one ``manifests/<crd>.yaml`` per CRD, and ``metadata/annotations.yaml`` (registry+v1).

Webhooks: when a reconciler has admission webhooks, :func:`webhook_manifests` adds ``base/webhook.yaml`` (the
Service, the configurations without a CA, and the RBAC with which the operator writes its own self-signed CA into
them at start) and the Deployment gets the matching ``okt run`` arguments and ``webhooks`` port. No certificate
issuer is needed. The OLM bundle leaves them out (OLM installs webhooks and their certificates itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okt.codegen import crd, errors, manager, rbac, yamlout
from okt.codegen import webhooks as codegen_webhooks
from okt.reconciler import webhooks as reconciler_webhooks

IMAGE_PLACEHOLDER = "operator"
"""The image name of the base's Deployment; the overlay's ``images`` entry replaces it."""

_SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
_IMAGE = re.compile(r"^(?P<name>[^\s@]+?)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[\w+.-]+:[0-9a-fA-F]+))?$")


@dataclass(frozen=True)
class Operator:
    """What the artifacts are generated from: the reconcilers and how the operator runs."""

    classes: Sequence[type[Any]]
    name: str
    namespace: str
    image: str

    def crds(self) -> list[dict[str, Any]]:
        return [crd.crd_for_reconciler(cls) for cls in self.classes]

    def rbac(self) -> list[dict[str, Any]]:
        return rbac.rbac_for_reconcilers(
            self.classes, namespace=self.namespace, cluster_wide=True, leader_elect=True, service_account=self.name
        )

    def has_webhooks(self) -> bool:
        """Whether a reconciler has an admission webhook (a ``spec_model``, ``check`` or ``default``)."""
        return any(
            endpoint.purpose in (reconciler_webhooks.Purpose.VALIDATING, reconciler_webhooks.Purpose.MUTATING)
            for cls in self.classes
            for endpoint in reconciler_webhooks.endpoints(cls)
        )

    def deployment(self, image: str, *, webhooks: bool = False) -> dict[str, Any]:
        _namespace, deployment = manager.manager_manifests(
            name=self.name, namespace=self.namespace, image=image, service_account=self.name, webhooks=webhooks
        )
        return deployment


def webhook_manifests(operator: Operator) -> list[dict[str, Any]]:
    """The webhook objects of ``operator`` for the kustomize base (none when it has no admission webhook).

    The Service ``<name>-webhooks`` in front of the pods' ``webhooks`` port; the Validating/MutatingWebhookConfiguration
    ``<name>`` calling it, without a ``caBundle``: ``okt run --webhook-service --webhook-configuration`` (the
    Deployment's arguments) makes a self-signed certificate for the Service, keeps it in the Secret
    ``<name>-webhooks-tls`` for every replica, and writes its CA into these configurations at start. The RBAC for
    that, and nothing more: ``get`` on that Secret and ``create`` on Secrets of the namespace (a create cannot be
    limited to a name), ``get`` and ``patch`` on these two configurations by name.
    """
    if not operator.has_webhooks():
        return []
    service = manager.webhook_service_name(operator.name)
    client_config = codegen_webhooks.ClientConfig(service=service, namespace=operator.namespace)
    documents = codegen_webhooks.webhooks_for_reconcilers(
        operator.classes, name=operator.name, client_config=client_config, target_port="webhooks"
    )
    configurations = sorted(f"{doc['kind'].lower()}s" for doc in documents if doc["kind"].endswith("Configuration"))
    role_name = f"{operator.name}-webhooks"
    subject = {"kind": "ServiceAccount", "name": operator.name, "namespace": operator.namespace}
    rbac_group = "rbac.authorization.k8s.io"
    return [
        *documents,
        {
            "apiVersion": f"{rbac_group}/v1",
            "kind": "Role",
            "metadata": {"name": role_name, "namespace": operator.namespace},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": [f"{service}-tls"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
            ],
        },
        {
            "apiVersion": f"{rbac_group}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role_name, "namespace": operator.namespace},
            "roleRef": {"apiGroup": rbac_group, "kind": "Role", "name": role_name},
            "subjects": [subject],
        },
        {
            "apiVersion": f"{rbac_group}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role_name},
            "rules": [
                {
                    "apiGroups": ["admissionregistration.k8s.io"],
                    "resources": configurations,
                    "verbs": ["get", "patch"],
                    "resourceNames": [operator.name],
                }
            ],
        },
        {
            "apiVersion": f"{rbac_group}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role_name},
            "roleRef": {"apiGroup": rbac_group, "kind": "ClusterRole", "name": role_name},
            "subjects": [subject],
        },
    ]


def image_parts(image: str) -> dict[str, str]:
    """An image reference as kustomize's ``images`` entry wants it: ``newName`` and ``newTag`` or ``digest``.

    Raises:
        CodegenError: not an image reference.
    """
    match = _IMAGE.match(image)
    if match is None or not match["name"] or match["name"].endswith("/"):
        raise errors.CodegenError(f"invalid --image {image!r}: expected a reference such as registry/my-operator:0.1.0")
    parts = {"name": IMAGE_PLACEHOLDER, "newName": match["name"]}
    if match["tag"]:
        parts["newTag"] = match["tag"]
    if match["digest"]:
        parts["digest"] = match["digest"]
    return parts


def kustomize_tree(operator: Operator) -> dict[str, str]:
    """The files of the kustomize tree, by path relative to the output folder (pure: nothing is written)."""
    webhooks = webhook_manifests(operator)
    base_resources = ["crd.yaml", "rbac.yaml", "manager.yaml", *(["webhook.yaml"] if webhooks else [])]
    files = {
        "base/kustomization.yaml": _kustomization({"resources": base_resources}),
        "base/crd.yaml": yamlout.dump_all(operator.crds()),
        "base/rbac.yaml": yamlout.dump_all(operator.rbac()),
        "base/manager.yaml": yamlout.dump_all([operator.deployment(IMAGE_PLACEHOLDER, webhooks=bool(webhooks))]),
        "overlays/default/kustomization.yaml": _kustomization(
            {
                "namespace": operator.namespace,
                "resources": ["../../base", "namespace.yaml"],
                "images": [image_parts(operator.image)],
            }
        ),
        "overlays/default/namespace.yaml": yamlout.dump_all(
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": operator.namespace}}]
        ),
    }
    if webhooks:
        files["base/webhook.yaml"] = yamlout.dump_all(webhooks)
    return files


def bundle(operator: Operator, *, version: str, channel: str = "alpha") -> dict[str, str]:
    """The files of the OLM bundle (registry+v1), by path relative to the output folder (pure).

    Raises:
        CodegenError: ``version`` is not semantic (OLM orders upgrades by it).
    """
    if not _SEMVER.match(version):
        raise errors.CodegenError(f"invalid --version {version!r}: OLM wants a semantic version such as 0.1.0")
    crds = operator.crds()
    files = {
        f"manifests/{operator.name}.clusterserviceversion.yaml": yamlout.dump_all(
            [cluster_service_version(operator, crds, version=version)]
        ),
        "metadata/annotations.yaml": yamlout.dump_all(
            [
                {
                    "annotations": {
                        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
                        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
                        "operators.operatorframework.io.bundle.package.v1": operator.name,
                        "operators.operatorframework.io.bundle.channels.v1": channel,
                        "operators.operatorframework.io.bundle.channel.default.v1": channel,
                    }
                }
            ]
        ),
    }
    for document in crds:
        files[f"manifests/{document['metadata']['name']}.yaml"] = yamlout.dump_all([document])
    return files


def cluster_service_version(operator: Operator, crds: Sequence[dict[str, Any]], *, version: str) -> dict[str, Any]:
    """The ClusterServiceVersion: owned CRDs, the Deployment as install strategy, the RBAC rules as permissions."""
    roles = operator.rbac()
    cluster_rules = [rule for doc in roles if doc["kind"] == "ClusterRole" for rule in doc["rules"]]
    namespace_rules = [rule for doc in roles if doc["kind"] == "Role" for rule in doc["rules"]]
    deployment = operator.deployment(operator.image)
    owned = [
        {
            "name": document["metadata"]["name"],
            "version": served["name"],
            "kind": document["spec"]["names"]["kind"],
            "displayName": document["spec"]["names"]["kind"],
            "description": f"{document['spec']['names']['kind']}, reconciled by {operator.name}",
        }
        for document in crds
        for served in document["spec"]["versions"]
    ]
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{operator.name}.v{version}",
            "annotations": {"capabilities": "Basic Install", "containerImage": operator.image},
        },
        "spec": {
            "displayName": operator.name,
            "description": f"{operator.name}: a Kubernetes operator written with okt.",
            "version": version,
            "maturity": "alpha",
            "minKubeVersion": "1.20.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": True},
                {"type": "SingleNamespace", "supported": True},
                {"type": "MultiNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": True},
            ],
            "customresourcedefinitions": {"owned": owned},
            "install": {
                "strategy": "deployment",
                "spec": {
                    "clusterPermissions": [{"serviceAccountName": operator.name, "rules": cluster_rules}],
                    "permissions": [{"serviceAccountName": operator.name, "rules": namespace_rules}],
                    "deployments": [{"name": deployment["metadata"]["name"], "spec": deployment["spec"]}],
                },
            },
        },
    }


def write(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write ``files`` under ``out_dir``; return the paths written, in order."""
    written: list[Path] = []
    try:
        for relative, text in files.items():
            path = out_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise errors.CodegenError(f"cannot write {exc.filename or out_dir}: {exc.strerror or exc}") from exc
    return written


def _kustomization(fields: dict[str, Any]) -> str:
    return yamlout.dump_all([{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}])
