"""Conversion: the versions of a custom resource, converted by the author's functions between pydantic models.

Why this exists: a CRD with several versions whose schemas differ (a field renamed, split, moved) needs a conversion
webhook: the API server stores one version and asks the webhook for any other a client reads or writes. The author
knows how a spec of one version maps to the next; okt does the rest — it reads the incoming spec as the model of its
version, calls the converter (chaining several when no direct one is declared: ``v1alpha1 -> v1beta1 -> v1``), reads
the result as the model of the target version, rewrites ``apiVersion`` and answers the ``ConversionReview``.

Declared on the reconciler::

    spec_model = SpecV1Beta1                      # the version of api_version: stored and reconciled
    spec_models = {"v1alpha1": SpecV1Alpha1}      # the other served versions
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down}

Conversion changes the shape of a spec, never judges it: the API server converts every stored object a client lists
at another version — the operator's own informer among them — and a review that fails fails the whole list, for
every client, cluster-wide. A spec the models refuse (stored before a validator existed, or in a namespace the
admission webhook is not called for) is converted as it is; refusing it is admission's, and the reconcile's, which
reports ``Ready=False`` with the reason.

Guarantees:

* ``metadata``, ``status`` and every other top-level field are passed through untouched (the API server refuses a
  conversion that changes metadata other than labels and annotations); only ``spec`` and ``apiVersion`` change;
* an object already in the desired version is returned as it is;
* a spec its model refuses reaches the converter all the same, built without validation
  (:meth:`pydantic.BaseModel.model_construct`): each field the model's types take as they are typed, the others
  (and each nested model) as they are stored; a converter's result the target's model refuses is answered as the
  JSON data it is;
* only an object that cannot be converted at all fails the review — a converter that raises (its message then says
  what the source's model refuses in the spec, if anything), one that returns no spec (``None``, its ``return``
  forgotten; or a list, a text... for a spec that is an object), a converted spec that is not JSON data, or a missing
  path between two versions: the API server needs every object of a review converted, so the whole review is
  ``Failure`` (HTTP 200: a review answered), with a message naming the object, the versions and the reason — never a
  half-converted answer. The reason is an okt error's message (``okt.PermanentError("no v1 image for 'x'")``), a
  pydantic ``ValidationError`` by its fields, never the values it was given (a model the converter builds that
  refuses what it is given: ``SpecV1: replicas: Input should be greater than or equal to 1``); any other exception
  is a bug of the operator whose text may carry the spec's data, said by its class only (``internal error in
  converter v1alpha1->v1beta1: KeyError``, see :func:`okt.errors.answered`) and logged once, with where it was
  raised;
* a converted spec keeps only the fields that were set (``exclude_unset``) — given, assigned, or changed in place
  from their default (``spec.backup.at = ...`` on a default ``backup``) —, so defaults are left to the schema of the
  target version and a round trip gives back what was stored — secret fields (``SecretStr``...) with their values,
  not pydantic's ``**********``.

Caveat: a converter that builds a model (``SpecV1Beta1(...)``) runs that model's validation, as pydantic does for
every instance it builds, and fails the review when it refuses; a converter that returns a mapping, or builds with
``model_construct``, converts any spec.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import traceback
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import pydantic
import pydantic_core
import structlog

from okt import coroutines, errors, secret_values
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
    # A review is a block (:mod:`okt.secret_values`), as an admission review is: the values of the Secrets a
    # converter reads are left out of the failure said of its error.
    with secret_values.held():
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
            source_spec, refused = (spec, None) if model is None else _read(model, spec)
            try:
                returned = coroutines.call(reconciler.converters[(a, b)], source_spec)
            except Exception as exc:
                _log_failure(reconciler, obj, (a, b), exc)
                # okt's errors and pydantic's by their message, a bug by its class only (see okt.errors.answered)
                said = errors.answered(exc, f"converter {a}->{b}")
                if refused is not None:
                    said = f"{said} (a spec the {a} model refuses: {errors.message_of(refused)})"
                raise ValueError(said) from exc
            if returned is None or (
                isinstance(spec, Mapping) and not isinstance(returned, Mapping | pydantic.BaseModel)
            ):
                # A converter without its return (or returning a field of the spec, not the spec) answered the object
                # with a spec of null: shown to every client reading that version, and stored when one writes it.
                # Said by its type only: the value may be a Secret's.
                raise ValueError(
                    f"converter {a}->{b} returned {_a_type(returned)}: a converter returns the converted spec (a "
                    "model, or a mapping)"
                )
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
        response["result"] = {"status": "Failure", "message": result.failure}
    api_version = review.get("apiVersion") or REVIEW_API_VERSION
    return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


def _read(model: type[pydantic.BaseModel], spec: Any) -> tuple[pydantic.BaseModel, errors.InvalidSpec | None]:
    """The stored ``spec`` as ``model`` for a converter, and the model's refusal of it (None: it takes it).

    A spec the model refuses is built without validation (see :func:`_unvalidated`): converting it is moving its fields,
    judging it is admission's and the reconcile's. A spec that is no object at all cannot be built: that refusal is
    raised.
    """
    try:
        return reconciler_mod.spec_from_data(model, spec), None
    except errors.InvalidSpec as refused:
        if not isinstance(spec, Mapping):
            raise
        return _unvalidated(model, spec), refused


def _unvalidated(model: type[pydantic.BaseModel], data: Mapping[str, Any]) -> pydantic.BaseModel:
    """``data`` as ``model``, built without its validators: each field read as its type (with its constraints, then
    without) when that type takes it, a nested model's field likewise, any other value left as stored. Fields are found
    by alias or name as the model finds them; unknown keys are kept only by a model that keeps extra fields. Unset
    fields stay unset (their defaults, not dumped)."""
    values: dict[str, Any] = {}
    taken: set[str] = set()
    by_name = bool(model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name"))
    for name, field in model.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
        keys = [alias] if alias else []
        if not alias or by_name:
            keys.append(name)
        for key in keys:
            if key in data:
                annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
                values[name] = _loose(annotation, data[key])
                taken.add(key)
                break
    if model.model_config.get("extra") == "allow":
        values.update({key: value for key, value in data.items() if key not in taken and key not in values})
    return model.model_construct(**values)


def _loose(annotation: Any, value: Any) -> Any:
    """``value`` read as ``annotation`` when it takes it; else, piece by piece, what of it can be (a model built
    unvalidated, the items of a list or mapping, the type without its constraints); else ``value`` as it is."""
    try:
        return pydantic.TypeAdapter(annotation).validate_json(pydantic_core.to_json(value))
    except (pydantic.ValidationError, pydantic.PydanticUserError, pydantic_core.PydanticSerializationError):
        pass
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _loose(args[0], value)  # its constraints refuse the value: the type alone may take it
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel) and isinstance(value, Mapping):
        return _unvalidated(annotation, value)
    if origin in (typing.Union, types.UnionType):
        others = [arg for arg in args if arg is not type(None)]
        return _loose(others[0], value) if len(others) == 1 else value
    if origin in (list, set, frozenset, Sequence) and isinstance(value, list) and args:
        return [_loose(args[0], item) for item in value]
    if origin in (dict, Mapping) and isinstance(value, Mapping) and len(args) == 2:
        return {key: _loose(args[1], item) for key, item in value.items()}
    return value


def _a_type(value: object) -> str:
    """What a converter returned instead of a spec, by its type alone (``None``, ``a list``)."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _json_data(value: Any) -> Any:
    """A converter's result as JSON data: models by their set fields, secrets by their values, a ``datetime``, a
    ``UUID`` or an ``Enum`` by its JSON form."""
    try:
        return json.loads(pydantic_core.to_json(_revealed_secrets(value)))
    except pydantic_core.PydanticSerializationError as exc:
        raise ValueError(f"the converted spec is not JSON data: {exc}") from exc


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
    """A converter's result as JSON data, read as the target version's model when there is one (as a stored spec is,
    :func:`~okt.reconciler.reconciler.spec_from_data`: a strict model takes the JSON form of a ``datetime``); a result
    that model refuses is the JSON data it is (see the module docstring)."""
    if model is not None and not isinstance(value, model):
        data = _json_data(value)  # a model of another class, data: read by its data
        try:
            value = reconciler_mod.spec_from_data(model, data)
        except errors.InvalidSpec:
            value = data
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
    model = _filled(model)
    # A model built unvalidated (a spec its model refuses) may hold values of other types than its fields': said as
    # they are, without pydantic's warning that they are not what the field's type serializes.
    data = model.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    return _revealed(data, model.model_dump(by_alias=True, exclude_unset=True, warnings=False))


def _filled(model: pydantic.BaseModel) -> pydantic.BaseModel:
    """A copy of ``model`` in which each field left unset but changed in place since its default (``spec.backup.at =
    ...`` on a default ``backup``, ``spec.tags.append(...)`` on a default ``tags``), in it or in a model it holds,
    counts as set: pydantic counts a field as set only when it was given or assigned, and ``exclude_unset`` dropped
    what the converter wrote there. A default left as it is stays unset (the schema's to apply)."""
    copied = model.model_copy(deep=True)
    _mark_filled(copied)
    return copied


def _mark_filled(value: Any) -> None:
    if isinstance(value, pydantic.BaseModel):
        for name, field in type(value).model_fields.items():
            inner = getattr(value, name, None)
            if name not in value.model_fields_set and _changed(field, inner):
                value.model_fields_set.add(name)
            _mark_filled(inner)
    elif isinstance(value, Mapping):
        for inner in value.values():
            _mark_filled(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            _mark_filled(inner)


def _changed(field: pydantic.fields.FieldInfo, value: Any) -> bool:
    """Whether ``value`` differs from the default of ``field`` (a default that cannot be made or compared: no)."""
    try:
        default = field.get_default(call_default_factory=True)
        return bool(value != default)
    except Exception:  # a factory that needs the other fields' data, a value whose == raises
        return False


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
    return f"cannot convert {name} from {source} to {desired}: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    """What the review says of why an object was not converted: okt's words (a converter's exception is said as
    :func:`okt.errors.answered` says it, in them), another exception of okt's by its class only, as a bug's."""
    if isinstance(exc, errors.OktError | ValueError):
        return errors.message_of(exc)
    return errors.answered(exc, "conversion")
