"""Behaviour of okt.resources.list_items without a cluster: which items of a keyed list the repair of a key someone
edited removes (the one made of okt's item, never another manager's), and the fields a duplicate refusal names."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from okt.kube import errors
from okt.resources import list_items

PORT_KEYS = ("port", "protocol")
OURS = {"name": "memcached", "port": 11211, "protocol": "TCP", "targetPort": 11211}
METRICS = {"name": "metrics", "port": 9100, "protocol": "TCP", "targetPort": 9100}


def service(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"ports": list(ports)}}


def operations(
    desired: dict[str, Any], before: dict[str, Any], after: dict[str, Any], unique: Collection[str] = ()
) -> list[dict[str, Any]]:
    lists = list_items._Lists({("spec", "ports"): PORT_KEYS}, frozenset(unique))
    return [operation for operation, _ in list_items._rekeyed(desired, before, after, lists, (), "")]


def removed(ops: list[dict[str, Any]]) -> list[str]:
    return [op["path"] for op in ops if op["op"] == "remove"]


def test_okts_port_renumbered_beside_another_managers_port_is_the_only_one_removed() -> None:
    renumbered = {**OURS, "port": 11212}
    live = service(renumbered, METRICS)

    ops = operations(service(OURS), live, live)

    assert removed(ops) == ["/spec/ports/0"]
    assert {"op": "add", "path": "/spec/ports/-", "value": OURS} in ops


def test_okts_port_made_udp_beside_another_managers_port_is_the_only_one_removed() -> None:
    live = service(METRICS, {**OURS, "protocol": "UDP"})

    assert removed(operations(service(OURS), live, live)) == ["/spec/ports/1"]


def test_after_a_successful_apply_only_the_rekeyed_item_goes_and_nothing_is_added() -> None:
    before = service({**OURS, "port": 11212}, METRICS)
    after = service({**OURS, "port": 11212}, METRICS, OURS)

    assert operations(service(OURS), before, after) == [{"op": "remove", "path": "/spec/ports/0"}]


def test_an_item_of_another_manager_that_looks_like_none_of_okts_is_never_removed() -> None:
    live = service(METRICS)  # okt's port gone, and nothing made of it

    assert operations(service(OURS), live, service(METRICS, OURS)) == []


def test_an_item_edited_beyond_its_key_stays_and_okts_is_added_beside_it() -> None:
    """Renumbered and given another target port: not okt's port any more, as far as its fields tell."""
    edited = {**OURS, "port": 11212, "targetPort": 8080}
    before = service(edited, METRICS)

    assert operations(service(OURS), before, service(edited, METRICS, OURS)) == []


def test_refused_for_a_duplicate_the_item_holding_okts_value_in_that_field_is_removed() -> None:
    """The API server refused okt's port beside the edited one for their one name: that one goes, or okt's port could
    never come back; the other manager's port, of another name, stays."""
    edited = {**OURS, "port": 11212, "targetPort": 8080}
    live = service(METRICS, edited)

    ops = operations(service(OURS), live, live, unique={"name"})

    assert removed(ops) == ["/spec/ports/1"]
    assert {"op": "add", "path": "/spec/ports/-", "value": OURS} in ops


def test_of_two_items_that_hold_okts_fields_the_one_at_okts_index_is_removed_and_only_one() -> None:
    unnamed = {"port": 80, "protocol": "TCP"}  # no field beside its key: any port holds all it sets
    live = service({"port": 8080, "protocol": "TCP"}, {"port": 8081, "protocol": "TCP"})

    at_zero = operations(service(unnamed), live, live)
    at_one = operations(service({"port": 81, "protocol": "TCP"}, unnamed), live, live)

    assert removed(at_zero) == ["/spec/ports/0"]
    assert removed(at_one) == ["/spec/ports/1", "/spec/ports/0"]  # one for each of okt's items, the last first


def test_each_of_okts_missing_items_takes_its_own_candidate() -> None:
    first = {"name": "a", "port": 1, "protocol": "TCP"}
    second = {"name": "b", "port": 2, "protocol": "TCP"}
    live = service(METRICS, {**second, "port": 22}, {**first, "port": 11})

    ops = operations(service(first, second), live, live)

    assert removed(ops) == ["/spec/ports/2", "/spec/ports/1"]
    assert [op["value"]["name"] for op in ops if op["op"] == "add"] == ["a", "b"]


def test_an_item_not_held_before_okts_write_is_not_removed() -> None:
    """An item that came after okt's write (another manager's, made since) is not one made of okt's item."""
    before = service(METRICS)
    after = service(METRICS, OURS, {**OURS, "port": 11212})

    assert operations(service(OURS), before, after) == []


def test_a_duplicate_refusal_names_the_field_it_refuses_twice() -> None:
    exc = errors.Invalid(
        422,
        "Invalid",
        'Service "s" is invalid: spec.ports[1].name: Duplicate value: "memcached"',
        causes=[
            errors.StatusCause(list_items.DUPLICATE, 'Duplicate value: "memcached"', "spec.ports[1].name"),
            errors.StatusCause("FieldValueRequired", "Required value", "spec.ports[0].port"),
            errors.StatusCause(list_items.DUPLICATE, 'Duplicate value: "x"', "spec.hosts[2]"),
        ],
    )

    assert list_items.duplicated(exc) == frozenset({"name", "hosts"})
