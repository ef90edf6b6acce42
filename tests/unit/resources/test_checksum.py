"""Behaviour of okt.resources.checksum: canonical hashing and the drift comparison, without a cluster."""

from __future__ import annotations

import copy
import json
import random
import types
from typing import Any

import hypothesis
import pydantic
import pytest
from hypothesis import strategies as st

from okt.resources import checksum

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


def shuffled(value: Any, rnd: random.Random) -> Any:
    """The same value with every mapping's keys inserted in another order."""
    if isinstance(value, dict):
        keys = list(value)
        rnd.shuffle(keys)
        return {key: shuffled(value[key], rnd) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, rnd) for item in value]
    return value


def with_extra_keys(value: Any, rnd: random.Random) -> Any:
    """The same value with keys added to some of its mappings, as a server or another writer would."""
    if isinstance(value, dict):
        grown = {key: with_extra_keys(item, rnd) for key, item in value.items()}
        if rnd.random() < 0.7:
            extra = "extra"
            while extra in grown:
                extra += "+"
            grown[extra] = rnd.choice([None, 0, "defaulted", {"nested": [1]}, []])
        return grown
    if isinstance(value, list):
        return [with_extra_keys(item, rnd) for item in value]
    return value


def leaf_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [path for key, item in value.items() for path in leaf_paths(item, (*prefix, key))]
    if isinstance(value, list):
        return [path for index, item in enumerate(value) for path in leaf_paths(item, (*prefix, index))]
    return [prefix]


def with_leaf_changed(value: Any, path: tuple[Any, ...]) -> Any:
    changed = copy.deepcopy(value)
    parent = changed
    for step in path[:-1]:
        parent = parent[step]
    leaf = parent[path[-1]]
    # A string never equals a non-string, and no string equals itself with a character appended.
    parent[path[-1]] = leaf + "\u2020" if isinstance(leaf, str) else "changed"
    return changed


# --- canonical_json and checksum ----------------------------------------------------------------------------------


def test_canonical_json_is_sorted_compact_and_keeps_unicode() -> None:
    value = {"b": [True, None, "\u00e9"], "a": 1}

    assert checksum.canonical_json(value) == '{"a":1,"b":[true,null,"\u00e9"]}'


def test_checksum_is_the_sha256_of_the_canonical_json() -> None:
    assert checksum.checksum({"b": [True, None, "\u00e9"], "a": 1}) == (
        "9488dd13ca33d3291f5a91a1833dfa164811755ffba538c2b340780f8c31a0cb"
    )


@hypothesis.given(json_values, st.randoms(use_true_random=False))
def test_key_order_never_changes_the_checksum(value: Any, rnd: random.Random) -> None:
    reordered = shuffled(value, rnd)

    assert checksum.canonical_json(reordered) == checksum.canonical_json(value)
    assert checksum.checksum(reordered) == checksum.checksum(value)


@hypothesis.given(json_values)
def test_checksum_survives_a_round_trip_through_json(value: Any) -> None:
    assert checksum.checksum(json.loads(checksum.canonical_json(value))) == checksum.checksum(value)


@hypothesis.given(json_values)
def test_checksum_is_64_lowercase_hex_characters(value: Any) -> None:
    digest = checksum.checksum(value)

    assert len(digest) == 64
    assert set(digest) <= set("0123456789abcdef")


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"replicas": 1}, {"replicas": "1"}),
        ({"enabled": True}, {"enabled": 1}),
        ([1, 2], [2, 1]),
        ({"a": None}, {}),
        ({"data": {"k": "v"}}, {"data": {"k": "w"}}),
    ],
)
def test_different_values_have_different_checksums(left: Any, right: Any) -> None:
    assert checksum.checksum(left) != checksum.checksum(right)


class Port(pydantic.BaseModel):
    container_port: int = pydantic.Field(alias="containerPort")
    name: str | None = None


class Spec(pydantic.BaseModel):
    replicas: int
    ports: list[Port]
    image_tag: str | None = pydantic.Field(default=None, alias="imageTag")


def test_a_pydantic_model_hashes_like_its_wire_form() -> None:
    model = Spec(replicas=2, ports=[Port(containerPort=80)])

    assert checksum.canonical_json(model) == '{"ports":[{"containerPort":80}],"replicas":2}'
    assert checksum.checksum(model) == checksum.checksum({"replicas": 2, "ports": [{"containerPort": 80}]})
    assert checksum.checksum({"spec": model}) == checksum.checksum(
        {"spec": {"replicas": 2, "ports": [{"containerPort": 80}]}}
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"x": float("nan")}, ValueError),
        ({"x": float("inf")}, ValueError),
        ({"x": {1, 2}}, TypeError),
        ({"x": object()}, TypeError),
    ],
)
def test_values_json_cannot_hold_exactly_are_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        checksum.checksum(value)


# --- is_subset and diff_paths -------------------------------------------------------------------------------------

DEPLOYMENT_DESIRED: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
    "spec": {
        "replicas": 2,
        "template": {
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}],
                "volumes": [],
            }
        },
    },
}
DEPLOYMENT_LIVE: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}, "resourceVersion": "812", "uid": "u-1", "generation": 3},
    "spec": {
        "replicas": 2,
        "progressDeadlineSeconds": 600,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "terminationMessagePath": "/dev/termination-log",
                        "imagePullPolicy": "IfNotPresent",
                    }
                ],
                "restartPolicy": "Always",
            }
        },
    },
    "status": {"replicas": 2, "availableReplicas": 2},
}


def test_server_defaulted_fields_never_count_as_drift() -> None:
    assert checksum.is_subset(DEPLOYMENT_DESIRED, DEPLOYMENT_LIVE)
    assert checksum.diff_paths(DEPLOYMENT_DESIRED, DEPLOYMENT_LIVE) == []


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda d: d["spec"].update(replicas=3), ".spec.replicas"),
        (lambda d: d["metadata"]["labels"].update(tier="front"), ".metadata.labels.tier"),
        (
            lambda d: d["metadata"]["labels"].update({"app.kubernetes.io/name": "web"}),
            '.metadata.labels["app.kubernetes.io/name"]',
        ),
        # The live object has no annotations at all: the missing key itself is the drift.
        (lambda d: d["metadata"]["annotations"].update({"okt.io/okt-hash": "abc"}), ".metadata.annotations"),
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(containerPort=8080),
            ".spec.template.spec.containers[0].ports[0].containerPort",
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"].append({"containerPort": 443}),
            ".spec.template.spec.containers[0].ports",
        ),
        (lambda d: d["spec"]["template"]["spec"].update(volumes=[{"name": "v"}]), ".spec.template.spec.volumes"),
        (lambda d: d["spec"].update(paused=False), ".spec.paused"),
    ],
)
def test_a_changed_desired_field_is_drift_reported_at_its_path(edit: Any, path: str) -> None:
    desired = copy.deepcopy(DEPLOYMENT_DESIRED)
    edit(desired)

    assert not checksum.is_subset(desired, DEPLOYMENT_LIVE)
    assert checksum.diff_paths(desired, DEPLOYMENT_LIVE) == [path]


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        ({"a": None}, {}, True),
        ({"a": {}}, {}, True),
        ({"a": []}, {}, True),
        ({"a": ""}, {}, False),
        ({"a": 0}, {}, False),
        ({"a": False}, {}, False),
        ({"a": None}, {"a": "set by someone"}, True),
        ({"a": {"b": None}}, {"a": {"b": "IfNotPresent"}}, True),
        ([None], ["x"], False),
        ({"a": []}, {"a": [1]}, False),
        ({"a": {}}, {"a": {"b": 1}}, True),
        ({"replicas": "1"}, {"replicas": 1}, False),
        ({"cpu": checksum.Quantity("1")}, {"cpu": "1"}, True),
        ({"cpu": checksum.Quantity("0.5")}, {"cpu": "500m"}, True),
        ({"cpu": checksum.Quantity("0.5")}, {"cpu": 0.5}, True),
        ({"cpu": checksum.Quantity("1000m")}, {"cpu": "1"}, True),
        ({"memory": checksum.Quantity("1024Mi")}, {"memory": "1Gi"}, True),
        ({"cpu": checksum.Quantity("500m")}, {"cpu": 0.5}, False),
        ({"cpu": 1}, {"cpu": "1"}, False),
        ({"cpu": "1000m"}, {"cpu": "1"}, False),
        ({"limit": "1000"}, {"limit": "1k"}, False),
        ({"version": "2.0"}, {"version": "2"}, False),
        ({"cpu": "500m"}, {"cpu": 0.5}, False),
        ({"cpu": "1"}, {"cpu": "1000m"}, False),
        ({"cpu": 2}, {"cpu": "500m"}, False),
        ({"enabled": True}, {"enabled": 1}, False),
        ({"count": 1}, {"count": True}, False),
        ({"ratio": 1}, {"ratio": 1.0}, True),
        ({"memory": checksum.Quantity("1Gi")}, {"memory": "1024Mi"}, False),
        ([1, 2], [2, 1], False),
        ([{"a": 1}], [{"a": 1, "b": 2}], True),
        ([{"a": 1}], [{"a": 1}, {"a": 2}], False),
        ({"a": {"b": 1}}, {"a": [1]}, False),
        ({"a": [1]}, {"a": {"0": 1}}, False),
        ((1, 2), [1, 2], True),
        ({}, {"anything": 1}, True),
        (None, None, True),
    ],
)
def test_is_subset_rules(desired: Any, live: Any, expected: bool) -> None:
    assert checksum.is_subset(desired, live) is expected
    assert (checksum.diff_paths(desired, live) == []) is expected


@pytest.mark.parametrize(
    ("desired", "live", "paths"),
    [
        ({"a": 1}, [1], ["."]),
        ([1, 2], [1, 3], [".[1]"]),
        ({"a b": 1, "c": {"d.e": 2}}, {"a b": 0, "c": {"d.e": 3}}, ['.["a b"]', '.c["d.e"]']),
        ({"x": 1, "y": 2, "z": 3}, {"x": 0, "y": 2}, [".x", ".z"]),
    ],
)
def test_diff_paths_names_every_mismatch_jq_style(desired: Any, live: Any, paths: list[str]) -> None:
    assert checksum.diff_paths(desired, live) == paths


def test_pydantic_models_are_compared_in_their_wire_form() -> None:
    desired = Spec(replicas=2, ports=[Port(containerPort=80)])

    assert checksum.is_subset(desired, {"replicas": 2, "ports": [{"containerPort": 80, "protocol": "TCP"}]})
    assert checksum.diff_paths(desired, {"replicas": 2, "ports": [{"containerPort": 81}]}) == [
        ".ports[0].containerPort"
    ]


@hypothesis.given(json_values)
def test_every_value_is_a_subset_of_itself(value: Any) -> None:
    assert checksum.is_subset(value, copy.deepcopy(value))


@hypothesis.given(json_values, st.randoms(use_true_random=False))
def test_extra_keys_anywhere_in_live_are_not_drift(value: Any, rnd: random.Random) -> None:
    assert checksum.is_subset(value, with_extra_keys(value, rnd))


@hypothesis.given(json_objects, st.data())
def test_changing_any_leaf_of_desired_is_drift(value: dict[str, Any], data: st.DataObject) -> None:
    paths = leaf_paths(value)
    hypothesis.assume(paths)
    path = data.draw(st.sampled_from(paths))

    desired = with_leaf_changed(value, path)

    assert not checksum.is_subset(desired, value)
    assert len(checksum.diff_paths(desired, value)) == 1


# --- strip_server_owned -------------------------------------------------------------------------------------------


def test_strip_server_owned_removes_what_the_server_writes_and_nothing_else() -> None:
    original = copy.deepcopy(DEPLOYMENT_LIVE)
    original["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    original["metadata"]["creationTimestamp"] = "2026-11-21T10:00:00Z"
    original["metadata"]["selfLink"] = "/apis/apps/v1/namespaces/default/deployments/web"
    snapshot = copy.deepcopy(original)

    stripped = checksum.strip_server_owned(original)

    assert "status" not in stripped
    assert stripped["metadata"] == {"name": "web", "labels": {"app": "web"}}
    assert stripped["spec"] == original["spec"]
    assert original == snapshot


def test_strip_server_owned_returns_an_independent_copy() -> None:
    original = {"metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}}

    stripped = checksum.strip_server_owned(original)
    stripped["metadata"]["labels"]["a"] = "2"
    stripped["data"]["k"] = "w"

    assert original == {"metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}}


@pytest.mark.parametrize("obj", [{}, {"kind": "ConfigMap"}, {"metadata": None, "status": {}}])
def test_strip_server_owned_accepts_objects_without_metadata(obj: dict[str, Any]) -> None:
    stripped = checksum.strip_server_owned(obj)

    assert "status" not in stripped
    assert {key: value for key, value in obj.items() if key != "status"} == stripped


def test_a_stripped_live_object_hashes_the_same_across_server_bookkeeping_updates() -> None:
    before = copy.deepcopy(DEPLOYMENT_LIVE)
    after = copy.deepcopy(DEPLOYMENT_LIVE)
    after["metadata"].update(resourceVersion="913", generation=4)
    after["status"] = {"replicas": 2, "availableReplicas": 1}

    assert checksum.checksum(checksum.strip_server_owned(before)) == checksum.checksum(
        checksum.strip_server_owned(after)
    )


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5]), st.sampled_from("ab"))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3),
    max_leaves=10,
)


@hypothesis.given(desired=_VALUES, live=_VALUES, data=st.data())
def test_is_subset_is_exactly_no_diff_path(desired: Any, live: Any, data: st.DataObject) -> None:
    """The fast yes/no answer and the path report agree, on unrelated values and on a value against itself with
    extra keys (small alphabets make matches and near-matches common)."""
    assert checksum.is_subset(desired, live) is (checksum.diff_paths(desired, live) == [])
    widened = {"extra": data.draw(_VALUES), **desired} if isinstance(desired, dict) else desired
    assert checksum.is_subset(desired, widened)
    assert checksum.diff_paths(desired, widened) == []


@hypothesis.given(desired=_VALUES, shape=_VALUES, live=_VALUES, data=st.data())
def test_is_subset_within_is_is_subset_of_the_narrowed_value(
    desired: Any, shape: Any, live: Any, data: st.DataObject
) -> None:
    """The one-walk check answers as the narrowed copy compared whole, on unrelated values and on a live value that
    holds the narrowed one (with a shape drawn from the desired value's own keys, so narrowing keeps something)."""
    assert checksum.is_subset_within(desired, shape, live) is checksum.is_subset(
        checksum.narrowed(desired, shape), live
    )
    own = {k: data.draw(_VALUES | st.just(v)) for k, v in desired.items()} if isinstance(desired, dict) else shape
    view = checksum.narrowed(desired, own)
    assert checksum.is_subset_within(desired, own, view)
    assert checksum.is_subset_within(desired, own, live) is checksum.is_subset(view, live)


@hypothesis.given(desired=_VALUES, live=_VALUES, data=st.data())
def test_a_shape_holding_the_desired_values_themselves_compares_them_whole(
    desired: Any, live: Any, data: st.DataObject
) -> None:
    """A ``hashable_ref()`` that hands on the desired object's own values (the default does) narrows nothing: the
    one-walk check answers as ``is_subset`` of those values, whole or under a shape that keeps some of their keys."""
    assert checksum.is_subset_within(desired, desired, live) is checksum.is_subset(desired, live)
    if isinstance(desired, dict):
        kept = {k: v for k, v in desired.items() if data.draw(st.booleans())}
        assert checksum.is_subset_within(desired, kept, live) is checksum.is_subset(
            checksum.narrowed(desired, kept), live
        )


def test_is_subset_within_compares_only_what_the_shape_holds() -> None:
    desired = {"spec": {"replicas": 2, "paused": False}, "kind": "Deployment"}
    shape = {"spec": {"replicas": 1}}
    assert checksum.is_subset_within(desired, shape, {"spec": {"replicas": 2, "paused": True}})
    assert not checksum.is_subset_within(desired, shape, {"spec": {"replicas": 3}})
    assert not checksum.is_subset_within(desired, shape, {"spec": "not a mapping"})
    assert checksum.is_subset_within(desired, {"spec": {"other": 1}}, {})  # narrowed to nothing: an empty value


def test_a_mapping_or_sequence_of_another_type_compares_as_a_dict_or_list_does() -> None:
    """The walk tells the exact ``dict`` and ``list`` of a decoded object apart first; any other Mapping or tuple
    (a read-only view, a model's own mapping) is still compared by what it holds."""
    desired = {"spec": {"replicas": 2, "ports": [80]}, "data": {}}
    shape = {"spec": {"replicas": 1, "ports": 1}, "data": 1}
    live = {"spec": {"replicas": 2, "ports": [80], "paused": False}}
    frozen = types.MappingProxyType({"spec": types.MappingProxyType({"replicas": 2, "ports": (80,)}), "data": ()})
    for wanted in (desired, frozen):
        for found in (live, types.MappingProxyType({"spec": types.MappingProxyType(live["spec"])})):
            assert checksum.is_subset(wanted, found)
            assert checksum.is_subset_within(wanted, shape, found)
            spec = wanted["spec"]
            assert checksum.narrowed(wanted, shape) == {
                "spec": {"replicas": 2, "ports": spec["ports"]},
                "data": wanted["data"],
            }
    assert not checksum.is_subset({"data": types.MappingProxyType({"k": "v"})}, {"data": {}})
    assert not checksum.is_subset_within(frozen, shape, {"spec": ("not", "a mapping")})


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        (123456789012345678901, 123456789012345680000, True),  # given back as the float's digits Go writes
        (-123456789012345678901, -123456789012345680000, True),
        (10**22 + 1, 1e22, True),  # beyond 1e21: given back as the float, in Go's exponent form
        (1.2345678901234567e20, 123456789012345670000, True),  # a float Go writes as another integer
        (2.0**60 + 2**8, 1152921504606847200, True),
        (123456789012345678901, 123456789012345678901, True),  # as written: still the same value
        (123456789012345678901, 123456789012345690000, False),  # another number is drift
        (123456789012345678901, "123456789012345678901", False),  # as ever, a string is no number
        (2**63 - 1, 2**63 - 1, True),  # int64's largest: kept as it is
        (2**53 + 1, 2**53, False),  # an int64 the server keeps exactly: no rounding excused
        (2.0**53, 2**53, True),  # 1 == 1.0, as before
        (10**400, 1e308, False),  # no float holds it, so the server stores nothing of it
        (123456789012345678901, True, False),
    ],
)
def test_a_number_matches_what_the_api_server_stores_for_it(desired: Any, live: Any, expected: bool) -> None:
    # The server keeps an int64 as it is, any other number as a float64 it gives back with its shortest digits: a
    # child built in Python (a body, a model, a mutation) holds the number as Python computed it.
    assert checksum.is_subset({"spec": {"n": [desired]}}, {"spec": {"n": [live]}}) is expected
    assert checksum.diff_paths({"spec": {"n": [desired]}}, {"spec": {"n": [live]}}) == (
        [] if expected else [".spec.n[0]"]
    )


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (0.5, "500m"),
        (2, "2"),
        (-1.5, "-1500m"),
        ("1000m", "1"),
        ("100m", "100m"),
        ("1.5", "1500m"),
        ("1500", "1500"),
        ("1000k", "1M"),
        ("1024Mi", "1Gi"),
        ("1000Mi", "1000Mi"),
        ("0.5Gi", "512Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("1e3", "1e3"),
        ("1E3", "1e3"),
        ("1.5e3", "1500"),
        (".5", "500m"),
        ("0Gi", "0"),
        ("8080", "8080"),
        ("http", None),
        ("", None),
        ("1 Gi", None),
        ("0.1n", None),
        (True, None),
        (None, None),
        (float("nan"), None),
    ],
)
def test_canonical_quantity_is_what_the_api_server_stores(value: Any, stored: str | None) -> None:
    assert checksum.canonical_quantity(value) == stored


def ports(*items: dict[str, Any]) -> checksum.KeyedList:
    """A Service's ports as the drift check marks them: merged by port and protocol, TCP when left out."""
    return checksum.KeyedList(items, ("port", "protocol"), {"protocol": "TCP"})


OURS = {"name": "http", "port": 80}
THEIRS = {"name": "metrics", "port": 9150, "protocol": "TCP"}


@pytest.mark.parametrize(
    ("desired", "live", "paths"),
    [
        pytest.param(ports(OURS), [{**OURS, "protocol": "TCP"}], [], id="ours-alone"),
        pytest.param(ports(OURS), [THEIRS, {**OURS, "protocol": "TCP"}], [], id="theirs-before"),
        pytest.param(ports(OURS), [{**OURS, "protocol": "TCP"}, THEIRS], [], id="theirs-after"),
        pytest.param(
            ports(OURS, {"port": 81}),
            [{"port": 81, "protocol": "TCP"}, THEIRS, {**OURS, "protocol": "TCP"}],
            ["."],
            id="ours-reordered",
        ),
        pytest.param(ports(OURS), [THEIRS], ["."], id="ours-missing"),
        pytest.param(ports(OURS), [{**OURS, "protocol": "UDP"}, THEIRS], ["."], id="ours-rekeyed"),
        pytest.param(ports(OURS), [THEIRS, {**OURS, "name": "w", "protocol": "TCP"}], [".[1].name"], id="ours-edited"),
        pytest.param(ports(OURS), {"port": 80}, ["."], id="no-list"),
        pytest.param(ports(), [THEIRS], [], id="none-of-ours"),
    ],
)
def test_a_keyed_list_matches_its_items_by_key_in_order_among_other_items(
    desired: checksum.KeyedList, live: Any, paths: list[str]
) -> None:
    """Another manager's items are no drift; okt's missing, rekeyed, edited or reordered are (an edit inside an item
    is named at the live item's index)."""
    assert checksum.diff_paths(desired, live) == paths
    assert checksum.is_subset(desired, live) is (paths == [])
    assert checksum.is_subset_within({"ports": desired}, {"ports": 1}, {"ports": live}) is (paths == [])


@pytest.mark.parametrize(
    ("desired", "live"),
    [
        (2**64, 18446744073709552000),  # beyond int64: stored as the float nearest it, given back as Go's digits
        (123456789012345678901, 123456789012345680000),
        (1e20, 100000000000000000000),  # a float of 2**53 and more, given back as the integer Go writes
        (10**22 + 1, 1e22),
        (5.0, 5),
    ],
)
def test_a_keyed_list_matches_a_key_number_as_the_server_stores_it(desired: Any, live: Any) -> None:
    """A custom kind's list merged by a number: its item was never found live, and okt wrote the child again."""
    items = checksum.KeyedList([{"id": desired, "v": "a"}], ("id",))
    assert checksum.diff_paths(items, [{"id": 7, "v": "b"}, {"id": live, "v": "a"}]) == []
    assert checksum.diff_paths(items, [{"id": live, "v": "b"}]) == [".[0].v"]


def test_a_keyed_list_tells_a_key_number_from_another_and_from_a_bool() -> None:
    assert checksum.diff_paths(checksum.KeyedList([{"id": 2**53 + 1}], ("id",)), [{"id": 2**53}]) == ["."]
    assert checksum.diff_paths(checksum.KeyedList([{"id": 1}], ("id",)), [{"id": True}]) == ["."]


def test_a_plain_list_with_another_writers_item_is_drift() -> None:
    """Unmarked (an atomic list, a custom resource's), a list is compared item by item: one more item is drift."""
    assert checksum.diff_paths([OURS], [{**OURS, "protocol": "TCP"}, THEIRS]) == ["."]


def test_a_keyed_list_of_items_without_a_key_is_compared_at_each_index() -> None:
    desired = checksum.KeyedList(["a", "b"], ("name",))
    assert checksum.is_subset(desired, ["a", "b"])
    assert not checksum.is_subset(desired, ["a", "b", "c"])


def test_a_keyed_list_hashes_and_copies_as_the_list_it_holds() -> None:
    desired = ports(OURS)
    assert checksum.checksum(desired) == checksum.checksum([OURS])
    copied = copy.deepcopy(desired)
    assert copied == [OURS] and copied.keys == desired.keys and copied.defaults == desired.defaults
