"""Which webhooks a reconciler has, and where they are served: one declaration read by the server and the generators.

Why this exists: ``okt run`` serves the webhooks, ``okt gen webhooks`` and ``okt gen crd`` write the configurations
that make the API server call them; both must agree on what exists and on the URL paths, or the API server calls a
path nobody serves. Nothing here is declared twice: a reconciler gets

* a **validating** webhook when it has a ``spec_model`` or overrides ``check(ctx)`` (a bad spec is refused at
  admission with the message ``Ready=False`` would carry);
* a **mutating** webhook when it overrides ``default(obj)``;
* a **conversion** webhook when it declares ``converters`` between the versions of ``spec_models``.

Paths are ``/validate/<controller>``, ``/mutate/<controller>`` and ``/convert/<controller>`` (the controller's name,
as in logs and metrics).

Which objects the API server sends to an admission webhook is the operator's scope (:class:`admission.Scope`: the
namespaces and the label selector of ``okt run``), said as the webhook's ``namespaceSelector`` and ``objectSelector``
(:func:`selectors_of`), so that objects another instance of the operator serves are not even sent to this one; a
webhook of a built-in kind also leaves out the operator's own workload (:data:`okt.names.OPERATOR_LABEL`), so that it
never locks out the Deployment that serves it.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from okt import names as names_mod
from okt.kube import kinds, selectors
from okt.reconciler import admission
from okt.reconciler import reconciler as reconciler_mod

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label every namespace carries with its own name (set by the API server since Kubernetes 1.21)."""


class Purpose(enum.Enum):
    """What a webhook okt serves does (the first segment of its path)."""

    VALIDATING = "validate"
    MUTATING = "mutate"
    CONVERSION = "convert"


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One webhook of one reconciler: what it does and the path it is served on."""

    purpose: Purpose
    reconciler: type[reconciler_mod.Reconciler]

    @property
    def path(self) -> str:
        return path_of(self.purpose, self.reconciler)


def path_of(purpose: Purpose, reconciler: type[reconciler_mod.Reconciler]) -> str:
    """The URL path of ``reconciler``'s webhook for ``purpose``."""
    return f"/{purpose.value}/{reconciler.controller_name()}"


def endpoints(reconciler: type[reconciler_mod.Reconciler]) -> tuple[Endpoint, ...]:
    """The webhooks ``reconciler`` declares (see the module docstring), in a fixed order."""
    found: list[Endpoint] = []
    if reconciler.spec_model is not None or _overrides(reconciler, "check"):
        found.append(Endpoint(Purpose.VALIDATING, reconciler))
    if _overrides(reconciler, "default"):
        found.append(Endpoint(Purpose.MUTATING, reconciler))
    if reconciler.converters:
        found.append(Endpoint(Purpose.CONVERSION, reconciler))
    return tuple(found)


def all_endpoints(reconcilers: Any) -> tuple[Endpoint, ...]:
    """The webhooks of every reconciler of ``reconcilers`` (a sequence of classes)."""
    return tuple(e for r in reconcilers for e in endpoints(r))


def selectors_of(scope: admission.Scope, *, namespaced: bool, api_version: str) -> dict[str, dict[str, Any]]:
    """The ``namespaceSelector`` and ``objectSelector`` of an admission webhook called only for the objects of
    ``scope`` (``{}``: every one) of a kind ``namespaced`` or not, in ``api_version``.

    The namespaces are matched by their ``kubernetes.io/metadata.name`` label (for a cluster-scoped kind, whose
    objects have no namespace, none is said). A label selector term no LabelSelector can say (``k>n``, ``k<n``) is
    left out: the webhook is called for some more objects, and admits them untouched
    (:mod:`okt.reconciler.admission`).

    A kind of Kubernetes itself (:func:`okt.kube.kinds.is_builtin_group`: a Deployment, a Pod, a Secret) is one the
    operator's own workload may be made of: objects labelled :data:`okt.names.OPERATOR_LABEL` are left out, so that
    an operator that is down never refuses the update of its own Deployment, nor the creation of its ReplicaSets and
    Pods (see there). A custom kind's webhooks are left as they were: okt makes no object of one for itself.
    """
    namespace_selector: dict[str, Any] = {}
    if scope.namespaces and namespaced:
        names = sorted(scope.namespaces)
        namespace_selector = {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": names}]}
    object_selector = selectors.label_selector(scope.label_selector)
    expressions = list(object_selector.get("matchExpressions") or ())
    # A scope that names the label itself (-l okt.io/operator=...) says which of those objects the operator serves.
    if kinds.is_builtin_group(api_version) and all(e["key"] != names_mod.OPERATOR_LABEL for e in expressions):
        expressions.append({"key": names_mod.OPERATOR_LABEL, "operator": "DoesNotExist"})
        object_selector = {**object_selector, "matchExpressions": expressions}
    return {"namespaceSelector": namespace_selector, "objectSelector": object_selector}


def _overrides(reconciler: type[reconciler_mod.Reconciler], hook: str) -> bool:
    return getattr(reconciler, hook) is not getattr(reconciler_mod.Reconciler, hook)
