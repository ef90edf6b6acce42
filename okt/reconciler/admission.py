"""Admission: the reconciler's own checks and defaults, run by the API server before an object is stored.

Why this exists: without it a bad spec lands, and the author learns of it from ``Ready=False, InvalidSpec`` a moment
later; ``kubectl apply`` said "configured". With it the same checks refuse the object at admission, so the apply
fails and says why. Nothing new is written by the author for that: the validating webhook runs what CRChecker runs —
the ``spec_model`` validation and ``check(ctx)`` — and refuses with **the same message** the ``Ready`` condition would
carry (``spec.size: Input should be greater than or equal to 1 (got 0)``) and, for an invalid spec, with one cause per
bad field, as the API server refuses a field of its own schema (see :func:`respond`). Defaulting is the reconciler's
``default(obj)`` hook; okt computes the JSON patch the API server wants from the object it returns.

Guarantees:

* only CREATE and UPDATE are judged; an object being deleted is always admitted (its cleanup must still run and its
  finalizers go), and so is an UPDATE that leaves ``spec`` as it was (an object stored before the webhook existed can
  still get its labels, annotations and finalizers edited), as the API server stores it (:func:`same_json`: ``1``
  and ``true`` differ, ``1`` and ``1.0`` do not);
* every CREATE and UPDATE is defaulted, as controller-runtime's Defaulter is, an UPDATE leaving the spec as it was
  too (a default derived from a label follows it; an object stored before the webhook gets its defaults at its next
  write): such an UPDATE is still never refused — a ``default`` that fails on it leaves it untouched, saying so in a
  warning. okt's own finalizers and annotations are okt's: whatever ``default`` returns, they stay as the request has
  them, so that it never undoes okt's write (which okt would send again, a loop);
* only the objects this operator reconciles are judged or defaulted: those in the :class:`Scope` it runs with (the
  namespaces and the label selector of ``okt run -n/-l``) that the reconciler selects (``annotation_selector``,
  ``when(obj)``). The others are never reconciled by it and may be another operator's (another release, another
  version), judged by its own webhook: they are admitted untouched, an object outside the scope with the reason in
  the audit annotation ``<webhook>/out-of-scope``. A ``when`` that raises cannot tell: the object is refused as for a
  ``check`` that raises (``internal error in when: KeyError``), never admitted unseen;
* a hook that raises refuses the object, never crashes the server; so does a ``default(obj)`` that returns what JSON
  cannot carry. okt's errors refuse with their message, and a pydantic ``ValidationError`` with its fields, never
  the values it was given (see :func:`okt.errors.message_of`). Any other exception is a bug of the operator whose
  text may carry data the hook held (a ``KeyError`` of a Secret's value): the API server is told ``internal error in
  check: KeyError`` (a 500) and never that text. It, and a ``default(obj)`` returning what is not the object as JSON
  data, is logged once at error level, with where it was raised (never the object);
* values from the object are data: the patch is computed structurally (JSON pointers escaped), never from text;
* ``check(ctx)`` is told of the request in ``ctx.admission``, and a ``default`` declaring a parameter ``admission``
  there (:mod:`okt.reconciler.admission_request`), with the HTTP headers it came in: the warnings either gives are
  answered with its verdict, an admission or a refusal alike;
* a hook refuses with a code of its own by raising :class:`okt.AdmissionRefused` (``code=409``): the API server
  answers the write with that code, and the API's reason for it.

* ``check(ctx)`` writes nothing: the webhooks are declared ``sideEffects: None``, so the API server calls them for a
  dry run too (``kubectl apply --dry-run=server``), and an object they admit may still be refused by a later webhook
  or the API server. A write it sends (through the context's client: a create, a status flush, an exec, an operand
  call other than a read) is refused before it leaves (``okt.WriteRefused``, never the leader fence's
  ``okt.NotLeader``), and the object with it, saying so.

Caveats: ``check(ctx)`` runs at admission with a context over the *incoming* object (``ctx.exists`` is True, reads go
to the API server, nothing is reconciled): a check that writes, or that needs the object to exist already, belongs in
a later state.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import functools
import inspect
import json
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pydantic
import structlog

from okt import coroutines, errors, secret_values
from okt import names as names_mod
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, objects, selectors
from okt.reconciler import admission_request, core
from okt.reconciler import context as context_mod
from okt.reconciler import reconciler as reconciler_mod

REVIEW_API_VERSION = "admission.k8s.io/v1"
REVIEW_API_VERSIONS = (REVIEW_API_VERSION, "admission.k8s.io/v1beta1")
"""The AdmissionReview versions answered, each in its own version (v1beta1: API servers configured for it)."""
JUDGED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
OUT_OF_SCOPE = "out-of-scope"
"""The audit annotation (after the webhook's name and a slash) saying why an object was admitted unjudged."""
STATUS_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
"""The Status reason the API gives each HTTP code it uses (``k8s.io/apimachinery``'s ``StatusReason``): a refusal's
code of its own is answered with it, so a client's ``IsConflict(err)`` holds for a 409; a code without one, none."""
_log = structlog.get_logger("okt.admission")


@dataclasses.dataclass(frozen=True)
class Scope:
    """The primary objects an operator process serves: those of its namespaces and its label selector
    (``okt run -n/--namespace`` and ``-l/--selector``), as its informers list them.

    Args:
        namespaces: the served namespaces; None (or empty): all. A cluster-scoped object is in every scope's
            namespaces.
        label_selector: the objects' labels must match it (the API server's syntax); None: any labels.

    Raises:
        ValueError: a label selector the API server cannot read.
    """

    namespaces: frozenset[str] | None = None
    label_selector: str | None = None
    _matches: Callable[[Mapping[str, str]], bool] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespaces", frozenset(self.namespaces) if self.namespaces else None)
        object.__setattr__(self, "label_selector", self.label_selector or None)
        object.__setattr__(self, "_matches", selectors.matcher(self.label_selector))

    def excludes(self, obj: Mapping[str, Any], namespace: str | None = None) -> str | None:
        """Why ``obj`` (in ``namespace``, else its own) is outside the scope, or None when it is inside."""
        meta = obj.get("metadata") or {}
        namespace = namespace or meta.get("namespace") or None
        if self.namespaces is not None and namespace is not None and namespace not in self.namespaces:
            served = ", ".join(sorted(self.namespaces))
            return f"namespace {namespace!r} is not one this operator serves ({served})"
        labels = meta.get("labels")
        if not self._matches(labels if isinstance(labels, Mapping) else {}):
            return f"the labels do not match this operator's selector {self.label_selector!r}"
        return None


EVERYTHING = Scope()
"""The scope of an operator serving every namespace, whatever the labels."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What admission answers: allowed or not (with why, and the bad fields as causes), and a JSON patch for a
    mutation."""

    allowed: bool
    message: str = ""
    code: int = 200
    reason: str = ""
    patch: tuple[dict[str, Any], ...] = ()
    causes: tuple[errors.StatusCause, ...] = ()
    out_of_scope: str = ""
    warnings: tuple[str, ...] = ()

    @classmethod
    def allow(cls, patch: tuple[dict[str, Any], ...] = ()) -> Verdict:
        return cls(True, patch=patch)

    @classmethod
    def unjudged(cls, why: str) -> Verdict:
        """Admit, untouched, an object outside the operator's scope, saying why (an audit annotation)."""
        return cls(True, out_of_scope=why)

    @classmethod
    def refuse(cls, error: BaseException, hook: str) -> Verdict:
        """Refuse for what ``hook`` raised: 422 ``Invalid`` for an invalid spec (with its causes, one per bad field),
        an :class:`okt.AdmissionRefused`'s own code (with the API's reason for it), 403 ``Forbidden`` with the message
        of another of okt's errors or of a pydantic ``ValidationError`` (its fields), as ``Ready=False`` would carry
        it; any other exception, a bug of the operator, is a 500 ``InternalError`` naming the hook and the exception's
        class, never its text (see :func:`okt.errors.answered`)."""
        if isinstance(error, errors.InvalidSpec):
            return cls(False, str(error), 422, "Invalid", causes=error.causes)
        if isinstance(error, errors.AdmissionRefused):
            return cls(False, str(error), error.code, STATUS_REASONS.get(error.code, ""))
        if not isinstance(error, errors.OktError | pydantic.ValidationError):
            return cls(False, errors.answered(error, hook), 500, "InternalError")
        return cls(False, errors.message_of(error), 403, "Forbidden")

    @classmethod
    def forbid(cls, message: str) -> Verdict:
        """Refuse with okt's own ``message`` (what a hook returned that okt cannot use), a 403."""
        return cls(False, message, 403, "Forbidden")

    def warned(self, given: admission_request.Admission) -> Verdict:
        """This verdict with the warnings a hook gave through ``given``."""
        return dataclasses.replace(self, warnings=given.warnings) if given.warnings else self


def validate(
    reconciler: reconciler_mod.Reconciler,
    request: Mapping[str, Any],
    client: kube_client.Client,
    scope: Scope = EVERYTHING,
    headers: admission_request.Headers = admission_request.NO_HEADERS,
) -> Verdict:
    """The validating webhook: ``spec_model`` validation, then ``check(ctx)``, as CRChecker runs them.

    Args:
        reconciler: the reconciler whose checks judge the object.
        request: the ``request`` of an AdmissionReview.
        client: the API client ``check(ctx)`` reads through.
        scope: the objects the operator serves (default: all); the others are admitted unjudged.
        headers: the HTTP headers the review came with (``ctx.admission.headers``).
    """
    with _holding_secrets(request):
        return _validated(reconciler, request, client, scope, headers)


def _validated(
    reconciler: reconciler_mod.Reconciler,
    request: Mapping[str, Any],
    client: kube_client.Client,
    scope: Scope,
    headers: admission_request.Headers,
) -> Verdict:
    obj = _judged(reconciler, request, scope, spec_changes_only=True)
    if not isinstance(obj, Mapping):
        return obj
    cr = objects.CustomResource(obj)
    try:
        typed = reconciler_mod.validate_spec(reconciler, cr.raw_spec)
    except Exception as exc:  # InvalidSpec, or what a validator raised past pydantic (a KeyError): refused as well
        _log_failure(reconciler, "spec_model", request, exc)
        return Verdict.refuse(exc, "spec_model")
    ctx = context_mod.Context(
        settings=reconciler.settings(),
        client=client,
        reader=core.ApiReader(client),
        kind=_kind_of(reconciler, request),
        cr=cr.with_spec(typed) if typed is not None else cr,
        exists=True,
        logger=_log.bind(controller=type(reconciler).controller_name(), namespace=cr.namespace, name=cr.name),
        recorder=None,
    )
    ctx.admission = admission_request.Admission.of(request, headers)
    try:
        with fence_mod.fenced(_writes_nothing, errors.WriteRefused):
            ctx.results.follow(coroutines.call(reconciler.check, ctx), "check")
    except Exception as exc:  # recorded as CRChecker records it, so okt's errors say the same
        ctx.results.record_exception(exc)
    error = ctx.results.first_error
    if error is None:
        return Verdict.allow().warned(ctx.admission)
    _log_failure(reconciler, "check", request, error)  # raised, or what check returned that is no outcome
    return Verdict.refuse(error, "check").warned(ctx.admission)


def mutate(
    reconciler: reconciler_mod.Reconciler,
    request: Mapping[str, Any],
    scope: Scope = EVERYTHING,
    headers: admission_request.Headers = admission_request.NO_HEADERS,
) -> Verdict:
    """The mutating webhook: ``default(obj)`` on a copy of the object, answered as a JSON patch (only for the
    objects of ``scope``, default all, that the reconciler selects); a ``default`` declaring ``admission`` is given
    the request, with the HTTP ``headers`` it came with.

    Every CREATE and UPDATE is defaulted, as controller-runtime's Defaulter is: one that leaves the spec as it was
    too (a label a default derives from changed; an object stored before the webhook existed). Such an UPDATE is
    never refused: a ``default`` (or a ``when``) that fails on it leaves the object untouched, saying so in a
    warning. okt's own finalizers and annotations are left as the request has them (:func:`_keeping_okts_own`)."""
    given = admission_request.Admission.of(request, headers)
    with _holding_secrets(request):
        verdict = _defaulted(reconciler, request, scope, given)
    if not verdict.allowed and leaves_spec(request):
        # Refusing it would refuse every edit of the object's metadata, okt's own finalizer and bookkeeping too.
        given.warn(f"not defaulted: {verdict.message}")
        verdict = Verdict.allow()
    return verdict.warned(given)


def _defaulted(
    reconciler: reconciler_mod.Reconciler,
    request: Mapping[str, Any],
    scope: Scope,
    given: admission_request.Admission,
) -> Verdict:
    obj = _judged(reconciler, request, scope, spec_changes_only=False)
    if not isinstance(obj, Mapping):
        return obj
    working = copy.deepcopy(dict(obj))
    try:
        hook: Callable[..., Any] = reconciler.default
        returned = (
            coroutines.call(functools.partial(hook, admission=given), working)
            if takes_admission(reconciler)
            else coroutines.call(hook, working)
        )
    except Exception as exc:
        _log_failure(reconciler, "default", request, exc)
        return Verdict.refuse(exc, "default")
    defaulted = working if returned is None else returned
    if not isinstance(defaulted, Mapping):
        bug = TypeError(f"default() returned {type(defaulted).__name__}, not the object")
        _log_failure(reconciler, "default", request, bug)
        return Verdict.forbid(str(bug))
    try:
        patch = tuple(json_patch(obj, _keeping_okts_own(reconciler, request, obj, defaulted)))
        # A value JSON cannot carry (a datetime, a model, NaN) is refused here with what it is, not answered as an
        # error of the server (which the failurePolicy turns into a refusal saying nothing, or an admission).
        json.dumps(patch, allow_nan=False)
    except (TypeError, ValueError) as exc:
        bug = TypeError(f"default() returned an object that is not JSON data: {exc}")
        _log_failure(reconciler, "default", request, bug)
        return Verdict.forbid(str(bug))
    return Verdict.allow(patch)


def _keeping_okts_own(
    reconciler: reconciler_mod.Reconciler,
    request: Mapping[str, Any],
    obj: Mapping[str, Any],
    defaulted: Mapping[str, Any],
) -> Mapping[str, Any]:
    """``defaulted`` with okt's own finalizers and annotations (its bookkeeping, under its prefixes) as ``obj`` has
    them. okt writes them through the same webhook (an UPDATE adding its finalizer is defaulted too): a ``default``
    that left them out (one building the metadata anew) would undo okt's write, which okt would send again at the next
    reconcile, and again, a loop of writes. A change of them is a bug of ``default``: put back, and logged."""
    before, after = obj.get("metadata"), defaulted.get("metadata")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return defaulted  # no metadata to keep, or none the API server would store
    names = names_mod.of(reconciler.prefix, tuple(reconciler.legacy_prefixes))
    own_annotations = names.primary_annotations() | names.legacy_primary_annotations()
    own_finalizers = {f for f in (reconciler.finalizer, *reconciler.legacy_finalizers) if f}
    meta = dict(after)
    changed: list[str] = []
    had, has = before.get("annotations") or {}, meta.get("annotations") or {}
    if isinstance(had, Mapping) and isinstance(has, Mapping):
        kept = {key: value for key, value in has.items() if key not in own_annotations}
        kept.update({key: value for key, value in had.items() if key in own_annotations})
        changed += sorted(key for key in own_annotations if had.get(key) != has.get(key))
        if changed:
            meta["annotations"] = kept
    had, has = before.get("finalizers") or [], meta.get("finalizers") or []
    if isinstance(had, list) and isinstance(has, list):
        ours = [f for f in had if f in own_finalizers]
        if ours != [f for f in has if f in own_finalizers]:
            changed.append("finalizers")
            meta["finalizers"] = [f for f in has if f not in own_finalizers] + ours
    if not changed:
        return defaulted
    _log.error(
        "default() changed okt's own metadata: it is kept as it was",
        controller=type(reconciler).controller_name(),
        uid=request.get("uid"),
        changed=changed,
    )
    return {**defaulted, "metadata": meta}


def takes_admission(reconciler: reconciler_mod.Reconciler) -> bool:
    """Whether the reconciler's ``default`` declares a parameter ``admission`` (it is given the request's
    :class:`~okt.reconciler.admission_request.Admission` there)."""
    return _declares_admission(type(reconciler).default)


@functools.cache
def _declares_admission(default: Callable[..., Any]) -> bool:
    try:
        return "admission" in inspect.signature(default).parameters
    except (TypeError, ValueError):  # a callable without a signature Python can read: called with the object alone
        return False


def json_patch(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """The RFC 6902 operations turning ``old`` into ``new``: mappings are walked key by key, anything else that
    differs (lists included) is replaced whole. ``1``, ``1.0`` and ``True`` differ, as they do in JSON."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        ops: list[dict[str, Any]] = [{"op": "remove", "path": f"{path}/{_token(k)}"} for k in old if k not in new]
        for key, value in new.items():
            where = f"{path}/{_token(key)}"
            if key not in old:
                ops.append({"op": "add", "path": where, "value": value})
            else:
                ops.extend(json_patch(old[key], value, where))
        return ops
    if _canonical(old) == _canonical(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are one value as the API server stores them: of the same JSON type (``true`` is not
    ``1``, as Python's ``==`` says it is), numbers by their value (``1.0`` is stored as ``1``), arrays item by item,
    objects key by key."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(value, b[key]) for key, value in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def respond(review: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview answering ``review`` with ``verdict`` (same apiVersion, the request's uid).

    A refusal with causes carries them as the API server's own validation does (``details``: the object's group, kind
    and name, one cause per bad field), and the API server passes them on: a client reads the fields as data, and
    kubectl lists them as it lists a schema's (``The Widget "w" is invalid: spec.size: ...``). Without causes there
    are no details, and kubectl prints the message."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {
            "status": "Failure",
            "code": verdict.code,
            "reason": verdict.reason,
            "message": verdict.message,
        }
        if verdict.causes:
            response["status"]["details"] = _details(request, verdict.causes)
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.out_of_scope:
        response["auditAnnotations"] = {OUT_OF_SCOPE: verdict.out_of_scope}
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(list(verdict.patch)).encode()).decode()
    return {
        "apiVersion": review.get("apiVersion") or REVIEW_API_VERSION,
        "kind": "AdmissionReview",
        "response": response,
    }


def _details(request: Mapping[str, Any], causes: tuple[errors.StatusCause, ...]) -> dict[str, Any]:
    """A Status's ``details`` naming the object under review and the causes, as ``k8s.io/apimachinery``'s
    ``NewInvalid`` builds them (kubectl names the object from them)."""
    kind = request.get("kind") or {}
    obj = request.get("object") or {}
    return {
        "group": kind.get("group", ""),
        "kind": kind.get("kind", ""),
        "name": (obj.get("metadata") or {}).get("name") or request.get("name", ""),
        "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes],
    }


def _judged(
    reconciler: reconciler_mod.Reconciler, request: Mapping[str, Any], scope: Scope, *, spec_changes_only: bool
) -> Mapping[str, Any] | Verdict:
    """The object to judge, or the verdict letting the request through unjudged (with ``spec_changes_only``, an
    UPDATE that leaves the spec as it was too) — or refusing it, when the reconciler's ``when`` raised."""
    obj = request.get("object")
    if request.get("operation") not in JUDGED_OPERATIONS or not isinstance(obj, Mapping):
        return Verdict.allow()
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return Verdict.allow()
    # The request's namespace, not the object's: a create's object may leave it to the URL.
    why = scope.excludes(obj, request.get("namespace") or None)
    if why is not None:
        return Verdict.unjudged(why)
    if spec_changes_only and leaves_spec(request):
        return Verdict.allow()
    try:
        selected = reconciler_mod.selects_or_raises(reconciler, obj)
    except Exception as exc:  # a filter that cannot tell whether the object is the operator's: never admitted unseen
        hook = "when" if type(reconciler).selects is reconciler_mod.Reconciler.selects else "selects"
        _log_failure(reconciler, hook, request, exc)
        return Verdict.refuse(exc, hook)
    return obj if selected else Verdict.allow()


def leaves_spec(request: Mapping[str, Any]) -> bool:
    """Whether ``request`` is an UPDATE whose object has the spec its old object had, as the API server stores it
    (:func:`same_json`)."""
    old, new = request.get("oldObject"), request.get("object")
    return (
        request.get("operation") == "UPDATE"
        and isinstance(old, Mapping)
        and isinstance(new, Mapping)
        and same_json(old.get("spec"), new.get("spec"))
    )


@contextlib.contextmanager
def _holding_secrets(request: Mapping[str, Any]) -> Iterator[None]:
    """Leave the values of the Secrets the hooks read, and of the object under review when it is a Secret (its new
    and its old self), out of what is said of an error while ``request`` is judged: the refusal, the log line."""
    given = request.get("kind")
    kind: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    group, version = kind.get("group") or "", kind.get("version") or ""
    api_version = f"{group}/{version}" if group else version
    under_review = [o for o in (request.get("object"), request.get("oldObject")) if isinstance(o, Mapping)]
    with secret_values.held():
        secret_values.hold(api_version, str(kind.get("kind") or ""), under_review)
        yield


def _log_failure(
    reconciler: reconciler_mod.Reconciler, hook: str, request: Mapping[str, Any], exc: BaseException
) -> None:
    """Log, once, a hook's exception that is not okt's, or what it returned that okt cannot use: a bug of the
    operator, which the refusal tells the client only. Said as the refusal says it, with the stack of an exception
    raised (not pydantic's text, which repeats the values it was given)."""
    if isinstance(exc, errors.OktError):
        return  # a verdict the hook gave on purpose: the answer says it
    meta = (request.get("object") or {}).get("metadata") or {}
    _log.error(
        "an admission hook raised an exception that is not okt's",
        controller=type(reconciler).controller_name(),
        hook=hook,
        uid=request.get("uid"),
        namespace=request.get("namespace") or meta.get("namespace"),
        name=meta.get("name") or request.get("name"),
        error=errors.said(exc),
        stack="".join(traceback.format_tb(exc.__traceback__)) or None,
    )


def _writes_nothing(verb: str, resource: str) -> str:
    """The fence ``check(ctx)`` runs behind: every write refused before it leaves (a read passes)."""
    return (
        "an admission hook writes nothing (its webhook is declared sideEffects None: a dry run, or an object refused "
        "later, must leave no trace)"
    )


def _kind_of(reconciler: reconciler_mod.Reconciler, request: Mapping[str, Any]) -> kinds.Kind:
    """The REST addressing of the object under review, from the request (no discovery)."""
    declared = type(reconciler).primary_kind()
    resource = request.get("resource") or {}
    plural = resource.get("resource") or declared.plural
    return kinds.Kind(declared.api_version, declared.kind, plural, declared.namespaced)


def _token(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
