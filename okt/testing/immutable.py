"""The API server's rules for the fields of Kubernetes' own kinds that never change in place once the object exists.

Why this exists: a template that changes a Deployment's selector, a StatefulSet's ``volumeClaimTemplates``, a Job's
pod template or the data of an ``immutable`` ConfigMap is a 422 on every cluster, every time — okt reports the first
as :class:`okt.errors.ImmutableField` and the child stays as it was. :class:`okt.testing.FakeClient` refuses such a
write too, with the API server's causes, so a test that changes them fails as the operator would (it wrote them
before, as asked). These are Kubernetes 1.20's rules (``k8s.io/kubernetes/pkg/apis/*/validation``), pure functions
over plain dicts; a field the server defaults is compared as the write gives it (the fake defaults nothing).

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, or nothing; it changes
nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from okt import errors
from okt.kube import kinds

_IMMUTABLE = "field is immutable"
_WHEN_SET = "Forbidden: field is immutable when `immutable` is set"
_STATEFUL_SET_SPEC = (
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are "
    "forbidden"
)
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
    field that never changes: a workload's selector, a Job's pod template and completions, a StatefulSet's spec but
    for its replicas, template and update strategy, the data of a ConfigMap or a Secret marked ``immutable``.

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each.
    """
    causes: list[errors.StatusCause] = []
    was, now = live.get("spec") or {}, new.get("spec") or {}
    for field in _SPEC_FIELDS.get((kind.api_version, kind.kind), ()):
        if now.get(field) != was.get(field):
            message = f"Invalid value: {json.dumps(now.get(field), sort_keys=True)}: {_IMMUTABLE}"
            causes.append(errors.StatusCause("FieldValueInvalid", message, f"spec.{field}"))
    stateful_set = (kind.api_version, kind.kind) == ("apps/v1", "StatefulSet")
    if stateful_set and _without(now, _STATEFUL_SET_MUTABLE) != _without(was, _STATEFUL_SET_MUTABLE):
        causes.append(errors.StatusCause("FieldValueForbidden", _STATEFUL_SET_SPEC, "spec"))
    if (kind.api_version, kind.kind) in (("v1", "ConfigMap"), ("v1", "Secret")) and live.get("immutable") is True:
        fields = ("data", "binaryData") if kind.kind == "ConfigMap" else ("data",)
        changed = [field for field in fields if _data(new, field) != _data(live, field)]
        if new.get("immutable") is not True:
            changed.append("immutable")
        causes += [errors.StatusCause("FieldValueForbidden", _WHEN_SET, field) for field in changed]
    if causes:
        said = ", ".join(f"{cause.field}: {cause.message}" for cause in causes)
        name = (live.get("metadata") or {}).get("name", "")
        raise errors.ApiError.from_status(422, "Invalid", f'{kind.kind} "{name}" is invalid: {said}', causes=causes)


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
