"""The store's compression: libz with the interpreter lock kept, and the zlib module's fallback, byte for byte alike."""

from __future__ import annotations

import marshal
import os
import threading

import pytest

from okt.runtime import deflate

ZDICT = marshal.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m0", "namespace": "ns"}}, 2)
SAMPLES = [
    b"",
    ZDICT,
    ZDICT.replace(b"m0", b"m1"),
    "Grüße, 日本".encode() * 40,
    os.urandom(70_000),  # incompressible, past the window and past 64 KiB
    marshal.dumps({"data": {f"k{i}": "v" * i for i in range(400)}}, 2),
]


def implementations() -> list[deflate.Dictionary]:
    found = [deflate._Module(ZDICT, 12)]
    lib = deflate._libz()
    if lib is not None:
        found.append(deflate._Locked(lib, ZDICT, 12))
    return found


def test_libz_is_used_with_the_lock_kept_where_it_is_installed() -> None:
    assert type(deflate.primed(ZDICT, 12)).__name__ == "_Locked"  # this machine has libz 1.x


@pytest.mark.parametrize("raw", SAMPLES, ids=lambda raw: f"{len(raw)}B")
def test_every_implementation_reads_what_every_other_wrote(raw: bytes) -> None:
    for writer in implementations():
        packed = writer.compress(raw)
        for reader in implementations():
            assert bytes(reader.decompress(packed)) == raw, (type(writer).__name__, type(reader).__name__)


def test_an_object_alike_the_dictionary_is_kept_in_a_fraction_of_its_size() -> None:
    alike = ZDICT.replace(b"m0", b"m7")
    for implementation in implementations():
        assert len(implementation.compress(alike)) < len(alike) // 3


@pytest.mark.parametrize("implementation", implementations(), ids=lambda i: type(i).__name__)
def test_damaged_bytes_are_refused_not_read_as_something_else(implementation: deflate.Dictionary) -> None:
    packed = bytearray(implementation.compress(ZDICT.replace(b"m0", b"m1") * 3))
    packed[-1] ^= 0x01  # the recorded length no longer matches
    with pytest.raises(ValueError, match=r"corrupt|answered"):
        implementation.decompress(bytes(packed))


def test_threads_compressing_and_reading_at_once_each_get_their_own_bytes() -> None:
    dictionary = deflate.primed(ZDICT, 12)
    failures: list[str] = []

    def work(index: int) -> None:
        for round_ in range(300):
            raw = ZDICT.replace(b"m0", f"m{index}-{round_}".encode())
            if bytes(dictionary.decompress(dictionary.compress(raw))) != raw:
                failures.append(f"{index}/{round_}")

    threads = [threading.Thread(target=work, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
