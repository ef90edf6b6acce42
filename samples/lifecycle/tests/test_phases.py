"""The WebApp lifecycle without a cluster: its table, its refusals, its diagram, its generated CRD."""

from __future__ import annotations

import pathlib
import re
from typing import Any, cast

import pytest
import structlog
import yaml

import okt
from okt import errors
from okt.codegen import crd
from okt.kube import client as kube_client
from okt.kube import kinds, objects
from okt.lifecycle import IllegalTransition, UnknownPhase
from okt.reconciler import context as context_mod
from okt.status import events
from okt.testing import FakeClient
from samples.lifecycle.lifecycle_operator import LIFECYCLE, Phase, WebAppReconciler, WebAppSpec
from samples.lifecycle.lifecycle_operator.resources import JobState, JobWebApp, job_version

SAMPLE = pathlib.Path(__file__).resolve().parents[1]
MERMAID_BLOCK = re.compile(r"```mermaid\n(.*?)\n```", re.DOTALL)
LEGAL = {(edge.source, edge.dest) for edge in LIFECYCLE.transitions}
ILLEGAL = [(s, d) for s in Phase for d in Phase if (s, d) not in LEGAL]


def context(phase: str | None, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> Any:
    raw: dict[str, Any] = {
        "apiVersion": "lifecycle.example.com/v1alpha1",
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "ns", "uid": "u", "generation": 1, "annotations": {}},
        "spec": spec or {"version": "1"},
        "status": status or {},
    }
    if phase is not None:
        raw["metadata"]["annotations"]["okt.io/phase"] = phase
    cr = objects.CustomResource(raw).with_spec(WebAppSpec.model_validate(raw["spec"]))
    return context_mod.Context(
        settings=WebAppReconciler().settings(),
        client=cast(kube_client.Client, None),
        reader=cast(context_mod.Reader, None),
        kind=kinds.Kind("lifecycle.example.com/v1alpha1", "WebApp", "webapps"),
        cr=cr,
        exists=True,
        logger=structlog.get_logger("test"),
        recorder=None,
    )


@pytest.mark.parametrize("document", ["README.md", "../../docs/concepts/lifecycle.md"])
def test_the_documented_diagram_is_the_one_generated_from_the_machine(document: str) -> None:
    text = (SAMPLE / document).read_text()
    assert LIFECYCLE.mermaid() in MERMAID_BLOCK.findall(text)


def test_the_machine_walks_the_phases_of_the_issue() -> None:
    assert LIFECYCLE.initial is Phase.Pending
    assert LIFECYCLE.targets(Phase.Pending) == (Phase.Provisioning,)
    assert LIFECYCLE.targets(Phase.Provisioning) == (Phase.Running, Phase.Failed)
    assert LIFECYCLE.targets(Phase.Running) == (Phase.Upgrading,)
    assert LIFECYCLE.targets(Phase.Upgrading) == (Phase.Running, Phase.Failed)
    assert LIFECYCLE.targets(Phase.Failed) == (Phase.Running, Phase.Upgrading)
    assert LIFECYCLE.failed == {Phase.Failed}


@pytest.mark.parametrize(("source", "dest"), ILLEGAL, ids=str)
def test_an_illegal_jump_is_refused(source: Phase, dest: Phase) -> None:
    ctx = context(source.value)
    with pytest.raises(IllegalTransition, match=f"illegal transition {source} -> {dest}"):
        LIFECYCLE.force(ctx, dest)
    assert ctx.bookkeeping.phase == source.value


def test_a_failed_webapp_can_be_forced_back_to_running_only_along_a_declared_edge() -> None:
    ctx = context("Failed", status={"installedVersion": "1", "failedVersion": "2"})
    move = LIFECYCLE.force(ctx, Phase.Running)
    assert (move.reason, move.forced) == ("RolledBack", True)
    assert LIFECYCLE.current(ctx) is Phase.Running
    assert ctx.conditions["Phase"].message.startswith("phase Running (from Failed, forced)")


@pytest.mark.parametrize("value", ["running", "Deleted", ""])
def test_an_annotation_naming_no_phase_is_refused(value: str) -> None:
    with pytest.raises(UnknownPhase, match=r"annotation okt\.io/phase"):
        LIFECYCLE.current(context(value))


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (None, JobState.MISSING),
        ({}, JobState.ACTIVE),
        ({"active": 1}, JobState.ACTIVE),
        ({"failed": 1}, JobState.ACTIVE),  # another Pod may still run: only the condition says the Job gave up
        ({"conditions": [{"type": "Complete", "status": "True"}]}, JobState.SUCCEEDED),
        ({"conditions": [{"type": "Failed", "status": "True"}]}, JobState.FAILED),
        ({"conditions": [{"type": "Failed", "status": "False"}]}, JobState.ACTIVE),
        ({"conditions": [{"type": "Suspended", "status": "True"}]}, JobState.ACTIVE),
    ],
)
def test_a_job_state_is_read_from_its_conditions(status: dict[str, Any] | None, state: JobState) -> None:
    live = None if status is None else {"metadata": {"name": "j"}, "status": status}
    assert JobState.of(live) is state


def test_jobs_are_named_and_labelled_by_task_and_version() -> None:
    cr = context("Running").cr
    setup, upgrade = JobWebApp.setup(cr, "1.24"), JobWebApp.upgrade(cr, "1.25")
    assert (setup.name, upgrade.name) == ("shop-setup", "shop-upgrade-1.25")
    assert (job_version(setup.desired), job_version(upgrade.desired)) == ("1.24", "1.25")
    container = upgrade.desired["spec"]["template"]["spec"]["containers"][0]
    assert (container["name"], container["image"]) == ("upgrade", "nginxinc/nginx-unprivileged:1.25")


def test_the_deploy_crd_is_the_generated_one() -> None:
    stored = yaml.safe_load((SAMPLE / "deploy" / "crd.yaml").read_text())
    assert stored == crd.crd_for_reconciler(WebAppReconciler)


def test_the_readme_mentions_every_transition_reason() -> None:
    readme = (SAMPLE / "README.md").read_text()
    missing = [edge.reason for edge in LIFECYCLE.transitions if f"`{edge.reason}`" not in readme]
    assert missing == []


# -- reconciled with the in-memory API ---------------------------------------------------------------------------------

WEBAPP = kinds.Kind("lifecycle.example.com/v1alpha1", "WebApp", "webapps")
JOB = kinds.Kind("batch/v1", "Job", "jobs")
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]


def failed_webapp(installed: str | None, failed: str) -> FakeClient:
    """An in-memory API holding the WebApp ``ns/shop``, Failed at ``failed`` over ``installed``, and no Job."""
    status = {"failedVersion": failed, **({"installedVersion": installed} if installed else {})}
    return FakeClient(
        kinds=[WEBAPP],
        objects=[
            {
                "apiVersion": WEBAPP.api_version,
                "kind": WEBAPP.kind,
                "metadata": {"name": "shop", "namespace": "ns", "annotations": {"okt.io/phase": "Failed"}},
                "spec": {"version": failed},
                "status": status,
            }
        ],
    )


@pytest.mark.parametrize(("installed", "job"), [("1", "shop-upgrade-2"), (None, "shop-setup")])
def test_a_failed_job_deleted_by_someone_is_not_run_again(installed: str | None, job: str) -> None:
    fake = failed_webapp(installed, failed="2")  # someone deleted the Job that failed, once they had read its logs

    run = okt.reconcile(WebAppReconciler(), fake, None, "ns", "shop")

    assert run.outcome == okt.Outcome.done()
    assert fake.stored(JOB, job, "ns") is None  # a Job that ran again would change the application behind Failed
    assert (fake.stored(WEBAPP, "shop", "ns") or {})["metadata"]["annotations"]["okt.io/phase"] == "Failed"


def setup_done(fake: FakeClient, recorder: events.EventRecorder | None = None) -> WebAppReconciler:
    """A new WebApp shop reconciled once (Pending -> Provisioning, its setup Job created), the Job then completed."""
    meta = {"name": "shop", "namespace": "ns"}
    fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": meta, "spec": {"version": "1"}})
    reconciler = WebAppReconciler()
    okt.reconcile(reconciler, fake, None, "ns", "shop", recorder=recorder)
    job = fake.stored(JOB, "shop-setup", "ns") or {}
    fake.put({**job, "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}})
    return reconciler


def test_a_move_lost_to_an_api_failure_does_not_run_its_job_twice() -> None:
    fake = FakeClient(kinds=[WEBAPP])
    reconciler = setup_done(fake)
    # The API server fails every status write of the reconcile that sees the setup done (the report's and its retry).
    outage = errors.ApiError.from_status(500, "InternalError", "etcdserver: request timed out")
    fake.fail("apply", "webapps/status", outage, times=2)

    failed = okt.reconcile(reconciler, fake, None, "ns", "shop")
    okt.reconcile(reconciler, fake, None, "ns", "shop")  # the retry, the API server back

    assert isinstance(failed.outcome.error, errors.ServerError)
    webapp = fake.stored(WEBAPP, "shop", "ns") or {}
    assert webapp["metadata"]["annotations"]["okt.io/phase"] == "Running"
    assert webapp["status"]["installedVersion"] == "1"
    assert fake.stored(JOB, "shop-setup", "ns") is None  # not created again: the setup ran once
    assert fake.stored(DEPLOYMENT, "shop", "ns") is not None


def test_an_upgrade_that_fails_after_the_spec_asked_for_another_version_fails_its_own_version() -> None:
    fake = FakeClient(
        kinds=[WEBAPP],
        objects=[
            {
                "apiVersion": WEBAPP.api_version,
                "kind": WEBAPP.kind,
                "metadata": {"name": "shop", "namespace": "ns", "annotations": {"okt.io/phase": "Upgrading"}},
                "spec": {"version": "3"},
                "status": {"installedVersion": "1", "targetVersion": "2"},
            }
        ],
    )
    reconciler = WebAppReconciler()
    okt.reconcile(reconciler, fake, None, "ns", "shop")  # the upgrade to 2 runs on
    job = fake.stored(JOB, "shop-upgrade-2", "ns") or {}
    assert fake.stored(JOB, "shop-upgrade-3", "ns") is None
    fake.put({**job, "status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True"}]}})

    okt.reconcile(reconciler, fake, None, "ns", "shop")  # Upgrading -> Failed

    webapp = fake.stored(WEBAPP, "shop", "ns") or {}
    assert webapp["metadata"]["annotations"]["okt.io/phase"] == "Failed"
    assert (webapp["status"]["installedVersion"], webapp["status"]["failedVersion"]) == ("1", "2")
    assert "targetVersion" not in webapp["status"]
    okt.reconcile(reconciler, fake, None, "ns", "shop")  # Failed -> Upgrading: 3 is neither installed nor failed
    webapp = fake.stored(WEBAPP, "shop", "ns") or {}
    assert (webapp["metadata"]["annotations"]["okt.io/phase"], webapp["status"]["targetVersion"]) == ("Upgrading", "3")
    assert fake.stored(JOB, "shop-upgrade-3", "ns") is not None


def test_a_phase_move_lost_to_a_conflict_writes_no_report_and_the_retry_makes_it() -> None:
    fake = FakeClient(kinds=[WEBAPP])
    recorder = events.EventRecorder(fake, "webapp")
    reconciler = setup_done(fake, recorder)
    before = (fake.stored(WEBAPP, "shop", "ns") or {})["status"]
    # Another writer changed the object between the read and the move: a race the quick retry wins, not a failure.
    fake.fail("patch", "webapps", errors.ApiError.from_status(409, "Conflict", "the object has been modified"))

    lost = okt.reconcile(reconciler, fake, None, "ns", "shop", recorder=recorder)

    assert isinstance(lost.outcome.error, errors.Conflict)
    assert (fake.stored(WEBAPP, "shop", "ns") or {})["status"] == before  # no Ready=False flapping, no count
    said = [(event["type"], event["message"]) for event in fake.list(kinds.EVENT, "ns")[0]]
    assert [message for kind, message in said if kind == "Warning"] == []  # no Warning Event either
    moves = [message.partition(":")[0] for kind, message in said if kind == "Normal" and message.startswith("phase ")]
    assert moves == ["phase Pending -> Provisioning"]  # the move that did not land is not announced
    okt.reconcile(reconciler, fake, None, "ns", "shop", recorder=recorder)
    moved = [event["message"].partition(":")[0] for event in fake.list(kinds.EVENT, "ns")[0]]
    assert "phase Provisioning -> Running" in moved  # once it landed
    webapp = fake.stored(WEBAPP, "shop", "ns") or {}
    assert webapp["metadata"]["annotations"]["okt.io/phase"] == "Running"
    ready = next(c for c in webapp["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
