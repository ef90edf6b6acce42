"""kstatus's conditions: ``Reconciling`` and ``Stalled`` beside ``Ready``, so Flux, Argo CD and ``kubectl wait`` read
the same verdict okt reached.

Why this exists: kstatus (cli-utils, used by Flux's health checks, ``kpt`` and ``kubectl``-based rollout waits) reads
a custom resource in this order: a ``deletionTimestamp`` is *Terminating*; ``status.observedGeneration`` different
from ``metadata.generation`` is *InProgress*; a condition ``Reconciling=True`` is *InProgress*; ``Stalled=True`` is
*Failed*; then ``Ready`` — True is *Current*, False or Unknown *InProgress*; no condition at all is *Current*. With
``Ready`` alone an invalid spec reads as *InProgress* forever (kstatus cannot tell "not yet" from "never"), so a
rollout tool waits until its timeout. ``Stalled`` says "never, until the spec changes".

Guarantees (pure functions over a working copy of the conditions; the caller writes them with ``Ready``, in the same
status write — no extra request):

* the conditions follow the **abnormal-true** polarity kstatus documents: present, with status True, only while
  something is unusual; removed otherwise (absent means normal). At most one of them is present;
* ``Reconciling=True`` while work is in flight: the reconcile succeeded but ``Ready`` is False (children not yet ready,
  creations put off to the next reconcile), or a transient error is being retried — reason and message are
  ``Ready``'s;
* ``Stalled=True`` on an error that retrying cannot fix (a permanent error such as ``InvalidSpec``, a give-up):
  reason and message are the error's;
* both are gone once ``Ready`` is True;
* each carries the generation it describes (``observedGeneration``), as ``Ready`` and ``status.observedGeneration``
  do.

Caveats: a rollout of an application okt already calls Ready (``Progressing=True``, ``Ready=True``) is not
Reconciling: kstatus would call it *InProgress* while ``kubectl wait --for=condition=Ready`` returns. Make ``ready()``
include availability when a rollout must finish first.
"""

from __future__ import annotations

from okt.status import conditions as cond


def reconciling(conditions: cond.Conditions, generation: int, reason: str, message: str) -> None:
    """Work is in flight: ``Reconciling=True`` (with ``reason`` and ``message``), no ``Stalled``."""
    conditions.set(cond.RECONCILING, True, reason, message, generation)
    conditions.remove(cond.STALLED)


def stalled(conditions: cond.Conditions, generation: int, reason: str, message: str) -> None:
    """Retrying cannot help: ``Stalled=True`` (with ``reason`` and ``message``), no ``Reconciling``."""
    conditions.set(cond.STALLED, True, reason, message, generation)
    conditions.remove(cond.RECONCILING)


def settled(conditions: cond.Conditions) -> None:
    """Nothing unusual: neither condition."""
    conditions.remove(cond.RECONCILING)
    conditions.remove(cond.STALLED)


def follow_ready(conditions: cond.Conditions, generation: int, ready: bool, reason: str, message: str) -> None:
    """After a successful reconcile: settled when Ready, else Reconciling with Ready's reason and message."""
    if ready:
        settled(conditions)
    else:
        reconciling(conditions, generation, reason, message)
