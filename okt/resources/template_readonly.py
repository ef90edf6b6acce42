"""What a template reads is read-only to it: a method changing a list, dict or set it was handed is refused.

Why this exists: a template is handed the custom resource, its spec model and the reconciler's params, the very
objects the reconcile goes on reading. ``{% set _ = cr.spec.hosts.append('x') %}`` (``extend``, ``pop``,
``labels.update(...)``, ``setdefault``, ``clear``...) changed them in place: each render added another item, so the
child changed at each reconcile and okt rewrote it for ever, and what read the custom resource later in the same
reconcile (``mutate_with_cr``, the status) saw a spec nobody wrote.

Jinja2's ``ImmutableSandboxedEnvironment`` refuses those methods on every list, dict, set and deque, also the ones the
template builds itself: ``{% set ns = namespace(v=[]) %}`` then ``ns.v.append(...)``, a ``| list`` result, a literal
``{}`` it fills. So the refusal here asks *whose* container it is: a method that changes its receiver (Jinja2's own
list, :func:`jinja2.sandbox.modifies_known_mutable`, called bound or as ``dict.update(labels, ...)``) is refused when
that receiver is reachable from what the render was handed, and runs as it is otherwise. A deep copy of the inputs at
each render would have made them private too, at about the cost of the render itself, and the template's change
would have been silently lost instead of named.

Guarantees:

* no render changes a list, dict or set (or another mutable container: a deque, a ``UserDict``, a
  ``MutableMapping`` written in Python) reachable from its variables: through the custom resource (its raw object,
  its metadata, labels and annotations, its spec model's fields, extra fields and ``model_fields_set``), a parameter,
  an item, a loop's item, a filter's result that hands an item on (``| first``), a list the template built holding
  one (``[cr.spec.hosts][0]``), or an object of any other kind a parameter holds (a client of the operator's own, a
  cache: its attributes and slots, what its methods hand out of them, its class's attributes, a function's defaults
  and closure, a ``functools.partial``'s arguments); the call raises :class:`ChangesInput`, which the render reports
  as a ``MutationError`` naming the template line, before anything changed;
* of the I/O and concurrency machinery a parameter holds (okt's API client, a requests session, a connection pool,
  a logger, a lock, a thread, a queue, a socket: :func:`machinery`), a template reads text, numbers and booleans only
  (the sandbox refuses the rest), so nothing it refers to is walked: such a parameter costs the walk one object;
* lists, dicts and sets the template builds itself (literals, ``namespace()``, ``dict(...)``, ``+``, a filter's new
  list) change as Python changes them;
* a render that calls no such method walks nothing: what is reachable is walked once per render, the first time a
  template calls one.

Caveats: the walk follows what each object refers to as the garbage collector sees it, but not a function's module
globals (the whole program, no value a template is handed): a function in the params handing out a list its module
holds hands out a list the template can change, and so does one handing out what the machinery holds (a method of the
operator's returning its logger's ``handlers``). A method of an object of the operator's own that changes it
(``cache.put(...)``) is the operator's method, and runs.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import gc
import types
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import jinja2.sandbox


class ChangesInput(Exception):
    """A template called a method that would change a value it was handed. Not a TypeError or ValueError, which
    Jinja2's filters catch to place a default instead."""

    def __init__(self, kind: str, method: str) -> None:
        super().__init__(
            f"{kind}.{method}() would change a value the template was given (the custom resource, its spec, the "
            "params, or something they hold): a template cannot change what it reads; build a new value instead "
            "(hosts + ['x'], dict(labels, key='value'), hosts | list, or a list of its own: namespace(v=[]))"
        )


_ATOMS = frozenset({str, int, float, bool, bytes, type(None)})
_SETS = frozenset(
    {"add", "clear", "difference_update", "discard", "intersection_update", "pop", "remove"}
    | {"symmetric_difference_update", "update"}
)
"""The methods changing a ``set``, which a frozen set a template reads lacks (see :func:`refuse_set_change`)."""
_CHANGING: dict[type[Any], frozenset[str]] = {
    list: frozenset({"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"}),
    dict: frozenset({"clear", "pop", "popitem", "setdefault", "update"}),
    set: _SETS,
}
"""The methods changing the containers a template reads most, by their exact type (Jinja2's own check of any kind
asks Python's abstract classes, several times slower)."""


def refuse_set_change(kind: str, attribute: str) -> None:
    """Raise :class:`ChangesInput` for ``attribute`` when it is a method changing a set: a template reads every set it
    is handed as a frozen, ordered copy, so the method is missing, and the template meant to change what it read."""
    if attribute in _SETS:
        raise ChangesInput(kind, attribute)


class Inputs:
    """What one render was handed, and the ids of the objects reachable from it (walked on first need)."""

    __slots__ = ("_ids", "_roots", "_texts")

    def __init__(self, roots: Iterable[Any]) -> None:
        self._roots = list(roots)  # kept, so that no id in the walk is reused by an object the template builds
        self._ids: set[int] | None = None
        self._texts: list[str] | None = None

    def hold_text(self, fragment: str) -> bool:
        """Whether a string reachable from the render's inputs (a value of the custom resource, a parameter, a key of
        their mappings) holds ``fragment``, in either case: the strings are gathered once per render, on first
        need."""
        if self._texts is None:
            texts: list[str] = []
            _walk(self._roots, set(), texts)
            self._texts = [text.lower() for text in texts]
        fragment = fragment.lower()
        return any(fragment in text for text in self._texts)

    def add(self, value: Any) -> None:
        """Count a private copy the render made of a value it read (a field's secrets wrapped) as read too."""
        self._roots.append(value)
        if self._ids is not None:
            _walk([value], self._ids)

    def check_call(self, method: Any, args: tuple[Any, ...]) -> None:
        """Raise :class:`ChangesInput` when calling ``method`` (a method, bound or not: a builtin's, or one written in
        Python, as ``collections.UserDict``'s and ``MutableMapping``'s are) with ``args`` would change a container
        reachable from the render's inputs."""
        if type(method) is types.MethodDescriptorType:
            receiver = args[0] if args else None  # dict.update(labels, ...): the dict global's methods
        else:
            receiver = getattr(method, "__self__", None)
        name = getattr(method, "__name__", "")
        if not _changes(receiver, name):
            return
        if self._ids is None:
            self._ids = reachable(self._roots)
        if id(receiver) in self._ids:
            raise ChangesInput(type(receiver).__name__, name)


def reachable(roots: Iterable[Any]) -> set[int]:
    """The ids of the objects reachable from ``roots`` that a template handed them may not change: what a render walks
    the first time its template calls a changing method."""
    seen: set[int] = set()
    _walk(roots, seen)
    return seen


def _changes(receiver: Any, name: str) -> bool:
    """Whether the method ``name`` of ``receiver`` changes it."""
    kind = type(receiver)
    changing = _CHANGING.get(kind)
    if changing is not None:
        return name in changing
    if kind in _ATOMS:
        return False
    if isinstance(receiver, collections.abc.MutableSet) and name in _SETS:
        return True  # Jinja2's list of a set's methods lacks intersection_update
    return jinja2.sandbox.modifies_known_mutable(receiver, name)


def _walk(roots: Iterable[Any], seen: set[int], texts: list[str] | None = None) -> None:
    """Add to ``seen`` the ids of the objects reachable from ``roots``: what each object refers to, as the garbage
    collector finds it (a list's items, a mapping's keys and values, an object's attributes and slots, a model's extra
    fields and ``model_fields_set``, a ``functools.partial``'s arguments, a C type's own references), a function's
    defaults and closure, a class's data attributes (which a template reads through an instance), and the attributes
    of a module handed as a variable. Not a function's globals, nor a module an object holds, nor a frame's: Python's
    whole program, no value handed. Nor what an object of the I/O and concurrency machinery refers to (see
    :func:`machinery`): a template reads plain values of it only. With ``texts``, the strings reached (a mapping's
    keys too, and the plain attributes of the machinery's objects) are added to it."""
    stack = list(roots)
    handed = {id(root) for root in stack if type(root) is types.ModuleType}
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _ATOMS or id(item) in seen:
            if texts is not None and isinstance(item, str):
                texts.append(item)
            continue
        seen.add(id(item))
        if texts is not None and isinstance(item, dict):
            stack.extend(item)
        if kind is list or kind is tuple:
            stack.extend(item)
        elif kind is types.FunctionType:
            stack.extend((item.__defaults__, item.__kwdefaults__, item.__dict__))
            stack.extend(_contents(cell) for cell in item.__closure__ or ())
        elif isinstance(item, type):
            attributes = vars(item)
            stack.extend(attributes[name] for name in _data_names(item, attributes) if name in attributes)
            stack.extend(item.__bases__)
        elif kind is types.ModuleType:
            if id(item) in handed:
                stack.extend(value for name, value in vars(item).items() if not _dunder(name))
        elif kind is dict:
            stack.extend(gc.get_referents(item))
        elif kind in _PROGRAM:
            continue
        elif machinery(kind):
            if texts is not None:  # what a template reads of it: its plain values
                texts.extend(value for value in _attributes(item) if type(value) is str)
        else:
            stack.extend(gc.get_referents(item))


_PROGRAM = frozenset({types.FrameType, types.TracebackType, types.CodeType})
"""What the walk never enters: a frame's (a traceback's) globals and a code object's constants hold no value a
template is handed (and the sandbox refuses every attribute of them)."""

_MACHINERY = frozenset(
    {"threading", "_thread", "socket", "_socket", "ssl", "_ssl", "select", "selectors", "queue", "_queue"}
    | {"logging", "asyncio", "concurrent", "subprocess", "multiprocessing", "http"}
    | {"requests", "urllib3", "pykube", "structlog"}
    | {"okt.kube.client", "okt.kube.transport", "okt.kube.tokens", "okt.kube.jsonstream"}
)
"""The modules (a top-level name stands for its package) whose objects are I/O and concurrency machinery: threads,
locks, queues, sockets, TLS contexts, loggers and their handlers, HTTP sessions, connection pools, okt's API client.
Not ``okt.kube.objects``: the custom resource a template reads is data."""
_CONTAINER_METHODS = ("__iter__", "__getitem__", "__reversed__", "__call__", "keys", "items")
"""What makes an object hand out what it holds without an attribute read: iterating it (``{% for %}``, ``| list``,
``| first``), an item of it, calling it, ``dict(...)`` and ``| dictsort`` of it."""
_MACHINERY_TYPES: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def machinery(kind: type) -> bool:
    """Whether objects of exactly the type ``kind`` are I/O and concurrency machinery a template reads plain values
    of only: a type a module of :data:`_MACHINERY` defines (an operator's subclass is the operator's own) that is no
    container and cannot be called (:data:`_CONTAINER_METHODS`).

    Of such an object the sandbox (:meth:`okt.resources.templating._Environment.is_safe_attribute`) lets a template
    read the attributes that are text, a number, a boolean or none, and nothing else: no list or dict it holds
    (``log.handlers``, ``session.headers``), no object (``client.stats``, ``log.manager``), no method
    (``lock.acquire``), read as ``a.b``, ``a['b']``, ``| attr('b')``, ``| map(attribute='b')`` or ``'{0.b}'.format(a)``
    alike; attributes starting with ``_`` are refused on every object. It cannot be iterated, indexed, called or read
    as a mapping. So a template given one gets hold of nothing it refers to but those plain values, which no method
    changes, and the walk of what a template may not change need not enter it: with okt's client or a logger in the
    params, it walked their sessions, connection pools and TLS settings and the logging module's every logger and
    handler, hundreds of objects at each render calling a changing method (a template's own ``ns.v.append(...)``
    too). Kept per type."""
    known = _MACHINERY_TYPES.get(kind)
    if known is None:
        module = getattr(kind, "__module__", None) or ""
        known = (module in _MACHINERY or module.partition(".")[0] in _MACHINERY) and not any(
            name in vars(base) for base in kind.__mro__ for name in _CONTAINER_METHODS
        )  # looked up in the classes an instance reads from, not the metaclass (a class itself can be called)
        with contextlib.suppress(TypeError):  # a type no weak reference can name
            _MACHINERY_TYPES[kind] = known
    return known


def _attributes(item: Any) -> Iterable[Any]:
    """The values of an object's instance dictionary (none for one without), read without its ``__getattr__``."""
    try:
        attributes = object.__getattribute__(item, "__dict__")
    except AttributeError:
        return ()
    return list(attributes.values()) if isinstance(attributes, dict) else ()


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


_DATA_NAMES: weakref.WeakKeyDictionary[type, tuple[int, tuple[str, ...]]] = weakref.WeakKeyDictionary()


def _data_names(kind: type, attributes: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of a class's own attributes that are data: not Python's own (``__dict__``, pydantic's
    ``__pydantic_core_schema__``), nor a method, property or other descriptor (what an instance reads of one is what
    the descriptor makes, never the class's object). Kept per class while it has as many attributes (sorting a
    model class's hundred attributes out took longer than a render)."""
    known = _DATA_NAMES.get(kind)
    if known is not None and known[0] == len(attributes):
        return known[1]
    names = tuple(
        name
        for name, value in attributes.items()
        if not _dunder(name) and getattr(type(value), "__get__", None) is None
    )
    with contextlib.suppress(TypeError):  # a class no weak reference can name
        _DATA_NAMES[kind] = (len(attributes), names)
    return names


def _dunder(name: str) -> bool:
    """Whether ``name`` is one of Python's own attributes of a class or module (``__dict__``, ``__doc__``, pydantic's
    ``__pydantic_core_schema__``): they hold no value a template is handed, and walking them took longer than the
    render."""
    return name[:2] == "__" and name[-2:] == "__"
