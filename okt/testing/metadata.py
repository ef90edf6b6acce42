"""The API server's rules for an object's metadata: which names, labels, annotations, finalizers and owner references
it stores.

Why this exists: a name, a label or an annotation the API server refuses (``Cache-Config``, a label value of 64
characters, a key with two slashes) fails a reconcile on every cluster whatever the kind's schema says, so
:class:`okt.testing.FakeClient` refuses it too, with the 422 the API server answers. These rules are Kubernetes' own
(``k8s.io/apimachinery``'s validation), pure functions over strings.

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, or nothing; it changes
nothing. Its causes are the API server's (one :class:`okt.errors.StatusCause` per refusal, with the field, the reason
and ``Invalid value: "<value>": <why>``): okt reads them to tell a refused write from a lost race. Each ``<why>`` is
the server's own words, in its order (a length before a pattern), the pattern and its examples included, so a test
matching a message passes on both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.testing import gotext

_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = _DNS_LABEL + r"(\." + _DNS_LABEL + ")*"
_DNS_1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = f"({_QUALIFIED_NAME})?"
_QUALIFIED_CHARACTERS = (
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
"""What a qualified name and a label value must, in the server's words."""
_ANNOTATIONS_BYTES = 256 * 1024
"""The most bytes all of an object's annotations (keys and values) may take."""


def _regex_error(said: str, pattern: str, *examples: str) -> str:
    """Go's ``validation.RegexError``: what a value must be, examples of it and the pattern it must match, in the
    server's words (two spaces after each example's comma, as its code writes them)."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{said} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(most: int) -> str:
    return f"must be no more than {most} characters"


def _matching(value: str, most: int, pattern: str, said: str, *examples: str) -> list[str]:
    """What the server says of ``value`` that must match ``pattern`` and take at most ``most`` characters: its
    length first, as ``IsDNS1123Label`` and the rest check them."""
    found = [_too_long(most)] if len(value) > most else []
    return found + ([] if re.fullmatch(pattern, value) else [_regex_error(said, pattern, *examples)])


def _subdomain(name: str) -> list[str]:
    said = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character"
    )
    return _matching(name, 253, _DNS_SUBDOMAIN, said, "example.com")


def dns_label(name: str) -> list[str]:
    """What the server says of ``name`` where it must be a DNS label (a Namespace's name, a container's)."""
    said = (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character"
    )
    return _matching(name, 63, _DNS_LABEL, said, "my-name", "123-abc")


def _dns_1035_label(name: str) -> list[str]:
    said = (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character"
    )
    return _matching(name, 63, _DNS_1035_LABEL, said, "my-name", "abc-123")


def _path_segment(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be {name!r}"]
    return [f"may not contain {c!r}" for c in "/%" if c in name]


def _cron_job_name(name: str) -> list[str]:
    """A CronJob's Jobs are named after it with an 11-character suffix, within the 63 of a label value: checked after
    the name is checked as any other (a DNS subdomain)."""
    return _subdomain(name) + ([_too_long(52)] if len(name) > 52 else [])


# Each kind's rule for its names where it is not a DNS subdomain (custom resources' and most kinds' rule).
_NAME_RULES: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("v1", "Service"): _dns_1035_label,
    ("v1", "Namespace"): dns_label,
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
    """A label's or an annotation's key, as Go's ``IsQualifiedName`` words what is wrong with it: a name of at most
    63 characters, after a DNS subdomain and a ``/``."""
    parts = key.split("/")
    examples = ("MyName", "my.name", "123-abc")
    characters = _regex_error(f"must {_QUALIFIED_CHARACTERS}", _QUALIFIED_NAME, *examples)
    if len(parts) > 2:
        said = _regex_error(f"a qualified name must {_QUALIFIED_CHARACTERS}", _QUALIFIED_NAME, *examples)
        return [f"{said} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    *prefix, name = parts
    found = [f"prefix part {why}" for p in prefix for why in (_subdomain(p) if p else ["must be non-empty"])]
    if not name:
        found.append("name part must be non-empty")
    elif len(name) > 63:
        found.append(f"name part {_too_long(63)}")
    if not re.fullmatch(_QUALIFIED_NAME, name):
        found.append(f"name part {characters}")
    return found


def _label_value(value: str) -> list[str]:
    said = f"a valid label must be an empty string or {_QUALIFIED_CHARACTERS}"
    return _matching(value, 63, _LABEL_VALUE, said, "MyValue", "my_value", "12345")


def check(kind: kinds.Kind, meta: Mapping[str, Any], *, name: bool = True) -> None:
    """Refuse ``meta`` as the API server would on a write of an object of ``kind``, where :func:`causes` finds a
    refusal.

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each.
    """
    found = causes(kind, meta, name=name)
    if found:
        raise refusal(kind, {"metadata": meta}, found)


def causes(kind: kinds.Kind, meta: Mapping[str, Any], *, name: bool = True) -> list[errors.StatusCause]:
    """What the API server refuses of ``meta`` on a write of an object of ``kind``, one cause each: its name (unless
    ``name`` is False: an existing object's), its labels, its annotations, its owner references (``apiVersion``,
    ``kind``, ``name`` and ``uid`` each set; one controller at most) and its finalizers (qualified names; a built-in
    kind's need a ``/`` too, but for Kubernetes' own ``kubernetes``, ``orphan`` and ``foregroundDeletion``), in the
    server's order."""
    names: list[tuple[str, Any, str]] = []  # (field, value, why)
    if name:
        rule = _NAME_RULES.get((kind.api_version, kind.kind), _subdomain)
        value = str(meta.get("name", ""))
        names += [("metadata.name", value, why) for why in rule(value)]
    # The server's order (ValidateObjectMetaAccessor): the owner references before the finalizers.
    found = _owner_references(meta.get("ownerReferences") or ())
    for index, finalizer in enumerate(meta.get("finalizers") or ()):
        found += [("metadata.finalizers", finalizer, why) for why in _qualified_name(str(finalizer))]
        if (
            "/" not in str(finalizer)
            and finalizer not in _STANDARD_FINALIZERS
            and kinds.builtin(kind.api_version, kind.kind)
        ):
            found.append((f"metadata.finalizers[{index}]", finalizer, _NOT_QUALIFIED))
    return [*_invalid(names), *labels_causes("metadata", meta), *_invalid(found)]


def _invalid(found: list[tuple[str, Any, str]]) -> list[errors.StatusCause]:
    """A cause for each ``(field, value, why)``, in the server's words: ``Invalid value: "<value>": <why>``."""
    return [
        errors.StatusCause("FieldValueInvalid", f"Invalid value: {gotext.value(v)}: {why}", f) for f, v, why in found
    ]


def labels_causes(named: str, meta: Any) -> list[errors.StatusCause]:
    """What the API server refuses of the ``labels`` and ``annotations`` of ``meta`` (an object's metadata, or a Pod
    template's), naming them ``<named>.labels`` and ``<named>.annotations``: a Pod template's are
    ``spec.template.labels``, not ``spec.template.metadata.labels`` (``ValidatePodTemplateSpec`` names them from the
    template). A label or an annotation is checked in the order of the object's keys, where the server's Go walks its
    map in an order of its own, each time another: of several refused, a test should match the set."""
    meta = meta if isinstance(meta, Mapping) else {}
    found: list[tuple[str, Any, str]] = []
    labels = meta.get("labels") or {}
    for key, value in labels.items():
        found += [(f"{named}.labels", key, why) for why in _qualified_name(key)]
        found += [(f"{named}.labels", value, why) for why in _label_value(str(value))]
    annotations = meta.get("annotations") or {}
    found += [(f"{named}.annotations", key, why) for key in annotations for why in _qualified_name(key.lower())]
    refused = _invalid(found)
    size = sum(len(key.encode()) + len(str(value).encode()) for key, value in annotations.items())
    if size > _ANNOTATIONS_BYTES:
        refused.append(
            errors.StatusCause(
                "FieldValueTooLong", f"Too long: must have at most {_ANNOTATIONS_BYTES} bytes", f"{named}.annotations"
            )
        )
    return refused


def refusal(kind: kinds.Kind, obj: Mapping[str, Any], found: list[errors.StatusCause]) -> errors.ApiError:
    """The API server's 422 refusing ``obj``, an object of ``kind``, for the causes ``found``: each written
    ``<field>: <message>``, several bracketed, as the server lists them (a cause found twice, once)."""
    written = list(dict.fromkeys(f"{cause.field}: {cause.message}" for cause in found))
    said = written[0] if len(written) == 1 else f"[{', '.join(written)}]"
    return errors.ApiError.from_status(422, "Invalid", f"{invalid(kind, obj)}: {said}", causes=found)


def invalid(kind: kinds.Kind, obj: Mapping[str, Any]) -> str:
    """The opening of the API server's message refusing ``obj``: its kind qualified by its group but for the core
    group's (``Deployment.apps "web" is invalid``, ``Service "web" is invalid``)."""
    group = kind.api_version.rpartition("/")[0]
    name = (obj.get("metadata") or {}).get("name", "")
    return f'{kind.kind}{"." + group if group else ""} "{name}" is invalid'


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
