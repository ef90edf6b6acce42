"""Version 2 of an operator over the objects version 1 made, on a real kube-apiserver: what the docs promise of an
upgrade holds. A field dropped from a child's template leaves and one added arrives, with one write of that child only;
a spec field added with a default reconciles objects stored without it at no write; a child renamed is created under
its new name and the old one pruned; a finalizer added in version 2 is added once, one dropped but listed in
``legacy_finalizers`` still lets the objects carrying it go; conditions of version 1 are kept unless retired; and a
restart of version 2 over converged objects writes nothing. (A kind no longer owned: ``test_legacy_owns.py``; a prefix
changed: ``test_legacy_prefixes.py``; a field manager changed: ``test_legacy_field_managers.py``.)"""

from __future__ import annotations

import collections
import json
from typing import Any

import pydantic
import pytest

import okt
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, condition, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

FINALIZER = "upgrade.okt.io/cleanup"


class CacheSpec(pydantic.BaseModel):
    size: int = 1


class CacheSpecV2(CacheSpec):
    """Version 2 adds a field; objects version 1 stored lack it."""

    flavour: str = "plain"


class Settings(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
data:
  size: "{{ cr.spec.size }}"
  mode: legacy
  flavour: plain
"""


class SettingsV2(Settings):
    """``mode`` dropped, ``port`` added, ``flavour`` now read from the spec (its default is what version 1 wrote)."""

    template = Settings.template.replace(
        "  mode: legacy\n  flavour: plain\n", '  port: "11211"\n  flavour: "{{ cr.spec.flavour }}"\n'
    )


class SettingsSameV2(Settings):
    """Version 2's template giving what version 1 gave, from the new field's default."""

    template = Settings.template.replace("flavour: plain", 'flavour: "{{ cr.spec.flavour }}"')


class SettingsRenamed(Settings):
    """Version 2 names the child ``<name>-cache``."""

    template = Settings.template.replace("name: {{ name }}\n", "name: {{ name }}-cache\n")


class Credentials(okt.SecretResource):
    """A child both versions make alike."""

    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
stringData:
  user: cache
"""


class CacheV1(okt.Reconciler):
    api_version = "upgrade.okt.io/v1"
    kind = "Cache"
    plural = "caches"
    spec_model = CacheSpec
    owns = (Settings, Credentials)

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.SuccessManager:
            ctx.conditions.set("Warm", True, "CacheFilled", "the cache is filled", ctx.cr.generation)
        super().enter_in_state(state, ctx)


class CacheV2(CacheV1):
    """What most upgrades are: the same operator, its new field read from a default."""

    spec_model = CacheSpecV2
    owns = (SettingsSameV2, Credentials)


class CacheV2Template(CacheV1):
    spec_model = CacheSpecV2
    owns = (SettingsV2, Credentials)


class CacheV2Renamed(CacheV1):
    owns = (SettingsRenamed, Credentials)


class CacheV2Finalizer(CacheV1):
    finalizer = FINALIZER
    cleanups: list[str] = []

    def cleanup(self, ctx: okt.Context) -> None:
        self.cleanups.append(ctx.cr.name)


class CacheV3NoFinalizer(CacheV1):
    """The finalizer of version 2 dropped, its name kept so the objects carrying it can go."""

    legacy_finalizers = (FINALIZER,)


class CacheV2Retired(CacheV1):
    """Version 2 no longer states ``Warm`` and retires it."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.SuccessManager:
            ctx.conditions.remove("Warm")
        okt.Reconciler.enter_in_state(self, state, ctx)


class CacheV2Silent(CacheV1):
    """Version 2 no longer states ``Warm`` and says nothing of it."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        okt.Reconciler.enter_in_state(self, state, ctx)


@pytest.fixture(scope="module")
def cache_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(CacheV1))
    return kind


def make_cache(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> dict[str, Any]:
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name, "namespace": namespace}}
    return kube.create({**body, "spec": {"size": 1}}, kind)


def converged_v1(kube: kube_client.Client, kind: kinds.Kind, namespace: str, *names: str) -> None:
    for name in names:
        make_cache(kube, kind, namespace, name)
        assert okt.reconcile(CacheV1(), kube, None, namespace, name).outcome == okt.Outcome.done()


def config_map(kube: kube_client.Client, namespace: str, name: str) -> dict[str, Any] | None:
    return kube.get_or_none(kinds.CONFIG_MAP, name, namespace)


def test_a_field_dropped_from_a_template_leaves_one_added_arrives_and_an_unchanged_child_is_not_written(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    converged_v1(kube, cache_kind, namespace, "t")
    before = kube.stats.snapshot()

    run = okt.reconcile(CacheV2Template(), kube, None, namespace, "t")

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert shared.write_requests(kube, before) == {("apply", "configmaps"): 1}
    data = (config_map(kube, namespace, "t") or {})["data"]
    assert data == {"size": "1", "port": "11211", "flavour": "plain"}  # mode left, port arrived

    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV2Template(), kube, None, namespace, "t").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


def test_a_spec_field_added_with_a_default_reconciles_objects_stored_without_it_at_no_write(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    converged_v1(kube, cache_kind, namespace, "d")
    assert "flavour" not in kube.get(cache_kind, "d", namespace)["spec"]
    before = kube.stats.snapshot()

    run = okt.reconcile(CacheV2(), kube, None, namespace, "d")

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert shared.write_requests(kube, before) == {}
    assert (config_map(kube, namespace, "d") or {})["data"]["flavour"] == "plain"


def test_a_renamed_child_is_created_under_its_new_name_and_the_old_one_pruned(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    converged_v1(kube, cache_kind, namespace, "r")
    before = kube.stats.snapshot()

    run = okt.reconcile(CacheV2Renamed(), kube, None, namespace, "r")

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert config_map(kube, namespace, "r") is None
    assert config_map(kube, namespace, "r-cache") is not None
    # The new child's apply, the old one's delete, and status.relatedObjects naming the new one.
    assert shared.write_requests(kube, before) == {
        ("apply", "configmaps"): 1,
        ("delete", "configmaps"): 1,
        ("apply", "caches/status"): 1,
    }
    related = kube.get(cache_kind, "r", namespace)["status"]["relatedObjects"]
    assert [o["name"] for o in related if o["resource"] == "configmaps"] == ["r-cache"]
    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV2Renamed(), kube, None, namespace, "r").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


def test_a_finalizer_added_in_a_new_version_is_added_once_and_one_dropped_but_listed_as_legacy_still_lets_objects_go(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    converged_v1(kube, cache_kind, namespace, "f")
    before = kube.stats.snapshot()

    run = okt.reconcile(CacheV2Finalizer(), kube, None, namespace, "f")

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert kube.get(cache_kind, "f", namespace)["metadata"]["finalizers"] == [FINALIZER]
    assert shared.write_requests(kube, before) == {("patch", "caches"): 1}  # the finalizer only
    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV2Finalizer(), kube, None, namespace, "f").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}

    # Version 3 drops the finalizer and keeps its name in legacy_finalizers: a live object keeps it (no write)...
    assert okt.reconcile(CacheV3NoFinalizer(), kube, None, namespace, "f").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}
    kube.delete(cache_kind, "f", namespace)
    assert kube.get(cache_kind, "f", namespace)["metadata"]["finalizers"] == [FINALIZER]

    # ...and once it is deleted, version 3 releases it.
    run = okt.reconcile(CacheV3NoFinalizer(), kube, None, namespace, "f")

    assert run.outcome == okt.Outcome.done(), run.path_str
    assert okt.Operation.FINALIZER_REMOVED in run.results.counts()
    wait_for(lambda: kube.get_or_none(cache_kind, "f", namespace) is None, timeout=30)


def test_a_condition_of_the_old_version_stays_unless_retired_and_then_leaves_once(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    converged_v1(kube, cache_kind, namespace, "c")
    stored = kube.get(cache_kind, "c", namespace)
    warm = condition(stored, "Warm")
    ready = condition(stored, "Ready")
    assert warm is not None and ready is not None
    assert stored["status"]["observedGeneration"] == stored["metadata"]["generation"]
    before = kube.stats.snapshot()

    assert okt.reconcile(CacheV2Silent(), kube, None, namespace, "c").outcome == okt.Outcome.done()

    assert shared.write_requests(kube, before) == {}
    assert condition(kube.get(cache_kind, "c", namespace), "Warm") == warm  # kept, saying what it said

    assert okt.reconcile(CacheV2Retired(), kube, None, namespace, "c").outcome == okt.Outcome.done()

    assert shared.write_requests(kube, before) == {("apply", "caches/status"): 1}

    retired = kube.get(cache_kind, "c", namespace)
    assert condition(retired, "Warm") is None
    assert condition(retired, "Ready") == ready  # the others as they were, their transition times kept
    assert retired["status"]["observedGeneration"] == stored["metadata"]["generation"]
    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV2Retired(), kube, None, namespace, "c").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


class CacheV1InAnnotations(CacheV1):
    """Version 1 kept its conditions in annotations (its CRD had no status subresource yet)."""

    status = "annotations"


def test_conditions_an_old_version_kept_in_annotations_move_to_the_status_with_their_times_and_leave_them(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    make_cache(kube, cache_kind, namespace, "m")
    assert okt.reconcile(CacheV1InAnnotations(), kube, None, namespace, "m").outcome == okt.Outcome.done()
    annotations = kube.get(cache_kind, "m", namespace)["metadata"]["annotations"]
    kept = json.loads(annotations["okt.io/conditions"])
    for item in kept:  # as if version 1 had reconciled it long ago
        item["lastTransitionTime"] = "2026-01-02T03:04:05Z"
    kube.patch(cache_kind, "m", {"metadata": {"annotations": {"okt.io/conditions": json.dumps(kept)}}}, namespace)

    before = kube.stats.snapshot()

    run = okt.reconcile(CacheV1(), kube, None, namespace, "m")  # version 2 writes the status subresource

    assert run.outcome == okt.Outcome.done(), run.path_str
    # The status apply, and the metadata patch removing the annotations.
    assert shared.write_requests(kube, before) == {("apply", "caches/status"): 1, ("patch", "caches"): 1}
    moved = kube.get(cache_kind, "m", namespace)
    assert moved["status"]["conditions"] == kept  # the same conditions, their transition times kept
    assert moved["status"]["observedGeneration"] == moved["metadata"]["generation"]
    left = moved["metadata"].get("annotations") or {}
    assert not [name for name in left if name.startswith("okt.io/")]  # no stale copy saying what version 1 said
    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV1(), kube, None, namespace, "m").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


def test_status_fields_an_old_version_kept_in_annotations_move_to_the_status_with_its_conditions(
    kube: kube_client.Client, namespace: str, cache_kind: kinds.Kind
) -> None:
    """A field version 1 kept in ``<prefix>/status`` (a timer's ``lastBackup``, set at its interval) is carried into
    the status subresource by the write that moves the conditions and removes the annotation: it was removed with
    the annotation, and missing until the timer's next call."""
    make_cache(kube, cache_kind, namespace, "f")
    assert okt.reconcile(CacheV1InAnnotations(), kube, None, namespace, "f").outcome == okt.Outcome.done()
    backup = {"lastBackup": "2026-01-02T03:04:05Z"}  # as version 1's timer wrote it
    kube.patch(cache_kind, "f", {"metadata": {"annotations": {"okt.io/status": json.dumps(backup)}}}, namespace)

    run = okt.reconcile(CacheV1(), kube, None, namespace, "f")  # version 2 writes the status subresource

    assert run.outcome == okt.Outcome.done(), run.path_str
    moved = kube.get(cache_kind, "f", namespace)
    assert moved["status"].get("lastBackup") == backup["lastBackup"]
    assert condition(moved, "Ready")["status"] == "True"
    assert not [name for name in moved["metadata"].get("annotations") or {} if name.startswith("okt.io/")]
    before = kube.stats.snapshot()
    assert okt.reconcile(CacheV1(), kube, None, namespace, "f").outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {}


class StoreV1(CacheV1):
    kind = "Store"
    plural = "stores"


class StoreV2(CacheV2):
    kind = "Store"
    plural = "stores"


def test_version_two_started_over_objects_version_one_converged_writes_nothing_its_crd_upgraded_too(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str, apply_crd: Any
) -> None:
    store_kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(StoreV1))
    names = ("a", "b", "c")
    for name in names:
        make_cache(kube, store_kind, namespace, name)

    def ready(name: str) -> bool:
        return (condition(kube.get(store_kind, name, namespace), "Ready") or {}).get("status") == "True"

    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)  # its requests counted apart
    try:
        with RunningOperator.start(operator, StoreV1, namespaces=[namespace]) as running:
            controller = running.manager.controllers[0]
            wait_for(lambda: all(ready(n) for n in names) and not controller.in_flight, timeout=30)
        sent = shared.write_requests(operator, collections.Counter())
        # Version 2's CRD declares the new field's default: the API server fills it in as it reads the objects.
        apply_crd(crd.crd_for_reconciler(StoreV2))
        wait_for(lambda: kube.get(store_kind, "a", namespace)["spec"].get("flavour") == "plain", timeout=30)

        with RunningOperator.start(operator, StoreV2, namespaces=[namespace]) as running:
            controller = running.manager.controllers[0]
            wait_for(lambda: controller.processed >= len(names) and not controller.in_flight, timeout=30)

        assert shared.write_requests(operator, collections.Counter()) == sent
    finally:
        operator.close()
