"""The FreeStyle engine: one hook, no routing.

Why this exists: some operators do not fit OKT's fixed sequence of states (a job runner, a one-shot importer). They
implement one ``reconcile_with_cr`` hook and keep everything else okt offers: the custom resource is fetched, the
finalizer is handled, and whatever the hook records or raises is consolidated into the same :class:`Outcome` by the
same rules as the Stepper.

Guarantees:

* exception handling is identical to the Stepper's: an ``Exception`` raised by the hook is recorded (a
  :class:`~okt.errors.GiveUp` as a give-up, a :class:`~okt.errors.TemporaryError` with its delay) and never
  propagates; ``BaseException``\\ s such as ``KeyboardInterrupt`` pass through;
* the reports follow the Stepper's routing: an error recorded while the SuccessManager reports (a ``ready()`` that
  raises, a status write refused) is reported by the ErrorManager, which runs at most once;
* the :class:`~okt.engines.stepper.Run` it returns has the path ``(End,)`` and ``engine=FREESTYLE``, which logs as
  ``">reconcile>End"``: FreeStyle enters none of the Stepper's states, so it does not pretend to.
"""

from __future__ import annotations

import dataclasses

from okt.engines import results as results_mod
from okt.engines import stepper
from okt.engines.states import State


@dataclasses.dataclass(frozen=True)
class FreeStyle:
    """Runs reconciles as a single hook call, framed by okt's built-in work.

    The routing, in full: the CRChecker work (fetch, finalizer, ``check``); then ``cleanup`` and the finalizer's
    removal when the object is being deleted, or the single hook otherwise; then the SuccessManager's report after a
    success; then the ErrorManager's after an error (a failing cleanup or a failing success report included) or an
    alarming give-up — no report after a deletion or a quiet give-up.
    """

    def run(self, steps: stepper.Steps, results: results_mod.Results) -> stepper.Run:
        """Run one reconcile; what the hook raised is recorded, and ``results`` make the run's outcome."""
        finalizing = False
        try:
            steps.builtin(State.CRChecker)
            if not results.has_error and results.gave_up is None:
                finalizing = steps.finalizing()
                if finalizing:
                    steps.builtin(State.CRFinalizer)
                else:
                    steps.reconcile()
        except Exception as exc:
            results.record_exception(exc)
        try:
            if not finalizing and not results.has_error and results.gave_up is None:
                steps.builtin(State.SuccessManager)
        except Exception as exc:
            results.record_exception(exc)
        # After the SuccessManager too, as the Stepper routes it: a report that failed (a ready() that raised, a
        # status write refused) must not leave Ready as the previous reconcile wrote it.
        try:
            if results.has_error or results.give_up_alarming:
                steps.builtin(State.ErrorManager)
        except Exception as exc:
            results.record_exception(exc)
        return stepper.Run((State.End,), results.outcome(), results, engine=stepper.Engine.FREESTYLE)
