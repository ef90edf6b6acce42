"""The lifecycle sample end to end, on the real local control plane, run by okt's Manager.

There is no Job controller: the tests finish Jobs by patching their status, as that controller would.
"""

from __future__ import annotations

import pytest

import okt
from okt import errors
from okt.testing import RunningOperator, condition, wait_for
from samples.lifecycle.lifecycle_operator import WebAppReconciler
from samples.lifecycle.lifecycle_operator.resources import setup_job_name, upgrade_job_name
from samples.lifecycle.tests import harness

pytestmark = pytest.mark.integration

IMAGE = "nginxinc/nginx-unprivileged"
"""The WebApp's default image: nginx as a user that is not root."""


def provisioned(webapps: harness.WebApps, name: str, version: str) -> harness.View:
    """Create a WebApp and take it through its setup to Running."""
    webapps.create(name, version)
    webapps.wait_phase(name, "Provisioning", jobs=(setup_job_name(name),))
    webapps.finish_job(setup_job_name(name), succeeded=True)
    return webapps.wait_phase(name, "Running", installed=version, jobs=(), deployment_image=f"{IMAGE}:{version}")


def test_a_webapp_walks_provisioning_running_upgrading_running(
    operator: RunningOperator, webapps: harness.WebApps
) -> None:
    webapps.create("shop", "1.24", replicas=2)

    # The phase is written before the children follow it, and Ready after them: wait for both.
    provisioning = webapps.wait_phase("shop", "Provisioning", jobs=("shop-setup",), reason="Provisioning")
    assert (provisioning.ready, provisioning.reason, provisioning.deployment_image) == ("False", "Provisioning", None)
    job = webapps.job("shop-setup")
    assert job is not None
    assert job["metadata"]["labels"]["lifecycle.example.com/version"] == "1.24"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "WebApp"

    webapps.finish_job("shop-setup", succeeded=True)
    running = webapps.wait_phase("shop", "Running", jobs=(), deployment_image=f"{IMAGE}:1.24", ready="True")
    assert (running.ready, running.installed) == ("True", "1.24")

    webapps.set_version("shop", "1.25")
    upgrading = webapps.wait_phase(
        "shop", "Upgrading", jobs=(upgrade_job_name("shop", "1.25"),), reason="UpgradeRequested"
    )
    assert (upgrading.ready, upgrading.reason) == ("False", "UpgradeRequested")
    assert upgrading.deployment_image == f"{IMAGE}:1.24", "the application keeps serving until the upgrade is done"

    webapps.finish_job(upgrade_job_name("shop", "1.25"), succeeded=True)
    upgraded = webapps.wait_phase("shop", "Running", jobs=(), deployment_image=f"{IMAGE}:1.25", ready="True")
    assert upgraded.installed == "1.25"

    obj = webapps.get("shop")
    phase = condition(obj, "Phase")
    assert phase is not None
    assert (phase["status"], phase["reason"]) == ("True", "UpgradeSucceeded")
    assert phase["observedGeneration"] == obj["metadata"]["generation"]

    def moves() -> list[str]:
        said = webapps.events("shop")
        return [reason for type_, reason, message in said if type_ == "Normal" and message.startswith("phase ")]

    # A move's Event is recorded once the write that stores it has landed, a moment after the status waited for.
    expected = ["Provisioning", "SetupSucceeded", "UpgradeRequested", "UpgradeSucceeded"]
    wait_for(lambda: len(moves()) >= len(expected), timeout=10, message=lambda: f"the four moves' Events: {moves()}")
    assert moves() == expected


def test_a_failed_setup_job_leaves_the_webapp_failed_with_ready_false(
    operator: RunningOperator, webapps: harness.WebApps
) -> None:
    webapps.create("broken", "2.0")
    webapps.wait_phase("broken", "Provisioning", jobs=("broken-setup",))

    webapps.finish_job("broken-setup", succeeded=False)

    failed = webapps.wait_phase("broken", "Failed", ready="False", reason="SetupFailed")
    assert (failed.reason, failed.failed, failed.installed) == ("SetupFailed", "2.0", None)
    assert failed.jobs == ("broken-setup",), "the failed Job is kept for its logs"
    assert failed.deployment_image is None
    obj = webapps.get("broken")
    degraded, phase = condition(obj, "Degraded"), condition(obj, "Phase")
    assert degraded is not None and phase is not None
    assert (degraded["status"], degraded["reason"]) == ("True", "SetupFailed")
    assert (phase["status"], phase["reason"]) == ("False", "SetupFailed")
    assert "the setup Job failed" in phase["message"]


def test_a_failed_upgrade_keeps_serving_and_can_be_rolled_back_or_retried(
    operator: RunningOperator, webapps: harness.WebApps
) -> None:
    provisioned(webapps, "blog", "1")

    webapps.set_version("blog", "2")
    webapps.wait_phase("blog", "Upgrading", jobs=("blog-upgrade-2",))
    webapps.finish_job("blog-upgrade-2", succeeded=False)
    failed = webapps.wait_phase("blog", "Failed", reason="UpgradeFailed", jobs=("blog-upgrade-2",))
    assert (failed.installed, failed.failed, failed.deployment_image) == ("1", "2", f"{IMAGE}:1")

    webapps.set_version("blog", "1")
    rolled_back = webapps.wait_phase("blog", "Running", jobs=(), ready="True")
    assert (rolled_back.installed, rolled_back.failed, rolled_back.deployment_image) == ("1", None, f"{IMAGE}:1")

    webapps.set_version("blog", "3")
    webapps.wait_phase("blog", "Upgrading", jobs=("blog-upgrade-3",))
    webapps.finish_job("blog-upgrade-3", succeeded=False)
    webapps.wait_phase("blog", "Failed", failed="3")

    webapps.set_version("blog", "4")
    webapps.wait_phase("blog", "Upgrading", jobs=("blog-upgrade-4",), reason="RetryRequested")
    webapps.finish_job("blog-upgrade-4", succeeded=True)
    webapps.wait_phase("blog", "Running", installed="4", failed=None, deployment_image=f"{IMAGE}:4", ready="True")


def test_a_phase_annotation_edited_to_an_unknown_phase_is_refused_without_crashing(
    kube: okt.Client, namespace: str, operator: RunningOperator, webapps: harness.WebApps
) -> None:
    provisioned(webapps, "edited", "1.0")

    webapps.annotate_phase("edited", "Exploded")

    refused = webapps.wait("edited", lambda v: v.ready == "False" and v.reason == "UnknownPhase", "Ready=False")
    assert refused.phase == "Exploded"
    assert refused.deployment_image == f"{IMAGE}:1.0", "nothing is pruned or changed while the phase is unknown"
    ready = condition(webapps.get("edited"), "Ready")
    assert ready is not None
    assert ready["message"] == (
        "annotation okt.io/phase is 'Exploded', which is not a phase of this lifecycle; set it to one of Pending, "
        "Provisioning, Running, Upgrading, Failed (Pending starts the lifecycle again)"
    )

    webapps.create("other", "1.0")
    webapps.wait_phase("other", "Provisioning")  # the operator still works

    # Repaired while no reconcile runs: the operator's own error bookkeeping rewrites the annotations it read.
    assert operator.stop()
    webapps.annotate_phase("edited", "Running")
    with RunningOperator.start(kube, WebAppReconciler, namespaces=[namespace]):
        webapps.wait_phase("edited", "Running", ready="True", deployment_image=f"{IMAGE}:1.0")


def test_the_generated_crd_refuses_a_version_that_cannot_name_a_job(
    webapp_kind: object, webapps: harness.WebApps
) -> None:
    with pytest.raises(errors.Invalid, match=r"spec\.version"):
        webapps.create("bad", "V1_!")


def test_a_version_asked_for_during_an_upgrade_waits_for_it_to_finish_then_upgrades_from_there(
    operator: RunningOperator, webapps: harness.WebApps
) -> None:
    provisioned(webapps, "wiki", "1")
    webapps.set_version("wiki", "2")
    webapps.wait_phase("wiki", "Upgrading", jobs=("wiki-upgrade-2",))

    generation = webapps.set_version("wiki", "3")["metadata"]["generation"]

    seen = webapps.wait(
        "wiki",
        lambda v: (condition(webapps.get("wiki"), "Phase") or {}).get("observedGeneration") == generation,
        "the Phase condition of the generation that asks for 3",
    )
    assert (seen.phase, seen.jobs) == ("Upgrading", ("wiki-upgrade-2",)), "the upgrade to 2 under way is kept"
    assert (seen.installed, seen.deployment_image) == ("1", f"{IMAGE}:1")

    webapps.finish_job("wiki-upgrade-2", succeeded=True)
    upgrading = webapps.wait_phase("wiki", "Upgrading", jobs=("wiki-upgrade-3",))
    assert (upgrading.installed, upgrading.deployment_image) == ("2", f"{IMAGE}:2")

    webapps.finish_job("wiki-upgrade-3", succeeded=True)
    done = webapps.wait_phase("wiki", "Running", installed="3", jobs=(), deployment_image=f"{IMAGE}:3", ready="True")
    assert done.failed is None


def test_a_version_whose_upgrade_job_name_would_be_too_long_is_refused_and_a_shorter_one_upgrades(
    operator: RunningOperator, webapps: harness.WebApps
) -> None:
    """The CRD bounds the version and the name apart; together they may name a Job longer than the 63 characters
    Kubernetes accepts. Moved to Upgrading for that version, the WebApp would wait for a Job that can never exist,
    and a version asked for meanwhile would wait behind it: the spec is refused before the phase moves."""
    name = "a" * 45
    provisioned(webapps, name, "1")

    webapps.set_version(name, "1.26.0-rc.1-abc")

    refused = webapps.wait(name, lambda v: v.reason == "InvalidSpec", "Ready=False, InvalidSpec")
    assert (refused.ready, refused.phase, refused.jobs) == ("False", "Running", ())
    assert refused.deployment_image == f"{IMAGE}:1", "the installed version keeps serving"
    ready = condition(webapps.get(name), "Ready")
    assert ready is not None
    assert "spec.version '1.26.0-rc.1-abc'" in ready["message"]
    assert "at most 9 characters" in ready["message"]

    webapps.set_version(name, "1.26")
    webapps.wait_phase(name, "Upgrading", jobs=(upgrade_job_name(name, "1.26"),))
    webapps.finish_job(upgrade_job_name(name, "1.26"), succeeded=True)
    webapps.wait_phase(name, "Running", installed="1.26", jobs=(), deployment_image=f"{IMAGE}:1.26", ready="True")
