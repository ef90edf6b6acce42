"""Resource quantities in the apply bodies of built-in kinds: numbers sent as text, and marked for the drift check.

Why this exists: a template's ``cpu: 1`` or ``memory: 1024`` is a number once YAML has read it, and server-side apply
refuses a number where a quantity goes, though a create or a merge patch takes it; and the server stores a quantity in
its canonical form (``1024`` as ``"1Ki"``), which a plain comparison reads as drift. So the write path sends each
quantity of a built-in kind as its text (:func:`quantity_text`), and the drift check compares it marked as a quantity
(:func:`marked_quantity`, :class:`okt.resources.checksum.Quantity`).

Guarantees: only the quantity fields of built-in kinds are touched, and only numbers are converted; the hash of the
desired object keeps the number, so converting changes neither what the server stores nor okt's checksum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from okt.resources import checksum

_QUANTITY_FIELDS = frozenset({"hard", "capacity", "overhead", "podFixed", "sizeLimit", "maximumVolumeSize"})
"""Keys of built-in kinds whose value is a quantity, or maps names to quantities: a ResourceQuota's ``hard``, a
PersistentVolume's ``capacity``, a Pod's ``overhead``, a RuntimeClass's ``overhead.podFixed``, an emptyDir's
``sizeLimit``, a CSIStorageCapacity's ``capacity`` and ``maximumVolumeSize``. A ``resources`` map's ``limits`` and
``requests`` (a container's, a Pod's, a PersistentVolumeClaim's) are quantities too, and so are a LimitRange's and an
autoscaler's metric targets."""
_LIMIT_RANGE_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def convert_quantities(body: dict[str, Any], convert: Callable[[Any], Any]) -> None:
    """Pass each value of a resource quantity field of a built-in kind through ``convert``: :func:`quantity_text`
    writes each number as the text JSON gives it (``cpu: 0.5`` is sent as ``"0.5"``), :func:`marked_quantity` marks
    each quantity for the drift check.

    A template's ``cpu: 1`` or ``memory: 1024`` is a number once YAML has read it, and server-side apply refuses a
    number where a quantity goes (``expected string``), though a create or a merge patch takes it. The text is the
    same quantity, so the server stores what it stored from the number, and okt's hash (of the desired object, which
    keeps the number) and its drift check (which matches a number with its canonical quantity) stay what they were.
    """
    _quantity_fields(body, convert)
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    if body.get("kind") == "LimitRange" and isinstance(spec.get("limits"), list):
        for item in spec["limits"]:
            if isinstance(item, dict):
                for key in _LIMIT_RANGE_FIELDS:
                    if key in item:
                        item[key] = _quantities(item[key], convert)
    if body.get("kind") == "HorizontalPodAutoscaler" and isinstance(spec.get("metrics"), list):
        # Each metric's source (``resource``, ``pods``, ``object``, ``external``, ``containerResource``): the
        # ``target``'s ``value``/``averageValue`` (v2, v2beta2), or its ``targetValue``/``targetAverageValue``
        # (v2beta1; an ``object`` source's ``averageValue`` too).
        metrics = [metric for metric in spec["metrics"] if isinstance(metric, dict)]
        for source in [source for metric in metrics for source in metric.values() if isinstance(source, dict)]:
            target = source.get("target")
            for holder, keys in (
                (target, ("value", "averageValue")),
                (source, ("targetValue", "targetAverageValue", "averageValue")),
            ):
                if isinstance(holder, dict):
                    for key in keys:
                        if key in holder:
                            holder[key] = convert(holder[key])


def _quantity_fields(value: Any, convert: Callable[[Any], Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "resources" and isinstance(item, dict):
                for field in ("limits", "requests"):
                    if isinstance(item.get(field), dict):
                        item[field] = _quantities(item[field], convert)
            elif key in _QUANTITY_FIELDS:
                value[key] = _quantities(item, convert)
            _quantity_fields(value[key], convert)
    elif isinstance(value, list):
        for item in value:
            _quantity_fields(item, convert)


def _quantities(value: Any, convert: Callable[[Any], Any]) -> Any:
    """A quantity field's value (the value, or a mapping's values) passed through ``convert``."""
    if isinstance(value, dict):
        return {key: convert(item) for key, item in value.items()}
    return convert(value)


def quantity_text(value: Any) -> Any:
    """A number as the text JSON writes it (what :func:`okt.resources.checksum.canonical_quantity` reads); anything
    else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return value
    return str(value) if isinstance(value, int) else repr(value)


def marked_quantity(value: Any) -> Any:
    """A quantity as the drift check compares it: its :func:`quantity_text`, marked as a quantity; anything else
    (a boolean, a mapping) as it is."""
    text = quantity_text(value)
    return checksum.Quantity(text) if isinstance(text, str) else text
