"""okt's promises checked on the real server the way users meet them: a child registered twice, two reconcilers
in one Manager."""

from __future__ import annotations

import collections
import itertools
import pathlib
import time
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import backoff as backoff_mod
from okt.testing import RunningOperator, condition, crds, envtest, faults, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
DOODAD_GROUP = "doodads.okt.io"


class Twice(shared.WidgetReconciler):
    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr), shared.WidgetConfig(ctx.cr)]


def test_a_child_registered_twice_is_an_error_in_the_conditions_and_nothing_is_written(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "twice", size=1)

    run = shared.reconcile_widget(Twice(), kube, widget_kind, namespace, "twice")

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP  # the same code would do it again: reported once
    stored = shared.get_widget(kube, widget_kind, namespace, "twice")
    ready, stalled = condition(stored, "Ready"), condition(stored, "Stalled")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "RegistrationAborted")
    assert stalled is not None and stalled["status"] == "True"
    assert "twice-config" in ready["message"]
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "twice-config") is None
    before = kube.stats.snapshot()

    again = shared.reconcile_widget(Twice(), kube, widget_kind, namespace, "twice")

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.write_requests(kube, before) == {}  # no retry storm: nothing written while the object is unchanged


class DoodadConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-doodad
  namespace: {{ namespace }}
data:
  color: {{ cr.spec.color }}
"""


class DoodadReconciler(okt.Reconciler):
    api_version = f"{DOODAD_GROUP}/v1"
    kind = "Doodad"
    plural = "doodads"
    owns = (DoodadConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [DoodadConfig(ctx.cr)]


def test_two_reconcilers_in_one_manager_converge_their_own_objects_only(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, apply_crd: Any
) -> None:
    doodad_kind: kinds.Kind = apply_crd(crds.schemaless_crd(DOODAD_GROUP, "Doodad", "doodads"))
    shared.make_widget(kube, widget_kind, namespace, "both", size=1)
    doodad = {"apiVersion": doodad_kind.api_version, "kind": "Doodad", "spec": {"color": "teal"}}
    kube.create({**doodad, "metadata": {"name": "both", "namespace": namespace}}, doodad_kind)
    reconcilers = [shared.WidgetReconciler, DoodadReconciler]
    with RunningOperator.start(kube, reconcilers, namespaces=[namespace], grace_period=5) as operator:
        for kind in (widget_kind, doodad_kind):
            wait_for(
                lambda kind=kind: (condition(kube.get(kind, "both", namespace), "Ready") or {}).get("status") == "True",
                timeout=60,
            )

    widget_uid = kube.get(widget_kind, "both", namespace)["metadata"]["uid"]
    doodad_uid = kube.get(doodad_kind, "both", namespace)["metadata"]["uid"]
    doodad_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-doodad")
    widget_config = shared.get_child(kube, "v1", "ConfigMap", namespace, "both-config")
    assert doodad_config is not None and doodad_config["data"] == {"color": "teal"}
    assert widget_config is not None
    assert [r["uid"] for r in doodad_config["metadata"]["ownerReferences"]] == [doodad_uid]
    assert [r["uid"] for r in widget_config["metadata"]["ownerReferences"]] == [widget_uid]
    assert {c.name for c in operator.manager.controllers} == {"widget", "doodad"}


class FreeWidget(shared.WidgetReconciler):
    """The FreeStyle engine, with a cleanup that fails while ``broken`` holds."""

    engine = okt.FreeStyle()
    finalizer = "test.okt.io/cleanup"
    broken = True

    def cleanup(self, ctx: okt.Context) -> None:
        if type(self).broken:
            raise okt.TemporaryError("the backup service refused the final backup")


def test_freestyle_converges_and_a_failing_cleanup_keeps_the_object_with_ready_false_until_it_succeeds(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "free", size=1)
    FreeWidget.broken = True

    run = shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    assert run.outcome == okt.Outcome.done()
    assert shared.get_child(kube, "apps/v1", "Deployment", namespace, "free") is not None
    assert (condition(shared.get_widget(kube, widget_kind, namespace, "free"), "Ready") or {})["status"] == "True"
    kube.delete(widget_kind, "free", namespace)

    failing = shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    assert failing.outcome.kind is okt.OutcomeKind.RETRY
    stuck = shared.get_widget(kube, widget_kind, namespace, "free")
    assert "test.okt.io/cleanup" in stuck["metadata"]["finalizers"]
    ready = condition(stuck, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "TemporaryError")
    assert "refused the final backup" in ready["message"]

    FreeWidget.broken = False
    shared.reconcile_widget(FreeWidget(), kube, widget_kind, namespace, "free")

    wait_for(lambda: kube.get_or_none(widget_kind, "free", namespace) is None, timeout=30)


def test_a_label_selector_keeps_the_manager_off_the_objects_it_does_not_match(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    for name, team in (("mine", "blue"), ("theirs", "red")):
        body = {"apiVersion": widget_kind.api_version, "kind": "Widget", "spec": {"size": 1}}
        kube.create({**body, "metadata": {"name": name, "namespace": namespace, "labels": {"team": team}}}, widget_kind)
    with RunningOperator.start(kube, shared.WidgetReconciler, namespaces=[namespace], label_selector="team=blue"):
        wait_for(lambda: condition(kube.get(widget_kind, "mine", namespace), "Ready"), timeout=60)

    theirs = kube.get(widget_kind, "theirs", namespace)
    assert "status" not in theirs or not theirs["status"]
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "theirs-config") is None
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "mine-config") is not None


class BuggyWidget(shared.WidgetReconciler):
    """A reconciler whose hook raises for the Widget named ``bad`` while ``broken`` holds (a bug of its author's)."""

    broken = True
    calls: ClassVar[collections.Counter[str]] = collections.Counter()

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        name = ctx.cr.name
        type(self).calls[name] += 1
        if name == "bad" and type(self).broken:
            raise RuntimeError("a bug in the hook")
        return super().resources(ctx)


def test_a_hook_that_always_raises_for_one_object_backs_off_leaves_the_others_converging_and_heals_once_fixed(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Every reconcile of ``bad`` fails: it is retried after a growing delay, each retry one reconcile (no busy loop),
    the other objects converge meanwhile, a change of its spec reconciles it without waiting out its backoff, and once
    the hook stops raising it converges and its backoff is reset."""
    BuggyWidget.broken = True
    BuggyWidget.calls.clear()
    for name in ("good-1", "bad", "good-2"):
        shared.make_widget(kube, widget_kind, namespace, name, size=1)
    backoff = backoff_mod.Backoff(base=0.5, factor=2.0, cap=60.0, jitter=0.0)
    key = (namespace, "bad")
    with RunningOperator.start(kube, BuggyWidget, namespaces=[namespace], grace_period=5, backoff=backoff) as operator:
        queue = operator.manager.controllers[0].queue
        for name in ("good-1", "good-2"):
            wait_for(lambda name=name: ready_status(kube, widget_kind, namespace, name) == "True", timeout=60)
        wait_for(lambda: queue.failures(key) >= 5, timeout=60, message="five failures of bad")  # the next in 8 s
        failures = queue.failures(key)
        assert BuggyWidget.calls["bad"] == failures  # one reconcile per retry, none in between
        assert queue.delayed_count == 1 and not queue.processing(key)  # waiting out its backoff
        ready = condition(kube.get(widget_kind, "bad", namespace), "Ready")
        assert ready is not None and ready["status"] == "False" and "a bug in the hook" in ready["message"]
        assert shared.get_child(kube, "v1", "ConfigMap", namespace, "bad-config") is None

        kube.patch(widget_kind, "bad", {"spec": {"size": 2}}, namespace)
        wait_for(lambda: BuggyWidget.calls["bad"] > failures, timeout=5, message="the reconcile of the new spec")

        BuggyWidget.broken = False
        kube.patch(widget_kind, "bad", {"spec": {"size": 3}}, namespace)
        wait_for(lambda: ready_status(kube, widget_kind, namespace, "bad") == "True", timeout=30)
        wait_for(lambda: queue.failures(key) == 0, timeout=10)
    assert BuggyWidget.calls["good-1"] >= 1 and BuggyWidget.calls["good-2"] >= 1
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, "bad-config")
    assert config is not None and config["data"]["size"] == "3"


def ready_status(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> str | None:
    return (condition(kube.get(kind, name, namespace), "Ready") or {}).get("status")


class ConfigWidget(shared.WidgetReconciler):
    """A Widget with its ConfigMap only: nothing but the reconciles' own retries writes a ConfigMap."""

    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]


@pytest.mark.parametrize(("answer", "retry_after"), [("500", None), ("503", None), ("reset", None), ("429", 2)])
def test_writes_of_one_kind_refused_for_a_while_are_retried_after_the_backoff_or_retry_after_and_nothing_is_lost(
    control_plane: envtest.ControlPlane,
    namespace: str,
    widget_kind: kinds.Kind,
    kube: kube_client.Client,
    tmp_path: pathlib.Path,
    answer: str,
    retry_after: int | None,
) -> None:
    """The API server fails, throttles or drops every ConfigMap write for a while: each retry waits at least the
    key's backoff (a 429: its Retry-After too), and once the writes are accepted again the Widget converges."""
    backoff = backoff_mod.Backoff(base=0.25, factor=2.0, cap=60.0, jitter=0.0)
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig"))
        with RunningOperator.start(client, ConfigWidget, namespaces=[namespace], grace_period=5, backoff=backoff):
            with proxy.refusing("configmaps", answer, retry_after=retry_after) as refused:
                shared.make_widget(kube, widget_kind, namespace, "refused", size=2)
                wait_for(lambda: len(refused) >= 5, timeout=60, message="five refused writes")
            during = list(refused)
            assert ready_status(kube, widget_kind, namespace, "refused") == "False"
            wait_for(lambda: ready_status(kube, widget_kind, namespace, "refused") == "True", timeout=60)
    # Each refused write was the retry of the one before, after the backoff of that many failures at least.
    for failures, (before, after) in enumerate(itertools.pairwise(during), start=1):
        assert after - before >= max(backoff.delay(failures, rand=0.5), retry_after or 0) - 0.01, (failures, during)
    assert proxy.injected[answer] == len(refused)
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, "refused-config")
    assert config is not None and config["data"]["size"] == "2"


def test_an_object_deleted_while_it_waits_out_its_backoff_is_not_reconciled_again_and_no_child_comes_back(
    control_plane: envtest.ControlPlane,
    namespace: str,
    widget_kind: kinds.Kind,
    kube: kube_client.Client,
    tmp_path: pathlib.Path,
) -> None:
    """The Widget's ConfigMap is created, its Service refused: it waits out its backoff when it is deleted, and the
    garbage collector takes its ConfigMap. Nothing of it is written after that, though its Service would now be
    accepted: no ConfigMap made again for an owner long gone, no status written, no retry."""
    backoff = backoff_mod.Backoff(base=0.25, factor=2.0, cap=60.0, jitter=0.0)
    key = (namespace, "doomed")
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig"))
        with RunningOperator.start(
            client, shared.WidgetReconciler, namespaces=[namespace], grace_period=5, backoff=backoff
        ) as operator:
            controller = operator.manager.controllers[0]
            with proxy.refusing("services", "500") as refused:
                shared.make_widget(kube, widget_kind, namespace, "doomed", size=1)
                wait_for(lambda: len(refused) >= 4, timeout=60, message="four refused Service writes")
                assert shared.get_child(kube, "v1", "ConfigMap", namespace, "doomed-config") is not None
                wait_for(lambda: controller.queue.delayed_count == 1 and controller.in_flight == 0, timeout=30)
                kube.delete(widget_kind, "doomed", namespace)
                wait_for(lambda: controller.cache.get(widget_kind, "doomed", namespace) is None, timeout=30)
            before = client.stats.snapshot()
            wait_for(
                lambda: shared.get_child(kube, "v1", "ConfigMap", namespace, "doomed-config") is None,
                timeout=60,
                message="the garbage collector to delete the ConfigMap",
            )
            assert (controller.queue.failures(key), controller.queue.delayed_count) == (0, 0)
            # Past the retry the backoff had scheduled (4 s after the fourth failure).
            time.sleep(backoff.delay(len(refused) + 1, rand=0.5))
            assert shared.write_requests(client, before) == {}
    children = [("v1", "ConfigMap", "doomed-config"), ("v1", "Service", "doomed"), ("apps/v1", "Deployment", "doomed")]
    assert [child for child in children if shared.get_child(kube, *child[:2], namespace, child[2])] == []
