"""What the CRFinalizer does with what ``cleanup(ctx)`` returns, reconciled with the in-memory client: the finalizer
goes when the cleanup is done, and stays while it asks to come back or gives up."""

from __future__ import annotations

from typing import ClassVar

import pytest

import okt
from okt.kube import kinds
from okt.testing import FakeClient

VAULT = kinds.Kind("data.example.com/v1", "Vault", "vaults")
FINALIZER = "data.example.com/cleanup"


class VaultReconciler(okt.Reconciler):
    api_version = VAULT.api_version
    kind = VAULT.kind
    finalizer = FINALIZER
    answer: ClassVar[okt.Outcome | None] = None

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        return self.answer


def deleted_vault() -> FakeClient:
    """An in-memory API holding the Vault ``ns/v``, deleted while okt's finalizer is on it."""
    fake = FakeClient(kinds=[VAULT])
    fake.put(
        {
            "apiVersion": VAULT.api_version,
            "kind": VAULT.kind,
            "metadata": {"name": "v", "namespace": "ns", "finalizers": [FINALIZER]},
            "spec": {},
        }
    )
    fake.delete(VAULT, "v", "ns")
    return fake


@pytest.mark.parametrize("answer", [None, okt.Outcome.done()], ids=["none", "done"])
def test_a_cleanup_that_is_done_lets_the_object_go(answer: okt.Outcome | None) -> None:
    fake = deleted_vault()
    reconciler = type("Done", (VaultReconciler,), {"answer": answer})()

    run = okt.reconcile(reconciler, fake, None, "ns", "v")

    assert run.path_str == ">CRChecker>CRFinalizer>End"
    assert fake.stored(VAULT, "v", "ns") is None


@pytest.mark.parametrize("answer", [okt.requeue_after(30), okt.give_up("the bucket needs a human")])
def test_a_cleanup_that_is_not_finished_keeps_the_finalizer(answer: okt.Outcome) -> None:
    fake = deleted_vault()
    reconciler = type("Waiting", (VaultReconciler,), {"answer": answer})()

    run = okt.reconcile(reconciler, fake, None, "ns", "v")

    assert run.outcome == answer
    stored = fake.stored(VAULT, "v", "ns")
    assert stored is not None and stored["metadata"]["finalizers"] == [FINALIZER]


class RaisingGiveUp(VaultReconciler):
    def cleanup(self, ctx: okt.Context) -> None:
        raise okt.GiveUp("the bucket needs a human")


class CallingGiveUp(VaultReconciler):
    def cleanup(self, ctx: okt.Context) -> None:
        ctx.give_up("the bucket needs a human")


class CallingRequeueAfter(VaultReconciler):
    def cleanup(self, ctx: okt.Context) -> None:
        ctx.requeue_after(30)


@pytest.mark.parametrize(
    ("reconciler", "outcome"),
    [
        (RaisingGiveUp(), okt.give_up("the bucket needs a human")),
        (CallingGiveUp(), okt.give_up("the bucket needs a human")),
        (CallingRequeueAfter(), okt.requeue_after(30)),
    ],
    ids=["raise-GiveUp", "ctx.give_up", "ctx.requeue_after"],
)
def test_a_cleanup_that_asks_through_ctx_or_raises_give_up_keeps_the_finalizer_as_when_it_returns_it(
    reconciler: okt.Reconciler, outcome: okt.Outcome
) -> None:
    fake = deleted_vault()

    run = okt.reconcile(reconciler, fake, None, "ns", "v")

    assert run.outcome == outcome
    stored = fake.stored(VAULT, "v", "ns")
    assert stored is not None and stored["metadata"]["finalizers"] == [FINALIZER]


class HookReturningGiveUp(VaultReconciler):
    """OKT's way: the cleanup written on entering CRFinalizer, giving up before okt's built-in work removes anything."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.CRFinalizer:
            return okt.give_up("the bucket needs a human")
        return super().enter_in_state(state, ctx)


class HookRaisingGiveUp(VaultReconciler):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.CRFinalizer:
            raise okt.GiveUp("the bucket needs a human")
        return super().enter_in_state(state, ctx)


class HookCallingGiveUp(VaultReconciler):
    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.CRFinalizer:
            ctx.give_up("the bucket needs a human")
            return None
        return super().enter_in_state(state, ctx)


@pytest.mark.parametrize(
    "reconciler",
    [HookReturningGiveUp(), HookRaisingGiveUp(), HookCallingGiveUp(), RaisingGiveUp()],
    ids=["hook-returns", "hook-raises", "hook-ctx.give_up", "cleanup-raises"],
)
def test_a_give_up_that_leaves_the_object_held_in_deletion_is_said_on_it_whichever_hook_gave_up(
    reconciler: okt.Reconciler,
) -> None:
    fake = deleted_vault()

    run = okt.reconcile(reconciler, fake, None, "ns", "v")

    assert run.path_str == ">CRChecker>CRFinalizer>ErrorManager>GiveupManager>End"
    assert run.outcome == okt.give_up("the bucket needs a human")
    stored = fake.stored(VAULT, "v", "ns")
    assert stored is not None and stored["metadata"]["finalizers"] == [FINALIZER]
    ready = next(c for c in stored["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "GiveUp")
    assert ready["message"] == f"deletion blocked by finalizer {FINALIZER}: the bucket needs a human"


class HookGivingUpOnceDone(VaultReconciler):
    """Gives up after okt's built-in work removed the finalizer: nothing holds the object, nothing to say."""

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        return okt.give_up("done here") if state is okt.State.CRFinalizer else None


def test_a_give_up_after_the_finalizer_went_stays_quiet() -> None:
    fake = deleted_vault()

    run = okt.reconcile(HookGivingUpOnceDone(), fake, None, "ns", "v")

    assert run.path_str == ">CRChecker>CRFinalizer>GiveupManager>End"
    assert fake.stored(VAULT, "v", "ns") is None
