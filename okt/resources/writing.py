"""How okt writes a reconciler's children: the terms every write of a child is made on.

Why this exists: the write path (:mod:`okt.resources.apply`) and the writes that finish an apply's work — the
take-over of fields earlier writers hold (:mod:`okt.resources.take_over`), the repair of okt's lists
(:mod:`okt.resources.list_items`) — share the options a reconciler writes its children with, and the one error of a
write whose object was deleted and created again under its name since okt read it. They live here, below all of
them, so that none of them imports the write path.

Guarantees: the options are one frozen value per reconciler; the default writes by server-side apply as field manager
``okt``.
"""

from __future__ import annotations

import dataclasses
import enum

from okt import errors
from okt import names as names_mod
from okt.resources import resource

DEFAULT_FIELD_MANAGER = "okt"


class Strategy(enum.Enum):
    """How okt writes children (see :mod:`okt.resources.apply`)."""

    APPLY = "apply"
    MERGE = "merge"


@dataclasses.dataclass(frozen=True)
class WriteOptions:
    """How a reconciler's children are written: the strategy and, for apply, the field manager."""

    strategy: Strategy = Strategy.APPLY
    field_manager: str = DEFAULT_FIELD_MANAGER
    hash_annotation: str = names_mod.Names().hash_annotation
    """The annotation that holds the child's checksum (from the reconciler's prefix)."""
    legacy_labels: frozenset[str] = frozenset()
    """okt's labels under the reconciler's ``legacy_prefixes``: an update removes those the child carries."""
    legacy_annotations: frozenset[str] = frozenset()
    """okt's annotations under the reconciler's ``legacy_prefixes`` (its checksum): removed the same way."""
    legacy_field_managers: frozenset[str] = frozenset()
    """Field managers an earlier version of the operator wrote children as (the reconciler's
    ``legacy_field_managers``): an apply takes over the fields they own (:func:`okt.resources.take_over.take_over`)."""


def replaced(res: resource.Resource, uid: str | None, exc: errors.ApiError | None = None) -> errors.Conflict:
    """The error of an update refused because the child okt read (``uid``) was deleted and another object created
    under its name since: a conflict, retried soon; the next reconcile reads that object and decides anew."""
    return errors.Conflict(
        409,
        "Conflict",
        f"{res.describe()} was deleted and created again (another uid than {uid}) since okt read it: nothing was "
        "written; the next reconcile decides from the object there now",
        method=exc.method if exc is not None else "",
        url=exc.url if exc is not None else "",
    )
