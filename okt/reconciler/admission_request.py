"""What a hook learns of the admission request it runs for, and the warnings it gives back to whoever wrote the object.

Why this exists: ``check(ctx)`` and ``default(obj)`` judged and defaulted the object alone. A webhook can say more than
yes or no: an object admitted with a deprecated field is worth a word to the person who wrote it, and the API server
passes a webhook's ``warnings`` on as ``Warning`` headers (kubectl prints ``Warning: ...``); a check may also want to
know whether the write is a dry run (``kubectl apply --dry-run=server``) or who sends it. :class:`Admission` carries
those: ``ctx.admission`` in ``check(ctx)`` (None in a reconcile), and the ``admission`` argument of a ``default`` that
declares one.

Guarantees:

* the request's values are data: a ``dryRun`` that is not ``true`` is a write, a user name or groups of another type
  are empty;
* a warning reaches the client as the API server takes it: the API server drops a warning with a control character
  (a newline) or not valid UTF-8, so each is one line (control characters are spaces, surrounding blanks stripped), at
  most :data:`MAX_WARNING` characters (a longer one cut, ending ``...``), said once; an empty one is no warning;
* warnings are given with an admission and with a refusal alike, and never logged by okt.

Caveats: a warning is shown to whoever writes the object and kept in the API server's audit log: it should name the
field, never quote a value of a Secret. The API server cuts the warnings of one request past 4 KiB in all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_WARNING = 256
"""The longest warning kept whole (the length the API server cuts each warning to when a response has too many): a
longer one is cut, ending ``...``."""


class Admission:
    """The admission request a hook runs for (see the module docstring).

    Attributes:
        operation: ``CREATE`` or ``UPDATE`` (the operations judged and defaulted).
        dry_run: whether the write is a dry run: the object is judged, and stored nowhere.
        username: the name of the user who sends the request (``system:serviceaccount:ns:name`` for a service
            account), as the API server authenticated it.
        groups: that user's groups.
    """

    def __init__(self, operation: str, *, dry_run: bool = False, username: str = "", groups: tuple[str, ...] = ()):
        self.operation = operation
        self.dry_run = dry_run
        self.username = username
        self.groups = groups
        self._warnings: list[str] = []

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> Admission:
        """The admission of an AdmissionReview's ``request``."""
        user = request.get("userInfo")
        user = user if isinstance(user, Mapping) else {}
        username = user.get("username")
        groups = user.get("groups")
        return cls(
            str(request.get("operation") or ""),
            dry_run=request.get("dryRun") is True,
            username=username if isinstance(username, str) else "",
            groups=tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else (),
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
        return (
            f"Admission(operation={self.operation!r}, dry_run={self.dry_run}, username={self.username!r}, "
            f"groups={self.groups!r}, warnings={len(self._warnings)})"
        )


def one_line(message: str) -> str:
    """``message`` as a warning the API server passes on: control characters as spaces, stripped, cut to
    :data:`MAX_WARNING` characters (ending ``...``); text that is not valid UTF-8 (a lone surrogate) replaced."""
    text = "".join(" " if _is_control(c) else c for c in message).strip()
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= MAX_WARNING else text[: MAX_WARNING - 3].rstrip() + "..."


def _is_control(char: str) -> bool:
    # Go's unicode.IsControl, which the API server's warning check uses: C0, DEL and C1.
    return ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
