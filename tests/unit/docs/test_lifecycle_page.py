"""``docs/concepts/lifecycle.md``: its python blocks make one operator, in page order, and it runs as the page says.

The blocks are run as written, one after the other in one module (as a reader pastes them into one file); the
reconciler they declare is then reconciled with the in-memory client: a new WebApp moves to Provisioning and gets its
setup Job, and once that Job is Complete it moves to Running, records the installed version and the Job is pruned. The
last block declares an old phase name: an object kept under it is in the phase it maps to, written under its new name.
"""

from __future__ import annotations

import pathlib
import re
import types
from typing import Any

import okt
from okt.kube import kinds
from okt.testing import FakeClient, condition

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "concepts" / "lifecycle.md"
WEBAPP = kinds.Kind("lifecycle.example.com/v1alpha1", "WebApp", "webapps")
JOB = kinds.Kind("batch/v1", "Job", "jobs")
PHASE = "okt.io/phase"

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _page_module() -> types.ModuleType:
    text = PAGE.read_text(encoding="utf-8")
    module = types.ModuleType("lifecycle_page")
    for match in _BLOCK.finditer(text):
        line = text[: match.start()].count("\n") + 2
        code = "\n" * (line - 1) + match.group(1)  # tracebacks name the page's own lines
        exec(compile(code, str(PAGE), "exec"), module.__dict__)
    return module


def _webapp(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": WEBAPP.api_version,
        "kind": WEBAPP.kind,
        "metadata": {"name": name, "namespace": "shop", "generation": 1, "annotations": annotations or {}},
        "spec": {"image": "registry.example.com/web", "version": "1.25"},
    }


def _phase(fake: FakeClient, name: str) -> str | None:
    stored = fake.stored(WEBAPP, name, "shop")
    assert stored is not None
    annotations: dict[str, str] = stored["metadata"].get("annotations") or {}
    return annotations.get(PHASE)


def test_the_pages_blocks_run_in_order_and_declare_a_lifecycle_and_its_reconciler() -> None:
    page = _page_module()

    assert isinstance(page.LIFECYCLE, okt.Lifecycle)
    assert page.LIFECYCLE.legacy_phases == {"Installing": page.Phase.Provisioning}
    assert issubclass(page.WebAppReconciler, okt.Reconciler)


def test_the_pages_operator_provisions_with_its_setup_job_then_runs_once_the_job_completes() -> None:
    page = _page_module()
    fake = FakeClient(kinds=[WEBAPP])
    fake.put(_webapp("web"))

    okt.reconcile(page.WebAppReconciler(), fake, None, "shop", "web")

    assert _phase(fake, "web") == "Provisioning"
    job = fake.stored(JOB, "web-setup", "shop")
    assert job is not None
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/web:1.25"

    complete = {"type": "Complete", "status": "True"}
    fake.put({**job, "status": {"succeeded": 1, "conditions": [complete]}})
    okt.reconcile(page.WebAppReconciler(), fake, None, "shop", "web")

    assert _phase(fake, "web") == "Running"
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None
    assert stored["status"]["installedVersion"] == "1.25"
    phase = condition(stored, "Phase")
    assert phase is not None
    assert (phase["status"], phase["reason"], phase["message"]) == (
        "True",
        "SetupSucceeded",
        "phase Running (from Provisioning)",
    )
    assert fake.stored(JOB, "web-setup", "shop") is None


def test_the_pages_old_phase_name_is_read_as_its_phase_and_written_under_the_new_one() -> None:
    page = _page_module()
    fake = FakeClient(kinds=[WEBAPP])
    fake.put(_webapp("old", {PHASE: "Installing"}))

    okt.reconcile(page.WebAppReconciler(), fake, None, "shop", "old")

    assert _phase(fake, "old") == "Provisioning"
    assert fake.stored(JOB, "old-setup", "shop") is not None
