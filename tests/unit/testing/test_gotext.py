"""okt.testing.gotext: values written as the API server's Go code writes them (each expected text is Go's
``strconv.Quote`` of the input, as Kubernetes 1.20 wrote it in its refusals)."""

from __future__ import annotations

from typing import Any

import pytest

from okt.testing import gotext


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("Blue", '"Blue"'),
        ('say "hi"\\', r'"say \"hi\"\\"'),
        ("é😀", '"é😀"'),
        ("\a\b\f\n\r\t\v", r'"\a\b\f\n\r\t\v"'),
        ("\x01\x1f\x7f", r'"\x01\x1f\x7f"'),
        ("\u00a0\u200b\u2028\ufeff", r'"\u00a0\u200b\u2028\ufeff"'),
        ("\U000e0001", r'"\U000e0001"'),
        ("\ud800", '"\ufffd"'),
    ],
    ids=[
        "ascii",
        "quote-and-backslash",
        "printable-non-ascii",
        "lettered-controls",
        "other-controls",
        "unprintable",
        "unprintable-astral",
        "lone-surrogate",
    ],
)
def test_a_string_is_quoted_as_go_quotes_it(text: str, quoted: str) -> None:
    assert gotext.quote(text) == quoted


@pytest.mark.parametrize(("found", "written"), [("a", '"a"'), (-1, "-1"), (True, "true"), (None, "null")])
def test_a_value_is_written_as_field_invalid_writes_it(found: Any, written: str) -> None:
    assert gotext.value(found) == written
