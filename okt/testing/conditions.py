"""Read a condition off an object as the API server returned it — what most assertions about an operator look at.

Why this exists: ``status.conditions`` is a list, so "is it Ready?" is a search every test would otherwise write
again (and most would write without the guards an object in a bad state needs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def condition(obj: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The condition of type ``type_`` in ``obj["status"]["conditions"]`` (a copy), or None.

    Never raises on odd input: no object, no status, a status or conditions of the wrong shape all give None, so a
    predicate for :func:`okt.testing.wait_for` can be written as
    ``(condition(kube.get_or_none(kind, name, ns), "Ready") or {}).get("status") == "True"``.
    """
    status = (obj or {}).get("status")
    items = status.get("conditions") if isinstance(status, Mapping) else None
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("type") == type_:
            return dict(item)
    return None
