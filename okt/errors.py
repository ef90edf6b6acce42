"""The one error tree of okt.

Why this exists: a reconcile ends in one of a few ways — done, retried, requeued, given up — and the way it ends is
decided by *what kind* of failure happened, not by where it happened. Every failure okt raises, and every failure an
operator author is expected to raise, is a class of this tree, so the engine routes on ``isinstance`` and the status
writer turns any of them into a condition reason with :func:`reason_for`.

The tree::

    OktError                      reason "OktError"
    ├── TemporaryError            "TemporaryError"      retry, optionally after ``delay`` seconds
    │   ├── RemoteError           "RemoteError"         a call into the operand (``ctx.exec``, ``ctx.http``) failed
    │   │   ├── RemoteTimeout     "RemoteTimeout"       no complete answer within the call's timeout
    │   │   └── HttpError         "HttpError"           the operand answered HTTP with a non-2xx status
    │   └── NamespaceTerminating  "NamespaceTerminating" a child's namespace is being deleted: its creates are refused
    ├── PermanentError            "PermanentError"      retrying as-is will not help
    │   ├── InvalidSpec           "InvalidSpec"         the custom resource's spec does not validate
    │   ├── AdmissionRefused      "AdmissionRefused"    a check refuses the object (at admission: with its own code)
    │   ├── ObjectTooLarge        "ObjectTooLarge"      a child the API server refuses for its size (RequestTooLarge)
    │   ├── InvalidChild          "InvalidChild"        a child the API server refuses as invalid (422), for good
    │   │   └── ImmutableField    "ImmutableField"      a child's change the API server refuses: its field is immutable
    │   ├── IllegalTransition     "IllegalTransition"   a lifecycle move along an undeclared edge (okt.lifecycle)
    │   ├── UnknownPhase          "UnknownPhase"        a persisted lifecycle phase that is not declared (okt.lifecycle)
    │   ├── MutationError         "MutateError"         a child's template does not render, or a mutation renamed it
    │   └── RegistrationError     "RegistrationAborted" a child registered twice, of a kind not owned, or misplaced
    ├── GiveUp                    "GiveUp"              stop until the object changes (``alarming`` = also an error)
    ├── ApiError                  "ApiError"            the Kubernetes API answered with a failure, or not at all
    │   ├── BadRequest            400
    │   ├── Unauthorized          401
    │   ├── Forbidden             403  (``namespace_terminating`` when a create's namespace is being deleted)
    │   ├── NotFound              404
    │   │   └── NotServed         404 with no Status: no such path (a CRD not installed, or not loaded yet)
    │   ├── Conflict              409  (``already_exists`` when the API reason is "AlreadyExists")
    │   ├── Gone                  410
    │   ├── Invalid               422, or an apply the server cannot type (a 500)  (``size_bound``,
    │   │                         ``immutable_fields``, ``depends_on_others``)
    │   ├── RequestTooLarge       413, or etcd's "request is too large" (a 413 or a 500): never retryable
    │   ├── TooManyRequests       429
    │   ├── ServerError           5xx
    │   └── Unavailable           0    connection refused, reset or timed out
    ├── OwnedByAnother            "OwnedByAnother"      a child exists under another controller; okt never adopts it
    ├── WriteRefused              "WriteRefused"        a write refused in the process: an admission hook writes nothing
    │   └── NotLeader             "NotLeader"           a write refused in the process: it no longer holds the lease
    └── ConfigurationError        "ConfigurationError"  bad command-line or configuration input, refused at start

Guarantees:

* every class has a ``reason`` usable as a Kubernetes condition reason (CamelCase, the API's reason pattern);
* ``str(exc)`` is always one readable line (newlines in messages are folded);
* errors survive ``pickle`` and ``copy`` with all their attributes;
* transport exceptions (requests, pykube) are never subclassed: the edge raises ``ApiError.from_status(...) from exc``
  so the original stays reachable as ``__cause__`` — except where its text would carry what the message leaves out
  (``ctx.http`` through the API server's proxy: the transport quotes the URL with its query's values).

The ``ApiError`` branch, with :class:`StatusCause` and what okt reads in a refusal (a 422's causes, a 413, a 409), is
the kube edge's, :mod:`okt.kube.errors`; every one of its names is importable from here as well.
"""

from __future__ import annotations

import traceback
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Self

from okt import delays, secret_values

if TYPE_CHECKING:
    import pydantic

#: The condition reason given to exceptions that are not part of this tree.
UNKNOWN_REASON = "ReconcileError"

_MAX_INPUT_REPR = 60


def _one_line(message: str) -> str:
    """Fold a possibly multi-line message into one line, keeping every non-blank line."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


def _restore(cls: type[OktError], args: tuple[Any, ...], state: dict[str, Any]) -> OktError:
    """Rebuild a pickled error without calling its (class-specific) ``__init__``."""
    exc = cls.__new__(cls, *args)
    BaseException.__init__(exc, *args)
    exc.__dict__.update(state)
    return exc


class OktError(Exception):
    """Root of every error okt raises or understands.

    ``reason`` is a class attribute: it names the *kind* of failure and becomes the condition reason. ``message`` is
    the one-line text, also what ``str(exc)`` returns.
    """

    reason: ClassVar[str] = "OktError"

    def __init__(self, message: str = "") -> None:
        self.message = _one_line(message) or self.reason
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class TemporaryError(OktError):
    """A failure expected to go away by itself: the reconcile is retried.

    Args:
        message: what went wrong.
        delay: seconds to wait before the retry, capped at :data:`okt.delays.MAX_DELAY` (6 hours) as every retry
            is, an int past a float's range too (``delay=2 ** attempts``); ``None`` lets the work queue's exponential
            backoff decide.

    Raises:
        ValueError: ``delay`` is negative, not finite, or no number (a bool: Python counts ``True`` as 1 second; a
            ``timedelta``: pass its ``total_seconds()``), said in one line naming it.
    """

    reason: ClassVar[str] = "TemporaryError"
    waiting: ClassVar[bool] = False
    """True for a wait on something that ends by itself, out of the operator's hands (a namespace being deleted):
    retried with backoff all the same, but not counted as a failure (``Degraded`` stays False) and, while it says the
    same, reported once (no error count, no Event: no write per retry)."""

    def __init__(self, message: str, delay: float | None = None) -> None:
        if delay is not None and not delays.is_seconds(delay, zero=True):
            raise ValueError(f"delay must be a finite number of seconds >= 0, got {delays.said(delay)}")
        self.delay = None if delay is None else delays.capped(delay)
        super().__init__(message)


class PermanentError(OktError):
    """A failure that retrying unchanged input will not fix: reported once (Ready=False, one Warning Event), then
    nothing is retried or written until the object changes (a new generation, a label or annotation edit)."""

    reason: ClassVar[str] = "PermanentError"
    waits_for_change: ClassVar[bool] = True
    """False for a failure whose fix lies where an edit does not wake okt (a phase persisted in the status): retried
    with backoff, still reported once."""


class InvalidSpec(PermanentError):
    """The custom resource's spec is invalid; ``field`` names the (first) offending field when known.

    ``causes`` says it as the API server says an invalid object, one :class:`StatusCause` per bad field: admission
    refuses with them, so a client reads the fields as data (``details.causes``) and kubectl lists them. Without
    ``causes``, a ``field`` gives the one cause ``FieldValueInvalid`` on that field; without either, there is none.
    """

    reason: ClassVar[str] = "InvalidSpec"

    def __init__(self, message: str, field: str | None = None, *, causes: Iterable[StatusCause] = ()) -> None:
        self.field = field
        self.causes = tuple(causes)
        if not self.causes and field:
            detail = _one_line(message).removeprefix(f"{field}: ")
            self.causes = (StatusCause(_FIELD_VALUE_INVALID, detail, field),)
        if field and field not in message:
            message = f"{field}: {message}"  # the condition, the Event and the log line name the field
        super().__init__(message)

    @classmethod
    def from_validation_error(
        cls, exc: pydantic.ValidationError, prefix: str = "spec", *, model: type[pydantic.BaseModel] | None = None
    ) -> Self:
        """Build a readable error naming every bad field of a pydantic validation failure.

        Args:
            exc: the validation error raised while validating the spec model.
            prefix: the path of the validated object inside the custom resource (``"spec"`` by default; pass ``""``
                when the whole object was validated).
            model: the model that was validated. With it, the value a field was given is not repeated when that
                field is, or holds, a ``SecretStr``, ``SecretBytes`` or ``Secret`` (nor the whole object for an error
                of a model holding one): the message goes to the Ready condition, an Event and the log.

        Returns:
            an ``InvalidSpec`` whose message reads like
            ``"spec.size: Input should be greater than or equal to 1 (got 0)"`` (several errors joined by ``"; "``),
            whose ``field`` is the first offending field's path and whose ``causes`` hold one cause per error (the
            field's path, the same text after it, and the API's reason for what is wrong: see :data:`_CAUSE_REASONS`).
        """
        causes: list[StatusCause] = []
        for error in exc.errors():
            text = error["msg"]
            if error["type"] != "missing" and not (model is not None and _holds_secret_at(model, error["loc"])):
                text += f" (got {_short_repr(error['input'])})"
            reason = _CAUSE_REASONS.get(error["type"], _FIELD_VALUE_INVALID)
            causes.append(StatusCause(reason, _one_line(text), _field_path(prefix, error["loc"])))
        if not causes:
            return cls(f"{prefix or 'object'}: invalid", field=prefix or None)
        message = "; ".join(f"{cause.field}: {cause.message}" for cause in causes)
        return cls(message, field=causes[0].field, causes=causes)


ADMISSION_CODES = range(400, 600)
"""The codes a refusal at admission may carry: an HTTP error status (the API server turns a refusal below 400 into a
400, and Go's HTTP server refuses to write one past 999)."""


class AdmissionRefused(PermanentError):
    """A check refuses the object, with an HTTP status of its own for the refusal at admission (Kopf's
    ``AdmissionError``): ``409`` for a name another object holds, ``429`` for a quota of the operator's own, ...

    At admission (``check(ctx)``, ``default(obj)``) the API server answers the write with ``code`` and ``message``,
    and the Status reason the API gives that code (``Conflict`` for 409; none for a code without one), so a client
    tells the refusals apart by their code (``kubectl`` prints ``Error from server (Conflict): admission webhook ...
    denied the request: <message>``). In a reconcile it is a permanent error like any other: ``Ready=False``, reason
    ``AdmissionRefused``, until the object changes.

    Args:
        message: why the object is refused (shown to whoever wrote it: name the field, never quote a Secret's value).
        code: the HTTP status of the refusal, 400 to 599 (default 403, ``Forbidden``, as any other of okt's errors
            refuses).

    Raises:
        ValueError: ``code`` is not an int from 400 to 599.
    """

    reason: ClassVar[str] = "AdmissionRefused"

    def __init__(self, message: str, code: int = 403) -> None:
        if isinstance(code, bool) or not isinstance(code, int) or code not in ADMISSION_CODES:
            raise ValueError(f"an admission refusal's code is an HTTP error status from 400 to 599, not {code!r}")
        self.code = code
        super().__init__(message)


class ObjectTooLarge(PermanentError):
    """A child the API server refused for its size (:class:`RequestTooLarge`): the same custom resource makes the same
    child, so the reconcile reports it once and waits for a change of the object.

    Args:
        message: names the child, its size and the limit it passed.
        size: the length in bytes of the request that wrote the child, None when unknown.
        limit: the limit in bytes it passed, None when the API server did not say it (etcd's own limit).
    """

    reason: ClassVar[str] = "ObjectTooLarge"

    def __init__(self, message: str, *, size: int | None = None, limit: int | None = None) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message)

    @classmethod
    def from_refusal(
        cls, what: str, exc: RequestTooLarge, then: str, *, size: int | None = None, measured: str = ""
    ) -> Self:
        """The error of ``what`` (a child, an object's status) the API server refused for its size (``exc``).

        Names ``what``, its size, the limit it passed, and ``then`` (what happens next). The size is the request's
        (``exc.size``) unless the caller gives the ``size`` of what ``measured`` says (``"its fields are"``): what a
        custom resource sizes, the same at each retry, where the request's size varies with what else it carries.
        """
        if size is None:
            size, measured = exc.size, "the request that writes it is"
        said = f"{measured} {_in_mib(size)}" if size is not None else "the request that writes it"
        if exc.by_storage:
            refused = (
                f"{what} is too large to store: {said}, and etcd refused the object the API server made of it (with "
                "the fields it adds, managedFields among them) past etcd's request limit (--max-request-bytes, "
                "1.5 MiB unless the cluster sets it otherwise)"
            )
        else:
            limit = f" of {_in_mib(exc.limit)}" if exc.limit is not None else ""
            refused = f"{what} is too large to write: {said}, past the API server's limit{limit} a request body"
        error = cls(f"{refused}; {then}", size=size, limit=exc.limit)
        error.__cause__ = exc
        return error

    @classmethod
    def from_invalid(
        cls, what: str, exc: Invalid, then: str, *, size: int | None = None, measured: str = "it is"
    ) -> Self | None:
        """The error of ``what`` the API server refused as invalid for its size (:attr:`Invalid.size_bound`: a
        ConfigMap's or a Secret's data past 1 MiB, annotations past 256 KiB), ``size`` the length as JSON of what
        ``measured`` says; None when ``exc`` refused something else."""
        bound = exc.size_bound
        if bound is None:
            return None
        field, limit = bound
        said = f"{measured} {_in_mib(size)} as JSON" if size is not None else "it is refused"
        held = "its data" if field in ("", "[]") else field  # a ConfigMap's and a Secret's data are said as "[]"
        error = cls(
            f"{what} is too large to write: {said}, past the API server's limit of {_in_mib(limit)} for {held}; {then}",
            size=size,
            limit=limit,
        )
        error.__cause__ = exc
        return error


class InvalidChild(PermanentError):
    """A child the API server refuses as invalid (422) for what the custom resource and the template make of it (a
    label value it refuses, a number out of range): the same custom resource makes the same child, so the reconcile
    reports it once and waits for a change of the object. A refusal that depends on other objects (a node port or an
    IP another Service holds: :attr:`Invalid.depends_on_others`), or that names no field (a JSON patch whose test
    failed), is not one: it stays a retried :class:`Invalid`.

    Args:
        message: names the child and each refused field with what is wrong with it.
        fields: the paths of the fields the API server named (``metadata.labels``).
    """

    reason: ClassVar[str] = "InvalidChild"

    def __init__(self, message: str, *, fields: Iterable[str] = ()) -> None:
        self.fields = tuple(fields)
        super().__init__(message)

    @classmethod
    def from_invalid(cls, what: str, exc: Invalid, then: str) -> Self | None:
        """The error of ``what`` (a child) the API server refused (``exc``) for the fields its causes name, each said
        with what is wrong with it, never the value the server quotes (the template's, perhaps read out of a Secret).
        None when the refusal depends on other objects, or names no field: a JSON patch whose ``test`` failed (someone
        wrote in between) is a 422 without causes, and the next read may pass it."""
        if exc.depends_on_others or not exc.causes:
            return None
        fields = tuple(dict.fromkeys(cause.field or "(object)" for cause in exc.causes))
        error = cls(f"{what} is refused by the API server: {refused_fields(exc.causes)}; {then}", fields=fields)
        error.__cause__ = exc
        return error


class ImmutableField(InvalidChild):
    """A change of a child the API server refuses because it alters a field it never lets change in place (a
    Deployment's ``spec.selector``, a Service's ``spec.clusterIP``, a Job's pod template, a PersistentVolumeClaim's
    spec, a StatefulSet's spec but for its replicas, template and update strategy): the same custom resource makes
    the same change, so the reconcile reports it once and waits for a change of the object. okt does not delete the
    child: deleted, it is created again from the template.

    Args:
        message: names the child, the fields and the way out.
        fields: the paths of the fields the API server named (``spec.selector``).
    """

    reason: ClassVar[str] = "ImmutableField"

    @classmethod
    def from_invalid(cls, what: str, exc: Invalid, then: str) -> Self | None:
        """The error of ``what`` (a child) the API server refused (``exc``) because the write changes an immutable
        field (:attr:`Invalid.immutable_fields`), None when ``exc`` refused something else. The message names the
        fields, never the values the server quotes (the template's, perhaps read out of a Secret)."""
        fields = exc.immutable_fields
        if not fields:
            return None
        within = exc.mutable_within
        named = ", ".join(
            f"{field} (but for {', '.join(within[field])})" if within.get(field) else field for field in fields
        )
        verb = "is" if len(fields) == 1 else "are"
        error = cls(
            f"{what} cannot be changed in place: {named} {verb} immutable and the template changes it; delete {what} "
            f"(okt creates it again from the template) or revert the template's change; {then}",
            fields=fields,
        )
        error.__cause__ = exc
        return error


def _in_mib(size: int) -> str:
    if size < 2**20:
        return f"{size / 2**10:.1f} KiB ({size} bytes)"
    return f"{size / 2**20:.1f} MiB ({size} bytes)"


_FIELD_VALUE_INVALID = "FieldValueInvalid"
"""The API's cause type of a field whose value is wrong, and of any error no other type says better."""
_CAUSE_REASONS: dict[str, str] = {
    "missing": "FieldValueRequired",
    "extra_forbidden": "FieldValueForbidden",
    "literal_error": "FieldValueNotSupported",
    "enum": "FieldValueNotSupported",
    "string_too_long": "FieldValueTooLong",
    "bytes_too_long": "FieldValueTooLong",
    "too_long": "FieldValueTooMany",
}
"""The API server's cause type (``k8s.io/apimachinery``'s ``field.ErrorType``) for a pydantic error type, where one
says it better than ``FieldValueInvalid`` (which the API server gives a wrong type, a number out of range or a
pattern not matched alike)."""


def _field_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for item in loc:
        if isinstance(item, int):
            path += f"[{item}]"
        else:
            path = f"{path}.{item}" if path else str(item)
    return path or "(root)"


def _holds_secret_at(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> bool:
    """Whether the value at ``loc`` of ``model`` is, or may hold, a pydantic secret (a step the walk cannot follow,
    such as a union member's tag, judges by everything the type at that point may hold)."""
    annotation: Any = model
    for step in loc:
        inner = _step_into(annotation, step)
        if inner is None:
            break
        annotation = inner
    return _may_hold_secret(annotation, set())


def _step_into(annotation: Any, step: int | str) -> Any:
    """The type of ``step`` inside ``annotation`` (a model's field by name or alias, a list's item, a dict's value), or
    None when it cannot be told."""
    import typing

    import pydantic

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return args[0] if len(args) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        for name, field in annotation.model_fields.items():
            if step in (name, field.alias, field.validation_alias):
                return field.annotation
        return None
    origin = typing.get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, dict) and len(args) == 2:
        return args[1]
    if isinstance(origin, type) and issubclass(origin, list | tuple | set | frozenset) and args:
        return args[0]
    return None


def _may_hold_secret(annotation: Any, seen: set[int]) -> bool:
    import typing

    import pydantic

    if id(annotation) in seen:
        return False
    seen.add(id(annotation))
    secret = typing.get_origin(annotation) or annotation  # Secret[int] is an alias of Secret
    if isinstance(secret, type) and issubclass(secret, pydantic.SecretStr | pydantic.SecretBytes | pydantic.Secret):
        return True
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return any(_may_hold_secret(field.annotation, seen) for field in annotation.model_fields.values())
    return any(_may_hold_secret(arg, seen) for arg in typing.get_args(annotation))


def _short_repr(value: object) -> str:
    text = _one_line(repr(value))
    if len(text) > _MAX_INPUT_REPR:
        text = text[: _MAX_INPUT_REPR - 3] + "..."
    return text


class GiveUp(OktError):
    """Stop reconciling this object until it changes.

    Args:
        reason_text: why the reconcile gives up (the condition message).
        alarming: ``True`` when giving up is also an error: the ErrorManager state runs before the GiveupManager.
            A quiet give-up (``False``, e.g. the custom resource is gone) goes straight to the GiveupManager.
    """

    reason: ClassVar[str] = "GiveUp"

    def __init__(self, reason_text: str, alarming: bool = False) -> None:
        self.alarming = alarming
        super().__init__(reason_text)
        self.reason_text = self.message


class OwnedByAnother(OktError):
    """A child okt should write exists and is controlled by another object: okt never adopts it.

    Not permanent: the other owner may let go of the child (or be deleted), so the reconcile retries with backoff.
    """

    reason: ClassVar[str] = "OwnedByAnother"


class WriteRefused(OktError):
    """A write refused before it left the process, by the fence the code sending it runs behind: nothing was sent.

    Raised as it is for a write sent from a validating webhook's ``check(ctx)``: admission writes nothing (the
    webhooks are declared ``sideEffects: None``, so a dry run, or an object refused later, must leave no trace).
    Its child :class:`NotLeader` is the leader fence's. Catch ``WriteRefused`` for every write refused so,
    ``NotLeader`` for the lease lost only.
    """

    reason: ClassVar[str] = "WriteRefused"


class NotLeader(WriteRefused):
    """A write refused before it left the process: the process no longer holds (or never held) the leader lease.

    Once leadership is lost no write may reach the API server (the next leader may already be writing); the process
    then exits so that it restarts as a standby.
    """

    reason: ClassVar[str] = "NotLeader"


class RegistrationError(PermanentError):
    """A child of ``resources(ctx)`` cannot be registered (the ObjectsGetter's work): its resource key (apiVersion,
    kind, namespace, name) is registered already in this reconcile, its kind is not in the reconciler's ``owns``, or
    it carries a namespace while the server serves its kind cluster-scoped. The reconcile records it
    (``Operation.REGISTRATION_ABORTED``) and writes no child. Permanent: the operator's code (or the names the object
    gives its children) does it again at every retry; reported once (``Ready=False``, reason ``RegistrationAborted``,
    ``Stalled=True``, one Warning Event), then not retried until the object changes."""

    reason: ClassVar[str] = "RegistrationAborted"


class MutationError(PermanentError):
    """A child's desired state cannot be built: its template does not render (a Jinja2 error — an undefined name or
    attribute, the custom resource's included —, YAML that is not a mapping, a value okt will not place), it has no
    ``metadata.name``, or a mutation (``mutate_with_cr``) changed its identity (name, namespace, apiVersion or kind),
    which would orphan the live object. Permanent wherever it is raised: the same template, code and object do it
    again, and only a change of the object (or a new version of the operator) can mend it. Reported once
    (``Ready=False``, reason ``MutateError``, ``Stalled=True``, one Warning Event), then nothing is retried or written
    until the object changes — a template that does not render where the child is built (``resources(ctx)``, in the
    ObjectsGetter) as a mutation that renamed it (the Mutator, where it is an alarming give-up)."""

    reason: ClassVar[str] = "MutateError"


class ConfigurationError(OktError):
    """Bad command-line or configuration input, or a declaration okt cannot run, refused at start (by ``okt run``,
    :class:`okt.Manager` and :class:`okt.Client`): an unreadable kubeconfig, a kind name discovery does not know or
    finds ambiguous, two reconcilers of one controller name, an address that cannot be bound, a start-up hook that
    failed. Some of these are found only once the cluster is asked (discovery, the start-up hooks). In a reconcile,
    ``ctx.index`` raises it for an index the reconciler does not declare (retried with backoff, as any error is)."""

    reason: ClassVar[str] = "ConfigurationError"


class RemoteError(TemporaryError):
    """A call into the operand failed: a command could not run in its container (``ctx.exec``), or an HTTP call to
    it got no usable answer (``ctx.http``). Temporary: the operand is usually starting, restarting or overloaded.

    A command that runs and exits non-zero is *not* an error: its exit code is in the result.
    """

    reason: ClassVar[str] = "RemoteError"


class RemoteTimeout(RemoteError):
    """No complete answer within the call's ``timeout`` seconds; the connection was closed (nothing left waiting).

    Caveat: closing an exec stream does not kill the command in the container; it may still be running.
    """

    reason: ClassVar[str] = "RemoteTimeout"


class NamespaceTerminating(TemporaryError):
    """A child cannot be created: its namespace is being deleted, and the API server refuses every new object there
    until it is gone (a cluster-scoped primary's children in a namespace on its way out). A wait (see
    :attr:`TemporaryError.waiting`): Ready says it, the reconcile is retried with backoff, nothing is written per
    retry; once the namespace is gone the create fails as a missing namespace's would."""

    reason: ClassVar[str] = "NamespaceTerminating"
    waiting: ClassVar[bool] = True

    def __init__(self, message: str, *, namespace: str = "", delay: float | None = None) -> None:
        self.namespace = namespace
        super().__init__(message, delay)


class HttpError(RemoteError):
    """The operand answered an HTTP call with a non-2xx ``status``; ``body`` is the start of its answer."""

    reason: ClassVar[str] = "HttpError"

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


def reason_for(exc: BaseException) -> str:
    """The condition reason for any exception: its ``reason`` in this tree, ``"ReconcileError"`` otherwise."""
    if isinstance(exc, OktError):
        return exc.reason
    return UNKNOWN_REASON


def message_of(exc: BaseException) -> str:
    """What a refusal says of any exception: its message, or its class's name when it has none.

    A pydantic ``ValidationError`` that is not okt's :class:`InvalidSpec` (a hook validating data of its own, a
    Secret's say, with a model of its own) is said in one line, the model's name then each bad field and what is wrong
    with it, never the value it was given: pydantic's own text repeats every input, whatever the hook was given.

    The values of the Secrets read while a reconcile, a review or a hook okt runs outside those runs are left out of it
    (:mod:`okt.secret_values`): the text of an exception of the operator's own code may quote one (``int(password)``,
    a lookup by it), and every report of an error — the log, Ready, an Event, a refusal — says it through here.
    """
    import pydantic

    if isinstance(exc, pydantic.ValidationError):
        said = "; ".join(f"{_field_path('', e['loc'])}: {_one_line(e['msg'])}" for e in exc.errors(include_input=False))
        return secret_values.left_out(f"{exc.title}: {said or 'invalid'}")
    return secret_values.left_out(str(exc)) or type(exc).__name__


def answered(exc: BaseException, hook: str) -> str:
    """What a webhook tells the API server of ``exc``, raised by the operator's ``hook``: okt's errors and pydantic
    ``ValidationError`` s by :func:`message_of` (a refusal said on purpose, or bad fields by their names), any other
    exception as ``internal error in <hook>: <its class>``.

    Why: the API server passes the answer to whoever sent the object (``kubectl`` prints it), and the text of an
    exception that is not okt's may carry any data the hook held (a ``KeyError`` of a Secret's value, the repr of an
    object). Such an exception is a bug of the operator, which its log says with where it was raised.
    """
    import pydantic

    if isinstance(exc, OktError | pydantic.ValidationError):
        return message_of(exc)
    return f"internal error in {hook}: {type(exc).__name__}"


def said(exc: BaseException) -> str:
    """An exception as a log line or an Event says it: its class, then :func:`message_of` (a pydantic
    ``ValidationError`` by its fields, never the values it was given)."""
    return f"{type(exc).__name__}: {message_of(exc)}"


def where_raised(exc: BaseException) -> dict[str, Any]:
    """What a log line of a user hook's exception carries of where it was raised: ``exc_info`` (structlog writes the
    traceback, the exception's text last, and so the text of each exception it was raised from or during) — or, when
    one of them is a pydantic ``ValidationError``, whose text repeats every input it was given (a Secret's value), or
    quotes a Secret's value read while it ran (:func:`message_of`), the ``stack`` alone: each exception of the chain
    where it was raised, said as :func:`said` says it.

    The whole chain is looked at: ``raise RuntimeError("the login Secret is unreadable") from exc`` (or the same
    ``raise`` inside the ``except``) of a ``ValidationError`` has the traceback print the ``ValidationError`` too."""
    chain = _chain(exc)
    if all(message_of(link) == str(link) for link in chain):
        return {"exc_info": exc}
    return {"stack": _stack(chain)}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, then the exception it was raised from or during, and so on: what a traceback prints, newest first."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and all(link is not seen for seen in chain):
        chain.append(link)
        link = link.__cause__ if link.__cause__ is not None else None if link.__suppress_context__ else link.__context__
    return chain


def _stack(chain: list[BaseException]) -> str:
    """The traceback of ``chain`` (newest first, from :func:`_chain`) as Python lays it out, oldest first, each
    exception said as :func:`said` says it (never pydantic's own text)."""
    parts: list[str] = []
    for index in range(len(chain) - 1, -1, -1):
        link = chain[index]
        parts.append("Traceback (most recent call last):\n" + "".join(traceback.format_tb(link.__traceback__)))
        parts.append(said(link) + "\n")
        if index:
            caused = chain[index - 1].__cause__ is link
            parts.append(f"\n{_CAUSED if caused else _DURING}\n\n")
    return "".join(parts)


_CAUSED = "The above exception was the direct cause of the following exception:"
_DURING = "During handling of the above exception, another exception occurred:"


# The API's answers as errors, and what okt reads in a refusal, are the kube edge's (okt.kube.errors): children of
# OktError above, so imported last; every one of them stays importable from here.
from okt.kube.errors import (  # noqa: E402
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    NotServed,
    RequestTooLarge,
    ServerError,
    StatusCause,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    refused_fields,
    without_values,
)

__all__ = [
    "ApiError",
    "BadRequest",
    "ConfigurationError",
    "Conflict",
    "Forbidden",
    "GiveUp",
    "Gone",
    "HttpError",
    "ImmutableField",
    "Invalid",
    "InvalidChild",
    "InvalidSpec",
    "MutationError",
    "NamespaceTerminating",
    "NotFound",
    "NotLeader",
    "NotServed",
    "ObjectTooLarge",
    "OktError",
    "OwnedByAnother",
    "PermanentError",
    "RegistrationError",
    "RemoteError",
    "RemoteTimeout",
    "RequestTooLarge",
    "ServerError",
    "StatusCause",
    "TemporaryError",
    "TooManyRequests",
    "UNKNOWN_REASON",
    "Unauthorized",
    "Unavailable",
    "WriteRefused",
    "message_of",
    "reason_for",
    "refused_fields",
    "said",
    "where_raised",
    "without_values",
]
