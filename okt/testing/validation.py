"""The API server's validation of fields of Kubernetes' own kinds, whatever the write: what may not be set together,
what must be named, which values are known.

Why this exists: a Deployment whose ``strategy.type`` is ``Recreate`` may not hold a ``rollingUpdate``, and the
defaults of an earlier ``RollingUpdate`` strategy leave one (``maxSurge`` and ``maxUnavailable``, 25% each). Kubernetes
1.20 neither clears it nor lets it through: a create, an update, a merge, JSON or strategic merge patch or an apply that
makes the strategy ``Recreate`` and leaves the ``rollingUpdate`` there is a 422 (``spec.strategy.rollingUpdate:
Forbidden: may not be specified when strategy `type` is 'Recreate'``) — an update must drop it, a merge patch set it to
``null``. So are a StatefulSet's ``OnDelete`` strategy with a ``rollingUpdate``, its strategy of an unknown ``type``,
its unknown ``podManagementPolicy`` and its negative ``partition``, a Deployment's strategy of an unknown
``type``, a Deployment or a StatefulSet whose ``selector`` does not select its Pods' template (whose Pods it would
never own), a Service of several ports one of which is unnamed, a ``ClusterIP`` Service holding a ``nodePort`` (which
an update making it ``ClusterIP`` keeps when it changes one), an ``externalTrafficPolicy`` unknown or on a Service
not reached through its nodes' ports, a workload's negative ``replicas`` or its template's ``restartPolicy`` other than
``Always``, and a Pod spec (a Pod's, or a workload's template's but a StatefulSet's, which 1.20 keeps) with a container
unnamed, without an image or named twice, two ports of a container of one name, an environment variable's name that
is not one or requests above its limits. A fake that stored them would let a reconciler pass its
unit tests that fails on every cluster. :class:`okt.testing.FakeClient` checks each object it is about to store, once
its defaults are filled in (:mod:`okt.testing.defaults`) and, for an update of a Service, the fields of the type it no
longer is dropped (:func:`okt.testing.services.settle`), against one table, :data:`RULES`
(``k8s.io/kubernetes/pkg/apis/*/validation``).

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, one cause each, or nothing;
it changes nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.resources import checksum, list_keys
from okt.testing import gotext, patching

EACH = "*"
"""A step of a :class:`Rule`'s path meaning every item of a list."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """A field the API server refuses, as its validation says it (``reason``: ``FieldValueForbidden``,
    ``FieldValueRequired``...).

    ``path`` names the field from the object's root (:data:`EACH` for every item of a list); ``broken`` answers,
    given the whole object and the field's value (None where it is left out: the server decodes a ``null`` so), whether
    it is refused there; ``message`` is what the server says of it, or a function of the value answering it.
    ``allocated`` marks a rule the server checks only once the others pass and it has allocated a Service's ports
    (``ValidateServiceExternalTrafficFieldsCombination``): its refusal comes alone, never beside another's.
    """

    path: tuple[str, ...]
    reason: str
    broken: Callable[[Mapping[str, Any], Any], bool]
    message: str | Callable[[Any], str]
    allocated: bool = False
    named: str = ""
    """A field below the one ``path`` names that the server names in its refusal instead (a container's
    ``resources.requests``, checked against its sibling ``limits``)."""
    duplicate: bool = False
    """Whether the rule refuses, besides what ``broken`` does, a value an earlier item of the same list holds (a
    second container of one name): the server names the later one, ``Duplicate value``."""


def _at(obj: Mapping[str, Any], *path: str) -> Any:
    """The value at ``path`` in ``obj``, None where a step is missing."""
    found: Any = obj
    for step in path:
        found = found.get(step) if isinstance(found, Mapping) else None
    return found


def _given_while(*path: str, value: str) -> Callable[[Mapping[str, Any], Any], bool]:
    """A field that may not be given while the field at ``path`` is ``value``."""
    return lambda obj, given: given is not None and _at(obj, *path) == value


def _deployment_strategy(strategy: Mapping[str, Any]) -> str:
    """The API server's words for an unknown strategy: the internal type Go prints, a pointer that is not nil written
    as an address (the server's changes with each request, so none can be matched)."""
    pointer = "nil" if strategy.get("rollingUpdate") is None else "0xc000000000"
    rolling_update = f"(*apps.RollingUpdateDeployment)({pointer})"
    kind = gotext.quote(str(strategy.get("type") or ""))
    value = f"apps.DeploymentStrategy{{Type:{kind}, RollingUpdate:{rolling_update}}}"
    return f'Unsupported value: {value}: supported values: "Recreate", "RollingUpdate"'


def _stateful_set_strategy(strategy: Mapping[str, Any]) -> str:
    """The API server's words for an unknown update strategy (a rollingUpdate's pointer written as an address, as for a
    Deployment's)."""
    pointer = "nil" if strategy.get("rollingUpdate") is None else "0xc000000000"
    rolling_update = f"(*apps.RollingUpdateStatefulSetStrategy)({pointer})"
    kind = gotext.quote(str(strategy.get("type") or ""))
    value = f"apps.StatefulSetUpdateStrategy{{Type:{kind}, RollingUpdate:{rolling_update}}}"
    return f"Invalid value: {value}: must be 'RollingUpdate' or 'OnDelete'"


def _stateful_set_rolling_update(rolling_update: Mapping[str, Any]) -> str:
    value = f"apps.RollingUpdateStatefulSetStrategy{{Partition:{rolling_update.get('partition') or 0}}}"
    return f"Invalid value: {value}: only allowed for updateStrategy 'RollingUpdate'"


def needs_health_check(service: Mapping[str, Any]) -> bool:
    """Whether a Service holds a ``healthCheckNodePort``: a ``LoadBalancer`` whose ``externalTrafficPolicy`` is
    ``Local`` (its nodes' load balancer probes that port; no other Service may name one)."""
    return bool(
        _at(service, "spec", "type") == "LoadBalancer" and _at(service, "spec", "externalTrafficPolicy") == "Local"
    )


def _selects(selector: Any, labels: Any) -> bool:
    """Whether a workload's ``selector`` (a ``LabelSelector``) selects the ``labels`` of its Pods' template, as the
    server reads it: none selects nothing, an empty one everything (refused on its own, not as a mismatch). One it
    cannot read (an unknown operator) is taken to select them: the server refuses it in other words, which the fake
    does not give."""
    if selector is None:
        return False
    if not isinstance(selector, Mapping):
        return True
    given = {str(key): str(value) for key, value in (labels or {}).items()} if isinstance(labels, Mapping) else {}
    expressions = [
        {"key": key, "operator": "In", "values": [value]} for key, value in (selector.get("matchLabels") or {}).items()
    ]
    for expression in [*expressions, *(selector.get("matchExpressions") or ())]:
        key, operator = str(expression.get("key")), expression.get("operator")
        values = {str(value) for value in expression.get("values") or ()}
        held = {
            "In": key in given and given[key] in values,
            "NotIn": given.get(key) not in values,
            "Exists": key in given,
            "DoesNotExist": key not in given,
        }.get(str(operator), True)
        if not held:
            return False
    return True


def _template_labels(labels: Any) -> str:
    """The server's words for Pod template labels its selector does not select: Go's ``%#v`` of the map, its keys in
    order."""
    if not isinstance(labels, Mapping):
        return "map[string]string(nil)"
    written = ", ".join(f"{gotext.quote(str(key))}:{gotext.quote(str(value))}" for key, value in sorted(labels.items()))
    return f"map[string]string{{{written}}}"


_SELECTOR_RULES = (
    Rule(("spec", "selector"), "FieldValueRequired", lambda obj, selector: selector is None, "Required value"),
    # The one workload whose Pods its own selector does not select would own none of them, and start more forever.
    Rule(
        ("spec", "template", "metadata", "labels"),
        "FieldValueInvalid",
        lambda obj, labels: not _selects(_at(obj, "spec", "selector"), labels),
        lambda labels: f"Invalid value: {_template_labels(labels)}: `selector` does not match template `labels`",
    ),
)
"""A workload's selector must be given, and select the labels of its Pods' template."""


_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""An environment variable's name the server accepts (``validation.IsEnvVarName``)."""

_ENV_NAME_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not "
    "start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is "
    "'[-._a-zA-Z][-._a-zA-Z0-9]*')"
)


def _over_limit(resources: Any) -> str | None:
    """The first resource (by name) a container's ``resources`` request more of than they limit it to, or None."""
    requests, limits = _at(resources, "requests"), _at(resources, "limits")
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return None
    for name in sorted(requests):
        request, limit = checksum.quantity_amount(requests[name]), checksum.quantity_amount(limits.get(name))
        if request is not None and limit is not None and request > limit:
            return str(name)
    return None


def _pod_rules(*spec: str) -> tuple[Rule, ...]:
    """The rules of a Pod's spec at ``spec`` (a Pod's own, or a workload's template's): what a reconciler building
    containers most often gets wrong. Every container is named, each by a name of its own, and runs an image (a
    template's too, though no Pod is made from it yet); a container's ports are told apart by their names; an
    environment variable's name is one a shell could read."""
    containers = (*spec, "containers", EACH)
    return (
        Rule((*containers, "name"), "FieldValueRequired", lambda obj, name: not name, "Required value", duplicate=True),
        Rule((*containers, "image"), "FieldValueRequired", lambda obj, image: not image, "Required value"),
        Rule((*containers, "ports", EACH, "name"), "FieldValueDuplicate", lambda obj, name: False, "", duplicate=True),
        Rule(
            (*containers, "env", EACH, "name"),
            "FieldValueInvalid",
            lambda obj, name: bool(name) and not (isinstance(name, str) and _ENV_NAME.fullmatch(name)),
            lambda name: f"Invalid value: {gotext.value(name)}: {_ENV_NAME_MESSAGE}",
        ),
        # A Pod is scheduled by what it requests and throttled or killed past what it is limited to.
        Rule(
            (*containers, "resources"),
            "FieldValueInvalid",
            lambda obj, resources: _over_limit(resources) is not None,
            lambda resources: (
                f"Invalid value: {gotext.value(str(resources['requests'][_over_limit(resources)]))}: must be less "
                f"than or equal to {_over_limit(resources)} limit"
            ),
            named="requests",
        ),
    )


_RESTART_RULE = Rule(
    ("spec", "template", "spec", "restartPolicy"),
    "FieldValueNotSupported",
    lambda obj, policy: policy is not None and policy != "Always",
    lambda policy: f'Unsupported value: {gotext.value(policy)}: supported values: "Always"',
)
"""A workload that keeps its Pods running restarts one that exits, never leaves it done."""

_TEMPLATE_RULES = (*_pod_rules("spec", "template", "spec"), _RESTART_RULE)
"""The rules of the Pod template of a Deployment, a DaemonSet or a ReplicaSet. A StatefulSet's template is checked
for its ``restartPolicy`` alone: Kubernetes 1.20 keeps one whose containers have no image, no name or one name twice
(its Pods are refused when they are made)."""

_REPLICAS_RULE = Rule(
    ("spec", "replicas"),
    "FieldValueInvalid",
    lambda obj, replicas: type(replicas) is int and replicas < 0,
    lambda replicas: f"Invalid value: {replicas}: must be greater than or equal to 0",
)


RULES: dict[tuple[str, str], tuple[Rule, ...]] = {
    ("v1", "Pod"): _pod_rules("spec"),
    ("apps/v1", "Deployment"): (
        _REPLICAS_RULE,
        *_SELECTOR_RULES,
        *_TEMPLATE_RULES,
        Rule(
            ("spec", "strategy"),
            "FieldValueNotSupported",
            lambda obj, strategy: _at(strategy, "type") not in ("Recreate", "RollingUpdate"),
            _deployment_strategy,
        ),
        Rule(
            ("spec", "strategy", "rollingUpdate"),
            "FieldValueForbidden",
            _given_while("spec", "strategy", "type", value="Recreate"),
            "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ),
    ),
    ("apps/v1", "StatefulSet"): (
        _REPLICAS_RULE,
        Rule(
            ("spec", "podManagementPolicy"),
            "FieldValueInvalid",
            lambda obj, policy: policy not in ("OrderedReady", "Parallel"),
            lambda policy: f"Invalid value: {gotext.value(policy)}: must be 'OrderedReady' or 'Parallel'",
        ),
        Rule(
            ("spec", "updateStrategy"),
            "FieldValueInvalid",
            lambda obj, strategy: _at(strategy, "type") not in ("OnDelete", "RollingUpdate"),
            _stateful_set_strategy,
        ),
        Rule(
            ("spec", "updateStrategy", "rollingUpdate"),
            "FieldValueInvalid",
            _given_while("spec", "updateStrategy", "type", value="OnDelete"),
            _stateful_set_rolling_update,
        ),
        Rule(
            ("spec", "updateStrategy", "rollingUpdate", "partition"),
            "FieldValueInvalid",
            lambda obj, partition: (
                _at(obj, "spec", "updateStrategy", "type") == "RollingUpdate"
                and type(partition) is int
                and partition < 0
            ),
            lambda partition: f"Invalid value: {partition}: must be greater than or equal to 0",
        ),
        *_SELECTOR_RULES,
        _RESTART_RULE,
    ),
    ("apps/v1", "ReplicaSet"): (_REPLICAS_RULE, *_SELECTOR_RULES, *_TEMPLATE_RULES),
    ("apps/v1", "DaemonSet"): (*_SELECTOR_RULES, *_TEMPLATE_RULES),
    ("batch/v1", "Job"): _pod_rules("spec", "template", "spec"),
    ("batch/v1", "CronJob"): _pod_rules("spec", "jobTemplate", "spec", "template", "spec"),
    ("batch/v1beta1", "CronJob"): _pod_rules("spec", "jobTemplate", "spec", "template", "spec"),
    ("v1", "Service"): (
        # One port may go unnamed; of several, each is told from the others by its name (an endpoint's port names it).
        Rule(
            ("spec", "ports", EACH, "name"),
            "FieldValueRequired",
            lambda obj, name: not name and len(_at(obj, "spec", "ports") or ()) > 1,
            "Required value",
        ),
        # An update making a Service ClusterIP while it changes a node port keeps them all (services.settle).
        Rule(
            ("spec", "ports", EACH, "nodePort"),
            "FieldValueForbidden",
            lambda obj, port: bool(port) and _at(obj, "spec", "type") == "ClusterIP",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        Rule(
            ("spec", "externalTrafficPolicy"),
            "FieldValueInvalid",
            lambda obj, policy: bool(policy) and policy not in ("Cluster", "Local"),
            lambda policy: (
                f"Invalid value: {gotext.value(policy)}: ExternalTrafficPolicy must be empty, Cluster or Local"
            ),
        ),
        # An update making a Service neither NodePort nor LoadBalancer drops the policy it leaves as it was, and the
        # health check port it no longer needs, first (services.settle).
        Rule(
            ("spec", "externalTrafficPolicy"),
            "FieldValueInvalid",
            lambda obj, policy: bool(policy) and _at(obj, "spec", "type") not in ("NodePort", "LoadBalancer"),
            lambda policy: (
                f"Invalid value: {gotext.value(policy)}: ExternalTrafficPolicy can only be set on NodePort and "
                "LoadBalancer service"
            ),
            allocated=True,
        ),
        Rule(
            ("spec", "healthCheckNodePort"),
            "FieldValueInvalid",
            lambda obj, port: bool(port) and not needs_health_check(obj),
            lambda port: (
                f"Invalid value: {port}: HealthCheckNodePort can only be set on LoadBalancer service with "
                "ExternalTrafficPolicy=Local"
            ),
            allocated=True,
        ),
    ),
}
"""Each kind's rules, in the order the API server checks them."""


UNDEFAULTED_KEYS: dict[tuple[str, str], frozenset[tuple[str, str]]] = {
    # Kubernetes 1.20's apply schema defaults a container port's protocol (a key of its ports) but not a Service
    # port's: newer servers (1.21 on) default both to TCP, so okt's own apply spells it out (okt.resources.apply).
    ("v1", "Service"): frozenset({(".spec.ports", "protocol")}),
}
"""The key fields of a kind's keyed lists that have no default in an apply, though okt's table
(:data:`okt.resources.list_keys.KINDS`) gives them one: by the list's path, as the server writes it, and the field."""


def check_apply(kind: kinds.Kind, body: Mapping[str, Any], schema: list_keys.Schema) -> None:
    """Refuse an apply of ``body`` (an object of ``kind`` whose keyed lists ``schema`` names) as Kubernetes 1.20 does
    where it cannot type it (:func:`okt.testing.patching.untyped`): an item of a keyed list leaving out a key field
    with no default (:data:`UNDEFAULTED_KEYS`: a Service port without its ``protocol``), two items of one key.

    Raises:
        okt.errors.Invalid: the server's 500, an error of its own rather than a 422 (``failed to create typed
            patch object: .spec.ports: element 0: associative list with keys has an element that omits key field
            "protocol" (and doesn't have default value)``), which okt reads as the refusal of the field it names.
    """
    found = patching.untyped(body, schema, UNDEFAULTED_KEYS.get((kind.api_version, kind.kind), frozenset()))
    if found:
        raise errors.ApiError.from_status(500, "InternalError", f"failed to create typed patch object: {found}")


def check(kind: kinds.Kind, obj: Mapping[str, Any], *, allocated: bool = False) -> None:
    """Refuse ``obj`` (an object of ``kind``, as it would be stored: defaults filled in) as the API server's
    validation would, where it breaks a rule of :data:`RULES`: those checked before it allocates anything, or, if
    ``allocated``, those checked once a Service's node ports are (:attr:`Rule.allocated`).

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each, in the API server's words (several bracketed,
            as the server lists them).
    """
    causes = []
    for rule in RULES.get((kind.api_version, kind.kind), ()):
        if rule.allocated != allocated:
            continue
        held: dict[str, set[str]] = {}
        for field, value in _fields(obj, rule.path):
            if rule.broken(obj, value):
                message = rule.message if isinstance(rule.message, str) else rule.message(value)
                causes.append(
                    errors.StatusCause(rule.reason, message, f"{field}.{rule.named}" if rule.named else field)
                )
            elif rule.duplicate and value:
                # Told apart from the items of its own list: those of the list the last index of its field names.
                others = held.setdefault(_ITEM.sub("", field, count=1), set())
                if str(value) in others:
                    causes.append(
                        errors.StatusCause("FieldValueDuplicate", f"Duplicate value: {gotext.value(value)}", field)
                    )
                others.add(str(value))
    if causes:
        said = ", ".join(f"{cause.field}: {cause.message}" for cause in causes)
        said = said if len(causes) == 1 else f"[{said}]"
        raise errors.ApiError.from_status(422, "Invalid", f"{invalid(kind, obj)}: {said}", causes=causes)


_ITEM = re.compile(r"\[\d+\](?=[^\[]*$)")
"""The index of the last list a field's name steps through (``[1]`` in ``containers[0].ports[1].name``)."""


def invalid(kind: kinds.Kind, obj: Mapping[str, Any]) -> str:
    """The opening of the API server's message refusing ``obj``: its kind qualified by its group but for the core
    group's (``Deployment.apps "web" is invalid``, ``Service "web" is invalid``)."""
    group = kind.api_version.rpartition("/")[0]
    name = (obj.get("metadata") or {}).get("name", "")
    return f'{kind.kind}{"." + group if group else ""} "{name}" is invalid'


def _fields(obj: Any, path: tuple[str, ...], named: str = "") -> Iterator[tuple[str, Any]]:
    """Each field ``path`` names in ``obj``, as the API server names it (``spec.ports[1].name``), with its value (None
    where it is left out); nothing below a mapping or a list that is not there."""
    if not path:
        yield named, obj
        return
    step, rest = path[0], path[1:]
    if step == EACH:
        for index, item in enumerate(obj if isinstance(obj, list) else ()):
            yield from _fields(item, rest, f"{named}[{index}]")
    elif isinstance(obj, Mapping):
        yield from _fields(obj.get(step), rest, f"{named}.{step}" if named else step)
