"""An operator in its own process — ``okt run ...`` as users start it — ready on ``/readyz``, stopped with SIGTERM.

Why this exists: the truest test of an operator is the command users run, in a process of its own: its signal
handling, its probes, its exit status, its log. End-to-end tests, the demo, the benchmarks and the reliability suite
all start operators that way and need the same care — wait for readiness without sleeping, never leave a process
behind, keep the log for the failure message.

Example::

    from okt.testing import OperatorProcess

    operator = OperatorProcess.okt_run(
        "main.py", kubeconfig=plane.kubeconfig, namespaces=[namespace], log_path=tmp_path / "operator.log"
    )
    with operator:  # started, and ready: /readyz answers 200
        ...  # create objects, wait for them to converge
    assert operator.returncode == 0, operator.tail()

Guarantees:

* the process runs in a session (a process group) of its own; :meth:`OperatorProcess.stop` sends SIGTERM to the
  group, waits, then SIGKILLs it (:attr:`OperatorProcess.hung`), and SIGKILLs what is left of the group once the
  process has ended (a child it started, or left behind when it crashed); it is idempotent and bounded;
* with ``tie_to_parent`` (the default) the kernel kills the process when this Python process dies
  (``PR_SET_PDEATHSIG``), so a crashed test run leaves no operator behind;
* :meth:`OperatorProcess.wait_ready` raises :class:`okt.testing.WaitTimeout` at once when the process exits instead
  of becoming ready, with the end of its log; a failure of a ``with`` block after the process exited by itself (not
  stopped or killed by the test) gets a note with its exit status and the end of its log;
* the log (stdout and stderr together) goes to ``log_path`` and stays there after the process ends;
* :meth:`OperatorProcess.okt_run`'s probe port is free when picked, and taken again when another process took it
  before ``okt run`` could bind it (it says so on its stderr, read from its log, or, without ``log_path``, from the
  end of its stderr kept as it is passed on to this process's own): waiting for readiness starts it again on a fresh
  port, up to :data:`okt.testing.envtest.PORT_ATTEMPTS` starts in all;
* ``okt run`` is given its kubeconfig twice, ``--kubeconfig`` and ``$KUBECONFIG``: operator code that builds a client
  of its own from the environment (``okt.Client.from_kubeconfig()``, ``pykube.KubeConfig.from_env()``) talks to the
  cluster the operator runs against, not to the one the test runner's ``$KUBECONFIG`` names.

Caveats: the kernel tie follows the *thread* that started the process — start it from a thread that outlives it (the
main thread, as pytest fixtures do) or pass ``tie_to_parent=False``. CPU and memory figures read ``/proc`` (Linux).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Self

from okt.runtime import manager
from okt.testing import audit, envtest, waiting

START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
SAMPLE_INTERVAL = 0.25
"""How often the CPU sampler reads the process's CPU time (with ``sample_cpu=True``)."""
BUSY_CPU_SHARE = 0.05
"""A sample interval in which the process used more than this share of one core counts as busy."""
_TICKS = os.sysconf("SC_CLK_TCK")
_STDERR_KEPT = 64 * 1024
"""Bytes of the end of its stderr an :meth:`OperatorProcess.okt_run` process without a log file keeps in memory, per
start: enough for the error ``okt run`` exits with."""
_STDERR_DRAIN = 2.0
"""Seconds the stderr of an exited process without a log file is waited for, until its end is read (a process it
left behind may hold the pipe open)."""


class OperatorProcess:
    """An operator run as a child process: started, probed, sampled, and always stopped.

    Args:
        argv: the command line (see :meth:`okt_run` for ``okt run``'s).
        name: what messages call it.
        env: variables set on top of this process's environment (``PYTHONUNBUFFERED=1`` is always set).
        cwd: the working directory.
        log_path: where its stdout and stderr go (appended); ``None`` to share this process's own (an
            :meth:`okt_run` one's stderr is passed on to it, its end kept to tell why it exited).
        probe_url: the base URL of its probe server (``/readyz``, ``/metrics``); ``None`` when it has none.
        sample_cpu: sample its CPU time in the background, for :meth:`last_busy_at`.
        tie_to_parent: the kernel kills it when this process dies (see the module's caveats).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str = "operator",
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: pathlib.Path | None = None,
        probe_url: str | None = None,
        sample_cpu: bool = False,
        tie_to_parent: bool = True,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.cwd = cwd
        self.log_path = log_path
        self.probe_url = probe_url
        self.started_at = 0.0
        """The wall-clock time (``time.time()``) just before the process was started."""
        self.killed = False
        """Whether it was killed here (:meth:`kill`, or a :meth:`stop` that had to)."""
        self.hung = False
        """Whether it ignored SIGTERM for the whole ``stop`` timeout."""
        self.final_memory_kib: tuple[int, int] | None = None
        self.final_cpu_seconds: float | None = None
        self._tie = tie_to_parent
        self._ended_here = False
        """Whether :meth:`stop` or :meth:`kill` was called: an exit before neither was the process's own."""
        self._sample_cpu = sample_cpu
        self._proc: subprocess.Popen[bytes] | None = None
        self._samples: list[tuple[float, float]] = []
        self._samples_lock = threading.Lock()
        self._sampler: threading.Thread | None = None
        self._pick_port: Callable[[], int] | None = None
        """Where :meth:`okt_run`'s probe port came from, asked again for a start on a fresh one."""
        self._starts = 0
        self._log_offset = 0
        """The size of the log when the process was last started: what it logged since is read from there."""
        self._stderr: _Relay | None = None
        """Its stderr since it was last started, without a log file (:meth:`okt_run`'s: see :meth:`_spawn`)."""

    @classmethod
    def okt_run(
        cls,
        operator: str | os.PathLike[str],
        *,
        kubeconfig: str | os.PathLike[str],
        namespaces: Sequence[str] = (),
        args: Sequence[str] = (),
        log_format: str = "json",
        command: str | None = None,
        name: str = "okt run",
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: pathlib.Path | None = None,
        sample_cpu: bool = False,
        tie_to_parent: bool = True,
        pick_port: Callable[[], int] = envtest.free_port,
    ) -> OperatorProcess:
        """``okt run OPERATOR --kubeconfig K [--namespace N]... ARGS``, its probes (and webhooks) on free ports, with
        ``$KUBECONFIG`` set to ``K`` too (unless ``env`` sets it).

        Not started yet: use it as a context manager (started and ready) or call :meth:`start`. A port free when
        picked may be taken by another process (a connection given it by the kernel) before ``okt run`` binds it:
        when ``okt run`` exits saying so (on its stderr, in the log or, without ``log_path``, passed on to this
        process's own and its end kept), :meth:`wait_ready` starts it again on a port picked afresh, up to
        :data:`okt.testing.envtest.PORT_ATTEMPTS` starts in all.

        Args:
            operator: the operator file (or module) ``okt run`` loads.
            kubeconfig: the cluster to run against.
            namespaces: the namespaces to watch (all when empty).
            args: more ``okt run`` options (``--leader-elect``, ``--max-concurrent 8``...).
            log_format: ``json`` (what :meth:`records` reads) or ``console``.
            command: the ``okt`` command (default: :func:`okt_command`).
            pick_port: gives the probe port of each start (default: a port free on loopback now).

        ``name``, ``env``, ``cwd``, ``log_path``, ``sample_cpu`` and ``tie_to_parent`` are as for the class.
        """
        probe_url = f"http://127.0.0.1:{pick_port()}"
        argv = [command or okt_command(), "run", os.fspath(operator), "--kubeconfig", os.fspath(kubeconfig)]
        for namespace in namespaces:
            argv += ["--namespace", namespace]
        argv += ["--metrics-bind-address", probe_url.removeprefix("http://"), "--webhook-port", "0"]  # free ports
        argv += ["--log-format", log_format, *args]
        operator_process = cls(
            argv,
            name=name,
            # The operator's code may build a client of its own from the environment: it must find the cluster
            # okt run is given, not the one of the test runner's $KUBECONFIG (a developer's real cluster, maybe).
            env={"KUBECONFIG": os.fspath(kubeconfig), **(env or {})},
            cwd=cwd,
            log_path=log_path,
            probe_url=probe_url,
            sample_cpu=sample_cpu,
            tie_to_parent=tie_to_parent,
        )
        operator_process._pick_port = pick_port
        return operator_process

    # -- life --------------------------------------------------------------------------------------------------------

    def start(self, *, ready_within: float | None = None) -> Self:
        """Start the process; with ``ready_within``, also wait that many seconds until it is ready (see
        :meth:`wait_ready`; it is stopped again if it is not), else return at once.

        Raises:
            RuntimeError: it was started before.
            OSError: the command cannot be run.
            okt.testing.WaitTimeout: not ready within ``ready_within`` seconds, or it exited first.
        """
        if self._proc is not None:
            raise RuntimeError(f"{self.name} was already started")
        self._spawn()
        if ready_within is not None:
            try:
                self.wait_ready(ready_within)
            except BaseException:
                self.stop()
                raise
        return self

    def _spawn(self) -> None:
        """Start the process (and its CPU sampler)."""
        log: IO[bytes] | None = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("ab")
            self._log_offset = log.tell()
        # Without a log file, the refusal of a probe port taken meanwhile (okt run's error, on its stderr) would reach
        # this process's stderr only, where nothing reads it: passed on there still, its end is kept to be read.
        relayed = log is None and self._pick_port is not None
        self._starts += 1
        try:
            self.started_at = time.time()
            self._proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT if log is not None else subprocess.PIPE if relayed else None,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=envtest.die_with_parent if self._tie else None,  # noqa: PLW1509 - prctl only, then exec
            )
        finally:
            if log is not None:
                log.close()
        if relayed:
            assert self._proc.stderr is not None
            self._stderr = _Relay(self._proc.stderr, name=f"stderr-{self.name}")
        if self._sample_cpu:
            self._sampler = threading.Thread(target=self._sample, name=f"cpu-{self.name}", daemon=True)
            self._sampler.start()

    def _started_again_on_a_fresh_port(self) -> bool:
        """Start the process again on a probe port picked afresh when it exited because the one picked was taken
        (:meth:`okt_run`'s, said in its log since it was started); False when it exited for anything else, or once
        :data:`okt.testing.envtest.PORT_ATTEMPTS` starts were tried."""
        if self._pick_port is None or self.probe_url is None or self._starts >= envtest.PORT_ATTEMPTS:
            return False
        bind = self.probe_url.removeprefix("http://")
        refusal = f"cannot serve metrics and probes on {bind}: {os.strerror(errno.EADDRINUSE)}"
        if refusal not in self._logged_since_start():
            return False
        self._signal(signal.SIGKILL)  # what it started, if anything, goes with it
        if self._sampler is not None:
            self._sampler.join(timeout=2)  # it ends with the process; one sampler at a time
        bind = f"127.0.0.1:{self._pick_port()}"
        self.argv[self.argv.index("--metrics-bind-address") + 1] = bind
        self.probe_url = f"http://{bind}"
        self._spawn()
        return True

    def _logged_since_start(self) -> str:
        """What it logged since it was last started: its log's, or the end of its stderr without one (once it is all
        read: the process has exited); "" when it has neither."""
        if self.log_path is None:
            return "" if self._stderr is None else self._stderr.read(_STDERR_DRAIN)
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def ready(self) -> bool:
        """Whether its ``/readyz`` answers 200 (okt: caches synced; with leader election, leading or a healthy
        standby), and says nothing of caches still filling (an operator serving a conversion webhook is ready
        before, see :func:`answers_ready`); False while it does not answer, has exited, or has no probe server."""
        return self.alive and self.probe_url is not None and answers_ready(self.probe_url)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> float:
        """Wait until :meth:`ready`; returns the seconds since the (last) start. :meth:`okt_run`'s process refused
        its probe port, taken by another process since it was picked, is started again on a fresh one meanwhile.

        Raises:
            okt.testing.WaitTimeout: not ready within ``timeout`` seconds, or it exited first (the message ends with
                its log's last lines).
            RuntimeError: it has no probe server, or was never started.
        """
        if self.probe_url is None or self._proc is None:
            raise RuntimeError(f"{self.name} has no probe to wait for" if self._proc else f"{self.name} is not started")
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.alive and self._started_again_on_a_fresh_port():
                continue
            if not self.alive:
                raise waiting.WaitTimeout(f"{self.name} exited with status {self.returncode}{self._log_end()}")
            if time.monotonic() >= deadline:
                raise waiting.WaitTimeout(f"timed out after {timeout:.1f}s waiting for {self.name}{self._log_end()}")
            time.sleep(0.1)
        return time.time() - self.started_at

    def stop(self, timeout: float = STOP_TIMEOUT, *, signum: int = signal.SIGTERM) -> int | None:
        """End it gracefully: ``signum`` (SIGTERM) to its process group, SIGKILL after ``timeout`` seconds; then
        SIGKILL to whatever of its group is left once it has ended (by itself too), so no process stays behind.

        Returns its exit status (negative: the signal that ended it); None when it was never started. The last memory
        and CPU figures are kept in :attr:`final_memory_kib` and :attr:`final_cpu_seconds`.
        """
        proc = self._proc
        if proc is None:
            return None
        self._ended_here = True
        if proc.poll() is None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.final_memory_kib = self.memory_kib()
                self.final_cpu_seconds = self.cpu_seconds()
            self._signal(signum)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.hung = True
                self.kill()
        # The group outlives its leader: what the operator started (or left running when it crashed) ends with it.
        self._signal(signal.SIGKILL)
        if self._sampler is not None:
            self._sampler.join(timeout=2)
        return proc.returncode

    def kill(self) -> bool:
        """SIGKILL its process group (``kill -9``); returns whether it was still running."""
        was_alive = self.alive
        self.killed = self._ended_here = True
        self._signal(signal.SIGKILL)
        if self._proc is not None:
            self._proc.wait(10)
        return was_alive

    def __enter__(self) -> Self:
        """Start it and, when it has a probe server, wait until it is ready (stopped again if it is not)."""
        return self.start(ready_within=START_TIMEOUT if self.probe_url is not None else None)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop it; a failure of the block after it exited by itself carries its exit status and its log's end."""
        exited = self._proc is not None and not self._ended_here and not self.alive
        self.stop()
        if exc is not None and exited:
            # The test waited for something the dead operator would never do; its failure says what it awaited.
            exc.add_note(f"{self.name} had exited by itself, with status {self.returncode}{self._log_end()}")

    def _signal(self, signum: int) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signum)

    # -- state -------------------------------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """Its exit status; None while it runs (or before it started)."""
        return None if self._proc is None else self._proc.poll()

    @property
    def exit_status(self) -> int | None:
        """Its exit status when it ended by itself or by :meth:`stop`'s signal; None while it runs or when it was
        killed here (a crash under test is not the process's failure)."""
        return None if self.killed else self.returncode

    def metrics(self) -> str:
        """Its Prometheus exposition (``/metrics``)."""
        if self.probe_url is None:
            raise RuntimeError(f"{self.name} has no metrics server")
        with urllib.request.urlopen(f"{self.probe_url}/metrics", timeout=5) as response:
            return str(response.read().decode())

    # -- log ---------------------------------------------------------------------------------------------------------

    def log_text(self) -> str:
        """Its whole log so far ("" when it has none)."""
        if self.log_path is None:
            return ""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 15) -> str:
        """The last ``lines`` lines of its log."""
        return "\n".join(self.log_text().strip().splitlines()[-lines:])

    def logged(self, text: str) -> bool:
        """Whether its log holds ``text`` (a line it prints once ready, say)."""
        return text in self.log_text()

    def records(self) -> list[dict[str, Any]]:
        """Its log as records (``--log-format json``; see :func:`log_records`)."""
        return log_records(self.log_text())

    def logged_at(self, event: str) -> float | None:
        """When it first logged a record whose ``event`` is ``event`` — that record's own ``timestamp``, wall clock —
        or None: the moment it happened in the operator, however late the test looks."""
        return next((audit.parse_time(r.get("timestamp")) for r in self.records() if r.get("event") == event), None)

    def _log_end(self) -> str:
        tail = self.tail()
        return f"; its log ends with:\n{tail}" if tail else ""

    # -- figures (Linux /proc) ---------------------------------------------------------------------------------------

    def memory_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in KiB — resident memory now and at its peak — from ``/proc/<pid>/status``."""
        fields: dict[str, int] = {}
        for line in pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
        return fields.get("VmRSS", 0), fields.get("VmHWM", 0)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far (all its threads)."""
        return cpu_seconds_of(self.pid)

    def last_busy_at(self, since: float) -> float | None:
        """The end of the last sample interval after ``since`` in which it was busy (None: never; needs
        ``sample_cpu=True``)."""
        with self._samples_lock:
            samples = list(self._samples)
        last: float | None = None
        for (t0, c0), (t1, c1) in itertools.pairwise(samples):
            if t1 >= since and (c1 - c0) > BUSY_CPU_SHARE * (t1 - t0):
                last = t1
        return last

    def _sample(self) -> None:
        while self.alive:
            try:
                reading = (time.time(), self.cpu_seconds())
            except (OSError, ValueError, IndexError):
                return
            with self._samples_lock:
                self._samples.append(reading)
            time.sleep(SAMPLE_INTERVAL)


def log_records(text: str) -> list[dict[str, Any]]:
    """The JSON records of an operator's log (``--log-format json``); any other line becomes ``{"raw": line}``."""
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        records.append(record if isinstance(record, dict) else {"raw": line})
    return records


def answers_ready(probe_url: str) -> bool:
    """Whether the ``/readyz`` of the probe server at ``probe_url`` answers 200, its caches synced; False while it
    does not answer.

    An okt operator serving a conversion webhook answers 200 before its caches sync (the sync may wait for that
    webhook), noting :data:`okt.runtime.manager.CACHES_SYNCING`: a test starts acting on it once it is synced, as on
    any other operator.
    """
    try:
        with urllib.request.urlopen(f"{probe_url}/readyz", timeout=2) as response:
            body = response.read().decode(errors="replace")
            return bool(response.status == 200) and manager.CACHES_SYNCING not in body
    except (urllib.error.URLError, OSError):
        return False


class _Relay:
    """Passes a child's stderr on to this process's own (file descriptor 2, where it went without a pipe: a test
    runner capturing it captures it still) and keeps its last ``_STDERR_KEPT`` bytes, on a thread of its own that
    ends with the pipe."""

    def __init__(self, pipe: IO[bytes], *, name: str) -> None:
        self._pipe = pipe
        self._kept = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pass_on, name=name, daemon=True)
        self._thread.start()

    def _pass_on(self) -> None:
        try:
            while chunk := os.read(self._pipe.fileno(), 65536):
                with self._lock:
                    self._kept += chunk
                    del self._kept[:-_STDERR_KEPT]
                with contextlib.suppress(OSError):  # this process's stderr closed: kept all the same
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(2, view) :]
        finally:
            self._pipe.close()

    def read(self, drain: float) -> str:
        """The end of what it said, once the pipe ended (waited for up to ``drain`` seconds: its last words are read
        by then)."""
        self._thread.join(drain)
        with self._lock:
            return self._kept.decode(errors="replace")


def okt_command() -> str:
    """The ``okt`` command of this environment (beside this Python), else the one on ``PATH``.

    Raises:
        FileNotFoundError: okt is not installed.
    """
    beside = pathlib.Path(sys.executable).parent / "okt"
    if beside.exists():
        return str(beside)
    found = shutil.which("okt")
    if found is None:
        raise FileNotFoundError("the okt command is not installed (pip install okt)")
    return found


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads); 0 when it is gone."""
    try:
        raw = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS
