"""The number the API server stores for a number okt writes in a child, where it is another one.

Why this exists: the server keeps a JSON number as a Go ``int64`` when it is one, else as a ``float64``, and writes
that float back with its shortest digits: a child written with ``123456789012345678901`` is given back
``123456789012345680000``, and one written with the float ``1.2345678901234567e20`` is given back
``123456789012345670000``. A desired child holding the number as Python computed it never matched the live one: okt
wrote it again after each restart (what the server made of a write is remembered in the process only,
:class:`okt.resources.drift_check.ServerForms`), whether the number came from a template, a ``body``, a model or a
mutation. So the drift check compares a desired number with a live one as the server stores it
(:func:`okt.resources.checksum.is_subset`), matches the items of a list merged by key by their key numbers so
(:func:`stored_key`), and a template places it so (what ``kubectl`` sends for the same literal,
:mod:`okt.resources.template_placement`): all ask :func:`stored_number`.

Guarantees: a number the server keeps as it is (an ``int64``, a float below ``2**53``, an integral float whose own
digits Go writes) is its own stored number; only an integer beyond ``int64`` and a float of ``2**53`` and more are
ever another number.
"""

from __future__ import annotations

import decimal

INT64 = 2**63
"""Integers from ``-INT64`` up to ``INT64 - 1`` are what the API server keeps as integers (Go's ``int64``)."""
EXACT_FLOATS = 2**53
"""Below this magnitude every integer is a float exactly, and Go writes such a float's own digits: a number below it
is stored as it is."""
_LARGEST_EXACT = 1e21
"""Go's JSON writes a float of a smaller magnitude without exponent, as digits Python reads as an integer."""
TOO_LARGE = "an integer beyond the largest number JSON's floats hold, which no child can hold"


def stored_number(value: int | float) -> int | float:
    """The number the API server stores, and gives back, for ``value`` written in a child.

    An integer beyond ``int64`` is stored as the float nearest it, given back below ``1e21`` as the integer of the
    digits Go writes that float with (``123456789012345678901`` as ``123456789012345680000``), above as that float
    (``10**22 + 1`` as ``1e22``); a float of ``2**53`` and more whose digits, as Go writes them, name another integer
    than the float is (``1.2345678901234567e20`` is written ``123456789012345670000``) is given back as that integer.
    Any other number is given back as it is (``1e16`` is ``10**16`` exactly, and stays the float it is).

    Raises:
        ValueError: for an integer no float holds (:data:`TOO_LARGE`).
    """
    if type(value) is int:
        if -INT64 <= value < INT64:
            return value
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(TOO_LARGE) from None
        return _go_digits(number) if abs(number) < _LARGEST_EXACT else number
    if EXACT_FLOATS <= abs(value) < _LARGEST_EXACT:
        digits = _go_digits(value)
        if digits != value:
            return digits
    return value


def stored_as(desired: int | float, live: int | float) -> bool:
    """Whether ``live`` is what the API server stores for ``desired`` (asked once ``desired == live`` failed: a
    number it keeps as it is costs nothing more). An integer no float holds is stored as nothing: False."""
    try:
        return stored_number(desired) == live
    except ValueError:
        return False


def stored_key(value: object) -> object:
    """``value``, a list item's key field, as one value for every number the drift check takes for the same stored
    one (:func:`stored_as`): the number the server stores for it, an integral one as an ``int``. The key of a desired
    item written with ``2**64`` (given back ``18446744073709552000``), ``1e20`` (given back
    ``100000000000000000000``) or ``5.0`` (given back ``5``) is the live item's key. Anything else (a bool, an integer
    no float holds, text) is as it is."""
    if type(value) is int or type(value) is float:
        try:
            number = stored_number(value)
        except ValueError:
            return value
        return int(number) if isinstance(number, float) and number.is_integer() else number
    return value


def _go_digits(number: float) -> int:
    """The integer Go's JSON writes for an integral float below ``1e21``: its shortest digits (``repr``'s)."""
    return int(decimal.Decimal(repr(number)))
