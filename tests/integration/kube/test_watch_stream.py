"""A watch against the real API server: a very long event comes whole, and the stream ends at its timeoutSeconds."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds

pytestmark = pytest.mark.integration

CONFIG_MAP = kinds.BUILTIN[("v1", "ConfigMap")]


def test_a_long_event_comes_whole_and_the_watch_ends_when_the_server_ends_it(
    kube: kube_client.Client, namespace: str
) -> None:
    _, version = kube.list(CONFIG_MAP, namespace)
    events: list[dict[str, Any]] = []
    opened = threading.Event()

    def follow() -> None:
        for event in kube.watch(
            CONFIG_MAP, namespace, resource_version=version, timeout_seconds=5, on_open=lambda _: opened.set()
        ):
            events.append(event)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert opened.wait(30)
    value = 'é\\n"x" ' * 100_000  # most of a MiB of JSON on one line, escapes and all
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "long", "namespace": namespace},
            "data": {"v": value},
        }
    )
    reader.join(60)

    assert not reader.is_alive(), "the watch did not end when the server ended it"
    added = [e for e in events if e["type"] == "ADDED"]
    assert [e["object"]["metadata"]["name"] for e in added] == ["long"]
    assert added[0]["object"]["data"]["v"] == value
