"""The FreeStyle engine: one hook, no routing.

Why this exists: some operators do not fit OKT's fixed sequence of states (a job runner, a one-shot importer). They
implement one ``reconcile_with_cr`` hook and keep everything else okt offers: the custom resource is fetched, the
finalizer is handled, and whatever the hook records or raises is consolidated into the same :class:`Outcome` by the
same rules as the Stepper.

Guarantees:

* exception handling is identical to the Stepper's: an ``Exception`` raised by the hook is recorded (a
  :class:`~okt.errors.GiveUp` as a give-up, a :class:`~okt.errors.TemporaryError` with its delay) and never
  propagates; ``BaseException``\\ s such as ``KeyboardInterrupt`` pass through;
* the :class:`~okt.engines.stepper.Run` it returns has the path ``(End,)`` and ``engine=FREESTYLE``, which logs as
  ``">reconcile>End"``: FreeStyle enters none of the Stepper's states, so it does not pretend to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from okt.engines import results as results_mod
from okt.engines import stepper
from okt.engines.states import State


@dataclasses.dataclass(frozen=True)
class FreeStyle:
    """Runs reconciles as a single hook call."""

    def run(self, hook: Callable[[], None], results: results_mod.Results) -> stepper.Run:
        """Call ``hook`` once, record what it raised, and consolidate ``results`` into the run's outcome."""
        try:
            hook()
        except Exception as exc:
            results.record_exception(exc)
        return stepper.Run((State.End,), results.outcome(), results, engine=stepper.Engine.FREESTYLE)
