"""``okt gen deploy`` and ``okt gen bundle``: how an operator ships — a kustomize tree and an OLM bundle.

Why it exists: people install operators with ``kubectl apply -k`` (or Flux and Argo CD, which read the same tree) and
with the Operator Lifecycle Manager. Both are made of facts okt already generates — the CRDs from the models, the RBAC
from what the reconcilers own, the Deployment of :mod:`okt.codegen.manager` — so both are generated from them, never
written by hand, and never drift from the code.

The kustomize tree (``--out``, default ``config``)::

    base/kustomization.yaml        crd.yaml, rbac.yaml, metrics.yaml, manager.yaml (+ webhook.yaml with webhooks)
    base/webhook.yaml              the webhooks' Service, configurations and the RBAC to write their caBundle
    base/kustomizeconfig.yaml      with a conversion webhook: namePrefix renames its Service in the CRD too
    base/crd.yaml                  okt gen crd (no such file when every reconciled kind is built in)
    base/rbac.yaml                 okt gen rbac --cluster-wide --leader-elect --no-metrics-auth
    base/metrics.yaml              who may read /metrics: <name>-metrics-auth (bound) and <name>-metrics-reader
    base/manager.yaml              the Deployment, image ``IMAGE_PLACEHOLDER``
    overlays/default/kustomization.yaml   namespace and image: the two things an installation changes
    overlays/default/namespace.yaml

An operator serving some namespaces (``Operator.scope``) has its ClusterRole bound in each of them by
``base/scope/`` (RoleBindings that must stay there); ``overlays/default`` then takes ``install/`` (namespace, image,
``namespace.yaml``) and ``base/scope``, the bindings' ServiceAccount subject following ``install/``'s namespace.

The overlay's ``namespace`` renames the Namespace and moves every namespaced object and the bindings' ServiceAccount
subjects, and the webhook Service's namespace where the configurations and the CRDs' conversion webhooks name it
(kustomize's namespace transformer); the operator finds its Lease namespace from the pod (``$POD_NAMESPACE``), so
nothing else names it.

The OLM bundle (``--out``, default ``bundle``): ``manifests/<name>.clusterserviceversion.yaml`` (owned CRDs, the
``deployment`` install strategy with the Deployment's spec, ``clusterPermissions`` and ``permissions`` from the RBAC
generator's rules), one ``manifests/<crd>.yaml`` per CRD, and ``metadata/annotations.yaml`` (registry+v1). It
supports the ``AllNamespaces`` install mode only: the operator watches every namespace with cluster-wide permissions.

Metrics: the Deployment serves ``/metrics`` on every interface, so over TLS to a bearer token the API server
authenticates and allows to ``get /metrics`` (:mod:`okt.runtime.metrics_auth`). The tree's ``base/metrics.yaml``
(:func:`okt.codegen.rbac.metrics_manifests`) lets the operator review tokens (``<name>-metrics-auth``, bound to its
ServiceAccount) and ships ``<name>-metrics-reader`` for the scraper's ServiceAccount to be bound to; the bundle adds
the review rules to the CSV's ``clusterPermissions`` and ships the reader role as ``manifests/<name>-metrics-reader
.clusterrole.yaml``.

Webhooks: when a reconciler has admission or conversion webhooks, :func:`webhook_manifests` adds
``base/webhook.yaml`` (the Service, the configurations without a CA, and the RBAC with which the operator writes its
own self-signed CA into them and into the conversion webhook of its CRDs at start), the CRD of a reconciler with
``converters`` gets ``spec.conversion.strategy: Webhook`` calling that Service, and the Deployment gets the matching
``okt run`` arguments and ``webhooks`` port. No certificate issuer is needed. The OLM bundle lists them as the CSV's
``webhookdefinitions`` instead (OLM installs webhooks and their certificates itself, and mounts the certificate where
the Deployment's ``okt run --webhook-cert-dir`` reads it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okt.codegen import crd, errors, manager, rbac, yamlout
from okt.codegen import webhooks as codegen_webhooks
from okt.kube import kinds
from okt.reconciler import admission
from okt.reconciler import webhooks as reconciler_webhooks

IMAGE_PLACEHOLDER = "operator"
"""The image name of the base's Deployment; the overlay's ``images`` entry replaces it."""

BUNDLE_NAMESPACE = "operators"
"""The namespace ``okt gen bundle`` generates the operator's facts for. None of them carries it into the bundle (OLM
installs the operator into its OperatorGroup's namespace), so it only has to be valid: one derived from the name
(``<name>-system``) would refuse a name of 57 to 63 characters the bundle's objects take."""

CRD_SERVICE_REFERENCE: dict[str, Any] = {
    "nameReference": [
        {
            "kind": "Service",
            "version": "v1",
            "fieldSpecs": [
                {
                    "kind": "CustomResourceDefinition",
                    "group": "apiextensions.k8s.io",
                    "path": "spec/conversion/webhook/clientConfig/service/name",
                }
            ],
        }
    ]
}
"""The base's ``kustomizeconfig.yaml`` when a CRD has a conversion webhook: kustomize renames a Service where a webhook
configuration names it (``namePrefix``), but not in a CRD's ``spec.conversion`` unless told so (its namespace
transformer already moves the CRD's service namespace)."""

_SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?\Z")
_IMAGE = re.compile(r"^(?P<name>[^\s@]+?)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[^\s@]+))?\Z")
_DIGEST = re.compile(
    r"^(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128}|(?!sha256:|sha512:)[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})$"
)
"""A digest a container runtime pulls by (the OCI image spec's): ``sha256`` with 64 lowercase hexadecimal digits,
``sha512`` with 128; another algorithm with at least 32 (the distribution reference grammar's least)."""


@dataclass(frozen=True)
class Operator:
    """What the artifacts are generated from: the reconcilers and how the operator runs.

    ``scope``: the namespaces and labels the operator serves (every object by default), given once and followed by
    every piece: the Deployment's ``okt run --namespace/--selector`` (and a Lease of its own, ``--lease-name``), the
    admission webhooks' ``namespaceSelector``/``objectSelector``, and, for some namespaces, RoleBindings of the
    operator's ClusterRole in each of them instead of a ClusterRoleBinding (:meth:`rbac`).

    ``reconciler``: the class name ``--reconciler`` chose ``classes`` by, when the operator file holds others: the
    Deployment runs that one alone (``okt run --reconciler``), as the CRDs and the RBAC serve it alone.
    """

    classes: Sequence[type[Any]]
    name: str
    namespace: str
    image: str
    scope: admission.Scope = admission.EVERYTHING
    reconciler: str | None = None

    def __post_init__(self) -> None:
        # Checked first, naming the option: the generator that met the name first named it instead, as a service
        # account's name (okt gen deploy) or as the ClusterServiceVersion's name of a wrong --version (okt gen bundle).
        for option, value in (("--name", self.name), ("--namespace", self.namespace)):
            crd.require_dns_label(option, value)
        # okt run refuses to start two reconcilers under one controller name: nothing is generated for them.
        codegen_webhooks.check_controller_names(self.classes)

    def crds(self) -> list[dict[str, Any]]:
        """The CRDs, one per kind (:func:`okt.codegen.crd.one_per_name`); a reconciler with ``converters`` gets its
        conversion webhook on :meth:`client_config`'s Service. A reconciler of a built-in kind (a Deployment) has
        none: Kubernetes serves its kind."""
        custom = [cls for cls in self.classes if not kinds.is_builtin_group(cls.api_version)]
        return crd.one_per_name(
            custom,
            [
                crd.crd_for_reconciler(cls, codegen_webhooks.conversion_client_config(cls, self.client_config()))
                for cls in custom
            ],
        )

    def rbac(self) -> list[dict[str, Any]]:
        """The ServiceAccount, the ClusterRole of the reconcilers' rules and the leader-election Role, as ``okt gen
        rbac --cluster-wide --leader-elect --lease-name --no-metrics-auth`` writes them for the Lease the Deployment
        names (:meth:`lease_name`: get and update of it alone; the review rules of ``/metrics`` are
        :meth:`metrics_rbac`'s); the ClusterRole is bound in every namespace, or, for an operator serving some
        namespaces (:attr:`scope`), in each of those only (:meth:`scope_bindings`)."""
        documents = rbac.rbac_for_reconcilers(
            self.classes,
            namespace=self.namespace,
            cluster_wide=True,
            leader_elect=True,
            service_account=self.name,
            metrics_auth=False,
            lease_name=self.lease_name(),
        )
        if not self.scope_bindings():
            return documents
        return [doc for doc in documents if (doc["kind"], doc["metadata"]["name"]) != ("ClusterRoleBinding", self.name)]

    def lease_name(self) -> str:
        """The Lease the Deployment's ``okt run --lease-name`` leads on (:func:`okt.codegen.manager.lease_name`)."""
        return manager.lease_name(
            self.name, sorted(self.scope.namespaces or ()), self.scope.label_selector, self.controllers()
        )

    def controllers(self) -> list[str]:
        """The controller names of the reconcilers the Deployment runs, as ``okt run`` names them."""
        return [cls.controller_name() for cls in self.classes]

    def scope_bindings(self) -> list[dict[str, Any]]:
        """For an operator serving some namespaces, the RoleBinding ``<name>`` of its ClusterRole in each of them (none
        when it serves every namespace, or reconciles, owns or watches a cluster-scoped kind, which only a
        ClusterRoleBinding grants)."""
        if not self.scope.namespaces:
            return []
        try:
            rbac.rbac_for_reconcilers(self.classes, namespace=self.namespace, service_account=self.name)
        except errors.CodegenError:  # a cluster-scoped kind: the ClusterRoleBinding stays
            return []
        group = "rbac.authorization.k8s.io"
        return [
            {
                "apiVersion": f"{group}/v1",
                "kind": "RoleBinding",
                "metadata": {"name": self.name, "namespace": watched},
                "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": self.name},
                "subjects": [{"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}],
            }
            for watched in sorted(self.scope.namespaces or ())
        ]

    def metrics_rbac(self) -> list[dict[str, Any]]:
        """Who may read ``/metrics``: the operator reviewing tokens, and the role to bind the scraper to
        (:func:`okt.codegen.rbac.metrics_manifests`)."""
        return rbac.metrics_manifests(self.name, self.namespace)

    def client_config(self) -> codegen_webhooks.ClientConfig:
        """How the API server calls the webhooks: the Service ``<name>-webhooks`` in the operator's namespace."""
        return codegen_webhooks.ClientConfig(service=manager.webhook_service_name(self.name), namespace=self.namespace)

    def endpoints(self) -> tuple[reconciler_webhooks.Endpoint, ...]:
        """Every webhook of the reconcilers: admission (a ``spec_model``, ``check`` or ``default``) and conversion
        (``converters``)."""
        return reconciler_webhooks.all_endpoints(self.classes)

    def has_webhooks(self) -> bool:
        """Whether a reconciler has a webhook of any kind (the Deployment then serves them on its ``webhooks``
        port)."""
        return bool(self.endpoints())

    def has_admission_webhooks(self) -> bool:
        """Whether a reconciler has an admission webhook (a ``spec_model``, ``check`` or ``default``)."""
        return any(endpoint.purpose in _ADMISSION for endpoint in self.endpoints())

    def has_conversion_webhooks(self) -> bool:
        """Whether a reconciler has a conversion webhook (``converters``)."""
        return any(endpoint.purpose is reconciler_webhooks.Purpose.CONVERSION for endpoint in self.endpoints())

    def deployment(self, image: str, *, webhooks: bool = False, webhook_cert_dir: str | None = None) -> dict[str, Any]:
        _namespace, deployment = manager.manager_manifests(
            name=self.name,
            namespace=self.namespace,
            image=image,
            service_account=self.name,
            reconciler=self.reconciler,
            webhooks=webhooks,
            webhook_cert_dir=webhook_cert_dir,
            watch_namespaces=sorted(self.scope.namespaces or ()),
            selector=self.scope.label_selector,
            controllers=self.controllers(),
        )
        return deployment


_ADMISSION = (reconciler_webhooks.Purpose.VALIDATING, reconciler_webhooks.Purpose.MUTATING)


def webhook_manifests(operator: Operator) -> list[dict[str, Any]]:
    """The webhook objects of ``operator`` for the kustomize base (none when it has no webhook).

    The Service ``<name>-webhooks`` in front of the pods' ``webhooks`` port; the Validating/MutatingWebhookConfiguration
    ``<name>`` calling it (when there are admission webhooks), without a ``caBundle`` — the CRDs of reconcilers with
    ``converters`` call it too (:meth:`Operator.crds`). ``okt run --webhook-service --webhook-configuration`` (the
    Deployment's arguments) makes a self-signed certificate for the Service, keeps it in the Secret
    ``<name>-webhooks-tls`` for every replica, and writes its CA into these configurations and into those CRDs'
    conversion webhook at start. The RBAC for that, and nothing more (:func:`okt.codegen.rbac.webhook_ca_rules`):
    ``get`` and ``update`` (the renewal) on that Secret and ``create`` on Secrets of the namespace (a create cannot be
    limited to a name), ``get`` and ``patch`` on these configurations and those CRDs by name.
    """
    if not operator.has_webhooks():
        return []
    client_config = operator.client_config()
    if operator.has_admission_webhooks():
        documents = codegen_webhooks.webhooks_for_reconcilers(
            operator.classes,
            name=operator.name,
            client_config=client_config,
            target_port="webhooks",
            scope=operator.scope,
        )
    else:
        documents = [codegen_webhooks.service(client_config.service, operator.namespace, operator.name, "webhooks")]
    namespaced_rules, cluster_rules = rbac.webhook_ca_rules(
        secret=f"{client_config.service}-tls",
        configuration=operator.name,
        configurations=[f"{doc['kind'].lower()}s" for doc in documents if doc["kind"].endswith("Configuration")],
        crds=codegen_webhooks.conversion_crds(operator.classes),
    )
    role_name = f"{operator.name}-webhooks"
    subject = {"kind": "ServiceAccount", "name": operator.name, "namespace": operator.namespace}
    rbac_group = "rbac.authorization.k8s.io"
    return [
        *documents,
        {
            "apiVersion": f"{rbac_group}/v1",
            "kind": "Role",
            "metadata": {"name": role_name, "namespace": operator.namespace},
            "rules": namespaced_rules,
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
            "rules": cluster_rules,
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
        CodegenError: not an image reference, or one whose digest no runtime pulls by (``@sha256:0a1b``).
    """
    match = _IMAGE.match(image)
    if match is None or not match["name"] or match["name"].endswith("/") or not manager.lowercase_repository(image):
        raise errors.CodegenError(
            f"invalid --image {image!r}: expected a reference such as registry/my-operator:0.1.0 (a lowercase "
            "repository)"
        )
    if match["digest"] and not _DIGEST.match(match["digest"]):
        raise errors.CodegenError(
            f"invalid --image {image!r}: its digest is not one a runtime pulls by (sha256: and 64 lowercase "
            "hexadecimal digits, or sha512: and 128)"
        )
    parts = {"name": IMAGE_PLACEHOLDER, "newName": match["name"]}
    if match["tag"]:
        parts["newTag"] = match["tag"]
    if match["digest"]:
        parts["digest"] = match["digest"]
    return parts


def kustomize_tree(operator: Operator) -> dict[str, str]:
    """The files of the kustomize tree, by path relative to the output folder (pure: nothing is written)."""
    webhooks = webhook_manifests(operator)
    crds = operator.crds()
    # An operator of built-in kinds only has no CRD, and its tree no crd.yaml.
    base_resources = ["crd.yaml"] if crds else []
    base_resources += ["rbac.yaml", "metrics.yaml", "manager.yaml", *(["webhook.yaml"] if webhooks else [])]
    base: dict[str, Any] = {"resources": base_resources}
    if operator.has_conversion_webhooks():
        base["configurations"] = ["kustomizeconfig.yaml"]
    # An operator serving some namespaces is bound in each of them: those RoleBindings stay in their namespaces, so
    # they sit beside the installation (``install/``, whose ``namespace`` would move them), not in it.
    bindings = operator.scope_bindings()
    install = "overlays/default/install/" if bindings else "overlays/default/"
    files = {
        "base/kustomization.yaml": _kustomization(base),
        **({"base/crd.yaml": yamlout.dump_all(crds)} if crds else {}),
        "base/rbac.yaml": yamlout.dump_all(operator.rbac()),
        "base/metrics.yaml": yamlout.dump_all(operator.metrics_rbac()),
        "base/manager.yaml": yamlout.dump_all([operator.deployment(IMAGE_PLACEHOLDER, webhooks=bool(webhooks))]),
        f"{install}kustomization.yaml": _kustomization(
            {
                "namespace": operator.namespace,
                "resources": ["../../../base" if bindings else "../../base", "namespace.yaml"],
                "images": [image_parts(operator.image)],
            }
        ),
        f"{install}namespace.yaml": yamlout.dump_all(
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": operator.namespace}}]
        ),
    }
    if bindings:
        files["base/scope/kustomization.yaml"] = _kustomization({"resources": ["rbac.yaml"]})
        files["base/scope/rbac.yaml"] = yamlout.dump_all(bindings)
        files["overlays/default/kustomization.yaml"] = _kustomization(
            {"resources": ["install", "../../base/scope"], "replacements": [_subject_namespace(operator.name)]}
        )
    if webhooks:
        files["base/webhook.yaml"] = yamlout.dump_all(webhooks)
    if operator.has_conversion_webhooks():
        files["base/kustomizeconfig.yaml"] = yamlout.dump_all([CRD_SERVICE_REFERENCE])
    return files


def bundle(operator: Operator, *, version: str, channel: str = "alpha") -> dict[str, str]:
    """The files of the OLM bundle (registry+v1), by path relative to the output folder (pure).

    Raises:
        CodegenError: the operator's image is not a reference a runtime pulls (see :func:`image_parts`), ``version``
            is not semantic (OLM orders upgrades by it), or makes the ClusterServiceVersion's
            name, ``<name>.v<version>``, other than a DNS name of at most 253 characters (a capital letter, a part
            ending in ``-``) as the API server requires of it; ``channel`` is not a lowercase DNS name of at most
            253 characters (see :func:`check_channel`).
    """
    if not _SEMVER.fullmatch(version):
        raise errors.CodegenError(f"invalid --version {version!r}: OLM wants a semantic version such as 0.1.0")
    check_channel(channel)
    image_parts(operator.image)  # the CSV names the image as given: one no runtime pulls is refused here too
    csv_name = f"{operator.name}.v{version}"
    if not crd.DNS_SUBDOMAIN.fullmatch(csv_name) or len(csv_name) > 253:
        raise errors.CodegenError(
            f"invalid --version {version!r}: the ClusterServiceVersion's name {csv_name} must be a lowercase DNS name "
            "of at most 253 characters, such as my-operator.v0.1.0-rc.1"
        )
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
    (reader,) = [doc for doc in operator.metrics_rbac() if doc["metadata"]["name"].endswith("-metrics-reader")]
    files[f"manifests/{reader['metadata']['name']}.clusterrole.yaml"] = yamlout.dump_all([reader])
    return files


def check_channel(channel: str) -> None:
    """Refuse a channel name OLM cannot subscribe to.

    The bundle's annotations carry it as the channel and the default channel: OLM's catalogs split that annotation
    on commas (``alpha,stable`` is two channels, and no default channel of that name), and OLM v1's ClusterExtension
    accepts only a DNS subdomain of at most 253 characters in ``spec.source.catalog.channels`` — a channel with a
    space, a capital letter or an underscore could be published and never be asked for.

    Raises:
        CodegenError: ``invalid --channel ...``, saying what OLM wants.
    """
    if not crd.DNS_SUBDOMAIN.fullmatch(channel) or len(channel) > 253:
        raise errors.CodegenError(
            f"invalid --channel {channel!r}: OLM wants one channel name, a lowercase DNS name of at most 253 "
            "characters such as alpha, stable or stable-v1"
        )


def cluster_service_version(operator: Operator, crds: Sequence[dict[str, Any]], *, version: str) -> dict[str, Any]:
    """The ClusterServiceVersion: owned CRDs, the Deployment as install strategy, the RBAC rules as permissions, the
    webhooks as ``webhookdefinitions`` (:func:`webhook_definitions`)."""
    roles = operator.rbac()
    cluster_rules = [rule for doc in roles if doc["kind"] == "ClusterRole" for rule in doc["rules"]]
    cluster_rules += rbac.METRICS_AUTH_RULES  # the operator reviews the tokens of /metrics' scrapers
    namespace_rules = [rule for doc in roles if doc["kind"] == "Role" for rule in doc["rules"]]
    deployment = operator.deployment(
        operator.image, webhooks=operator.has_webhooks(), webhook_cert_dir=manager.OLM_CERT_DIR
    )
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
    definitions = webhook_definitions(operator, deployment["metadata"]["name"])
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
            # AllNamespaces only: the Deployment watches every namespace (okt run --all-namespaces, with cluster-wide
            # RBAC), whatever namespaces an OperatorGroup targets; OLM also requires it of a conversion webhook.
            "installModes": [
                {"type": "OwnNamespace", "supported": False},
                {"type": "SingleNamespace", "supported": False},
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
            **({"webhookdefinitions": definitions} if definitions else {}),
        },
    }


def webhook_definitions(operator: Operator, deployment_name: str) -> list[dict[str, Any]]:
    """The CSV's ``webhookdefinitions``: every webhook of the reconcilers, for OLM to install.

    OLM makes the Service in front of ``deployment_name``'s ``targetPort``, a certificate mounted at
    :data:`okt.codegen.manager.OLM_CERT_DIR` (where the Deployment's ``okt run --webhook-cert-dir`` reads it), and
    the Validating/MutatingWebhookConfigurations or the CRDs' ``spec.conversion`` with its CA. An admission webhook
    is the one ``okt gen webhooks`` writes (its name becomes ``generateName``); a conversion webhook lists its CRD
    in ``conversionCRDs`` (OLM requires ``admissionReviewVersions`` and ``sideEffects`` of it too, and takes the
    former as the CRD's ``conversionReviewVersions``).
    """
    common = {
        "deploymentName": deployment_name,
        "containerPort": codegen_webhooks.SERVICE_PORT,
        "targetPort": manager.WEBHOOK_PORT,
    }
    definitions: list[dict[str, Any]] = []
    if operator.has_admission_webhooks():
        documents = codegen_webhooks.webhooks_for_reconcilers(
            operator.classes, name=operator.name, client_config=operator.client_config(), scope=operator.scope
        )
        types = {
            "ValidatingWebhookConfiguration": "ValidatingAdmissionWebhook",
            "MutatingWebhookConfiguration": "MutatingAdmissionWebhook",
        }
        for document in documents:
            for hook in document.get("webhooks") or ():
                fields = {k: v for k, v in hook.items() if k not in ("name", "clientConfig")}
                definitions.append(
                    {
                        "type": types[document["kind"]],
                        "generateName": hook["name"],
                        **common,
                        "webhookPath": hook["clientConfig"]["service"]["path"],
                        **fields,
                    }
                )
    for cls in operator.classes:
        if not any(e.purpose is reconciler_webhooks.Purpose.CONVERSION for e in reconciler_webhooks.endpoints(cls)):
            continue
        primary = crd.primary_of(cls)
        definitions.append(
            {
                "type": "ConversionWebhook",
                "generateName": f"convert.{primary.plural}.{primary.group}",
                **common,
                "webhookPath": reconciler_webhooks.path_of(reconciler_webhooks.Purpose.CONVERSION, cls),
                "conversionCRDs": [f"{primary.plural}.{primary.group}"],
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
            }
        )
    return definitions


def write(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write ``files`` under ``out_dir``, all of them or none; return the paths written, in order.

    Each file is written first beside its place under a temporary name, then all are moved into place: a file that
    cannot be written (a file where its folder goes, a folder where it goes, a full disk) leaves the tree as it was —
    not half new, half old, for kustomize or OLM to take as a whole. The folders made for it are removed again.

    Raises:
        CodegenError: ``cannot write <path>: <why>``, naming the path in the way.
    """
    made: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    try:
        for relative, text in files.items():
            path = out_dir / relative
            _make_folder(path.parent, made)
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((Path(name), path))
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(name, 0o644)
        for temporary, path in staged:
            os.replace(temporary, path)
    except OSError as exc:
        for temporary, _path in staged:
            temporary.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise errors.CodegenError(f"cannot write {exc.filename or out_dir}: {exc.strerror or exc}") from exc
    return [path for _temporary, path in staged]


def _make_folder(folder: Path, made: list[Path]) -> None:
    """Make ``folder`` and the missing folders above it, adding each one made to ``made`` (outermost first).

    Raises:
        NotADirectoryError: a file stands where one of them goes (``mkdir`` would say "File exists" of it).
    """
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    for path in reversed(missing):
        path.mkdir()
        made.append(path)


def _subject_namespace(name: str) -> dict[str, Any]:
    """The replacement that makes the scope's RoleBindings name the ServiceAccount in the namespace ``install/``
    moved it to."""
    return {
        "source": {"kind": "ServiceAccount", "name": name, "fieldPath": "metadata.namespace"},
        "targets": [
            {"select": {"kind": "RoleBinding", "name": name}, "fieldPaths": [f"subjects.[name={name}].namespace"]}
        ],
    }


def _kustomization(fields: dict[str, Any]) -> str:
    return yamlout.dump_all([{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}])
