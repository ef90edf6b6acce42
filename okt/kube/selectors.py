"""Label selectors as the API server reads them, matched on the client side.

Why this exists: the server filters what it lists and watches, but some objects reach okt without that filter — the
answer to okt's own write (the informer must not store one relabelled out of its selection), and the objects an
in-memory client for tests lists. One parser serves both, so they agree with each other and with the server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_SET_TERM = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_VALUE_TERM = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$")


def matcher(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    """Whether labels match a label selector: comma-joined terms ``k=v`` (``k==v``), ``k!=v`` (true when the label is
    missing), ``k in (a, b)``, ``k notin (a, b)`` (true when missing), ``k`` (it exists), ``!k`` (it does not),
    ``k>n``, ``k<n`` (integers). ``None`` or empty matches everything."""
    terms: list[tuple[str, str, frozenset[str]]] = []
    text = selector or ""
    depth, start = 0, 0
    pieces: list[str] = []
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    for piece in pieces:
        term = piece.strip()
        if not term:
            continue
        if found := _SET_TERM.match(term):
            values = frozenset(value.strip() for value in found.group(3).split(","))
            terms.append((found.group(2), found.group(1), values))
        elif term.startswith("!"):
            terms.append(("!", term[1:].strip(), frozenset()))
        elif found := _VALUE_TERM.match(term):
            op = "=" if found.group(2) == "==" else found.group(2)
            terms.append((op, found.group(1), frozenset({found.group(3).strip()})))
        else:
            terms.append(("", term, frozenset()))

    def matches(labels: Mapping[str, str]) -> bool:
        return all(_term_matches(op, labels.get(key), values) for op, key, values in terms)

    return matches


def _term_matches(op: str, have: str | None, values: frozenset[str]) -> bool:
    if op in ("=", "in"):
        return have is not None and have in values
    if op in ("!=", "notin"):
        return have not in values
    if op == "!":
        return have is None
    if op == "":
        return have is not None
    try:  # > and <: integers
        number, bound = int(have or ""), int(next(iter(values)))
    except ValueError:
        return False
    return number > bound if op == ">" else number < bound
