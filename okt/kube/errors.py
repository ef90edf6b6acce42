"""The Kubernetes API's answers as errors: :class:`ApiError` and a child per status class, and what okt reads in a
refusal (a 422's causes, a 413, a 409).

Why this exists: every request okt sends goes through the kube edge (:mod:`okt.kube.client`), which turns a failed
answer into one of these with :meth:`ApiError.from_status`, keeping the transport's exception as ``__cause__``. What
code must tell one refusal from another by — an immutable field, a size bound, a value another object holds — is read
here from the Status object's causes, which are data, never from its message, whose wording changes from one API
server version (or webhook) to another. What is said of a refusal names each field and what is wrong with it, never
the value the server quotes (:func:`without_values`): that is the request's, what the custom resource and the
template make of an object, perhaps read out of a Secret.

Every name here is importable from :mod:`okt.errors` (and the public ones from ``okt``), where the whole error tree
is drawn; import them from there. This branch of it::

    ApiError                  the Kubernetes API answered with a failure, or not at all
    ├── BadRequest            400
    ├── Unauthorized          401
    ├── Forbidden             403  (``namespace_terminating`` when a create's namespace is being deleted)
    ├── NotFound              404
    │   └── NotServed         404 with no Status: no such path (a CRD not installed, or not loaded yet)
    ├── Conflict              409  (``already_exists`` when the API reason is "AlreadyExists")
    ├── Gone                  410
    ├── Invalid               422, or an apply the server cannot type (a 500)  (``size_bound``, ``immutable_fields``,
    │                         ``depends_on_others``)
    ├── RequestTooLarge       413, or etcd's "request is too large" (a 413 or a 500): never retryable
    ├── TooManyRequests       429
    ├── ServerError           5xx
    └── Unavailable           0    connection refused, reset or timed out
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import ClassVar

from okt import errors


@dataclasses.dataclass(frozen=True)
class StatusCause:
    """One cause of an API failure, from the ``details.causes`` of the API's Status object: for a 422, one invalid
    field each (``StatusCause("FieldValueInvalid", 'Invalid value: "a b": ...', "metadata.finalizers")``).

    Unlike the Status's message, whose wording changes from one API server version (or webhook) to another, these are
    data: code that must tell one refusal from another reads them.

    Args:
        reason: the cause's type (``FieldValueInvalid``, ``FieldValueRequired``, ``FieldValueNotSupported``, ...;
            the API calls it ``reason``), ``""`` when the server gave none.
        message: what is wrong with the field.
        field: the field's path (``spec.size``, ``metadata.finalizers[0]``), ``""`` when the cause names none.
    """

    reason: str = ""
    message: str = ""
    field: str = ""


_QUOTING = re.compile(r"\b(Invalid value|Unsupported value|Duplicate value|Not found value|Too many): ")
"""How a refusal that quotes the request's value begins (apimachinery's ``field.Error``: the type, the value, then
what is wrong with it, when it says)."""
_ALLOCATING = re.compile(r"\bfailed to allocated? ip:\S* with error:")
"""How a Service's refused cluster IP quotes the IP again in what is wrong with it (``failed to allocated
ip:10.96.0.50 with error:provided IP is already allocated``): what follows it is said, not the IP."""
_JSON_CHARACTER = re.compile(r"\binvalid character '(?:\\.|[^'\\])*'")
"""How Go's JSON decoder quotes the character of the request's value it could not read (``invalid character 'h'
looking for beginning of value``, a ``kubernetes.io/dockerconfigjson`` Secret's ``.dockerconfigjson`` that is no JSON,
as Kubernetes 1.20 says it after its own ``<secret contents redacted>``): a character of a Secret's value; the rest
says what is wrong."""
_GO_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OPENING, _CLOSING = "([{", ")]}"


def _value_end(text: str, start: int) -> int:
    """Where the value a refusal quotes at ``text[start:]`` ends: a Go quoted string (``"a: b"``), a Go literal with
    its brackets and braces (``[]string{"a"}``, ``map[string]interface {}{...}``), or a number, a bool or a word, up
    to the ``": "`` before what is wrong with it, the ``", "`` before the next refusal, or the end."""
    quoted = _GO_STRING.match(text, start)
    if quoted is not None:
        return quoted.end()
    depth, at = 0, start
    while at < len(text):
        char = text[at]
        if char == '"':
            inner = _GO_STRING.match(text, at)
            at = inner.end() if inner is not None else len(text)
            continue
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            if depth == 0:
                return at  # the end of the refusals' list (``[a: Invalid value: 1, b: ...]``)
            depth -= 1
        elif depth == 0 and text.startswith((": ", ", "), at):
            return at
        at += 1
    return at


def without_values(text: str) -> str:
    """``text``, an API server's refusal, with each value it quotes left out (``spec.replicas: invalid value: must be
    greater than or equal to 0``), and the character of it a JSON decoder quotes (``invalid character looking for
    beginning of value``): the value is the request's, what the custom resource and the template make of a child,
    perhaps read out of a Secret, and a refusal goes to the Ready condition, an Event and the log."""
    parts, position = [], 0
    for quoting in _QUOTING.finditer(text):
        if quoting.start() < position:
            continue
        parts.append(text[position : quoting.start()] + quoting.group(1).lower())
        position = _value_end(text, quoting.end())
    return _JSON_CHARACTER.sub("invalid character", _ALLOCATING.sub("", "".join(parts) + text[position:]))


def _without_value(cause: StatusCause) -> str:
    """What ``cause`` says is wrong, the request's value it quotes left out (``invalid value: must be greater than or
    equal to 0``); its first line only (a Forbidden's diff of values follows it)."""
    lines = cause.message.strip().splitlines()
    return without_values(lines[0]) if lines and lines[0] else cause.reason or "invalid"


def refused_fields(causes: Iterable[StatusCause]) -> str:
    """The fields ``causes`` name, each with what is wrong with it, never its value (:func:`without_values`), each
    once, joined by ``"; "``; ``"(object)"`` for a cause that names no field."""
    return "; ".join(dict.fromkeys(_refused_field(cause) for cause in causes))


def _refused_field(cause: StatusCause) -> str:
    """One cause as ``field: what is wrong``; the field said once when its message begins with it (an admission
    webhook's cause often does: ``spec.image: spec.image ...`` otherwise)."""
    said = _without_value(cause)
    if cause.field and said.startswith(cause.field):
        return said
    return f"{cause.field or '(object)'}: {said}"


_DENIED = re.compile(r'admission webhook "[^"]*" denied the request')
"""Whose refusal a 422 is, when an admission webhook's: said as the API server says it, the webhook named."""


class ApiError(errors.OktError):
    """The Kubernetes API failed a request (``status`` > 0) or could not be reached (``status`` 0).

    Use :meth:`from_status` to get the status-class child. ``reason`` stays ``"ApiError"`` (the condition reason);
    the API's own reason (``NotFound``, ``AlreadyExists``, ...) is ``api_reason``; the causes its Status gave (for a
    422, one per invalid field) are :attr:`causes`.

    Args:
        status: the HTTP status, 0 when no response came back.
        reason: the ``reason`` field of the API's Status object (or a short transport description).
        message: the ``message`` field of the API's Status object.
        method: the HTTP method of the failed request, for the message.
        url: the URL of the failed request, for the message.
        causes: the ``details.causes`` of the API's Status object.
    """

    reason: ClassVar[str] = "ApiError"

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        url: str = "",
        causes: Iterable[StatusCause] = (),
    ) -> None:
        self.status = status
        self.api_reason = reason
        self.api_message = message
        self.method = method
        self.url = url
        self._causes = tuple(causes)
        request = " ".join(part for part in (method, url) if part)
        answer = f"{status} {reason}" if status else f"no response ({reason})" if reason else "no response"
        text = f"{answer}: {message}" if message else answer
        super().__init__(f"{request} -> {text}" if request else text)

    @property
    def causes(self) -> tuple[StatusCause, ...]:
        """The causes the API's Status gave, in its order; empty when it gave none (a JSON patch whose ``test``
        failed, most statuses other than 422, a failure without a Status, or no response at all)."""
        return self._causes

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later: conflicts, throttling, server errors, no response."""
        return self.status in (0, 409, 429) or 500 <= self.status <= 599

    @classmethod
    def from_status(
        cls,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        url: str = "",
        causes: Iterable[StatusCause] = (),
    ) -> ApiError:
        """Build the child class that matches ``status`` (``ApiError`` itself for unlisted statuses)."""
        if status == 413 or (status >= 500 and _STORAGE_TOO_LARGE in message):
            kind: type[ApiError] = RequestTooLarge
        elif status >= 500 and (untyped := _UNTYPED_PATCH.match(message)) is not None:
            kind, causes = Invalid, tuple(causes) or _untyped_causes(untyped.group(1))
        elif status >= 500 and (undecoded := _UNDECODED_APPLY.match(message)) is not None:
            kind, causes = Invalid, tuple(causes) or (StatusCause(UNDECODED, undecoded.group(1).strip()),)
        elif 500 <= status <= 599:
            kind = ServerError
        else:
            kind = _BY_STATUS.get(status, ApiError)
        return kind(status, reason, message, method=method, url=url, causes=causes)


class BadRequest(ApiError):
    """400: the request was malformed."""


class Unauthorized(ApiError):
    """401: the credentials were rejected."""


class Forbidden(ApiError):
    """403: RBAC does not allow the request, or (``namespace_terminating``) its namespace is being deleted."""

    @property
    def namespace_terminating(self) -> bool:
        """Whether the API refused a create in a namespace being deleted (the ``NamespaceTerminating`` cause its
        namespace lifecycle admission gives): it refuses every new object there until the namespace is gone."""
        return any(cause.reason == "NamespaceTerminating" for cause in self.causes)


class NotFound(ApiError):
    """404: the object (or its kind) does not exist. ``unserved`` is the ``(apiVersion, kind)`` of a kind the server
    does not serve in that version, nor in any other it was asked about, when that is what was not found (a CRD not
    installed)."""

    unserved: tuple[str, str] | None = None


class NotServed(NotFound):
    """404 with no Status in the answer ("404 page not found"): the API server serves no such path, so it said nothing
    of the object. A kind whose CRD is not installed or was deleted, or one an API server that has just started has
    not loaded yet (it answers custom kinds so for a moment, the built-in ones at once). Never "the object is gone":
    :meth:`~okt.kube.client.Client.get_or_none` and :meth:`~okt.kube.client.Client.delete` raise it, and a cleanup
    that deletes through them is not told its object is gone when it may not be. A ``NotFound``, so code that asks
    whether a kind is served reads it as before."""


class Conflict(ApiError):
    """409: a stale resourceVersion, or (``already_exists``) a create of an existing object."""

    @property
    def already_exists(self) -> bool:
        """Whether the API said ``AlreadyExists``: a create of an object that exists."""
        return self.api_reason == "AlreadyExists"


class Gone(ApiError):
    """410: a watch's resourceVersion is too old; the informer relists."""


class Invalid(ApiError):
    """422: the object failed the API server's validation (:attr:`size_bound` when for its size). Also an apply the
    API server cannot type against the kind's schema (a value of the wrong type, a field the schema lacks): it
    answers that with a 500 of its own (Kubernetes 1.20, and the versions of today), and the same body is refused
    again at every try; each field it names is a cause (``FieldValueTypeInvalid``).

    Its message names each field refused and what is wrong with it (:func:`refused_fields`), or, when the server named
    none, is the server's message (:func:`without_values`): never the values the server quotes, the request's, which
    the custom resource and the template make (perhaps out of a Secret). Every report of it — the Ready condition, an
    Event, the log — says it so. The server's own text stays in :attr:`ApiError.api_message`, data for code.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        url: str = "",
        causes: Iterable[StatusCause] = (),
    ) -> None:
        causes = tuple(causes)
        # An admission webhook's denial keeps saying whose it is (its name is no value of the request).
        denied = _DENIED.match(message)
        rest = message[denied.end() :].lstrip(": ") if denied else message
        said = refused_fields(causes) or without_values(rest)
        if denied:
            said = f"{denied.group(0)}: {said}" if said else denied.group(0)
        super().__init__(status, reason, said, method=method, url=url, causes=causes)
        self.api_message = message

    @property
    def retryable(self) -> bool:
        return False

    @property
    def size_bound(self) -> tuple[str, int] | None:
        """The field and the bytes it may hold at most, when a cause refused the object for its size (the API's
        ``FieldValueTooLong`` in bytes: a ConfigMap's or a Secret's data, the annotations); None otherwise (a name,
        a label value too long count characters)."""
        for cause in self.causes:
            found = _BYTES_BOUND.search(cause.message) if cause.reason == "FieldValueTooLong" else None
            if found:
                return cause.field, int(found.group(1))
        return None

    @property
    def immutable_fields(self) -> tuple[str, ...]:
        """The fields, in the causes' order and each once, that the API server refused to change because they are
        immutable (``field is immutable``, ``may not change once set``, a PersistentVolumeClaim's ``spec is immutable
        after creation``, a StatefulSet's ``spec`` but the fields :attr:`mutable_within` names); empty when no cause
        says so."""
        found = (cause.field or "(object)" for cause in self.causes if _says_immutable(cause))
        return tuple(dict.fromkeys(found))

    @property
    def mutable_within(self) -> dict[str, tuple[str, ...]]:
        """The fields of an immutable field (:attr:`immutable_fields`) that a cause says may change all the same, by
        that field: ``{"spec": ("replicas", "template", "updateStrategy")}`` for a StatefulSet's spec; none for a
        field immutable whole."""
        within = {}
        for cause in self.causes:
            found = _FORBIDDEN_BUT.search(_first_line(cause)) if cause.reason == "FieldValueForbidden" else None
            if found:
                within[cause.field or "(object)"] = tuple(re.findall(r"'([^']+)'", found.group(1)))
        return within

    @property
    def depends_on_others(self) -> bool:
        """Whether a cause refused a value another object holds (a node port, a cluster IP ``already allocated``) or
        an allocation from a full range: the same request may succeed later, when the other object goes."""
        return any(_ALLOCATED.search(_without_value(cause)) for cause in self.causes)


def _says_immutable(cause: StatusCause) -> bool:
    """Whether ``cause`` refuses a change of an immutable field. Its message is the API's: ``Invalid value: <the
    request's value>: field is immutable`` (or ``may not change once set``) — read at its end, so that a value saying
    "immutable" is not taken for it — or ``Forbidden: spec is immutable after creation ...`` then a diff of values,
    read in its first line, or a StatefulSet's ``Forbidden: updates to statefulset spec for fields other than ...
    are forbidden``, which names the fields that may change and never says "immutable" of the others."""
    if cause.reason == "FieldValueForbidden":
        first = _first_line(cause)
        return _IMMUTABLE.search(first) is not None or _FORBIDDEN_BUT.search(first) is not None
    return _IMMUTABLE_AT_END.search(cause.message.strip()) is not None


def _first_line(cause: StatusCause) -> str:
    return cause.message.strip().split("\n", 1)[0]


_ALLOCATED = re.compile(r"\balready allocated\b|\brange is full\b")
"""What the API server says of a value another object holds (a node port, a cluster IP: ``provided port is already
allocated``) or of a pool with none left: the same request may succeed once that object goes."""
_IMMUTABLE = re.compile(r"\bimmutable\b")
"""What a refusal of a field that never changes says (apimachinery's ``field is immutable``, ``spec is immutable
after creation``, ``field is immutable when `immutable` is set``)."""
_FORBIDDEN_BUT = re.compile(r"^Forbidden: updates to \w+ spec for fields other than (.+) are forbidden\b")
"""What the API server says of a change of a StatefulSet's spec but for the fields it names (``updates to
statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are forbidden``; later versions
name more of them): the rest of that spec is immutable, though the word is not said."""
_IMMUTABLE_AT_END = re.compile(r"(?:\bfield is immutable|\bmay not change once set)$")
"""The same at the end of an invalid value's cause, after the value quoted (``may not change once set``: a Service's
allocated ``clusterIP``)."""
_BYTES_BOUND = re.compile(r"(?:at most|more than|longer than) (\d+) bytes")


_UNTYPED_PATCH = re.compile(r"failed to create typed patch object(?: \([^)]*\))?: (.*)", re.DOTALL)
"""How the API server refuses an apply whose body its kind's schema cannot type, as a 500 (server-side apply's own
error, never given a Status: kubernetes/kubernetes#122480): ``failed to create typed patch object: .spec.replicas:
expected numeric (int or float), got ...`` (later versions name the object in parentheses before the colon). What
follows is one error, or ``errors:`` and one per line; the request's values in them are already left out by the
client."""
_UNTYPED_ERROR = re.compile(r"\.((?:[^.\[\s:]+|\[[^\]]*\])(?:\.[^.\[\s:]+|\[[^\]]*\])*): (.+)")
"""One error of such an answer: the field's path as server-side apply spells it
(``.spec.template.spec.containers[name="main"].env[name="A"].value``), then what is wrong with it."""
UNTYPED = "FieldValueTypeInvalid"
"""The reason of a cause read out of an apply the API server could not type (the API's own name for a value of the
wrong type)."""


def _untyped_causes(said: str) -> tuple[StatusCause, ...]:
    """The causes of an apply the API server could not type, read out of what it said of it (:data:`_UNTYPED_PATCH`):
    one per field it names, the path without its leading dot as a 422's causes name fields; one naming no field when
    none can be read."""
    lines = said.strip().splitlines()
    errors_said = [line.strip() for line in lines[1:]] if lines and lines[0].strip() == "errors:" else [said.strip()]
    causes = []
    for error in errors_said:
        found = _UNTYPED_ERROR.fullmatch(error)
        if found is not None:
            causes.append(StatusCause(UNTYPED, found.group(2), found.group(1)))
        elif error:
            causes.append(StatusCause(UNTYPED, error))
    return tuple(causes)


_UNDECODED_APPLY = re.compile(
    r"failed to convert new object(?: \([^)]*\))? to proper version(?: \([^)]*\))?: "
    r"unable to convert unstructured object to [^:]*: (.*)",
    re.DOTALL,
)
"""How the API server refuses an apply whose body it typed but cannot decode into its kind's Go object, as a 500 as
well: a value of the right JSON type in a form the kind does not take — ``data`` of a Secret that is not base64
(``error decoding from json: illegal base64 data at input byte 3``), a quantity that is none (``quantities must match
the regular expression ...``), a time that is none (``parsing time ...``). The same body is refused at every try. A
conversion webhook that fails says ``conversion webhook ... failed`` after the same first words: a failure of the
webhook, retried, never read here."""
UNDECODED = "FieldValueInvalid"
"""The reason of the cause read out of such an answer (the API's own name for an invalid value; the answer names no
field)."""


_STORAGE_TOO_LARGE = "etcdserver: request is too large"
"""What the API server passes on of etcd refusing a write past its ``--max-request-bytes``, as a 500 (Kubernetes 1.20)
or a 413 (later versions)."""
_LIMIT_SAID = re.compile(r"limit is (\d+)")


class RequestTooLarge(ApiError):
    """413, or etcd's "request is too large" (a 500 or a 413, by the API server's version): the API server refused a
    request body past its limit (3 MiB), or etcd the object made of it (past ``--max-request-bytes``, 1.5 MiB by
    default, the fields the API server adds counted: ``managedFields`` name every key of a ConfigMap again). Not
    retryable: the same request is refused again. ``size`` is the request body's length in bytes when the client
    knows it."""

    size: int | None = None

    @property
    def retryable(self) -> bool:
        return False

    @property
    def by_storage(self) -> bool:
        """Whether etcd refused the object (rather than the API server the request body)."""
        return _STORAGE_TOO_LARGE in self.api_message

    @property
    def limit(self) -> int | None:
        """The limit in bytes the API server said it applied (``limit is 3145728``), None when it said none (etcd
        never says its own)."""
        found = _LIMIT_SAID.search(self.api_message)
        return int(found.group(1)) if found else None


class TooManyRequests(ApiError):
    """429: the API server is throttling; retry later (``retry_after`` seconds, when the server said)."""

    retry_after: float | None = None


class ServerError(ApiError):
    """5xx: the API server failed; retry later."""


class Unavailable(ApiError):
    """0: no response at all (connection refused or reset, timeout)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    0: Unavailable,
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}
