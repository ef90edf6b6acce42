"""Daemons' declaration: the decorator's two spellings, the options' backoff, and what a class declares."""

from __future__ import annotations

import math

import pytest

import okt
from okt.reconciler import daemons


class Base(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        return None

    @okt.daemon(backoff=2, max_backoff=10, stop_timeout=3)
    def poll(self, ctx: okt.DaemonContext) -> None:
        return None


class Child(Base):
    def follow(self, ctx: okt.DaemonContext) -> None:  # redefined without the decorator: no longer a daemon
        return None

    @okt.daemon
    def extra(self, ctx: okt.DaemonContext) -> None:
        return None


def test_a_class_declares_its_daemons_bare_or_with_options() -> None:
    assert daemons.declared(Base) == {
        "follow": daemons.Options(),
        "poll": daemons.Options(backoff=2, max_backoff=10, stop_timeout=3),
    }


def test_a_subclass_inherits_adds_and_drops_daemons_by_name() -> None:
    assert set(daemons.declared(Child)) == {"poll", "extra"}


def test_a_reconciler_without_daemons_declares_none() -> None:
    assert daemons.declared(okt.Reconciler) == {}


@pytest.mark.parametrize(("failures", "delay"), [(1, 2.0), (2, 4.0), (3, 8.0), (4, 10.0), (50, 10.0)])
def test_the_restart_backoff_doubles_per_consecutive_failure_up_to_its_cap(failures: int, delay: float) -> None:
    assert daemons.Options(backoff=2, max_backoff=10).delay(failures) == delay


@pytest.mark.parametrize("failures", [1025, 10**6])
def test_the_restart_backoff_stays_at_its_cap_however_long_a_daemon_keeps_failing(failures: int) -> None:
    """At the default cap of a minute, 1025 failures are 17 hours of an external system down: the daemon's next
    start must still be a minute away, not an error that ends its thread."""
    assert daemons.Options().delay(failures) == 60.0


@pytest.mark.parametrize(
    "options",
    [{"max_backoff": math.nan}, {"max_backoff": math.inf}, {"stop_timeout": math.nan}, {"stop_timeout": math.inf}],
)
def test_options_that_are_not_finite_are_refused_at_declaration(options: dict[str, float]) -> None:
    """Accepted, a cap that is not finite let the backoff grow without one (NaN compared false with everything), and
    a stop timeout that is not finite made the stuck-daemon watchdog wait for a time too large for the platform: its
    thread ended on that error, and no stuck daemon of the controller was reported any more."""
    with pytest.raises(ValueError, match="a daemon needs"):
        okt.daemon(**options)


@pytest.mark.parametrize(
    "options", [{"backoff": 0}, {"backoff": -1}, {"backoff": 5, "max_backoff": 1}, {"stop_timeout": -1}]
)
def test_nonsensical_options_are_refused_at_declaration(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="a daemon needs"):
        okt.daemon(**options)


@pytest.mark.parametrize(
    ("options", "named"),
    [({"backoff": "5"}, "backoff='5'"), ({"stop_timeout": None}, "stop_timeout=None"), ({"max_backoff": True}, "True")],
    ids=["a string", "None", "a bool"],
)
def test_options_that_are_not_numbers_are_refused_at_declaration_naming_them(
    options: dict[str, object], named: str
) -> None:
    """A string or None failed inside ``math.isfinite`` (``must be real number, not str``, naming no option), and
    ``True`` was taken for one second."""
    with pytest.raises(ValueError, match="a daemon needs") as refused:
        okt.daemon(**options)  # type: ignore[arg-type]
    assert named in str(refused.value)


def test_a_daemon_given_something_else_than_a_method_says_how_options_are_given() -> None:
    """``@okt.daemon(5)`` handed 5 to the bare form, which failed setting an attribute on it."""
    with pytest.raises(TypeError, match=r"@okt.daemon decorates a method; its options are keywords: @okt.daemon\("):
        okt.daemon(5)  # type: ignore[call-overload]


class Filtered(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        return None

    @okt.daemon(labels={"tier": "cache"})
    def cache(self, ctx: okt.DaemonContext) -> None:
        return None

    @okt.daemon(when=lambda obj: obj["spec"]["watched"])
    def watched(self, ctx: okt.DaemonContext) -> None:
        return None


@pytest.mark.parametrize(
    ("labels", "spec", "concerned"),
    [
        ({"tier": "cache"}, {"watched": True}, {"follow", "cache", "watched"}),
        ({"tier": "web"}, {"watched": True}, {"follow", "watched"}),
        ({}, {"watched": False}, {"follow"}),
        ({"tier": "cache"}, {}, {"follow", "cache"}),  # a when that raises (KeyError): it does not pass
    ],
)
def test_the_daemons_concerning_an_object_are_those_whose_filter_it_passes(
    labels: dict[str, str], spec: dict[str, bool], concerned: set[str]
) -> None:
    obj = {"metadata": {"name": "a", "labels": labels}, "spec": spec}
    assert daemons.concerning(Filtered, obj) == concerned
