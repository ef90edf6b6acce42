"""The values of the Secrets a reconcile (or an admission review) reads are left out of what okt says of an error:
its message (Ready, an Event, a webhook's refusal) and its log line, a traceback's included."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, ClassVar

import pydantic
import pytest
import structlog.testing

import okt
from okt import errors, secret_values
from okt.kube import fence, kinds
from okt.reconciler import admission, conversion, handler_filters, indexes, watches
from okt.runtime import cleanup, daemons, probes
from okt.testing import FakeClient, condition

PASSWORD = "hunter2-in-clear"
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "login", "namespace": "ns"},
    "data": {"password": base64.b64encode(PASSWORD.encode()).decode(), "pin": base64.b64encode(b"42").decode()},
}
WIDGET = kinds.Kind("example.com/v1", "Widget", "widgets")


def test_outside_a_block_nothing_is_held_nor_left_out() -> None:
    secret_values.hold("v1", "Secret", [SECRET])

    assert secret_values.left_out(f"bad {PASSWORD}") == f"bad {PASSWORD}"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"invalid literal for int() with base 10: '{PASSWORD}'", "int() with base 10: '(a Secret's value, left out)'"),
        (f"bad {SECRET['data']['password']}", "bad (a Secret's value, left out)"),  # as stored, base64
        ("a token: t0k3n-of-the-text", "a token: (a Secret's value, left out)"),  # a stringData value
        (f"{PASSWORD}, {PASSWORD}-more", "(a Secret's value, left out), (a Secret's value, left out)-more"),
        ("pin 42 is 42", "pin 42 is 42"),  # shorter than SHORTEST: it would be taken out of every number
    ],
    ids=["decoded", "base64", "string-data", "each-occurrence", "short"],
)
def test_the_values_of_a_secret_read_in_a_block_are_left_out_of_a_text(text: str, said: str) -> None:
    with secret_values.held():
        secret_values.hold("v1", "Secret", [SECRET, {"stringData": {"token": "t0k3n-of-the-text"}}])
        secret_values.hold("v1", "ConfigMap", [{"data": {"other": "in a ConfigMap"}}])  # not a Secret: kept

        assert said in secret_values.left_out(text)
        assert secret_values.left_out("in a ConfigMap") == "in a ConfigMap"


def test_a_value_holding_another_is_left_out_whole_and_never_out_of_what_stands_for_it() -> None:
    with secret_values.held():
        secret_values.hold("v1", "Secret", [{"stringData": {"a": "left", "b": "left-and-more"}}])

        assert secret_values.left_out("left-and-more left") == f"{secret_values.LEFT_OUT} {secret_values.LEFT_OUT}"


def test_message_of_and_the_traceback_okt_logs_leave_the_value_out() -> None:
    try:
        {}[PASSWORD]
    except KeyError as exc:
        raised = exc
    with secret_values.held():
        secret_values.hold("v1", "Secret", [SECRET])

        assert errors.said(raised) == "KeyError: '(a Secret's value, left out)'"
        where = errors.where_raised(raised)
        assert "exc_info" not in where and PASSWORD not in where["stack"], where
        assert where["stack"].endswith("KeyError: '(a Secret's value, left out)'\n"), where["stack"]


class Vault(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.Mutator:
            read = ctx.client.get(ctx.client.resolve("v1", "Secret"), "login", "ns")
            int(base64.b64decode(read["data"]["password"]).decode())
        return None


def test_a_hook_s_exception_quoting_a_secret_it_read_is_said_without_the_value_in_ready_and_the_log() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    fake = FakeClient(kinds=[WIDGET], objects=[widget, SECRET])

    with structlog.testing.capture_logs() as logged:
        okt.reconcile(Vault(), fake, None, "ns", "w")

    ready = condition(fake.stored(WIDGET, "w", "ns"), "Ready")
    assert ready is not None and ready["message"] == (
        "invalid literal for int() with base 10: '(a Secret's value, left out)'"
    ), ready
    assert PASSWORD not in repr(logged), logged
    assert secret_values.left_out(PASSWORD) == PASSWORD  # the reconcile's record went with it


class Secrets(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"
    plural = "secrets"

    def check(self, ctx: okt.Context) -> None:
        password = base64.b64decode(ctx.cr.raw["data"]["password"]).decode()
        if len(password) > 10:
            raise okt.PermanentError(f"{password} is longer than 10 characters")
        {"admin": 1}[password]


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "uid": "u-1",
        "operation": "CREATE",
        "object": obj,
        "kind": {"group": "", "version": "v1", "kind": "Secret"},
        "resource": {"group": "", "version": "v1", "resource": "secrets"},
    }


def test_a_check_of_a_secret_under_review_is_refused_and_logged_without_its_values() -> None:
    short = {**SECRET, "data": {"password": base64.b64encode(b"short-pw").decode()}}

    refused = admission.validate(Secrets(), review(SECRET), FakeClient())
    with structlog.testing.capture_logs() as logged:
        buggy = admission.validate(Secrets(), review(short), FakeClient())

    assert refused.message == "(a Secret's value, left out) is longer than 10 characters", refused
    assert buggy.message == "internal error in check: KeyError", buggy
    [line] = logged
    assert line["error"] == "KeyError: '(a Secret's value, left out)'", line


class Generated(okt.SecretResource):
    """A Secret child whose password the operator makes (generated, or read from a vault of its own)."""

    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
"""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["stringData"] = {"password": "made-" + PASSWORD}


class Maker(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"
    owns = (Generated,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Generated(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.Mutator:  # the child made, not written yet
            raise RuntimeError(f"the operand refused the password made-{PASSWORD}")
        return None


def test_a_hook_s_exception_quoting_a_secret_child_s_value_is_said_without_it() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    fake = FakeClient(kinds=[WIDGET], objects=[widget])

    okt.reconcile(Maker(), fake, None, "ns", "w")

    ready = condition(fake.stored(WIDGET, "w", "ns"), "Ready")
    assert ready is not None and ready["message"] == "the operand refused the password (a Secret's value, left out)"


class Weak(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Widget"
    plural = "widgets"

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.CRChecker:
            read = ctx.client.get(ctx.client.resolve("v1", "Secret"), "login", "ns")
            password = base64.b64decode(read["data"]["password"]).decode()
            return okt.give_up(f"the password {password} is too weak")
        return None


def test_a_give_up_whose_reason_quotes_a_secret_it_read_is_said_without_the_value() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    fake = FakeClient(kinds=[WIDGET], objects=[widget, SECRET])

    run = okt.reconcile(Weak(), fake, None, "ns", "w")

    assert str(run.outcome) == "give_up(the password (a Secret's value, left out) is too weak)"


# The hooks that run outside a reconcile: each call is a block of its own, or (an index function, run for every object
# of every event) the object it was given is held when it fails.

SECRET_KIND = kinds.BUILTIN[("v1", "Secret")]
SAID = "ValueError: invalid literal for int() with base 10: '(a Secret's value, left out)'"


def port_of(client: FakeClient) -> int:
    """A hook's bug: the port it reads from a Secret holds no number."""
    read = client.get(SECRET_KIND, "login", "ns")
    return int(base64.b64decode(read["data"]["password"]).decode())


def test_a_clean_up_hook_failing_on_a_secret_s_value_it_read_is_logged_and_told_without_it() -> None:
    fake = FakeClient(objects=[SECRET])
    told: list[str] = []

    with structlog.testing.capture_logs() as logged:
        cleanup.run(
            [lambda: port_of(fake)], left=daemons.fixed(5), fence=fence.Fence(lambda *_: None), failed=told.append
        )

    [line] = [line for line in logged if line["event"] == "a clean-up hook failed"]
    assert line["error"] == SAID, line
    assert len(told) == 1 and told[0].endswith(SAID), told
    assert PASSWORD not in repr(logged)


def test_a_probe_failing_on_a_secret_s_value_it_read_is_logged_without_it() -> None:
    fake = FakeClient(objects=[SECRET])

    with structlog.testing.capture_logs() as logged:
        report = probes.Probes({"backend": lambda: port_of(fake)}).report()

    assert report["failed"] == {"backend": "ValueError"}
    assert [line["error"] for line in logged if line["event"] == "a probe failed"] == [SAID]
    assert PASSWORD not in repr(logged)


class GadgetSpec(pydantic.BaseModel):
    port: int = 0


class Gadgets(okt.Reconciler):
    """Gadgets whose v1 reads the port the v1alpha1 did not hold from a Secret, through a client of their own."""

    api_version = "example.com/v1"
    kind = "Gadget"
    spec_model = GadgetSpec
    spec_models = {"v1alpha1": GadgetSpec}
    client: ClassVar[FakeClient]
    converters = {("v1alpha1", "v1"): lambda spec: GadgetSpec(port=port_of(Gadgets.client))}


def test_a_converter_failing_on_a_secret_s_value_it_read_fails_the_review_without_it() -> None:
    """The review's failure (``kubectl`` prints it) names the exception by its class; the log line says it whole,
    without the value."""
    Gadgets.client = FakeClient(objects=[SECRET])
    meta = {"name": "g", "namespace": "ns"}
    obj = {"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": meta, "spec": {}}

    with structlog.testing.capture_logs() as logged:
        result = conversion.convert(Gadgets, {"desiredAPIVersion": "example.com/v1", "objects": [obj]})

    assert result.failure is not None and result.failure.endswith(
        "internal error in converter v1alpha1->v1: ValueError"
    )
    assert [line["error"] for line in logged if line["log_level"] == "error"] == [SAID], logged
    assert PASSWORD not in repr(logged)


def test_an_index_function_of_secrets_failing_on_a_value_is_logged_without_it() -> None:
    """An index of Secrets (``okt.watch("Secret", indexes=...)``, or the reconciler's own ``indexes`` when it watches
    them) that fails on a value quotes it: the Secret it was given is held for what is said of its failure."""

    def port(obj: Mapping[str, Any]) -> list[int]:
        return [int(base64.b64decode(obj["data"]["password"]).decode())]

    with structlog.testing.capture_logs() as logged:
        assert watches.safe_index(port, SECRET) == ()
        assert indexes.Indexer("ports", port)(SECRET) == ()

    assert [line["error"] for line in logged] == [SAID, SAID], logged
    assert PASSWORD not in repr(logged)
    assert secret_values.left_out(PASSWORD) == PASSWORD  # held for the line only


def test_a_mapping_of_a_watched_secret_failing_on_its_value_is_logged_without_it() -> None:
    def primaries(obj: Mapping[str, Any], ctx: watches.MapContext) -> list[tuple[str, str]]:
        return [("ns", {"main": "w"}[base64.b64decode(obj["data"]["password"]).decode()])]

    with structlog.testing.capture_logs() as logged:
        ctx = watches.MapContext(WIDGET, FakeClient(), structlog.get_logger("t"), find=lambda name, value: [])
        keys = watches.keys_for_event(watches.watch(SECRET_KIND, map=primaries), "ADDED", SECRET, None, ctx)

    assert keys == []
    assert [line["error"] for line in logged] == ["KeyError: '(a Secret's value, left out)'"], logged
    assert PASSWORD not in repr(logged)


class Stopped(BaseException):
    """No ``Exception``: the operator's own, as ``SystemExit`` would be."""


def test_an_index_function_or_mapping_raising_no_exception_on_a_secret_s_value_is_logged_without_it() -> None:
    """One that is no ``Exception`` is said as one is, in the Secret's block, and the object left out: it escaped,
    ended the informer's thread, and Python's own last word (or the mapping thread's line) quoted the value."""

    def port(obj: Mapping[str, Any]) -> list[int]:
        raise Stopped(f"no port {obj['data']['password']}")

    def primaries(obj: Mapping[str, Any], ctx: watches.MapContext) -> list[tuple[str, str]]:
        raise Stopped(f"no port {obj['data']['password']}")

    with structlog.testing.capture_logs() as logged:
        assert watches.safe_index(port, SECRET) == ()
        assert indexes.Indexer("ports", port)(SECRET) == ()
        ctx = watches.MapContext(WIDGET, FakeClient(), structlog.get_logger("t"), find=lambda name, value: [])
        assert watches.keys_for_event(watches.watch(SECRET_KIND, map=primaries), "ADDED", SECRET, None, ctx) == []

    assert [line["error"] for line in logged] == ["Stopped: no port (a Secret's value, left out)"] * 3, logged
    assert SECRET["data"]["password"] not in repr(logged)


class Logins(okt.Reconciler):
    """A reconciler of Secrets whose filter fails on the value of the Secret they are given."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"

    def when(self, obj: Mapping[str, Any]) -> bool:
        return int(base64.b64decode(obj["data"]["password"]).decode()) > 0


def test_a_filter_failing_on_the_value_of_the_secret_it_is_given_is_logged_without_it() -> None:
    """``when(obj)`` of a reconciler of Secrets, and of its daemon, runs at each event, in no block: the Secret it
    was given is held for what is said of its failure, a traceback included."""
    filter_ = handler_filters.declare("@okt.daemon", when=Logins().when)
    assert filter_ is not None

    with structlog.testing.capture_logs() as logged:
        assert Logins().selects(SECRET) is False
        raised = handler_filters.Raised()
        assert raised.passes(filter_, SECRET, "u1", "follow", structlog.get_logger("t"), "daemon") is False

    assert [line["error"] for line in logged] == [SAID, SAID], logged
    assert "exc_info" not in logged[1] and SAID in logged[1]["stack"], logged[1]
    assert PASSWORD not in repr(logged)


@pytest.mark.parametrize(
    ("refused", "said"),
    [
        (
            "Invalid value: \"<secret contents redacted>\": invalid character 'h' looking for beginning of value",
            "invalid value: invalid character looking for beginning of value",
        ),
        ("invalid character '\\'' after object key", "invalid character after object key"),
        ("invalid character '\\x01' in string literal", "invalid character in string literal"),
    ],
    ids=["dockerconfigjson", "quote", "control"],
)
def test_the_character_of_a_secret_s_value_a_json_decoder_quotes_is_left_out_of_a_refusal(
    refused: str, said: str
) -> None:
    assert errors.without_values(refused) == said
