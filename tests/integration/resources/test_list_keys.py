"""okt's table of keyed lists against the API server's own schema: the lists server-side apply merges by key, with
their keys, for each built-in kind of the table.

The server's OpenAPI document says how each list merges: ``x-kubernetes-list-type: map`` with its
``x-kubernetes-list-map-keys``, or, where it names no list type, the ``patchMergeKey`` of a ``merge`` patch strategy
(which server-side apply merges by too). Fields newer than the test's server are in the table and not in its schema:
they are skipped, not refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from okt.resources import list_keys
from okt.testing import envtest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def definitions(control_plane: envtest.ControlPlane) -> dict[str, Any]:
    found: dict[str, Any] = control_plane.request("GET", "/openapi/v2")["definitions"]
    return found


def definition_of(definitions: Mapping[str, Any], group: str, kind: str) -> str | None:
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if gvk.get("group") == group and gvk.get("kind") == kind:
                return name
    return None


def keys_of(prop: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The keys server-side apply merges the list ``prop`` by, or None for an atomic list (or a set of scalars)."""
    list_type = prop.get("x-kubernetes-list-type")
    if list_type is not None:
        return tuple(prop.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else None
    merge_key = prop.get("x-kubernetes-patch-merge-key")
    strategy = str(prop.get("x-kubernetes-patch-strategy") or "").split(",")
    return (merge_key,) if merge_key and "merge" in strategy else None


def keyed_lists(definitions: Mapping[str, Any], ref: str, path: tuple[str, ...] = ()) -> Iterator[Any]:
    """Each keyed list under the definition ``ref`` (outside ``metadata`` and ``status``): its path (``[]`` for an
    item) and keys."""
    for name, prop in (definitions[ref].get("properties") or {}).items():
        if name in ("metadata", "status"):
            continue
        inner = prop.get("items", {}) if prop.get("type") == "array" else prop
        if prop.get("type") == "array" and (keys := keys_of(prop)) is not None:
            yield (*path, name), keys
        if "$ref" in inner:
            step = (*path, name, "[]") if prop.get("type") == "array" else (*path, name)
            yield from keyed_lists(definitions, inner["$ref"].rpartition("/")[2], step)


def table_lists(schema: list_keys.Schema, path: tuple[str, ...] = ()) -> Iterator[Any]:
    for name, inner in schema.items():
        if isinstance(inner, list_keys.Keyed):
            yield (*path, name), inner.fields
            yield from table_lists(inner.items, (*path, name, "[]"))
        else:
            yield from table_lists(inner, (*path, name))


@pytest.mark.parametrize(("group", "kind"), list(list_keys.KINDS))
def test_the_keyed_lists_of_each_kind_are_those_the_api_server_merges_by_key(
    definitions: dict[str, Any], group: str, kind: str
) -> None:
    ref = definition_of(definitions, group, kind)
    assert ref is not None, f"{kind} of group {group!r} is not served"
    # A pod's ephemeral containers are added through its subresource only, never by a template: not in the table.
    served = {path: keys for path, keys in keyed_lists(definitions, ref) if "ephemeralContainers" not in path}
    table = dict(table_lists(list_keys.KINDS[(group, kind)]))

    assert {path: keys for path, keys in table.items() if path in served} == served
    unserved = {path for path in table if path not in served}
    assert {path[-2:] for path in unserved} <= NEWER_THAN_THE_TEST_SERVER, unserved


NEWER_THAN_THE_TEST_SERVER = {("spec", "resourceClaims"), ("spec", "schedulingGates"), ("resources", "claims")}
"""The keyed lists of the table the test's server (Kubernetes 1.20) does not serve yet, by the last two steps of their
path: a Pod's ``resourceClaims`` and ``schedulingGates``, a container's ``resources.claims``."""
