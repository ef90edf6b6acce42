"""Writing status through the ``/status`` subresource — only when something changed, always with observedGeneration.

Why this exists: a status write that changes nothing still bumps resourceVersion and wakes every watcher; Kopf users
know the resulting loops. okt computes the status it wants, compares it with the live one, and writes the difference
(one merge patch, guarded by the resourceVersion it read so a concurrent writer's conditions are never overwritten).

Guarantees: no request when nothing changed; ``status.observedGeneration`` always accompanies a write; a 409 is raised
as :class:`okt.errors.Conflict` for the caller to requeue (the next reconcile reads the other writer's change).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.status import conditions as conditions_mod


def desired_status(
    live_status: Mapping[str, Any],
    conditions: conditions_mod.Conditions,
    generation: int,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The status okt wants: the live one, overlaid with ``extra``, the conditions and observedGeneration."""
    status = dict(live_status)
    status.update(extra or {})
    status["conditions"] = conditions.to_list()
    status["observedGeneration"] = generation
    return status


def status_patch(live_status: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch turning ``live_status`` into ``wanted``, at every depth; empty when they are equal.

    Top-level keys only in ``live_status`` are left alone (other writers' fields). Inside a value okt sets, a key of
    a nested map that ``wanted`` no longer has is sent as ``null`` (a merge patch deletes it); otherwise a map that
    lost keys would differ after every write and be written again forever. Lists are replaced whole.
    """
    return _diff(live_status, wanted, top=True)


def _diff(live: Mapping[str, Any], wanted: Mapping[str, Any], top: bool = False) -> dict[str, Any]:
    patch: dict[str, Any] = {} if top else {key: None for key in live if key not in wanted}
    for key, value in wanted.items():
        before = live.get(key)
        if key in live and before == value:
            continue
        if isinstance(before, Mapping) and isinstance(value, Mapping):
            patch[key] = _diff(before, value)
        else:
            patch[key] = value
    return patch


def write(
    client: kube_client.Client,
    kind: kinds.Kind,
    cr: objects.CustomResource,
    wanted: Mapping[str, Any],
    observe: Callable[[Mapping[str, Any]], None],
) -> dict[str, Any] | None:
    """Patch the status subresource with what differs from ``cr.status``; None when nothing differs (no request)."""
    diff = status_patch(cr.status, wanted)
    if not diff:
        return None
    body = {"metadata": {"resourceVersion": cr.resource_version}, "status": diff}
    updated = client.patch(kind, cr.name, body, cr.namespace, subresource="status")
    observe(updated)
    return updated
