"""Each test here leaves the process's logging as it found it.

``okt run`` configures logging for the whole process (okt.runtime.logs): structlog's level filter and output stream,
and a handler on the root logger. Invoked in-process, as these tests do, that configuration outlived the test, and the
tests after it in the same session saw its INFO filter (their debug lines never reached ``capture_logs``) and wrote to
the stream of an invocation long over.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from okt.runtime import logs


@pytest.fixture(autouse=True)
def logging_as_it_was() -> Iterator[None]:
    before = structlog.get_config()
    processors = list(before["processors"])  # capture_logs changes the list in place
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    structlog.configure(**{**before, "processors": processors})
    for handler in [h for h in root.handlers if isinstance(h, logs._StandardHandler) and h not in handlers]:
        root.removeHandler(handler)
        handler.close()
