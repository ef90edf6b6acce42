"""One reconcile called directly (``okt.reconcile``, reading from the API), with the in-memory client: whatever the
API answers, the reconcile ends in an outcome and never raises."""

from __future__ import annotations

import okt
from okt.kube import kinds
from okt.testing import FakeClient

WEBAPP = kinds.Kind("apps.example.com/v1alpha1", "WebApp", "webapps")


class WebAppReconciler(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind


def webapp() -> FakeClient:
    """An in-memory API holding the WebApp ``shop/web``."""
    fake = FakeClient(kinds=[WEBAPP])
    fake.put(
        {
            "apiVersion": WEBAPP.api_version,
            "kind": WEBAPP.kind,
            "metadata": {"name": "web", "namespace": "shop", "generation": 1},
            "spec": {},
        }
    )
    return fake


def test_a_primary_the_api_fails_to_read_is_retried_and_never_taken_for_gone() -> None:
    fake = webapp()
    fake.fail("get", "webapps", okt.ApiError.from_status(500, "InternalError", "etcdserver: request timed out"))

    run = okt.reconcile(WebAppReconciler(), fake, None, "shop", "web")

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(run.outcome.error, okt.ServerError)
    assert run.path_str == ">CRChecker>ErrorManager>End"
    assert run.results.count(okt.Operation.CR_NOT_FOUND) == 0
    stored = fake.stored(WEBAPP, "web", "shop")
    assert stored is not None and "status" not in stored  # nothing written about an object okt could not read

    assert okt.reconcile(WebAppReconciler(), fake, None, "shop", "web").outcome.kind is okt.OutcomeKind.DONE
