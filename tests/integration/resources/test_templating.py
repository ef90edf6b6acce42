"""A custom resource's values land in their template slots as data — checked on the Deployment a real API server keeps.

Whoever may create the custom resource must not be able to shape the operator's children: a spec value written as
YAML (a newline, an indent, a closing quote) tries to add a privileged security context, a host network and a
``hostPath`` volume to the Deployment. The live Deployment must have exactly the template's structure, each hostile
text sitting in its own slot as a plain string; a value that cannot be placed (a label key colliding with the
template's own) ends the reconcile ``Ready=False`` with reason ``InvalidSpec`` and creates nothing. A string YAML would
read as something else (``yes``, ``12:30``, ``0x10``, a date, ``""``) is that very string in the ConfigMap the server
keeps.
"""

from __future__ import annotations

import pathlib

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, condition, envtest, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "greeter"

# Each payload is YAML text aimed at the slot it is given to (matching the template's indentation below).
PRIVILEGED_IMAGE = "nginx:1.25\n          securityContext:\n            privileged: true"
MOUNTING_ARG = "hello\n          volumeMounts: [{name: host, mountPath: /host}]"
HOST_GREETING = 'hi"\n      hostNetwork: true\n      volumes: [{name: host, hostPath: {path: /}}] #'
NOTE = "x\n    injected: 'yes'"


class GreeterSpec(pydantic.BaseModel):
    image: str = "nginx:1.25"
    arg: str = "hello"
    greeting: str = "hi"
    note: str = "plain"
    label_key: str = pydantic.Field("tier", alias="labelKey")


class GreeterDeployment(okt.DeploymentResource):
    template = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
  annotations:
    note: {{ cr.spec.note }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{ name }}
  template:
    metadata:
      labels:
        app: {{ name }}
        {{ cr.spec.label_key }}: web
    spec:
      containers:
        - name: main
          image: {{ cr.spec.image }}
          args:
            - --greeting
            - {{ cr.spec.arg }}
          env:
            - name: GREETING
              value: "{{ cr.spec.greeting }}"
"""


class GreeterReconciler(shared.WidgetReconciler):
    spec_model = GreeterSpec
    owns = (GreeterDeployment,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GreeterDeployment(ctx.cr)]


def reconcile(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> okt.Run:
    return shared.reconcile_widget(GreeterReconciler(), kube, kind, namespace, NAME)


def test_spec_values_written_as_yaml_stay_strings_in_their_slots_of_the_live_deployment(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(
        kube, widget_kind, namespace, NAME, image=PRIVILEGED_IMAGE, arg=MOUNTING_ARG, greeting=HOST_GREETING, note=NOTE
    )

    run = reconcile(kube, widget_kind, namespace)

    assert run.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "apps/v1", "Deployment", namespace, NAME)
    assert live is not None
    pod = live["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "volumes" not in pod
    assert pod.get("hostNetwork") is not True
    assert "securityContext" not in container or not container["securityContext"].get("privileged")
    assert "volumeMounts" not in container
    assert container["image"] == PRIVILEGED_IMAGE
    assert container["args"] == ["--greeting", MOUNTING_ARG]
    assert container["env"] == [{"name": "GREETING", "value": HOST_GREETING}]
    assert live["metadata"]["annotations"]["note"] == NOTE
    assert live["spec"]["template"]["metadata"]["labels"] == {"app": NAME, "tier": "web"}
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None
    assert ready["status"] == "True"


def test_a_value_that_cannot_be_placed_is_an_invalid_spec_and_creates_nothing(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, labelKey="app")

    run = reconcile(kube, widget_kind, namespace)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert run.outcome.reason is not None and run.outcome.reason.startswith("InvalidSpec: ")
    assert shared.get_child(kube, "apps/v1", "Deployment", namespace, NAME) is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert "app" in ready["message"]


# Strings YAML 1.1 reads as a boolean, null, a number (hexadecimal, octal, sexagesimal, infinite) or a date.
LOOKALIKES = ["yes", "no", "on", "off", "y", "~", "null", "1e3", "0x10", "0o7", "012", "1_000", "12:30", ".inf"]
LOOKALIKES += ["2026-01-01", ""]


class WordsSpec(pydantic.BaseModel):
    words: list[str]
    label: str


class WordsConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-words
  namespace: {{ namespace }}
  labels:
    word: {{ cr.spec.label }}
  annotations:
    first: {{ cr.spec.words[0] }}
data:
{% for word in cr.spec.words %}
  w{{ loop.index }}: {{ word }}
{% endfor %}
"""


class WordsReconciler(shared.WidgetReconciler):
    spec_model = WordsSpec
    owns = (WordsConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [WordsConfig(ctx.cr)]


def test_spec_strings_yaml_would_read_as_other_types_are_those_strings_in_the_live_config_map(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, words=LOOKALIKES, label="yes")

    run = shared.reconcile_widget(WordsReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-words")
    assert live is not None
    assert live["data"] == {f"w{i}": word for i, word in enumerate(LOOKALIKES, 1)}
    assert live["metadata"]["labels"]["word"] == "yes"
    assert live["metadata"]["annotations"]["first"] == "yes"


class RulerSpec(pydantic.BaseModel):
    width: int


class RulerConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-ruler
  namespace: {{ namespace }}
data:
  ruler: "{{ '-' * cr.spec.width }}"
"""


class RulerReconciler(shared.WidgetReconciler):
    spec_model = RulerSpec
    owns = (RulerConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [RulerConfig(ctx.cr)]


def test_a_value_that_would_build_a_child_of_any_size_is_an_invalid_spec_and_other_objects_are_served(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "huge", width=10**10)
    shared.make_widget(kube, widget_kind, namespace, "small", width=3)

    huge = shared.reconcile_widget(RulerReconciler(), kube, widget_kind, namespace, "huge")
    small = shared.reconcile_widget(RulerReconciler(), kube, widget_kind, namespace, "small")

    assert huge.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "huge-ruler") is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "huge"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith("template line 8: repeating a str of length 1 10000000000 times")
    assert "Traceback" not in ready["message"]
    assert small.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, "small-ruler")
    assert live is not None
    assert live["data"] == {"ruler": "---"}


class PaddedSpec(pydantic.BaseModel):
    width: int
    text: str = "abc"
    columns: int = 2


class PaddedConfig(okt.MutableResource):
    """Text padded and wrapped to widths the custom resource gives: through bytes, and ``| wordwrap``."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-padded
  namespace: {{ namespace }}
data:
  padded: "{{ 'x'.encode().ljust(cr.spec.width, '.'.encode()).decode() }}"
  wrapped: "{{ cr.spec.text | wordwrap(cr.spec.columns, wrapstring='/') }}"
"""


class PaddedReconciler(shared.WidgetReconciler):
    spec_model = PaddedSpec
    owns = (PaddedConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PaddedConfig(ctx.cr)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"width": 10**10}, "template line 8: bytes.ljust would build 10000000000 bytes, more than"),
        ({"width": 3, "text": "x" * 1_000_000, "columns": 1}, "template line 9: | wordwrap would copy 500000000000 "),
    ],
    ids=["bytes", "wordwrap"],
)
def test_a_value_sizing_bytes_or_a_long_wordwrap_is_an_invalid_spec_and_other_objects_are_served(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, spec: dict[str, object], message: str
) -> None:
    shared.make_widget(kube, widget_kind, namespace, "huge", **spec)
    shared.make_widget(kube, widget_kind, namespace, "small", width=3, text="ab cd")

    huge = shared.reconcile_widget(PaddedReconciler(), kube, widget_kind, namespace, "huge")
    small = shared.reconcile_widget(PaddedReconciler(), kube, widget_kind, namespace, "small")

    assert huge.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "huge-padded") is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "huge"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith(message)
    assert small.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, "small-padded")
    assert live is not None
    assert live["data"] == {"padded": "x..", "wrapped": "ab/cd"}


class NamedPort(pydantic.BaseModel):
    port: int | str
    name: str


class PortsSpec(pydantic.BaseModel):
    ports: list[NamedPort]


class PortsConfig(okt.MutableResource):
    """A ConfigMap of port names by port, a mapping the template builds from the custom resource's list."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-ports
  namespace: {{ namespace }}
{% set names = {} %}{% for item in cr.spec.ports %}{% set _ = names.update({item.port: item.name}) %}{% endfor %}
data: {{ names }}
"""


class PortsReconciler(shared.WidgetReconciler):
    spec_model = PortsSpec
    owns = (PortsConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [PortsConfig(ctx.cr)]


def test_keys_a_template_builds_that_json_writes_as_one_string_are_an_invalid_spec_and_create_nothing(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    # 80 and "80": the ConfigMap held one of the two names, the other lost without a word
    ports = [{"port": 80, "name": "http"}, {"port": "80", "name": "web"}, {"port": 443, "name": "https"}]
    shared.make_widget(kube, widget_kind, namespace, "clash", ports=ports)
    shared.make_widget(kube, widget_kind, namespace, "fine", ports=[{"port": 80, "name": "http"}, ports[2]])

    clash = shared.reconcile_widget(PortsReconciler(), kube, widget_kind, namespace, "clash")
    fine = shared.reconcile_widget(PortsReconciler(), kube, widget_kind, namespace, "fine")

    assert clash.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "clash-ports") is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "clash"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith("data: a mapping two of whose keys are one string as JSON writes keys")
    assert fine.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, "fine-ports")
    assert live is not None
    assert live["data"] == {"80": "http", "443": "https"}


class GreetingSpec(pydantic.BaseModel):
    pattern: str = "hello {name}"
    pin: pydantic.SecretStr = pydantic.SecretStr("0000")
    pins: list[str] = ["0000"]


class GreetingConfig(okt.MutableResource):
    """A greeting formatted by the custom resource's pattern, and a check that its pin is one of its pins."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-greeting
  namespace: {{ namespace }}
data:
  greeting: "{{ cr.spec.pattern.format(name=name) }}"
  pin: "{{ cr.spec.pins.index(cr.spec.pin.get_secret_value()) }}"
"""


class GreetingReconciler(shared.WidgetReconciler):
    spec_model = GreetingSpec
    owns = (GreetingConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GreetingConfig(ctx.cr)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"pattern": "hello {nme}"}, "template line 8: 'nme' (KeyError): the template cannot use a value"),
        (
            {"pin": "hunter2-4242"},
            "template line 9: (its message holds the value of a secret the template read, and is not shown) "
            "(ValueError)",
        ),
    ],
    ids=["missing-field", "secret-in-message"],
)
def test_an_expression_failing_on_a_value_is_an_invalid_spec_whose_message_holds_no_secret(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, spec: dict[str, str], message: str
) -> None:
    # a KeyError of the custom resource's format string escaped the render, retried for ever; a ValueError wrote
    # the pin into the Ready condition ('hunter2-4242' is not in list)
    shared.make_widget(kube, widget_kind, namespace, "bad", **spec)
    shared.make_widget(kube, widget_kind, namespace, "good")

    bad = shared.reconcile_widget(GreetingReconciler(), kube, widget_kind, namespace, "bad")
    good = shared.reconcile_widget(GreetingReconciler(), kube, widget_kind, namespace, "good")

    assert bad.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "bad-greeting") is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "bad"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith(message)
    assert "hunter2" not in ready["message"]
    assert good.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, "good-greeting")
    assert live is not None
    assert live["data"] == {"greeting": "hello good", "pin": "0"}


class ShoutSpec(pydantic.BaseModel):
    word: str


class ShoutConfig(okt.MutableResource):
    """The custom resource's word upper-cased, by filtering the value itself."""

    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-shout
  namespace: {{ namespace }}
data:
  word: {{ cr.spec.word | upper }}
"""


class ShoutReconciler(shared.WidgetReconciler):
    spec_model = ShoutSpec
    owns = (ShoutConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [ShoutConfig(ctx.cr)]


SHOUT_HEAD = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-shout
  namespace: {{ namespace }}
data:
"""
FILTER_BLOCKS = {
    # the word's text in the YAML: a line break added a field to the ConfigMap
    "value-in-arguments": SHOUT_HEAD + '{% filter replace("WORD", cr.spec.word) %}\n  word: WORD\n{% endfilter %}\n',
    # the word's placeholder upper-cased: the ConfigMap held OKT<...>S0X, the word lost
    "value-in-body": SHOUT_HEAD + "  word: {% filter upper %}{{ cr.spec.word }}{% endfilter %}\n",
}


@pytest.mark.parametrize("template", FILTER_BLOCKS.values(), ids=FILTER_BLOCKS.keys())
def test_a_filter_block_taking_or_holding_a_value_stops_the_class_and_the_value_filtered_itself_is_data(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind, template: str
) -> None:
    with pytest.raises(ValueError, match=r"^FilterBlockConfig.template line \d+: a \{% filter %\} block"):
        type("FilterBlockConfig", (ShoutConfig,), {"template": template})
    word = "loud\n  injected: 'yes'"
    shared.make_widget(kube, widget_kind, namespace, NAME, word=word)

    run = shared.reconcile_widget(ShoutReconciler(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-shout")
    assert live is not None
    assert live["data"] == {"word": word.upper()}


class ListingSpec(pydantic.BaseModel):
    items: list[str]


class ListingConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-listing
  namespace: {{ namespace }}
data:
{% for item in cr.spec.items %}
  item-{{ loop.index }}: "{% for i in range(10) %}{{ item }}/{% endfor %}"
{% endfor %}
"""


class ListingReconciler(shared.WidgetReconciler):
    spec_model = ListingSpec
    owns = (ListingConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [ListingConfig(ctx.cr)]


def test_a_list_rendered_larger_than_the_api_server_takes_is_an_invalid_spec_and_other_objects_are_served(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    # A custom resource the API server stores (40000 items, about 600 kB) whose child would be about 5 MB.
    shared.make_widget(kube, widget_kind, namespace, "long", items=[f"item{i:06d}" for i in range(40_000)])
    shared.make_widget(kube, widget_kind, namespace, "short", items=["a", "b"])

    long = shared.reconcile_widget(ListingReconciler(), kube, widget_kind, namespace, "long")
    short = shared.reconcile_widget(ListingReconciler(), kube, widget_kind, namespace, "short")

    assert long.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, "long-listing") is None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "long"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith("template line 9: the rendered template would build ")
    assert short.outcome == okt.Outcome.done()
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, "short-listing")
    assert live is not None
    assert live["data"] == {"item-1": "a/" * 10, "item-2": "b/" * 10}


RULER_OPERATOR = '''
import okt


class Ruler(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-ruler
data:
  ruler: "{{ '-' * cr.spec.width }}"
"""


class Rulers(okt.Reconciler):
    api_version = "test.okt.io/v1"
    kind = "Widget"
    plural = "widgets"
    owns = (Ruler,)

    def resources(self, ctx):
        return [Ruler(ctx.cr)]
'''


def test_okt_run_with_one_worker_reports_a_value_of_any_size_and_serves_the_next_object(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    control_plane: envtest.ControlPlane,
    tmp_path: pathlib.Path,
) -> None:
    operator = tmp_path / "ruler_operator.py"
    operator.write_text(RULER_OPERATOR)
    shared.make_widget(kube, widget_kind, namespace, "huge", width=10**10)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        args=["--max-concurrent", "1"],
        log_path=tmp_path / "operator.log",
    )

    with running:
        waiting.wait_for(
            lambda: (
                (condition(shared.get_widget(kube, widget_kind, namespace, "huge"), "Ready") or {}).get("reason")
                == "InvalidSpec"
            ),
            timeout=60,
            message="the huge Widget's Ready=False InvalidSpec",
        )
        shared.make_widget(kube, widget_kind, namespace, "small", width=3)
        live = waiting.wait_for(
            lambda: shared.get_child(kube, "v1", "ConfigMap", namespace, "small-ruler"),
            timeout=60,
            message="the small Widget's ConfigMap",
        )
        assert running.alive  # the process lives on

    assert live["data"] == {"ruler": "---"}
    ready = condition(shared.get_widget(kube, widget_kind, namespace, "huge"), "Ready")
    assert ready is not None
    assert ready["status"] == "False"
    assert ready["message"].startswith("template line 7: repeating a str of length 1 10000000000 times")
