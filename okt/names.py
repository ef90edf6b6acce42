"""okt's label and annotation names, all in one place and all derived from one prefix (default ``okt.io``).

Why this exists: okt writes a few labels and annotations of its own — on children (the hash, the owner's uid) and on
primaries (the bookkeeping, and the conditions when they go to annotations). Their names must agree between the code
that writes them, the event filter that ignores changes to them and the docs; a reconciler changes them all at once
with its ``prefix``.
"""

from __future__ import annotations

import dataclasses

DEFAULT_PREFIX = "okt.io"


@dataclasses.dataclass(frozen=True)
class Names:
    """The names under one prefix."""

    prefix: str = DEFAULT_PREFIX

    # -- on children ---------------------------------------------------------------------------------------------

    @property
    def hash_annotation(self) -> str:
        """The checksum of what okt wants the child to be."""
        return f"{self.prefix}/okt-hash"

    @property
    def owner_label(self) -> str:
        """The uid of the object okt created the child for (what prunes, with the controller reference)."""
        return f"{self.prefix}/owner-uid"

    # -- on primaries --------------------------------------------------------------------------------------------

    @property
    def error_count_annotation(self) -> str:
        """Consecutive failed reconciles (annotation persistence)."""
        return f"{self.prefix}/error-count"

    @property
    def phase_annotation(self) -> str:
        """The lifecycle phase (annotation persistence)."""
        return f"{self.prefix}/phase"

    @property
    def conditions_annotation(self) -> str:
        """The conditions as JSON, when the reconciler's ``status`` is ``"annotations"``."""
        return f"{self.prefix}/conditions"

    @property
    def observed_generation_annotation(self) -> str:
        return f"{self.prefix}/observed-generation"

    @property
    def status_annotation(self) -> str:
        """``ctx.status_fields`` as JSON, when the reconciler's ``status`` is ``"annotations"``."""
        return f"{self.prefix}/status"

    def primary_annotations(self) -> frozenset[str]:
        """Every annotation okt writes on a primary: changes to them need no reconcile, but for a person's edit of the
        phase (the controller's event filter lets that one through)."""
        return frozenset(
            {
                self.error_count_annotation,
                self.phase_annotation,
                self.conditions_annotation,
                self.observed_generation_annotation,
                self.status_annotation,
            }
        )


REPORTS = frozenset({"error-count", "conditions", "observed-generation"})
"""The names of okt's annotations on a primary that only report: a count of failures, the conditions, a generation
seen. One of them changing is never a reason to reconcile, whatever its prefix."""


def is_report(annotation: str) -> bool:
    """Whether ``annotation`` is one of okt's reports on a primary, under any prefix (``a.example.com/error-count``).

    Why any prefix: two operators built on okt, each with its own prefix, may reconcile the same object (two teams'
    operators of Deployments). While both fail on it, each retry writes its error count; were the other's count a
    change that matters, each write would wake the other at once, past its backoff, and the two would take turns
    without end. ``phase`` and ``status`` are left out: other tools name what a user sets so, and okt rewrites them
    only when they change, not on every retry.
    """
    prefix, slash, name = annotation.rpartition("/")
    return bool(prefix and slash) and name in REPORTS
