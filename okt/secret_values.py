"""The values of the Secrets a reconcile read, left out of what okt says of its errors.

Why this exists: okt says an error three ways — a log line, the Ready condition's message and a Warning Event — and
the last two are read by whoever can read the custom resource, not only by those who can read its Secrets. okt's own
errors never quote a value (a refusal of the API server is said without the values it quotes), but the text of an
exception of the operator's own code is the operator's: a hook that reads a Secret then fails on its value raises
``KeyError: 'hunter2'`` (a lookup by it), ``ValueError: invalid literal for int() with base 10: 'hunter2'`` (a port
that is not one), or a message of its own that quotes it. okt cannot tell such a text from a sentence, but it knows
which Secrets the reconcile read: their values are left out of every message said of an exception, wherever it is
said, since each of those goes through :func:`okt.errors.message_of`.

Guarantees:

* :func:`held` binds a fresh record to the running context for a block (a reconcile, a daemon's runs, an admission
  or a conversion review, a call of a hook okt runs outside those: ``on_deleted``, a start-up or clean-up hook, a
  probe, a watch's mapping of one event); the kube client's reads of Secrets (:func:`hold`: ``get``, ``list``,
  through ``ctx.client`` or the runtime's readers), a reconcile's primary when it is a Secret (however it was read),
  the Secret ``on_deleted`` is given, a reconcile's Secret children (desired and live) and a Secret under review add
  each value of their ``data`` (decoded, and as stored in base64) and ``stringData`` to it, from any thread or task
  that runs the block's hooks (the record is shared, not copied, with a context copied from it);
* :func:`left_out` replaces each held value of :data:`SHORTEST` characters or more in a text, the longest first, by
  :data:`LEFT_OUT`; outside a block it changes nothing.

Caveats: a value shorter than :data:`SHORTEST` is not left out (``"1"`` or ``"yes"`` would be taken out of every word
of the message holding them); a value transformed before it is quoted (upper-cased, split, hashed) is not recognised;
a Secret read by other means than okt's client (a file mounted in the operator's pod) is not known. An index function
and a filter (``when(obj)``) run in no block (they run for every object of every event, and are given the object
alone): a Secret they fail on is held for what is said of that failure only (:class:`given`), a Secret an index
function reads through a client of its own, okt's or another, is not known.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

SHORTEST = 4
"""The length, in characters, from which a Secret's value is left out of a message."""
LEFT_OUT = "(a Secret's value, left out)"
"""What stands for a Secret's value in a message."""

_record: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("okt_secret_values", default=None)
_lock = threading.Lock()  # a hook's thread may add to a record while the reconcile's says an error


class held:  # noqa: N801 - used as a function: ``with secret_values.held():``
    """Record, for the block, the values of the Secrets the kube client reads (a block inside another adds to the
    outer one's record: a reconcile run inside another's block keeps its values).

    A class rather than a generator: every reconcile enters one, and a generator-based context manager costs several
    calls more per reconcile for nothing."""

    __slots__ = ("_token",)

    def __enter__(self) -> set[str]:
        outer = _record.get()
        if outer is not None:
            self._token: contextvars.Token[set[str] | None] | None = None
            return outer
        record: set[str] = set()
        self._token = _record.set(record)
        return record

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _record.reset(self._token)


class given(held):  # noqa: N801 - used as a function: ``with secret_values.given(obj):``
    """A block (:class:`held`) holding the values of ``obj`` when it is a Secret: what is said inside it of a failure
    of the operator's function that was given ``obj`` — a filter (``when``), an index function, a watch's mapping —
    leaves them out, whatever thread it runs on.

    Entered where the failure is said, not around each call: those functions run for every object of every event,
    and the object they were given is all okt knows they read (a mapping's reads through ``ctx.reader`` have a block
    of their own: :func:`okt.reconciler.watches.keys_for_event`)."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self._obj = obj

    def __enter__(self) -> set[str]:
        record = super().__enter__()
        hold(str(self._obj.get("apiVersion")), str(self._obj.get("kind")), (self._obj,))
        return record


def hold(api_version: str, kind: str, objects: Iterable[Mapping[str, Any]]) -> None:
    """Add the values of ``objects``, read as ``kind`` of ``api_version``, to the running block's record when they
    are Secrets (nothing outside a block: a list items carry no kind, so the caller says it)."""
    record = _record.get()
    if record is None or (api_version, kind) != ("v1", "Secret"):
        return
    found: set[str] = set()
    for obj in objects:
        data, text = obj.get("data"), obj.get("stringData")
        for value in data.values() if isinstance(data, Mapping) else ():
            if isinstance(value, str):
                found.add(value)
                decoded = _decoded(value)
                if decoded is not None:
                    found.add(decoded)
        found.update(v for v in (text.values() if isinstance(text, Mapping) else ()) if isinstance(v, str))
    with _lock:
        record.update(v for v in found if len(v) >= SHORTEST)


def _decoded(value: str) -> str | None:
    """``value``, a Secret's ``data`` value, decoded as UTF-8 text; None when it is no base64 of such a text."""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def left_out(text: str) -> str:
    """``text`` with each value the running block holds (:data:`SHORTEST` characters or more) replaced by
    :data:`LEFT_OUT`, the longest first (a value holding another is left out whole)."""
    record = _record.get()
    if not record:
        return text
    with _lock:
        values = sorted(record, key=len, reverse=True)
    found = [value for value in values if value in text]
    if not found:
        return text
    # One pass: a value found inside what stands for another is never taken out of it.
    return re.sub("|".join(map(re.escape, found)), LEFT_OUT, text)
