"""Indexes of a watched kind on a real kube-apiserver: ConfigMaps created, changed and deleted, and a timer and a
daemon of a Gadget reading the index whole, as Kopf's handlers read ``@kopf.index("configmaps")``."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import cache as cache_mod
from okt.runtime import manager as manager_mod
from okt.testing import wait_for
from tests.integration.runtime import conftest as shared

pytestmark = pytest.mark.integration

SECRET = kinds.builtin("v1", "Secret")


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


def app_of(cm: Mapping[str, Any]) -> tuple[str, str] | None:
    """One key of two parts, ``(namespace, app)``, returned alone: the index holds each ConfigMap under it."""
    app = ((cm.get("metadata") or {}).get("labels") or {}).get("app")
    return (cm["metadata"]["namespace"], app) if app else None


def port_of(cm: Mapping[str, Any]) -> dict[tuple[str, int], str] | None:
    """Kopf's idiom, ``{(namespace, port): name}``: the port a number read from the ConfigMap's text."""
    port = (cm.get("data") or {}).get("port")
    return {(cm["metadata"]["namespace"], int(port)): cm["metadata"]["name"]} if port else None


class ReadingTuples(shared.GadgetReconciler):
    """Gadgets whose timer reads indexes of ConfigMaps keyed by tuples, and looks the Gadgets up by a tuple too."""

    owns = ()
    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {
        "gadget app": lambda gadget: (gadget["metadata"]["namespace"], (gadget.get("spec") or {}).get("app"))
    }
    watches = (okt.watch("configmaps", indexes={"apps": app_of, "ports": port_of}),)
    lock: ClassVar[threading.Lock] = threading.Lock()
    read: ClassVar[dict[str, Any]] = {}

    @okt.every(seconds=0.2)
    def look(self, ctx: okt.Context) -> None:
        namespace = ctx.cr.namespace
        apps, ports = ctx.indexed("apps"), ctx.indexed("ports")
        web = [o["metadata"]["name"] for o in ctx.indexed("apps").get((namespace, "web"), ())]  # not read whole
        with self.lock:
            self.read["web"] = sorted(web)
            self.read["apps"] = {
                (ns, app): sorted(o["metadata"]["name"] for o in objs) for (ns, app), objs in apps.items()
            }
            self.read["ports"] = {key: sorted(names) for key, names in ports.items()}
            self.read["port 8080"] = ports.get((namespace, 8080.0))
            self.read["gadgets"] = sorted(g["metadata"]["name"] for g in ctx.index("gadget app", (namespace, "web")))


def test_a_running_operator_reads_tuple_keys_back_as_tuples_and_looks_them_up_by_the_tuple(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    ReadingTuples.read = {}

    def read(key: str) -> Any:
        with ReadingTuples.lock:
            return ReadingTuples.read.get(key)

    kube.create(config_map(namespace, "a", {"app": "web"}, port="8080"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "b", {"app": "web"}, port="9090"), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "c", {"app": "db"}), kinds.CONFIG_MAP)
    make_gadget("g", app="web")
    make_gadget("h", app="db")
    manager = start_manager(ReadingTuples)
    apps = {(namespace, "web"): ["a", "b"], (namespace, "db"): ["c"]}
    wait_for(lambda: read("apps") == apps, timeout=30, message=lambda: str(ReadingTuples.read))
    assert read("ports") == {(namespace, 8080): ["a"], (namespace, 9090): ["b"]}
    assert read("port 8080") == ("a",) and read("web") == ["a", "b"] and read("gadgets") == ["g"]

    kube.patch(kinds.CONFIG_MAP, "b", {"metadata": {"labels": {"app": "db"}}, "data": {"port": "8080"}}, namespace)
    kube.delete(kinds.CONFIG_MAP, "c", namespace)
    then = {(namespace, "web"): ["a"], (namespace, "db"): ["b"]}
    wait_for(lambda: read("apps") == then, timeout=20, message=lambda: str(ReadingTuples.read))
    wait_for(
        lambda: read("ports") == {(namespace, 8080): ["a", "b"]}, timeout=10, message=lambda: str(ReadingTuples.read)
    )
    wait_for(lambda: read("web") == ["a"], timeout=10, message=lambda: str(ReadingTuples.read))
    assert manager.working


def test_an_index_function_added_to_a_kind_already_watched_holds_no_lock_of_the_cache_while_it_hangs(
    kube: kube_client.Client, namespace: str
) -> None:
    """A second controller joining a kind already watched indexes the objects stored at its start: the operator's
    code, which may hang, never run under the cache's lock, which ``/readyz`` (synced, blocked, refused, unserved) and
    every other start take."""
    entered, release = threading.Event(), threading.Event()

    def hangs(cm: Mapping[str, Any]) -> tuple[str, ...]:
        entered.set()
        release.wait(30)
        return ()

    kube.create(config_map(namespace, "a", level="info"), kinds.CONFIG_MAP)
    cache = cache_mod.Cache(kube, [namespace])
    joining = reading = threading.Thread(target=lambda: None)
    try:
        cache.start(kinds.CONFIG_MAP, lambda *_: None)
        assert cache.wait_for_sync(30)
        joining = threading.Thread(
            target=cache.start, args=(kinds.CONFIG_MAP, lambda *_: None), kwargs={"indexers": {"stuck": hangs}}
        )
        joining.start()
        assert entered.wait(10)
        answered: list[object] = []
        reading = threading.Thread(
            target=lambda: answered.extend(
                [cache.synced, cache.blocked(), cache.refused(), cache.unserved(), cache.start(SECRET, lambda *_: 0)]
            ),
            daemon=True,
        )
        reading.start()
        reading.join(3)
        assert answered == [True, [], [], [], None]
    finally:
        release.set()
        joining.join(10)
        reading.join(10)
        cache.stop()


def test_an_index_added_to_a_kind_already_watched_holds_no_read_of_the_kind_and_holds_its_changes_once_added(
    kube: kube_client.Client, namespace: str
) -> None:
    """The index function of a controller joining a kind already watched runs over the stored objects without the
    informer's lock: the kind's reads (an object, a list, another index) are answered and its events stored while it
    hangs, and once the start returns, the new index holds each ConfigMap as it stands, the changes made meanwhile
    included."""
    entered, release = threading.Event(), threading.Event()

    def team_after_a_while(cm: Mapping[str, Any]) -> tuple[str, ...]:
        if cm["metadata"]["name"] == "a" and not entered.is_set():
            entered.set()
            release.wait(30)
        team = team_of(cm)
        return (team,) if team else ()

    def names(cm: Mapping[str, Any]) -> tuple[str, ...]:
        return (cm["metadata"]["name"],)

    def named(found: list[dict[str, Any]] | None) -> list[str] | None:
        return None if found is None else sorted(o["metadata"]["name"] for o in found)

    kube.create(config_map(namespace, "a", {"team": "x"}), kinds.CONFIG_MAP)
    kube.create(config_map(namespace, "b", {"team": "x"}), kinds.CONFIG_MAP)
    cache = cache_mod.Cache(kube, [namespace])
    joining = reading = threading.Thread(target=lambda: None)
    try:
        cache.start(kinds.CONFIG_MAP, lambda *_: None, indexers={"names": names})
        assert cache.wait_for_sync(30)
        joining = threading.Thread(
            target=cache.start,
            args=(kinds.CONFIG_MAP, lambda *_: None),
            kwargs={"indexers": {"teams": team_after_a_while}},
        )
        joining.start()
        assert entered.wait(10)
        answered: list[object] = []
        reading = threading.Thread(
            target=lambda: answered.extend(
                [
                    ((cache.get(kinds.CONFIG_MAP, "b", namespace) or {}).get("metadata") or {}).get("labels"),
                    named(cache.list(kinds.CONFIG_MAP, namespace)),
                    named(cache.by_index(kinds.CONFIG_MAP, "names", "b")),
                    named(cache.by_index(kinds.CONFIG_MAP, "teams", "x")),  # not kept until complete
                ]
            ),
            daemon=True,
        )
        reading.start()
        reading.join(3)
        assert answered == [{"team": "x"}, ["a", "b"], ["b"], None]
        kube.patch(kinds.CONFIG_MAP, "b", {"metadata": {"labels": {"team": "y"}}}, namespace)
        kube.create(config_map(namespace, "c", {"team": "x"}), kinds.CONFIG_MAP)
        wait_for(
            lambda: (
                named(cache.by_index(kinds.CONFIG_MAP, "names", "c")) == ["c"]
                and ((cache.get(kinds.CONFIG_MAP, "b", namespace) or {})["metadata"].get("labels")) == {"team": "y"}
            ),
            timeout=10,
            message="the watch's events stored while the index is built",
        )
        assert joining.is_alive()
    finally:
        release.set()
        joining.join(10)
        reading.join(10)
    try:
        assert not joining.is_alive()
        assert named(cache.by_index(kinds.CONFIG_MAP, "teams", "x")) == ["a", "c"]
        assert named(cache.by_index(kinds.CONFIG_MAP, "teams", "y")) == ["b"]
    finally:
        cache.stop()


class IndexingGadgets(shared.GadgetReconciler):
    """Gadgets indexed by size, one of whose index function hangs on the Gadget named ``stuck``; each Gadget's timer
    reads the index and counts its reconciles."""

    owns = ()
    entered: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()
    lock: ClassVar[threading.Lock] = threading.Lock()
    ticks: ClassVar[collections.Counter[str]] = collections.Counter()
    read: ClassVar[dict[str, list[str]]] = {}

    @staticmethod
    def size_of(gadget: Mapping[str, Any]) -> int | None:
        if gadget["metadata"]["name"] == "stuck":
            IndexingGadgets.entered.set()
            IndexingGadgets.release.wait(30)
        return (gadget.get("spec") or {}).get("size")

    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"sizes": size_of}

    @okt.every(seconds=0.2)
    def look(self, ctx: okt.Context) -> None:
        same_size = sorted(g["metadata"]["name"] for g in ctx.index("sizes", 1))
        with self.lock:
            self.read[ctx.cr.name] = same_size
            self.ticks[ctx.cr.name] += 1


def test_an_index_function_hanging_on_one_event_holds_neither_the_reads_of_the_kind_nor_the_reconciles_of_others(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    """The informer's thread indexes each event's object with the operator's index functions, which may hang: never
    under the informer's lock, which every read of the kind's store (an index, a list, okt's own write stored) takes."""
    IndexingGadgets.entered.clear()
    IndexingGadgets.release.clear()
    IndexingGadgets.ticks.clear()
    IndexingGadgets.read = {}
    make_gadget("g", size=1)
    manager = start_manager(IndexingGadgets)
    try:
        wait_for(lambda: IndexingGadgets.read.get("g") == ["g"], timeout=30, message=lambda: str(IndexingGadgets.read))
        make_gadget("stuck", size=1)
        assert IndexingGadgets.entered.wait(10)
        with IndexingGadgets.lock:
            ticked = IndexingGadgets.ticks["g"]
        # Read on another thread, so a read waiting for the lock fails the test instead of hanging it.
        answered: list[object] = []
        cache = manager.cache
        assert cache is not None
        reading = threading.Thread(
            target=lambda: answered.extend(
                [
                    (cache.get(gadget_kind, "g", namespace) or {}).get("spec"),
                    [
                        g["metadata"]["name"]
                        for g in cache.by_index(gadget_kind, watches.index_name("gadget", "sizes"), 1) or []
                    ],
                    [g["metadata"]["name"] for g in cache.list(gadget_kind, namespace)],
                ]
            ),
            daemon=True,
        )
        reading.start()
        reading.join(3)
        assert answered == [{"size": 1}, ["g"], ["g"]]
        # The timer's reconciles of the other Gadget go on, each reading the index (and writing its status).
        wait_for(
            lambda: IndexingGadgets.ticks["g"] >= ticked + 3, timeout=5, message=lambda: str(IndexingGadgets.ticks)
        )
    finally:
        IndexingGadgets.release.set()
    wait_for(
        lambda: IndexingGadgets.read.get("g") == ["g", "stuck"], timeout=10, message=lambda: str(IndexingGadgets.read)
    )
    assert manager.working
