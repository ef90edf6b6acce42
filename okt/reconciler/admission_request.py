"""What a hook learns of the admission request it runs for, and the warnings it gives back to whoever wrote the object.

Why this exists: ``check(ctx)`` and ``default(obj)`` judged and defaulted the object alone. A webhook can say more than
yes or no: an object admitted with a deprecated field is worth a word to the person who wrote it, and the API server
passes a webhook's ``warnings`` on as ``Warning`` headers (kubectl prints ``Warning: ...``); a check may also want to
know whether the write is a dry run (``kubectl apply --dry-run=server``), who sends it, or what the API server said of
itself in the webhook call's HTTP headers. :class:`Admission` carries those: ``ctx.admission`` in ``check(ctx)`` (None
in a reconcile), and the ``admission`` argument of a ``default`` that declares one.

Guarantees:

* the request's values are data: a ``dryRun`` that is not ``true`` is a write, a user name, uid, groups or extra of
  another type are empty (of ``extra``, a key whose value is not a list is left out, as is a value that is no string);
* the request's HTTP headers (:class:`Headers`) are read-only and never logged by okt, nor shown by a ``repr``: the
  API server sends there the credentials a cluster configures for its webhook calls (``Authorization: Bearer ...``);
* a warning reaches the client as the API server takes it: the API server drops a warning with a control character
  (a newline) or not valid UTF-8, so each is one line (control characters are spaces, surrounding blanks stripped), at
  most :data:`MAX_WARNING` characters (a longer one cut, ending ``...``), said once; an empty one is no warning;
* warnings are given with an admission and with a refusal alike, and never logged by okt.

Caveats: a warning is shown to whoever writes the object and kept in the API server's audit log: it should name the
field, never quote a value of a Secret. The API server cuts the warnings of one request past 4 KiB in all.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

MAX_WARNING = 256
"""The longest warning kept whole (the length the API server cuts each warning to when a response has too many): a
longer one is cut, ending ``...``."""


class Headers(Mapping[str, str]):
    """The HTTP headers of the webhook call a review came in (Kopf's ``headers``): a read-only mapping whose names are
    case-insensitive (``headers["content-type"]`` is ``headers["Content-Type"]``), listed in lower case; a header sent
    several times is one value, joined with ``", "`` as HTTP joins them.

    What the API server sends there is its own: ``User-Agent`` (``kube-apiserver-admission``), ``Content-Type``, and,
    where the cluster's admission configuration gives it credentials for the webhook (a ``kubeConfigFile`` of the
    ``WebhookAdmission`` plugin), ``Authorization``. They may hold credentials: okt never logs them, their ``repr``
    names them without their values, and a hook should not log or echo them either (a warning, a refusal's message).

    Args:
        items: the headers as ``(name, value)`` pairs, in the order they were sent.
    """

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        joined: dict[str, str] = {}
        for name, value in items:
            key = name.lower()
            joined[key] = f"{joined[key]}, {value}" if key in joined else value
        self._values = joined

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str):
            raise KeyError(name)
        return self._values[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Headers({sorted(self._values)!r})"  # the names only: a value may be a credential


NO_HEADERS = Headers()
"""The headers of an admission built without a webhook call (a test's, a reconcile's)."""


class Admission:
    """The admission request a hook runs for (see the module docstring).

    Attributes:
        operation: ``CREATE`` or ``UPDATE`` (the operations judged and defaulted).
        dry_run: whether the write is a dry run: the object is judged, and stored nowhere.
        username: the name of the user who sends the request (``system:serviceaccount:ns:name`` for a service
            account), as the API server authenticated it.
        user_uid: that user's uid (``userInfo.uid``: a service account's uid, a token file's third column; empty when
            the authenticator gives none). Not the review's own uid, which names the request, not who sent it.
        groups: that user's groups.
        extra: what the authenticator said of that user besides (``userInfo.extra``: a read-only mapping of names to
            tuples of values, e.g. ``authentication.kubernetes.io/pod-name`` for a service account's token bound to a
            pod, or the scopes of an OpenShift token).
        headers: the HTTP headers of the webhook call (:class:`Headers`; empty outside one). Never log them.
    """

    def __init__(
        self,
        operation: str,
        *,
        dry_run: bool = False,
        username: str = "",
        user_uid: str = "",
        groups: tuple[str, ...] = (),
        extra: Mapping[str, tuple[str, ...]] | None = None,
        headers: Headers = NO_HEADERS,
    ):
        self.operation = operation
        self.dry_run = dry_run
        self.username = username
        self.user_uid = user_uid
        self.groups = groups
        self.extra: Mapping[str, tuple[str, ...]] = types.MappingProxyType(dict(extra or {}))
        self.headers = headers
        self._warnings: list[str] = []

    @classmethod
    def of(cls, request: Mapping[str, Any], headers: Headers = NO_HEADERS) -> Admission:
        """The admission of an AdmissionReview's ``request``, sent with ``headers``."""
        user = request.get("userInfo")
        user = user if isinstance(user, Mapping) else {}
        return cls(
            str(request.get("operation") or ""),
            dry_run=request.get("dryRun") is True,
            username=_text(user.get("username")),
            user_uid=_text(user.get("uid")),
            groups=_texts(user.get("groups")),
            extra=_extra(user.get("extra")),
            headers=headers,
        )

    def warn(self, message: str) -> None:
        """Give whoever writes the object a warning (kubectl prints ``Warning: <message>``), whether the object is
        admitted or refused: one line, at most :data:`MAX_WARNING` characters (a longer one is cut), said once.

        Raises:
            TypeError: ``message`` is not a string.
        """
        if not isinstance(message, str):
            raise TypeError(f"a warning is a string, not {type(message).__name__}")
        warning = one_line(message)
        if warning and warning not in self._warnings:
            self._warnings.append(warning)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings given so far, in order."""
        return tuple(self._warnings)

    def __repr__(self) -> str:
        # Neither the headers nor the extra: either may carry what a log must not (a credential, a token's scopes).
        return (
            f"Admission(operation={self.operation!r}, dry_run={self.dry_run}, username={self.username!r}, "
            f"groups={self.groups!r}, warnings={len(self._warnings)})"
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _extra(value: Any) -> dict[str, tuple[str, ...]]:
    """``userInfo.extra`` (a map of string lists in the API): the keys whose value is one, each value's strings."""
    if not isinstance(value, Mapping):
        return {}
    return {key: _texts(values) for key, values in value.items() if isinstance(key, str) and isinstance(values, list)}


def one_line(message: str) -> str:
    """``message`` as a warning the API server passes on: control characters as spaces, stripped, cut to
    :data:`MAX_WARNING` characters (ending ``...``); text that is not valid UTF-8 (a lone surrogate) replaced."""
    text = "".join(" " if _is_control(c) else c for c in message).strip()
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= MAX_WARNING else text[: MAX_WARNING - 3].rstrip() + "..."


def _is_control(char: str) -> bool:
    # Go's unicode.IsControl, which the API server's warning check uses: C0, DEL and C1.
    return ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
