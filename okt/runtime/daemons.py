"""The daemon supervisor: one thread per (object, declared daemon), started and stopped with the object.

Why this exists: a controller turns events into reconciles; daemons (:mod:`okt.reconciler.daemons`) need the same
events turned into *lifetimes*. The supervisor is fed every event of the primary kind (after the cache's filters) and
keeps, per object uid and daemon, at most one running thread.

Guarantees:

* a daemon **starts** for every object the cache holds that is not being deleted, once the supervisor is started —
  which the controller does with its workers: once the caches are synced and, with leader election, once this
  replica leads (**never on a standby**);
* it is **asked to stop** (its ``ctx.stop`` is set) when its object is deleted, gets a deletionTimestamp, or stops
  passing the reconciler's filters (``when``, ``annotation_selector``: the cache announces those as deletions) or
  the daemon's own (``@okt.daemon(labels=..., annotations=..., when=...)``, looked at at each event: one whose
  ``when`` raises does not pass, said once per object while it keeps raising), and when the supervisor stops
  (shutdown, lost lease);
* **a kind the API server stops serving** (its CRD deleted, its version set to ``served: false``: see
  :attr:`okt.runtime.informer.Informer.served`) **or refuses okt the list or watch of** (``403``: the role lost the
  rule; see :attr:`okt.runtime.informer.Informer.refusal`) stops the work of the kind where the cache can no longer
  tell it — in the namespace whose list or watch failed, when each watched namespace has an informer of its own
  (``okt run -n a -n b``: a Role taken away in ``a`` leaves the daemons of ``b`` running), everywhere otherwise:
  :meth:`Supervisor.suspend` asks those daemons to stop, as a shutdown does (what they handed over is dropped, and
  each runs what follows its loop), and none starts there while it lasts; :meth:`Supervisor.resume`, once the list
  that answers again is in the cache (before any of its changes is told), starts one for every object the cache then
  holds there, as at the start (one that had returned on its own stays done, one the list found deleted starts none);
  what a daemon done for its object stated is kept through it, for the reconcile that removes it from the status;
* **never two at once** for one object and daemon: an object that comes back while its daemon is still stopping
  (filtered out and in again, by the reconciler's filters or the daemon's own) gets a new daemon only once the old
  thread returned;
* a daemon that **raises** (``sys.exit()`` included: it would end only the daemon's thread) is logged and started
  again after a backoff (``Options.backoff``, doubled per consecutive failure up to ``max_backoff``; a run that
  lasted ``max_backoff`` or longer before it raised starts the count over; an ``okt.TemporaryError`` raised with a
  ``delay`` is started again after that delay instead, counted as a failure all the same; the wait ends early when
  it is asked to stop); each restart is logged, the traceback only at the first failure of each distinct error (see
  :func:`_traceback_once`); one that raises once asked to stop is not restarted, and is logged as such (a warning,
  not a restart); one that **returns** on its own is done for that object (not restarted until the object
  comes back);
* a daemon's writes go through the controller's write fence, as a reconcile's do;
* what a daemon hands over for the status (:mod:`okt.reconciler.findings`) is held from its start until it is asked
  to stop (then dropped, with what it hands over afterwards); when it returns on its own, or is stopped as its object
  no longer passes its own filter (the object still reconciled), the next reconcile removes it from the status, and
  that reconcile is asked for.

* an ``async def`` daemon runs on its thread's own event loop (:mod:`okt.coroutines`; a restart after a failure
  reuses it, the thread's end closes it); asked to stop, it is given its ``cancel_after`` seconds to return on its
  own, then its task is cancelled from the watchdog's thread (``loop.call_soon_threadsafe(task.cancel)``: an
  ``asyncio.CancelledError`` raised where it awaits), logged as a cancellation, not a failure, and not restarted. Its
  thread ends once the coroutine did: a cancellation changes nothing of the other guarantees (never two at once,
  a deleted object finalized once it returned).

Caveats: a daemon that ignores its stop event cannot be killed (Python threads cannot be); once it was asked to stop
``stop_timeout`` seconds ago it is logged as stuck, once, and left behind (the threads are daemonic: they never keep
the process alive). The finalization of its deleted object waits for it all the same. An ``async def`` daemon is
cancelled, but a cancellation is raised only where it awaits: one that swallows it, or blocks its loop in a plain
call, runs on as a ``def`` daemon would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from okt import coroutines, errors, secret_values
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds
from okt.reconciler import daemons as declaration
from okt.reconciler import handler_filters, indexes
from okt.reconciler import reconciler as reconciler_mod
from okt.runtime import informer as informer_mod

_SlotKey = tuple[str, str]
"""``(uid, daemon name)``."""

Left = Callable[[], float]
"""Seconds a wait has left, asked again while it waits: a shutdown's wait may be cut short as it goes (the lease
lost meanwhile)."""
JOIN_SLICE = 0.1
"""Seconds a wait of a :data:`Left` joins a thread at a time before it asks again how long it may still wait."""


def join(thread: threading.Thread, left: Left) -> bool:
    """Wait for ``thread`` to end for as long as ``left`` says, asked again at least every :data:`JOIN_SLICE`
    seconds; returns whether it ended."""
    while thread.is_alive():
        wait = left()
        if wait <= 0:
            break
        thread.join(min(wait, JOIN_SLICE))
    return not thread.is_alive()


def fixed(timeout: float) -> Left:
    """The :data:`Left` of a wait of ``timeout`` seconds from now."""
    deadline = time.monotonic() + timeout
    return lambda: deadline - time.monotonic()


@dataclasses.dataclass
class _Slot:
    """One daemon of one object: its thread, its stop event, and whether it must run again once stopped."""

    namespace: str | None
    name: str
    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    again: bool = False
    finished: bool = False
    stop_asked: float | None = None
    """When (``time.monotonic()``) it was first asked to stop while running, for the stuck-daemon warning."""
    reported: bool = False
    task: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
    """An ``async def`` daemon's loop and task while its coroutine runs, for its cancellation."""
    cancelled: bool = False
    """Whether its task was cancelled (once asked to stop, past its ``cancel_after``)."""


class Supervisor:
    """Starts and stops the daemons of one controller's objects.

    Args:
        reconciler: the reconciler instance whose ``@okt.daemon`` methods run.
        client: the API client handed to the daemons.
        kind: the primary kind.
        read: ``read(namespace, name)`` — the object as the cache has it now.
        enqueue: ``enqueue(namespace, name)`` — ask for a reconcile of the object.
        fence: called for the write fence at each start (the controller's, set by a leader-elected manager).
        controller: the controller's name, for logs.
    """

    def __init__(
        self,
        reconciler: reconciler_mod.Reconciler,
        client: kube_client.Client,
        kind: kinds.Kind,
        *,
        read: Callable[[str | None, str], dict[str, Any] | None],
        enqueue: Callable[[str | None, str], None],
        fence: Callable[[], fence_mod.WriteFence | None] = lambda: None,
        controller: str = "",
        read_index: Callable[[str], indexes.Index] | None = None,
    ) -> None:
        self.reconciler = reconciler
        self._read_index = read_index
        self.declared = declaration.declared(type(reconciler))
        self.findings = reconciler.daemon_findings
        self.client = client
        self.kind = kind
        self._read = read
        self._enqueue = enqueue
        self._fence = fence
        self._lock = threading.Lock()
        self._slots: dict[_SlotKey, _Slot] = {}
        self._active = False
        # Where no daemon runs, and why (see suspend()): per scope of the kind's informers — a watched namespace, or
        # None for all the kind's objects — the kind not served there (a NotFound) or refused to okt (a Forbidden).
        self._suspended: dict[str | None, errors.ApiError] = {}
        self._watchdog: threading.Thread | None = None
        self._stops_asked = threading.Event()
        self._filter_errors = handler_filters.Raised()
        self._log: structlog.typing.FilteringBoundLogger = structlog.get_logger("okt.daemons").bind(
            controller=controller
        )
        self.started_total = 0
        """How many daemon threads were started (restarts after a failure are not counted: same thread)."""

    def __bool__(self) -> bool:
        return bool(self.declared)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self, objs: Iterable[Mapping[str, Any]]) -> None:
        """Begin supervising: start the daemons of ``objs`` (the cache's content) and of every later event."""
        if not self.declared:
            return
        with self._lock:
            self._active = True
            for obj in objs:
                # Read again under the lock: an object deleted since the list was taken has left the store already
                # (the store changes before its event is delivered), and a later event waits for this lock.
                meta = obj.get("metadata") or {}
                current = self._current(meta.get("namespace") or None, str(meta.get("name") or ""), meta.get("uid"))
                if current is not None:
                    self._observe_locked(informer_mod.ADDED, current)

    def halt(self) -> None:
        """Stop supervising and ask every daemon to stop (returns at once; :meth:`join` waits)."""
        with self._lock:
            self._active = False
            # Before any stop is set: what a daemon hands over once asked to stop is dropped. What was written stays
            # on the objects; the next leader's daemons state it again.
            self.findings.clear()
            for slot in self._slots.values():
                slot.again = False
                self._ask_stop(slot)

    def suspend(self, refusal: errors.ApiError, namespace: str | None = None) -> bool:
        """The cache can no longer tell the kind's objects in ``namespace`` (all of them when ``None``) as they are —
        the API server no longer serves the kind (``refusal`` a ``NotFound``) or refuses okt its list or watch there
        (a ``Forbidden``: see :meth:`okt.runtime.cache.Cache.refusal`): ask the daemons of those objects to stop, as
        :meth:`halt` does (but what a daemon done for its object stated is kept, for the reconcile that removes it),
        and start none there until :meth:`resume` of the same ``namespace`` (returns at once; True unless it was
        suspended already). ``namespace`` is the scope of the informer that failed: an operator watching
        namespaces ``a`` and ``b`` lists and watches each on its own, and a refusal in ``a`` says nothing of ``b``,
        whose daemons go on.

        The objects the cache holds there are as old as its last answer: their CRD deleted, they are gone; their
        version no longer served, or their watch refused, nothing tells what becomes of them — one deleted meanwhile
        would keep its daemon until the kind is listed again. A daemon working from them would work from that state,
        for as long as it lasts (days, a version left unserved, a rule not granted), and hand over findings no
        reconcile can write (its reads of the kind refused too)."""
        with self._lock:
            suspended = namespace in self._suspended
            self._suspended[namespace] = refusal  # resume() says what ended last
            if suspended:
                return False
            if not self._active:
                return True
            within = [
                (key, slot) for key, slot in self._slots.items() if namespace is None or slot.namespace == namespace
            ]
            running = sum(slot.thread is not None and not slot.stop.is_set() for _, slot in within)
            # What a daemon done for its object stated stays held: the reconcile that removes it from the status
            # fails while the kind cannot be read, and is retried once it can (dropped, the object's record would
            # keep it on the status for good: its daemon still declared, and done, states nothing again).
            if namespace is None:
                self.findings.clear(keep_retired=True)
            for key, slot in within:
                if namespace is not None:
                    self.findings.close(*key, keep_retired=True)
                slot.again = False
                self._ask_stop(slot)
        if running:
            self._log.info(
                "the API server refuses okt the list or watch of the kind: its daemons are asked to stop"
                if isinstance(refusal, errors.Forbidden)
                else "the API server does not serve the kind any more: its daemons are asked to stop",
                daemons=running,
                **_where(namespace),
            )
        return True

    def resume(self, objs: Iterable[Mapping[str, Any]], namespace: str | None = None) -> bool:
        """The API server serves the kind again and lets okt list and watch it in ``namespace`` (everywhere when
        ``None``), as :meth:`suspend` was told: start the daemons of ``objs`` (the cache's content there, listed
        again: call it once that list is in the store, before its changes are told) and of every later event there,
        as :meth:`start` does (True unless it was not suspended). A daemon still stopping from :meth:`suspend` is
        started again once its thread returned, unless its object is gone from ``objs``; one that had returned on its
        own stays done."""
        with self._lock:
            refusal = self._suspended.pop(namespace, None)
            if refusal is None:
                return False
            if not self._active:
                return True
            before = self.started_total
            for obj in objs:
                meta = obj.get("metadata") or {}
                current = self._current(meta.get("namespace") or None, str(meta.get("name") or ""), meta.get("uid"))
                if current is not None:
                    self._observe_locked(informer_mod.ADDED, current)
            started = self.started_total - before
        if started:
            self._log.info(
                "the API server lets okt list and watch the kind again: its daemons start again"
                if isinstance(refusal, errors.Forbidden)
                else "the API server serves the kind again: its daemons start again",
                daemons=started,
                **_where(namespace),
            )
        return True

    def join(self, timeout: float | Left) -> bool:
        """Wait up to ``timeout`` seconds (a :data:`Left`: for as long as it says) for every daemon thread to return;
        True if they all did.

        The daemons still running then are logged by name (``namespace/name: daemon``): a shutdown leaves them
        behind, and its grace period may end before their own ``stop_timeout`` warning.
        """
        left = timeout if callable(timeout) else fixed(timeout)
        with self._lock:
            threads = [
                (slot.thread, f"{slot.namespace}/{slot.name}" if slot.namespace else slot.name, key[1])
                for key, slot in self._slots.items()
                if slot.thread is not None
            ]
        for thread, _, _ in threads:
            join(thread, left)
        stuck = sorted(f"{name}: {daemon_name}" for thread, name, daemon_name in threads if thread.is_alive())
        if stuck:
            self._log.warning("daemons still running after their stop was asked", running=len(stuck), daemons=stuck)
        return not stuck

    def running(self) -> list[tuple[str | None, str, str]]:
        """The daemons running now: (namespace, name, daemon), stop asked or not."""
        with self._lock:
            return sorted(
                ((slot.namespace, slot.name, key[1]) for key, slot in self._slots.items() if slot.thread is not None),
                key=lambda item: (item[0] or "", item[1], item[2]),
            )

    def stopping(self, uid: str) -> bool:
        """Whether a daemon of the object with ``uid`` still runs (its stop asked or not).

        The controller finalizes a deleted object only once this is False: a daemon may still be using the object or
        its children, and okt's finalizer is what keeps them there (Kopf waits for its daemons the same way).
        """
        with self._lock:
            return any(key[0] == uid and slot.thread is not None for key, slot in self._slots.items())

    # -- events --------------------------------------------------------------------------------------------------

    def observe(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Start or stop the object's daemons after one event of the primary kind (after the cache's filters)."""
        if not self.declared:
            return
        with self._lock:
            retired = self._observe_locked(event_type, obj)
        if retired:
            meta = obj.get("metadata") or {}
            namespace = (meta.get("namespace") or None) if self.kind.namespaced else None
            self._enqueue(namespace, str(meta.get("name") or ""))

    def _current(self, namespace: str | None, name: str, uid: Any) -> dict[str, Any] | None:
        """The object as the cache has it now, if it is still the one with that uid."""
        obj = self._read(namespace if self.kind.namespaced else None, name)
        if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
            return None
        return obj

    # -- internals (called with the lock held) -------------------------------------------------------------------

    def _observe_locked(self, event_type: str, obj: Mapping[str, Any]) -> bool:
        """Start or stop the object's daemons; returns whether a reconcile is to remove what a daemon its object no
        longer passes the filter of stated (to be asked once the lock is released)."""
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        retired = False
        if not uid:
            return retired
        wanted = event_type != informer_mod.DELETED and not meta.get("deletionTimestamp")
        namespace = (meta.get("namespace") or None) if self.kind.namespaced else None
        name = str(meta.get("name") or "")
        if not wanted:
            self._filter_errors.forget(uid, self.declared)
        for daemon_name, options in self.declared.items():
            key = (uid, daemon_name)
            slot = self._slots.get(key)
            if wanted and self._suspends(namespace):
                continue  # the kind not served or refused there: asked to stop already, and started by resume()
            passes = wanted and self._active and self._passes(options, obj, uid, daemon_name, namespace, name)
            if passes:
                if slot is None:
                    self._launch(key, _Slot(namespace, name))
                elif slot.stop.is_set() and slot.thread is not None:
                    slot.again = True  # started anew once the stopping thread returned
            elif wanted and self._active:
                # Its object still reconciled, no longer passing the daemon's own filter: what the daemon stated
                # leaves the status with the next reconcile's write, as when it returns on its own (kept, it would
                # say for good what nothing looks at any more); what it hands over while it stops is dropped.
                retired = self.findings.retire(uid, daemon_name) or retired
                if slot is not None:
                    if slot.thread is not None and not slot.stop.is_set():
                        self._log.info(
                            "the object no longer passes the daemon's filter: it is asked to stop",
                            daemon=daemon_name,
                            namespace=namespace,
                            name=name,
                        )
                    slot.again = False
                    self._ask_stop(slot)
                    if slot.thread is None:
                        del self._slots[key]  # finished on its own: nothing to wait for
            else:
                # Gone, being deleted or filtered out by the reconciler's filters: what its daemons stated goes with it
                # (and what a stopping one still hands over is dropped).
                self.findings.close(uid, daemon_name)
                if slot is not None:
                    slot.again = False
                    self._ask_stop(slot)
                    if slot.thread is None:
                        del self._slots[key]  # finished on its own: nothing to wait for
        return retired

    def _suspends(self, namespace: str | None) -> bool:
        """Whether a suspension holds the objects of ``namespace``: one of every object, or one of that namespace."""
        return None in self._suspended or (namespace is not None and namespace in self._suspended)

    def _passes(
        self,
        options: declaration.Options,
        obj: Mapping[str, Any],
        uid: str,
        daemon: str,
        namespace: str | None,
        name: str,
    ) -> bool:
        """Whether the object passes the daemon's own filter (one that has none: True)."""
        if options.filter is None:
            return True
        log = self._log.bind(namespace=namespace, name=name)
        return self._filter_errors.passes(options.filter, obj, uid, daemon, log, "daemon")

    def _ask_stop(self, slot: _Slot) -> None:
        """Set the slot's stop event; a running daemon is watched from then on (see :meth:`_watch_stops`)."""
        slot.stop.set()
        if slot.thread is None or slot.stop_asked is not None:
            return
        slot.stop_asked = time.monotonic()
        self._watch()

    def _watch(self) -> None:
        """Have the watchdog look at the stopping daemons again (started if none runs)."""
        self._stops_asked.set()
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch_stops, name="okt-daemon-watchdog", daemon=True)
            self._watchdog.start()

    def _running(self, slot: _Slot, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        """An ``async def`` daemon's coroutine starts as ``task`` on ``loop``: one asked to stop meanwhile is
        cancelled after its ``cancel_after`` all the same."""
        with self._lock:
            slot.task = (loop, task)
            if slot.stop_asked is not None:
                self._watch()

    def _launch(self, key: _SlotKey, slot: _Slot) -> None:
        slot.thread = threading.Thread(
            target=self._run,
            args=(key, slot),
            name=f"okt-daemon-{key[1]}-{slot.name}",
            daemon=True,
        )
        self._slots[key] = slot
        self.findings.open(*key)
        self.started_total += 1
        slot.thread.start()

    def _ended(self, key: _SlotKey, slot: _Slot) -> None:
        retired = False
        with self._lock:
            slot.thread = None
            if self._slots.get(key) is not slot:
                return
            if slot.again and self._active and not self._suspends(slot.namespace):
                self._launch(key, _Slot(slot.namespace, slot.name))
            elif slot.stop.is_set():
                del self._slots[key]
                # What a daemon stopped by its own filter stated is left for the reconcile asked to remove it.
                self.findings.close(*key, keep_retired=True)
            else:
                slot.finished = True  # returned on its own: kept, so that later events do not start it again
                # Done for its object: what it stated leaves the status with the next reconcile's write.
                retired = self.findings.retire(*key)
        if retired:
            self._enqueue(slot.namespace, slot.name)

    # -- the watchdog --------------------------------------------------------------------------------------------

    def _watch_stops(self) -> None:
        """Cancel the ``async def`` daemons still running ``cancel_after`` seconds after they were asked to stop, and
        log, once each, the daemons still running ``stop_timeout`` seconds after.

        One thread per supervisor, alive only while some daemon is stopping: a stuck daemon holds its object's
        finalization, and nothing else would tell why.
        """
        while True:
            with self._lock:
                self._stops_asked.clear()
                now = time.monotonic()
                wake: float | None = None
                for (_, daemon_name), slot in self._slots.items():
                    if slot.thread is None or slot.stop_asked is None:
                        continue
                    if slot.task is not None and not slot.cancelled:
                        cancel_at = slot.stop_asked + self.declared[daemon_name].cancel_after
                        if cancel_at > now:
                            wake = cancel_at if wake is None else min(wake, cancel_at)
                        else:
                            self._cancel(slot, daemon_name)
                    if slot.reported:
                        continue
                    timeout = self.declared[daemon_name].stop_timeout
                    deadline = slot.stop_asked + timeout
                    if deadline > now:
                        wake = deadline if wake is None else min(wake, deadline)
                        continue
                    slot.reported = True
                    self._log.warning(
                        "daemon ignores its stop event",
                        daemon=daemon_name,
                        namespace=slot.namespace,
                        name=slot.name,
                        stop_timeout=timeout,
                        seconds=round(now - slot.stop_asked, 3),
                    )
                if wake is None:
                    self._watchdog = None
                    return
            self._stops_asked.wait(max(wake - now, 0.0))

    def _cancel(self, slot: _Slot, daemon_name: str) -> None:
        """Cancel an ``async def`` daemon's task from this thread: its loop raises ``CancelledError`` in it."""
        assert slot.task is not None
        loop, task = slot.task
        slot.cancelled = True
        self._log.info(
            "async daemon still running after its cancel_after: cancelled",
            daemon=daemon_name,
            namespace=slot.namespace,
            name=slot.name,
            cancel_after=self.declared[daemon_name].cancel_after,
        )
        with contextlib.suppress(RuntimeError):  # its loop closed just now: the coroutine is over
            loop.call_soon_threadsafe(task.cancel)

    # -- the daemon thread ---------------------------------------------------------------------------------------

    def _run(self, key: _SlotKey, slot: _Slot) -> None:
        uid, daemon_name = key
        options = self.declared[daemon_name]
        method = getattr(self.reconciler, daemon_name)
        log = self._log.bind(daemon=daemon_name, namespace=slot.namespace, name=slot.name)
        failures = 0
        attempt = 0
        seen: set[tuple[str, str]] = set()
        try:
            # The values of the Secrets it reads are left out of what is said of its failures (its restarts'
            # lines), from its first run to its last.
            with fence_mod.fenced(self._fence()), secret_values.held():
                while not slot.stop.is_set():
                    attempt += 1
                    ctx = declaration.DaemonContext(
                        stop=slot.stop,
                        kind=self.kind,
                        namespace=slot.namespace,
                        name=slot.name,
                        uid=uid,
                        daemon=daemon_name,
                        client=self.client,
                        log=log,
                        # A mapping of this run's own, as a reconcile's ``ctx.params`` is: a key one daemon sets
                        # must not reach the other daemons nor the reconciles through the reconciler's attribute.
                        params=dict(self.reconciler.params),
                        attempt=attempt,
                        read=lambda: self._current(slot.namespace, slot.name, uid),
                        enqueue=lambda: self._enqueue(slot.namespace, slot.name),
                        findings=self.findings,
                        read_index=self._read_index,
                    )
                    log.info("daemon started", attempt=attempt)
                    started = time.monotonic()
                    try:
                        returned = method(ctx)
                        if inspect.iscoroutine(returned):
                            try:
                                coroutines.run(returned, functools.partial(self._running, slot))
                            finally:
                                with self._lock:
                                    slot.task = None
                    except BaseException as exc:
                        # Whatever it is: a daemon's sys.exit() (SystemExit), asyncio.run() of a task cancelled
                        # (CancelledError), a KeyboardInterrupt raised by hand end only this thread — a SystemExit
                        # silently, as threading ignores it — and its object would be left without the daemon for
                        # good. Signals reach the main thread only, which runs no daemon.
                        if slot.cancelled and isinstance(exc, asyncio.CancelledError):
                            log.info("daemon cancelled once asked to stop")
                            return
                        if slot.stop.is_set():
                            # Asked to stop, it is not started again: said as what it is, not as a restart (a
                            # daemon's blocking call often fails once the stop closed what it waited on).
                            log.warning(
                                "daemon raised once asked to stop",
                                error=errors.said(exc),
                                **_traceback_once(exc, seen),
                            )
                            return
                        # A run that outlived the longest pause is not part of the failures before it: a daemon
                        # failing once a day would otherwise wait max_backoff at every restart after a few days.
                        healthy = time.monotonic() - started >= options.max_backoff
                        failures = 1 if healthy else failures + 1
                        delay = options.delay(failures)
                        if isinstance(exc, errors.TemporaryError) and exc.delay is not None:
                            # The daemon said when to try again, as a reconcile's hook does; the failures still
                            # count, so a later failure of another kind waits out the backoff they reached.
                            delay = exc.delay
                        # okt's own errors (a TemporaryError raised on purpose, an ApiError) say what happened:
                        # a warning without a traceback, as a reconcile's hook's are; anything else is a bug.
                        own = isinstance(exc, errors.OktError)
                        (log.warning if own else log.error)(
                            "daemon failed, restarting after a backoff",
                            error=errors.said(exc),
                            failures=failures,
                            delay=delay,
                            **({} if own else _traceback_once(exc, seen)),
                        )
                        slot.stop.wait(delay)
                        continue
                    log.info("daemon returned", stopped=slot.stop.is_set())
                    return
        finally:
            try:
                coroutines.close()  # what an async daemon left on its loop cancelled, on its own thread
            finally:
                self._ended(key, slot)


def _where(namespace: str | None) -> dict[str, str]:
    """What a suspension's log line says of where it holds: the namespace, when it holds there only."""
    return {} if namespace is None else {"namespace": namespace}


_SEEN_LIMIT = 64
"""Distinct errors one daemon of one object remembers having logged the traceback of (forgotten all at once past it)."""


def _traceback_once(exc: BaseException, seen: set[tuple[str, str]]) -> dict[str, Any]:
    """What a failure's log line carries of where it was raised: the traceback at the first failure of each distinct
    error (type and message) of one daemon of one object, nothing at its repeats — a daemon failing for good
    restarts every ``max_backoff`` seconds, on every object, for ever. A pydantic ``ValidationError``'s text repeats
    every input it was given (a Secret's value): its stack only."""
    said = errors.message_of(exc)
    key = (type(exc).__qualname__, said)
    if key in seen:
        return {}
    if len(seen) >= _SEEN_LIMIT:
        seen.clear()
    seen.add(key)
    return errors.where_raised(exc)
