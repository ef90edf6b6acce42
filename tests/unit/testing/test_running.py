"""okt.testing.RunningOperator given an operator file it cannot load: okt run's error, nothing started."""

from __future__ import annotations

import pathlib

import pytest

from okt import errors
from okt.testing import FakeClient, RunningOperator


def test_an_operator_file_that_is_missing_or_defines_no_reconciler_is_refused_as_okt_run_refuses_it(
    tmp_path: pathlib.Path,
) -> None:
    with pytest.raises(errors.ConfigurationError, match=r"no such operator file: .*missing\.py"):
        RunningOperator.start(FakeClient(), tmp_path / "missing.py")
    empty = tmp_path / "empty_operator.py"
    empty.write_text("import okt\n\n\n@okt.on_startup\ndef hook(client):\n    raise AssertionError('ran')\n")
    with pytest.raises(errors.ConfigurationError, match=r"defines no okt\.Reconciler subclass"):
        RunningOperator.start(FakeClient(), str(empty))
