"""The API server's rules for an object's metadata: which names, labels, annotations, finalizers and owner references
it stores.

Why this exists: a name, a label or an annotation the API server refuses (``Cache-Config``, a label value of 64
characters, a key with two slashes) fails a reconcile on every cluster whatever the kind's schema says, so
:class:`okt.testing.FakeClient` refuses it too, with the 422 the API server answers. These rules are Kubernetes' own
(``k8s.io/apimachinery``'s validation), pure functions over strings.

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, or nothing; it changes
nothing. Its causes are the API server's (one :class:`okt.errors.StatusCause` per refusal, with the field, the reason
and ``Invalid value: "<value>": <why>``): okt reads them to tell a refused write from a lost race.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.testing import gotext

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_ANNOTATIONS_BYTES = 256 * 1024
"""The most bytes all of an object's annotations (keys and values) may take."""


def _subdomain(name: str, most: int = 253) -> list[str]:
    found = [] if _DNS_SUBDOMAIN.fullmatch(name) else ["a lowercase RFC 1123 subdomain"]
    return found + ([f"must be no more than {most} characters"] if len(name) > most else [])


def _dns_label(name: str) -> list[str]:
    found = [] if _DNS_LABEL.fullmatch(name) else ["a lowercase RFC 1123 label"]
    return found + (["must be no more than 63 characters"] if len(name) > 63 else [])


def _dns_1035_label(name: str) -> list[str]:
    found = [] if _DNS_1035_LABEL.fullmatch(name) else ["a DNS-1035 label (a letter first)"]
    return found + (["must be no more than 63 characters"] if len(name) > 63 else [])


def _path_segment(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be {name!r}"]
    return [f"may not contain {c!r}" for c in "/%" if c in name]


def _cron_job_name(name: str) -> list[str]:
    """A CronJob's Jobs are named after it with an 11-character suffix, within the 63 of a label value."""
    return _subdomain(name, 52)


# Each kind's rule for its names where it is not a DNS subdomain (custom resources' and most kinds' rule).
_NAME_RULES: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("v1", "Service"): _dns_1035_label,
    ("v1", "Namespace"): _dns_label,
    ("v1", "Event"): _path_segment,
    ("rbac.authorization.k8s.io/v1", "Role"): _path_segment,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _path_segment,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): _path_segment,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _path_segment,
    ("policy/v1", "PodDisruptionBudget"): _path_segment,
    ("policy/v1beta1", "PodDisruptionBudget"): _path_segment,
    ("batch/v1", "CronJob"): _cron_job_name,
    ("batch/v1beta1", "CronJob"): _cron_job_name,
}


def _qualified_name(key: str) -> list[str]:
    """A label's or an annotation's key: a name of at most 63 characters, after a DNS subdomain and a ``/``."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name has one '/' at most"]
    *prefix, name = parts
    found = [f"prefix part {why}" for p in prefix for why in (_subdomain(p) if p else ["must be non-empty"])]
    if not _QUALIFIED_NAME.fullmatch(name):
        found.append("name part must be alphanumeric characters, '-', '_' or '.', alphanumeric at each end")
    if len(name) > 63:
        found.append("name part must be no more than 63 characters")
    return found


def _label_value(value: str) -> list[str]:
    found = [] if not value or _QUALIFIED_NAME.fullmatch(value) else ["not a valid label value"]
    return found + (["must be no more than 63 characters"] if len(value) > 63 else [])


def check(kind: kinds.Kind, meta: Mapping[str, Any], *, name: bool = True) -> None:
    """Refuse ``meta`` as the API server would on a write of an object of ``kind``: its name (unless ``name`` is
    False: an existing object's), its labels, its annotations, its finalizers (qualified names; a built-in kind's need
    a ``/`` too, but for Kubernetes' own ``kubernetes``, ``orphan`` and ``foregroundDeletion``) and its owner
    references (``apiVersion``, ``kind``, ``name`` and ``uid`` each set; one controller at most).

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each.
    """
    found: list[tuple[str, Any, str]] = []  # (field, value, why)
    if name:
        rule = _NAME_RULES.get((kind.api_version, kind.kind), _subdomain)
        value = str(meta.get("name", ""))
        found += [("metadata.name", value, why) for why in rule(value)]
    labels = meta.get("labels") or {}
    found += [("metadata.labels", key, why) for key in labels for why in _qualified_name(key)]
    found += [("metadata.labels", value, why) for value in labels.values() for why in _label_value(str(value))]
    annotations = meta.get("annotations") or {}
    found += [("metadata.annotations", key, why) for key in annotations for why in _qualified_name(key.lower())]
    for index, finalizer in enumerate(meta.get("finalizers") or ()):
        found += [("metadata.finalizers", finalizer, why) for why in _qualified_name(str(finalizer))]
        if (
            "/" not in str(finalizer)
            and finalizer not in _STANDARD_FINALIZERS
            and kinds.builtin(kind.api_version, kind.kind)
        ):
            found.append((f"metadata.finalizers[{index}]", finalizer, _NOT_QUALIFIED))
    found += _owner_references(meta.get("ownerReferences") or ())
    causes = [
        errors.StatusCause("FieldValueInvalid", f"Invalid value: {gotext.value(v)}: {why}", f) for f, v, why in found
    ]
    size = sum(len(key.encode()) + len(str(value).encode()) for key, value in annotations.items())
    if size > _ANNOTATIONS_BYTES:
        causes.append(
            errors.StatusCause(
                "FieldValueTooLong", f"Too long: must have at most {_ANNOTATIONS_BYTES} bytes", "metadata.annotations"
            )
        )
    if causes:
        said = ", ".join(f"{cause.field}: {cause.message}" for cause in causes)
        raise errors.ApiError.from_status(
            422, "Invalid", f'{kind.kind} "{meta.get("name", "")}" is invalid: {said}', causes=causes
        )


_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_NOT_QUALIFIED = "name is neither a standard finalizer name nor is it fully qualified"


def _owner_references(references: Any) -> list[tuple[str, Any, str]]:
    """What the API server refuses of ``metadata.ownerReferences``: a reference missing one of its four fields, or
    more than one controller (okt's write path counts on that refusal to never take a child from another controller).
    """
    found: list[tuple[str, Any, str]] = []
    for reference in references:
        for field, said in (("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")):
            if not (reference.get(field) if isinstance(reference, Mapping) else None):
                found.append((f"metadata.ownerReferences.{field}", "", f"{said} must not be empty"))
    controllers = [str(ref.get("name")) for ref in references if isinstance(ref, Mapping) and ref.get("controller")]
    if len(controllers) > 1:
        found.append(
            (
                "metadata.ownerReferences",
                controllers,
                f'Only one reference can have Controller set to true. Found "true" in references for '
                f"{' and '.join(controllers)}",
            )
        )
    return found
