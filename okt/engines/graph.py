"""The Stepper's diagram, generated from the machine itself.

Why this exists: a hand-drawn diagram drifts from the code the day someone edits the table. :func:`mermaid` reads the
edges back from a live :class:`~okt.engines.machine.Machine` (not from the table constant), and a test pins the copy in
``docs/concepts/stepper.md`` to its output.

Guarantees: the output is deterministic (edges in the machine's priority order), shows every edge exactly once with
its guard (``error``, ``give-up``, ``finalizing``; the unconditional default edge has no label), and marks
``CRChecker`` as the start and ``End`` as the end.
"""

from __future__ import annotations

from okt.engines import machine as machine_mod
from okt.engines.states import State

_LABELS: dict[machine_mod.Guard, str] = {
    machine_mod.Guard.ERROR: "error",
    machine_mod.Guard.GIVE_UP: "give-up",
    machine_mod.Guard.FINALIZING: "finalizing",
    machine_mod.Guard.ALWAYS: "",
}


def mermaid(machine: machine_mod.Machine | None = None) -> str:
    """The machine as a mermaid ``stateDiagram-v2`` (no trailing newline).

    Args:
        machine: the machine to draw; a fresh one when ``None``.
    """
    edges = (machine or machine_mod.Machine()).edges()
    lines = ["stateDiagram-v2", f"    [*] --> {State.CRChecker.value}"]
    for edge in edges:
        label = _LABELS[edge.guard]
        arrow = f"    {edge.source.value} --> {edge.dest.value}"
        lines.append(f"{arrow} : {label}" if label else arrow)
    lines.append(f"    {State.End.value} --> [*]")
    return "\n".join(lines)
