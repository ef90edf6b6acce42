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
        """Every annotation okt writes on a primary: changes to them never need a reconcile."""
        return frozenset(
            {
                self.error_count_annotation,
                self.phase_annotation,
                self.conditions_annotation,
                self.observed_generation_annotation,
                self.status_annotation,
            }
        )
