"""``hashable_ref()`` bounds what okt repairs (OKT's contract): a field left out of the hash may be managed by
another controller, and okt leaves its value alone — no write, not even on drift — until the hash itself changes."""

from __future__ import annotations

import base64
import pathlib
import re
from typing import Any

import pytest

import okt
from okt import names
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

SECRET = kinds.BUILTIN[("v1", "Secret")]


class GreetingOnly(shared.WidgetConfig):
    """Hashes the greeting and the labels: ``data.size`` is another controller's business once created."""

    def hashable_ref(self) -> Any:
        return {"data": {"greeting": self.desired["data"]["greeting"]}, "labels": self.desired["metadata"]["labels"]}


class Bounded(shared.WidgetReconciler):
    owns = (GreetingOnly,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GreetingOnly(ctx.cr)]


def writes_of_one_reconcile(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[tuple[str, str], int]:
    before = kube.stats.snapshot()
    run = shared.reconcile_widget(Bounded(), kube, kind, namespace, "b")
    assert run.outcome == okt.Outcome.done(), run.results.summary()
    return shared.write_requests(kube, before)


def test_a_field_outside_hashable_ref_keeps_another_writers_value_and_costs_no_write(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "b", size=1, greeting="hi")
    writes_of_one_reconcile(kube, widget_kind, namespace)
    kube.patch(kinds.CONFIG_MAP, "b-config", {"data": {"size": "7"}}, namespace)  # the other controller

    writes = writes_of_one_reconcile(kube, widget_kind, namespace)

    assert writes == {}
    assert kube.get(kinds.CONFIG_MAP, "b-config", namespace)["data"] == {"greeting": "hi", "size": "7"}

    kube.patch(kinds.CONFIG_MAP, "b-config", {"data": {"greeting": "edited"}}, namespace)  # drift inside the hash
    writes = writes_of_one_reconcile(kube, widget_kind, namespace)

    assert writes == {("apply", "configmaps"): 1}
    assert kube.get(kinds.CONFIG_MAP, "b-config", namespace)["data"]["greeting"] == "hi"


class DataOnly(shared.WidgetConfig):
    """Hashes the data alone: the labels are left to others, okt's own owner label aside."""

    def hashable_ref(self) -> Any:
        return {"data": self.desired["data"]}


class DataOnlyReconciler(shared.WidgetReconciler):
    owns = (DataOnly,)
    apply_strategy = "apply"

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [DataOnly(ctx.cr)]


class DataOnlyMergeReconciler(DataOnlyReconciler):
    apply_strategy = "merge"


@pytest.mark.parametrize("reconciler", [DataOnlyReconciler, DataOnlyMergeReconciler], ids=["apply", "merge"])
def test_okts_owner_label_removed_from_a_child_whose_hash_leaves_out_the_labels_is_put_back(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, reconciler: type[okt.Reconciler]
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, "b", size=1, greeting="hi")
    shared.reconcile_widget(reconciler(), kube, widget_kind, namespace, "b")
    label = names.Names().owner_label
    remove = [{"op": "remove", "path": "/metadata/labels/" + label.replace("/", "~1")}]
    kube.patch(kinds.CONFIG_MAP, "b-config", remove, namespace, patch_type="json", field_manager="editor")
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler(), kube, widget_kind, namespace, "b")

    assert run.outcome == okt.Outcome.done(), run.results.summary()
    assert {k: n for k, n in shared.write_requests(kube, before).items() if k[1] == "configmaps"} == {
        ("apply" if reconciler is DataOnlyReconciler else "patch", "configmaps"): 1
    }
    labels = kube.get(kinds.CONFIG_MAP, "b-config", namespace)["metadata"].get("labels") or {}
    assert labels.get(label) == owner["metadata"]["uid"], "without it, the child is never pruned"


def _checksums_page_password_secret() -> type[okt.SecretResource]:
    """The ``PasswordSecret`` of ``docs/concepts/checksums.md``, run as the page writes it."""
    page = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "concepts" / "checksums.md").read_text()
    block = next(b for b in re.findall(r"^```python\n(.*?)^```", page, re.M | re.S) if "PasswordSecret" in b)
    scope: dict[str, Any] = {"okt": okt}
    exec(compile(block, "checksums.md", "exec"), scope)
    page_class: type[okt.SecretResource] = scope["PasswordSecret"]
    return page_class


PagePasswordSecret = _checksums_page_password_secret()


class Credentials(PagePasswordSecret):
    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
  labels:
    app: {{ name }}
stringData:
  user: admin
  password: first
"""


class CredentialsReconciler(shared.WidgetReconciler):
    owns = (Credentials,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Credentials(ctx.cr)]


def test_the_checksums_pages_password_secret_leaves_a_rotated_password_and_repairs_the_username(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """The page's example, a Secret whose ``hashable_ref()`` covers the labels and the username: it reconciles (it
    read the ``stringData`` a SecretResource had folded into ``data``: a KeyError at every reconcile), a password
    another controller rotates costs no write, and a username someone edits is put back."""

    def reconcile() -> dict[tuple[str, str], int]:
        before = kube.stats.snapshot()
        run = shared.reconcile_widget(CredentialsReconciler(), kube, widget_kind, namespace, "c")
        assert run.outcome == okt.Outcome.done(), run.results.summary()
        return {k: n for k, n in shared.write_requests(kube, before).items() if k[1] != "widgets/status"}

    def data() -> dict[str, str]:
        stored = kube.get(SECRET, "c-credentials", namespace)["data"]
        return {key: base64.b64decode(value).decode() for key, value in stored.items()}

    shared.make_widget(kube, widget_kind, namespace, "c", size=1)
    assert reconcile() == {("apply", "secrets"): 1}
    assert data() == {"user": "admin", "password": "first"}

    rotated = {"stringData": {"password": "rotated"}}
    kube.patch(SECRET, "c-credentials", rotated, namespace, field_manager="rotator")
    assert reconcile() == {}
    assert data()["password"] == "rotated"

    kube.patch(SECRET, "c-credentials", {"stringData": {"user": "root"}}, namespace, field_manager="someone")
    assert reconcile() == {("apply", "secrets"): 1}
    assert data()["user"] == "admin"
