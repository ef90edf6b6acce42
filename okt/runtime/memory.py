"""Keeping a long-running operator's resident memory close to what it holds.

Why this exists: okt's informers and workers are threads. glibc's ``malloc`` gives threads that allocate at the same
time arenas of their own (up to eight per core) and keeps what is freed in an arena for reuse instead of returning it
to the system. An operator that decoded a relist of thousands of objects, or a burst of watch events, on several
threads keeps that peak as resident memory long after the burst: measured on the memcached sample restarted over
1000 objects, a spec change on all of them left 82 MiB resident with the default arenas, 75 MiB with two. Go's
runtime (controller-runtime's) returns memory on its own; a Python process must ask.

What it does, on Linux with glibc only (elsewhere every function does nothing and says so):

* :func:`limit_arenas` — ``mallopt(M_ARENA_MAX, n)``, to be called before the threads start; it leaves an explicit
  ``MALLOC_ARENA_MAX`` in the environment alone (glibc already obeys it);
* :func:`trim` — ``malloc_trim(0)``: free pages inside the arenas and the top of the heap go back to the system;
* :class:`Trimmer` — a daemon thread that trims once the operator has gone quiet after some work (its ``busy``
  callable says whether reconciles are queued or running), at most once per ``interval``.

Caveats: arenas created before :func:`limit_arenas` stay; fewer arenas can make threads that allocate at the same
moment wait for each other, but Python threads allocate under the GIL, so that cost is nil here. Trimming walks the
arenas (a few milliseconds) and is never done while reconciles run.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the number of arenas."""

DEFAULT_ARENAS = 2
DEFAULT_INTERVAL = 5.0


def _libc() -> ctypes.CDLL | None:
    """glibc, or None where the C library is another one (musl, macOS) or cannot be loaded."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None
    return libc


_LIBC = _libc()


def available() -> bool:
    """Whether this process's ``malloc`` is glibc's (the only one these controls apply to)."""
    return _LIBC is not None


def limit_arenas(arenas: int = DEFAULT_ARENAS) -> bool:
    """Cap the number of malloc arenas (before threads start); False when not applied.

    Not applied when the C library is not glibc, or when ``MALLOC_ARENA_MAX`` is set (the operator's deployer chose).
    """
    if _LIBC is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, max(int(arenas), 1)))


def trim() -> bool:
    """Return free heap memory to the system; True when some was released."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))


class Trimmer:
    """Trims once the operator has done some work and gone quiet, at most once per ``interval`` seconds.

    Args:
        progress: a count of the work done so far (reconciles finished), which only grows.
        busy: says whether reconciles are queued or running now.
        interval: how often quietness is checked.
    """

    def __init__(
        self, progress: Callable[[], int], busy: Callable[[], bool], interval: float = DEFAULT_INTERVAL
    ) -> None:
        self._progress = progress
        self._busy = busy
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trimmed_at = 0
        self.trims = 0

    def start(self) -> None:
        """Start the thread (idempotent; nothing happens where the C library is not glibc)."""
        if _LIBC is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="okt-memory-trim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> bool:
        """Trim now if work was done since the last trim and none is going on; True when it trimmed."""
        done = self._progress()
        if done == self._trimmed_at or self._busy():
            return False
        self._trimmed_at = done
        trim()
        self.trims += 1
        return True

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()
