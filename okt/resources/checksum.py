"""The pure rules that decide whether a child object needs a write: checksums and the subset comparison.

Why this exists: an operator that writes on every reconcile floods the API server, bumps ``resourceVersion`` for
nothing and wakes every watcher, including itself. okt writes a child only when it has to, and that decision rests on
two independent checks, both defined here with no cluster and no I/O:

* a **checksum** of the desired object's hashable ref, stored in the child's ``<prefix>/okt-hash`` annotation. If the
  stored hash differs from the desired hash, what we want changed since we last wrote;
* a **subset comparison** of the desired object against the live one. If every field we set is still there with the
  value we set, nobody changed what we own. Fields the server or other controllers added (defaults, ``status``,
  ``clusterIP``, ``protocol: TCP`` inside ``ports``) are not ours and never count as drift.

Both must hold for a child to be left alone.

Guarantees:

* :func:`canonical_json` and :func:`checksum` depend only on the value: key order never changes them, and a pydantic
  model hashes like its wire form (aliases, ``None`` fields left out). Values JSON cannot represent exactly (NaN,
  infinities, sets, arbitrary objects) raise instead of hashing to something unstable.
* :func:`is_subset` and :func:`diff_paths` agree: ``is_subset(d, l)`` is exactly ``not diff_paths(d, l)``.

Caveats: the comparison is deliberately strict about types (``"1"`` is not ``1``, ``True`` is not ``1``); a manifest
that writes ``replicas: "3"`` will show drift until it is fixed. The one exception is what the API server does to
resource quantities: it stores their canonical form (``cpu: 0.5`` becomes ``"500m"``, ``memory: 1024Mi`` becomes
``"1Gi"``, ``cpu: 2`` becomes ``"2"``), so a live string that is exactly the canonical form of a desired
:class:`Quantity` matches it (:func:`canonical_quantity`). Only that form does: ``1Gi`` against a live ``1024Mi`` is
drift. Any other string is compared as it is — the server stores it so, and ``"1000"`` edited to ``"1k"`` is drift.
A number is compared as the server stores it too: an integer beyond ``int64`` matches the float the server keeps of
it, given back in Go's digits (``123456789012345678901`` against ``123456789012345680000``), as does a float of
``2**53`` and more that Go writes as another integer (:func:`okt.resources.stored_numbers.stored_number`); a child
built in Python holds such a number as Python computed it, and no write could change what the server gives back.
"""

from __future__ import annotations

import copy
import decimal as decimal_mod
import fractions
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pydantic

from okt.resources import stored_numbers

SERVER_OWNED_METADATA = frozenset(
    {
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
"""``metadata`` keys the API server writes; a client never sets them, so they are left out of comparisons."""

ROOT_PATH = "."
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Quantity(str):
    """A resource quantity of a desired object, as okt sends it (a number as the text JSON gives it).

    It matches a live string that is this text or the canonical form the API server stores of it
    (:func:`canonical_quantity`), and a live number whose text it is. Only values so marked get that leniency: the
    server canonicalises its quantity fields alone, so a quantity-like string anywhere else (a ConfigMap's
    ``"1000"``, a label's ``"2.0"``) edited to that form (``"1k"``, ``"2"``) has changed. okt's drift check marks the
    quantity fields of built-in kinds (:func:`okt.resources.drift_check.drift_view`).
    """

    __slots__ = ()


class KeyedList(list[Any]):
    """A list of a desired object whose items server-side apply merges by key (a Service's ports by ``port`` and
    ``protocol``, a container's env vars by ``name``), as the drift check compares it.

    It matches a live list that holds each of its items — found by its key, not its index — in the same order, with
    any other items around them: those are another manager's, which okt's apply keeps, so they are no drift. A key
    field an item leaves out stands for its ``defaults`` value there (``protocol: TCP``), which the server fills in.
    Only lists so marked are compared so (:mod:`okt.resources.list_keys` marks those of built-in kinds); any other
    list is compared item by item, at the same index.
    """

    __slots__ = ("defaults", "keys")

    def __init__(self, items: Iterable[Any], keys: tuple[str, ...], defaults: Mapping[str, Any] | None = None) -> None:
        super().__init__(items)
        self.keys = keys
        self.defaults: Mapping[str, Any] = defaults or {}

    def key_of(self, item: object) -> str | None:
        """The key of ``item`` (of this list, or of the live one) as comparable text, its numbers as the server stores
        them (:func:`okt.resources.stored_numbers.stored_key`), or None for an item that is no mapping, which has
        none."""
        if not isinstance(item, Mapping):
            return None
        return canonical_json(
            [stored_numbers.stored_key(item.get(name, self.defaults.get(name))) for name in self.keys]
        )

    def placed(self, live: list[Any] | tuple[Any, ...]) -> list[int] | None:
        """The index in ``live`` of each item of this list, in this list's order; None when ``live`` lacks one, or
        holds them in another order. Of two live items of one key (which the API server refuses), the first is
        taken."""
        found: dict[str | None, int] = {}
        for index, item in enumerate(live):
            found.setdefault(self.key_of(item), index)
        indices = []
        for item in self:
            at = found.get(self.key_of(item))
            if at is None:
                return None
            indices.append(at)
        return indices if all(a < b for a, b in itertools.pairwise(indices)) else None

    def by_key(self) -> bool:
        """Whether this list is compared by key: every item a mapping (anything else has no key, and is compared at
        its index, as in any other list)."""
        return all(_is_mapping(item) for item in self)


def _dump_model(value: object) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable; convert it before hashing")


def canonical_json(value: object) -> str:
    """The one JSON text of ``value``: sorted keys, no whitespace, UTF-8 characters kept as they are.

    Pydantic models (at any depth) are dumped first as ``model_dump(mode="json", by_alias=True, exclude_none=True)``,
    their wire form. Tuples serialise as lists. NaN and infinities raise :class:`ValueError`; any other type JSON
    cannot hold raises :class:`TypeError`.
    """
    return _CANONICAL.encode(value)


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_dump_model
)
"""The encoder of :func:`canonical_json`, made once: ``json.dumps`` with these options builds one per call, for every
child of every reconcile. It keeps no state between calls (each builds its own C encoder), so threads share it."""


def checksum(value: object) -> str:
    """The SHA-256 hex digest of :func:`canonical_json` encoded in UTF-8 (64 lowercase hex characters)."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def is_subset(desired: object, live: object) -> bool:
    """Whether ``live`` still holds everything ``desired`` sets. The rules, applied recursively:

    * **mappings** -- every key of ``desired`` must be in ``live`` and match there; keys only in ``live`` are ignored
      (server defaults, other writers). A key missing from ``live`` matches when its desired value is empty (``{}``
      or ``[]``), because the server drops empty values. A key whose desired value is ``None`` matches whatever
      ``live`` holds there, or nothing: a null asks for no value, and a write removes the field, but the server
      may default it again at once (a container's ``imagePullPolicy: null`` comes back ``IfNotPresent``), so no
      write can make it match and comparing it would write on every reconcile;
    * **lists** -- same length, and each desired element is a subset of the live element at the same index, so
      server-defaulted fields inside items (``ports[0].protocol``, ``containers[0].terminationMessagePath``) are
      ignored while an added, removed or reordered item is drift. A :class:`KeyedList` (a list server-side apply
      merges by key) matches when each desired item is a subset of the live item of its key, in the same order; live
      items of other keys are ignored (another manager's, which an apply keeps);
    * **scalars** -- equal value and kind: strings equal strings, numbers equal numbers (``1 == 1.0``), booleans
      equal booleans, ``None`` equals ``None``. No conversion between kinds (``"1"`` does not match ``1``, ``True``
      does not match ``1``) but one: a live string that is the canonical form the server gives a desired
      :class:`Quantity` (``Quantity("0.5")`` or ``Quantity("500m")`` against ``"500m"``, ``Quantity("1024Mi")``
      against ``"1Gi"``) matches it. A plain string matches only itself. A live number that is what the server
      stores for a desired one (``123456789012345680000`` for ``123456789012345678901``, beyond ``int64``) matches it
      (:func:`okt.resources.stored_numbers.stored_number`).

    Pydantic models are compared in their wire form (see :func:`canonical_json`).
    """
    return _matches(_plain(desired), _plain(live))


def narrowed(desired: Any, shape: Any) -> Any:
    """``desired`` narrowed to ``shape``: where both are mappings, only the keys ``shape`` holds, each narrowed in
    turn; anywhere else (a scalar, a list, a mapping against a scalar) the desired value whole."""
    # Runs over every field of every child on every reconcile: a scalar (most fields) is told apart by its exact
    # type, without the ABC checks.
    if type(desired) in _SCALARS or type(shape) in _SCALARS:
        return desired
    if _is_mapping(desired) and _is_mapping(shape):
        return {k: narrowed(v, shape[k]) for k, v in desired.items() if k in shape}
    return desired


def is_subset_within(desired: object, shape: object, live: object) -> bool:
    """``is_subset(narrowed(desired, shape), live)``, decided in one walk without building the narrowed copy."""
    return _matches_within(_plain(desired), shape, _plain(live))


def diff_paths(desired: object, live: object) -> list[str]:
    """The paths where :func:`is_subset` fails, in desired-document order, for logs and drift reports.

    Paths are jq-style: ``.spec.ports[0].port``, ``.metadata.annotations["okt.io/okt-hash"]`` (keys that are not
    plain identifiers are quoted: ``.["a b"]``), and ``.`` for the root. The deepest differing path is reported: a
    changed leaf names the leaf; a key missing from ``live``, a list of another length, or a value of another kind
    names that key or value.
    """
    return [path for path, _ in _mismatches(_plain(desired), _plain(live), ROOT_PATH)]


def mismatches(desired: object, live: object) -> list[tuple[str, str | None]]:
    """:func:`diff_paths`, each path with what ``live`` holds there: its :func:`canonical_json`, or None when
    ``live`` has nothing there (a missing key)."""
    return [
        (path, None if found is _MISSING else canonical_json(found))
        for path, found in _mismatches(_plain(desired), _plain(live), ROOT_PATH)
    ]


def strip_server_owned(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a Kubernetes object without what the server owns: ``status`` and :data:`SERVER_OWNED_METADATA`.

    Use it on a live object before comparing or hashing it, so a new ``resourceVersion`` or a status update never
    reads as a change. ``obj`` itself is not modified.
    """
    stripped = {key: copy.deepcopy(value) for key, value in obj.items() if key != "status"}
    metadata = stripped.get("metadata")
    if isinstance(metadata, Mapping):
        stripped["metadata"] = {key: value for key, value in metadata.items() if key not in SERVER_OWNED_METADATA}
    return stripped


def _plain(value: object) -> object:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _is_empty(value: object) -> bool:
    kind = type(value)
    if kind is dict or kind is list:
        return not value
    return value is None or (isinstance(value, Mapping | list | tuple) and len(value) == 0)


def _is_mapping(value: object) -> bool:
    """``isinstance(value, Mapping)``, the exact ``dict`` of a decoded object told apart first: an ABC check goes
    through ``ABCMeta.__instancecheck__``, several times slower, and the drift walk asks it of every field."""
    return type(value) is dict or isinstance(value, Mapping)


def _child_path(path: str, key: object) -> str:
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return f"{path}{key}" if path == ROOT_PATH else f"{path}.{key}"
    quoted = json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)
    return f"{path}[{quoted}]"


def _index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


_MISSING = object()
"""What :func:`_mismatches` gives for the live value of a key ``live`` does not have."""


def _mismatches(desired: object, live: object, path: str) -> Iterator[tuple[str, object]]:
    """The paths where ``desired`` and ``live`` differ, each with the live value there (``_MISSING``: none)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            yield path, live
            return
        for key, value in desired.items():
            if value is None:
                continue  # okt sets nothing there (see is_subset)
            if key in live:
                yield from _mismatches(value, live[key], _child_path(path, key))
            elif not _is_empty(value):
                yield _child_path(path, key), _MISSING
    elif isinstance(desired, list | tuple):
        if type(desired) is KeyedList and desired.by_key():
            placed = desired.placed(live) if isinstance(live, list | tuple) else None
            if placed is None:
                yield path, live  # an item missing or out of order: the list is named, as one of another length
                return
            assert isinstance(live, list | tuple)
            for wanted, index in zip(desired, placed, strict=True):
                yield from _mismatches(wanted, live[index], _index_path(path, index))
            return
        if not isinstance(live, list | tuple) or len(live) != len(desired):
            yield path, live
            return
        for index, (wanted, found) in enumerate(zip(desired, live, strict=True)):
            yield from _mismatches(wanted, found, _index_path(path, index))
    elif not _same_scalar(desired, live):
        yield path, live


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _matches(desired: Any, live: Any) -> bool:
    """:func:`_mismatches` yields nothing — decided without building a single path (the common, no-drift case).

    Runs for every field of every child on every reconcile: the exact JSON types (``dict``, ``list``, ``str``) are
    told apart by ``type`` before the general ``isinstance`` checks, which are several times slower for ABCs.
    """
    kind = type(desired)
    if kind is str:
        return isinstance(live, str) and desired == live
    if kind is dict or (kind not in _SCALARS and isinstance(desired, Mapping)):
        if type(live) is not dict and not isinstance(live, Mapping):  # _is_mapping(live), without the call
            return False
        for key, value in desired.items():
            if value is None:
                continue
            if key in live:
                found = live[key]
                value_kind = type(value)
                if value_kind is str:  # most fields: compared here, without a call each
                    if not (isinstance(found, str) and value == found):
                        return False
                elif (value_kind is int or value_kind is bool) and type(found) is value_kind and value == found:
                    continue  # an exact int or bool equal to the live one: what _same_scalar says, without its calls
                elif not _matches(value, found):
                    return False
            elif not _is_empty(value):
                return False
        return True
    if kind is KeyedList and desired.by_key():
        placed = desired.placed(live) if isinstance(live, list | tuple) else None
        return placed is not None and all(
            _matches(wanted, live[index]) for wanted, index in zip(desired, placed, strict=True)
        )
    if kind is list or kind is tuple or (kind not in _SCALARS and isinstance(desired, list | tuple)):
        if not isinstance(live, list | tuple) or len(live) != len(desired):
            return False
        # A loop, not all() over a generator, which costs a generator frame per list of every child's every reconcile.
        for wanted, found in zip(desired, live, strict=True):  # noqa: SIM110
            if not _matches(wanted, found):
                return False
        return True
    return _same_scalar(desired, live)


def _matches_within(desired: Any, shape: Any, live: Any) -> bool:
    """:func:`_matches` of ``narrowed(desired, shape)`` and ``live``."""
    if shape is desired:
        # A value narrowed by itself is itself: ``hashable_ref()`` covering a part whole hands on the desired
        # object's own value (the default does, for all but metadata), compared without the shape's walk.
        return _matches(desired, live)
    scalar = type(desired) in _SCALARS or type(shape) in _SCALARS  # told apart first, without the ABC checks
    if scalar or not (_is_mapping(desired) and _is_mapping(shape)):
        return _matches(desired, live)  # narrowing keeps the desired value whole
    if not _is_mapping(live):
        return False
    for key, value in desired.items():
        if value is None or key not in shape:
            continue
        if key in live:
            if not _matches_within(value, shape[key], live[key]):
                return False
        elif not _is_empty(narrowed(value, shape[key])):
            return False
    return True


def _same_scalar(desired: object, live: object) -> bool:
    if isinstance(desired, Quantity):
        if isinstance(live, str):
            return desired == live or canonical_quantity(desired) == live
        if isinstance(live, int | float) and not isinstance(live, bool):
            return desired == (str(live) if isinstance(live, int) else repr(live))
        return False
    # bool is a subclass of int in Python; in JSON they are different kinds, so they are told apart first.
    if isinstance(desired, bool) or isinstance(live, bool):
        return isinstance(desired, bool) and isinstance(live, bool) and desired == live
    if isinstance(desired, int | float) and isinstance(live, int | float):
        if desired == live:
            return True
        # Only a number of 2**53 and more may be stored as another one: any other that differs costs no call more.
        large = not -stored_numbers.EXACT_FLOATS < desired < stored_numbers.EXACT_FLOATS
        return large and stored_numbers.stored_as(desired, live)
    if isinstance(desired, str) and isinstance(live, str):
        return desired == live
    if isinstance(desired, int | float | str) or isinstance(live, int | float | str):
        return False
    return desired == live


_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?[0-9]+)|([numkMGTPE]?))"
)
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = 10**9


def quantity_amount(value: object) -> fractions.Fraction | None:
    """The amount a quantity written as ``value`` stands for (``"1Gi"`` and ``"1073741824"`` one and the same), or
    None when ``value`` is no quantity: what the API server compares when it validates a change of one."""
    return _parsed(value)[0]


def _parsed(value: object) -> tuple[fractions.Fraction | None, str | None, str | None]:
    """The amount of a quantity and the suffix family it was written in (its binary suffix, its exponent), or None
    for an amount where ``value`` is no quantity."""
    if isinstance(value, bool):
        return None, None, None
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None, None, None
        text = repr(value)  # what json.dumps sends
    elif isinstance(value, str):
        text = value
    else:
        return None, None, None
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None, None, None
    number, binary, exponent, decimal = match.groups()
    amount = fractions.Fraction(decimal_mod.Decimal(number))
    if binary is not None:
        amount *= 1024 ** _BINARY_SUFFIXES.index(binary)
    elif exponent is not None:
        amount *= fractions.Fraction(10) ** int(exponent)
    else:
        amount *= fractions.Fraction(10) ** next(k for k, v in _DECIMAL_SUFFIXES.items() if v == decimal)
    return amount, binary, exponent


def canonical_quantity(value: object) -> str | None:
    """The text the API server stores for ``value`` written in a resource quantity field (``resources.limits.cpu``,
    a ResourceQuota's ``hard``), or None when ``value`` is no quantity.

    The server parses a quantity and writes it back in its canonical form (Kubernetes' ``Quantity.String()``): the
    suffix family written is kept (binary ``Ki``..``Ei``, decimal ``n``..``E``, or an exponent ``e3``), the number is
    an integer with the largest suffix of that family that keeps it exact, and a binary quantity below 1024 or with
    a fraction is written in decimal. ``0.5`` → ``"500m"``, ``"1000m"`` → ``"1"``, ``"1024Mi"`` → ``"1Gi"``,
    ``"0.5Gi"`` → ``"512Mi"``, ``"1e3"`` → ``"1e3"``. A value finer than a nano unit (which the server rounds up) or
    beyond the suffixes' range gives None too: such a value is compared as written. (The server keeps a spelling
    that is short already as written — ``1E3``, ``+1`` — which the comparison matches as it is.)
    """
    amount, binary, exponent = _parsed(value)
    if amount is None:
        return None
    if amount == 0:
        return "0"
    if (amount * _NANO).denominator != 1:
        return None
    if binary is not None and amount.denominator == 1 and abs(amount) >= 1024:
        mantissa, power = int(amount), 0
        while mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        return f"{mantissa}{_BINARY_SUFFIXES[power]}" if power < len(_BINARY_SUFFIXES) else None
    mantissa, power = int(amount * _NANO), -9
    while mantissa % 10 == 0:
        mantissa, power = mantissa // 10, power + 1
    rest = power % 3  # down to a multiple of 3, as the server does
    mantissa, power = mantissa * 10**rest, power - rest
    if exponent is not None:
        return f"{mantissa}e{power}" if power else str(mantissa)
    suffix = _DECIMAL_SUFFIXES.get(power)
    return None if suffix is None else f"{mantissa}{suffix}"
