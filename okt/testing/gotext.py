"""A value as the API server's Go code writes it in a message: a string quoted as ``%q`` (and ``%#v``) quotes it.

Why this exists: the API server's refusals carry the value refused (``metadata.labels: Invalid value: "é\\x01"``,
``apps.DeploymentStrategy{Type:"Blue", ...}``), and :class:`okt.testing.FakeClient` words them as the server does, so a
test matching a message passes on both. JSON's quoting is Go's for plain ASCII only: Go keeps a printable character
other than ASCII as it is where ``json.dumps`` escapes it (``"é"``, not ``"\\u00e9"``), and writes a control character
or an unprintable one as ``\\x01``, ``\\a``, ``\\u00a0``, ``\\u200b`` where JSON writes ``\\u0001`` or the character
itself.

Guarantees: :func:`quote` answers Go's ``strconv.Quote`` of the text (Go's ``unicode.IsPrint`` is read from Python's
Unicode tables, whose version may be newer than the server's Go: a character assigned since is printed as it is).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
"""The control characters Go writes with a letter."""


def quote(text: str) -> str:
    """``text`` as Go's ``%q`` writes it: between double quotes, ``"`` and ``\\`` escaped, a printable character as it
    is, a control character as ``\\a``... or ``\\xHH``, any other unprintable one as ``\\uHHHH`` or ``\\UHHHHHHHH``
    (lone surrogates, which Go's JSON decoder reads as U+FFFD, as that)."""
    written = ['"']
    for given in text:
        char = "\ufffd" if 0xD800 <= ord(given) <= 0xDFFF else given
        if char in '"\\':
            written.append("\\" + char)
        elif _printable(char):
            written.append(char)
        elif char in _ESCAPES:
            written.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            written.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            written.append(f"\\u{ord(char):04x}")
        else:
            written.append(f"\\U{ord(char):08x}")
    written.append('"')
    return "".join(written)


def _printable(char: str) -> bool:
    """Go's ``unicode.IsPrint``: a letter, a mark, a number, a punctuation or a symbol, or the ASCII space (no other
    space)."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def value(found: Any) -> str:
    """``found`` as the API server's ``field.Invalid`` writes it after ``Invalid value:``: a string as :func:`quote`
    quotes it, a number or a boolean as JSON writes it (as Go's ``%v``); anything else as JSON with sorted keys, where
    the server writes its Go type (``%#v``), which no test of a message should match."""
    return quote(found) if isinstance(found, str) else json.dumps(found, sort_keys=True)
