"""Every Kopf example topic of ``docs/coming-from-kopf.md`` runs against the real control plane, and does what it says.

Each snippet is a fenced ``python`` block marked by ``<!-- snippet: kopf TOPIC -->`` on the line before it. The test
executes the block as a module of its own (as ``okt run`` would load the file), runs it — its reconcilers and hooks —
under :class:`okt.testing.RunningOperator` watching the test namespace, and checks what the snippet's comments promise
(``CHECKS``). A topic of Kopf's examples without a snippet, a snippet without a check, or a check that fails, fails the
suite.
"""

from __future__ import annotations

import contextlib
import pathlib
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt import hooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, condition, crds, envtest, wait_for

pytestmark = pytest.mark.integration

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "coming-from-kopf.md"
TOPICS = (
    "minimal",
    "children",
    "retries",
    "events",
    "several-handlers",
    "built-ins",
    "filtering",
    "hooks",
    "daemons",
    "timers",
    "indexing",
    "observed-generation",
)
"""Kopf's example topics in page order (admission is prose: a spec is refused by the schema and ``check``), then the
snippets of the sections on what Kopf lacks."""
_SNIPPET = re.compile(r"<!-- snippet: kopf (?P<topic>[\w-]+) -->\n```python\n(?P<code>.*?)\n```", re.S)


def snippets() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in _SNIPPET.finditer(PAGE.read_text()):
        assert match["topic"] not in found, f"two snippets for {match['topic']}"
        found[match["topic"]] = match["code"]
    return found


@contextlib.contextmanager
def load(topic: str) -> Iterator[types.ModuleType]:
    """The snippet as a module of its own, forgotten afterwards."""
    name = f"kopf_example_{topic.replace('-', '_')}"
    module = types.ModuleType(name)
    module.__file__ = f"<{PAGE.name}: {topic}>"
    sys.modules[name] = module
    try:
        exec(compile(snippets()[topic], module.__file__, "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[name]


class Scene:
    """The test namespace as a Kopf example sees it."""

    def __init__(self, kube: kube_client.Client, namespace: str, kind: kinds.Kind, module: types.ModuleType) -> None:
        self.kube, self.namespace, self.kind, self.module = kube, namespace, kind, module

    def create(self, name: str, spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
        body = {
            "apiVersion": self.kind.api_version,
            "kind": self.kind.kind,
            "metadata": {"name": name, "namespace": self.namespace, **metadata},
            "spec": spec or {"field": "value"},
        }
        return self.kube.create(body, self.kind)

    def get(self, name: str) -> dict[str, Any]:
        return self.kube.get(self.kind, name, self.namespace)

    def ready(self, name: str) -> str | None:
        return (condition(self.get(name), "Ready") or {}).get("status")

    def config_map(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(kinds.CONFIG_MAP, name, self.namespace)

    def events(self, name: str, reason: str) -> list[dict[str, Any]]:
        items, _ = self.kube.list(kinds.EVENT, self.namespace)
        return [e for e in items if e.get("reason") == reason and e["involvedObject"].get("name") == name]


def check_minimal(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.ready("ex") == "True", timeout=20)


def check_children(scene: Scene) -> None:
    uid = scene.create("ex", {"field": "from-the-spec"})["metadata"]["uid"]
    wait_for(lambda: scene.config_map("ex-child") is not None, timeout=20)
    child = scene.config_map("ex-child")
    assert child is not None
    assert child["data"] == {"field": "from-the-spec"}
    assert [ref["uid"] for ref in child["metadata"]["ownerReferences"]] == [uid]


def check_retries(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.ready("ex") == "True", timeout=30)
    assert scene.module.ATTEMPTS["ex"] == 3


def check_events(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.events("ex", "Greeted"), timeout=20)
    assert scene.events("ex", "Greeted")[0]["message"] == "hello, ex"


def check_several_handlers(scene: Scene) -> None:
    scene.create("bad", {"field": 5})
    scene.create("ex")
    wait_for(lambda: scene.ready("ex") == "True" and scene.ready("bad") == "False", timeout=20)
    assert scene.get("ex")["status"]["steps"] == ["checked", "written"]
    assert (condition(scene.get("bad"), "Ready") or {}).get("reason") == "InvalidSpec"


def check_built_ins(scene: Scene) -> None:
    labels = {"kopf.dev/copy": "yes"}
    source = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}
    scene.kube.create({**source, "metadata": {"name": "src", "namespace": scene.namespace, "labels": labels}})
    wait_for(lambda: scene.config_map("src-copy") is not None, timeout=20)
    copy = scene.config_map("src-copy")
    assert copy is not None and copy["data"] == {"a": "1"}
    assert "status" not in (scene.config_map("src") or {})
    # A ConfigMap has no generation: a change of its data alone is what the copy follows.
    scene.kube.patch(kinds.CONFIG_MAP, "src", {"data": {"a": "2"}}, scene.namespace)
    wait_for(lambda: (scene.config_map("src-copy") or {}).get("data") == {"a": "2"}, timeout=20)


def check_filtering(scene: Scene) -> None:
    managed = {"kopf.dev/managed": "yes"}
    scene.create("out")
    scene.create("ignored", {"field": "ignore-me"}, annotations=managed)
    scene.create("in", annotations=managed)
    # One informer delivers the three in order: once "in" is Ready, the two others were seen and left out.
    wait_for(lambda: scene.ready("in") == "True", timeout=20)
    assert scene.ready("out") is None
    assert scene.ready("ignored") is None


def check_hooks(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.ready("ex") == "True", timeout=20)
    assert hooks.collect(scene.module) == ([scene.module.require_the_crd], [scene.module.say_goodbye])


def check_daemons(scene: Scene) -> None:
    scene.create("ex")

    def monitored() -> bool:
        status = scene.get("ex").get("status") or {}
        types = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        return "monitoredSince" in status and types.get("Monitored") == "True" and types.get("Ready") == "True"

    wait_for(monitored, timeout=20)


def check_timers(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.events("ex", "Ticked"), timeout=20)


def check_indexing(scene: Scene) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": scene.namespace}}
    scene.kube.create({**config, "data": {"level": "info"}})
    scene.create("ex", {"configMap": "settings"})
    scene.create("other", {"configMap": "elsewhere"})
    wait_for(lambda: scene.get("ex").get("status", {}).get("level") == "info", timeout=20)
    key = f"{scene.namespace}/settings"
    assert scene.get("ex")["status"]["levels"] == {key: ["info"]}  # the ConfigMaps' index, read whole
    scene.kube.patch(kinds.CONFIG_MAP, "settings", {"data": {"level": "debug"}}, scene.namespace)
    wait_for(lambda: scene.get("ex").get("status", {}).get("level") == "debug", timeout=20)
    assert scene.get("ex")["status"]["levels"] == {key: ["debug"]}  # kept by the cache before the change reconciles


def check_observed_generation(scene: Scene) -> None:
    scene.create("ex")
    wait_for(lambda: scene.ready("ex") == "True", timeout=20)
    scene.kube.patch(scene.kind, "ex", {"spec": {"field": "changed"}}, scene.namespace)

    def describes(generation: int) -> bool:
        status = scene.get("ex").get("status") or {}
        conditions = status.get("conditions") or []
        return status.get("observedGeneration") == generation and any(c["type"] == "FieldSeen" for c in conditions)

    wait_for(lambda: describes(2), timeout=20)
    conditions = scene.get("ex")["status"]["conditions"]
    assert {c["type"]: c.get("observedGeneration") for c in conditions} == {
        "Ready": 2,
        "Available": 2,
        "Progressing": 2,
        "Degraded": 2,
        "FieldSeen": 2,
        "ReconciliationSuccess": 2,
    }
    assert next(c for c in conditions if c["type"] == "FieldSeen")["message"] == "field=changed"


CHECKS: dict[str, Callable[[Scene], None]] = {
    "minimal": check_minimal,
    "children": check_children,
    "retries": check_retries,
    "events": check_events,
    "several-handlers": check_several_handlers,
    "built-ins": check_built_ins,
    "filtering": check_filtering,
    "hooks": check_hooks,
    "daemons": check_daemons,
    "timers": check_timers,
    "indexing": check_indexing,
    "observed-generation": check_observed_generation,
}


def test_every_kopf_example_topic_has_one_snippet_and_a_check() -> None:
    assert list(snippets()) == list(TOPICS)
    assert list(CHECKS) == list(TOPICS)
    assert "### Admission" in PAGE.read_text()


@pytest.fixture(scope="module")
def kopf_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(crds.schemaless_crd("kopf.dev", "KopfExample", "kopfexamples"))


@pytest.mark.parametrize("topic", TOPICS)
def test_the_kopf_example_runs_and_does_what_it_says(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    kopf_kind: kinds.Kind,
    topic: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    operator = kube_client.Client.from_kubeconfig(control_plane.kubeconfig)
    try:
        # The module as okt run loads the file: its reconcilers, with its start-up and clean-up hooks.
        with (
            load(topic) as module,
            RunningOperator.start(operator, module, namespaces=[namespace], grace_period=5, tune_memory=False),
        ):
            CHECKS[topic](Scene(kube, namespace, kopf_kind, module))
    finally:
        operator.close()
    if topic == "hooks":
        assert "operator stopped" in capsys.readouterr().out
