"""The API server's rules for the fields of Kubernetes' own kinds that never change in place once the object exists.

Why this exists: a template that changes a Deployment's selector, a StatefulSet's ``volumeClaimTemplates``, a Job's
pod template, a Service's ``clusterIP``, a PersistentVolumeClaim's spec or the data of an ``immutable`` ConfigMap is a
422 on every cluster, every time — okt reports the first as :class:`okt.errors.ImmutableField` and the child stays as
it was. :class:`okt.testing.FakeClient` refuses such a write too, with the API server's causes, so a test that changes
them fails as the operator would (it wrote them before, as asked). These are Kubernetes 1.20's rules
(``k8s.io/kubernetes/pkg/apis/*/validation``), pure functions over plain dicts.

The fields compared here are compared as the server compares them: each side with the defaults Kubernetes 1.20 fills
in (:data:`okt.testing.defaults.DEFAULTS`: a StatefulSet's ``podManagementPolicy: OrderedReady`` and
``revisionHistoryLimit: 10``, its claim templates' ``volumeMode: Filesystem``, a claim's ``volumeMode``, a Job's
``completions: 1``), and a claim's quantities by their amount — a write that spells out a default the server filled in
is no change, as on the server, not a refusal.

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, or nothing; it changes
nothing.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.resources import checksum, quantities
from okt.testing import defaults, gotext, validation

_IMMUTABLE = "field is immutable"
_WHEN_SET = "Forbidden: field is immutable when `immutable` is set"
_STATEFUL_SET_SPEC = (
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are "
    "forbidden"
)
_CLAIM_SPEC = "Forbidden: spec is immutable after creation except resources.requests for bound claims"
_CLUSTER_IP_SET = "may not change once set"
_CLUSTER_IP_UNSET = "primary clusterIP can not be unset"
_CLUSTER_IP_MATCH = "element [0] must match clusterIP"
_STATEFUL_SET_MUTABLE = ("replicas", "template", "updateStrategy")

# The fields of each kind's spec that an update may not change (their cause: FieldValueInvalid, field is immutable).
_SPEC_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps/v1", "Deployment"): ("selector",),
    ("apps/v1", "ReplicaSet"): ("selector",),
    ("apps/v1", "DaemonSet"): ("selector",),
    ("batch/v1", "Job"): ("selector", "template", "completions"),
}


def check(kind: kinds.Kind, live: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse the update of ``live`` into ``new`` (an object of ``kind``) as the API server would where it changes a
    field that never changes (:func:`causes`).

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each.
    """
    found = causes(kind, live, new)
    if found:
        said = ", ".join(f"{cause.field}: {cause.message}" for cause in found)
        name = (live.get("metadata") or {}).get("name", "")
        raise errors.ApiError.from_status(422, "Invalid", f'{kind.kind} "{name}" is invalid: {said}', causes=found)


def causes(kind: kinds.Kind, live: Mapping[str, Any], new: Mapping[str, Any]) -> list[errors.StatusCause]:
    """What the API server refuses of the update of ``live`` into ``new`` (an object of ``kind``) where it changes a
    field that never changes, one cause each: a workload's selector, a Job's pod template and completions, a
    StatefulSet's spec but for its replicas, template and update strategy, a Service's cluster IPs once allocated
    (``new`` as :func:`okt.testing.services.settle` leaves it), a PersistentVolumeClaim's spec but for the
    ``volumeName`` that binds an unbound claim and the storage a bound claim requests, the data of a ConfigMap or a
    Secret marked ``immutable``. Each side is compared with the defaults the server gives it."""
    causes: list[errors.StatusCause] = []
    was, now = _defaulted(kind, live.get("spec") or {}), _defaulted(kind, new.get("spec") or {})
    for field in _SPEC_FIELDS.get((kind.api_version, kind.kind), ()):
        if now.get(field) != was.get(field):
            message = f"Invalid value: {_go_value(field, now.get(field))}: {_IMMUTABLE}"
            causes.append(errors.StatusCause("FieldValueInvalid", message, f"spec.{field}"))
    stateful_set = (kind.api_version, kind.kind) == ("apps/v1", "StatefulSet")
    if stateful_set and _without(now, _STATEFUL_SET_MUTABLE) != _without(was, _STATEFUL_SET_MUTABLE):
        causes.append(errors.StatusCause("FieldValueForbidden", _STATEFUL_SET_SPEC, "spec"))
    if (kind.api_version, kind.kind) == ("v1", "Service"):
        causes += _cluster_ips(was, now)
    if (kind.api_version, kind.kind) == ("v1", "PersistentVolumeClaim"):
        causes += _claim(was, now, bound=((live.get("status") or {}).get("phase") == "Bound"))
    if (kind.api_version, kind.kind) in (("v1", "ConfigMap"), ("v1", "Secret")) and live.get("immutable") is True:
        fields = ("data", "binaryData") if kind.kind == "ConfigMap" else ("data",)
        changed = [field for field in fields if _data(new, field) != _data(live, field)]
        if new.get("immutable") is not True:
            changed.append("immutable")
        causes += [errors.StatusCause("FieldValueForbidden", _WHEN_SET, field) for field in changed]
    return causes


def _go_value(field: str, value: Any) -> str:
    """An immutable field's new value as the server writes it: a field left out (a nil pointer) as ``"null"``, a
    selector as Go's ``%#v`` (:func:`okt.testing.validation.go_selector`)."""
    if value is None:
        return '"null"'
    if field == "selector" and isinstance(value, Mapping):
        return validation.go_selector(value)
    return gotext.value(value)


def _without(spec: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key not in fields}


def _data(obj: Mapping[str, Any], field: str) -> dict[str, Any]:
    """``obj``'s ``field`` as the server stores it: a Secret's ``stringData`` is folded into its ``data`` (encoded)
    before it is validated, so a value written either way is compared as one."""
    data = dict(obj.get(field) or {})
    if field == "data" and obj.get("kind") == "Secret":
        for key, value in (obj.get("stringData") or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    return data


def _defaulted(kind: kinds.Kind, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (a spec) with the defaults the server gives it (:data:`okt.testing.defaults.DEFAULTS`), where it
    leaves them out (a copy): the server compares the two objects once both are defaulted, so spelling out a default
    it filled in changes nothing (the fake's own objects hold them already, those stored with ``put`` too)."""
    filled = defaults.fill({"apiVersion": kind.api_version, "kind": kind.kind, "spec": copy.deepcopy(dict(given))})
    spec: dict[str, Any] = filled["spec"]
    return spec


def _cluster_ips(was: Mapping[str, Any], now: Mapping[str, Any]) -> list[errors.StatusCause]:
    """A Service's cluster IPs never change once allocated (a headless Service's ``None`` included); an ExternalName
    Service has none. Kubernetes 1.20 (single-stack) says it of ``spec.clusterIPs[0]``, whichever of ``clusterIP``
    and ``clusterIPs`` the write changed (the first is written into the second before it is validated: see
    :func:`okt.testing.services.settle`)."""
    if "ExternalName" in (was.get("type"), now.get("type")):
        return []
    old, new = list(was.get("clusterIPs") or []), list(now.get("clusterIPs") or [])
    if old == new == ["None"]:
        return []
    field, value = "spec.clusterIPs[0]", _go_strings(new)
    causes: list[errors.StatusCause] = []
    if len(old) == len(new):
        causes += [
            errors.StatusCause(
                "FieldValueInvalid", f"Invalid value: {value}: {_CLUSTER_IP_SET}", f"spec.clusterIPs[{i}]"
            )
            for i, ip in enumerate(old)
            if ip != new[i]
        ]
    elif len(old) > len(new) and not new:
        causes.append(errors.StatusCause("FieldValueInvalid", f"Invalid value: {value}: {_CLUSTER_IP_UNSET}", field))
    elif old and new[0] != old[0]:
        causes.append(errors.StatusCause("FieldValueInvalid", f"Invalid value: {value}: {_CLUSTER_IP_SET}", field))
    if new and new[0] != (now.get("clusterIP") or ""):
        causes.append(
            errors.StatusCause("FieldValueInvalid", f"Invalid value: {value}: {_CLUSTER_IP_MATCH}", "spec.clusterIPs")
        )
    return causes


def _go_strings(values: list[Any]) -> str:
    """A list of strings as the API server quotes it in a message (Go's ``%#v``)."""
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(gotext.quote(str(value)) for value in values) + "}"


def _amounts(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with each of its quantities as the amount it stands for: the server compares quantities by value, so
    ``1073741824`` written where ``1Gi`` is stored changes no claim (it is stored as written, a change of its text)."""
    found = copy.deepcopy(dict(spec))
    quantities.convert_quantities(found, _amount)
    return found


def _amount(value: Any) -> Any:
    amount = checksum.quantity_amount(value)
    return value if amount is None else amount


def _claim(was: Mapping[str, Any], now: Mapping[str, Any], *, bound: bool) -> list[errors.StatusCause]:
    """A PersistentVolumeClaim's spec never changes once created, but for its ``volumeName`` while it names none (the
    binding of the claim) and, once bound, the storage it requests (an expansion). The server adds a diff of the two
    specs to the message (Go's, of its types); this one names the fields that differ, the write's value then the
    stored one."""
    old, new = copy.deepcopy(dict(was)), copy.deepcopy(dict(now))
    if not old.get("volumeName"):
        old.pop("volumeName", None)
        if "volumeName" in new:
            old["volumeName"] = new["volumeName"]
    if bound:
        storage = ((old.get("resources") or {}).get("requests") or {}).get("storage")
        requests = (new.get("resources") or {}).get("requests")
        if isinstance(requests, dict) and storage is not None:
            requests["storage"] = storage
    causes: list[errors.StatusCause] = []
    old_amounts, new_amounts = _amounts(old), _amounts(new)
    if old_amounts != new_amounts:
        lines = [
            f"{sign}\t{field}: {json.dumps(side.get(field), sort_keys=True)}"
            for field in sorted(set(old) | set(new))
            if old_amounts.get(field) != new_amounts.get(field)
            for sign, side in (("-", new), ("+", old))
        ]
        causes.append(errors.StatusCause("FieldValueForbidden", "\n".join([_CLAIM_SPEC, *lines]), "spec"))
    if was.get("volumeMode") != now.get("volumeMode"):
        # (Kubernetes 1.20 names it without its spec.)
        message = f"Invalid value: {gotext.value(now.get('volumeMode'))}: {_IMMUTABLE}"
        causes.append(errors.StatusCause("FieldValueInvalid", message, "volumeMode"))
    return causes
