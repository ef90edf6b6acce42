"""A phase move the API server refuses, on the real local control plane: the operator runs as a ServiceAccount bound
to the sample's generated role, which the test then narrows to what the last release note described — the status may
be written, the WebApp may not be patched, so the ``okt.io/phase`` annotation cannot move.

What must hold: nothing of the refused move is written (no status claiming a phase the annotation does not hold, no
Job of the next phase, no Job pruned), the refusal is reported with a reason a person can read — in a Warning Event,
and in the status (Ready=False, Degraded True once it goes on) —, and once the role is whole again the lifecycle goes
on from where the annotation holds it, with no upgrade lost nor any Job pruned half-run.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, condition, envtest, wait_for
from samples.lifecycle.lifecycle_operator import WebAppReconciler
from samples.lifecycle.lifecycle_operator.resources import setup_job_name, upgrade_job_name
from samples.lifecycle.tests import harness

pytestmark = pytest.mark.integration

IMAGE = "nginxinc/nginx-unprivileged"
ACCOUNT = "webapp-operator"
RBAC_PATH = harness.CRD_PATH.parent / "rbac.yaml"
ROLE = kinds.Kind("rbac.authorization.k8s.io/v1", "Role", "roles")
BINDING = kinds.Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
ACCOUNT_KIND = kinds.Kind("v1", "ServiceAccount", "serviceaccounts")
ACCESS_REVIEW = kinds.Kind("authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False)


def generated_rules() -> list[dict[str, Any]]:
    """The rules of the operator's ClusterRole in ``deploy/rbac.yaml`` (``okt gen rbac``'s output)."""
    documents = list(yaml.safe_load_all(RBAC_PATH.read_text()))
    role = next(d for d in documents if d["kind"] == "ClusterRole" and d["metadata"]["name"] == ACCOUNT)
    return list(role["rules"])


def without_object_patch(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rules`` with ``webapps`` no longer patchable; ``webapps/status`` still is."""
    narrowed = copy.deepcopy(rules)
    for rule in narrowed:
        if rule["resources"] == ["webapps"]:
            rule["verbs"] = [verb for verb in rule["verbs"] if verb not in ("patch", "update")]
    return narrowed


def without_status_patch(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rules`` with ``webapps/status`` no longer writable; ``webapps`` still patchable."""
    return [rule for rule in rules if rule["resources"] != ["webapps/status"]]


def set_rules(kube: okt.Client, namespace: str, rules: list[dict[str, Any]]) -> None:
    kube.patch(ROLE, ACCOUNT, {"rules": rules}, namespace)


def may_patch_webapps(client: okt.Client, namespace: str, resource: str = "webapps") -> bool:
    review = {
        "apiVersion": ACCESS_REVIEW.api_version,
        "kind": ACCESS_REVIEW.kind,
        "spec": {
            "resourceAttributes": {
                "group": "lifecycle.example.com",
                "resource": resource.partition("/")[0],
                "subresource": resource.partition("/")[2],
                "verb": "patch",
                "namespace": namespace,
            }
        },
    }
    return bool(client.create(review, ACCESS_REVIEW)["status"].get("allowed"))


@pytest.fixture
def account(kube: okt.Client, control_plane: envtest.ControlPlane, namespace: str) -> Iterator[okt.Client]:
    """A client holding only a token of a ServiceAccount bound, in the test's namespace, to the generated rules."""
    meta = {"name": ACCOUNT, "namespace": namespace}
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}, ACCOUNT_KIND)
    role = {"apiVersion": ROLE.api_version, "kind": "Role", "metadata": meta, "rules": generated_rules()}
    kube.create(role, ROLE)
    binding = {
        "apiVersion": BINDING.api_version,
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
    }
    kube.create(binding, BINDING)
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token",
        verb="create",
        resource="serviceaccounts/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    ).json()
    user = envtest.TokenUser(name=f"system:serviceaccount:{namespace}:{ACCOUNT}", token=answer["status"]["token"])
    client = kube_client.Client.from_kubeconfig(
        control_plane.kubeconfig_for(user, control_plane.directory / f"kubeconfig-{secrets.token_hex(4)}")
    )
    yield client
    client.close()


def phase_condition(webapps: harness.WebApps, name: str) -> dict[str, Any]:
    found = condition(webapps.get(name), "Phase")
    assert found is not None
    return found


def test_a_phase_move_refused_by_rbac_writes_nothing_else_and_the_lifecycle_goes_on_once_allowed(
    kube: okt.Client, account: okt.Client, namespace: str, webapp_kind: kinds.Kind, webapps: harness.WebApps
) -> None:
    rules = generated_rules()
    with RunningOperator.start(account, WebAppReconciler, namespaces=[namespace]):
        webapps.create("shop", "1")
        webapps.wait_phase("shop", "Provisioning", jobs=(setup_job_name("shop"),))
        webapps.finish_job(setup_job_name("shop"), succeeded=True)
        webapps.wait_phase("shop", "Running", installed="1", jobs=(), ready="True")
        webapps.set_version("shop", "2")
        webapps.wait_phase("shop", "Upgrading", jobs=(upgrade_job_name("shop", "2"),), reason="UpgradeRequested")
        before = webapps.get("shop")

        set_rules(kube, namespace, without_object_patch(rules))
        wait_for(lambda: not may_patch_webapps(account, namespace), message="the narrowed role in force")
        webapps.finish_job(upgrade_job_name("shop", "2"), succeeded=True)  # Upgrading -> Running, refused

        def refusal() -> tuple[str, str, str] | None:
            return next((e for e in webapps.events("shop") if e[0] == "Warning"), None)

        found = wait_for(refusal, message="a Warning Event saying the move was refused")
        assert found is not None  # wait_for only returns a truthy value
        _, reason, message = found
        # Nothing of the refused move is written: the annotation and the status still agree on Upgrading.
        refused = webapps.view("shop")
        assert (refused.phase, refused.installed, refused.jobs) == ("Upgrading", "1", (upgrade_job_name("shop", "2"),))
        obj = webapps.get("shop")
        assert obj["status"].get("targetVersion") == "2"
        assert phase_condition(webapps, "shop") == condition(before, "Phase")
        reported = ("conditions", "observedGeneration", "okt")  # the refusal's report: Ready=False, the error count
        kept = {k: v for k, v in obj["status"].items() if k not in reported}
        assert kept == {k: v for k, v in before["status"].items() if k not in reported}, "the facts of the last move"
        assert reason == "ApiError"
        assert message.startswith(
            "403 Forbidden: the phase annotation okt.io/phase cannot move from Upgrading to Running: its patch was "
            'refused (webapps.lifecycle.example.com "shop" is forbidden: '
        ), message
        assert message.endswith("; nothing of the move is written, and the retry makes it again")
        assert "cannot patch resource" in message

        # A version asked for meanwhile waits for the upgrade under way, as the README says.
        webapps.set_version("shop", "3")
        set_rules(kube, namespace, rules)

        upgrading = webapps.wait_phase("shop", "Upgrading", installed="2", jobs=(upgrade_job_name("shop", "3"),))
        assert upgrading.deployment_image == f"{IMAGE}:2"
        assert webapps.get("shop")["status"]["targetVersion"] == "3"
        generation = webapps.set_version("shop", "4")["metadata"]["generation"]
        webapps.wait(
            "shop",
            lambda v: phase_condition(webapps, "shop").get("observedGeneration") == generation,
            "the Phase condition of the generation that asks for 4",
        )
        assert webapps.view("shop").jobs == (upgrade_job_name("shop", "3"),), "the upgrade to 3 is not pruned half-run"
        webapps.finish_job(upgrade_job_name("shop", "3"), succeeded=True)
        webapps.wait_phase("shop", "Upgrading", installed="3", jobs=(upgrade_job_name("shop", "4"),))


def test_a_phase_move_refused_by_rbac_is_reported_in_the_status_which_keeps_the_old_phases_facts(
    kube: okt.Client, account: okt.Client, namespace: str, webapp_kind: kinds.Kind, webapps: harness.WebApps
) -> None:
    """While the move keeps being refused, the WebApp says so where people and tools look: Ready=False with the
    refusal, Degraded True once it failed ``degraded_after`` times (the count kept in the status: the object cannot be
    patched) — and nothing of the refused phase: the lifecycle condition, the versions and the Jobs are Upgrading's."""
    rules = generated_rules()
    with RunningOperator.start(account, WebAppReconciler, namespaces=[namespace]):
        webapps.create("cart", "1")
        webapps.wait_phase("cart", "Provisioning", jobs=(setup_job_name("cart"),))
        webapps.finish_job(setup_job_name("cart"), succeeded=True)
        webapps.wait_phase("cart", "Running", installed="1", jobs=(), ready="True")
        webapps.set_version("cart", "2")
        webapps.wait_phase("cart", "Upgrading", jobs=(upgrade_job_name("cart", "2"),), reason="UpgradeRequested")
        before = webapps.get("cart")

        set_rules(kube, namespace, without_object_patch(rules))
        wait_for(lambda: not may_patch_webapps(account, namespace), message="the narrowed role in force")
        webapps.finish_job(upgrade_job_name("cart", "2"), succeeded=True)  # Upgrading -> Running, refused

        def degraded() -> dict[str, Any] | None:
            found = condition(webapps.get("cart"), "Degraded")
            return found if found is not None and found["status"] == "True" else None

        wait_for(degraded, message="Degraded True once the refused move failed degraded_after times")
        obj = webapps.get("cart")
        ready = condition(obj, "Ready")
        assert ready is not None
        assert (ready["status"], ready["reason"]) == ("False", "ApiError")
        assert ready["message"].startswith(
            "403 Forbidden: the phase annotation okt.io/phase cannot move from Upgrading to Running: its patch was "
            'refused (webapps.lifecycle.example.com "cart" is forbidden: '
        ), ready["message"]
        assert (condition(obj, "Degraded") or {}).get("reason") == "ApiError"
        assert obj["status"]["okt"]["errorCount"] >= WebAppReconciler.degraded_after
        # Nothing of the refused phase: the annotation, the lifecycle condition, the versions and the Jobs are those
        # of Upgrading, as the last move wrote them.
        assert obj["metadata"]["annotations"]["okt.io/phase"] == "Upgrading"
        assert "okt.io/error-count" not in obj["metadata"]["annotations"]
        assert phase_condition(webapps, "cart") == condition(before, "Phase")
        facts = ("installedVersion", "targetVersion", "failedVersion")
        assert {k: obj["status"].get(k) for k in facts} == {
            "installedVersion": "1",
            "targetVersion": "2",
            "failedVersion": None,
        }
        assert webapps.view("cart").jobs == (upgrade_job_name("cart", "2"),)

        set_rules(kube, namespace, rules)
        # Waking it at once: the retries, backing off, may be a while apart by now.
        kube.patch(webapp_kind, "cart", {"metadata": {"labels": {"touched": "yes"}}}, namespace)
        webapps.wait_phase("cart", "Running", installed="2", jobs=(), ready="True")
        healed = webapps.get("cart")
        assert (condition(healed, "Degraded") or {}).get("status") == "False"
        assert "okt" not in healed["status"], "the count kept in the status goes once the move landed"
        assert "okt.io/error-count" not in healed["metadata"]["annotations"]


def test_a_move_whose_status_is_refused_after_the_annotation_records_the_upgrade_target_before_its_job(
    kube: okt.Client, account: okt.Client, namespace: str, webapp_kind: kinds.Kind, webapps: harness.WebApps
) -> None:
    rules = generated_rules()
    with RunningOperator.start(account, WebAppReconciler, namespaces=[namespace]):
        webapps.create("blog", "1")
        webapps.wait_phase("blog", "Provisioning", jobs=(setup_job_name("blog"),))
        webapps.finish_job(setup_job_name("blog"), succeeded=True)
        webapps.wait_phase("blog", "Running", installed="1", jobs=(), ready="True")

        set_rules(kube, namespace, without_status_patch(rules))
        wait_for(lambda: may_patch_webapps(account, namespace, "webapps/status") is False, message="the narrowed role")
        webapps.set_version("blog", "2")  # Running -> Upgrading: the annotation lands, the status is refused

        def refusal() -> tuple[str, str, str] | None:
            return next((e for e in webapps.events("blog") if e[0] == "Warning"), None)

        wait_for(refusal, message="a Warning Event saying the status write was refused")
        refused = webapps.view("blog")
        assert (refused.phase, refused.jobs) == ("Upgrading", ()), "no Job before the status records its target"
        assert webapps.get("blog")["status"].get("targetVersion") is None

        set_rules(kube, namespace, rules)
        webapps.wait_phase("blog", "Upgrading", installed="1", jobs=(upgrade_job_name("blog", "2"),))
        assert webapps.get("blog")["status"]["targetVersion"] == "2"
        generation = webapps.set_version("blog", "3")["metadata"]["generation"]
        webapps.wait(
            "blog",
            lambda v: phase_condition(webapps, "blog").get("observedGeneration") == generation,
            "the Phase condition of the generation that asks for 3",
        )
        assert webapps.view("blog").jobs == (upgrade_job_name("blog", "2"),), "the upgrade to 2 is not pruned half-run"
