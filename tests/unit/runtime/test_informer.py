"""The informer's rules, against a scripted list/watch: sync, bookmarks, relist diffs, reconnects, ordering."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from okt import errors
from okt.kube import kinds, selectors
from okt.reconciler import indexes
from okt.runtime import backoff as backoff_mod
from okt.runtime import informer as informer_mod
from okt.runtime import packing
from okt.testing import wait_for
from tests.unit.runtime import conftest

CM = kinds.CONFIG_MAP
Obj = Callable[..., dict[str, Any]]


@pytest.fixture
def start(api: Any, recorder: Any) -> Iterator[Callable[..., informer_mod.Informer]]:
    started: list[informer_mod.Informer] = []

    def run(**kwargs: Any) -> informer_mod.Informer:
        kwargs.setdefault("on_event", recorder)
        informer = informer_mod.Informer(api, CM, "ns", **kwargs)
        informer.start()
        started.append(informer)
        assert informer.has_synced.wait(5)
        return informer

    yield run
    api.close()
    for informer in started:
        informer.stop(timeout=2)


@pytest.mark.parametrize(
    ("candidate", "current", "expected"),
    [("11", "10", True), ("9", "10", False), ("10", "10", None), ("100", "99", True), ("abc", "abd", True)],
)
def test_resource_versions_compare_as_integers_when_numeric(
    candidate: str, current: str, expected: bool | None
) -> None:
    assert informer_mod.is_newer(candidate, current) is expected


def test_the_first_list_fills_the_store_announces_every_object_and_marks_synced(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a"))
    api.put(CM, obj(CM, "b"))
    informer = start()
    assert sorted(o["metadata"]["name"] for o in informer.items()) == ["a", "b"]
    assert [(t, n) for t, n, _, _ in recorder.snapshot()] == [("ADDED", "a"), ("ADDED", "b")]
    wait_for(lambda: api.watches, timeout=5)
    assert api.watches[0] == ("configmaps", "ns", str(api.version))


def test_managed_fields_are_dropped_from_stored_objects(api: Any, start: Any, obj: Obj) -> None:
    api.put(CM, obj(CM, "a", managedFields=[{"manager": "kubectl", "fieldsV1": {"f:data": {}}}]))
    informer = start()
    stored = informer.get("ns", "a")
    assert stored is not None
    assert "managedFields" not in stored["metadata"]
    assert stored["metadata"]["name"] == "a"


def test_a_bookmark_moves_the_resource_version_without_an_event(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    informer = start()
    api.emit(CM, "BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "555"}})
    api.end(CM)
    wait_for(lambda: len(api.watches) == 2, timeout=5)
    assert api.watches[1][2] == "555"
    assert informer.resource_version == "555"
    assert recorder.snapshot() == []
    assert len(api.lists) == 1


@pytest.mark.parametrize("how", ["error event", "exception"])
def test_gone_relists_and_diffs_the_store_into_events(api: Any, recorder: Any, start: Any, obj: Obj, how: str) -> None:
    for name in ("keep", "change", "vanish"):
        api.put(CM, obj(CM, name))
    informer = start()
    kept_version = informer.get("ns", "keep")["metadata"]["resourceVersion"]  # type: ignore[index]
    # What happens while the watch is broken: nobody is told.
    api.put(CM, {**obj(CM, "change"), "data": {"x": "1"}})
    api.remove(CM, "ns", "vanish")
    api.put(CM, obj(CM, "new"))
    if how == "error event":
        api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    else:
        api.fail(CM, errors.ApiError.from_status(410, "Expired", "too old"))
    wait_for(lambda: len(recorder.snapshot()) == 6, timeout=5, message=lambda: str(recorder.snapshot()))
    assert recorder.types_by_name() == {
        "keep": ["ADDED"],
        "change": ["ADDED", "MODIFIED"],
        "vanish": ["ADDED", "DELETED"],
        "new": ["ADDED"],
    }
    assert len(api.lists) == 2
    assert api.list_versions == ["0", None]  # the first list from the server's cache, the relist from etcd
    assert informer.relists == 2
    assert informer.get("ns", "vanish") is None
    assert informer.get("ns", "change")["data"] == {"x": "1"}  # type: ignore[index]
    assert informer.get("ns", "keep")["metadata"]["resourceVersion"] == kept_version  # type: ignore[index]
    wait_for(lambda: len(api.watches) == 2, timeout=5)
    assert api.watches[1][2] == str(api.version)


def test_an_object_deleted_and_created_again_while_the_watch_was_down_is_announced_as_both(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """What the watch would have told: the first object went (its owner's children with it), another came. A
    modification of one object would read as nothing new to a handler comparing the spec of the two."""
    first = api.put(CM, obj(CM, "a", uid="u1"))
    informer = start()
    api.remove(CM, "ns", "a")
    again = api.put(CM, obj(CM, "a", uid="u2"))
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)
    assert recorder.snapshot() == [
        ("ADDED", "a", first["metadata"]["resourceVersion"], None),
        ("DELETED", "a", first["metadata"]["resourceVersion"], None),
        ("ADDED", "a", again["metadata"]["resourceVersion"], None),
    ]
    assert informer.get("ns", "a")["metadata"]["uid"] == "u2"  # type: ignore[index]


def test_a_transport_failure_reconnects_from_the_last_resource_version_without_relisting(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    first = api.put(CM, obj(CM, "a"))
    informer = start()
    changed = api.put(CM, {**first, "data": {"v": "2"}})
    api.emit(CM, "MODIFIED", changed)
    api.fail(CM, errors.ApiError.from_status(0, "Unavailable", "connection refused"))
    again = api.put(CM, {**first, "data": {"v": "3"}})
    api.emit(CM, "MODIFIED", again)
    wait_for(lambda: len(recorder.snapshot()) == 3, timeout=5)
    assert [t for t, _, _, _ in recorder.snapshot()] == ["ADDED", "MODIFIED", "MODIFIED"]
    assert informer.relists == 1
    assert api.list_versions == ["0", None]  # the first list, and where etcd stands (at most one object)
    assert api.watches[1][2] == changed["metadata"]["resourceVersion"]
    assert informer.reconnects == 1


def test_a_watch_broken_while_etcd_went_back_to_an_older_revision_is_followed_by_a_relist(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """etcd restored from a backup without moving its revision on: a watch from the informer's version would be
    answered nothing until etcd passed it, and what the restore undid would stay in the store."""
    first = api.put(CM, {**obj(CM, "a"), "data": {"v": "1"}})
    informer = start()
    lost = api.put(CM, {**obj(CM, "a"), "data": {"v": "2"}})
    api.emit(CM, "MODIFIED", lost)
    wait_for(lambda: informer.resource_version == lost["metadata"]["resourceVersion"], timeout=5)
    api.objects[("configmaps", "ns", "a")] = first  # the restore
    api.version = int(first["metadata"]["resourceVersion"])
    api.fail(CM, errors.ApiError.from_status(0, "Unavailable", "connection refused"))

    wait_for(lambda: informer.relists == 2, timeout=5)
    assert informer.get("ns", "a")["data"] == {"v": "1"}  # type: ignore[index]
    wait_for(lambda: len(api.watches) == 2, timeout=5)
    assert api.watches[1][2] == first["metadata"]["resourceVersion"]


def reconnect_failures(logged: list[Any]) -> list[int]:
    return [entry["failures"] for entry in logged if entry["event"] == "list or watch failed, retrying"]


def test_a_watch_that_delivered_events_before_it_dropped_restarts_the_reconnect_count(
    api: Any, start: Any, obj: Obj
) -> None:
    """A watch cut after streaming (a load balancer dropping the connection) is one failure after a success, not one
    more in a row: counted so, repeated cuts climbed to the longest reconnect pause (30 s without any event)."""
    first = api.put(CM, obj(CM, "a"))
    with structlog.testing.capture_logs() as logged:
        start(backoff=backoff_mod.Backoff(base=0.01, cap=10.0, jitter=0.0))
        for n in range(3):
            api.emit(CM, "MODIFIED", api.put(CM, {**first, "data": {"v": str(n)}}))
            api.fail(CM, errors.ApiError.from_status(0, "ConnectionReset", "connection reset by peer"))
        wait_for(lambda: len(reconnect_failures(logged)) == 3, timeout=5, message=lambda: str(logged))

    assert reconnect_failures(logged) == [1, 1, 1]


def test_a_watch_that_outlived_the_longest_reconnect_pause_before_it_dropped_restarts_the_reconnect_count(
    api: Any, start: Any
) -> None:
    """An idle watch cut by a proxy delivered nothing, yet it held: the failures before it are not part of a streak."""
    for _ in range(2):
        api.fail(CM, errors.ApiError.from_status(0, "Unavailable", "connection refused"))  # at once, twice
    with structlog.testing.capture_logs() as logged:
        start(backoff=backoff_mod.Backoff(base=0.01, cap=0.2, jitter=0.0))
        wait_for(lambda: len(api.watches) == 3, timeout=5)
        time.sleep(0.3)  # the third watch stays open, silent, past the longest pause
        api.fail(CM, errors.ApiError.from_status(0, "ConnectionReset", "connection reset by peer"))
        wait_for(lambda: len(reconnect_failures(logged)) == 3, timeout=5, message=lambda: str(logged))

    assert reconnect_failures(logged) == [1, 2, 1]


def test_a_list_or_watch_failing_again_the_same_way_in_a_row_is_a_warning_once_then_debug(api: Any, start: Any) -> None:
    """An outage of the API server fails every reconnect of every informer the same way, up to every 30 s each for
    as long as it lasts: one warning says it (and another one a failure of another kind)."""
    refused = errors.ApiError.from_status(0, "Unavailable", "connection refused")
    for _ in range(4):
        api.fail(CM, refused)
    api.fail(CM, errors.ApiError.from_status(503, "ServiceUnavailable", "etcd is not ready"))  # another failure
    with structlog.testing.capture_logs() as logged:
        start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
        wait_for(lambda: len(reconnect_failures(logged)) == 5, timeout=5, message=lambda: str(logged))

    levels = [entry["log_level"] for entry in logged if entry["event"] == "list or watch failed, retrying"]
    assert levels == ["warning", "debug", "debug", "debug", "warning"]
    assert reconnect_failures(logged) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("retry_after", "waits"), [(2.0, 2.0), (3600.0, 30.0), (None, 0.01)])
def test_a_list_or_watch_throttled_with_a_retry_after_waits_for_it_up_to_the_longest_reconnect_pause(
    api: Any, start: Any, retry_after: float | None, waits: float
) -> None:
    """An API server that throttles a list or watch (429) says when to come back: its informer waits that long (a
    proxy's day no longer than the backoff's longest pause), not its reconnect backoff's quick first retry."""
    throttled = errors.ApiError.from_status(429, "TooManyRequests", "the server has received too many requests")
    assert isinstance(throttled, errors.TooManyRequests)
    throttled.retry_after = retry_after
    api.fail(CM, throttled)
    with structlog.testing.capture_logs() as logged:
        start(backoff=backoff_mod.Backoff(base=0.01, factor=2.0, cap=30.0, jitter=0.0))
        wait_for(lambda: reconnect_failures(logged) == [1], timeout=5, message=lambda: str(logged))

    assert [entry["retry_in"] for entry in logged if entry["event"] == "list or watch failed, retrying"] == [waits]


def refused_at(query: str, address: str) -> errors.ApiError:
    """What the client raises for a list or watch the API server's port refuses: the transport's text quotes the
    request's query and, with some urllib3 versions, the address of the connection object."""
    path = "/api/v1/namespaces/ns/configmaps"
    return errors.ApiError.from_status(
        0,
        "Unavailable",
        f"HTTPSConnectionPool(host='127.0.0.1', port=6443): Max retries exceeded with url: {path}?{query} (Caused by "
        f"NewConnectionError('<urllib3.connection.HTTPSConnection object at {address}>: Failed to establish a new "
        "connection: [Errno 111] Connection refused'))",
        method="GET",
        url=path,
    )


def test_the_retries_of_one_outage_are_a_warning_once_though_each_request_asks_its_own_query(
    api: Any, start: Any
) -> None:
    """Each watch asks for its own random timeoutSeconds, from the resourceVersion it stands at, and the check after
    a broken watch lists with a limit: the text of the same refusal differs by the query it quotes, yet it is one
    outage, said once. A failure that differs beyond the query is said again."""
    queries = [
        "watch=true&resourceVersion=101&allowWatchBookmarks=true&timeoutSeconds=187",
        "watch=true&resourceVersion=101&allowWatchBookmarks=true&timeoutSeconds=291",
        "limit=1&resourceVersion=101",
        "watch=true&resourceVersion=102&allowWatchBookmarks=true&timeoutSeconds=155",
    ]
    for n, query in enumerate(queries):
        api.fail(CM, refused_at(query, f"0x7f3a5c1d{n:04x}"))
    reset = errors.ApiError.from_status(0, "Unavailable", "watch configmaps: Connection reset by peer")
    api.fail(CM, reset)  # another failure
    with structlog.testing.capture_logs() as logged:
        start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
        wait_for(lambda: len(reconnect_failures(logged)) == 5, timeout=5, message=lambda: str(logged))

    said = [(e["log_level"], e["error"]) for e in logged if e["event"] == "list or watch failed, retrying"]
    assert [level for level, _ in said] == ["warning", "debug", "debug", "debug", "warning"]
    assert [error for _, error in said] == [str(refused_at(q, f"0x7f3a5c1d{n:04x}")) for n, q in enumerate(queries)] + [
        str(reset)
    ]


@pytest.mark.parametrize(
    "refusal",
    [
        errors.ApiError.from_status(404, "NotFound", "the server could not find the requested resource"),
        errors.ApiError.from_status(405, "MethodNotAllowed", "the server does not allow this method"),
    ],
)
def test_a_kind_no_longer_served_is_logged_once_and_listed_again_once_served(
    api: Any, recorder: Any, start: Any, obj: Obj, refusal: errors.ApiError
) -> None:
    """A CRD deleted under a running informer: its list and watch are refused until the CRD is back. One warning
    says so (not one per retry), and the list that answers again is diffed against the store, every object it finds
    unchanged announced as well (its reconciles failed meanwhile)."""
    api.put(CM, obj(CM, "kept"))
    api.put(CM, obj(CM, "removed"))
    with structlog.testing.capture_logs() as logged:
        informer = start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
        api.refusal = refusal
        api.fail(CM, refusal)
        wait_for(lambda: api.refused >= 5, timeout=5)
        refused_while_down = informer.served
        api.remove(CM, "ns", "removed")
        api.put(CM, obj(CM, "added"))
        api.refusal = None
        wait_for(lambda: "added" in recorder.types_by_name(), timeout=5, message=lambda: str(recorder.snapshot()))

    warnings = [entry for entry in logged if entry["log_level"] in ("warning", "error")]
    assert len(warnings) == 1, warnings
    assert "does not serve the kind" in warnings[0]["event"]
    assert warnings[0]["cause"] == "no version of the core group serves ConfigMap", warnings[0]
    assert recorder.types_by_name() == {
        "kept": ["ADDED", "RESYNC"],
        "removed": ["ADDED", "DELETED"],
        "added": ["ADDED"],
    }
    assert (refused_while_down, informer.served) == (False, True)


NOT_FOUND = errors.ApiError.from_status(404, "NotFound", "404 page not found")
RESTARTED = errors.ApiError.from_status(0, "Unavailable", "watch configmaps: Response ended prematurely")
STARTING = "the API server does not serve the kind yet (starting: its CRDs not loaded), retrying"


def said_of_serving(logged: list[Any]) -> list[tuple[str, str]]:
    return [
        (entry["event"], entry["log_level"])
        for entry in logged
        if entry["event"].startswith(("the API server does not serve", "the API server serves", "list or watch failed"))
    ]


@pytest.mark.parametrize("times", [1, 2])
def test_a_kind_answered_404_right_after_the_api_server_answered_nothing_stays_served_and_is_not_swept(
    api: Any, recorder: Any, start: Any, obj: Obj, times: int
) -> None:
    """A restarted API server (a cluster upgrade, a control-plane node rolled) answers a custom kind 404 for a moment,
    until its CRD handlers are in place: that is the API server starting, not the CRD deleted. Taken for a kind no
    longer served, the list a second later announced every object of the kind again, as after a deletion of its CRD."""
    api.put(CM, obj(CM, "a"))
    api.put(CM, obj(CM, "b"))
    with structlog.testing.capture_logs() as logged:
        informer = start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
        api.refusal, api.refusal_times = NOT_FOUND, times
        api.fail(CM, RESTARTED)
        wait_for(lambda: len(api.watches) == 2, timeout=5, message=lambda: str(logged))
        changed = api.put(CM, {**obj(CM, "a"), "data": {"v": "2"}})
        api.emit(CM, "MODIFIED", changed)
        wait_for(lambda: len(recorder.snapshot()) == 3, timeout=5, message=lambda: str(recorder.snapshot()))

    assert recorder.types_by_name() == {"a": ["ADDED", "MODIFIED"], "b": ["ADDED"]}
    assert said_of_serving(logged) == [("list or watch failed, retrying", "warning"), (STARTING, "info")] + [
        (STARTING, "debug")
    ] * (times - 1)
    assert (api.refused, informer.served, informer.relists) == (times, True, 1)


def test_a_404_persisting_past_the_starting_grace_after_the_api_server_answered_nothing_is_the_kind_not_served(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The CRD deleted while the API server was away: once the grace for its start is over, the kind is not served,
    as a 404 out of the blue makes it, and the list that answers again announces every object found unchanged."""
    api.put(CM, obj(CM, "kept"))
    with structlog.testing.capture_logs() as logged:
        informer = start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0), starting_grace=0.2)
        api.refusal = NOT_FOUND
        api.fail(CM, RESTARTED)
        wait_for(lambda: not informer.served, timeout=5, message=lambda: str(logged))
        api.refusal = None
        wait_for(lambda: informer.served and informer.relists == 2, timeout=5)

    said = said_of_serving(logged)
    not_served = [n for n, (event, _) in enumerate(said) if "does not serve the kind any more" in event]
    assert said[:2] == [("list or watch failed, retrying", "warning"), (STARTING, "info")], said
    assert {level for event, level in said[2 : not_served[0]]} <= {"debug"}, said
    assert [said[n][1] for n in not_served] == ["warning"] + ["debug"] * (len(not_served) - 1), said
    assert said[-1] == ("the API server serves the kind again", "info"), said
    assert recorder.types_by_name() == {"kept": ["ADDED", "RESYNC"]}


def test_a_404_after_the_api_server_answered_again_is_the_kind_not_served_at_once(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The API server restarted, answered the informer's list and watch, and a CRD deleted later answers 404: no grace
    (the warning, and the cache's refusal of reads of the kind, waited for it)."""
    api.put(CM, obj(CM, "a"))
    with structlog.testing.capture_logs() as logged:
        informer = start(backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
        api.fail(CM, RESTARTED)
        wait_for(lambda: len(api.watches) == 2, timeout=5)
        api.refusal = NOT_FOUND
        api.fail(CM, NOT_FOUND)
        wait_for(lambda: not informer.served, timeout=5, message=lambda: str(logged))

    assert STARTING not in [event for event, _ in said_of_serving(logged)]


@pytest.mark.parametrize(
    "refusal",
    [
        errors.ApiError.from_status(404, "NotFound", "the server could not find the requested resource"),
        errors.Forbidden(403, "Forbidden", "configmaps is forbidden"),
    ],
    ids=["not served", "refused"],
)
def test_what_the_list_ending_a_refusal_tells_is_told_once_the_refusal_is_lifted(
    api: Any, obj: Obj, refusal: errors.ApiError
) -> None:
    """Until that list is done the store may be stale, and the cache refuses reads of the kind: a change told before
    it is done woke a reconcile that read the kind still refused, and failed."""
    told: list[tuple[str, str, bool, bool]] = []
    informer: informer_mod.Informer | None = None

    def record(event_type: str, o: dict[str, Any], old: dict[str, Any] | None) -> None:
        assert informer is not None
        told.append((event_type, o["metadata"]["name"], informer.served, informer.refusal is None))

    api.put(CM, obj(CM, "changed"))
    api.put(CM, obj(CM, "same"))
    api.put(CM, obj(CM, "removed"))
    informer = informer_mod.Informer(
        api, CM, "ns", on_event=record, backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0)
    )
    try:
        informer.start()
        assert informer.has_synced.wait(5)
        api.refusal = refusal
        api.fail(CM, refusal)
        wait_for(lambda: api.refused >= 2, timeout=5)
        api.put(CM, obj(CM, "changed", labels={"changed": "yes"}))
        api.put(CM, obj(CM, "added"))
        api.remove(CM, "ns", "removed")
        api.refusal = None
        wait_for(lambda: informer.relists == 2, timeout=5)
        wait_for(lambda: any(name == "removed" for _, name, _, _ in told[3:]), timeout=5)
    finally:
        api.close()
        informer.stop(timeout=2)

    after = told[3:]
    assert {(event_type, name) for event_type, name, _, _ in after} >= {
        ("MODIFIED", "changed"),
        ("ADDED", "added"),
        ("DELETED", "removed"),
    }, told
    assert [(served, lifted) for _, _, served, lifted in after] == [(True, True)] * len(after), told


@pytest.mark.parametrize(
    "refusal",
    [
        errors.ApiError.from_status(404, "NotFound", "the server could not find the requested resource"),
        errors.Forbidden(403, "Forbidden", "configmaps is forbidden"),
    ],
    ids=["not served", "refused"],
)
def test_on_refusal_is_told_at_the_refusal_and_once_the_list_ending_it_is_in_the_store_before_its_changes(
    api: Any, obj: Obj, refusal: errors.ApiError
) -> None:
    """The kind's daemons are stopped at the first and started again at the second, from the store: told before that
    list is in it, an object deleted meanwhile had its daemon started again."""
    told: list[str] = []
    calls: list[tuple[bool, bool, bool, list[str]]] = []
    informer: informer_mod.Informer | None = None

    def changed() -> None:
        assert informer is not None
        lifted = informer.served and informer.refusal is None
        calls.append(
            (lifted, informer.get("ns", "removed") is not None, informer.get("ns", "added") is not None, told[:])
        )

    api.put(CM, obj(CM, "removed"))
    informer = informer_mod.Informer(
        api,
        CM,
        "ns",
        on_event=lambda event_type, o, old: told.append(f"{event_type} {o['metadata']['name']}"),
        on_refusal=changed,
        backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0),
    )
    try:
        informer.start()
        assert informer.has_synced.wait(5)
        api.refusal = refusal
        api.fail(CM, refusal)
        wait_for(lambda: api.refused >= 3, timeout=5)
        api.remove(CM, "ns", "removed")
        api.put(CM, obj(CM, "added"))
        api.refusal = None
        wait_for(lambda: len(told) == 3, timeout=5, message=lambda: str(told))
    finally:
        api.close()
        informer.stop(timeout=2)

    assert calls == [(False, True, False, ["ADDED removed"]), (True, False, True, ["ADDED removed"])], calls
    assert sorted(told[1:]) == ["ADDED added", "DELETED removed"]


def test_a_kind_refused_to_list_and_watch_is_listed_again_once_granted_before_its_recovery_is_told(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """A role that lost ``list``/``watch`` on a kind for a while: what changed meanwhile is in the store, and announced,
    before the recovery is told (the controller then retries the reconciles that failed on the refusal: resumed from
    where the watch stood, they read the store before the watch told the deletion, and wrote a child's owner Ready
    without the child)."""
    api.put(CM, obj(CM, "kept"))
    api.put(CM, obj(CM, "vanish"))
    held_at_recovery: list[tuple[bool, list[str]]] = []
    informer: informer_mod.Informer | None = None

    def recovered() -> None:
        assert informer is not None
        held_at_recovery.append((informer.get("ns", "vanish") is not None, recorder.types_by_name().get("vanish", [])))

    informer = start(on_recovered=recovered, backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0))
    refusal = errors.ApiError.from_status(403, "Forbidden", 'configmaps is forbidden: cannot watch "configmaps"')
    api.refusal = refusal
    api.fail(CM, refusal)
    wait_for(lambda: api.refused >= 3, timeout=5)
    assert informer.refusal is not None
    api.remove(CM, "ns", "vanish")  # not told by any watch: the fake's stream replays nothing
    api.refusal = None
    wait_for(lambda: held_at_recovery, timeout=5, message=lambda: str(recorder.snapshot()))

    assert held_at_recovery == [(False, ["ADDED", "DELETED"])]
    assert informer.refusal is None
    assert recorder.types_by_name() == {"kept": ["ADDED"], "vanish": ["ADDED", "DELETED"]}


def test_an_event_older_than_the_stored_object_is_ignored(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    old = api.put(CM, obj(CM, "a"))
    newer = api.put(CM, {**old, "data": {"v": "new"}})
    informer = start()
    api.emit(CM, "MODIFIED", {**old, "data": {"v": "stale"}})
    api.emit(CM, "MODIFIED", {**obj(CM, "b"), "metadata": {**obj(CM, "b")["metadata"], "resourceVersion": "999"}})
    wait_for(lambda: informer.get("ns", "b") is not None, timeout=5)
    assert informer.get("ns", "a")["data"] == {"v": "new"}  # type: ignore[index]
    assert [(t, n) for t, n, _, _ in recorder.snapshot()] == [("ADDED", "a"), ("ADDED", "b")]
    assert informer.get("ns", "a")["metadata"]["resourceVersion"] == newer["metadata"]["resourceVersion"]  # type: ignore[index]


def test_observe_updates_the_store_and_swallows_the_watch_echo_of_that_same_version(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    first = api.put(CM, obj(CM, "a", labels={"v": "1"}))
    informer = start()
    written = api.put(CM, {**first, "metadata": {**first["metadata"], "labels": {"v": "2"}}})
    assert informer.observe({**written, "metadata": {**written["metadata"], "managedFields": [{}]}}) is True
    stored = informer.get("ns", "a")
    assert stored is not None
    assert stored["metadata"]["labels"] == {"v": "2"}
    assert "managedFields" not in stored["metadata"]
    api.emit(CM, "MODIFIED", written)
    later = api.put(CM, {**written, "metadata": {**written["metadata"], "labels": {"v": "3"}}})
    api.emit(CM, "MODIFIED", later)
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert recorder.snapshot() == [
        ("ADDED", "a", first["metadata"]["resourceVersion"], None),
        ("MODIFIED", "a", later["metadata"]["resourceVersion"], written["metadata"]["resourceVersion"]),
    ]


def test_someone_elses_change_the_watch_tells_after_okts_later_write_was_observed_is_announced(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    first = api.put(CM, obj(CM, "a", labels={"v": "1"}))
    informer = start()
    theirs = api.put(CM, {**first, "metadata": {**first["metadata"], "labels": {"v": "2"}}})
    ours = api.put(CM, {**theirs, "data": {"written": "by okt"}})
    informer.observe(ours)  # the answer to okt's write came before the watch told of the change under it
    api.emit(CM, "MODIFIED", theirs)
    api.emit(CM, "MODIFIED", ours)  # the echo of okt's own write: swallowed
    later = api.put(CM, {**ours, "metadata": {**ours["metadata"], "labels": {"v": "3"}}})
    api.emit(CM, "MODIFIED", later)
    wait_for(lambda: len(recorder.snapshot()) == 3, timeout=5)

    assert recorder.snapshot() == [
        ("ADDED", "a", first["metadata"]["resourceVersion"], None),
        ("MODIFIED", "a", theirs["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]),
        ("MODIFIED", "a", later["metadata"]["resourceVersion"], ours["metadata"]["resourceVersion"]),
    ]
    assert informer.get("ns", "a")["metadata"]["resourceVersion"] == later["metadata"]["resourceVersion"]  # type: ignore[index]


def test_a_relist_announces_what_came_before_okts_observed_write_that_the_watch_never_told(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    first = api.put(CM, obj(CM, "a", labels={"v": "1"}))
    informer = start()
    theirs = api.put(CM, {**first, "metadata": {**first["metadata"], "labels": {"v": "2"}}})
    ours = api.put(CM, {**theirs, "data": {"written": "by okt"}})
    informer.observe(ours)  # the watch is down (an API server restart): only the answer to okt's write came
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5, message=lambda: str(recorder.snapshot()))

    assert recorder.snapshot() == [
        ("ADDED", "a", first["metadata"]["resourceVersion"], None),
        ("MODIFIED", "a", ours["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]),
    ]


def test_a_relist_announces_a_change_after_okts_observed_write_against_what_the_watch_told(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The relabelling before okt's write is in the change the relist announces: against okt's own answer, which
    already carries it, the change would read as the data alone."""
    first = api.put(CM, obj(CM, "a", labels={"v": "1"}))
    informer = start()
    theirs = api.put(CM, {**first, "metadata": {**first["metadata"], "labels": {"v": "2"}}})
    ours = api.put(CM, {**theirs, "data": {"written": "by okt"}})
    informer.observe(ours)  # the watch is down: only the answer to okt's write came
    later = api.put(CM, {**ours, "data": {"written": "by okt", "and": "by someone else"}})
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5, message=lambda: str(recorder.snapshot()))

    assert recorder.snapshot() == [
        ("ADDED", "a", first["metadata"]["resourceVersion"], None),
        ("MODIFIED", "a", later["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]),
    ]


def test_a_change_before_okts_observed_write_that_a_relist_older_than_the_write_lacks_is_announced_by_the_watch(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The relist was answered before okt's write (observed meanwhile) and before someone's change under it: the
    watch, resuming from the list, tells that change; the store keeps okt's newer answer and swallows its echo."""
    first = api.put(CM, obj(CM, "a", labels={"v": "1"}))
    informer = start()
    version = int(first["metadata"]["resourceVersion"])
    theirs = {**first, "metadata": {**first["metadata"], "labels": {"v": "2"}, "resourceVersion": str(version + 1)}}
    ours = {**theirs, "metadata": {**theirs["metadata"], "resourceVersion": str(version + 2)}, "data": {"by": "okt"}}
    informer.observe(ours)
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)  # the list: the object as the watch told it
    api.version += 2  # both changes happened on the server after the list was answered
    api.emit(CM, "MODIFIED", theirs)
    api.emit(CM, "MODIFIED", ours)
    later = api.put(CM, obj(CM, "b"))
    api.emit(CM, "ADDED", later)
    wait_for(lambda: informer.get("ns", "b") is not None, timeout=5)

    assert recorder.snapshot() == [
        ("ADDED", "a", str(version), None),
        ("MODIFIED", "a", str(version + 1), str(version)),
        ("ADDED", "b", later["metadata"]["resourceVersion"], None),
    ]
    assert informer.get("ns", "a")["metadata"]["resourceVersion"] == str(version + 2)  # type: ignore[index]


def test_an_echo_announced_before_its_write_was_observed_is_known_once(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    informer = start()
    written = api.put(CM, obj(CM, "a"))
    api.emit(CM, "ADDED", written)  # the watch is faster than the answer to the create
    wait_for(lambda: informer.get("ns", "a") is not None, timeout=5)
    version = written["metadata"]["resourceVersion"]
    assert informer.knows("ns", "a", version) is False  # nobody observed it yet: someone else's, for all we know
    assert informer.observe(written) is False
    assert informer.knows("ns", "a", version) is True
    assert informer.knows("ns", "a", version) is False  # told once
    assert [(t, n) for t, n, _, _ in recorder.snapshot()] == [("ADDED", "a")]


def test_an_echo_swallowed_after_observe_leaves_nothing_to_know(api: Any, start: Any, obj: Obj) -> None:
    informer = start()
    written = api.put(CM, obj(CM, "a"))
    informer.observe(written)
    informer.observe(written)  # observed twice (a second read of the same answer): still not a late echo
    api.emit(CM, "ADDED", written)
    other = api.put(CM, obj(CM, "b"))
    api.emit(CM, "ADDED", other)
    wait_for(lambda: informer.get("ns", "b") is not None, timeout=5)
    assert informer.knows("ns", "a", written["metadata"]["resourceVersion"]) is False


def test_observe_ignores_an_answer_older_than_the_stored_object(api: Any, start: Any, obj: Obj) -> None:
    old = api.put(CM, obj(CM, "a"))
    newer = api.put(CM, {**old, "data": {"v": "new"}})
    informer = start()
    assert informer.observe({**old, "data": {"v": "old"}}) is False
    assert informer.get("ns", "a")["metadata"]["resourceVersion"] == newer["metadata"]["resourceVersion"]  # type: ignore[index]


def test_kubectls_last_applied_configuration_is_dropped_from_stored_objects(api: Any, start: Any, obj: Obj) -> None:
    copy = '{"apiVersion":"v1","kind":"ConfigMap","data":{"big":"..."}}'
    api.put(CM, obj(CM, "a", annotations={packing.LAST_APPLIED: copy, "team": "cache"}))
    api.put(CM, obj(CM, "b", annotations={packing.LAST_APPLIED: copy}))
    informer = start()
    assert informer.get("ns", "a")["metadata"]["annotations"] == {"team": "cache"}  # type: ignore[index]
    assert "annotations" not in informer.get("ns", "b")["metadata"]  # type: ignore[index]


def test_observe_drops_last_applied_without_changing_the_callers_annotations(api: Any, start: Any, obj: Obj) -> None:
    informer = start()
    mine = api.put(CM, obj(CM, "a", annotations={packing.LAST_APPLIED: "{}", "team": "cache"}))
    informer.observe(mine)
    assert mine["metadata"]["annotations"] == {packing.LAST_APPLIED: "{}", "team": "cache"}
    assert informer.get("ns", "a")["metadata"]["annotations"] == {"team": "cache"}  # type: ignore[index]


def test_objects_alike_are_stored_in_a_fraction_of_their_json_and_read_back_whole(api: Any, start: Any) -> None:
    def deployment_like(i: int) -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": f"memcached-{i:05d}"}
        container = {"name": "memcached", "image": "memcached:1.6", "args": ["-m", "64", "-c", "1024"], "ports": []}
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"memcached-{i:05d}", "namespace": "ns", "uid": f"uid-{i:032d}", "labels": labels},
            "data": {"template": json.dumps({"labels": labels, "containers": [container] * 3})},
        }

    for i in range(50):
        api.put(CM, deployment_like(i))
    informer = start()
    for i in (0, 1, 49):
        stored = informer.get("ns", f"memcached-{i:05d}")
        assert stored is not None
        assert stored["data"] == deployment_like(i)["data"]
        packed = informer._store[("ns", f"memcached-{i:05d}")]
        assert len(packed.data) * 4 < len(json.dumps(stored, separators=(",", ":")))


def test_every_json_value_is_read_back_as_it_was_stored_and_each_read_is_a_private_copy(
    api: Any, start: Any, obj: Obj
) -> None:
    class Ordered(dict):  # type: ignore[type-arg]  # a dict subclass: stored as the plain mapping it holds
        pass

    data = {"text": "Grüße, 日本", "empty": "", "int": 3, "big": 2**70, "float": 0.5, "true": True, "false": False}
    informer = start()
    stored = obj(CM, "a")
    stored["metadata"]["resourceVersion"] = "107"  # newer than the list: a create answered before its ADDED
    stored.update(data=data, extra={"none": None, "list": [1, "two", [], {}], "nested": Ordered(a=1)})
    informer.observe(stored)
    first, second = informer.get("ns", "a"), informer.get("ns", "a")
    assert first is not None and second is not None
    assert first["data"] == data and [type(v) for v in first["data"].values()] == [type(v) for v in data.values()]
    assert first["extra"] == {"none": None, "list": [1, "two", [], {}], "nested": {"a": 1}}
    assert type(first["extra"]["nested"]) is dict
    first["extra"]["list"].append("changed")
    assert second["extra"]["list"] == [1, "two", [], {}] == informer.get("ns", "a")["extra"]["list"]  # type: ignore[index]


def test_an_owner_index_holds_many_children_and_lets_them_go_one_by_one(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    for i in range(20):
        api.put(CM, obj(CM, f"c{i:02d}", ownerReferences=[{"uid": "u1"}]))
    informer = start(indexers={"owner": owner_uids})
    assert sorted(o["metadata"]["name"] for o in informer.by_index("owner", "u1")) == [f"c{i:02d}" for i in range(20)]
    for i in range(19):
        api.emit(CM, "DELETED", api.remove(CM, "ns", f"c{i:02d}"))
    wait_for(lambda: len(recorder.snapshot()) == 39, timeout=5)
    assert [o["metadata"]["name"] for o in informer.by_index("owner", "u1")] == ["c19"]
    api.emit(CM, "DELETED", api.remove(CM, "ns", "c19"))
    wait_for(lambda: informer.by_index("owner", "u1") == [], timeout=5)


def test_observe_does_not_alias_the_callers_dict(api: Any, start: Any, obj: Obj) -> None:
    informer = start()
    mine = api.put(CM, obj(CM, "a"))
    informer.observe(mine)
    mine["metadata"]["name"] = "renamed"
    assert informer.get("ns", "a")["metadata"]["name"] == "a"  # type: ignore[index]


def owner_uids(o: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in o["metadata"].get("ownerReferences", [])]


@pytest.mark.parametrize("told_by", ["watch", "relist"])
def test_a_read_does_not_wait_for_the_writer_indexing_another_object(
    api: Any, start: Any, obj: Obj, told_by: str
) -> None:
    """The operator's index function, slow or hung on one object, runs before the store is locked: every read of the
    kind goes on meanwhile, those that take the lock too (an index, a list, okt's own answer stored)."""
    entered, release = threading.Event(), threading.Event()

    def slow_index(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["name"] == "slow":
            entered.set()
            release.wait(10)
        return ["all"]

    api.put(CM, obj(CM, "a"))
    informer = start(indexers={"slow": slow_index})
    slow = api.put(CM, obj(CM, "slow"))
    if told_by == "watch":
        api.emit(CM, "ADDED", slow)
    else:
        api.fail(CM, errors.ApiError.from_status(410, "Expired", "too old"))
    assert entered.wait(5)
    read: list[object] = []
    mine = api.put(CM, {**obj(CM, "a"), "data": {"x": "1"}})
    reader = threading.Thread(
        target=lambda: read.extend(
            [
                (informer.get("ns", "a") or {})["metadata"]["name"],
                [o["metadata"]["name"] for o in informer.by_index("slow", "all")],
                [o["metadata"]["name"] for o in informer.items()],
                informer.observe(mine),
            ]
        )
    )
    reader.start()
    reader.join(2)
    try:
        assert not reader.is_alive(), "the read waited for the writer"
        assert read == ["a", ["a"], ["a"], True]
    finally:
        release.set()
        reader.join(5)
    wait_for(lambda: informer.get("ns", "slow") is not None, timeout=5)
    assert sorted(o["metadata"]["name"] for o in informer.by_index("slow", "all")) == ["a", "slow"]


def test_each_event_indexes_its_object_once_and_an_event_dropped_or_swallowed_not_at_all(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """Indexing ahead of the lock costs nothing more: each object stored is packed and indexed once, and an event
    that stores nothing (out of order, the echo of okt's own write, a deletion) is not packed at all."""
    calls: list[str] = []

    def counted(o: dict[str, Any]) -> list[str]:
        calls.append(o["metadata"]["name"])
        return [o["metadata"]["name"]]

    informer = start(indexers={"names": counted})
    a = api.put(CM, obj(CM, "a"))
    api.emit(CM, "ADDED", a)
    older = json.loads(json.dumps(a))
    a = api.put(CM, {**a, "data": {"x": "1"}})
    api.emit(CM, "MODIFIED", a)
    api.emit(CM, "MODIFIED", older)  # out of order: dropped
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    mine = api.put(CM, {**a, "data": {"x": "2"}})
    assert informer.observe(mine, writer=None)
    api.emit(CM, "MODIFIED", mine)  # the echo of okt's own write: swallowed
    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
    wait_for(lambda: informer.get("ns", "a") is None, timeout=5)
    assert calls == ["a", "a", "a"]
    assert informer.by_index("names", "a") == []


def test_an_index_added_while_an_event_is_indexed_ahead_of_the_lock_holds_that_object_too(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_index(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["name"] == "slow":
            entered.set()
            release.wait(10)
        return ["all"]

    informer = start(indexers={"slow": slow_index})
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "slow")))
    assert entered.wait(5)
    adding = threading.Thread(target=informer.add_indexers, args=({"names": lambda o: [o["metadata"]["name"]]},))
    adding.start()
    adding.join(2)
    try:
        assert not adding.is_alive(), "adding an index waited for the index function of an event"
    finally:
        release.set()
        adding.join(5)
    wait_for(lambda: informer.get("ns", "slow") is not None, timeout=5)
    assert [o["metadata"]["name"] for o in informer.by_index("names", "slow")] == ["slow"]
    assert [o["metadata"]["name"] for o in informer.by_index("slow", "all")] == ["slow"]


def _hangs_on(name: str, entered: threading.Event, release: threading.Event) -> Callable[[dict[str, Any]], list[str]]:
    """An index function giving each object's team, that hangs on its first call for ``name`` until ``release``."""

    def team(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["name"] == name and not entered.is_set():
            entered.set()
            release.wait(10)
        return [o["metadata"]["labels"]["team"]]

    return team


def test_an_index_being_added_holds_no_read_of_the_store_nor_of_the_other_indexes_while_its_function_hangs(
    api: Any, start: Any, obj: Obj
) -> None:
    """The operator's index function runs over the stored objects without the informer's lock: every read of the kind
    goes on, and so do its events, while the index is built; the index itself is read only once complete."""
    entered, release = threading.Event(), threading.Event()
    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    api.put(CM, obj(CM, "b", labels={"team": "x"}))
    informer = start(indexers={"names": lambda o: [o["metadata"]["name"]]})
    adding = threading.Thread(target=informer.add_indexers, args=({"teams": _hangs_on("a", entered, release)},))
    adding.start()
    assert entered.wait(5)
    read: list[object] = []
    mine = api.put(CM, {**obj(CM, "b", labels={"team": "y"}), "data": {"x": "1"}})
    reader = threading.Thread(
        target=lambda: read.extend(
            [
                (informer.get("ns", "a") or {})["metadata"]["name"],
                [o["metadata"]["name"] for o in informer.by_index("names", "b")],
                sorted(o["metadata"]["name"] for o in informer.items()),
                informer.has_index("teams"),
                informer.observe(mine),
            ]
        )
    )
    try:
        reader.start()
        reader.join(2)
        assert not reader.is_alive(), "the read waited for the index being added"
        assert read == ["a", ["b"], ["a", "b"], False, True]
        with pytest.raises(KeyError):
            informer.by_index("teams", "x")
        api.emit(CM, "ADDED", api.put(CM, obj(CM, "c", labels={"team": "x"})))
        wait_for(
            lambda: informer.get("ns", "c") is not None, timeout=5, message="the event stored while the index is built"
        )
        assert adding.is_alive()
    finally:
        release.set()
        adding.join(5)
    assert not adding.is_alive()
    assert informer.has_index("teams")
    assert sorted(o["metadata"]["name"] for o in informer.by_index("teams", "x")) == ["a", "c"]
    assert [o["metadata"]["name"] for o in informer.by_index("teams", "y")] == ["b"]


@pytest.mark.parametrize("meanwhile", ["changed", "deleted", "added", "deleted and added again"])
def test_an_index_added_holds_each_object_as_last_stored_when_events_change_the_store_while_it_is_built(
    api: Any, recorder: Any, start: Any, obj: Obj, meanwhile: str
) -> None:
    """What is computed for an object replaced or deleted while the index is built is dropped: the event stored its
    latest version indexed by every index, the new one included; no version of an object is indexed twice."""
    entered, release = threading.Event(), threading.Event()
    calls: list[tuple[str, str]] = []
    hangs = _hangs_on("b", entered, release)

    def team(o: dict[str, Any]) -> list[str]:
        calls.append((o["metadata"]["name"], o["metadata"]["resourceVersion"]))
        return hangs(o)

    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    api.put(CM, obj(CM, "b", labels={"team": "x"}))
    informer = start()
    adding = threading.Thread(target=informer.add_indexers, args=({"teams": team},))
    adding.start()
    try:
        assert entered.wait(5)
        assert ("a", informer.get("ns", "a")["metadata"]["resourceVersion"]) in calls  # type: ignore[index]
        if meanwhile == "changed":
            api.emit(CM, "MODIFIED", api.put(CM, obj(CM, "a", labels={"team": "y"})))
        if meanwhile.startswith("deleted"):
            api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
        if meanwhile.endswith("added") or meanwhile.endswith("again"):
            name = "a" if meanwhile.endswith("again") else "c"
            api.emit(CM, "ADDED", api.put(CM, obj(CM, name, labels={"team": "z"})))
        told = {"changed": 1, "deleted": 1, "added": 1, "deleted and added again": 2}[meanwhile]
        wait_for(
            lambda: len(recorder.snapshot()) == 2 + told,
            timeout=5,
            message="the events stored while the index is built",
        )
        assert not informer.has_index("teams")
    finally:
        release.set()
        adding.join(5)
    assert not adding.is_alive()
    expected = {
        "changed": {"x": ["b"], "y": ["a"], "z": []},
        "deleted": {"x": ["b"], "y": [], "z": []},
        "added": {"x": ["a", "b"], "y": [], "z": ["c"]},
        "deleted and added again": {"x": ["b"], "y": [], "z": ["a"]},
    }[meanwhile]
    assert {
        team: sorted(o["metadata"]["name"] for o in informer.by_index("teams", team)) for team in expected
    } == expected
    assert len(calls) == len(set(calls)), calls  # each version indexed once


def test_an_index_whose_function_raises_while_it_is_added_is_not_kept_and_can_be_added_again(
    api: Any, start: Any, obj: Obj
) -> None:
    """The error is the caller's; the objects stored while the index was built leave it with the rest, and the store
    and its other indexes follow the events as before."""
    entered, release = threading.Event(), threading.Event()

    def breaks(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["name"] == "b":
            entered.set()
            release.wait(10)
            raise ValueError("cannot index b")
        return [o["metadata"]["labels"]["team"]]

    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    api.put(CM, obj(CM, "b", labels={"team": "x"}))
    informer = start(indexers={"names": lambda o: [o["metadata"]["name"]]})
    raised: list[BaseException] = []

    def add() -> None:
        try:
            informer.add_indexers({"teams": breaks})
        except ValueError as exc:
            raised.append(exc)

    adding = threading.Thread(target=add)
    adding.start()
    try:
        assert entered.wait(5)
        api.emit(CM, "ADDED", api.put(CM, obj(CM, "c", labels={"team": "x"})))  # stored with the index being built
        wait_for(lambda: informer.get("ns", "c") is not None, timeout=5)
    finally:
        release.set()
        adding.join(5)
    assert [str(exc) for exc in raised] == ["cannot index b"]
    assert not informer.has_index("teams")
    api.emit(CM, "MODIFIED", api.put(CM, obj(CM, "c", labels={"team": "y"})))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
    wait_for(lambda: informer.get("ns", "a") is None, timeout=5)
    assert [o["metadata"]["name"] for o in informer.by_index("names", "c")] == ["c"]
    assert informer.by_index("names", "a") == []
    informer.add_indexers({"teams": lambda o: [o["metadata"]["labels"]["team"]]})
    assert [o["metadata"]["name"] for o in informer.by_index("teams", "x")] == ["b"]
    assert [o["metadata"]["name"] for o in informer.by_index("teams", "y")] == ["c"]


def test_a_stored_entry_out_of_step_with_the_indexes_is_refused_when_it_is_replaced(
    api: Any, start: Any, obj: Obj
) -> None:
    """Only an entry stored before an index being added lacks values (that index's): one holding fewer than the
    indexes kept, outside an addition, is a fault that would leave its values in the index it lacks, stale. Replacing
    it is refused, the store and the indexes left as they were."""
    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    informer = start(
        indexers={"names": lambda o: [o["metadata"]["name"]], "teams": lambda o: [o["metadata"]["labels"]["team"]]}
    )
    (entry,) = informer.index_held("names", "a")
    entry.keep_index(1)  # the values of "names" alone
    mine = api.put(CM, obj(CM, "a", labels={"team": "y"}))

    with pytest.raises(ValueError, match="a stored entry holds the values of 1 indexes: the store keeps 2, 2 of them"):
        informer.observe(mine)

    assert informer.index_held("teams", "x") == (entry,)
    assert informer.by_index("teams", "y") == []


def test_a_deleted_event_removes_the_object_and_its_index_entries(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a", ownerReferences=[{"uid": "u1"}]))
    informer = start(indexers={"owner": owner_uids})
    assert [o["metadata"]["name"] for o in informer.by_index("owner", "u1")] == ["a"]
    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert informer.get("ns", "a") is None
    assert informer.by_index("owner", "u1") == []
    assert recorder.snapshot()[1][0] == "DELETED"


class SelectingApi(conftest.FakeApi):
    """Lists as the API server does with a label selector; a read by name answers ``refusal_of_get`` when set."""

    refusal_of_get: BaseException | None = None

    def list(
        self, kind: kinds.Kind, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        items, version = super().list(kind, namespace, label_selector=label_selector)
        selects = selectors.matcher(label_selector)
        return [item for item in items if selects(item["metadata"].get("labels") or {})], version

    def get_or_none(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if self.refusal_of_get is not None:
            raise self.refusal_of_get
        return super().get_or_none(kind, name, namespace)


@pytest.mark.parametrize("get_allowed", [True, False], ids=["get allowed", "get refused"])
def test_a_relist_tells_what_left_the_label_selection_meanwhile_with_its_state_now(
    recorder: Any, obj: Obj, get_allowed: bool
) -> None:
    """The list lacks both: only a read by name tells the object relabelled out of the selection from the one
    deleted. Without get (a hand-written role), both are told as deleted, with their last stored state."""
    api = SelectingApi()
    informer = informer_mod.Informer(api, CM, "ns", "selected=yes", on_event=recorder)
    try:
        for name in ("left", "gone", "kept"):
            api.put(CM, obj(CM, name, labels={"selected": "yes"}))
        informer.start()
        assert informer.has_synced.wait(5)
        stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
        left = api.put(CM, obj(CM, "left", labels={"selected": "no"}))
        api.remove(CM, "ns", "gone")
        if not get_allowed:
            api.refusal_of_get = errors.ApiError.from_status(403, "Forbidden", "cannot get configmaps")
        api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
        wait_for(lambda: informer.relists == 2, timeout=5)

        told = {event[1]: event for event in recorder.snapshot()[3:]}
        left_version = left["metadata"]["resourceVersion"] if get_allowed else stored["left"]
        assert told == {
            "left": ("DELETED", "left", left_version, None),
            "gone": ("DELETED", "gone", stored["gone"], None),
        }
        assert [name for _, name in informer.stored_keys()] == ["kept"]
        read = [("configmaps", "gone", "ns"), ("configmaps", "left", "ns")] if get_allowed else []
        assert sorted(api.gets) == read
    finally:
        api.close()
        informer.stop(timeout=2)


def test_a_relist_reads_by_name_at_most_a_bounded_number_of_the_objects_it_lacks(recorder: Any, obj: Obj) -> None:
    """Thousands deleted while the watch was broken would cost a read each, one after the other: past the bound,
    the rest are told as deleted with their last stored state (as without get), and one debug line says how many."""
    api = SelectingApi()
    informer = informer_mod.Informer(api, CM, "ns", "selected=yes", on_event=recorder)
    lacked = informer_mod._MISSING_READS + 3
    try:
        api.put(CM, obj(CM, "a-left", labels={"selected": "yes"}))
        names = [f"o{index:04}" for index in range(lacked - 1)]
        for name in names:
            api.put(CM, obj(CM, name, labels={"selected": "yes"}))
        informer.start()
        assert informer.has_synced.wait(5)
        left = api.put(CM, obj(CM, "a-left", labels={"selected": "no"}))
        for name in names:
            api.remove(CM, "ns", name)
        with structlog.testing.capture_logs() as logged:
            api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
            wait_for(lambda: informer.relists == 2, timeout=5)

        told = {event[1]: event for event in recorder.snapshot()[lacked:]}
        assert sorted(told) == ["a-left", *names]
        assert {event[0] for event in told.values()} == {"DELETED"}
        assert told["a-left"][2] == left["metadata"]["resourceVersion"]  # read first: told as a leave
        assert len(api.gets) == informer_mod._MISSING_READS
        unread = [entry for entry in logged if "not read" in entry["event"]]
        assert [(entry["log_level"], entry["unread"]) for entry in unread] == [("debug", 3)]
        assert informer.stored_keys() == []
    finally:
        api.close()
        informer.stop(timeout=2)


def test_the_warning_of_a_relist_that_may_not_read_by_name_counts_every_object_it_lacks(
    recorder: Any, obj: Obj
) -> None:
    """Without get, every object the relist lacks is told as deleted: the warning says how many, not the bound of
    the reads it would have made."""
    api = SelectingApi()
    informer = informer_mod.Informer(api, CM, "ns", "selected=yes", on_event=recorder)
    lacked = informer_mod._MISSING_READS + 3
    try:
        names = [f"o{index:04}" for index in range(lacked)]
        for name in names:
            api.put(CM, obj(CM, name, labels={"selected": "yes"}))
        informer.start()
        assert informer.has_synced.wait(5)
        for name in names:
            api.remove(CM, "ns", name)
        api.refusal_of_get = errors.ApiError.from_status(403, "Forbidden", "cannot get configmaps")
        with structlog.testing.capture_logs() as logged:
            api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
            wait_for(lambda: informer.relists == 2, timeout=5)

        warned = [entry for entry in logged if entry["log_level"] == "warning"]
        assert [entry["missing"] for entry in warned] == [lacked]
        assert len({event[1] for event in recorder.snapshot()[lacked:]}) == lacked  # every one told as deleted
    finally:
        api.close()
        informer.stop(timeout=2)


def test_a_relist_after_the_kind_was_not_served_reads_none_of_the_objects_it_lacks(recorder: Any, obj: Obj) -> None:
    """Every object went with the CRD: reading each by name would only be answered 404, one after the other."""
    api = SelectingApi()
    informer = informer_mod.Informer(
        api,
        CM,
        "ns",
        "selected=yes",
        on_event=recorder,
        backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0),
    )
    try:
        for name in ("gone", "kept"):
            api.put(CM, obj(CM, name, labels={"selected": "yes"}))
        informer.start()
        assert informer.has_synced.wait(5)
        stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
        api.refusal = errors.ApiError.from_status(404, "NotFound", "the server could not find the requested resource")
        api.fail(CM, api.refusal)
        wait_for(lambda: api.refused >= 2, timeout=5)
        api.remove(CM, "ns", "gone")
        api.refusal = None
        wait_for(lambda: informer.relists == 2, timeout=5)

        assert recorder.snapshot()[2:] == [
            ("RESYNC", "kept", stored["kept"], stored["kept"]),
            ("DELETED", "gone", stored["gone"], None),
        ]
        assert api.gets == []
    finally:
        api.close()
        informer.stop(timeout=2)


def test_a_relist_after_only_the_version_was_not_served_tells_what_left_the_selection_with_its_state_now(
    recorder: Any, obj: Obj
) -> None:
    """Another version of the group serves the kind: its objects were kept, and one the list lacks may have left the
    selection meanwhile, as after any outage."""
    api = SelectingApi()
    api.served_elsewhere = ["example.com/v1"]
    informer = informer_mod.Informer(
        api,
        CM,
        "ns",
        "selected=yes",
        on_event=recorder,
        backoff=backoff_mod.Backoff(base=0.01, factor=1.0, cap=0.01, jitter=0.0),
    )
    try:
        for name in ("gone", "left"):
            api.put(CM, obj(CM, name, labels={"selected": "yes"}))
        informer.start()
        assert informer.has_synced.wait(5)
        stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.items()}
        with structlog.testing.capture_logs() as logged:
            api.refusal = errors.ApiError.from_status(404, "NotFound", "the server could not find the resource")
            api.fail(CM, api.refusal)
            wait_for(lambda: api.refused >= 2, timeout=5)
            api.remove(CM, "ns", "gone")
            left = api.put(CM, obj(CM, "left", labels={"selected": "no"}))
            api.refusal = None
            wait_for(lambda: informer.relists == 2, timeout=5)

        assert sorted(recorder.snapshot()[2:]) == [
            ("DELETED", "gone", stored["gone"], None),
            ("DELETED", "left", left["metadata"]["resourceVersion"], None),
        ]
        assert sorted(name for _, name, _ in api.gets) == ["gone", "left"]
        (warned,) = [entry for entry in logged if entry["log_level"] == "warning"]
        assert warned["cause"].startswith("v1 is no longer served (the API server serves ConfigMap in example.com/v1)")
    finally:
        api.close()
        informer.stop(timeout=2)


def test_a_deleted_event_of_an_object_the_filter_never_let_in_is_not_announced(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The handlers never held it: a DELETED of it would tell timers, daemons and the queue of an object unknown to
    them. One the store held is told, and so is one that leaves the filter."""
    informer = start(keep=lambda o: (o["metadata"].get("labels") or {}).get("selected") == "yes")
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "never", labels={"selected": "no"})))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "never"))
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "held", labels={"selected": "yes"})))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "held"))
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "left", labels={"selected": "yes"})))
    api.emit(CM, "MODIFIED", api.put(CM, obj(CM, "left", labels={"selected": "no"})))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "left"))
    wait_for(lambda: len(recorder.snapshot()) == 4, timeout=5, message=lambda: str(recorder.snapshot()))
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "last", labels={"selected": "yes"})))
    wait_for(lambda: informer.get("ns", "last") is not None, timeout=5)

    assert recorder.types_by_name() == {"held": ["ADDED", "DELETED"], "left": ["ADDED", "DELETED"], "last": ["ADDED"]}


def test_a_deleted_event_older_than_a_recreated_object_keeps_the_new_one_but_is_announced(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a"))
    informer = start()
    deletion = api.remove(CM, "ns", "a")
    recreated = api.put(CM, obj(CM, "a", uid="second"))
    informer.observe(recreated)
    api.emit(CM, "DELETED", deletion)
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert recorder.snapshot()[1][0] == "DELETED"
    assert informer.get("ns", "a")["metadata"]["uid"] == "second"  # type: ignore[index]


def test_an_answer_observed_after_the_watch_told_the_objects_deletion_does_not_bring_it_back(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a", finalizers=["okt.example/finalizer"], deletionTimestamp="2026-11-28T00:00:00Z"))
    informer = start()
    # okt removes its finalizer: the API answers with the object (deleting, no finalizer left) and deletes it.
    released = api.put(CM, obj(CM, "a", deletionTimestamp="2026-11-28T00:00:00Z"))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert informer.observe(released) is False  # the worker reads the answer only after the watch told the deletion
    assert informer.get("ns", "a") is None


def test_an_answer_older_than_what_the_watch_told_since_is_not_stored_for_an_object_the_store_lacks(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a"))
    informer = start()
    written = api.put(CM, obj(CM, "a", labels={"written": "by okt"}))  # okt's write ...
    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))  # ... then someone deletes the object
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "b")))
    wait_for(lambda: len(recorder.snapshot()) == 3, timeout=5)
    assert informer.observe(written) is False
    assert informer.get("ns", "a") is None
    created = api.put(CM, obj(CM, "c"))  # a create answered before its ADDED: newer than all the watch told
    assert informer.observe(created) is True
    assert informer.get("ns", "c") is not None


def test_an_answer_from_before_a_relist_is_not_stored_for_an_object_the_list_lacked(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a"))
    informer = start()
    written = api.put(CM, obj(CM, "a", labels={"written": "by okt"}))
    api.remove(CM, "ns", "a")  # deleted while the watch was down
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)
    assert informer.observe(written) is False
    assert informer.get("ns", "a") is None


def test_a_relist_answered_older_than_the_watch_drops_a_watched_object_it_lacks(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """etcd restored from a backup: resourceVersions go back, and an object created after the backup is gone. The
    list says so; only okt's own answer, which the watch has not told yet, may be missing from a list older than it."""
    listed = api.put(CM, obj(CM, "a"))
    informer = start()
    later = api.put(CM, obj(CM, "b"))
    api.emit(CM, "ADDED", later)
    wait_for(lambda: informer.get("ns", "b") is not None, timeout=5)
    del api.objects[("configmaps", "ns", "b")]  # the restore: back to the version of the first list
    api.version = int(listed["metadata"]["resourceVersion"])
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)

    assert informer.get("ns", "b") is None
    assert recorder.snapshot()[-1] == ("DELETED", "b", later["metadata"]["resourceVersion"], None)


def test_a_relist_from_etcd_stores_what_it_lists_though_the_store_holds_a_higher_version(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """etcd restored from a backup: an object changed after the backup is listed as the backup held it, with the lower
    version it had then. That is what the server holds: kept, the lost version hid it, and the watch's next events
    for the object, numbered below the lost one, were dropped as out of order."""
    listed = api.put(CM, {**obj(CM, "a"), "data": {"v": "1"}})
    informer = start()
    lost = api.put(CM, {**obj(CM, "a"), "data": {"v": "2"}})
    api.emit(CM, "MODIFIED", lost)
    wait_for(lambda: informer.get("ns", "a")["data"] == {"v": "2"}, timeout=5)  # type: ignore[index]
    api.objects[("configmaps", "ns", "a")] = listed  # the restore: back to the version of the first list
    api.version = int(listed["metadata"]["resourceVersion"])
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)

    assert informer.get("ns", "a")["data"] == {"v": "1"}  # type: ignore[index]
    told = ("MODIFIED", "a", listed["metadata"]["resourceVersion"], lost["metadata"]["resourceVersion"])
    assert recorder.snapshot()[-1] == told
    after = api.put(CM, {**obj(CM, "a"), "data": {"v": "3"}})  # numbered as lost was, or below
    assert not informer_mod.is_newer(after["metadata"]["resourceVersion"], lost["metadata"]["resourceVersion"])
    api.emit(CM, "MODIFIED", after)
    wait_for(lambda: informer.get("ns", "a")["data"] == {"v": "3"}, timeout=5)  # type: ignore[index]


def test_okts_own_answer_newer_than_a_relist_that_lacks_it_stays(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    informer = start()
    created = {**obj(CM, "a"), "metadata": {**obj(CM, "a")["metadata"], "resourceVersion": str(api.version + 5)}}
    assert informer.observe(created) is True  # okt created it after the list below was answered
    api.emit(CM, "ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    wait_for(lambda: informer.relists == 2, timeout=5)

    assert informer.get("ns", "a")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # type: ignore[index]
    assert recorder.snapshot() == []


@pytest.mark.parametrize("told_first", [False, True], ids=["answer first", "watch first"])
def test_an_answer_outside_the_label_selector_is_not_stored(
    api: Any, recorder: Any, start: Any, obj: Obj, told_first: bool
) -> None:
    first = api.put(CM, obj(CM, "a", labels={"app": "a", "tier": "x"}))
    informer = start(label_selector="app in (a, b),tier,!legacy")
    # Someone relabels the object out of the selection while a reconcile that read it writes its status: the watch
    # tells the relabelling as a deletion, and okt's answer (newer) carries the new labels.
    moved = api.put(CM, {**first, "metadata": {**first["metadata"], "labels": {"app": "c", "tier": "x"}}})
    ours = api.put(CM, {**moved, "data": {"written": "by okt"}})
    if told_first:
        api.emit(CM, "DELETED", moved)
        wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
        assert informer.observe(ours) is False
    else:
        informer.observe(ours)
        api.emit(CM, "DELETED", moved)
        wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert informer.get("ns", "a") is None
    assert len(informer) == 0


def test_an_index_follows_a_change_of_owner(api: Any, start: Any, obj: Obj) -> None:
    first = api.put(CM, obj(CM, "a", ownerReferences=[{"uid": "u1"}]))
    informer = start(indexers={"owner": owner_uids})
    moved = api.put(CM, {**first, "metadata": {**first["metadata"], "ownerReferences": [{"uid": "u2"}]}})
    api.emit(CM, "MODIFIED", moved)
    wait_for(lambda: informer.by_index("owner", "u2"), timeout=5)
    assert informer.by_index("owner", "u1") == []


def test_a_failing_handler_does_not_stop_the_informer(api: Any, start: Any, obj: Obj) -> None:
    seen: list[str] = []

    def handler(event_type: str, o: dict[str, Any], old: dict[str, Any] | None) -> None:
        seen.append(o["metadata"]["name"])
        if o["metadata"]["name"] == "boom":
            raise RuntimeError("handler bug")

    start(on_event=handler)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "boom")))
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "after")))
    wait_for(lambda: seen == ["boom", "after"], timeout=5, message=lambda: str(seen))


def test_resync_reannounces_stored_objects(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    api.put(CM, obj(CM, "a"))
    start(resync=0.05)
    wait_for(lambda: [t for t, *_ in recorder.snapshot()].count("RESYNC") >= 2, timeout=5)
    resync = next(e for e in recorder.snapshot() if e[0] == "RESYNC")
    assert resync[2] == resync[3]


def test_a_resync_never_announces_an_object_after_the_watch_told_its_deletion(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    # The resync runs on a thread of its own: announced from a list of the objects taken before the deletion, the
    # deleted one came back to the handlers as RESYNC after its DELETED (a daemon started again for an object gone,
    # a mapping merging the stale state over the last one told).
    api.put(CM, obj(CM, "a"))
    api.put(CM, obj(CM, "b"))
    resyncing, release = threading.Event(), threading.Event()

    def handler(event_type: str, changed: dict[str, Any], old: dict[str, Any] | None) -> None:
        recorder(event_type, changed, old)
        if event_type == "RESYNC" and changed["metadata"]["name"] == "a" and not resyncing.is_set():
            resyncing.set()
            release.wait(5)  # the resync's handler is slow: the watch tells a deletion meanwhile

    start(on_event=handler, resync=0.05)
    assert resyncing.wait(5)
    api.emit(CM, "DELETED", api.remove(CM, "ns", "b"))
    time.sleep(0.3)  # the watch's thread delivers the deletion if it may
    release.set()
    wait_for(lambda: "DELETED" in recorder.types_by_name()["b"], timeout=5)
    time.sleep(0.3)  # the resync ends, and others follow
    told = recorder.types_by_name()["b"]
    assert told[told.index("DELETED") :] == ["DELETED"], told


def test_no_event_is_delivered_after_stop(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    informer = start()
    informer.stop(timeout=0.1)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "late")))
    api.end(CM)
    assert informer.stopped
    assert recorder.snapshot() == []


@pytest.mark.parametrize("resync", [0, -1.0])
def test_a_non_positive_resync_is_refused(api: Any, recorder: Any, resync: float) -> None:
    with pytest.raises(ValueError, match="resync"):
        informer_mod.Informer(api, CM, "ns", on_event=recorder, resync=resync)


def test_a_list_longer_than_a_page_is_stored_and_announced_whole(api: Any, recorder: Any, start: Any, obj: Obj) -> None:
    for index in range(informer_mod._PAGE + 10):
        api.put(CM, obj(CM, f"cm-{index:04d}"))
    informer = start()
    assert len(informer) == informer_mod._PAGE + 10
    added = [name for event, name, _, _ in recorder.snapshot() if event == "ADDED"]
    assert sorted(added) == [f"cm-{index:04d}" for index in range(informer_mod._PAGE + 10)]


def test_a_list_failing_after_its_first_page_loses_no_announcement_and_repeats_none(
    api: Any, recorder: Any, start: Any, obj: Obj
) -> None:
    """The first page is already in the store when the second fails: its objects are announced then, and the retried
    list announces only the rest."""
    names = [f"cm-{index:04d}" for index in range(informer_mod._PAGE + 10)]
    for name in names:
        api.put(CM, obj(CM, name))
    api.page_failures[1] = errors.ApiError.from_status(500, "InternalError", "etcd is busy")
    informer = start()
    assert len(informer) == len(names)
    added = [name for event, name, _, _ in recorder.snapshot() if event == "ADDED"]
    assert sorted(added) == names


@pytest.mark.parametrize(
    ("failure", "paged"),
    [
        (errors.ApiError.from_status(410, "Expired", "the continue token expired"), [True, False, True]),
        (errors.ApiError.from_status(500, "InternalError", "etcd is busy"), [True, True, True]),
    ],
    ids=["expired", "failed"],
)
def test_a_list_whose_continue_token_expired_is_listed_next_in_one_answer_and_the_one_after_in_pages(
    api: Any, recorder: Any, start: Any, obj: Obj, failure: errors.ApiError, paged: list[bool]
) -> None:
    names = [f"cm-{index:04d}" for index in range(informer_mod._PAGE + 10)]
    for name in names:
        api.put(CM, obj(CM, name))
    api.page_failures[1] = failure
    informer = start()
    wait_for(lambda: api.watches, timeout=5)
    api.fail(CM, errors.ApiError.from_status(410, "Expired", "too old resource version"))
    wait_for(lambda: informer.relists == 2, timeout=5)
    assert api.list_paged == paged
    assert len(informer) == len(names)


def test_an_index_added_to_a_running_informer_covers_what_is_stored_and_what_comes_later(
    api: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    api.put(CM, obj(CM, "b", labels={"team": "y"}))
    informer = start()
    informer.add_indexers({"team": lambda o: [o["metadata"]["labels"]["team"]]})
    assert [o["metadata"]["name"] for o in informer.by_index("team", "x")] == ["a"]

    api.emit(CM, "ADDED", obj(CM, "c", labels={"team": "x"}))
    api.emit(CM, "MODIFIED", obj(CM, "a", labels={"team": "y"}))
    wait_for(lambda: [o["metadata"]["name"] for o in informer.by_index("team", "x")] == ["c"], timeout=5)
    assert sorted(o["metadata"]["name"] for o in informer.by_index("team", "y")) == ["a", "b"]


def test_events_from_the_list_are_delivered_as_the_sweep_and_watch_events_are_not(
    api: Any, start: Any, obj: Obj
) -> None:
    seen: list[tuple[str, bool]] = []
    api.put(CM, obj(CM, "listed"))
    start(on_event=lambda event_type, o, old: seen.append((o["metadata"]["name"], informer_mod.sweeping())))
    wait_for(lambda: api.watches, timeout=5)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "watched")))
    wait_for(lambda: len(seen) == 2, timeout=5)
    assert seen == [("listed", True), ("watched", False)]
    assert not informer_mod.sweeping()


def _node_phase(o: dict[str, Any]) -> dict[str, Any]:
    data = o.get("data") or {}
    return {data["node"]: data["phase"]}


def _whole(informer: informer_mod.Informer, index: str) -> dict[str, list[Any]]:
    """An index read whole as the cache reads it: the payloads, or the names of the objects held."""
    position = informer.index_position(index)

    def read(value: str, packed: packing.Packed) -> list[Any]:
        payloads = packed.payloads_of(position, value)
        return [packed.unpack()["metadata"]["name"]] if payloads is None else list(payloads)

    return {
        value: sorted(h for packed in held for h in read(value, packed))
        for value, held in informer.index_snapshot(index).items()
    }


def test_an_index_of_values_follows_every_change_and_a_relist_replaces_it_whole(
    api: Any, start: Any, obj: Obj, gone: Any
) -> None:
    api.put(CM, {**obj(CM, "a"), "data": {"node": "n1", "phase": "Running"}})
    api.put(CM, {**obj(CM, "b"), "data": {"node": "n1", "phase": "Pending"}})
    informer = start(indexers={"phases": indexes.Indexer("phases", _node_phase)})
    assert _whole(informer, "phases") == {"n1": ["Pending", "Running"]}

    api.emit(CM, "MODIFIED", api.put(CM, {**obj(CM, "a"), "data": {"node": "n2", "phase": "Running"}}))
    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "c"), "data": {"node": "n1", "phase": "Succeeded"}}))
    api.emit(CM, "DELETED", api.remove(CM, "ns", "b"))
    wait_for(lambda: _whole(informer, "phases") == {"n1": ["Succeeded"], "n2": ["Running"]}, timeout=5)

    # What changes while the watch is broken reaches the index through the relist: what it lacks leaves it.
    api.put(CM, {**obj(CM, "a"), "data": {"node": "n3", "phase": "Running"}})
    api.remove(CM, "ns", "c")
    api.put(CM, {**obj(CM, "d"), "data": {"node": "n2", "phase": "Failed"}})
    api.fail(CM, gone())
    wait_for(lambda: informer.relists == 2, timeout=5)
    assert _whole(informer, "phases") == {"n3": ["Running"], "n2": ["Failed"]}


def test_an_index_of_keys_holds_the_stored_objects_and_loses_those_a_relist_lacks(
    api: Any, start: Any, obj: Obj, gone: Any
) -> None:
    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    api.put(CM, obj(CM, "b", labels={"team": "x"}))
    informer = start(indexers={"teams": indexes.Indexer("teams", lambda o: o["metadata"]["labels"]["team"])})
    assert _whole(informer, "teams") == {"x": ["a", "b"]}
    api.remove(CM, "ns", "a")
    api.put(CM, obj(CM, "b", labels={"team": "y"}))
    api.fail(CM, gone())
    wait_for(lambda: informer.relists == 2, timeout=5)
    assert _whole(informer, "teams") == {"y": ["b"]}


def test_an_index_function_that_raises_is_said_once_per_object_which_is_left_out_until_it_succeeds(
    api: Any, start: Any, obj: Obj
) -> None:
    failed: list[None] = []
    api.put(CM, {**obj(CM, "good", uid="u1"), "data": {"node": "n1", "phase": "Running"}})
    with structlog.testing.capture_logs() as logged:
        informer = start(
            indexers={"phases": indexes.Indexer("phases", _node_phase, failed=lambda: failed.append(None))}
        )
        for version in ("1", "2"):  # changed twice, raising each time: said once
            api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "bad", uid="u2"), "data": {"secret": version}}))
        wait_for(lambda: len(failed) == 2, timeout=5)
        api.emit(CM, "MODIFIED", api.put(CM, {**obj(CM, "bad", uid="u2"), "data": {"node": "n2", "phase": "Pending"}}))
        wait_for(lambda: _whole(informer, "phases") == {"n1": ["Running"], "n2": ["Pending"]}, timeout=5)
    said = [e for e in logged if e["event"].startswith("an index function raised")]
    assert [(e["name"], e["index"]) for e in said] == [("bad", "phases")]
    assert "secret" not in str(said) and "'1'" not in str(said)  # the error is said by its type, not the data
    assert informer.get("ns", "bad") is not None  # the store keeps it: only the index leaves it out


def test_a_store_whose_indexers_keep_no_values_spends_no_room_on_them_for_any_object(
    api: Any, start: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a", labels={"team": "x"}))
    plain = start(indexers={"teams": lambda o: (o["metadata"]["labels"]["team"],)})
    with_values = start(indexers={"phases": indexes.Indexer("phases", lambda o: {o["metadata"]["name"]: "v"})})

    def slots(packed: packing.Packed) -> set[str]:
        return {slot for cls in type(packed).__mro__ for slot in getattr(cls, "__slots__", ())}

    assert "payloads" not in slots(plain._store[("ns", "a")])
    assert sys.getsizeof(plain._store[("ns", "a")]) < sys.getsizeof(with_values._store[("ns", "a")])
    assert _whole(plain, "teams") == {"x": ["a"]}
    assert _whole(with_values, "phases") == {"a": ["v"]}


def test_an_index_snapshot_keeps_its_keys_and_entries_as_they_were_while_the_store_changes_and_a_lookup_reads_now(
    api: Any, start: Any, obj: Obj
) -> None:
    names = [f"cm-{n:02d}" for n in range(informer_mod._SMALL_BUCKET + 2)]  # a bucket past the small ones
    for name in names:
        api.put(CM, {**obj(CM, name, labels={"team": "x"}), "data": {"v": "1"}})
    informer = start(indexers={"teams": indexes.Indexer("teams", lambda o: o["metadata"]["labels"]["team"])})
    snapshot = informer.index_snapshot("teams")

    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "new", labels={"team": "x"}), "data": {"v": "1"}}))
    api.emit(CM, "MODIFIED", api.put(CM, {**obj(CM, names[0], labels={"team": "x"}), "data": {"v": "2"}}))
    api.emit(CM, "DELETED", api.remove(CM, "ns", names[1]))
    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "other", labels={"team": "y"}), "data": {"v": "1"}}))
    wait_for(lambda: len(informer.index_held("teams", "y")) == 1, timeout=5)

    assert list(snapshot) == ["x"]
    assert sorted(p.unpack()["metadata"]["name"] for p in snapshot["x"]) == names
    assert {p.unpack()["data"]["v"] for p in snapshot["x"]} == {"1"}
    now = {p.unpack()["metadata"]["name"]: p.unpack()["data"]["v"] for p in informer.index_held("teams", "x")}
    assert sorted(now) == sorted([*names[2:], names[0], "new"]) and now[names[0]] == "2"
    assert informer.index_held("teams", "z") == ()
