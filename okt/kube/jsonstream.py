"""Read a Kubernetes list answer as it arrives, one object at a time.

An answer the API server does not page (a list it serves from its watch cache) holds every object of a kind in one
JSON document. Decoded whole, it would live as dicts all at once — the peak an informer's paged list exists to avoid.
:func:`list_members` decodes the document's top-level members in order and the ``items`` array one element at a time,
so a caller can pack each object before the next is decoded; what is held undecoded is one chunk and one object.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


class _Reader:
    """A window over the text of ``chunks``: what is decoded is dropped when the next chunk is read."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.done = False

    def more(self) -> None:
        """Append the next chunk (``done`` once there is none)."""
        for chunk in self._chunks:
            if text := self._utf8.decode(chunk):
                self.text = self.text[self.pos :] + text
                self.pos = 0
                return
        self.text = self.text[self.pos :] + self._utf8.decode(b"", final=True)
        self.pos = 0
        self.done = True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the document)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]  # always matches
            if self.pos < len(self.text) or self.done:
                return self.text[self.pos : self.pos + 1]
            self.more()

    def take(self, expected: str) -> str:
        """Consume the next character, which must be one of ``expected``."""
        char = self.peek()
        if not char or char not in expected:
            found = repr(char) if char else "the end of the answer"
            raise ValueError(f"malformed list: expected one of {expected!r}, found {found}")
        self.pos += 1
        return char

    def value(self) -> Any:
        """Decode the next JSON value, reading on while it is incomplete."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.done:
                    raise ValueError(f"malformed list: {exc}") from None
            else:
                # A value ending exactly where the text does may be cut short (a number), and so may a number
                # followed by a point or an exponent (``1.`` of ``1.5``, ``2e`` of ``2e3``: the decoder takes the
                # digits before them): a member is always followed by a comma or a bracket, so read on until one is
                # there.
                if (end < len(self.text) and self.text[end] not in ".eE") or self.done:
                    self.pos = end
                    return value
            self.more()


def list_members(chunks: Iterable[bytes]) -> Iterator[tuple[str | None, Any]]:
    """The members of the JSON object in ``chunks`` as ``(name, value)``, in document order, except that each element
    of ``items`` comes as ``(None, element)`` when it is decoded.

    Raises:
        ValueError: the document is not one JSON object (cut short, malformed, or followed by more text).
    """
    reader = _Reader(chunks)
    reader.take("{")
    if reader.peek() == "}":
        reader.pos += 1
    else:
        while True:
            name = reader.value()
            if not isinstance(name, str):
                raise ValueError("malformed list: a member name that is not a string")
            reader.take(":")
            if name == "items" and reader.peek() == "[":
                reader.pos += 1
                if reader.peek() == "]":
                    reader.pos += 1
                else:
                    while True:
                        yield None, reader.value()
                        if reader.take(",]") == "]":
                            break
            else:
                yield name, reader.value()
            if reader.take(",}") == "}":
                break
    if reader.peek():
        raise ValueError("malformed list: text after the end of the document")
