"""Server-side apply on a real API server: removed fields leave, foreign fields stay, drift is taken back.

okt's checksum decides whether a child is written; apply decides what the write does. Each test reconciles a Widget
whose one child, a Deployment, carries optional fields the reconciler's ``extras`` parameter switches on, and counts
the requests okt's client sent. "Someone else" writes through a second client as its own field manager.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds
from okt.resources import take_over
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.status import events
from okt.testing import condition, envtest
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "applied"
EXTRAS = ("label", "annotation", "map key", "env var", "list item")


class Toggled(okt.DeploymentResource):
    """A Deployment with one optional field of each shape; it sets no ``replicas`` (an autoscaler's to own)."""

    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  labels:
    app: {{ name }}
{%- if "label" in extras %}
    tier: backend
{%- endif %}
  annotations:
    test.okt.io/size: "{{ cr.spec.size }}"
{%- if "annotation" in extras %}
    test.okt.io/extra: "yes"
{%- endif %}
spec:
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      nodeSelector:
        disk: ssd
{%- if "map key" in extras %}
        zone: a
{%- endif %}
      containers:
        - name: main
          image: nginx:1.25
          env:
            - name: KEPT
              value: "1"
{%- if "env var" in extras %}
            - name: EXTRA
              value: "1"
{%- endif %}
{%- if "list item" in extras %}
        - name: sidecar
          image: busybox:1.36
{%- endif %}
"""


def reconciler(extras: Iterable[str] = EXTRAS, strategy: str = "apply") -> okt.Reconciler:
    class ToggledReconciler(shared.WidgetReconciler):
        owns = (Toggled,)
        params: ClassVar[Mapping[str, Any]] = {"extras": tuple(extras)}
        apply_strategy = strategy

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Toggled(ctx.cr, params=ctx.params)]

    return ToggledReconciler()


def has(live: Mapping[str, Any], extra: str) -> bool:
    pod = live["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    found = {
        "label": "tier" in live["metadata"].get("labels", {}),
        "annotation": "test.okt.io/extra" in live["metadata"].get("annotations", {}),
        "map key": "zone" in pod.get("nodeSelector", {}),
        "env var": any(e["name"] == "EXTRA" for e in containers["main"].get("env", [])),
        "list item": "sidecar" in containers,
    }
    return found[extra]


def deployment(kube: kube_client.Client, namespace: str) -> dict[str, Any]:
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, NAME)
    assert live is not None
    return live


def converge(
    rec: okt.Reconciler, kube: kube_client.Client, kind: kinds.Kind, namespace: str
) -> dict[tuple[str, str], int]:
    """One reconcile; the writes it sent (the status write aside), after checking it ended well."""
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(rec, kube, kind, namespace, NAME)
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return {k: n for k, n in shared.write_requests(kube, before).items() if k[1] != "widgets/status"}


def foreign_apply(other: kube_client.Client, namespace: str, manager: str, **fields: Any) -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "namespace": namespace}}
    for key, value in fields.items():
        body[key] = {**body.get(key, {}), **value}
    other.apply(body, other.resolve("apps/v1", "Deployment"), field_manager=manager)


@pytest.mark.parametrize("extra", EXTRAS)
def test_a_field_removed_from_the_template_leaves_with_one_write_and_comes_back_with_one(
    extra: str, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(reconciler(), kube, widget_kind, namespace) == {("apply", "deployments"): 1}
    assert has(deployment(kube, namespace), extra)
    without = reconciler([e for e in EXTRAS if e != extra])

    assert converge(without, kube, widget_kind, namespace) == {("apply", "deployments"): 1}
    assert not has(deployment(kube, namespace), extra)
    assert converge(without, kube, widget_kind, namespace) == {}

    assert converge(reconciler(), kube, widget_kind, namespace) == {("apply", "deployments"): 1}
    assert has(deployment(kube, namespace), extra)
    assert converge(reconciler(), kube, widget_kind, namespace) == {}


def test_fields_of_other_managers_survive_reconciles_and_a_spec_change(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    rec = reconciler()
    converge(rec, kube, widget_kind, namespace)
    foreign_apply(other_client, namespace, "autoscaler", spec={"replicas": 3})
    foreign_apply(
        other_client,
        namespace,
        "someone-else",
        metadata={"name": NAME, "namespace": namespace, "labels": {"team": "blue"}, "annotations": {"x.io/note": "hi"}},
    )

    writes = [converge(rec, kube, widget_kind, namespace) for _ in range(100)]
    assert writes == [{}] * 100
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    assert converge(rec, kube, widget_kind, namespace) == {("apply", "deployments"): 1}

    live = deployment(kube, namespace)
    assert live["metadata"]["annotations"]["test.okt.io/size"] == "2"
    assert live["spec"]["replicas"] == 3
    assert live["metadata"]["labels"]["team"] == "blue"
    assert live["metadata"]["annotations"]["x.io/note"] == "hi"


def test_an_out_of_band_edit_of_an_okt_field_is_taken_back_with_one_write(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    rec = reconciler()
    converge(rec, kube, widget_kind, namespace)
    containers = [{"name": "main", "image": "nginx:evil"}]
    other_client.patch(
        other_client.resolve("apps/v1", "Deployment"),
        NAME,
        {"spec": {"template": {"spec": {"containers": containers}}}},
        namespace,
        patch_type="strategic",
    )

    assert converge(rec, kube, widget_kind, namespace) == {("apply", "deployments"): 1}
    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert main["image"] == "nginx:1.25"
    assert converge(rec, kube, widget_kind, namespace) == {}


def test_a_child_written_by_the_merge_path_loses_a_dropped_field_on_the_first_apply(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(reconciler(strategy="merge"), kube, widget_kind, namespace) == {("create", "deployments"): 1}
    shared.settle_deployment(kube, namespace, NAME)  # the deployment controller's writes would race the take-over
    assert converge(reconciler(), kube, widget_kind, namespace) == {}  # switching alone writes nothing
    without = reconciler([e for e in EXTRAS if e != "label"])

    writes = converge(without, kube, widget_kind, namespace)

    # Take over, then apply. The deployment controller may still write the Deployment meanwhile: the take-over tests
    # okt's own managedFields entries, which those writes leave alone.
    assert writes == {("apply", "deployments"): 1, ("patch", "deployments"): 1}
    live = deployment(kube, namespace)
    assert not has(live, "label")
    assert all(has(live, e) for e in EXTRAS if e != "label")
    assert converge(without, kube, widget_kind, namespace) == {}
    managers = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("okt", "Update") not in managers
    assert ("okt", "Apply") in managers


class Nightly(okt.MutableResource):
    """A CronJob whose second env var refers to the first: their order is meaningful. No controller writes it."""

    api_version = "batch/v1beta1"
    kind = "CronJob"
    template = """
apiVersion: batch/v1beta1
kind: CronJob
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: busybox:1.36
              env:
                - name: HOST
                  value: db
                - name: URL
                  value: "{{ url }}"
"""


@pytest.mark.parametrize("url", ["tcp://$(HOST):5432", "tcp://$(HOST):5432/?ssl=1&timeout=5"])
@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_list_items_put_in_another_order_are_put_back_in_the_templates_order(
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    strategy: str,
    url: str,
) -> None:
    """With ``&`` in a value (which the API server's JSON patch test never finds equal to okt's, Go escaping it), the
    patch that puts the items back is guarded by the resourceVersion instead."""

    class NightlyReconciler(shared.WidgetReconciler):
        owns = (Nightly,)
        apply_strategy = strategy
        params: ClassVar[Mapping[str, Any]] = {"url": url}

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Nightly(ctx.cr, params=ctx.params)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(NightlyReconciler(), kube, widget_kind, namespace)
    env = "/spec/jobTemplate/spec/template/spec/containers/0/env"
    moved = [{"op": "move", "from": f"{env}/1", "path": f"{env}/0"}]
    cron_jobs = other_client.resolve("batch/v1beta1", "CronJob")
    other_client.patch(cron_jobs, NAME, moved, namespace, patch_type="json", field_manager="editor")

    assert converge(NightlyReconciler(), kube, widget_kind, namespace)

    live = shared.get_child(kube, "batch/v1beta1", "CronJob", namespace, NAME)
    assert live is not None
    main = live["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in main["env"]] == ["HOST", "URL"]
    assert converge(NightlyReconciler(), kube, widget_kind, namespace) == {}


class RacedReconciler(shared.WidgetReconciler):
    """Another controller creates the ConfigMap after okt read it as missing and before okt writes it."""

    def __init__(self, other: kube_client.Client, owner: Mapping[str, Any]) -> None:
        self.other = other
        self.owner = owner

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater:
            config = next(res for res in ctx.registry if res.kind == "ConfigMap")
            assert config.live is None, "ObjectsGetter saw no ConfigMap"
            meta = self.owner["metadata"]
            reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": config.name,
                    "namespace": config.namespace,
                    "ownerReferences": [{**reference, "controller": True}],
                },
                "data": {"theirs": "yes"},
            }
            self.other.create(body, kinds.CONFIG_MAP)
        super().enter_in_state(state, ctx)


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_child_another_controller_creates_between_read_and_write_is_an_error_naming_that_controller(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str
) -> None:
    owner = other_client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-owner", "namespace": namespace}},
        kinds.CONFIG_MAP,
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    reconciler = RacedReconciler(other_client, owner)
    reconciler.apply_strategy = strategy
    recorder = events.EventRecorder(kube, "widget")

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME, recorder)

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "OwnedByAnother")
    assert f"ConfigMap/{namespace}/{NAME}-config" in ready["message"]
    assert "controlled by ConfigMap/other-owner" in ready["message"]
    theirs = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert theirs is not None and theirs["data"] == {"theirs": "yes"}
    warnings = kube.list(kube.resolve("v1", "Event"), namespace)[0]
    assert any(e["type"] == "Warning" and "controlled by ConfigMap/other-owner" in e["message"] for e in warnings)


class AdoptedReconciler(shared.WidgetReconciler):
    """Another controller puts its controller reference in the place of okt's on okt's ConfigMap after okt read it
    (and decided to update it) and before okt writes it."""

    def __init__(self, other: kube_client.Client, owner: Mapping[str, Any]) -> None:
        self.other = other
        self.owner = owner
        self.adopting = False

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and self.adopting:
            config = next(res for res in ctx.registry if res.kind == "ConfigMap")
            assert config.live is not None and config.live["metadata"]["ownerReferences"][0]["uid"] == ctx.cr.uid
            meta = self.owner["metadata"]
            reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}
            adopted = {"metadata": {"ownerReferences": [{**reference, "controller": True}]}}
            self.other.patch(kinds.CONFIG_MAP, config.name, adopted, config.namespace, field_manager="adopter")
        super().enter_in_state(state, ctx)


def test_a_child_another_controller_adopts_between_read_and_update_is_an_error_naming_that_controller(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """okt's apply states its own controller reference, and the server refuses a second one (422): said as what it
    is, as on the create path, not as the server's validation message."""
    owner = other_client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-owner", "namespace": namespace}},
        kinds.CONFIG_MAP,
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    reconciler = AdoptedReconciler(other_client, owner)
    assert shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME).outcome == okt.Outcome.done()
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)  # okt has an update to write
    reconciler.adopting = True

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert isinstance(run.results.first_error, okt.OwnedByAnother), run.results.summary()
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "OwnedByAnother")
    assert f"ConfigMap/{namespace}/{NAME}-config" in ready["message"]
    assert "controlled by ConfigMap/other-owner" in ready["message"]
    theirs = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert theirs is not None
    assert [r["uid"] for r in theirs["metadata"]["ownerReferences"]] == [owner["metadata"]["uid"]]
    assert theirs["data"]["size"] == "1"  # nothing of okt's update landed


def test_text_beyond_the_bmp_reaches_children_and_conditions_through_apply(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """JSON escapes an emoji as a surrogate pair, which the server's YAML decoder of an apply refuses (400)."""
    shared.make_widget(kube, widget_kind, namespace, "emoji", size=1, greeting="hi \U0001f600")
    shared.make_widget(kube, widget_kind, namespace, "bad-emoji", size="\U0001f600")

    good = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "emoji")
    bad = shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, "bad-emoji")

    assert good.outcome == okt.Outcome.done(), good.results.summary()
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "emoji-config")["data"]["greeting"] == "hi \U0001f600"
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "bad-emoji"), "Ready")
    assert ready is not None and ready["reason"] == "InvalidSpec"
    assert "\U0001f600" in ready["message"]
    assert bad.results.counts()[okt.Operation.STATUS_UPDATE_ERROR] == 0


class Served(okt.DeploymentResource):
    """A Deployment whose container has a named port and an env var: items of lists keyed by ``containerPort`` and
    by ``name``."""

    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      containers:
        - name: main
          image: nginx:1.25
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: FOO
              value: "1"
"""


class ServedReconciler(shared.WidgetReconciler):
    owns = (Served,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Served(ctx.cr)]


REKEYED = {
    "a named port's number": ("ports/0/containerPort", 9090),
    "an env var's name": ("env/0/name", "BAR"),
}


@pytest.mark.parametrize("edit", REKEYED)
def test_an_item_of_an_okt_list_whose_key_another_manager_edited_comes_back_to_the_template(
    edit: str, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(ServedReconciler(), kube, widget_kind, namespace)
    field, value = REKEYED[edit]
    edited = [{"op": "replace", "path": f"/spec/template/spec/containers/0/{field}", "value": value}]
    deployments = other_client.resolve("apps/v1", "Deployment")
    other_client.patch(deployments, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")

    converge(ServedReconciler(), kube, widget_kind, namespace)

    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and ready["status"] == "True"
    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert [(p["name"], p["containerPort"]) for p in main["ports"]] == [("http", 8080)]
    assert [(e["name"], e["value"]) for e in main["env"]] == [("FOO", "1")]
    assert converge(ServedReconciler(), kube, widget_kind, namespace) == {}


ENV_EDITS = {
    "renamed": ([("name", "BAR")], {"FOO": "1", "THEIRS": "x"}),
    "renamed and given another value": ([("name", "BAR"), ("value", "2")], {"FOO": "1", "BAR": "2", "THEIRS": "x"}),
}


@pytest.mark.parametrize("edit", ENV_EDITS)
def test_okts_env_var_renamed_beside_an_injected_one_comes_back_and_the_injected_one_stays(
    edit: str, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Only the env var made of okt's by the rename goes (it holds okt's value): the one another manager injected
    stays. A var renamed and given another value looks like none of okt's: it stays too, okt's own back beside it, as
    server-side apply keeps another manager's item."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(ServedReconciler(), kube, widget_kind, namespace)
    foreign_apply(other_client, namespace, "injector", spec=THEIRS)
    env = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]["env"]
    ours = next(i for i, e in enumerate(env) if e["name"] == "FOO")
    changes, expected = ENV_EDITS[edit]
    path = f"/spec/template/spec/containers/0/env/{ours}"
    edited = [{"op": "replace", "path": f"{path}/{field}", "value": value} for field, value in changes]
    deployments = other_client.resolve("apps/v1", "Deployment")
    other_client.patch(deployments, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")

    converge(ServedReconciler(), kube, widget_kind, namespace)

    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e["value"] for e in main["env"]} == expected
    assert [(p["name"], p["containerPort"]) for p in main["ports"]] == [("http", 8080)]
    assert converge(ServedReconciler(), kube, widget_kind, namespace) == {}


class OnePort(okt.ServiceResource):
    """A Service of one port, named or not: the API server refuses a Service without ports, and two ports of one
    name or without names."""

    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    app: {{ name }}
  ports:
    - port: 11211
      protocol: TCP
{%- if named %}
      name: memcached
{%- endif %}
"""


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_the_only_port_of_a_service_renumbered_by_another_manager_comes_back_to_the_template(
    named: bool, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The apply that brings okt's port back beside the renumbered one is refused (two ports of one name, or two
    without a name), and removing the renumbered port alone would leave the Service without ports, which the API
    server refuses too: the one patch that removes it puts okt's port in its place."""

    class OnePortReconciler(shared.WidgetReconciler):
        owns = (OnePort,)
        params: ClassVar[Mapping[str, Any]] = {"named": named}

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [OnePort(ctx.cr, params=ctx.params)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(OnePortReconciler(), kube, widget_kind, namespace)
    renumbered = [{"op": "replace", "path": "/spec/ports/0/port", "value": 11212}]
    services = other_client.resolve("v1", "Service")
    other_client.patch(services, NAME, renumbered, namespace, patch_type="json", field_manager="kubectl-patch")

    repair = converge(OnePortReconciler(), kube, widget_kind, namespace)
    # More than the one write per child the resources page bounds the others to, as it says: the JSON patch that
    # removes the renumbered port, the apply again, the take-over of what that patch recorded.
    assert repair.get(("patch", "services"), 0) >= 1, repair
    assert repair.get(("apply", "services"), 0) >= 2, repair

    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert [(p.get("name"), p["port"]) for p in live["spec"]["ports"]] == [("memcached" if named else None, 11211)]
    assert converge(OnePortReconciler(), kube, widget_kind, namespace) == {}


class Overtaken(kube_client.Client):
    """okt's client, with "the deployment controller" writing the Deployment's status between okt's read and each
    JSON patch okt sends it: the controller rewrites the status many times in a row while a changed pod template rolls
    out (the edit's, then okt's repair), so any of okt's patches may follow one of its writes."""

    other: kube_client.Client
    writes = 0
    as_okt = False
    """Write another annotation each time as field manager ``okt`` instead (another process of the operator, still
    on the merge path): the fields okt's own managedFields entry holds change before each patch."""

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        if patch_type == "json" and kind.kind == "Deployment" and subresource is None:
            self.writes += 1
            if self.as_okt:
                touched = {"metadata": {"annotations": {f"test.okt.io/touched-{self.writes}": "yes"}}}
                self.other.patch(kind, name, touched, namespace, field_manager="okt")
            else:
                # A condition of its own, another at each write: the real deployment controller keeps it and has
                # nothing to write back (an observedGeneration of ours, it wrote back at once, and its entry moving
                # past okt's in managedFields failed okt's test of the indices it read).
                mark = {"type": "TestRollout", "status": "True", "reason": "Written", "message": str(self.writes)}
                status = {"status": {"conditions": [mark]}}
                self.other.patch(
                    kind, name, status, namespace, patch_type="strategic", subresource="status", field_manager="rollout"
                )
        return super().patch(
            kind, name, patch, namespace, patch_type=patch_type, subresource=subresource, field_manager=field_manager
        )


@pytest.mark.parametrize("edit", REKEYED)
def test_an_item_another_manager_rekeyed_is_removed_though_the_workload_controller_writes_the_status_meanwhile(
    edit: str,
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """Removing the other manager's item depends on that list, not on the Deployment's status: the controller's
    writes in between do not refuse it."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(ServedReconciler(), kube, widget_kind, namespace)
    field, value = REKEYED[edit]
    edited = [{"op": "replace", "path": f"/spec/template/spec/containers/0/{field}", "value": value}]
    deployments = other_client.resolve("apps/v1", "Deployment")
    other_client.patch(deployments, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")
    raced = Overtaken.from_kubeconfig(control_plane.kubeconfig)
    assert isinstance(raced, Overtaken)
    raced.other = other_client
    try:
        run = shared.reconcile_widget(ServedReconciler(), raced, widget_kind, namespace, NAME)
    finally:
        raced.close()

    assert run.outcome == okt.Outcome.done(), run.results.summary()
    assert raced.writes >= 1  # the removal did follow a write of the controller
    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert [(p["name"], p["containerPort"]) for p in main["ports"]] == [("http", 8080)]
    assert [(e["name"], e["value"]) for e in main["env"]] == [("FOO", "1")]


class Ordered(okt.DeploymentResource):
    """A Deployment whose second env var refers to the first: their order is meaningful."""

    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
    spec:
      containers:
        - name: main
          image: nginx:1.25
          env:
            - name: HOST
              value: db
            - name: URL
              value: "tcp://$(HOST):5432"
"""


def test_env_vars_put_in_another_order_are_put_back_though_the_workload_controller_writes_the_status_meanwhile(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """Putting the items back in order depends on that list, not on the Deployment's status, which the deployment
    controller rewrites while the reordered pod template rolls out."""

    class OrderedReconciler(shared.WidgetReconciler):
        owns = (Ordered,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Ordered(ctx.cr)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(OrderedReconciler(), kube, widget_kind, namespace)
    env = "/spec/template/spec/containers/0/env"
    moved = [{"op": "move", "from": f"{env}/1", "path": f"{env}/0"}]
    other_client.patch(
        other_client.resolve("apps/v1", "Deployment"), NAME, moved, namespace, patch_type="json", field_manager="editor"
    )
    raced = Overtaken.from_kubeconfig(control_plane.kubeconfig)
    assert isinstance(raced, Overtaken)
    raced.other = other_client
    try:
        run = shared.reconcile_widget(OrderedReconciler(), raced, widget_kind, namespace, NAME)
    finally:
        raced.close()

    assert run.outcome == okt.Outcome.done(), run.results.summary()
    assert raced.writes >= 1  # the patch did follow a write of the controller
    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in main["env"]] == ["HOST", "URL"]
    assert converge(OrderedReconciler(), kube, widget_kind, namespace) == {}


THEIRS = {"template": {"spec": {"containers": [{"name": "main", "env": [{"name": "THEIRS", "value": "x"}]}]}}}


def test_env_vars_put_in_another_order_beside_another_managers_are_put_back_and_the_other_one_stays_in_place(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The env list merges by name: okt's vars, found by name, go back to the template's order in the places they
    hold; the injected one is left where it is."""

    class OrderedReconciler(shared.WidgetReconciler):
        owns = (Ordered,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Ordered(ctx.cr)]

    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(OrderedReconciler(), kube, widget_kind, namespace)
    foreign_apply(other_client, namespace, "injector", spec=THEIRS)
    env = "/spec/template/spec/containers/0/env"
    injected = [e["name"] for e in deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]["env"]]
    assert injected == ["HOST", "URL", "THEIRS"]
    moved = [
        {"op": "move", "from": f"{env}/2", "path": f"{env}/0"},
        {"op": "move", "from": f"{env}/2", "path": f"{env}/1"},
    ]
    other_client.patch(
        other_client.resolve("apps/v1", "Deployment"), NAME, moved, namespace, patch_type="json", field_manager="editor"
    )
    edited = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in edited] == ["THEIRS", "URL", "HOST"]

    converge(OrderedReconciler(), kube, widget_kind, namespace)

    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in main["env"]] == ["THEIRS", "HOST", "URL"]
    assert converge(OrderedReconciler(), kube, widget_kind, namespace) == {}


@pytest.mark.parametrize("change", ["an item added to the template", "a value of okt's item edited"])
def test_an_item_another_manager_applies_beside_okts_items_stays(
    change: str, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    rec = reconciler([e for e in EXTRAS if e != "env var"])
    converge(rec, kube, widget_kind, namespace)
    foreign_apply(other_client, namespace, "injector", spec=THEIRS)
    if change == "an item added to the template":
        rec = reconciler()
    else:
        edited = [{"op": "replace", "path": "/spec/template/spec/containers/0/env/0/value", "value": "2"}]
        deployments = other_client.resolve("apps/v1", "Deployment")
        other_client.patch(deployments, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")

    assert converge(rec, kube, widget_kind, namespace) == {("apply", "deployments"): 1}

    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in main["env"]}
    expected = {"KEPT": "1", "THEIRS": "x"} | ({"EXTRA": "1"} if change == "an item added to the template" else {})
    assert env == expected


class Refused(Toggled):
    """Toggled with a value the API server refuses (a negative replica count): every apply is Invalid."""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["spec"]["replicas"] = -1


def test_an_apply_refused_for_another_reason_than_a_duplicate_key_removes_no_item_of_another_manager(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Only the duplicate an edited key makes (two ports of one name) is healed by removing the other writer's item:
    an apply refused for a value of okt's own template says so, and touches nothing of anyone else's."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    converge(reconciler([e for e in EXTRAS if e != "env var"]), kube, widget_kind, namespace)
    foreign_apply(other_client, namespace, "injector", spec=THEIRS)

    class RefusedReconciler(shared.WidgetReconciler):
        owns = (Refused,)
        params: ClassVar[Mapping[str, Any]] = {"extras": EXTRAS}

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Refused(ctx.cr, params=ctx.params)]

    before = kube.stats.snapshot()
    run = shared.reconcile_widget(RefusedReconciler(), kube, widget_kind, namespace, NAME)

    assert isinstance(run.results.first_error, okt.InvalidChild), run.results.summary()
    assert isinstance(run.results.first_error.__cause__, okt.Invalid)
    assert "replicas" in str(run.results.first_error)
    assert ("patch", "deployments") not in shared.write_requests(kube, before)  # no removal even tried
    main = deployment(kube, namespace)["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e["value"] for e in main["env"]} == {"KEPT": "1", "THEIRS": "x"}


def test_a_take_over_is_made_though_the_workload_controller_writes_the_status_before_each_patch(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """The take-over tests okt's own managedFields entries, which a busy Deployment's status writes leave alone: it
    lands at its first attempt, and the field the template dropped leaves in the same reconcile."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(reconciler(strategy="merge"), kube, widget_kind, namespace) == {("create", "deployments"): 1}
    shared.settle_deployment(kube, namespace, NAME)
    without = reconciler([e for e in EXTRAS if e != "label"])
    raced = Overtaken.from_kubeconfig(control_plane.kubeconfig)
    assert isinstance(raced, Overtaken)
    raced.other = other_client
    try:
        run = shared.reconcile_widget(without, raced, widget_kind, namespace, NAME)
    finally:
        raced.close()

    assert run.outcome == okt.Outcome.done(), run.results.summary()
    assert raced.writes == 1  # the take-over, at its first attempt
    live = deployment(kube, namespace)
    assert not has(live, "label")
    assert all(has(live, e) for e in EXTRAS if e != "label")
    managers = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("okt", "Update") not in managers


def test_a_take_over_another_writer_as_okt_outran_at_each_attempt_is_made_again_by_the_retry(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """A write as manager ``okt`` before each of okt's take-overs (its entries changed since okt read them) exhausts
    them: the reconcile fails before its apply and is retried, and the retry takes over and removes the field the
    template dropped, with no write beyond those."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(reconciler(strategy="merge"), kube, widget_kind, namespace) == {("create", "deployments"): 1}
    shared.settle_deployment(kube, namespace, NAME)
    without = reconciler([e for e in EXTRAS if e != "label"])
    raced = Overtaken.from_kubeconfig(control_plane.kubeconfig)
    assert isinstance(raced, Overtaken)
    raced.other, raced.as_okt = other_client, True
    try:
        failed = shared.reconcile_widget(without, raced, widget_kind, namespace, NAME)
    finally:
        raced.close()
    assert failed.outcome.kind is okt.OutcomeKind.RETRY, failed.results.summary()
    assert raced.writes == take_over.TAKE_OVER_ATTEMPTS  # each take-over; no apply, so no checksum to remove

    writes = converge(without, kube, widget_kind, namespace)

    live = deployment(kube, namespace)
    assert not has(live, "label")
    assert all(has(live, e) for e in EXTRAS if e != "label")
    assert not [key for key in live["metadata"]["annotations"] if key.startswith("test.okt.io/touched-")]
    managers = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("okt", "Update") not in managers
    # Take over, then apply, as for any first apply over the merge path's fields; the Widget's writes are its status
    # report's.
    assert {k: n for k, n in writes.items() if k[1] == "deployments"} == {
        ("apply", "deployments"): 1,
        ("patch", "deployments"): 1,
    }
    assert converge(without, kube, widget_kind, namespace) == {}


class AnswerLost(kube_client.Client):
    """okt's client, whose JSON patches of a Deployment land but come back without an answer (a timeout, a cut
    connection): okt cannot know they landed."""

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        answer = super().patch(
            kind, name, patch, namespace, patch_type=patch_type, subresource=subresource, field_manager=field_manager
        )
        if patch_type == "json" and kind.kind == "Deployment" and subresource is None:
            raise errors.ApiError.from_status(0, "Unavailable", "read timed out", method="PATCH", url=name)
        return answer


def take_over_refused(verb: str, resource: str) -> str | None:
    """A write fence that lets the apply through and refuses what follows it: leadership lost in between."""
    return "leadership lost" if (verb, resource) == ("patch", "deployments") else None


@pytest.mark.parametrize("failure", ["leadership lost", "answer lost"])
def test_a_take_over_not_known_to_have_landed_is_made_by_the_next_reconcile(
    failure: str,
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """The take-over of a child the merge path wrote fails without okt knowing whether it landed (the write fence
    refuses it, leadership lost; its answer never comes): the next reconcile, on any replica, takes over and removes
    the field the template dropped."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(reconciler(strategy="merge"), kube, widget_kind, namespace) == {("create", "deployments"): 1}
    shared.settle_deployment(kube, namespace, NAME)
    without = reconciler([e for e in EXTRAS if e != "label"])
    if failure == "leadership lost":
        with fence_mod.fenced(take_over_refused):
            failed = shared.reconcile_widget(without, kube, widget_kind, namespace, NAME)
    else:
        lossy = AnswerLost.from_kubeconfig(control_plane.kubeconfig)
        try:
            failed = shared.reconcile_widget(without, lossy, widget_kind, namespace, NAME)
        finally:
            lossy.close()
    assert failed.outcome.kind is okt.OutcomeKind.RETRY, failed.results.summary()

    converge(without, kube, widget_kind, namespace)  # the next leader's reconcile, with all it knows from the object

    live = deployment(kube, namespace)
    assert not has(live, "label")
    assert all(has(live, e) for e in EXTRAS if e != "label")
    managers = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("okt", "Update") not in managers
    assert converge(without, kube, widget_kind, namespace) == {}


EARLIER_PROCESS = """
import sys

import okt
from okt.kube import client as kube_client
from tests.integration.resources import test_server_side_apply as applied

kubeconfig, api_version, namespace = sys.argv[1:]
kube = kube_client.Client.from_kubeconfig(kubeconfig)
run = applied.shared.reconcile_widget(
    applied.reconciler(), kube, kube.resolve(api_version, "Widget"), namespace, applied.NAME
)
sys.exit(0 if run.outcome == okt.Outcome.done() else run.results.summary())
"""


def test_an_update_after_a_restart_reads_nothing_from_the_api_server(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """A child an earlier process applied, updated by a new process whose cache holds it: the cache tells that okt
    has nothing to take over, and the update is its apply alone, with no read of the child."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    argv = [sys.executable, "-c", EARLIER_PROCESS, str(control_plane.kubeconfig), widget_kind.api_version, namespace]
    earlier = subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert earlier.returncode == 0, earlier.stderr
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(type(reconciler()), kube, cache, workers=1)
    controller.watch()
    try:
        assert cache.wait_for_sync(15)
        before = kube.stats.snapshot()
        outcome = controller.process((namespace, NAME))
        sent = kube.stats.delta(before)
    finally:
        cache.stop()

    assert outcome == okt.Outcome.done()
    assert deployment(kube, namespace)["metadata"]["annotations"]["test.okt.io/size"] == "2"
    assert {verb: n for (verb, plural), n in sent.items() if plural == "deployments"} == {"apply": 1}


class Exported(okt.ServiceResource):
    """A Service of one port, leaving its protocol to the server, to which a metrics exporter adds a port of its own."""

    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  selector:
    app: {{ name }}
  ports:
    - name: memcached
      port: 11211
      targetPort: 11211
"""


def exported_reconciler(strategy: str = "apply") -> okt.Reconciler:
    class ExportedReconciler(shared.WidgetReconciler):
        owns = (Exported,)
        apply_strategy = strategy

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [Exported(ctx.cr)]

    return ExportedReconciler()


METRICS_PORT = {"name": "metrics", "port": 9150, "protocol": "TCP", "targetPort": 9150}

CONVERGING_PROCESS = """
import sys

import okt
from okt.kube import client as kube_client
from tests.integration.resources import test_server_side_apply as applied

kubeconfig, api_version, namespace = sys.argv[1:]
kube = kube_client.Client.from_kubeconfig(kubeconfig)
for _ in range(3):
    before = kube.stats.snapshot()
    run = applied.shared.reconcile_widget(
        applied.exported_reconciler(), kube, kube.resolve(api_version, "Widget"), namespace, applied.NAME
    )
    if run.outcome != okt.Outcome.done():
        sys.exit(run.results.summary())
    if not applied.shared.write_requests(kube, before):
        sys.exit(0)
sys.exit("the Service was written by each of 3 reconciles")
"""


def run_converging_process(control_plane: envtest.ControlPlane, kind: kinds.Kind, namespace: str) -> None:
    """An operator process reconciling the Widget until a reconcile writes nothing, then gone (its memory with it)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    argv = [sys.executable, "-c", CONVERGING_PROCESS, str(control_plane.kubeconfig), kind.api_version, namespace]
    done = subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("how", ["adopted holding it", "added by another manager"])
def test_a_service_holding_another_managers_port_is_not_written_by_the_next_process(
    how: str,
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    """Server-side apply merges a Service's ports by port and protocol: a port okt's template does not hold is
    another manager's, which okt's apply keeps, so it is no drift. A process started over the converged Service writes
    nothing; an edit of okt's own port is still repaired, the other port left where it is."""
    services = other_client.resolve("v1", "Service")
    if how == "adopted holding it":
        ports = [METRICS_PORT, {"name": "memcached", "port": 11211, "protocol": "TCP", "targetPort": 11211}]
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "namespace": namespace}}
        made = {**body, "spec": {"selector": {"app": NAME}, "ports": ports}}
        other_client.apply(made, services, field_manager="deployer")  # before the operator ran: adopted
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    run_converging_process(control_plane, widget_kind, namespace)
    if how == "added by another manager":
        theirs = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "namespace": namespace}}
        other_client.apply({**theirs, "spec": {"ports": [METRICS_PORT]}}, services, field_manager="exporter")
        run_converging_process(control_plane, widget_kind, namespace)

    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(type(exported_reconciler()), kube, cache, workers=1)
    controller.watch()
    try:
        assert cache.wait_for_sync(15)
        before = kube.stats.snapshot()
        outcome = controller.process((namespace, NAME))
        sent = shared.write_requests(kube, before)
    finally:
        cache.stop()

    assert outcome == okt.Outcome.done()
    assert {key: n for key, n in sent.items() if key[1] != "widgets/status"} == {}
    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert {p["name"]: p["port"] for p in live["spec"]["ports"]} == {"memcached": 11211, "metrics": 9150}

    ours = next(i for i, p in enumerate(live["spec"]["ports"]) if p["name"] == "memcached")
    edited = [{"op": "replace", "path": f"/spec/ports/{ours}/targetPort", "value": 8080}]
    other_client.patch(services, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")
    assert converge(exported_reconciler(), kube, widget_kind, namespace) == {("apply", "services"): 1}
    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert {p["name"]: p["targetPort"] for p in live["spec"]["ports"]} == {"memcached": 11211, "metrics": 9150}
    assert converge(exported_reconciler(), kube, widget_kind, namespace) == {}


@pytest.mark.parametrize("by", ["the next reconcile", "a restarted operator", "merge patches"])
def test_okts_port_made_udp_by_another_manager_is_put_back_by_the_next_reconcile(
    by: str, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The template leaves the port's protocol to the server, TCP: the port made UDP holds every field the template
    sets at the same index, but is another port (its key edited), and okt's own (11211, TCP) is gone. It is drift:
    under apply repaired as any item whose key another manager edited (:func:`okt.resources.list_items.drop_rekeyed`),
    under merge patches by one patch of the whole list. The protocol the server filled in is none, before and after."""
    rec = exported_reconciler("merge" if by == "merge patches" else "apply")
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert len(converge(rec, kube, widget_kind, namespace)) == 1  # the create
    assert converge(rec, kube, widget_kind, namespace) == {}
    services = other_client.resolve("v1", "Service")
    udp = [{"op": "replace", "path": "/spec/ports/0/protocol", "value": "UDP"}]
    other_client.patch(services, NAME, udp, namespace, patch_type="json", field_manager="kubectl-patch")

    if by == "a restarted operator":
        cache = cache_mod.Cache(kube, [namespace])
        controller = controller_mod.Controller(type(rec), kube, cache, workers=1)
        controller.watch()
        try:
            assert cache.wait_for_sync(15)
            before = kube.stats.snapshot()
            assert controller.process((namespace, NAME)) == okt.Outcome.done()
            sent = shared.write_requests(kube, before)
        finally:
            cache.stop()
        writes = {key: n for key, n in sent.items() if key[1] != "widgets/status"}
    else:
        writes = converge(rec, kube, widget_kind, namespace)

    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert [(p["name"], p["port"], p["protocol"]) for p in live["spec"]["ports"]] == [("memcached", 11211, "TCP")]
    if by == "merge patches":
        assert writes == {("patch", "services"): 1}
    else:
        assert ("apply", "services") in writes
    assert converge(rec, kube, widget_kind, namespace) == {}


OKTS_PORT_EDITS = {
    "renumbered": [("port", 11212)],
    "made UDP": [("protocol", "UDP")],
    "renumbered and retargeted": [("port", 11212), ("targetPort", 8080)],
}


@pytest.mark.parametrize("edit", OKTS_PORT_EDITS)
def test_okts_port_edited_beside_another_managers_port_is_put_back_and_the_other_port_stays(
    edit: str, kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Another manager's port (an exporter's, applied with its own field manager) is not okt's to remove when someone
    edits the key of okt's port: the repair removes only the port made of okt's (it holds every other field okt's
    sets, or, edited beyond that, the name the API server refuses twice) and leaves the exporter's where it is."""
    rec = exported_reconciler()
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert len(converge(rec, kube, widget_kind, namespace)) == 1  # the create
    services = other_client.resolve("v1", "Service")
    theirs = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "namespace": namespace}}
    other_client.apply({**theirs, "spec": {"ports": [METRICS_PORT]}}, services, field_manager="exporter")
    assert converge(rec, kube, widget_kind, namespace) == {}
    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    ours = next(i for i, p in enumerate(live["spec"]["ports"]) if p["name"] == "memcached")
    edited = [{"op": "replace", "path": f"/spec/ports/{ours}/{f}", "value": v} for f, v in OKTS_PORT_EDITS[edit]]
    other_client.patch(services, NAME, edited, namespace, patch_type="json", field_manager="kubectl-edit")

    writes = converge(rec, kube, widget_kind, namespace)

    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    ports = {p["name"]: (p["port"], p["protocol"], p["targetPort"]) for p in live["spec"]["ports"]}
    assert ports == {"memcached": (11211, "TCP", 11211), "metrics": (9150, "TCP", 9150)}
    # The apply refused (two ports named memcached), the patch that removes the edited port and puts okt's back, the
    # apply again, and the take-over of what that patch wrote.
    assert writes == {("apply", "services"): 2, ("patch", "services"): 2}
    assert converge(rec, kube, widget_kind, namespace) == {}


def test_another_managers_port_is_drift_for_a_service_written_by_merge_patches_and_goes_with_one_write(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """A merge patch replaces a list whole: okt's next write takes another manager's port away, so the drift check says
    so at once (taken for no drift, as under server-side apply, the port stayed until the template changed and then
    went without a word)."""
    merged = exported_reconciler("merge")
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(merged, kube, widget_kind, namespace) == {("create", "services"): 1}
    services = other_client.resolve("v1", "Service")
    theirs = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "namespace": namespace}}
    other_client.apply({**theirs, "spec": {"ports": [METRICS_PORT]}}, services, field_manager="exporter")

    assert converge(merged, kube, widget_kind, namespace) == {("patch", "services"): 1}
    live = shared.get_child(kube, "v1", "Service", namespace, NAME)
    assert live is not None
    assert [p["name"] for p in live["spec"]["ports"]] == ["memcached"]
    assert converge(merged, kube, widget_kind, namespace) == {}
