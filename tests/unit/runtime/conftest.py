"""A scripted stand-in for the API client's list/watch/get, so informer and cache rules are tested without a server.

``FakeApi`` keeps objects per kind like an API server would (each write bumps a global resourceVersion) and serves
each watch from a stream the test feeds explicitly: events, exceptions to raise, or the end of the stream.
"""

from __future__ import annotations

import copy
import queue
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from okt import errors
from okt.kube import kinds
from okt.runtime import packing

END = object()
ObjKey = tuple[str, str, str]


def make(kind: kinds.Kind, name: str, namespace: str | None = "ns", **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **meta}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata}


class FakeApi:
    """In-memory objects plus test-fed watch streams, answering ``list``, ``watch`` and ``get_or_none``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 100
        self.objects: dict[ObjKey, dict[str, Any]] = {}
        self.lists: list[tuple[str, str | None, str | None]] = []
        self.watches: list[tuple[str, str | None, str]] = []
        self.gets: list[tuple[str, str, str | None]] = []
        self._streams: dict[tuple[str, str | None], queue.Queue[Any]] = {}
        self.closed = threading.Event()
        self.page_failures: dict[int, BaseException] = {}
        self.list_versions: list[str | None] = []
        self.list_paged: list[bool] = []
        self.refusal: BaseException | None = None
        """While set, every list and watch raises it (a kind the server stopped serving)."""
        self.refused = 0
        self.refusal_times: int | None = None
        """How many lists and watches the refusal answers before it is lifted (None: until the test lifts it)."""
        self.served_elsewhere: list[str] = []
        """The other versions discovery says serve a kind (none: its CRD deleted)."""

    # -- what the test does ---------------------------------------------------------------------------------------

    def put(self, kind: kinds.Kind, obj: dict[str, Any]) -> dict[str, Any]:
        """Store (create or replace) an object server-side with a fresh resourceVersion; returns a copy."""
        with self._lock:
            self.version += 1
            stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}
            meta = stored["metadata"]
            self.objects[(kind.plural, meta.get("namespace") or "", meta["name"])] = stored
            return _copy(stored)

    def remove(self, kind: kinds.Kind, namespace: str | None, name: str) -> dict[str, Any]:
        with self._lock:
            self.version += 1
            gone = self.objects.pop((kind.plural, namespace or "", name))
            return {**gone, "metadata": {**gone["metadata"], "resourceVersion": str(self.version)}}

    def stream(self, kind: kinds.Kind, namespace: str | None = "ns") -> queue.Queue[Any]:
        with self._lock:
            return self._streams.setdefault((kind.plural, namespace), queue.Queue())

    def emit(self, kind: kinds.Kind, event_type: str, obj: dict[str, Any], namespace: str | None = "ns") -> None:
        self.stream(kind, namespace).put({"type": event_type, "object": _copy(obj)})

    def fail(self, kind: kinds.Kind, exc: BaseException, namespace: str | None = "ns") -> None:
        self.stream(kind, namespace).put(exc)

    def end(self, kind: kinds.Kind, namespace: str | None = "ns") -> None:
        self.stream(kind, namespace).put(END)

    def close(self) -> None:
        self.closed.set()

    # -- the client surface the runtime uses -------------------------------------------------------------------

    def require_served(
        self,
        wanted: Iterable[kinds.Kind],
        waiting: Callable[[str], object] | None = None,
        stopping: threading.Event | None = None,
    ) -> None:
        """Every kind is served here: the manager's check at start passes."""

    def versions_serving(self, kind: kinds.Kind) -> list[str]:
        return list(self.served_elsewhere)

    def list(
        self, kind: kinds.Kind, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        with self._lock:
            self.lists.append((kind.plural, namespace, label_selector))
            items = [
                _copy(obj)
                for (plural, ns, _), obj in sorted(self.objects.items())
                if plural == kind.plural and (namespace is None or ns == namespace)
            ]
            return items, str(self.version)

    def list_pages(
        self,
        kind: kinds.Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
        resource_version: str | None = None,
        paged: bool = True,
    ) -> Iterator[tuple[list[dict[str, Any]], str]]:
        """The list in pages of ``page_size`` (each with the list's resourceVersion); a failure registered in
        ``page_failures`` for a page index is raised once, instead of that page. ``paged`` is recorded in
        ``list_paged``: the pages of one answer are handed out alike."""
        self.list_versions.append(resource_version)
        self.list_paged.append(paged)
        self._refuse()
        items, version = self.list(kind, namespace, label_selector=label_selector)
        for index, start in enumerate(range(0, max(len(items), 1), page_size)):
            failure = self.page_failures.pop(index, None)
            if failure is not None:
                raise failure
            yield items[start : start + page_size], version

    def watch(
        self,
        kind: kinds.Kind,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 330.0,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        self._refuse()
        with self._lock:
            self.watches.append((kind.plural, namespace, resource_version))
        # The answer as the client hands it over, as soon as its headers came, before any event: an informer that
        # stops shuts its socket down (okt.kube.client.interrupt), which ends the stream, as the API server's does.
        interrupted = threading.Event()
        sock = types.SimpleNamespace(shutdown=lambda how: interrupted.set())
        if on_open is not None:
            on_open(types.SimpleNamespace(raw=types.SimpleNamespace(connection=types.SimpleNamespace(sock=sock))))
        stream = self.stream(kind, namespace)
        while not self.closed.is_set() and not interrupted.is_set():
            try:
                item = stream.get(timeout=0.02)
            except queue.Empty:
                continue
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _refuse(self) -> None:
        with self._lock:
            refusal = self.refusal
            if refusal is not None:
                self.refused += 1
                if self.refusal_times is not None:
                    self.refusal_times -= 1
                    if self.refusal_times <= 0:
                        self.refusal, self.refusal_times = None, None
        if refusal is not None:
            raise refusal

    def get_or_none(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self._lock:
            self.gets.append((kind.plural, name, namespace))
            found = self.objects.get((kind.plural, namespace or "", name))
            return None if found is None else _copy(found)


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)


class Recorder:
    """Collects informer events as (type, name, resourceVersion, old resourceVersion)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[str, str, str, str | None]] = []

    def __call__(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self.events.append(
                (
                    event_type,
                    obj["metadata"]["name"],
                    packing.resource_version(obj),
                    None if old is None else packing.resource_version(old),
                )
            )

    def snapshot(self) -> list[tuple[str, str, str, str | None]]:
        with self._lock:
            return list(self.events)

    def types_by_name(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for event_type, name, _, _ in self.snapshot():
            result.setdefault(name, []).append(event_type)
        return result


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi()
    yield fake
    fake.close()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def gone() -> Callable[[], errors.ApiError]:
    return lambda: errors.ApiError.from_status(410, "Expired", "too old resource version")


@pytest.fixture
def obj() -> Callable[..., dict[str, Any]]:
    """Build an object of a kind: ``obj(kind, name, namespace="ns", **metadata)``."""
    return make
