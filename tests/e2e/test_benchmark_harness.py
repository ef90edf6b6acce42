"""The benchmark harness end to end, small: ``python -m benchmarks.run --n 5 --rounds 1 --skip-kopf``.

One run of the real harness (a fresh control plane per measurement, both floors and both okt rows as subprocesses)
feeds the end-to-end checks; the report's arithmetic is also pinned on synthetic input (the audit-log counting every
figure rests on is pinned with :class:`okt.testing.AuditLog`, in ``tests/unit/testing/test_audit.py``).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import manifests, report, run  # noqa: E402

ROWS = ("raw", "raw-okt", "okt", "okt-merge", "okt-final")
HARNESS_TIMEOUT = 540


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench")
    json_path, markdown_path = out / "latest.json", out / "benchmarks.md"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--n",
            "5",
            "--rounds",
            "1",
            "--skip-kopf",
            "--steady-seconds",
            "1",
            "--json",
            str(json_path),
            "--markdown",
            str(markdown_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HARNESS_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, f"harness failed:\n{completed.stderr[-4000:]}\n{completed.stdout[-2000:]}"
    return json.loads(json_path.read_text()), markdown_path.read_text()


@pytest.mark.integration
@pytest.mark.timeout(HARNESS_TIMEOUT + 60)
@pytest.mark.parametrize("row", ROWS)
def test_every_contender_converges_in_every_phase(bench_run: tuple[dict[str, Any], str], row: str) -> None:
    document, _ = bench_run
    assert document["summary"][row]["converged"] is True
    (measured,) = document["rounds"][row]
    assert measured["converged"] is True and measured["error"] is None
    assert measured["converge"]["seconds"] > 0
    assert measured["spec_change"]["seconds"] > 0
    # The spec change's CPU is the process's in that phase; the process's since its start (its restart's too) beside.
    change = measured["spec_change"]
    assert 0 <= change["cpu_seconds"] <= change["process_cpu_seconds"] - measured["restart"]["cpu_seconds"] + 0.02
    by_verb = measured["converge"]["requests"]["by_verb"]
    # The floors and okt's merge strategy create the children; okt applies them (a PATCH that creates).
    assert by_verb.get("create", 0) + by_verb.get("patch", 0) >= 3 * 5


@pytest.mark.integration
@pytest.mark.timeout(HARNESS_TIMEOUT + 60)
@pytest.mark.parametrize("row", ["okt", "okt-merge", "okt-final", "raw", "raw-okt"])
def test_a_restart_over_converged_objects_writes_nothing(bench_run: tuple[dict[str, Any], str], row: str) -> None:
    document, _ = bench_run
    assert document["summary"][row]["median"]["restart.requests.writes"] == 0
    (measured,) = document["rounds"][row]
    assert measured["restart"]["requests"]["writes"] == 0
    assert measured["restart"]["idle_after_seconds"] < 15
    # Counted until the process was idle, not only for the 1 s window the run asks for: okt is still syncing then.
    assert measured["restart"]["window_seconds"] >= measured["restart"]["idle_after_seconds"]
    # Its CPU, and what the control plane spent meanwhile (the API server at least answered its lists).
    assert measured["restart"]["cpu_seconds"] > 0
    assert measured["restart"]["control_plane_cpu_seconds"]["kube-apiserver"] > 0
    assert measured["restart"]["control_plane_window_seconds"] >= measured["restart"]["idle_after_seconds"] - 1


@pytest.mark.integration
@pytest.mark.timeout(HARNESS_TIMEOUT + 60)
def test_the_report_names_the_machine_and_every_row(bench_run: tuple[dict[str, Any], str]) -> None:
    document, page = bench_run
    assert document["settings"]["n"] == 5
    assert document["machine"]["cores"] >= 1
    assert document["machine"]["kubernetes"].startswith("v1.")
    for label in ("raw floor", "| okt |", "okt + finalizer"):
        assert label in page
    assert document["summary"]["raw"]["converge_ratio"] == 1.0


@pytest.mark.parametrize(
    ("rounds", "expected_seconds"),
    [([1.0], 1.0), ([1.0, 3.0], 2.0), ([5.0, 1.0, 2.0], 2.0)],
)
def test_the_summary_is_the_median_over_converged_rounds(rounds: list[float], expected_seconds: float) -> None:
    results = [{"round": i, "converged": True, "converge": {"seconds": s}} for i, s in enumerate(rounds)]
    results.append({"round": 99, "converged": False, "error": "BenchTimeout: x"})
    summary = report.summarize(results)
    assert summary["median"]["converge.seconds"] == expected_seconds
    assert summary["converged"] is False
    assert summary["errors"] == ["BenchTimeout: x"]


def test_ratios_are_taken_against_the_floor() -> None:
    summaries: dict[str, dict[str, Any]] = {
        "raw": {"median": {"converge.seconds": 2.0, "spec_change.seconds": 1.0}},
        "okt": {"median": {"converge.seconds": 3.0, "spec_change.seconds": 1.5}},
    }
    report.add_ratios(summaries)
    assert (summaries["okt"]["converge_ratio"], summaries["okt"]["spec_change_ratio"]) == (1.5, 1.5)
    assert summaries["raw"]["converge_ratio"] == 1.0


def _document(n: int, okt_seconds: float) -> dict[str, Any]:
    summaries: dict[str, dict[str, Any]] = {
        "raw": {"converged": True, "median": {"converge.seconds": 2.0, "converge.requests.writes": 4.0 * n}},
        "okt": {"converged": True, "median": {"converge.seconds": okt_seconds, "converge.requests.writes": 4.0 * n}},
    }
    report.add_ratios(summaries)
    facts = ("cpu_model", "cores", "memory_gib", "os", "python", "kubernetes", "okt", "kopf", "date")
    machine = dict.fromkeys(facts, "x")
    settings = {"n": n, "rounds": 1, "workers": 8, "steady_seconds": 30.0, "size": 1, "new_size": 2}
    return {"machine": machine, "settings": settings, "summary": summaries, "rounds": {}}


def test_the_page_shows_every_size_smallest_first_with_each_ratio_at_a_glance() -> None:
    page = report.page(
        {"n1000.json": _document(1000, 3.0), "n200.json": _document(200, 2.2)}, {"okt": "okt"}, {"okt": "the sample"}
    )
    assert page.index("## N = 200") < page.index("## N = 1000")
    assert "| 200 | okt | 1.10 | 4.0 | — | — | — |" in page
    assert "| 1000 | okt | 1.50 | 4.0 | — | — | — |" in page
    assert "are in `n1000.json`" in page and "are in `n200.json`" in page


def test_the_realistic_mix_runs_the_replicaset_controller_and_writes_beside_the_other_runs_not_over_them() -> None:
    mixed = run.parse(["--n", "1000", "--mix", "--contenders", "raw,okt"])
    assert mixed.mix and "replicaset" in mixed.controllers
    assert mixed.sizes() == [1, 2, 3] * 333 + [1]
    assert mixed.json_path == run.RESULTS / "mix" / "n1000.json"
    assert mixed.markdown_path == run.RESULTS / "mix" / "benchmarks.md"
    plain = run.parse(["--n", "1000"])
    assert not plain.mix and "replicaset" not in plain.controllers and plain.sizes() == 1
    assert (plain.json_path, plain.markdown_path) == (run.RESULTS / "n1000.json", run.DEFAULT_PAGE)
    document = _document(1000, 3.0)
    document["settings"] |= mixed.to_json()
    page = report.page({"mix/n1000.json": document}, {"okt": "okt"}, {"okt": "the sample"})
    assert "Generated by `python -m benchmarks.run --mix`" in page
    assert "each CR asks for 1-3 replicas and the replicaset controller makes the Pods" in page
    assert "spec change size" not in page


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2, "d": 3}]}}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": [1, 2]}, {"a": [1]}, False),
        ({"a": 1}, {}, False),
    ],
)
def test_a_child_is_unchanged_when_the_desired_fields_are_a_subset_of_the_live_ones(
    desired: dict[str, Any], live: dict[str, Any], expected: bool
) -> None:
    assert manifests.is_subset(desired, live) is expected


@pytest.mark.parametrize(("size", "tier"), [(1, "small"), (3, "small"), (4, "medium"), (10, "medium"), (11, "large")])
def test_the_settings_tier_follows_the_size(size: int, tier: str) -> None:
    config = manifests.config_map("m", "ns", {"size": size})
    assert config["data"]["MEMCACHED_TIER"] == tier
    assert manifests.deployment("m", "ns", {"size": size})["spec"]["replicas"] == size


def test_the_okt_shaped_floor_adds_what_okt_adds_to_a_child() -> None:
    from benchmarks import raw_floor

    deployment = manifests.deployment("cache", "ns", {"size": 2})
    plain = json.loads(json.dumps(deployment))

    raw_floor.okt_shape(deployment, "uid-1")

    meta = deployment["metadata"]
    assert meta["labels"] == {**plain["metadata"]["labels"], raw_floor.OWNER_LABEL: "uid-1"}
    assert len(meta["annotations"][raw_floor.HASH_ANNOTATION]) == 64
    assert raw_floor.SETTINGS_ANNOTATION in deployment["spec"]["template"]["metadata"]["annotations"]
    assert deployment["spec"]["template"]["spec"] == plain["spec"]["template"]["spec"]


# -- the scale run's okt-only phases: fresh events first, warm standby -----------------------------------------------

SCALE_N = 10
SCALE_TIMEOUT = 900


@pytest.fixture(scope="module")
def scale_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    json_path = tmp_path_factory.mktemp("scale") / "scale.json"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.scale",
            "--n",
            str(SCALE_N),
            "--contenders",
            "raw,okt",
            "--steady-seconds",
            "5",
            "--json",
            str(json_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SCALE_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, f"scale run failed:\n{completed.stderr[-4000:]}\n{completed.stdout[-2000:]}"
    return json.loads(json_path.read_text()), completed.stdout


@pytest.mark.integration
@pytest.mark.timeout(SCALE_TIMEOUT + 60)
def test_a_fresh_object_after_a_restart_is_ready_and_the_sweep_is_read_from_the_operators_metrics(
    scale_run: tuple[dict[str, Any], str],
) -> None:
    document, _ = scale_run
    fresh = document["sizes"][str(SCALE_N)]["okt"]["phases"]["fresh_first"]
    assert fresh["applicable"] is True
    assert fresh["seconds"] > 0 and fresh["target_seconds"] == 3.0 and isinstance(fresh["met"], bool)
    assert fresh["created_after_reconciling_seconds"] >= 1.0
    # The verdict on the sweep is the operator's own gauge at that moment, not an assumption.
    assert fresh["sweep_running_at_ready"] is (fresh["at_ready"]["sweep_keys_waiting"] > 0)
    assert "okt_workqueue_depth_by_priority" in fresh["evidence"]
    # Every converged object was swept, and the fresh one reconciled, once the queue was empty.
    assert fresh["settled"]["reconciles"] >= SCALE_N + 1
    assert fresh["at_ready"]["cached_objects"]["Memcached.cache.example.com/v1alpha1"] == SCALE_N + 1


@pytest.mark.integration
@pytest.mark.timeout(SCALE_TIMEOUT + 60)
def test_the_standby_reconciles_after_the_leader_is_killed_and_never_writes_beside_it(
    scale_run: tuple[dict[str, Any], str],
) -> None:
    document, _ = scale_run
    failover = document["sizes"][str(SCALE_N)]["okt"]["phases"]["failover"]
    assert failover["applicable"] is True
    assert failover["seconds"] > 0 and isinstance(failover["met"], bool)
    assert failover["target_seconds"] == failover["lease_duration_seconds"] + 2.0
    assert failover["generation"] >= 2
    assert 0 < failover["became_leader_after_kill_seconds"] <= failover["seconds"]
    assert failover["killed_leader_requests_after_kill"] == 0
    assert failover["standby_writes_before_leading"] == 0
    assert failover["standby_requests_before_leading"]["by_verb"].get("watch", 0) >= 1  # its caches were warm


@pytest.mark.integration
@pytest.mark.timeout(SCALE_TIMEOUT + 60)
def test_the_floor_has_neither_phase_and_the_table_prints_each_target_beside_its_figure_under_the_servers_version(
    scale_run: tuple[dict[str, Any], str],
) -> None:
    document, tables = scale_run
    assert document["machine"]["kubernetes"].startswith("v1.")
    floor = document["sizes"][str(SCALE_N)]["raw"]["phases"]
    assert floor["fresh_first"]["applicable"] is False and floor["failover"]["applicable"] is False
    (okt_row,) = [line for line in tables.splitlines() if line.startswith(f"| {SCALE_N} | okt | ") and "≤ 3 s" in line]
    assert "≤ 17 s" in okt_row
    assert any(line.startswith(f"| {SCALE_N} | raw | not applicable") for line in tables.splitlines())


@pytest.mark.integration
@pytest.mark.timeout(SCALE_TIMEOUT + 60)
def test_the_floor_times_a_list_of_everything_and_the_table_sets_each_restart_beside_it(
    scale_run: tuple[dict[str, Any], str],
) -> None:
    document, tables = scale_run
    results = document["sizes"][str(SCALE_N)]
    listed = results["raw"]["restart"]["list_everything_seconds"]
    # A fresh process that read all four kinds: the check of its printed count is the harness's own.
    assert 0 < listed < results["raw"]["converge"]["seconds"] + 30
    assert "list_everything_seconds" not in results["okt"]["restart"]
    header = next(line for line in tables.splitlines() if line.startswith("| N | contender |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    (okt_row,) = [line for line in tables.splitlines() if line.startswith(f"| {SCALE_N} | okt | ") and "≤" not in line]
    cells = [cell.strip() for cell in okt_row.strip("|").split("|")]
    ratio = float(cells[columns.index("rst idle x floor list-all")])
    assert ratio == round(results["okt"]["restart"]["idle_after_seconds"] / listed, 2)


def test_the_phase_table_prints_each_figure_beside_its_target_and_a_failure_as_such() -> None:
    from benchmarks import scale

    fresh = {
        "applicable": True,
        "seconds": 0.5,
        "target_seconds": 3.0,
        "met": True,
        "sweep_running_at_ready": True,
        "at_ready": {"sweep_keys_waiting": 812, "reconciles": 190},
        "settled": {"reconciles": 1001},
    }
    failover = {
        "applicable": True,
        "seconds": 18.4,
        "target_seconds": 17.0,
        "met": False,
        "became_leader_after_kill_seconds": 16.2,
        "killed_leader_requests_after_kill": 0,
        "standby_writes_before_leading": 0,
    }
    document = {
        "sizes": {
            "1000": {
                "okt": {"phases": {"fresh_first": fresh, "failover": failover}},
                "okt-merge": {"phases": {"error": "BenchTimeout: the standby"}},
                "kopf": {
                    "phases": {"fresh_first": {"applicable": False, "why": "n/a"}, "failover": {"applicable": False}}
                },
            }
        }
    }
    rows = scale.phase_table(document).splitlines()
    assert (
        "| 1000 | okt | 0.50 | ≤ 3 s, met | 812 (running) | 190 of 1001 | 18.40 | ≤ 17 s, MISSED | 16.20 | 0 | 0 |"
        in rows
    )
    assert "| 1000 | okt-merge | failed: BenchTimeout: the standby |" in rows
    assert "| 1000 | kopf | n/a | - | - | - | not applicable | - | - | - | - |" in rows
