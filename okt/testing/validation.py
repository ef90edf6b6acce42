"""The API server's rules for fields of Kubernetes' own kinds that may not be set together, whatever the write.

Why this exists: a Deployment whose ``strategy.type`` is ``Recreate`` may not hold a ``rollingUpdate``, and the
defaults of an earlier ``RollingUpdate`` strategy leave one (``maxSurge`` and ``maxUnavailable``, 25% each). Kubernetes
1.20 neither clears it nor lets it through: a create, an update, a merge, JSON or strategic merge patch or an apply that
makes the strategy ``Recreate`` and leaves the ``rollingUpdate`` there is a 422 (``spec.strategy.rollingUpdate:
Forbidden: may not be specified when strategy `type` is 'Recreate'``) — an update must drop it, a merge patch set it to
``null``. A fake that stored it would let a reconciler pass its unit tests that fails on every cluster.
:class:`okt.testing.FakeClient` checks each object it is about to store, once its defaults are filled in
(:mod:`okt.testing.defaults`), against one table, :data:`RULES` (``k8s.io/kubernetes/pkg/apis/*/validation``).

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, one cause each, or nothing;
it changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from okt import errors
from okt.kube import kinds


@dataclasses.dataclass(frozen=True)
class Forbidden:
    """A field the API server refuses (``FieldValueForbidden``) while the mapping that holds it has ``field`` equal
    to ``value``: ``path`` names it from the object's root; a ``null`` is no value (the server decodes it as left
    out)."""

    path: tuple[str, ...]
    field: str
    value: Any
    message: str


RULES: dict[tuple[str, str], tuple[Forbidden, ...]] = {
    ("apps/v1", "Deployment"): (
        Forbidden(
            ("spec", "strategy", "rollingUpdate"),
            "type",
            "Recreate",
            "may not be specified when strategy `type` is 'Recreate'",
        ),
    ),
}
"""Each kind's fields that may not be set together with another's value."""


def check(kind: kinds.Kind, obj: Mapping[str, Any]) -> None:
    """Refuse ``obj`` (an object of ``kind``, as it would be stored: defaults filled in) as the API server's
    validation would, where it breaks a rule of :data:`RULES`.

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each, in the API server's words.
    """
    causes = [
        errors.StatusCause("FieldValueForbidden", f"Forbidden: {rule.message}", ".".join(rule.path))
        for rule in RULES.get((kind.api_version, kind.kind), ())
        if _broken(rule, obj)
    ]
    if causes:
        said = ", ".join(f"{cause.field}: {cause.message}" for cause in causes)
        raise errors.ApiError.from_status(422, "Invalid", f"{invalid(kind, obj)}: {said}", causes=causes)


def invalid(kind: kinds.Kind, obj: Mapping[str, Any]) -> str:
    """The opening of the API server's message refusing ``obj``: its kind qualified by its group but for the core
    group's (``Deployment.apps "web" is invalid``, ``Service "web" is invalid``)."""
    group = kind.api_version.rpartition("/")[0]
    name = (obj.get("metadata") or {}).get("name", "")
    return f'{kind.kind}{"." + group if group else ""} "{name}" is invalid'


def _broken(rule: Forbidden, obj: Mapping[str, Any]) -> bool:
    holder: Any = obj
    for step in rule.path[:-1]:
        holder = holder.get(step) if isinstance(holder, Mapping) else None
    if not isinstance(holder, Mapping):
        return False
    return holder.get(rule.field) == rule.value and holder.get(rule.path[-1]) is not None
