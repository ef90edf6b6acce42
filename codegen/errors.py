"""The one error type of the code generators.

Why it exists: every generator failure is the author's to fix (a typo in a kind, a manifest that is not one Kubernetes
object, a model that has no structural schema), so it is reported the same way everywhere — one readable line that
names the input and says what is wrong. The CLI turns it into ``Error: <line>`` and exit status 2, without a traceback.

Guarantees: ``str(error)`` is a single line (newlines and runs of blanks in the message are folded into one space), so
a YAML parser's multi-line report never leaks into the CLI's output.
"""

from __future__ import annotations

import yaml


class CodegenError(Exception):
    """A generator input is wrong; the message is one line that names the input and the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        """The one-line message."""
        return str(self)


def yaml_problem(exc: yaml.YAMLError, first_line: int = 1) -> str:
    """One line out of PyYAML's multi-line report: the problem and where it is (1-based line and column), the text
    parsed starting at line ``first_line`` of its file."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + first_line}, column {mark.column + 1})"
    return " ".join(str(exc).split())
