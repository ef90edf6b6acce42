"""Indexes of a watched kind on a real kube-apiserver: ConfigMaps created, changed and deleted, and a timer and a
daemon of a Gadget reading the index whole, as Kopf's handlers read ``@kopf.index("configmaps")``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.testing import wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration


def level_of(cm: Mapping[str, Any]) -> dict[str, str] | None:
    """Each ConfigMap's level, by ``namespace/name``; one holding ``broken`` makes the function raise."""
    data = cm.get("data") or {}
    if "broken" in data:
        raise ValueError("this ConfigMap cannot be indexed")
    return {okt.ref_of(cm): data["level"]} if "level" in data else None


def team_of(cm: Mapping[str, Any]) -> str | None:
    return ((cm.get("metadata") or {}).get("labels") or {}).get("team")


class Reading(shared.GadgetReconciler):
    """Gadgets whose timer and daemon read the indexes of the ConfigMaps; a ConfigMap's change reconciles nothing."""

    owns = ()
    watches = (okt.watch("configmaps", indexes={"levels": level_of, "teams": team_of}),)
    lock: ClassVar[threading.Lock] = threading.Lock()
    read: ClassVar[dict[str, Any]] = {}

    @okt.every(seconds=0.2)
    def look(self, ctx: okt.Context) -> None:
        levels, teams = ctx.indexed("levels"), ctx.indexed("teams")
        team_x = ctx.indexed("teams").get("x", ())  # one key looked up, the index not read whole
        with self.lock:
            self.read["team x"] = sorted(o["metadata"]["name"] for o in team_x)
            self.read["timer"] = dict(levels)
            self.read["teams"] = {team: sorted(o["metadata"]["name"] for o in objs) for team, objs in teams.items()}

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        while not ctx.stop.is_set():
            levels = ctx.indexed("levels")
            with self.lock:
                self.read["daemon"] = {key: levels[key] for key in levels}
            ctx.stop.wait(0.2)


def config_map(namespace: str, name: str, labels: Mapping[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, **({"labels": dict(labels)} if labels else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_a_timer_and_a_daemon_read_the_index_of_config_maps_as_they_are_created_changed_and_deleted(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    Reading.read = {}

    def read_as(expected: dict[str, tuple[str, ...]]) -> bool:
        with Reading.lock:
            return Reading.read.get("timer") == expected and Reading.read.get("daemon") == expected

    kube.create(config_map(namespace, "a", {"team": "x"}, level="info"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "b", {"team": "x"}, level="debug"), kinds.CONFIG_MAP)
    make_gadget("g")
    manager = start_manager(Reading)
    first = {f"{namespace}/a": ("info",), f"{namespace}/b": ("debug",)}
    wait_for(lambda: read_as(first), timeout=30, message=lambda: str(Reading.read))
    assert Reading.read["teams"] == {"x": ["a", "b"]}
    wait_for(lambda: Reading.read["team x"] == ["a", "b"], timeout=10, message=lambda: str(Reading.read))

    kube.patch(kinds.CONFIG_MAP, "a", {"data": {"level": "warning"}, "metadata": {"labels": {"team": "y"}}}, namespace)
    kube.delete(kinds.CONFIG_MAP, "b", namespace)
    kube.create(config_map(namespace, "broken", broken="yes", level="info"), kinds.CONFIG_MAP)  # left out
    kube.create(config_map(namespace, "c", level="error"), kinds.CONFIG_MAP)
    then = {f"{namespace}/a": ("warning",), f"{namespace}/c": ("error",)}
    wait_for(lambda: read_as(then), timeout=20, message=lambda: str(Reading.read))
    wait_for(lambda: Reading.read["teams"] == {"y": ["a"]}, timeout=10, message=lambda: str(Reading.read))
    wait_for(lambda: Reading.read["team x"] == [], timeout=10, message=lambda: str(Reading.read))

    # The function succeeds for the broken one once it changes: it joins the index.
    kube.patch(kinds.CONFIG_MAP, "broken", {"data": {"broken": None}}, namespace)
    fixed = {**then, f"{namespace}/broken": ("info",)}
    wait_for(lambda: read_as(fixed), timeout=20, message=lambda: str(Reading.read))
    assert manager.working
