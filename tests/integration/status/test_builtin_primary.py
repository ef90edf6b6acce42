"""A built-in kind as the primary: okt never writes into a status another controller owns.

A reconciler of Deployments (status off, the default for a built-in kind) runs under the Manager end to end: its
child appears, the Deployment's status gets none of okt's conditions, and a converged object costs no write. A
reconciler of ConfigMaps (which have no status at all) keeps its conditions in annotations instead.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest

import okt
from okt.codegen import rbac
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import backoff as backoff_mod
from okt.status import conditions, events
from okt.testing import RunningOperator, envtest, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
widget_kind = shared.widget_kind
KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class DeploymentNotes(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-notes
  namespace: {{ namespace }}
data:
  image: {{ cr.spec.template.spec.containers[0].image }}
"""


class DeploymentReconciler(okt.Reconciler):
    """Writes a ConfigMap next to every Deployment, with the image it runs."""

    api_version = "apps/v1"
    kind = "Deployment"
    owns = (DeploymentNotes,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [DeploymentNotes(ctx.cr)]


class Settings(okt.Reconciler):
    """Checks ConfigMaps labelled ``role=settings``; reports in annotations (a ConfigMap has no status)."""

    api_version = "v1"
    kind = "ConfigMap"
    status = "annotations"

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.raw.get("data", {}).get("mode") not in {"fast", "safe"}:
            raise okt.InvalidSpec("data.mode: must be fast or safe", field="data.mode")


def deployment(namespace: str, name: str, image: str = "example/app:1") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": image}]}},
        },
    }


def status_managers(obj: dict[str, Any]) -> set[str]:
    return {
        entry.get("manager", "")
        for entry in obj["metadata"].get("managedFields") or []
        if entry.get("subresource") == "status"
    }


def run_until_settled(client: kube_client.Client, namespace: str, until: Any) -> None:
    """Run a Manager of DeploymentReconciler until ``until()`` holds and its queue is empty after a reconcile."""
    with RunningOperator.start(client, DeploymentReconciler, namespaces=[namespace], grace_period=5) as operator:
        wait_for(until, timeout=30, message="the child")
        controller = operator.manager.controllers[0]
        wait_for(lambda: controller.processed >= 1 and len(controller.queue) == 0, timeout=30, message="settling")


def test_a_deployment_primary_gets_its_child_and_none_of_okts_status(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    assert DeploymentReconciler.status_target() is okt.StatusTarget.OFF
    kube.create(deployment(namespace, "web"), DEPLOYMENT)

    first = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    run_until_settled(first, namespace, lambda: kube.get_or_none(kinds.CONFIG_MAP, "web-notes", namespace))
    first.close()
    restarted = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    run_until_settled(restarted, namespace, lambda: True)
    restarted.close()
    restart_writes = shared.write_requests(restarted, collections.Counter())

    assert kube.get(kinds.CONFIG_MAP, "web-notes", namespace)["data"] == {"image": "example/app:1"}
    live = kube.get(DEPLOYMENT, "web", namespace)
    conditions = {c.get("type") for c in (live.get("status") or {}).get("conditions") or []}
    assert not conditions & {"Ready", "ReconciliationSuccess", "Degraded"}, live.get("status")
    assert "okt" not in status_managers(live)
    assert restart_writes == {}


def test_a_configmap_primary_reports_in_annotations_and_converges_to_no_writes(
    kube: kube_client.Client, namespace: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
    kube.create({**body, "data": {"mode": "fast"}}, kinds.CONFIG_MAP)

    first = okt.reconcile(Settings(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    before = kube.stats.snapshot()
    second = okt.reconcile(Settings(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    second_writes = shared.write_requests(kube, before)

    assert first.outcome == okt.Outcome.done(), first.results.summary()
    assert second.outcome == okt.Outcome.done(), second.results.summary()
    assert second_writes == {}
    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    ready = next(c for c in json.loads(annotations["okt.io/conditions"]) if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert "okt.io/observed-generation" in annotations

    kube.patch(kinds.CONFIG_MAP, "s", {"data": {"mode": "reckless"}}, namespace)
    okt.reconcile(Settings(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)

    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    ready = next(c for c in json.loads(annotations["okt.io/conditions"]) if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert "data.mode" in ready["message"]
    assert annotations["okt.io/error-count"] == "1"


def test_generated_rbac_asks_no_status_permission_where_okt_writes_no_status() -> None:
    rules = [
        rule
        for document in rbac.rbac_for_reconciler(DeploymentReconciler)
        if document["kind"] == "Role"
        for rule in document["rules"]
    ]
    resources = {resource for rule in rules for resource in rule["resources"]}

    assert "deployments" in resources
    assert "deployments/status" not in resources


class Quoting(Settings):
    """Fails with what a backend answered, quoted whole: a long answer in a script JSON escapes (Cyrillic)."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.raw.get("data", {}).get("mode") == "remote":
            raise okt.PermanentError("the backend refused: " + "ошибка " * 8000)


def test_an_error_with_a_long_message_turns_ready_false_in_the_annotations_too(
    kube: kube_client.Client, namespace: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
    kube.create({**body, "data": {"mode": "fast"}}, kinds.CONFIG_MAP)
    okt.reconcile(Quoting(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    kube.patch(kinds.CONFIG_MAP, "s", {"data": {"mode": "remote"}}, namespace)

    run = okt.reconcile(Quoting(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)

    assert run.results.count(okt.Operation.STATUS_UPDATE_ERROR) == 0, run.results.summary()
    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    ready = next(c for c in json.loads(annotations["okt.io/conditions"]) if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PermanentError")
    assert ready["message"].startswith("the backend refused: ошибка ошибка")
    before = kube.stats.snapshot()
    okt.reconcile(Quoting(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    assert shared.write_requests(kube, before) == {}  # reported once, and what was written reads back the same


class Unanswered(Settings):
    """Fails with a transient error quoting what a backend answered: near the 32 KiB a condition message may hold."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.raw.get("data", {}).get("mode") == "remote":
            raise okt.TemporaryError("the backend answered: " + "timeout; " * 3600)


def test_an_error_turns_ready_false_in_annotations_that_kubectl_apply_has_half_filled(
    kube: kube_client.Client, namespace: str
) -> None:
    # ``kubectl apply`` keeps the whole object it applied in an annotation: a ConfigMap of 160 KiB leaves less than
    # 100 KiB of the 256 KiB the API server allows all annotations of an object, and four conditions quote the error.
    data = {"mode": "fast", "table": "x" * 160_000}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}, "data": data}
    applied = json.dumps(body, separators=(",", ":"))
    kube.create(
        {**body, "metadata": {**body["metadata"], "annotations": {KUBECTL_LAST_APPLIED: applied}}}, kinds.CONFIG_MAP
    )
    okt.reconcile(Unanswered(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    kube.patch(kinds.CONFIG_MAP, "s", {"data": {"mode": "remote"}}, namespace)

    run = okt.reconcile(Unanswered(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)

    assert run.results.count(okt.Operation.STATUS_UPDATE_ERROR) == 0, run.results.summary()
    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    assert annotations[KUBECTL_LAST_APPLIED] == applied
    ready = next(c for c in json.loads(annotations["okt.io/conditions"]) if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "TemporaryError")
    assert ready["message"].startswith("the backend answered: timeout; timeout;")
    assert ready["message"].endswith(conditions.TRUNCATION_MARK)
    okt.reconcile(Unanswered(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP)
    again = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    assert again["okt.io/conditions"] == annotations["okt.io/conditions"]  # cut the same way: not written again


class TeamA(okt.Reconciler):
    """One operator's reconciler of ConfigMaps, failing while its backend is down (mode ``remote``)."""

    api_version = "v1"
    kind = "ConfigMap"
    name = "team-a"
    prefix = "a.example.com"
    status = "annotations"

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.raw.get("data", {}).get("mode") == "remote":
            raise okt.TemporaryError("the backend does not answer")


class TeamB(TeamA):
    """Another operator's, with its own prefix, failing on the same ConfigMap."""

    name = "team-b"
    prefix = "b.example.com"


def test_two_operators_failing_on_one_object_back_off_instead_of_waking_each_other(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
    kube.create({**body, "data": {"mode": "remote"}}, kinds.CONFIG_MAP)

    def counts() -> tuple[str | None, str | None]:
        annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"].get("annotations") or {}
        return annotations.get("a.example.com/error-count"), annotations.get("b.example.com/error-count")

    # Retries after a failure wait ten minutes: every reconcile seen here is one an event asked for.
    slow = backoff_mod.Backoff(base=600, cap=600, jitter=0)
    client_a = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    client_b = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    with RunningOperator.start(client_a, TeamA, namespaces=[namespace], backoff=slow) as team_a:
        wait_for(lambda: counts()[0] is not None, timeout=30, message="team A's error count")
        with RunningOperator.start(client_b, TeamB, namespaces=[namespace], backoff=slow) as team_b:
            wait_for(lambda: counts()[1] is not None, timeout=30, message="team B's error count")
            controllers = [*team_a.manager.controllers, *team_b.manager.controllers]
            wait_for(
                lambda: all(not c.in_flight and not len(c.queue) for c in controllers),
                timeout=30,
                message="both operators idle",
            )
            processed = [c.processed for c in controllers]
    client_a.close()
    client_b.close()

    assert counts() == ("1", "1")
    assert processed == [1, 1]


class Oversized(Settings):
    """Reports a status field larger than all annotations of an object may be: every success's write is refused."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.SuccessManager:
            ctx.status_fields["table"] = "x" * 300_000
        return super().enter_in_state(state, ctx)


def test_a_report_too_large_for_the_annotations_is_said_once_without_its_fields_and_not_counted_again(
    kube: kube_client.Client, namespace: str
) -> None:
    """A status field larger than all annotations of an object may be is refused with every success's write: the same
    at each retry, so it is a permanent error said once (Ready, the error count, Degraded) with the fields left out,
    never one more failure counted at each reconcile."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
    kube.create({**body, "data": {"mode": "fast"}}, kinds.CONFIG_MAP)

    runs = [okt.reconcile(Oversized(), kube, None, namespace, "s", kind=kinds.CONFIG_MAP) for _ in range(3)]

    assert all(run.outcome.kind is okt.OutcomeKind.GIVE_UP for run in runs), [run.outcome for run in runs]
    assert all((run.outcome.reason or "").startswith("ObjectTooLarge") for run in runs), [r.outcome for r in runs]
    # The report is written once; the retries find it stored as it is.
    assert [run.results.count(okt.Operation.STATUS_UPDATED) for run in runs] == [1, 0, 0]
    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]
    assert annotations["okt.io/error-count"] == "1"
    stored = {c["type"]: c for c in json.loads(annotations["okt.io/conditions"])}
    assert (stored["Ready"]["status"], stored["Ready"]["reason"]) == ("False", "ObjectTooLarge")
    assert "262144" in stored["Ready"]["message"] and "table" in stored["Ready"]["message"]
    assert stored["Degraded"]["status"] == "True"  # a permanent error
    assert sum(len(value) for value in annotations.values()) < 10_000  # written without the field


class Vetted(okt.Reconciler):
    """Checks ConfigMaps; its status is "off" (a built-in kind's default): the Warning Events and the
    error count are all that say its errors."""

    api_version = "v1"
    kind = "ConfigMap"

    def check(self, ctx: okt.Context) -> None:
        mode = ctx.cr.raw.get("data", {}).get("mode")
        if mode == "remote":
            raise okt.PermanentError("the backend refused this mode")
        if mode == "none":
            raise okt.GiveUp("nothing to do in this mode", alarming=True)
        if mode not in {"fast", "safe"}:
            raise okt.InvalidSpec("data.mode: must be fast or safe", field="data.mode")


class VettedInAnnotations(Vetted):
    status = "annotations"


class WidgetUnreported(shared.WidgetReconciler):
    """A Widget's reconciler whose status is "off": a custom resource, whose generation counts its changes."""

    status = "off"


class WidgetInAnnotations(shared.WidgetReconciler):
    """A Widget's reconciler whose conditions are kept in annotations: its Ready's observedGeneration says which
    generation an error was reported for."""

    status = "annotations"


def warnings_about(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> list[tuple[str, int]]:
    """The Events about the object, as (reason, count)."""
    uid = kube.get(kind, name, namespace)["metadata"]["uid"]
    items, _ = kube.list(kinds.EVENT, namespace)
    return sorted((item["reason"], item["count"]) for item in items if item["involvedObject"].get("uid") == uid)


def reconcile_as_a_new_process(
    control_plane: envtest.ControlPlane,
    reconciler: okt.Reconciler,
    kind: kinds.Kind,
    namespace: str,
    name: str,
    times: int = 1,
) -> dict[tuple[str, str], int]:
    """Reconcile the object ``times`` with a client and a recorder of their own, as a restarted operator does (it
    remembers no Event): the writes it sent."""
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    recorder = events.EventRecorder(client, "vetted")
    for _ in range(times):
        okt.reconcile(reconciler, client, None, namespace, name, kind=kind, recorder=recorder)
    client.close()
    return shared.write_requests(client, collections.Counter())


@pytest.mark.parametrize("reconciler_cls", [Vetted, VettedInAnnotations], ids=["off", "annotations"])
@pytest.mark.parametrize("mode", ["reckless", "remote", "none"], ids=["invalid spec", "permanent error", "give-up"])
def test_a_permanent_error_reported_once_is_not_reported_again_by_a_restarted_operator(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    reconciler_cls: type[okt.Reconciler],
    mode: str,
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
    kube.create({**body, "data": {"mode": mode}}, kinds.CONFIG_MAP)
    reconcile_as_a_new_process(control_plane, reconciler_cls(), kinds.CONFIG_MAP, namespace, "s")
    reported = warnings_about(kube, kinds.CONFIG_MAP, namespace, "s")
    annotations = kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"]

    restart_writes = reconcile_as_a_new_process(control_plane, reconciler_cls(), kinds.CONFIG_MAP, namespace, "s", 2)

    assert len(reported) == 1 and reported[0][1] == 1, reported
    assert annotations["okt.io/error-count"] == "1"
    assert restart_writes == {}
    assert warnings_about(kube, kinds.CONFIG_MAP, namespace, "s") == reported
    assert kube.get(kinds.CONFIG_MAP, "s", namespace)["metadata"]["annotations"] == annotations


@pytest.mark.parametrize("status", ["off", "annotations"])
@pytest.mark.parametrize("kind_of_primary", ["configmap", "widget"])
def test_a_change_of_an_object_whose_error_was_reported_is_reported_anew(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    kind_of_primary: str,
    status: str,
) -> None:
    """The object changed (a ConfigMap's data, which no generation counts; a Widget's spec, its generation) to a value
    refused with the same message: a new failure, counted and told in a Warning Event, then left alone again. With
    its conditions in annotations, the ConfigMap's Ready says the same reason, message and observedGeneration (0)
    before and after the change: only the digest of what was reported tells the change."""
    reconciler: okt.Reconciler
    if kind_of_primary == "configmap":
        kind, reconciler = kinds.CONFIG_MAP, Vetted() if status == "off" else VettedInAnnotations()
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": namespace}}
        kube.create({**body, "data": {"mode": "reckless"}}, kinds.CONFIG_MAP)
    else:
        kind, reconciler = widget_kind, WidgetUnreported() if status == "off" else WidgetInAnnotations()
        shared.make_widget(kube, widget_kind, namespace, "s", size=0)
    reconcile_as_a_new_process(control_plane, reconciler, kind, namespace, "s")
    reported = warnings_about(kube, kind, namespace, "s")
    if kind_of_primary == "configmap":
        kube.patch(kinds.CONFIG_MAP, "s", {"data": {"mode": "wild"}}, namespace)
    else:
        shared.patch_widget_spec(kube, widget_kind, namespace, "s", size=-1)

    changed_writes = reconcile_as_a_new_process(control_plane, reconciler, kind, namespace, "s")
    again_writes = reconcile_as_a_new_process(control_plane, reconciler, kind, namespace, "s")

    assert len(reported) == 1 and reported[0][1] == 1, reported
    assert changed_writes == {(("patch", kind.plural)): 1, ("create", "events"): 1}
    assert kube.get(kind, "s", namespace)["metadata"]["annotations"]["okt.io/error-count"] == "2"
    assert warnings_about(kube, kind, namespace, "s") == [reported[0], reported[0]]  # a new Event, not a count bump
    assert again_writes == {}
