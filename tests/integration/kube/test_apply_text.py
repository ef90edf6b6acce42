"""Server-side apply bodies are read by the API server's YAML decoder: any text okt applies must come back as it was
written, whatever YAML would make of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import crds

pytestmark = pytest.mark.integration


def test_a_map_key_longer_than_yaml_reads_without_a_key_indicator_is_applied(
    kube: kube_client.Client, namespace: str, apply_crd: Callable[[dict[str, Any]], kinds.Kind]
) -> None:
    kind = apply_crd(crds.schemaless_crd("text.okt.io", "Note", "notes"))
    # Free-form keys a custom resource may hold: one long, others short in letters but long once escaped.
    entries = {"k" * 1100: "long", "ключ " * 250: "escaped", "\U0001f600" * 120: "astral", "plain": "short"}
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": "note", "namespace": namespace},
        "spec": {"entries": entries},
    }

    applied = kube.apply(body, kind, field_manager="okt-test")

    assert applied["spec"]["entries"] == entries
    assert kube.get(kind, "note", namespace)["spec"]["entries"] == entries


def test_a_map_key_of_characters_beyond_the_bmp_alone_longer_than_yaml_reads_is_applied(
    kube: kube_client.Client, namespace: str, apply_crd: Callable[[dict[str, Any]], kinds.Kind]
) -> None:
    """No other key is long: 110 such characters are 1,102 characters of YAML, though 110 characters at most six
    each (as other characters are escaped) would be short enough."""
    kind = apply_crd(crds.schemaless_crd("text.okt.io", "Note", "notes"))
    entries = {"\U0001f600" * 110: "astral"}
    body = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": "note", "namespace": namespace},
        "spec": {"entries": entries},
    }

    applied = kube.apply(body, kind, field_manager="okt-test")

    assert applied["spec"]["entries"] == entries
