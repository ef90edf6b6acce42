"""Raw deflate against one fixed dictionary, for the informer's store — with the interpreter lock kept.

Why this exists: the store keeps every object compressed against a dictionary (see ``informer.Codec``), so each read
decompresses about a hundred bytes and each stored event compresses one object. Python's ``zlib`` module releases
the GIL around every such call. That is right for megabytes and costly here: with several workers reconciling, each
release hands the interpreter to another thread, and taking it back costs far more than the (de)compression itself.
Measured on 2 cores, a restart over 3000 converged objects (no other load) spent 7.35 s of CPU with the ``zlib``
module and 6.17 s with no compression at all (median of six interleaved runs each): the difference is the handoffs,
not the work, which is a few microseconds per object. The same libz is therefore called through ``ctypes.PyDLL``,
which keeps the GIL for the length of each call.

Where libz cannot be loaded, or does not pass a round trip checked against the ``zlib`` module when the first codec
is made, the ``zlib`` module does the work instead: the same bytes, only the handoffs come back.

Format: raw deflate (no header) primed with the dictionary, then the decompressed length as 4 bytes little-endian,
so a read allocates its output once. Both implementations write and read exactly this, so either reads the other's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import struct
import zlib
from typing import Any, Protocol

_SIZE = struct.Struct("<I")
_LEVEL = 1
_MEM_LEVEL = 4
_Z_OK, _Z_STREAM_END, _Z_FINISH, _Z_DEFLATED = 0, 1, 4, 8


class Dictionary(Protocol):
    """Compress and decompress with one dictionary: ``decompress(compress(raw)) == raw``."""

    def compress(self, raw: bytes) -> bytes: ...

    def decompress(self, data: bytes) -> bytes | bytearray | ctypes.Array[ctypes.c_char]: ...


def primed(zdict: bytes, window_bits: int) -> Dictionary:
    """A :class:`Dictionary` for ``zdict`` with a window of ``2**window_bits`` bytes: libz with the GIL kept when it
    is usable here, else the ``zlib`` module."""
    lib = _libz()
    if lib is not None:
        return _Locked(lib, zdict, window_bits)
    return _Module(zdict, window_bits)


class _Module:
    """The ``zlib`` module's primed (de)compressors, copied for each call (the dictionary is hashed once)."""

    __slots__ = ("_compressor", "_decompressor")

    def __init__(self, zdict: bytes, window_bits: int) -> None:
        self._compressor: Any = zlib.compressobj(
            _LEVEL, zlib.DEFLATED, -window_bits, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, zdict
        )
        self._decompressor: Any = zlib.decompressobj(-window_bits, zdict=zdict)

    def compress(self, raw: bytes) -> bytes:
        compressor = self._compressor.copy()
        return b"".join((compressor.compress(raw), compressor.flush(), _SIZE.pack(len(raw))))

    def decompress(self, data: bytes) -> bytes:
        raw: bytes = self._decompressor.copy().decompress(memoryview(data)[: -_SIZE.size])
        if len(raw) != _SIZE.unpack_from(data, len(data) - _SIZE.size)[0]:
            raise ValueError("corrupt compressed object")
        return raw


class _ZStream(ctypes.Structure):
    """zlib's ``z_stream`` (zlib.h); ``inflateInit2_``/``deflateInit2_`` refuse a size that does not match theirs."""

    _fields_ = (
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint),
        ("total_in", ctypes.c_ulong),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint),
        ("total_out", ctypes.c_ulong),
        ("msg", ctypes.c_char_p),
        ("state", ctypes.c_void_p),
        ("zalloc", ctypes.c_void_p),
        ("zfree", ctypes.c_void_p),
        ("opaque", ctypes.c_void_p),
        ("data_type", ctypes.c_int),
        ("adler", ctypes.c_ulong),
        ("reserved", ctypes.c_ulong),
    )


class _Libz:
    """The libz functions the store needs, called with the GIL held (``ctypes.PyDLL``)."""

    def __init__(self, library: str) -> None:
        dll = ctypes.PyDLL(library)
        stream, size, uint, ulong = ctypes.POINTER(_ZStream), ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        version = dll.zlibVersion
        version.restype = ctypes.c_char_p
        self.version: bytes = version()
        self.deflate_init = self._function(
            dll.deflateInit2_, stream, size, size, size, size, size, ctypes.c_char_p, size
        )
        self.deflate_dictionary = self._function(dll.deflateSetDictionary, stream, ctypes.c_char_p, uint)
        self.deflate_copy = self._function(dll.deflateCopy, stream, stream)
        self.deflate_bound = self._function(dll.deflateBound, stream, ulong, restype=ulong)
        self.deflate = self._function(dll.deflate, stream, size)
        self.deflate_end = self._function(dll.deflateEnd, stream)
        self.inflate_init = self._function(dll.inflateInit2_, stream, size, ctypes.c_char_p, size)
        self.inflate_dictionary = self._function(dll.inflateSetDictionary, stream, ctypes.c_char_p, uint)
        self.inflate = self._function(dll.inflate, stream, size)
        self.inflate_end = self._function(dll.inflateEnd, stream)

    @staticmethod
    def _function(function: Any, *argtypes: Any, restype: Any = ctypes.c_int) -> Any:
        function.argtypes = argtypes
        function.restype = restype
        return function


class _Locked:
    """libz through ``ctypes.PyDLL``: each call keeps the GIL. A compression copies a stream primed with the
    dictionary (as the ``zlib`` module's ``copy()`` does); a decompression sets the dictionary on a fresh stream
    (a copy into its window, no hashing)."""

    __slots__ = ("_lib", "_primed", "_window_bits", "_zdict")

    def __init__(self, lib: _Libz, zdict: bytes, window_bits: int) -> None:
        self._lib, self._zdict, self._window_bits = lib, zdict, window_bits
        self._primed = _ZStream()
        self._check(
            lib.deflate_init(
                ctypes.byref(self._primed),
                _LEVEL,
                _Z_DEFLATED,
                -window_bits,
                _MEM_LEVEL,
                0,
                lib.version,
                ctypes.sizeof(_ZStream),
            ),
            "deflateInit2_",
        )
        self._check(lib.deflate_dictionary(ctypes.byref(self._primed), zdict, len(zdict)), "deflateSetDictionary")

    def __del__(self) -> None:
        primed_stream = getattr(self, "_primed", None)
        if primed_stream is not None and primed_stream.state:
            self._lib.deflate_end(ctypes.byref(primed_stream))

    def compress(self, raw: bytes) -> bytes:
        lib, stream = self._lib, _ZStream()
        ref = ctypes.byref(stream)
        self._check(lib.deflate_copy(ref, ctypes.byref(self._primed)), "deflateCopy")
        try:
            bound = lib.deflate_bound(ref, len(raw))
            out = ctypes.create_string_buffer(bound + _SIZE.size)
            source = ctypes.c_char_p(raw)  # the bytes' own buffer, kept alive by ``raw``
            stream.next_in, stream.avail_in = ctypes.cast(source, ctypes.c_void_p).value, len(raw)
            stream.next_out, stream.avail_out = ctypes.addressof(out), bound
            self._check(lib.deflate(ref, _Z_FINISH), "deflate", _Z_STREAM_END)
            written = stream.total_out
        finally:
            lib.deflate_end(ref)
        _SIZE.pack_into(out, written, len(raw))
        return ctypes.string_at(out, written + _SIZE.size)

    def decompress(self, data: bytes) -> ctypes.Array[ctypes.c_char]:
        lib, stream = self._lib, _ZStream()
        ref = ctypes.byref(stream)
        size = _SIZE.unpack_from(data, len(data) - _SIZE.size)[0]
        self._check(lib.inflate_init(ref, -self._window_bits, lib.version, ctypes.sizeof(_ZStream)), "inflateInit2_")
        try:
            self._check(lib.inflate_dictionary(ref, self._zdict, len(self._zdict)), "inflateSetDictionary")
            out = ctypes.create_string_buffer(size)
            source = ctypes.c_char_p(data)
            stream.next_in, stream.avail_in = ctypes.cast(source, ctypes.c_void_p).value, len(data) - _SIZE.size
            stream.next_out, stream.avail_out = ctypes.addressof(out), size
            self._check(lib.inflate(ref, _Z_FINISH), "inflate", _Z_STREAM_END)
            if stream.total_out != size:
                raise ValueError("corrupt compressed object")
        finally:
            lib.inflate_end(ref)
        return out

    @staticmethod
    def _check(code: int, call: str, expected: int = _Z_OK) -> None:
        if code == -4:  # Z_MEM_ERROR
            raise MemoryError(f"libz {call}: out of memory")
        if code != expected:
            raise ValueError(f"libz {call} answered {code}")


@functools.cache
def _libz() -> _Libz | None:
    """libz, loaded once, if it is there and round-trips with the ``zlib`` module; else None."""
    name = ctypes.util.find_library("z")
    if name is None:
        return None
    try:
        lib = _Libz(name)
        if not lib.version.startswith(b"1."):
            return None
        zdict = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}' * 3
        sample = zdict.replace(b'"a"', b'"b"') * 2 + bytes(range(256))
        locked, module = _Locked(lib, zdict, 12), _Module(zdict, 12)
        if (
            bytes(locked.decompress(module.compress(sample))) != sample
            or module.decompress(locked.compress(sample)) != sample
        ):
            return None
    except (OSError, AttributeError, ValueError, MemoryError):
        return None
    return lib
