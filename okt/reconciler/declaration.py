"""The checks a :class:`okt.Reconciler` subclass's declaration passes when its ``class`` statement runs.

Why this exists: a Reconciler's class attributes are read at run time, far from the class — in every reconcile, at the
start of ``okt run``, in an informer's filter — where a wrong one (``owns = (ConfigMapRes)`` without its comma,
``prune = "false"``, ``finalizer = True``, a set for ``annotation_selector``) failed with a traceback unrelated to the
declaration, or silently did something else; a name one slip from okt's (``def on_delete``, ``finaliser = ...``) was
an attribute of the class's own, never called nor read. :func:`check`, called by ``Reconciler.__init_subclass__``,
refuses each wrong declaration where it is written, with a ``TypeError`` naming the attribute, the value and what is
expected, and warns of a slip (:class:`DeclarationWarning`, naming the name meant).

Guarantees: a class that passes is one every later read of its declaration can rely on (kinds of values, names the
API server takes, no choice okt does not know); nothing here reads the cluster.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pydantic

from okt import coroutines, delays, hooks
from okt import names as names_mod
from okt.engines import freestyle, stepper
from okt.kube import kinds, selectors
from okt.reconciler import daemons, timers
from okt.reconciler import watches as watches_mod
from okt.resources import resource, writing
from okt.status import bookkeeping

if TYPE_CHECKING:
    from okt.reconciler.reconciler import Reconciler


class Drawn(Protocol):
    """What a reconciler's ``lifecycle`` is: an ``okt.Lifecycle``, seen from this layer (below it) as what draws it."""

    def mermaid(self, *, guards: bool = False, title: str | None = None) -> str: ...


AWAITED = frozenset(
    {
        "enter_in_state",
        "reconcile_with_cr",
        "resources",
        "check",
        "default",
        "cleanup",
        "on_deleted",
        "ready",
        "available",
        "progressing",
        "target_versions",
        "degraded",
    }
)
"""The reconciler's hooks okt calls through :func:`okt.coroutines.call`: each may be ``async def``."""
FILTERS = frozenset({"when", "selects"})
"""The reconciler's filters: called by the informer at every event of the watch, as plain predicates."""
HOOKS = AWAITED | FILTERS
"""The methods of a reconciler an author overrides, each called by its name."""


def _check_coroutines(cls: type[Reconciler]) -> None:
    """Refuse an ``async def`` okt would call and never await: a filter, or another method of okt's that is no hook
    (an ``async def`` hook, timer or daemon is awaited; one of the operator's own methods is the operator's to
    await). An async generator is refused everywhere."""
    for name, member in vars(cls).items():
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        where = f"{cls.__qualname__}.{name}"
        coroutines.refuse_async_generator(function, where)
        if not inspect.iscoroutinefunction(function) or name in AWAITED:
            continue
        if name in FILTERS:
            raise TypeError(
                f"{where} is 'async def', but it is a filter: okt's informer calls it at every event of the watch, "
                "as a plain predicate. Write 'def'."
            )
        if any(name in vars(base) for base in cls.__mro__[1:] if base.__module__.startswith("okt.")):
            raise TypeError(
                f"{where} is 'async def', but okt calls {name} as a plain function and never awaits it. Write 'def'."
            )


def _distance(a: str, b: str) -> int:
    """The edits (a letter inserted, removed, replaced, or two neighbours swapped) that turn ``a`` into ``b``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def near_miss(name: str, known: Iterable[str], *, any_case: bool = True) -> str | None:
    """The one of okt's ``known`` names ``name`` is a slip of, if any: the same but for its case (with ``any_case``),
    or one typo away (two for a name of 8 letters or more) and alike as :mod:`difflib` sees it. A name further off
    is the author's own."""
    lowered = name.lower() if any_case else name
    allowed = 2 if len(name) >= 8 else 1
    for candidate in difflib.get_close_matches(lowered, known, n=3, cutoff=0.85):
        if candidate != name and _distance(lowered, candidate) <= allowed:
            return candidate
    return None


def _could_be(value: object, default: object) -> bool:
    """Whether ``value`` is of the kind of value a setting whose default is ``default`` takes (loosely: a slip of its
    name is refused only then). ``namespace = "team-a"`` beside ``namespaced`` (a bool), ``version = "1.4"`` beside
    ``versions`` (a mapping), ``stats = {}`` beside ``status`` are values of the author's own, not slips."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, int | float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, Mapping):
        return isinstance(value, Mapping)
    if isinstance(default, Sequence):
        return (isinstance(value, Sequence) and not isinstance(value, str)) or isinstance(value, type)
    if default is None:  # a name, a model class, a count, where the status goes
        return value is None or isinstance(value, str | int | type)
    return True


class DeclarationWarning(UserWarning):
    """A Reconciler's method or attribute whose name is one slip from one of okt's hooks or declarations."""


def _check_near_misses(cls: type[Reconciler]) -> None:
    """Warn of a method or attribute whose name is a slip of one of okt's: ``def on_delete`` for ``on_deleted``,
    ``def enter_in_sate``, ``finaliser = ...``, ``own = [...]``, ``apply_stratgy = "merge"``, ``Kind = ...``.

    Why: okt reads its hooks and settings by name; one misspelt is an attribute of the author's own, which okt never
    calls nor reads: the operator ran without the cleanup, the children or the strategy written, and nothing said
    so. A method is compared with okt's hooks, any other value with its settings (when it is of the kind of value the
    setting takes); names starting with ``_``, names of okt's and timers and daemons (called by their own name) are
    the author's to choose."""
    okt_names = {name for base in cls.__mro__ if base.__module__.startswith("okt.") for name in vars(base)}
    settings = {
        name
        for base in cls.__mro__
        if base.__module__.startswith("okt.")
        for name in getattr(base, "__annotations__", {})
    }
    for name, member in vars(cls).items():
        if name.startswith("_") or name in okt_names:
            continue
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if getattr(function, timers.MARK, None) is not None or getattr(function, daemons.MARK, None) is not None:
            continue
        is_method = inspect.isfunction(function)
        # A class nested in the reconciler (``class Status(pydantic.BaseModel)``) is named in CamelCase: its case
        # says it is the author's own.
        meant = near_miss(name, HOOKS if is_method else settings, any_case=not isinstance(member, type))
        if meant is None or not (is_method or _could_be(member, getattr(cls, meant))):
            continue
        what = "calls" if is_method else "reads"
        # Said, not refused: the likeness is a guess, and a helper of the author's own (``def resource``) that only
        # looks like a hook must not stop the operator from loading.
        warnings.warn(
            f"{cls.__qualname__}.{name}: did you mean {meant}? okt never {what} {name} (a name of your own that "
            "only looks like okt's: start it with '_')",
            DeclarationWarning,
            stacklevel=4,  # the class statement: here, check, __init_subclass__, the class's creation
        )


def _unwrapped(member: object) -> object:
    """The function a ``staticmethod``, ``classmethod``, ``property`` or ``cached_property`` holds (``member`` else)."""
    if isinstance(member, property):
        return member.fget
    if isinstance(member, functools.cached_property):
        return member.func
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    return member


def _check_hidden_handlers(cls: type[Reconciler]) -> None:
    """Refuse a decorator of okt's put where okt never looks for it, in the class: ``@okt.every`` or ``@okt.daemon``
    under ``@staticmethod``, ``@classmethod`` or ``@property`` (the mark is on the function those wrap, which okt does
    not see), and ``@okt.on_startup``, ``@okt.on_cleanup`` or ``@okt.probe`` on a method (okt finds those among the
    module's functions). Accepted, the timer, daemon or hook was never called, and nothing said so."""
    for name, member in vars(cls).items():
        where = f"{cls.__qualname__}.{name}"
        function = _unwrapped(member)
        if function is not member:
            wrapper = f"@{type(member).__name__}"
            for mark, decorator in ((timers.MARK, "@okt.every"), (daemons.MARK, "@okt.daemon")):
                if getattr(function, mark, None) is not None:
                    raise TypeError(
                        f"{where}: {decorator} under {wrapper} is never seen, so never called: okt calls a timer or "
                        f"a daemon as a method of the reconciler, def {name}(self, ctx); drop {wrapper}"
                    )
        hook = hooks.decorator_of(function)
        if hook is not None:
            raise TypeError(
                f"{where}: {hook} on a method is never called: okt finds it among the operator module's "
                f"functions; define {name} at the top level of the module, outside the class"
            )


def check(cls: type[Reconciler]) -> None:
    """Refuse ``cls``'s declaration where it is wrong (a ``TypeError`` naming the attribute and what it expects)."""
    _check_coroutines(cls)
    _check_near_misses(cls)
    _check_hidden_handlers(cls)
    try:
        cls.status_target()
    except ValueError as exc:
        raise TypeError(f"{cls.__name__}.{exc}") from None
    _check_owns(cls)
    _check_legacy_owns(cls)
    _check_watches(cls)
    _check_write_choices(cls)
    _check_legacy_field_managers(cls)
    _check_mappings(cls)
    _check_annotation_selector(cls)
    _check_models(cls)
    if cls.lifecycle is not None and not callable(getattr(cls.lifecycle, "mermaid", None)):
        raise TypeError(f"{cls.__name__}.lifecycle = {cls.lifecycle!r}: expected an okt.Lifecycle")
    if not isinstance(cls.prefix, str) or not selectors.is_label_key(names_mod.Names(cls.prefix).owner_label):
        # Every reconcile with a child would fail on okt's own labels: the create, the prune's label selector.
        raise TypeError(f"{cls.__name__}.prefix = {cls.prefix!r}: expected a DNS subdomain, e.g. 'okt.io'")
    _check_legacy_prefixes(cls)
    legacy = cls.legacy_finalizers
    if isinstance(legacy, str) or not all(isinstance(name, str) for name in legacy):
        # A str would be read letter by letter: an object still carrying the old finalizer never released.
        raise TypeError(
            f"{cls.__name__}.legacy_finalizers = {legacy!r}: expected a tuple of finalizer names, e.g. "
            '("example.com/old-cleanup",)'
        )
    for name in legacy:
        if name in GARBAGE_COLLECTOR_FINALIZERS:
            # okt would remove it with its own from every object deleted with propagationPolicy Orphan or
            # Foreground, before the garbage collector acted on it: children meant to be orphaned deleted with
            # their owner, an owner meant to wait for its children gone first.
            raise TypeError(
                f"{cls.__name__}.legacy_finalizers = {legacy!r}: {name!r} is the garbage collector's own finalizer "
                "(it removes it itself, once it orphaned or deleted the children); list only the names this "
                "operator added"
            )
    if not isinstance(cls.engine, stepper.Stepper | freestyle.FreeStyle):
        # ``engine = okt.FreeStyle`` (the class) would fail every reconcile, on run()'s arguments.
        raise TypeError(f"{cls.__name__}.engine = {cls.engine!r}: expected okt.Stepper() or okt.FreeStyle()")
    _check_settings(cls)
    if cls.finalizer in GARBAGE_COLLECTOR_FINALIZERS:
        raise TypeError(
            f"{cls.__name__}.finalizer = {cls.finalizer!r}: the garbage collector's own finalizer (it acts on it "
            "and removes it, so the object could go before its cleanup ran); expected a name of yours, e.g. "
            '"example.com/cleanup"'
        )


def _check_owns(cls: type[Reconciler]) -> None:
    """Refuse an ``owns`` that is not a sequence of resource classes (``owns = (ConfigMapRes)`` lacks its comma): it
    would fail every reconcile, and the start of ``okt run``, with a TypeError far from the declaration."""
    owns = cls.owns
    if isinstance(owns, type) and issubclass(owns, resource.Resource):
        raise TypeError(
            f"{cls.__name__}.owns = {owns.__name__}: expected a tuple of resource classes: "
            f"({owns.__name__},), with its comma"
        )
    if (
        isinstance(owns, str)
        or not isinstance(owns, Sequence)
        or not all(isinstance(c, type) and issubclass(c, resource.Resource) for c in owns)
    ):
        raise TypeError(f"{cls.__name__}.owns = {owns!r}: expected a tuple of resource classes")


def legacy_pairs(legacy: Iterable[tuple[str, str] | kinds.Kind]) -> tuple[tuple[str, str], ...]:
    """``legacy_owns`` as ``(api_version, kind)`` pairs (an ``okt.Kind`` read as its pair)."""
    return tuple((k.api_version, k.kind) if isinstance(k, kinds.Kind) else (k[0], k[1]) for k in legacy)


def _check_legacy_owns(cls: type[Reconciler]) -> None:
    """Refuse ``legacy_owns`` that are not a tuple of ``(api_version, kind)`` pairs (or ``okt.Kind``) of kinds outside
    ``owns``: a resource class or a lone pair would be read item by item and fail every prune far from the
    declaration, and a kind still owned (in any version of its group) would be listed twice for nothing."""
    legacy = cls.legacy_owns
    if (
        isinstance(legacy, str)
        or not isinstance(legacy, Sequence)
        or not all(
            isinstance(entry, kinds.Kind)
            or (
                isinstance(entry, tuple)
                and len(entry) == 2
                and all(isinstance(part, str) and part and part.strip() == part for part in entry)
                and kinds.API_VERSION.fullmatch(entry[0])
            )
            for entry in legacy
        )
    ):
        raise TypeError(
            f"{cls.__name__}.legacy_owns = {legacy!r}: expected a tuple of (api_version, kind) pairs, "
            "e.g. (('v1', 'ConfigMap'),)"
        )
    owned = {(c.api_version.rpartition("/")[0], c.kind): c for c in cls.owns}
    for api_version, kind in legacy_pairs(legacy):
        still = owned.get((api_version.rpartition("/")[0], kind))
        if still is not None:
            raise TypeError(
                f"{cls.__name__}.legacy_owns: {kind} ({api_version}) is in owns too ({still.__name__}): a kind the "
                "reconciler owns is pruned as such; keep it in one of the two"
            )


def _check_legacy_prefixes(cls: type[Reconciler]) -> None:
    """Refuse ``legacy_prefixes`` that are not a tuple of prefixes other than ``prefix``: a str would be read letter
    by letter, a name no label can carry would fail the reads of every prune, and the current prefix listed again
    would have okt remove, on every write, what it has just written."""
    legacy = cls.legacy_prefixes
    if (
        isinstance(legacy, str)
        or not isinstance(legacy, Sequence)
        or not all(
            isinstance(p, str) and p != cls.prefix and selectors.is_label_key(names_mod.Names(p).owner_label)
            for p in legacy
        )
    ):
        raise TypeError(
            f"{cls.__name__}.legacy_prefixes = {legacy!r}: expected a tuple of earlier prefixes (DNS subdomains other "
            f"than prefix {cls.prefix!r}), e.g. ('old.example.com',)"
        )


def _check_watches(cls: type[Reconciler]) -> None:
    """Refuse ``watches`` that are not a sequence of :func:`okt.watch` declarations (a kind's name, or a kind, given
    without its ``map``): the start of ``okt run`` would fail on it with an AttributeError far from the declaration. A
    lone ``okt.watch(...)`` (``watches = (okt.watch(...))`` lacks its comma) failed every reconcile and that start
    with ``'Watch' object is not iterable``."""
    watched = cls.watches
    if isinstance(watched, watches_mod.Watch):
        raise TypeError(
            f"{cls.__name__}.watches = {watched!r}: expected a tuple of okt.watch(kind, map=...): "
            "(okt.watch(...),), with its comma"
        )
    if isinstance(watched, str) or not isinstance(watched, Sequence):
        watched = (watched,)
    if not all(isinstance(w, watches_mod.Watch) for w in watched):
        raise TypeError(f"{cls.__name__}.watches = {cls.watches!r}: expected a tuple of okt.watch(kind, map=...)")
    # One name, one index: ctx.indexed(name) and the cache's index names would say one of two.
    seen = set(cls.indexes) if isinstance(cls.indexes, Mapping) else set()
    for w in watched:
        for name in w.indexes:
            if name in seen:
                raise TypeError(
                    f"{cls.__name__}: index {name!r} is declared twice (in indexes or in two watches): name each "
                    "index once"
                )
            seen.add(name)


def _check_mappings(cls: type[Reconciler]) -> None:
    """Refuse a ``params``, ``versions`` or ``indexes`` that is not a mapping (``None``, a string, a list): copied
    into every reconcile's context, it would fail every reconcile with a traceback, nothing reported on the object."""
    for attribute in ("params", "versions", "indexes"):
        value = getattr(cls, attribute)
        if not isinstance(value, Mapping):
            raise TypeError(f"{cls.__name__}.{attribute} = {value!r}: expected a mapping (a dict)")


def _check_annotation_selector(cls: type[Reconciler]) -> None:
    """Refuse an ``annotation_selector`` that is not annotation keys mapped to a str or None. A set or a list of keys
    (no ``.items()``) raised in the informer's filter on every list, so the primaries never synced; a value that is no
    str (``True``: annotations are strings) or a key no annotation can have silently selected no object at all."""
    selector = cls.annotation_selector
    if not isinstance(selector, Mapping) or not all(
        isinstance(key, str) and selectors.is_label_key(key) and (value is None or isinstance(value, str))
        for key, value in selector.items()
    ):
        raise TypeError(
            f"{cls.__name__}.annotation_selector = {selector!r}: expected a mapping of annotation keys to a value or "
            'None (any value), e.g. {"example.com/managed": None}'
        )


def _check_models(cls: type[Reconciler]) -> None:
    """Refuse a ``spec_model`` or ``status_model`` that is no pydantic model (a dict of fields, ``dict``): every
    reconcile would fail on it, and a bad ``status_model`` fails the ErrorManager's status write too, so not even
    Ready=False would be written. (A model instance reads as its model: it is let through.)"""
    for attribute in ("spec_model", "status_model"):
        model = getattr(cls, attribute)
        if model is None or isinstance(model, pydantic.BaseModel):
            continue
        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
            raise TypeError(f"{cls.__name__}.{attribute} = {model!r}: expected a pydantic model class or None")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # a bool is an int to Python: True would be 1


_SETTINGS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("namespaced", lambda v: isinstance(v, bool), "True or False"),
    ("prune", lambda v: isinstance(v, bool), "True or False"),
    ("related_objects", lambda v: isinstance(v, bool), "True or False"),
    ("record_events", lambda v: isinstance(v, bool), "True or False"),
    ("degraded_after", lambda v: _is_int(v) and v >= 1, "a positive int (failed reconciles)"),
    ("max_creates", lambda v: v is None or (_is_int(v) and v >= 1), "a positive int or None"),
    ("max_concurrent", lambda v: v is None or (_is_int(v) and v >= 1), "a positive int or None"),
    (
        "child_change_delay",
        lambda v: delays.is_seconds(v, zero=True),
        "a number of seconds >= 0",
    ),
    (
        "finalizer",
        lambda v: v is None or (isinstance(v, str) and selectors.is_label_key(v)),
        'a finalizer name or None, e.g. "example.com/cleanup"',
    ),
    ("field_manager", lambda v: isinstance(v, str), "a name"),
    ("name", lambda v: v is None or isinstance(v, str), "a name or None"),
    ("cluster_operator", lambda v: v is None or isinstance(v, str), "a name or None"),
)
"""The plain settings of a Reconciler and what each must be. Each is read only at run time, far from the class: a
``prune = "false"`` pruned (a non-empty str is true), ``degraded_after = "3"`` raised in the ErrorManager before
Ready=False was written (and ``0`` or ``-1`` silently meant 1: Degraded at the first failure), ``max_concurrent =
"4"`` failed ``okt run``'s start with a traceback, ``finalizer = True`` went into every object's
``metadata.finalizers`` (a list of names), and a name the API server refuses (it takes a qualified name, as a label
key: ``"example.com/clean up"``) had every finalizer patch answered 422, read as a lost race and retried for ever, no
child written; ``""`` silently meant no cleanup."""


GARBAGE_COLLECTOR_FINALIZERS = frozenset({"orphan", "foregroundDeletion"})
"""The finalizers the garbage collector acts on: on a deleted object it orphans or deletes the dependents, then removes
the name itself — whether or not okt's cleanup ran."""


def _check_settings(cls: type[Reconciler]) -> None:
    for attribute, valid, expected in _SETTINGS:
        value = getattr(cls, attribute)
        if not valid(value):
            raise TypeError(f"{cls.__name__}.{attribute} = {delays.said(value)}: expected {expected}")


def _check_write_choices(cls: type[Reconciler]) -> None:
    """Refuse an ``apply_strategy`` or a ``persistence`` okt does not know (``"server-side"``, ``"annotation"``): read
    only when a reconcile builds its settings, it would fail every reconcile with a traceback, nothing reported on
    the object."""
    choices: tuple[tuple[str, type[writing.Strategy] | type[bookkeeping.Persistence]], ...] = (
        ("apply_strategy", writing.Strategy),
        ("persistence", bookkeeping.Persistence),
    )
    for attribute, enum_cls in choices:
        value = getattr(cls, attribute)
        try:
            enum_cls(value)
        except ValueError:
            accepted = " or ".join(repr(member.value) for member in enum_cls)
            raise TypeError(f"{cls.__name__}.{attribute} = {value!r}: expected {accepted}") from None


def _check_legacy_field_managers(cls: type[Reconciler]) -> None:
    """Refuse ``legacy_field_managers`` that are not a tuple of names other than ``field_manager``: a str would be
    read letter by letter, and the current manager listed would take over its own apply entry, for nothing."""
    legacy = cls.legacy_field_managers
    if (
        isinstance(legacy, str)
        or not isinstance(legacy, Sequence)
        or not all(isinstance(name, str) and name and name != cls.field_manager for name in legacy)
    ):
        raise TypeError(
            f"{cls.__name__}.legacy_field_managers = {legacy!r}: expected a tuple of the field managers an earlier "
            f"version wrote as (other than field_manager {cls.field_manager!r}), e.g. ('okt',)"
        )
