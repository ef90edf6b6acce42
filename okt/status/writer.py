"""Writing status — only when something changed, always with observedGeneration — where the reconciler says it goes.

Why this exists: a status write that changes nothing still bumps resourceVersion and wakes every watcher; Kopf users
know the resulting loops. okt computes the status it wants, compares it with the live one, and writes the difference
(one merge patch, guarded by the resourceVersion it read so a concurrent writer's conditions are never overwritten).

Guarantees: no request when nothing changed; ``status.observedGeneration`` always accompanies a write; a 409 is raised
as :class:`okt.errors.Conflict` for the caller to requeue (the next reconcile reads the other writer's change).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from typing import Any

from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.status import conditions as conditions_mod


class Target(enum.StrEnum):
    """Where a reconciler's conditions and observedGeneration go.

    ``status``: the ``/status`` subresource (custom resources). ``annotations``: JSON in okt's annotations on the
    object, for a primary whose status belongs to another controller or that has no status at all (a ConfigMap).
    ``off``: nowhere — the conditions live only in the reconcile's logs and Events. Built-in kinds default to ``off``:
    the Deployment controller owns a Deployment's status, and a second writer there fights it.
    """

    STATUS = "status"
    ANNOTATIONS = "annotations"
    OFF = "off"

    @classmethod
    def resolve(cls, declared: Target | str | bool | None, api_version: str) -> Target:
        """The target of a reconciler that declared ``declared`` (``True``/``False`` read as status/off, ``None`` as
        the default for its kind).

        Raises:
            ValueError: anything else, with the values that are accepted.
        """
        if declared is None:
            return cls.OFF if api_version and kinds.is_builtin_group(api_version) else cls.STATUS
        if isinstance(declared, bool):
            return cls.STATUS if declared else cls.OFF
        try:
            return cls(declared)
        except ValueError:
            accepted = ", ".join(repr(t.value) for t in cls)
            raise ValueError(f"status = {declared!r}: expected {accepted}, True, False or None") from None


def conditions_annotation(prefix: str) -> str:
    return f"{prefix}/conditions"


def observed_generation_annotation(prefix: str) -> str:
    return f"{prefix}/observed-generation"


def status_annotation(prefix: str) -> str:
    return f"{prefix}/status"


def report_annotations(prefix: str) -> frozenset[str]:
    """The annotation keys the ``annotations`` target writes (changes to them never need a reconcile)."""
    return frozenset({conditions_annotation(prefix), observed_generation_annotation(prefix), status_annotation(prefix)})


def conditions_from_annotations(annotations: Mapping[str, str] | None, prefix: str) -> list[Any]:
    """The conditions list kept in ``<prefix>/conditions``; a missing or unreadable annotation reads as empty."""
    raw = (annotations or {}).get(conditions_annotation(prefix))
    try:
        items = json.loads(raw) if raw else []
    except ValueError:
        return []
    return items if isinstance(items, list) else []


def annotations_patch(
    live: Mapping[str, str] | None,
    conditions: conditions_mod.Conditions,
    generation: int,
    extra: Mapping[str, Any],
    prefix: str,
) -> dict[str, str | None]:
    """The annotations to patch so the object carries the conditions, observedGeneration and ``extra`` (as compact
    JSON); empty when it already does. ``extra`` empty removes ``<prefix>/status``."""
    live = live or {}
    wanted: dict[str, str | None] = {
        conditions_annotation(prefix): _compact(conditions.to_list()),
        observed_generation_annotation(prefix): str(generation),
        status_annotation(prefix): _compact(dict(extra)) if extra else None,
    }
    return {key: value for key, value in wanted.items() if live.get(key) != value}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


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
