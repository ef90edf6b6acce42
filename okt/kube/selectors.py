"""Label selectors as the API server reads them, matched on the client side.

Why this exists: the server filters what it lists and watches, but some objects reach okt without that filter — the
answer to okt's own write (the informer must not store one relabelled out of its selection), and the objects an
in-memory client for tests lists. One parser serves both, so they agree with each other and with the server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_SET_TERM = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_VALUE_TERM = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}\Z")
_VALUE = re.compile(rf"^({_NAME})?\Z")
_INTEGER = re.compile(r"^[0-9]{1,63}\Z")
"""A bound of ``<`` or ``>``: an integer that is a label value too (so without a sign), as the API server reads it."""


def matcher(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    """Whether labels match a label selector: comma-joined terms ``k=v`` (``k==v``), ``k!=v`` (true when the label is
    missing), ``k in (a, b)``, ``k notin (a, b)`` (true when missing), ``k`` (it exists), ``!k`` (it does not),
    ``k>n``, ``k<n`` (integers). ``None`` or empty matches everything.

    Raises:
        ValueError: the API server would refuse the selector (a term it cannot read, a key or value that is no label
            key or value, a bound that is not an integer), naming the term: matched as something else,
            it would select the wrong objects without a word.
    """
    terms = _terms(selector)

    def matches(labels: Mapping[str, str]) -> bool:
        return all(_term_matches(op, labels.get(key), values) for op, key, values in terms)

    return matches


_OPERATORS = {"=": "In", "in": "In", "!=": "NotIn", "notin": "NotIn", "": "Exists", "!": "DoesNotExist"}
"""The LabelSelector operator of each term a label selector string has (``<`` and ``>`` have none)."""


def label_selector(selector: str | None) -> dict[str, Any]:
    """The ``LabelSelector`` (``matchExpressions``) of a selector string, as a webhook's ``objectSelector`` or a
    ``namespaceSelector`` take it: ``{}`` (everything) for None or empty.

    A LabelSelector cannot say ``k>n`` or ``k<n``: those terms are left out, so it selects every object the string
    selects, and some more (whoever reads it with such a term narrows it on the client side with :func:`matcher`).

    Raises:
        ValueError: as :func:`matcher`.
    """
    expressions = []
    for op, key, values in _terms(selector):
        if op not in _OPERATORS:
            continue
        expression: dict[str, Any] = {"key": key, "operator": _OPERATORS[op]}
        if op not in ("", "!"):
            expression["values"] = sorted(values)
        expressions.append(expression)
    return {"matchExpressions": expressions} if expressions else {}


def canonical(selector: str | None) -> str:
    """``selector`` in one spelling of what it selects, to compare two selectors: each term once, in the order of
    their keys, written without spaces, ``==`` as ``=``, a set's values sorted, and a set of one value as ``=`` (or
    ``!=``). ``b=2, a==1`` and ``a=1,b=2`` are both ``a=1,b=2``; ``tier in (y, x)`` is ``tier in (x,y)``; None or an
    empty selector is ``""``.

    Raises:
        ValueError: as :func:`matcher`.
    """
    written: set[tuple[str, str]] = set()
    for given, key, values in _terms(selector):
        op = {"in": "=", "notin": "!="}.get(given, given) if len(values) == 1 else given
        if op in ("in", "notin"):
            term = f"{key} {op} ({','.join(sorted(values))})"
        elif op in ("", "!"):
            term = f"{op}{key}"
        else:
            term = f"{key}{op}{next(iter(values))}"
        written.add((key, term))
    return ",".join(term for _, term in sorted(written))


def _terms(selector: str | None) -> list[tuple[str, str, frozenset[str]]]:
    """The terms of ``selector`` as (operator, key, values): ``=`` for ``==`` too."""
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
    if len(pieces) == 1 and not pieces[0].strip():
        pieces = []
    for piece in pieces:
        terms.append(_term(piece.strip(), text))
    return terms


def is_label_key(key: str) -> bool:
    """Whether the API server takes ``key`` as a label key: an optional DNS-subdomain prefix and ``/``, then a name."""
    return bool(_KEY.match(key)) and len(key) <= 317


def is_label_value(value: str) -> bool:
    """Whether the API server takes ``value`` as a label's value: empty, or up to 63 letters, digits, ``-``, ``_`` and
    ``.``, a letter or digit at each end."""
    return bool(_VALUE.match(value))


_NO_KEY = re.compile(r"[\s()=!<>]")
"""What no label key holds and every other form of term does: a term with it that no form read is no term at all."""
_FORMS = "write k=v, k!=v, k in (a, b), k notin (a, b), k, !k, k>n or k<n"


def _term(term: str, selector: str) -> tuple[str, str, frozenset[str]]:
    """One term of ``selector`` as (operator, key, values)."""
    if found := _SET_TERM.match(term):
        op, key, values = found.group(2), found.group(1), frozenset(v.strip() for v in found.group(3).split(","))
    elif term.startswith("!"):
        op, key, values = "!", term[1:].strip(), frozenset()
    elif found := _VALUE_TERM.match(term):
        op = "=" if found.group(2) == "==" else found.group(2)
        key, values = found.group(1), frozenset({found.group(3).strip()})
    else:
        op, key, values = "", term, frozenset()
    if op in ("", "!") and _NO_KEY.search(key):
        # Read as a bare key only because no form matched: a parenthesis missing, an operator misspelt.
        raise ValueError(f"label selector {selector!r}: {term!r} is not a term the API server reads: {_FORMS}")
    if not is_label_key(key):
        raise ValueError(f"label selector {selector!r}: {term or 'an empty term'!r}: {key!r} is not a label key")
    for value in values:
        if op in ("<", ">") and not _INTEGER.match(value):
            raise ValueError(f"label selector {selector!r}: {term!r}: {value!r} is not an integer")
        if op not in ("<", ">") and not _VALUE.match(value):
            raise ValueError(f"label selector {selector!r}: {term!r}: {value!r} is not a label value")
    return op, key, values


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
