"""A pydantic secret as a template reads it: its value where the template places it alone, never text made of it.

Why this exists: a spec model's ``SecretStr`` (``SecretBytes``, ``Secret[...]``) has pydantic's mask, ``**********``,
for its text, its ``repr`` and its JSON form. Jinja2's filters, ``~``, ``%`` and formats make their operands text with
``str()``, so ``{{ cr.spec.password | lower }}`` (``upper``, ``trim``, ``truncate``, ``urlencode``, ``safe``...) wrote
the mask into the child as if it were the password, and ``| length``, ``| int`` and ``==`` answered for the mask or
the object (``6``, ``0``, ``false``): silently, each. Refusing them filter by filter always left one out.

So a template never holds a pydantic secret itself: each one it reads — an attribute of a model or a mapping, an item,
a field's list or mapping of secrets, a loop's item, a variable — is a :class:`TemplateSecret`, and one rule holds:

* placed alone, as the whole of a scalar (``password: {{ cr.spec.password }}``, quoted or not), it is its value (a
  ``SecretBytes`` its base64, as Kubernetes writes bytes: a Secret's ``data``); ``default`` and ``indent`` pass it on;
* ``get_secret_value()`` reads the value, for a template that means to make something of it;
* its truth (``{% if cr.spec.password %}``) is whether that value is empty;
* anything else raises :class:`MadeText`, an ``InvalidSpec`` naming the template line and saying why: text made of it
  (a filter, ``~``, ``%``, a format, a join, a scalar joining it with other text), its length, its characters, a
  string method, a comparison, a number made of it, a mapping key, a structure holding it (a list, a model placed
  whole, ``to_yaml``, ``tojson``). The message never holds the value, nor the mask.

A template's variables are read once at the entry of a render (:func:`variable`): a list, tuple or mapping holding
secrets (``params.tokens``, a list of ``SecretStr``) is a private copy with each one wrapped, so a filter iterating
it (``| first``, ``| dictsort``, ``.values()``) hands on the wrapped secret, never pydantic's object; one holding none
is the very object given, never copied.
"""

from __future__ import annotations

import base64
import contextvars
import functools
import json
import typing
import unicodedata
from typing import Any, NoReturn

import pydantic
import pydantic_core

SECRETS = (pydantic.SecretStr, pydantic.SecretBytes, pydantic.Secret)
"""pydantic's secret types (``Secret[int]`` is a ``Secret``)."""


class MadeText(Exception):
    """A pydantic secret put where its text, not its value, would go: the render reports it as an ``InvalidSpec``
    naming the line. Not a TypeError or ValueError, which Jinja2's filters catch to place a default instead."""

    def __init__(self, kind: str, how: str) -> None:
        super().__init__(
            f"a {kind} {how}: its text is pydantic's mask, never the secret. A template places a secret alone, as a "
            "whole value ({{ cr.spec.password }} in a Secret's stringData or data), or reads it with "
            "get_secret_value() to make anything else of it"
        )


def kind_of(secret: Any) -> str:
    """The name of a secret's pydantic type (``SecretStr``, ``Secret[int]``)."""
    if isinstance(secret, TemplateSecret):
        return secret.kind
    return type(secret).__name__


class TemplateSecret:
    """A pydantic secret as a template reads it (see the module's rule)."""

    __slots__ = ("_secret",)

    def __init__(self, secret: pydantic.SecretStr | pydantic.SecretBytes | pydantic.Secret[Any]) -> None:
        self._secret = secret

    @property
    def kind(self) -> str:
        return type(self._secret).__name__

    def get_secret_value(self) -> Any:
        value = self._secret.get_secret_value()
        seen = revealed.get()
        if seen is not None:
            seen.append(value)  # an error message holding it is never written (see hides_revealed)
        return value

    def placed(self) -> Any:
        """The value a whole plain scalar holding this secret takes: its value in its JSON form, bytes as base64."""
        value = self._secret.get_secret_value()
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        return pydantic_core.to_jsonable_python(value)

    def placed_text(self) -> str:
        """The string a whole quoted (or block, or ``!!str``) scalar holding this secret takes."""
        value = self.placed()
        return value if isinstance(value, str) else json.dumps(value)

    def __bool__(self) -> bool:
        return bool(self._secret.get_secret_value())

    def _made_text(self, how: str) -> MadeText:
        return MadeText(self.kind, how)

    def __str__(self) -> str:
        raise self._made_text("made text (by a filter, ~, %, a format or a join)")

    def __repr__(self) -> str:
        raise self._made_text("made text (by its repr, | pprint)")

    def __format__(self, spec: str) -> str:
        raise self._made_text("formatted")

    def __len__(self) -> int:
        raise self._made_text("measured (| length, | truncate)")

    def __iter__(self) -> NoReturn:
        raise self._made_text("read character by character")

    def __contains__(self, item: Any) -> bool:
        raise self._made_text("searched (in)")

    def __getitem__(self, item: Any) -> NoReturn:
        raise self._made_text("read as a string (an item, or a string method)")

    def __eq__(self, other: object) -> bool:
        raise self._made_text("compared")

    def __ne__(self, other: object) -> bool:
        raise self._made_text("compared")

    def __lt__(self, other: object) -> bool:
        raise self._made_text("compared")

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = object.__hash__

    def __add__(self, other: object) -> NoReturn:
        raise self._made_text("joined by an operator")

    __radd__ = __mul__ = __rmul__ = __add__

    def __mod__(self, other: object) -> NoReturn:
        raise self._made_text("formatted by %")

    __rmod__ = __mod__

    def __int__(self) -> int:
        raise self._made_text("made a number (| int, | float)")

    __float__ = __index__ = __int__


revealed: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("okt_revealed_secrets", default=None)
"""The values of the secrets one render read with ``get_secret_value()`` (set around each render)."""


def hides_revealed(message: str, values: list[Any]) -> bool:
    """Whether ``message`` holds the text of a secret's value the render read (``values``, see :data:`revealed`),
    or of its bytes' text: an error of an expression on that value (``[1, 2].index(password)``, ``{}.pop(token)``,
    ``int(pin, 16)``) wrote it in its message, which the Ready condition and the logs would show to whoever reads the
    custom resource."""
    for value in values:
        texts = {str(value), repr(value)} if not isinstance(value, str) else {value}
        if isinstance(value, bytes):
            texts.add(value.decode("utf-8", "replace"))
        if any(text and text in message for text in texts):
            return True
    return False


def codec_error(exc: UnicodeError, values: list[Any]) -> str:
    """What an InvalidSpec says of a codec's error on a value (``.encode('ascii')``, ``.decode('utf-8')``): the codec,
    the character or byte it stopped at, shown by its code (``U+00E9 LATIN SMALL LETTER E WITH ACUTE``, ``0xFF``: a
    line break, a control or a right-to-left mark is never written into the message as itself), its position, and
    the codec's reason.

    A render that read a secret's value (``values``, see :data:`revealed`) says which codec failed, never which
    character or where: the value it failed on may be the secret, or text made of it (``pin.upper()``, a part of it),
    and one character and its position are a part of the secret too. Python's own message named both."""
    codec = getattr(exc, "encoding", None)
    reason = getattr(exc, "reason", None)
    value = getattr(exc, "object", None)
    start = getattr(exc, "start", None)
    if not isinstance(reason, str) or not isinstance(start, int) or not isinstance(value, str | bytes | bytearray):
        # A codec's own UnicodeError (idna's "label empty or too long"): its text is all there is.
        if values:
            return "a codec failed on a value (its message may hold a part of a secret the template read: not shown)"
        return _shown(str(exc))
    how = "decode" if isinstance(value, bytes | bytearray) else "encode"
    if isinstance(exc, UnicodeTranslateError):
        how = "translate"
    who = f"the {codec!r} codec" if isinstance(codec, str) else "the codec"
    if values:
        return (
            f"{who} cannot {how} a character of the value: {_shown(reason)} (which character, and where, is not "
            "shown: the template read a secret's value, which the value may be made of)"
        )
    end = getattr(exc, "end", start + 1)
    if isinstance(value, str):
        char = value[start : start + 1]
        name = unicodedata.name(char, "") if char else ""
        what = f"the character U+{ord(char):04X}{' ' + name if name else ''}" if char else "the end of the text"
    else:
        what = f"the byte 0x{value[start]:02X}" if start < len(value) else "the end of the bytes"
    more = f" (and {end - start - 1} more after it)" if isinstance(end, int) and end - start > 1 else ""
    return f"{who} cannot {how} {what} at position {start}{more}: {_shown(reason)}"


def _shown(text: str) -> str:
    """``text`` with each character that is not printable (a line break, a control, a bidirectional mark) escaped."""
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


ANY_SECRET = (TemplateSecret, *SECRETS)
"""A pydantic secret, wrapped or not."""


def read(value: Any) -> Any:
    """A value as a template reads it: a pydantic secret wrapped, anything else as it is."""
    if isinstance(value, SECRETS):
        return TemplateSecret(value)
    return value


def wrapped(value: Any) -> Any:
    """A private copy of a structure (a model's field, what a model's method gives) with each pydantic secret in it
    wrapped (models are left: their fields are wrapped where the template reads them)."""
    if isinstance(value, SECRETS):
        return TemplateSecret(value)
    kind = type(value)
    if kind is list or kind is tuple:
        return kind(wrapped(item) for item in value)
    if kind is dict:
        return {key: wrapped(item) for key, item in value.items()}
    return value


def variable(value: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> Any:
    """A template's variable that is a list, tuple or dict as a render reads it: :func:`wrapped` when it holds a
    pydantic secret anywhere inside (in its lists, tuples and dicts), the very object otherwise (plain data is walked,
    never copied)."""
    return wrapped(value) if _holds_secret(value) else value


def _holds_secret(value: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> bool:
    stack: list[Any] = [value]
    seen: set[int] | None = None  # a structure holding itself is walked once (made only for nested structures)
    while stack:
        item = stack.pop()
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is str or kind is int or kind is bool or kind is float or child is None:
                continue
            if kind is list or kind is tuple or kind is dict:
                if seen is None:
                    seen = {id(value)}
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
            elif isinstance(child, SECRETS):
                return True
    return False


def read_field(model: Any, name: str, value: Any) -> Any:
    """A model's list or mapping field as a template reads it: wrapped when its annotation may hold secrets
    (``list[SecretStr]``, ``dict[str, SecretStr]``), the field itself otherwise."""
    if isinstance(model, pydantic.BaseModel) and _may_hold_secrets(type(model), name):
        return wrapped(value)
    return value


@functools.lru_cache(maxsize=1024)
def _may_hold_secrets(model: type[pydantic.BaseModel], name: str) -> bool:
    field = model.model_fields.get(name)
    return field is not None and _mentions_secret(field.annotation)


def _mentions_secret(annotation: Any) -> bool:
    if isinstance(annotation, type):
        if issubclass(annotation, SECRETS):
            return True
        if issubclass(annotation, pydantic.BaseModel):
            return False  # its fields are wrapped where they are read
    origin = typing.get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, SECRETS):
        return True  # Secret[int]
    return any(_mentions_secret(argument) for argument in typing.get_args(annotation))
