"""A list answer decoded as it streams: the same values as ``json.loads``, however the bytes are cut."""

from __future__ import annotations

import json
from typing import Any

import pytest

from okt.kube import jsonstream

LIST = {
    "kind": "ConfigMapList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "12345", "remainingItemCount": 7},
    "items": [
        {"metadata": {"name": "a", "uid": "1"}, "data": {"k": "v\u00e9\u4e2d\U0001f600", "escaped": "\\"}},
        {"metadata": {"name": "b"}, "data": {"n": "x" * 3000}, "binaryData": None},
        {"metadata": {"name": "c"}, "spec": {"replicas": 3, "ratio": -1.5e3, "on": True, "list": [1, [2, {}]]}},
    ],
}


def members(chunks: list[bytes]) -> list[tuple[str | None, Any]]:
    return list(jsonstream.list_members(chunks))


def expected(document: dict[str, Any]) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for name, value in document.items():
        if name == "items" and isinstance(value, list):
            out.extend((None, item) for item in value)
        else:
            out.append((name, value))
    return out


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1000, 10**6])
@pytest.mark.parametrize("spacing", [None, 2])
def test_every_cut_of_the_bytes_gives_what_json_loads_gives(size: int, spacing: int | None) -> None:
    data = json.dumps(LIST, indent=spacing, ensure_ascii=False).encode()

    assert members(cut(data, size)) == expected(json.loads(data))


def test_items_are_decoded_one_at_a_time_as_the_chunks_arrive() -> None:
    data = json.dumps(LIST).encode()
    read = 0

    def chunks() -> Any:
        nonlocal read
        for chunk in cut(data, 50):
            read += len(chunk)
            yield chunk

    stream = jsonstream.list_members(chunks())
    for name, _ in stream:
        if name is None:
            break
    # The first object is handed out long before the whole answer (the second object alone is 3000 bytes) is read.
    assert read < len(data) // 2


def test_a_number_cut_at_the_end_of_a_chunk_is_read_whole() -> None:
    assert members([b'{"a": 12', b'3, "items": [], "b": 4', b"5}"]) == [("a", 123), ("b", 45)]


@pytest.mark.parametrize("number", [b"1.5", b"-0.25", b"2e3", b"2E-3", b"1.5e+21"])
def test_a_number_with_a_fraction_or_an_exponent_is_read_whole_wherever_the_bytes_are_cut(number: bytes) -> None:
    """A chunk may end just after the point or the ``e``: what comes before is a number too, but not the one sent."""
    document = b'{"a": ' + number + b', "items": [' + number + b"]}"
    for at in range(1, len(document)):
        assert members([document[:at], document[at:]]) == expected(json.loads(document)), document[:at]


@pytest.mark.parametrize(
    "document, found",
    [
        (b'{"items": []}', []),
        (b'{"items": null}', [("items", None)]),
        (b"{}", []),
        (b' \n{ "metadata" : {} , "items" : [ ] } \n', [("metadata", {})]),
    ],
)
def test_empty_and_absent_items(document: bytes, found: list[tuple[str | None, Any]]) -> None:
    assert members(cut(document, 3)) == found


@pytest.mark.parametrize(
    "document",
    [
        b"",
        b'{"items": [{"a": 1}',
        b'{"items": [{"a": 1},',
        b'{"items": [{"a": 1}]',
        b'{"items": [{"a": 1}]} {"more": 1}',
        b'{"items": [{"a": 1} {"b": 2}]}',
        b'[{"a": 1}]',
        b"{1: 2}",
        b'{"a" 1}',
        b'{"a": tru}',
    ],
)
def test_a_document_cut_short_or_malformed_is_a_value_error(document: bytes) -> None:
    with pytest.raises(ValueError, match="malformed list"):
        members(cut(document, 4))


def test_bytes_that_are_not_utf8_are_a_value_error() -> None:
    with pytest.raises(ValueError):
        members([b'{"items": [{"a": "\xff"}]}'])
