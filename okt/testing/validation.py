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
``Always``, a workload's empty ``selector`` (which would select every Pod of its namespace), a Job's template
``restartPolicy`` neither ``OnFailure`` nor ``Never``, a Pod template's labels and annotations, and a Pod spec (a Pod's,
or a workload's template's but a StatefulSet's, which 1.20 keeps) with a container unnamed, of a name that is no DNS
label, without an image or named twice, two ports of a container of one name, an environment variable without a
name or of a name that is not one, requests above its limits or a ``restartPolicy`` Kubernetes does not know. A fake
that stored them would let a reconciler pass its unit tests that fails on every cluster. :class:`okt.testing.FakeClient`
checks each object it is about to store, once its defaults are filled in (:mod:`okt.testing.defaults`) and, for an
update of a Service, the fields of the type it no longer is dropped (:func:`okt.testing.services.settle`), against one
table, :data:`RULES` (``k8s.io/kubernetes/pkg/apis/*/validation``).

Guarantees: :func:`check` raises :class:`okt.errors.Invalid` naming every refused field, one cause each, or nothing;
it changes nothing. Its causes come in the server's order: rule by rule, but a Pod spec's container by container
(:class:`Each`), where the server's loop goes over the containers.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.resources import checksum, list_keys, quantities
from okt.testing import gotext, metadata, patching

EACH = "*"
"""A step of a :class:`Rule`'s path meaning every item of a list."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """A field the API server refuses, as its validation says it (``reason``: ``FieldValueForbidden``,
    ``FieldValueRequired``...).

    ``path`` names the field from the object's root (:data:`EACH` for every item of a list); ``broken`` answers,
    given the whole object and the field's value (None where it is left out: the server decodes a ``null`` so), whether
    it is refused there; ``message`` is what the server says of it, or a function of the value answering it (a list:
    one cause each, the server refusing one field several times).
    ``allocated`` marks a rule the server checks only once the others pass and it has allocated a Service's ports
    (``ValidateServiceExternalTrafficFieldsCombination``): its refusal comes alone, never beside another's.
    """

    path: tuple[str, ...]
    reason: str
    broken: Callable[[Mapping[str, Any], Any], bool]
    message: str | Callable[[Any], str | list[str]]
    allocated: bool = False
    named: str = ""
    """A field below the one ``path`` names that the server names in its refusal instead (a container's
    ``resources.requests``, checked against its sibling ``limits``)."""
    duplicate: Callable[[Any], bool] | None = None
    """Which values the rule refuses, besides what ``broken`` does, where an earlier item of the same list holds one
    (a second container of one name, even ``""``; a second port of one name, never an unnamed one): the server names
    the later one, ``Duplicate value``."""


@dataclasses.dataclass(frozen=True)
class Each:
    """:class:`Rule` s checked item by item of the list at ``path`` (each rule's path is from the item): all of an
    item's refusals before the next item's, as the server's loop over a Pod's containers lists them (container 0's
    name, image and env before container 1's)."""

    path: tuple[str, ...]
    rules: tuple[Rule, ...]


@dataclasses.dataclass(frozen=True)
class TemplateMetadata:
    """The labels and annotations of the Pod template at ``path``, checked as an object's own are
    (:func:`okt.testing.metadata.labels_causes`) and named ``<path>.labels`` as the server names them."""

    path: tuple[str, ...]


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


def go_labels(labels: Any) -> str:
    """The server's words for a Pod template's labels it refuses (its selector does not select them, a Job's are not
    its own): Go's ``%#v`` of the map, its keys in order."""
    if not isinstance(labels, Mapping):
        return "map[string]string(nil)"
    written = ", ".join(f"{gotext.quote(str(key))}:{gotext.quote(str(value))}" for key, value in sorted(labels.items()))
    return f"map[string]string{{{written}}}"


def go_selector(selector: Mapping[str, Any]) -> str:
    """A ``LabelSelector`` as Go's ``%#v`` writes it, where the API server quotes one (an empty one, one not
    auto-generated): each of its two fields left out (``nil``), empty (``{}``) or its labels written out (its match
    expressions, where it has some, left out as ``{...}``)."""
    labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    if labels is None:
        written_labels = "map[string]string(nil)"
    else:
        pairs = ", ".join(f"{gotext.quote(str(key))}:{gotext.quote(str(labels[key]))}" for key in sorted(labels))
        written_labels = f"map[string]string{{{pairs}}}"
    if expressions is None:
        written_expressions = "[]v1.LabelSelectorRequirement(nil)"
    else:
        written_expressions = "[]v1.LabelSelectorRequirement{" + ("..." if expressions else "") + "}"
    return f"v1.LabelSelector{{MatchLabels:{written_labels}, MatchExpressions:{written_expressions}}}"


def _selector_rules(said: str) -> tuple[Rule, ...]:
    """A workload's selector must be given, select something, and select the labels of its Pods' template. ``said``
    is the kind the server names refusing an empty one (``deployment``, which it says of a ReplicaSet's too)."""
    return (
        Rule(("spec", "selector"), "FieldValueRequired", lambda obj, selector: selector is None, "Required value"),
        # A selector of no label would select every Pod of the namespace: the workload would own (and delete) them all.
        Rule(
            ("spec", "selector"),
            "FieldValueInvalid",
            lambda obj, selector: (
                isinstance(selector, Mapping)
                and not selector.get("matchLabels")
                and not selector.get("matchExpressions")
            ),
            lambda selector: f"Invalid value: {go_selector(selector)}: empty selector is invalid for {said}",
        ),
        # The one workload whose Pods its own selector does not select would own none of them, and start more forever.
        Rule(
            ("spec", "template", "metadata", "labels"),
            "FieldValueInvalid",
            lambda obj, labels: not _selects(_at(obj, "spec", "selector"), labels),
            lambda labels: f"Invalid value: {go_labels(labels)}: `selector` does not match template `labels`",
        ),
    )


_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""An environment variable's name the server accepts (``validation.IsEnvVarName``)."""

_ENV_NAME_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not "
    "start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is "
    "'[-._a-zA-Z][-._a-zA-Z0-9]*')"
)


def _over_limits(resources: Any) -> list[str]:
    """The resources (by name) a container's ``resources`` request more of than they limit it to."""
    requests, limits = _at(resources, "requests"), _at(resources, "limits")
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return []
    over = []
    for name in sorted(requests):
        request, limit = checksum.quantity_amount(requests[name]), checksum.quantity_amount(limits.get(name))
        if request is not None and limit is not None and request > limit:
            over.append(str(name))
    return over


def _over_limits_said(resources: Mapping[str, Any]) -> list[str]:
    """The server's words for each resource requested above its limit, one cause each, by name (the server's Go walks
    the requests in an order of its own, each time another: of several, a test should match the set)."""
    requests = resources["requests"]
    return [
        f"Invalid value: {gotext.value(str(requests[name]))}: must be less than or equal to {name} limit"
        for name in _over_limits(resources)
    ]


def _is_restart_policy(policy: Any) -> bool:
    return policy in ("Always", "OnFailure", "Never")


_CONTAINER_RULES = (
    Rule(("name",), "FieldValueRequired", lambda obj, name: not name, "Required value"),
    # A container's name is a DNS label: its Pod's hostname-like handles (logs, exec, metrics) name it.
    Rule(
        ("name",),
        "FieldValueInvalid",
        lambda obj, name: bool(name) and bool(metadata.dns_label(str(name))),
        lambda name: [f"Invalid value: {gotext.value(name)}: {why}" for why in metadata.dns_label(str(name))],
    ),
    Rule(("name",), "FieldValueDuplicate", lambda obj, name: False, "", duplicate=lambda name: isinstance(name, str)),
    Rule(("image",), "FieldValueRequired", lambda obj, image: not image, "Required value"),
    Rule(("ports", EACH, "name"), "FieldValueDuplicate", lambda obj, name: False, "", duplicate=bool),
    Rule(("env", EACH, "name"), "FieldValueRequired", lambda obj, name: not name, "Required value"),
    Rule(
        ("env", EACH, "name"),
        "FieldValueInvalid",
        lambda obj, name: bool(name) and not (isinstance(name, str) and _ENV_NAME.fullmatch(name)),
        lambda name: f"Invalid value: {gotext.value(name)}: {_ENV_NAME_MESSAGE}",
    ),
    # A Pod is scheduled by what it requests and throttled or killed past what it is limited to.
    Rule(
        ("resources",),
        "FieldValueInvalid",
        lambda obj, resources: bool(_over_limits(resources)),
        _over_limits_said,
        named="requests",
    ),
)
"""What a reconciler building containers most often gets wrong, container by container. Every container is named,
each by a name of its own, a DNS label, and runs an image (a template's too, though no Pod is made from it yet); a
container's ports are told apart by their names; an environment variable is named, by a name a shell could read."""


def _pod_rules(*spec: str) -> tuple[Rule | Each, ...]:
    """The rules of a Pod's spec at ``spec`` (a Pod's own, or a workload's template's): its containers' (one by one),
    then its ``restartPolicy``, one Kubernetes knows."""
    return (
        Each((*spec, "containers"), _CONTAINER_RULES),
        Rule(
            (*spec, "restartPolicy"),
            "FieldValueNotSupported",
            lambda obj, policy: policy is not None and not _is_restart_policy(policy),
            lambda policy: (
                f'Unsupported value: {gotext.value(policy)}: supported values: "Always", "OnFailure", "Never"'
            ),
        ),
    )


def _template_rules(*template: str) -> tuple[Rule | Each | TemplateMetadata, ...]:
    """The rules of a workload's Pod template at ``template``: its labels and annotations, then its spec's."""
    return (TemplateMetadata(template), *_pod_rules(*template, "spec"))


_RESTART_RULE = Rule(
    ("spec", "template", "spec", "restartPolicy"),
    "FieldValueNotSupported",
    lambda obj, policy: policy is not None and policy != "Always",
    lambda policy: f'Unsupported value: {gotext.value(policy)}: supported values: "Always"',
)
"""A workload that keeps its Pods running restarts one that exits, never leaves it done."""


def _job_restart_rules(*template: str) -> tuple[Rule, ...]:
    """A Job's Pods run to completion: one that exits is restarted only on failure, or never. ``Always`` (the default
    of a template naming none) is refused as a policy left out; one Kubernetes does not know, a second time."""
    path = (*template, "spec", "restartPolicy")
    return (
        Rule(
            path,
            "FieldValueRequired",
            lambda obj, policy: policy == "Always",
            'Required value: valid values: "OnFailure", "Never"',
        ),
        Rule(
            path,
            "FieldValueNotSupported",
            lambda obj, policy: policy is not None and not _is_restart_policy(policy),
            lambda policy: f'Unsupported value: {gotext.value(policy)}: supported values: "OnFailure", "Never"',
        ),
    )


def _job_rules(*template: str) -> tuple[Rule | Each | TemplateMetadata, ...]:
    return (*_template_rules(*template), *_job_restart_rules(*template))


_JOB_SELECTOR_REQUIRED, _, _JOB_SELECTOR_SELECTS = _selector_rules("job")
_JOB_RULES = (*_job_rules("spec", "template"), _JOB_SELECTOR_REQUIRED, _JOB_SELECTOR_SELECTS)
"""A Job's: its template's, then its selector (its own, or given with ``manualSelector``) is there and selects its
template's labels. One left out with ``manualSelector`` is refused twice, as the server does: missing, and selecting
nothing. An empty one selects everything, the template too: Kubernetes 1.20 keeps it."""

_CRON_JOB_RULES = (
    *_job_rules("spec", "jobTemplate", "spec", "template"),
    Rule(
        ("spec", "jobTemplate", "spec", "selector"),
        "FieldValueInvalid",
        lambda obj, selector: selector is not None,
        lambda selector: f"Invalid value: {go_selector(selector)}: `selector` will be auto-generated",
    ),
    Rule(
        ("spec", "jobTemplate", "spec", "manualSelector"),
        "FieldValueNotSupported",
        lambda obj, manual: manual is True,
        'Unsupported value: true: supported values: "nil", "false"',
    ),
)
"""A CronJob's: its job template's, and the selector of its Jobs left to the server (each Job is given its own): one
given, or a ``manualSelector``, is refused."""


_TEMPLATE_RULES = (*_template_rules("spec", "template"), _RESTART_RULE)
"""The rules of the Pod template of a Deployment, a DaemonSet or a ReplicaSet. A StatefulSet's template is checked
for its labels, its annotations and its ``restartPolicy`` alone: Kubernetes 1.20 keeps one whose containers have no
image, no name or one name twice (its Pods are refused when they are made)."""

_REPLICAS_RULE = Rule(
    ("spec", "replicas"),
    "FieldValueInvalid",
    lambda obj, replicas: type(replicas) is int and replicas < 0,
    lambda replicas: f"Invalid value: {replicas}: must be greater than or equal to 0",
)


RULES: dict[tuple[str, str], tuple[Rule | Each | TemplateMetadata, ...]] = {
    ("v1", "Pod"): _pod_rules("spec"),
    ("apps/v1", "Deployment"): (
        _REPLICAS_RULE,
        *_selector_rules("deployment"),
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
        *_selector_rules("statefulset"),
        TemplateMetadata(("spec", "template")),
        _RESTART_RULE,
    ),
    ("apps/v1", "ReplicaSet"): (_REPLICAS_RULE, *_selector_rules("deployment"), *_TEMPLATE_RULES),
    ("apps/v1", "DaemonSet"): (*_selector_rules("daemonset"), *_TEMPLATE_RULES),
    ("batch/v1", "Job"): _JOB_RULES,
    ("batch/v1", "CronJob"): _CRON_JOB_RULES,
    ("batch/v1beta1", "CronJob"): _CRON_JOB_RULES,
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


_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_QUANTITY_SUFFIXES = frozenset({"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"})
_QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def base64_error(text: str) -> str | None:
    """Why Go's standard base64 decoding (what the API server decodes a Secret's ``data`` with) refuses ``text``, in
    its words (``illegal base64 data at input byte 3``: the offset, in bytes, Go names), or None if it takes it. Line
    breaks are skipped, as Go skips them; padding is required."""
    src = text.encode()
    at = 0
    while at < len(src):
        got = 0
        while got < 4:
            if at == len(src):
                return None if got == 0 else f"illegal base64 data at input byte {at - got}"
            byte, at = src[at], at + 1
            if byte in _BASE64:
                got += 1
            elif byte in b"\r\n":
                continue
            elif byte != ord("=") or got < 2:
                return f"illegal base64 data at input byte {at - 1}"
            else:  # padding: "==" after two characters, "=" after three, then nothing but line breaks
                if got == 2:
                    while at < len(src) and src[at] in b"\r\n":
                        at += 1
                    if at == len(src):
                        return f"illegal base64 data at input byte {len(src)}"
                    if src[at] != ord("="):
                        return f"illegal base64 data at input byte {at - 1}"
                    at += 1
                while at < len(src) and src[at] in b"\r\n":
                    at += 1
                return None if at == len(src) else f"illegal base64 data at input byte {at}"
    return None


def quantity_error(text: str) -> str | None:
    """Why Kubernetes' ``resource.ParseQuantity`` refuses ``text`` (what a quantity field is decoded with, its
    surrounding blanks trimmed), in its words, or None if it takes it: one that does not read as a number and suffix
    characters (``lots``, ``1x``, ``1.5.5``, an empty one) does not match its regular expression; one whose suffix is
    none it knows (``1e``, ``1Ki3``) is a suffix it cannot parse."""
    text = text.strip()
    if not text:
        return _QUANTITY_FORMAT
    found = re.fullmatch(r"[+-]?[0-9]*(?:\.[0-9]*)?([eEinumkKMGTP]*)([-+]?[0-9]*)", text)
    if found is None:
        return _QUANTITY_FORMAT
    suffix = found.group(1) + found.group(2)
    if suffix in _QUANTITY_SUFFIXES or re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
        return None
    return "unable to parse quantity's suffix"


_RFC3339 = "2006-01-02T15:04:05Z07:00"
_DAYS_IN = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def time_error(text: str) -> str | None:
    """Why Go's ``time.Parse(time.RFC3339, text)`` (what a ``metav1.Time`` — a ``creationTimestamp``, a Job's
    ``startTime`` — is decoded with) refuses ``text``, in the words of the Go Kubernetes 1.20 is built with (``parsing
    time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"``), or None if it takes it.

    Its layout is read element by element, as Go reads it: a four-digit year, a two-digit month, day, minute and
    second, an hour of one or two digits, a fraction of a second (of any number of digits, after the seconds), then
    ``Z`` or an offset ``+hh:mm``; a field out of its range or text left after the offset is refused in Go's words
    too."""

    def cannot(rest: str, element: str) -> str:
        return f'parsing time "{text}" as "{_RFC3339}": cannot parse "{rest}" as "{element}"'

    def out_of_range(what: str) -> str:
        return f'parsing time "{text}": {what} out of range'

    def two_digits(rest: str, fixed: bool) -> tuple[int, str] | None:
        if not rest[:1].isdigit() or not rest[:1].isascii():
            return None
        if not (len(rest) > 1 and rest[1].isdigit() and rest[1].isascii()):
            return None if fixed else (int(rest[0]), rest[1:])
        return int(rest[:2]), rest[2:]

    rest = text
    if len(rest) < 4 or not ("0" <= rest[0] <= "9"):
        return cannot(rest, "2006")
    digits, rest = rest[:4], rest[4:]
    if not re.fullmatch(r"[0-9]{4}", digits):
        return cannot(rest, "2006")
    year = int(digits)
    fields: dict[str, int] = {}
    for separator, element, fixed, limit, name in (
        ("-", "01", True, 13, "month"),
        ("-", "02", True, 32, ""),
        ("T", "15", False, 24, "hour"),
        (":", "04", True, 60, "minute"),
        (":", "05", True, 60, "second"),
    ):
        if not rest.startswith(separator):
            return cannot(rest, separator)
        rest = rest[1:]
        read = two_digits(rest, fixed)
        if read is None:
            return cannot(rest, element)
        number, rest = read
        if name and (number >= limit or (name == "month" and number == 0)):
            return out_of_range(name)
        fields[element] = number
    if len(rest) >= 2 and rest[0] == "." and "0" <= rest[1] <= "9":
        fraction = re.match(r"\.[0-9]+", rest)  # any number of digits: Go reads the first nine
        assert fraction is not None
        rest = rest[fraction.end() :]
    if rest[:1] == "Z":
        rest = rest[1:]
    elif (
        len(rest) < 6
        or rest[3] != ":"
        or rest[0] not in "+-"
        or not re.fullmatch(r"[0-9]+", rest[1:3])
        or not re.fullmatch(r"[0-9]+", rest[4:6])
    ):
        return cannot(rest, "Z07:00")
    else:
        rest = rest[6:]
    if rest:
        return f'parsing time "{text}": extra text: "{rest}"'
    month, day = fields["01"], fields["02"]
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day < 1 or day > _DAYS_IN[month - 1] + leap:
        return out_of_range("day")
    return None


_JSON_TYPES: tuple[tuple[type | types.UnionType, str], ...] = (
    (bool, "bool"),
    (int | float, "number"),
    (Mapping, "object"),
    (list, "array"),
)
"""How Go's ``encoding/json`` names each JSON type but a string, where it expects one (a bool before a number: a
Python bool is an int)."""


def _time_refused(value: Any) -> str | None:
    """Why the API server cannot decode ``value`` as a ``metav1.Time``, in its words, or None (``null`` is no time,
    and taken): a string Go's ``time.Parse`` refuses (:func:`time_error`), or a value of another JSON type, which the
    time's decoding reads as a string first (``json: cannot unmarshal number into Go value of type string``: a
    ``creationTimestamp: 5``, a ``startTime: 1.5``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return time_error(value)
    named = next((name for held, name in _JSON_TYPES if isinstance(value, held)), "object")
    return f"json: cannot unmarshal {named} into Go value of type string"


_META_FIELDS = {
    "uid": "UID",
    **{
        key: key[0].upper() + key[1:]
        for key in (
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "ownerReferences",
            "finalizers",
            "clusterName",
            "managedFields",
        )
    },
}
"""The Go names of ``metadata``'s fields (``v1.ObjectMeta``'s), as the API server's JSON decoding names them."""
_OBJECT_TIMES = (("creationTimestamp", "CreationTimestamp"), ("deletionTimestamp", "DeletionTimestamp"))
_STATUS_TIMES: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("batch/v1", "Job"): (("startTime", "StartTime"), ("completionTime", "CompletionTime")),
    ("batch/v1beta1", "CronJob"): (("lastScheduleTime", "LastScheduleTime"),),
    ("batch/v1", "CronJob"): (("lastScheduleTime", "LastScheduleTime"), ("lastSuccessfulTime", "LastSuccessfulTime")),
    ("v1", "Pod"): (("startTime", "StartTime"),),
}
"""The times of Kubernetes' own kinds' status okt's users write (a Job's ``startTime`` in a test's fixture): each
``(field, its Go name)``, where the API server decodes it as a ``metav1.Time``."""
_CONDITION_TIMES: dict[tuple[str, str], tuple[str, tuple[tuple[str, str], ...]]] = {
    ("batch/v1", "Job"): (
        "JobCondition",
        (("lastProbeTime", "LastProbeTime"), ("lastTransitionTime", "LastTransitionTime")),
    ),
    ("v1", "Pod"): ("PodCondition", (("lastProbeTime", "LastProbeTime"), ("lastTransitionTime", "LastTransitionTime"))),
    ("apps/v1", "Deployment"): (
        "DeploymentCondition",
        (("lastUpdateTime", "LastUpdateTime"), ("lastTransitionTime", "LastTransitionTime")),
    ),
    **{
        ("apps/v1", kind): (f"{kind}Condition", (("lastTransitionTime", "LastTransitionTime"),))
        for kind in ("ReplicaSet", "StatefulSet", "DaemonSet")
    },
}
"""The times of the conditions of a Kubernetes kind's status: the Go type of a condition, and each ``(field, its Go
name)``."""


def _time_paths(kind: kinds.Kind, obj: Mapping[str, Any], part: str) -> Iterator[tuple[str, str]]:
    """Each time of ``obj``'s ``part`` (``metadata`` or ``status``) the API server decodes as a ``metav1.Time`` and
    refuses (:func:`time_error`): its path as the server's JSON decoding names it, and why. A custom resource's
    metadata is decoded as a ``metav1.ObjectMeta`` too, its status as the JSON it is."""
    if not isinstance(obj.get(part), Mapping):
        return
    held = obj[part]
    version = kind.api_version.rpartition("/")[2]
    if part == "metadata" and kinds.builtin(kind.api_version, kind.kind) is None:
        # A custom resource's metadata is decoded alone, from its JSON written again (its keys sorted), and each field
        # the decoder reads after the refused one names itself too, the last read first (``v1.ObjectMeta.Namespace:
        # Name: CreationTimestamp``): a field holding a single value, up to the first holding a map or a list, which
        # the decoder leaves.
        keys = sorted(held)
        for field, _ in _OBJECT_TIMES:
            if (why := _time_refused(held.get(field))) is not None:
                read = [field]
                for key in keys[keys.index(field) + 1 :]:
                    if isinstance(held[key], Mapping | list):
                        break
                    read.append(key)
                yield "v1.ObjectMeta." + ": ".join(_META_FIELDS.get(key, key) for key in reversed(read)), why
        return
    if kinds.builtin(kind.api_version, kind.kind) is None:
        return
    if part == "metadata":
        for field, name in _OBJECT_TIMES:
            if (why := _time_refused(held.get(field))) is not None:
                yield f"{version}.{kind.kind}.ObjectMeta: v1.ObjectMeta.{name}", why
        return
    at = f"{version}.{kind.kind}.Status: {version}.{kind.kind}Status"
    for field, name in _STATUS_TIMES.get((kind.api_version, kind.kind), ()):
        if (why := _time_refused(held.get(field))) is not None:
            yield f"{at}.{name}", why
    condition, times = _CONDITION_TIMES.get((kind.api_version, kind.kind), ("", ()))
    for item in held.get("conditions") or () if isinstance(held.get("conditions"), list) else ():
        for field, name in times:
            value = item.get(field) if isinstance(item, Mapping) else None
            if (why := _time_refused(value)) is not None:
                yield f"{at}.Conditions: []{version}.{condition}: {version}.{condition}.{name}", why


def undecodable(kind: kinds.Kind, obj: Mapping[str, Any]) -> str | None:
    """Why the API server cannot decode ``obj`` (an object of ``kind``) into its kind's Go object though each value
    has the JSON type its schema gives, in its words, or None: a Secret's ``data`` value that is not base64, a
    quantity of one of Kubernetes' own kinds (a container's ``resources``, a ResourceQuota's ``hard``, a LimitRange's
    ``max``...) that is none, a time of theirs that is none (:func:`time_error`). The first such value, in the order
    the server converts them: the metadata's, then the rest's, the status's last."""
    if kinds.builtin(kind.api_version, kind.kind) is None:  # an apply of a custom resource takes a time as JSON
        return None
    for _, said in _time_paths(kind, obj, "metadata"):
        return said
    if (kind.api_version, kind.kind) == ("v1", "Secret") and isinstance(obj.get("data"), Mapping):
        for value in obj["data"].values():
            if isinstance(value, str) and (why := base64_error(value)) is not None:
                return why
    if kinds.builtin(kind.api_version, kind.kind) is None:
        return None
    found: list[str] = []

    def read(value: Any) -> Any:
        if isinstance(value, str) and not found and (why := quantity_error(value)) is not None:
            found.append(why)
        return value

    quantities.convert_quantities(copy.deepcopy(dict(obj)), read)
    if found:
        return found[0]
    return next((why for _, why in _time_paths(kind, obj, "status")), None)


_POD_SPEC_PATHS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("v1", "Pod"): (("spec", "v1.Pod.Spec"),),
    ("v1", "PodTemplate"): (("template", "v1.PodTemplate.Template"), ("spec", "v1.PodTemplateSpec.Spec")),
    **{
        (api_version, kind): (
            ("spec", f"v1.{kind}.Spec"),
            ("template", f"v1.{kind}Spec.Template"),
            ("spec", "v1.PodTemplateSpec.Spec"),
        )
        for api_version, kind in (
            ("apps/v1", "Deployment"),
            ("apps/v1", "ReplicaSet"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "StatefulSet"),
            ("batch/v1", "Job"),
        )
    },
    **{
        ("batch/" + version, "CronJob"): (
            ("spec", f"{version}.CronJob.Spec"),
            ("jobTemplate", f"{version}.CronJobSpec.JobTemplate"),
            ("spec", f"{version}.JobTemplateSpec.Spec"),
            ("template", "v1.JobSpec.Template"),
            ("spec", "v1.PodTemplateSpec.Spec"),
        )
        for version in ("v1beta1", "v1")
    },
}
"""Where a kind holds a Pod spec, as the API server's JSON decoding names each step (its Go type and field)."""
_LIMIT_RANGE_FIELDS = {
    "max": "Max",
    "min": "Min",
    "default": "Default",
    "defaultRequest": "DefaultRequest",
    "maxLimitRequestRatio": "MaxLimitRequestRatio",
}


def undecodable_path(kind: kinds.Kind, obj: Mapping[str, Any]) -> str | None:
    """The first value of ``obj`` (an object of ``kind``) the API server's JSON decoding (of a create's or an update's
    body) cannot take, with the path it names it by, in its words (``v1.Pod.Spec: v1.PodSpec.Containers:
    []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Limits: unmarshalerDecoder: quantities must match
    ...``), or None: a Secret's ``data`` that is not base64, a quantity that is none in a container's ``resources``
    (of a Pod, a PodTemplate, a workload's template), a ResourceQuota's ``hard`` or a LimitRange's limits.

    The decoder goes on reading the body after the value, and names each field it reads after it too: the path is
    the server's when the value closes each object it is in (as it does in a body of one faulty value written in the
    usual order: ``metadata`` before ``spec``, a container's ``resources`` after its ``name`` and ``image``).
    A time that is none (:func:`time_error`) of the metadata comes first, one of the status last."""
    for path, said in _time_paths(kind, obj, "metadata"):
        return f"{path}: unmarshalerDecoder: {said}"
    if (kind.api_version, kind.kind) == ("v1", "Secret") and isinstance(obj.get("data"), Mapping):
        for value in obj["data"].values():
            if isinstance(value, str) and (why := base64_error(value)) is not None:
                return f"v1.Secret.Data: decode base64: {why}"
    steps: list[str] = []
    if (kind.api_version, kind.kind) in _POD_SPEC_PATHS:
        spec: Any = obj
        for field, step in _POD_SPEC_PATHS[(kind.api_version, kind.kind)]:
            spec = spec.get(field) if isinstance(spec, Mapping) else None
            steps.append(step)
        for field, step in (("initContainers", "v1.PodSpec.InitContainers"), ("containers", "v1.PodSpec.Containers")):
            for container in (spec.get(field) if isinstance(spec, Mapping) else None) or ():
                resources = container.get("resources") if isinstance(container, Mapping) else None
                for name in ("limits", "requests"):
                    at = [*steps, step, "[]v1.Container", "v1.Container.Resources"]
                    held = resources.get(name) if isinstance(resources, Mapping) else None
                    if (why := _quantities_error(held)) is not None:
                        return ": ".join([*at, f"v1.ResourceRequirements.{name.title()}", f"unmarshalerDecoder: {why}"])
    spec = obj.get("spec")
    hard = spec.get("hard") if isinstance(spec, Mapping) else None
    if (kind.api_version, kind.kind) == ("v1", "ResourceQuota") and (why := _quantities_error(hard)) is not None:
        return f"v1.ResourceQuota.Spec: v1.ResourceQuotaSpec.Hard: unmarshalerDecoder: {why}"
    if (kind.api_version, kind.kind) == ("v1", "LimitRange") and isinstance(spec, Mapping):
        for item in spec.get("limits") or ():
            for field, name in _LIMIT_RANGE_FIELDS.items():
                held = item.get(field) if isinstance(item, Mapping) else None
                if (why := _quantities_error(held)) is not None:
                    return (
                        "v1.LimitRange.Spec: v1.LimitRangeSpec.Limits: []v1.LimitRangeItem: "
                        f"v1.LimitRangeItem.{name}: unmarshalerDecoder: {why}"
                    )
    if (kind.api_version, kind.kind) == ("v1", "PersistentVolumeClaim") and isinstance(spec, Mapping):
        resources = spec.get("resources")
        for name in ("limits", "requests"):
            held = resources.get(name) if isinstance(resources, Mapping) else None
            if (why := _quantities_error(held)) is not None:
                return (
                    "v1.PersistentVolumeClaim.Spec: v1.PersistentVolumeClaimSpec.Resources: "
                    f"v1.ResourceRequirements.{name.title()}: unmarshalerDecoder: {why}"
                )
    if (
        kind.kind == "HorizontalPodAutoscaler"
        and kind.api_version in (*_METRIC_SOURCES, "autoscaling/v2beta1")
        and isinstance(spec, Mapping)
        and (found := _metric_error(kind.api_version.rpartition("/")[2], spec.get("metrics"))) is not None
    ):
        return found
    for path, said in _time_paths(kind, obj, "status"):
        return f"{path}: unmarshalerDecoder: {said}"
    return None


_METRIC_SOURCES = {
    version: {
        "resource": ("Resource", "ResourceMetricSource"),
        "pods": ("Pods", "PodsMetricSource"),
        "object": ("Object", "ObjectMetricSource"),
        "external": ("External", "ExternalMetricSource"),
        "containerResource": ("ContainerResource", "ContainerResourceMetricSource"),
    }
    for version in ("autoscaling/v2beta2", "autoscaling/v2")
}
"""The sources of a HorizontalPodAutoscaler's metric whose ``target`` holds quantities: each field of a metric, its Go
name and its Go type."""
_OLDER_METRIC_SOURCES = {
    "resource": ("Resource", "ResourceMetricSource", ("targetAverageValue",)),
    "pods": ("Pods", "PodsMetricSource", ("targetAverageValue",)),
    "object": ("Object", "ObjectMetricSource", ("targetValue", "averageValue")),
    "external": ("External", "ExternalMetricSource", ("targetValue", "targetAverageValue")),
    "containerResource": ("ContainerResource", "ContainerResourceMetricSource", ("targetAverageValue",)),
}
"""The sources of an ``autoscaling/v2beta1`` HorizontalPodAutoscaler's metric, whose quantities are fields of the
source itself (no ``target``): each field of a metric, its Go name, its Go type and its fields that are quantities."""


def _metric_error(version: str, metrics: Any) -> str | None:
    """The path and the error of the first quantity of a HorizontalPodAutoscaler's ``metrics`` that is none (a
    target's ``value`` or ``averageValue``; in ``v2beta1``, a source's ``targetValue``, ``targetAverageValue`` or
    ``averageValue``), as the API server's JSON decoding names it, or None."""
    at = (
        f"{version}.HorizontalPodAutoscaler.Spec: {version}.HorizontalPodAutoscalerSpec.Metrics: []{version}.MetricSpec"
    )
    for metric in metrics if isinstance(metrics, list) else ():
        if not isinstance(metric, Mapping):
            continue
        if version == "v2beta1":
            for field, (name, source, quantity_fields) in _OLDER_METRIC_SOURCES.items():
                held = metric.get(field)
                for key, value in held.items() if isinstance(held, Mapping) else ():
                    if key in quantity_fields and isinstance(value, str) and (why := quantity_error(value)):
                        go_key = key[0].upper() + key[1:]
                        return (
                            f"{at}: {version}.MetricSpec.{name}: {version}.{source}.{go_key}: unmarshalerDecoder: {why}"
                        )
            continue
        for field, (name, source) in _METRIC_SOURCES[f"autoscaling/{version}"].items():
            target = (metric.get(field) or {}).get("target")
            if not isinstance(target, Mapping) or not isinstance(metric.get(field), Mapping):
                continue
            for key, value in target.items():
                if key in ("value", "averageValue") and isinstance(value, str) and (why := quantity_error(value)):
                    return (
                        f"{at}: {version}.MetricSpec.{name}: {version}.{source}.Target: "
                        f"{version}.MetricTarget.{key[0].upper()}{key[1:]}: unmarshalerDecoder: {why}"
                    )
    return None


def _quantities_error(held: Any) -> str | None:
    """Why the first of a map's quantities is none (:func:`quantity_error`), or None."""
    if not isinstance(held, Mapping):
        return None
    return next((why for value in held.values() if isinstance(value, str) and (why := quantity_error(value))), None)


def check_decodable(kind: kinds.Kind, body: Mapping[str, Any]) -> None:
    """Refuse an apply of ``body`` (an object of ``kind``) as Kubernetes 1.20 does where it types the body but cannot
    decode it into its kind's Go object (:func:`undecodable`).

    Raises:
        okt.errors.Invalid: the server's 500, an error of its own rather than a 422 (``failed to convert new object
            to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json:
            illegal base64 data at input byte 3``), which okt reads as the refusal of a value (the answer names no
            field).
    """
    why = undecodable(kind, body)
    if why is None:
        return
    if why.startswith("illegal base64"):
        why = f"error decoding from json: {why}"
    group, _, version = kind.api_version.rpartition("/")
    raise errors.ApiError.from_status(
        500,
        "Internal Server Error",
        "failed to convert new object to proper version: unable to convert unstructured object to "
        f"{group}/{version}, Kind={kind.kind}: {why}",
    )


def check(kind: kinds.Kind, obj: Mapping[str, Any], *, allocated: bool = False) -> None:
    """Refuse ``obj`` (an object of ``kind``, as it would be stored: defaults filled in) as the API server's
    validation would, where :func:`causes` finds it breaks a rule.

    Raises:
        okt.errors.Invalid: naming every refused field, one cause each, in the API server's words (several bracketed,
            as the server lists them).
    """
    found = causes(kind, obj, allocated=allocated)
    if found:
        raise metadata.refusal(kind, obj, found)


def causes(kind: kinds.Kind, obj: Mapping[str, Any], *, allocated: bool = False) -> list[errors.StatusCause]:
    """What the API server refuses of ``obj`` by the rules of :data:`RULES`, one cause each, in its order: those
    checked before it allocates anything, or, if ``allocated``, those checked once a Service's node ports are
    (:attr:`Rule.allocated`)."""
    found: list[errors.StatusCause] = []
    held: dict[str, set[str]] = {}  # the values a duplicate rule has seen, by the list holding them
    for entry in RULES.get((kind.api_version, kind.kind), ()):
        if isinstance(entry, TemplateMetadata):
            if not allocated and isinstance(_at(obj, *entry.path), Mapping):
                found += metadata.labels_causes(".".join(entry.path), _at(obj, *entry.path, "metadata"))
        elif isinstance(entry, Each):
            for named, item in _fields(obj, (*entry.path, EACH)):
                for rule in entry.rules:
                    if rule.allocated == allocated:
                        found += _refused(obj, rule, _fields(item, rule.path, named), held)
        elif entry.allocated == allocated:
            found += _refused(obj, entry, _fields(obj, entry.path), held)
    return found


def _refused(
    obj: Mapping[str, Any], rule: Rule, fields: Iterator[tuple[str, Any]], held: dict[str, set[str]]
) -> list[errors.StatusCause]:
    """What ``rule`` refuses of each of ``fields`` (in ``obj``); ``held`` keeps the values its items hold, for a
    duplicate rule."""
    found = []
    for field, value in fields:
        if rule.broken(obj, value):
            said = rule.message if isinstance(rule.message, str) else rule.message(value)
            named = f"{field}.{rule.named}" if rule.named else field
            found += [
                errors.StatusCause(rule.reason, message, named)
                for message in ([said] if isinstance(said, str) else said)
            ]
        elif rule.duplicate is not None and rule.duplicate(value):
            # Told apart from the items of its own list: those of the list the last index of its field names.
            others = held.setdefault(_ITEM.sub("", field, count=1), set())
            if str(value) in others:
                found.append(
                    errors.StatusCause("FieldValueDuplicate", f"Duplicate value: {gotext.value(value)}", field)
                )
            others.add(str(value))
    return found


_ITEM = re.compile(r"\[\d+\](?=[^\[]*$)")
"""The index of the last list a field's name steps through (``[1]`` in ``containers[0].ports[1].name``)."""


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
