"""A new operator version under another ``prefix`` on a real kube-apiserver: with the old one in ``legacy_prefixes``
it takes over what the old version wrote — the lifecycle goes on from the phase it kept, okt's annotations under the
old prefix leave the object, a child made under it and no longer registered is pruned — and once that is done a
restart writes nothing."""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, wait_for
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

OLD = "a.example.com"
NEW = "b.example.com"


class Phase(enum.StrEnum):
    Pending = "Pending"
    Running = "Running"


LIFECYCLE = okt.Lifecycle(
    Phase,
    initial=Phase.Pending,
    transitions=[okt.Transition(Phase.Pending, Phase.Running, reason="Started")],
    requeue_after=None,
)


class WidgetNotes(okt.MutableResource):
    """A child only the old version registers."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-notes
  namespace: {{ namespace }}
data:
  note: kept by the old version
"""


class Versioned(shared.WidgetReconciler):
    """One version of the operator: it advances the lifecycle and writes its children; the ``notes`` child while
    ``with_notes`` holds. Conditions and bookkeeping go to annotations, under the version's prefix."""

    owns = (shared.WidgetConfig, WidgetNotes)
    status = "annotations"
    persistence = okt.Persistence.ANNOTATIONS
    with_notes = True

    def __init__(self) -> None:
        self.progress: list[okt.Progress[Phase]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        if state is okt.State.ObjectsGetter:
            self.progress.append(LIFECYCLE.advance(ctx))
        return super().enter_in_state(state, ctx)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        children: list[okt.Resource] = [shared.WidgetConfig(ctx.cr)]
        return [*children, WidgetNotes(ctx.cr)] if self.with_notes else children


def version(prefix: str, strategy: str, *, legacy: Sequence[str] = (), notes: bool) -> type[Versioned]:
    attributes = {"prefix": prefix, "legacy_prefixes": tuple(legacy), "apply_strategy": strategy, "with_notes": notes}
    return type("VersionedWidget", (Versioned,), attributes)


def annotations(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("annotations") or {})


def labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def under(prefix: str, keys: dict[str, str]) -> list[str]:
    return sorted(key for key in keys if key.startswith(f"{prefix}/"))


def writes(client: kube_client.Client) -> int:
    return sum(n for (verb, _), n in client.stats.snapshot().items() if verb in kube_client.WRITE_VERBS)


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_new_prefix_takes_over_the_records_and_children_kept_under_a_legacy_one(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    uid = owner["metadata"]["uid"]
    okt.reconcile(version(OLD, strategy, notes=True)(), kube, None, namespace, "w")
    before = kube.get(widget_kind, "w", namespace)
    assert annotations(before)[f"{OLD}/phase"] == "Running"
    assert labels(kube.get(kinds.CONFIG_MAP, "w-notes", namespace))[f"{OLD}/owner-uid"] == uid

    upgraded = version(NEW, strategy, legacy=(OLD,), notes=False)
    reconciler = upgraded()
    run = okt.reconcile(reconciler, kube, None, namespace, "w")  # the operator upgraded

    assert run.outcome == okt.Outcome.done()
    assert (reconciler.progress[0].start, reconciler.progress[0].moves) == (Phase.Running, ())  # not started again
    after = kube.get(widget_kind, "w", namespace)
    assert annotations(after)[f"{NEW}/phase"] == "Running"
    assert under(OLD, annotations(after)) == []  # okt's records under the old prefix are gone
    kept = {c["type"]: c for c in json.loads(annotations(after)[f"{NEW}/conditions"])}
    assert kept["Phase"]["reason"] == "Started"  # the condition the old version wrote, carried over
    assert kube.get_or_none(kinds.CONFIG_MAP, "w-notes", namespace) is None  # pruned: the old version's child
    config = kube.get(kinds.CONFIG_MAP, "w-config", namespace)
    assert labels(config)[f"{NEW}/owner-uid"] == uid
    assert under(OLD, labels(config)) == []
    assert under(OLD, annotations(config)) == []
    assert f"{NEW}/okt-hash" in annotations(config)

    sent = writes(kube)
    again = okt.reconcile(upgraded(), kube, None, namespace, "w")  # a restart over the migrated object

    assert again.outcome == okt.Outcome.done()
    assert writes(kube) == sent


def test_under_the_manager_a_child_made_under_a_legacy_prefix_is_pruned(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "m", size=1)
    okt.reconcile(version(OLD, "apply", notes=True)(), kube, None, namespace, "m")
    assert kube.get_or_none(kinds.CONFIG_MAP, "m-notes", namespace) is not None

    with RunningOperator.start(kube, version(NEW, "apply", legacy=(OLD,), notes=False), namespaces=[namespace]):
        wait_for(lambda: kube.get_or_none(kinds.CONFIG_MAP, "m-notes", namespace) is None, timeout=30)
        wait_for(lambda: under(OLD, annotations(kube.get(widget_kind, "m", namespace))) == [], timeout=30)

    assert annotations(kube.get(widget_kind, "m", namespace))[f"{NEW}/phase"] == "Running"
