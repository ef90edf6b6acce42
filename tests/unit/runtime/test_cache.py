"""The cache's rules, against a scripted list/watch: scopes, private copies, filters, owners, fan-out, live reads."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pydantic
import pytest
import structlog.testing

from okt import errors, secret_values
from okt.kube import kinds, objects
from okt.reconciler import core, indexes, watches
from okt.resources import take_over
from okt.runtime import cache as cache_mod
from okt.testing import wait_for

CM = kinds.CONFIG_MAP
SECRET = kinds.builtin("v1", "Secret")
NAMESPACE = kinds.NAMESPACE
Obj = Callable[..., dict[str, Any]]


@pytest.fixture
def make_cache(api: Any) -> Iterator[Callable[..., cache_mod.Cache]]:
    made: list[cache_mod.Cache] = []

    def build(namespaces: list[str] | None = None, label_selector: str | None = None) -> cache_mod.Cache:
        cache = cache_mod.Cache(api, namespaces, label_selector)
        made.append(cache)
        return cache

    yield build
    api.close()
    for cache in made:
        cache.stop()


def owned(uid: str, controller: bool = True) -> dict[str, Any]:
    return {
        "ownerReferences": [
            {"apiVersion": "x.io/v1", "kind": "Owner", "name": "o", "uid": uid, "controller": controller}
        ]
    }


@pytest.mark.parametrize(
    ("labels", "have", "expected"),
    [
        (None, {"a": "1"}, True),
        ({}, {}, True),
        ({"a": "1"}, {"a": "1", "b": "2"}, True),
        ({"a": "1"}, {"a": "2"}, False),
        ({"a": "1", "b": "2"}, {"a": "1"}, False),
    ],
)
def test_labels_match_requires_every_label_with_its_value(
    labels: dict[str, str] | None, have: dict[str, str], expected: bool
) -> None:
    assert cache_mod.labels_match({"metadata": {"labels": have}}, labels) is expected


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([], None),
        ([{"uid": "a"}], None),
        ([{"uid": "a", "controller": False}, {"uid": "b", "controller": True}], "b"),
    ],
)
def test_the_controller_owner_is_the_reference_marked_controller(
    refs: list[dict[str, Any]], expected: str | None
) -> None:
    owner = objects.controller_of({"metadata": {"ownerReferences": refs}})
    assert (None if owner is None else owner["uid"]) == expected


def test_one_informer_per_watched_namespace_and_one_for_cluster_scoped_kinds(api: Any, make_cache: Any) -> None:
    cache = make_cache(["a", "b", "a"])
    cache.start(CM, lambda *_: None)
    cache.start(NAMESPACE, lambda *_: None)
    assert cache.wait_for_sync(5)
    assert sorted((plural, ns) for plural, ns, _ in api.lists) == [
        ("configmaps", "a"),
        ("configmaps", "b"),
        ("namespaces", None),
    ]


@pytest.mark.parametrize(("use_selector", "expected"), [(True, "app=x"), (False, None)])
def test_the_label_selector_applies_only_to_kinds_that_ask_for_it(
    api: Any, make_cache: Any, use_selector: bool, expected: str | None
) -> None:
    cache = make_cache(label_selector="app=x")
    cache.start(CM, lambda *_: None, use_selector=use_selector)
    assert cache.wait_for_sync(5)
    assert api.lists == [("configmaps", None, expected)]


def test_starting_a_kind_twice_with_different_selector_choices_is_refused(make_cache: Any) -> None:
    cache = make_cache(label_selector="app=x")
    cache.start(CM, lambda *_: None, use_selector=True)
    with pytest.raises(errors.ConfigurationError, match="watched twice in one process, once narrowed"):
        cache.start(CM, lambda *_: None, use_selector=False)


def test_a_filtered_view_of_a_kind_cannot_also_serve_the_whole_kind(make_cache: Any) -> None:
    cache = make_cache()
    cache.start(CM, lambda *_: None, use_selector=True, keep=lambda obj: False)
    with pytest.raises(errors.ConfigurationError, match="run the two reconcilers in separate processes"):
        cache.start(CM, lambda *_: None)


def test_without_a_selector_or_a_filter_a_primary_and_an_owned_kind_share_one_store(api: Any, make_cache: Any) -> None:
    cache = make_cache()
    seen: list[str] = []
    cache.start(CM, lambda event, obj, old: seen.append("primary"), use_selector=True)
    cache.start(CM, lambda event, obj, old: seen.append("owned"))
    assert cache.wait_for_sync(5)
    assert api.lists == [("configmaps", None, None)]


def test_status_owners_declared_ahead_are_kept_whoever_starts_the_kind_and_asked_too_late_are_refused(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    owners = [{"manager": "okt", "operation": "Apply", "fieldsV1": {"f:status": {"f:phase": {}}}}]
    api.put(CM, obj(CM, "a", managedFields=owners))
    api.put(SECRET, obj(SECRET, "s", managedFields=owners))
    cache = make_cache()
    cache.keep_status_owners(CM)
    cache.start(CM, lambda *_: None)  # an owned kind, started first
    cache.start(CM, lambda *_: None, status_owners=True)  # the primary whose status okt applies
    cache.start(SECRET, lambda *_: None)
    with pytest.raises(errors.ConfigurationError, match="already watched without its status owners"):
        cache.start(SECRET, lambda *_: None, status_owners=True)
    assert cache.wait_for_sync(5)
    assert cache.get(CM, "a", "ns")["metadata"]["managedFields"][0]["manager"] == "okt"  # type: ignore[index]


def test_a_childs_entries_a_take_over_moves_are_kept_and_none_is_kept_as_an_empty_list(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    """The cache keeps of a child's managedFields the entries a take-over for its field managers moves (``okt``'s
    plain writes, a legacy manager's), so an update decides from it; a child with none keeps an empty list."""
    applied = {"manager": "okt", "operation": "Apply", "time": "t", "fieldsV1": {"f:data": {"f:a": {}}}}
    merged = {"manager": "okt", "operation": "Update", "time": "t", "fieldsV1": {"f:data": {"f:old": {}}}}
    older = {"manager": "before", "operation": "Apply", "time": "t", "fieldsV1": {"f:data": {"f:b": {}}}}
    status = {"manager": "okt", "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}}
    api.put(CM, obj(CM, "legacy", managedFields=[applied, merged, older, status]))
    api.put(CM, obj(CM, "applied", managedFields=[applied, status]))
    cache = make_cache()
    cache.keep_field_owners(CM, take_over.FieldOwners(frozenset({"okt"})))
    cache.start(CM, lambda *_: None, field_owners=take_over.FieldOwners(frozenset({"okt"}), frozenset({"before"})))
    assert cache.wait_for_sync(5)

    assert cache.get(CM, "legacy", "ns")["metadata"]["managedFields"] == [  # type: ignore[index]
        {"manager": "okt", "operation": "Update", "fieldsV1": {"f:data": {"f:old": {}}}},
        {"manager": "before", "operation": "Apply", "fieldsV1": {"f:data": {"f:b": {}}}},
    ]
    assert cache.get(CM, "applied", "ns")["metadata"]["managedFields"] == []  # type: ignore[index]
    cache.start(CM, lambda *_: None, field_owners=take_over.FieldOwners(frozenset({"okt"})))  # covered: no new store
    with pytest.raises(errors.ConfigurationError, match="without the managedFields entries of its field managers"):
        cache.start(CM, lambda *_: None, field_owners=take_over.FieldOwners(frozenset({"another"})))


def test_reads_return_private_copies(api: Any, make_cache: Any, obj: Obj) -> None:
    api.put(CM, {**obj(CM, "a", labels={"k": "v"}), "data": {"x": "1"}})
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    got = cache.get(CM, "a", "ns")
    got["data"]["x"] = "mutated"
    got["metadata"]["labels"]["k"] = "mutated"
    cache.list(CM, "ns")[0]["data"]["x"] = "mutated too"
    assert cache.get(CM, "a", "ns")["data"] == {"x": "1"}
    assert cache.get(CM, "a", "ns")["metadata"]["labels"] == {"k": "v"}


def test_list_filters_by_namespace_and_labels_in_memory(api: Any, make_cache: Any, obj: Obj) -> None:
    api.put(CM, obj(CM, "a", "one", labels={"app": "x"}))
    api.put(CM, obj(CM, "b", "one", labels={"app": "y"}))
    api.put(CM, obj(CM, "c", "two", labels={"app": "x"}))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    calls = len(api.lists)

    def names(namespace: str | None, labels: dict[str, str] | None = None) -> list[str]:
        return sorted(o["metadata"]["name"] for o in cache.list(CM, namespace, labels))

    assert names(None) == ["a", "b", "c"]
    assert names("one") == ["a", "b"]
    assert names(None, {"app": "x"}) == ["a", "c"]
    assert names("two", {"app": "y"}) == []
    assert len(api.lists) == calls


def test_each_yields_every_cached_object_of_a_kind_one_at_a_time_and_nothing_of_an_unwatched_kind(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    for namespace, name in (("one", "a"), ("one", "b"), ("two", "c")):
        api.put(CM, obj(CM, name, namespace))
    cache = make_cache(["one", "two"])  # an informer per namespace: each goes through both
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    each = cache.each(CM)
    assert not isinstance(each, list)  # a generator: nothing decoded before it is asked for
    first = next(each)
    first["data"] = {"changed": "by the caller"}
    assert sorted(o["metadata"]["name"] for o in [first, *each]) == ["a", "b", "c"]
    assert all("data" not in o for o in cache.each(CM))  # private copies
    assert list(cache.each(kinds.Kind("v1", "Secret", "secrets"))) == []


@pytest.mark.parametrize("namespaces", [["one", "two"], None], ids=["an-informer-per-namespace", "all-namespaces"])
def test_each_of_a_namespace_yields_the_cached_objects_of_that_namespace_only(
    api: Any, make_cache: Any, obj: Obj, namespaces: list[str] | None
) -> None:
    for namespace, name in (("one", "a"), ("one", "b"), ("two", "c")):
        api.put(CM, obj(CM, name, namespace))
    cache = make_cache(namespaces)
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    assert sorted(o["metadata"]["name"] for o in cache.each(CM, "one")) == ["a", "b"]
    assert sorted(o["metadata"]["name"] for o in cache.each(CM, "two")) == ["c"]
    assert list(cache.each(CM, "three")) == []


def test_the_uid_of_an_object_is_what_the_store_holds_now_and_none_for_a_missing_one(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "a", uid="u1"))
    api.put(CM, obj(CM, "bare"))
    api.put(SECRET, obj(SECRET, "s", uid="s1"))
    cache = make_cache(["ns"])
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    assert cache.uid(CM, "a", "ns") == "u1"
    assert cache.uid(CM, "bare", "ns") == ""
    assert cache.uid(CM, "missing", "ns") is None
    assert cache.uid(SECRET, "s", "ns") == "s1"  # not watched: read from the API, as get reads it
    assert cache.uid(SECRET, "gone", "ns") is None

    api.emit(CM, "DELETED", api.remove(CM, "ns", "a"))
    wait_for(lambda: cache.uid(CM, "a", "ns") is None, timeout=5)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "a", uid="u2")))  # deleted and created again: another object
    wait_for(lambda: cache.uid(CM, "a", "ns") == "u2", timeout=5)


def test_an_empty_name_is_refused_for_a_watched_kind_as_a_request_refuses_it(api: Any, make_cache: Any) -> None:
    """A name from the custom resource may be empty: the client refuses it before a request would address the whole
    collection; the store must say the same, not ``None`` (an operator's test on the API would raise, ``okt run`` not).
    """
    cache = make_cache(["ns"])
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    for read in (cache.get, cache.uid):
        with pytest.raises(errors.InvalidSpec, match="may not be empty"):
            read(CM, "", "ns")  # watched: the store
        with pytest.raises(errors.InvalidSpec, match="may not be empty"):
            read(SECRET, "", "ns")  # not watched: the client
    assert api.gets == []


@pytest.mark.parametrize(
    "labels",
    [
        {"app": "x,tier!=y"},
        {"app": "a b"},
        {"app": "-x"},
        {"app": "x" * 64},
        {"a,b": "x"},
        {"Bad.Prefix/app": "x"},
        {"app": None},
        {"app": 3},
        {3: "x"},
    ],
    ids=[
        "selector-in-a-value",
        "space",
        "dash-first",
        "too-long",
        "comma-in-a-key",
        "uppercase-prefix",
        "none-value",
        "number-value",
        "number-key",
    ],
)
def test_labels_that_are_no_selector_are_refused_from_the_store_as_from_the_api(
    api: Any, make_cache: Any, labels: dict[str, str]
) -> None:
    """A value from the custom resource holding ``,`` or ``!=`` would be read by the API server as more requirements,
    while the store matches it as one text: the same call would answer two lists. Both refuse it."""
    cache = make_cache(["ns"])
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    with pytest.raises(errors.InvalidSpec, match="label selector"):
        cache.list(CM, "ns", labels)  # watched: matched in memory
    with pytest.raises(errors.InvalidSpec, match="label selector"):
        cache.list(SECRET, "ns", labels)  # not watched: a request
    with pytest.raises(errors.InvalidSpec, match="label selector"):
        core.ApiReader(api).list(CM, "ns", labels)
    assert [listed for listed in api.lists if listed[0] == "secrets"] == []  # refused before any request


def test_the_values_of_a_watched_secret_read_from_the_store_are_left_out_of_what_an_error_says(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    """A reconcile of ``okt run`` reads a watched Secret from the store, never through the client: its values are
    recorded as the client's reads record them (:mod:`okt.secret_values`)."""
    api.put(SECRET, {**obj(SECRET, "s"), "data": {"password": "aHVudGVyMi1pbi1jbGVhcg=="}})  # hunter2-in-clear
    api.put(SECRET, {**obj(SECRET, "t"), "data": {"token": "dDBrM24tb2YtdGhlLWxpc3Q="}})  # t0k3n-of-the-list
    cache = make_cache()
    cache.start(SECRET, lambda *_: None)
    assert cache.wait_for_sync(5)

    with secret_values.held():
        cache.get(SECRET, "s", "ns")
        assert secret_values.left_out("hunter2-in-clear, t0k3n-of-the-list") == (
            "(a Secret's value, left out), t0k3n-of-the-list"
        )
        cache.list(SECRET, "ns")
        assert secret_values.left_out("t0k3n-of-the-list") == "(a Secret's value, left out)"


def test_a_selector_of_valid_labels_is_their_equalities_sorted() -> None:
    assert kinds.label_selector(None) is None
    assert kinds.label_selector({}) is None
    labels = {"b": "", "app.kubernetes.io/name": "web-1.x_y", "a": "A"}
    assert kinds.label_selector(labels) == "a=A,app.kubernetes.io/name=web-1.x_y,b="


def test_kinds_and_namespaces_that_are_not_watched_are_read_from_the_api(api: Any, make_cache: Any, obj: Obj) -> None:
    api.put(SECRET, obj(SECRET, "s"))
    api.put(CM, obj(CM, "elsewhere", "other"))
    cache = make_cache(["ns"])
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    assert cache.get(SECRET, "s", "ns")["metadata"]["name"] == "s"
    assert cache.get(CM, "elsewhere", "other")["metadata"]["name"] == "elsewhere"
    assert [o["metadata"]["name"] for o in cache.list(SECRET, "ns")] == ["s"]
    assert api.gets == [("secrets", "s", "ns"), ("configmaps", "elsewhere", "other")]


def test_owned_by_finds_children_by_their_controller_owner_uid(api: Any, make_cache: Any, obj: Obj) -> None:
    api.put(CM, obj(CM, "child-1", **owned("u1")))
    api.put(CM, obj(CM, "child-2", **owned("u1")))
    api.put(CM, obj(CM, "not-controlled", **owned("u1", controller=False)))
    api.put(CM, obj(CM, "other", **owned("u2")))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    assert sorted(o["metadata"]["name"] for o in cache.owned_by(CM, "u1")) == ["child-1", "child-2"]
    assert cache.owned_by(CM, "nobody") == []


def test_owned_answers_a_watched_kind_from_the_owner_index_scoped_to_the_namespace(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "child", **owned("u1")))
    api.put(CM, obj(CM, "elsewhere", namespace="other", **owned("u1")))
    api.put(CM, obj(CM, "other-owner", **owned("u2")))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    lists_before = len(api.lists)

    found = cache.owned(CM, "ns", "u1", {"okt.io/owner-uid": "u1"})

    assert [o["metadata"]["name"] for o in found] == ["child"]
    assert len(api.lists) == lists_before


def test_owned_leaves_out_the_children_the_caller_already_holds(api: Any, make_cache: Any, obj: Obj) -> None:
    """Prune asks for the owned children it does not hold: those it holds are left out (and never decoded)."""
    for name in ("declared-1", "declared-2", "orphan"):
        api.put(CM, obj(CM, name, **owned("u1")))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)

    found = cache.owned(CM, "ns", "u1", {"okt.io/owner-uid": "u1"}, {("ns", "declared-1"), ("ns", "declared-2")})

    assert [o["metadata"]["name"] for o in found] == ["orphan"]
    assert len(cache.owned(CM, "ns", "u1", {}, {("other", "orphan")})) == 3  # another namespace: not the same object


def test_observe_writes_through_to_the_store_of_the_objects_kind(api: Any, make_cache: Any, obj: Obj) -> None:
    first = api.put(CM, obj(CM, "a"))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    written = api.put(CM, {**first, "data": {"new": "yes"}})
    cache.observe(written)
    cache.observe(api.put(SECRET, obj(SECRET, "not-watched")))
    assert cache.get(CM, "a", "ns")["data"] == {"new": "yes"}


def test_every_handler_of_a_kind_gets_every_event_and_a_late_one_gets_a_replay(
    api: Any, make_cache: Any, recorder: Any, obj: Obj
) -> None:
    api.put(CM, obj(CM, "existing"))
    cache = make_cache()
    early: list[str] = []
    cache.start(CM, lambda t, o, old: early.append(f"{t} {o['metadata']['name']}"))
    assert cache.wait_for_sync(5)
    cache.start(CM, recorder)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "new")), namespace=None)
    wait_for(lambda: len(recorder.snapshot()) == 2 and len(early) == 2, timeout=5)
    assert early == ["ADDED existing", "ADDED new"]
    assert [(t, n) for t, n, _, _ in recorder.snapshot()] == [("ADDED", "existing"), ("ADDED", "new")]


def test_a_late_handlers_replay_never_tells_an_object_older_than_the_watch_told_it(
    api: Any, make_cache: Any, recorder: Any, obj: Obj
) -> None:
    # Two controllers sharing a kind: the second joins while the informer's thread delivers events. Replayed from a
    # list of the objects taken before them, a deletion the watch told meanwhile was followed by an ADDED of the
    # object gone (a reconcile of nothing), and a change by the state from before it.
    for name in ("a", "b", "c"):
        api.put(CM, obj(CM, name))
    cache = make_cache()
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    replaying, release = threading.Event(), threading.Event()

    def late(event_type: str, changed: dict[str, Any], old: dict[str, Any] | None) -> None:
        recorder(event_type, changed, old)
        if changed["metadata"]["name"] == "a" and not replaying.is_set():
            replaying.set()
            release.wait(5)  # the replay is slow: the watch tells a deletion and a change meanwhile

    joining = threading.Thread(target=cache.start, args=(CM, late))
    joining.start()
    assert replaying.wait(5)
    api.emit(CM, "DELETED", api.remove(CM, "ns", "b"), namespace=None)
    changed = api.put(CM, {**obj(CM, "c"), "data": {"new": "yes"}})
    api.emit(CM, "MODIFIED", changed, namespace=None)
    time.sleep(0.3)  # the watch's thread delivers them if it may
    release.set()
    joining.join(5)
    wait_for(lambda: "DELETED" in recorder.types_by_name().get("b", ()), timeout=5)
    wait_for(lambda: changed["metadata"]["resourceVersion"] in {rv for _, n, rv, _ in recorder.snapshot()}, timeout=5)
    told = recorder.types_by_name()["b"]
    assert told[told.index("DELETED") :] == ["DELETED"], told
    told_c = [rv for _, name, rv, _ in recorder.snapshot() if name == "c"]
    assert told_c[-1] == changed["metadata"]["resourceVersion"], told_c


def test_a_handler_that_raises_keeps_no_event_from_the_other_handlers_of_its_kind(
    api: Any, make_cache: Any, recorder: Any, obj: Obj
) -> None:
    # Two controllers sharing a kind's informer: one's bug (a status_view raising on one object) must not keep the
    # other from hearing of that object.
    api.put(CM, obj(CM, "existing"))
    cache = make_cache()

    def broken(event_type: str, changed: dict[str, Any], old: dict[str, Any] | None) -> None:
        raise KeyError("readyReplicas")

    cache.start(CM, broken)
    # Synced before the second handler joins: it learns of "existing" by the replay alone, not by the list as well.
    assert cache.wait_for_sync(5)
    cache.start(CM, recorder)
    api.emit(CM, "ADDED", api.put(CM, obj(CM, "new")), namespace=None)
    wait_for(lambda: len(recorder.snapshot()) == 2, timeout=5)
    assert [(t, n) for t, n, _, _ in recorder.snapshot()] == [("ADDED", "existing"), ("ADDED", "new")]


def test_a_handler_failing_on_a_models_validation_is_logged_by_the_fields_never_by_the_input(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    class Settings(pydantic.BaseModel, extra="forbid"):
        user: str

    def validating(event_type: str, changed: dict[str, Any], old: dict[str, Any] | None) -> None:
        Settings.model_validate(changed["data"])  # a handler's bug: the object's data does not fit its model

    api.put(CM, {**obj(CM, "credentials"), "data": {"user": "shop", "password": "hunter2"}})
    cache = make_cache()
    with structlog.testing.capture_logs() as logged:
        cache.start(CM, validating)
        assert cache.wait_for_sync(5)
        wait_for(lambda: any(line["event"] == "event handler failed" for line in logged), timeout=5)

    failed = [line for line in logged if line["event"] == "event handler failed"]
    assert failed[0]["error"] == "ValidationError: Settings: password: Extra inputs are not permitted"
    assert "hunter2" not in repr(logged)


def test_synced_waits_for_every_informer(api: Any, make_cache: Any) -> None:
    cache = make_cache(["a", "b"])
    assert cache.synced
    cache.start(CM, lambda *_: None)
    assert cache.wait_for_sync(5)
    assert cache.synced


def test_a_stopped_cache_refuses_to_start_a_kind(make_cache: Any) -> None:
    cache = make_cache()
    cache.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        cache.start(CM, lambda *_: None)


def test_an_index_looked_up_by_a_number_finds_the_objects_whose_index_function_returned_that_number(
    api: Any, make_cache: Callable[..., cache_mod.Cache], obj: Obj
) -> None:
    """Index values are kept as text (an index function may return numbers): ``ctx.index("port", 8080)`` finds what
    ``"8080"`` finds, from the cache's index as from a list filtered without one."""
    indexes = {"port": lambda obj: [obj["data"]["port"]]}
    api.put(CM, {**obj(CM, "web"), "data": {"port": 8080}})
    api.put(CM, {**obj(CM, "db"), "data": {"port": 5432}})
    cache = make_cache()
    # Indexed as a controller indexes its primaries.
    indexer = functools.partial(watches.safe_index, indexes["port"])
    cache.start(CM, lambda *_: None, indexers={watches.index_name("c", "port"): indexer})
    assert cache.wait_for_sync(5)

    from_cache = watches.lookup(cache, CM, "c", indexes, "port", 8080)  # type: ignore[arg-type]
    from_list = watches.lookup(core.ApiReader(api), CM, "c", indexes, "port", 8080)  # type: ignore[arg-type]

    assert [o["metadata"]["name"] for o in from_cache] == ["web"]
    assert [o["metadata"]["name"] for o in from_list] == ["web"]


@pytest.mark.parametrize(
    ("stored", "looked_up", "found"),
    [
        (1, 1.0, True),
        (1.0, 1, True),
        (True, 1, True),
        (("ns", 1), ("ns", 1.0), True),
        (("ns", "web"), ("ns", "web"), True),
        (80, "80", False),
        (("ns", 1), ("ns", "1"), False),
        ('["ns","web"]', ("ns", "web"), False),
        (("ns", "web"), '["ns","web"]', False),
    ],
)
def test_the_cache_index_finds_a_value_looked_up_by_one_python_finds_equal_as_a_filtered_list_does(
    api: Any, make_cache: Callable[..., cache_mod.Cache], obj: Obj, stored: Any, looked_up: Any, found: bool
) -> None:
    """The cache's index keeps each value as itself (a tuple as a tuple, never its JSON text, which a string could
    equal), and answers as a filtered list does."""
    indexes = {"by": lambda obj: [stored] if obj["metadata"]["name"] == "web" else ["other"]}
    api.put(CM, obj(CM, "web"))
    api.put(CM, obj(CM, "db"))
    cache = make_cache()
    indexer = functools.partial(watches.safe_index, indexes["by"])
    cache.start(CM, lambda *_: None, indexers={watches.index_name("c", "by"): indexer})
    assert cache.wait_for_sync(5)

    from_cache = watches.lookup(cache, CM, "c", indexes, "by", looked_up)  # type: ignore[arg-type]
    from_list = watches.lookup(core.ApiReader(api), CM, "c", indexes, "by", looked_up)  # type: ignore[arg-type]

    assert [o["metadata"]["name"] for o in from_cache] == (["web"] if found else [])
    assert [o["metadata"]["name"] for o in from_list] == (["web"] if found else [])


REFUSED = errors.Forbidden(403, "Forbidden", "configmaps is forbidden")
UNSERVED = errors.NotFound(404, "NotFound", "404 page not found")


@pytest.mark.parametrize(
    ("answer", "expected", "said"),
    [
        (REFUSED, errors.Forbidden, "okt may no longer list and watch ConfigMap (v1) in namespace ns"),
        (UNSERVED, errors.NotFound, "does not serve ConfigMap (v1) any more"),
    ],
    ids=["refused", "unserved"],
)
def test_a_kind_whose_watch_is_refused_or_unserved_is_named_for_the_namespaces_of_its_informer(
    api: Any, make_cache: Any, answer: errors.ApiError, expected: type[errors.ApiError], said: str
) -> None:
    cache = make_cache(["ns", "other"])
    cache.start(CM, lambda *args: None)
    assert cache.wait_for_sync(5)
    wait_for(lambda: len(api.watches) == 2, timeout=5)
    assert cache.refusal(CM, "ns") is None
    api.refusal = answer  # the retries are answered alike
    api.fail(CM, answer, namespace="ns")

    wait_for(lambda: cache.refusal(CM, "ns") is not None, timeout=5)
    refusal = cache.refusal(CM, "ns")
    assert isinstance(refusal, expected)
    assert said in str(refusal)
    assert isinstance(cache.refusal(CM, None), expected)  # every watched namespace
    assert cache.refusal(CM, "other") is None
    assert cache.refusal(SECRET, "ns") is None  # not watched: read from the API


def _settings_of(cm: dict[str, Any]) -> dict[str, Any]:
    """An index of values: each ConfigMap's data (a mapping), under its name."""
    return {cm["metadata"]["name"]: cm["data"]}


def test_a_value_an_index_keeps_is_read_as_a_private_copy_kept_apart_from_the_object_the_handlers_are_given(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    api.put(CM, {**obj(CM, "a"), "data": {"level": "info"}})
    cache = make_cache()

    def changes_what_it_is_given(event_type: str, cm: dict[str, Any], old: dict[str, Any] | None) -> None:
        cm["data"]["level"] = "changed by a handler"  # the handlers' object is theirs to change

    cache.start(CM, changes_what_it_is_given, indexers={"settings": indexes.Indexer("settings", _settings_of)})
    assert cache.wait_for_sync(5)
    read = cache.whole_index("settings")
    assert read is not None and read["a"] == ({"level": "info"},)
    read["a"][0]["level"] = "changed by a reader"
    assert read["a"] == ({"level": "info"},)
    assert cache.whole_index("settings")["a"] == ({"level": "info"},)


def test_an_index_of_values_added_to_a_kind_already_stored_without_one_keeps_its_values(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    # The watched kind is also the primary or a child kind: its store was started without any index of values.
    api.put(CM, {**obj(CM, "a"), "data": {"level": "info"}})
    cache = make_cache()
    cache.start(CM, lambda *_: None, indexers={"plain": lambda cm: (cm["metadata"]["name"],)})
    assert cache.wait_for_sync(5)
    cache.start(CM, lambda *_: None, indexers={"settings": indexes.Indexer("settings", _settings_of)})
    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "b"), "data": {"level": "debug"}}), namespace=None)
    wait_for(lambda: "b" in (cache.whole_index("settings") or {}), timeout=5)
    settings = cache.whole_index("settings")
    assert settings is not None
    assert dict(settings) == {"a": ({"level": "info"},), "b": ({"level": "debug"},)}
    assert [o["metadata"]["name"] for o in cache.whole_index("plain")["a"]] == ["a"]


def _app_of(cm: Mapping[str, Any]) -> tuple[str, str]:
    """An index of keys: each ConfigMap under ``(namespace, app)``, one tuple returned alone."""
    return (cm["metadata"]["namespace"], cm["data"]["app"])


def _port_of(cm: Mapping[str, Any]) -> dict[Any, str]:
    """An index of values: each ConfigMap's name under its port, a number, and under ``(namespace, port)``."""
    port = int(cm["data"]["port"])
    return {port: cm["metadata"]["name"], (cm["metadata"]["namespace"], port): cm["metadata"]["name"]}


def test_a_whole_index_of_the_cache_gives_its_keys_back_as_the_function_returned_them_tuples_as_tuples(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    for name, app, port in [("a", "web", "80"), ("b", "web", "8080"), ("c", "db", "5432")]:
        api.put(CM, {**obj(CM, name), "data": {"app": app, "port": port}})
    cache = make_cache()
    cache.start(
        CM,
        lambda *_: None,
        indexers={"apps": indexes.Indexer("apps", _app_of), "ports": indexes.Indexer("ports", _port_of)},
    )
    assert cache.wait_for_sync(5)

    apps, ports = cache.whole_index("apps"), cache.whole_index("ports")
    assert apps is not None and ports is not None
    assert [o["metadata"]["name"] for o in apps[("ns", "web")]] == ["a", "b"]  # looked up before a whole read
    assert ("ns", "db") in apps and '["ns","db"]' not in apps and "ns" not in apps
    assert {key: sorted(o["metadata"]["name"] for o in objs) for key, objs in apps.items()} == {
        ("ns", "web"): ["a", "b"],
        ("ns", "db"): ["c"],
    }
    assert all(type(key) is tuple for key in apps)
    assert sorted(key for key in ports if isinstance(key, int)) == [80, 5432, 8080]
    assert ports[80] == ports[80.0] == ("a",) and ports[("ns", 8080)] == ("b",)
    assert "80" not in ports and ("ns", "8080") not in ports


class _Key(str):
    """An index key that notes each comparison made with it: the work a read of the index does on its entries."""

    compared: ClassVar[list[str]] = []

    def __eq__(self, other: object) -> bool:
        _Key.compared.append(str(self))
        return str.__eq__(self, other)

    __hash__ = str.__hash__


class _NodeOfEach:
    """An indexer keeping a value per object (its node, under its name), its keys noting the comparisons made."""

    keeps_payloads = True

    def __call__(self, cm: Mapping[str, Any]) -> dict[str, Any]:
        return {_Key(cm["metadata"]["name"]): cm["data"]["node"]}


def test_a_lookup_of_one_key_of_an_index_looks_at_that_keys_entries_alone_and_a_whole_read_at_none_under_the_lock(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    for n in range(50):
        api.put(CM, {**obj(CM, f"cm-{n:02d}"), "data": {"node": f"n{n % 5}"}})
    cache = make_cache()
    cache.start(CM, lambda *_: None, indexers={"nodes": _NodeOfEach()})
    assert cache.wait_for_sync(5)
    _Key.compared.clear()

    index = cache.whole_index("nodes")
    assert index is not None and index.get("cm-07") == ("n2",) and "cm-08" in index
    assert set(_Key.compared) <= {"cm-07", "cm-08"}  # the other 48 keys' entries were not looked at

    _Key.compared.clear()
    index = cache.whole_index("nodes")
    assert len(index) == 50
    assert _Key.compared == []  # the whole read took the keys and their entries, nothing of them read yet
    assert index["cm-09"] == ("n4",)
    assert set(_Key.compared) <= {"cm-09"}


def test_a_lookup_reads_the_index_as_it_stands_and_the_first_whole_read_is_one_snapshot_read_from_then_on(
    api: Any, make_cache: Any, obj: Obj
) -> None:
    api.put(CM, {**obj(CM, "a"), "data": {"level": "info"}})
    cache = make_cache()
    cache.start(CM, lambda *_: None, indexers={"settings": indexes.Indexer("settings", _settings_of)})
    assert cache.wait_for_sync(5)
    read = cache.whole_index("settings")
    assert read is not None and read["a"] == ({"level": "info"},)

    api.emit(CM, "MODIFIED", api.put(CM, {**obj(CM, "a"), "data": {"level": "debug"}}), namespace=None)
    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "b"), "data": {"level": "warning"}}), namespace=None)
    wait_for(lambda: "b" in read, timeout=5)  # each lookup reads the store as it is then
    assert read["a"] == ({"level": "debug"},)

    assert dict(read) == {"a": ({"level": "debug"},), "b": ({"level": "warning"},)}  # the snapshot, from now on
    api.emit(CM, "DELETED", api.remove(CM, "ns", "b"), namespace=None)
    api.emit(CM, "ADDED", api.put(CM, {**obj(CM, "c"), "data": {"level": "error"}}), namespace=None)
    wait_for(lambda: "c" in (cache.whole_index("settings") or {}), timeout=5)
    assert sorted(read) == ["a", "b"] and "c" not in read and read.get("c") is None
    assert read["b"] == ({"level": "warning"},)  # what the snapshot holds is still read, decoded when reached
    assert sorted(cache.whole_index("settings") or {}) == ["a", "c"]
