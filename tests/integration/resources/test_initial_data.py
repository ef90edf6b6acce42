"""Initial data on a real API server: a value ``mutate_with_initial_data()`` generates is written once and kept.

A Secret child generates its password there. Changing the Widget's spec updates the Secret (its user follows the
size), and the password must stay the one generated at creation, under both write strategies; a password removed
from the live Secret is generated again by the next write.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core
from okt.testing import envtest
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "seeded"
SECRET = f"{NAME}-credentials"


class PasswordSecret(okt.SecretResource):
    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
stringData:
  user: admin-{{ cr.spec.size }}
"""

    def mutate_with_initial_data(self) -> None:
        self.desired.setdefault("stringData", {})["password"] = secrets.token_hex(16)


class OnCreationSecret(PasswordSecret):
    """Generates the password only when there is no live object, as "initial data" reads."""

    def mutate_with_initial_data(self) -> None:
        if self.live is None:
            super().mutate_with_initial_data()


def reconciler(strategy: str, secret: type[PasswordSecret]) -> okt.Reconciler:
    class PasswordReconciler(shared.WidgetReconciler):
        owns = (secret,)
        apply_strategy = strategy

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [secret(ctx.cr)]

    return PasswordReconciler()


def converge(rec: okt.Reconciler, kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> int:
    """One reconcile; the number of writes it sent to the Secret."""
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(rec, kube, kind, namespace, NAME)
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return sum(n for (_, plural), n in shared.write_requests(kube, before).items() if plural == "secrets")


def secret_data(kube: kube_client.Client, namespace: str) -> dict[str, str]:
    live = shared.get_child(kube, "v1", "Secret", namespace, SECRET)
    assert live is not None
    return {key: base64.b64decode(value).decode() for key, value in (live.get("data") or {}).items()}


@pytest.mark.parametrize("secret", [PasswordSecret, OnCreationSecret], ids=["always", "when no live object"])
@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_generated_password_survives_spec_changes_and_comes_back_when_removed(
    strategy: str,
    secret: type[PasswordSecret],
    kube: kube_client.Client,
    other_client: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    rec = reconciler(strategy, secret)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    assert converge(rec, kube, widget_kind, namespace) == 1
    password = secret_data(kube, namespace)["password"]
    assert converge(rec, kube, widget_kind, namespace) == 0

    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    assert converge(rec, kube, widget_kind, namespace) == 1
    assert secret_data(kube, namespace) == {"user": "admin-2", "password": password}
    assert converge(rec, kube, widget_kind, namespace) == 0

    other_client.patch(
        other_client.resolve("v1", "Secret"),
        SECRET,
        [{"op": "remove", "path": "/data/password"}],
        namespace,
        patch_type="json",
    )
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=3)
    assert converge(rec, kube, widget_kind, namespace) == 1
    restored = secret_data(kube, namespace)
    assert restored["user"] == "admin-3"
    assert len(restored.get("password", "")) == 32
    assert converge(rec, kube, widget_kind, namespace) == 0
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=4)
    assert converge(rec, kube, widget_kind, namespace) == 1
    assert secret_data(kube, namespace) == {"user": "admin-4", "password": restored["password"]}


class CreateAnswerLost(kube_client.Client):
    """okt's client, whose applies of a Secret land but come back without an answer (a timeout, a cut connection)."""

    def apply(self, obj: Any, kind: kinds.Kind | None = None, **options: Any) -> dict[str, Any]:
        answer = super().apply(obj, kind, **options)
        if obj.get("kind") == "Secret":
            raise errors.ApiError.from_status(0, "Unavailable", "read timed out", method="PATCH", url=SECRET)
        return answer


class NotSeenYet(core.ApiReader):
    """A reader that has not seen the Secret yet, as okt's cache before the watch brings the create of it."""

    def get(self, kind: kinds.Kind, name: str, namespace: str | None) -> dict[str, Any] | None:
        return None if kind.kind == "Secret" else super().get(kind, name, namespace)


@pytest.mark.parametrize("secret", [PasswordSecret, OnCreationSecret], ids=["always", "when no live object"])
def test_a_create_that_landed_without_an_answer_keeps_its_password_when_the_next_read_has_not_seen_it(
    secret: type[PasswordSecret],
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
) -> None:
    rec = reconciler("apply", secret)
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    lossy = CreateAnswerLost.from_kubeconfig(control_plane.kubeconfig)
    try:
        failed = shared.reconcile_widget(rec, lossy, widget_kind, namespace, NAME)
    finally:
        lossy.close()
    assert failed.outcome.kind is okt.OutcomeKind.RETRY, failed.results.summary()
    password = secret_data(kube, namespace)["password"]  # it landed

    again = okt.reconcile(rec, kube, NotSeenYet(kube), namespace, NAME, kind=widget_kind)

    assert again.outcome == okt.Outcome.done(), again.results.summary()
    assert secret_data(kube, namespace) == {"user": "admin-1", "password": password}
