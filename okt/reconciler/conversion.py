"""Conversion: the versions of a custom resource, converted by the author's functions between pydantic models.

Why this exists: a CRD with several versions whose schemas differ (a field renamed, split, moved) needs a conversion
webhook: the API server stores one version and asks the webhook for any other a client reads or writes. The author
knows how a spec of one version maps to the next; okt does the rest — it validates the incoming spec with the model of
its version, calls the converter (chaining several when no direct one is declared: ``v1alpha1 -> v1beta1 -> v1``),
validates the result with the model of the target version, rewrites ``apiVersion`` and answers the ``ConversionReview``.

Declared on the reconciler::

    spec_model = SpecV1Beta1                      # the version of api_version: stored and reconciled
    spec_models = {"v1alpha1": SpecV1Alpha1}      # the other served versions
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down}

Guarantees:

* ``metadata``, ``status`` and every other top-level field are passed through untouched (the API server refuses a
  conversion that changes metadata other than labels and annotations); only ``spec`` and ``apiVersion`` change;
* an object already in the desired version is returned as it is;
* a converter that raises, a spec that its model refuses, a converted spec that is not JSON data (a version without
  a model), or a missing path between two versions makes the whole review ``Failed`` with a message naming the
  object, the versions and the reason — never a half-converted answer; a converter's exception that is not okt's (a
  bug of the operator) is logged once, with where it was raised, and a pydantic ``ValidationError`` is said by its
  fields, never by the values it was given (see :func:`okt.errors.message_of`);
* a converted spec keeps only the fields that were set (``exclude_unset``), so defaults are left to the schema of the
  target version and a round trip gives back what was stored — secret fields (``SecretStr``...) with their values,
  not pydantic's ``**********``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
import pydantic_core
import structlog

from okt import errors
from okt.reconciler import reconciler as reconciler_mod

REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
REVIEW_API_VERSIONS = (REVIEW_API_VERSION, "apiextensions.k8s.io/v1beta1")
"""The ConversionReview versions answered, each in its own version (v1beta1: CRDs that ask for it)."""
Converter = Callable[[Any], Any]
_JSON: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Any)
_log = structlog.get_logger("okt.conversion")


@dataclasses.dataclass(frozen=True)
class Result:
    """The converted objects, or why the conversion failed."""

    objects: tuple[dict[str, Any], ...] = ()
    failure: str | None = None


def storage_version(reconciler: type[reconciler_mod.Reconciler]) -> str:
    """The stored version: the version of the reconciler's ``api_version``."""
    return reconciler.api_version.rpartition("/")[2]


def models_of(reconciler: type[reconciler_mod.Reconciler]) -> dict[str, type[pydantic.BaseModel] | None]:
    """Every served version and its spec model (None: a spec of any shape), the stored version first."""
    return {storage_version(reconciler): reconciler.spec_model, **reconciler.spec_models}


def chain(converters: Mapping[tuple[str, str], Converter], source: str, target: str) -> list[tuple[str, str]] | None:
    """The shortest sequence of declared conversions from ``source`` to ``target`` (None: there is none)."""
    steps: dict[str, list[str]] = collections.defaultdict(list)
    for a, b in converters:
        steps[a].append(b)
    came_from: dict[str, str] = {source: source}
    queue = collections.deque([source])
    while queue:
        version = queue.popleft()
        if version == target:
            path: list[tuple[str, str]] = []
            while version != source:
                path.append((came_from[version], version))
                version = came_from[version]
            return path[::-1]
        for following in steps[version]:
            if following not in came_from:
                came_from[following] = version
                queue.append(following)
    return None


def convert(reconciler: type[reconciler_mod.Reconciler], request: Mapping[str, Any]) -> Result:
    """Answer a ConversionReview's ``request`` (``desiredAPIVersion``, ``objects``) with the reconciler's converters."""
    desired = str(request.get("desiredAPIVersion") or "")
    group, _, version = desired.rpartition("/")
    converted: list[dict[str, Any]] = []
    for obj in request.get("objects") or ():
        try:
            converted.append(convert_object(reconciler, obj, group, version))
        except Exception as exc:
            return Result(failure=_describe(obj, desired, exc))
    return Result(tuple(converted))


def convert_object(
    reconciler: type[reconciler_mod.Reconciler], obj: Mapping[str, Any], group: str, version: str
) -> dict[str, Any]:
    """``obj`` in ``group/version`` (see the module docstring).

    Raises:
        okt.errors.InvalidSpec: the spec does not fit its version's model, or a converter's result the target's.
        ValueError: the object is of another group, or no converters lead from its version to ``version``.
        Exception: whatever a converter raises.
    """
    source_group, _, source = str(obj.get("apiVersion") or "").rpartition("/")
    if source_group != group:
        raise ValueError(f"the object is in group {source_group!r}, not {group!r}")
    if source == version:
        return dict(obj)
    path = chain(reconciler.converters, source, version)
    if path is None:
        declared = ", ".join(f"{a}->{b}" for a, b in reconciler.converters) or "none"
        raise ValueError(f"no converters lead from {source} to {version} (declared: {declared})")
    result = {**obj, "apiVersion": f"{group}/{version}"}
    if "spec" in obj:
        models = models_of(reconciler)
        spec: Any = obj["spec"]
        for a, b in path:
            model = models.get(a)
            source_spec = spec if model is None else reconciler_mod.spec_from_data(model, spec)
            try:
                returned = reconciler.converters[(a, b)](source_spec)
            except Exception as exc:
                _log_failure(reconciler, obj, (a, b), exc)
                raise
            spec = _as_data(returned, models.get(b))
        result["spec"] = spec
    return result


def respond(review: Mapping[str, Any], result: Result) -> dict[str, Any]:
    """The ConversionReview answering ``review`` with ``result`` (same apiVersion, the request's uid)."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", "")}
    if result.failure is None:
        response["convertedObjects"] = list(result.objects)
        response["result"] = {"status": "Success"}
    else:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failed", "message": result.failure}
    api_version = review.get("apiVersion") or REVIEW_API_VERSION
    return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


def _as_model(spec: Any, model: type[pydantic.BaseModel]) -> pydantic.BaseModel:
    """A converter's result read as ``model``, as a stored spec is (:func:`~okt.reconciler.reconciler.spec_from_data`):
    by the JSON forms of its values, so a strict model takes the ``datetime``, ``UUID`` or ``Enum`` a converter passed
    on as JSON data (a version without a model, a value it wrote as text), as it takes one from the API server."""
    try:
        data = pydantic_core.to_json(_revealed_secrets(spec))
    except pydantic_core.PydanticSerializationError as exc:
        raise ValueError(f"the converted spec is not JSON data: {exc}") from exc
    return reconciler_mod.spec_from_data(model, json.loads(data))


def _revealed_secrets(value: Any) -> Any:
    """``value`` with each pydantic secret in it (``SecretStr``...) replaced by its value, and each model by its set
    fields as data (secrets revealed): made JSON, a secret would be pydantic's ``**********``."""
    if isinstance(value, pydantic.SecretStr | pydantic.SecretBytes | pydantic.Secret):
        return _revealed_secrets(value.get_secret_value())
    if isinstance(value, pydantic.BaseModel):
        return _dumped(value)
    if isinstance(value, Mapping):
        return {key: _revealed_secrets(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [_revealed_secrets(inner) for inner in value]
    return value


def _as_data(value: Any, model: type[pydantic.BaseModel] | None) -> Any:
    """A converter's result as JSON data, checked against the target version's model when there is one."""
    if model is not None and not isinstance(value, model):
        value = _as_model(value, model)  # a model of another class, data: checked by its data
    if isinstance(value, pydantic.BaseModel):
        return _dumped(value)
    try:
        # Without a model nothing made it JSON: a datetime would be a 500 of the server, NaN an answer the API server
        # cannot read, instead of a failed review naming the object.
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the converted spec is not JSON data: {exc}") from exc
    return value


def _dumped(model: pydantic.BaseModel) -> Any:
    """``model``'s set fields as JSON data, secrets included: pydantic's JSON dump masks a ``SecretStr`` as
    ``**********``, and a converted spec is what the API server serves to clients, and stores when one writes."""
    data = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return _revealed(data, model.model_dump(by_alias=True, exclude_unset=True))


def _revealed(data: Any, python: Any) -> Any:
    """``data`` (the JSON dump) with the value of each secret the Python dump ``python`` holds at the same place."""
    if isinstance(python, pydantic.SecretStr | pydantic.SecretBytes | pydantic.Secret):
        return _JSON.dump_python(python.get_secret_value(), mode="json")
    if isinstance(data, dict) and isinstance(python, Mapping):
        return {key: _revealed(value, python[key]) if key in python else value for key, value in data.items()}
    if isinstance(data, list) and isinstance(python, list | tuple) and len(data) == len(python):
        return [_revealed(value, inner) for value, inner in zip(data, python, strict=True)]
    return data


def _log_failure(
    reconciler: type[reconciler_mod.Reconciler], obj: Mapping[str, Any], step: tuple[str, str], exc: BaseException
) -> None:
    """Log, once, a converter's exception that is not okt's: a bug of the operator, which the failed review tells the
    API server's client only. Said as the review says it, with the stack (not pydantic's text, which repeats the
    values it was given)."""
    if isinstance(exc, errors.OktError):
        return  # a failure the converter gave on purpose: the review says it
    meta = obj.get("metadata") or {}
    _log.error(
        "a converter raised an exception that is not okt's",
        controller=reconciler.controller_name(),
        converter=f"{step[0]}->{step[1]}",
        namespace=meta.get("namespace"),
        name=meta.get("name"),
        error=errors.said(exc),
        stack="".join(traceback.format_tb(exc.__traceback__)),
    )


def _describe(obj: Any, desired: str, exc: BaseException) -> str:
    meta = (obj.get("metadata") or {}) if isinstance(obj, Mapping) else {}
    name = "/".join(str(part) for part in (meta.get("namespace"), meta.get("name")) if part) or "an object"
    source = obj.get("apiVersion") if isinstance(obj, Mapping) else None
    said = errors.message_of(exc)
    reason = said if isinstance(exc, errors.OktError | ValueError) else f"{type(exc).__name__}: {said}"
    return f"cannot convert {name} from {source} to {desired}: {reason}"
