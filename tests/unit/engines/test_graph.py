import pathlib
import re

import pytest

from okt.engines import graph
from okt.engines.machine import TABLE, Edge, Guard, Machine
from okt.engines.states import State

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "concepts" / "stepper.md"
EDGE_LINE = re.compile(r"^    (\w+) --> (\w+)(?: : (\S+))?$")
LABELS = {"error": Guard.ERROR, "give-up": Guard.GIVE_UP, "finalizing": Guard.FINALIZING, None: Guard.ALWAYS}


def _parsed_edges(diagram: str) -> list[Edge]:
    edges = []
    for line in diagram.splitlines():
        match = EDGE_LINE.match(line)
        if match:
            source, dest, label = match.groups()
            edges.append(Edge(State(source), State(dest), LABELS[label]))
    return edges


def test_the_diagram_opens_with_the_start_and_closes_with_the_end() -> None:
    lines = graph.mermaid().splitlines()
    assert lines[:2] == ["stateDiagram-v2", "    [*] --> CRChecker"]
    assert lines[-1] == "    End --> [*]"


def test_the_diagram_has_every_edge_of_the_table_and_nothing_else() -> None:
    diagram = graph.mermaid()
    assert _parsed_edges(diagram) == list(TABLE)
    assert len(diagram.splitlines()) == len(TABLE) + 3


@pytest.mark.parametrize("edge", TABLE, ids=lambda e: f"{e.source}-{e.guard.name}-{e.dest}")
def test_each_edge_is_labelled_with_its_guard(edge: Edge) -> None:
    line = f"    {edge.source} --> {edge.dest}"
    expected = line if edge.guard is Guard.ALWAYS else f"{line} : {edge.guard.value}"
    assert expected in graph.mermaid().splitlines()


def test_the_diagram_is_deterministic() -> None:
    assert graph.mermaid() == graph.mermaid(Machine())


def test_the_diagram_is_drawn_from_the_machine_it_is_given() -> None:
    class OnlySuccess(Machine):
        def edges(self) -> tuple[Edge, ...]:
            return tuple(edge for edge in super().edges() if edge.guard is Guard.ALWAYS)

    assert _parsed_edges(graph.mermaid(OnlySuccess())) == [edge for edge in TABLE if edge.guard is Guard.ALWAYS]


def test_the_documented_diagram_is_the_generated_one() -> None:
    blocks = re.findall(r"```mermaid\n(.*?)\n```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks == [graph.mermaid()]
