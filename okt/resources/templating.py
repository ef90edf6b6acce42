"""Rendering a resource's Jinja2 YAML template into the object it describes: values are data, placed in slots.

Why this exists: a template is written by the operator's author, but the values it places — ``{{ cr.spec.image }}``
— come from whoever may create the custom resource. Substituting them into the YAML *text* and parsing the result
lets a value that holds a line break, ``: ``, a quote or a flow bracket add fields to the child (a ``hostPath`` volume,
a privileged container). So the text is never parsed with the values in it:

1. Jinja2 renders the template with a ``finalize`` hook: each ``{{ expression }}`` records its value and writes a
   placeholder instead (``{% if %}``/``{% for %}`` blocks still run on the real values). The result, the *skeleton*,
   holds only the template's own text;
2. the skeleton is parsed once (cached by its text, so a template without blocks is parsed once per process): a
   tree in which each scalar holding placeholders is a :class:`~okt.resources.template_placement.Slot`;
3. each render fills the slots with the recorded values — a fresh tree, never a parse.

A value that is the whole of a *plain* (unquoted, untagged) scalar is placed as itself, in its JSON form: a string stays
that very string (``yes``, ``~``, ``0x1F``, ``12:30``, ``2026-01-01`` or ``""`` too, never the boolean, null, number or
date YAML would read in its text), a number a number (``replicas: {{ n }}``), null null, a mapping or a list the same
structure (``resources: {{ cr.spec.resources }}``), a pydantic model or an enum its JSON form. Anywhere else — a quoted
or block scalar, a scalar tagged ``!!str``, a plain scalar joining values and text (``{{ name }}-config``,
``{{ major }}.{{ minor }}``) — the value's text is placed, and the scalar is that string, never what YAML would read
in it (``{{ h }}:{{ m }}`` is not a sexagesimal number). Keys are always strings. ``{{ value | to_yaml }}`` places
the value with its own structure too, and so does ``tojson`` (whose text is JSON, which YAML reads as that value); in a
string context both give their text. The template's own text reads as ``kubectl`` reads it (go-yaml's rules, see
:class:`okt.resources.template_skeleton.KubectlLoader`): a plain scalar that looks like a date or a time of day
(``2024-05-01``, ``12:30``) is that text, never a date or a number of seconds; ``1e3`` and ``0o17`` are numbers, ``y``
a boolean, and a plain ``.inf`` or ``.nan`` a :class:`okt.errors.MutationError`.

Guarantees:

* no value changes the structure of the object: it is the skeleton's tree with each value in its slot;
* a value from the custom resource keeps its type: a string placed where a string goes is that very string;
* a number JSON cannot write (NaN or an infinity), placed or made JSON by a spec model's own ``model_dump_json()``
  (which writes ``null`` for it), raises :class:`okt.errors.InvalidSpec`; a number is placed as the API server stores
  it (an integer beyond int64 a float, :func:`okt.resources.stored_numbers.stored_number`), so the desired child
  matches the live one;
* a value that cannot be placed — two keys made equal (``1`` and ``"1"`` in a mapping placed whole too), a
  non-string key from ``to_yaml`` — or that an expression cannot use (``{{ cr.spec.size + 1 }}`` on the string
  ``"3"``, a division by a zero, ``| int`` of ``"three"`` without a default) raises :class:`okt.errors.InvalidSpec`
  naming where, so the reconcile ends ``Ready=False, reason=InvalidSpec``; its message never holds the value of a
  secret the template read with ``get_secret_value()`` (an error's text holding it is left out, and a codec's error
  names no character once a secret's value was read); a plain string is no secret to okt, even one read out of a
  Secret (pass it as a pydantic secret);
* a template reads data, never Python's internals: it renders in Jinja2's sandbox, which refuses ``_`` and internal
  attributes (also through a format string the custom resource holds) and caps ``range`` (an ``InvalidSpec``); of
  the I/O and concurrency machinery a parameter holds (okt's API client, a requests session, a logger, a lock) it
  reads text, numbers and booleans only: no list, object or method of it (an ``InvalidSpec`` too,
  :func:`okt.resources.template_readonly.machinery`);
* a recursion as deep as a value makes it (a recursive macro or ``loop()`` over a tree in the spec, a value nested
  deeper than Python recurses) raises :class:`okt.errors.InvalidSpec`, never a ``RecursionError``;
* no value makes a render build more than a child can hold: an operation, filter or format sized by a value, and the
  render's whole text and values, and the steps of its loops, stop at
  :data:`~okt.resources.template_limits.MAX_SIZE` (an ``InvalidSpec``), and a filter refuses an input larger than any
  child can hold (:data:`~okt.resources.template_limits.CHILD_SIZE`) before it walks it;
* a template that puts an expression where no value can stand (a YAML tag, a scalar tagged ``!!int``, under a merge
  key ``<<``) or outputs its own rendered text through ``{{ }}`` (a macro call, a captured ``{% set %}`` block) or a
  value whose text is its address in memory (a method not called, ``cycler()``) or text holding one (``'x' ~
  name.upper``, ``| string``, a list's text; the same text in a value of the custom resource is data), and any
  Jinja2 or YAML error,
  raises a one-line :class:`okt.errors.MutationError`;
* rendering a template again with other values parses no YAML (a new skeleton text — another branch of an
  ``{% if %}``, another length of a loop — is parsed once and cached, up to 64 KiB of text: a longer one, from a
  custom resource's long list, is parsed on each render and never kept);
* each render returns a private object;
* a template cannot change what it reads: a method changing a list, dict or set it was handed (the custom resource,
  its spec model, the params, anything they hold: ``cr.spec.hosts.append(x)``, ``labels.update(...)``) raises a
  :class:`okt.errors.MutationError` naming the line, and lists and dicts the template builds itself change as Python
  changes them (:mod:`okt.resources.template_readonly`);
* the same values render the same object: ``| random`` and ``lipsum``, which give another value at each render (the
  child's checksum changing at each reconcile, and okt rewriting it), do not compile;
* a ``{% filter %}`` block, whose result is the template's own text, takes constants only and holds no ``{{ }}`` (but
  ``indent``, which leaves its text as it is): it does not compile otherwise (a value in its arguments was YAML
  text, and its filter filtered the placeholders of the values it held, never the values).

Caveats: an expression in a YAML comment places nothing; string operations on a captured block see placeholders, not
values; ``| indent`` places its value unchanged (a value is never text YAML re-indents);
another filter after ``to_yaml`` or ``tojson`` (``| trim``) makes its text a string.
"""

from __future__ import annotations

import enum
import functools
import threading
import types
from collections.abc import Mapping
from typing import Any

import jinja2
import jinja2.compiler
import jinja2.exceptions
import jinja2.nodes
import jinja2.sandbox
import pydantic

from okt import errors
from okt.kube import objects
from okt.resources import (
    template_filters,
    template_limits,
    template_placement,
    template_readonly,
    template_recording,
    template_secrets,
    template_skeleton,
)

_compile_lock = threading.Lock()


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja2's code generator, with ``~`` joining through :func:`okt.resources.template_limits.join_text` (Jinja2's
    own join is no method of the environment the sandbox could intercept), and each ``{% for %}`` stepping through
    :func:`okt.resources.template_recording.counted` (a recursive loop's ``loop(...)`` too, see
    :meth:`_Environment.call`)."""

    def visit_For(self, node: jinja2.nodes.For, frame: jinja2.compiler.Frame) -> None:  # noqa: N802
        node.iter = jinja2.nodes.Call(jinja2.nodes.EnvironmentAttribute("counted"), [node.iter], [], None, None)
        super().visit_For(node, frame)

    def visit_FilterBlock(self, node: jinja2.nodes.FilterBlock, frame: jinja2.compiler.Frame) -> None:  # noqa: N802
        # Jinja2's own, its result checked against the block's text by template_recording.filtered_block: the
        # placeholders of the block's values must come out of the filter as they went in.
        filter_frame = frame.inner()
        filter_frame.symbols.analyze_node(node)
        self.enter_frame(filter_frame)
        self.buffer(filter_frame)
        self.blockvisit(node.body, filter_frame)
        self.start_write(frame, node)
        self.write(f"environment.filtered_block(environment.block_text({filter_frame.buffer}), ")
        self.visit_Filter(node.filter, filter_frame)
        self.write(")")
        self.end_write(frame)
        self.leave_frame(filter_frame)

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: jinja2.compiler.Frame) -> None:  # noqa: N802
        self.write("environment.join_text((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("))")


class _Environment(jinja2.sandbox.SandboxedEnvironment):
    """Jinja2's sandbox, with ``a.b`` reading a mapping's key ``b`` before its attribute, and an enum read as its value.

    The sandbox because a value of the custom resource can steer what a template reads: a format string it holds
    (``{{ cr.spec.pattern.format(name) }}`` with ``{0.__class__.__init__.__globals__}``) read the operator's module
    globals, and a ``range`` it bounds looped for ever. The sandbox refuses attributes starting with ``_`` and Python's
    internal ones (a :class:`jinja2.exceptions.SecurityError`, an ``InvalidSpec`` naming the line), every attribute of
    the I/O and concurrency machinery that is not text, a number, a boolean or none (a client's session, a logger's
    handlers, a lock's ``acquire``: what a template cannot get hold of, the read-only walk need not enter), and caps
    ``range`` at ``jinja2.sandbox.MAX_RANGE`` items; the operators, filters and string methods whose result a value
    sizes (``+``, ``~``, ``*``, ``**``, ``%``, ``join``, ``center``, ``str.format`` widths...) refuse to build more
    than a child can hold (:mod:`okt.resources.template_limits`), which the sandbox leaves alone.

    Jinja2 tries the attribute first, so without a spec model ``{{ cr.spec.values }}`` — the spec is then a plain
    dict — is the dict's ``values`` method, placed as its text, and ``{% if cr.spec.items %}`` is always true: a
    field named like a dict method (``items``, ``values``, ``keys``, ``get``...) silently reads as something else.
    A key the mapping does not have still finds the attribute (``labels.items()``).

    A spec model's enum field holds the member, whose text is its qualified name for a ``(str, Enum)``
    (``Tier.GOLD``): the template reads the value the custom resource holds (``gold``), in ``{{ }}``, ``~`` and
    comparisons alike, and ``.value`` and ``.name`` still read the member's.
    """

    intercepted_binops = frozenset({"+", "-", "*", "**", "%"})
    concat = staticmethod(template_recording.concat)
    code_generator_class = _CodeGenerator
    join_text = staticmethod(template_recording.join_text)
    counted = staticmethod(template_recording.counted)
    filtered_block = staticmethod(template_recording.filtered_block)
    block_text = staticmethod("".join)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        return template_limits.binop(operator, left, right)

    def wrap_str_format(self, value: Any) -> Any:
        return template_limits.wrap_str_format(self, value)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        kind = type(__obj)
        if kind is types.BuiltinMethodType or kind is types.MethodDescriptorType or kind is types.MethodType:
            values = template_recording.recorded.get()
            if values is not None:  # a method changing a list, dict or set the template was handed is refused
                values.inputs.check_call(__obj, args)
        if kind is jinja2.runtime.Macro:
            template_recording.step()  # its depth is bounded by Python's recursion limit, not its breadth
        elif kind is jinja2.runtime.LoopContext and args:
            # A recursive loop's loop(items) steps are the render's too: its depth is bounded by Python's recursion
            # limit, but not its breadth, and a tree the template built sharing its branches (n levels of
            # [t, t]) ran 2**n steps that output nothing.
            args = (template_recording.counted(args[0]), *args[1:])
        args = template_limits.call(__obj, args, kwargs)
        model = getattr(__obj, "__self__", None)
        if isinstance(model, pydantic.BaseModel) and getattr(__obj, "__name__", "") in _SERIALIZING:
            # Its JSON form is written by pydantic, which writes null for NaN or an infinity (model_dump_json()):
            # refused as any number JSON cannot write is, before anything is made of it.
            template_placement.refuse_not_finite_in(model, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(model, pydantic.BaseModel):
            return template_secrets.wrapped(result)  # a model's method (model_dump()) gives its secrets as they are
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict:
            if attribute in obj:
                return _read(obj[attribute])
        elif kind is not objects.CustomResource and isinstance(obj, Mapping) and attribute in obj:
            # The custom resource (``cr.name``: the attribute most templates read) is no mapping: told so without
            # the ABC check, which goes through ABCMeta.__instancecheck__.
            return _read(obj[attribute])
        elif kind not in _INTERNAL_OBJECTS and attribute[:1] != "_":
            # Plain data read from an ordinary object (``cr.name``, a spec model's field) is what the sandbox's checks
            # would let through anyway: no format method to wrap, and no attribute of code, a frame or a traceback.
            # Anything else takes the sandbox's whole path.
            value = getattr(obj, attribute, _MISSING)
            kind = type(value)
            if kind in _DATA:
                if kind is not list and kind is not dict:
                    return value
                if not template_readonly.machinery(type(obj)):  # whose lists the sandbox refuses to hand out
                    return _field(obj, attribute, value)  # a spec model's list[SecretStr] has its secrets wrapped
        value = super().getattr(obj, attribute)
        if type(obj) is template_placement.OrderedSet and isinstance(value, jinja2.Undefined):
            # A set the template reads is a frozen copy: cr.spec.tags.add(...) meant to change what it was handed.
            template_readonly.refuse_set_change("set", attribute)
        return _read(value)

    def getitem(self, obj: Any, argument: Any) -> Any:
        value = super().getitem(obj, argument)
        if isinstance(value, jinja2.Undefined):
            # The item's type, never its text: a template may read the key out of a secret (``a[b]``), and the
            # message goes to the Ready condition.
            hint = f"{type(obj).__name__!r} object has no item for that {type(argument).__name__}"
            return self.undefined(hint, obj=obj, name=argument)
        return _read(value)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if type(value) not in _PLAIN and template_readonly.machinery(type(obj)):
            return False  # of a client, a session, a logger or a lock a template reads plain values only
        return super().is_safe_attribute(obj, attr, value)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # Refused at once, naming the first attribute refused (Jinja2's Undefined went on, named the last one).
        message = f"access to attribute {attribute!r} of {type(obj).__name__!r} is unsafe"
        if template_readonly.machinery(type(obj)):
            message += " (of I/O or concurrency machinery a template reads text, numbers and booleans only)"
        raise jinja2.exceptions.SecurityError(message)


_SERIALIZING = frozenset({"model_dump", "model_dump_json", "dict", "json"})
"""The methods of a pydantic model that write its values (``dict`` and ``json`` are pydantic v1's names)."""
_DATA = frozenset({str, int, float, bool, type(None), dict, list})
"""The exact types of the values :meth:`_Environment.getattr` reads without the sandbox's checks."""
_PLAIN = frozenset({str, int, float, bool, type(None)})
"""The exact types of the values a template reads of an object of the I/O and concurrency machinery
(:func:`okt.resources.template_readonly.machinery`): no method of theirs changes them or hands out another object."""
_INTERNAL_OBJECTS = frozenset({types.CodeType, types.TracebackType, types.FrameType})
"""The objects any attribute of which the sandbox refuses (they cannot be subclassed): their plain data (a frame's
``f_globals``) never takes the short path."""
_MISSING: Any = object()


class _EnumText(str):
    """A string enum member read by a template: the value's text, with the member's ``value`` and ``name``."""

    value: str
    name: str


def _field(model: Any, name: str, value: list[Any] | dict[Any, Any]) -> Any:
    """A model's list or dict field as :func:`okt.resources.template_secrets.read_field` reads it, a copy it makes
    read-only to the template as the field is."""
    read = template_secrets.read_field(model, name, value)
    if read is not value:
        values = template_recording.recorded.get()
        if values is not None:
            values.inputs.add(read)
    return read


def _read(value: Any) -> Any:
    """A value as the template reads it: an enum as its value, a pydantic secret wrapped
    (:mod:`okt.resources.template_secrets`), a set with its items in one order
    (:func:`okt.resources.template_placement.in_order`: a loop, a join, a placement give the same whatever the set's
    history or the process)."""
    if isinstance(value, enum.Enum):
        return _enum_value(value)
    if type(value) is set or type(value) is frozenset:
        return template_recording.read_set(value)
    return template_secrets.read(value)


def _variable(value: Any) -> Any:
    """A template's variable as a render reads it, once: as :func:`_read` reads a value, and a list, tuple or dict
    holding pydantic secrets a copy with each one wrapped (a filter iterating it, ``| first``, ``| dictsort``, hands on
    no pydantic secret, whose text is its mask)."""
    kind = type(value)
    if kind is str:
        return value  # most variables (name, namespace): nothing to read
    if kind is list or kind is tuple or kind is dict:
        return template_secrets.variable(value)
    return _read(value)


def _enum_value(value: Any) -> Any:
    if not isinstance(value, enum.Enum):
        return value
    if not isinstance(value, str):
        return value  # an IntEnum's text is its number already; a plain enum's text is placed as its value's
    text = _EnumText(str.__str__(value))
    text.value, text.name = value.value, value.name
    return text


class _NoOtherTemplates(jinja2.BaseLoader):
    """Where ``{% include %}``, ``{% import %}`` and ``{% extends %}`` look: a template is one class's string, with no
    other template beside it. Without a loader Jinja2 raised a TypeError, which read as a value of the custom resource
    the template could not use (an InvalidSpec blaming the spec, for the template's own mistake)."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, None]:
        raise jinja2.TemplateNotFound(
            template,
            f"{template!r}: okt templates include, import and extend no other template (each is one class's string)",
        )


_ENV = _Environment(
    loader=_NoOtherTemplates(),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,  # YAML, not HTML
    finalize=template_recording.record,
)
_ENV.filters["to_yaml"] = template_filters.to_yaml
_ENV.filters["tojson"] = template_filters.to_json
_ENV.filters["int"] = template_filters.to_int
_ENV.filters["indent"] = template_filters.indent
_ENV.filters["float"] = template_filters.to_float
_ENV.filters["string"] = template_filters.to_string
_ENV.filters["attr"] = template_filters.attr
_ENV.filters["join"] = template_limits.join
_ENV.filters["replace"] = template_limits.replace
_ENV.filters["center"] = template_limits.center
_ENV.filters["wordwrap"] = template_limits.wordwrap
_ENV.filters["format"] = template_limits.format_
_ENV.filters["batch"] = template_limits.batch
_ENV.filters["slice"] = template_limits.slice_
_ENV.filters["sum"] = template_limits.sum_
_ENV.filters["pprint"] = template_limits.pprint
_ENV.filters["random"] = _ENV.globals["lipsum"] = template_filters.random
for _name in template_filters.LISTED:
    _ENV.filters[_name] = template_filters.listed(_ENV.filters[_name])
for _name, _filter in list(_ENV.filters.items()):
    if _name not in template_limits.CONSTANT_TIME_FILTERS:
        _ENV.filters[_name] = template_limits.bounded_input(_filter, _name, template_recording.filter_input)


_CONSTANT = (
    jinja2.nodes.Const,
    jinja2.nodes.List,
    jinja2.nodes.Tuple,
    jinja2.nodes.Dict,
    jinja2.nodes.Pair,
    jinja2.nodes.Keyword,
    jinja2.nodes.Neg,
    jinja2.nodes.Pos,
)
"""The nodes of a ``{% filter %}`` block's arguments: constants, written in the template."""
_VALUE_IN_FILTER_BLOCK = (
    "a {% filter %} block's arguments must be constants: its result is the template's own YAML text, and a value "
    "written into it (replace('NAME', cr.spec.name), format(...)) would change the child's structure with a line "
    "break or ': '; place the value with {{ }}"
)


_FILTERED_VALUE = (
    "a {% filter %} block holding {{ }} filters the template's text, never the values (okt places each value as data "
    "once the text is made, so {% filter lower %}{{ name }}{% endfilter %} placed the name unchanged, and upper made "
    "its placeholder the child's text); filter the value itself: {{ name | lower }}"
)
_TEXT_ONLY_FILTERS = frozenset({"indent"})
"""The filters a ``{% filter %}`` block holding ``{{ }}`` may have: okt's ``indent`` leaves its text as it is."""


def _refuse_values_in_filter_blocks(source: jinja2.nodes.Template) -> None:
    """Refuse a ``{% filter %}`` block whose filters take anything but constants, or that holds ``{{ }}`` values (but
    for ``indent``), at compile time: the block's result is written into the skeleton, the template's own text, so a
    value in its arguments was YAML text, never data, and its filter made text of the values' placeholders."""
    for block in source.find_all(jinja2.nodes.FilterBlock):
        names = []
        chain: jinja2.nodes.Node | None = block.filter
        while isinstance(chain, jinja2.nodes.Filter):
            names.append(chain.name)
            for argument in [*chain.args, *chain.kwargs, chain.dyn_args, chain.dyn_kwargs]:
                if argument is not None and not all(isinstance(n, _CONSTANT) for n in _nodes(argument)):
                    raise jinja2.TemplateSyntaxError(_VALUE_IN_FILTER_BLOCK, block.lineno)
            chain = chain.node
        if not _TEXT_ONLY_FILTERS.issuperset(names) and any(_places_values(output) for output in block.body):
            raise jinja2.TemplateSyntaxError(_FILTERED_VALUE, block.lineno)


def _places_values(node: jinja2.nodes.Node) -> bool:
    """Whether ``node`` holds a ``{{ }}``: an output of anything but the template's own text."""
    return any(
        not isinstance(item, jinja2.nodes.TemplateData)
        for output in _nodes(node)
        if isinstance(output, jinja2.nodes.Output)
        for item in output.nodes
    )


def _nodes(node: jinja2.nodes.Node) -> list[jinja2.nodes.Node]:
    return [node, *node.find_all(jinja2.nodes.Node)]


def _refuse_random(source: jinja2.nodes.Template) -> None:
    """Refuse ``| random`` and ``lipsum`` where the template names them, at compile time (its filters named by a
    string, ``| map('random')``, are refused when they run)."""
    for node in source.find_all((jinja2.nodes.Filter, jinja2.nodes.Name)):
        if isinstance(node, jinja2.nodes.Filter) and node.name == "random":
            raise jinja2.TemplateSyntaxError(template_filters.RANDOM, node.lineno)
        if isinstance(node, jinja2.nodes.Name) and node.name == "lipsum" and node.ctx == "load":
            raise jinja2.TemplateSyntaxError(template_filters.RANDOM, node.lineno)


@functools.lru_cache(maxsize=512)
def _compiled(template: str) -> jinja2.Template:
    with _compile_lock:
        parsed = _ENV.parse(template)
        _refuse_random(parsed)
        _refuse_values_in_filter_blocks(parsed)
        compiled = _ENV.from_string(template)
    # Jinja2 keeps a template's globals as a ChainMap over the environment's, so a global added later shows; okt's
    # environment never changes once built, and merging a ChainMap into each render's context took most of the
    # time Jinja2 spends outside the template itself (8 µs of 10 per render).
    compiled.globals = dict(compiled.globals)
    return compiled


def syntax_error(template: str) -> str | None:
    """What makes ``template`` fail to compile as Jinja2 (``line 3: unexpected '}'``), or None when it compiles.

    A class's template is compiled when the class is defined, so that a mistake in it stops the operator's start in
    one line instead of failing every object's reconcile, retried for ever."""
    try:
        _compiled(template)
    except jinja2.TemplateSyntaxError as exc:
        return f"line {exc.lineno}: {exc.message}"
    return None


_parse = template_skeleton.parse  # the skeletons' cache: its cache_info() says how many skeletons a process parsed


def _template_line(exc: BaseException) -> str:
    """The template line an exception was raised on (Jinja2 puts a frame of the template's own lines in its
    traceback), or ``?``."""
    line = "?"
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = str(tb.tb_lineno)
        tb = tb.tb_next
    return line


def render_template(template: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Render a Jinja2 YAML template into one object, each ``{{ }}`` value placed as data in its slot.

    Raises:
        okt.errors.InvalidSpec: a value cannot stand in its slot (the message says where and why), an expression
            failed on a value (``TypeError``, ``ValueError``, ``ArithmeticError``, ``AttributeError``,
            ``LookupError``: the message names its line, and holds no value of a secret the template read with
            ``get_secret_value()``; a codec's error names the character by its code, and none once the template
            read a secret's value: :func:`okt.resources.template_secrets.codec_error`), or
            read what the sandbox refuses (an attribute into Python's internals, a ``range`` beyond its cap).
        okt.errors.MutationError: the template is wrong (a Jinja2 error, YAML that does not parse, not a mapping, an
            expression where no value can stand).
    """
    context = {name: _variable(value) for name, value in variables.items()}
    values = template_recording.Values(context.values())
    token = template_recording.recorded.set(values)
    revealed: list[Any] = []
    revealed_token = template_secrets.revealed.set(revealed)
    try:
        skeleton = _compiled(template).render(context)
    except template_secrets.MadeText as exc:
        raise errors.InvalidSpec(f"template line {_template_line(exc)}: {exc}") from None
    except template_readonly.ChangesInput as exc:
        raise errors.MutationError(f"template line {_template_line(exc)}: {exc}") from None
    except jinja2.exceptions.SecurityError as exc:
        raise errors.InvalidSpec(
            f"template line {_template_line(exc)}: {exc.message}: a template reads data, never Python internals"
        ) from None
    except jinja2.TemplateError as exc:
        raise errors.MutationError(f"template error: {exc}") from exc
    except template_limits.TooLarge as exc:
        raise errors.InvalidSpec(f"template line {_template_line(exc)}: {exc}") from None
    except RecursionError as exc:
        # A recursive macro or ``loop()`` as deep as a value makes it (a tree in the spec), or a value nested deeper
        # than Python recurses: Python's limit stops it, and the spec, not a retry, decides whether it ends.
        raise errors.InvalidSpec(
            f"template line {_template_line(exc)}: recursion deeper than Python allows ({exc}): a recursive macro "
            "or loop, or a value nested that deep"
        ) from None
    except UnicodeError as exc:
        # A codec's error names a character of the value and its position: shown by its code, and not at all when
        # the render read a secret's value (one character of it is a part of it).
        raise errors.InvalidSpec(
            f"template line {_template_line(exc)}: {template_secrets.codec_error(exc, revealed)} "
            f"({type(exc).__name__}): the template cannot use a value of the custom resource there"
        ) from None
    except (TypeError, ValueError, ArithmeticError, AttributeError, LookupError) as exc:
        # Raised by an operation on a value: Jinja2 itself raises only TemplateError, so the template compiled and
        # its names resolved, and what failed is an expression on a value it was given — a value of the custom
        # resource of a type or range the template cannot use (a string where it adds a number, a zero it divides
        # by, a string where | dictsort reads a mapping's items, a format string naming a field no argument has).
        # Retrying cannot help; another spec can. A message holding a secret's value the template read is not
        # written: the Ready condition and the logs show it to whoever reads the custom resource.
        message = str(exc)
        if template_secrets.hides_revealed(message, revealed):
            message = "(its message holds the value of a secret the template read, and is not shown)"
        raise errors.InvalidSpec(
            f"template line {_template_line(exc)}: {message} ({type(exc).__name__}): the template cannot use a value "
            "of the custom resource there"
        ) from None
    finally:
        template_recording.recorded.reset(token)
        template_secrets.revealed.reset(revealed_token)
    try:
        rendered = template_placement.fill(template_skeleton.tree_of(skeleton), values)
    except template_placement.Unplaceable as exc:
        line = "" if exc.line is None else f"template line {exc.line}: "
        raise errors.InvalidSpec(f"{line}{exc.where()}: {exc.message}") from None
    except RecursionError:
        raise errors.InvalidSpec(
            "a value placed in the template is nested deeper than Python allows (its recursion limit)"
        ) from None
    if not isinstance(rendered, dict):
        raise errors.MutationError("the rendered template is not a YAML mapping")
    return rendered
