"""``okt graph``: the Stepper's machine, then the lifecycle each reconciler of an operator declares."""

from __future__ import annotations

import pathlib
import textwrap

import pytest
from click.testing import CliRunner

from okt.cli import main as cli_main
from okt.engines import graph

OPERATOR = """
import enum

import okt


class Phase(enum.StrEnum):
    Pending = "Pending"
    Provisioning = "Provisioning"
    Running = "Running"
    Failed = "Failed"
    ShutDown = "Shut down"


def setup_succeeded(ctx: okt.Context) -> bool:
    return True


class Retry:
    def __call__(self, ctx: okt.Context) -> bool:
        return False


LIFECYCLE = okt.Lifecycle(
    Phase,
    initial=Phase.Pending,
    transitions=[
        okt.Transition(Phase.Pending, Phase.Provisioning, reason="Provisioning"),
        okt.Transition(Phase.Provisioning, Phase.Running, when=setup_succeeded, reason="SetupSucceeded"),
        okt.Transition(Phase.Provisioning, Phase.Failed, when=lambda ctx: False, reason="SetupFailed"),
        okt.Transition(Phase.Failed, Phase.Provisioning, when=Retry(), reason="Retried"),
        okt.Transition(Phase.Running, Phase.ShutDown, reason="Stopped"),
    ],
    failed={Phase.Failed},
)


class WebAppReconciler(okt.Reconciler):
    api_version = "lifecycle.example.com/v1alpha1"
    kind = "WebApp"
    lifecycle = LIFECYCLE


class PlainReconciler(okt.Reconciler):
    api_version = "lifecycle.example.com/v1alpha1"
    kind = "Plain"
"""

LIFECYCLE_DIAGRAM = """\
stateDiagram-v2
    %% the lifecycle of WebApp (WebAppReconciler.lifecycle)
    state "Shut down" as ShutDown
    [*] --> Pending
    Pending --> Provisioning : Provisioning
    Provisioning --> Running : SetupSucceeded when setup_succeeded
    Provisioning --> Failed : SetupFailed when lambda
    Failed --> Provisioning : Retried when Retry
    Running --> ShutDown : Stopped
    ShutDown --> [*]
    classDef failed fill:#fde0e0,stroke:#c62828
    class Failed failed"""


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli_main.cli, list(args))
    return result.exit_code, result.output


def write(tmp_path: pathlib.Path, source: str) -> str:
    path = tmp_path / "operator_with_phases.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return str(path)


def test_an_operator_s_declared_lifecycle_is_drawn_after_the_stepper_with_its_guards(tmp_path: pathlib.Path) -> None:
    code, out = invoke("graph", write(tmp_path, OPERATOR))

    assert code == 0
    assert out == f"{graph.mermaid()}\n\n{LIFECYCLE_DIAGRAM}\n"


def test_an_operator_without_a_lifecycle_draws_the_stepper_alone(tmp_path: pathlib.Path) -> None:
    target = write(tmp_path, OPERATOR.replace("    lifecycle = LIFECYCLE\n", ""))

    code, out = invoke("graph", target)

    assert (code, out) == (0, f"{graph.mermaid()}\n")


def test_the_lifecycle_sample_is_drawn_from_its_reconciler() -> None:
    code, out = invoke("graph", "-m", "samples.lifecycle.lifecycle_operator")

    assert code == 0
    assert "    %% the lifecycle of WebApp (WebAppReconciler.lifecycle)\n" in out
    assert "    Provisioning --> Running : SetupSucceeded when setup_succeeded\n" in out
    assert "    class Failed failed\n" in out


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (("graph", "no-such-operator.py"), 1, "Error: no such operator file: no-such-operator.py\n"),
        (("graph", "x.py", "-m", "y"), 2, "Error: give at most one of TARGET (a file) or -m MODULE\n"),
    ],
)
def test_a_graph_of_an_operator_that_cannot_be_loaded_is_one_line(
    args: tuple[str, ...], code: int, expected: str
) -> None:
    assert invoke(*args) == (code, expected)
