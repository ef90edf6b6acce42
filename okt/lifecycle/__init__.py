"""The lifecycle machine: an application's phases *across* reconciles, as one declared table of guarded transitions.

The Stepper routes one reconcile; a lifecycle remembers where the application stands between reconciles (Pending,
Provisioning, Running, Upgrading, Failed, ... — the author's own Enum) and moves it only along declared edges.
:mod:`okt.lifecycle.transition` holds the values (``Transition``, ``Move``) and the two refusals
(``IllegalTransition``, ``UnknownPhase``); :mod:`okt.lifecycle.machine` is the typed facade over ``transitions``;
:mod:`okt.lifecycle.lifecycle` ties it to a reconcile's context (persistence, condition, events, requeue).

The names below are the public ones (``okt`` re-exports them too).
"""

from okt.lifecycle.lifecycle import Lifecycle, Progress
from okt.lifecycle.transition import IllegalTransition, Move, Transition, UnknownPhase

__all__ = ["IllegalTransition", "Lifecycle", "Move", "Progress", "Transition", "UnknownPhase"]
