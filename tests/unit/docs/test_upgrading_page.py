"""``docs/guide/upgrading.md``: what its table tells a reader to declare is something okt reads, and each row links the
page that details it.

A name in the *declare* column that okt does not have is an attribute nobody reads: the old finalizer, phase or kind
it lists is left behind as if it had not been declared.
"""

from __future__ import annotations

import inspect
import pathlib
import re

import pytest

import okt

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "upgrading.md"


def _rows() -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("| change in N+1 | declare | what okt does | writes, once |", 1)[1].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.strip().splitlines()[1:]]
    assert rows, "the page lost its table"
    return rows


ROWS = _rows()


def _declared(cell: str) -> list[str]:
    """The names a declare cell gives: ``legacy_owns``, ``Lifecycle(legacy_phases=)``, ``ctx.conditions.remove``."""
    return re.findall(r"`([^`]+)`", cell)


@pytest.mark.parametrize("name", [name for row in ROWS for name in _declared(row[1])])
def test_each_declaration_the_table_names_is_one_okt_reads(name: str) -> None:
    call = re.fullmatch(r"Lifecycle\((\w+)=\)", name)
    if call:
        assert call.group(1) in inspect.signature(okt.Lifecycle).parameters
    elif name.startswith("ctx.conditions."):
        assert hasattr(okt.Conditions, name.removeprefix("ctx.conditions.").split("(")[0])
    else:
        assert name in vars(okt.Reconciler) or name in okt.Reconciler.__annotations__, name


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_each_row_links_the_page_that_details_it(row: list[str]) -> None:
    assert re.search(r"\]\([\w./-]+\.md#[\w-]+\)", row[2]), row[2]
