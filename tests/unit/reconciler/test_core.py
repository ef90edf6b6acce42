"""One reconcile as okt.reconcile runs it: the line it logs."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import structlog
import structlog.testing

import okt
from okt.status import events
from okt.testing import FakeClient
from tests.unit.reconciler.webapps import WEBAPP, webapp


class WebApps(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind


@pytest.mark.parametrize(
    ("wrapper", "lines"),
    [(structlog.BoundLogger, ["debug"]), (structlog.make_filtering_bound_logger(logging.INFO), [])],
    ids=["any-level", "info-and-up"],
)
def test_an_object_that_is_gone_or_out_of_the_selection_is_forgotten_in_a_debug_line_not_a_give_up(
    wrapper: Any, lines: list[str]
) -> None:
    """Relabelled out of ``okt run -l`` (or deleted, or refused by the filters), an object is no longer in the cache
    the reconcile reads: it ends as "cr not found", nothing written. That was logged at info as
    ``outcome=give_up(cr not found)``, which reads as a failure; it is a debug line saying the object is forgotten."""
    fake = webapp()
    captured = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(captured, wrapper_class=wrapper, processors=[])

    run = okt.reconcile(
        WebApps(), fake, None, "shop", "gone", logger=logger, recorder=events.EventRecorder(fake, "webapp")
    )

    assert run.outcome == okt.Outcome.give_up("cr not found")  # as before: no requeue, nothing written
    assert fake.objects(WEBAPP) == [fake.stored(WEBAPP, "web", "shop")]
    assert [call.method_name for call in captured.calls] == lines
    for call in captured.calls:
        assert call.kwargs["event"] == "forgotten: the object is deleted or out of the operator's selection"
        assert "outcome" not in call.kwargs


def test_an_object_that_is_there_is_still_reconciled_at_info_when_it_wrote() -> None:
    fake = webapp()
    with structlog.testing.capture_logs() as logged:
        run = okt.reconcile(WebApps(), fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.DONE
    [line] = [entry for entry in logged if entry["event"] == "reconciled"]
    assert line["log_level"] == "info"  # its first status write


class Hostless(WebApps):
    def check(self, ctx: okt.Context) -> None:
        raise okt.InvalidSpec("spec.host: must name a host", field="spec.host")


@pytest.mark.parametrize(
    "refusal",
    [
        okt.ApiError.from_status(
            422,
            "Invalid",
            'WebApp.apps.example.com "web" is invalid: spec.port: Invalid value: "string": spec.port in body must be '
            'of type integer: "string"',
        ),
        okt.ApiError.from_status(409, "Conflict", "the object has been modified"),
    ],
    ids=["spec-refused-by-a-stricter-schema", "conflict"],
)
def test_a_permanent_error_retried_because_its_report_was_refused_says_why_in_its_line(
    refusal: okt.ApiError,
) -> None:
    """An InvalidSpec is reported once, then left alone: unless its status write was refused (a spec stored before its
    CRD got stricter makes the API server refuse every write of the object). The reconcile is then retried, and its
    line said ``outcome=retry(InvalidSpec)``, ``error=InvalidSpec: ...`` and nothing of the refusal, which was the
    reason for the retry: the line names it."""
    fake = webapp()
    fake.fail("apply", "webapps/status", refusal, times=10)

    with structlog.testing.capture_logs() as logged:
        run = okt.reconcile(Hostless(), fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    [line] = [entry for entry in logged if entry["event"] == "reconciled"]
    assert line["error"] == "InvalidSpec: spec.host: must name a host"
    assert line["status_error"] == f"{refusal.reason}: {refusal}"


def test_a_reconcile_whose_status_write_landed_has_no_status_error_in_its_line() -> None:
    fake = webapp()

    with structlog.testing.capture_logs() as logged:
        run = okt.reconcile(Hostless(), fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    [line] = [entry for entry in logged if entry["event"] == "reconciled"]
    assert "status_error" not in line


class NamedAsKubectlNamesIt(okt.Reconciler):
    kind = "deployments.apps"  # no api_version: discovery finds the kind


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}


def test_a_kind_named_as_kubectl_names_it_is_reconciled_as_the_kind_discovery_finds() -> None:
    """A Deployment's status is its controller's: a reconciler of Deployments writes none by default (``status`` is
    "off" for a built-in kind), under ``okt run`` as under ``okt.reconcile``. Named as kubectl names it, the kind was
    resolved for its address only: ``okt.reconcile`` applied okt's conditions to the Deployment's status, and called
    the controller ``deployments.apps``."""
    fake = FakeClient()
    fake.put(_deployment())
    reconciler = NamedAsKubectlNamesIt()
    before = fake.stats.snapshot()

    with structlog.testing.capture_logs() as logged:
        run = okt.reconcile(reconciler, fake, None, "shop", "web")

    assert run.outcome.kind is okt.OutcomeKind.DONE
    assert fake.stats.writes(before) == 0
    assert "status" not in fake.stored(fake.resolve("apps/v1", "Deployment"), "web", "shop")
    [line] = [entry for entry in logged if entry["event"] == "reconciled"]
    assert line["controller"] == "deployment"
    assert isinstance(reconciler, NamedAsKubectlNamesIt)
    assert type(reconciler).api_version == "apps/v1"  # resolved once: the next reconcile asks discovery nothing
