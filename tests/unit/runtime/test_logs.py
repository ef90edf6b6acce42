"""Logging setup: renderers, levels, and the reconcile identity bound to every line logged during a reconcile."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest
import structlog

from okt.runtime import logs


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line]


def test_json_format_writes_one_json_object_per_line_with_level_and_utc_timestamp() -> None:
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    structlog.get_logger("t").info("reconciled", path=">CRChecker>End")
    [line] = lines(stream)
    record = json.loads(line)
    assert record["event"] == "reconciled"
    assert record["level"] == "info"
    assert record["path"] == ">CRChecker>End"
    assert record["timestamp"].endswith("Z")


@pytest.mark.parametrize(("stream_type", "is_json"), [(io.StringIO, True), (TtyStream, False)])
def test_without_a_format_a_tty_gets_the_console_renderer_and_anything_else_json(
    stream_type: type[io.StringIO], is_json: bool
) -> None:
    stream = stream_type()
    logs.configure(None, stream=stream)
    structlog.get_logger().info("hello", answer=42)
    [line] = lines(stream)
    assert line.startswith("{") is is_json
    assert "answer" in line


def test_console_format_renders_key_value_lines_without_colours_off_a_tty() -> None:
    stream = io.StringIO()
    logs.configure("console", stream=stream)
    structlog.get_logger().warning("slow", seconds=3)
    [line] = lines(stream)
    assert "slow" in line
    assert "seconds=3" in line
    assert "\x1b[" not in line


@pytest.mark.parametrize(
    ("verbosity", "shown"),
    [(-1, ["warning"]), (0, ["info", "warning"]), (1, ["debug", "info", "warning"]), (3, ["debug", "info", "warning"])],
)
def test_verbosity_chooses_the_lowest_level_shown(verbosity: int, shown: list[str]) -> None:
    stream = io.StringIO()
    logs.configure("json", verbosity, stream=stream)
    log = structlog.get_logger()
    log.debug("d")
    log.info("i")
    log.warning("w")
    assert [json.loads(line)["level"] for line in lines(stream)] == shown


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="console, json"):
        logs.configure("xml")  # type: ignore[arg-type]


def test_a_reconcile_context_binds_its_identity_to_every_line_and_only_inside_the_block() -> None:
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    log = structlog.get_logger()
    with logs.reconcile_context("widget", "ns", "w1") as reconcile_id:
        log.info("inside")
    log.info("outside")
    inside, outside = (json.loads(line) for line in lines(stream))
    assert {k: inside[k] for k in ("controller", "namespace", "name", "reconcile_id")} == {
        "controller": "widget",
        "namespace": "ns",
        "name": "w1",
        "reconcile_id": reconcile_id,
    }
    assert "controller" not in outside


def test_a_reconcile_context_gives_back_what_was_bound_before_it_even_when_its_block_raises() -> None:
    structlog.contextvars.bind_contextvars(name="outer", daemon="sync")
    try:
        with pytest.raises(RuntimeError), logs.reconcile_context("widget", "ns", "w1"):
            with logs.reconcile_context("widget", "ns", "w2", attempt=2):
                assert structlog.contextvars.get_contextvars()["attempt"] == 2
            assert structlog.contextvars.get_contextvars()["name"] == "w1"
            raise RuntimeError("the reconcile failed")
        assert structlog.contextvars.get_contextvars() == {"name": "outer", "daemon": "sync"}
    finally:
        structlog.contextvars.clear_contextvars()


def test_reconcile_contexts_on_different_threads_do_not_mix() -> None:
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    barrier = threading.Barrier(2)

    def reconcile(name: str) -> None:
        with logs.reconcile_context("widget", "ns", name):
            barrier.wait(5)
            structlog.get_logger().info("working", who=name)

    threads = [threading.Thread(target=reconcile, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    records = [json.loads(line) for line in lines(stream)]
    assert sorted((r["who"], r["name"]) for r in records) == [("a", "a"), ("b", "b")]
    assert records[0]["reconcile_id"] != records[1]["reconcile_id"]


def _connect_with(password: str) -> None:
    raise ConnectionError("the database refused the login")


def _reconcile_reading_a_secret() -> None:
    password = "-".join(("hunter2", "db", "password"))  # decoded from a Secret's data (not a literal of the source)
    _connect_with(password)


@pytest.mark.parametrize("format", ["json", "console"])
def test_a_logged_exception_shows_where_it_was_raised_but_no_frames_local_values(format: logs.Format) -> None:
    stream = io.StringIO()
    logs.configure(format, stream=stream)
    try:
        _reconcile_reading_a_secret()
    except ConnectionError:
        structlog.get_logger().exception("reconcile raised")

    out = stream.getvalue()
    assert "the database refused the login" in out
    assert "_reconcile_reading_a_secret" in out  # the frames are there
    assert "hunter2-db-password" not in out


@pytest.fixture
def root_handlers() -> Iterator[None]:
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    yield
    root.handlers[:] = before
    root.setLevel(level)


@pytest.mark.usefixtures("root_handlers")
def test_a_warning_of_a_library_logging_through_the_standard_library_is_one_json_line_too() -> None:
    """urllib3 says a connection pool is full, or a request retried, through ``logging``: its lines went to standard
    error as plain text, between the JSON lines, whatever the format and however often."""
    stream = io.StringIO()
    logs.configure("json", stream=stream)
    logs.configure("json", stream=stream)  # configured again: still one line per record
    logging.getLogger("urllib3.connectionpool").warning("Connection pool is full, discarding connection: %s", "h")
    logging.getLogger("urllib3.connectionpool").info("Starting new HTTPS connection (1): %s", "h")  # not okt's: below
    [line] = lines(stream)
    record = json.loads(line)
    assert record["event"] == "Connection pool is full, discarding connection: h"
    assert record["level"] == "warning"
    assert record["logger"] == "urllib3.connectionpool"
    assert record["timestamp"].endswith("Z")
