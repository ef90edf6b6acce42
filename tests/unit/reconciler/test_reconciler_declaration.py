"""What a Reconciler class declares is checked when the class is defined, not at the first reconcile."""

from __future__ import annotations

import pytest

import okt


def test_a_misspelt_status_target_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match=r"Typo\.status = 'anotations': expected 'status', 'annotations', 'off'"):
        type("Typo", (okt.Reconciler,), {"api_version": "v1", "kind": "ConfigMap", "status": "anotations"})


def test_a_built_in_primary_keeps_its_bookkeeping_in_annotations() -> None:
    class Deployments(okt.Reconciler):
        api_version = "apps/v1"
        kind = "Deployment"

    class Widgets(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Widget"

    assert Deployments.status_target() is okt.StatusTarget.OFF
    assert Deployments.bookkeeping_persistence() is okt.Persistence.ANNOTATIONS
    assert Widgets.status_target() is okt.StatusTarget.STATUS
    assert Widgets.bookkeeping_persistence() is okt.Persistence.STATUS
