"""The operator's own probes (``@okt.probe``): their values in the JSON answer of ``/healthz``.

Why this exists: an operator may want its liveness endpoint to show a value of its own — a queue's depth, the last
time a dependency answered — as Kopf's ``@kopf.on.probe`` adds one to Kopf's. okt's ``/healthz`` says okt's state;
asked for JSON (``Accept: application/json``), it adds :meth:`Probes.report`.

Guarantees:

* a probe never decides ``/healthz``'s status, and the kubelet's plain ``/healthz`` (it asks for ``*/*``) never calls
  one: only the JSON answer does;
* each call runs on a thread of its own, never on a reconcile's worker; the probes of one report run at once and
  are waited for :data:`TIMEOUT` seconds in all. One that has not returned by then is named under ``failed``
  (``timed out after 2 s``), and is not called again while that call still runs (``still running``): a probe that
  hangs holds one thread, however often the endpoint is asked;
* a report is kept :data:`KEEP_FOR` seconds: the endpoint asked again meanwhile, by as many clients as may be, calls
  no probe; concurrent requests that find it stale wait for one refresh;
* a probe that raises is named under ``failed`` by its exception's class only (``ConnectionError``): the endpoint is
  open to anyone who reaches the port, with no token, and an exception's text may carry what the probe read (a
  connection string, a Secret's value). The log says it as it says any exception of the operator's own code, with its
  text (a pydantic ``ValidationError`` by its fields, never the values it was given), as a warning when a probe's
  failure changes (at debug level while it repeats);
* a value that is no JSON (a set, an object, ``float('nan')``) is a failure too, named by its type
  (``not JSON: set``), never by its text.

Caveats: Python cannot kill a thread: a probe that never returns holds its thread until the process ends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from okt import coroutines, errors, hooks, secret_values

TIMEOUT = 2.0
"""Seconds a report waits for its probes, all of them at once."""
KEEP_FOR = 10.0
"""Seconds a report is answered again before its probes are called again."""

_log = structlog.get_logger("okt.probes")


class _Call:
    """One call of a probe on its own thread: its JSON value, or why it has none."""

    def __init__(self, name: str, fn: hooks.Probe) -> None:
        self.value: Any = None
        self.failure: str | None = None
        self.error: str | None = None  # what the log says: the exception with its text
        self.thread = threading.Thread(target=self._run, args=(fn,), name=f"okt-probe-{name}", daemon=True)
        self.thread.start()

    def _run(self, fn: hooks.Probe) -> None:
        with secret_values.held():  # the values of the Secrets the probe reads, left out of its error's text
            try:
                value = coroutines.call(fn)
            except Exception as exc:
                self.failure = type(exc).__name__
                # As okt logs any exception of the operator's code: a pydantic ValidationError by its fields, never the
                # values it was given (a Secret's, read by the probe).
                self.error = " ".join(errors.said(exc).split())
                return
        try:
            # Checked here, on the probe's thread: a value slow to encode is bounded by the timeout too.
            self.value = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            self.failure = self.error = f"not JSON: {type(value).__name__}"


class Probes:
    """The operator's probes, called for :meth:`report`.

    Args:
        probes: each probe by its name (:func:`okt.hooks.probe`'s).
        timeout: seconds a report waits for its probes, all of them at once.
        keep_for: seconds a report is given again before the probes are called again.

    Raises:
        TypeError, ValueError: a probe okt cannot call, or a name it cannot use (:func:`okt.hooks.check_probe`).
    """

    def __init__(
        self,
        probes: Mapping[str, hooks.Probe],
        *,
        timeout: float = TIMEOUT,
        keep_for: float = KEEP_FOR,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, fn in probes.items():
            hooks.check_probe_name(name)
            hooks.check_probe(name, fn)
        self._probes = dict(probes)
        self._timeout = timeout
        self._keep_for = keep_for
        self._clock = clock
        self._lock = threading.Lock()
        self._report: dict[str, dict[str, Any]] | None = None
        self._taken = 0.0
        self._running: dict[str, _Call] = {}
        self._said: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._probes)

    def report(self) -> dict[str, dict[str, Any]]:
        """``{"probes": {name: value}, "failed": {name: why}}``: each probe's value, or why it has none; the report
        of the last :attr:`keep_for` seconds if there is one."""
        with self._lock:
            if self._report is None or self._clock() - self._taken >= self._keep_for:
                self._report = self._run()
                self._taken = self._clock()
            return self._report

    def _run(self) -> dict[str, dict[str, Any]]:
        values: dict[str, Any] = {}
        failed: dict[str, str] = {}
        calls: dict[str, _Call] = {}
        for name, fn in self._probes.items():
            late = self._running.get(name)
            if late is not None and late.thread.is_alive():
                failed[name] = f"still running (timed out after {self._timeout:g} s)"
            else:
                calls[name] = self._running[name] = _Call(name, fn)
        deadline = time.monotonic() + self._timeout
        for name, call in calls.items():
            call.thread.join(max(deadline - time.monotonic(), 0.0))
            if call.thread.is_alive():
                failed[name] = f"timed out after {self._timeout:g} s"
            elif call.failure is not None:
                failed[name] = call.failure
            else:
                values[name] = call.value
                self._said.pop(name, None)
        for name, why in failed.items():
            call_ = calls.get(name)
            self._say(name, call_.error if call_ is not None and call_.error is not None else why)
        return {"probes": values, "failed": failed}

    def _say(self, name: str, error: str) -> None:
        """Log a probe's failure: a warning when it differs from the one it had before, debug while it repeats."""
        said, self._said[name] = self._said.get(name), error
        (_log.debug if said == error else _log.warning)("a probe failed", probe=name, error=error)
