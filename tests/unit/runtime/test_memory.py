"""Memory tuning: arenas capped unless the deployer chose, and a trim only after work, never during it."""

from __future__ import annotations

import pytest

from okt.runtime import memory

glibc = pytest.mark.skipif(not memory.available(), reason="malloc is not glibc's here")


@glibc
def test_arenas_are_capped_unless_the_environment_already_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert memory.limit_arenas(2) is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert memory.limit_arenas(2) is False


def test_the_trimmer_waits_for_work_and_for_quiet() -> None:
    state = {"done": 0, "busy": False}
    trimmer = memory.Trimmer(lambda: state["done"], lambda: state["busy"])
    assert trimmer.check() is False  # nothing was done yet
    state["done"], state["busy"] = 5, True
    assert trimmer.check() is False  # reconciles still running
    state["busy"] = False
    assert trimmer.check() is True
    assert trimmer.check() is False  # nothing new since
    state["done"] = 6
    assert trimmer.check() is True
    assert trimmer.trims == 2
