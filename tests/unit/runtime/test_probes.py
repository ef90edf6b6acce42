"""The operator's own probes: values, failures by class name, a timeout per report, a report kept a few seconds."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pydantic
import pytest
import structlog

from okt.runtime import probes as probes_mod
from okt.testing import wait_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_report_gives_each_probes_value_and_names_a_failure_by_its_class_only() -> None:
    def database() -> str:
        raise ConnectionError("postgres://admin:hunter2@db:5432 refused")

    probes = probes_mod.Probes({"depth": lambda: 3, "last": lambda: {"seen": ["a", 1.5, None]}, "database": database})

    report = probes.report()

    assert report == {
        "probes": {"depth": 3, "last": {"seen": ["a", 1.5, None]}},
        "failed": {"database": "ConnectionError"},
    }
    assert "hunter2" not in repr(report)


class Credentials(pydantic.BaseModel):
    port: int


def test_a_probe_failing_on_a_validation_error_is_logged_by_its_fields_never_the_values_it_was_given() -> None:
    """pydantic's text repeats each input: a probe checking a Secret's data would log the Secret's value."""

    def backend() -> int:
        return Credentials.model_validate({"port": "s3cr3t-t0ken"}).port

    with structlog.testing.capture_logs() as logs:
        report = probes_mod.Probes({"backend": backend}).report()

    assert report["failed"] == {"backend": "ValidationError"}
    assert [(log["event"], log["probe"]) for log in logs] == [("a probe failed", "backend")]
    assert "port" in logs[0]["error"]
    assert "s3cr3t" not in repr(logs)


@pytest.mark.parametrize(
    ("value", "why"), [({1, 2}, "not JSON: set"), (float("nan"), "not JSON: float"), (object(), "not JSON: object")]
)
def test_a_value_that_is_no_json_is_a_failure_named_by_its_type(value: Any, why: str) -> None:
    assert probes_mod.Probes({"odd": lambda: value}).report() == {"probes": {}, "failed": {"odd": why}}


def test_a_report_is_kept_and_the_probes_are_not_called_again_until_it_is_stale() -> None:
    calls: list[int] = []

    def counted() -> int:
        calls.append(1)
        return len(calls)

    clock = Clock()
    probes = probes_mod.Probes({"n": counted}, keep_for=10.0, clock=clock)

    first = [probes.report() for _ in range(5)]
    clock.now += 9.9
    kept = probes.report()
    clock.now += 0.1
    fresh = probes.report()

    assert first == [{"probes": {"n": 1}, "failed": {}}] * 5
    assert kept == {"probes": {"n": 1}, "failed": {}}
    assert fresh == {"probes": {"n": 2}, "failed": {}}
    assert len(calls) == 2


def test_a_probe_that_hangs_times_out_and_is_not_called_again_while_its_call_runs() -> None:
    release = threading.Event()
    calls: list[int] = []

    def hangs() -> str:
        calls.append(1)
        release.wait(30)
        return "back"

    probes = probes_mod.Probes({"hangs": hangs, "quick": lambda: 1}, timeout=0.5, keep_for=0.0)

    first = probes.report()
    second = probes.report()
    called_meanwhile = len(calls)
    release.set()

    assert first == {"probes": {"quick": 1}, "failed": {"hangs": "timed out after 0.5 s"}}
    assert second == {"probes": {"quick": 1}, "failed": {"hangs": "still running (timed out after 0.5 s)"}}
    assert called_meanwhile == 1
    # Once its call returned, the next report calls it again.
    wait_for(lambda: probes.report()["probes"].get("hangs") == "back", timeout=10)
    assert len(calls) >= 2


def test_a_probe_runs_on_a_thread_of_its_own() -> None:
    names: list[str] = []
    probes_mod.Probes({"where": lambda: names.append(threading.current_thread().name)}).report()
    assert names == ["okt-probe-where"]


@pytest.mark.parametrize(
    ("name", "fn", "error", "match"),
    [
        ("n", 3, TypeError, r"^the probe 'n' is a function of no arguments, got int$"),
        (
            "n",
            lambda x: x,
            TypeError,
            r"^the probe 'n' \(<lambda>\) needs arguments \(x\), but okt calls a probe with none$",
        ),
        ("", lambda: 1, ValueError, "a probe's name is a non-empty printable string"),
    ],
)
def test_a_probe_okt_cannot_call_is_refused_by_the_manager_s_probes(
    name: str, fn: Any, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        probes_mod.Probes({name: fn})


def test_an_async_probe_is_awaited_and_its_value_reported() -> None:
    async def queue_depth() -> int:
        await asyncio.sleep(0)
        return 4

    async def database() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("refused")

    report = probes_mod.Probes({"depth": queue_depth, "database": database}).report()

    assert report == {"probes": {"depth": 4}, "failed": {"database": "ConnectionError"}}
