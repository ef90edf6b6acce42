"""``docs/guide/debugging.md``: the condition reasons its table lists are reasons okt writes, and the reconcile lines it
(and the Running guide) quotes are the lines okt logs."""

from __future__ import annotations

import io
import pathlib
import re
from collections.abc import Iterator

import pytest
import structlog

import okt
from okt import errors
from okt.runtime import logs
from okt.status import events
from tests.unit.reconciler.webapps import WEBAPP, webapp

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "debugging.md"
RUNNING = PAGE.parent / "running.md"


def _reasons_okt_writes() -> set[str]:
    classes = [
        value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, errors.OktError)
    ]
    return {cls.reason for cls in classes} | {errors.UNKNOWN_REASON}


def test_every_reason_of_the_table_is_one_okt_writes() -> None:
    table = re.search(r"\| reason \| what happened \| what okt does next \|\n(.*?)\n\n", PAGE.read_text(), re.DOTALL)
    assert table, "the page lost its table of reasons"
    listed = [
        name for row in table.group(1).splitlines()[1:] for name in re.findall(r"`([A-Za-z]+)`", row.split("|")[1])
    ]
    assert listed
    assert [name for name in listed if name not in _reasons_okt_writes()] == []


#: A reconcile's line as the console renders it: an optional timestamp, the level, the event, then the fields.
_RECONCILED = re.compile(r"^(?:\S+Z )?\[(\w+)\s*\] reconciled\s+(.*)$")
#: One field of a console line: a bare value, or one the renderer quoted.
_FIELD = re.compile(r"(\w+)=('[^']*'|\S+)")


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def quoted_lines() -> list[tuple[str, str, str]]:
    """``(page, level, fields)`` of every reconcile line the pages quote."""
    return [
        (page.name, found.group(1), found.group(2))
        for page in (PAGE, RUNNING)
        for found in map(_RECONCILED.match, page.read_text(encoding="utf-8").splitlines())
        if found
    ]


def fields_of(text: str) -> dict[str, str]:
    return dict(_FIELD.findall(text))


class WebApps(okt.Reconciler):
    api_version = WEBAPP.api_version
    kind = WEBAPP.kind


class Refused(WebApps):
    def check(self, ctx: okt.Context) -> None:
        raise okt.InvalidSpec("spec.host: must name a host", field="spec.host")


def logged_lines() -> dict[str, dict[str, str]]:
    """``{level: fields}`` of the reconcile lines a reconcile that writes and one that fails log on a console."""
    stream = io.StringIO()
    logs.configure("console", stream=stream)
    fake = webapp()
    for reconciler in (WebApps(), Refused()):
        with logs.reconcile_context("webapp", "shop", "web"):
            okt.reconcile(reconciler, fake, None, "shop", "web", recorder=events.EventRecorder(fake, "webapp"))
    return {
        found.group(1): fields_of(found.group(2))
        for found in map(_RECONCILED.match, stream.getvalue().splitlines())
        if found
    }


def test_the_reconcile_lines_quoted_carry_the_fields_okt_logs() -> None:
    quoted = quoted_lines()
    assert [(page, level) for page, level, _ in quoted] == [
        ("debugging.md", "info"),
        ("debugging.md", "warning"),
        ("running.md", "info"),
    ]
    logged = logged_lines()
    assert set(logged) == {"info", "warning"}
    for page, level, text in quoted:
        assert list(fields_of(text)) == list(logged[level]), (page, text)


def test_the_reconcile_lines_quoted_are_written_as_the_console_renders_them() -> None:
    """A value holding a space or an ``=`` is quoted on the console (``results='created=0 ...'``): a ``grep`` or a
    parser written from the page must find the line."""
    stream = io.StringIO()
    logs.configure("console", stream=stream)
    for _, level, text in quoted_lines():
        values = {key: value.strip("'") for key, value in fields_of(text).items()}
        getattr(structlog.get_logger(), level)("reconciled", **values)
    rendered = [found.group(2) for found in map(_RECONCILED.match, stream.getvalue().splitlines()) if found]
    assert rendered == [text for _, _, text in quoted_lines()]
