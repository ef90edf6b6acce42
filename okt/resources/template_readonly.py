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

* no render changes a list, dict or set reachable from its variables: through the custom resource (its raw object,
  its metadata, labels and annotations, its spec model's fields, extra fields and ``model_fields_set``), a parameter,
  an item, a loop's item, a filter's result that hands an item on (``| first``), or a list the template built
  holding one (``[cr.spec.hosts][0]``); the call raises :class:`ChangesInput`, which the render reports as a
  ``MutationError`` naming the template line, before anything changed;
* lists, dicts and sets the template builds itself (literals, ``namespace()``, ``dict(...)``, ``+``, a filter's new
  list) change as Python changes them;
* a render that calls no such method walks nothing: what is reachable is walked once per render, the first time a
  template calls one.

Caveats: the walk follows lists, tuples, sets, mappings, pydantic models, dataclasses, simple namespaces and the custom
resource; a container held by an object of another kind in the params (a client, a cache) is not walked, and a
template reaching it through that object's attributes can change it.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import types
from collections.abc import Iterable, Mapping
from typing import Any

import jinja2.sandbox
import pydantic

from okt.kube import objects


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

    __slots__ = ("_ids", "_roots")

    def __init__(self, roots: Iterable[Any]) -> None:
        self._roots = list(roots)  # kept, so that no id in the walk is reused by an object the template builds
        self._ids: set[int] | None = None

    def add(self, value: Any) -> None:
        """Count a private copy the render made of a value it read (a field's secrets wrapped) as read too."""
        self._roots.append(value)
        if self._ids is not None:
            _walk([value], self._ids)

    def check_call(self, method: Any, args: tuple[Any, ...]) -> None:
        """Raise :class:`ChangesInput` when calling ``method`` (a builtin method, bound or not) with ``args`` would
        change a container reachable from the render's inputs."""
        if type(method) is types.MethodDescriptorType:
            receiver = args[0] if args else None  # dict.update(labels, ...): the dict global's methods
        else:
            receiver = getattr(method, "__self__", None)
        name = getattr(method, "__name__", "")
        if not _changes(receiver, name):
            return
        if self._ids is None:
            self._ids = set()
            _walk(self._roots, self._ids)
        if id(receiver) in self._ids:
            raise ChangesInput(type(receiver).__name__, name)


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


def _walk(roots: Iterable[Any], seen: set[int]) -> None:
    """Add to ``seen`` the ids of the objects reachable from ``roots`` through the kinds a template reads data of."""
    stack = list(roots)
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _ATOMS or id(item) in seen:
            continue
        seen.add(id(item))
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple or isinstance(item, list | tuple | set | frozenset | collections.deque):
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, pydantic.BaseModel):
            stack.extend(vars(item).values())
            stack.append(item.__pydantic_fields_set__)
            if item.__pydantic_extra__:
                stack.append(item.__pydantic_extra__)
        elif isinstance(item, objects.CustomResource):
            stack.append(item.raw)
            stack.append(item.spec)
        elif isinstance(item, types.SimpleNamespace):
            stack.extend(vars(item).values())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, field.name, None) for field in dataclasses.fields(item))
