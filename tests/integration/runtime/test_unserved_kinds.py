"""Kinds a reconciler addresses without asking discovery, against a server that does not serve them: built-in kinds
okt's table addresses for current servers, where the server serves some of them under an older version only
(Kubernetes 1.20: CronJob in batch/v1beta1, PodDisruptionBudget in policy/v1beta1, HorizontalPodAutoscaler in
autoscaling/v1, v2beta1 and v2beta2), and custom kinds declared with their plural whose CRD is not installed, or does
not serve the declared version."""

from __future__ import annotations

import pathlib
import secrets
import subprocess
import sys
import types
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import informer as informer_mod
from okt.runtime import manager as manager_mod
from okt.testing import RunningOperator, condition, crds, envtest, wait_for

pytestmark = pytest.mark.integration


class CurrentCronJob(okt.MutableResource):
    api_version = "batch/v1"
    kind = "CronJob"


class OlderCronJob(okt.MutableResource):
    api_version = "batch/v1beta1"
    kind = "CronJob"


class Schedules(okt.Reconciler):
    """ConfigMaps, each owning a CronJob of batch/v1."""

    api_version = "v1"
    kind = "ConfigMap"
    owns: ClassVar = (CurrentCronJob,)


class Budgets(okt.Reconciler):
    """ConfigMaps, reconciled again when a PodDisruptionBudget of policy/v1 changes."""

    api_version = "v1"
    kind = "ConfigMap"
    watches = (
        okt.watch(okt.Kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"), map=lambda obj, ctx: []),
    )


class Scalers(okt.Reconciler):
    """HorizontalPodAutoscalers of autoscaling/v2 as the primary kind."""

    api_version = "autoscaling/v2"
    kind = "HorizontalPodAutoscaler"


def refused_start(
    kube: kube_client.Client,
    namespace: str,
    reconciler: type[okt.Reconciler],
    refusal: type[okt.errors.ApiError] = okt.errors.NotFound,
) -> str:
    """The one line a manager of ``reconciler`` raises from its start (a ``refusal``), once it is shut down."""
    manager = manager_mod.Manager(kube, [reconciler], namespaces=[namespace], metrics_bind="0", tune_memory=False)
    try:
        with pytest.raises(refusal) as caught:
            manager.start()
    finally:
        manager.stop()
        manager.join(15)
    return str(caught.value)


@pytest.mark.parametrize(
    ("reconciler", "message"),
    [
        (Schedules, "the server does not serve CronJob in batch/v1 (it serves it in batch/v1beta1)"),
        (Budgets, "the server does not serve PodDisruptionBudget in policy/v1 (it serves it in policy/v1beta1)"),
        (
            Scalers,
            "the server does not serve HorizontalPodAutoscaler in autoscaling/v2 "
            "(it serves it in autoscaling/v1, autoscaling/v2beta1, autoscaling/v2beta2)",
        ),
    ],
)
def test_a_builtin_kind_the_server_does_not_serve_stops_the_start_naming_it_and_the_versions_that_serve_it(
    kube: kube_client.Client, namespace: str, reconciler: type[okt.Reconciler], message: str
) -> None:
    assert refused_start(kube, namespace, reconciler) == f"404 NotFound: {message}"


class Credentials(okt.MutableResource):
    api_version = "v1"
    kind = "Secret"


class Endpoint(okt.MutableResource):
    api_version = "v1"
    kind = "Service"


class Workload(okt.MutableResource):
    api_version = "apps/v1"
    kind = "Deployment"


class SchedulesOfTheServer(okt.Reconciler):
    """ConfigMaps owning Secrets, Services, Deployments and CronJobs, each of a version the server serves."""

    api_version = "v1"
    kind = "ConfigMap"
    owns: ClassVar = (Credentials, Endpoint, Workload, OlderCronJob)


def test_the_builtin_kinds_the_server_serves_start_with_one_discovery_read_per_group_version(
    control_plane: envtest.ControlPlane, namespace: str
) -> None:
    client = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        with RunningOperator.start(client, SchedulesOfTheServer, namespaces=[namespace], tune_memory=False):
            discovery_reads = client.stats.snapshot()[("get", "discovery")]
    finally:
        client.close()
    assert discovery_reads == 3  # /api/v1, /apis/apps/v1, /apis/batch/v1beta1


def run_refused(
    control_plane: envtest.ControlPlane, namespace: str, operator: pathlib.Path
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``okt run operator`` in a process of its own, expected to stop at start (exit status 1): its answer, and the
    ``Error:`` lines of its standard error."""
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(control_plane.kubeconfig)]
    argv += ["-n", namespace, "--metrics-bind-address", "0", "--log-format", "json"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    return done, [line for line in done.stderr.splitlines() if line.startswith("Error:")]


def test_okt_run_of_a_reconciler_owning_a_kind_the_server_does_not_serve_stops_with_one_line(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    operator = tmp_path / "cronjob_operator.py"
    operator.write_text(
        "import okt\n"
        "class CronJob(okt.MutableResource):\n    api_version = 'batch/v1'\n    kind = 'CronJob'\n"
        "class Schedules(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n    owns = (CronJob,)\n"
    )

    # A guard, not a measure: before the fix the operator ran on, its informer listing CronJobs again and again.
    done, errors = run_refused(control_plane, namespace, operator)

    assert errors == [
        "Error: 404 NotFound: the server does not serve CronJob in batch/v1 (it serves it in batch/v1beta1)"
    ], done.stderr
    assert "Traceback" not in done.stderr


class Things(okt.Reconciler):
    """Things of a group no CRD installs, declared with their plural (addressed without discovery)."""

    api_version = "nothing.okt.io/v1"
    kind = "Thing"
    plural = "things"


class ThingWatchers(okt.Reconciler):
    """ConfigMaps, reconciled again when a Thing of a group no CRD installs changes."""

    api_version = "v1"
    kind = "ConfigMap"
    watches = (okt.watch(okt.Kind("nothing.okt.io/v1", "Thing", "things"), map=lambda obj, ctx: []),)


class GadgetsOfAnotherVersion(okt.Reconciler):
    """Gadgets declared in a version their CRD does not serve (it serves v1 only)."""

    api_version = "runtime.okt.io/v2"
    kind = "Gadget"
    plural = "gadgets"


class GadgetsOfASlashedVersion(okt.Reconciler):
    """Gadgets declared in "runtime.okt.io/v1/": discovery answers that path as runtime.okt.io/v1, the paths of the
    kind's objects (``/apis/runtime.okt.io/v1//...``) are not found."""

    api_version = "runtime.okt.io/v1/"
    kind = "Gadget"
    plural = "gadgets"


@pytest.mark.parametrize(
    ("reconciler", "message"),
    [
        (Things, "the server does not serve Thing in nothing.okt.io/v1"),
        (GadgetsOfASlashedVersion, "the server does not serve Gadget in runtime.okt.io/v1/"),
        (ThingWatchers, "the server does not serve Thing in nothing.okt.io/v1"),
        (
            GadgetsOfAnotherVersion,
            "the server does not serve Gadget in runtime.okt.io/v2 (it serves it in runtime.okt.io/v1)",
        ),
    ],
)
def test_a_custom_kind_declared_with_its_plural_the_server_does_not_serve_stops_the_start_naming_it(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, reconciler: type[okt.Reconciler], message: str
) -> None:
    assert refused_start(kube, namespace, reconciler) == f"404 NotFound: {message}"


def test_a_custom_kind_whose_crd_was_established_a_moment_ago_starts(kube: kube_client.Client, namespace: str) -> None:
    # Discovery lists a new CRD's kind a moment after the CRD turns Established (against this control plane, one
    # time in four): a start at once must wait for it, not refuse the kind. Several CRDs, so the race is met.
    groups = [f"fresh{secrets.token_hex(4)}.okt.io" for _ in range(6)]
    assert [group for group in groups if _starts_once_established(kube, namespace, group)] == groups


def _starts_once_established(client: kube_client.Client, namespace: str, group: str) -> bool:
    """Install a CRD of ``group``, start a manager watching its kind as soon as the CRD is Established."""
    crd = crds.schemaless_crd(group, "Fresh", "freshes")
    name = crd["metadata"]["name"]
    client.create(crd, kinds.CRD)
    try:
        wait_for(lambda: _established(client, name), interval=0, message=f"CRD {name} Established")
        fresh = types.new_class(
            "Freshes",
            (okt.Reconciler,),
            exec_body=lambda body: body.update(api_version=f"{group}/v1", kind="Fresh", plural="freshes"),
        )
        with RunningOperator.start(client, fresh, namespaces=[namespace], tune_memory=False) as running:
            return running.manager.working
    finally:
        client.delete(kinds.CRD, name)


def _established(client: kube_client.Client, name: str) -> bool:
    conditions = (client.get(kinds.CRD, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def test_a_run_refused_at_the_start_returns_once_the_manager_is_shut_down_and_cleaned_up(
    kube: kube_client.Client, namespace: str
) -> None:
    # okt run reports the refusal and exits: a shutdown still under way then would lose the clean-up hooks' work,
    # and its last log line would cut into the error line.
    marker = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cleaned-up", "namespace": namespace}}
    manager = manager_mod.Manager(
        kube,
        [Things],
        namespaces=[namespace],
        metrics_bind="0",
        tune_memory=False,
        on_cleanup=[lambda: kube.create(marker, kinds.CONFIG_MAP)],
    )
    with pytest.raises(okt.errors.NotFound):
        manager.run()
    assert manager.join(0)
    assert kube.get_or_none(kinds.CONFIG_MAP, "cleaned-up", namespace) is not None


class GadgetsOfAnotherPlural(okt.Reconciler):
    """Gadgets declared with a plural their CRD does not name ("gadgets")."""

    api_version = "runtime.okt.io/v1"
    kind = "Gadget"
    plural = "gadget"


class ClusterGadgets(okt.Reconciler):
    """Gadgets declared cluster-scoped, though their CRD is Namespaced."""

    api_version = "runtime.okt.io/v1"
    kind = "Gadget"
    plural = "gadgets"
    namespaced = False


class NamespacedGauges(okt.Reconciler):
    """Gauges declared namespaced (the default), though their CRD is Cluster-scoped."""

    api_version = "runtime.okt.io/v1"
    kind = "Gauge"
    plural = "gauges"


class GadgetWatchers(okt.Reconciler):
    """ConfigMaps, reconciled again when a Gadget, watched under a plural its CRD does not name, changes."""

    api_version = "v1"
    kind = "ConfigMap"
    watches = (okt.watch(okt.Kind("runtime.okt.io/v1", "Gadget", "gadgetz"), map=lambda obj, ctx: []),)


@pytest.fixture(scope="module")
def gauge_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(crds.schemaless_crd("runtime.okt.io", "Gauge", "gauges", namespaced=False))


@pytest.mark.parametrize(
    ("reconciler", "message"),
    [
        (GadgetsOfAnotherPlural, 'the server serves Gadget in runtime.okt.io/v1 as "gadgets", not "gadget"'),
        (GadgetWatchers, 'the server serves Gadget in runtime.okt.io/v1 as "gadgets", not "gadgetz"'),
        (ClusterGadgets, "the server serves Gadget in runtime.okt.io/v1 namespaced, not cluster-scoped"),
        (NamespacedGauges, "the server serves Gauge in runtime.okt.io/v1 cluster-scoped, not namespaced"),
    ],
)
def test_a_custom_kind_declared_with_another_plural_or_scope_than_served_stops_the_start_naming_both(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    gauge_kind: kinds.Kind,
    reconciler: type[okt.Reconciler],
    message: str,
) -> None:
    assert refused_start(kube, namespace, reconciler) == f"404 NotFound: {message}"


class ReviewWatchers(okt.Reconciler):
    """ConfigMaps, reconciled again when a TokenReview changes: a kind the server only creates."""

    api_version = "v1"
    kind = "ConfigMap"
    watches = (
        okt.watch(
            okt.Kind("authentication.k8s.io/v1", "TokenReview", "tokenreviews", namespaced=False),
            map=lambda obj, ctx: [],
        ),
    )


class ComponentStatuses(okt.Reconciler):
    """ComponentStatuses as the primary kind, named as kubectl names them: the server lists them but cannot watch."""

    kind = "componentstatuses"


@pytest.mark.parametrize(
    ("reconciler", "message"),
    [
        (
            ReviewWatchers,
            "the server serves TokenReview in authentication.k8s.io/v1 without list and watch (its verbs: create): "
            "okt cannot watch it",
        ),
        (
            ComponentStatuses,
            "the server serves ComponentStatus in v1 without watch (its verbs: get, list): okt cannot watch it",
        ),
    ],
)
def test_a_kind_the_server_serves_but_cannot_list_and_watch_stops_the_start_naming_its_verbs(
    kube: kube_client.Client, namespace: str, reconciler: type[okt.Reconciler], message: str
) -> None:
    assert refused_start(kube, namespace, reconciler, okt.errors.ApiError) == f"405 MethodNotAllowed: {message}"


def _recording_reconciler(group: str, version: str, seen: list[tuple[str, str]]) -> type[okt.Reconciler]:
    """A reconciler of the Widgets of ``group`` in ``version`` that records ``(name, uid)`` of each object it
    reconciles."""

    def enter_in_state(self: okt.Reconciler, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.CRChecker:
            seen.append((ctx.cr.name, ctx.cr.uid))

    return types.new_class(
        "Widgets",
        (okt.Reconciler,),
        exec_body=lambda body: body.update(
            api_version=f"{group}/{version}", kind="Widget", plural="widgets", enter_in_state=enter_in_state
        ),
    )


def _widget(kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str) -> str:
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name, "namespace": namespace}}
    return str(kube.create(body, kind)["metadata"]["uid"])


def _not_served_lines(logged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logged if "does not serve the kind" in str(entry.get("event"))]


def _probe(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _served_sample(probes_url: str, kind: kinds.Kind) -> str | None:
    """The value of ``okt_kind_served`` for ``kind`` on ``/metrics``, as written there."""
    prefix = f'okt_kind_served{{kind="{kind}"}} '
    body = _probe(f"{probes_url}/metrics")[1]
    return next((line.removeprefix(prefix) for line in body.splitlines() if line.startswith(prefix)), None)


def _recording_config_maps(seen: list[str]) -> type[okt.Reconciler]:
    def enter_in_state(self: okt.Reconciler, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.CRChecker:
            seen.append(ctx.cr.name)

    return types.new_class(
        "Settings",
        (okt.Reconciler,),
        exec_body=lambda body: body.update(api_version="v1", kind="ConfigMap", enter_in_state=enter_in_state),
    )


def test_a_crd_deleted_under_a_running_operator_leaves_it_ready_naming_the_kind_until_created_again(
    kube: kube_client.Client, namespace: str
) -> None:
    # Readiness takes a pod out of its Service's endpoints: every webhook of every kind it serves would be refused
    # (failurePolicy Fail), and every other kind goes on being reconciled. One kind gone is reported, not an outage.
    group = f"gone{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Widget", "widgets")
    name = crd["metadata"]["name"]
    kind = crds.ensure_crd(kube, crd)
    seen: list[tuple[str, str]] = []
    settings: list[str] = []
    reconcilers = [_recording_reconciler(group, "v1", seen), _recording_config_maps(settings)]
    try:
        first = _widget(kube, kind, namespace, "first")
        with (
            structlog.testing.capture_logs() as logged,
            RunningOperator.start(kube, reconcilers, namespaces=[namespace], metrics_bind="127.0.0.1:0") as running,
        ):
            assert running.manager.probes is not None
            url = running.manager.probes.url
            wait_for(lambda: ("first", first) in seen, message="the first widget reconciled")
            served_before = _served_sample(url, kind)
            kube.delete(kinds.CRD, name)
            wait_for(lambda: kube.get_or_none(kinds.CRD, name) is None, message=f"CRD {name} gone")
            wait_for(lambda: _probe(f"{url}/readyz") != (200, "ok"), message="the Widgets reported unserved")
            unserved, served_meanwhile = _probe(f"{url}/readyz"), _served_sample(url, kind)
            other = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "other-kind", "namespace": namespace},
            }
            kube.create(other, kinds.CONFIG_MAP)
            wait_for(lambda: "other-kind" in settings, message="the ConfigMap reconciled while Widgets are unserved")

            crds.ensure_crd(kube, crd)
            again = _widget(kube, kind, namespace, "first")
            second = _widget(kube, kind, namespace, "second")
            wait_for(lambda: {("first", again), ("second", second)} <= set(seen), message=lambda: str(seen))
            wait_for(lambda: _probe(f"{url}/readyz") == (200, "ok"), message=lambda: str(_probe(f"{url}/readyz")))
            served_after = _served_sample(url, kind)
    finally:
        kube.delete(kinds.CRD, name)

    assert unserved == (200, f"ok (the API server does not serve Widget in {group}/v1 any more)")
    assert (served_before, served_meanwhile, served_after) == ("1.0", "0.0", "1.0")
    lines = _not_served_lines(logged)
    assert [entry["log_level"] for entry in lines] == ["warning", *["debug"] * (len(lines) - 1)], lines
    assert lines[0]["cause"] == f"no version of {group} serves Widget (its CRD deleted)", lines[0]


def test_a_version_no_longer_served_under_a_running_operator_reconciles_its_objects_again_once_served(
    kube: kube_client.Client, namespace: str
) -> None:
    group = f"unserved{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Widget", "widgets")
    stored = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [stored, {**stored, "name": "v2", "storage": False}]
    name = crd["metadata"]["name"]
    kind = crds.ensure_crd(kube, crd)
    v2 = kinds.Kind(f"{group}/v2", "Widget", "widgets")
    seen: list[tuple[str, str]] = []

    def serve_v2(served: bool) -> None:
        live = kube.get(kinds.CRD, name)
        live["spec"]["versions"][1]["served"] = served
        kube.replace(kinds.CRD, live)

    try:
        uid = _widget(kube, kind, namespace, "kept")
        with (
            structlog.testing.capture_logs() as logged,
            RunningOperator.start(kube, _recording_reconciler(group, "v2", seen), namespaces=[namespace]) as running,
        ):
            wait_for(lambda: ("kept", uid) in seen, message="the widget reconciled")
            serve_v2(False)
            wait_for(lambda: running.manager.readiness()[1] != "ok", message=lambda: str(running.manager.readiness()))
            unserved = running.manager.readiness()
            reconciled_before = seen.count(("kept", uid))
            serve_v2(True)
            wait_for(
                lambda: running.manager.readiness() == (True, "ok"), message=lambda: str(running.manager.readiness())
            )
            wait_for(lambda: seen.count(("kept", uid)) > reconciled_before, message=lambda: str(seen))
            assert running.manager.cache is not None
            assert running.manager.cache.informers(v2)[0].get(namespace, "kept") is not None
    finally:
        kube.delete(kinds.CRD, name)

    assert unserved == (True, f"the API server does not serve Widget in {group}/v2 any more")
    lines = _not_served_lines(logged)
    assert [entry["log_level"] for entry in lines] == ["warning", *["debug"] * (len(lines) - 1)], lines


def test_an_object_relabelled_out_of_the_selection_while_its_version_was_not_served_is_told_as_a_leave(
    kube: kube_client.Client, namespace: str
) -> None:
    """A version set to ``served: false`` keeps its objects (another version serves them): one relabelled out of the
    label selection meanwhile is still there when the version is served again, and is told as the watch tells a leave,
    with its state now, out of the selection — not as deleted with the state okt held from before, which the
    deletions of the operator take for its own (``on_deleted`` is then called if it is deleted before a worker reads
    it, though it was no longer the operator's)."""
    group = f"relabelled{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Widget", "widgets")
    stored = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [stored, {**stored, "name": "v2", "storage": False}]
    name = crd["metadata"]["name"]
    v1 = crds.ensure_crd(kube, crd)
    v2 = kinds.Kind(f"{group}/v2", "Widget", "widgets")
    told: list[tuple[str, str, dict[str, str]]] = []

    def record(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj["metadata"]
        told.append((event_type, meta["name"], dict(meta.get("labels") or {})))

    def serve_v2(served: bool) -> None:
        live = kube.get(kinds.CRD, name)
        live["spec"]["versions"][1]["served"] = served
        kube.replace(kinds.CRD, live)

    for widget in ("kept", "relabelled", "deleted"):
        body = {"apiVersion": v1.api_version, "kind": "Widget", "metadata": {"name": widget, "namespace": namespace}}
        kube.create({**body, "metadata": {**body["metadata"], "labels": {"app": "mine"}}}, v1)
    informer = informer_mod.Informer(
        kube, v2, namespace, "app=mine", on_event=record, backoff=backoff_mod.Backoff(base=0.1, cap=1.0, jitter=0.0)
    )
    try:
        with structlog.testing.capture_logs() as logged:
            informer.start()
            assert informer.has_synced.wait(30)
            serve_v2(False)
            wait_for(lambda: not informer.served, message="v2 reported unserved")
            kube.patch(v1, "relabelled", {"metadata": {"labels": {"app": "other"}}}, namespace)
            kube.delete(v1, "deleted", namespace)
            serve_v2(True)
            wait_for(lambda: informer.served, message="v2 served again")
    finally:
        informer.stop(5)
        kube.delete(kinds.CRD, name)

    assert sorted(told[3:]) == [
        ("DELETED", "deleted", {"app": "mine"}),  # gone: told with its last state stored
        ("DELETED", "relabelled", {"app": "other"}),  # still there, out of the selection: a leave
        ("RESYNC", "kept", {"app": "mine"}),
    ], told
    (unserved,) = [entry for entry in logged if entry["log_level"] == "warning"]
    assert unserved["cause"] == (
        f"{group}/v2 is no longer served (the API server serves Widget in {group}/v1): its objects are kept, "
        "and the cache holds them as they were"
    ), unserved
    (again,) = [entry for entry in logged if entry["event"] == "the API server serves the kind again"]
    assert (again["deleted"], again["left"]) == (1, 1), again


def test_what_the_list_after_a_version_was_not_served_tells_is_told_once_the_cache_serves_reads_of_it(
    kube: kube_client.Client, namespace: str
) -> None:
    """A reconcile reads the kind (its primary, its children) from the cache, which refuses those reads until the list
    that answers again is done: each change told before that woke a reconcile that failed on the refusal (a warning,
    a Ready=False naming the kind written, and done again once the refusal was lifted)."""
    group = f"resumed{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Widget", "widgets")
    stored = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [stored, {**stored, "name": "v2", "storage": False}]
    name = crd["metadata"]["name"]
    v1 = crds.ensure_crd(kube, crd)
    v2 = kinds.Kind(f"{group}/v2", "Widget", "widgets")
    cache = cache_mod.Cache(kube, [namespace])
    told: list[tuple[str, str, str | None]] = []

    def record(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        refused = cache.refusal(v2, namespace)
        told.append((event_type, obj["metadata"]["name"], None if refused is None else str(refused)))

    def serve_v2(served: bool) -> None:
        live = kube.get(kinds.CRD, name)
        live["spec"]["versions"][1]["served"] = served
        kube.replace(kinds.CRD, live)

    for widget in ("changed", "same"):
        body = {"apiVersion": v1.api_version, "kind": "Widget", "metadata": {"name": widget, "namespace": namespace}}
        kube.create({**body, "spec": {"size": 1}}, v1)
    try:
        cache.start(v2, record)
        assert cache.wait_for_sync(30)
        serve_v2(False)
        wait_for(lambda: cache.unserved() == [v2], message="v2 reported unserved")
        kube.patch(v1, "changed", {"spec": {"size": 2}}, namespace)
        serve_v2(True)
        wait_for(lambda: len(told) == 4, message=lambda: f"the list that answers again told: {told}")
    finally:
        cache.stop()
        kube.delete(kinds.CRD, name)

    assert sorted(told[2:]) == [("MODIFIED", "changed", None), ("RESYNC", "same", None)], told
    assert cache.unserved() == []


PART_GROUP = "parts.okt.io"


class GadgetPart(okt.MutableResource):
    api_version = f"{PART_GROUP}/v1"
    kind = "Part"
    template = """
apiVersion: parts.okt.io/v1
kind: Part
metadata:
  name: {{ name }}-part
  namespace: {{ namespace }}
spec:
  size: 1
"""


class PartedGadgets(okt.Reconciler):
    api_version = "runtime.okt.io/v1"
    kind = "Gadget"
    plural = "gadgets"
    owns = (GadgetPart,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GadgetPart(ctx.cr)]


def test_a_child_kind_no_longer_served_fails_the_reconciles_that_read_it_until_served_again(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Callable[..., dict[str, Any]],
) -> None:
    """The CRD of a child kind is deleted under a running controller, its objects with it: what the cache held of them
    is gone from the API, and a reconcile that took it for current would find every child in place and say Ready."""
    crd = crds.schemaless_crd(PART_GROUP, "Part", "parts")
    part_kind = crds.ensure_crd(kube, crd, plane=control_plane)  # the garbage collector knows Parts at once
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(PartedGadgets, kube, cache, workers=1)
    make_gadget("g")

    def ready() -> dict[str, Any] | None:
        return condition(kube.get_or_none(gadget_kind, "g", namespace), "Ready")

    try:
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        wait_for(lambda: (ready() or {}).get("status") == "True", timeout=30, message="the first reconcile")
        wait_for(lambda: cache.get(part_kind, "g-part", namespace) is not None, timeout=30, message="the Part cached")
        queue = controller.queue
        wait_for(lambda: len(queue) == 0 and queue.delayed_count == 0 and controller.in_flight == 0, timeout=30)

        kube.delete(kinds.CRD, crd["metadata"]["name"])
        wait_for(lambda: cache.unserved() == [part_kind], timeout=60, message="the Parts reported unserved")
        kube.patch(gadget_kind, "g", {"metadata": {"labels": {"looked-at": "again"}}}, namespace)
        wait_for(
            lambda: "any more" in (ready() or {}).get("message", ""),
            timeout=30,
            message=lambda: f"the reconcile of the change to say the Parts are not served: {ready()}",
        )
        unserved = ready()

        crds.ensure_crd(kube, crd)
        wait_for(
            lambda: kube.get_or_none(part_kind, "g-part", namespace) is not None,
            timeout=60,
            message="the Part made again once served",
        )
        wait_for(lambda: (ready() or {}).get("status") == "True", timeout=30, message="Ready again")
    finally:
        controller.shutdown(5)
        cache.stop()
        kube.delete(kinds.CRD, crd["metadata"]["name"])

    assert unserved is not None
    assert unserved["status"] == "False", unserved
    assert f"does not serve Part ({PART_GROUP}/v1) any more" in unserved["message"], unserved


@pytest.mark.parametrize("plural", ["", "    plural = 'widgets'\n"], ids=["discovered", "declared-plural"])
def test_okt_run_of_a_reconciler_whose_crd_is_not_installed_says_how_to_install_it(
    control_plane: envtest.ControlPlane, namespace: str, tmp_path: pathlib.Path, plural: str
) -> None:
    # It said only "404 NotFound: the server does not serve Widget in ...", not what to do about it.
    group = f"absent{secrets.token_hex(4)}.okt.io"
    operator = tmp_path / "widget_operator.py"
    operator.write_text(
        f"import okt\nclass Widgets(okt.Reconciler):\n    api_version = '{group}/v1'\n    kind = 'Widget'\n{plural}"
    )

    done, errors = run_refused(control_plane, namespace, operator)

    assert errors == [
        f"Error: 404 NotFound: the server does not serve Widget in {group}/v1: "
        f"install its CRD first: okt gen crd {operator} | kubectl apply -f -"
    ], done.stderr


def _daemon_reconciler(group: str, version: str, lived: list[tuple[str, str]]) -> type[okt.Reconciler]:
    """A reconciler of the Widgets of ``group`` in ``version`` whose daemon records ``("started", name)`` when it
    starts and ``("stopped", name)`` after its loop, its cleanup."""

    def follow(self: okt.Reconciler, ctx: okt.DaemonContext) -> None:
        lived.append(("started", ctx.name))
        while not ctx.stop.wait(0.1):
            pass
        lived.append(("stopped", ctx.name))

    return types.new_class(
        "FollowedWidgets",
        (okt.Reconciler,),
        exec_body=lambda body: body.update(
            api_version=f"{group}/{version}", kind="Widget", plural="widgets", follow=okt.daemon(follow)
        ),
    )


def test_the_daemons_of_a_version_no_longer_served_are_stopped_and_started_again_once_served(
    kube: kube_client.Client, namespace: str
) -> None:
    """A version set to ``served: false`` keeps its objects, and no watch tells them deleted: their daemons ran on for
    as long as the version was not served, working from the objects as the cache held them."""
    group = f"daemons{secrets.token_hex(4)}.okt.io"
    crd = crds.schemaless_crd(group, "Widget", "widgets")
    stored = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [stored, {**stored, "name": "v2", "storage": False}]
    name = crd["metadata"]["name"]
    kind = crds.ensure_crd(kube, crd)
    lived: list[tuple[str, str]] = []

    def serve_v2(served: bool) -> None:
        live = kube.get(kinds.CRD, name)
        live["spec"]["versions"][1]["served"] = served
        kube.replace(kinds.CRD, live)

    try:
        _widget(kube, kind, namespace, "followed")
        with (
            structlog.testing.capture_logs() as logged,
            RunningOperator.start(kube, _daemon_reconciler(group, "v2", lived), namespaces=[namespace]) as running,
        ):
            wait_for(lambda: lived == [("started", "followed")], message=lambda: str(lived))
            serve_v2(False)
            wait_for(lambda: running.manager.readiness()[1] != "ok", message=lambda: str(running.manager.readiness()))
            wait_for(lambda: ("stopped", "followed") in lived, message=lambda: f"the daemon stopped: {lived}")
            serve_v2(True)
            wait_for(lambda: len(lived) == 3, message=lambda: f"the daemon started again: {lived}")
            running_again = running.manager.controllers[0].daemons.running()
    finally:
        kube.delete(kinds.CRD, name)

    assert lived[:3] == [("started", "followed"), ("stopped", "followed"), ("started", "followed")]
    assert running_again == [(namespace, "followed", "follow")]
    said = [entry["event"] for entry in logged if str(entry.get("event")).endswith(("to stop", "start again"))]
    assert said == [
        "the API server does not serve the kind any more: its daemons are asked to stop",
        "the API server serves the kind again: its daemons start again",
    ], said
