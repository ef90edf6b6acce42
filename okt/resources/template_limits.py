"""Bounds on what a template may build from a custom resource's values: never more than a child can hold.

Why this exists: a template's operations take their sizes from their operands, and the custom resource chooses
those. ``{{ "-" * cr.spec.width }}``, ``{{ cr.spec.hosts | join(cr.spec.separator) }}``, ``{{ name | center(n) }}``
or a format string ``%10000000000s`` each built a value of any size, and one custom resource with ``n = 10**10`` took
the operator's memory (a MemoryError, or the kernel ending the process) and stopped every other object's reconcile.
Jinja2's sandbox caps ``range`` but none of these.

Each operation here checks the size of what it is about to build before building it, and refuses one beyond
:data:`MAX_SIZE` — the API server's request limit, so no child it would accept is refused — with :class:`TooLarge`,
which the renderer reports as an :class:`okt.errors.InvalidSpec` naming the template line.

Guarantees: ``+`` and ``*`` on a string, bytes, list or tuple; ``~``; ``list.extend``; ``**``, ``*``, ``+`` and
``-`` on integers (no more digits than Python writes a number with); ``%`` and ``| format`` on a string or bytes;
``str.format`` and ``format_map`` widths and precisions; the filters ``join``, ``replace``, ``center``,
``wordwrap`` (its size, and its time on a long word), ``batch``, ``slice``, ``sum`` (of lists or tuples),
``tojson(indent=)``, ``pprint`` (no text longer than a child holds); the string and bytes methods ``ljust``,
``rjust``, ``center``, ``zfill``, ``expandtabs``, ``replace``, ``join``, ``translate``, and ``int.to_bytes``.
Within the bound, each gives what Jinja2 and Python give.

Bytes are no value a child holds, but a template reaches them (``"x".encode()``, ``(1).to_bytes(n, "big")``), and
each of their sized operations built what the custom resource said before anything placed it: ``"x".encode() * n``
or ``.ljust(n)`` with ``n = 10**10`` took the operator's memory as the string's did.

Every filter but those reading a few items whatever the size (``length``, ``first``...) refuses an input larger than
any child can hold, :data:`CHILD_SIZE` as JSON, before it walks it (:func:`bounded_input`): what it built was bounded,
but not the time it took to walk the 3 million items :data:`MAX_SIZE` lets a list hold. Their inputs together, in
one render, come to no more than :data:`FILTERED_SIZE` (a filter slower a character than most counting its input more
than once, :data:`FILTER_COST`): fifty ``| pprint`` of one 1.4 MiB list, each within the bound, took two minutes.

``+``, ``~`` and ``list.extend`` join values that exist already, so one step at most doubles them, but a loop the
custom resource bounds doubled a value as often as it said: they refuse a result beyond :data:`MAX_SIZE` too.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import math
import re
import sys
import textwrap
import types
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import jinja2
import jinja2.filters
import jinja2.sandbox
import jinja2.utils
import pydantic

from okt.resources import template_placement

MAX_SIZE = 3 * 1024 * 1024
"""The most characters (or items) a value a template builds may hold: the API server's request limit, 3 MiB."""


CHILD_SIZE = 1536 * 1024
"""The most bytes the API server keeps in one object (etcd's request limit, 1.5 MiB): no child, and no custom resource,
holds a value larger than this as JSON."""


class TooLarge(ValueError):
    """An operation would build a value larger than a child can hold (its message says what and how large)."""


def check(size: int, what: str, unit: str = "characters") -> None:
    """Raise :class:`TooLarge` when ``what`` would build ``size`` characters (or items) beyond :data:`MAX_SIZE`."""
    if size > MAX_SIZE:
        raise TooLarge(f"{what} would build {size} {unit}, more than the {MAX_SIZE} a child can hold")


# -- filters' inputs -------------------------------------------------------------------------------------------------

CONSTANT_TIME_FILTERS = frozenset({"length", "count", "first", "last", "default", "d", "indent", "attr", "random"})
"""The filters that read a few items of their input whatever its size (or none): its size is not checked."""
_SCALARS = frozenset({str, int, float, bool, type(None)})


FILTERED_SIZE = 4 * MAX_SIZE
"""The most characters of input (as :func:`least_json_size` counts them) the filters of one render may walk together:
four times what the API server takes in one request, so that a template filtering each value of the largest child a
few times is never refused, while one filtering a large value in a loop is (each filter's input is bounded alone)."""

FILTER_COST = types.MappingProxyType({"pprint": 3, "to_yaml": 8})
"""How many times :data:`FILTERED_SIZE` counts the input of a filter slower a character than most: ``| pprint`` and
``| to_yaml`` walk a value in Python, an item at a time (700,000 zeros took ``| pprint`` 2.5 seconds and ``| to_yaml``
15, ``| tojson`` 0.8); ``| to_yaml`` of a value a child holds still passes, once."""


def _least_json(item: Any) -> tuple[int, Iterable[Any]]:
    """A container's fewest characters as JSON but its items' (each counted one by it), and its items to walk (not its
    scalars); another object's none."""
    if isinstance(item, Mapping):
        children: Iterable[Any] = item.values()
        size = 4 * len(item)  # each entry's key quotes, colon and comma, at least
    elif isinstance(item, list | tuple | set | frozenset):
        children = item
        size = 2 * len(item)  # its brackets and commas, and each item's one character
    else:
        return 0, ()
    return size, (child for child in children if type(child) not in _SCALARS or type(child) is str)


def _placed_json(item: Any) -> tuple[int, Iterable[Any]]:
    """About the characters as JSON of an item that is no string, once placed, its items' excepted (a scalar as 8, a
    model dumped), and its items to walk."""
    if isinstance(item, Mapping):
        return 2 + sum(len(str(key)) + 4 for key in item), item.values()
    if isinstance(item, list | tuple):
        return 2 + len(item), item
    if isinstance(item, pydantic.BaseModel):
        return len(item.model_dump_json(by_alias=True, exclude_none=True)), ()
    return 8, ()


def _json_size(
    value: Any, budget: int, count: Callable[[Any], tuple[int, Iterable[Any]]], *, quotes: int, first: int = 0
) -> int:
    """The characters ``value`` takes as JSON, counted from ``first`` until they pass ``budget``: a string inside it
    its length and ``quotes``, any other item what ``count`` says, with the items to walk. A list of a million items
    says so at once, without a walk."""
    if isinstance(value, str):
        return len(value)
    size, stack = first, [value]
    while stack and size <= budget:
        item = stack.pop()
        if isinstance(item, str):  # most items: counted here, without a call
            size += len(item) + quotes
            continue
        own, children = count(item)
        size += own
        if size <= budget:
            stack.extend(children)
    return size


def least_json_size(value: Any, budget: int) -> int:
    """The fewest characters ``value`` takes as JSON (a string its length, a list its brackets, commas and at least one
    character an item), counted until it passes ``budget``: a list of a million items says so at once, without a
    walk. An object of another kind (a model, a client) counts one character, unwalked."""
    return _json_size(value, budget, _least_json, quotes=1, first=1)  # a string's one character: its container's


def bounded_input(filter_: Callable[..., Any], name: str, spend: Callable[[int, str], None]) -> Callable[..., Any]:
    """A Jinja2 filter refusing an input larger than :data:`CHILD_SIZE` as JSON, before it walks it, and handing its
    size, times its :data:`FILTER_COST`, to ``spend`` (the render's count, which refuses one past
    :data:`FILTERED_SIZE`: :func:`check_filtered`).

    A filter's time grows with its input, and okt's bounds looked at what it built, once built: ``| pprint``,
    ``| map('upper')``, ``| sort`` or ``| escape`` of the 3 million items ``[0] * 3000000`` allows (within
    :data:`MAX_SIZE`, which counts a list's items, not its JSON) each held a worker for 6 to 12 seconds, for a value
    no child holds. A custom resource's value, and anything a child holds, is never larger than that; a string of a
    megabyte (a ConfigMap's value) is filtered as before."""
    cost = FILTER_COST.get(name, 1)
    offset = 0 if getattr(filter_, "jinja_pass_arg", None) is None else 1  # after the context or environment

    @functools.wraps(filter_)  # keeps Jinja2's pass_context / pass_environment mark
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > offset:
            value = args[offset]
            kind = type(value)
            if kind is str:
                size = len(value)
            elif kind in _SCALARS:
                size = 0
            else:
                size = least_json_size(value, CHILD_SIZE)
            if size > CHILD_SIZE:
                raise TooLarge(
                    f"| {name} of a {kind.__name__} of at least {size} characters as JSON, more than the {CHILD_SIZE} "
                    "the API server keeps in one object: no child holds it"
                )
            if size:
                spend(size * cost, name)
        return filter_(*args, **kwargs)

    return bounded


def check_filtered(filtered: int, name: str) -> None:
    """Raise :class:`TooLarge` when the filters of a render, this ``| name`` the last, walked ``filtered`` characters
    of input (as :func:`bounded_input` counts them) beyond :data:`FILTERED_SIZE`."""
    if filtered > FILTERED_SIZE:
        raise TooLarge(
            f"| {name}: the filters of this render would walk {filtered} characters of input as JSON, more than the "
            f"{FILTERED_SIZE} a render may (a large value filtered in a loop, or again and again?)"
        )


# -- operators -------------------------------------------------------------------------------------------------------


def _check_digits(left: Any, right: Any, bits: int, what: str) -> None:
    """Refuse an integer result of about ``bits`` bits with more digits than Python writes a number with (both operands
    integers): a loop the custom resource bounds grew it as often as it said, each step slower than the last."""
    if type(left) is int and type(right) is int:  # bool is an int too, of one bit
        digits = bits * _DIGITS_PER_BIT
        if digits > most_digits():
            raise TooLarge(
                f"an integer {what} would have {digits:.0f} digits, more than the {most_digits()} a number in a "
                "template may have"  # the operands unsaid: either may have been read out of a secret
            )


_DIGITS_PER_BIT = math.log10(2)


def repeat(left: Any, right: Any) -> Any:
    """``*``, refusing to repeat a string, list or tuple into more than :data:`MAX_SIZE` characters or items, and an
    integer product with more digits than Python writes a number with."""
    if type(left) is int and type(right) is int:
        _check_digits(left, right, left.bit_length() + right.bit_length(), "product")
        return left * right
    sequence, times = (right, left) if isinstance(left, int) else (left, right)
    if isinstance(sequence, _SIZED) and isinstance(times, int):
        unit = _unit(sequence)
        check(
            len(sequence) * times,
            f"repeating a {type(sequence).__name__} of length {len(sequence)} {times} times",
            unit,
        )
    return left * right


def most_digits() -> int:
    """The most digits Python writes a number with (``sys.get_int_max_str_digits()``, 4300 by default)."""
    return sys.get_int_max_str_digits() or MAX_SIZE


def power(left: Any, right: Any) -> Any:
    """``**``, refusing an integer power with more digits than Python writes a number with: its computation took time
    and memory growing with the exponent, for a number no child can hold anyway."""
    if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        digits = right * math.log10(abs(left))
        if digits > most_digits():
            raise TooLarge(
                f"an integer power would have {digits:.0f} digits, more than the {most_digits()} a number in a "
                "template may have"  # the operands unsaid: either may have been read out of a secret
            )
    return left**right


_TEXT = (str, bytes, bytearray)
"""Text and bytes: a method of theirs, ``%`` and ``*`` build one sized by their arguments."""
_SIZED = (*_TEXT, list, tuple)
"""What ``+`` and ``*`` build a larger one of."""


def _unit(value: Any) -> str:
    return "characters" if isinstance(value, str) else "bytes" if isinstance(value, bytes | bytearray) else "items"


def _length(value: Any) -> int:
    """The length of a string or bytes, or of another value's text (what ``str.replace`` or ``str.join`` takes)."""
    return len(value) if isinstance(value, _TEXT) else len(str(value))


_PRINTF = re.compile(r"%(\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.DOTALL)


def printf(text: Any, arguments: Any) -> Any:
    """``text % arguments`` (``%`` on a string or bytes, ``| format``), refusing widths and precisions that would
    build more than :data:`MAX_SIZE` characters (``%10000000000s``, ``%*s`` with a huge width)."""
    template_placement.refuse_secrets(arguments, "formatted by %")
    values = list(arguments) if isinstance(arguments, tuple) else [arguments]
    size, index = len(text), 0
    directives = text if isinstance(text, str) else bytes(text).decode("latin-1")  # one character a byte
    for directive in _PRINTF.finditer(directives):
        if directive[4] == "%" and directive[0] == "%%":
            continue
        for number in (directive[2], directive[3]):
            if number == "*":
                width = values[index] if index < len(values) else 0
                index += 1
                size += abs(width) if isinstance(width, int) else 0
            elif number:
                size += int(number)
        index += directive[1] is None
        check(size, "this %-format")
    return text % arguments


def add(left: Any, right: Any) -> Any:
    """``+``, refusing to join strings, lists or tuples into more than :data:`MAX_SIZE` characters or items: one step
    at most doubles a value, but a loop the custom resource bounds doubles it as often as it says."""
    if isinstance(left, _SIZED) and isinstance(right, _SIZED):
        check(len(left) + len(right), "+", _unit(left))
    elif type(left) is int and type(right) is int:
        _check_digits(left, right, max(left.bit_length(), right.bit_length()) + 1, "sum")
    return left + right


def subtract(left: Any, right: Any) -> Any:
    """``-``, refusing an integer difference with more digits than Python writes a number with (see :func:`add`)."""
    if type(left) is int and type(right) is int:
        _check_digits(left, right, max(left.bit_length(), right.bit_length()) + 1, "difference")
    return left - right


def join_text(parts: Iterable[Any]) -> str:
    """``~``: the parts' texts joined, refusing more than :data:`MAX_SIZE` characters (see :func:`add`)."""
    texts = [part if type(part) is str else str(part) for part in parts]
    check(sum(len(text) for text in texts), "~")
    return "".join(texts)


def binop(operator: str, left: Any, right: Any) -> Any:
    """The intercepted binary operators: ``+``, ``-``, ``*``, ``**`` and ``%`` with their bounds."""
    if operator == "+":
        return add(left, right)
    if operator == "-":
        return subtract(left, right)
    if operator == "*":
        return repeat(left, right)
    if operator == "**":
        return power(left, right)
    if isinstance(left, _TEXT):  # "%": formatting; a number's modulo builds nothing large
        return printf(left, right)
    return left % right


# -- str.format ------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+")


class _BoundedFormat:
    """A formatter mixin adding each field's width and precision to what the format call builds."""

    built = 0

    def format_field(self, value: Any, format_spec: str) -> Any:
        template_placement.refuse_secrets(value, "formatted by str.format")
        self.built += sum(int(number) for number in _NUMBER.findall(format_spec))
        check(self.built, "this format string's widths")
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _Formatter(_BoundedFormat, jinja2.sandbox.SandboxedFormatter):
    """Jinja2's sandboxed formatter (``str.format`` in a template), its widths bounded."""


class _EscapeFormatter(_BoundedFormat, jinja2.sandbox.SandboxedEscapeFormatter):
    """Jinja2's sandboxed formatter of a ``Markup`` string (its fields escaped), its widths bounded."""


def wrap_str_format(environment: jinja2.Environment, value: Any) -> Callable[..., str] | None:
    """Jinja2's sandboxed ``str.format`` and ``format_map`` (their fields read no attribute the sandbox refuses), with
    their widths bounded; None when ``value`` is no such method."""
    if not isinstance(value, types.MethodType | types.BuiltinMethodType) or value.__name__ not in (
        "format",
        "format_map",
    ):
        return None
    text = value.__self__
    if not isinstance(text, str):
        return None
    kind = type(text)
    is_format_map = value.__name__ == "format_map"

    def wrapper(*args: Any, **kwargs: Any) -> str:
        if is_format_map:
            if kwargs or len(args) != 1:
                raise TypeError("format_map() takes exactly one positional argument")
            return kind(make_formatter().vformat(text, (), args[0]))
        return kind(make_formatter().vformat(text, args, kwargs))

    def make_formatter() -> jinja2.sandbox.SandboxedFormatter:
        if hasattr(text, "__html__"):  # a Markup string (| safe): its fields are escaped, as Jinja2 does
            return _EscapeFormatter(environment, escape=kind.escape)  # type: ignore[attr-defined]
        return _Formatter(environment)

    return wrapper


# -- string methods --------------------------------------------------------------------------------------------------


def _replaced_size(text: str | bytes | bytearray, old: Any, new: Any, count: Any) -> int:
    if isinstance(text, str):
        old, new = str(old), str(new)
    elif not (isinstance(old, bytes | bytearray) and isinstance(new, bytes | bytearray)):
        return len(text)  # bytes.replace refuses them
    times = text.count(old)
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * (len(new) - len(old))


def call(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Check a call of a string's method that builds a string sized by its arguments; the arguments to call it with
    (an iterable given to ``join`` read once, into a list)."""
    if not isinstance(method, types.BuiltinMethodType):
        return args
    if isinstance(method.__self__, list) and method.__name__ == "extend" and args:
        items = list(args[0])
        check(len(method.__self__) + len(items), "list.extend", "items")
        return (items, *args[1:])
    if type(method.__self__) is int and method.__name__ == "to_bytes":
        length = args[0] if args else kwargs.get("length", 1)
        if isinstance(length, int):
            check(length, "int.to_bytes", "bytes")
        return args
    if not isinstance(method.__self__, _TEXT):
        return args
    text, name = method.__self__, method.__name__
    what, unit = f"{type(text).__name__}.{name}", _unit(text)
    if name in ("ljust", "rjust", "center", "zfill") and args and isinstance(args[0], int):
        check(args[0], what, unit)
    elif name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tabsize, int):
            tabs = text.count("\t") if isinstance(text, str) else text.count(b"\t")
            check(len(text) + tabs * tabsize, what, unit)
    elif name == "replace" and len(args) >= 2:
        size = _replaced_size(text, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1))
        check(size, what, unit)
    elif name == "join" and args:
        items = list(args[0])
        _check_joined(items, text, what, unit)
        return (items, *args[1:])
    elif name == "translate" and args and isinstance(text, str):  # bytes.translate maps a byte to a byte
        _check_translated(text, args[0], what)
    return args


def _check_translated(text: str, table: Any, what: str) -> None:
    """``str.translate`` writes each character's entry of ``table``: a custom resource's string of one character
    there, repeated, built its length times that string's."""
    size = 0
    for char, times in collections.Counter(text).items():
        try:
            entry = table[ord(char)]
        except LookupError:
            entry = char
        size += times * (len(entry) if isinstance(entry, str) else 0 if entry is None else 1)
        check(size, what)


def _check_joined(items: list[Any], separator: str | bytes | bytearray, what: str, unit: str = "characters") -> None:
    size = len(separator) * max(len(items) - 1, 0)
    check(size, what, unit)
    for item in items:
        if not isinstance(item, str):
            template_placement.refuse_secrets(item, "joined by join")
        size += _length(item)
        check(size, what, unit)


# -- filters ---------------------------------------------------------------------------------------------------------


@jinja2.pass_eval_context
def join(eval_ctx: jinja2.nodes.EvalContext, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    """Jinja2's ``join``, refusing to build more than :data:`MAX_SIZE` characters (a custom resource's separator
    between its many items)."""
    items = list(value)
    if attribute is not None:
        items = list(map(jinja2.filters.make_attrgetter(eval_ctx.environment, attribute), items))
    _check_joined(items, str(d), "| join")
    return jinja2.filters.sync_do_join(eval_ctx, items, d)


@jinja2.pass_eval_context
def replace(eval_ctx: jinja2.nodes.EvalContext, s: Any, old: Any, new: Any, count: int | None = None) -> str:
    """Jinja2's ``replace``, refusing to build more than :data:`MAX_SIZE` characters (``| replace("", big)`` puts
    ``big`` between every character)."""
    check(_replaced_size(str(s), old, new, count), "| replace")
    return jinja2.filters.do_replace(eval_ctx, s, old, new, count)


def center(value: Any, width: int = 80) -> str:
    """Jinja2's ``center``, refusing a width beyond :data:`MAX_SIZE`."""
    if isinstance(width, int):
        check(width, "| center")
    return jinja2.filters.do_center(value, width)


@jinja2.pass_environment
def wordwrap(
    environment: jinja2.Environment,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    """Jinja2's ``wordwrap``, refusing to build more than :data:`MAX_SIZE` characters (a long ``wrapstring`` between
    lines of one character)."""
    joiner = environment.newline_sequence if wrapstring is None else wrapstring
    s = s if isinstance(s, str) else str(s)  # its text, as Jinja2's string filters take it (a number's, say)
    if break_long_words and isinstance(width, int):
        _check_long_words(s, width)
    paragraphs = [
        textwrap.wrap(
            line,
            width=width,
            expand_tabs=False,
            replace_whitespace=False,
            break_long_words=break_long_words,
            break_on_hyphens=break_on_hyphens,
        )
        for line in s.splitlines()
    ]
    joins = sum(max(len(wrapped) - 1, 0) for wrapped in paragraphs) + max(len(paragraphs) - 1, 0)
    check(len(s) + joins * len(joiner), "| wordwrap")
    return joiner.join(joiner.join(wrapped) for wrapped in paragraphs)


_RUN = re.compile(r"\S+|\s+")
"""A run of text ``textwrap`` takes as one chunk at most (a word, or the whitespace between two)."""
WRAP_COPIES = 16 * 10**9
"""The most characters ``| wordwrap`` may copy to break its long words (a second or two)."""


def _check_long_words(text: str, width: int) -> None:
    """Refuse to break words so long, into lines so short, that ``textwrap`` would copy more than
    :data:`WRAP_COPIES` characters: it cuts a word longer than a line one line at a time, copying the rest of the word
    at each cut, and a custom resource's word of a megabyte at ``width=1`` (or its own ``width``) took hours, the
    worker never coming back. Ordinary text, and a base64 blob of a megabyte at 76 columns, copy far less."""
    line = max(width, 1)
    copies = 0
    for run in _RUN.finditer(text):
        length = run.end() - run.start()
        if length > line:
            copies += length * length // (2 * line)
    if copies > WRAP_COPIES:
        raise TooLarge(
            f"| wordwrap would copy {copies} characters to break its long words into lines of {line}, more than the "
            f"{WRAP_COPIES} a render may spend on it"
        )


def format_(value: Any, *args: Any, **kwargs: Any) -> str:
    """Jinja2's ``format`` (``value % args``), with :func:`printf`'s bounds."""
    if args and kwargs:
        raise jinja2.exceptions.FilterArgumentError("can't handle positional and keyword arguments at the same time")
    formatted: str = printf(value if isinstance(value, str) else str(value), kwargs or args)
    return formatted


def batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Any:
    """Jinja2's ``batch``, refusing a line count beyond :data:`MAX_SIZE` when the last batch is filled to it."""
    if fill_with is not None and isinstance(linecount, int):
        check(linecount, "| batch", "items")
    return jinja2.filters.do_batch(value, linecount, fill_with)


def slice_(value: Collection[Any], slices: int, fill_with: Any = None) -> Any:
    """Jinja2's ``slice``, refusing more than :data:`MAX_SIZE` slices."""
    if isinstance(slices, int):
        check(slices, "| slice", "slices")
    return jinja2.filters.sync_do_slice(value, slices, fill_with)


@jinja2.pass_environment
def sum_(environment: jinja2.Environment, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    """Jinja2's ``sum``, refusing to join lists or tuples into more than :data:`MAX_SIZE` items, and joining them at
    once: Python's ``sum`` added them one at a time, copying the result so far at each (``[[x]] * n | sum(start=[])``
    copied n**2 / 2 items, and the worker never came back), and ``[big] * n`` joined ``n`` times ``big``."""
    items = list(iterable)
    if attribute is not None:
        items = list(map(jinja2.filters.make_attrgetter(environment, attribute), items))
    kind = type(start)
    if (kind is list or kind is tuple) and all(type(item) is kind for item in items):
        check(len(start) + sum(len(item) for item in items), "| sum", "items")
        return kind(itertools.chain(start, *items))
    return sum(items, start)  # numbers, or what Python's sum refuses (strings, a list added to a number)


def pprint(value: Any) -> str:
    """Jinja2's ``pprint``, refusing a value whose text on one line (its ``repr``, written at C's speed) is longer than
    any child holds: ``pprint`` writes at least that, walking the value in Python an item at a time (700,000 zeros,
    within the bound on its input, took 2.5 seconds for a text of 2.8 million characters)."""
    size = len(repr(value))
    if size > CHILD_SIZE:
        raise TooLarge(
            f"| pprint of a {type(value).__name__} would write at least {size} characters, more than the {CHILD_SIZE} "
            "the API server keeps in one object: no child holds it"
        )
    return jinja2.filters.do_pprint(value)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


def json_text(data: Any, indent: int | str | None) -> str:
    """JSON text of ``data`` as Jinja2's ``tojson`` writes it, refusing an ``indent`` that would build more than
    :data:`MAX_SIZE` characters (a custom resource's ``indent=10**10`` is one line's indentation)."""
    if indent is not None:
        width = len(indent) if isinstance(indent, str) else indent
        if isinstance(width, int):
            check(width * _depth(data), "| tojson(indent=...)")
        size = 0
        for chunk in json.JSONEncoder(indent=indent, sort_keys=True).iterencode(data):
            size += len(chunk)
            check(size, "| tojson(indent=...)")
    return jinja2.utils.htmlsafe_json_dumps(data, dumps=json.dumps, indent=indent, sort_keys=True)


def value_size(value: Any, budget: int) -> int:
    """About the characters a placed value takes in the child's JSON (a string its text's, a scalar 8, a model its
    JSON's), counted until it passes ``budget``: more than its least JSON size, to bound what is placed."""
    return _json_size(value, budget, _placed_json, quotes=2)
