"""A pydantic ``pattern`` in the dialect of the API server's regular expressions (Go's RE2).

Why it exists: pydantic matches a ``pattern`` with Rust's ``regex`` crate, whose ``\\d``, ``\\w`` and ``\\s`` are
Unicode classes; Go's are ASCII. Copied as written, a CRD's pattern refused a custom resource the model accepts
(``café`` for ``^\\w+$``, an Arabic-Indic digit for ``\\d``, a no-break space for ``\\s``), and a construct RE2 lacks
(a lookaround or a backreference, which pydantic's ``python-re`` engine takes) made the API server refuse the whole
CRD, in a message that names no model.

Guarantees: ``\\d``, ``\\w``, ``\\s`` and their negations become the Unicode classes Rust reads them as; ``(?<name>``
becomes ``(?P<name>`` (older API servers know only that spelling); Python's ``\\Z`` becomes ``\\z`` and its
``\\uXXXX`` ``\\x{XXXX}``; everything else is copied. What RE2 cannot express (a lookaround, a backreference, an
atomic group, a possessive quantifier, a Unicode word boundary ``\\b``, a negated class inside a set) is refused.

Caveats: the API server matches with the Unicode tables of the Go it was built with; a letter or digit newer than those
(Unicode 13 for Go 1.19) is refused there even though the model takes it. Python's ``re`` (``regex_engine="python-re"``)
reads ``\\w``, ``\\s`` and ``$`` slightly differently again (``$`` matches before a final newline); the translation
follows pydantic's default engine.
"""

from __future__ import annotations

WORD = (
    r"\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}\x{24B6}-\x{24E9}\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}"
    r"\x{1F170}-\x{1F189}"
)
"""Rust's ``\\w``: Alphabetic, marks, decimal digits, connector punctuation and Join_Control. Alphabetic is the letters,
letter numbers and Other_Alphabetic, whose marks are in ``\\p{M}`` and whose symbols are the enclosed Latin letters."""
SPACE = r"\s\v\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
"""Rust's ``\\s``, Unicode's White_Space: RE2's ``\\s`` (tab, newline, form feed, carriage return, space) and the
rest."""
DIGIT = r"\p{Nd}"
"""Rust's ``\\d``: Unicode's decimal digits."""

_REFUSED_GROUPS = {
    "?=": "a lookahead",
    "?!": "a negative lookahead",
    "?<=": "a lookbehind",
    "?<!": "a negative lookbehind",
    "?>": "an atomic group",
    "?P=": "a named backreference",
    "?#": "a comment group",
    "?(": "a conditional group",
}
_QUANTIFIERS = frozenset("*+?}")


class PatternError(ValueError):
    """A pattern the API server's regular expressions cannot express as pydantic reads it."""


def to_go(pattern: str) -> str:
    """``pattern`` as the API server must read it to match what pydantic matches (see the module docstring).

    Raises:
        PatternError: the pattern holds a construct RE2 lacks, named in the message.
    """
    out: list[str] = []
    index = 0
    set_start: int | None = None  # Inside a set: where its members start (a "]" there is a literal one).
    quantified = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            text, index = _escape_at(pattern, index, set_start is not None)
            out.append(text)
            quantified = False
        elif set_start is not None:
            text, index, closed = _set_member_at(pattern, index, set_start)
            out.append(text)
            set_start = None if closed else set_start
        elif char == "[":
            # A "]" right after "[" or "[^" is a literal one.
            set_start = index + 1 + (1 if pattern.startswith("^", index + 1) else 0)
            set_start += 1 if pattern.startswith("]", set_start) else 0
            out.append(char)
            index += 1
            quantified = False
        else:
            if char == "+" and quantified:
                raise PatternError("a possessive quantifier has no equivalent in the API server's RE2")
            quantified = char in _QUANTIFIERS and not (char == "?" and out and out[-1] == "(")
            text, index = _group_opening_at(pattern, index) if char == "(" else (char, index + 1)
            out.append(text)
    return "".join(out)


def _group_opening_at(pattern: str, index: int) -> tuple[str, int]:
    """The RE2 spelling of the group opening at ``pattern[index]``, and where the pattern goes on."""
    for opening, construct in _REFUSED_GROUPS.items():
        if pattern.startswith(opening, index + 1):
            raise PatternError(f"{construct} ({opening[1:]!r}) has no equivalent in the API server's RE2")
    if pattern.startswith("?<", index + 1):
        return "(?P<", index + 3
    return "(", index + 1


def _escape_at(pattern: str, index: int, in_set: bool) -> tuple[str, int]:
    """The RE2 spelling of the escape at ``pattern[index]``, and where the pattern goes on."""
    escaped = pattern[index + 1 : index + 2]
    end = index + 2
    if escaped in ("p", "P", "x") and pattern.startswith("{", end):
        end = pattern.find("}", end) + 1 or len(pattern)
        return pattern[index:end], end
    text = _escape(escaped, pattern, index, in_set)
    end += 4 if escaped == "u" else 0
    ranged = pattern.startswith("-", end) and not pattern.startswith("-]", end)
    if in_set and ranged and escaped in ("d", "D", "w", "s"):
        # A "-" after a class is a literal one; after the range that ends the class's members, RE2 would read a range.
        return text + "\\-", end + 1
    return text, end


def _set_member_at(pattern: str, index: int, set_start: int) -> tuple[str, int, bool]:
    """The set member at ``pattern[index]`` (no escape), where the pattern goes on, and whether it closes the set."""
    if pattern.startswith("[:", index):
        end = pattern.find(":]", index + 2)
        if end >= 0:
            return pattern[index : end + 2], end + 2, False
    return pattern[index], index + 1, pattern[index] == "]" and index > set_start


def _escape(escaped: str, pattern: str, index: int, in_set: bool) -> str:
    """The RE2 spelling of the escape ``\\<escaped>`` at ``pattern[index]``."""
    if escaped == "d":
        return DIGIT
    if escaped == "D":
        return r"\P{Nd}"
    if escaped in ("w", "s"):
        members = WORD if escaped == "w" else SPACE
        return members if in_set else f"[{members}]"
    if escaped in ("W", "S"):
        if in_set:
            raise PatternError(rf"\{escaped} inside a set has no equivalent in the API server's RE2: negate the set")
        return f"[^{WORD if escaped == 'W' else SPACE}]"
    if escaped in ("b", "B") and not in_set:
        raise PatternError(
            rf"\{escaped} is a Unicode word boundary in pydantic and an ASCII one in the API server's RE2: "
            "match the characters around it instead"
        )
    if escaped.isdigit() and escaped != "0":
        raise PatternError(rf"a backreference (\{escaped}) has no equivalent in the API server's RE2")
    if escaped == "Z":
        return r"\z"
    if escaped == "u":
        digits = pattern[index + 2 : index + 6]
        if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise PatternError(rf"\u must be followed by four hex digits, not {digits!r}")
        return rf"\x{{{digits}}}"
    return "\\" + escaped
