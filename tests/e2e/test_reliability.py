"""The reliability suite at reduced sizes — the part of ``make chaos`` that ``make test`` runs.

Each scenario of ``tests/reliability/`` runs once here with :data:`tests.reliability.profiles.REDUCED` (tens of
objects, a few kills, seconds of faults) on a real control plane: a regression of okt's promises — nothing lost, no
duplicate child, no crash, retries back off, one writer at a time — fails CI, not only the nightly full run. The
judgements those scenarios rest on (``checks`` and ``logs`` in ``tests/reliability/``) are
pinned first, on synthetic objects, log lines and audit requests.
"""

from __future__ import annotations

import json
import pathlib
import random
from collections.abc import Iterator
from typing import Any

import pytest

import okt
from okt.reconciler import reconciler as reconciler_mod
from okt.testing import audit, process
from samples.memcached.memcached_operator import MemcachedReconciler
from tests.reliability import (
    checks,
    cleanup,
    disruptions,
    fuzz,
    logs,
    outcome,
    profiles,
    report,
    testbed,
)

SCENARIO_TIMEOUT = 180
"""A reduced scenario takes seconds to a few tens of seconds; the margin is for a loaded 2-core machine."""


# -- synthetic objects ---------------------------------------------------------------------------------------------


def cr(
    name: str,
    *,
    uid: str | None = None,
    generation: int = 1,
    ready: str | None = "True",
    observed: int = 1,
    reason: str = "Reconciled",
    size: int = 1,
    deleting: bool = False,
    finalizers: tuple[str, ...] = (),
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "generation": generation}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if finalizers:
        meta["finalizers"] = list(finalizers)
    obj: dict[str, Any] = {"metadata": meta, "spec": {"size": size}}
    if ready is not None:
        condition = {"type": "Ready", "status": ready, "reason": reason, "observedGeneration": observed}
        obj["status"] = {"conditions": [condition], "observedGeneration": observed}
    return obj


def child(kind: str, name: str, owner: str, *, extra_controllers: int = 0, replicas: int = 1) -> dict[str, Any]:
    refs = [{"kind": "Memcached", "name": owner, "uid": f"uid-{owner}", "controller": True}]
    refs += [
        {"kind": "Other", "name": f"o{i}", "uid": f"other-{i}", "controller": True} for i in range(extra_controllers)
    ]
    obj: dict[str, Any] = {"kind": kind, "metadata": {"name": name, "ownerReferences": refs}}
    if kind == "Deployment":
        obj["spec"] = {"replicas": replicas}
    return obj


def family(name: str, replicas: int = 1) -> list[dict[str, Any]]:
    return [
        child("ConfigMap", f"{name}-config", name),
        child("Service", name, name),
        child("Deployment", name, name, replicas=replicas),
    ]


def snapshot(crs: list[dict[str, Any]], children: list[dict[str, Any]], **kwargs: Any) -> checks.Snapshot:
    return checks.Snapshot(tuple(crs), tuple(children), **kwargs)


# -- the checks ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (cr("a"), None),
        (cr("a", ready="False", reason="InvalidSpec"), "Ready=False"),
        (cr("a", generation=2, observed=1), "generation 2"),
        (cr("a", ready=None), "no Ready condition"),
        (cr("a", deleting=True), "being deleted"),
    ],
)
def test_converged_means_ready_true_for_the_current_generation(obj: dict[str, Any], problem: str | None) -> None:
    check = checks.converged(snapshot([obj], []))
    assert check.ok is (problem is None)
    if problem is not None:
        assert problem in check.problems[0]


def test_a_named_custom_resource_that_does_not_exist_is_not_converged() -> None:
    assert checks.converged(snapshot([cr("a")], []), ["a", "b"]).problems == ("b: missing",)


@pytest.mark.parametrize(
    ("children", "field", "needle"),
    [
        (family("a"), None, None),
        (family("a")[:2], "missing", "missing Deployment/a"),
        ([*family("a"), child("Service", "a", "a")], "duplicates", "duplicate Service/a"),
        ([*family("a"), child("Service", "a-extra", "a")], "unexpected", "unexpected Service/a-extra"),
        ([*family("a")[:2], child("Deployment", "a", "a", extra_controllers=1)], "multi_controller", "2 controller"),
        ([*family("a"), child("ConfigMap", "gone-config", "gone")], "orphans", "orphan"),
    ],
)
def test_children_are_judged_by_owner_uid(
    children: list[dict[str, Any]], field: str | None, needle: str | None
) -> None:
    audit = checks.child_audit(snapshot([cr("a")], children))
    found = {name: getattr(audit, name) for name in ("missing", "duplicates", "unexpected", "multi_controller")}
    found["orphans"] = audit.orphans
    assert [name for name, problems in found.items() if problems] == ([field] if field else [])
    if field is not None and needle is not None:
        assert needle in found[field][0]
    assert audit.check().ok is (field is None)


def test_children_of_objects_not_yet_required_may_be_missing() -> None:
    crs = [cr("a"), cr("b")]
    assert checks.children_exact(snapshot(crs, family("a")), names=["a"]).ok
    assert not checks.children_exact(snapshot(crs, family("a"))).ok


def test_objects_of_other_owners_are_not_children() -> None:
    foreign = {"kind": "ConfigMap", "metadata": {"name": "x", "ownerReferences": [{"kind": "ReplicaSet", "uid": "u"}]}}
    assert checks.children_exact(snapshot([cr("a")], [*family("a"), foreign])).ok


@pytest.mark.parametrize(
    ("obj", "ok"),
    [
        (cr("a"), True),
        (cr("a", ready="False", reason="InvalidSpec"), True),
        (cr("a", ready=None), False),
        (cr("a", ready="False", reason=""), False),
    ],
)
def test_every_custom_resource_needs_a_ready_condition_with_a_reason(obj: dict[str, Any], ok: bool) -> None:
    assert checks.with_status(snapshot([obj], [])).ok is ok


@pytest.mark.parametrize(
    ("sizes", "replicas", "ok"),
    [({"a": 3}, 3, True), ({"a": 3}, 2, False), ({"a": 2}, 3, False)],
)
def test_the_last_spec_must_reach_the_deployment(sizes: dict[str, int], replicas: int, ok: bool) -> None:
    assert checks.replicas_match(snapshot([cr("a", size=3)], family("a", replicas)), sizes).ok is ok


@pytest.mark.parametrize(
    ("inventory", "deleted", "problem"),
    [
        ({"a": '{"uid": "uid-a"}'}, (), None),
        ({}, (), "no inventory entry"),
        ({"a": '{"uid": "someone-else"}'}, (), "uid someone-else"),
        ({"a": '{"uid": "uid-a"}', "b": '{"uid": "uid-b"}'}, ("b",), "still in the inventory"),
        ({"a": "not json"}, (), "no inventory entry"),
        ({"a": '{"size": 1}'}, (), "no inventory entry"),
    ],
)
def test_the_inventory_lists_exactly_the_live_objects(
    inventory: dict[str, str], deleted: tuple[str, ...], problem: str | None
) -> None:
    check = checks.inventory_matches(snapshot([cr("a")], [], inventory=inventory), deleted)
    assert check.ok is (problem is None)
    if problem is not None:
        assert problem in check.problems[0]


@pytest.mark.parametrize(
    ("effective", "deleted", "ok"),
    [
        ({"a": 1, "b": 1}, ["a", "b"], True),
        ({"a": 1}, ["a", "b"], False),
        ({"a": 2, "b": 1}, ["a", "b"], False),
        ({"a": 1, "c": 1}, ["a"], False),
    ],
)
def test_each_deletion_is_cleaned_up_exactly_once(effective: dict[str, int], deleted: list[str], ok: bool) -> None:
    assert checks.cleanup_exactly_once(effective, deleted).ok is ok


@pytest.mark.parametrize(
    ("obj", "ok"),
    [
        (cr("a", deleting=True, finalizers=("cache.example.com/inventory",)), True),
        (cr("a", deleting=True), False),
        (cr("a", finalizers=("cache.example.com/inventory",)), False),
    ],
)
def test_a_failing_cleanup_must_keep_the_object_and_its_finalizer(obj: dict[str, Any], ok: bool) -> None:
    assert checks.finalizer_kept(snapshot([obj], []), ["a"], "cache.example.com/inventory").ok is ok


def test_a_finalizer_check_reports_an_object_that_went_away() -> None:
    assert checks.finalizer_kept(snapshot([], []), ["a"], "f").problems == ("a: gone although its cleanup failed",)


@pytest.mark.parametrize(
    ("line", "crashed"),
    [
        ('{"event": "reconciled", "name": "a", "outcome": "retry(ServerError)"}', False),
        ('{"event": "list or watch failed, retrying", "error": "503"}', False),
        ('{"event": "reconcile raised", "name": "a", "exception": [{"exc_type": "KeyError"}]}', True),
        ('{"event": "informer error, relisting", "error": "KeyError()"}', True),
        ("Traceback (most recent call last):", True),
        ("okt: MemcachedReconciler on Kubernetes v1.20.2", False),
    ],
)
def test_crashes_are_unhandled_exceptions_in_the_log(line: str, crashed: bool) -> None:
    assert bool(logs.crashes(process.log_records(line))) is crashed


@pytest.mark.parametrize(("code", "ok"), [(None, True), (-9, True), (0, True), (1, False)])
def test_an_operator_that_exits_with_an_error_is_a_crash(code: int | None, ok: bool) -> None:
    assert logs.no_crash([], {"operator": code}).ok is ok


def test_an_operator_that_ignored_sigterm_is_a_crash() -> None:
    assert logs.no_crash([], {}, hung=["operator"]).problems == ("operator ignored SIGTERM (killed after 30s)",)


@pytest.mark.parametrize(("ok", "problems"), [(True, ()), (False, ("it did not",))])
def test_a_check_of_one_condition_names_its_problem_only_when_it_fails(ok: bool, problems: tuple[str, ...]) -> None:
    check = checks.Check.holds("it holds", ok, "it did not").labelled("after the kill")
    assert (check.name, check.problems) == ("after the kill: it holds", problems)


def test_reconciles_of_one_object_are_counted_in_a_window() -> None:
    lines = "\n".join(
        json.dumps({"event": event, "name": name, "timestamp": f"2026-01-01T00:00:{second:02d}Z"})
        for event, name, second in [
            ("reconciled", "probe", 1),
            ("reconciled", "probe", 5),
            ("reconciled", "other", 6),
            ("event not recorded", "probe", 7),
            ("reconciled", "probe", 30),
        ]
    )
    start = audit.parse_time("2026-01-01T00:00:00Z")
    assert start is not None
    assert logs.reconciles(process.log_records(lines), "probe", start, start + 20) == 2


@pytest.mark.parametrize(("count", "ok"), [(7, True), (14, True), (15, False), (400, False)])
def test_an_object_in_error_must_be_reconciled_less_often_than_the_limit(count: int, ok: bool) -> None:
    assert logs.backoff_bounded({"probe": count}, 15, 20.0).ok is ok


def test_a_backoff_check_without_any_measurement_fails() -> None:
    assert not logs.backoff_bounded({}, 15, 20.0).ok


def request(user: str, at: float, code: int = 200, verb: str = "patch") -> audit.Request:
    return audit.Request(user, verb, "memcacheds", "ns", "x", code, at, at + 0.01)


@pytest.mark.parametrize(
    ("requests", "ok"),
    [
        ([request("a", 1), request("a", 2), request("b", 3)], True),
        ([request("a", 1), request("b", 2), request("a", 3)], False),
        ([request("a", 1), request("b", 0.5, code=409), request("a", 3)], True),
        ([request("a", 1), request("b", 2, verb="get"), request("a", 3)], True),
    ],
)
def test_two_writers_at_once_are_overlapping_write_windows(requests: list[audit.Request], ok: bool) -> None:
    assert logs.single_writer(requests, ["a", "b"]).ok is ok


def test_a_standby_write_in_its_window_is_reported() -> None:
    requests = [request("b", 1.0), request("b", 9.0)]
    check = logs.no_writes(requests, "b", 0.0, 5.0, "standby")
    assert len(check.problems) == 1
    assert "standby b" in check.problems[0]


@pytest.mark.parametrize(
    ("obj", "verdict", "ok"),
    [
        (cr("a"), None, True),
        (cr("a", ready="False", reason="ApiError"), None, True),
        (cr("a", ready="False", reason="InvalidSpec"), None, False),
        (cr("a", ready="False", reason="InvalidSpec"), "InvalidSpec", True),
        (cr("a"), "InvalidSpec", False),
        (cr("a", ready="False", reason="ReconcileError"), "InvalidSpec", False),
    ],
)
def test_ready_must_agree_with_the_validity_of_the_spec(obj: dict[str, Any], verdict: str | None, ok: bool) -> None:
    assert checks.verdicts_match(snapshot([obj], []), {"a": verdict}).ok is ok


# -- the harness's own pure parts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "verdict"),
    [
        ({"size": 3}, None),
        ({"size": 3, "image": "memcached:1.6.21"}, None),
        ({"size": 0}, "InvalidSpec"),
        ({"size": 51}, "InvalidSpec"),
        ({"size": 3, "image": "memcached:latest"}, "InvalidSpec"),
        ({"size": 3, "colour": "blue"}, "InvalidSpec"),
        ([["size", 3]], "InvalidSpec"),
        ("three", "InvalidSpec"),
        (None, "InvalidSpec"),
    ],
)
def test_the_fuzz_oracle_refuses_what_the_model_or_the_policy_refuses(spec: Any, verdict: str | None) -> None:
    assert fuzz.expected_verdict(spec) == verdict


@pytest.mark.parametrize("spec", [[["size", 3]], "three", 3, [{"size": 3}]])
def test_a_spec_that_is_not_an_object_is_an_invalid_spec_not_a_crash(spec: Any) -> None:
    with pytest.raises(okt.InvalidSpec) as refused:
        reconciler_mod.validate_spec(MemcachedReconciler(), spec)
    assert refused.value.field == "spec"
    assert "must be an object" in str(refused.value)


def test_fuzzed_specs_are_reproducible_and_mix_valid_and_invalid_ones() -> None:
    specs = fuzz.fuzz_specs(40, seed=11)
    assert specs == fuzz.fuzz_specs(40, seed=11)
    assert len(specs) == 40
    verdicts = [fuzz.expected_verdict(spec) for spec in specs]
    assert verdicts.count(None) >= 2
    assert verdicts.count("InvalidSpec") >= 10


@pytest.mark.parametrize(("rate", "start"), [(0.1, 0), (0.1, 12345), (0.5, 7)])
def test_the_fault_proxy_seed_makes_the_first_request_fail(rate: float, start: int) -> None:
    seed = disruptions.first_request_fails(rate, start)
    assert seed >= start
    assert random.Random(seed).random() < rate


def test_the_fuzz_crd_keeps_the_kind_and_lets_any_spec_through() -> None:
    crd = fuzz.fuzz_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert crd["spec"]["names"]["kind"] == "Memcached"
    assert schema["properties"]["spec"] == {
        "description": "Anything: the reliability suite bypasses the schema.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert "required" not in schema
    assert "status" in schema["properties"]


def synthetic_results() -> list[outcome.ScenarioResult]:
    return [
        outcome.ScenarioResult(
            "kill", "kill -9", (checks.Check("all converged"),), {"kills": 3, "objects_lost": 0}, 12.0
        ),
        outcome.ScenarioResult(
            "failover",
            "failover",
            (checks.Check("never two writers at once", ("a wrote 1..3 and b wrote 2..4",)),),
            {"takeover_seconds": 16.2},
            30.0,
        ),
    ]


def test_the_summary_adds_up_the_scenarios_and_the_page_shows_every_check() -> None:
    results = synthetic_results()
    doc = report.document(results, profiles.REDUCED, seed=3)
    assert doc["summary"]["runs"] == 2
    assert doc["summary"]["passed"] == 1
    assert doc["summary"]["kills"] == 3
    assert doc["summary"]["takeover_seconds"] == 16.2
    page = report.markdown(doc)
    assert page.startswith("# Reliability")
    assert "| never two writers at once | a wrote 1..3 and b wrote 2..4 |" in page
    assert "Profile **reduced** (seed 3)" in page
    table = report.table(results)
    assert "failover" in table
    assert "FAILED" in table


# -- the scenarios, reduced, on a real control plane ---------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testbed.Lab]:
    """One control plane (audit log on, a token user per operator role, the Memcached CRD) for the scenarios."""
    with testbed.Lab(tmp_path_factory.mktemp("chaos")) as started:
        yield started


def passed(result: outcome.ScenarioResult) -> outcome.ScenarioResult:
    assert result.ok, result.report()
    return result


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_kill_9_at_random_moments_loses_nothing_and_duplicates_no_child(lab: testbed.Lab) -> None:
    result = passed(disruptions.kill_nine(lab, profiles.REDUCED, random.Random(1)))
    assert result.figures["kills"] == profiles.REDUCED.kills
    assert result.figures["objects_lost"] == result.figures["duplicates"] == result.figures["orphans"] == 0


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_an_apiserver_restart_mid_run_converges_everything_created_before_and_after(lab: testbed.Lab) -> None:
    result = passed(disruptions.apiserver_restart(lab, profiles.REDUCED, random.Random(2)))
    assert result.figures["watch_reconnects"] > 0
    assert result.figures["created_after_return"] == profiles.REDUCED.restart_late_crs


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_api_faults_converge_without_an_unhandled_exception(lab: testbed.Lab) -> None:
    result = passed(disruptions.api_faults(lab, profiles.REDUCED, random.Random(3)))
    assert result.figures["faults_injected"] > 0
    assert result.figures["startup_retries"] >= 1
    assert result.figures["crashes"] == 0


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_fuzzed_specs_end_ready_or_refused_with_a_reason_and_errors_back_off(tmp_path: pathlib.Path) -> None:
    result = passed(fuzz.fuzzed_specs(tmp_path, profiles.REDUCED, random.Random(4)))
    assert result.figures["cases"] == profiles.REDUCED.fuzz_cases
    assert 0 < result.figures["probe_reconciles_in_window"] < profiles.BACKOFF_LIMIT


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_deletions_clean_up_exactly_once_and_a_failing_cleanup_keeps_the_finalizer(lab: testbed.Lab) -> None:
    result = passed(cleanup.deletions(lab, profiles.REDUCED, random.Random(5)))
    everyone = profiles.REDUCED.deletions + profiles.REDUCED.failing_deletions
    assert result.figures["cleanups_effective"] == everyone
    assert result.figures["failing_attempts_max"] >= 2


@pytest.mark.integration
@pytest.mark.timeout(SCENARIO_TIMEOUT)
def test_the_standby_takes_over_from_a_killed_leader_and_never_writes_alongside_it(lab: testbed.Lab) -> None:
    result = passed(disruptions.failover(lab, profiles.REDUCED, random.Random(6)))
    assert result.figures["takeover_seconds"] <= disruptions.TAKEOVER_LIMIT
    assert result.figures["leader_writes"] > 0
    assert result.figures["new_leader_writes"] > 0
