"""pydantic's patterns in the API server's dialect: its classes as Rust reads them, what RE2 lacks refused.

The integration tests (``tests/integration/codegen/test_crd_on_server.py``) check the translated classes against a
real API server; here each rule of the translation is pinned.
"""

from __future__ import annotations

import re

import pydantic
import pytest

from okt.codegen import crd, errors, patterns

WORD = patterns.WORD
SPACE = patterns.SPACE


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^[a-z0-9./:-]+$", r"^[a-z0-9./:-]+$"),
        (r"^\d+$", r"^\p{Nd}+$"),
        (r"^\D+$", r"^\P{Nd}+$"),
        (r"^\w+$", rf"^[{WORD}]+$"),
        (r"^\W+$", rf"^[^{WORD}]+$"),
        (r"^\s*$", rf"^[{SPACE}]*$"),
        (r"^\S+$", rf"^[^{SPACE}]+$"),
        (r"^[\w.-]+$", rf"^[{WORD}.-]+$"),
        (r"^[\d-]+$", r"^[\p{Nd}-]+$"),
        (r"^[\s-x]+$", rf"^[{SPACE}\-x]+$"),
        (r"^[^\w]$", rf"^[^{WORD}]$"),
        (r"^[]\d]$", r"^[]\p{Nd}]$"),
        (r"^[[:alpha:]\d]+$", r"^[[:alpha:]\p{Nd}]+$"),
        (r"^\p{L}+\x{e9}{2}$", r"^\p{L}+\x{e9}{2}$"),
        (r"^\\d\.\[\w$", rf"^\\d\.\[[{WORD}]$"),
        (r"^(?<name>a)(?P<other>b)(?:c)(?i)d+?$", r"^(?P<name>a)(?P<other>b)(?:c)(?i)d+?$"),
        (r"^a\Z", r"^a\z"),
        (r"^\u00e9$", r"^\x{00e9}$"),
    ],
)
def test_a_pattern_reads_in_the_api_servers_dialect_as_pydantic_reads_it(pattern: str, expected: str) -> None:
    assert patterns.to_go(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"^(?=a)\w", "a lookahead"),
        (r"^(?!a)\w", "a negative lookahead"),
        (r"(?<=a)b", "a lookbehind"),
        (r"(?<!a)b", "a negative lookbehind"),
        (r"(?>a+)b", "an atomic group"),
        (r"(?P<x>a)(?P=x)", "a named backreference"),
        (r"(a)\1", r"a backreference (\1)"),
        (r"a++", "a possessive quantifier"),
        (r"a{2}+", "a possessive quantifier"),
        (r"\bword\b", "Unicode word boundary"),
        (r"[\W.]", r"\W inside a set"),
        (r"[^\S]", r"\S inside a set"),
        (r"\u12", "four hex digits"),
    ],
)
def test_a_pattern_the_api_server_cannot_express_is_refused(pattern: str, message: str) -> None:
    with pytest.raises(patterns.PatternError, match=re.escape(message)):
        patterns.to_go(pattern)


class Lookahead(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(regex_engine="python-re")

    name: str = pydantic.Field(pattern=r"^(?!kube-)[a-z-]+$")


def test_okt_gen_crd_refuses_a_pattern_the_api_server_cannot_express_naming_the_field() -> None:
    with pytest.raises(errors.CodegenError, match=r"spec\.name: pattern '\^\(\?!kube-\)\[a-z-\]\+\$': a negative"):
        crd.structural_schema(Lookahead)


class Named(pydantic.BaseModel):
    code: str = pydantic.Field(pattern=r"^\w+(-\d+)?$")


def test_the_crd_holds_the_translated_pattern() -> None:
    assert crd.structural_schema(Named)["properties"]["code"]["pattern"] == rf"^[{WORD}]+(-\p{{Nd}}+)?$"
