"""``okt gen webhooks``: the Validating/MutatingWebhookConfiguration (and Service) that make the API server call okt.

Why it exists: the webhooks a reconciler has are already declared by its code (:mod:`okt.reconciler.webhooks`): a
``spec_model`` or a ``check`` makes a validating one, a ``default`` a mutating one. The configurations must name
exactly those paths, the primary's group, version and plural, and the CA that signed the serving certificate; written
by hand they drift.

Two ways to reach the operator:

* **in a cluster** (the default): a Service ``<name>-webhooks`` in the operator's namespace, port 443 to the pods'
  webhook port (9443, ``okt run --webhook-port``), selecting ``app.kubernetes.io/name: <name>``; the configurations
  name it;
* **by URL** (``--url https://127.0.0.1:9443``: a local ``okt run`` beside a local API server): no Service.

Guarantees: one webhook per reconciler and kind, named ``<validate|default>.<plural>.<group>`` — with the controller's
name after the verb when another reconciler of the set has the same kind, as names are unique in a configuration (a DNS
name: one longer than 253 characters is refused); two reconcilers under one controller name, whose webhooks ``okt run``
would serve at one path and which it refuses to start, are refused here too; ``admissionReviewVersions: [v1]``,
``sideEffects: None``, ``matchPolicy: Equivalent`` (a request in another served version is converted to the reconciled
one first, so the models judge what they know); CREATE and UPDATE of the primary only (never its ``/status``); the
``failurePolicy`` given (``Fail`` by default: no object is admitted unjudged); output is deterministic. The webhook of
a built-in kind leaves out the operator's own workload (its Deployment, ReplicaSets and Pods carry
:data:`okt.names.OPERATOR_LABEL`, which its ``objectSelector`` excludes): under ``Fail``, an operator that is down
would otherwise refuse the very update that fixes its Deployment.

An operator that serves some namespaces or a label selection only (``okt run -n/-l``; another release of it may serve
the others) gets the same scope here: ``scope`` becomes each admission webhook's ``namespaceSelector`` (the namespaces'
``kubernetes.io/metadata.name`` label) and ``objectSelector``, so the API server calls it for its own objects only.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Sequence
from typing import Any, Literal

from okt import names
from okt.codegen import crd, errors
from okt.reconciler import admission, webhooks

FailurePolicy = Literal["Fail", "Ignore"]
SERVICE_PORT = 443
DEFAULT_TARGET_PORT = 9443
DEFAULT_TIMEOUT = 10


@dataclasses.dataclass(frozen=True)
class ClientConfig:
    """How the API server reaches the webhook server: a Service (in a cluster) or a base URL.

    Args:
        url: ``https://host:port`` of the webhook server (no path); None: the Service.
        service: the Service's name (with ``url`` None).
        namespace: the Service's namespace.
        ca_bundle: base64 of the PEM of the CA that signed the serving certificate (None: left out, for a CA
            injector such as cert-manager's to fill in).
    """

    url: str | None = None
    service: str = "operator-webhooks"
    namespace: str = "default"
    ca_bundle: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None and not _callable_base_url(self.url):
            raise errors.CodegenError(
                "a webhook URL is https://HOST[:PORT] (a port of 1 to 65535, no user), no path, query or fragment, "
                f"got {self.url!r}"
            )

    def for_path(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of the webhook served at ``path``."""
        config: dict[str, Any]
        if self.url is not None:
            config = {"url": self.url.rstrip("/") + path}
        else:
            config = {
                "service": {"name": self.service, "namespace": self.namespace, "path": path, "port": SERVICE_PORT}
            }
        if self.ca_bundle:
            config["caBundle"] = self.ca_bundle
        return config


def _callable_base_url(url: str) -> bool:
    """Whether the API server can call okt's webhooks under ``url``: https, a host, a port (if any) that is one, no user
    (the API server refuses one), and nothing after them. okt serves its webhooks at the root of its port
    (/validate/..., /convert/...): a path would be prefixed to theirs, and the API server would call paths nobody
    serves."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is no number or out of range, an unclosed IPv6 bracket
        return False
    return (
        url.startswith("https://")
        and "?" not in url
        and "#" not in url
        and not parts.path.strip("/")
        and bool(parts.hostname)
        and parts.username is None
        and port != 0
        and not any(character.isspace() for character in parts.netloc)
    )


def default_name(cls: type[Any]) -> str:
    """The operator's default name: ``<kind>-operator`` (its ServiceAccount in ``okt gen rbac``, its pods' label)."""
    return f"{crd.primary_of(cls, custom=False).kind.lower()}-operator"


def default_client_config(cls: type[Any], namespace: str = "default") -> ClientConfig:
    """The Service ``<kind>-operator-webhooks`` in ``namespace``, without a CA bundle."""
    return ClientConfig(service=f"{default_name(cls)}-webhooks", namespace=namespace)


def conversion_client_config(cls: type[Any], client_config: ClientConfig) -> dict[str, Any]:
    """The ``clientConfig`` of ``cls``'s conversion webhook (for ``okt gen crd``)."""
    return client_config.for_path(webhooks.path_of(webhooks.Purpose.CONVERSION, cls))


def conversion_crds(classes: Sequence[type[Any]]) -> list[str]:
    """The names (``<plural>.<group>``) of the CRDs of ``classes`` that have a conversion webhook (``converters``)."""
    names = []
    for cls in classes:
        if any(e.purpose is webhooks.Purpose.CONVERSION for e in webhooks.endpoints(cls)):
            primary = crd.primary_of(cls)
            names.append(f"{primary.plural}.{primary.group}")
    return sorted(set(names))


def webhooks_for_reconcilers(
    classes: Sequence[type[Any]],
    *,
    name: str,
    client_config: ClientConfig,
    failure_policy: FailurePolicy = "Fail",
    timeout: int = DEFAULT_TIMEOUT,
    target_port: int | str = DEFAULT_TARGET_PORT,
    scope: admission.Scope = admission.EVERYTHING,
) -> list[dict[str, Any]]:
    """The documents serving the admission webhooks of ``classes``: the Service (without ``client_config.url``), the
    ValidatingWebhookConfiguration and the MutatingWebhookConfiguration (each only when some reconciler needs it);
    the webhooks are called for the objects of ``scope`` only.

    Raises:
        CodegenError: a bad failure policy or timeout, no reconciler has an admission webhook, two reconcilers
            have one controller name (:func:`check_controller_names`), or a webhook's name is not a DNS name of at
            most 253 characters.
    """
    check_controller_names(classes)
    if failure_policy not in ("Fail", "Ignore"):
        raise errors.CodegenError(f"invalid failure policy {failure_policy!r}: expected Fail or Ignore")
    if not 1 <= timeout <= 30:
        raise errors.CodegenError(f"a webhook timeout is 1 to 30 seconds, got {timeout}")
    validating: list[dict[str, Any]] = []
    mutating: list[dict[str, Any]] = []
    kinds = [_kind_of(cls) for cls in classes]
    for cls, kind in zip(classes, kinds, strict=True):
        shared = kinds.count(kind) > 1
        for endpoint in webhooks.endpoints(cls):
            if endpoint.purpose is webhooks.Purpose.VALIDATING:
                validating.append(
                    _webhook("validate", cls, endpoint.path, client_config, failure_policy, timeout, scope, shared)
                )
            elif endpoint.purpose is webhooks.Purpose.MUTATING:
                mutating.append(
                    _webhook("default", cls, endpoint.path, client_config, failure_policy, timeout, scope, shared)
                )
    if not validating and not mutating:
        names = ", ".join(cls.__name__ for cls in classes)
        raise errors.CodegenError(
            f"{names}: no admission webhook to configure (declare a spec_model, or override check() or default())"
        )
    documents: list[dict[str, Any]] = []
    if client_config.url is None:
        documents.append(service(client_config.service, client_config.namespace, name, target_port))
    if validating:
        documents.append(_configuration("ValidatingWebhookConfiguration", name, validating))
    if mutating:
        documents.append(_configuration("MutatingWebhookConfiguration", name, mutating))
    return documents


def scope_of(namespaces: Sequence[str], selector: str | None) -> admission.Scope:
    """The objects the operator serves, as ``okt run -n/-l`` say them (``--watch-namespace``, ``--selector`` of the
    generators), a bad one refused before anything is loaded.

    Raises:
        CodegenError: a namespace that is no DNS label, or a selector the API server cannot read.
    """
    for namespace in namespaces:
        crd.require_dns_label("--watch-namespace", namespace, "shop")
    try:
        return admission.Scope(frozenset(namespaces), selector)
    except ValueError as exc:
        raise errors.CodegenError(f"invalid --selector: {exc}") from None


def check_controller_names(classes: Sequence[type[Any]]) -> None:
    """Refuse two reconcilers under one controller name, as ``okt run`` refuses to start them: their webhooks would
    be served at one path (``/validate/<name>``), and their metrics, logs and Events would be one controller's.

    Raises:
        CodegenError: naming both reconcilers and the name, in one line.
    """
    first: dict[str, type[Any]] = {}
    for cls in classes:
        name = cls.controller_name()
        other = first.setdefault(name, cls)
        if other is cls:
            continue
        defaulted = getattr(cls, "name", None) is None and getattr(other, "name", None) is None
        raise errors.CodegenError(
            f"{other.__name__} and {cls.__name__} are both named {name!r}"
            f"{' (by default: the kind, lowercased)' if defaulted else ''}: okt run refuses to start them, as their "
            "webhook paths, metrics, logs and Events would be one controller's; set name on one of them"
        )


def service(
    service_name: str, namespace: str, app: str, target_port: int | str = DEFAULT_TARGET_PORT
) -> dict[str, Any]:
    """The Service in front of the operator's webhook port (pods labelled ``app.kubernetes.io/name: <app>``; a port
    number, or the name of the pods' container port)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        # Labelled the operator's own: its webhooks of Services leave it out (names.OPERATOR_LABEL).
        "metadata": {
            "name": service_name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": app, names.OPERATOR_LABEL: app},
        },
        "spec": {
            "selector": {"app.kubernetes.io/name": app},
            "ports": [{"name": "webhooks", "port": SERVICE_PORT, "targetPort": target_port, "protocol": "TCP"}],
        },
    }


def _webhook(
    verb: str,
    cls: type[Any],
    path: str,
    client_config: ClientConfig,
    failure_policy: FailurePolicy,
    timeout: int,
    scope: admission.Scope,
    shared: bool = False,
) -> dict[str, Any]:
    primary = crd.primary_of(cls, custom=False)
    # A webhook name has three segments or more, and is unique in its configuration: a kind several reconcilers of
    # the set judge names each one's after its controller.
    verb = f"{verb}.{cls.controller_name()}" if shared else verb
    name = f"{verb}.{primary.plural}.{primary.group or 'core'}"
    if not crd.DNS_SUBDOMAIN.fullmatch(name) or len(name) > 253:
        raise errors.CodegenError(
            f"{cls.__name__}: its webhook's name {name} ({len(name)} characters) must be a lowercase DNS name of at "
            "most 253 characters (shorten the API group, or the controller's name)"
        )
    # An empty selector is every object, as the API server defaults it: left out, as without a scope.
    selected = webhooks.selectors_of(scope, namespaced=primary.namespaced, api_version=cls.api_version)
    chosen = {key: value for key, value in selected.items() if value}
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config.for_path(path),
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        **chosen,
        "rules": [
            {
                "apiGroups": [primary.group],
                "apiVersions": [primary.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [primary.plural],
                "scope": "Namespaced" if primary.namespaced else "Cluster",
            }
        ],
        "sideEffects": "None",
        "timeoutSeconds": timeout,
    }


def _kind_of(cls: type[Any]) -> tuple[str, str]:
    primary = crd.primary_of(cls, custom=False)
    return primary.group, primary.plural


def _configuration(kind: str, name: str, hooks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": sorted(hooks, key=lambda hook: str(hook["name"])),
    }
