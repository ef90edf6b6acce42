"""What one render records and counts while Jinja2 runs its template: each ``{{ }}`` value, in expression order, with a
placeholder written in its stead; the characters its text and values come to; the steps of its loops and macro calls.

:func:`record` is the environment's ``finalize``, :func:`concat` its ``concat``, :func:`counted` wraps each
``{% for %}``'s items, :func:`step` counts each macro call, :func:`filter_input` each filter's input and
:func:`join_text` is ``~`` (see :mod:`okt.resources.templating`): each refuses a render that would build more than
:data:`~okt.resources.template_limits.MAX_SIZE`, or filter more than
:data:`~okt.resources.template_limits.FILTERED_SIZE` (a :class:`~okt.resources.template_limits.TooLarge`), or make
text of a pydantic secret; a secret recorded alone is a :class:`~okt.resources.template_secrets.TemplateSecret`, its
line kept for the placement's message. Outside a render (no values recorded) each does what Jinja2's own does.
"""

from __future__ import annotations

import contextvars
import itertools
import re
import sys
import types
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import jinja2

from okt import errors
from okt.resources import template_limits, template_placement, template_readonly, template_secrets, template_skeleton


class Values(list[Any]):
    """The values one render records, and the characters its text and values came to so far: a render past
    :data:`~okt.resources.template_limits.MAX_SIZE` stops there (:func:`concat`); ``filtered`` the characters of
    input its filters walked (:func:`filter_input`); ``lines`` has the template line of each pydantic secret recorded,
    by its index; ``inputs`` what the render was handed, read-only to it."""

    size = 0
    steps = 0
    filtered = 0

    def __init__(self, inputs: Iterable[Any] = ()) -> None:
        super().__init__()
        self.inputs = template_readonly.Inputs(inputs)
        self.lines: dict[int, int] = {}
        self.sets: dict[int, tuple[Any, template_placement.OrderedSet]] = {}


def read_set(items: set[Any] | frozenset[Any]) -> template_placement.OrderedSet:
    """A set as the template reads it, ordered once per render: a template reading it again (``tag in cr.spec.tags``
    in a loop) gets the same set, its membership a hash's, never a sort each time."""
    values = recorded.get()
    if values is None:
        return template_placement.ordered_set(items)
    known = values.sets.get(id(items))
    if known is None or known[0] is not items:
        known = (items, template_placement.ordered_set(items))  # the set itself kept, so its id is never reused
        values.sets[id(items)] = known
    return known[1]


def _text_of(value: Any) -> str:
    """A value's text, refusing one that holds a pydantic secret (StrictUndefined raises here, as Jinja2's output
    would)."""
    if type(value) is str:
        return value
    template_placement.refuse_secrets(value, "placed whole")
    return str(value)


def _template_line() -> int:
    """The template line being rendered: Jinja2 maps the lines of the code it compiled a template to with the
    ``debug_info`` it keeps beside that code."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != "<template>":
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return 0
    line = 1
    for pair in str(frame.f_globals.get("debug_info", "")).split("&"):
        template_line, _, code_line = pair.partition("=")
        if code_line and int(code_line) <= frame.f_lineno:
            line = int(template_line)
    return line


# The values one render records, in expression order (set around each render; renders may run in many threads).
recorded: contextvars.ContextVar[Values | None] = contextvars.ContextVar("okt_template_values", default=None)


@jinja2.pass_context  # a context-bound finalize also keeps Jinja2 from folding constant expressions at compile time
def record(context: jinja2.runtime.Context, value: Any) -> str:
    """Jinja2's finalize: record an expression's value and write its placeholder instead."""
    values = recorded.get()
    if values is None:
        return str(value)
    kind = type(value)
    if kind is not template_placement.Structured:
        if kind is not str:
            if _text_is_address(value):
                raise errors.MutationError(
                    f"template error: {{{{ }}}} places a {kind.__name__} (a method or function not called?): its "
                    "text is its address in memory, another at each render, so the child's checksum would change at "
                    "each reconcile; call it, or place data"
                )
            value = template_secrets.read(value)  # one a filter handed on as pydantic's object is placed alone too
        if type(value) is template_secrets.TemplateSecret:
            # Placed alone it is its value; joined with text, the placement names this line (see Slot.text).
            values.lines[len(values)] = _template_line()
        else:
            text = value if type(value) is str else _text_of(value)  # most values: a string, placed without a call
            if template_skeleton.NONCE in text:
                raise errors.MutationError(
                    "template error: {{ }} outputs the template's own output (a macro call or a captured {% set %} "
                    "block); okt places every {{ }} as a value, so write that YAML with {% if %}/{% for %} instead"
                )
            if "0x" in text or "0X" in text:
                _refuse_address(text, values)
    values.append(value)
    placeholder = template_skeleton.PLACEHOLDER.format(len(values) - 1)
    # The value's own size stands for its placeholder's, which the render's text counts (see concat).
    size = (
        len(value) if type(value) is str else template_limits.value_size(value, template_limits.MAX_SIZE - values.size)
    )
    values.size += size - len(placeholder)
    if values.size > template_limits.MAX_SIZE:  # checked here too, where the template's line is known
        template_limits.check(values.size, "the rendered template")
    return placeholder


_CODE = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
)


def _text_is_address(value: Any) -> bool:
    """Whether a value's text holds its address in memory: a function or method (``{{ name.upper }}``), or an object
    whose type writes no text of its own (Jinja2's ``cycler()`` and ``joiner()``)."""
    kind: Any = type(value)
    return isinstance(value, _CODE) or (kind.__repr__ is object.__repr__ and kind.__str__ is object.__str__)


_ADDRESS = re.compile(r"<([^<>]*) at (0x[0-9a-f]+)>", re.IGNORECASE)
"""Python's text of an object that writes no text of its own (``<built-in method upper of str object at 0x7f...>``,
``<function f at 0x...>``, ``<jinja2.utils.Cycler object at 0x...>``), in either case (``| upper`` of it)."""


def _refuse_address(text: str, values: Values) -> None:
    """Raise a MutationError when ``text`` holds the text of an address in memory that no input holds: the template
    made text of a method not called or an object of no text (``'x' ~ name.upper``, ``| string``, ``| join``, ``%``, a
    list's text), another at each render. The same text in a value of the custom resource or the params is data."""
    for match in _ADDRESS.finditer(text):
        if not values.inputs.hold_text(match[2]):
            raise errors.MutationError(
                f"template error: {{{{ }}}} places text holding <{match[1]} at 0x…> (a method or function not "
                "called, made text by ~, a filter, a format or a list's text?): its text is its address in memory, "
                "another at each render, so the child's checksum would change at each reconcile; call it, or place "
                "data"
            )


def concat(pieces: Iterable[str]) -> str:
    """Jinja2's ``concat`` (the render's text, a macro's, a captured block's), stopping a render whose text and values
    come to more than :data:`~okt.resources.template_limits.MAX_SIZE`: a loop over a custom resource's list of a
    million items otherwise built tens of megabytes of YAML, parsed for seconds into a child no API server takes (and
    two nested ``range`` loops never ended)."""
    values = recorded.get()
    if values is None:
        return "".join(pieces)
    # Counted a batch of pieces at a time (a piece is the template's own text or a placeholder, never a value, so a
    # batch is small): most renders are one batch, joined in C.
    iterator = iter(pieces)
    text = []
    while batch := list(itertools.islice(iterator, 256)):
        chunk = "".join(batch)
        values.size += len(chunk)
        text.append(chunk)
        if values.size > template_limits.MAX_SIZE:
            try:
                template_limits.check(values.size, "the rendered template")
            except template_limits.TooLarge as exc:
                if isinstance(pieces, Generator):
                    pieces.throw(exc)  # raised where the template stands, so the message names its line
                raise
    return "".join(text)


def counted(items: Iterable[Any]) -> Iterator[Any]:
    """A loop's items, counted in the render's steps: loops nested over ranges or lists a custom resource sizes ran
    10**10 steps that output nothing (so no size bound saw them), and the worker never came back."""
    values = recorded.get()
    if values is None:
        yield from items
        return
    for item in items:
        values.steps += 1
        if values.steps > template_limits.MAX_SIZE:
            _too_many_steps()
        yield template_secrets.read(item)


def step() -> None:
    """Count one step of the render that no loop counts (a macro's call): a macro calling itself twice, as deep as a
    value said, made 2**n calls that output nothing."""
    values = recorded.get()
    if values is not None:
        values.steps += 1
        if values.steps > template_limits.MAX_SIZE:
            _too_many_steps()


def filter_input(size: int, name: str) -> None:
    """Count a filter's input, ``size`` characters as JSON (times its cost), in the render's: its filters, each
    bounded alone, walked a large value as often as a loop or the template said, for minutes
    (:data:`~okt.resources.template_limits.FILTERED_SIZE`)."""
    values = recorded.get()
    if values is not None:
        values.filtered += size
        template_limits.check_filtered(values.filtered, name)


def _too_many_steps() -> None:
    raise template_limits.TooLarge(
        f"the template's loops and macro calls would run more than {template_limits.MAX_SIZE} steps in one render"
    )


_ANY_PLACEHOLDER = re.compile("okt" + template_skeleton.NONCE + r"s\d+x", re.IGNORECASE)


def filtered_block(text: str, result: Any) -> Any:
    """The result of a ``{% filter %}`` block whose text is ``text``, refused (a MutationError) when the filter changed
    the placeholders of the block's ``{{ }}`` values: ``{% filter upper %}{{ name }}{% endfilter %}`` made the
    placeholder another text, written into the child in the value's stead (another at each process), and the value
    lost, silently. A filter that keeps them (``trim``) places each value as ``{{ }}`` does."""
    if recorded.get() is None:
        return result
    went_in = _PLACEHOLDER.findall(text)
    came_out = _ANY_PLACEHOLDER.findall(str(result))
    if went_in != came_out:
        raise errors.MutationError(
            "template error: a {% filter %} block changed the {{ }} values it holds: okt places each value as data "
            "once the template's text is made, so the block's filter never sees the value; filter the value itself "
            "({{ name | upper }})"
        )
    return result


_PLACEHOLDER = re.compile("okt" + template_skeleton.NONCE + r"s\d+x")


def join_text(parts: tuple[Any, ...]) -> str:
    """``~``: :func:`okt.resources.template_limits.join_text`, refusing a pydantic secret (its text is the mask)."""
    for part in parts:
        if type(part) is not str:
            template_placement.refuse_secrets(part, "joined by ~")
    return template_limits.join_text(parts)
