"""Every ``okt <command> --flag`` the documentation and okt's docstrings write is a flag that command has.

The pages and the API reference (rendered from okt's docstrings) are where a user copies a command line from; a flag
renamed in the CLI and not in the text sends them to a usage error.
"""

from __future__ import annotations

import pathlib
import re

import click
import pytest

from okt.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "samples").glob("*/README.md")),
    *sorted((ROOT / "okt").rglob("*.py")),
]

_COMMAND = re.compile(r"\bokt((?: [a-z]+(?=[\s`|;&#)\"']|$))+)((?: +[^\s`|;&#)\"']+)*)")
"""``okt``, its subcommand words, then the words of the same command line (up to a backtick, pipe, ``;`` or ``&&``).

A subcommand word is a whole word: ``okt run main.py --leader-elect`` is ``run`` then ``main.py --leader-elect``, not
``run main`` then nothing (the flags after an operator file would go unchecked)."""
_FLAG = re.compile(r"(?<![\w>-])(--?[a-zA-Z][\w-]*)")


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    """The deepest okt command ``words`` name, and the words that named it."""
    command: click.Command = main.cli
    used: list[str] = []
    for word in words:
        if not isinstance(command, click.Group):
            break
        sub = command.get_command(click.Context(command), word)
        if sub is None:
            break
        command, used = sub, [*used, word]
    return command, used


def _joined_lines(text: str) -> list[tuple[int, str]]:
    """``(number, line)`` of each line of ``text``, a shell line continued with a final ``\\`` joined to the next
    (``okt gen rbac main.py --cluster-wide \\`` then ``--out deploy/rbac.yaml``: one command line)."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        start, whole = (number, line) if pending is None else (pending[0], f"{pending[1]} {line.strip()}")
        if whole.endswith("\\"):
            pending = (start, whole[:-1].rstrip())
            continue
        pending = None
        joined.append((start, whole))
    return joined


def _written_command_lines() -> list[tuple[str, str, list[str]]]:
    """``(where, command, flags)`` for every okt command line with flags in the sources."""
    found = []
    for source in SOURCES:
        for number, line in _joined_lines(source.read_text(encoding="utf-8")):
            for match in _COMMAND.finditer(line):
                _, used = _command(match.group(1).split())
                flags = _FLAG.findall(match.group(0))
                if used and flags:
                    found.append((f"{source.relative_to(ROOT)}:{number}", " ".join(used), flags))
    return found


LINES = _written_command_lines()


def test_the_sources_write_okt_command_lines_with_flags() -> None:
    assert any(command == "run" for _, command, _ in LINES)
    assert any(command == "gen resource" for _, command, _ in LINES)


@pytest.mark.parametrize(("where", "command", "flags"), LINES, ids=[where for where, _, _ in LINES])
def test_each_flag_written_after_an_okt_command_is_one_it_has(where: str, command: str, flags: list[str]) -> None:
    cmd, _ = _command(command.split())
    known = {option for param in cmd.params for option in (*param.opts, *param.secondary_opts)} | {"-h", "--help"}

    assert [flag for flag in flags if flag.split("=")[0] not in known] == []
