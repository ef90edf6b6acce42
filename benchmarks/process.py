"""An operator under test, in its own process: started, sampled (memory, CPU), and always stopped.

Why this exists: a contender's memory and CPU only mean something if nothing else shares its process, and a
benchmark that leaves operators running after a failure poisons the next measurement. Each contender therefore runs
as a child process in its own session (its own process group), which dies with the harness (``PR_SET_PDEATHSIG``),
and is stopped with SIGTERM, then SIGKILL, by process group.

Figures, read from ``/proc/<pid>``: resident memory now (``VmRSS``) and at its peak (``VmHWM``); CPU seconds (user +
system); and a background sampler's timeline of CPU use, from which :meth:`OperatorProcess.last_busy_at` tells
when the process last did real work (the "idle" of the steady-state figure).

Guarantees: :meth:`OperatorProcess.stop` is idempotent and bounded; the log of the process (stdout and stderr) is
kept in a file whose tail is quoted when the process fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pathlib
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from okt.testing import envtest

SAMPLE_INTERVAL = 0.25
BUSY_CPU_SHARE = 0.05
"""A sample interval in which the process used more than this share of one core counts as busy."""
STOP_TIMEOUT = 20.0
_TICKS = os.sysconf("SC_CLK_TCK")


class OperatorProcess:
    """One running contender."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        log_path: pathlib.Path,
        cwd: pathlib.Path,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env)
        self.log_path = log_path
        self.cwd = cwd
        self.started_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._samples: list[tuple[float, float]] = []
        self._samples_lock = threading.Lock()
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None
        self.final_memory_kib: tuple[int, int] | None = None
        self.final_cpu_seconds: float | None = None

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
        return None if self._proc is None else self._proc.poll()

    def start(self) -> OperatorProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.started_at = time.time()
            self._proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=envtest.die_with_parent,  # noqa: PLW1509 - an orphaned operator would skew every later figure
            )
        self._sampling.set()
        self._sampler = threading.Thread(target=self._sample, name=f"sampler-{self.name}", daemon=True)
        self._sampler.start()
        return self

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM the process group, wait up to ``timeout``, then SIGKILL it; records the last figures first."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                self.final_memory_kib = self.memory_kib()
                self.final_cpu_seconds = self.cpu_seconds()
        self._sampling.clear()
        self._signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            proc.wait(timeout=10)
        if self._sampler is not None:
            self._sampler.join(timeout=2)

    def _signal(self, signum: int) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signum)

    # -- figures -----------------------------------------------------------------------------------------------------

    def memory_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in KiB, from ``/proc/<pid>/status``."""
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
        """The end of the last sample interval after ``since`` in which the process was busy (None: never)."""
        with self._samples_lock:
            samples = list(self._samples)
        last: float | None = None
        for (t0, c0), (t1, c1) in itertools.pairwise(samples):
            if t1 < since:
                continue
            if (c1 - c0) > BUSY_CPU_SHARE * (t1 - t0):
                last = t1
        return last

    def logged(self, text: str) -> bool:
        """Whether its log holds ``text`` (a line the process prints once it is ready, say)."""
        try:
            return text.encode() in self.log_path.read_bytes()
        except OSError:
            return False

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def _sample(self) -> None:
        while self._sampling.is_set() and self.alive:
            try:
                reading = (time.time(), self.cpu_seconds())
            except (OSError, ValueError, IndexError):
                return
            with self._samples_lock:
                self._samples.append(reading)
            time.sleep(SAMPLE_INTERVAL)


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads); 0 when it is gone."""
    try:
        raw = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS
