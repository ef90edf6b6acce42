"""Watches' pure rules: which primaries an event of a related kind concerns, and index lookups with or without a
cache index."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import pytest
import structlog

import okt
from okt.kube import kinds
from okt.reconciler import core, watches
from okt.testing import fake

THING = kinds.Kind("example.com/v1", "Thing", "things", True)


def thing(name: str, config: str | None = None, namespace: str = "ns") -> dict[str, Any]:
    spec = {"config": config} if config else {}
    return {
        "apiVersion": THING.api_version,
        "kind": "Thing",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def config_of(obj: Mapping[str, Any]) -> list[str]:
    config = obj["spec"].get("config")
    return [f"{obj['metadata']['namespace']}/{config}"] if config else []


def cm(name: str, rv: str = "1", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "data": data,
    }


def context(client: fake.FakeClient) -> watches.MapContext:
    reader = core.ApiReader(client)
    return watches.MapContext(
        THING,
        reader,
        structlog.get_logger(),
        find=lambda name, value: watches.lookup(reader, THING, "thing", {"config": config_of}, name, value),
    )


@pytest.fixture
def client() -> fake.FakeClient:
    return fake.FakeClient(
        kinds=[THING], objects=[thing("a", "shared"), thing("b", "shared"), thing("c", "other"), thing("d")]
    )


BY_INDEX = okt.watch(kinds.CONFIG_MAP, map=lambda obj, ctx: ctx.index("config", okt.ref_of(obj)))


def test_a_change_maps_to_the_primaries_naming_the_object(client: fake.FakeClient) -> None:
    keys = watches.keys_for_event(BY_INDEX, "MODIFIED", cm("shared", "2", x="1"), cm("shared", "1"), context(client))
    assert sorted(keys, key=str) == [("ns", "a"), ("ns", "b")]


def test_a_modification_maps_the_old_object_too() -> None:
    by_data = okt.watch(kinds.CONFIG_MAP, map=lambda obj, ctx: [("ns", v) for v in obj.get("data", {}).values()])
    ctx = context(fake.FakeClient(kinds=[THING]))
    keys = watches.keys_for_event(by_data, "MODIFIED", cm("x", "2", who="new"), cm("x", "1", who="old"), ctx)
    assert keys == [("ns", "new"), ("ns", "old")]


def test_a_change_of_the_resource_version_alone_maps_to_nothing(client: fake.FakeClient) -> None:
    assert watches.keys_for_event(BY_INDEX, "MODIFIED", cm("shared", "2"), cm("shared", "1"), context(client)) == []


@pytest.mark.parametrize("event_type", ["ADDED", "DELETED", "RESYNC"])
def test_other_events_map_the_object_once(client: fake.FakeClient, event_type: str) -> None:
    assert watches.keys_for_event(BY_INDEX, event_type, cm("other"), None, context(client)) == [("ns", "c")]


@pytest.mark.parametrize(
    "result", [lambda obj, ctx: 1 / 0, lambda obj, ctx: ["just-a-name"], lambda obj, ctx: [("ns", 3)]]
)
def test_a_mapping_that_raises_or_returns_nonsense_maps_to_nothing(client: fake.FakeClient, result: Any) -> None:
    assert watches.keys_for_event(okt.watch("configmaps", map=result), "ADDED", cm("x"), None, context(client)) == []


def test_a_mapping_that_returns_the_watched_object_itself_maps_to_nothing(client: fake.FakeClient) -> None:
    """A ConfigMap is not a Thing: read as a key, it named the Thing of the same name (here ``other``, which has
    nothing to do with it) — the mapping's mistake is logged instead."""
    itself = okt.watch("configmaps", map=lambda obj, ctx: [obj])
    assert watches.keys_for_event(itself, "ADDED", cm("other"), None, context(client)) == []


def test_keys_are_deduplicated_and_objects_become_keys() -> None:
    keys = watches.keys_of([("ns", "a"), thing("a"), thing("b", namespace="other")], namespaced=True)
    assert keys == ([("ns", "a"), ("other", "b")], [])


@pytest.mark.parametrize("namespaced", [True, False])
@pytest.mark.parametrize("item", [("ns", ""), thing(""), {"apiVersion": THING.api_version, "kind": "Thing"}])
def test_a_key_or_object_with_an_empty_name_is_an_error_not_a_silent_nothing(
    client: fake.FakeClient, item: Any, namespaced: bool
) -> None:
    """A key with an empty name names no object: it was left out without a word, and the primary the mapping meant
    (a name read from a field left empty) waited for a change that never came."""
    kind = THING if namespaced else kinds.Kind("example.com/v1", "Thing", "things", False)
    unnamed = okt.watch("configmaps", map=lambda obj, ctx: [item, ("ns", "b")])
    ctx = dataclasses.replace(context(client), kind=kind)

    with structlog.testing.capture_logs() as logs:
        keys = watches.keys_for_event(unnamed, "ADDED", cm("x"), None, ctx)

    assert keys == [("ns" if namespaced else None, "b")]
    (line,) = [line for line in logs if line["log_level"] == "error"]
    assert "names no Thing: its name is empty" in line["error"] and line["watched"] == "ConfigMap"


def test_a_cluster_scoped_primary_has_no_namespace_in_its_keys() -> None:
    assert watches.keys_of([("ns", "a"), thing("b")], namespaced=False) == ([(None, "a"), (None, "b")], [])


def test_an_undeclared_index_is_one_clear_error(client: fake.FakeClient) -> None:
    with pytest.raises(okt.ConfigurationError, match="no index 'nope' is declared"):
        context(client).index("nope", "x")


def test_a_reader_without_indexes_filters_a_list_with_the_same_answer(client: fake.FakeClient) -> None:
    found = context(client).index("config", "ns/other")
    assert [o["metadata"]["name"] for o in found] == ["c"]


def test_an_index_function_returning_one_string_indexes_that_string_not_its_characters() -> None:
    one_value = {"config": lambda obj: f"ns/{obj['spec'].get('config')}"}
    reader = core.ApiReader(fake.FakeClient(kinds=[THING], objects=[thing("a", "shared"), thing("b", "other")]))

    found = watches.lookup(reader, THING, "thing", one_value, "config", "ns/shared")

    assert [o["metadata"]["name"] for o in found] == ["a"]
    assert watches.safe_index(one_value["config"], thing("a", "shared")) == ("ns/shared",)


def test_an_index_function_that_raises_leaves_the_object_out() -> None:
    assert watches.safe_index(lambda obj: [obj["missing"]], {"metadata": {"name": "x"}}) == ()


def test_map_must_be_a_function() -> None:
    with pytest.raises(TypeError, match="needs a function"):
        okt.watch("configmaps", map="not callable")  # type: ignore[arg-type]


def test_a_reconcile_without_the_cache_looks_up_only_the_primaries_the_filters_select() -> None:
    """The cache's index holds only what ``annotation_selector`` and ``when(obj)`` let in: a reconcile reading the
    API (``okt.testing``'s fake, a plain call) gets the same answer from the list it filters."""
    found: list[str] = []

    class Selective(okt.Reconciler):
        api_version = THING.api_version
        kind = "Thing"
        plural = "things"
        indexes = {"config": config_of}
        annotation_selector = {"example.com/managed": None}

        def when(self, obj: Mapping[str, Any]) -> bool:
            return obj["metadata"]["name"] != "skipped"

        def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
            if state is okt.State.ObjectsGetter:
                found.extend(sorted(o["metadata"]["name"] for o in ctx.index("config", "ns/shared")))
            return super().enter_in_state(state, ctx)

    managed = {"example.com/managed": "yes"}
    objects = [thing("a", "shared"), thing("skipped", "shared"), thing("unmanaged", "shared"), thing("b", "shared")]
    for obj in objects:
        if obj["metadata"]["name"] != "unmanaged":
            obj["metadata"]["annotations"] = managed
    client = fake.FakeClient(kinds=[THING], objects=objects)

    core.reconcile(Selective(), client, None, "ns", "a")

    assert found == ["a", "b"]


def test_an_item_that_is_not_a_key_is_logged_and_the_keys_beside_it_are_still_reconciled(
    client: fake.FakeClient,
) -> None:
    mixed = okt.watch("configmaps", map=lambda obj, ctx: [("ns", "a"), "just-a-name", ("ns", "b")])

    with structlog.testing.capture_logs() as logs:
        keys = watches.keys_for_event(mixed, "ADDED", cm("x"), None, context(client))

    assert keys == [("ns", "a"), ("ns", "b")]
    assert [line["error"] for line in logs if line["log_level"] == "error"] == [
        "TypeError: a mapping function returns (namespace, name) keys or Thing objects, got a string"
    ]


def secret(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "ns", "resourceVersion": "1"},
        "data": data,
    }


@pytest.mark.parametrize(
    "mapping",
    [
        lambda s, ctx: [s["data"]["password"]],  # an item
        lambda s, ctx: [("ns", "a"), [s["data"]["password"], "x"]],  # a list in place of a key
        lambda s, ctx: [("ns", "a"), ("ns", "b", s["data"]["password"])],  # a key of three
        lambda s, ctx: s["data"]["password"],  # the result
        lambda s, ctx: {s["data"]["password"]},  # a set of text
        lambda s, ctx: iter([("ns", s["data"]["password"].encode())]),  # bytes as a name
    ],
)
def test_what_a_mapping_returns_that_names_no_primary_is_said_by_its_type_never_its_content(
    client: fake.FakeClient, mapping: Any
) -> None:
    """A mapping may read a Secret, and return from it what it meant to read elsewhere: the log line says what is
    wrong, never the value, as an index value is said."""
    with structlog.testing.capture_logs() as logs:
        watches.keys_for_event(
            okt.watch("secrets", map=mapping), "ADDED", secret(password="aHVudGVyMg=="), None, context(client)
        )

    errors = [line for line in logs if line["log_level"] == "error"]
    assert len(errors) == 1
    assert "aHVudGVyMg==" not in repr(errors)


@pytest.mark.parametrize("namespace", [None, "", 3])
def test_a_key_without_a_namespace_for_a_namespaced_primary_is_an_error_not_a_silent_nothing(
    client: fake.FakeClient, namespace: Any
) -> None:
    """A namespaced primary's key names its namespace: without one (or with one that is not text), the key named no
    object, and the change reconciled nothing without a word."""
    unscoped = okt.watch("configmaps", map=lambda obj, ctx: [(namespace, "a"), ("ns", "b")])

    with structlog.testing.capture_logs() as logs:
        keys = watches.keys_for_event(unscoped, "ADDED", cm("x"), None, context(client))

    assert keys == [("ns", "b")]
    errors = [line["error"] for line in logs if line["log_level"] == "error"]
    assert len(errors) == 1 and "a Thing is namespaced: its key names its namespace" in errors[0]


def test_a_mapping_that_raises_part_way_still_reconciles_the_keys_it_gave_before() -> None:
    def partly(obj: Mapping[str, Any], ctx: watches.MapContext) -> Iterable[watches.Key]:
        yield ("ns", "a")
        raise RuntimeError("lost the rest")

    with structlog.testing.capture_logs() as logs:
        keys = watches.keys_for_event(
            okt.watch("configmaps", map=partly), "ADDED", cm("x"), None, context(fake.FakeClient(kinds=[THING]))
        )

    assert keys == [("ns", "a")]
    assert [line["error"] for line in logs if line["log_level"] == "error"] == ["RuntimeError: lost the rest"]


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (("ns", "a"), "one key ('ns', 'a'): return a list of keys, [('ns', 'a')]"),
        ("ns/a", "got a string: return a list of keys"),
        (thing("a"), "one object (Thing 'a'): return a list of objects"),
        (7, "got an int, which is not a list"),
    ],
)
def test_a_mapping_that_returns_one_key_or_object_instead_of_a_list_says_so(
    client: fake.FakeClient, result: Any, said: str
) -> None:
    with structlog.testing.capture_logs() as logs:
        keys = watches.keys_for_event(
            okt.watch("configmaps", map=lambda obj, ctx: result), "ADDED", cm("x"), None, context(client)
        )

    assert keys == []
    errors = [line["error"] for line in logs if line["log_level"] == "error"]
    assert len(errors) == 1 and said in errors[0]


@pytest.mark.parametrize("value", [{"b": "2", "a": "1"}, ["ns", "a"], {"ns/a"}, ("ns", ["a"])])
def test_an_index_value_that_is_a_mapping_list_or_set_is_left_out_and_said_by_its_type_never_its_content(
    value: Any,
) -> None:
    """Kept as its text, such a value matched a lookup only when both were built in the same order (a selector and
    an object's labels never were), and silently missed otherwise."""
    failed: list[None] = []

    with structlog.testing.capture_logs() as logs:
        values = watches.safe_index(lambda obj: ["ns/kept", value], thing("a"), failed=lambda: failed.append(None))

    assert values == ("ns/kept",)
    assert failed == [None]
    (line,) = [line for line in logs if line["log_level"] == "warning"]
    assert type(value).__name__ in line["error"] and "ns/a" not in str(line) and "'2'" not in str(line)


@pytest.mark.parametrize("value", [443, 2.5, True, ("ns", "a")])
def test_an_index_value_that_is_a_number_or_a_tuple_of_them_or_text_is_found_by_the_same_value(value: Any) -> None:
    reader = core.ApiReader(fake.FakeClient(kinds=[THING], objects=[thing("a"), thing("b", namespace="other")]))
    indexes = {"by": lambda obj: [value] if obj["metadata"]["namespace"] == "ns" else ()}

    found = watches.lookup(reader, THING, "thing", indexes, "by", value)

    assert [o["metadata"]["name"] for o in found] == ["a"]


class Tier(str, enum.Enum):  # noqa: UP042 -- not StrEnum: str() of this member is "Tier.GOLD"
    GOLD = "gold"


class Port(enum.IntEnum):
    HTTP = 80


class Pair(NamedTuple):
    namespace: str
    app: str


@pytest.mark.parametrize(
    ("stored", "looked_up", "found"),
    [
        (1, 1.0, True),
        (1.0, 1, True),
        (1e20, 10**20, True),
        (True, 1, True),
        (1, True, True),
        (None, None, True),
        (Tier.GOLD, "gold", True),
        (Port.HTTP, 80, True),
        (("ns", 1), ("ns", 1.0), True),
        (Pair("ns", "web"), ("ns", "web"), True),
        (80, "80", False),
        (2.5, "2.5", False),
        (True, "true", False),
        (None, "null", False),
        (("ns", 1), ("ns", "1"), False),
        (("a", "b"), '["a","b"]', False),
        ('["a","b"]', ("a", "b"), False),
        (("a,b",), ("a", "b"), False),
    ],
)
def test_an_index_value_and_a_lookup_match_as_two_keys_of_a_dict_do(stored: Any, looked_up: Any, found: bool) -> None:
    """Index values are kept as themselves, and a lookup finds a value Python finds equal: ``1.0`` finds ``1`` and
    ``True`` (one key of a dict), the text ``"1"`` does not; a tuple finds a tuple, never its JSON text."""
    reader = core.ApiReader(fake.FakeClient(kinds=[THING], objects=[thing("a")]))
    indexes = {"by": lambda obj: [stored]}

    names = [o["metadata"]["name"] for o in watches.lookup(reader, THING, "thing", indexes, "by", looked_up)]

    assert names == (["a"] if found else [])
    assert (stored == looked_up) is found
    assert (watches.index_key(stored) == watches.index_key(looked_up)) is found


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("x", "x"),
        (Tier.GOLD, "gold"),
        (Port.HTTP, 80),
        (1.5, 1.5),
        (True, True),
        (None, None),
        (Pair("ns", "web"), ("ns", "web")),
        (("ns", (Tier.GOLD, Port.HTTP)), ("ns", ("gold", 80))),
    ],
)
def test_an_index_keeps_a_value_as_pythons_own_type_equal_to_it(value: Any, kept: Any) -> None:
    """A key compares and hashes as ``str``, ``int``, ``float`` and ``tuple`` do, whatever class the function
    returned: an enum member as its value, a named tuple as a plain one."""

    def types(of: Any) -> Any:
        return tuple(map(types, of)) if isinstance(of, tuple) else type(of)

    key = watches.index_key(value)

    assert key == kept and types(key) == types(kept)


def test_an_index_function_returning_one_number_or_one_tuple_indexes_that_one_value() -> None:
    """As one string is one value: a port number returned alone is not "not iterable", leaving the object out, and a
    tuple returned alone is a key of several parts (``(namespace, app)``), not several keys; a list holds several."""
    assert watches.safe_index(lambda obj: 443, thing("a")) == (443,)
    assert watches.safe_index(lambda obj: ("ns", "web"), thing("a")) == (("ns", "web"),)
    assert watches.safe_index(lambda obj: ["ns", ("ns", "web"), 1], thing("a")) == ("ns", ("ns", "web"), 1)


def test_nan_is_no_index_value_it_equals_nothing_and_a_lookup_by_it_is_a_type_error(client: fake.FakeClient) -> None:
    failed: list[None] = []
    with structlog.testing.capture_logs():
        kept = watches.safe_index(
            lambda obj: [float("nan"), ("ns", float("nan")), "kept"], thing("a"), failed=lambda: failed.append(None)
        )
    assert kept == ("kept",) and failed == [None]
    with pytest.raises(TypeError, match="got a NaN"):
        context(client).index("config", float("nan"))


@pytest.mark.parametrize("value", [{"app": "x"}, ["ns", "a"]])
def test_a_lookup_by_a_mapping_or_list_is_a_type_error(client: fake.FakeClient, value: Any) -> None:
    with pytest.raises(
        TypeError, match=f"an index value is text, a number or a tuple of them, got a {type(value).__name__}"
    ):
        context(client).index("config", value)
