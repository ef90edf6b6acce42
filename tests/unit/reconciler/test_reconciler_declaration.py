"""What a Reconciler class declares is checked when the class is defined, not at the first reconcile."""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Mapping
from typing import Any

import pydantic
import pytest

import okt
from okt.kube import kinds
from okt.reconciler import declaration, timers


def test_a_misspelt_status_target_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match=r"Typo\.status = 'anotations': expected 'status', 'annotations', 'off'"):
        type("Typo", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", "status": "anotations"})


@pytest.mark.parametrize(
    ("attribute", "value", "accepted"),
    [
        ("apply_strategy", "server-side", "'apply' or 'merge'"),
        ("persistence", "annotation", "'status' or 'annotations'"),
    ],
)
def test_a_misspelt_write_choice_is_refused_when_the_class_is_defined(
    attribute: str, value: str, accepted: str
) -> None:
    # Accepted, it failed every reconcile with a traceback, and nothing was reported on the object.
    with pytest.raises(TypeError, match=rf"^Typo\.{attribute} = '{value}': expected {accepted}$"):
        type("Typo", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Widget", attribute: value})


@pytest.mark.parametrize("degraded_after", ["3", 2.5, None, True, 0, -1])
def test_a_degraded_after_that_is_not_a_count_is_refused_when_the_class_is_defined(degraded_after: object) -> None:
    # Accepted, the ErrorManager raised on it before Ready=False was written: a failing object kept saying Ready. A
    # count below 1 silently meant 1: Degraded at the first failure, a conflict included.
    with pytest.raises(TypeError, match=r"^Flaky\.degraded_after = .*: expected a positive int \(failed reconciles\)$"):
        type("Flaky", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", "degraded_after": degraded_after})


@pytest.mark.parametrize(
    ("attribute", "value", "expected"),
    [
        ("prune", "false", "True or False"),
        ("related_objects", 0, "True or False"),
        ("record_events", None, "True or False"),
        ("namespaced", "yes", "True or False"),
        ("max_concurrent", "4", "a positive int or None"),
        ("max_concurrent", 0, "a positive int or None"),
        ("child_change_delay", "0.5", "a number of seconds >= 0"),
        ("child_change_delay", -1, "a number of seconds >= 0"),
        ("child_change_delay", True, "a number of seconds >= 0"),
        ("field_manager", None, "a name"),
        ("name", 7, "a name or None"),
        ("cluster_operator", ("toys",), "a name or None"),
    ],
)
def test_a_setting_of_the_wrong_type_is_refused_when_the_class_is_defined(
    attribute: str, value: object, expected: str
) -> None:
    # Each was read only at run time: "false" pruned (a str is true), "4" failed okt run's start with a traceback,
    # a negative delay failed the queue's first child event.
    with pytest.raises(TypeError, match=rf"^Flaky\.{attribute} = .*: expected {re.escape(expected)}$"):
        type("Flaky", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", attribute: value})


@pytest.mark.parametrize(
    ("attribute", "value"),
    [("params", None), ("params", "replicas=3"), ("versions", ["1.4.0"]), ("indexes", ["by-owner"])],
)
def test_a_mapping_attribute_that_is_not_a_mapping_is_refused_when_the_class_is_defined(
    attribute: str, value: object
) -> None:
    # Accepted, every reconcile raised a ValueError or TypeError building its context: nothing reported on the object.
    with pytest.raises(TypeError, match=rf"^Loose\.{attribute} = .*: expected a mapping \(a dict\)$"):
        type("Loose", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", attribute: value})


@pytest.mark.parametrize("engine", [okt.FreeStyle, okt.Stepper, "freestyle"])
def test_an_engine_that_is_not_an_engine_instance_is_refused_when_the_class_is_defined(engine: object) -> None:
    with pytest.raises(TypeError, match=r"^Loose\.engine = .*: expected okt\.Stepper\(\) or okt\.FreeStyle\(\)$"):
        type("Loose", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", "engine": engine})


class _Config(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


@pytest.mark.parametrize(
    ("owns", "message"),
    [
        (_Config, r"^Owner\.owns = _Config: expected a tuple of resource classes: \(_Config,\), with its comma$"),
        ((_Config, "Deployment"), r"^Owner\.owns = \(.*'Deployment'\): expected a tuple of resource classes$"),
        ((okt.Reconciler,), r"^Owner\.owns = \(.*Reconciler'>,\): expected a tuple of resource classes$"),
    ],
)
def test_owns_that_is_not_a_sequence_of_resource_classes_is_refused_when_the_class_is_defined(
    owns: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        type("Owner", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Owner", "owns": owns})


@pytest.mark.parametrize(
    "watches",
    ["configmaps", ("configmaps",), (okt.watch("configmaps", map=lambda obj, ctx: []), kinds.CONFIG_MAP)],
    ids=["a name", "a tuple of names", "a kind beside a watch"],
)
def test_watches_that_are_not_a_sequence_of_okt_watch_are_refused_when_the_class_is_defined(watches: object) -> None:
    with pytest.raises(TypeError, match=r"^Watcher\.watches = .*: expected a tuple of okt\.watch\(kind, map=\.\.\.\)$"):
        type("Watcher", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Watcher", "watches": watches})


def test_a_lone_watch_without_its_comma_is_refused_when_the_class_is_defined() -> None:
    # watches = (okt.watch(...)) is one Watch, not a tuple: accepted, every reconcile (and the start of okt run)
    # failed on "'Watch' object is not iterable".
    watched = okt.watch("configmaps", map=lambda obj, ctx: [])
    with pytest.raises(
        TypeError, match=r"^Watcher\.watches = Watch\(kind='configmaps'.*\(okt\.watch\(\.\.\.\),\), with its"
    ):
        type("Watcher", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Watcher", "watches": watched})


@pytest.mark.parametrize("legacy", ["example.com/old-cleanup", ("example.com/old-cleanup", 3)])
def test_legacy_finalizers_that_are_not_a_sequence_of_names_are_refused_when_the_class_is_defined(
    legacy: object,
) -> None:
    # A str would be read letter by letter: an object carrying the old finalizer would never be released.
    with pytest.raises(TypeError, match=r"^Renamed\.legacy_finalizers = .*: expected a tuple of finalizer names"):
        type("Renamed", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "R", "legacy_finalizers": legacy})


@pytest.mark.parametrize(
    "legacy",
    ["old.example.com", ("old.example.com", 3), ("Old Prefix",), ("new.example.com",), None],
    ids=["a str", "not a name", "no DNS subdomain", "the current prefix", "None"],
)
def test_legacy_prefixes_that_are_not_a_sequence_of_earlier_prefixes_are_refused_when_the_class_is_defined(
    legacy: object,
) -> None:
    # A str would be read letter by letter; the current prefix listed again would have okt remove what it writes.
    attributes = {"api_version": "example.com/v1", "kind": "R", "prefix": "new.example.com", "legacy_prefixes": legacy}
    message = (
        r"^Moved\.legacy_prefixes = .*: expected a tuple of earlier prefixes \(DNS subdomains other than prefix "
        r"'new\.example\.com'\), e\.g\. \('old\.example\.com',\)$"
    )
    with pytest.raises(TypeError, match=message):
        type("Moved", (okt.Reconciler,), attributes)


def test_legacy_prefixes_reach_the_settings_of_a_reconcile() -> None:
    moved = type(
        "Moved",
        (okt.Reconciler,),
        {"api_version": "example.com/v1", "kind": "R", "prefix": "b.example.com", "legacy_prefixes": ["a.example.com"]},
    )

    names = moved().settings().names

    assert names.owner_labels == ("b.example.com/owner-uid", "a.example.com/owner-uid")


@pytest.mark.parametrize(
    "legacy",
    ["old-operator", ("old-operator", 3), ("",), ("new-operator",), None],
    ids=["a str", "not a name", "an empty name", "the current manager", "None"],
)
def test_legacy_field_managers_that_are_not_a_sequence_of_earlier_managers_are_refused_when_the_class_is_defined(
    legacy: object,
) -> None:
    # A str would be read letter by letter; the current manager listed would take over its own entry.
    attributes = {
        "api_version": "example.com/v1",
        "kind": "R",
        "field_manager": "new-operator",
        "legacy_field_managers": legacy,
    }
    message = (
        r"^Renamed\.legacy_field_managers = .*: expected a tuple of the field managers an earlier version wrote as "
        r"\(other than field_manager 'new-operator'\), e\.g\. \('okt',\)$"
    )
    with pytest.raises(TypeError, match=message):
        type("Renamed", (okt.Reconciler,), attributes)


def test_legacy_field_managers_reach_the_write_options_of_a_reconcile() -> None:
    renamed = type(
        "Renamed",
        (okt.Reconciler,),
        {
            "api_version": "example.com/v1",
            "kind": "R",
            "field_manager": "new-operator",
            "legacy_field_managers": ["okt", "old-operator"],
        },
    )

    writes = renamed().settings().writes

    assert (writes.field_manager, writes.legacy_field_managers) == ("new-operator", {"okt", "old-operator"})


class SettingsMap(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = "{apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ name }}'}}"


@pytest.mark.parametrize(
    "legacy",
    [("v1", "ConfigMap"), SettingsMap, (SettingsMap,), (("v1", "ConfigMap", "configmaps"),), (("", "Secret"),), None],
    ids=["a lone pair", "a class", "a tuple of classes", "a triple", "no apiVersion", "None"],
)
def test_legacy_owns_that_are_not_a_sequence_of_kinds_are_refused_when_the_class_is_defined(legacy: object) -> None:
    # A lone pair would be read letter by letter, a resource class kept for it is what legacy_owns spares.
    message = (
        r"^Moved\.legacy_owns = .*: expected a tuple of \(api_version, kind\) pairs, e\.g\. \(\('v1', 'ConfigMap'\),\)$"
    )
    with pytest.raises(TypeError, match=message):
        type("Moved", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "R", "legacy_owns": legacy})


@pytest.mark.parametrize("legacy", [("v1", "ConfigMap"), kinds.Kind("v1", "ConfigMap", "configmaps")])
def test_a_legacy_kind_still_in_owns_is_refused_when_the_class_is_defined(legacy: object) -> None:
    attributes = {"api_version": "example.com/v1", "kind": "R", "owns": (SettingsMap,), "legacy_owns": (legacy,)}
    message = r"^Moved\.legacy_owns: ConfigMap \(v1\) is in owns too \(SettingsMap\): .*; keep it in one of the two$"
    with pytest.raises(TypeError, match=message):
        type("Moved", (okt.Reconciler,), attributes)


def test_legacy_owns_reach_the_settings_of_a_reconcile_as_pairs() -> None:
    legacy = (("v1", "ConfigMap"), kinds.Kind("example.com/v1", "Gadget", "gadgets"))
    moved = type("Moved", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "R", "legacy_owns": legacy})

    assert moved().settings().legacy_owns == (("v1", "ConfigMap"), ("example.com/v1", "Gadget"))


@pytest.mark.parametrize("finalizer", [True, ("example.com/cleanup",), 1])
def test_a_finalizer_that_is_not_a_name_is_refused_when_the_class_is_defined(finalizer: object) -> None:
    # Accepted, every reconcile tried to add it to the object's metadata.finalizers, a list of names.
    with pytest.raises(TypeError, match=r"^Cleaner\.finalizer = .*: expected a finalizer name or None"):
        type("Cleaner", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "C", "finalizer": finalizer})


@pytest.mark.parametrize("finalizer", ["", "example.com/clean up", "Example.com/cleanup", "a/b/c", "cleanup!"])
def test_a_finalizer_name_the_api_server_refuses_is_refused_when_the_class_is_defined(finalizer: str) -> None:
    # Accepted, every reconcile's finalizer patch was answered 422 Invalid, read as a lost race: "the object changed
    # while okt updated its finalizers; retrying", every few seconds, for ever, and no child was ever written.
    with pytest.raises(TypeError, match=r"^Cleaner\.finalizer = .*: expected a finalizer name or None"):
        type("Cleaner", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "C", "finalizer": finalizer})


@pytest.mark.parametrize("finalizer", ["orphan", "foregroundDeletion"])
def test_the_garbage_collectors_own_finalizer_is_refused_when_the_class_is_defined(finalizer: str) -> None:
    # Accepted, okt put it on every object: on deletion the garbage collector acted on it (orphaned or deleted the
    # children) and removed it, and the object could go before its cleanup ran.
    with pytest.raises(TypeError, match=r"^Cleaner\.finalizer = .*: the garbage collector's own finalizer"):
        type("Cleaner", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "C", "finalizer": finalizer})


@pytest.mark.parametrize("finalizer", ["orphan", "foregroundDeletion"])
def test_the_garbage_collectors_own_finalizer_is_refused_as_a_legacy_finalizer_when_the_class_is_defined(
    finalizer: str,
) -> None:
    # Accepted, okt removed it with its own from every object deleted with propagationPolicy Orphan or Foreground,
    # before the garbage collector acted on it: the children meant to be orphaned were deleted with their owner, and
    # an owner meant to wait for its children went first. The garbage collector removes it itself.
    legacy = ("example.com/old-cleanup", finalizer)
    with pytest.raises(TypeError, match=r"^Renamed\.legacy_finalizers = .*: .* the garbage collector's own finalizer"):
        type("Renamed", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "R", "legacy_finalizers": legacy})


class _Spec(pydantic.BaseModel):
    replicas: int = 1


@pytest.mark.parametrize("attribute", ["spec_model", "status_model"])
@pytest.mark.parametrize("model", [{"replicas": int}, dict, _Spec.model_fields])
def test_a_model_that_is_not_a_pydantic_model_class_is_refused_when_the_class_is_defined(
    attribute: str, model: object
) -> None:
    # Accepted, every reconcile failed on it; a bad status_model failed the ErrorManager's write too: no condition.
    with pytest.raises(TypeError, match=rf"^Modelled\.{attribute} = .*: expected a pydantic model class or None$"):
        type("Modelled", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "M", attribute: model})


@pytest.mark.parametrize("prefix", [None, "", "Example.com", "my prefix", "okt.io/"])
def test_a_prefix_that_cannot_start_a_label_key_is_refused_when_the_class_is_defined(prefix: object) -> None:
    # Accepted, every reconcile with a child failed on okt's own labels (the prune's selector, the create).
    with pytest.raises(TypeError, match=r"^Prefixed\.prefix = .*: expected a DNS subdomain, e\.g\. 'okt\.io'$"):
        type("Prefixed", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "P", "prefix": prefix})


def test_a_built_in_primary_keeps_its_bookkeeping_in_annotations() -> None:
    class Deployments(okt.Reconciler):
        api_version = "apps/v1"
        kind = "Deployment"

    class Widgets(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Widget"

    assert Deployments.status_target() is okt.StatusTarget.OFF
    assert Deployments.bookkeeping_persistence() is okt.Persistence.ANNOTATIONS
    assert Widgets.status_target() is okt.StatusTarget.STATUS
    assert Widgets.bookkeeping_persistence() is okt.Persistence.STATUS


class Selective(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    finalizer = "example.com/cleanup"
    annotation_selector = {"example.com/managed": None, "example.com/tier": "gold"}

    def when(self, obj: Mapping[str, Any]) -> bool:
        return not str(obj["metadata"]["name"]).startswith("skip-")


def widget(name: str, annotations: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations, **meta}}


def test_the_client_side_filter_is_the_annotations_then_when() -> None:
    gold = {"example.com/managed": "", "example.com/tier": "gold"}
    selects = Selective().selects

    assert selects(widget("a", gold))
    assert not selects(widget("a", {"example.com/managed": "yes"}))
    assert not selects(widget("a", {**gold, "example.com/tier": "silver"}))
    assert not selects(widget("skip-a", gold))


def test_an_object_being_deleted_with_okts_finalizer_is_always_watched_so_its_cleanup_runs() -> None:
    leaving = widget("skip-a", {}, deletionTimestamp="2026-11-25T07:00:00Z", finalizers=["example.com/cleanup"])

    assert Selective().selects(leaving)
    assert not Selective().selects({**leaving, "metadata": {**leaving["metadata"], "finalizers": ["other"]}})


def test_a_when_that_raises_leaves_the_object_out_instead_of_breaking_the_watch() -> None:
    class Buggy(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Widget"

        def when(self, obj: Mapping[str, Any]) -> bool:
            return bool(obj["spec"]["enabled"])  # KeyError on an object without spec

    assert Buggy().selects({"metadata": {"name": "a"}}) is False
    assert Buggy().selects({"metadata": {"name": "b"}, "spec": {"enabled": True}}) is True


@pytest.mark.parametrize(
    "selector",
    [
        {"example.com/managed"},
        "example.com/managed",
        ["example.com/managed"],
        {"example.com/managed": True},
        {"example.com/managed": 1},
        {"managed by": None},
    ],
    ids=["a set", "a str", "a list", "a bool value", "an int value", "no annotation key"],
)
def test_an_annotation_selector_that_is_not_annotation_keys_to_values_is_refused_when_the_class_is_defined(
    selector: object,
) -> None:
    # Accepted, a container without .items() raised in the informer's filter on every list (the primaries never
    # synced) and in every admission review (answered 500); a value that is no str, or a key no annotation can have,
    # silently matched no object: nothing was ever reconciled.
    with pytest.raises(TypeError, match=r"^Picky\.annotation_selector = .*: expected a mapping of annotation keys to"):
        type(
            "Picky", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "P", "annotation_selector": selector}
        )


@pytest.mark.parametrize("lifecycle", ["Phase", object()], ids=repr)
def test_a_lifecycle_that_is_not_an_okt_lifecycle_is_refused_when_the_class_is_defined(lifecycle: object) -> None:
    with pytest.raises(TypeError, match=r"^Staged\.lifecycle = .*: expected an okt\.Lifecycle$"):
        type("Staged", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", "lifecycle": lifecycle})


def _declare(members: Mapping[str, Any]) -> type[okt.Reconciler]:
    return type("Slip", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Widget", **members})


def _hook(self: okt.Reconciler, ctx: okt.Context) -> None:
    return None


@pytest.mark.parametrize(
    ("members", "meant", "verb"),
    [
        ({"on_delete": _hook}, "on_deleted", "calls"),
        ({"enter_in_sate": _hook}, "enter_in_state", "calls"),
        ({"resource": _hook}, "resources", "calls"),
        ({"clean_up": _hook}, "cleanup", "calls"),
        ({"wen": staticmethod(lambda obj: False)}, "when", "calls"),
        ({"finaliser": "example.com/cleanup"}, "finalizer", "reads"),
        ({"own": ()}, "owns", "reads"),
        ({"own": okt.ServiceResource}, "owns", "reads"),
        ({"status_models": None}, "status_model", "reads"),
        ({"apply_stratgy": "merge"}, "apply_strategy", "reads"),
        ({"Kind": "Widget"}, "kind", "reads"),
    ],
)
def test_a_misspelt_hook_or_setting_is_said_with_the_name_meant(
    members: Mapping[str, Any], meant: str, verb: str
) -> None:
    # Accepted without a word, it was an attribute of the author's own: okt never called the hook nor read the
    # setting, and the operator ran without the cleanup, the children or the strategy written.
    (name,) = members
    with pytest.warns(
        declaration.DeclarationWarning, match=rf"^Slip\.{name}: did you mean {meant}\? okt never {verb} {name} \("
    ):
        _declare(members)


def test_the_authors_own_names_are_not_taken_for_slips() -> None:
    class Status(pydantic.BaseModel):
        ready: bool = False

    @okt.every(seconds=30)
    def checks(self: okt.Reconciler, ctx: okt.Context) -> None:
        return None

    _declare(
        {
            "_on_delete": _hook,  # a leading underscore: the author's, whatever it looks like
            "sources": _hook,  # two edits from resources: a word of its own
            "cleanups": [],  # a value, not a method: compared with the settings, none of which it is near
            "Status": Status,  # a class in CamelCase: not the setting status
            "checks": checks,  # a timer, called by its own name
            "read_config": _hook,
            "namespace": "team-a",  # near namespaced, but a str is no value of it: a value of the author's own
            "version": "1.4.0",  # near versions (a mapping)
            "stats": {"reconciles": 0},  # near status (a target's name)
        }
    )


def _timer(self: okt.Reconciler, ctx: okt.Context) -> None:
    return None


@pytest.mark.parametrize(
    ("decorator", "wrapper", "said"),
    [
        (okt.every(seconds=30), staticmethod, "@okt.every under @staticmethod"),
        (okt.every(seconds=30), classmethod, "@okt.every under @classmethod"),
        (okt.every(seconds=30), property, "@okt.every under @property"),
        (okt.daemon, staticmethod, "@okt.daemon under @staticmethod"),
        (okt.daemon(backoff=5), functools.cached_property, "@okt.daemon under @cached_property"),
    ],
)
def test_a_timer_or_daemon_a_wrapper_hides_is_refused(decorator: Any, wrapper: Any, said: str) -> None:
    # The mark is on the function the wrapper holds, which okt never looks at: the timer was never called.
    function = types.FunctionType(_timer.__code__, globals(), "tick")
    with pytest.raises(
        TypeError, match=rf"^Slip\.tick: {said} is never seen, so never called: .*def tick\(self, ctx\)"
    ):
        _declare({"tick": wrapper(decorator(function))})


@pytest.mark.parametrize(
    ("decorate", "said"),
    [
        (okt.on_startup, "@okt.on_startup"),
        (okt.on_cleanup, "@okt.on_cleanup"),
        (okt.probe("depth"), "@okt.probe"),
    ],
)
def test_an_operator_wide_hook_declared_on_a_method_is_refused(decorate: Any, said: str) -> None:
    # okt finds those among the module's functions: on a method, it was never called.
    def warm() -> None:
        return None

    with pytest.raises(TypeError, match=rf"^Slip\.warm: {said} on a method is never called: .*outside the class$"):
        _declare({"warm": decorate(warm)})


def test_a_timer_above_staticmethod_is_seen_and_accepted() -> None:
    assert "tick" in timers.declared(_declare({"tick": okt.every(seconds=30)(staticmethod(lambda ctx: None))}))
