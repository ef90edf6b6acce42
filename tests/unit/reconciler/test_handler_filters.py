"""The filters of one timer or daemon: how labels, annotations and when(obj) match an object, and what is refused at
decoration."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

import okt
from okt.reconciler import handler_filters


def obj(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **rest: Any) -> dict[str, Any]:
    return {"metadata": {"name": "a", "uid": "u1", "labels": labels, "annotations": annotations}, **rest}


@pytest.mark.parametrize(
    ("labels", "annotations", "held", "passes"),
    [
        ({"tier": "cache"}, None, obj({"tier": "cache", "app": "x"}), True),
        ({"tier": "cache"}, None, obj({"tier": "web"}), False),
        ({"tier": "cache"}, None, obj(), False),
        ({"tier": None}, None, obj({"tier": ""}), True),  # present, any value (an empty one too)
        ({"tier": None}, None, obj({"app": "x"}), False),
        ({"tier": ""}, None, obj({"tier": ""}), True),
        ({"tier": ""}, None, obj({"tier": "cache"}), False),
        (None, {"example.com/backup": "daily"}, obj(annotations={"example.com/backup": "daily"}), True),
        (None, {"example.com/backup": "daily"}, obj(annotations={"example.com/backup": "Daily"}), False),
        (None, {"example.com/backup": None}, obj(annotations={"example.com/backup": "{}"}), True),
        # Labels are looked for among the labels only, annotations among the annotations.
        ({"tier": "cache"}, None, obj(annotations={"tier": "cache"}), False),
        ({"tier": "cache"}, {"example.com/backup": None}, obj({"tier": "cache"}), False),
        ({"tier": "cache"}, {"example.com/backup": None}, obj({"tier": "cache"}, {"example.com/backup": "x"}), True),
    ],
)
def test_labels_and_annotations_match_each_key_by_its_value_or_any_value_for_none(
    labels: dict[str, str | None] | None, annotations: dict[str, str | None] | None, held: dict[str, Any], passes: bool
) -> None:
    filter_ = handler_filters.declare("@okt.every", labels, annotations)

    assert filter_ is not None
    assert filter_.passes(held) is passes


def test_when_is_asked_only_once_the_labels_and_annotations_matched_and_its_answer_is_taken_for_true_or_false() -> None:
    asked: list[str] = []

    def when(o: Any) -> object:
        asked.append(o["metadata"]["labels"]["tier"])
        return o.get("spec", {}).get("replicas", 0)  # a number: true when not 0

    filter_ = handler_filters.declare("@okt.daemon", {"tier": None}, None, when)
    assert filter_ is not None

    assert filter_.passes(obj({"app": "x"}, spec={"replicas": 3})) is False
    assert asked == []
    assert filter_.passes(obj({"tier": "cache"}, spec={"replicas": 3})) is True
    assert filter_.passes(obj({"tier": "web"}, spec={"replicas": 0})) is False
    assert asked == ["cache", "web"]


def test_no_filter_given_is_none() -> None:
    assert handler_filters.declare("@okt.every") is None
    assert handler_filters.declare("@okt.every", {}, {}, None) is None


def test_the_filter_keeps_its_own_copy_of_what_it_was_given() -> None:
    labels: dict[str, str | None] = {"tier": "cache"}
    filter_ = handler_filters.declare("@okt.every", labels)
    labels["tier"] = "web"

    assert filter_ is not None
    assert filter_.passes(obj({"tier": "cache"}))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"when": "tier == cache"}, r"\(when='tier == cache'\): expected a callable when\(obj\)"),
        ({"when": True}, r"\(when=True\): expected a callable"),
        ({"labels": {"tier": True}}, r"\(labels=\{'tier': True\}\): expected a mapping of label keys to a value"),
        ({"labels": {"tier": 3}}, r"\(labels=.*expected a mapping of label keys"),
        (
            {"labels": {"tier": "a cache"}},
            r"\(labels=.*expected a mapping of label keys",
        ),  # no label has that value: it would never match
        ({"labels": {"tier": "x" * 64}}, r"\(labels=.*expected a mapping of label keys"),
        ({"labels": ["tier"]}, r"\(labels=\['tier'\]\): expected a mapping"),
        ({"labels": "tier=cache"}, r"\(labels=.*expected a mapping of label keys"),
        ({"labels": {"not a key": "x"}}, r"\(labels=.*expected a mapping of label keys"),
        ({"annotations": {"example.com/backup": 1}}, r"\(annotations=.*expected a mapping of annotation keys"),
        ({"annotations": {"example.com/backup", "x"}}, r"\(annotations=.*expected a mapping of annotation keys"),
    ],
)
@pytest.mark.parametrize("decorator", ["every", "daemon"])
def test_a_timer_or_daemon_filter_that_cannot_be_one_is_refused_at_decoration_naming_it(
    decorator: str, options: dict[str, Any], message: str
) -> None:
    mark = (lambda **kw: okt.every(seconds=30, **kw)) if decorator == "every" else okt.daemon
    with pytest.raises(TypeError, match=rf"@okt.{decorator}{message}"):

        class Filtered(okt.Reconciler):
            @mark(**options)
            def work(self, ctx: Any) -> None: ...


def test_an_annotation_value_is_any_str_a_label_value_one_a_label_can_have() -> None:
    assert handler_filters.declare("@okt.every", annotations={"example.com/config": '{"a": 1}'}) is not None
    assert handler_filters.declare("@okt.every", labels={"example.com/tier": "cache-1.a_b"}) is not None


def test_a_when_that_raises_does_not_pass_and_is_logged_once_per_object_while_it_keeps_raising() -> None:
    def when(o: Any) -> bool:
        if o["metadata"]["labels"]["mode"] == "bad":
            raise KeyError("spec")
        return True

    filter_ = handler_filters.declare("@okt.every", when=when)
    assert filter_ is not None
    raised = handler_filters.Raised()
    log = structlog.get_logger("test")
    bad, good = obj({"mode": "bad"}), obj({"mode": "good"})

    with structlog.testing.capture_logs() as logged:
        results = [raised.passes(filter_, bad, "u1", "backup", log, "timer") for _ in range(3)]
        results.append(raised.passes(filter_, bad, "u2", "backup", log, "timer"))  # another object
        results.append(raised.passes(filter_, good, "u1", "backup", log, "timer"))
        results.append(raised.passes(filter_, bad, "u1", "backup", log, "timer"))  # raising again: said again

    assert results == [False, False, False, False, True, False]
    errors = [entry for entry in logged if entry["log_level"] == "error"]
    assert len(errors) == 3
    assert errors[0]["event"] == "when() of a timer raised: the object does not pass its filter"
    assert errors[0]["timer"] == "backup"
    assert errors[0]["error"] == "KeyError: 'spec'"
    assert errors[0]["exc_info"] is not None

    raised.forget("u1", ["backup"])
    raised.forget("u2", ["backup"])
    assert len(raised) == 0


def test_a_ctrl_c_inside_a_when_is_the_user_s_and_goes_on_where_any_other_exception_is_the_filter_s() -> None:
    """A filter's failure of any kind is logged and the object left out (one escaping would end the informer's
    thread), but for Ctrl-C: on the main thread (``okt.reconcile`` in a script) it is the user stopping the run."""

    def when(o: Any) -> bool:
        raise KeyboardInterrupt

    class Filtered(okt.Reconciler):
        api_version = "example.com/v1"
        kind = "Widget"

        def when(self, o: Any) -> bool:
            raise KeyboardInterrupt

    filter_ = handler_filters.declare("@okt.every", when=when)
    assert filter_ is not None
    with pytest.raises(KeyboardInterrupt):
        handler_filters.Raised().passes(filter_, obj({"mode": "x"}), "u1", "backup", structlog.get_logger("t"), "timer")
    with pytest.raises(KeyboardInterrupt):
        Filtered().selects(obj({"mode": "x"}))
