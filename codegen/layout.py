"""Statements of scaffolded modules laid out as ruff format lays them out, whatever the length of the names in them.

Why it exists: a scaffolded line holds the project's package, a kind and the kind's module name. With the longest names
``okt init`` accepts (a 40-character project, a 59-character kind, an API group of up to 241 characters) many a line
is longer than the project's line length, and a line written whole would be rewritten by ``ruff format`` and reported
by ruff's import sorting (I001) in a project that was meant to pass both as it comes. These functions are not a
formatter: each lays out one shape the scaffold templates use, with the rules ruff format (and its import sorting)
apply to that shape, so that a short name gives the line it always gave and a long one the lines ruff would write.

Guarantees: the result is what ``ruff format`` leaves unchanged for that shape when the items are atoms (names, string
literals, calls without arguments, keyword arguments of such); its first line has no indentation (the template puts
it where it belongs), its other lines are indented in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

INDENT = "    "


@dataclass(frozen=True)
class Layout:
    """The layouts for one line length (the ``line-length`` of the ruff configuration governing the module)."""

    line_length: int

    def from_import(self, module: str, names: Sequence[str]) -> str:
        """``from module import a, b`` on one line when it fits, else one name a line in parentheses with a trailing
        comma (ruff's import sorting wraps it so, even for one name)."""
        line = f"from {module} import {', '.join(names)}"
        if len(line) <= self.line_length:
            return line
        return f"from {module} import (\n" + "".join(f"{INDENT}{name},\n" for name in names) + ")"

    def bracketed(self, indent: int, head: str, items: Sequence[str], tail: str) -> str:
        """``head`` (ending with its opening bracket), the comma-separated ``items`` and ``tail`` (the closing bracket
        and what follows it), at ``indent`` columns: a call, a ``def``'s parameters, a class's base, a list display.

        One line when it fits; else the items on one line of their own between the brackets when that fits, or when
        there is only one item (ruff has nothing more to split); else one item a line with a trailing comma.
        """
        flat = ", ".join(items)
        if indent + len(head) + len(flat) + len(tail) <= self.line_length:
            return f"{head}{flat}{tail}"
        inner = " " * indent + INDENT
        if len(items) == 1 or len(inner) + len(flat) <= self.line_length:
            return f"{head}\n{inner}{flat}\n{' ' * indent}{tail}"
        return f"{head}\n" + "".join(f"{inner}{item},\n" for item in items) + f"{' ' * indent}{tail}"

    def assignment(self, indent: int, target: str, literal: str) -> str:
        """``target = literal`` for a string literal: in parentheses on a line of its own when only that makes it fit
        (ruff's best fit for an expression it cannot split), else on one line, even one longer than the line length."""
        if indent + len(target) + 3 + len(literal) <= self.line_length:
            return f"{target} = {literal}"
        inner = " " * indent + INDENT
        if len(inner) + len(literal) <= self.line_length:
            return f"{target} = (\n{inner}{literal}\n{' ' * indent})"
        return f"{target} = {literal}"
