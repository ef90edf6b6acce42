"""A new operator version under another ``field_manager`` on a real kube-apiserver: with the name an earlier version
wrote its children as in ``legacy_field_managers``, the first write of a child takes over what that manager owns, so a
field the new template dropped leaves the object; without it, the old manager keeps the field on the object for good.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind


class Settings(okt.MutableResource):
    """A ConfigMap whose ``extra`` key and ``tier`` label the ``extras`` parameter switches on."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-settings
  namespace: {{ namespace }}
{%- if extras %}
  labels:
    tier: backend
{%- endif %}
data:
  kept: "1"
{%- if extras %}
  extra: "1"
{%- endif %}
"""


class Versioned(shared.WidgetReconciler):
    owns = (Settings,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Settings(ctx.cr, params=ctx.params)]


def version(manager: str, *, extras: bool, strategy: str = "apply", legacy: Sequence[str] = ()) -> type[okt.Reconciler]:
    attributes: dict[str, Any] = {
        "field_manager": manager,
        "apply_strategy": strategy,
        "legacy_field_managers": tuple(legacy),
        "params": {"extras": extras},
    }
    return type("VersionedWidget", (Versioned,), attributes)


def settings(kube: kube_client.Client, namespace: str) -> dict[str, Any]:
    return kube.get(kinds.CONFIG_MAP, "w-settings", namespace)


def managers(obj: Mapping[str, Any]) -> set[tuple[str, str]]:
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or ()}


def reconcile(reconciler: type[okt.Reconciler], kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> okt.Run:
    run = shared.reconcile_widget(reconciler(), kube, kind, namespace, "w")
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return run


# The earlier version: it applied as another manager, or wrote through the merge path (whose writes the server
# records as manager okt, operation Update, whatever the field manager).
EARLIER: dict[str, tuple[str, str, tuple[str, str]]] = {
    "applied as another manager": ("old-operator", "apply", ("old-operator", "Apply")),
    "merge path": ("old-operator", "merge", ("okt", "Update")),
}


@pytest.mark.parametrize("earlier", EARLIER)
def test_fields_a_legacy_field_manager_owns_leave_when_the_template_drops_them(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, earlier: str
) -> None:
    manager, strategy, entry = EARLIER[earlier]
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    reconcile(version(manager, extras=True, strategy=strategy), kube, widget_kind, namespace)
    assert entry in managers(settings(kube, namespace))
    upgraded = version("new-operator", extras=False, legacy=(entry[0],))

    reconcile(upgraded, kube, widget_kind, namespace)

    live = settings(kube, namespace)
    assert live["data"] == {"kept": "1"}
    assert "tier" not in (live["metadata"].get("labels") or {})
    assert entry not in managers(live)
    assert ("new-operator", "Apply") in managers(live)
    before = kube.stats.snapshot()
    reconcile(upgraded, kube, widget_kind, namespace)
    assert {k: n for k, n in shared.write_requests(kube, before).items() if k[1] == "configmaps"} == {}


def test_without_legacy_field_managers_the_earlier_managers_fields_stay(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """What the declaration is for: the server keeps a field any manager still owns."""
    shared.make_widget(kube, widget_kind, namespace, "w", size=1)
    reconcile(version("old-operator", extras=True), kube, widget_kind, namespace)

    reconcile(version("new-operator", extras=False), kube, widget_kind, namespace)

    live = settings(kube, namespace)
    assert live["data"] == {"kept": "1", "extra": "1"}
    assert ("old-operator", "Apply") in managers(live)
