"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that only one replica of an operator reconciles.

Why this exists: an operator is deployed with several replicas for availability, but two replicas reconciling the
same objects would fight over them. The replicas race for one Lease object; the holder renews it every
``retry_period`` seconds, the others watch it expire. This is client-go's algorithm, with its defaults (15 s / 10 s /
2 s) and its safety rule: a leader that could not renew for ``renew_deadline`` seconds stops leading *before* the
lease can expire for the others (``renew_deadline < lease_duration``).

Guarantees:

* the Lease is created when missing — unless it was last seen held by another candidate and that record has not run
  out yet on this clock: a Lease deleted by hand is not known to its leader until its next renewal (which creates it
  again), and it may write until then; a 409 on create or update means another candidate won the race;
* a lease is taken only when it is already ours or has run out — "ours" is a record this elector wrote
  (identities are unique per process: a lease held under this identity by a record it did not write is another
  process's, waited out as any other holder's, and a leader that finds one is deposed); expiry is judged on
  **this** process's clock (:func:`clock`, which goes on while the machine sleeps) from the moment the lease's
  record last changed (never by comparing clocks across machines), for the duration the record says — no
  shorter, for a held record, than this elector's own ``lease_duration`` or the duration its holder wrote in the
  record before (a duration shortened by hand is not known to the leader, which writes until its renew deadline);
  an emptied lease (no holder) runs out as any other: a release says 1 s, a holder emptied by hand keeps its
  leader's duration, and the leader that finds its lease emptied stops writing at once; a candidate tries again at
  the moment the lease it watches runs out when that comes before its next try (:func:`candidate_wait`);
* a leader that finds the lease held by another candidate stops leading — and writing — at once (that candidate
  may be writing already), without waiting for its renew deadline; one whose renewal is refused as a conflict
  (someone else wrote the lease since it read it) stops writing until it has read the lease again, at once;
* every update carries the resourceVersion read just before (optimistic concurrency): two candidates can never both
  believe they won;
* each API call is bounded to ``lease_duration - renew_deadline`` seconds, and a leader's renewals end at its renew
  deadline (client-go renews in a context that ends there): a leader whose renewals hang stops leading then, not a
  request timeout and a retry period later, past the point where another candidate may take over; none waits at the
  client's rate limit (``okt run --qps``) behind the workers' requests, which would make a leader under load miss its
  renew deadline;
* ``on_started_leading`` is called once when leadership is acquired, ``on_stopped_leading`` once when it is lost or
  released; both on the elector's thread (keep them short);
* :meth:`LeaderElector.release` (called by :meth:`LeaderElector.stop`) stops competing, empties ``holderIdentity``
  and sets ``leaseDurationSeconds`` to 1, so a standby takes over about a second after it sees the release instead
  of waiting for expiry — only when the lease still holds a record this elector wrote (its identity is not enough:
  another process given the same one may have taken the lease since), by an update that carries the resourceVersion
  of that read (a write in between makes it a 409);
* once stopped, the elector sends no write of the lease (create, take, renew): each write looks at the stop under the
  elector's lock right before it leaves, so a stop that comes between a read of the lease and its write ends the
  attempt; a write already on the wire may still take the lease, which the elector does not lead on and releases once
  its answer comes (when the stop asked for a release; otherwise it runs out).

Caveats: a candidate that never saw the Lease (one started right after it was deleted by hand) creates a missing one
at once, as client-go's does, and the leader may write until its renewals find the lease taken. Once leadership is
lost the elector does not run for it again (as controller-runtime, the process is expected to stop and be
restarted); a new :class:`LeaderElector` can be started.
"""

from __future__ import annotations

import datetime
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from okt import delays, errors
from okt.kube import client as kube_client
from okt.kube import kinds

_JITTER = random.Random()
"""okt's own source of jitter: drawing from the module-level generator would move the state of every other
user of it (a seeded simulation, a property-based test) from a background thread."""

#: Spread of the retry period, as client-go's ``JitterFactor``.
JITTER = 1.2
EXPIRY_MARGIN = 0.05
"""Seconds past the moment another holder's lease runs out (on this clock) at which a candidate tries again."""
LEAST_TIMEOUT = 0.05
"""Seconds a request of a renewal is given at the least, however close its renew deadline."""

_log = structlog.get_logger(__name__)


def candidate_wait(retry: float, until_expiry: float | None) -> float:
    """How long a candidate waits before its next try: ``retry`` (the jittered retry period), or, when the holder's
    lease runs out sooner (``until_expiry`` seconds from now on this process's clock), just past that moment.

    Expiry is judged by the same rule either way (the leader has stopped writing ``lease_duration - renew_deadline``
    seconds before); only the wait is shorter: a standby tries when the lease runs out rather than up to a jittered
    retry period later."""
    if until_expiry is not None and 0.0 <= until_expiry < retry:
        return until_expiry + EXPIRY_MARGIN
    return retry


def micro_time(moment: datetime.datetime | None = None) -> str:
    """A Kubernetes ``MicroTime`` string (RFC 3339 with microseconds, UTC)."""
    moment = moment or datetime.datetime.now(datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)


def clock() -> float:
    """Seconds on the clock the elector measures its lease with: one that goes on while the machine sleeps
    (``CLOCK_BOOTTIME`` on Linux), where the monotonic clock stops. A leader whose machine was suspended (a laptop, a
    VM paused or migrated) must find, on waking, that its last renewal is as old as it is for the others, who took the
    lease meanwhile; with the monotonic clock it would have judged it fresh and written beside the new leader. Where
    there is no such clock, the monotonic one."""
    if _BOOTTIME is not None:
        return time.clock_gettime(_BOOTTIME)
    return time.monotonic()


def _duration(value: object, default: float) -> float:
    """A lease's ``leaseDurationSeconds`` in seconds; ``default`` when it is missing or no positive number."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return default


LONGEST_LEASE = 2**31 - 1
"""The longest ``lease_duration``, in seconds: the Lease's ``leaseDurationSeconds`` is an int32 (about 68 years), and
a longer one would be refused by the API server at every write of the lease."""


def check_timing(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """Refuse durations that break ``lease_duration > renew_deadline > retry_period > 0`` or are no finite numbers of
    seconds (:func:`okt.delays.is_seconds`: a bool is none; an infinite ``lease_duration`` cannot be written into the
    Lease), or a ``lease_duration`` longer than :data:`LONGEST_LEASE` — refused rather than capped: capped, it could
    end equal to the renew deadline it must exceed. The two others are then shorter than any wait's limit.

    Raises:
        ValueError: one line naming the three values.
    """
    values = (lease_duration, renew_deadline, retry_period)
    if not (all(delays.is_seconds(v) for v in values) and lease_duration > renew_deadline > retry_period):
        raise ValueError(
            "need finite numbers of seconds, lease_duration > renew_deadline > retry_period > 0, got "
            f"{', '.join(delays.said(v) for v in values)}"
        )
    if lease_duration > LONGEST_LEASE:
        raise ValueError(
            f"lease_duration must be at most {LONGEST_LEASE} seconds (the Lease's leaseDurationSeconds is an int32), "
            f"got {delays.said(lease_duration)}"
        )


def _record(spec: dict[str, Any]) -> tuple[str, str, str]:
    """The record a Lease's ``spec`` holds — its holder, renewTime and acquireTime —, which tells one write of the
    lease from another: the holder alone does not tell two processes given the same identity apart."""
    return (
        spec.get("holderIdentity") or "",
        str(spec.get("renewTime") or ""),
        str(spec.get("acquireTime") or ""),
    )


class _Stopped(Exception):
    """A write of the lease not sent: the elector is stopped."""


class LeaderElector:
    """Compete for, hold and release one Lease.

    Args:
        client: the API client.
        namespace: the Lease's namespace.
        name: the Lease's name.
        identity: this candidate's unique identity (host name plus something unique per process).
        lease_duration: how long a non-renewed lease stays valid for the others, in seconds.
        renew_deadline: how long the leader keeps trying to renew before it gives leadership up.
        retry_period: the wait between tries (jittered up to ``JITTER`` times more).
        on_started_leading: called when this candidate becomes the leader.
        on_stopped_leading: called when it stops being the leader (lost or released).
        clock: the seconds the lease is measured on (:func:`clock`; tests drive their own — the waits still use real
            time).

    Raises:
        ValueError: the durations break ``lease_duration > renew_deadline > retry_period > 0`` (see
            :func:`check_timing`).
    """

    def __init__(
        self,
        client: kube_client.Client,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        *,
        clock: Callable[[], float] = clock,
    ) -> None:
        check_timing(lease_duration, renew_deadline, retry_period)
        if not identity:
            raise ValueError("identity must not be empty")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._request_timeout = max(lease_duration - renew_deadline, 1.0)
        self._lease_seconds = max(math.ceil(lease_duration), 1)  # the API field is whole seconds
        self._lock = threading.Lock()
        self._leading = False
        # Set under the lock: each write of the lease looks at it under the lock right before it is sent.
        self._stop = threading.Event()
        # A write of the lease is on the wire (sent, not answered), and whether the stop that came meanwhile asked for
        # the lease to be released: the elector's thread then releases it once the write's answer came.
        self._writing = False
        self._release_after_write = False
        self._thread: threading.Thread | None = None
        # What the lease said when we last saw it change, and when (on :func:`clock`): the basis of expiry.
        self._observed: tuple[str, str, str] | None = None
        # The records (holder, renewTime, acquireTime) the lease may hold from our own writes: the last one answered,
        # and those sent since without an answer. A lease held under our identity with another record was written by
        # another process.
        self._ours: tuple[tuple[str, str, str], ...] = ()
        self._observed_at = 0.0
        self._observed_duration = lease_duration
        self._observed_published = lease_duration
        self._last_contact = 0.0
        self._lost = False
        self._renewed_at = 0.0
        # A renewal was refused as a conflict: someone else wrote the lease since we read it, and may hold it now.
        self._contested = False
        # Attempts failed in a row, and what the last one said: a repeat is said at debug level (the elector's thread
        # only, no lock).
        self._failures = 0
        self._failure_said = ""
        self._log = _log.bind(lease=f"{namespace}/{name}", identity=identity)

    # -- state ---------------------------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this process leads now: it won the lease, its last renewal is younger than the renew deadline, and
        no renewal was refused as a conflict since — exactly when :meth:`may_write` lets writes through. What
        ``leader_election_master_status`` exports: after a conflict the process does not know that it leads (someone
        else wrote the lease, and may hold it) and writes nothing, so the gauge says 0 until a renewal that reads the
        lease again succeeds. (client-go's gauge says 1 until the renew deadline whatever the renewals meet: its
        leader writes on meanwhile, okt's does not, and the gauge says what the process does.)"""
        with self._lock:
            return self._leads_locked(self._clock())

    @property
    def lost(self) -> bool:
        """Whether leadership was held and then lost (not released)."""
        with self._lock:
            return self._lost

    def may_write(self) -> bool:
        """Whether this process may write now: it leads (:attr:`is_leader`): its last renewal is younger than the renew
        deadline, counted from when the renewal was sent — the others may have seen it from then on, and no renewal
        was refused as a conflict since.

        The second half does not wait for the elector's thread to notice a failed renewal (it may be stuck in a
        request): past the deadline, another process may acquire the lease soon, so writes stop at once. A conflict
        says someone else wrote the lease since it was read, and may hold it now: writes stop until a renewal that
        reads it again succeeds (the next attempt comes at once).
        """
        with self._lock:
            return self._leads_locked(self._clock())

    def write_time_left(self) -> float:
        """Seconds this process may still write, from now: until its renew deadline, counted from its last renewal as
        :meth:`may_write` counts it (0 when it may not write). A write let through now ends by then — its wait for
        its answer cut to this — so that none is still on its way when another replica may take the lease, which
        comes ``lease_duration - renew_deadline`` seconds later at the soonest."""
        with self._lock:
            now = self._clock()
            if not self._leads_locked(now):
                return 0.0
            return self.renew_deadline - (now - self._renewed_at)

    def _leads_locked(self, now: float) -> bool:
        """Whether this process leads at ``now`` (on the elector's clock): the one judgment :attr:`is_leader`,
        :meth:`may_write` and :meth:`write_time_left` read. The elector's thread notices a renew deadline passed only
        when it next looks (it may be in a request or in ``on_started_leading`` until then): a leader past it must not
        be said to lead while its writes are refused, nor one whose renewal was refused as a conflict."""
        return self._leading and not self._contested and now - self._renewed_at < self.renew_deadline

    def others_wait(self) -> float:
        """Seconds from now before another replica may take the lease this one held and lost: the lease's duration
        from its last renewal (counted from when it was sent, as :meth:`may_write` counts it), 0 when it was taken by
        another holder (who may lead already) or emptied. What a deposed leader may still run (its daemons) must end
        by then, or it runs beside the next leader's."""
        with self._lock:
            holder = self._observed[0] if self._observed else ""
            if holder != self.identity:
                return 0.0
            return max(self.lease_duration - (self._clock() - self._renewed_at), 0.0)

    @property
    def healthy(self) -> bool:
        """Whether the API server answered one of our lease requests recently (a healthy standby or leader)."""
        with self._lock:
            contact = self._last_contact
        return contact > 0 and self._clock() - contact < self.lease_duration + self.retry_period * JITTER

    @property
    def failure(self) -> str:
        """What the last attempt failed with (its log line's event and error: a refusal names the rule to grant), ""
        when it was answered or none was made: a replica not ready for its lease says why (``/readyz``), not only in
        its log, where a repeat is said at debug level."""
        return self._failure_said  # one reference, replaced whole by the elector's thread

    @property
    def holder(self) -> str:
        """The holder identity of the lease as last seen ("" when free or not seen yet)."""
        with self._lock:
            return self._observed[0] if self._observed else ""

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Compete on a daemon thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"okt-leader-{self.name}", daemon=True)
            self._thread.start()

    def stop(self, release: bool = True, timeout: float | None = None) -> None:
        """Stop competing; with ``release``, hand the lease over at once if we hold it.

        No write of the lease (create, take, renew) is sent once the stop has come: each looks at it right before it
        leaves. One already on the wire may still take the lease: the elector does not lead on it, and with
        ``release`` it is released once its answer comes (by the elector's thread when the stop's wait for that
        thread, ``timeout`` seconds, ended first); without, it is left to run out."""
        self._halt(timeout)
        if release:
            self._give_up(False)

    def release(self) -> bool:
        """Stop competing and give the lease up if it still holds the record this elector wrote: holder emptied,
        duration 1 s. Returns whether it was released.

        The elector's thread is stopped first: renewing on, it would find the lease free and take it back, and the
        others would wait for a lease that never runs out.
        """
        with self._lock:
            was_leading, self._leading = self._leading, False  # writes stop at once
        self._halt(None)
        return self._give_up(was_leading)

    def _give_up(self, was_leading: bool) -> bool:
        """Release the lease if we led (``was_leading``) or lead now, the elector's thread being stopped."""
        with self._lock:  # the thread may have acquired the lease before it stopped
            was_leading, self._leading = was_leading or self._leading, False
            # A write sent before the stop and answered since may have taken the lease, the thread not leading on it.
            may_hold = was_leading or bool(self._ours and not self._lost)
            if self._writing:
                self._release_after_write = True  # the thread releases it once the write's answer came
                may_hold = False
        released = self._release_held() if may_hold else False
        if was_leading:
            self._log.info("leadership released")
            self._notify_stopped()
        return released

    def _release_held(self) -> bool:
        """Empty the lease if it holds a record this elector wrote (duration 1 s); whether it did. Best effort: the
        others wait for a lease not released to run out.

        Our identity is not enough: another process given the same identity may have taken the lease since (this one
        paused past its lease), and emptying its record would end its term behind its back — a standby takes the
        emptied lease a second later, while that process writes until its next renewal finds it so. The update
        carries the resourceVersion of the read the record was judged on: a write in between is refused (409), as
        client-go's release is when the lease changed since its last read or write."""
        released = False
        try:
            lease = self._get()
            spec = dict((lease or {}).get("spec") or {})
            record = _record(spec)
            with self._lock:
                ours = record in self._ours  # each of ours holds our identity
            if lease is not None and not ours:
                self._log.info("lease not released: it holds a record this elector did not write", holder=record[0])
            if lease is not None and ours:
                spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=micro_time())
                self._replace({**lease, "spec": spec})
                released = True
                with self._lock:
                    self._ours = ()  # none of our records is in the lease any more
        except (errors.ApiError, ValueError) as exc:  # ValueError: an answer that is not JSON
            self._log.warning("lease not released, the others wait for it to expire", error=str(exc))
        return released

    def _halt(self, timeout: float | None) -> None:
        with self._lock:  # a write about to leave sees it
            self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout if timeout is not None else self._request_timeout * 2 + self.retry_period)

    # -- the loop ------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._compete()
        finally:
            with self._lock:
                release, self._release_after_write = self._release_after_write, False
            if release:
                # A write on the wire when the stop came, which asked for a release: it may have taken the lease.
                self._release_held()

    def _compete(self) -> None:
        # A renewal counts from the moment its attempt began, not from its answer: the others may have seen the
        # lease renewed (and started counting its duration) any time after the request left, and an answer can come
        # late (a slow network, this process paused between the write and its answer).
        # Acquire.
        while not self._stop.is_set():
            attempted_at = self._clock()
            if self._try_acquire_or_renew():
                break
            self._sleep()
        else:
            return
        with self._lock:
            if self._stop.is_set():
                return  # acquired by a write sent before the stop: released by the stop (or its answer), not led on
            self._leading = True
            self._renewed_at = attempted_at
        self._log.info("became leader")
        if self._on_started is not None:
            self._on_started()
        # Renew.
        at_once = False
        while not self._stop.is_set():
            # The renew deadline ends the renewals: no wait goes past it, nor a request by more than LEAST_TIMEOUT (only
            # this thread moves it).
            deadline = self._renewed_at + self.renew_deadline
            if not at_once:
                self._stop.wait(max(min(self.retry_period, deadline - self._clock()), 0.0))
            if self._stop.is_set():
                return
            if self._clock() >= deadline:
                break
            attempted_at = self._clock()
            if self._try_acquire_or_renew(deadline):
                with self._lock:
                    self._renewed_at = attempted_at
                    self._contested = False
                at_once = False
                continue
            with self._lock:
                at_once = self._contested and not at_once  # read the lease again at once, once in a row
            if self.lost:
                break  # deposed: _see stopped the writes the moment it saw the other holder
            if self._clock() - self._renewed_at >= self.renew_deadline:
                break
        else:
            return
        with self._lock:
            deposed = self._lost
            if not self._leading and not deposed:
                return
            self._leading = False
            self._lost = True
            holder = self._observed[0] if self._observed else ""
        if deposed and not holder:
            self._log.error("leadership lost: the lease was emptied by someone else")
        elif deposed:
            self._log.error("leadership lost: the lease is held by another candidate", holder=holder)
        else:
            self._log.error("leadership lost: could not renew the lease in time", renew_deadline=self.renew_deadline)
        self._notify_stopped()

    def _sleep(self) -> None:
        with self._lock:
            held_by_other = self._held_by_other_locked()
            until_expiry = self._observed_at + self._observed_duration - self._clock() if held_by_other else None
        self._stop.wait(candidate_wait(self.retry_period * _JITTER.uniform(1.0, JITTER), until_expiry))

    def _notify_stopped(self) -> None:
        if self._on_stopped is not None:
            try:
                self._on_stopped()
            except Exception as exc:  # the elector's thread must finish its own bookkeeping
                self._log.error("on_stopped_leading failed", error=repr(exc))

    def _try_acquire_or_renew(self, deadline: float | None = None) -> bool:
        """One attempt, its requests ended by ``deadline`` (a moment on :func:`clock`) if given; True when we hold the
        lease afterwards."""
        try:
            held = self._attempt(deadline)
        except _Stopped:
            return False
        except errors.Conflict:
            self._answered()
            with self._lock:
                leading = self._leading
                self._contested = leading
            if leading:
                self._log.warning("lease renewal refused as a conflict: writes stop until the lease is read again")
            else:
                self._log.debug("lost the race for the lease")
            return False
        except errors.ApiError as exc:
            self._failed(self._log.warning, "lease request failed", str(exc))
            return False
        except ValueError as exc:  # an answer that is not JSON (a proxy's error page): failed as any other attempt
            self._failed(self._log.warning, "lease answer unreadable", str(exc))
            return False
        except Exception as exc:
            # An answer of another shape (JSON that is not a Lease): failed as any other attempt. Raised, it ended
            # the elector's thread: a leader went on saying it led, and never said it stopped.
            self._failed(self._log.error, "lease attempt failed", f"{type(exc).__name__}: {exc}")
            return False
        self._answered()
        return held

    def _failed(self, say: Callable[..., Any], event: str, error: str) -> None:
        """Log a failed attempt: at ``say``'s level when it fails otherwise than the one before, at debug level when
        it repeats it. A candidate tries every retry period, for as long as an outage or a missing permission lasts:
        the same line every 2 s said nothing more than the first (``/readyz`` says it goes on)."""
        self._failures += 1
        said, self._failure_said = self._failure_said, f"{event}: {error}"
        (self._log.debug if said == self._failure_said else say)(event, error=error, failures=self._failures)

    def _answered(self) -> None:
        """An attempt was answered: say how many failed before it, if any."""
        if self._failures:
            self._log.info("lease requests answered again", failures=self._failures)
        self._failures, self._failure_said = 0, ""

    def _attempt(self, deadline: float | None) -> bool:
        now = micro_time()
        lease = self._get(self._timeout(deadline))
        if lease is None:
            if self._held_by_other():
                return False  # deleted by hand: its leader does not know yet and may still write
            self._write((self.identity, now, now), lambda: self._create(now, self._timeout(deadline)))
            return True
        spec = lease.get("spec") or {}
        record = _record(spec)
        ours = self._see(record, _duration(spec.get("leaseDurationSeconds"), self.lease_duration))
        if self._held_by_other():
            return False
        renewed = dict(spec)
        renewed.update(holderIdentity=self.identity, leaseDurationSeconds=self._lease_seconds)
        renewed["renewTime"] = now
        if not ours:
            renewed["acquireTime"] = now
            renewed["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        written = (self.identity, now, str(renewed["acquireTime"] or ""))
        self._write(written, lambda: self._replace({**lease, "spec": renewed}, self._timeout(deadline)))
        return True

    def _write(self, record: tuple[str, str, str], send: Callable[[], None]) -> None:
        """Send one write of the lease, which will hold ``record``; remember it as ours from the moment it may have
        been applied (a write without an answer may have been). None is sent once the elector is stopped: the stop
        is looked at under the lock it is set under, right before the write leaves.

        Raises:
            _Stopped: the elector was stopped; nothing was sent.
        """
        with self._lock:
            if self._stop.is_set():
                raise _Stopped
            self._writing = True
            self._ours = (*self._ours, record)
        try:
            send()
        except errors.Conflict:
            with self._lock:  # refused: the lease is someone else's
                self._ours = tuple(ours for ours in self._ours if ours != record)
            raise
        finally:
            with self._lock:
                self._writing = False
        with self._lock:
            self._ours = (record,)
        self._see(record, self.lease_duration)

    def _see(self, record: tuple[str, str, str], duration: float) -> bool:
        """Note what the lease says (its holder, renewTime and acquireTime); returns whether it is our own record. A
        leader that finds another holder is deposed on the spot: that holder may already be writing, so waiting for
        the renew deadline would let two processes write."""
        with self._lock:
            # Once the lease is seen with another record, none of ours sent before can come back.
            self._ours = (record,) if record in self._ours else ()
            now = self._clock()
            changed = record != self._observed
            if changed:
                published = duration
                if record[0]:
                    # A held record runs out no sooner than its holder's previous one of the same term said, nor than
                    # this elector's own duration: its leader stops writing a renew deadline after the renewal, by the
                    # duration it wrote itself, and knows nothing of an edit that shortened it.
                    duration = max(duration, self.lease_duration)
                    previous = self._observed
                    if previous is not None and (previous[0], previous[2]) == (record[0], record[2]):
                        duration = max(duration, self._observed_published)
                self._observed = record
                self._observed_at = now
                self._observed_duration = duration
                self._observed_published = published
            self._last_contact = now
            other = self._held_by_other_locked()
            if self._leading and other:
                self._leading = False
                self._lost = True
        if changed and other and record[0] == self.identity:
            self._log.error(
                "the lease is held under this identity by another process: each process needs its own identity"
            )
        return bool(self._ours)

    def _held_by_other(self) -> bool:
        """Whether the lease, as last seen, is held by another candidate and has not run out on this clock."""
        with self._lock:
            other = self._held_by_other_locked()
        return other and not self._expired()

    def _held_by_other_locked(self) -> bool:
        """Whether the lease, as last seen, is held by another candidate — another identity, or ours with a record we
        did not write (another process given the same identity, which must not be taken for this one) — or emptied
        by a record we did not write: released by its holder, or emptied by hand while its leader, who does not know
        yet, may still write. Either way it is taken only once it has run out on this clock (a release says 1 s)."""
        observed = self._observed
        return bool(observed and (observed[0] != self.identity or observed not in self._ours))

    def _expired(self) -> bool:
        with self._lock:
            return self._clock() > self._observed_at + self._observed_duration

    # -- requests (bounded in time) ------------------------------------------------------------------------------

    def _timeout(self, deadline: float | None) -> float:
        """The timeout of a request sent now: the elector's own, and no later than ``deadline`` (at least
        :data:`LEAST_TIMEOUT`)."""
        if deadline is None:
            return self._request_timeout
        return min(self._request_timeout, max(deadline - self._clock(), LEAST_TIMEOUT))

    def _get(self, timeout: float | None = None) -> dict[str, Any] | None:
        try:
            response = self.client.request(
                "GET",
                kinds.LEASE.path(self.name, self.namespace),
                verb="get",
                resource=kinds.LEASE.plural,
                timeout=self._request_timeout if timeout is None else timeout,
                limited=False,
            )
        except errors.NotFound:
            return None
        lease: dict[str, Any] = response.json()
        return lease

    def _create(self, now: str, timeout: float | None = None) -> None:
        body = {
            "apiVersion": kinds.LEASE.api_version,
            "kind": kinds.LEASE.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._lease_seconds,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        self.client.request(
            "POST",
            kinds.LEASE.collection_path(self.namespace),
            verb="create",
            resource=kinds.LEASE.plural,
            body=body,
            timeout=self._request_timeout if timeout is None else timeout,
            limited=False,
        ).close()

    def _replace(self, lease: dict[str, Any], timeout: float | None = None) -> None:
        # The body carries metadata.resourceVersion as read: the API answers 409 if anyone wrote in between.
        self.client.request(
            "PUT",
            kinds.LEASE.path(self.name, self.namespace),
            verb="update",
            resource=kinds.LEASE.plural,
            body=lease,
            timeout=self._request_timeout if timeout is None else timeout,
            limited=False,
        ).close()
