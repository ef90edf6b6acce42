"""okt's label and annotation names, all in one place and all derived from one prefix (default ``okt.io``).

Why this exists: okt writes a few labels and annotations of its own — on children (the hash, the owner's uid) and on
primaries (the bookkeeping, and the conditions when they go to annotations). Their names must agree between the code
that writes them, the event filter that ignores changes to them and the docs; a reconciler changes them all at once
with its ``prefix``.
"""

from __future__ import annotations

import dataclasses
import functools

DEFAULT_PREFIX = "okt.io"

OPERATOR_LABEL = f"{DEFAULT_PREFIX}/operator"
"""The label of the operator's own workload (``okt gen deploy``: its Deployment, the Pods of its template and so their
ReplicaSets, its Namespace and webhook Service; the certificate Secret ``okt run --webhook-service`` makes), valued with
the operator's name (the Secret: with its Service's).

Why: an admission webhook of a built-in kind (an operator of Deployments, of Pods) would otherwise judge the operator's
own objects, under ``failurePolicy: Fail``: with the operator down, the update that would fix its Deployment, the
creation of its ReplicaSet and Pods, are all refused, as nothing answers — a deadlock only deleting the webhook
configuration ends. Such a webhook's ``objectSelector`` leaves out every object carrying this label
(:func:`okt.reconciler.webhooks.selectors_of`). One key for every operator, whatever its reconcilers' ``prefix``: the
workload is one per operator, however many prefixes its reconcilers use, and an okt operator never judges another's
workload either (two operators down, each refusing the other's fix). A key of its own, not ``app.kubernetes.io/name``:
kustomize's ``commonLabels`` rewrites that one's value, ``namePrefix`` the names, and neither touches this key."""


@dataclasses.dataclass(frozen=True)
class Names:
    """The names under one prefix, and the earlier prefixes whose records okt takes over (``legacy_prefixes``).

    Each name is made once per instance (the fields never change), and :func:`of` shares one instance per prefixes:
    a reconcile reads them several times for every child, and every reconcile the same ones."""

    prefix: str = DEFAULT_PREFIX
    legacy_prefixes: tuple[str, ...] = ()
    """Prefixes an earlier version of the operator used: what okt wrote under them is okt's, read where the current
    name is missing and removed by okt's next write of the object."""

    # -- on children ---------------------------------------------------------------------------------------------

    @functools.cached_property
    def hash_annotation(self) -> str:
        """The checksum of what okt wants the child to be."""
        return f"{self.prefix}/okt-hash"

    @functools.cached_property
    def owner_label(self) -> str:
        """The uid of the object okt created the child for (what prunes, with the controller reference)."""
        return f"{self.prefix}/owner-uid"

    @functools.cached_property
    def owner_labels(self) -> tuple[str, ...]:
        """The owner label under the prefix, then under each legacy prefix: a child carrying any of them with the
        owner's uid is okt's."""
        return (self.owner_label, *(f"{prefix}/owner-uid" for prefix in self.legacy_prefixes))

    def legacy_child_keys(self) -> tuple[frozenset[str], frozenset[str]]:
        """The labels and the annotations okt wrote on children under the legacy prefixes (its owner label, its
        checksum): what leaves a child when okt next writes it."""
        legacy = self.legacy()
        return frozenset(n.owner_label for n in legacy), frozenset(n.hash_annotation for n in legacy)

    # -- on primaries --------------------------------------------------------------------------------------------

    @functools.cached_property
    def error_count_annotation(self) -> str:
        """Consecutive failed reconciles (annotation persistence)."""
        return f"{self.prefix}/error-count"

    @functools.cached_property
    def phase_annotation(self) -> str:
        """The lifecycle phase (annotation persistence)."""
        return f"{self.prefix}/phase"

    @functools.cached_property
    def conditions_annotation(self) -> str:
        """The conditions as JSON, when the reconciler's ``status`` is ``"annotations"``."""
        return f"{self.prefix}/conditions"

    @functools.cached_property
    def observed_generation_annotation(self) -> str:
        return f"{self.prefix}/observed-generation"

    @functools.cached_property
    def status_annotation(self) -> str:
        """``ctx.status_fields`` as JSON, when the reconciler's ``status`` is ``"annotations"``."""
        return f"{self.prefix}/status"

    @functools.cached_property
    def daemons_annotation(self) -> str:
        """Which conditions and status fields the daemons stated (annotation persistence)."""
        return f"{self.prefix}/daemons"

    @functools.cached_property
    def reported_error_annotation(self) -> str:
        """A digest of the last error reported on the object and of the object as it was (``status = "off"``, or
        ``"annotations"`` on a kind without a generation, where no stored condition tells an error already reported
        from a new one)."""
        return f"{self.prefix}/reported-error"

    def status_annotations(self) -> frozenset[str]:
        """The annotations that keep the status when the reconciler's ``status`` is ``"annotations"``."""
        return frozenset({self.conditions_annotation, self.observed_generation_annotation, self.status_annotation})

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
                self.daemons_annotation,
                self.reported_error_annotation,
            }
        )

    def legacy(self) -> tuple[Names, ...]:
        """The names under each legacy prefix, in the order given (the first one found is the one read)."""
        return tuple(Names(prefix) for prefix in self.legacy_prefixes)

    def legacy_primary_annotations(self) -> frozenset[str]:
        """Every annotation okt wrote on a primary under a legacy prefix: removed by okt's next write of it."""
        return frozenset(name for names in self.legacy() for name in names.primary_annotations())


@functools.lru_cache(maxsize=64)
def of(prefix: str = DEFAULT_PREFIX, legacy_prefixes: tuple[str, ...] = ()) -> Names:
    """The one :class:`Names` of these prefixes, shared (an operator has one or two sets of prefixes; the cache is
    bounded all the same, and keyed by every field a Names is made of)."""
    return Names(prefix, legacy_prefixes)


REPORTS = frozenset({"error-count", "conditions", "observed-generation", "reported-error"})
"""The names of okt's annotations on a primary that only report: a count of failures, the conditions, a generation
seen, the digest of an error reported. One of them changing is never a reason to reconcile, whatever its prefix."""


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
