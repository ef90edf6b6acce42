"""``@okt.on_startup``/``@okt.on_cleanup`` mark functions; ``okt run`` finds them in the operator's file."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

import okt
from okt import hooks
from okt.reconciler import loader

OPERATOR = """
import okt

calls = []

@okt.on_startup
def first(client):
    calls.append("first")

@okt.on_startup
def second(client):
    calls.append("second")

@okt.on_cleanup
def bye():
    calls.append("bye")

def helper():
    pass

class Things(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"
"""


def test_the_hooks_of_an_operator_file_are_found_in_definition_order(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(OPERATOR)
    module = loader.load_module(str(path))

    startups, cleanups = hooks.collect(module)

    assert [hooks.name_of(h) for h in startups] == ["first", "second"]
    assert [hooks.name_of(h) for h in cleanups] == ["bye"]
    assert [cls.__name__ for cls in loader.reconcilers_of(module, str(path))] == ["Things"]


async def _warm(client: object) -> None:
    return None


async def _flush() -> None:
    return None


async def _streams() -> Any:
    yield None


@pytest.mark.parametrize(
    ("decorate", "fn"),
    [(hooks.on_startup, _warm), (hooks.on_startup(retries=2, backoff=1.0), _warm), (hooks.on_cleanup, _flush)],
)
def test_an_async_operator_hook_is_accepted_where_it_is_declared(decorate: Any, fn: Any) -> None:
    assert decorate(fn) is fn


@pytest.mark.parametrize("decorate", [hooks.on_startup, hooks.on_startup(timeout=5.0), hooks.on_cleanup])
def test_an_async_generator_operator_hook_is_refused_where_it_is_declared(decorate: Any) -> None:
    with pytest.raises(TypeError, match=r"^_streams is an async generator \('async def' with 'yield'\)"):
        decorate(_streams)


def test_a_start_up_hook_is_declared_bare_or_with_the_limits_of_its_retries() -> None:
    def bare(client: object) -> None: ...

    def limited(client: object) -> None: ...

    assert hooks.on_startup(bare) is bare
    assert hooks.on_startup(retries=5, timeout=120, backoff=2.0)(limited) is limited

    assert hooks.retry_limits_of(bare) == hooks.RetryLimits()
    assert hooks.retry_limits_of(limited) == hooks.RetryLimits(retries=5, timeout=120, backoff=2.0)
    assert hooks.retry_limits_of(lambda client: None) == hooks.RetryLimits()  # given to the Manager undecorated


@pytest.mark.parametrize(
    ("limits", "refused", "said"),
    [
        ({"retries": 0}, ValueError, "retries= is the calls of the hook at most, its first included: >= 1, got 0"),
        ({"retries": -2}, ValueError, "retries= is the calls of the hook at most, its first included: >= 1, got -2"),
        ({"retries": 2.5}, TypeError, "retries= is the calls of the hook at most, an int >= 1, got 2.5"),
        ({"retries": True}, TypeError, "retries= is the calls of the hook at most, an int >= 1, got True"),
        ({"retries": "3"}, TypeError, "retries= is the calls of the hook at most, an int >= 1, got '3'"),
        (
            {"timeout": 0},
            ValueError,
            "timeout= is the seconds past which no retry is called, a finite number > 0, got 0",
        ),
        ({"timeout": -1.5}, ValueError, "timeout= is the seconds past which no retry is called, a finite number > 0, "),
        ({"timeout": float("inf")}, ValueError, "timeout= is the seconds past which no retry is called, a finite "),
        ({"timeout": float("nan")}, ValueError, "timeout= is the seconds past which no retry is called, a finite "),
        ({"timeout": "60"}, TypeError, "timeout= is the seconds past which no retry is called, a number > 0, got '60'"),
        (
            {"timeout": False},
            TypeError,
            "timeout= is the seconds past which no retry is called, a number > 0, got False",
        ),
        ({"backoff": 0.0}, ValueError, "backoff= is the seconds between two calls, a finite number > 0, got 0.0"),
        ({"backoff": True}, TypeError, "backoff= is the seconds between two calls, a number > 0, got True"),
    ],
)
def test_a_start_up_hooks_limit_okt_could_not_keep_is_refused_where_it_is_declared(
    limits: dict[str, Any], refused: type[Exception], said: str
) -> None:
    with pytest.raises(refused) as e:
        hooks.on_startup(**limits)

    assert str(e.value).startswith(said)
    assert "\n" not in str(e.value)


def test_a_start_up_hooks_limit_given_by_position_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^@okt.on_startup takes its limits by name, @okt.on_startup\(retries=5, "):
        hooks.on_startup(5)


PROBES = """
import okt

@okt.probe("depth")
def depth():
    return 3

@okt.probe("last seen")
def last_seen(default=None):
    return default
"""


def test_an_async_probe_is_accepted_where_it_is_declared() -> None:
    async def depth() -> int:
        return 1

    assert hooks.probe("depth")(depth) is depth


def test_the_probes_of_an_operator_file_are_found_by_name(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(PROBES)

    found = hooks.probes_of(loader.load_module(str(path)))

    assert {name: fn() for name, fn in found.items()} == {"depth": 3, "last seen": None}


def test_two_probes_of_one_name_in_a_module_are_refused_where_the_second_is_declared(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(PROBES + '\n@okt.probe("depth")\ndef other():\n    return 4\n')

    with pytest.raises(okt.ConfigurationError) as caught:
        loader.load_module(str(path))

    assert "the probe 'depth' of other is declared already, by depth: give each probe a name of its own" in str(
        caught.value.__cause__ or caught.value
    )


def _needs(x: int) -> int:
    return x


@pytest.mark.parametrize(
    ("name", "fn", "error", "match"),
    [
        ("n", 3, TypeError, r"^the probe 'n' is a function of no arguments, got int$"),
        ("n", _needs, TypeError, r"^the probe 'n' \(_needs\) needs arguments \(x\), but okt calls a probe with none$"),
        ("n", _streams, TypeError, r"^_streams is an async generator"),
        (_needs, None, TypeError, r"^a probe is declared with its name, @okt.probe\('name'\), got function _needs$"),
        ("", None, ValueError, r"^a probe's name is a non-empty printable string without spaces around it, got ''$"),
        (" n", None, ValueError, r"got ' n'$"),
        ("a\nb", None, ValueError, r"got 'a\\nb'$"),
    ],
)
def test_a_probe_okt_cannot_call_or_name_is_refused_where_it_is_declared(
    name: Any, fn: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        hooks.probe(name)(fn)
