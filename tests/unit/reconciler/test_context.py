"""The context of one reconcile shares nothing with another reconcile, reconciled with the in-memory client."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import okt
from okt.kube import kinds
from okt.status import events
from okt.testing import FakeClient

WEBAPP = kinds.Kind("apps.example.com/v1alpha1", "WebApp", "webapps")


class Tagging(okt.Reconciler):
    """Puts the object's name in ``ctx.params`` (a per-reconcile value a template could read), and remembers what
    each reconcile found there first."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    params: ClassVar[dict[str, Any]] = {"tier": "web"}
    found: ClassVar[list[dict[str, Any]]] = []

    def check(self, ctx: okt.Context) -> None:
        self.found.append(dict(ctx.params))
        ctx.params["owner"] = ctx.cr.name  # type: ignore[index]


def test_a_hook_that_changes_params_changes_them_for_its_own_reconcile_only() -> None:
    fake = FakeClient(kinds=[WEBAPP])
    for name in ("first", "second"):
        fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": {"name": name, "namespace": "ns"}})

    for name in ("first", "second"):
        okt.reconcile(Tagging(), fake, None, "ns", name)

    assert Tagging.found == [{"tier": "web"}, {"tier": "web"}]
    assert Tagging.params == {"tier": "web"}


class Flaky(okt.Reconciler):
    """Fails its first two reconciles, and remembers the attempt each reconcile saw."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    seen: ClassVar[list[int]] = []
    failing: ClassVar[int] = 2

    def check(self, ctx: okt.Context) -> None:
        self.seen.append(ctx.attempt)
        if len(self.seen) <= self.failing:
            raise RuntimeError("the backend is not up yet")


def test_the_attempt_counts_the_failed_reconciles_before_this_one_and_starts_again_after_a_success() -> None:
    """Kopf's ``retry`` (``ctx.attempt - 1``): a limit of retries written in a hook, from the count kept on the object
    (so another process, after a restart, counts on)."""
    fake = FakeClient(kinds=[WEBAPP])
    fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": {"name": "w", "namespace": "ns"}})

    outcomes = [okt.reconcile(Flaky(), fake, None, "ns", "w").outcome.kind.value for _ in range(4)]

    assert outcomes == ["retry", "retry", "done", "done"]
    assert Flaky.seen == [1, 2, 3, 1]  # two failures, a success, then the count starts again


class Settings(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ name }}-settings"
data: {}
"""


class Announcing(okt.Reconciler):
    """Says something about what ``about(ctx, settings)`` names, in the Updater's hook before its built-in work."""

    api_version = WEBAPP.api_version
    kind = WEBAPP.kind
    owns = (Settings,)

    def __init__(self, about: Any) -> None:
        super().__init__()
        self.about = about

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Settings(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater:
            settings = next(iter(ctx.registry))
            ctx.event("Normal", "Announced", "settings ready", about=self.about(ctx, settings))
        super().enter_in_state(state, ctx)


UNNAMED_EVENT_SUBJECTS: dict[str, tuple[Any, type[Exception], str]] = {
    "a resource not written yet": (
        lambda ctx, settings: settings,
        ValueError,
        "ctx.event(about=ConfigMap/ns/w-settings): not read nor written yet in this reconcile",
    ),
    "its desired body": (
        lambda ctx, settings: settings.desired,
        ValueError,
        "ctx.event(about=ConfigMap w-settings): no metadata.uid; an Event is about an object the API server stores",
    ),
    "a body of no kind nor name": (
        lambda ctx, settings: {"metadata": {"uid": "u-1"}},
        ValueError,
        "ctx.event(about=object): no apiVersion, no kind, no metadata.name; an Event is about",
    ),
    "its name": (
        lambda ctx, settings: settings.name,
        TypeError,
        "ctx.event(about=...) takes an okt.Resource, an object as a mapping or an okt.CustomResource, not str",
    ),
}


@pytest.mark.parametrize("subject", list(UNNAMED_EVENT_SUBJECTS))
def test_an_event_about_an_object_that_names_no_stored_object_is_refused_with_what_it_lacks(subject: str) -> None:
    about, error, said = UNNAMED_EVENT_SUBJECTS[subject]
    fake = FakeClient(kinds=[WEBAPP])
    fake.put({"apiVersion": WEBAPP.api_version, "kind": WEBAPP.kind, "metadata": {"name": "w", "namespace": "ns"}})
    before = fake.stats.snapshot()

    run = okt.reconcile(Announcing(about), fake, None, "ns", "w", recorder=events.EventRecorder(fake, "webapp"))

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(run.outcome.error, error)
    assert str(run.outcome.error).startswith(said)
    assert ("create", "configmaps") not in fake.stats.delta(before)  # the Updater's work never ran
    said_about = [(event["involvedObject"]["kind"], event["type"]) for event in fake.list(kinds.EVENT, "ns")[0]]
    assert said_about == [(WEBAPP.kind, "Warning")]  # the failure, about the WebApp; nothing about the ConfigMap
