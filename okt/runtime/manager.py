"""The manager: one process running one or more controllers, with probes, metrics, leader election and a clean exit.

Why this exists: ``okt run`` (and a benchmark, and an end-to-end test) needs one object that owns everything a running
operator has — the shared cache, a controller per reconciler, the metrics and probe server, the leader elector — and
starts and stops it in the right order.

Start order: the probe server; the cache and every controller's watches (a standby keeps warm caches, so a failover does
not relist); then, once the caches are synced — and, with leader election, once this replica leads — the workers.
Without leader election, a watched kind whose list or watch the API server refuses (``403``: the role lacks the rule,
the permission check skipped) or does not serve keeps only the controllers watching it from starting: once every other
cache is synced, the others start (a read of the refused kind fails, saying so), and the kind, with the rule to grant,
is logged once as a warning and named in ``/readyz``'s body (not ready until it syncs). With leader election a replica
competes for the lease only once its caches are synced (a **warm standby**): the replica that leads can reconcile at
once, and one whose caches cannot sync never takes the lease from one that could.

Guarantees:

* :meth:`Manager.run` blocks until :meth:`Manager.stop`, SIGTERM or SIGINT (handlers are installed only when running
  on the main thread, and restored afterwards); a second SIGTERM or SIGINT once the shutdown began ends it at once
  with ``SystemExit(1)``, in-flight reconciles not waited for; :meth:`Manager.start` / :meth:`Manager.stop` /
  :meth:`Manager.join` are the non-blocking spelling;
* with leader election, **no reconcile's write leaves the process unless it holds the lease**: reconciles run under
  :func:`okt.kube.fence.fenced`, which asks the elector before every write and refuses from the moment the last
  renewal is older than the renew deadline — before another process can acquire the lease — so in-flight reconciles
  of a deposed leader send nothing more (their writes fail with ``okt.NotLeader``);
* a **graceful shutdown** stops every queue and asks every daemon to stop first (no new reconcile starts), waits for
  in-flight reconciles and daemons up to ``grace_period`` seconds, runs the clean-up hooks within what is left of
  it (:mod:`okt.runtime.cleanup`: one that hangs is left running, the later ones not started), releases the lease,
  stops the informers and closes the probe server; what still runs past the grace period (a reconcile, a daemon that
  ignores its stop, a start-up or a clean-up hook) is logged and named in :attr:`Manager.left_running`, and a
  clean-up hook that raised in :attr:`Manager.failed_cleanups` (``okt run`` then exits non-zero: the stop was not
  clean); before the release, no write of a reconcile, daemon or clean-up hook leaves any
  more and those already on the wire — an exec until its command ended, a call to the operand until it answered —
  are waited for (up to the client's request timeout): one not answered by then, or one that ended without an answer,
  may still reach its target, and the lease is left to expire instead of being released;
* a standby never reconciles and queues nothing (its queue depth is 0: an alert on it fires on no standby); once
  it leads, every object of its warm caches is queued at once; **losing the lease** stops the workers and the whole
  manager (:attr:`Manager.lost_leadership` tells the caller, who should exit non-zero and be restarted; lost while a
  shutdown was under way, it is said all the same), its reconciles and daemons waited for no longer than half the
  time left, at the loss, before another replica may take the lease (:meth:`LeaderElector.others_wait`), so that the
  caller's exit ends what still runs before the next leader starts its own daemons — a graceful shutdown's wait too
  (the lease is renewed while it waits), cut short from the moment the lease is lost;
* ``/healthz`` is ``200`` from :meth:`start` until shutdown begins, while the webhook server (if any) serves (not
  while each connection it can serve at once is held by a review past its request timeout, its hook still running),
  every worker started still runs, and no controller has had every worker on one reconcile for more than
  ``stuck_after`` seconds (a **watchdog** of the workers' progress: a reconcile that never returns, on every worker,
  reconciles nothing any more, and only a restart frees them), and no controller's mapping thread has been on one
  event of a watched kind for more than ``mapping_stuck_after`` seconds (a ``watches`` mapping that never returns maps
  nothing more, and during the start keeps the workers from starting: a watchdog of its own, shorter, since a
  mapping is quick where a reconcile may rightly take minutes);
  ``/readyz`` is ``200`` while ``/healthz`` is, once the start-up hooks returned (``503`` naming the hook while one's
  retry waits) and every cache is synced and — with leader election — this replica
  leads or is a healthy standby; a watched kind the API server stops serving afterwards (its CRD deleted, or its
  version no longer served: the informer lists it again with backoff), or starts refusing okt (``403``: the role
  lost the rule), leaves it ``200``, its body naming the kind (the refused one with the rule to grant) until it is
  back (``okt_kind_served`` is 0 for an unserved one meanwhile): the pod still serves every other kind, and its
  webhooks; a manager serving a **conversion** webhook is ready as soon as it is healthy (its body noting
  :data:`CACHES_SYNCING` until the caches sync): listing a kind stored in another version waits for that webhook,
  which its Service calls on ready pods only;
* with ``tune_memory`` (the default) the process's malloc arenas are capped before any thread starts and freed memory
  is returned to the system once a burst of reconciles is over (:mod:`okt.runtime.memory`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import re
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, TypeGuard

import structlog

from okt import delays, errors, hooks
from okt.kube import client as kube_client
from okt.kube import fence as fence_mod
from okt.kube import kinds, selectors
from okt.reconciler import core
from okt.reconciler import reconciler as reconciler_mod
from okt.reconciler import webhooks as webhooks_mod
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import cleanup as cleanup_mod
from okt.runtime import controller as controller_mod
from okt.runtime import leader as leader_mod
from okt.runtime import memory, probe_server, startup
from okt.runtime import metrics as metrics_mod
from okt.runtime import probes as probes_mod
from okt.status import bookkeeping, writer

if TYPE_CHECKING:  # imported when served: its certificates need cryptography, ~8 MiB an operator without
    from okt.runtime import webhook_server  # webhooks should not carry

DEFAULT_GRACE_PERIOD = 30.0
DEFAULT_STUCK_AFTER = 600.0
"""Seconds every worker of a controller may spend on the reconciles they run before ``/healthz`` fails: a reconcile
may rightly wait long (a backup, a rollout it drives step by step)."""
DEFAULT_MAPPING_STUCK_AFTER = 120.0
"""Seconds a controller's mapping thread may spend on one event of a watched kind before ``/healthz`` fails. A
mapping names the primaries an object concerns, from the cache or a request or two (each given at most 30 s,
:data:`okt.kube.client.DEFAULT_TIMEOUT`), on the controller's one mapping thread: while it runs, no later change of
any watched object reaches a primary, so it waited as long as a reconcile may (:data:`DEFAULT_STUCK_AFTER`, 10
minutes) before the restart that frees it."""
CACHES_SYNCING = "caches not synced yet"
"""The note of a ready ``/readyz`` (``200 ok (caches not synced yet)``) whose caches are still filling: the operator
serves a conversion webhook, which the sync may wait for (see :meth:`Manager.readiness`)."""
_SYNC_POLL = 0.2
_LEASE_NAME_MAX = 63

_log = structlog.get_logger("okt.manager")


def default_identity() -> str:
    """A leader-election identity unique to this process: the host name plus a random suffix."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:10]}"


def default_lease_name(controller_names: Sequence[str]) -> str:
    """A valid Lease name derived from the controllers' names (hashed when too long)."""
    raw = "okt-" + "-".join(sorted(controller_names))
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    if len(name) > _LEASE_NAME_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = f"{name[: _LEASE_NAME_MAX - 11].rstrip('-')}-{digest}"
    return name


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)  # a bool is an int to Python: True would be 1


def _check_counts_and_seconds(
    max_concurrent: int,
    stuck_afters: Mapping[str, float | None],
    grace_period: float,
    resync: float | None,
    lease_timing: tuple[float, float, float],
) -> None:
    # Each refused here, in one line, before anything starts: a str failed inside a comparison (a TypeError that
    # named no argument), True was one worker, and the lease's timing and resync were refused only once start()
    # had run the start-up hooks and bound the probes, a negative or NaN grace period never at all. Seconds are
    # checked as every delay of okt is (okt.delays): an int past a float's range is a long wait, not an
    # OverflowError out of the check.
    if not _is_int(max_concurrent) or max_concurrent < 1:
        raise ValueError(f"max_concurrent must be an int >= 1, got {max_concurrent!r}")
    # An infinite stuck_after is taken (okt run's --stuck-after inf): a watchdog that never fires, as None.
    for name, after in stuck_afters.items():
        if after is not None and not (delays.is_number(after) and after > 0):
            raise ValueError(f"{name} must be a number of seconds > 0, or None, got {delays.said(after)}")
    if not delays.is_seconds(grace_period, zero=True):
        raise ValueError(f"grace_period must be a finite number of seconds >= 0, got {delays.said(grace_period)}")
    if resync is not None and not delays.is_seconds(resync):
        raise ValueError(f"resync must be a finite number of seconds > 0, or None, got {delays.said(resync)}")
    leader_mod.check_timing(*lease_timing)


class Manager:
    """Runs reconcilers: cache, controllers, workers, probes, metrics and (optionally) leader election.

    Args:
        client: the shared API client.
        reconcilers: the :class:`okt.Reconciler` subclasses to run, one controller each.
        namespaces: the namespaces to watch; ``None`` for all.
        label_selector: only primary objects matching it are reconciled.
        max_concurrent: workers per controller (a reconciler's own ``max_concurrent`` wins).
        leader_elect: compete for a Lease and reconcile only while holding it.
        lease_namespace: the Lease's namespace.
        lease_name: the Lease's name; derived from the controllers' names when ``None``.
        metrics_bind: ``"host:port"`` of the metrics and probe server, ``"0"`` to disable it.
        metrics_listener: a socket bound to ``metrics_bind`` already (:func:`okt.runtime.probe_server.listen`), which
            the server takes over: okt run binds it before it says anything, so that a port in use is its one line;
            or a :class:`okt.runtime.probe_server.ProbeServer` serving it already, which answers this manager's
            metrics and probes from its start (:meth:`~okt.runtime.probe_server.ProbeServer.serve`), and is closed
            at its shutdown: okt run's answers the probes while it waits for the API server. ``metrics_bind`` still
            names the address (its host, as given, is a name ``/metrics``'s own certificate holds).
        metrics_secure: on an address other than loopback, serve ``/metrics`` over TLS to a bearer token the API
            server authenticates and allows to ``get /metrics`` (see :func:`okt.runtime.probe_server.protection`); False
            serves it plain to anyone there too. The probes are open either way.
        metrics_cert_dir: the folder of ``/metrics``'s certificate (``tls.crt``, ``tls.key``), read again when it
            is rotated; a self-signed one when ``None``.
        identity: the leader-election identity, unique per process (a second process given the same one waits for
            the first one's lease to run out); host name plus a random suffix when ``None``.
        grace_period: how long a shutdown waits for in-flight reconciles and for the daemons, then for the clean-up
            hooks (in what is left of it), in seconds (capped at :data:`okt.delays.LONGEST_WAIT`).
        stuck_after: ``/healthz`` fails once every worker of a controller has been on the reconcile it runs for more
            than this many seconds; ``None``: never.
        mapping_stuck_after: ``/healthz`` fails once a controller's mapping thread has been on one event of a
            watched kind for more than this many seconds (a mapping is quick, a reconcile may not be:
            :data:`DEFAULT_MAPPING_STUCK_AFTER`); ``None``: never.
        reconcile: the reconcile function (tests and benchmarks may pass their own).
        lease_duration: see :class:`okt.runtime.leader.LeaderElector`.
        renew_deadline: see :class:`okt.runtime.leader.LeaderElector`.
        retry_period: see :class:`okt.runtime.leader.LeaderElector`.
        resync: re-announce every cached object every ``resync`` seconds (``None``: never; capped at
            :data:`okt.delays.LONGEST_WAIT`).
        backoff: the per-key backoff of failed reconciles.
        tune_memory: cap malloc's arenas and trim the heap after bursts of work (glibc only; the manager is then
            the process's owner of memory settings — pass False when embedding it in a process that tunes its own).
        probes: the operator's own probes by name (``@okt.probe``: :mod:`okt.runtime.probes`), whose values
            ``/healthz`` adds to its JSON answer.
        webhooks: serve the reconcilers' admission and conversion webhooks (:mod:`okt.reconciler.webhooks`) this
            way, on every replica, leader or not; None: none are served. Nothing is served when no reconciler
            declares one. The server is :attr:`webhook_server` once started. Admission judges only the objects of
            ``namespaces`` and ``label_selector``, and admits the others untouched.

    Raises:
        ValueError: no reconciler; ``max_concurrent`` is no int >= 1; ``stuck_after``, ``mapping_stuck_after``,
            ``grace_period`` or
            ``resync`` is no finite number of seconds (> 0, >= 0 and > 0, or None where None is taken); the lease's
            timing breaks ``lease_duration > renew_deadline > retry_period > 0`` (whether or not ``leader_elect``);
            ``metrics_bind`` is no ``HOST:PORT``.
        okt.errors.ConfigurationError: ``label_selector`` is one the API server cannot read (every list and watch
            would be refused, and retried for ever).
        TypeError: a hook of ``on_startup`` or ``on_cleanup`` is an async generator (it would be called, never
            iterated); a probe is not callable, is an async generator or needs an argument (an ``async def`` hook or
            probe is awaited: :mod:`okt.coroutines`).
        ValueError: a probe's name is empty, not printable or has spaces around it.
    """

    _start_up_waits: str | None = None
    """What the start waits for while a start-up hook's retry waits: ``/readyz``'s reason meanwhile."""
    _start_up_calls: str | None = None
    """The start-up hook called last: the one a shutdown past its grace period leaves running."""
    _helpers: tuple[threading.Thread, ...] = ()
    """The manager's own threads (beginning the work, the campaign), which the shutdown waits for."""
    _lost_by: float | None = None
    """When (``time.monotonic()``) a shutdown stops waiting for reconciles and daemons once the lease was lost:
    half-way to the moment another replica may take it, from the loss (see :meth:`_grace_left`)."""

    def __init__(
        self,
        client: kube_client.Client,
        reconcilers: Sequence[type[reconciler_mod.Reconciler]],
        *,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        max_concurrent: int = 4,
        leader_elect: bool = False,
        lease_namespace: str = "default",
        lease_name: str | None = None,
        metrics_bind: str = "127.0.0.1:8080",
        metrics_listener: socket.socket | probe_server.ProbeServer | None = None,
        metrics_secure: bool = True,
        metrics_cert_dir: str | None = None,
        identity: str | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        stuck_after: float | None = DEFAULT_STUCK_AFTER,
        mapping_stuck_after: float | None = DEFAULT_MAPPING_STUCK_AFTER,
        reconcile: controller_mod.ReconcileFunction = core.reconcile,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        resync: float | None = None,
        backoff: backoff_mod.Backoff | None = None,
        tune_memory: bool = True,
        on_startup: Sequence[hooks.StartupHook] = (),
        on_cleanup: Sequence[hooks.CleanupHook] = (),
        probes: Mapping[str, hooks.Probe] | None = None,
        webhooks: webhook_server.Options | None = None,
    ) -> None:
        if not reconcilers:
            raise ValueError("a manager needs at least one reconciler")
        _check_counts_and_seconds(
            max_concurrent,
            {"stuck_after": stuck_after, "mapping_stuck_after": mapping_stuck_after},
            grace_period,
            resync,
            (lease_duration, renew_deadline, retry_period),
        )
        try:
            selectors.matcher(label_selector)
        except ValueError as exc:
            raise errors.ConfigurationError(str(exc)) from None
        self.client = client
        self.reconcilers = tuple(reconcilers)
        self.namespaces = tuple(namespaces) if namespaces else None
        self.label_selector = label_selector
        self.max_concurrent = max_concurrent
        self.leader_elect = leader_elect
        self.lease_namespace = lease_namespace
        self.lease_name = lease_name or default_lease_name([r.controller_name() for r in self.reconcilers])
        self.identity = identity or default_identity()
        # Capped as every schedule and time limit is (okt.delays): a thread given a longer wait ends on OverflowError.
        self.grace_period = delays.capped(grace_period, delays.LONGEST_WAIT)
        # Only compared with how long the workers, and the mapping threads, stalled: no wait, no cap.
        self.stuck_after, self.mapping_stuck_after = stuck_after, mapping_stuck_after
        self._bind, self._metrics_listener = probe_server.parse_bind(metrics_bind), metrics_listener
        self._metrics_protection = (metrics_secure, metrics_cert_dir)
        self._reconcile = reconcile
        self._lease_timing = (lease_duration, renew_deadline, retry_period)
        self._resync = None if resync is None else delays.capped(resync, delays.LONGEST_WAIT)
        self._backoff = backoff
        self._tune_memory = tune_memory
        for each in (on_startup, on_cleanup):
            for hook in each:
                hooks.check_callable(hook)
        self._on_startup, self._on_cleanup = tuple(on_startup), tuple(on_cleanup)
        self._probes = probes_mod.Probes(probes or {})
        self._started_up = self._assembled = self._start_failed = False
        self.trimmer: memory.Trimmer | None = None
        self.metrics = metrics_mod.Metrics()
        self.metrics.watch_client(client)
        self.cache: cache_mod.Cache | None = None
        self.controllers: list[controller_mod.Controller] = []
        self.elector: leader_mod.LeaderElector | None = None
        # The reconciles' and daemons' write fence with leader election, and the clean-up hooks' (open on a standby
        # too: they are about the process), closed once a hook is left running: both closed before the lease is
        # released, and their writes on the wire waited for. The start-up hooks' is closed when one is left running
        # (the lease is not competed for before they all returned).
        self._fence, self._cleanup_fence, self._start_up_fence = (
            fence_mod.Fence(self._write_fence, self._write_time_left),
            fence_mod.Fence(lambda verb, resource: None),
            fence_mod.Fence(lambda verb, resource: None),
        )
        # A server given serving the port is the manager's to close, however its start ends.
        self.probes = metrics_listener if isinstance(metrics_listener, probe_server.ProbeServer) else None
        self._webhooks = webhooks
        self.webhook_server: webhook_server.WebhookServer | None = None
        self._serves_conversion = False
        # Re-entrant: SIGTERM's handler calls stop() on the main thread, which may hold it then (in start()).
        self._lock = threading.RLock()
        self._started = self._lost = False
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        # Cleared while start() runs: the shutdown waits for it (a start-up hook, a discovery request cannot be
        # interrupted), so that what the start makes is there for the shutdown to end. The start makes each thing
        # under _start_lock, once it saw no stop asked: the shutdown, taking it after the wait, has seen all it made.
        self._start_ended = threading.Event()
        self._start_ended.set()
        self._start_lock, self._helpers_lock = threading.Lock(), threading.Lock()
        # Set once the start-up hooks returned, or once the shutdown left one running past its grace period, under
        # _start_up_lock: whichever comes first decides, and the start goes on at once.
        self._start_up_over, self._start_up_lock, self._working = threading.Event(), threading.Lock(), threading.Event()
        self._left_running: list[str] = []
        self._failed_cleanups: list[str] = []

    # -- state ---------------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Started, and no shutdown begun."""
        return self._started and not self._stopping.is_set()

    @property
    def working(self) -> bool:
        """Whether the workers were started (caches synced and, with leader election, leading)."""
        return self._working.is_set()

    @property
    def lost_leadership(self) -> bool:
        """Whether the manager stopped because it lost the lease."""
        return self._lost

    @property
    def left_running(self) -> tuple[str, ...]:
        """What the shutdown left running past its grace period (empty: a clean stop): reconciles counted per
        controller, daemons by name (``namespace/name: daemon``), a start-up or clean-up hook by name (``the start-up
        hook NAME``, ``the clean-up hook NAME``). Python cannot kill a thread: they end with the process, wherever
        they are."""
        return tuple(self._left_running)

    @property
    def failed_cleanups(self) -> tuple[str, ...]:
        """The clean-up hooks of the shutdown that raised (empty: none did), each ``the clean-up hook NAME failed:
        ERROR`` (the error as okt logs one): what they were to undo may not be undone, and ``okt run`` exits
        non-zero. A hook the shutdown left running (:attr:`left_running`) that raises later is added when it does,
        after :meth:`join` returned: the exit status was non-zero already for leaving it, but its failure is not
        lost (it is logged once, as the others are)."""
        return tuple(self._failed_cleanups)

    def health(self) -> tuple[bool, str]:
        """``/healthz``: ok while running, while the webhook server (if any) serves, while every worker started
        still runs, and while no controller has had every worker on one reconcile for more than ``stuck_after``
        seconds, or its mapping thread on one event of a watched kind for more than ``mapping_stuck_after`` (a call
        without a timeout, a deadlock: the controller reconciles nothing any more, or no change of a watched object
        reaches its primaries).

        A webhook server whose thread ended, or a worker (on a fault of okt's own: a reconcile that raises is
        retried, its worker goes on), comes back only with the process: the liveness probe restarts it.
        Readiness alone would take the pod out of its Service's endpoints for good, one replica fewer until
        something else restarted it.
        """
        if not self._started:
            return False, "not started"
        if self._stopping.is_set():
            return False, "shutting down"
        if self.webhook_server is not None and self.webhook_server.stalled:
            return False, (
                "the webhook server accepts no connection: every one it serves at once is held by a review past its "
                "timeout (a check, default or converter that does not return)"
            )
        if self.webhook_server is not None and not self.webhook_server.serving:
            return False, "the webhook server is not serving"
        for controller in self.controllers:
            ended = controller.workers_ended
            if ended:
                return False, f"{ended} of {controller.workers} workers of the controller {controller.name} ended"
            stuck = None if self.stuck_after is None else controller.stuck(self.stuck_after)
            if stuck is None and self.mapping_stuck_after is not None:
                stuck = controller.mapping_stuck(self.mapping_stuck_after)
            if stuck is not None:
                return False, stuck
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        """``/readyz``: healthy (:meth:`health`: the webhook server, if any, serving), caches synced and, with leader
        election, leading or a healthy standby — but an operator serving a **conversion** webhook is ready once
        healthy, its caches synced or not, and its lease reached or not.

        Returns ``(ready, reason)``; ready with a reason other than ``"ok"`` names the watched kinds the API server
        stopped serving, or refusing okt (``403``, with the rule to grant), after the caches synced, or, with a
        conversion webhook, what the pod still waits for
        (:data:`CACHES_SYNCING`, the lease); caches the API server keeps from syncing, refusing a kind's list or watch
        or not serving the kind, are named with the rule to grant (:meth:`okt.runtime.cache.Cache.refusal`). Readiness
        says whether this pod can serve: a kind gone from the API (its CRD deleted, its version no longer served) leaves
        every other kind reconciled and every webhook served, and a pod taken out of its Service's endpoints for it
        would refuse the webhooks of every kind, perhaps the conversion webhook the CRD needs to be served again.
        """
        healthy, reason = self.health()
        if not healthy:
            return False, reason
        # The API server calls the conversion webhook to list a kind whose objects are stored in a version other
        # than the one asked for (after a CRD version upgrade): the sync may wait for this very pod, which a Service
        # routes to only once it is ready. Its webhook server serving is what makes it ready then, as in
        # controller-runtime, whose readiness waits for no cache. Admission is never needed to list: without a
        # conversion webhook, ready keeps meaning synced (no admission sent to a pod that cannot judge yet).
        converting = self._serves_conversion
        # Until start() has started every watch and made the elector, the informers synced so far are not all there
        # will be: the cache's "every informer synced" says nothing yet (of no informer at all, it holds).
        waits = self._start_up_waits
        if waits is not None and not self._started_up:
            return converting, waits
        if self.cache is None or not self._assembled or not self.cache.synced:
            # A kind the API server refuses syncs only once someone grants the rule: say which, and what to grant.
            blocked = "; ".join(str(refusal) for _, refusal in self.cache.blocked()) if self.cache else ""
            if converting:
                return True, f"{CACHES_SYNCING}: {blocked}" if blocked else CACHES_SYNCING
            return False, f"caches not synced: {blocked}" if blocked else "caches not synced"
        # Reached only once synced: a campaign starts then, and its first lease request must not take a converting
        # pod out of its endpoints for a moment.
        if self.elector is not None and not (self.elector.is_leader or self.elector.healthy):
            # With what its last request failed with: a 403 is no outage, and names the rule to grant.
            unreached, failure = "leader election cannot reach the lease", self.elector.failure
            return converting, f"{unreached}: {failure}" if failure else unreached
        unserved = self.cache.unserved()
        notes = [str(refusal) for _, refusal in self.cache.refused()]
        if unserved:
            named = ", ".join(f"{kind.kind} in {kind.api_version}" for kind in unserved)
            notes.insert(0, f"the API server does not serve {named} any more")
        return True, "; ".join(notes) if notes else "ok"

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def _probe_server(self, address: tuple[str, int]) -> tuple[probe_server.ProbeServer, Callable[[], None]]:
        """The metrics and probe server on ``address`` (on the socket bound to it when given one, or the server given
        serving it), ``/metrics`` protected there as asked; and what makes it serve this manager's metrics and probes
        (a server given goes on answering as it did until then)."""
        secure, cert_dir = self._metrics_protection
        tls, reviewer = probe_server.protection(address, self.client, secure=secure, cert_dir=cert_dir)
        answers = (self.metrics, self.health, self.readiness)
        given = self._metrics_listener
        if isinstance(given, probe_server.ProbeServer):
            return given, lambda: given.serve(*answers, tls=tls, reviewer=reviewer, probes=self._probes.report)
        server = probe_server.ProbeServer(
            given or address, *answers, tls=tls, reviewer=reviewer, probes=self._probes.report
        )
        return server, server.start

    def start(self) -> None:
        """Start everything and return (workers follow once caches are synced and, if asked, leading). A start that
        fails has shut down what it started when it raises (up to ``grace_period``). It returns once the start-up
        hooks have: one that raises ``okt.TemporaryError`` is retried (:mod:`okt.runtime.startup`), the operator not
        ready meanwhile; a stop asked then ends the start, nothing watched, and it returns once the hook running
        returned, or once the shutdown left it running past its grace period (:attr:`left_running`).

        Raises:
            RuntimeError: the manager was already started, or stopped.
            okt.errors.ApiError: a reconciler's kind cannot be resolved (discovery), or the server does not serve it.
            okt.errors.ConfigurationError: two reconcilers of different kinds declare the same ``cluster_operator``,
                two of one kind keep their records in the same place, or two have the same controller name; a kind
                named as kubectl names it that discovery does not know; a start-up hook raised anything but an
                ``okt.TemporaryError``, or reached the limits of its retries (the error names it, the hook's exception
                as its cause); the probes', metrics' or webhooks' address cannot be bound, or their certificate files
                cannot be read.
        """
        with self._lock:
            if self._started or self._stopping.is_set():
                raise RuntimeError("a manager starts once, and never after stop()")
            self._started = True
            self._start_ended.clear()
        try:
            self._assemble()
        except BaseException:
            # Shut down before raising: the caller reports the failure at once (okt run prints one line), when
            # nothing of this start may still be running or logging.
            self._start_failed = True
            self._start_ended.set()
            self.stop()
            self.join(self.grace_period)
            raise
        finally:
            self._start_ended.set()

    def _assemble(self) -> None:
        """What :meth:`start` starts, in order; it returns as soon as it sees a stop asked, before the next step: the
        shutdown, which waits for it, ends what was started so far, and nothing is started after it."""
        if self._tune_memory:
            memory.limit_arenas()  # before this manager starts any thread
        with self._start_lock:
            if self._stopping.is_set():
                return
            # Both ports bound before either is served: a webhook port another process holds was found once the
            # probes were served, and said so above the one line of the error.
            serve_probes = None
            if self._bind is not None:
                self.probes, serve_probes = self._probe_server(self._bind)
            if self._webhooks is not None and webhooks_mod.all_endpoints(self.reconcilers):
                from okt.reconciler import admission
                from okt.runtime import webhook_server

                # Admission judges what this manager reconciles: another release may serve other namespaces.
                scope = admission.Scope(frozenset(self.namespaces or ()), self.label_selector)
                self.webhook_server = webhook_server.WebhookServer(
                    self._webhooks, self.reconcilers, self.client, scope, self.metrics
                )
            if serve_probes is not None:
                serve_probes()
            if self.webhook_server is not None:
                self.webhook_server.start()
                self._serves_conversion = any(
                    e.purpose is webhooks_mod.Purpose.CONVERSION for e in webhooks_mod.all_endpoints(self.reconcilers)
                )
        if not self._run_start_up_hooks():
            return  # stopped while a start-up hook ran or its retry waited: the shutdown ends what was started
        cache = cache_mod.Cache(self.client, self.namespaces, self.label_selector, resync=self._resync)
        with self._start_lock:
            if self._stopping.is_set():
                return
            self.cache = cache  # /readyz says not synced while the controllers are built (discovery may take seconds)
        controllers = [
            controller_mod.Controller(
                reconciler_cls,
                self.client,
                cache,
                workers=self.max_concurrent,
                reconcile=self._reconcile,
                metrics=self.metrics,
                backoff=self._backoff,
                standby=self.leader_elect,
            )
            for reconciler_cls in self.reconcilers
        ]
        _check_cluster_operators(controllers)
        _check_records(controllers)
        _check_names(controllers)
        with self._start_lock:
            if self._stopping.is_set():
                return
            self.controllers = controllers
        # Some kinds are addressed without asking discovery: Kubernetes' own from okt's table, written for current
        # servers, and custom ones declared with their plural (or as an okt.Kind). One the server does not serve
        # (CronJob in batch/v1 on Kubernetes 1.20, a CRD not installed or of another version) stops the start here,
        # as a kind discovery cannot find does, instead of an informer listing it in vain for ever.
        self.client.require_served(
            (
                kind
                for controller in controllers
                for kind in (controller.kind, *controller.owned, *(related for related, _ in controller.related))
            ),
            waiting=_log.info,
            stopping=self._stopping,  # a stop asked meanwhile: no more discovery, a wait for a CRD being loaded ends
        )
        for controller in controllers:
            # Before any kind is started: another controller may own this one's primary kind and start it first.
            if controller.reconciler_cls.applies_status():
                cache.keep_status_owners(controller.kind)
            owners = controller.field_owners
            if owners is not None:
                for kind in controller.owned:
                    cache.keep_field_owners(kind, owners)
        with self._start_lock:
            # A stop asked during the discovery above: nothing is watched (the stopped cache would refuse it).
            if self._stopping.is_set():
                return
            for controller in controllers:
                controller.watch()
            if self.leader_elect:
                duration, deadline, retry = self._lease_timing
                self.elector = leader_mod.LeaderElector(
                    self.client,
                    self.lease_namespace,
                    self.lease_name,
                    self.identity,
                    lease_duration=duration,
                    renew_deadline=deadline,
                    retry_period=retry,
                    on_started_leading=self._begin_in_background,
                    on_stopped_leading=self._on_stopped_leading,
                )
                for controller in controllers:
                    controller.write_fence = self._fence
                self.metrics.track_leader(self.lease_name, lambda: self.elector is not None and self.elector.is_leader)
                self._helper(self._campaign, "okt-manager-campaign")
            else:
                self._begin_in_background()
            self._assembled = True
        _log.info(
            "manager started",
            controllers=[c.name for c in controllers],
            namespaces=list(self.namespaces) if self.namespaces else "all",
            leader_elect=self.leader_elect,
            identity=self.identity if self.leader_elect else None,
        )

    def stop(self) -> None:
        """Begin a graceful shutdown and return at once (idempotent); :meth:`join` waits for its end."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
        threading.Thread(target=self._shutdown, name="okt-manager-shutdown", daemon=True).start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until a shutdown completed; False on timeout."""
        return self._stopped.wait(timeout)

    def run(self) -> None:
        """Start, block until stopped (``stop()``, SIGTERM, SIGINT, or a lost lease), shut down gracefully."""
        with self._signals():
            self.start()
            # Short waits keep the main thread responsive to signals.
            stopping = False
            while not stopping:
                stopping = self._stopping.wait(0.5)
            self.join()

    # -- internals -----------------------------------------------------------------------------------------------

    def _retrying_start_up(self, waits: str | None) -> None:
        self._start_up_waits = waits

    def _run_start_up_hooks(self) -> bool:
        """Run the start-up hooks on a thread of their own, behind their fence; whether the start goes on (False: a
        stop was asked before they all returned, or while the last one ran). The shutdown waits for them, as for the
        whole start (:attr:`_start_ended`): a stop asked while one runs must not have its shutdown over, the clean-up
        hooks skipped, before the start goes on. Past its grace period it leaves the hook running
        (:meth:`_leave_start_up_hook`) and this returns at once: on ``okt run``'s main thread, a hook that hung held
        the exit for as long as it ran, and the exit status was 0."""
        outcome: list[bool | BaseException] = []

        def run() -> None:
            result: bool | BaseException = False
            try:
                with fence_mod.fenced(self._start_up_fence, errors.WriteRefused):
                    result = startup.run(
                        self._on_startup,
                        self.client,
                        stopping=self._stopping,
                        backoff=self._backoff or backoff_mod.Backoff(),
                        retrying=self._retrying_start_up,
                        calling=self._calling_start_up,
                    )
            except BaseException as exc:  # raised where the start runs, as it was when the hooks ran there
                result = exc
            finally:
                with self._start_up_lock:
                    if not self._start_up_over.is_set():  # else left running: what it did is not the start's
                        outcome.append(result)
                        self._start_up_over.set()

        # In a copy of the start's context, as they ran in it (a caller's structlog context, say).
        threading.Thread(target=contextvars.copy_context().run, args=(run,), name="okt-startup", daemon=True).start()
        self._start_up_over.wait()
        if outcome and isinstance(outcome[0], BaseException):
            raise outcome[0]
        # Every hook returned: the clean-up hooks undo what they did, whether or not the start goes on. (No lock:
        # SIGTERM's handler, which takes it, may run on this very thread.)
        self._started_up = outcome == [True]
        return self._started_up and not self._stopping.is_set()

    def _calling_start_up(self, name: str) -> None:
        self._start_up_calls = name

    def _leave_start_up_hook(self) -> bool:
        """Leave the start-up hook still running past the shutdown's grace period running (Python cannot interrupt
        it): named in :attr:`left_running`, its later writes refused, the start going on at once, which calls no other
        hook and starts nothing more; whether one was left (not once the hooks returned)."""
        with self._start_up_lock:
            if self._start_up_over.is_set() or self._start_up_calls is None:
                return False
            self._start_up_over.set()
        self._start_up_fence.close(startup.LEFT_RUNNING)
        self._left_running.append(f"the start-up hook {self._start_up_calls}")
        _log.error(
            "a start-up hook still runs after the grace period: it is left running, its writes refused, and the "
            "clean-up hooks are not run",
            hook=self._start_up_calls,
        )
        return True

    def _begin_in_background(self) -> None:
        self._helper(self._begin, "okt-manager-begin")

    def _helper(self, target: Callable[[], None], name: str) -> None:
        """Run ``target`` on a thread of the manager's own, which the shutdown waits for (:meth:`_join_helpers`)."""
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._helpers_lock:
            self._helpers = (*self._helpers, thread)
            thread.start()

    def _join_helpers(self, started: float) -> None:
        """Wait, up to the grace left, for the manager's own threads: each returns once it sees the stop (within
        :data:`_SYNC_POLL`), or, beginning the work, once it started the workers it had seen no stop for."""
        with self._helpers_lock:
            helpers = list(self._helpers)
        for thread in helpers:
            if thread is not threading.current_thread():
                thread.join(self._grace_left(started))

    def _begin(self) -> None:
        """Start each controller's workers once its kinds are synced and no other first list is under way; the
        controllers reading a kind the API server refuses (or does not serve) wait for it, the others reconcile."""
        assert self.cache is not None
        waiting = list(self.controllers)
        told: set[str] = set()
        while waiting:
            synced = self.cache.wait_for_sync(_SYNC_POLL)
            if not synced and self.cache.settled():
                self._tell_blocked(told)  # before the others start: the warning says why some do not
            with self._lock:
                if self._stopping.is_set():
                    return
                if synced:
                    starting, waiting = waiting, []
                elif self.cache.settled():
                    # A read of a refused kind fails, saying why, and no other kind is half listed: a controller
                    # whose own kinds are synced reads nothing it cannot trust.
                    starting = [c for c in waiting if all(self.cache.progress(k)[1]() for k in _kinds_of(c))]
                    waiting = [c for c in waiting if c not in starting]
                else:
                    starting = []
                for controller in starting:
                    controller.start_workers()
                if starting and self._tune_memory and self.trimmer is None:
                    self.trimmer = memory.Trimmer(self._reconciled, self._busy)
                    self.trimmer.start()
                if not waiting:
                    self._working.set()
            if starting and waiting:
                _log.info("reconciling, some caches not synced", controllers=[c.name for c in starting])
            if waiting:
                self._tell_blocked(told)
        _log.info("caches synced, reconciling")

    def _tell_blocked(self, told: set[str]) -> None:
        """Log once, as a warning, each watched kind whose cache the API server keeps from syncing, with the rule
        to grant and the controllers waiting for it."""
        assert self.cache is not None
        for kind, refusal in self.cache.blocked():
            if str(kind) in told:
                continue
            told.add(str(kind))
            _log.warning(
                "a watched kind's cache cannot sync: the controllers reading it wait until the API server lets okt "
                "list and watch it",
                kind=f"{kind.kind} ({kind.api_version})",
                error=str(refusal),
                controllers=[
                    c.name
                    for c in self.controllers
                    if any((k.api_version, k.kind) == (kind.api_version, kind.kind) for k in _kinds_of(c))
                ],
            )

    def _campaign(self) -> None:
        """Compete for the lease once the caches are synced (never after a shutdown began)."""
        assert self.cache is not None and self.elector is not None
        told: set[str] = set()
        while not self.cache.wait_for_sync(_SYNC_POLL):
            if self._stopping.is_set():
                return
            self._tell_blocked(told)
        with self._lock:
            if self._stopping.is_set():
                return
            self.elector.start()
        _log.info("caches synced, competing for the lease", lease=f"{self.lease_namespace}/{self.lease_name}")

    def _reconciled(self) -> int:
        return sum(controller.processed for controller in self.controllers)

    def _busy(self) -> bool:
        return any(len(controller.queue) or controller.in_flight for controller in self.controllers)

    def _write_fence(self, verb: str, resource: str) -> str | None:
        """Why a reconcile's write may not leave the process now (None: it may)."""
        if self.elector is None or self.elector.may_write():
            return None
        return "this process does not hold the leader lease" + (" (lost)" if self.elector.lost else "")

    def _write_time_left(self) -> float | None:
        """How long a reconcile's write let through now may wait for its answer (None: no bound, no election)."""
        return self.elector.write_time_left() if self.elector is not None else None

    def _writes_settled(self) -> bool:
        """Close the write fences (the reconciles' and daemons', the clean-up hooks') and wait, up to the client's
        request timeout each, for the writes they let through to end; whether the lease may be released. A reconcile
        or a clean-up hook still running past the grace period may have a write on the wire: released at once, the
        lease would let a standby write before the API server received it."""
        fences = (self._fence, self._cleanup_fence)
        for fence in fences:
            fence.close("this process is shutting down")
        if all(fence.settle(self.client.timeout) for fence in fences):
            return True
        _log.warning(
            "writes may still reach the API server: the lease is not released, the others wait for it to expire",
            in_flight=sum(fence.in_flight for fence in fences),
            waited=self.client.timeout,
        )
        return False

    def _on_stopped_leading(self) -> None:
        # Called for a release too (by the shutdown, which began it): only a loss is one.
        if self.elector is None or not self.elector.lost:
            return
        others_wait = self.elector.others_wait()
        self._lost_by = time.monotonic() + others_wait / 2
        self._lost = True  # during a shutdown too: the caller exits non-zero all the same
        if self._stopping.is_set():
            # A SIGTERM's shutdown waiting for its reconciles and daemons: its wait is cut as a lost lease's is.
            _log.error(
                "leadership lost during the shutdown: reconciles and daemons still running end with the process",
                waiting_at_most=round(others_wait / 2, 3),
            )
            return
        _log.error("leadership lost, stopping")
        self.stop()

    def _shutdown(self) -> None:
        started = time.monotonic()
        try:
            # Past the grace period a start-up hook is left running; another step (a discovery request) sees the stop
            # once it returns.
            if not self._start_ended.wait(self._grace_left(started)) and not self._leave_start_up_hook():
                _log.warning("the start still runs past the grace period: it starts nothing more")
            with self._start_lock:
                pass  # from here on the start sees the stop before each step: whatever it started is here to end
            self._join_helpers(started)
            for controller in self.controllers:
                controller.queue.shutdown()
                # Every daemon is asked now, before any controller waits: a slow one must not keep another
                # controller's daemons running (after a lost lease, beside the new leader's).
                controller.daemons.halt()
            for controller in self.controllers:
                self._left_running.extend(controller.shutdown(lambda: self._grace_left(started)))
            if self._started_up:
                self._left_running.extend(
                    cleanup_mod.run(
                        self._on_cleanup,
                        left=lambda: self._grace_left(started),
                        fence=self._cleanup_fence,
                        failed=self._failed_cleanups.append,
                    )
                )
            if self.trimmer is not None:
                self.trimmer.stop()
            if self.elector is not None:
                self.elector.stop(release=not self._lost and self._writes_settled())
            self._join_helpers(started)  # a lease taken as the elector stopped began the work
            if self.cache is not None:
                # Its informers waited for: one whose list was answered after the stop watches nothing.
                self.cache.stop(lambda: self._grace_left(started))
            if self.probes is not None:
                self.probes.stop()
            if self.webhook_server is not None:
                self.webhook_server.stop()
        finally:
            # Logged before join() returns: its caller may print at once (okt run's one-line error), and a line still
            # being written from this thread would run into it.
            try:
                said: dict[str, object] = {"left_running": self._left_running} if self._left_running else {}
                if self._failed_cleanups:
                    # A copy: a clean-up hook left running may add its failure while the line is written.
                    said["failed_cleanups"] = list(self._failed_cleanups)
                # After a start that failed, with nothing more to say, the caller's error is all there is to say:
                # okt run's one line of a port in use had this one above it.
                log = _log.debug if self._start_failed and not said else _log.info
                log("manager stopped", seconds=round(time.monotonic() - started, 3), lost_leadership=self._lost, **said)
            finally:
                self._stopped.set()

    def _grace_left(self, started: float) -> float:
        """Seconds the shutdown begun at ``started`` still waits for reconciles and daemons, asked again as it waits:
        what is left of the grace period, and once the lease is lost — before the shutdown or while it waits — no
        more than half the time that was left, at the loss, before another replica may take it (the other half for
        this process to end; none when another holder took it): a daemon still running then ends with the process
        rather than run beside the one the next leader starts for its object."""
        now = time.monotonic()
        left = max(self.grace_period - (now - started), 0.0)
        lost_by = self._lost_by
        if lost_by is not None:
            left = min(left, max(lost_by - now, 0.0))
        return left

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            if self._stopping.is_set():
                # As controller-runtime: the one who asks again does not want to wait for the grace period.
                _log.warning("second signal received, exiting at once", signal=signal.Signals(signum).name)
                raise SystemExit(1)
            _log.info("signal received, shutting down", signal=signal.Signals(signum).name)
            self.stop()

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _kinds_of(controller: controller_mod.Controller) -> list[kinds.Kind]:
    """The kinds a controller watches, and so reads from the cache."""
    return [controller.kind, *controller.owned, *(kind for kind, _ in controller.related)]


def _check_cluster_operators(controllers: Sequence[controller_mod.Controller]) -> None:
    """Refuse two reconcilers of different kinds that declare the same ``cluster_operator`` name.

    Each reconcile mirrors the custom resources of its own kind only (:mod:`okt.reconciler.cluster_operator` reads
    them from its reader): with two kinds on one ClusterOperator, each reconcile would overwrite the other kind's
    conditions and related objects, and a Degraded kind would no longer show. The kinds are compared once resolved,
    so two spellings of one kind (``"deploy"``, ``"apps/v1 Deployment"``) share a name freely.
    """
    first: dict[str, controller_mod.Controller] = {}
    for controller in controllers:
        name = controller.reconciler_cls.cluster_operator
        if not name:
            continue
        other = first.setdefault(name, controller)
        if (other.kind.group, other.kind.kind) != (controller.kind.group, controller.kind.kind):
            raise errors.ConfigurationError(
                f"{other.reconciler_cls.__name__} ({other.kind.api_version} {other.kind.kind}) and "
                f"{controller.reconciler_cls.__name__} ({controller.kind.api_version} {controller.kind.kind}) both "
                f"declare cluster_operator = {name!r}: each would overwrite the other kind's status there; give "
                "each its own ClusterOperator name"
            )


def _record_places(reconciler_cls: type[reconciler_mod.Reconciler]) -> list[str]:
    """Where a reconciler keeps its records on a primary: okt's labels and annotations (its error count, lifecycle
    phase, and conditions when they go to annotations) under its prefix, and under its legacy prefixes, whose
    records it takes over and removes; the status's conditions and ``status.okt`` whoever writes them."""
    places = [f"prefix {p!r}" for p in (reconciler_cls.prefix, *reconciler_cls.legacy_prefixes)]
    if reconciler_cls.status_target() is writer.Target.STATUS:
        places.append("status.conditions")
    if reconciler_cls.bookkeeping_persistence() is bookkeeping.Persistence.STATUS:
        places.append(f"status.{bookkeeping.STATUS_FIELD}")
    return places


def _check_records(controllers: Sequence[controller_mod.Controller]) -> None:
    """Refuse two reconcilers of one kind that keep their records in the same place.

    Whatever splits the objects between them (``when()``, filters), an object both select, or one that moves from one
    to the other, would carry the error count, lifecycle phase and conditions of both in one place, each overwriting
    the other's: Degraded turning True after someone else's failures, a phase another lifecycle moved. The kinds are
    compared once resolved, so two versions or spellings of one kind are one kind.
    """
    first: dict[tuple[str, str], controller_mod.Controller] = {}
    for controller in controllers:
        other = first.setdefault((controller.kind.group, controller.kind.kind), controller)
        if other is controller:
            continue
        mine = _record_places(controller.reconciler_cls)
        shared = next((place for place in _record_places(other.reconciler_cls) if place in mine), None)
        if shared is not None:
            group = f" ({controller.kind.group})" if controller.kind.group else ""
            raise errors.ConfigurationError(
                f"{other.reconciler_cls.__name__} and {controller.reconciler_cls.__name__} both reconcile "
                f"{controller.kind.kind}{group} and keep their records in the same place ({shared}): each would "
                "overwrite the other's error count, lifecycle phase and conditions; run one, or give each its own "
                'prefix with status = "annotations" and persistence = okt.Persistence.ANNOTATIONS'
            )


def _check_names(controllers: Sequence[controller_mod.Controller]) -> None:
    """Refuse two reconcilers with the same controller name.

    The name labels the controller's metrics (``controller``, the work queue's ``name``), its logs and the source of
    its Events, and names its webhooks' paths and its indexes in the shared cache: under one name, two controllers
    would be counted and logged as one (each one's queue depth and workers gauges overwriting the other's), one's
    webhooks replaced by the other's, and the second's index lookups answered from the first's index of that name.
    Two reconcilers of one kind get the same default name (the kind, lowercased); a default name derived from the
    others run beside it would rename a controller, on its dashboards, the day a second one is added, so the author
    names one instead. Names are compared once the kinds are resolved (``"deploy"`` is named ``deployment``).
    """
    first: dict[str, controller_mod.Controller] = {}
    for controller in controllers:
        other = first.setdefault(controller.name, controller)
        if other is controller:
            continue
        defaulted = controller.reconciler_cls.name is None and other.reconciler_cls.name is None
        raise errors.ConfigurationError(
            f"{other.reconciler_cls.__name__} and {controller.reconciler_cls.__name__} are both named "
            f"{controller.name!r}{' (by default: the kind, lowercased)' if defaulted else ''}: their metrics, logs, "
            "Events, webhook paths and cache indexes would be one controller's; set name on one of them"
        )
