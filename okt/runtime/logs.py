"""Logging: structlog, configured once per process, readable on a terminal and machine-parsable in a cluster.

Why this exists: every reconcile logs its path and outcome, and an operator's logs are read two ways — by a person
running ``okt run`` in a terminal, and by a log pipeline in a cluster. :func:`configure` picks the renderer, the level
and the processors; :func:`reconcile_context` binds the identity of one reconcile (controller, namespace, name,
reconcile id) to the context, so every line logged while it runs — by okt or by the author's code through
``structlog.get_logger()`` — carries it, on whichever worker thread it runs.

Guarantees:

* ``format="console"`` renders key=value lines (coloured only on a TTY); ``"json"`` renders one JSON object per line;
  ``None`` picks console on a TTY and JSON otherwise (a container's stdout is not a TTY);
* verbosity ``0`` logs INFO and above, ``1`` or more DEBUG, a negative value WARNING and above;
* timestamps are ISO 8601 in UTC; exceptions are rendered (a traceback on the console, a structured one in JSON),
  without the local variables of their frames (they may hold a Secret's data or a token);
* context bound by :func:`reconcile_context` is per thread (contextvars) and removed when the block exits;
* what libraries log through the standard library's ``logging`` (urllib3's full connection pool, a retried request)
  is rendered the same way, on the same stream, with the logger's name and the bound context, at the level
  ``logging`` lets through (WARNING and above unless a logger was set lower) and the verbosity shows.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks

Format = Literal["console", "json"]
FORMATS: tuple[Format, ...] = ("console", "json")

_ids = itertools.count(1)
_ids_lock = threading.Lock()


def level_for(verbosity: int) -> int:
    """The stdlib level number for a ``-v`` count."""
    if verbosity < 0:
        return logging.WARNING
    return logging.DEBUG if verbosity > 0 else logging.INFO


def configure(format: Format | None = None, verbosity: int = 0, *, stream: TextIO | None = None) -> None:
    """Configure structlog for the whole process.

    Args:
        format: ``"console"``, ``"json"``, or ``None`` to choose by whether ``stream`` is a TTY.
        verbosity: the number of ``-v`` flags (see the module docstring).
        stream: where log lines go (standard error by default).

    Raises:
        ValueError: an unknown format.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {format!r}")
    out = stream if stream is not None else sys.stderr
    tty = bool(getattr(out, "isatty", lambda: False)())
    chosen = format or ("console" if tty else "json")
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    # structlog's tracebacks show every frame's local variables by default: a Secret's decoded data, a token, an
    # object's spec would land in the logs with the exception. The frames and their lines are kept.
    rendering: list[structlog.typing.Processor]
    if chosen == "json":
        no_locals = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        rendering = [structlog.processors.ExceptionRenderer(no_locals), structlog.processors.JSONRenderer()]
    else:
        formatter: structlog.typing.ExceptionRenderer = (
            structlog.dev.RichTracebackFormatter(show_locals=False)
            if importlib.util.find_spec("rich") is not None
            else structlog.dev.plain_traceback
        )
        rendering = [structlog.dev.ConsoleRenderer(colors=tty, exception_formatter=formatter)]
    _route_standard_logging(shared, rendering, out, level_for(verbosity))
    structlog.configure(
        processors=[*shared, *rendering],
        wrapper_class=structlog.make_filtering_bound_logger(level_for(verbosity)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )


class _StandardHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure` puts on the root logger (one: a new configuration replaces it)."""


def _route_standard_logging(
    shared: list[structlog.typing.Processor], rendering: list[structlog.typing.Processor], out: TextIO, level: int
) -> None:
    """Render the records of the standard library's ``logging`` on ``out`` as okt's lines are: ``shared`` processors
    and the logger's name, then ``rendering``.

    Why: a record no handler takes goes to ``logging``'s last resort, standard error as plain text: lines a JSON log
    pipeline cannot read, between okt's, and not filtered by ``-v``."""
    handler = _StandardHandler(out)
    handler.setLevel(level)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering],
        )
    )
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _StandardHandler)]:
        root.removeHandler(previous)
    root.addHandler(handler)


def next_reconcile_id() -> int:
    """A process-wide increasing reconcile id (thread-safe)."""
    with _ids_lock:
        return next(_ids)


@contextlib.contextmanager
def reconcile_context(controller: str, namespace: str | None, name: str, **extra: Any) -> Iterator[int]:
    """Bind controller, namespace, name and a fresh reconcile id to the logging context for the block.

    Yields the reconcile id.
    """
    reconcile_id = next_reconcile_id()
    # Set and reset through the variables' tokens: structlog's bound_contextvars copies the whole context and scans
    # every variable in it to save what it replaces, then sets each key twice on the way out — on every reconcile.
    tokens = structlog.contextvars.bind_contextvars(
        controller=controller, namespace=namespace, name=name, reconcile_id=reconcile_id, **extra
    )
    try:
        yield reconcile_id
    finally:
        structlog.contextvars.reset_contextvars(**tokens)
