"""Indexes of watched kinds read whole: the mapping a read gives, the index function's safe call, the declaration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import structlog

import okt
from okt.kube import kinds
from okt.reconciler import core, indexes
from okt.testing import fake

CM = kinds.CONFIG_MAP


def cm(name: str, uid: str = "", **data: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", **({"uid": uid} if uid else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def node_phase(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {obj["data"]["node"]: obj["data"]["phase"]}


def test_an_index_of_values_reads_as_a_mapping_of_each_key_to_the_values_under_it() -> None:
    index = indexes.Index.of(
        [cm("a", node="n1", phase="Running"), cm("b", node="n1", phase="Pending"), cm("c", node="n2", phase="Failed")],
        indexes.Indexer("phases", node_phase),
    )
    assert len(index) == 2
    assert sorted(index) == ["n1", "n2"]
    assert {key: sorted(values) for key, values in index.items()} == {"n1": ["Pending", "Running"], "n2": ["Failed"]}
    assert index["n2"] == ("Failed",)
    assert "n1" in index and "n9" not in index and {"not": "a key"} not in index
    with pytest.raises(KeyError):
        index["n9"]
    assert index.get("n9") is None


def test_an_index_of_keys_holds_each_object_once_under_each_key_it_returned() -> None:
    index = indexes.Index.of(
        [cm("a", teams="x y x"), cm("b", teams="y")], indexes.Indexer("teams", lambda o: o["data"]["teams"].split())
    )
    assert {key: [o["metadata"]["name"] for o in objs] for key, objs in index.items()} == {"x": ["a"], "y": ["a", "b"]}


def app_of(obj: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Kopf's idiom: ``{(namespace, app): name}``."""
    return {(obj["metadata"]["namespace"], obj["data"]["app"]): obj["metadata"]["name"]}


def test_tuple_keys_read_back_as_tuples_and_are_looked_up_by_the_tuple() -> None:
    index = indexes.Index.of(
        [cm("a", app="web"), cm("b", app="web"), cm("c", app="db")], indexes.Indexer("apps", app_of)
    )
    assert list(index) == [("ns", "web"), ("ns", "db")]
    assert {app: sorted(names) for (namespace, app), names in index.items()} == {"web": ["a", "b"], "db": ["c"]}
    assert index[("ns", "web")] == ("a", "b") and index.get(("ns", "db")) == ("c",)
    assert ("ns", "db") in index and ("ns", "x") not in index and index.get(("ns", "x")) is None
    assert '["ns","web"]' not in index and "ns" not in index


def test_a_tuple_returned_alone_is_one_key_and_a_list_several() -> None:
    index = indexes.Index.of(
        [cm("a", app="web"), cm("b", app="db")],
        indexes.Indexer("apps", lambda o: (o["metadata"]["namespace"], o["data"]["app"])),
    )
    assert {key: [o["metadata"]["name"] for o in objs] for key, objs in index.items()} == {
        ("ns", "web"): ["a"],
        ("ns", "db"): ["b"],
    }
    several = indexes.Index.of([cm("a", app="web")], indexes.Indexer("parts", lambda o: ["ns", ("ns", "web")]))
    assert list(several) == ["ns", ("ns", "web")]


def test_numeric_keys_read_back_as_numbers_and_are_looked_up_as_a_dict_looks_them_up() -> None:
    index = indexes.Index.of(
        [cm("a", port="8080"), cm("b", port="2.5")], indexes.Indexer("ports", lambda o: {float(o["data"]["port"]): 1})
    )
    assert list(index) == [8080.0, 2.5] and [type(key) for key in index] == [float, float]
    ints = indexes.Index.of([cm("a", port="8080")], indexes.Indexer("ports", lambda o: {int(o["data"]["port"]): 1}))
    assert list(ints) == [8080] and type(next(iter(ints))) is int
    assert ints[8080] == ints[8080.0] == (1,)
    assert "8080" not in ints and ints.get("8080") is None  # a number's text is another key, as in a dict


def test_keys_of_every_kind_mixed_in_one_index_are_python_dict_keys() -> None:
    """``1``, ``1.0`` and ``True`` are one key (the first the index held is the one iterated), ``"1"`` another, as
    ``("ns", 1)`` and ``("ns", "1")`` are; an object returning two equal keys is held once under them."""
    index = indexes.Index.of(
        [cm("a"), cm("b")],
        indexes.Indexer(
            "mixed",
            lambda o: [1, "1", ("ns", 1), ("ns", "1"), None] if o["metadata"]["name"] == "a" else [1.0, True, "x"],
        ),
    )
    assert list(index) == [1, "1", ("ns", 1), ("ns", "1"), None, "x"]
    assert [type(key) for key in index] == [int, str, tuple, tuple, type(None), str]
    assert [o["metadata"]["name"] for o in index[True]] == ["a", "b"]
    assert [o["metadata"]["name"] for o in index[1.0]] == ["a", "b"]
    assert [o["metadata"]["name"] for o in index["1"]] == ["a"]
    assert [o["metadata"]["name"] for o in index[("ns", 1.0)]] == ["a"]
    assert [o["metadata"]["name"] for o in index[None]] == ["a"]


def test_a_read_index_is_fixed_and_says_no_key_nor_value_in_its_repr() -> None:
    entries = {"secret-key": ["secret-value"]}
    index = indexes.Index(entries)
    entries["other"] = ["x"]
    assert list(index) == ["secret-key"]
    assert "secret" not in repr(index)
    with pytest.raises(TypeError):
        index["new"] = ("x",)  # type: ignore[index]


def test_an_index_function_that_raises_leaves_the_object_out_and_is_said_once_per_object_until_it_succeeds() -> None:
    failed: list[None] = []
    indexer = indexes.Indexer("phases", node_phase, failed=lambda: failed.append(None))
    with structlog.testing.capture_logs() as logged:
        assert indexer(cm("bad", uid="u1", token="s3cr3t")) == ()
        assert indexer(cm("bad", uid="u1", token="again")) == ()
        assert indexer(cm("other", uid="u2")) == ()
        assert indexer(cm("bad", uid="u1", node="n1", phase="Running")) == {"n1": "Running"}
        assert indexer(cm("bad", uid="u1")) == ()  # raising again after a success is said again
    said = [(e["name"], e["index"]) for e in logged if e["event"].startswith("an index function raised")]
    assert said == [("bad", "phases"), ("other", "phases"), ("bad", "phases")]
    assert len(failed) == 4
    assert "s3cr3t" not in str(logged)


def test_a_key_an_index_cannot_hold_is_left_out_and_the_others_kept() -> None:
    failed: list[None] = []
    indexer = indexes.Indexer(
        "odd",
        lambda o: {("ok", 1): "kept", ("bad", frozenset()): "dropped", float("nan"): "dropped"},
        failed=lambda: failed.append(None),
    )
    with structlog.testing.capture_logs() as logged:
        assert indexer(cm("a")) == {("ok", 1): "kept"}
    assert [e["keys"] for e in logged] == [2]
    assert failed == [None]


def test_without_a_cache_an_index_is_read_from_a_list_of_the_kind() -> None:
    client = fake.FakeClient(objects=[cm("a", node="n1", phase="Running"), cm("b", node="n2", phase="Pending")])
    index = indexes.read(core.ApiReader(client), client, "ctl", {"phases": ("configmaps", node_phase)}, "phases")
    assert dict(index) == {"n1": ("Running",), "n2": ("Pending",)}


def test_reading_an_index_no_watch_declares_is_a_configuration_error_naming_those_declared() -> None:
    client = fake.FakeClient()
    with pytest.raises(okt.ConfigurationError, match=r"'nodes'.*\['phases'\]"):
        indexes.read(core.ApiReader(client), client, "ctl", {"phases": (CM, node_phase)}, "nodes")


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({}, "needs map=fn, indexes="),
        ({"indexes": {}}, "needs map=fn, indexes="),
        ({"indexes": ["phases"]}, "needs a mapping"),
        ({"indexes": {"phases": "node_phase"}}, "index 'phases' needs a function"),
        ({"indexes": {"": node_phase}}, "an index's name is text"),
    ],
)
def test_a_watch_that_would_do_nothing_or_cannot_index_is_refused_where_it_is_written(
    kwargs: dict[str, Any], said: str
) -> None:
    with pytest.raises(TypeError, match=said):
        okt.watch("pods", **kwargs)


@pytest.mark.parametrize(
    "declared",
    [
        {"indexes": {"phases": node_phase}, "watches": (okt.watch("pods", indexes={"phases": node_phase}),)},
        {
            "watches": (
                okt.watch("pods", indexes={"phases": node_phase}),
                okt.watch("cm", indexes={"phases": node_phase}),
            )
        },
    ],
)
def test_an_index_name_declared_twice_is_refused_when_the_class_is_defined(declared: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="index 'phases' is declared twice"):
        type("Twice", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": "Thing", **declared})


def test_a_reconcilers_watch_indexes_reach_its_settings() -> None:
    class Nodes(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Thing"
        watches = (okt.watch("pods", indexes={"phases": node_phase}),)

    assert Nodes().settings().watch_indexes == {"phases": ("pods", node_phase)}


def test_each_read_of_a_value_gives_a_copy_of_its_own_apart_from_the_object_it_came_from() -> None:
    listed = cm("a", node="n1", phase="Running")
    index = indexes.Index.of([listed], indexes.Indexer("nodes", lambda o: {o["data"]["node"]: o["data"]}))
    listed["data"]["phase"] = "changed where it came from"
    index["n1"][0]["phase"] = "changed by a reader"
    assert index["n1"] == ({"node": "n1", "phase": "Running"},)
    assert dict(index) == {"n1": ({"node": "n1", "phase": "Running"},)}


class Store:
    """A source of an index as the cache's store is one: what it holds now, read by key or whole, each read noted."""

    def __init__(self, entries: dict[str, list[str]]) -> None:
        self.entries = entries
        self.reads: list[str] = []

    def held(self, key: str) -> tuple[str, ...]:
        self.reads.append(f"held {key}")
        return tuple(self.entries.get(key, ()))

    def snapshot(self) -> dict[str, tuple[str, ...]]:
        self.reads.append("snapshot")
        return {key: tuple(held) for key, held in self.entries.items() if held}

    def decoded(self, key: str, entry: str) -> tuple[dict[str, str], ...]:
        self.reads.append(f"decoded {entry}")
        return ({"key": key, "entry": entry},)


def test_a_lookup_reads_that_key_alone_as_the_source_holds_it_then_and_decodes_only_its_entries() -> None:
    store = Store({"n1": ["a", "b"], "n2": ["c"]})
    index = indexes.Index.over([store])
    assert index["n1"] == ({"key": "n1", "entry": "a"}, {"key": "n1", "entry": "b"})
    store.entries["n1"] = ["d"]
    assert index.get("n1") == ({"key": "n1", "entry": "d"},) and "n2" in index and "n9" not in index
    with pytest.raises(KeyError):
        index["n9"]
    assert {"not": "a key"} not in index
    assert store.reads == ["held n1", "decoded a", "decoded b", "held n1", "decoded d", "held n2", "held n9", "held n9"]
    assert repr(index) == "okt.Index(not read whole)"


def test_the_first_whole_read_is_one_snapshot_every_later_read_answers_from_decoding_only_what_is_reached() -> None:
    store = Store({"n1": ["a", "b"], "n2": ["c"]})
    index = indexes.Index.over([store])
    assert len(index) == 2
    store.entries.update({"n1": [], "n3": ["e"]})
    assert sorted(index) == ["n1", "n2"] and "n3" not in index
    assert index["n2"] == ({"key": "n2", "entry": "c"},)
    assert [entry["entry"] for entry in index["n1"]] == ["a", "b"]
    assert store.reads == ["snapshot", "decoded c", "decoded a", "decoded b"]
    assert repr(index) == "okt.Index(2 keys)"


def test_an_index_over_several_sources_holds_each_key_once_with_the_entries_of_every_source() -> None:
    here, there = Store({"n1": ["a"], "n2": ["b"]}), Store({"n1": ["c"], "n3": ["d"]})
    live, whole = indexes.Index.over([here, there]), indexes.Index.over([here, there])
    assert [entry["entry"] for entry in live["n1"]] == ["a", "c"] and "n3" in live
    assert len(whole) == 3 and list(whole) == ["n1", "n2", "n3"]
    assert {key: [entry["entry"] for entry in held] for key, held in whole.items()} == {
        "n1": ["a", "c"],
        "n2": ["b"],
        "n3": ["d"],
    }
