"""Where okt keeps its consecutive-error count: ``status.okt`` or ``<prefix>/error-count`` annotations, as chosen.

Either place counts up on each failed reconcile and is cleared by the first success; the other place is never
touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "demo"
ERROR_ANNOTATION = "okt.io/error-count"


class AnnotationsReconciler(shared.WidgetReconciler):
    persistence: ClassVar[okt.Persistence] = okt.Persistence.ANNOTATIONS


class StatusReconciler(shared.WidgetReconciler):
    persistence: ClassVar[okt.Persistence] = okt.Persistence.STATUS


def unreachable(cls: type[okt.Reconciler]) -> okt.Reconciler:
    """The reconciler, failing with a transient error (a backend that does not answer) while ``spec.size`` is 9."""

    class Unreachable(cls):  # type: ignore[valid-type,misc]
        def check(self, ctx: okt.Context) -> None:
            if ctx.spec.size == 9:
                raise okt.TemporaryError("the backend does not answer")

    return Unreachable()


def annotation_count(obj: dict[str, Any]) -> int | None:
    value = (obj["metadata"].get("annotations") or {}).get(ERROR_ANNOTATION)
    return None if value is None else int(value)


def status_count(obj: dict[str, Any]) -> int | None:
    okt_status = (obj.get("status") or {}).get("okt")
    return None if okt_status is None else int(okt_status["errorCount"])


PLACES = [
    pytest.param(AnnotationsReconciler, annotation_count, status_count, id="annotations"),
    pytest.param(StatusReconciler, status_count, annotation_count, id="status"),
]


@pytest.mark.parametrize(("reconciler_cls", "count_in", "count_elsewhere"), PLACES)
def test_each_failed_reconcile_counts_up_in_the_chosen_place_only(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    reconciler_cls: type[okt.Reconciler],
    count_in: Callable[[dict[str, Any]], int | None],
    count_elsewhere: Callable[[dict[str, Any]], int | None],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=9)
    seen = []

    for _ in range(3):
        run = shared.reconcile_widget(unreachable(reconciler_cls), kube, widget_kind, namespace, NAME)
        assert isinstance(run.outcome.error, okt.TemporaryError)
        live = shared.get_widget(kube, widget_kind, namespace, NAME)
        seen.append(count_in(live))
        assert count_elsewhere(live) is None

    assert seen == [1, 2, 3]


@pytest.mark.parametrize(("reconciler_cls", "count_in", "count_elsewhere"), PLACES)
def test_a_permanent_error_is_counted_once_and_then_writes_nothing(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    reconciler_cls: type[okt.Reconciler],
    count_in: Callable[[dict[str, Any]], int | None],
    count_elsewhere: Callable[[dict[str, Any]], int | None],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=0)
    run = shared.reconcile_widget(reconciler_cls(), kube, widget_kind, namespace, NAME)
    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert run.outcome.reason is not None and run.outcome.reason.startswith("InvalidSpec: spec.size")
    before = kube.stats.snapshot()

    for _ in range(3):
        shared.reconcile_widget(reconciler_cls(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {}
    assert count_in(shared.get_widget(kube, widget_kind, namespace, NAME)) == 1


@pytest.mark.parametrize(
    ("reconciler_cls", "count_in", "cleared"),
    [
        pytest.param(AnnotationsReconciler, annotation_count, None, id="annotations"),
        pytest.param(StatusReconciler, status_count, 0, id="status"),
    ],
)
def test_the_first_success_clears_the_error_count(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    reconciler_cls: type[okt.Reconciler],
    count_in: Callable[[dict[str, Any]], int | None],
    cleared: int | None,
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=9)
    shared.reconcile_widget(unreachable(reconciler_cls), kube, widget_kind, namespace, NAME)
    shared.reconcile_widget(unreachable(reconciler_cls), kube, widget_kind, namespace, NAME)
    assert count_in(shared.get_widget(kube, widget_kind, namespace, NAME)) == 2
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(reconciler_cls(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert count_in(shared.get_widget(kube, widget_kind, namespace, NAME)) == cleared
    before = kube.stats.snapshot()
    shared.reconcile_widget(reconciler_cls(), kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, before) == {}, "a cleared count is not written again"


@pytest.mark.parametrize(("reconciler_cls", "count_in", "count_elsewhere"), PLACES)
def test_a_widget_that_never_failed_carries_no_error_count(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    reconciler_cls: type[okt.Reconciler],
    count_in: Callable[[dict[str, Any]], int | None],
    count_elsewhere: Callable[[dict[str, Any]], int | None],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    shared.reconcile_widget(reconciler_cls(), kube, widget_kind, namespace, NAME)

    live = shared.get_widget(kube, widget_kind, namespace, NAME)
    assert count_in(live) is None
    assert count_elsewhere(live) is None
