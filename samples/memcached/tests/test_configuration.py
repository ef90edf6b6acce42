"""How the operator is configured and loaded: the finalizer switch and ``main.py`` (pure: no cluster)."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest

import okt
from okt.reconciler import loader
from samples.memcached.memcached_operator import (
    FINALIZER,
    FINALIZER_ENV,
    MemcachedReconciler,
    MemcachedReconcilerWithoutFinalizer,
    finalizer_enabled,
    reconciler_class,
)

OPERATOR = pathlib.Path(__file__).resolve().parents[1] / "main.py"


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({}, True),
        ({FINALIZER_ENV: "on"}, True),
        ({FINALIZER_ENV: "true"}, True),
        ({FINALIZER_ENV: "off"}, False),
        ({FINALIZER_ENV: " OFF "}, False),
        ({FINALIZER_ENV: "false"}, False),
        ({FINALIZER_ENV: "no"}, False),
        ({FINALIZER_ENV: "0"}, False),
        ({FINALIZER_ENV: "Disabled"}, False),
        ({FINALIZER_ENV: "enabled"}, True),
        ({FINALIZER_ENV: ""}, True),
    ],
)
def test_the_finalizer_is_on_unless_the_environment_turns_it_off(environ: dict[str, str], enabled: bool) -> None:
    assert finalizer_enabled(environ) is enabled


@pytest.mark.parametrize("value", ["of", "disable", "none", "nope"])
def test_a_finalizer_switch_that_says_neither_on_nor_off_is_refused_with_what_is_accepted(value: str) -> None:
    with pytest.raises(ValueError, match=f"{FINALIZER_ENV}={value!r}.*off"):
        finalizer_enabled({FINALIZER_ENV: value})


def test_okt_run_names_a_finalizer_switch_it_cannot_read_in_one_line(
    monkeypatch: pytest.MonkeyPatch, isolated_imports: None
) -> None:
    monkeypatch.setenv(FINALIZER_ENV, "disable")

    with pytest.raises(okt.ConfigurationError) as refused:
        loader.load_reconcilers(str(OPERATOR))

    assert f"{FINALIZER_ENV}='disable'" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("finalizer", "environment", "expected"),
    [
        (True, "off", MemcachedReconciler),
        (False, "on", MemcachedReconcilerWithoutFinalizer),
        (None, "on", MemcachedReconciler),
        (None, "off", MemcachedReconcilerWithoutFinalizer),
    ],
)
def test_an_explicit_choice_of_finalizer_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, finalizer: bool | None, environment: str, expected: type[MemcachedReconciler]
) -> None:
    monkeypatch.setenv(FINALIZER_ENV, environment)

    assert reconciler_class(finalizer) is expected


@pytest.mark.parametrize(
    ("reconciler", "finalizer", "keeps_inventory"),
    [(MemcachedReconciler, FINALIZER, True), (MemcachedReconcilerWithoutFinalizer, None, False)],
)
def test_only_the_reconciler_with_the_finalizer_keeps_an_inventory(
    reconciler: type[MemcachedReconciler], finalizer: str | None, keeps_inventory: bool
) -> None:
    assert reconciler.finalizer == finalizer
    assert reconciler().keeps_inventory is keeps_inventory


@pytest.fixture
def isolated_imports() -> Iterator[None]:
    """Loading main.py puts its directory on sys.path and imports memcached_operator: undo both."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("environment", "expected"), [("on", "MemcachedReconciler"), ("off", "MemcachedReconcilerWithoutFinalizer")]
)
def test_okt_run_finds_exactly_one_reconciler_in_main_py(
    monkeypatch: pytest.MonkeyPatch, isolated_imports: None, environment: str, expected: str
) -> None:
    monkeypatch.setenv(FINALIZER_ENV, environment)

    found = loader.load_reconcilers(str(OPERATOR))

    assert [(cls.__name__, cls.kind, cls.api_version) for cls in found] == [
        (expected, "Memcached", "cache.example.com/v1alpha1")
    ]
