"""Informers against a real kube-apiserver: surviving a restart, and 410 Gone turning into a diffing relist.

One restart serves both (restarting the apiserver is the slow part): the watch breaks, the reconnect is held back
while objects are changed, deleted and created, and the resumed watch is answered 410 Gone (the restarted
apiserver's watch cache starts after the informer's resourceVersion), so every missed change must come from the
relist's diff.

Beside it: a relist whose continue token etcd's compaction expired between two pages, watches cut again and again by a
proxy, and watches the server ends at their timeout — each leaves the store equal to what the server holds.
"""

from __future__ import annotations

import collections
import pathlib
import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import backoff as backoff_mod
from okt.runtime import informer as informer_mod
from okt.testing import envtest, faults, wait_for

pytestmark = pytest.mark.integration

CM = kinds.CONFIG_MAP
# Reconnect quickly: the tests wait for the reconnect, not for a production-sized backoff.
QUICK_RECONNECT = backoff_mod.Backoff(base=0.1, factor=1.5, cap=0.5, jitter=0.1)


class Events:
    """The events an informer delivered, by object name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_name: collections.defaultdict[str, list[str]] = collections.defaultdict(list)

    def __call__(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self.by_name[obj["metadata"]["name"]].append(event_type)

    def of(self, name: str) -> list[str]:
        with self._lock:
            return list(self.by_name.get(name, []))


class GatedWatches:
    """The real client, except that every watch after the first waits until the test opens ``gate``."""

    def __init__(self, client: kube_client.Client) -> None:
        self._client = client
        self.gate = threading.Event()
        self.watch_calls = 0

    def list(self, *args: Any, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        return self._client.list(*args, **kwargs)

    def list_pages(self, *args: Any, **kwargs: Any) -> Iterator[tuple[list[dict[str, Any]], str]]:
        return self._client.list_pages(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        self.watch_calls += 1
        if self.watch_calls > 1:
            self.gate.wait(60)
        return self._client.watch(*args, **kwargs)


def config_map(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def eventually(call: Callable[[], Any]) -> Any:
    """Run a request until it succeeds: right after a restart the apiserver may still refuse a moment."""
    result: list[Any] = []

    def attempt() -> bool:
        try:
            result.append(call())
        except errors.Conflict:
            raise
        except errors.ApiError:
            return False
        return True

    wait_for(attempt, timeout=30, message="the apiserver to accept requests again")
    return result[0]


@pytest.fixture
def run_informer() -> Iterator[Callable[..., informer_mod.Informer]]:
    started: list[informer_mod.Informer] = []

    def start(client: Any, namespace: str, on_event: Events) -> informer_mod.Informer:
        informer = informer_mod.Informer(client, CM, namespace, on_event=on_event, backoff=QUICK_RECONNECT)
        informer.start()
        started.append(informer)
        assert informer.has_synced.wait(15)
        return informer

    yield start
    for informer in started:
        informer.stop()


def test_after_an_apiserver_restart_the_informer_relists_on_gone_and_announces_every_change_it_missed(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, run_informer: Any
) -> None:
    for name in ("keep", "change", "vanish"):
        kube.create(config_map(namespace, name, v="1"), CM)
    client = GatedWatches(kube)
    events = Events()
    informer = run_informer(client, namespace, events)
    # A write elsewhere moves the cluster's resourceVersion past the informer's own; after a restart the apiserver's
    # watch cache starts there, so resuming from the informer's version is answered with 410 Gone.
    elsewhere = f"okt-elsewhere-{secrets.token_hex(3)}"
    kube.create(config_map("default", elsewhere), CM)
    kube.delete(CM, elsewhere, "default")

    # The restart breaks the watch; the informer's reconnect waits at the gate while objects change behind its back.
    control_plane.restart_apiserver()
    wait_for(lambda: client.watch_calls >= 2, timeout=30, message="the informer to try reconnecting")
    eventually(lambda: kube.patch(CM, "change", {"data": {"v": "2"}}, namespace))
    kube.delete(CM, "vanish", namespace)
    kube.create(config_map(namespace, "new"), CM)
    client.gate.set()

    wait_for(lambda: events.of("new") == ["ADDED"], timeout=30, message=lambda: str(dict(events.by_name)))
    wait_for(lambda: events.of("vanish") == ["ADDED", "DELETED"], timeout=10)
    assert events.of("change") == ["ADDED", "MODIFIED"]
    assert events.of("keep") == ["ADDED"]
    assert informer.relists == 2
    assert informer.reconnects >= 1
    assert informer.get(namespace, "vanish") is None
    assert informer.get(namespace, "change")["data"] == {"v": "2"}  # type: ignore[index]


@pytest.mark.parametrize("bump_revision", [True, False], ids=["as documented", "versions back"])
def test_after_etcd_is_restored_from_a_backup_the_relist_stores_what_the_server_holds_though_its_versions_are_older(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    run_informer: Any,
    tmp_path: pathlib.Path,
    bump_revision: bool,
) -> None:
    """etcd restored as Kubernetes documents it (the revision bumped past the highest one reached, the history
    compacted): the resumed watch is answered 410 Gone, and the relist finds objects whose resourceVersion is older
    than the one the store holds (changes made after the backup, which the restore undid). The list is what the
    server holds: the store takes it, and tells it, as client-go's relist replaces its store whatever the versions.

    Restored without the bump, etcd's revision is behind the informer's: a watch resumed from there would tell
    nothing until etcd passed it. The informer sees the server behind it when it reconnects, and lists again.
    """
    for name in ("undone", "kept"):
        kube.create(config_map(namespace, name, v="1"), CM)
    backup = control_plane.back_up_etcd(tmp_path / "etcd-backup")
    events = Events()
    informer = run_informer(kube, namespace, events)
    eventually(lambda: kube.patch(CM, "undone", {"data": {"v": "2"}}, namespace))
    kube.create(config_map(namespace, "later", v="1"), CM)
    wait_for(lambda: events.of("later") == ["ADDED"] and events.of("undone") == ["ADDED", "MODIFIED"], timeout=15)

    control_plane.restore_etcd(backup, bump_revision=bump_revision)

    wait_for(lambda: informer.relists >= 2, timeout=30, message="the informer to list again")
    assert informer.get(namespace, "later") is None
    assert informer.get(namespace, "undone")["data"] == {"v": "1"}  # type: ignore[index]
    assert events.of("undone") == ["ADDED", "MODIFIED", "MODIFIED"]
    assert events.of("later") == ["ADDED", "DELETED"]
    assert events.of("kept") == ["ADDED"]
    # The watch from the relist tells what follows, as usual.
    eventually(lambda: kube.patch(CM, "undone", {"data": {"v": "3"}}, namespace))
    wait_for(lambda: (informer.get(namespace, "undone") or {}).get("data") == {"v": "3"}, timeout=15)


def test_a_watch_that_goes_silent_is_reconnected_after_the_inactivity_timeout(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    """A stream that stays open but delivers nothing (a half-dead connection) must not freeze the cache forever."""
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=1.0, kinds=("watch-freeze",)) as proxy:
        path = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig-proxy")
        client = kube_client.Client.from_kubeconfig(path)
        events = Events()
        informer = informer_mod.Informer(
            client, CM, namespace, on_event=events, backoff=QUICK_RECONNECT, inactivity_timeout=2.0
        )
        informer.start()
        try:
            assert informer.has_synced.wait(15)
            wait_for(lambda: proxy.injected["watch-freeze"] == 1, timeout=15, message="the first watch to freeze")
            proxy.rate = 0.0  # the reconnected watch is a healthy one
            eventually(lambda: kube.create(config_map(namespace, "after-freeze", k="v"), CM))

            wait_for(lambda: events.of("after-freeze") == [informer_mod.ADDED], timeout=20, message="the event")
        finally:
            informer.stop()
            client.close()
    assert proxy.injected["watch-freeze"] == 1


def test_a_bookmark_older_than_what_the_watch_told_leaves_the_resource_version_where_it_stood(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path
) -> None:
    """A watch tells an object, then bookmarks the version it started from and ends: the next watch resumes after the
    object, which is told once — not again by a watch resumed from the bookmark's older version."""
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=1.0, kinds=("stale-bookmark",)) as proxy:
        path = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig-proxy")
        client = kube_client.Client.from_kubeconfig(path)
        events = Events()
        informer = informer_mod.Informer(client, CM, namespace, on_event=events, backoff=QUICK_RECONNECT)
        informer.start()
        try:
            assert informer.has_synced.wait(15)
            created = kube.create(config_map(namespace, "told-once"), CM)
            wait_for(lambda: proxy.injected["stale-bookmark"] >= 1, timeout=15, message="the stale bookmark")
            proxy.rate = 0.0
            kube.create(config_map(namespace, "after"), CM)
            wait_for(lambda: events.of("after") == [informer_mod.ADDED], timeout=20, message="the next event")
        finally:
            informer.stop()
            client.close()
    assert events.of("told-once") == [informer_mod.ADDED]
    assert int(informer.resource_version) > int(created["metadata"]["resourceVersion"])
    assert informer.relists == 1


def test_a_change_the_watch_tells_only_after_okts_later_write_was_observed_is_announced(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, run_informer: Any
) -> None:
    """Someone changes an object between okt's read and its write; the answer to okt's write reaches the store before
    the watch tells of the change under it (the informer's thread is held up, as a watch that reconnects late is):
    the change is announced all the same, and only the echo of okt's own write is swallowed."""
    kube.create(config_map(namespace, "a", v="1"), CM)
    events, release = Events(), threading.Event()

    def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        events(event_type, obj, old)
        if obj["metadata"]["name"] == "gate":
            release.wait(30)  # the informer's thread waits here: the events after this one queue up

    informer = run_informer(kube, namespace, on_event)
    kube.create(config_map(namespace, "gate"), CM)
    wait_for(lambda: events.of("gate") == [informer_mod.ADDED], timeout=10, message="the gate's event")
    theirs = kube.patch(CM, "a", {"data": {"v": "2"}}, namespace)
    ours = kube.patch(CM, "a", {"metadata": {"labels": {"written": "by-okt"}}}, namespace)
    informer.observe(ours)
    release.set()
    kube.create(config_map(namespace, "after"), CM)
    wait_for(lambda: events.of("after") == [informer_mod.ADDED], timeout=10, message=lambda: str(dict(events.by_name)))

    assert events.of("a") == [informer_mod.ADDED, informer_mod.MODIFIED]  # theirs; the echo of ours swallowed
    assert int(theirs["metadata"]["resourceVersion"]) < int(ours["metadata"]["resourceVersion"])
    assert informer.get(namespace, "a")["metadata"]["labels"] == {"written": "by-okt"}  # type: ignore[index]


def test_the_answer_to_okts_finalizer_removal_observed_after_the_watch_told_the_deletion_brings_nothing_back(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, run_informer: Any
) -> None:
    """okt removes its finalizer from an object being deleted: the API server answers with the object (deleting, no
    finalizer left) and deletes it at once. The worker that wrote may observe that answer only after the watch told
    the deletion; the object must stay gone from the store, not read as existing until the next relist."""
    kube.create(
        {
            **config_map(namespace, "a"),
            "metadata": {"name": "a", "namespace": namespace, "finalizers": ["example.com/cleanup"]},
        },
        CM,
    )
    events = Events()
    informer = run_informer(kube, namespace, events)
    kube.delete(CM, "a", namespace)
    wait_for(lambda: events.of("a") == [informer_mod.ADDED, informer_mod.MODIFIED], timeout=10)
    released = kube.patch(CM, "a", {"metadata": {"finalizers": None}}, namespace)
    assert released["metadata"]["deletionTimestamp"] and not released["metadata"].get("finalizers")
    wait_for(lambda: events.of("a")[-1:] == [informer_mod.DELETED], timeout=10, message=lambda: str(events.of("a")))

    assert informer.observe(released) is False
    assert informer.get(namespace, "a") is None
    assert kube.get_or_none(CM, "a", namespace) is None


def test_an_object_relabelled_out_of_the_selection_under_okts_write_leaves_the_store(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    """Someone relabels an object out of the informer's selection while okt writes it: the watch tells the
    relabelling as a deletion, and okt's answer (newer, reaching the store first) must not keep it there."""
    selected = {"app": "mine"}
    body = config_map(namespace, "a", v="1")
    kube.create({**body, "metadata": {**body["metadata"], "labels": selected}}, CM)
    events, release = Events(), threading.Event()

    def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        events(event_type, obj, old)
        if obj["metadata"]["name"] == "gate":
            release.wait(30)  # the informer's thread waits here: the events after this one queue up

    informer = informer_mod.Informer(kube, CM, namespace, "app in (mine)", on_event=on_event, backoff=QUICK_RECONNECT)
    informer.start()
    try:
        assert informer.has_synced.wait(15)
        gate = config_map(namespace, "gate")
        kube.create({**gate, "metadata": {**gate["metadata"], "labels": selected}}, CM)
        wait_for(lambda: events.of("gate") == [informer_mod.ADDED], timeout=10, message="the gate's event")
        kube.patch(CM, "a", {"metadata": {"labels": {"app": "theirs"}}}, namespace)
        ours = kube.patch(CM, "a", {"data": {"v": "2"}}, namespace)
        informer.observe(ours)
        release.set()
        wait_for(lambda: events.of("a")[-1:] == [informer_mod.DELETED], timeout=10, message=lambda: str(events.of("a")))

        assert informer.get(namespace, "a") is None
        assert [obj["metadata"]["name"] for obj in informer.items()] == ["gate"]
    finally:
        release.set()
        informer.stop()


class PagedRelists(GatedWatches):
    """As :class:`GatedWatches`; every list after the first asks for pages of two, and ``between_pages`` runs once,
    after the first page of such a list was handed out (a list of at most one object is let through, uncounted)."""

    def __init__(self, client: kube_client.Client, between_pages: Callable[[], None]) -> None:
        super().__init__(client)
        self._between_pages: Callable[[], None] | None = between_pages
        self.list_calls = 0

    def list_pages(self, *args: Any, **kwargs: Any) -> Iterator[tuple[list[dict[str, Any]], str]]:
        if kwargs.get("page_size") == 1:  # where the server stands, asked after a broken watch: no relist
            yield from self._client.list_pages(*args, **kwargs)
            return
        self.list_calls += 1
        if self.list_calls == 1:
            yield from self._client.list_pages(*args, **kwargs)
            return
        pages = self._client.list_pages(*args, **{**kwargs, "page_size": 2})
        for page in pages:
            yield page
            if self._between_pages is not None and page[0]:
                between, self._between_pages = self._between_pages, None
                between()


def test_a_relist_whose_continue_token_expired_lists_again_from_scratch_and_the_store_equals_the_server(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, run_informer: Any
) -> None:
    for name in ("a1", "a2", "b1", "b2", "c1"):
        kube.create(config_map(namespace, name, v="1"), CM)

    def between_pages() -> None:
        # The first page (a1, a2) is in; before the next is asked for, the cluster changes and etcd compacts.
        kube.delete(CM, "a1", namespace)
        kube.patch(CM, "b2", {"data": {"v": "2"}}, namespace)
        kube.delete(CM, "c1", namespace)
        kube.create(config_map(namespace, "d1"), CM)
        control_plane.compact_etcd()

    client = PagedRelists(kube, between_pages)
    events = Events()
    informer = run_informer(client, namespace, events)
    elsewhere = f"okt-elsewhere-{secrets.token_hex(3)}"
    kube.create(config_map("default", elsewhere), CM)
    kube.delete(CM, elsewhere, "default")
    control_plane.restart_apiserver()
    wait_for(lambda: client.watch_calls >= 2, timeout=30, message="the informer to try reconnecting")
    eventually(lambda: kube.patch(CM, "a2", {"data": {"v": "2"}}, namespace))
    client.gate.set()

    wait_for(lambda: events.of("d1") == ["ADDED"], timeout=30, message=lambda: str(dict(events.by_name)))
    wait_for(lambda: informer.relists == 2, timeout=10, message=lambda: f"{informer.relists} lists")
    assert client.list_calls == 3  # the first list, the relist the continue of which expired, the relist again
    server = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in kube.list(CM, namespace)[0]}
    stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
    assert stored == server
    assert sorted(server) == ["a2", "b1", "b2", "d1"]
    assert events.of("a1") == ["ADDED", "DELETED"]
    assert events.of("c1") == ["ADDED", "DELETED"]
    assert events.of("a2") == ["ADDED", "MODIFIED"]
    assert events.of("b2") == ["ADDED", "MODIFIED"]
    assert events.of("b1") == ["ADDED"]


class ExpiringPages(GatedWatches):
    """As :class:`GatedWatches`; every paged list after the first asks for pages of two, and etcd compacts its history
    past the list's snapshot after its first page, so that the continue token of the next page has expired — as a
    list slower than etcd's compaction interval meets every time. Lists asking for one answer, or for at most one
    object, are left alone."""

    def __init__(self, client: kube_client.Client, compact: Callable[[], None]) -> None:
        super().__init__(client)
        self._compact = compact
        self.lists: list[bool] = []

    def list_pages(self, *args: Any, **kwargs: Any) -> Iterator[tuple[list[dict[str, Any]], str]]:
        if kwargs.get("page_size") == 1:  # where the server stands, asked after a broken watch: no relist
            yield from self._client.list_pages(*args, **kwargs)
            return
        paged = kwargs.get("paged", True)
        self.lists.append(paged)
        if len(self.lists) == 1 or not paged:
            yield from self._client.list_pages(*args, **kwargs)
            return
        for index, page in enumerate(self._client.list_pages(*args, **{**kwargs, "page_size": 2})):
            yield page
            if index == 0:
                self._compact()


def test_a_relist_whose_continue_token_expires_each_time_is_listed_in_one_answer(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, run_informer: Any
) -> None:
    for name in ("a1", "a2", "b1", "b2", "c1"):
        kube.create(config_map(namespace, name, v="1"), CM)

    def compact() -> None:
        elsewhere = f"okt-elsewhere-{secrets.token_hex(3)}"
        kube.create(config_map("default", elsewhere), CM)  # a revision past the list's snapshot, to compact up to
        kube.delete(CM, elsewhere, "default")
        control_plane.compact_etcd()

    client = ExpiringPages(kube, compact)
    events = Events()
    informer = run_informer(client, namespace, events)
    elsewhere = f"okt-elsewhere-{secrets.token_hex(3)}"
    kube.create(config_map("default", elsewhere), CM)
    kube.delete(CM, elsewhere, "default")
    control_plane.restart_apiserver()  # the resumed watch is answered 410: a relist
    wait_for(lambda: client.watch_calls >= 2, timeout=30, message="the informer to try reconnecting")
    eventually(lambda: kube.delete(CM, "c1", namespace))
    kube.patch(CM, "b2", {"data": {"v": "2"}}, namespace)
    client.gate.set()

    wait_for(lambda: informer.relists == 2, timeout=30, message=lambda: f"the relist: {client.lists}")
    assert client.lists == [True, True, False]  # the first list, the relist that expired, the relist in one answer
    server = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in kube.list(CM, namespace)[0]}
    stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
    assert stored == server
    assert events.of("c1") == ["ADDED", "DELETED"]
    assert events.of("b2") == ["ADDED", "MODIFIED"]


@pytest.mark.parametrize("fault", ["watch-drop", "reset"])
def test_a_watch_cut_again_and_again_while_objects_change_leaves_the_store_equal_to_the_server(
    control_plane: envtest.ControlPlane, namespace: str, kube: kube_client.Client, tmp_path: pathlib.Path, fault: str
) -> None:
    for i in range(10):
        kube.create(config_map(namespace, f"old-{i}", v="1"), CM)
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0.5, seed=7, kinds=(fault,)) as proxy:
        path = proxy.kubeconfig(control_plane.kubeconfig, tmp_path / "kubeconfig-proxy")
        client = kube_client.Client.from_kubeconfig(path)
        events = Events()
        informer = informer_mod.Informer(client, CM, namespace, on_event=events, backoff=QUICK_RECONNECT)
        informer.start()
        try:
            wait_for(informer.has_synced.is_set, timeout=30, message="the first list")
            for i in range(10):
                kube.create(config_map(namespace, f"new-{i}"), CM)
                kube.patch(CM, f"old-{i}", {"data": {"v": "2"}}, namespace)
                if i % 2:
                    kube.delete(CM, f"old-{i}", namespace)

            def same() -> bool:
                server = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in kube.list(CM, namespace)[0]}
                stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
                return stored == server

            wait_for(same, timeout=60, message=lambda: f"the store to catch up: {dict(events.by_name)}")
        finally:
            informer.stop()
            client.close()
    assert proxy.injected[fault] >= 1
    for i in range(10):
        assert events.of(f"new-{i}")[-1] == "ADDED"
        assert events.of(f"old-{i}")[-1] == ("DELETED" if i % 2 else "MODIFIED")


def test_watches_the_server_ends_at_their_timeout_are_followed_from_where_they_stood_without_a_relist(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str
) -> None:
    client = GatedWatches(kube)
    client.gate.set()
    events = Events()
    informer = informer_mod.Informer(
        client, CM, namespace, on_event=events, backoff=QUICK_RECONNECT, watch_timeout=2, inactivity_timeout=5.0
    )
    informer.start()
    try:
        assert informer.has_synced.wait(15)
        for i in range(3):
            wait_for(
                lambda watches=client.watch_calls: client.watch_calls > watches,
                timeout=20,
                message="the server to end the watch",
            )
            kube.create(config_map(namespace, f"after-{i}"), CM)
        wait_for(lambda: events.of("after-2") == ["ADDED"], timeout=20, message=lambda: str(dict(events.by_name)))
    finally:
        informer.stop()
    assert [events.of(f"after-{i}") for i in range(3)] == [["ADDED"]] * 3
    assert informer.relists == 1
    assert informer.reconnects == 0
