"""Filters of one timer or daemon: ``labels=``, ``annotations=`` and ``when=`` on ``@okt.every`` and ``@okt.daemon``
(Kopf's filters of a handler, daemon or timer).

Why this exists: the reconciler's filters (the label selector of ``okt run -l``, ``annotation_selector``,
``when(obj)``) choose the objects okt watches and reconciles at all. Some work concerns a few of them only — a backup
timer of the Widgets labelled ``tier=cache``, a daemon of those a user annotated for monitoring: a filter of its own
says so, and the other objects are still reconciled, their other timers and daemons run.

Matching, as ``annotation_selector``'s: each key of ``labels`` (of ``annotations``) must be on the object, with that
value — a ``str``, compared as it is — or with any value when it is None; ``when(obj)`` is then called with the
object (as the reconcile or the event has it: read it, never change it) and the object passes when it returns
something true. There is no marker of a label that must be absent, nor a value that is a callable (Kopf's
``kopf.ABSENT``, ``kopf.PRESENT`` is None here): ``when`` says anything else.

Guarantees: declaration mistakes are refused at decoration, naming the option (:func:`declare`); a ``when`` that
raises is no crash: the object does not pass, and the error is logged once per object and timer or daemon while it
keeps raising (:class:`Raised`), not at every reconcile or event.

Caveat: ``when`` runs where the filter is looked at — a timer's in the reconcile, on its worker; a daemon's at each
event of the kind, on the thread that tells them, while the supervisor holds its lock — so a slow one holds back the
events of the kind and the starts and stops of the daemons meanwhile: keep it quick and pure, as the reconciler's own.
"""

from __future__ import annotations

import dataclasses
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import structlog

from okt import errors, secret_values
from okt.kube import selectors

When = Callable[[Mapping[str, Any]], object]
"""``when(obj)``: whether a timer or daemon concerns the object (anything true: it does)."""


@dataclasses.dataclass(frozen=True)
class Filter:
    """Which objects a timer or daemon concerns (see the module docstring).

    Attributes:
        labels: label keys mapped to the value each must have, or to None (present, any value).
        annotations: annotation keys mapped likewise.
        when: called with the object once its labels and annotations matched, or None.
    """

    labels: Mapping[str, str | None] = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    annotations: Mapping[str, str | None] = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    when: When | None = None

    def passes(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` passes; raises what ``when`` raises."""
        return self.labels_match(obj) and (self.when is None or bool(self.when(obj)))

    def labels_match(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj``'s labels and annotations match (``when`` not called): only a change of them, which
        reconciles the object, can make one that does not match pass."""
        meta = obj.get("metadata") or {}
        for wanted, held in (
            (self.labels, meta.get("labels") or {}),
            (self.annotations, meta.get("annotations") or {}),
        ):
            for key, value in wanted.items():
                if key not in held or (value is not None and held[key] != value):
                    return False
        return True


def declare(
    decorator: str,
    labels: object = None,
    annotations: object = None,
    when: object = None,
) -> Filter | None:
    """The filter of ``labels``, ``annotations`` and ``when`` as ``decorator`` (``@okt.every``, ``@okt.daemon``) was
    given them; None when none was given (the timer or daemon concerns every object).

    Raises:
        TypeError: ``labels`` or ``annotations`` is not None or a mapping of keys the API server takes to a ``str`` or
            None (a label's value one it takes too: another would never match), or ``when`` is not None or a
            callable.
    """
    checked: dict[str, Mapping[str, str | None]] = {}
    for option, given in (("labels", labels), ("annotations", annotations)):
        if given is None:
            checked[option] = types.MappingProxyType({})
            continue
        valid = isinstance(given, Mapping) and all(
            isinstance(key, str)
            and selectors.is_label_key(key)
            and (value is None or (isinstance(value, str) and (option != "labels" or selectors.is_label_value(value))))
            for key, value in given.items()
        )
        if not valid:
            example = '{"tier": "cache"}' if option == "labels" else '{"example.com/backup": None}'
            raise TypeError(
                f"{decorator}({option}={given!r}): expected a mapping of {option[:-1]} keys to a value (a str) or None "
                f"(any value), e.g. {option}={example}"
            )
        checked[option] = types.MappingProxyType(dict(cast("Mapping[str, str | None]", given)))
    if when is not None and not callable(when):
        raise TypeError(f"{decorator}(when={when!r}): expected a callable when(obj) returning whether it concerns obj")
    if not checked["labels"] and not checked["annotations"] and when is None:
        return None
    return Filter(checked["labels"], checked["annotations"], when)


class Raised:
    """The objects (by uid) whose timers' or daemons' ``when`` raised at its last call: each error is logged once per
    object and timer or daemon while it keeps raising, and again once it raised after a call that did not.

    At most :attr:`LIMIT` are kept (forgotten all at once past it: a few are logged again); a deleted object's go with
    it (:meth:`forget`).
    """

    LIMIT = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[tuple[str, str]] = set()

    def passes(
        self,
        filter_: Filter,
        obj: Mapping[str, Any],
        uid: str,
        name: str,
        log: structlog.typing.FilteringBoundLogger,
        what: str,
    ) -> bool:
        """Whether ``obj`` (uid ``uid``) passes the filter of the timer or daemon ``name`` (``what`` is "timer" or
        "daemon"); False when its ``when`` raised, logged as an error the first time in a row."""
        key = (uid, name)
        try:
            passed = filter_.passes(obj)
        except KeyboardInterrupt:  # Ctrl-C on the main thread (okt.reconcile in a script): the user's
            raise
        except BaseException as exc:  # any: a daemon's is called on the informer's thread, which one would end
            with self._lock:
                first = key not in self._keys
                if first:
                    if len(self._keys) >= self.LIMIT:
                        self._keys.clear()
                    self._keys.add(key)
            if first:
                # The object may be a Secret (a reconciler of Secrets): its values are left out of what is said, the
                # traceback included (a daemon's filter runs at an event, in no block of okt.secret_values).
                with secret_values.given(obj):
                    log.error(
                        f"when() of a {what} raised: the object does not pass its filter",
                        **{what: name},
                        error=errors.said(exc),
                        **errors.where_raised(exc),
                    )
            return False
        with self._lock:
            self._keys.discard(key)
        return passed

    def forget(self, uid: str, names: Iterable[str]) -> None:
        """Drop what is kept of the object ``uid`` for the timers or daemons ``names``."""
        with self._lock:
            for name in names:
                self._keys.discard((uid, name))

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)
