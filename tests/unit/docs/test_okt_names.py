"""Every ``okt.<name>`` (``okt.testing.wait_for``, ``okt.engines.results.MAX_DELAY``) the README and the pages write
is something okt has.

A reader copies such a name into an import or a call; one that is not there, under that module, is an
``ImportError`` or an ``AttributeError`` in their code.
"""

from __future__ import annotations

import importlib
import pathlib
import re
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_NAME = re.compile(r"(?<![\w/.:-])okt(?:\.[A-Za-z_]\w*)+")
"""``okt.`` and its dotted names, not inside a path (``reference/okt.md``) or another name (``status.okt.phase``)."""

NOT_NAMES = {
    "okt.io",  # the default prefix of okt's labels and annotations, a DNS name
    "okt.State.Mutater",  # coming-from-okt.md: the misspelling a state Enum catches
}

USES = [
    (f"{source.relative_to(ROOT)}:{number}", name)
    for source in SOURCES
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
    for name in _NAME.findall(line)
    if not any(name == other or name.startswith(f"{other}.") for other in NOT_NAMES)
]


def _resolve(dotted: str) -> Any:
    """The object ``dotted`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:length]))
        except ImportError:
            continue
        for part in parts[length:]:
            found = getattr(found, part)
        return found
    raise ImportError(dotted)


def test_the_pages_name_okt_s_objects() -> None:
    assert any(name == "okt.testing.wait_for" for _, name in USES)


@pytest.mark.parametrize(("where", "name"), USES, ids=[f"{where} {name}" for where, name in USES])
def test_each_okt_name_the_pages_write_exists(where: str, name: str) -> None:
    _resolve(name)
