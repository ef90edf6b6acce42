"""``docs/guide/debugging.md``: the condition reasons its table lists are reasons okt writes."""

from __future__ import annotations

import pathlib
import re

from okt import errors

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "debugging.md"


def _reasons_okt_writes() -> set[str]:
    classes = [
        value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, errors.OktError)
    ]
    return {cls.reason for cls in classes} | {errors.UNKNOWN_REASON}


def test_every_reason_of_the_table_is_one_okt_writes() -> None:
    table = re.search(r"\| reason \| what happened \| what okt does next \|\n(.*?)\n\n", PAGE.read_text(), re.DOTALL)
    assert table, "the page lost its table of reasons"
    listed = [
        name for row in table.group(1).splitlines()[1:] for name in re.findall(r"`([A-Za-z]+)`", row.split("|")[1])
    ]
    assert listed
    assert [name for name in listed if name not in _reasons_okt_writes()] == []
